//===- LowerElementwise.cpp - Elementwise and generator ops to linalg -----===//
//
// Every elementwise op becomes one linalg.generic over the result's index
// space; an operand dim that is statically 1 where the result's is not is
// read at index 0 (NumPy broadcasting). The scalar body of each op follows
// its documented semantics.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessera::tgraph;
using namespace mlir::tessera::tgraph::lowering;

namespace {

using ScalarFn = Value (*)(OpBuilder &, Location, ValueRange, Type);

/// out[i] = body(operands[broadcast(i)]...) over the result's index space.
Value buildBroadcastGeneric(OpBuilder &b, Location loc, ValueRange operands,
                            RankedTensorType resultType, ScalarFn body) {
  int64_t rank = resultType.getRank();
  SmallVector<Value> dynSizes;
  for (int64_t i = 0; i < rank; ++i) {
    if (!resultType.isDynamicDim(i))
      continue;
    // Take the size from an operand whose aligned dim is not statically 1.
    for (Value v : operands) {
      auto t = cast<RankedTensorType>(v.getType());
      int64_t j = i - (rank - t.getRank());
      if (j >= 0 && t.getDimSize(j) != 1) {
        dynSizes.push_back(dimOf(b, loc, v, j));
        break;
      }
    }
  }
  SmallVector<AffineMap> maps;
  for (Value v : operands) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<AffineExpr> exprs;
    for (int64_t j = 0; j < t.getRank(); ++j) {
      int64_t i = j + rank - t.getRank();
      bool expand = t.getDimSize(j) == 1 && resultType.getDimSize(i) != 1;
      exprs.push_back(expand ? b.getAffineConstantExpr(0)
                             : b.getAffineDimExpr(i));
    }
    maps.push_back(AffineMap::get(rank, 0, exprs, b.getContext()));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Value init = emptyTensor(b, loc, resultType, dynSizes);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Type element = resultType.getElementType();
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, operands, init, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value r = body(nb, nloc, args.drop_back(), element);
        linalg::YieldOp::create(nb, nloc, r);
      });
  return generic.getResult(0);
}

/// Lowers OpTy with the scalar function Fn.
template <typename OpTy, ScalarFn Fn>
struct ElementwiseLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType =
        this->getTypeConverter()->template convertType<RankedTensorType>(
            op->getResult(0).getType());
    rewriter.replaceOp(op, buildBroadcastGeneric(rewriter, op.getLoc(),
                                                 adaptor.getOperands(),
                                                 resultType, Fn));
    return success();
  }
};

bool isFloat(Value v) { return isa<FloatType>(v.getType()); }

Value one(OpBuilder &b, Location loc, Type t) {
  return scalarConstant(b, loc, t, 1.0);
}

//===----------------------------------------------------------------------===//
// Scalar semantics
//===----------------------------------------------------------------------===//

