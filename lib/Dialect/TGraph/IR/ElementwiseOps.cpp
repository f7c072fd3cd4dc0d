//===- ElementwiseOps.cpp - constants and elementwise ops -----------------===//
//
// Shape functions, verifiers and folders of the ops in
// TGraphElementwiseOps.td, in the same order.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessera::tgraph;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Shapes of `values`, for shape functions.
static std::vector<shape::TensorShape> shapesOf(ValueRange values) {
  std::vector<shape::TensorShape> shapes;
  for (Value v : values)
    shapes.push_back(getShape(v.getType()));
  return shapes;
}

/// The broadcast shape of `operands` with `elementType`.
static LogicalResult addBroadcastResult(TypeInference &ti, ValueRange operands,
                                        Type elementType) {
  auto result = shape::inferBroadcast(ti.diag(), shapesOf(operands));
  return ti.addResult(result, elementType);
}

/// A result shape must be fully determined for ops that create tensors:
/// every dim a constant or an expression of the function's symbols.
static LogicalResult verifyDeterminedShape(Operation *op, Type type) {
  shape::TensorShape s = getShape(type);
  for (auto [i, d] : llvm::enumerate(s.dims))
    if (d.isUnknown())
      return op->emitOpError()
             << "result dim " << i
             << " is '?'; a created tensor needs every dim to be a constant "
                "or a symbol expression (e.g. #tgraph.dims<[B, 64]>)";
  return success();
}

/// A value as a double, for folding with the C math library.
static double toDouble(const APFloat &v) {
  APFloat d = v;
  bool lost;
  d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
  return d.convertToDouble();
}

static APFloat fromDouble(double v, const llvm::fltSemantics &sem) {
  APFloat r(v);
  bool lost;
  r.convert(sem, APFloat::rmNearestTiesToEven, &lost);
  return r;
}

/// Folds a float unary op on a constant by evaluating `fn` in double
/// precision and rounding once to the element type.
static OpFoldResult foldFloatUnary(ArrayRef<Attribute> operands,
                                   Type resultType, double (*fn)(double)) {
  return constFoldUnaryOp<FloatAttr, APFloat, void>(
      operands, resultType, [&](const APFloat &a) {
        return fromDouble(fn(toDouble(a)), a.getSemantics());
      });
}

/// True if `attr` is a splat of the float `value` (sign included) or of the
/// integer `value`.
static bool isSplatOf(Attribute attr, double value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  if (isa<FloatType>(splat.getElementType())) {
    APFloat v = splat.getSplatValue<APFloat>();
    return toDouble(v) == value && v.isNegative() == std::signbit(value);
  }
  return splat.getSplatValue<APInt>().getSExtValue() == int64_t(value);
}

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult FullOp::verify() {
  Type element = getType().getElementType();
  auto typed = cast<TypedAttr>(getValue());
  if (typed.getType() != element)
    return emitOpError() << "value has type " << typeName(typed.getType())
                         << " but the result's element type is "
                         << typeName(element);
  if (!isa<FloatAttr, IntegerAttr>(getValue()))
    return emitOpError("value must be a float or integer attribute");
  return verifyDeterminedShape(*this, getType());
}

OpFoldResult FullOp::fold(FoldAdaptor) {
  if (!getType().hasStaticShape())
    return {};
  return SplatElementsAttr::get(getType(), getValue());
}

LogicalResult ZerosLikeOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.addResult(a.getX().getType());
  return success();
}

LogicalResult OnesLikeOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.addResult(a.getX().getType());
  return success();
}

LogicalResult StopGradientOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.addResult(a.getX().getType());
  return success();
}

/// zeros_like(x) -> full 0, ones_like(x) -> full 1: one op to lower.
template <typename OpTy>
static LogicalResult likeToFull(OpTy op, PatternRewriter &rewriter,
                                double value) {
  Type element = op.getType().getElementType();
  TypedAttr v =
      isa<FloatType>(element)
          ? TypedAttr(rewriter.getFloatAttr(element, value))
          : TypedAttr(rewriter.getIntegerAttr(element, int64_t(value)));
  if (failed(verifyDeterminedShape(op, op.getType())))
    return failure();
  rewriter.replaceOpWithNewOp<FullOp>(op, op.getType(), v);
  return success();
}

void ZerosLikeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add(+[](ZerosLikeOp op, PatternRewriter &rewriter) {
    if (!llvm::all_of(getShape(op.getType()).dims,
                      [](const shape::DimExpr &d) { return !d.isUnknown(); }))
      return failure();
    return likeToFull(op, rewriter, 0.0);
  });
}

void OnesLikeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                             MLIRContext *context) {
  results.add(+[](OnesLikeOp op, PatternRewriter &rewriter) {
    if (!llvm::all_of(getShape(op.getType()).dims,
                      [](const shape::DimExpr &d) { return !d.isUnknown(); }))
      return failure();
    return likeToFull(op, rewriter, 1.0);
  });
}

LogicalResult IotaOp::verify() {
  int64_t rank = getType().getRank(), dim = getDim();
  if (dim < 0 || dim >= rank)
    return emitOpError() << "dim " << dim
                         << " is out of range for a result of rank " << rank;
  return verifyDeterminedShape(*this, getType());
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

#define TGRAPH_SAME_TYPE_AS_X(OP)                                              \
  LogicalResult OP::inferTypes(TypeInference &ti, Adaptor a) {                 \
    ti.addResult(a.getX().getType());                                          \
    return success();                                                          \
  }
TGRAPH_SAME_TYPE_AS_X(NegOp)
TGRAPH_SAME_TYPE_AS_X(AbsOp)
TGRAPH_SAME_TYPE_AS_X(ExpOp)
TGRAPH_SAME_TYPE_AS_X(LogOp)
TGRAPH_SAME_TYPE_AS_X(Log1pOp)
TGRAPH_SAME_TYPE_AS_X(SinOp)
TGRAPH_SAME_TYPE_AS_X(CosOp)
TGRAPH_SAME_TYPE_AS_X(TanhOp)
TGRAPH_SAME_TYPE_AS_X(ErfOp)
TGRAPH_SAME_TYPE_AS_X(SigmoidOp)
TGRAPH_SAME_TYPE_AS_X(ReluOp)
TGRAPH_SAME_TYPE_AS_X(GeluOp)
TGRAPH_SAME_TYPE_AS_X(SiluOp)
TGRAPH_SAME_TYPE_AS_X(SqrtOp)
TGRAPH_SAME_TYPE_AS_X(RsqrtOp)
TGRAPH_SAME_TYPE_AS_X(ReciprocalOp)
TGRAPH_SAME_TYPE_AS_X(SquareOp)
TGRAPH_SAME_TYPE_AS_X(FloorOp)
TGRAPH_SAME_TYPE_AS_X(SignOp)
#undef TGRAPH_SAME_TYPE_AS_X

/// f(f(x)) == f(x) for idempotent ops (abs, relu, floor, sign).
template <typename OpTy> static OpFoldResult foldIdempotent(OpTy op) {
  if (auto inner = op.getX().template getDefiningOp<OpTy>())
    return inner.getResult();
  return {};
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  // neg(neg(x)) -> x
  if (auto inner = getX().getDefiningOp<NegOp>())
    return inner.getX();
  if (isa<FloatType>(getType().getElementType()))
    return constFoldUnaryOp<FloatAttr, APFloat, void>(
        adaptor.getOperands(), getType(), [](const APFloat &a) { return -a; });
  return constFoldUnaryOp<IntegerAttr, APInt, void>(
      adaptor.getOperands(), getType(), [](const APInt &a) { return -a; });
}

OpFoldResult AbsOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldIdempotent(*this))
    return r;
  if (isa<FloatType>(getType().getElementType()))
    return constFoldUnaryOp<FloatAttr, APFloat, void>(
        adaptor.getOperands(), getType(),
        [](const APFloat &a) { return abs(a); });
  return constFoldUnaryOp<IntegerAttr, APInt, void>(
      adaptor.getOperands(), getType(), [](const APInt &a) { return a.abs(); });
}

