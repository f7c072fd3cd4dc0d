//===- SinkToUses.cpp - Pure ops of GPU kernels next to their first use ---===//
//
// The thread-level lowering writes a tile op as one op per element, op after
// op; this pass interleaves the chains so that each element's values are
// made just before they are used and die soon after (see the pass
// description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "tessera/Conversion/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_SINKTOUSES
#include "tessera/Conversion/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

/// Whether `op` may move within its block: no memory effects, no regions,
/// not a terminator, not a constant (the canonicalizer hoists those
/// again).
bool movable(Operation *op) {
  if (op->getNumRegions() != 0 || op->hasTrait<OpTrait::IsTerminator>() ||
      op->getNumResults() == 0 || matchPattern(op, m_Constant()))
    return false;
  return isMemoryEffectFree(op) && isSpeculatable(op);
}

/// The op of `block` holding the first use of `op`'s results, or null if a
/// use is outside the block or there is none.
Operation *firstUser(Operation *op, Block &block) {
  Operation *first = nullptr;
  for (Operation *user : op->getUsers()) {
    Operation *at = block.findAncestorOpInBlock(*user);
    if (!at)
      return nullptr;
    if (!first || at->isBeforeInBlock(first))
      first = at;
  }
  return first;
}

/// Moves the movable ops of `block` down to their first user. Walking from
/// the end, an op's users have reached their places when it moves.
void sinkBlock(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    if (!movable(op))
      continue;
    Operation *to = firstUser(op, block);
    if (to && op->getNextNode() != to)
      op->moveBefore(to);
  }
}

struct SinkToUsesPass
    : mlir::tessera::impl::SinkToUsesBase<SinkToUsesPass> {
  void runOnOperation() override {
    getOperation()->walk([](gpu::GPUFuncOp kernel) {
      kernel.walk([](Block *block) { sinkBlock(*block); });
    });
  }
};

} // namespace
