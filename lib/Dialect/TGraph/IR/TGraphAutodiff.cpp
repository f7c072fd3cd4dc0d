//===- TGraphAutodiff.cpp - Differentiation rules of Graph IR ops ---------===//
//
// The JVP (forward) and VJP (reverse) rule of every differentiable op, in
// the order of the .td files. Rules build Graph IR, so derivative code can
// be differentiated again (higher orders by composition), and they use the
// stable forms: softmax-like adjoints are written with the op's own
// (normalized) result, logsumexp's with softmax, never exp(x) / sum.
//
// Composite ops without a rule here (the norms, cross_entropy, embedding,
// attention_grad) are differentiated through their decomposition into ops
// that have one (-tessera-tgraph-autodiff expands them first).
//
// Attention's rules are in TGraphAutodiffAttention.cpp; the collectives
// (TGraphEffectOps.td, the last family with rules) in
// TGraphAutodiffCollectives.cpp.
//
// Conventions: a null Value is a zero (co)tangent; only floating-point
// values carry them; a VJP returns each cotangent in its operand's shape,
// summed over the dims the op broadcast.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/Autodiff.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessera::tgraph;

namespace {

/// The tangent of a broadcasting op's result from its operands' terms: each
/// already in the result's shape, or broadcast to it.
Value sumInShape(ADBuilder &ad, Value a, Value b, Value result) {
  if (a && b)
    return ad.add(a, b);
  if (Value one = a ? a : b)
    return ad.broadcastLike(one, result);
  return {};
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise unary (derivatives; the interface multiplies)
//===----------------------------------------------------------------------===//

Value NegOp::derivative(ADBuilder &ad) { return ad.scalarLike(getX(), -1.0); }
Value AbsOp::derivative(ADBuilder &ad) { return ad.sign(getX()); }
Value ExpOp::derivative(ADBuilder &ad) { return getResult(); }
Value LogOp::derivative(ADBuilder &ad) {
  return ad.div(ad.scalarLike(getX(), 1.0), getX());
}
Value Log1pOp::derivative(ADBuilder &ad) {
  Value one = ad.scalarLike(getX(), 1.0);
  return ad.div(one, ad.add(one, getX()));
}
Value SinOp::derivative(ADBuilder &ad) { return ad.cos(getX()); }
Value CosOp::derivative(ADBuilder &ad) { return ad.neg(ad.sin(getX())); }
Value TanhOp::derivative(ADBuilder &ad) {
  return ad.sub(ad.scalarLike(getX(), 1.0), ad.square(getResult()));
}
// d erf(x) = 2 / sqrt(pi) e^(-x^2)
Value ErfOp::derivative(ADBuilder &ad) {
  return ad.mul(ad.scalarLike(getX(), M_2_SQRTPI),
                ad.exp(ad.neg(ad.square(getX()))));
}
Value SigmoidOp::derivative(ADBuilder &ad) {
  return ad.mul(getResult(), ad.sub(ad.scalarLike(getX(), 1.0), getResult()));
}
Value ReluOp::derivative(ADBuilder &ad) {
  return ad.indicator(
      ad.compare(CompareDirection::gt, getX(), ad.scalarLike(getX(), 0.0)),
      getX());
}
// Exact: Phi(x) + x phi(x). Tanh form, u = c (x + a x^3), th = tanh(u):
// 0.5 (1 + th) + 0.5 x (1 - th^2) c (1 + 3 a x^2).
Value GeluOp::derivative(ADBuilder &ad) {
  Value x = getX();
  auto k = [&](double v) { return ad.scalarLike(x, v); };
  if (getApproximate()) {
    double c = std::sqrt(2.0 / M_PI), a = 0.044715;
    Value x2 = ad.square(x);
    Value u = ad.mul(k(c), ad.add(x, ad.mul(k(a), ad.mul(x2, x))));
    Value th = ad.tanh(u);
    Value du = ad.mul(k(c), ad.add(k(1.0), ad.mul(k(3 * a), x2)));
    Value left = ad.mul(k(0.5), ad.add(k(1.0), th));
    Value right =
        ad.mul(ad.mul(k(0.5), x), ad.mul(ad.sub(k(1.0), ad.square(th)), du));
    return ad.add(left, right);
  }
  Value cdf =
      ad.mul(k(0.5), ad.add(k(1.0), ErfOp::create(ad.builder(), ad.getLoc(),
                                                  ad.mul(x, k(M_SQRT1_2)))));
  Value pdf = ad.mul(k(0.5 * M_2_SQRTPI * M_SQRT1_2),
                     ad.exp(ad.mul(k(-0.5), ad.square(x))));
  return ad.add(cdf, ad.mul(x, pdf));
}
// s (1 + x (1 - s)), s = sigmoid(x)
Value SiluOp::derivative(ADBuilder &ad) {
  Value x = getX(), s = ad.sigmoid(x), one = ad.scalarLike(x, 1.0);
  return ad.mul(s, ad.add(one, ad.mul(x, ad.sub(one, s))));
}
Value SqrtOp::derivative(ADBuilder &ad) {
  return ad.div(ad.scalarLike(getX(), 0.5), getResult());
}
// d x^(-1/2) = -1/2 y^3
Value RsqrtOp::derivative(ADBuilder &ad) {
  Value y = getResult();
  return ad.mul(ad.scalarLike(y, -0.5), ad.mul(ad.square(y), y));
}
Value ReciprocalOp::derivative(ADBuilder &ad) {
  return ad.neg(ad.square(getResult()));
}
Value SquareOp::derivative(ADBuilder &ad) {
  return ad.mul(ad.scalarLike(getX(), 2.0), getX());
}
// Piecewise constant: zero almost everywhere.
Value FloorOp::derivative(ADBuilder &) { return {}; }
Value SignOp::derivative(ADBuilder &) { return {}; }

//===----------------------------------------------------------------------===//
// Elementwise binary (broadcasting)
//===----------------------------------------------------------------------===//

LogicalResult AddOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                         SmallVectorImpl<Value> &out) {
  out.push_back(sumInShape(ad, t[0], t[1], getResult()));
  return success();
}
LogicalResult AddOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                         SmallVectorImpl<Value> &out) {
  out.push_back(ad.unbroadcast(ct[0], getLhs().getType()));
  out.push_back(ad.unbroadcast(ct[0], getRhs().getType()));
  return success();
}

