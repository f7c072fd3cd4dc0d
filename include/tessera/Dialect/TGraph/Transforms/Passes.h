//===- Passes.h - Graph IR passes -------------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_TGRAPH_TRANSFORMS_PASSES_H
#define TESSERA_DIALECT_TGRAPH_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#include <string>

namespace mlir::tessera::tgraph {

#define GEN_PASS_DECL
#include "tessera/Dialect/TGraph/Transforms/Passes.h.inc"

/// Runs the shape functions of every Graph IR op in `module` in program
/// order, refining `?` dims and inserting run-time checks. Returns failure
/// (with diagnostics) on a shape error.
LogicalResult inferShapes(ModuleOp module, bool allowRuntimeChecks);

/// Expands one tgraph.adjoint / jvp / hvp declaration of `module` into the
/// function it names (the declaration stays; the caller erases it). The
/// function it differentiates must exist. What -tessera-tgraph-autodiff
/// does for every declaration, and what front ends call to use a derivative
/// while tracing.
LogicalResult expandAutodiffDeclaration(ModuleOp module, Operation *decl);

/// Replaces `call` (an op whose results are `fn`'s results) by a copy of
/// the single block of `fn` applied to `args`.
void inlineFunctionAt(Operation *call, ValueRange args, func::FuncOp fn);

/// Adds the patterns that expand composite ops; `only` restricts them to the
/// named ops (mnemonics without the dialect prefix), empty = all.
/// `keepGpuAttention` keeps the attention ops the GPU runs as flash
/// attention (see isGpuFlashAttention).
void populateDecompositionPatterns(RewritePatternSet &patterns,
                                   ArrayRef<std::string> only = {},
                                   bool keepGpuAttention = false);
/// Whether the GPU's flash-attention kernels run this tgraph.attention or
/// tgraph.attention_grad: bf16 or f16 operands of one static shape
/// [..., S, 64 or 128], rank 3 or 4, at most 65535 batch x heads, and no
/// policy but accum = f32 (the kernels accumulate in f32).
bool isGpuFlashAttention(Operation *op);

#define GEN_PASS_REGISTRATION
#include "tessera/Dialect/TGraph/Transforms/Passes.h.inc"

} // namespace mlir::tessera::tgraph

#endif // TESSERA_DIALECT_TGRAPH_TRANSFORMS_PASSES_H
