//===- ExpandSmallFloats.cpp - fp8 arithmetic and conversions for LLVM ----===//
//
// LLVM has no fp8 types (the LLVM type converter turns them into i8), so
// conversions to and from them are written out on the bit patterns here,
// and arithmetic on them runs in f32 with one rounding back per op (unlike
// arith-emulate-unsupported-floats, which keeps chains of ops in f32).
//
// truncf from an IEEE binary format S (f32, f64; narrower sources are
// widened to f32 first, exactly) to an fp8 format T, on |x|'s bits:
//  - NaN stays NaN; infinity becomes T's infinity, or NaN where T has none;
//  - |x| at least T's smallest normal: round the significand to T's width
//    (add half an ulp minus one plus the kept lowest bit, shift), then
//    re-bias the exponent; results past T's largest finite value overflow
//    as above;
//  - smaller |x|: k = roundeven(|x| * 2^(bias_T - 1 + m_T)) is T's
//    subnormal significand (k = 2^m_T is the smallest normal, which the
//    encoding gives for free).
// extf from T: normal values re-bias the exponent and widen the mantissa;
// subnormals are k * 2^(1 - bias_T - m_T), exact in f32.
//
//===----------------------------------------------------------------------===//

#include "tessera/Conversion/Passes.h"

#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_EXPANDSMALLFLOATS
#include "tessera/Conversion/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// The fp8 formats Tessera stores.
struct SmallFormat {
  unsigned mantissa; // stored mantissa bits
  int bias;
  bool hasInf;        // E5M2; E4M3FN has no infinity
  uint64_t maxFinite; // encoding of the largest finite magnitude
  uint64_t nan;       // the NaN produced
  uint64_t inf;       // encoding of infinity (when hasInf)
};

std::optional<SmallFormat> formatOf(Type t) {
  if (isa<Float8E4M3FNType>(t))
    return SmallFormat{3, 7, false, 0x7E, 0x7F, 0};
  if (isa<Float8E5M2Type>(t))
    return SmallFormat{2, 15, true, 0x7B, 0x7E, 0x7C};
  return std::nullopt;
}

/// `type` with its element type replaced (scalars and vectors).
Type withElement(Type type, Type element) {
  if (auto v = dyn_cast<VectorType>(type))
    return v.clone(element);
  return element;
}

/// A constant of `type` (scalar or splat vector).
Value constant(OpBuilder &b, Location loc, Type type, uint64_t bits) {
  Type element = getElementTypeOrSelf(type);
  Attribute a;
  if (auto f = dyn_cast<FloatType>(element))
    a = b.getFloatAttr(
        f, APFloat(f.getFloatSemantics(), APInt(f.getWidth(), bits)));
  else
    a = b.getIntegerAttr(element, APInt(element.getIntOrFloatBitWidth(), bits));
  if (auto v = dyn_cast<VectorType>(type))
    a = SplatElementsAttr::get(v, a);
  return arith::ConstantOp::create(b, loc, cast<TypedAttr>(a));
}

Value floatConstant(OpBuilder &b, Location loc, Type type, double value) {
  auto f = cast<FloatType>(getElementTypeOrSelf(type));
  APFloat v(value);
  bool lost;
  v.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return constant(b, loc, type, v.bitcastToAPInt().getZExtValue());
}

struct TruncToSmall : public OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &b) const override {
    auto fmt = formatOf(getElementTypeOrSelf(op.getType()));
    if (!fmt)
      return failure();
    Location loc = op.getLoc();
    Value x = op.getIn();
    auto src = cast<FloatType>(getElementTypeOrSelf(x.getType()));
    if (!src.isF32() && !src.isF64()) {
      // bf16, f16 and the other fp8 format widen to f32 exactly.
      x = arith::ExtFOp::create(b, loc,
                                withElement(x.getType(), b.getF32Type()), x);
      src = b.getF32Type();
    }
    unsigned w = src.getWidth();
    unsigned srcMantissa = src.isF32() ? 23 : 52;
    int srcBias = src.isF32() ? 127 : 1023;
    Type wide = withElement(x.getType(), b.getIntegerType(w));
    Type out = withElement(x.getType(), b.getI8Type());
    auto c = [&](uint64_t v) { return constant(b, loc, wide, v); };

    Value bits = arith::BitcastOp::create(b, loc, wide, x);
    Value sign = arith::ShRUIOp::create(b, loc, bits, c(w - 1));
    Value abs =
        arith::AndIOp::create(b, loc, bits, c((uint64_t(1) << (w - 1)) - 1));
    uint64_t infBits = uint64_t((1 << (w == 32 ? 8 : 11)) - 1) << srcMantissa;