LogicalResult SubOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                         SmallVectorImpl<Value> &out) {
  out.push_back(
      sumInShape(ad, t[0], t[1] ? ad.neg(t[1]) : Value(), getResult()));
  return success();
}
LogicalResult SubOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                         SmallVectorImpl<Value> &out) {
  out.push_back(ad.unbroadcast(ct[0], getLhs().getType()));
  out.push_back(ad.unbroadcast(ad.neg(ct[0]), getRhs().getType()));
  return success();
}

LogicalResult MulOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                         SmallVectorImpl<Value> &out) {
  out.push_back(sumInShape(ad, t[0] ? ad.mul(t[0], getRhs()) : Value(),
                           t[1] ? ad.mul(getLhs(), t[1]) : Value(),
                           getResult()));
  return success();
}
LogicalResult MulOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                         SmallVectorImpl<Value> &out) {
  out.push_back(ad.unbroadcast(ad.mul(ct[0], getRhs()), getLhs().getType()));
  out.push_back(ad.unbroadcast(ad.mul(getLhs(), ct[0]), getRhs().getType()));
  return success();
}

// d(l / r) = dl / r - dr y / r
LogicalResult DivOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                         SmallVectorImpl<Value> &out) {
  Value r = getRhs(), y = getResult();
  out.push_back(sumInShape(ad, t[0] ? ad.div(t[0], r) : Value(),
                           t[1] ? ad.neg(ad.div(ad.mul(t[1], y), r)) : Value(),
                           getResult()));
  return success();
}
LogicalResult DivOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                         SmallVectorImpl<Value> &out) {
  Value r = getRhs(), y = getResult();
  Value q = ad.div(ct[0], r);
  out.push_back(ad.unbroadcast(q, getLhs().getType()));
  out.push_back(ad.unbroadcast(ad.neg(ad.mul(q, y)), r.getType()));
  return success();
}

// d(l^r) = r l^(r-1) dl + l^r ln(l) dr, with the second term 0 where l = 0
// (as the limit of l^r ln l for r > 0).
static std::pair<Value, Value> powPartials(ADBuilder &ad, PowOp op, bool lhs,
                                           bool rhs) {
  Value l = op.getLhs(), r = op.getRhs(), y = op.getResult();
  Value dl, dr;
  if (lhs)
    dl = ad.mul(r, ad.pow(l, ad.sub(r, ad.scalarLike(r, 1.0))));
  if (rhs) {
    Value zero = ad.scalarLike(l, 0.0);
    dr = ad.select(ad.compare(CompareDirection::eq, l, zero), zero,
                   ad.mul(y, ad.log(l)));
  }
  return {dl, dr};
}
LogicalResult PowOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                         SmallVectorImpl<Value> &out) {
  auto [dl, dr] = powPartials(ad, *this, bool(t[0]), bool(t[1]));
  out.push_back(sumInShape(ad, t[0] ? ad.mul(dl, t[0]) : Value(),
                           t[1] ? ad.mul(dr, t[1]) : Value(), getResult()));
  return success();
}
LogicalResult PowOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                         SmallVectorImpl<Value> &out) {
  auto [dl, dr] = powPartials(ad, *this, true, true);
  out.push_back(ad.unbroadcast(ad.mul(ct[0], dl), getLhs().getType()));
  out.push_back(ad.unbroadcast(ad.mul(ct[0], dr), getRhs().getType()));
  return success();
}

