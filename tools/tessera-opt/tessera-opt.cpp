//===- tessera-opt.cpp - Tessera's mlir-opt -------------------------------===//
//
// The optimizer driver: every upstream dialect, pass and extension, plus
// Tessera's dialects and passes.
//
//===----------------------------------------------------------------------===//

#include "tessera/InitAll.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::tessera::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::tessera::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tessera optimizer driver\n", registry));
}
