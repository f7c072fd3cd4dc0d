//===- PipelineLoads.cpp - Issue a loop's loads one iteration ahead
//--------===//

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TTILEPIPELINELOADS
#include "tessera/Conversion/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;

namespace {

/// Whether `v` is available before `loop` (defined above it) or is its
/// induction variable.
bool invariantOrIv(Value v, RangeOp loop) {
  if (v == loop.getInductionVar())
    return true;
  Region *region = v.getParentRegion();
  return !loop.getBody().isAncestor(region);
}

/// The memrefs the loop may write; failure when a write's target is not
/// known.
FailureOr<SmallVector<Value>> writtenMemrefs(RangeOp loop) {
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

void pipeline(RangeOp loop) {
  Block &body = loop.getBody().front();
  Value iv = loop.getInductionVar();
  auto written = writtenMemrefs(loop);
  if (failed(written))
    return;
  SmallVector<LoadOp> loads;
  for (auto load : body.getOps<LoadOp>()) {
    if (llvm::is_contained(*written, load.getSource()) ||
        isa_and_nonnull<SharedAttr>(load.getType().getEncoding()))
      continue;
    if (llvm::all_of(load->getOperands(),
                     [&](Value v) { return invariantOrIv(v, loop); }))
      loads.push_back(load);
  }
  if (loads.empty())
    return;
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  // The first iteration's tiles, loaded before the loop.
  SmallVector<Value> inits(loop.getInits());
  SmallVector<Type> types(loop.getResultTypes());
  for (LoadOp load : loads) {
    IRMapping first;
    first.map(iv, loop.getLowerBound());
    inits.push_back(b.clone(*load, first)->getResult(0));
    types.push_back(load.getType());
  }
  auto next =
      RangeOp::create(b, loc, types, loop.getLowerBound(), loop.getUpperBound(),
                      loop.getStep(), inits, loop.getStagesAttr());
  next.getBody().takeBody(loop.getBody());
  Operation *yield = body.getTerminator();
  // Issued first, so that the loads are in flight during the iteration.
  b.setInsertionPointToStart(&body);
  Value ahead = arith::AddIOp::create(b, loc, iv, loop.getStep());
  SmallVector<Value> yielded(yield->getOperands());
  for (LoadOp load : loads) {
    // This iteration's tile was loaded by the previous one; load the next
    // iteration's now.
    BlockArgument carried = body.addArgument(load.getType(), load.getLoc());
    IRMapping nextIter;
    nextIter.map(iv, ahead);
    yielded.push_back(b.clone(*load, nextIter)->getResult(0));
    load.getResult().replaceAllUsesWith(carried);
  }
  // Erased last: the builder inserts before the block's first op, which
  // may be one of them.
  for (LoadOp load : loads)
    load.erase();
  yield->setOperands(yielded);
  for (auto [from, to] : llvm::zip(loop.getResults(), next.getResults()))
    from.replaceAllUsesWith(to);
  loop.erase();
}

struct TTilePipelineLoadsPass
    : tessera::impl::TTilePipelineLoadsBase<TTilePipelineLoadsPass> {
  void runOnOperation() override {
    SmallVector<RangeOp> loops;
    getOperation().walk([&](RangeOp loop) {
      if (loop.getStages() >= 2)
        loops.push_back(loop);
    });
    for (RangeOp loop : loops)
      pipeline(loop);
  }
};

} // namespace
