//===- Ops.h - One function per Graph IR op ---------------------*- C++ -*-===//
//
// Part of Tessera's C++ API: no MLIR or LLVM types in this header.
//
// Each function adds the `tgraph` op of the same name to the function being
// traced and returns its result. Shapes are checked by the op's shape
// function as the op is added, so a mismatch is reported here, at the
// caller's line, in the compiler's words.
//
// Array axes are spelled `axis` everywhere, as in NumPy and JAX: an int, or
// a list where an op works over several axes (`Axes`), negative counting
// from the last. A mesh axis of a collective is an `axisName`.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_API_OPS_H
#define TESSERA_API_OPS_H

#include "tessera/API/Tensor.h"

#include <initializer_list>
#include <optional>
#include <utility>

namespace tessera::op {

/// A numeric policy (`#tgraph.policy<...>`): the accumulation type of a
/// contraction or reduction, and how results are rounded.
struct Policy {
  std::optional<DType> accum;
  bool stochasticRound = false;
  std::optional<double> lossScale;
  bool saturate = false;
};

/// The array axes an op works over: one (`-1`), several (`{0, 2}`), or all
/// of them (`Axes()`, also written `{}`). Negative axes count from the last.
/// `Axes::none()` names no axis (a reduction over it is the identity).
class Axes {
public:
  Axes() = default;
  Axes(int axis) : list{axis}, every(false) {}
  Axes(int64_t axis) : list{axis}, every(false) {}
  Axes(std::initializer_list<int64_t> axes) : list(axes), every(false) {}
  Axes(std::vector<int64_t> axes) : list(std::move(axes)), every(false) {}
  static Axes none() { return Axes(std::vector<int64_t>{}); }

  /// True for `Axes()`: every axis of the operand.
  bool isAll() const { return every; }
  /// The axes as written (empty when isAll()).
  const std::vector<int64_t> &values() const { return list; }

private:
  std::vector<int64_t> list;
  bool every = true;
};

//===-- Generators -------------------------------------------------------===//

/// A tensor of `shape` filled with `value` (symbolic dims must be dims of
/// the function's arguments).
Tensor full(double value, const Shape &shape, DType dtype,
            SourceLoc loc = SourceLoc::current());
Tensor zeros_like(const Tensor &x, SourceLoc loc = SourceLoc::current());
Tensor ones_like(const Tensor &x, SourceLoc loc = SourceLoc::current());
/// Indices along `axis` of a tensor of `shape`.
Tensor iota(const Shape &shape, int64_t axis, DType dtype,
            SourceLoc loc = SourceLoc::current());
/// A constant with the given elements (row-major, `shape` static).
Tensor constant(const std::vector<double> &values, const Shape &shape,
                DType dtype, SourceLoc loc = SourceLoc::current());
/// A constant read from raw little-endian element storage.
Tensor constant_bytes(const void *data, const Shape &shape, DType dtype,
                      SourceLoc loc = SourceLoc::current());

//===-- Elementwise ------------------------------------------------------===//

#define TESSERA_UNARY(name)                                                    \
  Tensor name(const Tensor &x, SourceLoc loc = SourceLoc::current());
TESSERA_UNARY(neg)
TESSERA_UNARY(abs)
TESSERA_UNARY(exp)
TESSERA_UNARY(log)
TESSERA_UNARY(log1p)
TESSERA_UNARY(sin)
TESSERA_UNARY(cos)
TESSERA_UNARY(tanh)
TESSERA_UNARY(erf)
TESSERA_UNARY(sigmoid)
TESSERA_UNARY(relu)
TESSERA_UNARY(silu)
TESSERA_UNARY(sqrt)
TESSERA_UNARY(rsqrt)
TESSERA_UNARY(reciprocal)
TESSERA_UNARY(square)
TESSERA_UNARY(floor)
TESSERA_UNARY(sign)
#undef TESSERA_UNARY
Tensor gelu(const Tensor &x, bool approximate = false,
            SourceLoc loc = SourceLoc::current());

#define TESSERA_BINARY(name)                                                   \
  Tensor name(const Tensor &lhs, const Tensor &rhs,                            \
              SourceLoc loc = SourceLoc::current());
TESSERA_BINARY(add)
TESSERA_BINARY(sub)
TESSERA_BINARY(mul)
TESSERA_BINARY(div)
TESSERA_BINARY(pow)
TESSERA_BINARY(max)
TESSERA_BINARY(min)
#undef TESSERA_BINARY

/// `lhs / rhs` rounded toward -inf (Python's `//`): floor of the quotient
/// for floats, and for integers the truncated quotient less one where the
/// remainder is nonzero and the signs differ. NumPy broadcasting.
Tensor floor_div(const Tensor &lhs, const Tensor &rhs,
                 SourceLoc loc = SourceLoc::current());

/// Elementwise comparison; `direction` is eq, ne, lt, le, gt or ge. The
/// result is a boolean (i1) tensor.
Tensor compare(const Tensor &lhs, const Tensor &rhs,
               const std::string &direction,
               SourceLoc loc = SourceLoc::current());
Tensor select(const Tensor &cond, const Tensor &onTrue, const Tensor &onFalse,
              SourceLoc loc = SourceLoc::current());
Tensor cast(const Tensor &x, DType dtype, const Policy &policy = {},
            SourceLoc loc = SourceLoc::current());
/// `x`, seen by autodiff as a constant (no derivative flows through it).
Tensor stop_gradient(const Tensor &x, SourceLoc loc = SourceLoc::current());
/// `value` as a constant 0-d tensor of `like`'s dtype; an error when it does
/// not fit (an integer out of range, a fraction for an integer dtype).
Tensor scalar(Scalar value, const Tensor &like,
              SourceLoc loc = SourceLoc::current());
/// `x` and the number `s` as two tensors of the dtype they combine in
/// (Scalar's rule): `x`, cast when `s` needs another dtype, and `s` as a
/// 0-d constant of that dtype (an error when it does not fit).
std::pair<Tensor, Tensor> promote(const Tensor &x, Scalar s,
                                  SourceLoc loc = SourceLoc::current());

//===-- Contractions -----------------------------------------------------===//

Tensor matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs = false,
              bool transposeRhs = false, const Policy &policy = {},
              SourceLoc loc = SourceLoc::current());
