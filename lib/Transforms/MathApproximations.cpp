//===- MathApproximations.cpp - f32 transcendentals as vector code --------===//
//
// Most functions use MLIR's polynomial approximations. exp has a form of
// its own (it is the inner loop of softmax and attention), shorter and
// more accurate than MLIR's (which flushes results below 2^-126 to 0 and
// is off by up to 4 ulps):
//
//   x' = clamp(x, -104, 89)         NaN stays NaN; beyond the bounds e^x
//                                   rounds to 0 or overflows anyway
//   k  = roundeven(x' * log2(e))
//   r  = x' - k * ln2               two FMAs (ln2 = hi + lo), |r| <= ~ln2/2
//   p  = 1 + r + r^2 q(r)           q of degree 5 (the Cephes expf
//                                   coefficients), Horner form in FMAs
//   e^x = p * 2^k                   rounded once: into the subnormals, to
//                                   0 or to infinity where e^x is there
//
// Results are within one f32 step (ulp, or subnormal step) of e^x. 2^k is
// one vscalefps on AVX-512 (16-lane vectors: 14 vector instructions in
// all, against about 20 for MLIR's form); elsewhere, and for scalars, it is
// two multiplications by powers of two built from exponent bits, which
// give the same values. So an element's value does not depend on whether
// it fell in a vector or in a loop's remainder, nor on the instruction set.
//
//===----------------------------------------------------------------------===//

#include "tessera/Transforms/Passes.h"

#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/TargetParser/Host.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_MATHAPPROXIMATIONS
#include "tessera/Transforms/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// e^x for f32 scalars and vectors (see the file comment).
struct Exp : OpRewritePattern<math::ExpOp> {
  // Ahead of MLIR's generic expansion of the same op.
  Exp(MLIRContext *ctx, bool avx512)
      : OpRewritePattern(ctx, /*benefit=*/2), avx512(avx512) {}

