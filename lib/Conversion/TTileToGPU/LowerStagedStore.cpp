//===- LowerStagedStore.cpp - Output tiles through shared memory and TMA -===//
//
// In a kernel with a producer warpgroup, a store of a 2-byte tile inside a
// loop (planned by planSpecialization) leaves the consumers through a
// shared buffer: they write the tile into it in the swizzled layout TMA
// reads (stmatrix for tensor-core fragments, else 16-byte runs where the
// quad exchange gives them), fence it for the async proxy, and one thread
// issues a TMA store of each box and commits them as one bulk group. The next
// use of the buffer waits until TMA read it (not for the other outputs'
// groups committed since); the program waits for the last copies before it
// ends. The consumers go on with the next tile while the
// copies run.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;
using namespace mlir::tessera::ttile::detail;

LogicalResult KernelLowering::lowerStagedStore(StoreOp op,
                                               const StagedStore &staged) {
  Location loc = op.getLoc();
  auto t = cast<RankedTensorType>(op.getValue().getType());
  const TmaMap &tm = tmaMaps[staged.map];
  int64_t rows = t.getShape()[0], cols = t.getShape()[1];
  auto whether = scf::IfOp::create(
      b, loc, TypeRange{},
      mapUsable(b, loc, tmaTable, staged.map, unsigned(tmaMaps.size())), true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&whether.getElseRegion().front());
    if (failed(lowerStoreDirect(op)))
      return failure();
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&whether.getThenRegion().front());
  auto found = dist(op, t);
  if (failed(found))
    return failure();
  Distribution d = *found;
  Regs vals = tiles.lookup(op.getValue());
  // (stmatrix exchanges the fragments' pairs itself.)
  if (!fitsStmatrix(d, t.getElementType())) {
    FailureOr<Distribution> widened =
        widenRuns(loc, d, vals, t.getElementType());
    if (succeeded(widened))
      d = *widened;
  }
  Value first = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::AddIOp::create(b, loc, lane,
                            arith::MulIOp::create(b, loc, warp, index(32))),
      index(0));
  // The buffer is free once TMA read the previous tile out of it. Where
  // every staged store of the kernel is in this block and all of them go
  // through TMA (each then commits one bulk group an iteration, in order),
  // the groups of the other stores since this one's last may still run;
  // else all must be read.
  int64_t others = 0;
  bool together = true;
  for (auto &entry : stagedStores) {
    if (entry.first == op.getOperation())
      continue;
    together = together && entry.first->getBlock() == op->getBlock();
    ++others;
  }
  under(b, loc, first, [&] {
    if (!together || others == 0) {
      NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, b.getUnitAttr());
      return;
    }
    Value all;
    for (auto &entry : stagedStores) {
      Value usable = mapUsable(b, loc, tmaTable, entry.second.map,
                               unsigned(tmaMaps.size()));
      all = all ? arith::AndIOp::create(b, loc, all, usable).getResult()
                : usable;
    }
    auto pick = scf::IfOp::create(b, loc, TypeRange{}, all, true);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(&pick.getThenRegion().front());
    NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, int32_t(others),
                                         b.getUnitAttr());
    b.setInsertionPointToStart(&pick.getElseRegion().front());
    NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, b.getUnitAttr());
  });
  gpu::BarrierOp::create(b, loc);
  Value base =
      arith::AddIOp::create(b, loc, dynamicSharedBase(), index(staged.offset));
  writeSharedTile(loc, d, vals, base, rows, tm.swizzle, t.getElementType());
  // Written through the generic proxy, read by TMA's.
  fenceSharedForTensorCores(loc);
  gpu::BarrierOp::create(b, loc);
  under(b, loc, first, [&] {
    SmallVector<Value> lead;
    for (OpFoldResult o : staged.leading)
      lead.push_back(isa<Value>(o) ? map.lookup(cast<Value>(o))
                                   : index(*getConstantIntValue(o)));
    Value row0 = map.lookup(op.getIndices()[0]);
    Value col0 = map.lookup(op.getIndices()[1]);
    for (int64_t p = 0; p < cols / tm.cols; ++p)
      for (int64_t q = 0; q < rows / tm.rows; ++q) {
        Value from = arith::AddIOp::create(
            b, loc, base,
            index(p * rows * tm.swizzle + q * tm.rows * tm.swizzle));
        NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
            b, loc,
            genericPointer(b, loc, mapAddress(b, loc, tmaTable, staged.map)),
            sharedPointer(b, loc, from),
            tmaCoordinates(
                b, loc, arith::AddIOp::create(b, loc, col0, index(p * tm.cols)),
                arith::AddIOp::create(b, loc, row0, index(q * tm.rows)), lead),
            Value(), NVVM::TMAStoreMode::TILE, Value());
      }
    NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
  });
  return success();
}
