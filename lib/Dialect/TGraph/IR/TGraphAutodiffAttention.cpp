//===- TGraphAutodiffAttention.cpp - Rules of attention ------------------===//
//
// The JVP and VJP rules of tgraph.attention (TGraphContractionOps.td), with
// the conventions of TGraphAutodiff.cpp. attention_grad, which the VJP
// emits, has none: autodiff expands it first.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/Autodiff.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

// attention o = P v with P = softmax(S), S = q k^T * scale (masked).
// Forward: dS = (dq k^T + q dk^T) scale, dP = P (dS - rowsum(P dS)),
// do = dP v + P dv, in the accumulation type (masked entries have P = 0).
// Reverse: one tgraph.attention_grad, which GPU back ends run as a fused
// kernel and others expand (it reads the probabilities again instead of
// keeping the [.., Sq, Sk] matrix alive).
LogicalResult AttentionOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                               SmallVectorImpl<Value> &out) {
  if (!t[0] && !t[1] && !t[2]) {
    out.push_back(Value());
    return success();
  }
  auto scale = attentionScale(getQuery(), getScale());
  if (!scale)
    return emitOpError("forward-mode autodiff needs a static head dim or an "
                       "explicit scale");
  Type storage = ADBuilder::elementOf(getQuery());
  PolicyAttr policy = getPolicyAttr();
  Type c = policy && policy.getAccum() ? policy.getAccum() : storage;
  // Products of values already in `c` take the accumulation type alone.
  PolicyAttr accum = accumulationPart(policy);
  std::string why;
  auto p = buildAttentionProbabilities(ad.builder(), ad.getLoc(), getQuery(),
                                       getKey(), getCausal(), *scale, c, policy,
                                       why);
  if (failed(p))
    return emitOpError("forward-mode autodiff: ") << why;
  Value q = ad.convert(getQuery(), c), k = ad.convert(getKey(), c),
        v = ad.convert(getValue(), c);
  Value ds;
  if (t[0])
    ds = ad.matmul(ad.convert(t[0], c), k, false, /*transposeRhs=*/true, accum);
  if (t[1])
    ds = ad.accumulate(ds, ad.matmul(q, ad.convert(t[1], c), false,
                                     /*transposeRhs=*/true, accum));
  Value tangent;
  if (ds) {
    ds = ad.mul(ds, ad.scalar(c, *scale));
    int64_t last = ADBuilder::typeOf(ds).getRank() - 1;
    Value pds = ad.mul(*p, ds);
    Value dp = ad.sub(pds, ad.mul(*p, ad.reduceSum(pds, {last}, true)));
    tangent = ad.matmul(dp, v, false, false, accum);
  }
  if (t[2])
    tangent = ad.accumulate(
        tangent, ad.matmul(*p, ad.convert(t[2], c), false, false, accum));
  out.push_back(ad.convert(tangent, storage));
  return success();
}
LogicalResult AttentionOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                               SmallVectorImpl<Value> &out) {
  if (!ct[0]) {
    out.append(3, Value());
    return success();
  }
  auto grad = AttentionGradOp::create(
      ad.builder(), ad.getLoc(), getQuery().getType(), getKey().getType(),
      getValue().getType(), getQuery(), getKey(), getValue(), getResult(),
      ad.convert(ct[0], ADBuilder::elementOf(getResult())), getCausalAttr(),
      getScaleAttr(), getPolicyAttr());
  out.append(grad->result_begin(), grad->result_end());
  return success();
}
