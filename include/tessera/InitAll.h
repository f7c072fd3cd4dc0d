//===- InitAll.h - Register Tessera's dialects and passes -------*- C++ -*-===//

#ifndef TESSERA_INITALL_H
#define TESSERA_INITALL_H

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::tessera {

/// Registers Tessera's dialects and those its IR uses directly.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<tgraph::TGraphDialect, func::FuncDialect,
                  arith::ArithDialect>();
}

/// Registers Tessera's passes with the global pass registry.
inline void registerAllPasses() { tgraph::registerTGraphPasses(); }

} // namespace mlir::tessera

#endif // TESSERA_INITALL_H
