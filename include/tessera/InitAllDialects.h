//===- InitAllDialects.h - Register Tessera's dialects ----------*- C++ -*-===//
//
// Kept apart from the pass registration so that tools which only parse and
// verify IR (the fuzzer) do not link the lowering libraries.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_INITALLDIALECTS_H
#define TESSERA_INITALLDIALECTS_H

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TSched/IR/TSched.h"
#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::tessera {

/// Registers Tessera's dialects and those its IR uses directly.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<tgraph::TGraphDialect, tsched::TSchedDialect,
                  ttile::TTileDialect, func::FuncDialect,
                  arith::ArithDialect>();
}

} // namespace mlir::tessera

#endif // TESSERA_INITALLDIALECTS_H