Value negS(OpBuilder &b, Location l, ValueRange a, Type t) {
  if (isFloat(a[0]))
    return arith::NegFOp::create(b, l, a[0]);
  return arith::SubIOp::create(b, l, scalarConstant(b, l, t, 0), a[0]);
}
Value absS(OpBuilder &b, Location l, ValueRange a, Type) {
  if (isFloat(a[0]))
    return math::AbsFOp::create(b, l, a[0]);
  return math::AbsIOp::create(b, l, a[0]);
}
Value expS(OpBuilder &b, Location l, ValueRange a, Type) {
  return math::ExpOp::create(b, l, a[0]);
}
Value logS(OpBuilder &b, Location l, ValueRange a, Type) {
  return math::LogOp::create(b, l, a[0]);
}
Value log1pS(OpBuilder &b, Location l, ValueRange a, Type) {
  return math::Log1pOp::create(b, l, a[0]);
}
Value sinS(OpBuilder &b, Location l, ValueRange a, Type) {
  return math::SinOp::create(b, l, a[0]);
}
Value cosS(OpBuilder &b, Location l, ValueRange a, Type) {
  return math::CosOp::create(b, l, a[0]);
}
Value tanhS(OpBuilder &b, Location l, ValueRange a, Type) {
  return math::TanhOp::create(b, l, a[0]);
}
Value erfS(OpBuilder &b, Location l, ValueRange a, Type) {
  return math::ErfOp::create(b, l, a[0]);
}
// sigmoid(x) = 1 / (1 + exp(-x))
Value sigmoidS(OpBuilder &b, Location l, ValueRange a, Type t) {
  Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, a[0]));
  return arith::DivFOp::create(b, l, one(b, l, t),
                               arith::AddFOp::create(b, l, one(b, l, t), e));
}
// relu(x) = max(x, 0): NaN propagates, -0.0 becomes +0.0
Value reluS(OpBuilder &b, Location l, ValueRange a, Type t) {
  Value zero = scalarConstant(b, l, t, 0);
  if (isFloat(a[0]))
    return arith::MaximumFOp::create(b, l, a[0], zero);
  return arith::MaxSIOp::create(b, l, a[0], zero);
}
// gelu(x) = 0.5 x (1 + erf(x / sqrt 2))
Value geluS(OpBuilder &b, Location l, ValueRange a, Type t) {
  Value scaled =
      arith::MulFOp::create(b, l, a[0], scalarConstant(b, l, t, M_SQRT1_2));
  Value phi = arith::AddFOp::create(b, l, one(b, l, t),
                                    math::ErfOp::create(b, l, scaled));
  Value half = arith::MulFOp::create(b, l, a[0], scalarConstant(b, l, t, 0.5));
  return arith::MulFOp::create(b, l, half, phi);
}
// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as
// x / (1 + e^(-2u)) (the same function, since 1 + tanh(u) = 2 / (1 +
// e^(-2u))): one exp and one division instead of tanh's rational
// polynomial and its division, and no cancellation anywhere (for x << 0
// e^(-2u) overflows to infinity and the result is -0).
Value geluTanhS(OpBuilder &b, Location l, ValueRange a, Type t) {
  Value x = a[0];
  double c = std::sqrt(2.0 / M_PI);
  // -2u = x (-2c - 2c 0.044715 x^2)
  Value square = arith::MulFOp::create(b, l, x, x);
  Value minus2u = arith::MulFOp::create(
      b, l, x,
      math::FmaOp::create(b, l, square,
                          scalarConstant(b, l, t, -2.0 * c * 0.044715),
                          scalarConstant(b, l, t, -2.0 * c)));
  Value denominator = arith::AddFOp::create(b, l, one(b, l, t),
                                            math::ExpOp::create(b, l, minus2u));
  return arith::DivFOp::create(b, l, x, denominator);
}
// silu(x) = x * sigmoid(x)
Value siluS(OpBuilder &b, Location l, ValueRange a, Type t) {
  return arith::MulFOp::create(b, l, a[0], sigmoidS(b, l, a, t));
}
Value sqrtS(OpBuilder &b, Location l, ValueRange a, Type) {
  return math::SqrtOp::create(b, l, a[0]);
}
Value rsqrtS(OpBuilder &b, Location l, ValueRange a, Type) {
  return math::RsqrtOp::create(b, l, a[0]);
}
Value reciprocalS(OpBuilder &b, Location l, ValueRange a, Type t) {
  return arith::DivFOp::create(b, l, one(b, l, t), a[0]);
}
Value squareS(OpBuilder &b, Location l, ValueRange a, Type) {
  if (isFloat(a[0]))
    return arith::MulFOp::create(b, l, a[0], a[0]);
  return arith::MulIOp::create(b, l, a[0], a[0]);
}
Value floorS(OpBuilder &b, Location l, ValueRange a, Type) {
  return math::FloorOp::create(b, l, a[0]);
}
// sign: -1, 0 or 1; floats keep +-0 and NaN as they are.
Value signS(OpBuilder &b, Location l, ValueRange a, Type t) {
  Value x = a[0], zero = scalarConstant(b, l, t, 0);
  if (isFloat(x)) {
    Value unit = math::CopySignOp::create(b, l, one(b, l, t), x);
    Value keep =
        arith::CmpFOp::create(b, l, arith::CmpFPredicate::UEQ, x, zero);
    return arith::SelectOp::create(b, l, keep, x, unit);
  }
  Value pos = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sgt, x, zero);
  Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, x, zero);
  return arith::SubIOp::create(b, l, convertScalar(b, l, pos, t),
                               convertScalar(b, l, neg, t));
}

