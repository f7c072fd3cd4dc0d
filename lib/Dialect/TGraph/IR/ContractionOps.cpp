//===- ContractionOps.cpp - matmul, dot_general, conv, attention ----------===//
//
// Shape functions and numeric-policy rules of TGraphContractionOps.td.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessera::tgraph;

//===----------------------------------------------------------------------===//
// Numeric policy rules shared by contractions, reductions and losses
//===----------------------------------------------------------------------===//

LogicalResult mlir::tessera::tgraph::checkComputePolicy(TypeInference &ti, PolicyAttr policy,
                                 Type computeType, Type resultType,
                                 bool scalarResult) {
  if (!policy)
    return success();
  if (policy.getLossScale() && !scalarResult)
    return ti.fail("loss_scale applies to ops that produce a scalar loss, but "
                   "the result is not a scalar");
  Type accum = policy.getAccum() ? policy.getAccum() : computeType;
  if (policy.getAccum() && !isa<FloatType>(computeType))
    return ti.fail("the accum policy applies to float computations, but the "
                   "operands are " + typeName(computeType));
  Type element = getElementTypeOrSelf(resultType);
  if (policy.getStochasticRound() &&
      (!isa<FloatType>(element) || isExactWidening(accum, element)))
    return ti.fail("stochastic_round needs a float result narrower than the "
                   "accumulation type (" + typeName(accum) + "), but it is " +
                   typeName(element));
  if (policy.getSaturate() && !isFloat8(element))
    return ti.fail("saturate applies to fp8 results, but the result is " +
                   typeName(element));
  return success();
}

/// Element types of a contraction: operands share one (two fp8 formats may
/// mix), fp8 needs an accumulation policy, and the result is the operand
/// type, a wider type, or (with fp8 operands) any float type. Returns the
/// result element type: the declared one, else the operand's.
static FailureOr<Type> contractionElementType(TypeInference &ti, Value lhs,
                                              unsigned lhsIdx, Value rhs,
                                              unsigned rhsIdx,
                                              PolicyAttr policy) {
  Type lt = getElementTypeOrSelf(lhs.getType());
  Type rt = getElementTypeOrSelf(rhs.getType());
  bool fp8 = isFloat8(lt) && isFloat8(rt);
  if (!fp8 && lt != rt) {
    (void)ti.fail(ti.diag().operandLabel(lhsIdx) + " has element type " +
                  typeName(lt) + " but " + ti.diag().operandLabel(rhsIdx) +
                  " has " + typeName(rt) +
                  (isFloat8(lt) || isFloat8(rt)
                       ? "; fp8 operands pair only with fp8"
                       : "; tensor dtypes do not promote: cast one of them "
                  "(tgraph.cast, op.cast)"));
    return failure();
  }
  if (fp8 && (!policy || !policy.getAccum())) {
    (void)ti.fail("fp8 operands (" + typeName(lt) + " x " + typeName(rt) +
                  ") must accumulate in f32 or bf16: add {policy = "
                  "#tgraph.policy<accum = f32>}");
    return failure();
  }
  Type accum = fp8 ? policy.getAccum() : lt;
  auto declared = dyn_cast_or_null<RankedTensorType>(ti.declared(0));
  Type result = declared ? declared.getElementType() : accum;
  bool ok;
  if (fp8)
    ok = isa<FloatType>(result);
  else if (isa<FloatType>(lt))
    ok = isExactWidening(lt, result) ||
         (policy && policy.getAccum() == result);
  else
    ok = isa<IntegerType>(result) && isExactWidening(lt, result);
  if (!ok) {
    (void)ti.fail("result element type " + typeName(result) +
                  " is not a valid product type for " + typeName(lt) +
                  " operands (expected " + typeName(lt) +
                  (fp8 ? " or any float type" : " or a wider type") + ")");
    return failure();
  }
  if (failed(checkComputePolicy(ti, policy, fp8 ? accum : lt, result, false)))
    return failure();
  return result;
}

//===----------------------------------------------------------------------===//
// matmul, batch_matmul, dot_general
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"lhs", "rhs"});
  FailureOr<Type> element = contractionElementType(
      ti, a.getLhs(), 0, a.getRhs(), 1, a.getPolicyAttr());
  if (failed(element))
    return failure();
  auto result = shape::inferMatmul(ti.diag(), getShape(a.getLhs().getType()),
                                   getShape(a.getRhs().getType()),
                                   a.getTransposeLhs(), a.getTransposeRhs());
  return ti.addResult(result, *element);
}

