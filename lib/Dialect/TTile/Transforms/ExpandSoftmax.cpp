//===- ExpandSoftmax.cpp - The online-softmax ops as tile ops -------------===//

#include "ExpandSoftmax.h"

#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessera::ttile;

namespace {

RankedTensorType withShape(RankedTensorType t, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, t.getElementType());
}

Value floatSplat(OpBuilder &b, Location loc, RankedTensorType t, double v) {
  auto plain = RankedTensorType::get(t.getShape(), t.getElementType());
  return arith::ConstantOp::create(
      b, loc, plain,
      DenseElementsAttr::get(plain, b.getFloatAttr(t.getElementType(), v)));
}

/// The row maxima `m` with -inf (a row without a finite score yet) read as
/// 0, so that subtracting them gives -inf, not NaN.
Value finiteOrZero(OpBuilder &b, Location loc, RankedTensorType rowType,
                   Value m) {
  Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                      floatSplat(b, loc, rowType, -INFINITY));
  return arith::SelectOp::create(b, loc, isInf,
                                 floatSplat(b, loc, rowType, 0.0), m);
}

//===----------------------------------------------------------------------===//

/// m_c = max_j s; p = exp(s - m_c) (a -inf row subtracts 0); l_c = sum_j p.
struct ExpandSoftmaxOnline : OpRewritePattern<SoftmaxOnlineOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOnlineOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto sType = cast<RankedTensorType>(op.getScores().getType());
    auto rowType = withShape(sType, {sType.getShape()[0]});
    Value mc =
        ReduceOp::create(b, loc, rowType, ReduceKind::max, op.getScores(), 1);
    Value safe = finiteOrZero(b, loc, rowType, mc);
    Value rows = BroadcastOp::create(b, loc, withShape(sType, sType.getShape()),
                                     safe, b.getDenseI64ArrayAttr({0}));
    Value shifted = arith::SubFOp::create(b, loc, op.getScores(), rows);
    Value p = math::ExpOp::create(b, loc, shifted);
    Value lc = ReduceOp::create(b, loc, rowType, ReduceKind::sum, p, 1);
    b.replaceOp(op, {p, mc, lc});
    return success();
  }
};

/// m' = max(m, m_c); a = exp(m - m'); c = exp(m_c - m');
/// acc' = a * acc + c * (p @ v); l' = a * l + c * l_c.
struct ExpandSoftmaxAccumulate : OpRewritePattern<SoftmaxAccumulateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxAccumulateOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    auto accType = cast<RankedTensorType>(op.getAcc().getType());
    auto rowType = cast<RankedTensorType>(op.getM().getType());
    rowType = withShape(rowType, rowType.getShape());
    auto plainAcc = withShape(accType, accType.getShape());
    Value m = op.getM(), mc = op.getMC();
    Value mNew = arith::MaximumFOp::create(b, loc, m, mc);
    Value safe = finiteOrZero(b, loc, rowType, mNew);
    Value a =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, m, safe));
    Value c =
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, mc, safe));
    Value p = op.getP();
    auto vType = cast<RankedTensorType>(op.getV().getType());
    auto pType = cast<RankedTensorType>(p.getType());
    if (pType.getElementType() != vType.getElementType())
      p = CastOp::create(
          b, loc,
          RankedTensorType::get(pType.getShape(), vType.getElementType()), p,
          false, false, Value());
    Value pv = DotOp::create(b, loc, plainAcc, p, op.getV(),
                             floatSplat(b, loc, plainAcc, 0.0));
    auto rows = [&](Value x) -> Value {
      return BroadcastOp::create(b, loc, plainAcc, x,
                                 b.getDenseI64ArrayAttr({0}));
    };
    Value acc = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, rows(a), op.getAcc()),
        arith::MulFOp::create(b, loc, rows(c), pv));
    Value l = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, a, op.getL()),
        arith::MulFOp::create(b, loc, c, op.getLC()));
    b.replaceOp(op, {acc, mNew, l});
    return success();
  }
};

