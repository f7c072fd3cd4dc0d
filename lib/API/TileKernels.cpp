//===- TileKernels.cpp - Tile IR kernels to PTX ---------------------------===//

#include "tessera/API/TileKernels.h"

#include "tessera/Dialect/TGraph/IR/TypeInference.h"
#include "tessera/InitAllDialects.h"
#include "tessera/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

using namespace mlir;

namespace tessera {

static DialectRegistry &tileRegistry() {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry;
    registerAllDialects(*r);
    registerAllExtensions(*r);
    // gpu-module-to-binary serializes through LLVM IR.
    registerAllToLLVMIRTranslations(*r);
    mlir::tessera::registerAllDialects(*r);
    return r;
  }();
  return *registry;
}

/// The dynamic shared memory the lowering recorded for each kernel (a PTX
/// global `tessera_dynamic_smem_<kernel> = <bytes>`).
static unsigned sharedBytesOf(StringRef ptx, StringRef kernel) {
  llvm::Regex re(("tessera_dynamic_smem_" + kernel + " = ([0-9]+)").str());
  SmallVector<StringRef> groups;
  unsigned bytes = 0;
  if (re.match(ptx, &groups))
    (void)llvm::to_integer(groups[1], bytes);
  return bytes;
}

Result<CompiledTileModule> compileTileKernels(const std::string &source,
                                              const TileCompileOptions &options,
                                              const std::string &sourceName) {
  MLIRContext context(tileRegistry(), MLIRContext::Threading::DISABLED);
  // Diagnostics name the user's line; the IR dump of the failing op would
  // bury it.
  context.printOpOnDiagnostic(false);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error)
      return success();
    if (!diagnostics.empty())
      diagnostics += "\n";
    diagnostics += mlir::tessera::tgraph::describeLocation(diag.getLocation()) +
                   ": error: " + diag.str();
    for (Diagnostic &note : diag.getNotes())
      diagnostics +=
          "\n" + mlir::tessera::tgraph::describeLocation(note.getLocation()) +
          ": note: " + note.str();
    return success();
  });
  auto fail = [&](StringRef what) -> Error {
    return Error{what.str() + (diagnostics.empty() ? "" : ":\n" + diagnostics)};
  };

  ParserConfig config(&context);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, config, sourceName);
  if (!module)
    return fail("the Tile IR of '" + sourceName + "' does not parse");
  if (failed(verify(*module)))
    return fail("the Tile IR of '" + sourceName + "' is invalid");

  CompiledTileModule result;
  for (auto fn : module->getOps<func::FuncOp>()) {
    if (!fn->hasAttr("ttile.kernel"))
      continue;
    TileKernelInfo info;
    info.name = fn.getName().str();
    if (auto warps = fn->getAttrOfType<IntegerAttr>("ttile.num_warps"))
      info.numWarps = int(warps.getInt());
    result.kernels.push_back(std::move(info));
  }
  if (result.kernels.empty())
    return Error{"'" + sourceName + "' has no ttile.kernel function"};

  PassManager pm(&context);
  mlir::tessera::TileToPTXOptions pipeline;
  pipeline.chip = options.chip;
  pipeline.features = options.features;
  pipeline.format = "isa";
  pipeline.optLevel = options.optLevel;
  mlir::tessera::buildTileToPTXPipeline(pm, pipeline);
  if (failed(pm.run(*module)))
    return fail("compiling '" + sourceName + "' for " + options.chip +
                " failed");

  for (auto binary : module->getOps<gpu::BinaryOp>())
    for (Attribute attr : binary.getObjects())
      if (auto object = dyn_cast<gpu::ObjectAttr>(attr))
        result.ptx += object.getObject().getValue().str();
  if (result.ptx.empty())
    return Error{"compiling '" + sourceName + "' gave no PTX"};
  for (TileKernelInfo &info : result.kernels)
    info.sharedBytes = sharedBytesOf(result.ptx, info.name);
  return result;
}

} // namespace tessera