    // Normal range of the target: round the significand, re-bias.
    unsigned shift = srcMantissa - fmt->mantissa;
    Value lowest = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, abs, c(shift)), c(1));
    Value rounding = arith::AddIOp::create(b, loc, lowest,
                                           c((uint64_t(1) << (shift - 1)) - 1));
    Value rounded = arith::ShRUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, abs, rounding), c(shift));
    uint64_t rebias = uint64_t(srcBias - fmt->bias) << fmt->mantissa;
    Value normal = arith::SubIOp::create(b, loc, rounded, c(rebias));

    // Subnormal range: k = roundeven(|x| * 2^(bias - 1 + m)).
    Value absF = arith::BitcastOp::create(b, loc, x.getType(), abs);
    Value scaled = arith::MulFOp::create(
        b, loc, absF,
        floatConstant(b, loc, x.getType(),
                      std::ldexp(1.0, fmt->bias - 1 + int(fmt->mantissa))));
    Value k = arith::FPToUIOp::create(
        b, loc, wide, math::RoundEvenOp::create(b, loc, scaled));
    uint64_t minNormal = uint64_t(srcBias + 1 - fmt->bias) << srcMantissa;
    Value small = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, abs,
                                        c(minNormal));
    Value magnitude = arith::SelectOp::create(b, loc, small, k, normal);

    // Overflow, infinities and NaN.
    uint64_t overflowTo = fmt->hasInf ? fmt->inf : fmt->nan;
    Value over = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                       magnitude, c(fmt->maxFinite));
    magnitude = arith::SelectOp::create(b, loc, over, c(overflowTo), magnitude);
    Value isInf = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, abs,
                                        c(infBits));
    magnitude =
        arith::SelectOp::create(b, loc, isInf, c(overflowTo), magnitude);
    Value isNan = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, abs,
                                        c(infBits));
    magnitude = arith::SelectOp::create(b, loc, isNan, c(fmt->nan), magnitude);

    Value byte = arith::OrIOp::create(
        b, loc, arith::ShLIOp::create(b, loc, sign, c(7)), magnitude);
    Value narrow = arith::TruncIOp::create(b, loc, out, byte);
    b.replaceOpWithNewOp<arith::BitcastOp>(op, op.getType(), narrow);
    return success();
  }
};

struct ExtFromSmall : public OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &b) const override {
    Value in = op.getIn();
    auto fmt = formatOf(getElementTypeOrSelf(in.getType()));
    if (!fmt)
      return failure();
    Location loc = op.getLoc();
    Type i8 = withElement(in.getType(), b.getI8Type());
    Type i32 = withElement(in.getType(), b.getI32Type());
    Type f32 = withElement(in.getType(), b.getF32Type());
    auto c = [&](uint64_t v) { return constant(b, loc, i32, v); };

    Value byte = arith::ExtUIOp::create(
        b, loc, i32, arith::BitcastOp::create(b, loc, i8, in));
    Value sign = arith::ShLIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, byte, c(7)), c(31));
    Value exponent = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, byte, c(fmt->mantissa)),
        c((1 << (7 - fmt->mantissa)) - 1));
    Value mantissa =
        arith::AndIOp::create(b, loc, byte, c((1 << fmt->mantissa) - 1));
    // Normal: re-bias the exponent, widen the mantissa.
    Value normal = arith::OrIOp::create(
        b, loc,
        arith::ShLIOp::create(
            b, loc, arith::AddIOp::create(b, loc, exponent, c(127 - fmt->bias)),
            c(23)),
        arith::ShLIOp::create(b, loc, mantissa, c(23 - fmt->mantissa)));
    // Subnormal: mantissa * 2^(1 - bias - m), exact in f32.
    Value sub = arith::MulFOp::create(
        b, loc, arith::UIToFPOp::create(b, loc, f32, mantissa),
        floatConstant(b, loc, f32,
                      std::ldexp(1.0, 1 - fmt->bias - int(fmt->mantissa))));
    Value subBits = arith::BitcastOp::create(b, loc, i32, sub);
    Value isSub =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, exponent, c(0));
    Value magnitude = arith::SelectOp::create(b, loc, isSub, subBits, normal);
    // Specials: E4M3FN's NaN is S.1111.111; E5M2 is IEEE-like.
    Value abs = arith::AndIOp::create(b, loc, byte, c(0x7F));
    if (fmt->hasInf) {
      Value top = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        exponent, c(0x1F));
      Value special = arith::SelectOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, mantissa,
                                c(0)),
          c(0x7F800000), c(0x7FC00000));
      magnitude = arith::SelectOp::create(b, loc, top, special, magnitude);
    } else {
      Value isNan =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, abs, c(0x7F));
      magnitude =
          arith::SelectOp::create(b, loc, isNan, c(0x7FC00000), magnitude);
    }
    Value bits = arith::OrIOp::create(b, loc, sign, magnitude);
    Value wide = arith::BitcastOp::create(b, loc, f32, bits);
    // To other formats through f32, which holds every fp8 value exactly
    // (so narrowing to bf16/f16 is exact too).
    unsigned width = getElementTypeOrSelf(op.getType()).getIntOrFloatBitWidth();
    if (width == 32)
      b.replaceOp(op, wide);
    else if (width > 32)
      b.replaceOpWithNewOp<arith::ExtFOp>(op, op.getType(), wide);
    else
      b.replaceOpWithNewOp<arith::TruncFOp>(op, op.getType(), wide);
    return success();
  }
};

