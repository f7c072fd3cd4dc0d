//===- Ops.cpp - tessera._core.op: one function per Graph IR op -----------===//
//
// Each function adds its op to the trace running on this thread and returns
// the result; on a shape or type error it returns an invalid Tensor and the
// Module holds the error (the Python layer raises it with the user's line).
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

namespace tessera::python {

using DimArg = std::variant<int64_t, std::string>;
Shape toShape(const std::vector<DimArg> &dims);

/// An `axis` argument: None (every axis), an int, or a list of ints.
using AxisArg = std::optional<std::variant<int64_t, std::vector<int64_t>>>;

static op::Axes toAxes(const AxisArg &axis) {
  if (!axis)
    return op::Axes();
  if (auto *one = std::get_if<int64_t>(&*axis))
    return op::Axes(*one);
  return op::Axes(std::get<std::vector<int64_t>>(*axis));
}

/// A Python number: bool, int (within int64) or float.
using Number = std::variant<bool, int64_t, double>;

static Scalar toScalar(const Number &v) {
  if (auto *b = std::get_if<bool>(&v))
    return Scalar(*b);
  if (auto *i = std::get_if<int64_t>(&v))
    return Scalar(*i);
  return Scalar(std::get<double>(v));
}

static op::Policy policy(const std::optional<std::string> &accum) {
  op::Policy p;
  if (accum)
    p.accum = parseDType(*accum);
  return p;
}

static const SourceLoc here{};

static void bindGenerators(nb::module_ &m) {
  using namespace nb::literals;
  using T = const Tensor &;
  // Generators.
  m.def(
      "full",
      [](double v, const std::vector<DimArg> &shape, const std::string &dt) {
        return op::full(v, toShape(shape), parseDType(dt), here);
      },
      "value"_a, "shape"_a, "dtype"_a = "f32");
  m.def("zeros_like", [](T x) { return op::zeros_like(x, here); });
  m.def("ones_like", [](T x) { return op::ones_like(x, here); });
  m.def(
      "iota",
      [](const std::vector<DimArg> &shape, int64_t axis,
         const std::string &dt) {
        return op::iota(toShape(shape), axis, parseDType(dt), here);
      },
      "shape"_a, "axis"_a, "dtype"_a = "i64");
  m.def(
      "constant",
      [](nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> data,
         const std::string &dt) {
        Shape shape;
        for (size_t i = 0; i < data.ndim(); ++i)
          shape.push_back(Dim(int64_t(data.shape(i))));
        return op::constant_bytes(data.data(), shape, parseDType(dt), here);
      },
      "data"_a, "dtype"_a,
      "A constant with the elements of a C-contiguous array (bf16 and fp8 "
      "as uint16/uint8 bit patterns).");
  m.def(
      "scalar",
      [](const Number &v, T like) { return op::scalar(toScalar(v), like, here); },
      "value"_a, "like"_a);
  m.def(
      "promote",
      [](T x, const Number &v) {
        auto [t, s] = op::promote(x, toScalar(v), here);
        return std::make_pair(t, s);
      },
      "x"_a, "value"_a,
      "x and the number value as two tensors of the dtype they combine in "
      "(weak scalars: NumPy 2 and JAX).");
}

static void bindElementwise(nb::module_ &m) {
  using namespace nb::literals;
  using T = const Tensor &;
  // Elementwise.
#define TESSERA_UNARY(name)                                                    \
  m.def(                                                                       \
      #name, [](T x) { return op::name(x, here); }, "x"_a);
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
  TESSERA_UNARY(stop_gradient)
#undef TESSERA_UNARY
  m.def(
      "gelu",
      [](T x, bool approximate) { return op::gelu(x, approximate, here); },
      "x"_a, "approximate"_a = false);
#define TESSERA_BINARY(name)                                                   \
  m.def(                                                                       \
      #name, [](T a, T b) { return op::name(a, b, here); }, "lhs"_a, "rhs"_a);
  TESSERA_BINARY(add)
  TESSERA_BINARY(sub)
  TESSERA_BINARY(mul)
  TESSERA_BINARY(div)
  TESSERA_BINARY(pow)
  TESSERA_BINARY(max)
  TESSERA_BINARY(min)
#undef TESSERA_BINARY
  m.def(
      "floor_div", [](T a, T b) { return op::floor_div(a, b, here); },
      "lhs"_a, "rhs"_a);
  m.def(
      "compare",
      [](T a, T b, const std::string &d) { return op::compare(a, b, d, here); },
      "lhs"_a, "rhs"_a, "direction"_a);
  m.def(
      "select", [](T c, T a, T b) { return op::select(c, a, b, here); },
      "cond"_a, "on_true"_a, "on_false"_a);
  m.def(
      "cast",
      [](T x, const std::string &dt) {
        return op::cast(x, parseDType(dt), {}, here);
      },
      "x"_a, "dtype"_a);
}

static void bindContractions(nb::module_ &m) {
  using namespace nb::literals;
  using T = const Tensor &;
  // Contractions.
  m.def(
      "matmul",
      [](T a, T b, bool tl, bool tr, std::optional<std::string> accum) {
        return op::matmul(a, b, tl, tr, policy(accum), here);
      },
      "lhs"_a, "rhs"_a, "transpose_lhs"_a = false, "transpose_rhs"_a = false,
      "accum"_a = nb::none());
  m.def(
      "batch_matmul",
      [](T a, T b, std::optional<std::string> accum) {
        return op::batch_matmul(a, b, policy(accum), here);
      },
      "lhs"_a, "rhs"_a, "accum"_a = nb::none());
  m.def(
      "dot_general",
      [](T a, T b, std::vector<int64_t> lb, std::vector<int64_t> rb,
         std::vector<int64_t> lc, std::vector<int64_t> rc) {
        return op::dot_general(a, b, lb, rb, lc, rc, {}, here);
      },
      "lhs"_a, "rhs"_a, "lhs_batch_axes"_a, "rhs_batch_axes"_a,
      "lhs_contract_axes"_a, "rhs_contract_axes"_a);
  m.def(
      "conv2d",
      [](T x, T w, std::vector<int64_t> strides, std::vector<int64_t> padding,
         std::vector<int64_t> dilation, int64_t groups, bool channelsLast) {
        op::Conv2dOptions o{strides, padding, dilation, groups, channelsLast};
        return op::conv2d(x, w, o, here);
      },
      "input"_a, "filter"_a, "strides"_a = std::vector<int64_t>{1, 1},
      "padding"_a = std::vector<int64_t>{0, 0, 0, 0},
      "dilation"_a = std::vector<int64_t>{1, 1}, "groups"_a = 1,
      "channels_last"_a = false);
  m.def(
      "attention",
      [](T q, T k, T v, bool causal, std::optional<double> scale) {
        return op::attention(q, k, v, causal, scale, here);
      },
      "query"_a, "key"_a, "value"_a, "causal"_a = false,
      "scale"_a = nb::none());
}

static void bindReductions(nb::module_ &m) {
  using namespace nb::literals;
  using T = const Tensor &;
  // Reductions and normalizations.
#define TESSERA_REDUCE(name)                                                   \
  m.def(                                                                       \
      #name,                                                                   \
      [](T x, const AxisArg &axis, bool keep, bool stable) {                   \
        return op::name(x, toAxes(axis), keep, stable, here);                  \
      },                                                                       \
      "x"_a, "axis"_a = nb::none(), "keepdims"_a = false, "stable"_a = false);
  TESSERA_REDUCE(reduce_sum)
  TESSERA_REDUCE(reduce_mean)
  TESSERA_REDUCE(reduce_prod)
#undef TESSERA_REDUCE
#define TESSERA_REDUCE(name)                                                   \
  m.def(                                                                       \
      #name,                                                                   \
      [](T x, const AxisArg &axis, bool keep) {                                \
        return op::name(x, toAxes(axis), keep, here);                          \
      },                                                                       \
      "x"_a, "axis"_a = nb::none(), "keepdims"_a = false);
  TESSERA_REDUCE(reduce_max)
  TESSERA_REDUCE(reduce_min)
#undef TESSERA_REDUCE
#define TESSERA_ARG_REDUCE(name)                                               \
  m.def(                                                                       \
      #name,                                                                   \
      [](T x, int64_t axis, bool keep) {                                       \
        return op::name(x, axis, keep, here);                                  \
      },                                                                       \
      "x"_a, "axis"_a = -1, "keepdims"_a = false);
  TESSERA_ARG_REDUCE(argmax)
  TESSERA_ARG_REDUCE(argmin)
#undef TESSERA_ARG_REDUCE
#define TESSERA_AXIS_KEEP(name)                                                \
  m.def(                                                                       \
      #name,                                                                   \
      [](T x, const AxisArg &axis, bool keep) {                                \
        return op::name(x, toAxes(axis), keep, here);                          \
      },                                                                       \
      "x"_a, "axis"_a = -1, "keepdims"_a = false);
  TESSERA_AXIS_KEEP(logsumexp)
  TESSERA_AXIS_KEEP(logsumexp_safe)
#undef TESSERA_AXIS_KEEP
#define TESSERA_AXIS(name)                                                     \
  m.def(                                                                       \
      #name,                                                                   \
      [](T x, const AxisArg &axis) { return op::name(x, toAxes(axis), here); }, \
      "x"_a, "axis"_a = -1);
  TESSERA_AXIS(softmax)
  TESSERA_AXIS(log_softmax)
  TESSERA_AXIS(softmax_safe)
#undef TESSERA_AXIS
  auto opt = [](const std::optional<Tensor> &t) { return t ? *t : Tensor(); };
  m.def(
      "layernorm",
      [opt](T x, std::optional<Tensor> s, std::optional<Tensor> b,
            const AxisArg &axis, double eps) {
        return op::layernorm(x, opt(s), opt(b), toAxes(axis), eps, here);
      },
      "x"_a, "scale"_a = nb::none(), "bias"_a = nb::none(), "axis"_a = -1,
      "epsilon"_a = 1e-5);
  m.def(
      "layernorm_safe",
      [opt](T x, std::optional<Tensor> s, std::optional<Tensor> b,
            const AxisArg &axis, double eps) {
        return op::layernorm_safe(x, opt(s), opt(b), toAxes(axis), eps, here);
      },
      "x"_a, "scale"_a = nb::none(), "bias"_a = nb::none(), "axis"_a = -1,
      "epsilon"_a = 1e-5);
  m.def(
      "rmsnorm",
      [opt](T x, std::optional<Tensor> s, const AxisArg &axis, double eps) {
        return op::rmsnorm(x, opt(s), toAxes(axis), eps, here);
      },
      "x"_a, "scale"_a = nb::none(), "axis"_a = -1, "epsilon"_a = 1e-5);
  m.def(
      "rmsnorm_safe",
      [opt](T x, std::optional<Tensor> s, const AxisArg &axis, double eps) {
        return op::rmsnorm_safe(x, opt(s), toAxes(axis), eps, here);
      },
      "x"_a, "scale"_a = nb::none(), "axis"_a = -1, "epsilon"_a = 1e-5);
  m.def(
      "cross_entropy",
      [](T logits, T labels, const std::string &reduction) {
        return op::cross_entropy(logits, labels, reduction, here);
      },
      "logits"_a, "labels"_a, "reduction"_a = "mean");
}

static void bindLayout(nb::module_ &m) {
  using namespace nb::literals;
  using T = const Tensor &;
  // Layout.
  m.def(
      "transpose",
      [](T x, std::vector<int64_t> perm) {
        return op::transpose(x, perm, here);
      },
      "x"_a, "permutation"_a);
  m.def(
      "reshape",
      [](T x, const std::vector<DimArg> &shape) {
        return op::reshape(x, toShape(shape), here);
      },
      "x"_a, "shape"_a);
  m.def(
      "broadcast_in_dim",
      [](T x, const std::vector<DimArg> &shape, std::vector<int64_t> axes) {
        return op::broadcast_in_dim(x, toShape(shape), axes, here);
      },
      "x"_a, "shape"_a, "broadcast_axes"_a);
  m.def(
      "broadcast_to",
      [](T x, const std::vector<DimArg> &shape) {
        return op::broadcast_to(x, toShape(shape), here);
      },
      "x"_a, "shape"_a);
  m.def(
      "slice",
      [](T x, const std::vector<DimArg> &start,
         const std::vector<DimArg> &limit, std::vector<int64_t> stride) {
        return op::slice(x, toShape(start), toShape(limit), stride, here);
      },
      "x"_a, "start"_a, "limit"_a, "stride"_a = std::vector<int64_t>{});
  m.def(
      "concat",
      [](const std::vector<Tensor> &xs, int64_t axis) {
        return op::concat(xs, axis, here);
      },
      "inputs"_a, "axis"_a);
  m.def(
      "pad",
      [](T x, std::vector<int64_t> low, std::vector<int64_t> high, double value,
         std::vector<int64_t> interior) {
        return op::pad(x, low, high, value, interior, here);
      },
      "x"_a, "low"_a, "high"_a, "value"_a = 0.0,
      "interior"_a = std::vector<int64_t>{});
  m.def(
      "dynamic_slice",
      [](T x, const std::vector<Tensor> &starts,
         const std::vector<DimArg> &sizes) {
        return op::dynamic_slice(x, starts, toShape(sizes), here);
      },
      "x"_a, "starts"_a, "sizes"_a);
  m.def(
      "dim_size",
      [](T x, int64_t axis, const std::string &dt) {
        return op::dim_size(x, axis, parseDType(dt), here);
      },
      "x"_a, "axis"_a, "dtype"_a = "i64");
  m.def(
      "gather",
      [](T x, T i, int64_t axis) { return op::gather(x, i, axis, here); },
      "x"_a, "indices"_a, "axis"_a);
  m.def(
      "scatter_add",
      [](T x, T i, T u, int64_t axis) {
        return op::scatter_add(x, i, u, axis, here);
      },
      "x"_a, "indices"_a, "updates"_a, "axis"_a);
  m.def(
      "embedding", [](T t, T ids) { return op::embedding(t, ids, here); },
      "table"_a, "ids"_a);
}

static void bindCollectives(nb::module_ &m) {
  using namespace nb::literals;
  using T = const Tensor &;
  // Collectives: `axis` is an array axis, `axis_name` the mesh axis.
  m.def(
      "all_reduce",
      [](T x, const std::string &r, const std::string &name, int64_t g) {
        return op::all_reduce(x, r, name, g, here);
      },
      "x"_a, "reduction"_a = "sum", "axis_name"_a = "", "group_size"_a = 1);
  m.def(
      "all_gather",
      [](T x, int64_t axis, const std::string &name, int64_t g) {
        return op::all_gather(x, axis, name, g, here);
      },
      "x"_a, "axis"_a, "axis_name"_a = "", "group_size"_a = 1);
  m.def(
      "reduce_scatter",
      [](T x, int64_t axis, const std::string &r, const std::string &name,
         int64_t g) { return op::reduce_scatter(x, axis, r, name, g, here); },
      "x"_a, "axis"_a, "reduction"_a = "sum", "axis_name"_a = "",
      "group_size"_a = 1);
  m.def(
      "all_to_all",
      [](T x, int64_t s, int64_t c, const std::string &name, int64_t g) {
        return op::all_to_all(x, s, c, name, g, here);
      },
      "x"_a, "split_axis"_a, "concat_axis"_a, "axis_name"_a = "",
      "group_size"_a = 1);
  m.def(
      "permute",
      [](T x, const std::vector<std::pair<int64_t, int64_t>> &pairs,
         const std::string &name) {
        return op::permute(x, pairs, name, here);
      },
      "x"_a, "pairs"_a, "axis_name"_a = "");
}

static void bindState(nb::module_ &m) {
  using namespace nb::literals;
  using T = const Tensor &;
  // Key/value caches.
  m.def(
      "kv_cache_create",
      [](const std::vector<DimArg> &shape, const std::string &dt,
         std::optional<int64_t> window) {
        return op::kv_cache_create(toShape(shape), parseDType(dt), window,
                                   here);
      },
      "shape"_a, "dtype"_a = "f32", "window"_a = nb::none());
  m.def(
      "kv_cache_append",
      [](T cache, T keys, T values) {
        return op::kv_cache_append(cache, keys, values, here);
      },
      "cache"_a, "keys"_a, "values"_a);
  m.def(
      "kv_cache_read", [](T cache) { return op::kv_cache_read(cache, here); },
      "cache"_a);
  m.def(
      "kv_cache_prune",
      [](T cache, int64_t keep) {
        return op::kv_cache_prune(cache, keep, here);
      },
      "cache"_a, "keep"_a);
}

static void bindRandom(nb::module_ &m) {
  using namespace nb::literals;
  using T = const Tensor &;
  // Random numbers.
  m.def(
      "rng_key", [](int64_t seed) { return op::rng_key(seed, here); },
      "seed"_a);
  m.def(
      "rng_split", [](T key, int64_t n) { return op::rng_split(key, n, here); },
      "key"_a, "count"_a = 2);
  m.def(
      "rng_fold_in",
      [](T key, T data) { return op::rng_fold_in(key, data, here); }, "key"_a,
      "data"_a);
  m.def(
      "rng_uniform",
      [](T key, const std::vector<DimArg> &shape, const std::string &dt,
         double low, double high) {
        return op::rng_uniform(key, toShape(shape), parseDType(dt), low, high,
                               here);
      },
      "key"_a, "shape"_a, "dtype"_a = "f32", "low"_a = 0.0, "high"_a = 1.0);
  m.def(
      "rng_normal",
      [](T key, const std::vector<DimArg> &shape, const std::string &dt,
         double mean, double stddev) {
        return op::rng_normal(key, toShape(shape), parseDType(dt), mean, stddev,
                              here);
      },
      "key"_a, "shape"_a, "dtype"_a = "f32", "mean"_a = 0.0, "stddev"_a = 1.0);
  m.def(
      "rng_bernoulli",
      [](T key, const std::vector<DimArg> &shape, double p) {
        return op::rng_bernoulli(key, toShape(shape), p, here);
      },
      "key"_a, "shape"_a, "p"_a);
  m.def(
      "one_hot",
      [](T ids, int64_t n, const std::string &dt) {
        return op::one_hot(ids, n, parseDType(dt), here);
      },
      "ids"_a, "num_classes"_a, "dtype"_a = "f32");
}

void bindOps(nb::module_ &m) {
  bindGenerators(m);
  bindElementwise(m);
  bindContractions(m);
  bindReductions(m);
  bindLayout(m);
  bindCollectives(m);
  bindState(m);
  bindRandom(m);
}

} // namespace tessera::python
