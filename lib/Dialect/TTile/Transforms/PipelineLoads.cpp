//===- PipelineLoads.cpp - Issue loads stages - 1 iterations ahead -------===//

#include "tessera/Dialect/TTile/Transforms/LoopAhead.h"

#include "tessera/Dialect/TTile/Transforms/Passes.h"
#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tessera::ttile {
#define GEN_PASS_DEF_TTILEPIPELINELOADS
#include "tessera/Dialect/TTile/Transforms/Passes.h.inc"
} // namespace mlir::tessera::ttile

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

/// Whether `load` (with the body ops `slice` its operands need) reads a
/// different tile in each iteration. A load that does not depend on the
/// induction variable reads the same tile each time, from cache after the
/// first: carrying it between iterations would only hold registers.
bool variesWithIteration(LoadOp load, ArrayRef<Operation *> slice, Value iv) {
  auto usesIv = [&](Operation *op) {
    return llvm::is_contained(op->getOperands(), iv);
  };
  return usesIv(load) || llvm::any_of(slice, usesIv);
}

void pipeline(RangeOp loop) {
  Block &body = loop.getBody().front();
  Value iv = loop.getInductionVar();
  auto written = writtenMemrefs(loop);
  if (failed(written))
    return;
  SmallVector<LoadOp> loads;
  SmallVector<SmallVector<Operation *>> slices;
  bool ring = false;
  for (auto load : body.getOps<LoadOp>()) {
    if (isa_and_nonnull<SharedAttr>(load.getType().getEncoding())) {
      ring = true;
      continue;
    }
    if (llvm::is_contained(*written, load.getSource()))
      continue;
    llvm::SetVector<Operation *> slice;
    if (llvm::all_of(
            load->getOperands(),
            [&](Value v) { return computableAhead(v, loop, slice); }) &&
        variesWithIteration(load, slice.getArrayRef(), iv)) {
      loads.push_back(load);
      slices.push_back(slice.takeVector());
    }
  }
  if (loads.empty())
    return;
  // Each load runs `ahead` iterations before its tile is used: the loop
  // carries that many tiles of it, oldest first. In a loop whose operands
  // stream through a shared-memory ring, `stages` sizes the ring, and the
  // loads into registers (row statistics beside the tiles) run one
  // iteration ahead: more would hold registers the products need.
  int64_t ahead = ring ? 1 : loop.getStages() - 1;
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  auto offset = [&](Value from, int64_t k) -> Value {
    if (k == 0)
      return from;
    Value step = loop.getStep();
    if (k > 1)
      step = arith::MulIOp::create(b, loc, step,
                                   arith::ConstantIndexOp::create(b, loc, k));
    return arith::AddIOp::create(b, loc, from, step);
  };
  // The first `ahead` iterations' tiles, loaded before the loop.
  SmallVector<Value> inits(loop.getInits());
  SmallVector<Type> types(loop.getResultTypes());
  for (auto [load, slice] : llvm::zip(loads, slices)) {
    for (int64_t k = 0; k < ahead; ++k) {
      inits.push_back(
          cloneFor(b, load, iv, offset(loop.getLowerBound(), k), slice));
      types.push_back(load.getType());
    }
  }
  auto next =
      RangeOp::create(b, loc, types, loop.getLowerBound(), loop.getUpperBound(),
                      loop.getStep(), inits, loop.getStagesAttr());
  next.getBody().takeBody(loop.getBody());
  Operation *yield = body.getTerminator();
  // Issued first, so that the loads are in flight during the iteration.
  b.setInsertionPointToStart(&body);
  Value later = offset(iv, ahead);
  SmallVector<Value> yielded(yield->getOperands());
  for (auto [load, slice] : llvm::zip(loads, slices)) {
    // This iteration's tile was loaded `ahead` iterations before; the
    // others move one place up, and the tile of iteration iv + ahead is
    // loaded now.
    SmallVector<Value> carried;
    for (int64_t k = 0; k < ahead; ++k)
      carried.push_back(body.addArgument(load.getType(), load.getLoc()));
    yielded.append(carried.begin() + 1, carried.end());
    yielded.push_back(cloneFor(b, load, iv, later, slice));
    load.getResult().replaceAllUsesWith(carried.front());
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
    : ttile::impl::TTilePipelineLoadsBase<TTilePipelineLoadsPass> {
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