/// Weights of max/min's operands: 1 for the one chosen, 1/2 each on ties
/// (the average of the one-sided derivatives, as JAX does).
static std::pair<Value, Value> extremumWeights(ADBuilder &ad, Value l, Value r,
                                               CompareDirection wins) {
  Value half = ad.scalarLike(l, 0.5);
  Value tie =
      ad.mul(half, ad.indicator(ad.compare(CompareDirection::eq, l, r), l));
  Value wl = ad.add(ad.indicator(ad.compare(wins, l, r), l), tie);
  Value wr = ad.add(ad.indicator(ad.compare(wins, r, l), l), tie);
  return {wl, wr};
}
template <typename OpTy>
static LogicalResult extremumJvp(OpTy op, ADBuilder &ad, ArrayRef<Value> t,
                                 SmallVectorImpl<Value> &out,
                                 CompareDirection wins) {
  auto [wl, wr] = extremumWeights(ad, op.getLhs(), op.getRhs(), wins);
  out.push_back(sumInShape(ad, t[0] ? ad.mul(wl, t[0]) : Value(),
                           t[1] ? ad.mul(wr, t[1]) : Value(), op.getResult()));
  return success();
}
template <typename OpTy>
static LogicalResult extremumVjp(OpTy op, ADBuilder &ad, ArrayRef<Value> ct,
                                 SmallVectorImpl<Value> &out,
                                 CompareDirection wins) {
  auto [wl, wr] = extremumWeights(ad, op.getLhs(), op.getRhs(), wins);
  out.push_back(ad.unbroadcast(ad.mul(ct[0], wl), op.getLhs().getType()));
  out.push_back(ad.unbroadcast(ad.mul(ct[0], wr), op.getRhs().getType()));
  return success();
}
LogicalResult MaxOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                         SmallVectorImpl<Value> &out) {
  return extremumJvp(*this, ad, t, out, CompareDirection::gt);
}
LogicalResult MaxOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                         SmallVectorImpl<Value> &out) {
  return extremumVjp(*this, ad, ct, out, CompareDirection::gt);
}
LogicalResult MinOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                         SmallVectorImpl<Value> &out) {
  return extremumJvp(*this, ad, t, out, CompareDirection::lt);
}
LogicalResult MinOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                         SmallVectorImpl<Value> &out) {
  return extremumVjp(*this, ad, ct, out, CompareDirection::lt);
}

// The condition is not differentiable; each branch gets the cotangent where
// it was chosen.
LogicalResult SelectOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                            SmallVectorImpl<Value> &out) {
  if (!t[1] && !t[2]) {
    out.push_back({});
    return success();
  }
  Value zero = ad.scalarLike(getResult(), 0.0);
  Value picked = ad.select(getCond(), t[1] ? t[1] : zero, t[2] ? t[2] : zero);
  out.push_back(ad.broadcastLike(picked, getResult()));
  return success();
}
LogicalResult SelectOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                            SmallVectorImpl<Value> &out) {
  Value zero = ad.scalarLike(ct[0], 0.0);
  out.push_back({});
  out.push_back(
      ad.unbroadcast(ad.select(getCond(), ct[0], zero), getOnTrue().getType()));
  out.push_back(ad.unbroadcast(ad.select(getCond(), zero, ct[0]),
                               getOnFalse().getType()));
  return success();
}

// Float to float: the tangent converts like the value (rounded to nearest);
// to integers the derivative is zero.
LogicalResult CastOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                          SmallVectorImpl<Value> &out) {
  out.push_back(t[0] && ADBuilder::isDifferentiable(getResult())
                    ? ad.convert(t[0], ADBuilder::elementOf(getResult()))
                    : Value());
  return success();
}
LogicalResult CastOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                          SmallVectorImpl<Value> &out) {
  out.push_back(ADBuilder::isDifferentiable(getX())
                    ? ad.convert(ct[0], ADBuilder::elementOf(getX()))
                    : Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// C = op_a(A) op_b(B): dC = op_a(dA) op_b(B) + op_a(A) op_b(dB);
// d op_a(A) = dC op_b(B)^T, d op_b(B) = op_a(A)^T dC, transposed back where
// the op transposes; batch dims that broadcast are summed.
static LogicalResult matmulJvp(ADBuilder &ad, Value a, Value b, bool ta,
                               bool tb, PolicyAttr policy, Value result,
                               ArrayRef<Value> t, SmallVectorImpl<Value> &out) {
  // In the result's element type: operands narrower than the result (bf16
  // accumulating into f32) would give a tangent of another type than the
  // result's.
  Type type = ADBuilder::elementOf(result);
  Value first = t[0] ? ad.matmul(ad.convert(t[0], type), ad.convert(b, type),
                                 ta, tb, policy)
                     : Value();
  Value second = t[1] ? ad.matmul(ad.convert(a, type), ad.convert(t[1], type),
                                  ta, tb, policy)
                      : Value();
  out.push_back(sumInShape(ad, first, second, result));
  return success();
}
/// `x` [..., M, D] as [prod(...) * M, D] (the rows of every batch).
static Value flattenRows(ADBuilder &ad, Value x) {
  shape::TensorShape s = getShape(x.getType());
  shape::DimExpr rows = shape::DimExpr::constant(1);
  for (size_t i = 0; i + 1 < s.dims.size(); ++i)
    rows = rows * s.dims[i];
  shape::TensorShape flat({rows, s.dims.back()});
  return ad.reshape(x, getTensorType(flat, ADBuilder::elementOf(x)));
}

static LogicalResult matmulVjp(ADBuilder &ad, Value a, Value b, bool ta,
                               bool tb, PolicyAttr policy, Value ct,
                               SmallVectorImpl<Value> &out) {
  // Operands narrower than the result (fp8 accumulating in f32) join the
  // cotangent's type; the cotangents go back to the operands' types.
  Type accum = ADBuilder::elementOf(ct);
  Value origA = a, origB = b;
  a = ad.convert(a, accum);
  b = ad.convert(b, accum);
  Value da = ta ? ad.matmul(b, ct, tb, /*transposeRhs=*/true, policy)
                : ad.matmul(ct, b, /*transposeLhs=*/false, !tb, policy);
  Value db;
  auto at = ADBuilder::typeOf(a), bt = ADBuilder::typeOf(b);
  if (!ta && at.getRank() > 2 && bt.getRank() == 2 &&
      ADBuilder::typeOf(ct).getRank() == at.getRank()) {
    // A weight applied to every row of a batch ([B, S, K] x [K, N]): one
    // GEMM over all B * S rows, not a [B, K, N] product summed over B.
    Value fa = flattenRows(ad, a), fct = flattenRows(ad, ct);
    db = tb ? ad.matmul(fct, fa, /*transposeLhs=*/true, false, policy)
            : ad.matmul(fa, fct, /*transposeLhs=*/true, false, policy);
  } else {
    db = tb ? ad.matmul(ct, a, /*transposeLhs=*/true, ta, policy)
            : ad.matmul(a, ct, !ta, /*transposeRhs=*/false, policy);
  }
  out.push_back(
      ad.convert(ad.unbroadcast(da, a.getType()), ADBuilder::elementOf(origA)));
  out.push_back(
      ad.convert(ad.unbroadcast(db, b.getType()), ADBuilder::elementOf(origB)));
  return success();
}

LogicalResult MatmulOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                            SmallVectorImpl<Value> &out) {
  return matmulJvp(ad, getLhs(), getRhs(), getTransposeLhs(), getTransposeRhs(),
                   getPolicyAttr(), getResult(), t, out);
}
LogicalResult MatmulOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                            SmallVectorImpl<Value> &out) {
  return matmulVjp(ad, getLhs(), getRhs(), getTransposeLhs(), getTransposeRhs(),
                   getPolicyAttr(), ct[0], out);
}
LogicalResult BatchMatmulOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                                 SmallVectorImpl<Value> &out) {
  return matmulJvp(ad, getLhs(), getRhs(), false, false, getPolicyAttr(),
                   getResult(), t, out);
}
LogicalResult BatchMatmulOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                                 SmallVectorImpl<Value> &out) {
  return matmulVjp(ad, getLhs(), getRhs(), false, false, getPolicyAttr(), ct[0],
                   out);
}