Tensor batch_matmul(const Tensor &lhs, const Tensor &rhs,
                    const Policy &policy = {},
                    SourceLoc loc = SourceLoc::current());
/// Contracts `lhsContractAxes` of `lhs` with `rhsContractAxes` of `rhs`,
/// pairing the batch axes; the result is [batch..., lhs free..., rhs
/// free...] (StableHLO's dot_general).
Tensor dot_general(const Tensor &lhs, const Tensor &rhs,
                   const std::vector<int64_t> &lhsBatchAxes,
                   const std::vector<int64_t> &rhsBatchAxes,
                   const std::vector<int64_t> &lhsContractAxes,
                   const std::vector<int64_t> &rhsContractAxes,
                   const Policy &policy = {},
                   SourceLoc loc = SourceLoc::current());
struct Conv2dOptions {
  std::vector<int64_t> strides{1, 1};
  /// [top, bottom, left, right].
  std::vector<int64_t> padding{0, 0, 0, 0};
  std::vector<int64_t> dilation{1, 1};
  int64_t groups = 1;
  /// NHWC input and HWIO filter (else NCHW and OIHW).
  bool channelsLast = false;
};
Tensor conv2d(const Tensor &input, const Tensor &filter,
              const Conv2dOptions &options = {},
              SourceLoc loc = SourceLoc::current());
/// softmax(q k^T * scale) v; `scale` defaults to 1/sqrt(head dim).
Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 bool causal = false, std::optional<double> scale = {},
                 SourceLoc loc = SourceLoc::current());

//===-- Reductions and normalizations ------------------------------------===//

/// Reductions over `axis` (every axis by default). `stable` asks for the
/// compensated (Kahan) order of spec 004; every order is deterministic.
#define TESSERA_REDUCE(name)                                                   \
  Tensor name(const Tensor &x, const Axes &axis = {}, bool keepdims = false,   \
              bool stable = false, SourceLoc loc = SourceLoc::current());
TESSERA_REDUCE(reduce_sum)
TESSERA_REDUCE(reduce_mean)
TESSERA_REDUCE(reduce_prod)
#undef TESSERA_REDUCE
#define TESSERA_REDUCE(name)                                                   \
  Tensor name(const Tensor &x, const Axes &axis = {}, bool keepdims = false,   \
              SourceLoc loc = SourceLoc::current());
