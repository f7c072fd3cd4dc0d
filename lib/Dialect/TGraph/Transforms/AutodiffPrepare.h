//===- AutodiffPrepare.h - The form autodiff differentiates -----*- C++ -*-===//

#ifndef TESSERA_TGRAPH_TRANSFORMS_AUTODIFFPREPARE_H
#define TESSERA_TGRAPH_TRANSFORMS_AUTODIFFPREPARE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tessera::tgraph {

/// Rewrites `fn` (a copy being differentiated) into the form the walks
/// differentiate: calls inlined, conv2d as im2col and dot_general, while
/// loops with a trip count as carry-storing scans; for forward mode,
/// custom_vjp evaluates its callee and checkpoints are inlined; for reverse
/// mode, custom_jvp evaluates its callee.
LogicalResult prepareForAutodiff(func::FuncOp fn, bool forwardMode);

} // namespace mlir::tessera::tgraph

#endif // TESSERA_TGRAPH_TRANSFORMS_AUTODIFFPREPARE_H