OpFoldResult ExpOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getOperands(), getType(),
                        [](double x) { return std::exp(x); });
}
OpFoldResult LogOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getOperands(), getType(),
                        [](double x) { return std::log(x); });
}
OpFoldResult SinOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getOperands(), getType(),
                        [](double x) { return std::sin(x); });
}
OpFoldResult CosOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getOperands(), getType(),
                        [](double x) { return std::cos(x); });
}
OpFoldResult TanhOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getOperands(), getType(),
                        [](double x) { return std::tanh(x); });
}
OpFoldResult SqrtOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getOperands(), getType(),
                        [](double x) { return std::sqrt(x); });
}

OpFoldResult ReluOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldIdempotent(*this))
    return r;
  if (isa<FloatType>(getType().getElementType()))
    return constFoldUnaryOp<FloatAttr, APFloat, void>(
        adaptor.getOperands(), getType(), [](const APFloat &a) {
          // relu(x) = max(x, +0.0), as tgraph.max folds: NaN propagates and
          // -0.0 becomes +0.0.
          return llvm::maximum(a, APFloat::getZero(a.getSemantics()));
        });
  return constFoldUnaryOp<IntegerAttr, APInt, void>(
      adaptor.getOperands(), getType(), [](const APInt &a) {
        return a.isNegative() ? APInt::getZero(a.getBitWidth()) : a;
      });
}

OpFoldResult FloorOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldIdempotent(*this))
    return r;
  return constFoldUnaryOp<FloatAttr, APFloat, void>(
      adaptor.getOperands(), getType(), [](const APFloat &a) {
        APFloat r = a;
        r.roundToIntegral(APFloat::rmTowardNegative);
        return r;
      });
}

OpFoldResult SignOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldIdempotent(*this))
    return r;
  if (isa<FloatType>(getType().getElementType()))
    return constFoldUnaryOp<FloatAttr, APFloat, void>(
        adaptor.getOperands(), getType(), [](const APFloat &a) {
          if (a.isZero() || a.isNaN())
            return a;
          return APFloat::getOne(a.getSemantics(), a.isNegative());
        });
  return constFoldUnaryOp<IntegerAttr, APInt, void>(
      adaptor.getOperands(), getType(), [](const APInt &a) {
        unsigned w = a.getBitWidth();
        return a.isNegative() ? APInt::getAllOnes(w)
                              : (a.isZero() ? a : APInt(w, 1));
      });
}

//===----------------------------------------------------------------------===//
// Elementwise binary
//===----------------------------------------------------------------------===//

/// Shape function of the broadcasting binary ops.
template <typename AdaptorT>
static LogicalResult inferBinary(TypeInference &ti, AdaptorT a) {
  ti.setOperandNames({"lhs", "rhs"});
  if (failed(ti.requireSameElementType({{a.getLhs(), 0}, {a.getRhs(), 1}})))
    return failure();
  return addBroadcastResult(ti, {a.getLhs(), a.getRhs()},
                            getElementTypeOrSelf(a.getLhs().getType()));
}

#define TGRAPH_BINARY_INFER(OP)                                                \
  LogicalResult OP::inferTypes(TypeInference &ti, Adaptor a) {                 \
    return inferBinary(ti, a);                                                 \
  }
TGRAPH_BINARY_INFER(AddOp)
TGRAPH_BINARY_INFER(SubOp)
TGRAPH_BINARY_INFER(MulOp)
TGRAPH_BINARY_INFER(DivOp)
TGRAPH_BINARY_INFER(PowOp)
TGRAPH_BINARY_INFER(MaxOp)
TGRAPH_BINARY_INFER(MinOp)
#undef TGRAPH_BINARY_INFER