TESSERA_REDUCE(reduce_max)
TESSERA_REDUCE(reduce_min)
#undef TESSERA_REDUCE
/// The index of the first maximum (minimum) along one `axis`.
Tensor argmax(const Tensor &x, int64_t axis = -1, bool keepdims = false,
              SourceLoc loc = SourceLoc::current());
Tensor argmin(const Tensor &x, int64_t axis = -1, bool keepdims = false,
              SourceLoc loc = SourceLoc::current());
/// Softmax over `axis` (one axis or several, taken together).
Tensor softmax(const Tensor &x, const Axes &axis = -1,
               SourceLoc loc = SourceLoc::current());
Tensor log_softmax(const Tensor &x, const Axes &axis = -1,
                   SourceLoc loc = SourceLoc::current());
Tensor softmax_safe(const Tensor &x, const Axes &axis = -1,
                    SourceLoc loc = SourceLoc::current());
Tensor logsumexp(const Tensor &x, const Axes &axis = -1, bool keepdims = false,
                 SourceLoc loc = SourceLoc::current());
Tensor logsumexp_safe(const Tensor &x, const Axes &axis = -1,
                      bool keepdims = false,
                      SourceLoc loc = SourceLoc::current());
/// Normalizes over `axis` (one axis or several); `scale` and `bias`
/// (invalid Tensor: none) have the shape of those axes, in axis order.
Tensor layernorm(const Tensor &x, const Tensor &scale = {},
                 const Tensor &bias = {}, const Axes &axis = -1,
                 double epsilon = 1e-5, SourceLoc loc = SourceLoc::current());
Tensor layernorm_safe(const Tensor &x, const Tensor &scale = {},
                      const Tensor &bias = {}, const Axes &axis = -1,
                      double epsilon = 1e-5,
                      SourceLoc loc = SourceLoc::current());
Tensor rmsnorm(const Tensor &x, const Tensor &scale = {},
               const Axes &axis = -1, double epsilon = 1e-5,
               SourceLoc loc = SourceLoc::current());
Tensor rmsnorm_safe(const Tensor &x, const Tensor &scale = {},
                    const Axes &axis = -1, double epsilon = 1e-5,
                    SourceLoc loc = SourceLoc::current());
/// Softmax cross-entropy of `logits` [..., C] against integer labels [...]
/// or a distribution [..., C]; `reduction` is "mean", "sum" or "none".
Tensor cross_entropy(const Tensor &logits, const Tensor &labels,
                     const std::string &reduction = "mean",
                     SourceLoc loc = SourceLoc::current());

//===-- Layout -----------------------------------------------------------===//

Tensor transpose(const Tensor &x, const std::vector<int64_t> &permutation,
                 SourceLoc loc = SourceLoc::current());
/// One target dim may be -1 (solved from the element count).
Tensor reshape(const Tensor &x, const Shape &shape,
               SourceLoc loc = SourceLoc::current());
/// `x` placed in a tensor of `shape`: axis i of `x` becomes axis
/// `broadcastAxes[i]` of the result (of the same size, or 1 broadcast).
Tensor broadcast_in_dim(const Tensor &x, const Shape &shape,
                        const std::vector<int64_t> &broadcastAxes,
                        SourceLoc loc = SourceLoc::current());
/// NumPy broadcasting of `x` to `shape`.
Tensor broadcast_to(const Tensor &x, const Shape &shape,
                    SourceLoc loc = SourceLoc::current());
Tensor slice(const Tensor &x, const Shape &start, const Shape &limit,
             const std::vector<int64_t> &stride = {},
             SourceLoc loc = SourceLoc::current());
Tensor concat(const std::vector<Tensor> &inputs, int64_t axis,
              SourceLoc loc = SourceLoc::current());
Tensor pad(const Tensor &x, const std::vector<int64_t> &low,
           const std::vector<int64_t> &high, double value = 0.0,
           const std::vector<int64_t> &interior = {},
           SourceLoc loc = SourceLoc::current());
/// A slice of static `sizes` at run-time `starts` (0-d integer tensors,
/// clamped so the slice stays inside `x`).
Tensor dynamic_slice(const Tensor &x, const std::vector<Tensor> &starts,
                     const Shape &sizes, SourceLoc loc = SourceLoc::current());
/// The size of axis `axis` of `x` as a 0-d tensor of `dtype`.
Tensor dim_size(const Tensor &x, int64_t axis, DType dtype = DType::i64,
                SourceLoc loc = SourceLoc::current());
