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
                   const std::vector<int64_t> &lhsBatchAxes,
                   const std::vector<int64_t> &rhsBatchAxes,
                   const std::vector<int64_t> &lhsContractAxes,
                   const std::vector<int64_t> &rhsContractAxes,
                   const Policy &policy, SourceLoc where) {
  auto c = begin({&lhs, &rhs}, where);
  if (!c)
    return {};
  auto lb = c->axisList(lhs, lhsBatchAxes, "lhs batch axes");
  auto rb = c->axisList(rhs, rhsBatchAxes, "rhs batch axes");
  auto lc = c->axisList(lhs, lhsContractAxes, "lhs contracting axes");
  auto rc = c->axisList(rhs, rhsContractAxes, "rhs contracting axes");
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
// Losses
//===----------------------------------------------------------------------===//

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
  // A softmax over no classes has no value (and labels index nothing).
  if (logits.rank() >= 1 &&
      !c->requireElements(logits, {logits.rank() - 1}, "cross_entropy",
                          "softmax"))
    return {};
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
                        const std::vector<int64_t> &broadcastAxes,
                        SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  Value v = c->use(x);
  RankedTensorType type = c->state->tensorType(shape, x.dtype());
  if (!type)
    return {};
  return c->result(
      tg::BroadcastInDimOp::create(c->b(), c->loc, type, v, broadcastAxes),
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
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < x.rank(); ++i)
    axes.push_back(i + offset);
  return broadcast_in_dim(x, shape, axes, where);
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

Tensor concat(const std::vector<Tensor> &inputs, int64_t axis,
              SourceLoc where) {
  if (inputs.empty())
    return {};
  for (const Tensor &t : inputs)
    if (!t.valid())
      return {};
  auto c = begin({&inputs[0]}, where);
  if (!c)
    return {};
  auto d = c->axis(inputs[0], axis);
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

Tensor dim_size(const Tensor &x, int64_t axis, DType dtype, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = c->axis(x, axis);
  if (!d)
    return {};
  RankedTensorType type = c->state->tensorType({}, dtype);
  return c->result(tg::DimSizeOp::create(c->b(), c->loc, type, c->use(x), *d),
                   {type});
}

Tensor gather(const Tensor &x, const Tensor &indices, int64_t axis,
              SourceLoc where) {
  auto c = begin({&x, &indices}, where);
  if (!c)
    return {};
  auto d = c->axis(x, axis);
  if (!d)
    return {};
  Value v = c->use(x), i = c->use(indices);
  return c->result(tg::GatherOp::create(c->b(), c->loc, v.getType(), v, i, *d));
}

Tensor scatter_add(const Tensor &x, const Tensor &indices,
                   const Tensor &updates, int64_t axis, SourceLoc where) {
  auto c = begin({&x, &indices, &updates}, where);
  if (!c)
    return {};
  auto d = c->axis(x, axis);
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
                  const std::string &axisName, int64_t groupSize,
                  SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto kind = reductionKind(*c, reduction);
  if (!kind)
    return {};
  Value v = c->use(x);
  return c->result(tg::AllReduceOp::create(c->b(), c->loc, v.getType(), v,
                                           *kind, axisName,
                                           uint64_t(groupSize)));
}

Tensor all_gather(const Tensor &x, int64_t axis, const std::string &axisName,
                  int64_t groupSize, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = c->axis(x, axis);
  if (!d)
    return {};
  Value v = c->use(x);
  return c->result(tg::AllGatherOp::create(c->b(), c->loc, v.getType(), v, *d,
                                           axisName, uint64_t(groupSize)));
}

Tensor reduce_scatter(const Tensor &x, int64_t axis,
                      const std::string &reduction,
                      const std::string &axisName, int64_t groupSize,
                      SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = c->axis(x, axis);
  auto kind = reductionKind(*c, reduction);
  if (!d || !kind)
    return {};
  Value v = c->use(x);
  return c->result(tg::ReduceScatterOp::create(
      c->b(), c->loc, v.getType(), v, *kind, *d, axisName,
      uint64_t(groupSize)));
}

Tensor all_to_all(const Tensor &x, int64_t splitAxis, int64_t concatAxis,
                  const std::string &axisName, int64_t groupSize,
                  SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto s = c->axis(x, splitAxis, "split axis");
  auto d = c->axis(x, concatAxis, "concat axis");
  if (!s || !d)
    return {};
  Value v = c->use(x);
  return c->result(tg::AllToAllOp::create(c->b(), c->loc, v.getType(), v, *s,
                                          *d, axisName, uint64_t(groupSize)));
}

Tensor permute(const Tensor &x,
               const std::vector<std::pair<int64_t, int64_t>> &pairs,
               const std::string &axisName, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  SmallVector<Attribute> list;
  for (auto [from, to] : pairs)
    list.push_back(DenseI64ArrayAttr::get(c->ctx(), {from, to}));
  Value v = c->use(x);
  return c->result(tg::PermuteOp::create(c->b(), c->loc, v.getType(), v,
                                         ArrayAttr::get(c->ctx(), list),
                                         axisName));
}

} // namespace tessera::op
