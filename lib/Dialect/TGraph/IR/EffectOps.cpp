//===- EffectOps.cpp - randomness, collectives, state ---------------------===//
//
// Verifiers and shape functions of TGraphEffectOps.td.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

//===----------------------------------------------------------------------===//
// Random numbers
//===----------------------------------------------------------------------===//

LogicalResult RngSplitOp::verify() {
  if (getKeys().empty())
    return emitOpError("must produce at least one key");
  return success();
}

/// Sample shapes must be fully determined (constants or symbols).
static LogicalResult verifySampleShape(Operation *op, RankedTensorType type) {
  for (auto [i, d] : llvm::enumerate(getShape(type).dims))
    if (d.isUnknown())
      return op->emitOpError()
             << "result dim " << i
             << " is '?'; random tensors need every dim to be a constant "
                "or a symbol expression";
  return success();
}

LogicalResult RngUniformOp::verify() {
  double lo = getLow().convertToDouble(), hi = getHigh().convertToDouble();
  if (!(lo < hi) || std::isinf(lo) || std::isinf(hi))
    return emitOpError() << "needs finite low < high, but got [" << lo << ", "
                         << hi << ")";
  return verifySampleShape(*this, getType());
}

LogicalResult RngNormalOp::verify() {
  double sd = getStddev().convertToDouble();
  if (!(sd >= 0) || std::isinf(sd) || std::isnan(getMean().convertToDouble()) ||
      std::isinf(getMean().convertToDouble()))
    return emitOpError() << "needs a finite mean and a finite stddev >= 0, "
                            "but got mean "
                         << getMean().convertToDouble() << " and stddev "
                         << sd;
  return verifySampleShape(*this, getType());
}

LogicalResult RngBernoulliOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0 && p <= 1))
    return emitOpError() << "p must be in [0, 1], but is " << p;
  return verifySampleShape(*this, getType());
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

static LogicalResult checkAxisName(TypeInference &ti, StringRef axis) {
  if (axis.empty())
    return ti.fail("axis_name must name a mesh axis, but is empty");
  return success();
}

LogicalResult AllReduceOp::inferTypes(TypeInference &ti, Adaptor a) {
  if (failed(checkAxisName(ti, a.getAxisName())))
    return failure();
  int64_t group = a.getGroupSize();
  if (group < 1)
    return ti.fail("group_size must be >= 1, but is " + std::to_string(group));
  Type element = getElementTypeOrSelf(a.getX().getType());
  if (a.getReduction() == ReductionKind::mean && !isa<FloatType>(element))
    return ti.fail("a mean all_reduce needs a float tensor, but the element "
                   "type is " + typeName(element));
  ti.addResult(a.getX().getType());
  return success();
}

LogicalResult AllGatherOp::inferTypes(TypeInference &ti, Adaptor a) {
  if (failed(checkAxisName(ti, a.getAxisName())))
    return failure();
  auto result = shape::inferAllGather(ti.diag(), getShape(a.getX().getType()),
                                      a.getDim(), a.getGroupSize());
  return ti.addResult(result, getElementTypeOrSelf(a.getX().getType()));
}

LogicalResult ReduceScatterOp::inferTypes(TypeInference &ti, Adaptor a) {
  if (failed(checkAxisName(ti, a.getAxisName())))
    return failure();
  auto result = shape::inferReduceScatter(
      ti.diag(), getShape(a.getX().getType()), a.getDim(), a.getGroupSize());
  return ti.addResult(result, getElementTypeOrSelf(a.getX().getType()));
}

LogicalResult AllToAllOp::inferTypes(TypeInference &ti, Adaptor a) {
  if (failed(checkAxisName(ti, a.getAxisName())))
    return failure();
  auto result = shape::inferAllToAll(ti.diag(), getShape(a.getX().getType()),
                                     a.getSplitDim(), a.getConcatDim(),
                                     a.getGroupSize());
  return ti.addResult(result, getElementTypeOrSelf(a.getX().getType()));
}

