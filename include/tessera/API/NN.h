//===- NN.h - Layers of the C++ API -----------------------------*- C++ -*-===//
//
// The layers of tessera.nn for C++: dense layers, layer normalization,
// rotary position embeddings, multi-head attention and the pre-norm
// transformer block. Each emits the same Graph IR ops as its Python
// namesake, in the same order, so a model written once in C++ and once in
// Python compiles to the same kernels and gives the same bits.
//
//   TensorSpec x{{"B", 2048, 1024}, DType::bf16, "x"};
//   auto specs = nn::TransformerBlock::specs(1024, 4096, DType::bf16);
//   specs.push_back(x);
//   auto f = m.trace("block", specs, [](std::vector<Tensor> a) {
//     Tensor x = a.back();
//     a.pop_back();
//     return std::vector<Tensor>{nn::transformer_block(
//         nn::TransformerBlock::fromFlat(a), x, /*heads=*/16)};
//   });
//
// A layer given tensors of the wrong rank or sizes records the error in
// its Module (Module::error()) and returns an invalid Tensor, as ops do.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_API_NN_H
#define TESSERA_API_NN_H

#include "tessera/API/Tensor.h"

#include <string>
#include <vector>

namespace tessera::nn {

/// x [..., d_in] @ w [d_in, d_out] + b [d_out]; an invalid `b`: no bias.
struct Linear {
  Tensor w, b;
};
/// scale and bias of shape [d].
struct LayerNorm {
  Tensor scale, bias;
};
/// Four [d, d] projections.
struct Attention {
  Tensor wq, wk, wv, wo;
};
/// The parameters of transformer_block.
struct TransformerBlock {
  LayerNorm ln1;
  Attention attn;
  LayerNorm ln2;
  Linear up, down;

  /// The parameters' names in the order tessera.tree flattens the Python
  /// dict of nn.transformer_block_init (sorted): attn.wk, attn.wo, attn.wq,
  /// attn.wv, down.b, down.w, ln1.bias, ln1.scale, ln2.bias, ln2.scale,
  /// up.b, up.w.
  static const std::vector<std::string> &names();
  /// Argument specs of the parameters in names() order for a model dim `d`
  /// and an MLP of `ffn`, each named `prefix` + its name.
  static std::vector<TensorSpec> specs(int64_t d, int64_t ffn, DType dtype,
                                       const std::string &prefix = "");
  /// The parameters from tensors in names() order (12 of them; another
  /// count records an error at `loc` in their Module and gives invalid
  /// parameters, as does an empty vector, which has no Module to record
  /// in).
  static TransformerBlock fromFlat(const std::vector<Tensor> &flat,
                                   SourceLoc loc = SourceLoc::current());
  /// The parameters in names() order.
  std::vector<Tensor> flat() const;
};

Tensor linear(const Linear &p, const Tensor &x,
              SourceLoc loc = SourceLoc::current());
/// (x - mean) / sqrt(var + epsilon) * scale + bias over the last axis.
Tensor layernorm(const LayerNorm &p, const Tensor &x, double epsilon = 1e-5,
                 SourceLoc loc = SourceLoc::current());
/// Rotary position embedding of x [..., S, Dh]: the features (i, i + Dh/2)
/// at position pos are rotated by pos * base^(-2i/Dh), the angles computed
/// in f32 (f64 for f64 inputs) and cast to x's dtype. Dh must be static
/// and even.
Tensor rope(const Tensor &x, double base = 10000.0,
            SourceLoc loc = SourceLoc::current());
/// Self-attention of x [B, S, D] with `heads` heads of D/heads: q, k and v
/// projections, RoPE on q and k when `useRope`, softmax(q k^T / sqrt(Dh)) v
/// (causal: position s sees positions <= s), heads merged, projected by wo.
Tensor multi_head_attention(const Attention &p, const Tensor &x, int64_t heads,
                            bool causal = true, bool useRope = true,
                            SourceLoc loc = SourceLoc::current());
/// A pre-norm block: x + attn(ln1(x)), then x + down(gelu_tanh(up(ln2(x)))).
Tensor transformer_block(const TransformerBlock &p, const Tensor &x,
                         int64_t heads, bool causal = true,
                         SourceLoc loc = SourceLoc::current());

} // namespace tessera::nn

#endif // TESSERA_API_NN_H
