//===- RandomBits.cpp - Philox blocks and stochastic rounding -------------===//

#include "tessera/Conversion/RandomBits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;

Value mlir::tessera::i32Constant(OpBuilder &b, Location loc, uint32_t v) {
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(b.getI32Type(), APInt(32, v)));
}

/// The high and low words of the 64-bit product of two 32-bit words
/// (single-result ops only, which vectorize everywhere; NVPTX makes one
/// mul.wide.u32 of them).
static std::pair<Value, Value> mulHiLo(OpBuilder &b, Location loc, Value x,
                                       Value y) {
  Type i64 = b.getI64Type(), i32 = b.getI32Type();
  Value p =
      arith::MulIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, x),
                            arith::ExtUIOp::create(b, loc, i64, y));
  Value hi = arith::TruncIOp::create(
      b, loc, i32,
      arith::ShRUIOp::create(
          b, loc, p,
          arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(32))));
  Value lo = arith::TruncIOp::create(b, loc, i32, p);
  return {hi, lo};
}

mlir::tessera::PhiloxWords mlir::tessera::philox(OpBuilder &b, Location loc,
                                                 Value k0, Value k1,
                                                 PhiloxWords c) {
  Value m0 = i32Constant(b, loc, 0xD2511F53u);
  Value m1 = i32Constant(b, loc, 0xCD9E8D57u);
  Value w0 = i32Constant(b, loc, 0x9E3779B9u);
  Value w1 = i32Constant(b, loc, 0xBB67AE85u);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 = arith::AddIOp::create(b, loc, k0, w0);
      k1 = arith::AddIOp::create(b, loc, k1, w1);
    }
    auto [hi0, lo0] = mulHiLo(b, loc, m0, c[0]);
    auto [hi1, lo1] = mulHiLo(b, loc, m1, c[2]);
    Value n0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, hi1, c[1]), k0);
    Value n2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, hi0, c[3]), k1);
    c = {n0, lo1, n2, lo0};
  }
  return c;
}

Value mlir::tessera::uniformFraction(OpBuilder &b, Location loc, FloatType type,
                                     Value hiWord, Value loWord) {
  if (type.isF32()) {
    Value bits = arith::ShRUIOp::create(b, loc, hiWord, i32Constant(b, loc, 8));
    Value f = arith::UIToFPOp::create(b, loc, type, bits);
    return arith::MulFOp::create(
        b, loc, f,
        arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0x1p-24f)));
  }
  Type i64 = b.getI64Type();
  Value hi = arith::ExtUIOp::create(b, loc, i64, hiWord);
  Value lo = arith::ExtUIOp::create(b, loc, i64, loWord);
  Value bits = arith::OrIOp::create(
      b, loc,
      arith::ShLIOp::create(
          b, loc, hi,
          arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(21))),
      arith::ShRUIOp::create(
          b, loc, lo,
          arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(11))));
  Value f = arith::UIToFPOp::create(b, loc, b.getF64Type(), bits);
  return arith::MulFOp::create(
      b, loc, f, arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0x1p-53)));
}

Value mlir::tessera::roundStochastically(OpBuilder &b, Location l, Value x,
                                         FloatType t, Value u, bool saturate) {
  auto work = cast<FloatType>(x.getType());
  auto bits = IntegerType::get(b.getContext(), t.getWidth());
  auto wide = [&](Value v) {
    return arith::ExtFOp::create(b, l, work, v).getResult();
  };
  auto fromBits = [&](Value v) {
    return arith::BitcastOp::create(b, l, t, v).getResult();
  };
  auto step = [&](Value v, int64_t by) {
    return arith::AddIOp::create(
               b, l, v,
               arith::ConstantOp::create(b, l, b.getIntegerAttr(bits, by)))
        .getResult();
  };
  auto magnitude = [&](Value v) {
    return math::AbsFOp::create(b, l, v).getResult();
  };
  auto constant = [&](double v) {
    return arith::ConstantOp::create(b, l, b.getFloatAttr(work, v));
  };
  // Nearest, but finite for finite x: clamped to t's finite range in the
  // work type, which holds it exactly (NaN passes minimumf/maximumf).
  APFloat big = APFloat::getLargest(t.getFloatSemantics());
  bool lost = false;
  big.convert(work.getFloatSemantics(), APFloat::rmTowardZero, &lost);
  Value clamped = arith::MaximumFOp::create(
      b, l,
      arith::MinimumFOp::create(
          b, l, x, arith::ConstantOp::create(b, l, b.getFloatAttr(work, big))),
      arith::ConstantOp::create(b, l, b.getFloatAttr(work, -big)));
  Value y = arith::TruncFOp::create(b, l, t, clamped);
  Value ax = magnitude(x);
  Value yBits = arith::BitcastOp::create(b, l, bits, y);
  // Rounded away from zero: y is hi; otherwise y is lo.
  Value above = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                      magnitude(wide(y)), ax);
  Value loBits = arith::SelectOp::create(b, l, above, step(yBits, -1), yBits);
  Value hiBits = step(loBits, 1);
  Value lo = fromBits(loBits), hi = fromBits(hiBits);
  Value aLo = magnitude(wide(lo)), aHi = magnitude(wide(hi));
  // Past the largest finite value, the gap is the last finite one's.
  Value hiFinite = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, aHi,
                                         constant(INFINITY));
  Value gap = arith::SelectOp::create(
      b, l, hiFinite, arith::SubFOp::create(b, l, aHi, aLo),
      arith::SubFOp::create(b, l, aLo,
                            magnitude(wide(fromBits(step(loBits, -1))))));
  Value p =
      arith::DivFOp::create(b, l, arith::SubFOp::create(b, l, ax, aLo), gap);
  Value up = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, u, p);
  if (saturate)
    up = arith::AndIOp::create(b, l, up, hiFinite);
  return arith::SelectOp::create(b, l, up, hi, lo);
}