Value addS(OpBuilder &b, Location l, ValueRange a, Type) {
  if (isFloat(a[0]))
    return arith::AddFOp::create(b, l, a[0], a[1]);
  return arith::AddIOp::create(b, l, a[0], a[1]);
}
Value subS(OpBuilder &b, Location l, ValueRange a, Type) {
  if (isFloat(a[0]))
    return arith::SubFOp::create(b, l, a[0], a[1]);
  return arith::SubIOp::create(b, l, a[0], a[1]);
}
Value mulS(OpBuilder &b, Location l, ValueRange a, Type) {
  if (isFloat(a[0]))
    return arith::MulFOp::create(b, l, a[0], a[1]);
  return arith::MulIOp::create(b, l, a[0], a[1]);
}
Value divS(OpBuilder &b, Location l, ValueRange a, Type) {
  if (isFloat(a[0]))
    return arith::DivFOp::create(b, l, a[0], a[1]);
  return arith::DivSIOp::create(b, l, a[0], a[1]);
}
Value powS(OpBuilder &b, Location l, ValueRange a, Type) {
  return math::PowFOp::create(b, l, a[0], a[1]);
}
Value maxS(OpBuilder &b, Location l, ValueRange a, Type) {
  if (isFloat(a[0]))
    return arith::MaximumFOp::create(b, l, a[0], a[1]);
  return arith::MaxSIOp::create(b, l, a[0], a[1]);
}
Value minS(OpBuilder &b, Location l, ValueRange a, Type) {
  if (isFloat(a[0]))
    return arith::MinimumFOp::create(b, l, a[0], a[1]);
  return arith::MinSIOp::create(b, l, a[0], a[1]);
}
Value selectS(OpBuilder &b, Location l, ValueRange a, Type) {
  return arith::SelectOp::create(b, l, a[0], a[1], a[2]);
}
Value castS(OpBuilder &b, Location l, ValueRange a, Type t) {
  return convertScalar(b, l, a[0], t);
}
Value saturatingCastS(OpBuilder &b, Location l, ValueRange a, Type t) {
  return convertScalarSaturating(b, l, a[0], t);
}

/// compare: ordered float predicates (NaN compares false, except ne);
/// signed integers, with i1 as 0/1.
struct CompareLowering : public OpConversionPattern<CompareOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CompareOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    // The direction is not a scalar argument: pick the body per direction.
    ScalarFn fn = nullptr;
    bool isBool = getElementTypeOrSelf(op.getLhs().getType()).isInteger(1);
    switch (op.getDirection()) {
#define TGRAPH_CMP(DIR, FP, IP, UP)                                              \
  case CompareDirection::DIR:                                                    \
    fn = isa<FloatType>(getElementTypeOrSelf(op.getLhs().getType()))           \
             ? +[](OpBuilder &b, Location l, ValueRange a, Type) -> Value {    \
                 return arith::CmpFOp::create(b, l, arith::CmpFPredicate::FP,  \
                                              a[0], a[1]);                     \
               }                                                               \
         : isBool                                                              \
             ? +[](OpBuilder &b, Location l, ValueRange a, Type) -> Value {    \
                 return arith::CmpIOp::create(b, l, arith::CmpIPredicate::UP,  \
                                              a[0], a[1]);                     \
               }                                                               \
             : +[](OpBuilder &b, Location l, ValueRange a, Type) -> Value {    \
                 return arith::CmpIOp::create(b, l, arith::CmpIPredicate::IP,  \
                                              a[0], a[1]);                     \
               }; \
    break;
      TGRAPH_CMP(eq, OEQ, eq, eq)
      TGRAPH_CMP(ne, UNE, ne, ne)
      TGRAPH_CMP(lt, OLT, slt, ult)
      TGRAPH_CMP(le, OLE, sle, ule)
      TGRAPH_CMP(gt, OGT, sgt, ugt)
      TGRAPH_CMP(ge, OGE, sge, uge)
#undef TGRAPH_CMP
    }
    rewriter.replaceOp(op,
                       buildBroadcastGeneric(rewriter, op.getLoc(),
                                             adaptor.getOperands(), type, fn));
    return success();
  }
};

/// gelu picks its body by the `approximate` attribute.
struct GeluLowering : public OpConversionPattern<GeluOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GeluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, buildBroadcastGeneric(
                               rewriter, op.getLoc(), adaptor.getOperands(),
                               type, op.getApproximate() ? geluTanhS : geluS));
    return success();
  }
};

/// cast: the scalar conversion (rounding policies are rejected before the
/// conversion starts, see checkLowerable).
struct CastLowering : public OpConversionPattern<CastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    PolicyAttr policy = op.getPolicyAttr();
    if (policy && policy.getStochasticRound())
      return failure(); // LowerRandom.cpp
    bool saturate = policy && policy.getSaturate();
    rewriter.replaceOp(
        op, buildBroadcastGeneric(rewriter, op.getLoc(), adaptor.getOperands(),
                                  type, saturate ? saturatingCastS : castS));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

