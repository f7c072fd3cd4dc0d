//===- LoopAhead.h - What a ttile.range can do ahead of an iteration ------===//
//
// Shared by -tessera-ttile-pipeline-loads (loads one iteration ahead, in
// registers) and the GPU lowering's shared-memory rings (copies several
// iterations ahead): which memrefs a loop writes, and which values can be
// computed for another iteration.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TTILE_TRANSFORMS_LOOPAHEAD_H
#define TESSERA_DIALECT_TTILE_TRANSFORMS_LOOPAHEAD_H

#include "tessera/Dialect/TTile/IR/TTile.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::tessera::ttile {

/// The memrefs `loop` may write; failure when a write's target is not
/// known.
FailureOr<SmallVector<Value>> writtenMemrefs(RangeOp loop);

/// Whether `v` can be computed for another iteration of `loop`: its
/// induction variable, a value from above it, or a pure arith op of its
/// body on such values (an index computed from the induction variable);
/// the body's ops it needs are added to `slice`.
bool computableAhead(Value v, RangeOp loop,
                     llvm::SetVector<Operation *> &slice);

/// `slice` in the order of the loop body.
SmallVector<Operation *> inBodyOrder(ArrayRef<Operation *> slice);

} // namespace mlir::tessera::ttile

#endif // TESSERA_DIALECT_TTILE_TRANSFORMS_LOOPAHEAD_H
