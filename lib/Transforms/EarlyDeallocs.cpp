//===- EarlyDeallocs.cpp - Free buffers after their last use --------------===//

#include "tessera/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/Transforms/BufferViewFlowAnalysis.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_EARLYDEALLOCS
#include "tessera/Transforms/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

struct EarlyDeallocsPass
    : public mlir::tessera::impl::EarlyDeallocsBase<EarlyDeallocsPass> {
  void runOnOperation() override {
    Operation *root = getOperation();
    // scf.if true { memref.dealloc %m } -> memref.dealloc %m
    SmallVector<scf::IfOp> wrappers;
    root->walk([&](scf::IfOp op) {
      auto c = op.getCondition().getDefiningOp<arith::ConstantOp>();
      auto v = c ? dyn_cast<BoolAttr>(c.getValue()) : BoolAttr();
      Block &then = op.getThenRegion().front();
      if (v && v.getValue() && op.getNumResults() == 0 &&
          op.getElseRegion().empty() &&
          llvm::all_of(then.without_terminator(),
                       [](Operation &o) { return isa<memref::DeallocOp>(o); }))
        wrappers.push_back(op);
    });
    for (scf::IfOp op : wrappers) {
      Block &then = op.getThenRegion().front();
      for (Operation &o : llvm::make_early_inc_range(then.without_terminator()))
        o.moveBefore(op);
      op.erase();
    }

    // Allocations move down to their first use (the deallocation pipeline
    // leaves them where the tensors were created, often all at the top).
    SmallVector<memref::AllocOp> allocs;
    root->walk([&](memref::AllocOp op) { allocs.push_back(op); });
    for (memref::AllocOp alloc : allocs) {
      Block *block = alloc->getBlock();
      Operation *first = nullptr;
      for (Operation *user : alloc->getUsers()) {
        Operation *at = block->findAncestorOpInBlock(*user);
        if (!at) {
          first = nullptr;
          break;
        }
        if (!first || at->isBeforeInBlock(first))
          first = at;
      }
      if (first && alloc->isBeforeInBlock(first))
        alloc->moveBefore(first);
    }

    BufferViewFlowAnalysis aliases(root);
    SmallVector<memref::DeallocOp> deallocs;
    root->walk([&](memref::DeallocOp op) { deallocs.push_back(op); });
    for (memref::DeallocOp dealloc : deallocs) {
      Value buffer = dealloc.getMemref();
      Operation *alloc = buffer.getDefiningOp();
      Block *block = dealloc->getBlock();
      if (!isa_and_nonnull<memref::AllocOp>(alloc) ||
          alloc->getBlock() != block)
        continue;
      // The last op of the block that touches the buffer or a view of it.
      Operation *last = alloc;
      bool escapes = false;
      for (Value alias : aliases.resolve(buffer))
        for (Operation *user : alias.getUsers()) {
          if (user == dealloc)
            continue;
          Operation *at = block->findAncestorOpInBlock(*user);
          if (!at) {
            escapes = true; // used outside this block
            continue;
          }
          if (last->isBeforeInBlock(at))
            last = at;
        }
      if (escapes || !last->isBeforeInBlock(dealloc))
        continue;
      dealloc->moveAfter(last);
    }
  }
};

} // namespace
