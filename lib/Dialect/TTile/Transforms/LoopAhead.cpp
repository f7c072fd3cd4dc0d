//===- LoopAhead.cpp - What a ttile.range can do ahead of an iteration ----===//

#include "tessera/Dialect/TTile/Transforms/LoopAhead.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::tessera::ttile;

FailureOr<SmallVector<Value>>
mlir::tessera::ttile::writtenMemrefs(RangeOp loop) {
  SmallVector<Value> written;
  WalkResult result = loop.getBody().walk([&](Operation *op) {
    if (auto store = dyn_cast<StoreOp>(op)) {
      written.push_back(store.getDest());
      return WalkResult::advance();
    }
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return op->hasTrait<OpTrait::HasRecursiveMemoryEffects>()
                 ? WalkResult::advance()
                 : WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (auto &e : list) {
      if (!isa<MemoryEffects::Write>(e.getEffect()))
        continue;
      if (!e.getValue())
        return WalkResult::interrupt();
      written.push_back(e.getValue());
    }
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  return written;
}

bool mlir::tessera::ttile::computableAhead(
    Value v, RangeOp loop, llvm::SetVector<Operation *> &slice) {
  if (v == loop.getInductionVar() ||
      !loop.getBody().isAncestor(v.getParentRegion()))
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != &loop.getBody().front() ||
      def->getNumRegions() || !isa<arith::ArithDialect>(def->getDialect()) ||
      !isPure(def) ||
      llvm::any_of(def->getResultTypes(), llvm::IsaPred<RankedTensorType>))
    return false;
  if (slice.contains(def))
    return true;
  for (Value operand : def->getOperands())
    if (!computableAhead(operand, loop, slice))
      return false;
  slice.insert(def);
  return true;
}

SmallVector<Operation *>
mlir::tessera::ttile::inBodyOrder(ArrayRef<Operation *> slice) {
  SmallVector<Operation *> ordered(slice);
  llvm::sort(ordered,
             [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  return ordered;
}
