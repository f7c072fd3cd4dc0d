//===- PipelineLoads.cpp - Issue a loop's loads one iteration ahead
//--------===//

#include "LoopAhead.h"

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TTILEPIPELINELOADS
#include "tessera/Conversion/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;

namespace {

/// Clones `load` for the iteration whose induction variable `loopIv` is
/// `iv` (with the body ops its operands need) at `b`'s insertion point.
Value cloneFor(OpBuilder &b, LoadOp load, Value loopIv, Value iv,
               ArrayRef<Operation *> slice) {
  IRMapping map;
  map.map(loopIv, iv);
  for (Operation *op : inBodyOrder(slice))
    b.clone(*op, map);
  return b.clone(*load, map)->getResult(0);
}

void pipeline(RangeOp loop) {
  Block &body = loop.getBody().front();
  Value iv = loop.getInductionVar();
  auto written = writtenMemrefs(loop);
  if (failed(written))
    return;
  SmallVector<LoadOp> loads;
  SmallVector<SmallVector<Operation *>> slices;
  for (auto load : body.getOps<LoadOp>()) {
    if (llvm::is_contained(*written, load.getSource()) ||
        isa_and_nonnull<SharedAttr>(load.getType().getEncoding()))
      continue;
    llvm::SetVector<Operation *> slice;
    if (llvm::all_of(load->getOperands(), [&](Value v) {
          return computableAhead(v, loop, slice);
        })) {
      loads.push_back(load);
      slices.push_back(slice.takeVector());
    }
  }
  if (loads.empty())
    return;
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  // The first iteration's tiles, loaded before the loop.
  SmallVector<Value> inits(loop.getInits());
  SmallVector<Type> types(loop.getResultTypes());
  for (auto [load, slice] : llvm::zip(loads, slices)) {
    inits.push_back(cloneFor(b, load, iv, loop.getLowerBound(), slice));
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
  for (auto [load, slice] : llvm::zip(loads, slices)) {
    // This iteration's tile was loaded by the previous one; load the next
    // iteration's now.
    BlockArgument carried = body.addArgument(load.getType(), load.getLoc());
    yielded.push_back(cloneFor(b, load, iv, ahead, slice));
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
