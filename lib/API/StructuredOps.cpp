//===- StructuredOps.cpp - Contractions, reductions and layout ops --------===//

#include "OpBuilder.h"

#include "tessera/Shape/DimExpr.h"

using namespace mlir;
namespace tg = mlir::tessera::tgraph;
using ::tessera::detail::begin;

namespace tessera::op {

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

Tensor matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
              bool transposeRhs, const Policy &policy, SourceLoc where) {
  auto c = begin({&lhs, &rhs}, where);
  if (!c)
    return {};
  Value l = c->use(lhs), r = c->use(rhs);
  return c->result(tg::MatmulOp::create(c->b(), c->loc, l.getType(), l, r,
                                        transposeLhs, transposeRhs,
                                        c->policy(policy)));
}

Tensor batch_matmul(const Tensor &lhs, const Tensor &rhs, const Policy &policy,
                    SourceLoc where) {
  auto c = begin({&lhs, &rhs}, where);
  if (!c)
    return {};
  Value l = c->use(lhs), r = c->use(rhs);
  return c->result(tg::BatchMatmulOp::create(c->b(), c->loc, l.getType(), l, r,
                                             c->policy(policy)));
}

Tensor dot_general(const Tensor &lhs, const Tensor &rhs,
                   const std::vector<int64_t> &lhsBatch,
                   const std::vector<int64_t> &rhsBatch,
                   const std::vector<int64_t> &lhsContract,
                   const std::vector<int64_t> &rhsContract,
                   const Policy &policy, SourceLoc where) {
  auto c = begin({&lhs, &rhs}, where);
  if (!c)
    return {};
  auto lb = c->axes(lhs, lhsBatch), rb = c->axes(rhs, rhsBatch);
  auto lc = c->axes(lhs, lhsContract), rc = c->axes(rhs, rhsContract);
  if (!lb || !rb || !lc || !rc)
    return {};
  Value l = c->use(lhs), r = c->use(rhs);
  return c->result(tg::DotGeneralOp::create(c->b(), c->loc, l.getType(), l, r,
                                            *lb, *rb, *lc, *rc,
                                            c->policy(policy)));
}

