//===- LowerStagedStore.cpp - Output tiles through shared memory and TMA -===//
//
// In a kernel with a producer warpgroup, a store of a 2-byte tile inside a
// loop (planned by planSpecialization) leaves the consumers through a
// shared buffer: they write the tile into it in the swizzled layout TMA
// reads (stmatrix for tensor-core fragments, else 16-byte runs where the
// quad exchange gives them), fence it for the async proxy, and one thread
// issues a TMA store of each box and commits them as one bulk group. The next
// use of the buffer waits until TMA read it; the program waits for the last
// copies before it ends. The consumers go on with the next tile while the
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
  // The buffer is free once TMA read the previous tile out of it.
  under(b, loc, first, [&] {
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
