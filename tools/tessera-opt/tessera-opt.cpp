//===- tessera-opt.cpp - Tessera's mlir-opt -------------------------------===//
//
// The optimizer driver: every upstream dialect, pass and extension (and the
// LLVM IR translations that GPU serialization needs), plus Tessera's
// dialects and passes.
//
//===----------------------------------------------------------------------===//

#include "tessera/InitAll.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::tessera::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // GPU modules serialize through LLVM IR (gpu-module-to-binary: PTX,
  // cubin).
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::tessera::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tessera optimizer driver\n", registry));
}