/// dot_general with the dims of `op` but other operands (its result type
/// from the shape function).
static Value dotGeneral(ADBuilder &ad, Value lhs, Value rhs,
                        ArrayRef<int64_t> lb, ArrayRef<int64_t> rb,
                        ArrayRef<int64_t> lc, ArrayRef<int64_t> rc,
                        PolicyAttr policy) {
  OpBuilder &b = ad.builder();
  return ad.inferred<DotGeneralOp>(
      lhs.getType(), lhs, rhs, b.getDenseI64ArrayAttr(lb),
      b.getDenseI64ArrayAttr(rb), b.getDenseI64ArrayAttr(lc),
      b.getDenseI64ArrayAttr(rc), policy);
}

/// The dims of a rank-`rank` operand that are neither batch nor
/// contracting, in order.
static SmallVector<int64_t> freeDims(int64_t rank, ArrayRef<int64_t> batch,
                                     ArrayRef<int64_t> contracting) {
  SmallVector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(batch, d) && !llvm::is_contained(contracting, d))
      out.push_back(d);
  return out;
}

/// The cotangent of one operand `x` (batch dims xb, contracting xc) of
/// dot_general from the result's cotangent and the other operand `y`
/// (yb, yc; `yFirst` whether y's free dims come first in the result): the
/// product of ct and y over y's free dims gives [batch, x's free dims,
/// x's contracting dims in the order of y's matching dims], transposed
/// back to x's layout.
static Value dotGeneralOperandCotangent(ADBuilder &ad, Value ct, Value x,
                                        ArrayRef<int64_t> xb,
                                        ArrayRef<int64_t> xc, Value y,
                                        ArrayRef<int64_t> yb,
                                        ArrayRef<int64_t> yc, bool yFirst,
                                        PolicyAttr policy) {
  int64_t xr = ADBuilder::typeOf(x).getRank();
  int64_t yr = ADBuilder::typeOf(y).getRank();
  SmallVector<int64_t> xf = freeDims(xr, xb, xc), yf = freeDims(yr, yb, yc);
  int64_t nb = xb.size();
  // Result dims: batch, lhs free, rhs free.
  int64_t yStart = yFirst ? nb : nb + int64_t(xf.size());
  SmallVector<int64_t> ctBatch, ctContract, yContract;
  for (int64_t i = 0; i < nb; ++i)
    ctBatch.push_back(i);
  for (size_t i = 0; i < yf.size(); ++i) {
    ctContract.push_back(yStart + int64_t(i));
    yContract.push_back(yf[i]);
  }
  Value raw = dotGeneral(ad, ct, y, ctBatch, yb, ctContract, yContract, policy);
  // raw: [batch, ct's remaining dims (x's free dims), y's remaining dims
  // in increasing order (y's contracting dims)].
  SmallVector<int64_t> ySorted(yc.begin(), yc.end());
  llvm::sort(ySorted);
  SmallVector<int64_t> perm(xr);
  for (int64_t d = 0; d < xr; ++d) {
    if (auto it = llvm::find(xb, d); it != xb.end()) {
      perm[d] = it - xb.begin();
    } else if (auto it = llvm::find(xf, d); it != xf.end()) {
      perm[d] = nb + (it - xf.begin());
    } else {
      int64_t i = llvm::find(xc, d) - xc.begin();
      perm[d] = nb + int64_t(xf.size()) +
                (llvm::find(ySorted, yc[i]) - ySorted.begin());
    }
  }
  return ad.transpose(raw, perm);
}

