//===- Decompose.cpp - Expand composite ops into primitives ---------------===//
//
// One pattern per composite op, each building the textbook formula out of
// primitive Graph IR ops. Patterns only fire when the shapes they need to
// create are determined (no `?` dims), and they keep numeric policies on the
// contractions they emit.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::tessera::tgraph {
#define GEN_PASS_DEF_TGRAPHDECOMPOSE
#include "tessera/Dialect/TGraph/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tgraph

using namespace mlir;
using namespace mlir::tessera::tgraph;

namespace {

/// Emits primitive ops at one location.
class Emitter {
public:
  Emitter(PatternRewriter &rewriter, Location loc)
      : b(rewriter), loc(loc) {}

  /// A 0-d constant of `element` (broadcasts against anything).
  Value scalar(Type element, double v) {
    auto type = RankedTensorType::get({}, element);
    Attribute a = isa<FloatType>(element)
                      ? Attribute(FloatAttr::get(element, v))
                      : Attribute(IntegerAttr::get(element, int64_t(v)));
    return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, a));
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return MaxOp::create(b, loc, x, y); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value exp(Value x) { return ExpOp::create(b, loc, x); }
  Value log(Value x) { return LogOp::create(b, loc, x); }
  Value erf(Value x) { return ErfOp::create(b, loc, x); }
  Value tanh(Value x) { return TanhOp::create(b, loc, x); }
  Value sigmoid(Value x) { return SigmoidOp::create(b, loc, x); }
  Value rsqrt(Value x) { return RsqrtOp::create(b, loc, x); }
  Value square(Value x) { return SquareOp::create(b, loc, x); }
  Value compare(CompareDirection d, Value x, Value y) {
    return CompareOp::create(b, loc, d, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return SelectOp::create(b, loc, c, x, y);
  }
  Value reduceSum(Value x, ArrayRef<int64_t> dims, bool keep) {
    return ReduceSumOp::create(b, loc, x, dims, keep, /*stable=*/false,
                               PolicyAttr());
  }
  Value reduceMean(Value x, ArrayRef<int64_t> dims, bool keep) {
    return ReduceMeanOp::create(b, loc, x, dims, keep, /*stable=*/false,
                                PolicyAttr());
  }
  Value reduceMax(Value x, ArrayRef<int64_t> dims, bool keep) {
    return ReduceMaxOp::create(b, loc, x, dims, keep);
  }
  Value cast(Value x, Type element) {
    auto t = llvm::cast<RankedTensorType>(x.getType());
    if (t.getElementType() == element)
      return x;
    return CastOp::create(b, loc, t.clone(element), x, PolicyAttr());
  }
  Type elementOf(Value v) { return getElementTypeOrSelf(v.getType()); }

  PatternRewriter &b;
  Location loc;
};

/// True if every dim of `type` is known (a created tensor needs that).
static bool isDetermined(Type type) {
  return llvm::none_of(getShape(type).dims,
                       [](const shape::DimExpr &d) { return d.isUnknown(); });
}

/// The dims [from, rank).
static SmallVector<int64_t> trailingDims(int64_t from, int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(from, rank));
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), or with tanh:
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
static LogicalResult decomposeGelu(GeluOp op, PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  Value x = op.getX();
  Type t = e.elementOf(x);
  Value inner;
  if (op.getApproximate()) {
    Value cube = e.mul(e.square(x), x);
    Value poly = e.add(x, e.mul(e.scalar(t, 0.044715), cube));
    inner = e.tanh(e.mul(e.scalar(t, std::sqrt(2.0 / M_PI)), poly));
  } else {
    inner = e.erf(e.mul(x, e.scalar(t, M_SQRT1_2)));
  }
  Value half = e.mul(e.scalar(t, 0.5), x);
  rewriter.replaceOp(op, e.mul(half, e.add(e.scalar(t, 1.0), inner)));
  return success();
}