/// Folds a binary op on two constants of the result's type.
template <typename FloatFn, typename IntFn>
static OpFoldResult foldBinary(Operation *op, ArrayRef<Attribute> operands,
                               FloatFn floatFn, IntFn intFn) {
  Type type = op->getResult(0).getType();
  if (op->getOperand(0).getType() != type ||
      op->getOperand(1).getType() != type)
    return {}; // broadcasting: leave to the back end
  if (isa<FloatType>(getElementTypeOrSelf(type)))
    return constFoldBinaryOp<FloatAttr, APFloat, void>(operands, type, floatFn);
  return constFoldBinaryOpConditional<IntegerAttr, APInt, void>(operands, type,
                                                                intFn);
}

/// `x op c -> x` when `c` is the op's identity and no broadcast happens.
static OpFoldResult foldIdentity(Operation *op, Attribute rhs,
                                 double identity) {
  Value lhs = op->getOperand(0);
  if (lhs.getType() == op->getResult(0).getType() && isSplatOf(rhs, identity))
    return lhs;
  return {};
}

/// The additive identity: -0.0 for floats (x + -0.0 == x for x = -0.0 too),
/// 0 for integers.
static double additiveIdentity(Type type) {
  return isa<FloatType>(getElementTypeOrSelf(type)) ? -0.0 : 0.0;
}

OpFoldResult AddOp::fold(FoldAdaptor a) {
  if (OpFoldResult r =
          foldIdentity(*this, a.getRhs(), additiveIdentity(getType())))
    return r;
  return foldBinary(
      *this, a.getOperands(), [](APFloat x, const APFloat &y) { return x + y; },
      [](const APInt &x, const APInt &y) -> std::optional<APInt> {
        return x + y;
      });
}

OpFoldResult SubOp::fold(FoldAdaptor a) {
  // x - (+0.0) == x exactly (also for x = -0.0).
  if (OpFoldResult r = foldIdentity(*this, a.getRhs(), 0.0))
    return r;
  return foldBinary(
      *this, a.getOperands(), [](APFloat x, const APFloat &y) { return x - y; },
      [](const APInt &x, const APInt &y) -> std::optional<APInt> {
        return x - y;
      });
}

OpFoldResult MulOp::fold(FoldAdaptor a) {
  if (OpFoldResult r = foldIdentity(*this, a.getRhs(), 1.0))
    return r;
  return foldBinary(
      *this, a.getOperands(), [](APFloat x, const APFloat &y) { return x * y; },
      [](const APInt &x, const APInt &y) -> std::optional<APInt> {
        return x * y;
      });
}

OpFoldResult DivOp::fold(FoldAdaptor a) {
  if (OpFoldResult r = foldIdentity(*this, a.getRhs(), 1.0))
    return r;
  return foldBinary(
      *this, a.getOperands(), [](APFloat x, const APFloat &y) { return x / y; },
      [](const APInt &x, const APInt &y) -> std::optional<APInt> {
        // Division by zero and INT_MIN / -1 are left to run time.
        if (y.isZero() || (x.isMinSignedValue() && y.isAllOnes()))
          return std::nullopt;
        return x.sdiv(y);
      });
}

OpFoldResult PowOp::fold(FoldAdaptor a) {
  if (OpFoldResult r = foldIdentity(*this, a.getRhs(), 1.0))
    return r;
  return foldBinary(
      *this, a.getOperands(),
      [](const APFloat &x, const APFloat &y) {
        return fromDouble(std::pow(toDouble(x), toDouble(y)), x.getSemantics());
      },
      [](const APInt &, const APInt &) -> std::optional<APInt> {
        return std::nullopt;
      });
}

OpFoldResult MaxOp::fold(FoldAdaptor a) {
  if (getLhs() == getRhs() && getLhs().getType() == getType())
    return getLhs();
  return foldBinary(
      *this, a.getOperands(),
      [](const APFloat &x, const APFloat &y) { return llvm::maximum(x, y); },
      [](const APInt &x, const APInt &y) -> std::optional<APInt> {
        return x.sge(y) ? x : y;
      });
}