/// matmul(transpose(x), y) -> matmul(x, y) {transpose_lhs} when the
/// transpose swaps the last two dims: the kernel reads x transposed for free.
static LogicalResult foldTransposeIntoMatmul(MatmulOp op,
                                             PatternRewriter &rewriter) {
  auto isLastTwoSwap = [](TransposeOp t) {
    ArrayRef<int64_t> p = t.getPermutation();
    int64_t r = p.size();
    if (r < 2 || p[r - 1] != r - 2 || p[r - 2] != r - 1)
      return false;
    for (int64_t i = 0; i + 2 < r; ++i)
      if (p[i] != i)
        return false;
    return true;
  };
  auto lhsT = op.getLhs().getDefiningOp<TransposeOp>();
  auto rhsT = op.getRhs().getDefiningOp<TransposeOp>();
  bool foldLhs = lhsT && isLastTwoSwap(lhsT);
  bool foldRhs = rhsT && isLastTwoSwap(rhsT);
  if (!foldLhs && !foldRhs)
    return failure();
  rewriter.modifyOpInPlace(op, [&] {
    if (foldLhs) {
      op.getLhsMutable().assign(lhsT.getX());
      op.setTransposeLhs(!op.getTransposeLhs());
    }
    if (foldRhs) {
      op.getRhsMutable().assign(rhsT.getX());
      op.setTransposeRhs(!op.getTransposeRhs());
    }
  });
  return success();
}

void MatmulOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add(foldTransposeIntoMatmul);
}

LogicalResult BatchMatmulOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"lhs", "rhs"});
  FailureOr<Type> element = contractionElementType(
      ti, a.getLhs(), 0, a.getRhs(), 1, a.getPolicyAttr());
  if (failed(element))
    return failure();
  auto result = shape::inferBatchMatmul(
      ti.diag(), getShape(a.getLhs().getType()), getShape(a.getRhs().getType()));
  return ti.addResult(result, *element);
}

LogicalResult DotGeneralOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"lhs", "rhs"});
  FailureOr<Type> element = contractionElementType(
      ti, a.getLhs(), 0, a.getRhs(), 1, a.getPolicyAttr());
  if (failed(element))
    return failure();
  auto result = shape::inferDotGeneral(
      ti.diag(), getShape(a.getLhs().getType()), getShape(a.getRhs().getType()),
      a.getLhsBatchingDims(), a.getRhsBatchingDims(),
      a.getLhsContractingDims(), a.getRhsContractingDims());
  return ti.addResult(result, *element);
}

//===----------------------------------------------------------------------===//
// conv2d, attention
//===----------------------------------------------------------------------===//

LogicalResult Conv2dOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"input", "filter"});
  FailureOr<Type> element = contractionElementType(
      ti, a.getInput(), 0, a.getFilter(), 1, a.getPolicyAttr());
  if (failed(element))
    return failure();
  shape::Conv2dParams p;
  p.strides.assign(a.getStrides().begin(), a.getStrides().end());
  p.padding.assign(a.getPadding().begin(), a.getPadding().end());
  p.dilation.assign(a.getDilation().begin(), a.getDilation().end());
  p.groups = a.getGroups();
  p.channelsLast = a.getLayout() == ConvLayout::nhwc;
  auto result = shape::inferConv2d(ti.diag(), getShape(a.getInput().getType()),
                                   getShape(a.getFilter().getType()), p);
  return ti.addResult(result, *element);
}

/// The attributes attention and attention_grad share: fp8 needs an
/// accumulation type, the scale is positive, and the policy fits.
static LogicalResult checkAttentionAttributes(TypeInference &ti, Type element,
                                              PolicyAttr policy,
                                              FloatAttr scale) {
  if (isFloat8(element) && (!policy || !policy.getAccum()))
    return ti.fail("fp8 attention must accumulate in f32 or bf16: add "
                   "{policy = #tgraph.policy<accum = f32>}");
  if (scale && !(scale.getValueAsDouble() > 0))
    return ti.fail("scale must be positive, but is " +
                   shape::formatNumber(scale.getValueAsDouble()));
  return checkComputePolicy(ti, policy, element, element, false);
}

/// The default scale, 1/sqrt(head dim), is a compile-time constant.
static LogicalResult requireStaticHeadDim(TypeInference &ti, Type query) {
  shape::TensorShape q = getShape(query);
  // ('?' may still become a constant once shapes are inferred.)
  if (q.rank() == 0 || q.dims.back().getConstant() ||
      q.dims.back().isUnknown())
    return success();
  return ti.fail("the default scale 1/sqrt(head dim) needs a static head "
                 "dim, but the query's last dim is " +
                 q.dims.back().str() + "; give the scale explicitly");
}

LogicalResult AttentionOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"query", "key", "value"});
  if (failed(ti.requireSameElementType(
          {{a.getQuery(), 0}, {a.getKey(), 1}, {a.getValue(), 2}})))
    return failure();
  Type element = getElementTypeOrSelf(a.getQuery().getType());
  if (failed(checkAttentionAttributes(ti, element, a.getPolicyAttr(),
                                      a.getScaleAttr())))
    return failure();
  auto result = shape::inferAttention(
      ti.diag(), getShape(a.getQuery().getType()),
      getShape(a.getKey().getType()), getShape(a.getValue().getType()));
  if (result && !a.getScaleAttr())
    if (failed(requireStaticHeadDim(ti, a.getQuery().getType())))
      return failure();
  return ti.addResult(result, element);
}

