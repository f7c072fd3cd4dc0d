//===- TileKernels.cpp - Tile IR kernels to PTX ---------------------------===//

#include "tessera/API/TileKernels.h"

#include "tessera/Dialect/TGraph/IR/TypeInference.h"
#include "tessera/InitAllDialects.h"
#include "tessera/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"


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

/// The launch record the lowering gave kernel `name` (its
/// `tessera_launch_<name>` global in the gpu.module).
static Result<runtime::KernelLaunchRecord> launchRecordOf(ModuleOp module,
                                                          StringRef name) {
  std::string global =
      (runtime::KernelLaunchRecord::kGlobalPrefix + name).str();
  for (auto gpuModule : module.getOps<gpu::GPUModuleOp>())
    if (auto op = gpuModule.lookupSymbol<LLVM::GlobalOp>(global)) {
      auto words =
          dyn_cast_if_present<DenseIntElementsAttr>(op.getValueOrNull());
      if (!words)
        break;
      std::vector<int32_t> values;
      for (const APInt &v : words.getValues<APInt>())
        values.push_back(int32_t(v.getSExtValue()));
      runtime::KernelLaunchRecord record;
      std::string error;
      if (!runtime::KernelLaunchRecord::decode(values.data(), values.size(),
                                               name.str(), record, error))
        return Error{error};
      return record;
    }
  return Error{"the GPU lowering gave kernel '" + name.str() +
               "' no launch record"};
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
  mlir::tessera::buildTileToGPUPipeline(pm, pipeline);
  if (failed(pm.run(*module)))
    return fail("compiling '" + sourceName + "' for " + options.chip +
                " failed");
  // What each launch needs, as the runtime will read it from the module.
  for (TileKernelInfo &info : result.kernels) {
    auto record = launchRecordOf(*module, info.name);
    if (!record)
      return record.error();
    info.launch = *record;
    info.numWarps = record->consumerThreads / 32;
    info.sharedBytes = unsigned(record->dynamicSharedBytes);
  }
  PassManager binary(&context);
  mlir::tessera::buildGPUToBinaryPipeline(binary, pipeline);
  if (failed(binary.run(*module)))
    return fail("compiling '" + sourceName + "' for " + options.chip +
                " failed");

  for (auto binary : module->getOps<gpu::BinaryOp>())
    for (Attribute attr : binary.getObjects())
      if (auto object = dyn_cast<gpu::ObjectAttr>(attr))
        result.ptx += object.getObject().getValue().str();
  if (result.ptx.empty())
    return Error{"compiling '" + sourceName + "' gave no PTX"};
  return result;
}

} // namespace tessera
