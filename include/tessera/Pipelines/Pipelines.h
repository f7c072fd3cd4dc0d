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

/// Graph IR to the LLVM dialect for the host CPU.
void buildCPUPipeline(OpPassManager &pm);

/// Registers `tessera-cpu-pipeline`.
void registerPipelines();

} // namespace mlir::tessera

#endif // TESSERA_PIPELINES_PIPELINES_H
