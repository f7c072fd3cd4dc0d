//===- TGraphAutodiffCollectives.cpp - Rules of the collectives -----------===//
//
// The JVP and VJP rules of the collectives of TGraphEffectOps.td, after
// the other families' rules in TGraphAutodiff.cpp (same conventions).
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/Autodiff.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

// SPMD semantics: every device of the group runs the same program on its
// own values, and the loss is the sum of the devices' losses. A collective
// is linear in the values of all devices, or (max, min, prod) linear after
// a per-element weight w = dy/dx that the devices agree on:
//   all_reduce:      JVP all_reduce_sum(w t),      VJP w all_reduce_sum(g)
//   reduce_scatter:  JVP reduce_scatter_sum(w t),  VJP w all_gather(g)
// with w = 1 for sum and 1/n for mean (there the op itself is kept). The
// transposes of the data movements: all_gather <-> reduce_scatter(sum),
// all_to_all with split and concat dims swapped, permute with the pairs
// reversed (a device that sent nothing gets a zero cotangent).

/// dy/dx for each element of `x` under a max, min or prod collective whose
/// result over the whole tensor (every device's `x` reduced, not
/// scattered) is `full`. Max and min share the derivative equally among
/// the devices that hold the extremum (as reduce_max does); prod uses the
/// product of the other devices' values, exact when some are zero.
static Value collectiveWeight(ADBuilder &ad, ReductionKind kind, Value x,
                              Value full, StringRef axis, int64_t group) {
  OpBuilder &b = ad.builder();
  Location loc = ad.getLoc();
  auto sumOver = [&](Value v) -> Value {
    return AllReduceOp::create(b, loc, v, ReductionKind::sum, axis, group);
  };
  if (kind == ReductionKind::max || kind == ReductionKind::min) {
    Value at = ad.indicator(ad.compare(CompareDirection::eq, x, full), x);
    return ad.div(at, sumOver(at));
  }
  // prod: with z devices holding a zero at an element, the product of the
  // others is P / x if z = 0, P at the zero if z = 1, and 0 otherwise,
  // where P is the product of the non-zero values.
  Value zero = ad.scalarLike(x, 0.0), one = ad.scalarLike(x, 1.0);
  Value isZero = ad.compare(CompareDirection::eq, x, zero);
  Value zeros = sumOver(ad.indicator(isZero, x));
  Value nonZero = AllReduceOp::create(b, loc, ad.select(isZero, one, x),
                                      ReductionKind::prod, axis, group);
  Value safeX = ad.select(isZero, one, x);
  Value noZero = ad.div(nonZero, safeX);
  Value oneZero = ad.select(isZero, nonZero, ad.zerosLike(x));
  Value result = ad.select(ad.compare(CompareDirection::eq, zeros, zero),
                           noZero, ad.zerosLike(x));
  return ad.select(ad.compare(CompareDirection::eq, zeros, one), oneZero,
                   result);
}

LogicalResult AllReduceOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                               SmallVectorImpl<Value> &out) {
  OpBuilder &b = ad.builder();
  ReductionKind kind = getReduction();
  if (kind == ReductionKind::sum || kind == ReductionKind::mean) {
    out.push_back(AllReduceOp::create(b, ad.getLoc(), t[0], kind, getAxisName(),
                                      getGroupSize()));
    return success();
  }
  Value w = collectiveWeight(ad, kind, getX(), getResult(), getAxisName(),
                             getGroupSize());
  out.push_back(AllReduceOp::create(b, ad.getLoc(), ad.mul(w, t[0]),
                                    ReductionKind::sum, getAxisName(),
                                    getGroupSize()));
  return success();
}
LogicalResult AllReduceOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                               SmallVectorImpl<Value> &out) {
  OpBuilder &b = ad.builder();
  ReductionKind kind = getReduction();
  if (kind == ReductionKind::sum || kind == ReductionKind::mean) {
    out.push_back(AllReduceOp::create(b, ad.getLoc(), ct[0], kind, getAxisName(),
                                      getGroupSize()));
    return success();
  }
  Value total = AllReduceOp::create(b, ad.getLoc(), ct[0], ReductionKind::sum,
                                    getAxisName(), getGroupSize());
  out.push_back(ad.mul(collectiveWeight(ad, kind, getX(), getResult(),
                                        getAxisName(), getGroupSize()),
                       total));
  return success();
}