LogicalResult PermuteOp::inferTypes(TypeInference &ti, Adaptor a) {
  if (failed(checkAxisName(ti, a.getAxisName())))
    return failure();
  llvm::SmallDenseSet<int64_t> sources, targets;
  for (Attribute attr : a.getPairs()) {
    ArrayRef<int64_t> pair = cast<DenseI64ArrayAttr>(attr).asArrayRef();
    if (pair.size() != 2 || pair[0] < 0 || pair[1] < 0)
      return ti.fail("each entry of pairs must be [source, target] with "
                     "non-negative device indices");
    if (!sources.insert(pair[0]).second)
      return ti.fail("device " + std::to_string(pair[0]) +
                     " is the source of two pairs");
    if (!targets.insert(pair[1]).second)
      return ti.fail("device " + std::to_string(pair[1]) +
                     " is the target of two pairs");
  }
  ti.addResult(a.getX().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// KV cache
//===----------------------------------------------------------------------===//

LogicalResult KVCacheCreateOp::verify() {
  if (auto window = getWindowAttr()) {
    auto capacity = getCache().getType().getShape().getDims()[2].getConstant();
    if (window.getInt() < 1 || (capacity && window.getInt() > *capacity))
      return emitOpError() << "window must be in [1, max_length], but is "
                           << window.getInt();
  }
  return success();
}

/// keys/values of an append: [batch, heads, T, head_dim] matching the cache.
static LogicalResult verifyCacheUpdate(Operation *op, KVCacheType cache,
                                       Value keys, Value values) {
  TypeInference ti(op->getContext(), op->getLoc(), op->getName().getStringRef());
  ti.setOperandNames({"cache", "keys", "values"});
  std::vector<shape::DimExpr> c = cache.getShape().getDims();
  for (auto [idx, v] : llvm::enumerate(SmallVector<Value>{keys, values})) {
    unsigned operand = idx + 1;
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() != cache.getElementType())
      return op->emitOpError()
             << ti.diag().operandLabel(operand) << " has element type "
             << typeName(t.getElementType()) << " but the cache stores "
             << typeName(cache.getElementType());
    shape::TensorShape s = getShape(t);
    if (s.rank() != 4)
      return op->emitOpError() << ti.diag().operandLabel(operand)
                               << " must be [batch, heads, T, head_dim], but "
                                  "has shape "
                               << s.str();
    for (unsigned d : {0u, 1u, 3u})
      if (!ti.diag().unify(s.dims[d], ti.diag().dimLabel(operand, d), {},
                           c[d], "cache dim " + std::to_string(d), {},
                           "cache shape mismatch"))
        return op->emitOpError() << ti.message();
  }
  shape::TensorShape ks = getShape(keys.getType()), vs = getShape(values.getType());
  if (!ti.diag().unify(ks.dims[2], ti.diag().dimLabel(1, 2), {}, vs.dims[2],
                       ti.diag().dimLabel(2, 2), {},
                       "keys and values cover different numbers of positions"))
    return op->emitOpError() << ti.message();
  return success();
}

LogicalResult KVCacheAppendOp::verify() {
  return verifyCacheUpdate(*this, getCache().getType(), getKeys(), getValues());
}

LogicalResult KVCacheReadOp::verify() {
  KVCacheType cache = getCache().getType();
  Type expected = getTensorType(shape::TensorShape(cache.getShape().getDims()),
                                cache.getElementType());
  for (Value v : {getKeys(), getValues()})
    if (!areCompatibleTypes(v.getType(), expected))
      return emitOpError() << "reads the cache as " << v.getType()
                           << " but its full contents have type " << expected;
  return success();
}

LogicalResult KVCachePruneOp::verify() {
  int64_t keep = getKeep();
  if (keep < 0)
    return emitOpError() << "keep must be >= 0, but is " << keep;
  return success();
}