LogicalResult DotGeneralOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                                SmallVectorImpl<Value> &out) {
  auto lb = getLhsBatchingDims(), rb = getRhsBatchingDims();
  auto lc = getLhsContractingDims(), rc = getRhsContractingDims();
  Value first =
      t[0] ? dotGeneral(ad, t[0], getRhs(), lb, rb, lc, rc, getPolicyAttr())
           : Value();
  Value second =
      t[1] ? dotGeneral(ad, getLhs(), t[1], lb, rb, lc, rc, getPolicyAttr())
           : Value();
  out.push_back(sumInShape(ad, first, second, getResult()));
  return success();
}
LogicalResult DotGeneralOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                                SmallVectorImpl<Value> &out) {
  auto lb = getLhsBatchingDims(), rb = getRhsBatchingDims();
  auto lc = getLhsContractingDims(), rc = getRhsContractingDims();
  // (Narrow operands join the cotangent's type, as for matmul.)
  Type accum = ADBuilder::elementOf(ct[0]);
  Value lhs = ad.convert(getLhs(), accum), rhs = ad.convert(getRhs(), accum);
  out.push_back(
      ad.convert(dotGeneralOperandCotangent(ad, ct[0], lhs, lb, lc, rhs, rb, rc,
                                            /*yFirst=*/false, getPolicyAttr()),
                 ADBuilder::elementOf(getLhs())));
  out.push_back(
      ad.convert(dotGeneralOperandCotangent(ad, ct[0], rhs, rb, rc, lhs, lb, lc,
                                            /*yFirst=*/true, getPolicyAttr()),
                 ADBuilder::elementOf(getRhs())));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                               SmallVectorImpl<Value> &out) {
  out.push_back(ReduceSumOp::create(ad.builder(), ad.getLoc(), t[0], getDims(),
                                    getKeepdims(), getStable(), PolicyAttr()));
  return success();
}
/// The `loss_scale` policy: the op is a loss whose gradient is scaled
/// (the cotangent it passes back is k times larger; its value is not).
static Value scaleLoss(ADBuilder &ad, PolicyAttr policy, Value ct) {
  if (!policy || !policy.getLossScale())
    return ct;
  return ad.mul(ct,
                ad.scalarLike(ct, policy.getLossScale().getValueAsDouble()));
}

LogicalResult ReduceSumOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                               SmallVectorImpl<Value> &out) {
  out.push_back(ad.expandReduced(scaleLoss(ad, getPolicyAttr(), ct[0]), getX(),
                                 getDims(), getKeepdims()));
  return success();
}

LogicalResult ReduceMeanOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                                SmallVectorImpl<Value> &out) {
  out.push_back(ReduceMeanOp::create(ad.builder(), ad.getLoc(), t[0], getDims(),
                                     getKeepdims(), getStable(), PolicyAttr()));
  return success();
}
LogicalResult ReduceMeanOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                                SmallVectorImpl<Value> &out) {
  Value spread = ad.expandReduced(scaleLoss(ad, getPolicyAttr(), ct[0]), getX(),
                                  getDims(), getKeepdims());
  out.push_back(ad.div(spread, ad.count(getX(), getDims())));
  return success();
}

/// d prod / d x_i = the product of the other elements: prod / x_i without
/// zeros; with one zero, the product of the others at the zero and 0
/// elsewhere; with more, 0 everywhere.
static Value productOfOthers(ADBuilder &ad, ReduceProdOp op) {
  Value x = op.getX();
  ArrayRef<int64_t> dims = op.getDims();
  Value zero = ad.scalarLike(x, 0.0), one = ad.scalarLike(x, 1.0);
  Value isZero = ad.compare(CompareDirection::eq, x, zero);
  Value zeros = ad.expandReduced(
      ad.reduceSum(ad.indicator(isZero, x), dims, true), x, dims, true);
  Value nonzero = ad.expandReduced(
      ReduceProdOp::create(ad.builder(), ad.getLoc(), ad.select(isZero, one, x),
                           dims, /*keepdims=*/true, /*stable=*/false,
                           PolicyAttr()),
      x, dims, true);
  Value noZero = ad.compare(CompareDirection::eq, zeros, zero);
  Value oneZero = ad.compare(CompareDirection::eq, zeros, one);
  return ad.select(isZero, ad.select(oneZero, nonzero, zero),
                   ad.select(noZero, ad.div(nonzero, x), zero));
}
LogicalResult ReduceProdOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                                SmallVectorImpl<Value> &out) {
  out.push_back(ad.reduceSum(ad.mul(t[0], productOfOthers(ad, *this)),
                             getDims(), getKeepdims()));
  return success();
}
LogicalResult ReduceProdOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                                SmallVectorImpl<Value> &out) {
  Value spread = ad.expandReduced(ct[0], getX(), getDims(), getKeepdims());
  out.push_back(ad.mul(spread, productOfOthers(ad, *this)));
  return success();
}

