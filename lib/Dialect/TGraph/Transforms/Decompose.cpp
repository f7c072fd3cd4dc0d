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
  Emitter(PatternRewriter &rewriter, Location loc) : b(rewriter), loc(loc) {}

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
  Value reduceSum(Value x, ArrayRef<int64_t> dims, bool keep,
                  PolicyAttr policy = {}) {
    return ReduceSumOp::create(b, loc, x, dims, keep, /*stable=*/false, policy);
  }
  Value reduceMean(Value x, ArrayRef<int64_t> dims, bool keep,
                   PolicyAttr policy = {}) {
    return ReduceMeanOp::create(b, loc, x, dims, keep, /*stable=*/false,
                                policy);
  }
  Value reduceMax(Value x, ArrayRef<int64_t> dims, bool keep) {
    return ReduceMaxOp::create(b, loc, x, dims, keep);
  }
  Value cast(Value x, Type element, PolicyAttr policy = {}) {
    auto t = llvm::cast<RankedTensorType>(x.getType());
    if (t.getElementType() == element)
      return x;
    return CastOp::create(b, loc, t.clone(element), x, policy);
  }
  /// The most negative value of `element`: -inf, or the lowest finite value
  /// for types without infinity (f8E4M3FN), where -inf would become NaN.
  Value lowest(Type element) {
    const llvm::fltSemantics &sem =
        llvm::cast<FloatType>(element).getFloatSemantics();
    APFloat v = APFloat::semanticsHasInf(sem)
                    ? APFloat::getInf(sem, /*Negative=*/true)
                    : APFloat::getLargest(sem, /*Negative=*/true);
    auto type = RankedTensorType::get({}, element);
    return ConstantOp::create(
        b, loc, type, DenseElementsAttr::get(type, FloatAttr::get(element, v)));
  }
  Type elementOf(Value v) { return getElementTypeOrSelf(v.getType()); }

  PatternRewriter &b;
  Location loc;
};

/// The type a composite computes in: the policy's accumulation type, else
/// f32 for the safe forms and for means of narrow floats, else the storage
/// type.
static Type computeType(Type storage, PolicyAttr policy, bool widen) {
  if (policy && policy.getAccum())
    return policy.getAccum();
  Type f32 = Float32Type::get(storage.getContext());
  if (widen && isa<FloatType>(storage) && storage != f32 &&
      isExactWidening(storage, f32))
    return f32;
  return storage;
}

/// The parts of `policy` that apply once the composite has computed in its
/// accumulation type: loss_scale on the final reduction...
static PolicyAttr lossPart(PolicyAttr policy) {
  if (!policy || !policy.getLossScale())
    return {};
  return PolicyAttr::get(policy.getContext(), Type(), false,
                         policy.getLossScale(), false);
}

/// ...and rounding (stochastic_round, saturate) on the final cast.
static PolicyAttr roundingPart(PolicyAttr policy) {
  if (!policy || (!policy.getStochasticRound() && !policy.getSaturate()))
    return {};
  return PolicyAttr::get(policy.getContext(), Type(),
                         policy.getStochasticRound(), FloatAttr(),
                         policy.getSaturate());
}

/// A composite expands only when its declared result types are exactly the
/// inferred ones; otherwise the expansion would change the types its users
/// see (run -tessera-tgraph-infer-shapes first).
static LogicalResult requireInferredTypes(Operation *op,
                                          PatternRewriter &rewriter) {
  auto shaped = dyn_cast<ShapeInferenceOpInterface>(op);
  if (!shaped)
    return success();
  TypeInference ti(op->getContext(), op->getLoc(), op->getName().getStringRef(),
                   op->getResultTypes());
  if (failed(shaped.inferResultTypes(ti)) ||
      TypeRange(ti.getResults()) != op->getResultTypes())
    return rewriter.notifyMatchFailure(
        op, "result types are less refined than inferred");
  return success();
}

