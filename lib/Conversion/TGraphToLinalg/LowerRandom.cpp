//===- LowerRandom.cpp - Stateless Philox random numbers ------------------===//
//
// A key is two 32-bit words (tensor<2xi32>). Every random value is one
// Philox 4x32-10 block of the key and a 128-bit counter, so any element can
// be computed on its own, on any thread, in any order:
//
//   rng.key {seed}          key = (seed mod 2^32, seed div 2^32)
//   rng.split -> key_i      words 0, 1 of Philox(key, (i, 0, 1, 0))
//   rng.fold_in(d)          words 0, 1 of Philox(key, (lo(d), hi(d), 2, 0))
//   element n (row-major)   Philox(key, (lo(n), hi(n), 0, 0)) = (w0..w3)
//
// Samples use 53-bit fractions u = ((w0 << 21) | (w1 >> 11)) * 2^-53 in
// [0, 1), computed in f64 and rounded once to the element type:
//   uniform    low + (high - low) * u, kept inside [low, high) after rounding
//   normal     mean + stddev * sqrt(-2 ln(1 - u)) * cos(2 pi u'), with u'
//              the fraction of (w2, w3) (Box-Muller)
//   bernoulli  u < p
//
// Casts with the stochastic_round policy draw one block per element too,
// under a key of their own (a hash of the function's name and the op's
// position among its stochastic casts) and the counter (lo(n), hi(n), 3, 0):
// x rounds to its neighbour toward zero, lo, or away from zero, hi, taking
// hi when u < (|x| - |lo|) / (|hi| - |lo|), so that E[cast(x)] = x exactly.
// The results are reproducible (the same input rounds the same way in every
// call), like every Tessera program.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "tessera/Conversion/RandomBits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;
using namespace mlir::tessera::tgraph::lowering;
using mlir::tessera::i32Constant;
using mlir::tessera::philox;
using mlir::tessera::PhiloxWords;
using mlir::tessera::roundStochastically;

namespace {

using Words = PhiloxWords;

/// The two words of a key tensor.
std::pair<Value, Value> keyWords(OpBuilder &b, Location loc, Value key) {
  auto at = [&](int64_t i) {
    Value idx = arith::ConstantIndexOp::create(b, loc, i);
    return tensor::ExtractOp::create(b, loc, key, idx).getResult();
  };
  return {at(0), at(1)};
}

/// The low and high words of a 64-bit integer.
std::pair<Value, Value> split64(OpBuilder &b, Location loc, Value v) {
  Value lo = arith::TruncIOp::create(b, loc, b.getI32Type(), v);
  Value shift = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(32));
  Value hi = arith::TruncIOp::create(b, loc, b.getI32Type(),
                                     arith::ShRUIOp::create(b, loc, v, shift));
  return {lo, hi};
}

Value makeKey(OpBuilder &b, Location loc, Value w0, Value w1) {
  auto type = RankedTensorType::get({2}, b.getI32Type());
  return tensor::FromElementsOp::create(b, loc, type, ValueRange{w0, w1});
}

/// A 53-bit fraction in [0, 1) from two words, as f64.
Value fraction(OpBuilder &b, Location loc, Value hiWord, Value loWord) {
  return mlir::tessera::uniformFraction(b, loc, b.getF64Type(), hiWord, loWord);
}

/// Row-major strides of `shaped`'s dims (at run time).
SmallVector<Value> rowMajorStrides(OpBuilder &b, Location loc, Value shaped) {
  int64_t r = cast<ShapedType>(shaped.getType()).getRank();
  SmallVector<Value> strides(r);
  Value stride = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t d = r - 1; d >= 0; --d) {
    strides[d] = stride;
    stride = arith::MulIOp::create(b, loc, stride, dimOf(b, loc, shaped, d));
  }
  return strides;
}

/// Inside a linalg.generic: the Philox block of the current element, whose
/// counter is (lo(n), hi(n), stream, 0) for its row-major index n.
Words elementBlock(OpBuilder &b, Location l, ArrayRef<Value> strides, Value k0,
                   Value k1, uint32_t stream) {
  Value n = arith::ConstantIndexOp::create(b, l, 0);
  for (auto [d, stride] : llvm::enumerate(strides))
    n = arith::AddIOp::create(
        b, l, n,
        arith::MulIOp::create(b, l, linalg::IndexOp::create(b, l, d), stride));
  Value n64 = arith::IndexCastUIOp::create(b, l, b.getI64Type(), n);
  auto [lo, hi] = split64(b, l, n64);
  return philox(b, l, k0, k1,
                {lo, hi, i32Constant(b, l, stream), i32Constant(b, l, 0)});
}

