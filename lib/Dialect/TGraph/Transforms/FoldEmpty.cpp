//===- FoldEmpty.cpp - Ops on tensors with no elements become constants ---===//
//
// A tensor whose static shape has a 0 holds nothing, so an op that produces
// one computes nothing, and an op that reads one where it reduces (a sum
// over an empty axis, a product with an empty contraction) produces its
// identity everywhere. Both become `tgraph.full`. Back ends then never see
// a loop, tile or slice of static size 0 (which upstream tiling and the
// slice verifiers do not accept); empty dims that are symbols are handled
// at run time by the loops themselves.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tessera::tgraph {
#define GEN_PASS_DEF_TGRAPHFOLDEMPTY
#include "tessera/Dialect/TGraph/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tgraph

using namespace mlir;
using namespace mlir::tessera::tgraph;

namespace {

/// A ranked tensor with a static dim of size 0.
bool isEmpty(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && llvm::is_contained(r.getShape(), 0);
}

/// What a reduction of nothing gives.
enum class Fill { Zero, One, NaN, LowestOrNegInf, HighestOrInf };

TypedAttr fillAttr(Type element, Fill fill) {
  if (auto f = dyn_cast<FloatType>(element)) {
    const llvm::fltSemantics &sem = f.getFloatSemantics();
    switch (fill) {
    case Fill::Zero:
      return FloatAttr::get(f, 0.0);
    case Fill::One:
      return FloatAttr::get(f, 1.0);
    case Fill::NaN:
      return FloatAttr::get(f, APFloat::getNaN(sem));
    case Fill::LowestOrNegInf:
    case Fill::HighestOrInf: {
      bool negative = fill == Fill::LowestOrNegInf;
      // Formats without infinities (f8E4M3FN) take their largest value.
      APFloat v = APFloat::getInf(sem, negative);
      if (!v.isInfinity())
        v = APFloat::getLargest(sem, negative);
      return FloatAttr::get(f, v);
    }
    }
  }
  unsigned w = element.getIntOrFloatBitWidth();
  switch (fill) {
  case Fill::One:
    return IntegerAttr::get(element, APInt(w, 1));
  case Fill::LowestOrNegInf:
    return IntegerAttr::get(element, APInt::getSignedMinValue(w));
  case Fill::HighestOrInf:
    return IntegerAttr::get(element, APInt::getSignedMaxValue(w));
  default:
    return IntegerAttr::get(element, APInt(w, 0));
  }
}

/// The fill of an op whose result holds elements although an operand is
/// empty: the op reduces over the empty dims (nullopt for other ops).
std::optional<Fill> reductionFill(Operation *op) {
  return TypeSwitch<Operation *, std::optional<Fill>>(op)
      .Case<ReduceSumOp, MatmulOp, BatchMatmulOp, DotGeneralOp, Conv2dOp,
            AttentionOp>([](auto) { return Fill::Zero; })
      .Case<ReduceProdOp>([](auto) { return Fill::One; })
      .Case<ReduceMeanOp>([](auto) { return Fill::NaN; })
      .Case<ReduceMaxOp, LogsumexpOp, LogsumexpSafeOp>(
          [](auto) { return Fill::LowestOrNegInf; })
      .Case<ReduceMinOp>([](auto) { return Fill::HighestOrInf; })
      .Case<CrossEntropyOp>([](CrossEntropyOp ce) -> std::optional<Fill> {
        // No examples: the mean of nothing and the sum of nothing. (No
        // classes is not a reduction of nothing: the labels index them.)
        if (!isEmpty(ce.getLabels().getType()))
          return std::nullopt;
        return ce.getReduction() == LossReduction::mean ? Fill::NaN
                                                        : Fill::Zero;
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// Replaces `v` by a `tgraph.full` of its type (none when `v` is unused).
/// The builder's listener sees the new op.
void replaceByFull(OpBuilder &b, Value v, TypedAttr value) {
  if (v.use_empty())
    return;
  b.setInsertionPointAfterValue(v);
  v.replaceAllUsesWith(FullOp::create(b, v.getLoc(), v.getType(), value));
}

/// Folds `op`; true if it changed the IR (the op is then dead or rewired).
bool fold(OpBuilder &b, Operation *op) {
  if (!isa<TGraphDialect>(op->getDialect()) || op->getNumRegions() ||
      isa<FullOp, ConstantOp>(op) || !isMemoryEffectFree(op) ||
      op->getNumResults() == 0 ||
      !llvm::all_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>))
    return false;
  Type element = getElementTypeOrSelf(op->getResult(0).getType());
  if (llvm::all_of(op->getResultTypes(), isEmpty)) {
    for (Value r : op->getResults())
      replaceByFull(b, r,
                    fillAttr(getElementTypeOrSelf(r.getType()), Fill::Zero));
    return true;
  }
  if (!llvm::any_of(op->getOperandTypes(), isEmpty))
    return false;
  if (auto pad = dyn_cast<PadOp>(op)) {
    replaceByFull(b, pad.getResult(), cast<TypedAttr>(pad.getValue()));
    return true;
  }
  if (auto scatter = dyn_cast<ScatterAddOp>(op);
      scatter && isEmpty(scatter.getUpdates().getType())) {
    scatter.getResult().replaceAllUsesWith(scatter.getX());
    return true;
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    SmallVector<Value> kept;
    for (Value v : concat.getInputs())
      if (!isEmpty(v.getType()))
        kept.push_back(v);
    b.setInsertionPoint(concat);
    concat.getResult().replaceAllUsesWith(ConcatOp::create(
        b, concat.getLoc(), concat.getType(), kept, concat.getDim()));
    return true;
  }
  std::optional<Fill> fill = reductionFill(op);
  if (!fill)
    return false;
  replaceByFull(b, op->getResult(0), fillAttr(element, *fill));
  return true;
}

struct TGraphFoldEmpty
    : public mlir::tessera::tgraph::impl::TGraphFoldEmptyBase<TGraphFoldEmpty> {
  void runOnOperation() override {
    // Fulls made for values whose users were folded in turn end up unused.
    struct Created : public OpBuilder::Listener {
      SmallVector<Operation *> ops;
      void notifyOperationInserted(Operation *op,
                                   OpBuilder::InsertPoint) override {
        ops.push_back(op);
      }
    } created;
    OpBuilder b(&getContext(), &created);
    getOperation()->walk([&](Operation *op) {
      if (fold(b, op) && op->use_empty())
        op->erase(); // (post-order: erasing the op visited is allowed)
    });
    for (Operation *op : llvm::reverse(created.ops))
      if (op->use_empty())
        op->erase();
  }
};

} // namespace