/// Max and min: the derivative goes to the elements equal to the result,
/// shared equally on ties (as JAX does).
template <typename OpTy> static Value extremumShares(ADBuilder &ad, OpTy op) {
  Value x = op.getX();
  ArrayRef<int64_t> dims = op.getDims();
  Value at = ad.indicator(
      ad.compare(CompareDirection::eq, x,
                 ad.expandReduced(op.getResult(), x, dims, op.getKeepdims())),
      x);
  Value ties = ad.expandReduced(ad.reduceSum(at, dims, true), x, dims, true);
  return ad.div(at, ties);
}
LogicalResult ReduceMaxOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                               SmallVectorImpl<Value> &out) {
  out.push_back(ad.reduceSum(ad.mul(t[0], extremumShares(ad, *this)), getDims(),
                             getKeepdims()));
  return success();
}
LogicalResult ReduceMaxOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                               SmallVectorImpl<Value> &out) {
  out.push_back(
      ad.mul(ad.expandReduced(ct[0], getX(), getDims(), getKeepdims()),
             extremumShares(ad, *this)));
  return success();
}
LogicalResult ReduceMinOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                               SmallVectorImpl<Value> &out) {
  out.push_back(ad.reduceSum(ad.mul(t[0], extremumShares(ad, *this)), getDims(),
                             getKeepdims()));
  return success();
}
LogicalResult ReduceMinOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                               SmallVectorImpl<Value> &out) {
  out.push_back(
      ad.mul(ad.expandReduced(ct[0], getX(), getDims(), getKeepdims()),
             extremumShares(ad, *this)));
  return success();
}

// Softmax y: dx = y (g - sum(g y)), in both directions (the Jacobian is
// symmetric); masked rows of softmax_safe have y = 0 and get 0.
template <typename OpTy>
static Value softmaxProduct(ADBuilder &ad, OpTy op, Value g) {
  Value y = op.getResult();
  int64_t d = op.getDim();
  return ad.mul(y, ad.sub(g, ad.reduceSum(ad.mul(g, y), {d}, true)));
}
LogicalResult SoftmaxOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                             SmallVectorImpl<Value> &out) {
  out.push_back(softmaxProduct(ad, *this, t[0]));
  return success();
}
LogicalResult SoftmaxOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                             SmallVectorImpl<Value> &out) {
  out.push_back(softmaxProduct(ad, *this, ct[0]));
  return success();
}

// log_softmax y = x - lse: dy = dx - sum(e^y dx); dx = g - e^y sum(g).
LogicalResult LogSoftmaxOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                                SmallVectorImpl<Value> &out) {
  Value p = ad.exp(getResult());
  out.push_back(
      ad.sub(t[0], ad.reduceSum(ad.mul(p, t[0]), {int64_t(getDim())}, true)));
  return success();
}
LogicalResult LogSoftmaxOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                                SmallVectorImpl<Value> &out) {
  Value p = ad.exp(getResult());
  out.push_back(
      ad.sub(ct[0], ad.mul(p, ad.reduceSum(ct[0], {int64_t(getDim())}, true))));
  return success();
}

LogicalResult SoftmaxSafeOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                                 SmallVectorImpl<Value> &out) {
  out.push_back(softmaxProduct(ad, *this, t[0]));
  return success();
}
LogicalResult SoftmaxSafeOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                                 SmallVectorImpl<Value> &out) {
  out.push_back(softmaxProduct(ad, *this, ct[0]));
  return success();
}

// logsumexp: d lse = sum(softmax(x) dx); dx = g softmax(x) (softmax_safe
// for the safe form: fully masked rows get 0).
template <typename OpTy>
static LogicalResult logsumexpJvp(OpTy op, ADBuilder &ad, Value t, bool safe,
                                  SmallVectorImpl<Value> &out) {
  int64_t d = op.getDim();
  Value p = safe ? ad.softmaxSafe(op.getX(), d) : ad.softmax(op.getX(), d);
  out.push_back(ad.reduceSum(ad.mul(p, t), {d}, op.getKeepdims()));
  return success();
}
template <typename OpTy>
static LogicalResult logsumexpVjp(OpTy op, ADBuilder &ad, Value ct, bool safe,
                                  SmallVectorImpl<Value> &out) {
  int64_t d = op.getDim();
  Value p = safe ? ad.softmaxSafe(op.getX(), d) : ad.softmax(op.getX(), d);
  out.push_back(
      ad.mul(ad.expandReduced(ct, op.getX(), {d}, op.getKeepdims()), p));
  return success();
}
LogicalResult LogsumexpOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                               SmallVectorImpl<Value> &out) {
  return logsumexpJvp(*this, ad, t[0], false, out);
}
LogicalResult LogsumexpOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                               SmallVectorImpl<Value> &out) {
  return logsumexpVjp(*this, ad, ct[0], false, out);
}
LogicalResult LogsumexpSafeOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                                   SmallVectorImpl<Value> &out) {
  return logsumexpJvp(*this, ad, t[0], true, out);
}
LogicalResult LogsumexpSafeOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                                   SmallVectorImpl<Value> &out) {
  return logsumexpVjp(*this, ad, ct[0], true, out);
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                               SmallVectorImpl<Value> &out) {
  out.push_back(ad.transpose(t[0], getPermutation()));
  return success();
}
LogicalResult TransposeOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                               SmallVectorImpl<Value> &out) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  out.push_back(ad.transpose(ct[0], inverse));
  return success();
}

LogicalResult ReshapeOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                             SmallVectorImpl<Value> &out) {
  out.push_back(ad.reshape(t[0], getType()));
  return success();
}
LogicalResult ReshapeOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                             SmallVectorImpl<Value> &out) {
  out.push_back(ad.reshape(ct[0], getX().getType()));
  return success();
}