struct KeyLowering : public OpConversionPattern<RngKeyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RngKeyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    uint64_t seed = static_cast<uint64_t>(op.getSeed());
    Location loc = op.getLoc();
    rewriter.replaceOp(
        op, makeKey(rewriter, loc, i32Constant(rewriter, loc, uint32_t(seed)),
                    i32Constant(rewriter, loc, uint32_t(seed >> 32))));
    return success();
  }
};

struct SplitLowering : public OpConversionPattern<RngSplitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RngSplitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto [k0, k1] = keyWords(rewriter, loc, adaptor.getKey());
    Value zero = i32Constant(rewriter, loc, 0);
    Value tag = i32Constant(rewriter, loc, 1);
    SmallVector<Value> keys;
    for (size_t i = 0; i < op.getKeys().size(); ++i) {
      Words w =
          philox(rewriter, loc, k0, k1,
                 {i32Constant(rewriter, loc, uint32_t(i)), zero, tag, zero});
      keys.push_back(makeKey(rewriter, loc, w[0], w[1]));
    }
    rewriter.replaceOp(op, keys);
    return success();
  }
};

struct FoldInLowering : public OpConversionPattern<RngFoldInOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RngFoldInOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto [k0, k1] = keyWords(rewriter, loc, adaptor.getKey());
    Value d = tensor::ExtractOp::create(rewriter, loc, adaptor.getData(),
                                        ValueRange{});
    if (!d.getType().isInteger(64))
      d = arith::ExtSIOp::create(rewriter, loc, rewriter.getI64Type(), d);
    auto [lo, hi] = split64(rewriter, loc, d);
    Value zero = i32Constant(rewriter, loc, 0);
    Words w = philox(rewriter, loc, k0, k1,
                     {lo, hi, i32Constant(rewriter, loc, 2), zero});
    rewriter.replaceOp(op, makeKey(rewriter, loc, w[0], w[1]));
    return success();
  }
};

/// Fills the result with `sample(words)` of each element's block.
template <typename OpTy>
struct SampleLowering : public OpConversionPattern<OpTy> {
  SampleLowering(LoweringContext &ctx, MLIRContext *mlir)
      : OpConversionPattern<OpTy>(ctx.types, mlir), ctx(ctx) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type =
        this->getTypeConverter()->template convertType<RankedTensorType>(
            op.getType());
    FailureOr<SmallVector<Value>> sizes =
        dynamicSizes(rewriter, op, getShape(op.getType()), type, ctx.symbols);
    if (failed(sizes))
      return failure();
    Value out = emptyTensor(rewriter, loc, type, *sizes);
    int64_t r = type.getRank();
    SmallVector<Value> strides = rowMajorStrides(rewriter, loc, out);
    std::pair<Value, Value> key = keyWords(rewriter, loc, adaptor.getKey());
    SmallVector<AffineMap> maps{rewriter.getMultiDimIdentityMap(r)};
    SmallVector<utils::IteratorType> par(r, utils::IteratorType::parallel);
    Type element = type.getElementType();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{}, out, maps, par,
        [&](OpBuilder &b, Location l, ValueRange) {
          Words w = elementBlock(b, l, strides, key.first, key.second, 0);
          linalg::YieldOp::create(b, l, sample(b, l, op, w, element));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }

  /// The largest value of `t` below `v` (or `v` itself when `below` is
  /// false: the smallest value of `t` at or above it).
  static Value boundary(OpBuilder &b, Location loc, FloatType t, double v,
                        bool below) {
    APFloat f(v);
    bool lost;
    f.convert(t.getFloatSemantics(),
              below ? APFloat::rmTowardNegative : APFloat::rmTowardPositive,
              &lost);
    if (below && f.convertToDouble() >= v)
      f.next(/*nextDown=*/true);
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, f));
  }

  static Value sample(OpBuilder &b, Location loc, RngUniformOp op, Words w,
                      Type element) {
    double lo = op.getLow().convertToDouble();
    double hi = op.getHigh().convertToDouble();
    Value u = fraction(b, loc, w[0], w[1]);
    Value x = arith::AddFOp::create(
        b, loc, arith::ConstantOp::create(b, loc, b.getF64FloatAttr(lo)),
        arith::MulFOp::create(
            b, loc, u,
            arith::ConstantOp::create(b, loc, b.getF64FloatAttr(hi - lo))));
    auto t = cast<FloatType>(element);
    Value v = convertScalar(b, loc, x, t);
    // Rounding to a narrower type must not leave [low, high).
    v = arith::MinimumFOp::create(b, loc, v, boundary(b, loc, t, hi, true));
    return arith::MaximumFOp::create(b, loc, v, boundary(b, loc, t, lo, false));
  }

  static Value sample(OpBuilder &b, Location loc, RngNormalOp op, Words w,
                      Type element) {
    auto f64 = [&](double v) {
      return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v))
          .getResult();
    };
    Value u1 = arith::SubFOp::create(b, loc, f64(1.0),
                                     fraction(b, loc, w[0], w[1])); // (0, 1]
    Value u2 = fraction(b, loc, w[2], w[3]);
    Value radius = math::SqrtOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, f64(-2.0),
                              math::LogOp::create(b, loc, u1)));
    Value angle = arith::MulFOp::create(b, loc, f64(2.0 * M_PI), u2);
    Value z = arith::MulFOp::create(b, loc, radius,
                                    math::CosOp::create(b, loc, angle));
    Value x = arith::AddFOp::create(
        b, loc, f64(op.getMean().convertToDouble()),
        arith::MulFOp::create(b, loc, f64(op.getStddev().convertToDouble()),
                              z));
    return convertScalar(b, loc, x, element);
  }

  static Value sample(OpBuilder &b, Location loc, RngBernoulliOp op, Words w,
                      Type element) {
    Value u = fraction(b, loc, w[0], w[1]);
    Value p = arith::ConstantOp::create(b, loc, op.getPAttr());
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, u, p);
  }

  LoweringContext &ctx;
};