OpFoldResult MinOp::fold(FoldAdaptor a) {
  if (getLhs() == getRhs() && getLhs().getType() == getType())
    return getLhs();
  return foldBinary(
      *this, a.getOperands(),
      [](const APFloat &x, const APFloat &y) { return llvm::minimum(x, y); },
      [](const APInt &x, const APInt &y) -> std::optional<APInt> {
        return x.sle(y) ? x : y;
      });
}

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  // add(x, neg(y)) -> sub(x, y): IEEE defines x - y as x + (-y).
  results.add(+[](AddOp op, PatternRewriter &rewriter) {
    auto neg = op.getRhs().getDefiningOp<NegOp>();
    if (!neg)
      return failure();
    rewriter.replaceOpWithNewOp<SubOp>(op, op.getType(), op.getLhs(),
                                       neg.getX());
    return success();
  });
}

void MulOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  // mul(x, x) -> square(x): one operand read, same rounding.
  results.add(+[](MulOp op, PatternRewriter &rewriter) {
    if (op.getLhs() != op.getRhs() || op.getLhs().getType() != op.getType())
      return failure();
    rewriter.replaceOpWithNewOp<SquareOp>(op, op.getLhs());
    return success();
  });
}

//===----------------------------------------------------------------------===//
// compare, select, cast
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"lhs", "rhs"});
  if (failed(ti.requireSameElementType({{a.getLhs(), 0}, {a.getRhs(), 1}})))
    return failure();
  return addBroadcastResult(ti, {a.getLhs(), a.getRhs()},
                            IntegerType::get(ti.getContext(), 1));
}

static bool evalCompare(CompareDirection dir, int cmp) {
  switch (dir) {
  case CompareDirection::eq:
    return cmp == 0;
  case CompareDirection::ne:
    return cmp != 0;
  case CompareDirection::lt:
    return cmp < 0;
  case CompareDirection::le:
    return cmp <= 0;
  case CompareDirection::gt:
    return cmp > 0;
  case CompareDirection::ge:
    return cmp >= 0;
  }
  llvm_unreachable("unknown compare direction");
}

OpFoldResult CompareOp::fold(FoldAdaptor a) {
  if (getLhs().getType() != getRhs().getType() ||
      int64_t(getShape(getLhs().getType()).rank()) != getType().getRank())
    return {};
  CompareDirection dir = getDirection();
  if (isa<FloatType>(getElementTypeOrSelf(getLhs().getType())))
    return constFoldBinaryOp<FloatAttr, APFloat, void, IntegerAttr>(
        a.getOperands(), getType(), [&](const APFloat &x, const APFloat &y) {
          APFloat::cmpResult r = x.compare(y);
          bool v = r == APFloat::cmpUnordered
                       ? dir == CompareDirection::ne
                       : evalCompare(dir, r == APFloat::cmpLessThan      ? -1
                                          : r == APFloat::cmpGreaterThan ? 1
                                                                         : 0);
          return APInt(1, v);
        });
  // i1 holds 0 and 1 (true > false); other integers are signed.
  return constFoldBinaryOp<IntegerAttr, APInt, void, IntegerAttr>(
      a.getOperands(), getType(), [&](const APInt &x, const APInt &y) {
        bool less = x.getBitWidth() == 1 ? x.ult(y) : x.slt(y);
        return APInt(1, evalCompare(dir, less ? -1 : (x == y ? 0 : 1)));
      });
}

LogicalResult SelectOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"cond", "on_true", "on_false"});
  if (failed(
          ti.requireSameElementType({{a.getOnTrue(), 1}, {a.getOnFalse(), 2}})))
    return failure();
  return addBroadcastResult(ti, {a.getCond(), a.getOnTrue(), a.getOnFalse()},
                            getElementTypeOrSelf(a.getOnTrue().getType()));
}

