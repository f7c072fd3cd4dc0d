//===- KernelLowering.cpp - A kernel's entry, programs and roles ----------===//
//
// The kernel's entry: each thread's lane, warp and program (several
// programs a block with ttile.programs_per_block), then the body lowered
// as one program of warps, or as a producer warpgroup and its consumers
// (LowerProducer.cpp).
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;
using namespace mlir::tessera::ttile::detail;

LogicalResult KernelLowering::run() {
  Block &entry = dst.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (auto [from, to] :
       llvm::zip(src.getArguments(),
                 entry.getArguments().take_front(src.getNumArguments())))
    map.map(from, to);
  Location loc = src.getLoc();
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, index(32));
  warp = arith::DivUIOp::create(b, loc, tid, index(32));
  programIndex = index(0);
  if (programs > 1) {
    // Several programs a block (ttile.programs_per_block): consumer warp
    // w is warp w % numWarps of program w / numWarps; producer warp j
    // (after all consumers) is warp numWarps + j, of program 0: producer
    // warp 0 fills the rings of every program (LowerProducer.cpp).
    Value consumers = index(numWarps * programs);
    Value isConsumer = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult, warp, consumers);
    Value producerWarp = arith::SubIOp::create(b, loc, warp, consumers);
    programIndex = arith::SelectOp::create(
        b, loc, isConsumer,
        arith::DivUIOp::create(b, loc, warp, index(numWarps)), index(0));
    warp = arith::SelectOp::create(
        b, loc, isConsumer,
        arith::RemUIOp::create(b, loc, warp, index(numWarps)),
        arith::AddIOp::create(b, loc, producerWarp, index(numWarps)));
    if (!useTma || !planSpecialization()) {
      if (planError)
        return failure();
      return src.emitError()
             << "ttile.programs_per_block = " << programs
             << " needs a warp-specialized kernel (sm_90a, top-level "
                "ranges whose shared tiles TMA can copy, the rings and "
                "each program's other shared tiles within "
             << sharedLimit << " bytes of shared memory)";
    }
    if (multicastCluster > 1)
      return src.emitError() << "ttile.programs_per_block does not go "
                                "with multicast loads (ttile.cluster)";
    LogicalResult status = runSpecialized();
    placeScratch();
    return status;
  }
  if (useTma && planSpecialization()) {
    LogicalResult status = runSpecialized();
    placeScratch();
    return status;
  }
  if (failed(lowerKernelBody()))
    return failure();
  gpu::ReturnOp::create(b, loc);
  placeScratch();
  return success();
}

Value KernelLowering::programId(Location loc, int64_t dim) {
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension(dim));
  if (programs == 1 || dim != 0)
    return block;
  return arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, block, index(programs)),
      programIndex);
}
Value KernelLowering::numPrograms(Location loc, int64_t dim) {
  Value grid = gpu::GridDimOp::create(b, loc, gpu::Dimension(dim));
  if (programs == 1 || dim != 0)
    return grid;
  return arith::MulIOp::create(b, loc, grid, index(programs));
}
Value KernelLowering::blockWarpgroup(Location loc) {
  Value own = arith::DivUIOp::create(b, loc, warp, index(4));
  if (programs == 1)
    return own;
  return arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, programIndex, index(numWarps / 4)),
      own);
}
