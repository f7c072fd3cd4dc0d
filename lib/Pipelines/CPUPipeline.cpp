//===- CPUPipeline.cpp - Graph IR to LLVM for the host CPU ----------------===//

#include "tessera/Pipelines/Pipelines.h"

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::tessera::buildCPUPipeline(OpPassManager &pm) {
  // Shapes first: every '?' that can be named is, and the rules that depend
  // on symbol values become run-time checks (cf.assert after lowering).
  pm.addPass(tgraph::createTGraphInferShapes());
  // The CPU back end has no fused kernels for composites yet: expand them.
  pm.addPass(tgraph::createTGraphDecompose());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Graph IR -> linalg on tensors; folds the dim arithmetic it introduced.
  pm.addPass(createTGraphLowerToLinalg());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Chains of elementwise ops become one loop nest before buffers exist.
  pm.addPass(createLinalgElementwiseOpFusionPass());
  // Tensors -> buffers, including function arguments and results (plain
  // strided layouts, so callers pass ordinary dense arrays), then frees for
  // every temporary.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  // Loop bodies (scf.while, scan) yield new tensors each iteration.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  // Results that alias arguments are cloned for the caller to own.
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Loops, then the LLVM dialect. Math ops without an LLVM intrinsic (tanh,
  // erf, ...) call libm.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // LLVM has no fp8: fp8 arithmetic runs in f32, conversions on bits.
  pm.addPass(createExpandSmallFloats());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::tessera::registerPipelines() {
  PassPipelineRegistration<>(
      "tessera-cpu-pipeline",
      "Compile Graph IR to the LLVM dialect for the host CPU",
      [](OpPassManager &pm) { buildCPUPipeline(pm); });
}