LogicalResult BroadcastInDimOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                                    SmallVectorImpl<Value> &out) {
  out.push_back(BroadcastInDimOp::create(
      ad.builder(), ad.getLoc(), getType().clone(ADBuilder::elementOf(t[0])),
      t[0], getBroadcastDimensions()));
  return success();
}
// Sum over the new dims and the expanded size-1 dims, then put the kept
// dims in the operand's order.
LogicalResult BroadcastInDimOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                                    SmallVectorImpl<Value> &out) {
  RankedTensorType xt = getX().getType(), rt = getType();
  ArrayRef<int64_t> map = getBroadcastDimensions();
  SmallVector<int64_t> expanded, fresh;
  for (auto [i, d] : llvm::enumerate(map))
    if (xt.getShape()[i] == 1 && rt.getShape()[d] != 1)
      expanded.push_back(d);
  for (int64_t d = 0; d < rt.getRank(); ++d)
    if (!llvm::is_contained(map, d))
      fresh.push_back(d);
  Value v = ad.reduceSum(ct[0], expanded, /*keep=*/true);
  v = ad.reduceSum(v, fresh, /*keep=*/false);
  // The kept dims are in increasing result order; operand dim i is result
  // dim map[i].
  SmallVector<int64_t> sorted(map.begin(), map.end());
  llvm::sort(sorted);
  SmallVector<int64_t> perm;
  for (int64_t d : map)
    perm.push_back(llvm::find(sorted, d) - sorted.begin());
  v = ad.transpose(v, perm);
  out.push_back(ad.reshape(v, xt));
  return success();
}

LogicalResult SliceOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                           SmallVectorImpl<Value> &out) {
  out.push_back(SliceOp::create(ad.builder(), ad.getLoc(), t[0], getStart(),
                                getLimit(), getStrideAttr()));
  return success();
}
// The cotangent padded back with zeros: `start` before, the rest after,
// stride - 1 between (all known numbers, as pad needs).
LogicalResult SliceOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                           SmallVectorImpl<Value> &out) {
  shape::TensorShape xs = getShape(getX().getType());
  shape::TensorShape rs = getShape(getType());
  std::vector<shape::DimExpr> start = getStart().getDims();
  SmallVector<int64_t> low, high, interior;
  for (auto [i, stride] : llvm::enumerate(getStride())) {
    auto s = start[i].getConstant();
    // One past the last element taken: start + (n - 1) stride + 1.
    shape::DimExpr end = start[i] +
                         (rs.dims[i] - shape::DimExpr::constant(1)) *
                             shape::DimExpr::constant(stride) +
                         shape::DimExpr::constant(1);
    auto h = (xs.dims[i] - end).getConstant();
    if (!s || !h)
      return emitOpError("cannot be differentiated in reverse mode: the "
                         "padding of its adjoint along dim ")
             << i << " (" << start[i].str() << " and "
             << (xs.dims[i] - end).str() << ") must be known numbers";
    low.push_back(*s);
    high.push_back(*h);
    interior.push_back(stride - 1);
  }
  Type e = ADBuilder::elementOf(ct[0]);
  out.push_back(PadOp::create(ad.builder(), ad.getLoc(), ct[0],
                              ad.builder().getDenseI64ArrayAttr(low),
                              ad.builder().getDenseI64ArrayAttr(high),
                              ad.builder().getDenseI64ArrayAttr(interior),
                              cast<TypedAttr>(FloatAttr::get(e, 0.0))));
  return success();
}

LogicalResult DynamicSliceOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                                  SmallVectorImpl<Value> &out) {
  out.push_back(DynamicSliceOp::create(ad.builder(), ad.getLoc(), t[0],
                                       getStarts(), getSizesAttr()));
  return success();
}
// The cotangent added into zeros at the (clamped) starts, one dim at a
// time: scatter_add along dim d at rows start_d + 0 .. size_d - 1.
LogicalResult DynamicSliceOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                                  SmallVectorImpl<Value> &out) {
  OpBuilder &b = ad.builder();
  Location loc = ad.getLoc();
  Value x = getX();
  shape::TensorShape xs = getShape(x.getType());
  shape::TensorShape cs = getShape(ct[0].getType());
  Value acc = ct[0];
  for (auto [d, start] : llvm::enumerate(getStarts())) {
    if (cs.dims[d].isIdentical(xs.dims[d]))
      continue; // the whole dim: start is clamped to 0
    auto size = cs.dims[d].getConstant();
    if (!size)
      return emitOpError("cannot be differentiated in reverse mode: slice "
                         "size ")
             << cs.dims[d].str() << " along dim " << d << " is not a number";
    Type it = getElementTypeOrSelf(start.getType());
    auto scalar = RankedTensorType::get({}, it);
    // clamp(start, 0, dim - size)
    Value dim = DimSizeOp::create(b, loc, scalar, x, d);
    Value hi = ad.sub(dim, ad.scalar(it, double(*size)));
    Value s = MinOp::create(b, loc,
                            MaxOp::create(b, loc, start, ad.scalar(it, 0)), hi);
    Value rows = IotaOp::create(b, loc, RankedTensorType::get({*size}, it), 0);
    Value indices = ad.add(rows, s);
    // Into zeros of the shape so far with dim d at full size.
    shape::TensorShape target = getShape(acc.getType());
    target.dims[d] = xs.dims[d];
    Value zeros =
        FullOp::create(b, loc, getTensorType(target, ADBuilder::elementOf(acc)),
                       FloatAttr::get(ADBuilder::elementOf(acc), 0.0));
    acc = ScatterAddOp::create(b, loc, zeros, indices, acc, d);
  }
  out.push_back(ad.reshape(acc, getX().getType()));
  for (size_t i = 0; i < getStarts().size(); ++i)
    out.push_back({});
  return success();
}