/// The stochastic_round cast (see the file comment).
struct StochasticCastLowering : public OpConversionPattern<CastOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    PolicyAttr policy = op.getPolicyAttr();
    if (!policy || !policy.getStochasticRound())
      return failure();
    Location loc = op.getLoc();
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    auto target = dyn_cast<FloatType>(type.getElementType());
    Value x = adaptor.getX();
    if (!target || !isa<FloatType>(getElementTypeOrSelf(x.getType())))
      return rewriter.notifyMatchFailure(op, "verified as a float cast");
    int64_t r = type.getRank();
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < r; ++d)
      if (type.isDynamicDim(d))
        sizes.push_back(dimOf(rewriter, loc, x, d));
    Value out = emptyTensor(rewriter, loc, type, sizes);
    SmallVector<Value> strides = rowMajorStrides(rewriter, loc, x);
    FailureOr<uint64_t> stamped = keyOf(op);
    if (failed(stamped))
      return rewriter.notifyMatchFailure(op, "no key stamped");
    uint64_t key = *stamped;
    bool saturate = policy.getSaturate();
    SmallVector<AffineMap> maps(2, rewriter.getMultiDimIdentityMap(r));
    SmallVector<utils::IteratorType> par(r, utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, x, out, maps, par,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Words w =
              elementBlock(b, l, strides, i32Constant(b, l, uint32_t(key)),
                           i32Constant(b, l, uint32_t(key >> 32)), 3);
          Value u = fraction(b, l, w[0], w[1]);
          linalg::YieldOp::create(
              b, l,
              roundStochastically(b, l,
                                  convertScalar(b, l, args[0], b.getF64Type()),
                                  target, u, saturate));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }

  /// The key stampStochasticKeys gave `op` before the conversion started
  /// (so copies a lowering makes, such as a solve body evaluated twice,
  /// draw the same bits).
  static FailureOr<uint64_t> keyOf(CastOp op) {
    auto stamp = op->getAttrOfType<IntegerAttr>(kKeyAttr);
    if (!stamp)
      return failure();
    return stamp.getValue().getZExtValue();
  }

public:
  static constexpr StringLiteral kKeyAttr = "tgraph.stochastic_key";
};

} // namespace

void mlir::tessera::tgraph::lowering::stampStochasticKeys(ModuleOp module) {
  // A hash of the function's name and the cast's position among the
  // function's stochastic casts (not its location: moving the source file
  // must not change the results).
  for (auto fn : module.getOps<func::FuncOp>()) {
    int64_t position = 0;
    fn.walk([&](CastOp op) {
      PolicyAttr policy = op.getPolicyAttr();
      if (!policy || !policy.getStochasticRound())
        return;
      std::string text = (fn.getSymName() + "#" + Twine(position++)).str();
      op->setAttr(StochasticCastLowering::kKeyAttr,
                  IntegerAttr::get(IntegerType::get(op.getContext(), 64),
                                   APInt(64, llvm::xxh3_64bits(text))));
    });
  }
}

void mlir::tessera::tgraph::lowering::populateRandomPatterns(
    LoweringContext &ctx, RewritePatternSet &patterns) {
  MLIRContext *mlir = patterns.getContext();
  patterns
      .add<KeyLowering, SplitLowering, FoldInLowering, StochasticCastLowering>(
          ctx.types, mlir);
  patterns.add<SampleLowering<RngUniformOp>, SampleLowering<RngNormalOp>,
               SampleLowering<RngBernoulliOp>>(ctx, mlir);
}
