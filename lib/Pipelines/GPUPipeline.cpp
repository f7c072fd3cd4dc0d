//===- GPUPipeline.cpp - Tile IR kernels to PTX ---------------------------===//

#include "tessera/Pipelines/Pipelines.h"

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"
#include "tessera/Dialect/TSched/Transforms/Passes.h"
#include "tessera/Dialect/TTile/Transforms/Passes.h"

#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// Shared memory a block may use with the opt-in, by compute capability.
static int64_t sharedMemoryLimit(llvm::StringRef chip) {
  if (chip.starts_with("sm_90") || chip.starts_with("sm_10") ||
      chip.starts_with("sm_12"))
    return chip.starts_with("sm_12") ? 101376 : 232448;
  if (chip == "sm_80" || chip == "sm_87")
    return 166912;
  if (chip == "sm_86" || chip == "sm_89")
    return 101376;
  return 49152;
}

void mlir::tessera::buildTileToGPUPipeline(OpPassManager &pm,
                                           const TileToPTXOptions &options) {
  // Layouts first: loads that become shared tiles for wgmma are pipelined
  // through shared memory by the lowering, not carried in registers.
  ttile::TTileAssignLayoutsOptions layouts;
  layouts.wgmma = options.chip == "sm_90a";
  pm.addPass(ttile::createTTileAssignLayouts(layouts));
  pm.addPass(ttile::createTTilePipelineLoads());
  ConvertTTileToGPUOptions lowering;
  lowering.tma = options.tma && options.chip == "sm_90a";
  lowering.sharedLimit = sharedMemoryLimit(options.chip);
  lowering.fpContract = options.fpContract;
  pm.addPass(createConvertTTileToGPU(lowering));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Each element's chain of values next to its use (ptxas keeps the
  // order it is given): an epilogue's values die at their stores.
  pm.addNestedPass<gpu::GPUModuleOp>(createSinkToUses());
  // fp8 conversions and arithmetic (LLVM has no fp8 types), rounded as on
  // the CPU; bf16 and f16 conversions stay the target's instructions.
  ExpandSmallFloatsOptions small;
  small.bf16 = false;
  pm.addPass(createExpandSmallFloats(small));
}

void mlir::tessera::buildGPUToBinaryPipeline(OpPassManager &pm,
                                             const TileToPTXOptions &options) {
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = options.chip;
  nvvm.cubinFeatures = options.features;
  nvvm.cubinFormat = options.format;
  nvvm.optLevel = options.optLevel;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
}

void mlir::tessera::buildTileToPTXPipeline(OpPassManager &pm,
                                           const TileToPTXOptions &options) {
  buildTileToGPUPipeline(pm, options);
  buildGPUToBinaryPipeline(pm, options);
}

void mlir::tessera::buildGPUPipeline(OpPassManager &pm,
                                     const GPUPipelineOptions &options,
                                     GPUStage stopAfter) {
  buildCPUPipeline(pm, CPUStage::GraphOptimized, /*keepGpuAttention=*/true);
  if (!options.dims.empty()) {
    // The host program takes static shapes: symbols get their sizes once
    // the callees have joined their callers, then shapes and folds again.
    tgraph::TGraphBindDimsOptions bind;
    bind.dims.assign(options.dims.begin(), options.dims.end());
    pm.addPass(tgraph::createTGraphBindDims(bind));
    pm.addPass(tgraph::createTGraphInferShapes());
    OpPassManager &fn = pm.nest<func::FuncOp>();
    fn.addPass(tgraph::createTGraphFoldEmpty());
    fn.addPass(createCanonicalizerPass());
    fn.addPass(createCSEPass());
  }
  tsched::TSchedFormGPUGroupsOptions groups;
  groups.maxRow = options.maxRow;
  pm.addNestedPass<func::FuncOp>(tsched::createTSchedFormGPUGroups(groups));
  if (stopAfter == GPUStage::Groups)
    return;
  TSchedGenerateKernelsOptions kernels;
  kernels.multiprocessors = options.multiprocessors;
  kernels.chip = options.chip;
  kernels.variant = options.variant;
  kernels.tuning = options.tuning;
  kernels.tuningText = options.tuningText;
  pm.addPass(createTSchedGenerateKernels(kernels));
  if (stopAfter == GPUStage::Kernels)
    return;
  pm.addPass(tsched::createTSchedGPUHostProgram());
  if (stopAfter == GPUStage::Host)
    return;
  pm.addPass(tsched::createTSchedGPUOutlineKernels());
  TileToPTXOptions ptx;
  ptx.chip = options.chip;
  ptx.features = options.features;
  ptx.format = options.format;
  ptx.optLevel = options.optLevel;
  buildTileToPTXPipeline(pm.nest<ModuleOp>(), ptx);
}

void mlir::tessera::registerGPUPipelines() {
  PassPipelineRegistration<GPUPipelineOptions>(
      "tessera-gpu-pipeline",
      "Graph IR to the GPU: fusion groups, their generated kernels, the host "
      "program that launches them, and the kernels compiled to PTX (or a "
      "cubin) in the device module @kernels",
      [](OpPassManager &pm, const GPUPipelineOptions &options) {
        buildGPUPipeline(pm, options);
      });
  PassPipelineRegistration<TileToPTXOptions>(
      "tessera-ttile-to-ptx",
      "Compile Tile IR kernels to PTX (or a cubin) in a gpu.binary: layouts, "
      "the thread-level lowering, then NVVM",
      [](OpPassManager &pm, const TileToPTXOptions &options) {
        buildTileToPTXPipeline(pm, options);
      });
}