/// Any other arith or math op on fp8 values runs in f32: operands widen
/// (exactly), results round back to fp8 right away, so a chain of ops
/// rounds after every op as fp8 hardware would.
struct ComputeInF32 : public RewritePattern {
  ComputeInF32(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  static bool isSmall(Type t) {
    return formatOf(getElementTypeOrSelf(t)).has_value();
  }

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &b) const override {
    Dialect *dialect = op->getDialect();
    if (!dialect || !isa<arith::ArithDialect, math::MathDialect>(dialect))
      return failure();
    // These move or reinterpret bits; the conversions have their own
    // expansion.
    if (isa<arith::ConstantOp, arith::SelectOp, arith::BitcastOp, arith::ExtFOp,
            arith::TruncFOp>(op) ||
        op->getNumRegions() != 0)
      return failure();
    if (llvm::none_of(op->getOperandTypes(), isSmall) &&
        llvm::none_of(op->getResultTypes(), isSmall))
      return failure();
    Location loc = op->getLoc();
    auto widen = [&](Type t) {
      return isSmall(t) ? withElement(t, b.getF32Type()) : t;
    };
    SmallVector<Value> operands;
    for (Value v : op->getOperands())
      operands.push_back(
          isSmall(v.getType())
              ? arith::ExtFOp::create(b, loc, widen(v.getType()), v).getResult()
              : v);
    SmallVector<Type> results;
    for (Type t : op->getResultTypes())
      results.push_back(widen(t));
    OperationState state(loc, op->getName().getStringRef(), operands, results,
                         op->getAttrs());
    Operation *wide = b.create(state);
    SmallVector<Value> replacements;
    for (auto [r, t] :
         llvm::zip_equal(wide->getResults(), op->getResultTypes()))
      replacements.push_back(
          isSmall(t) ? arith::TruncFOp::create(b, loc, t, r).getResult() : r);
    b.replaceOp(op, replacements);
    return success();
  }
};

/// truncf from f64 to bf16 or f16: LLVM calls __truncdfbf2 / __truncdfhf2
/// for these, which the libgcc of many systems lacks. Rounding to f32 with
/// round-to-odd first (keep an inexact result's last bit set) and then to
/// nearest even gives the correctly rounded result: f32 keeps more than two
/// extra bits at every magnitude where either target is finite.
struct TruncF64ToHalf : public OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &b) const override {
    Type target = getElementTypeOrSelf(op.getType());
    Value x = op.getIn();
    if (!getElementTypeOrSelf(x.getType()).isF64() ||
        !(target.isBF16() || target.isF16()))
      return failure();
    // Other rounding modes are not what round-to-odd then nearest gives.
    if (op.getRoundingmodeAttr())
      return failure();
    Location loc = op.getLoc();
    Type f32 = withElement(x.getType(), b.getF32Type());
    Type i32 = withElement(x.getType(), b.getI32Type());
    Value f = arith::TruncFOp::create(b, loc, f32, x);
    Value back = arith::ExtFOp::create(b, loc, x.getType(), f);
    Value inexact =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, back, x);
    Value bits = arith::BitcastOp::create(b, loc, i32, f);
    Value even = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::AndIOp::create(b, loc, bits, constant(b, loc, i32, 1)),
        constant(b, loc, i32, 0));
    // The other neighbour of x is one step toward x in the bit pattern.
    Value outward = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                          math::AbsFOp::create(b, loc, back),
                                          math::AbsFOp::create(b, loc, x));
    Value toward = arith::SelectOp::create(
        b, loc, outward,
        arith::SubIOp::create(b, loc, bits, constant(b, loc, i32, 1)),
        arith::AddIOp::create(b, loc, bits, constant(b, loc, i32, 1)));
    Value odd = arith::SelectOp::create(
        b, loc, arith::AndIOp::create(b, loc, inexact, even), toward, bits);
    Value rounded = arith::BitcastOp::create(b, loc, f32, odd);
    b.replaceOpWithNewOp<arith::TruncFOp>(op, op.getType(), rounded);
    return success();
  }
};

struct ExpandSmallFloatsPass
    : public mlir::tessera::impl::ExpandSmallFloatsBase<ExpandSmallFloatsPass> {
  using ExpandSmallFloatsBase::ExpandSmallFloatsBase;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Operation *root = getOperation();
    RewritePatternSet patterns(ctx);
    patterns.add<ComputeInF32, TruncToSmall, ExtFromSmall, TruncF64ToHalf>(ctx);
    if (bf16)
      arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(root, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