  LogicalResult matchAndRewrite(math::ExpOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    auto vector = dyn_cast<VectorType>(type);
    // vscalefps: 16 lanes of f32.
    bool avx512 = this->avx512 && vector && vector.getRank() == 1 &&
                  vector.getNumElements() == 16;
    if (vector && vector.isScalable())
      return rewriter.notifyMatchFailure(op, "scalable vector");
    if (!getElementTypeOrSelf(type).isF32())
      return rewriter.notifyMatchFailure(op, "not f32");

    Location loc = op.getLoc();
    auto constant = [&](double v) -> Value {
      auto attr = rewriter.getF32FloatAttr(static_cast<float>(v));
      if (vector)
        return arith::ConstantOp::create(rewriter, loc,
                                         DenseElementsAttr::get(vector, attr));
      return arith::ConstantOp::create(rewriter, loc, attr);
    };
    auto fma = [&](Value a, Value b, Value c) -> Value {
      return math::FmaOp::create(rewriter, loc, a, b, c);
    };
    // (c > x) ? c : x and (c < x) ? c : x: x86's max and min, which give
    // their second operand (x) when either is NaN.
    auto clamp = [&](Value x, double low, double high) {
      Value lo = constant(low), hi = constant(high);
      Value below = arith::CmpFOp::create(rewriter, loc,
                                          arith::CmpFPredicate::OGT, lo, x);
      x = arith::SelectOp::create(rewriter, loc, below, lo, x);
      Value above = arith::CmpFOp::create(rewriter, loc,
                                          arith::CmpFPredicate::OLT, hi, x);
      return arith::SelectOp::create(rewriter, loc, above, hi, x).getResult();
    };

    // e^-104 is below half the smallest subnormal (it rounds to 0), e^89
    // above the largest finite f32.
    Value x = clamp(op.getOperand(), -104.0, 89.0);
    Value k = math::RoundEvenOp::create(
        rewriter, loc,
        arith::MulFOp::create(rewriter, loc, x, constant(1.4426950408889634)));
    Value negK = arith::NegFOp::create(rewriter, loc, k);
    // ln2 = hi + lo, hi the nearest f32.
    Value r = fma(negK, constant(0.693147182464599609375), x);
    r = fma(negK, constant(-1.904654299957768e-09), r);
    // Cephes expf: e^r = 1 + r + r^2 (c0 + c1 r + ... + c5 r^5) on
    // |r| <= ln2 / 2.
    Value q = fma(constant(1.9875691500e-4), r, constant(1.3981999507e-3));
    q = fma(q, r, constant(8.3334519073e-3));
    q = fma(q, r, constant(4.1665795894e-2));
    q = fma(q, r, constant(1.6666665459e-1));
    q = fma(q, r, constant(5.0000001201e-1));
    Value one = constant(1.0);
    Value p = fma(fma(q, r, one), r, one);

    Value result;
    if (avx512 && vector) {
      Value allLanes = arith::ConstantOp::create(
          rewriter, loc, rewriter.getI16IntegerAttr(-1));
      // 4: the rounding mode of MXCSR (round to nearest even).
      Value rounding = arith::ConstantOp::create(rewriter, loc,
                                                 rewriter.getI32IntegerAttr(4));
      // MLIR 22 passes the operands to llvm.x86.avx512.mask.scalef.ps.512
      // in their order, which is (a, b, passthrough, mask, rounding): the
      // op's "src" is the scaled value and its "b" the passthrough.
      result = x86vector::MaskScaleFOp::create(rewriter, loc, vector, p, k, p,
                                               allLanes, rounding);
    } else {
      // p * 2^k1 * 2^k2 with k1 = floor(k / 2), k2 = k - k1, each power
      // built from its exponent bits: both are normal f32 (k is in
      // [-150, 129]), the first product is exact, and the second rounds
      // once, into the subnormals or to infinity where e^x does.
      Type i32 = rewriter.getI32Type();
      Type ints = vector ? Type(VectorType::get(vector.getShape(), i32)) : i32;
      auto intConstant = [&](int32_t v) -> Value {
        auto attr = rewriter.getI32IntegerAttr(v);
        if (vector)
          return arith::ConstantOp::create(
              rewriter, loc,
              DenseElementsAttr::get(cast<ShapedType>(ints), attr));
        return arith::ConstantOp::create(rewriter, loc, attr);
      };
      auto power = [&](Value e) -> Value {
        Value bits = arith::ShLIOp::create(
            rewriter, loc,
            arith::AddIOp::create(rewriter, loc, e, intConstant(127)),
            intConstant(23));
        return arith::BitcastOp::create(rewriter, loc, type, bits);
      };
      Value ki = arith::FPToSIOp::create(rewriter, loc, ints, k);
      Value k1 = arith::ShRSIOp::create(rewriter, loc, ki, intConstant(1));
      Value k2 = arith::SubIOp::create(rewriter, loc, ki, k1);
      result = arith::MulFOp::create(
          rewriter, loc, arith::MulFOp::create(rewriter, loc, p, power(k1)),
          power(k2));
    }
    rewriter.replaceOp(op, result);
    return success();
  }

  bool avx512;
};

bool hostHasAVX512() {
  return llvm::sys::getHostCPUFeatures().lookup("avx512f");
}

struct MathApproximationsPass
    : public mlir::tessera::impl::MathApproximationsBase<
          MathApproximationsPass> {
  using MathApproximationsBase::MathApproximationsBase;

  LogicalResult initialize(MLIRContext *ctx) override {
    if (isa != "host" && isa != "avx512" && isa != "generic")
      return emitError(UnknownLoc::get(ctx))
             << "tessera-math-approximations: isa must be host, avx512 or "
                "generic, not '"
             << isa << "'";
    avx512 = isa == "avx512" || (isa == "host" && hostHasAVX512());
    return success();
  }

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<Exp>(&getContext(), avx512);
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return llvm::is_contained({"math.exp", "math.expm1", "math.log",
                                 "math.log1p", "math.log2", "math.tanh",
                                 "math.erf"},
                                name);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }

  bool avx512 = false;
};

} // namespace