Tensor conv2d(const Tensor &input, const Tensor &filter, const Conv2dOptions &o,
              SourceLoc where) {
  auto c = begin({&input, &filter}, where);
  if (!c)
    return {};
  Value x = c->use(input), w = c->use(filter);
  auto layout = o.channelsLast ? tg::ConvLayout::nhwc : tg::ConvLayout::nchw;
  return c->result(tg::Conv2dOp::create(
      c->b(), c->loc, x.getType(), x, w, o.strides, o.padding, o.dilation,
      uint64_t(std::max<int64_t>(o.groups, 0)), layout, tg::PolicyAttr()));
}

Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v, bool causal,
                 std::optional<double> scale, SourceLoc where) {
  auto c = begin({&q, &k, &v}, where);
  if (!c)
    return {};
  Value qv = c->use(q), kv = c->use(k), vv = c->use(v);
  FloatAttr s =
      scale ? FloatAttr::get(Float64Type::get(c->ctx()), *scale) : FloatAttr();
  return c->result(tg::AttentionOp::create(c->b(), c->loc, qv.getType(), qv, kv,
                                           vv, causal, s, tg::PolicyAttr()));
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

/// Every dim when `dims` is empty.
static std::optional<std::vector<int64_t>>
reductionDims(const detail::OpContext &c, const Tensor &x,
              const std::vector<int64_t> &dims) {
  if (!dims.empty())
    return c.axes(x, dims);
  std::vector<int64_t> all(x.rank());
  for (int64_t i = 0; i < x.rank(); ++i)
    all[i] = i;
  return all;
}

template <typename OpTy>
static Tensor reduceStable(const Tensor &x, const std::vector<int64_t> &dims,
                           bool keepdims, bool stable, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = reductionDims(*c, x, dims);
  if (!d)
    return {};
  Value v = c->use(x);
  return c->result(OpTy::create(c->b(), c->loc, v.getType(), v, *d, keepdims,
                                stable, tg::PolicyAttr()));
}

template <typename OpTy>
static Tensor reduce(const Tensor &x, const std::vector<int64_t> &dims,
                     bool keepdims, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = reductionDims(*c, x, dims);
  if (!d)
    return {};
  Value v = c->use(x);
  return c->result(OpTy::create(c->b(), c->loc, v.getType(), v, *d, keepdims));
}

Tensor reduce_sum(const Tensor &x, const std::vector<int64_t> &dims,
                  bool keepdims, bool stable, SourceLoc loc) {
  return reduceStable<tg::ReduceSumOp>(x, dims, keepdims, stable, loc);
}
Tensor reduce_mean(const Tensor &x, const std::vector<int64_t> &dims,
                   bool keepdims, bool stable, SourceLoc loc) {
  return reduceStable<tg::ReduceMeanOp>(x, dims, keepdims, stable, loc);
}
Tensor reduce_prod(const Tensor &x, const std::vector<int64_t> &dims,
                   bool keepdims, bool stable, SourceLoc loc) {
  return reduceStable<tg::ReduceProdOp>(x, dims, keepdims, stable, loc);
}
Tensor reduce_max(const Tensor &x, const std::vector<int64_t> &dims,
                  bool keepdims, SourceLoc loc) {
  return reduce<tg::ReduceMaxOp>(x, dims, keepdims, loc);
}
Tensor reduce_min(const Tensor &x, const std::vector<int64_t> &dims,
                  bool keepdims, SourceLoc loc) {
  return reduce<tg::ReduceMinOp>(x, dims, keepdims, loc);
}

template <typename OpTy>
static Tensor alongAxis(const Tensor &x, int64_t dim, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = c->axis(x, dim);
  if (!d)
    return {};
  Value v = c->use(x);
  return c->result(OpTy::create(c->b(), c->loc, v.getType(), v, *d));
}

template <typename OpTy>
static Tensor alongAxisKeep(const Tensor &x, int64_t dim, bool keepdims,
                            SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = c->axis(x, dim);
  if (!d)
    return {};
  Value v = c->use(x);
  return c->result(OpTy::create(c->b(), c->loc, v.getType(), v, *d, keepdims));
}

Tensor argmax(const Tensor &x, int64_t dim, bool keepdims, SourceLoc loc) {
  return alongAxisKeep<tg::ArgmaxOp>(x, dim, keepdims, loc);
}
Tensor argmin(const Tensor &x, int64_t dim, bool keepdims, SourceLoc loc) {
  return alongAxisKeep<tg::ArgminOp>(x, dim, keepdims, loc);
}
Tensor softmax(const Tensor &x, int64_t dim, SourceLoc loc) {
  return alongAxis<tg::SoftmaxOp>(x, dim, loc);
}
Tensor log_softmax(const Tensor &x, int64_t dim, SourceLoc loc) {
  return alongAxis<tg::LogSoftmaxOp>(x, dim, loc);
}
Tensor softmax_safe(const Tensor &x, int64_t dim, SourceLoc loc) {
  return alongAxis<tg::SoftmaxSafeOp>(x, dim, loc);
}
Tensor logsumexp(const Tensor &x, int64_t dim, bool keepdims, SourceLoc loc) {
  return alongAxisKeep<tg::LogsumexpOp>(x, dim, keepdims, loc);
}
Tensor logsumexp_safe(const Tensor &x, int64_t dim, bool keepdims,
                      SourceLoc loc) {
  return alongAxisKeep<tg::LogsumexpSafeOp>(x, dim, keepdims, loc);
}

template <typename OpTy>
static Tensor layerNorm(const Tensor &x, const Tensor &scale,
                        const Tensor &bias, int64_t axis, double epsilon,
                        SourceLoc where) {
  auto c = begin(
      {&x, scale.valid() ? &scale : nullptr, bias.valid() ? &bias : nullptr},
      where);
  if (!c)
    return {};
  auto a = c->axis(x, axis, "axis");
  if (!a)
    return {};
  Value v = c->use(x);
  Value s = scale.valid() ? c->use(scale) : Value();
  Value b = bias.valid() ? c->use(bias) : Value();
  return c->result(OpTy::create(c->b(), c->loc, v.getType(), v, s, b, *a,
                                APFloat(epsilon), tg::PolicyAttr()));
}

template <typename OpTy>
static Tensor rmsNorm(const Tensor &x, const Tensor &scale, int64_t axis,
                      double epsilon, SourceLoc where) {
  auto c = begin({&x, scale.valid() ? &scale : nullptr}, where);
  if (!c)
    return {};
  auto a = c->axis(x, axis, "axis");
  if (!a)
    return {};
  Value v = c->use(x);
  Value s = scale.valid() ? c->use(scale) : Value();
  return c->result(OpTy::create(c->b(), c->loc, v.getType(), v, s, *a,
                                APFloat(epsilon), tg::PolicyAttr()));
}

Tensor layernorm(const Tensor &x, const Tensor &scale, const Tensor &bias,
                 int64_t axis, double epsilon, SourceLoc loc) {
  return layerNorm<tg::LayerNormOp>(x, scale, bias, axis, epsilon, loc);
}
Tensor layernorm_safe(const Tensor &x, const Tensor &scale, const Tensor &bias,
                      int64_t axis, double epsilon, SourceLoc loc) {
  return layerNorm<tg::LayerNormSafeOp>(x, scale, bias, axis, epsilon, loc);
}
Tensor rmsnorm(const Tensor &x, const Tensor &scale, int64_t axis,
               double epsilon, SourceLoc loc) {
  return rmsNorm<tg::RMSNormOp>(x, scale, axis, epsilon, loc);
}
Tensor rmsnorm_safe(const Tensor &x, const Tensor &scale, int64_t axis,
                    double epsilon, SourceLoc loc) {
  return rmsNorm<tg::RMSNormSafeOp>(x, scale, axis, epsilon, loc);
}

Tensor cross_entropy(const Tensor &logits, const Tensor &labels,
                     const std::string &reduction, SourceLoc where) {
  auto c = begin({&logits, &labels}, where);
  if (!c)
    return {};
  auto r = tg::symbolizeLossReduction(reduction);
  if (!r) {
    c->state->failAt(c->loc, "cross_entropy reduction must be mean, sum or "
                             "none; got '" +
                                 reduction + "'");
    return {};
  }
  Value l = c->use(logits), y = c->use(labels);
  return c->result(tg::CrossEntropyOp::create(c->b(), c->loc, l.getType(), l, y,
                                              *r, tg::PolicyAttr()));
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

Tensor transpose(const Tensor &x, const std::vector<int64_t> &permutation,
                 SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  Value v = c->use(x);
  return c->result(
      tg::TransposeOp::create(c->b(), c->loc, v.getType(), v, permutation));
}

Tensor reshape(const Tensor &x, const Shape &shape, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  // -1 is the dim solved from the element count ('?' in the IR).
  Shape target;
  for (const Dim &d : shape)
    target.push_back(d.isStatic() && d.size() == -1 ? Dim("?") : d);
  Value v = c->use(x);
  RankedTensorType type = c->state->tensorType(target, x.dtype());
  if (!type)
    return {};
  return c->result(tg::ReshapeOp::create(c->b(), c->loc, type, v), {type});
}

Tensor broadcast_in_dim(const Tensor &x, const Shape &shape,
                        const std::vector<int64_t> &broadcastDims,
                        SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  Value v = c->use(x);
  RankedTensorType type = c->state->tensorType(shape, x.dtype());
  if (!type)
    return {};
  return c->result(
      tg::BroadcastInDimOp::create(c->b(), c->loc, type, v, broadcastDims),
      {type});
}

Tensor broadcast_to(const Tensor &x, const Shape &shape, SourceLoc where) {
  int64_t offset = int64_t(shape.size()) - x.rank();
  if (x.valid() && offset < 0) {
    auto c = begin({&x}, where);
    if (c)
      c->state->failAt(c->loc, "cannot broadcast " + x.str() +
                                   " to fewer "
                                   "dims: " +
                                   describe(shape));
    return {};
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < x.rank(); ++i)
    dims.push_back(i + offset);
  return broadcast_in_dim(x, shape, dims, where);
}

static tg::DimsAttr dimsAttr(const detail::OpContext &c, const Shape &dims) {
  std::vector<::tessera::shape::DimExpr> exprs;
  for (const Dim &d : dims) {
    std::string error;
    auto e = ::tessera::shape::parseDimExpr(d.str(), error);
    if (!e) {
      c.state->failAt(c.loc, "bad dim '" + d.str() + "': " + error);
      return {};
    }
    exprs.push_back(*e);
  }
  return tg::DimsAttr::get(c.ctx(), exprs);
}

Tensor slice(const Tensor &x, const Shape &start, const Shape &limit,
             const std::vector<int64_t> &stride, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  std::vector<int64_t> steps = stride;
  if (steps.empty())
    steps.assign(start.size(), 1);
  tg::DimsAttr from = dimsAttr(*c, start), to = dimsAttr(*c, limit);
  if (!from || !to)
    return {};
  Value v = c->use(x);
  return c->result(
      tg::SliceOp::create(c->b(), c->loc, v.getType(), v, from, to, steps));
}

Tensor concat(const std::vector<Tensor> &inputs, int64_t dim, SourceLoc where) {
  if (inputs.empty())
    return {};
  for (const Tensor &t : inputs)
    if (!t.valid())
      return {};
  auto c = begin({&inputs[0]}, where);
  if (!c)
    return {};
  auto d = c->axis(inputs[0], dim);
  if (!d)
    return {};
  SmallVector<Value> values;
  for (const Tensor &t : inputs) {
    if (t.getState() != c->state) {
      c->state->fail("the operands of an op belong to different Modules");
      return {};
    }
    values.push_back(c->use(t));
  }
  return c->result(
      tg::ConcatOp::create(c->b(), c->loc, values[0].getType(), values, *d));
}

Tensor pad(const Tensor &x, const std::vector<int64_t> &low,
           const std::vector<int64_t> &high, double value,
           const std::vector<int64_t> &interior, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  std::vector<int64_t> inner = interior;
  if (inner.empty())
    inner.assign(low.size(), 0);
  Value v = c->use(x);
  return c->result(tg::PadOp::create(c->b(), c->loc, v.getType(), v, low, high,
                                     inner, c->scalarAttr(value, x.dtype())));
}

Tensor dynamic_slice(const Tensor &x, const std::vector<Tensor> &starts,
                     const Shape &sizes, SourceLoc where) {
  for (const Tensor &s : starts)
    if (!s.valid())
      return {};
  auto c = begin({&x}, where);
  if (!c)
    return {};
  tg::DimsAttr dims = dimsAttr(*c, sizes);
  if (!dims)
    return {};
  SmallVector<Value> values;
  for (const Tensor &s : starts)
    values.push_back(c->use(s));
  Value v = c->use(x);
  return c->result(
      tg::DynamicSliceOp::create(c->b(), c->loc, v.getType(), v, values, dims));
}

Tensor dim_size(const Tensor &x, int64_t dim, DType dtype, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = c->axis(x, dim);
  if (!d)
    return {};
  RankedTensorType type = c->state->tensorType({}, dtype);
  return c->result(tg::DimSizeOp::create(c->b(), c->loc, type, c->use(x), *d),
                   {type});
}

Tensor gather(const Tensor &x, const Tensor &indices, int64_t dim,
              SourceLoc where) {
  auto c = begin({&x, &indices}, where);
  if (!c)
    return {};
  auto d = c->axis(x, dim);
  if (!d)
    return {};
  Value v = c->use(x), i = c->use(indices);
  return c->result(tg::GatherOp::create(c->b(), c->loc, v.getType(), v, i, *d));
}

Tensor scatter_add(const Tensor &x, const Tensor &indices,
                   const Tensor &updates, int64_t dim, SourceLoc where) {
  auto c = begin({&x, &indices, &updates}, where);
  if (!c)
    return {};
  auto d = c->axis(x, dim);
  if (!d)
    return {};
  Value v = c->use(x), i = c->use(indices), u = c->use(updates);
  return c->result(
      tg::ScatterAddOp::create(c->b(), c->loc, v.getType(), v, i, u, *d));
}

Tensor embedding(const Tensor &table, const Tensor &ids, SourceLoc where) {
  auto c = begin({&table, &ids}, where);
  if (!c)
    return {};
  Value t = c->use(table), i = c->use(ids);
  return c->result(tg::EmbeddingOp::create(c->b(), c->loc, t.getType(), t, i));
}

Tensor one_hot(const Tensor &ids, int64_t numClasses, DType dtype,
               SourceLoc where) {
  auto c = begin({&ids}, where);
  if (!c)
    return {};
  if (numClasses <= 0) {
    c->state->failAt(c->loc, "one_hot needs num_classes >= 1, got " +
                                 std::to_string(numClasses));
    return {};
  }
  Value i = c->use(ids);
  Shape shape = ids.shape();
  shape.push_back(Dim(numClasses));
  RankedTensorType type = c->state->tensorType(shape, dtype);
  if (!type)
    return {};
  return c->result(
      tg::OneHotOp::create(c->b(), c->loc, type, i, uint64_t(numClasses)),
      {type});
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

static std::optional<tg::ReductionKind>
reductionKind(const detail::OpContext &c, const std::string &name) {
  auto kind = tg::symbolizeReductionKind(name);
  if (!kind)
    c.state->failAt(c.loc, "the reduction must be sum, prod, min, max or "
                           "mean; got '" +
                               name + "'");
  return kind;
}

Tensor all_reduce(const Tensor &x, const std::string &reduction,
                  const std::string &axis, int64_t groupSize, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto kind = reductionKind(*c, reduction);
  if (!kind)
    return {};
  Value v = c->use(x);
  return c->result(tg::AllReduceOp::create(c->b(), c->loc, v.getType(), v,
                                           *kind, axis, uint64_t(groupSize)));
}

Tensor all_gather(const Tensor &x, int64_t dim, const std::string &axis,
                  int64_t groupSize, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = c->axis(x, dim);
  if (!d)
    return {};
  Value v = c->use(x);
  return c->result(tg::AllGatherOp::create(c->b(), c->loc, v.getType(), v, *d,
                                           axis, uint64_t(groupSize)));
}

Tensor reduce_scatter(const Tensor &x, int64_t dim,
                      const std::string &reduction, const std::string &axis,
                      int64_t groupSize, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = c->axis(x, dim);
  auto kind = reductionKind(*c, reduction);
  if (!d || !kind)
    return {};
  Value v = c->use(x);
  return c->result(tg::ReduceScatterOp::create(
      c->b(), c->loc, v.getType(), v, *kind, *d, axis, uint64_t(groupSize)));
}

Tensor all_to_all(const Tensor &x, int64_t splitDim, int64_t concatDim,
                  const std::string &axis, int64_t groupSize, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto s = c->axis(x, splitDim, "split dim");
  auto d = c->axis(x, concatDim, "concat dim");
  if (!s || !d)
    return {};
  Value v = c->use(x);
  return c->result(tg::AllToAllOp::create(c->b(), c->loc, v.getType(), v, *s,
                                          *d, axis, uint64_t(groupSize)));
}

Tensor permute(const Tensor &x,
               const std::vector<std::pair<int64_t, int64_t>> &pairs,
               const std::string &axis, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  SmallVector<Attribute> list;
  for (auto [from, to] : pairs)
    list.push_back(DenseI64ArrayAttr::get(c->ctx(), {from, to}));
  Value v = c->use(x);
  return c->result(tg::PermuteOp::create(c->b(), c->loc, v.getType(), v,
                                         ArrayAttr::get(c->ctx(), list), axis));
}

} // namespace tessera::op