/// The dims [from, rank).
static SmallVector<int64_t> trailingDims(int64_t from, int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(from, rank));
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), or with tanh:
// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). The tanh form is
// computed as x sigmoid(2u), the same function (1 + tanh(u) = 2 sigmoid(2u))
// with one exp in place of tanh's rational polynomial, and the sigmoid in
// its stable form: with e = exp(-|2u|) in (0, 1], sigmoid(2u) = (2u >= 0 ?
// 1 : e) / (1 + e). Nothing overflows (for x << 0, e underflows and gelu is
// -0), and the divisor stays in [1, 2], where a GPU's IEEE division takes
// its fast path (1 + exp(-2u) overflowing to infinity sent every warp of a
// fused GEMM epilogue down the slow one).
static LogicalResult decomposeGelu(GeluOp op, PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  Value x = op.getX();
  Type t = e.elementOf(x);
  if (op.getApproximate()) {
    double c = std::sqrt(2.0 / M_PI);
    // 2u = x (2c + 2c 0.044715 x^2)
    Value twoU =
        e.mul(x, e.add(e.mul(e.scalar(t, 2.0 * c * 0.044715), e.square(x)),
                       e.scalar(t, 2.0 * c)));
    Value small = e.exp(e.neg(AbsOp::create(rewriter, op.getLoc(), twoU)));
    Value one = e.scalar(t, 1.0);
    Value top = e.select(e.compare(CompareDirection::ge, twoU,
                                   e.scalar(t, 0.0)),
                         one, small);
    rewriter.replaceOp(op, e.mul(x, e.div(top, e.add(one, small))));
    return success();
  }
  Value inner = e.erf(e.mul(x, e.scalar(t, M_SQRT1_2)));
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

// softmax(x) = exp(x - max) * (1 / sum(exp(x - max))): one division per
// row, a multiplication per element (within an ulp of dividing each).
static LogicalResult decomposeSoftmax(SoftmaxOp op, PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  int64_t d = op.getDim();
  Type t = e.elementOf(op.getX());
  Value ex = e.exp(e.sub(op.getX(), e.reduceMax(op.getX(), {d}, true)));
  Value inverse = e.div(e.scalar(t, 1.0), e.reduceSum(ex, {d}, true));
  rewriter.replaceOp(op, e.mul(ex, inverse));
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
static Value safeMax(Emitter &e, Value x, int64_t d, bool keep = true) {
  Type t = e.elementOf(x);
  Value m = e.reduceMax(x, {d}, keep);
  Value isNegInf = e.compare(CompareDirection::eq, m, e.scalar(t, -INFINITY));
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
  bool keep = op.getKeepdims();
  auto shift = [&](bool keepDim) {
    return safe ? safeMax(e, op.getX(), d, keepDim)
                : e.reduceMax(op.getX(), {d}, keepDim);
  };
  // The shift is subtracted with the dim kept; without keepdims the result
  // adds the (recomputed) shift without it, so no reshape is needed.
  Value m = shift(true);
  Value sum = e.reduceSum(e.exp(e.sub(op.getX(), m)), {d}, keep);
  rewriter.replaceOp(op, e.add(keep ? m : shift(false), e.log(sum)));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization and reductions
//===----------------------------------------------------------------------===//

// reduce_mean = reduce_sum / (product of the reduced dim sizes), computed
// in the accumulation type (f32 for narrow floats: a count of 65536 is inf
// in f16) and cast back once.
static LogicalResult decomposeMean(ReduceMeanOp op, PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  Type storage = e.elementOf(op.getX());
  Type t = computeType(storage, op.getPolicyAttr(), /*widen=*/true);
  auto scalarType = RankedTensorType::get({}, t);
  Value x = e.cast(op.getX(), t);
  Value count = e.scalar(t, 1.0);
  for (int64_t d : op.getDims())
    count = e.mul(count, DimSizeOp::create(rewriter, op.getLoc(), scalarType,
                                           op.getX(), d));
  Value sum = ReduceSumOp::create(rewriter, op.getLoc(), x, op.getDims(),
                                  op.getKeepdims(), op.getStable(),
                                  lossPart(op.getPolicyAttr()));
  rewriter.replaceOp(
      op, e.cast(e.div(sum, count), storage, roundingPart(op.getPolicyAttr())));
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
  Type compute = computeType(storage, op.getPolicyAttr(), safe);
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
  rewriter.replaceOp(op, e.cast(affine(e, y, scale, bias), storage,
                                roundingPart(op.getPolicyAttr())));
  return success();
}

// rmsnorm: x * rsqrt(mean(x^2) + eps) * scale over [axis, rank).
template <typename OpTy>
static LogicalResult decomposeRMSNorm(OpTy op, PatternRewriter &rewriter,
                                      bool safe) {
  Emitter e(rewriter, op.getLoc());
  Type storage = e.elementOf(op.getX());
  Type compute = computeType(storage, op.getPolicyAttr(), safe);
  Value x = e.cast(op.getX(), compute);
  SmallVector<int64_t> dims =
      trailingDims(op.getAxis(), cast<RankedTensorType>(x.getType()).getRank());
  Value ms = e.reduceMean(e.square(x), dims, true);
  Value eps = e.scalar(compute, op.getEpsilon().convertToDouble());
  Value y = e.mul(x, e.rsqrt(e.add(ms, eps)));
  Value scale = op.getScale() ? e.cast(op.getScale(), compute) : Value();
  rewriter.replaceOp(op, e.cast(affine(e, y, scale, Value()), storage,
                                roundingPart(op.getPolicyAttr())));
  return success();
}

//===----------------------------------------------------------------------===//
// Attention, losses, lookups
//===----------------------------------------------------------------------===//

// attention: softmax(q k^T * scale [+ causal mask]) v, with the scores,
// softmax and P v in the accumulation type when the policy names one.
/// What both attention expansions start from: the scale, the storage and
/// accumulation types, and the probabilities P.
struct AttentionStart {
  double scale;
  Type storage, compute;
  Value p;
};

template <typename OpTy>
static FailureOr<AttentionStart> startAttention(OpTy op,
                                                PatternRewriter &rewriter) {
  auto scale = attentionScale(op.getQuery(), op.getScale());
  if (!scale)
    return rewriter.notifyMatchFailure(op, "default scale needs a static D");
  Type storage = getElementTypeOrSelf(op.getQuery().getType());
  Type t = computeType(storage, op.getPolicyAttr(), /*widen=*/false);
  std::string why;
  auto p = buildAttentionProbabilities(rewriter, op.getLoc(), op.getQuery(),
                                       op.getKey(), op.getCausal(), *scale, t,
                                       op.getPolicyAttr(), why);
  if (failed(p))
    return rewriter.notifyMatchFailure(op, why);
  return AttentionStart{*scale, storage, t, *p};
}

static LogicalResult decomposeAttention(AttentionOp op,
                                        PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  auto start = startAttention(op, rewriter);
  if (failed(start))
    return failure();
  Type t = start->compute;
  Value v = e.cast(op.getValue(), t);
  shape::TensorShape outShape = getShape(op.getType());
  Value o = MatmulOp::create(rewriter, op.getLoc(), getTensorType(outShape, t),
                             start->p, v, false, false, PolicyAttr());
  rewriter.replaceOp(
      op, e.cast(o, start->storage, roundingPart(op.getPolicyAttr())));
  return success();
}

// attention_grad: with P the attention's probabilities and g the output's
// cotangent, dv = P^T g, dS = P (g v^T - rowsum(P g v^T)) scale, dq = dS k,
// dk = dS^T q; all in the accumulation type.
static LogicalResult decomposeAttentionGrad(AttentionGradOp op,
                                            PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  Location loc = op.getLoc();
  auto start = startAttention(op, rewriter);
  if (failed(start))
    return failure();
  PolicyAttr policy = op.getPolicyAttr();
  Type storage = start->storage, t = start->compute;
  Value p = start->p;
  std::optional<double> scale = start->scale;
  Value q = e.cast(op.getQuery(), t), k = e.cast(op.getKey(), t),
        v = e.cast(op.getValue(), t), g = e.cast(op.getOutputGrad(), t);
  auto typed = [&](Value like) {
    return getTensorType(getShape(like.getType()), t);
  };
  int64_t last = cast<RankedTensorType>(q.getType()).getRank() - 1;
  // (The operands are in the accumulation type already; rounding applies
  // to the final casts.)
  PolicyAttr accum = accumulationPart(policy);
  Value dv = MatmulOp::create(rewriter, loc, typed(op.getValue()), p, g,
                              /*transpose_lhs=*/true, false, accum);
  Value dp = MatmulOp::create(rewriter, loc, p.getType(), g, v, false,
                              /*transpose_rhs=*/true, accum);
  Value rows = e.reduceSum(e.mul(p, dp), {last}, /*keep=*/true);
  Value ds = e.mul(e.mul(p, e.sub(dp, rows)), e.scalar(t, *scale));
  Value dq = MatmulOp::create(rewriter, loc, typed(op.getQuery()), ds, k, false,
                              false, accum);
  Value dk = MatmulOp::create(rewriter, loc, typed(op.getKey()), ds, q,
                              /*transpose_lhs=*/true, false, accum);
  PolicyAttr rounding = roundingPart(policy);
  rewriter.replaceOp(op, {e.cast(dq, storage, rounding),
                          e.cast(dk, storage, rounding),
                          e.cast(dv, storage, rounding)});
  return success();
}

/// `ids [...]` with a trailing unit dim, `[..., 1]`, for comparing against
/// the classes.
static Value expandLastDim(PatternRewriter &rewriter, Location loc, Value ids) {
  auto type = cast<RankedTensorType>(ids.getType());
  shape::TensorShape expanded = getShape(type);
  expanded.dims.push_back(shape::DimExpr::constant(1));
  return BroadcastInDimOp::create(
      rewriter, loc, getTensorType(expanded, type.getElementType()), ids,
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank())));
}

// cross_entropy = reduction(-sum_c labels_c * log_softmax(logits)_c). Class
// indices select log p[label] (a product with one-hot would turn a -inf
// logit of another class into 0 * -inf = NaN); soft labels use
// 0 * log 0 = 0. Computed in the accumulation type; loss_scale goes on the
// final reduction.
static LogicalResult decomposeCrossEntropy(CrossEntropyOp op,
                                           PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  Location loc = op.getLoc();
  auto logitsType = cast<RankedTensorType>(op.getLogits().getType());
  int64_t c = logitsType.getRank() - 1;
  Type storage = logitsType.getElementType();
  Type t = computeType(storage, op.getPolicyAttr(), /*widen=*/false);
  Value logp =
      LogSoftmaxOp::create(rewriter, loc, e.cast(op.getLogits(), t), c);
  Value zero = e.scalar(t, 0.0);
  Value terms;
  if (isa<FloatType>(e.elementOf(op.getLabels()))) {
    Value p = e.cast(op.getLabels(), t);
    Value absent = e.compare(CompareDirection::eq, p, zero);
    terms = e.select(absent, zero, e.mul(p, logp));
  } else {
    // Class indices 0..C-1 (C may be a symbol: the logits bind it).
    Type idType = e.elementOf(op.getLabels());
    shape::TensorShape classShape({getShape(logitsType).dims[c]});
    Value classes = IotaOp::create(
        rewriter, loc, getTensorType(classShape, idType), 0);
    Value hit =
        e.compare(CompareDirection::eq,
                  expandLastDim(rewriter, loc, op.getLabels()), classes);
    terms = e.select(hit, logp, zero);
  }
  Value nll = e.neg(e.reduceSum(terms, {c}, false));
  int64_t rank = cast<RankedTensorType>(nll.getType()).getRank();
  SmallVector<int64_t> all = trailingDims(0, rank);
  PolicyAttr loss = lossPart(op.getPolicyAttr());
  switch (op.getReduction()) {
  case LossReduction::none:
    break;
  case LossReduction::sum:
    nll = e.reduceSum(nll, all, false, loss);
    break;
  case LossReduction::mean:
    nll = e.reduceMean(nll, all, false, loss);
    break;
  }
  rewriter.replaceOp(op,
                     e.cast(nll, storage, roundingPart(op.getPolicyAttr())));
  return success();
}

// embedding(table, ids) = gather(table, ids, dim 0)
static LogicalResult decomposeEmbedding(EmbeddingOp op,
                                        PatternRewriter &rewriter) {
  rewriter.replaceOpWithNewOp<GatherOp>(op, op.getTable(), op.getIds(), 0);
  return success();
}

// one_hot(ids) = cast(ids[..., None] == iota(C))
static LogicalResult decomposeOneHot(OneHotOp op, PatternRewriter &rewriter) {
  Emitter e(rewriter, op.getLoc());
  auto idsType = cast<RankedTensorType>(op.getIds().getType());
  Value classes =
      IotaOp::create(rewriter, op.getLoc(),
                     RankedTensorType::get({int64_t(op.getNumClasses())},
                                           idsType.getElementType()),
                     0);
  Value hot =
      e.compare(CompareDirection::eq,
                expandLastDim(rewriter, op.getLoc(), op.getIds()), classes);
  rewriter.replaceOp(op, e.cast(hot, op.getType().getElementType()));
  return success();
}

static LogicalResult decomposeLogsumexpPlain(LogsumexpOp op,
                                             PatternRewriter &r) {
  return decomposeLogsumexp(op, r, false);
}
static LogicalResult decomposeLogsumexpSafe(LogsumexpSafeOp op,
                                            PatternRewriter &r) {
  return decomposeLogsumexp(op, r, true);
}
static LogicalResult decomposeLayerNormPlain(LayerNormOp op,
                                             PatternRewriter &r) {
  return decomposeLayerNorm(op, r, false);
}
static LogicalResult decomposeLayerNormSafe(LayerNormSafeOp op,
                                            PatternRewriter &r) {
  return decomposeLayerNorm(op, r, true);
}
static LogicalResult decomposeRMSNormPlain(RMSNormOp op, PatternRewriter &r) {
  return decomposeRMSNorm(op, r, false);
}
static LogicalResult decomposeRMSNormSafe(RMSNormSafeOp op,
                                          PatternRewriter &r) {
  return decomposeRMSNorm(op, r, true);
}

/// Adds `Fn` for `OpTy` if `only` is empty or names it; the pattern leaves
/// ops whose declared types are less refined than inferred alone.
template <typename OpTy, LogicalResult (*Fn)(OpTy, PatternRewriter &)>
static LogicalResult decomposeUnlessGpu(OpTy op, PatternRewriter &rewriter) {
  if (isGpuFlashAttention(op))
    return rewriter.notifyMatchFailure(op, "kept for the GPU");
  return Fn(op, rewriter);
}

template <typename OpTy, LogicalResult (*Fn)(OpTy, PatternRewriter &)>
static void addIfSelected(RewritePatternSet &patterns,
                          ArrayRef<std::string> only) {
  StringRef name = OpTy::getOperationName().drop_front(strlen("tgraph."));
  if (!only.empty() && !llvm::is_contained(only, name.str()))
    return;
  patterns.add(+[](OpTy op, PatternRewriter &rewriter) -> LogicalResult {
    if (failed(requireInferredTypes(op, rewriter)))
      return failure();
    return Fn(op, rewriter);
  });
}

} // namespace

