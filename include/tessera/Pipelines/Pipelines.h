//===- Pipelines.h - Tessera compilation pipelines --------------*- C++ -*-===//
//
// The pipelines are C++ functions registered as pass pipelines, so
// `tessera-opt --tessera-cpu-pipeline` reproduces exactly what the tools
// and front ends run.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PIPELINES_PIPELINES_H
#define TESSERA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"

namespace mlir::tessera {

/// Where buildCPUPipeline() may stop (to inspect the IR at that level).
enum class CPUStage {
  /// Graph IR after shape inference, autodiff, inlining and decomposition.
  GraphOptimized,
  /// linalg and tensor ops, before the schedule.
  Linalg,
  /// After the CPU schedule (tiles, packing, vectors), before buffers.
  Scheduled,
  /// The LLVM dialect: the whole pipeline.
  LLVM,
};

/// Graph IR to the LLVM dialect for the host CPU (or the IR at `stopAfter`).
void buildCPUPipeline(OpPassManager &pm, CPUStage stopAfter = CPUStage::LLVM);

/// Registers `tessera-cpu-pipeline`.
void registerPipelines();

} // namespace mlir::tessera

#endif // TESSERA_PIPELINES_PIPELINES_H