OpFoldResult SelectOp::fold(FoldAdaptor a) {
  if (getOnTrue() == getOnFalse() && getOnTrue().getType() == getType())
    return getOnTrue();
  auto cond = dyn_cast_or_null<SplatElementsAttr>(a.getCond());
  if (!cond)
    return {};
  Value chosen = cond.getSplatValue<bool>() ? getOnTrue() : getOnFalse();
  return chosen.getType() == getType() ? chosen : Value();
}

/// The largest finite magnitude of a float or signed integer type.
static APFloat largest(Type t) {
  if (auto f = dyn_cast<FloatType>(t)) {
    APFloat v = APFloat::getLargest(f.getFloatSemantics());
    bool lost;
    v.convert(APFloat::IEEEquad(), APFloat::rmTowardZero, &lost);
    return v;
  }
  unsigned w = t.getIntOrFloatBitWidth();
  APFloat v(APFloat::IEEEquad());
  v.convertFromAPInt(APInt::getSignedMaxValue(w), /*isSigned=*/true,
                     APFloat::rmTowardZero);
  return v;
}

/// Whether some value of `from` lies beyond the finite range of `to`.
static bool canOverflow(Type from, Type to) {
  if (to.isInteger(1) || from.isInteger(1))
    return false;
  if (isa<FloatType>(from) && isa<IntegerType>(to))
    return true;
  return largest(from).compare(largest(to)) == APFloat::cmpGreaterThan;
}

/// Checks the typed cast rules and the policy of a cast from `from` to `to`.
static LogicalResult checkCast(TypeInference &ti, Type from, Type to,
                               PolicyAttr policy) {
  bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
  if (fromFloat && to.isInteger(1))
    return ti.fail("cannot cast " + typeName(from) +
                   " to i1; compare against zero with tgraph.compare instead");
  if (!policy)
    return success();
  if (policy.getAccum())
    return ti.fail("the accum policy does not apply to a cast");
  if (policy.getLossScale())
    return ti.fail("the loss_scale policy does not apply to a cast");
  if (policy.getStochasticRound()) {
    if (!fromFloat || !toFloat)
      return ti.fail("stochastic_round applies to float-to-float casts, but "
                     "this cast is " +
                     typeName(from) + " -> " + typeName(to));
    if (isExactWidening(from, to))
      return ti.fail("stochastic_round needs a float cast that loses "
                     "precision, but " +
                     typeName(from) + " -> " + typeName(to) + " is exact");
  }
  if (policy.getSaturate() && !canOverflow(from, to))
    return ti.fail("saturate needs a cast whose values can overflow the "
                   "result type (to a type of smaller range), but " +
                   typeName(from) + " -> " + typeName(to) + " cannot");
  return success();
}

LogicalResult CastOp::inferTypes(TypeInference &ti, Adaptor a) {
  FailureOr<RankedTensorType> declared = ti.requireDeclaredTensor(0);
  if (failed(declared))
    return failure();
  Type from = getElementTypeOrSelf(a.getX().getType());
  Type to = declared->getElementType();
  if (failed(checkCast(ti, from, to, a.getPolicyAttr())))
    return failure();
  ti.addResult(getShape(a.getX().getType()), to);
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor a) {
  if (getX().getType() == getType() && !getPolicyAttr())
    return getX();
  auto from = dyn_cast<FloatType>(getElementTypeOrSelf(getX().getType()));
  auto to = dyn_cast<FloatType>(getType().getElementType());
  if (!from || !to || getPolicyAttr() ||
      int64_t(getShape(getX().getType()).rank()) != getType().getRank() ||
      !getType().hasStaticShape())
    return {};
  return constFoldCastOp<FloatAttr, FloatAttr, APFloat, APFloat, void>(
      a.getOperands(), getType(), [&](const APFloat &v, bool &ok) {
        APFloat r = v;
        bool lost;
        r.convert(to.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        ok = true;
        return r;
      });
}

namespace {
#include "tessera/Dialect/TGraph/IR/TGraphCanonicalize.inc"
} // namespace

void CastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<CastOfWideningCast>(context);
}