/// The slices of `x` along `axis` at `indices`.
Tensor gather(const Tensor &x, const Tensor &indices, int64_t axis,
              SourceLoc loc = SourceLoc::current());
/// `x` with `updates` added at `indices` along `axis`.
Tensor scatter_add(const Tensor &x, const Tensor &indices,
                   const Tensor &updates, int64_t axis,
                   SourceLoc loc = SourceLoc::current());
Tensor embedding(const Tensor &table, const Tensor &ids,
                 SourceLoc loc = SourceLoc::current());
Tensor one_hot(const Tensor &ids, int64_t numClasses, DType dtype = DType::f32,
               SourceLoc loc = SourceLoc::current());

//===-- Collectives (SPMD over the devices of mesh axis `axisName`) ------===//

/// `reduction`: sum, prod, min, max or mean.
Tensor all_reduce(const Tensor &x, const std::string &reduction = "sum",
                  const std::string &axisName = "", int64_t groupSize = 1,
                  SourceLoc loc = SourceLoc::current());
/// The devices' `x` concatenated along `axis`.
Tensor all_gather(const Tensor &x, int64_t axis,
                  const std::string &axisName = "", int64_t groupSize = 1,
                  SourceLoc loc = SourceLoc::current());
/// The reduction over devices, each keeping its slice along `axis`.
Tensor reduce_scatter(const Tensor &x, int64_t axis,
                      const std::string &reduction = "sum",
                      const std::string &axisName = "", int64_t groupSize = 1,
                      SourceLoc loc = SourceLoc::current());
/// Splits `x` along `splitAxis` over the devices and concatenates what each
/// receives along `concatAxis`.
Tensor all_to_all(const Tensor &x, int64_t splitAxis, int64_t concatAxis,
                  const std::string &axisName = "", int64_t groupSize = 1,
                  SourceLoc loc = SourceLoc::current());
/// Sends to device `pairs[i].second` what device `pairs[i].first` has.
Tensor permute(const Tensor &x,
               const std::vector<std::pair<int64_t, int64_t>> &pairs,
               const std::string &axisName = "",
               SourceLoc loc = SourceLoc::current());

//===-- Key/value caches (state) -----------------------------------------===//

/// An empty cache of `shape` [batch, heads, max_length, head_dim]; with a
/// `window` it keeps only the last `window` positions.
Tensor kv_cache_create(const Shape &shape, DType dtype,
                       std::optional<int64_t> window = std::nullopt,
                       SourceLoc loc = SourceLoc::current());
/// Appends keys and values [batch, heads, T, head_dim] (an effect: the
/// cache changes; false after an error).
bool kv_cache_append(const Tensor &cache, const Tensor &keys,
                     const Tensor &values,
                     SourceLoc loc = SourceLoc::current());
/// {keys, values} at full capacity (positions at or past the length are
/// zero) and the number of valid positions (a 0-d i64).
std::vector<Tensor> kv_cache_read(const Tensor &cache,
                                  SourceLoc loc = SourceLoc::current());
/// Keeps the last `keep` positions.
bool kv_cache_prune(const Tensor &cache, int64_t keep,
                    SourceLoc loc = SourceLoc::current());

//===-- Random numbers (stateless Philox; keys are values) ---------------===//

/// A key from a seed.
Tensor rng_key(int64_t seed, SourceLoc loc = SourceLoc::current());
/// `count` independent keys derived from `key`.
std::vector<Tensor> rng_split(const Tensor &key, int64_t count = 2,
                              SourceLoc loc = SourceLoc::current());
/// A key derived from `key` and a 0-d integer tensor (a step, a rank).
Tensor rng_fold_in(const Tensor &key, const Tensor &data,
                   SourceLoc loc = SourceLoc::current());
/// Samples of `shape`: uniform in [low, high), normal, or booleans true
/// with probability p. The same key gives the same numbers everywhere.
Tensor rng_uniform(const Tensor &key, const Shape &shape,
                   DType dtype = DType::f32, double low = 0.0,
                   double high = 1.0, SourceLoc loc = SourceLoc::current());
Tensor rng_normal(const Tensor &key, const Shape &shape,
                  DType dtype = DType::f32, double mean = 0.0,
                  double stddev = 1.0, SourceLoc loc = SourceLoc::current());
Tensor rng_bernoulli(const Tensor &key, const Shape &shape, double p,
                     SourceLoc loc = SourceLoc::current());

} // namespace tessera::op

#endif // TESSERA_API_OPS_H