LogicalResult ConcatOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                            SmallVectorImpl<Value> &out) {
  SmallVector<Value> parts;
  for (auto [x, tx] : llvm::zip(getInputs(), t))
    parts.push_back(tx ? tx : ad.zerosLike(x));
  out.push_back(ConcatOp::create(ad.builder(), ad.getLoc(), parts, getDim()));
  return success();
}
// Each input's cotangent is its slice of the result's (symbolic offsets
// are fine: slice bounds are dimension expressions).
LogicalResult ConcatOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                            SmallVectorImpl<Value> &out) {
  int64_t dim = getDim();
  shape::TensorShape rs = getShape(getType());
  shape::DimExpr offset = shape::DimExpr::constant(0);
  for (Value x : getInputs()) {
    shape::TensorShape xs = getShape(x.getType());
    std::vector<shape::DimExpr> start(rs.dims.size(),
                                      shape::DimExpr::constant(0));
    std::vector<shape::DimExpr> limit = rs.dims;
    start[dim] = offset;
    limit[dim] = offset + xs.dims[dim];
    offset = limit[dim];
    if (llvm::any_of(limit, [](auto &d) { return d.isUnknown(); }) ||
        start[dim].isUnknown())
      return emitOpError("cannot be differentiated in reverse mode: a "
                         "dimension of its operands is unknown ('?'); name it "
                         "with #tgraph.dims");
    MLIRContext *ctx = getContext();
    out.push_back(
        SliceOp::create(ad.builder(), ad.getLoc(), ct[0],
                        DimsAttr::get(ctx, start), DimsAttr::get(ctx, limit),
                        ad.builder().getDenseI64ArrayAttr(
                            SmallVector<int64_t>(rs.dims.size(), 1))));
  }
  return success();
}

LogicalResult PadOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                         SmallVectorImpl<Value> &out) {
  Type e = ADBuilder::elementOf(t[0]);
  out.push_back(PadOp::create(ad.builder(), ad.getLoc(), t[0], getLowAttr(),
                              getHighAttr(), getInteriorAttr(),
                              cast<TypedAttr>(FloatAttr::get(e, 0.0))));
  return success();
}
// Without interior padding the adjoint pads by the negated amounts (crops
// what was added, adds zeros where it cropped); with it, a strided slice.
LogicalResult PadOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                         SmallVectorImpl<Value> &out) {
  OpBuilder &b = ad.builder();
  ArrayRef<int64_t> low = getLow(), high = getHigh(), interior = getInterior();
  if (llvm::all_of(interior, [](int64_t i) { return i == 0; })) {
    auto negated = [](ArrayRef<int64_t> v) {
      return llvm::to_vector(llvm::map_range(v, [](int64_t i) { return -i; }));
    };
    Type e = ADBuilder::elementOf(ct[0]);
    out.push_back(PadOp::create(
        b, ad.getLoc(), ct[0], b.getDenseI64ArrayAttr(negated(low)),
        b.getDenseI64ArrayAttr(negated(high)), getInteriorAttr(),
        cast<TypedAttr>(FloatAttr::get(e, 0.0))));
    return success();
  }
  if (llvm::any_of(low, [](int64_t v) { return v < 0; }) ||
      llvm::any_of(high, [](int64_t v) { return v < 0; }))
    return emitOpError("cannot be differentiated in reverse mode: interior "
                       "padding together with cropping (negative low/high)");
  shape::TensorShape xs = getShape(getX().getType());
  std::vector<shape::DimExpr> start, limit;
  SmallVector<int64_t> stride;
  for (size_t i = 0; i < low.size(); ++i) {
    shape::DimExpr s = shape::DimExpr::constant(low[i]);
    start.push_back(s);
    limit.push_back(s +
                    (xs.dims[i] - shape::DimExpr::constant(1)) *
                        shape::DimExpr::constant(interior[i] + 1) +
                    shape::DimExpr::constant(1));
    stride.push_back(interior[i] + 1);
  }
  MLIRContext *ctx = getContext();
  out.push_back(SliceOp::create(
      b, ad.getLoc(), ct[0], DimsAttr::get(ctx, start),
      DimsAttr::get(ctx, limit), b.getDenseI64ArrayAttr(stride)));
  return success();
}

// gather and scatter_add are each other's adjoints.
LogicalResult GatherOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                            SmallVectorImpl<Value> &out) {
  out.push_back({});
  if (t[0])
    out.back() = GatherOp::create(ad.builder(), ad.getLoc(), t[0], getIndices(),
                                  getDim());
  return success();
}
LogicalResult GatherOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                            SmallVectorImpl<Value> &out) {
  out.push_back(ScatterAddOp::create(ad.builder(), ad.getLoc(),
                                     ad.zerosLike(getX()), getIndices(), ct[0],
                                     getDim()));
  out.push_back({});
  return success();
}

LogicalResult ScatterAddOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                                SmallVectorImpl<Value> &out) {
  if (!t[2]) {
    out.push_back(t[0]);
    return success();
  }
  out.push_back(ScatterAddOp::create(ad.builder(), ad.getLoc(),
                                     t[0] ? t[0] : ad.zerosLike(getX()),
                                     getIndices(), t[2], getDim()));
  return success();
}
LogicalResult ScatterAddOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                                SmallVectorImpl<Value> &out) {
  out.push_back(ct[0]);
  out.push_back({});
  out.push_back(GatherOp::create(ad.builder(), ad.getLoc(), ct[0], getIndices(),
                                 getDim()));
  return success();
}