LogicalResult AllGatherOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                               SmallVectorImpl<Value> &out) {
  out.push_back(AllGatherOp::create(ad.builder(), ad.getLoc(), t[0], getDim(),
                                    getAxisName(), getGroupSize()));
  return success();
}
LogicalResult AllGatherOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                               SmallVectorImpl<Value> &out) {
  out.push_back(ReduceScatterOp::create(ad.builder(), ad.getLoc(), ct[0],
                                        ReductionKind::sum, getDim(), getAxisName(),
                                        getGroupSize()));
  return success();
}

/// The weight of a max, min or prod reduce_scatter: the scattered result
/// gathered back to the input's shape gives every element its reduction.
static Value scatterWeight(ADBuilder &ad, ReduceScatterOp op) {
  Value full =
      AllGatherOp::create(ad.builder(), ad.getLoc(), op.getResult(),
                          op.getDim(), op.getAxisName(), op.getGroupSize());
  return collectiveWeight(ad, op.getReduction(), op.getX(), full, op.getAxisName(),
                          op.getGroupSize());
}
LogicalResult ReduceScatterOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                                   SmallVectorImpl<Value> &out) {
  OpBuilder &b = ad.builder();
  ReductionKind kind = getReduction();
  if (kind == ReductionKind::sum || kind == ReductionKind::mean) {
    out.push_back(ReduceScatterOp::create(b, ad.getLoc(), t[0], kind, getDim(),
                                          getAxisName(), getGroupSize()));
    return success();
  }
  out.push_back(ReduceScatterOp::create(
      b, ad.getLoc(), ad.mul(scatterWeight(ad, *this), t[0]),
      ReductionKind::sum, getDim(), getAxisName(), getGroupSize()));
  return success();
}
LogicalResult ReduceScatterOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                                   SmallVectorImpl<Value> &out) {
  Value gathered = AllGatherOp::create(ad.builder(), ad.getLoc(), ct[0],
                                       getDim(), getAxisName(), getGroupSize());
  switch (getReduction()) {
  case ReductionKind::sum:
    out.push_back(gathered);
    break;
  case ReductionKind::mean:
    out.push_back(
        ad.div(gathered,
               ad.scalarLike(gathered, static_cast<double>(getGroupSize()))));
    break;
  default:
    out.push_back(ad.mul(scatterWeight(ad, *this), gathered));
  }
  return success();
}

LogicalResult AllToAllOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                              SmallVectorImpl<Value> &out) {
  out.push_back(AllToAllOp::create(ad.builder(), ad.getLoc(), t[0],
                                   getSplitDim(), getConcatDim(), getAxisName(),
                                   getGroupSize()));
  return success();
}
LogicalResult AllToAllOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                              SmallVectorImpl<Value> &out) {
  out.push_back(AllToAllOp::create(ad.builder(), ad.getLoc(), ct[0],
                                   getConcatDim(), getSplitDim(), getAxisName(),
                                   getGroupSize()));
  return success();
}

LogicalResult PermuteOp::jvp(ADBuilder &ad, ArrayRef<Value> t,
                             SmallVectorImpl<Value> &out) {
  out.push_back(PermuteOp::create(ad.builder(), ad.getLoc(), t[0], getPairs(),
                                  getAxisName()));
  return success();
}
LogicalResult PermuteOp::vjp(ADBuilder &ad, ArrayRef<Value> ct,
                             SmallVectorImpl<Value> &out) {
  OpBuilder &b = ad.builder();
  SmallVector<Attribute> reversed;
  for (Attribute a : getPairs()) {
    ArrayRef<int64_t> pair = cast<DenseI64ArrayAttr>(a).asArrayRef();
    reversed.push_back(b.getDenseI64ArrayAttr({pair[1], pair[0]}));
  }
  out.push_back(PermuteOp::create(b, ad.getLoc(), ct[0],
                                  b.getArrayAttr(reversed), getAxisName()));
  return success();
}