/// A softmax_online whose results only feed one softmax_accumulate (the
/// FlashAttention step), as one: the block's probabilities are taken
/// against the new running max, so the product accumulates into the
/// rescaled output and no second factor is needed; exponentials are
/// powers of two (the hardware's ex2):
///   m' = max(m, max_j s); k = log2(e); p = 2^(s k - m' k);
///   a = 2^((m - m') k); acc' = p @ v + a acc; l' = a l + sum_j p.
/// (m' = -inf, a row without a score yet, subtracts 0 instead.)
struct FuseSoftmaxStep : OpRewritePattern<SoftmaxAccumulateOp> {
  FuseSoftmaxStep(MLIRContext *ctx)
      : OpRewritePattern<SoftmaxAccumulateOp>(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(SoftmaxAccumulateOp op,
                                PatternRewriter &b) const override {
    auto online = op.getP().getDefiningOp<SoftmaxOnlineOp>();
    if (!online || op.getMC() != online.getMC() ||
        op.getLC() != online.getLC() || !online.getP().hasOneUse() ||
        !online.getMC().hasOneUse() || !online.getLC().hasOneUse())
      return failure();
    Location loc = op.getLoc();
    auto sType = cast<RankedTensorType>(online.getScores().getType());
    // f32 scores only: log2(e) and the multiply-add in a 16-bit type
    // would lose the exponent's accuracy.
    if (!sType.getElementType().isF32())
      return failure();
    auto plainS = withShape(sType, sType.getShape());
    auto rowType = withShape(sType, {sType.getShape()[0]});
    auto accType = cast<RankedTensorType>(op.getAcc().getType());
    auto plainAcc = withShape(accType, accType.getShape());
    Value scores = online.getScores();
    Value mc = ReduceOp::create(b, loc, rowType, ReduceKind::max, scores, 1);
    Value mNew = arith::MaximumFOp::create(b, loc, op.getM(), mc);
    Value safe = finiteOrZero(b, loc, rowType, mNew);
    // p as 2^(s k - m' k): one multiply-add an element. (The row's m' k is
    // a product of the row maximum, so the constant does not decide its
    // layout; a below subtracts first for the same reason.)
    constexpr double log2e = 1.4426950408889634;
    Value negSafeK = arith::NegFOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, safe,
                              floatSplat(b, loc, rowType, log2e)));
    Value rows = BroadcastOp::create(b, loc, plainS, negSafeK,
                                     b.getDenseI64ArrayAttr({0}));
    Value p = math::Exp2Op::create(
        b, loc,
        math::FmaOp::create(b, loc, scores, floatSplat(b, loc, plainS, log2e),
                            rows));
    Value a = math::Exp2Op::create(
        b, loc,
        arith::MulFOp::create(b, loc,
                              arith::SubFOp::create(b, loc, op.getM(), safe),
                              floatSplat(b, loc, rowType, log2e)));
    Value lc = ReduceOp::create(b, loc, rowType, ReduceKind::sum, p, 1);
    Value pv = p;
    auto vType = cast<RankedTensorType>(op.getV().getType());
    if (vType.getElementType() != sType.getElementType())
      pv = CastOp::create(
          b, loc,
          RankedTensorType::get(sType.getShape(), vType.getElementType()), p,
          false, false, Value());
    Value scaled = arith::MulFOp::create(
        b, loc,
        BroadcastOp::create(b, loc, plainAcc, a, b.getDenseI64ArrayAttr({0})),
        op.getAcc());
    Value acc = DotOp::create(b, loc, plainAcc, pv, op.getV(), scaled);
    Value l = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, a, op.getL()), lc);
    b.replaceOp(op, {acc, mNew, l});
    b.eraseOp(online);
    return success();
  }
};

} // namespace

void mlir::tessera::ttile::populateSoftmaxExpansionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FuseSoftmaxStep, ExpandSoftmaxOnline, ExpandSoftmaxAccumulate>(
      patterns.getContext());
}
