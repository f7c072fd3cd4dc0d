//===- InitAll.h - Register Tessera's dialects and passes -------*- C++ -*-===//

#ifndef TESSERA_INITALL_H
#define TESSERA_INITALL_H

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"
#include "tessera/Dialect/TSched/Transforms/Passes.h"
#include "tessera/Dialect/TTile/Transforms/Passes.h"
#include "tessera/InitAllDialects.h"
#include "tessera/Pipelines/Pipelines.h"
#include "tessera/Transforms/Passes.h"

namespace mlir::tessera {

/// Registers Tessera's passes and pipelines with the global pass registry.
inline void registerAllPasses() {
  tgraph::registerTGraphPasses();
  tsched::registerTSchedPasses();
  ttile::registerTTilePasses();
  registerTesseraConversionPasses();
  registerTesseraTransformsPasses();
  registerPipelines();
}

} // namespace mlir::tessera

#endif // TESSERA_INITALL_H
