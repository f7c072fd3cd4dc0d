//===- NN.cpp - Layers of the C++ API -------------------------------------===//
//
// Each layer emits the ops of its tessera.nn namesake (python/tessera/nn.py)
// in the same order: a model written in either language compiles to the
// same program (test/python/test_cpp_block.py checks the bits).
//
//===----------------------------------------------------------------------===//

#include "tessera/API/NN.h"

#include "ModuleState.h"
#include "tessera/API/Ops.h"

#include <cmath>

namespace tessera::nn {

namespace {

/// Records `message` at the user's `loc` in x's module; an invalid Tensor.
Tensor failAt(const Tensor &x, SourceLoc loc, const std::string &message) {
  if (detail::ModuleState *s = x.getState())
    s->failAt(s->location(loc), message);
  return {};
}

bool allValid(std::initializer_list<const Tensor *> ts) {
  for (const Tensor *t : ts)
    if (!t->valid())
      return false;
  return true;
}

} // namespace

const std::vector<std::string> &TransformerBlock::names() {
  static const std::vector<std::string> kNames = {
      "attn.wk",  "attn.wo",   "attn.wq",  "attn.wv",
      "down.b",   "down.w",    "ln1.bias", "ln1.scale",
      "ln2.bias", "ln2.scale", "up.b",     "up.w"};
  return kNames;
}

std::vector<TensorSpec> TransformerBlock::specs(int64_t d, int64_t ffn,
                                                DType dtype,
                                                const std::string &prefix) {
  std::vector<TensorSpec> out;
  for (const std::string &name : names()) {
    Shape shape;
    if (name.rfind("attn.", 0) == 0)
      shape = {d, d};
    else if (name == "down.b")
      shape = {d};
    else if (name == "down.w")
      shape = {ffn, d};
    else if (name == "up.b")
      shape = {ffn};
    else if (name == "up.w")
      shape = {d, ffn};
    else
      shape = {d};
    out.push_back({shape, dtype, prefix + name});
  }
  return out;
}

TransformerBlock TransformerBlock::fromFlat(const std::vector<Tensor> &f,
                                            SourceLoc loc) {
  TransformerBlock p;
  if (f.size() != names().size()) {
    if (!f.empty())
      failAt(f[0], loc,
             "TransformerBlock::fromFlat takes 12 tensors (attn.wk, ..., "
             "up.w), got " + std::to_string(f.size()));
    return p;
  }
  p.attn = {f[2], f[0], f[3], f[1]};
  p.down = {f[5], f[4]};
  p.ln1 = {f[7], f[6]};
  p.ln2 = {f[9], f[8]};
  p.up = {f[11], f[10]};
  return p;
}

std::vector<Tensor> TransformerBlock::flat() const {
  return {attn.wk,  attn.wo,   attn.wq,  attn.wv, down.b, down.w,
          ln1.bias, ln1.scale, ln2.bias, ln2.scale, up.b, up.w};
}

Tensor linear(const Linear &p, const Tensor &x, SourceLoc loc) {
  Tensor y = op::matmul(x, p.w, false, false, {}, loc);
  return p.b.valid() ? op::add(y, p.b, loc) : y;
}

Tensor layernorm(const LayerNorm &p, const Tensor &x, double epsilon,
                 SourceLoc loc) {
  return op::layernorm(x, p.scale, p.bias, -1, epsilon, loc);
}

Tensor rope(const Tensor &x, double base, SourceLoc loc) {
  if (!x.valid())
    return {};
  Shape shape = x.shape();
  if (shape.size() < 2)
    return failAt(x, loc, "rope takes [..., S, Dh], got " + x.str());
  Dim s = shape[shape.size() - 2], dh = shape.back();
  if (!dh.isStatic() || dh.size() % 2)
    return failAt(x, loc,
                  "rope needs a static, even head dim; got " + dh.str());
  int64_t half = dh.size() / 2;
  // Angles in f32 at least: bf16 holds positions only to 8 bits (2047
  // would be 2048) and its angles would be off by whole radians.
  DType work = x.dtype() == DType::f64 ? DType::f64 : DType::f32;
  Tensor pos = op::iota({s, half}, 0, work, loc);
  Tensor column = op::iota({s, half}, 1, work, loc);
  auto [index, rate] = op::promote(
      column, -2.0 * std::log(base) / double(dh.size()), loc);
  Tensor freq = op::exp(op::mul(index, rate, loc), loc);
  Tensor angle = op::mul(pos, freq, loc);
  Tensor cos = op::cos(angle, loc), sin = op::sin(angle, loc);
  if (work != x.dtype()) {
    cos = op::cast(cos, x.dtype(), {}, loc);
    sin = op::cast(sin, x.dtype(), {}, loc);
  }
  Shape start(shape.size(), Dim(int64_t(0))), limit = shape;
  limit.back() = Dim(half);
  Tensor x1 = op::slice(x, start, limit, {}, loc);
  start.back() = Dim(half);
  limit.back() = dh;
  Tensor x2 = op::slice(x, start, limit, {}, loc);
  // One statement per op: the order of Python's evaluation, which C++
  // leaves open for the arguments of one call.
  Tensor x1cos = op::mul(x1, cos, loc);
  Tensor x2sin = op::mul(x2, sin, loc);
  Tensor a = op::sub(x1cos, x2sin, loc);
  Tensor x1sin = op::mul(x1, sin, loc);
  Tensor x2cos = op::mul(x2, cos, loc);
  Tensor b = op::add(x1sin, x2cos, loc);
  return op::concat({a, b}, -1, loc);
}

Tensor multi_head_attention(const Attention &p, const Tensor &x, int64_t heads,
                            bool causal, bool useRope, SourceLoc loc) {
  if (!allValid({&x, &p.wq, &p.wk, &p.wv, &p.wo}))
    return {};
  Shape shape = x.shape();
  if (shape.size() != 3)
    return failAt(x, loc, "multi_head_attention takes x [B, S, D], got " +
                              x.str());
  Dim b = shape[0], s = shape[1], d = shape[2];
  if (heads < 1 || !d.isStatic() || d.size() % heads)
    return failAt(x, loc,
                  "multi_head_attention needs a static model dim that is a "
                  "multiple of " + std::to_string(heads) + " heads; got " +
                      d.str());
  int64_t dh = d.size() / heads;
  auto split = [&](const Tensor &t) { // [B, S, D] -> [B, H, S, Dh]
    return op::transpose(op::reshape(t, {b, s, heads, dh}, loc), {0, 2, 1, 3},
                         loc);
  };
  Tensor q = split(op::matmul(x, p.wq, false, false, {}, loc));
  Tensor k = split(op::matmul(x, p.wk, false, false, {}, loc));
  Tensor v = split(op::matmul(x, p.wv, false, false, {}, loc));
  if (useRope) {
    q = rope(q, 10000.0, loc);
    k = rope(k, 10000.0, loc);
  }
  Tensor y = op::attention(q, k, v, causal, std::nullopt, loc);
  Tensor merged = op::reshape(op::transpose(y, {0, 2, 1, 3}, loc),
                              {b, s, heads * dh}, loc);
  return op::matmul(merged, p.wo, false, false, {}, loc);
}

Tensor transformer_block(const TransformerBlock &p, const Tensor &x,
                         int64_t heads, bool causal, SourceLoc loc) {
  Tensor n1 = layernorm(p.ln1, x, 1e-5, loc);
  Tensor h = op::add(x, multi_head_attention(p.attn, n1, heads, causal, true,
                                             loc),
                     loc);
  Tensor n2 = layernorm(p.ln2, h, 1e-5, loc);
  Tensor u = op::gelu(linear(p.up, n2, loc), /*approximate=*/true, loc);
  return op::add(h, linear(p.down, u, loc), loc);
}

} // namespace tessera::nn