bool mlir::tessera::tgraph::isGpuFlashAttention(Operation *op) {
  if (!isa<AttentionOp, AttentionGradOp>(op))
    return false;
  auto q = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  if (!q || !q.hasStaticShape() || (q.getRank() != 3 && q.getRank() != 4) ||
      !(q.getElementType().isBF16() || q.getElementType().isF16()))
    return false;
  for (Value v : op->getOperands())
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        !t || t.getShape() != q.getShape() ||
        t.getElementType() != q.getElementType())
      return false;
  int64_t d = q.getShape().back(), heads = 1;
  for (int64_t s : q.getShape().drop_back(2))
    heads *= s;
  if ((d != 64 && d != 128) || heads > 65535)
    return false;
  auto policy = op->getAttrOfType<PolicyAttr>("policy");
  return !policy || (policy.getAccum() && policy.getAccum().isF32() &&
                     !policy.getStochasticRound() && !policy.getSaturate() &&
                     !policy.getLossScale());
}

void mlir::tessera::tgraph::populateDecompositionPatterns(
    RewritePatternSet &patterns, ArrayRef<std::string> only,
    bool keepGpuAttention) {
  addIfSelected<GeluOp, decomposeGelu>(patterns, only);
  addIfSelected<SiluOp, decomposeSilu>(patterns, only);
  addIfSelected<SoftmaxOp, decomposeSoftmax>(patterns, only);
  addIfSelected<LogSoftmaxOp, decomposeLogSoftmax>(patterns, only);
  addIfSelected<SoftmaxSafeOp, decomposeSoftmaxSafe>(patterns, only);
  addIfSelected<LogsumexpOp, decomposeLogsumexpPlain>(patterns, only);
  addIfSelected<LogsumexpSafeOp, decomposeLogsumexpSafe>(patterns, only);
  addIfSelected<ReduceMeanOp, decomposeMean>(patterns, only);
  addIfSelected<LayerNormOp, decomposeLayerNormPlain>(patterns, only);
  addIfSelected<LayerNormSafeOp, decomposeLayerNormSafe>(patterns, only);
  addIfSelected<RMSNormOp, decomposeRMSNormPlain>(patterns, only);
  addIfSelected<RMSNormSafeOp, decomposeRMSNormSafe>(patterns, only);
  if (keepGpuAttention) {
    addIfSelected<AttentionOp,
                  decomposeUnlessGpu<AttentionOp, decomposeAttention>>(patterns,
                                                                       only);
    addIfSelected<AttentionGradOp,
                  decomposeUnlessGpu<AttentionGradOp, decomposeAttentionGrad>>(
        patterns, only);
  } else {
    addIfSelected<AttentionOp, decomposeAttention>(patterns, only);
    addIfSelected<AttentionGradOp, decomposeAttentionGrad>(patterns, only);
  }
  addIfSelected<CrossEntropyOp, decomposeCrossEntropy>(patterns, only);
  addIfSelected<EmbeddingOp, decomposeEmbedding>(patterns, only);
  addIfSelected<OneHotOp, decomposeOneHot>(patterns, only);
}

namespace {
/// The composite ops the pass knows, for checking the `ops` option.
constexpr const char *kComposites[] = {
    "gelu",         "silu",           "softmax",        "log_softmax",
    "softmax_safe", "logsumexp",      "logsumexp_safe", "reduce_mean",
    "layernorm",    "layernorm_safe", "rmsnorm",        "rmsnorm_safe",
    "attention",    "attention_grad", "cross_entropy",  "embedding",
    "one_hot"};

struct TGraphDecomposePass
    : public mlir::tessera::tgraph::impl::TGraphDecomposeBase<
          TGraphDecomposePass> {
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
    populateDecompositionPatterns(patterns, only, gpuAttention);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation()->emitError()
          << "-tessera-tgraph-decompose did not converge";
      signalPassFailure();
    }
  }
};
} // namespace