// silu(x) = x * sigmoid(x)
static LogicalResult decomposeSilu(SiluOp op, PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  rewriter.replaceOp(op, e.mul(op.getX(), e.sigmoid(op.getX())));
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

// softmax(x) = exp(x - max) / sum(exp(x - max))
static LogicalResult decomposeSoftmax(SoftmaxOp op, PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  int64_t d = op.getDim();
  Value ex = e.exp(e.sub(op.getX(), e.reduceMax(op.getX(), {d}, true)));
  rewriter.replaceOp(op, e.div(ex, e.reduceSum(ex, {d}, true)));
  return success();
}

// log_softmax(x) = (x - max) - log(sum(exp(x - max)))
static LogicalResult decomposeLogSoftmax(LogSoftmaxOp op,
                                         PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  int64_t d = op.getDim();
  Value shifted = e.sub(op.getX(), e.reduceMax(op.getX(), {d}, true));
  Value lse = e.log(e.reduceSum(e.exp(shifted), {d}, true));
  rewriter.replaceOp(op, e.sub(shifted, lse));
  return success();
}

/// max over `d` (kept), with -inf replaced by 0 so fully masked rows do not
/// produce inf - inf.
static Value safeMax(Emitter &e, Value x, int64_t d) {
  Type t = e.elementOf(x);
  Value m = e.reduceMax(x, {d}, true);
  Value isNegInf = e.compare(CompareDirection::eq, m,
                             e.scalar(t, -INFINITY));
  return e.select(isNegInf, e.scalar(t, 0.0), m);
}

// softmax_safe: as softmax, but rows that are all -inf give 0 (not NaN).
static LogicalResult decomposeSoftmaxSafe(SoftmaxSafeOp op,
                                          PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  int64_t d = op.getDim();
  Type t = e.elementOf(op.getX());
  Value ex = e.exp(e.sub(op.getX(), safeMax(e, op.getX(), d)));
  Value sum = e.reduceSum(ex, {d}, true);
  Value empty = e.compare(CompareDirection::eq, sum, e.scalar(t, 0.0));
  rewriter.replaceOp(op, e.select(empty, e.scalar(t, 0.0), e.div(ex, sum)));
  return success();
}

// logsumexp(x) = max + log(sum(exp(x - max))); the safe form shifts by 0 on
// fully masked rows, so they give log(0) = -inf.
template <typename OpTy>
static LogicalResult decomposeLogsumexp(OpTy op, PatternRewriter &rewriter,
                                        bool safe) {
  Emitter e(rewriter, op.getLoc());
  int64_t d = op.getDim();
  Value m = safe ? safeMax(e, op.getX(), d)
                 : e.reduceMax(op.getX(), {d}, true);
  Value lse = e.add(m, e.log(e.reduceSum(e.exp(e.sub(op.getX(), m)), {d}, true)));
  if (!op.getKeepdims())
    lse = ReshapeOp::create(rewriter, op.getLoc(), op.getType(), lse);
  rewriter.replaceOp(op, lse);
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization and reductions
//===----------------------------------------------------------------------===//

// reduce_mean(x) = reduce_sum(x) / (product of the reduced dims)
static LogicalResult decomposeMean(ReduceMeanOp op, PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  Type t = e.elementOf(op.getX());
  auto scalarType = RankedTensorType::get({}, t);
  Value count = e.scalar(t, 1.0);
  for (int64_t d : op.getDims())
    count = e.mul(count, DimSizeOp::create(rewriter, op.getLoc(), scalarType,
                                           op.getX(), d));
  Value sum = ReduceSumOp::create(rewriter, op.getLoc(), op.getX(),
                                  op.getDims(), op.getKeepdims(),
                                  op.getStable(), op.getPolicyAttr());
  rewriter.replaceOp(op, e.div(sum, count));
  return success();
}

/// y * scale + bias for whichever of them are present.
static Value affine(Emitter &e, Value y, Value scale, Value bias) {
  if (scale)
    y = e.mul(y, scale);
  if (bias)
    y = e.add(y, bias);
  return y;
}

// layernorm: (x - mean) * rsqrt(var + eps) * scale + bias over [axis, rank).
// The safe form computes in f32 and clamps the variance at 0.
template <typename OpTy>
static LogicalResult decomposeLayerNorm(OpTy op, PatternRewriter &rewriter,
                                        bool safe) {
  Emitter e(rewriter, op.getLoc());
  Type storage = e.elementOf(op.getX());
  Type compute = safe && !storage.isF64() ? rewriter.getF32Type() : storage;
  Value x = e.cast(op.getX(), compute);
  SmallVector<int64_t> dims =
      trailingDims(op.getAxis(), cast<RankedTensorType>(x.getType()).getRank());
  Value centered = e.sub(x, e.reduceMean(x, dims, true));
  Value var = e.reduceMean(e.square(centered), dims, true);
  if (safe)
    var = e.max(var, e.scalar(compute, 0.0));
  Value eps = e.scalar(compute, op.getEpsilon().convertToDouble());
  Value y = e.mul(centered, e.rsqrt(e.add(var, eps)));
  Value scale = op.getScale() ? e.cast(op.getScale(), compute) : Value();
  Value bias = op.getBias() ? e.cast(op.getBias(), compute) : Value();
  rewriter.replaceOp(op, e.cast(affine(e, y, scale, bias), storage));
  return success();
}

// rmsnorm: x * rsqrt(mean(x^2) + eps) * scale over [axis, rank).
template <typename OpTy>
static LogicalResult decomposeRMSNorm(OpTy op, PatternRewriter &rewriter,
                                      bool safe) {
  Emitter e(rewriter, op.getLoc());
  Type storage = e.elementOf(op.getX());
  Type compute = safe && !storage.isF64() ? rewriter.getF32Type() : storage;
  Value x = e.cast(op.getX(), compute);
  SmallVector<int64_t> dims =
      trailingDims(op.getAxis(), cast<RankedTensorType>(x.getType()).getRank());
  Value ms = e.reduceMean(e.square(x), dims, true);
  Value eps = e.scalar(compute, op.getEpsilon().convertToDouble());
  Value y = e.mul(x, e.rsqrt(e.add(ms, eps)));
  Value scale = op.getScale() ? e.cast(op.getScale(), compute) : Value();
  rewriter.replaceOp(op, e.cast(affine(e, y, scale, Value()), storage));
  return success();
}

//===----------------------------------------------------------------------===//
// Attention, losses, lookups
//===----------------------------------------------------------------------===//

// attention: softmax(q k^T * scale [+ causal mask]) v
static LogicalResult decomposeAttention(AttentionOp op,
                                        PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  Location loc = op.getLoc();
  auto qType = cast<RankedTensorType>(op.getQuery().getType());
  int64_t r = qType.getRank();
  shape::TensorShape q = getShape(qType), k = getShape(op.getKey().getType());
  const shape::DimExpr &sq = q.dims[r - 2], &sk = k.dims[r - 2];
  if (op.getCausal() && (sq.isUnknown() || sk.isUnknown()))
    return rewriter.notifyMatchFailure(op, "causal mask needs known lengths");
  Type t = qType.getElementType();
  double scale = op.getScale() ? op.getScale()->convertToDouble()
                               : 1.0 / std::sqrt(double(qType.getShape()[r - 1]));
  if (!op.getScale() && ShapedType::isDynamic(qType.getShape()[r - 1]))
    return rewriter.notifyMatchFailure(op, "default scale needs a static D");
  // scores [..., Sq, Sk]
  TypeInference ti(op.getContext(), loc, MatmulOp::getOperationName());
  auto scores = shape::inferMatmul(ti.diag(), q, k, false, true);
  if (!scores)
    return rewriter.notifyMatchFailure(op, ti.message());
  Value s = MatmulOp::create(rewriter, loc, getTensorType(*scores, t),
                             op.getQuery(), op.getKey(), false, true,
                             op.getPolicyAttr());
  s = e.mul(s, e.scalar(t, scale));
  if (op.getCausal()) {
    Type i64 = rewriter.getI64Type();
    Value row = IotaOp::create(rewriter, loc,
                               getTensorType(shape::TensorShape({sq, sk}), i64), 0);
    Value col = IotaOp::create(rewriter, loc,
                               getTensorType(shape::TensorShape({sq, sk}), i64), 1);
    auto scalarI64 = RankedTensorType::get({}, i64);
    Value offset = e.sub(
        DimSizeOp::create(rewriter, loc, scalarI64, op.getKey(), r - 2),
        DimSizeOp::create(rewriter, loc, scalarI64, op.getQuery(), r - 2));
    Value visible =
        e.compare(CompareDirection::le, col, e.add(row, offset));
    s = e.select(visible, s, e.scalar(t, -INFINITY));
  }
  Value p = SoftmaxOp::create(rewriter, loc, s, r - 1);
  rewriter.replaceOpWithNewOp<MatmulOp>(op, op.getType(), p, op.getValue(),
                                        false, false, op.getPolicyAttr());
  return success();
}

// cross_entropy = reduction(-sum_c labels_c * log_softmax(logits)_c)
static LogicalResult decomposeCrossEntropy(CrossEntropyOp op,
                                           PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  auto logitsType = cast<RankedTensorType>(op.getLogits().getType());
  int64_t c = logitsType.getRank() - 1;
  Value labels = op.getLabels();
  if (!isa<FloatType>(e.elementOf(labels))) {
    if (ShapedType::isDynamic(logitsType.getShape()[c]) ||
        !isDetermined(logitsType))
      return rewriter.notifyMatchFailure(op, "one-hot needs known dims");
    labels = OneHotOp::create(rewriter, op.getLoc(), logitsType, labels,
                              logitsType.getShape()[c]);
  }
  Value logp = LogSoftmaxOp::create(rewriter, op.getLoc(), op.getLogits(), c);
  Value nll = e.neg(e.reduceSum(e.mul(labels, logp), {c}, false));
  int64_t rank = cast<RankedTensorType>(nll.getType()).getRank();
  SmallVector<int64_t> all = trailingDims(0, rank);
  switch (op.getReduction()) {
  case LossReduction::none:
    break;
  case LossReduction::sum:
    nll = e.reduceSum(nll, all, false);
    break;
  case LossReduction::mean:
    nll = e.reduceMean(nll, all, false);
    break;
  }
  rewriter.replaceOp(op, nll);
  return success();
}

// embedding(table, ids) = gather(table, ids, dim 0)
static LogicalResult decomposeEmbedding(EmbeddingOp op,
                                        PatternRewriter &rewriter) {
  rewriter.replaceOpWithNewOp<GatherOp>(op, op.getTable(), op.getIds(), 0);
  return success();
}

// one_hot(ids) = cast(reshape(ids, [..., 1]) == iota(C))
static LogicalResult decomposeOneHot(OneHotOp op, PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  auto idsType = cast<RankedTensorType>(op.getIds().getType());
  shape::TensorShape expanded = getShape(idsType);
  expanded.dims.push_back(shape::DimExpr::constant(1));
  Value ids = ReshapeOp::create(
      rewriter, op.getLoc(), getTensorType(expanded, idsType.getElementType()),
      op.getIds());
  Value classes = IotaOp::create(
      rewriter, op.getLoc(),
      RankedTensorType::get({int64_t(op.getNumClasses())}, idsType.getElementType()), 0);
  Value hot = e.compare(CompareDirection::eq, ids, classes);
  rewriter.replaceOp(op, e.cast(hot, op.getType().getElementType()));
  return success();
}

/// Adds `fn` for the op named `name` if `only` is empty or names it.
template <typename OpTy, typename Fn>
static void addIfSelected(RewritePatternSet &patterns,
                          ArrayRef<std::string> only, Fn fn) {
  StringRef name = OpTy::getOperationName().drop_front(strlen("tgraph."));
  if (!only.empty() && !llvm::is_contained(only, name.str()))
    return;
  patterns.add(fn);
}

} // namespace

void mlir::tessera::tgraph::populateDecompositionPatterns(
    RewritePatternSet &patterns, ArrayRef<std::string> only) {
  addIfSelected<GeluOp>(patterns, only, decomposeGelu);
  addIfSelected<SiluOp>(patterns, only, decomposeSilu);
  addIfSelected<SoftmaxOp>(patterns, only, decomposeSoftmax);
  addIfSelected<LogSoftmaxOp>(patterns, only, decomposeLogSoftmax);
  addIfSelected<SoftmaxSafeOp>(patterns, only, decomposeSoftmaxSafe);
  addIfSelected<LogsumexpOp>(
      patterns, only, +[](LogsumexpOp op, PatternRewriter &r) {
        return decomposeLogsumexp(op, r, false);
      });
  addIfSelected<LogsumexpSafeOp>(
      patterns, only, +[](LogsumexpSafeOp op, PatternRewriter &r) {
        return decomposeLogsumexp(op, r, true);
      });
  addIfSelected<ReduceMeanOp>(patterns, only, decomposeMean);
  addIfSelected<LayerNormOp>(
      patterns, only, +[](LayerNormOp op, PatternRewriter &r) {
        return decomposeLayerNorm(op, r, false);
      });
  addIfSelected<LayerNormSafeOp>(
      patterns, only, +[](LayerNormSafeOp op, PatternRewriter &r) {
        return decomposeLayerNorm(op, r, true);
      });
  addIfSelected<RMSNormOp>(
      patterns, only, +[](RMSNormOp op, PatternRewriter &r) {
        return decomposeRMSNorm(op, r, false);
      });
  addIfSelected<RMSNormSafeOp>(
      patterns, only, +[](RMSNormSafeOp op, PatternRewriter &r) {
        return decomposeRMSNorm(op, r, true);
      });
  addIfSelected<AttentionOp>(patterns, only, decomposeAttention);
  addIfSelected<CrossEntropyOp>(patterns, only, decomposeCrossEntropy);
  addIfSelected<EmbeddingOp>(patterns, only, decomposeEmbedding);
  addIfSelected<OneHotOp>(patterns, only, decomposeOneHot);
}

namespace {
/// The composite ops the pass knows, for checking the `ops` option.
constexpr const char *kComposites[] = {
    "gelu",   "silu",          "softmax",   "log_softmax",    "softmax_safe",
    "logsumexp", "logsumexp_safe", "reduce_mean", "layernorm", "layernorm_safe",
    "rmsnorm", "rmsnorm_safe", "attention", "cross_entropy", "embedding",
    "one_hot"};

struct TGraphDecomposePass
    : public mlir::tessera::tgraph::impl::TGraphDecomposeBase<TGraphDecomposePass> {
  using Base::Base;
  void runOnOperation() override {
    for (const std::string &name : ops)
      if (!llvm::is_contained(kComposites, StringRef(name))) {
        getOperation()->emitError()
            << "-tessera-tgraph-decompose: unknown composite op '" << name
            << "'; expected one of "
            << llvm::join(ArrayRef<const char *>(kComposites), ", ");
        return signalPassFailure();
      }
    RewritePatternSet patterns(&getContext());
    std::vector<std::string> only(ops.begin(), ops.end());
    populateDecompositionPatterns(patterns, only);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