struct ConstantLowering : public OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, op.getValue());
    return success();
  }
};

/// full, zeros_like, ones_like: linalg.fill.
struct FullLowering : public OpConversionPattern<FullOp> {
  FullLowering(LoweringContext &ctx, MLIRContext *mlir)
      : OpConversionPattern(ctx.types, mlir), ctx(ctx) {}
  LoweringContext &ctx;
  LogicalResult
  matchAndRewrite(FullOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    auto sizes =
        dynamicSizes(rewriter, op, getShape(op.getType()), type, ctx.symbols);
    if (failed(sizes))
      return failure();
    Value v = arith::ConstantOp::create(rewriter, op.getLoc(),
                                        cast<TypedAttr>(op.getValue()));
    rewriter.replaceOp(op,
                       filledTensor(rewriter, op.getLoc(), type, *sizes, v));
    return success();
  }
};

template <typename OpTy, int Value_>
struct FillLikeLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(adaptor.getX().getType());
    SmallVector<Value> sizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        sizes.push_back(dimOf(rewriter, loc, adaptor.getX(), i));
    Value v = scalarConstant(rewriter, loc, type.getElementType(), Value_);
    rewriter.replaceOp(op, filledTensor(rewriter, loc, type, sizes, v));
    return success();
  }
};

/// iota: element [i0, ..., in] is i_dim.
struct IotaLowering : public OpConversionPattern<IotaOp> {
  IotaLowering(LoweringContext &ctx, MLIRContext *mlir)
      : OpConversionPattern(ctx.types, mlir), ctx(ctx) {}
  LoweringContext &ctx;
  LogicalResult
  matchAndRewrite(IotaOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    auto sizes =
        dynamicSizes(rewriter, op, getShape(op.getType()), type, ctx.symbols);
    if (failed(sizes))
      return failure();
    int64_t rank = type.getRank(), dim = op.getDim();
    Value init = emptyTensor(rewriter, loc, type, *sizes);
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{}, init,
        SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(rank)},
        iterators, [&](OpBuilder &b, Location l, ValueRange) {
          Value i = linalg::IndexOp::create(b, l, dim);
          Value asInt = arith::IndexCastOp::create(b, l, b.getI64Type(), i);
          linalg::YieldOp::create(
              b, l, convertScalar(b, l, asInt, type.getElementType()));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// stop_gradient is the identity once derivatives have been built.
struct StopGradientLowering : OpConversionPattern<StopGradientOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StopGradientOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getX());
    return success();
  }
};

} // namespace

void mlir::tessera::tgraph::lowering::populateElementwisePatterns(
    LoweringContext &ctx, RewritePatternSet &patterns) {
  MLIRContext *mlir = patterns.getContext();
  patterns.add<
      ElementwiseLowering<NegOp, negS>, ElementwiseLowering<AbsOp, absS>,
      ElementwiseLowering<ExpOp, expS>, ElementwiseLowering<LogOp, logS>,
      ElementwiseLowering<Log1pOp, log1pS>, ElementwiseLowering<SinOp, sinS>,
      ElementwiseLowering<CosOp, cosS>, ElementwiseLowering<TanhOp, tanhS>,
      ElementwiseLowering<ErfOp, erfS>,
      ElementwiseLowering<SigmoidOp, sigmoidS>,
      ElementwiseLowering<ReluOp, reluS>, ElementwiseLowering<SiluOp, siluS>,
      ElementwiseLowering<SqrtOp, sqrtS>, ElementwiseLowering<RsqrtOp, rsqrtS>,
      ElementwiseLowering<ReciprocalOp, reciprocalS>,
      ElementwiseLowering<SquareOp, squareS>,
      ElementwiseLowering<FloorOp, floorS>, ElementwiseLowering<SignOp, signS>,
      ElementwiseLowering<AddOp, addS>, ElementwiseLowering<SubOp, subS>,
      ElementwiseLowering<MulOp, mulS>, ElementwiseLowering<DivOp, divS>,
      ElementwiseLowering<PowOp, powS>, ElementwiseLowering<MaxOp, maxS>,
      ElementwiseLowering<MinOp, minS>, ElementwiseLowering<SelectOp, selectS>,
      CompareLowering, GeluLowering, CastLowering, ConstantLowering,
      FillLikeLowering<ZerosLikeOp, 0>, FillLikeLowering<OnesLikeOp, 1>,
      StopGradientLowering>(ctx.types, mlir);
  patterns.add<FullLowering, IotaLowering>(ctx, mlir);
}