LogicalResult AttentionGradOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"query", "key", "value", "output", "output_grad"});
  if (failed(ti.requireSameElementType({{a.getQuery(), 0},
                                        {a.getKey(), 1},
                                        {a.getValue(), 2},
                                        {a.getOutput(), 3},
                                        {a.getOutputGrad(), 4}})))
    return failure();
  Type element = getElementTypeOrSelf(a.getQuery().getType());
  if (failed(checkAttentionAttributes(ti, element, a.getPolicyAttr(),
                                      a.getScaleAttr())))
    return failure();
  shape::TensorShape q = getShape(a.getQuery().getType()),
                     k = getShape(a.getKey().getType()),
                     v = getShape(a.getValue().getType());
  auto checked = shape::inferAttentionGrad(
      ti.diag(), q, k, v, getShape(a.getOutput().getType()),
      getShape(a.getOutputGrad().getType()));
  if (!checked)
    return ti.addResult(checked, element);
  if (!a.getScaleAttr() &&
      failed(requireStaticHeadDim(ti, a.getQuery().getType())))
    return failure();
  ti.addResult(q, element);
  ti.addResult(k, element);
  ti.addResult(v, element);
  return success();
}

//===----------------------------------------------------------------------===//
// Attention's probabilities (decompositions and autodiff rules)
//===----------------------------------------------------------------------===//

PolicyAttr mlir::tessera::tgraph::accumulationPart(PolicyAttr policy) {
  if (!policy || !policy.getAccum())
    return {};
  return PolicyAttr::get(policy.getContext(), policy.getAccum(), false,
                         FloatAttr(), false);
}

std::optional<double>
mlir::tessera::tgraph::attentionScale(Value query,
                                      std::optional<APFloat> scale) {
  if (scale)
    return scale->convertToDouble();
  auto type = cast<RankedTensorType>(query.getType());
  int64_t d = type.getShape().back();
  if (ShapedType::isDynamic(d))
    return std::nullopt;
  return 1.0 / std::sqrt(double(d));
}

FailureOr<Value> mlir::tessera::tgraph::buildAttentionProbabilities(
    OpBuilder &b, Location loc, Value query, Value key, bool causal,
    double scale, Type compute, PolicyAttr policy, std::string &why) {
  auto qType = cast<RankedTensorType>(query.getType());
  int64_t r = qType.getRank();
  shape::TensorShape q = getShape(qType), k = getShape(key.getType());
  const shape::DimExpr &sq = q.dims[r - 2], &sk = k.dims[r - 2];
  if (causal && (sq.isUnknown() || sk.isUnknown())) {
    why = "the causal mask needs known sequence lengths";
    return failure();
  }
  auto scalar = [&](Type element, Attribute value) -> Value {
    auto type = RankedTensorType::get({}, element);
    return ConstantOp::create(b, loc, type,
                              DenseElementsAttr::get(type, value));
  };
  TypeInference ti(b.getContext(), loc, MatmulOp::getOperationName());
  auto scores = shape::inferMatmul(ti.diag(), q, k, false, true);
  if (!scores) {
    why = ti.message();
    return failure();
  }
  Value s = MatmulOp::create(b, loc, getTensorType(*scores, compute), query,
                             key, false, true, accumulationPart(policy));
  s = MulOp::create(b, loc, s, scalar(compute, FloatAttr::get(compute, scale)));
  if (causal) {
    Type i64 = b.getI64Type();
    auto grid = getTensorType(shape::TensorShape({sq, sk}), i64);
    Value row = IotaOp::create(b, loc, grid, 0);
    Value col = IotaOp::create(b, loc, grid, 1);
    auto scalarI64 = RankedTensorType::get({}, i64);
    Value offset =
        SubOp::create(b, loc, DimSizeOp::create(b, loc, scalarI64, key, r - 2),
                      DimSizeOp::create(b, loc, scalarI64, query, r - 2));
    Value visible = CompareOp::create(b, loc, CompareDirection::le, col,
                                      AddOp::create(b, loc, row, offset));
    // -inf, or the lowest finite value where the type has no infinity.
    const llvm::fltSemantics &sem =
        cast<FloatType>(compute).getFloatSemantics();
    APFloat lowest = APFloat::semanticsHasInf(sem)
                         ? APFloat::getInf(sem, /*Negative=*/true)
                         : APFloat::getLargest(sem, /*Negative=*/true);
    s = SelectOp::create(b, loc, visible, s,
                         scalar(compute, FloatAttr::get(compute, lowest)));
  }
  return Value(SoftmaxOp::create(b, loc, s, r - 1));
}
