//===- ReductionOps.cpp - reductions, normalizations, losses --------------===//
//
// Shape functions and folders of TGraphReductionOps.td.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

template <typename AdaptorT>
static LogicalResult inferReduction(TypeInference &ti, AdaptorT a,
                                    PolicyAttr policy) {
  Type element = getElementTypeOrSelf(a.getX().getType());
  auto result = shape::inferReduce(ti.diag(), getShape(a.getX().getType()),
                                   a.getDims(), a.getKeepdims());
  if (!result)
    return failure();
  if (failed(checkComputePolicy(ti, policy, element, element,
                                result->rank() == 0)))
    return failure();
  ti.addResult(*result, element);
  return success();
}

LogicalResult ReduceSumOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferReduction(ti, a, a.getPolicyAttr());
}
LogicalResult ReduceMeanOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferReduction(ti, a, a.getPolicyAttr());
}
LogicalResult ReduceProdOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferReduction(ti, a, a.getPolicyAttr());
}
LogicalResult ReduceMaxOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferReduction(ti, a, PolicyAttr());
}
LogicalResult ReduceMinOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferReduction(ti, a, PolicyAttr());
}

/// A reduction over no dims is the identity.
template <typename OpTy>
static OpFoldResult foldEmptyReduction(OpTy op) {
  if (op.getDims().empty() && op.getX().getType() == op.getType())
    return op.getX();
  return {};
}

OpFoldResult ReduceSumOp::fold(FoldAdaptor) { return foldEmptyReduction(*this); }
OpFoldResult ReduceMeanOp::fold(FoldAdaptor) { return foldEmptyReduction(*this); }
OpFoldResult ReduceProdOp::fold(FoldAdaptor) { return foldEmptyReduction(*this); }
OpFoldResult ReduceMaxOp::fold(FoldAdaptor) { return foldEmptyReduction(*this); }
OpFoldResult ReduceMinOp::fold(FoldAdaptor) { return foldEmptyReduction(*this); }

template <typename AdaptorT>
static LogicalResult inferArgReduction(TypeInference &ti, AdaptorT a) {
  shape::TensorShape x = getShape(a.getX().getType());
  if (!shape::checkAxis(ti.diag(), a.getDim(), x.rank()))
    return failure();
  int64_t dim = a.getDim();
  auto result = shape::inferReduce(ti.diag(), x, {dim}, a.getKeepdims());
  auto declared = dyn_cast_or_null<RankedTensorType>(ti.declared(0));
  ti.addResult(*result, declared ? declared.getElementType()
                                 : IntegerType::get(ti.getContext(), 64));
  return success();
}

/// An arg-reduction over an empty dim has no index to give (a run-time
/// error when the size is a symbol, see the lowering).
template <typename AdaptorT>
static LogicalResult requireElements(TypeInference &ti, AdaptorT a) {
  shape::TensorShape x = getShape(a.getX().getType());
  int64_t dim = a.getDim();
  if (dim < 0 || dim >= int64_t(x.rank()))
    return success(); // the shape function reports it
  if (auto size = x.dims[dim].getConstant(); size && *size == 0)
    return ti.fail("dim " + std::to_string(dim) + " of the operand " +
                   x.str() +
                   " is empty: there is no element to take the index of");
  return success();
}

LogicalResult ArgmaxOp::inferTypes(TypeInference &ti, Adaptor a) {
  if (failed(requireElements(ti, a)))
    return failure();
  return inferArgReduction(ti, a);
}
LogicalResult ArgminOp::inferTypes(TypeInference &ti, Adaptor a) {
  if (failed(requireElements(ti, a)))
    return failure();
  return inferArgReduction(ti, a);
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

template <typename AdaptorT>
static LogicalResult inferSoftmaxLike(TypeInference &ti, AdaptorT a) {
  if (!shape::checkAxis(ti.diag(), a.getDim(),
                        getShape(a.getX().getType()).rank()))
    return failure();
  ti.addResult(a.getX().getType());
  return success();
}

LogicalResult SoftmaxOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferSoftmaxLike(ti, a);
}
LogicalResult LogSoftmaxOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferSoftmaxLike(ti, a);
}
LogicalResult SoftmaxSafeOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferSoftmaxLike(ti, a);
}

template <typename AdaptorT>
static LogicalResult inferLogsumexp(TypeInference &ti, AdaptorT a) {
  shape::TensorShape x = getShape(a.getX().getType());
  if (!shape::checkAxis(ti.diag(), a.getDim(), x.rank()))
    return failure();
  int64_t dim = a.getDim();
  auto result = shape::inferReduce(ti.diag(), x, {dim}, a.getKeepdims());
  ti.addResult(*result, getElementTypeOrSelf(a.getX().getType()));
  return success();
}

LogicalResult LogsumexpOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferLogsumexp(ti, a);
}
LogicalResult LogsumexpSafeOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferLogsumexp(ti, a);
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

template <typename AdaptorT>
static LogicalResult inferNorm(TypeInference &ti, AdaptorT a, Value bias) {
  Value x = a.getX(), scale = a.getScale();
  // Operand positions shift when the scale is absent.
  std::vector<std::string> names{"x"};
  SmallVector<std::pair<Value, unsigned>> same{{x, 0}};
  if (scale) {
    names.push_back("scale");
    same.push_back({scale, unsigned(names.size() - 1)});
  }
  if (bias) {
    names.push_back("bias");
    same.push_back({bias, unsigned(names.size() - 1)});
  }
  ti.setOperandNames(names);
  if (failed(ti.requireSameElementType(same)))
    return failure();
  double eps = a.getEpsilon().convertToDouble();
  if (!(eps >= 0))
    return ti.fail("epsilon must be >= 0, but is " + shape::formatNumber(eps));
  std::optional<shape::TensorShape> scaleShape, biasShape;
  if (scale)
    scaleShape = getShape(scale.getType());
  if (bias)
    biasShape = getShape(bias.getType());
  Type element = getElementTypeOrSelf(x.getType());
  if (failed(checkComputePolicy(ti, a.getPolicyAttr(), element, element, false)))
    return failure();
  auto result = shape::inferNormalization(ti.diag(), getShape(x.getType()),
                                          scaleShape, biasShape, a.getAxis());
  return ti.addResult(result, element);
}

LogicalResult LayerNormOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferNorm(ti, a, a.getBias());
}
LogicalResult LayerNormSafeOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferNorm(ti, a, a.getBias());
}
LogicalResult RMSNormOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferNorm(ti, a, Value());
}
LogicalResult RMSNormSafeOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferNorm(ti, a, Value());
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"logits", "labels"});
  Type element = getElementTypeOrSelf(a.getLogits().getType());
  Type labelType = getElementTypeOrSelf(a.getLabels().getType());
  bool soft = isa<FloatType>(labelType);
  if (soft && labelType != element)
    return ti.fail("soft labels (labels (operand 1)) have element type " +
                   typeName(labelType) + " but the logits have " +
                   typeName(element));
  if (!soft && !labelType.isInteger(32) && !labelType.isInteger(64))
    return ti.fail("class-index labels must be i32 or i64, but are " +
                   typeName(labelType));
  bool reduce = a.getReduction() != LossReduction::none;
  if (failed(checkComputePolicy(ti, a.getPolicyAttr(), element, element,
                                reduce)))
    return failure();
  auto result = shape::inferCrossEntropy(
      ti.diag(), getShape(a.getLogits().getType()),
      getShape(a.getLabels().getType()), soft, reduce);
  return ti.addResult(result, element);
}
