//===- CPUPipeline.cpp - Graph IR to LLVM for the host CPU ----------------===//

#include "tessera/Pipelines/Pipelines.h"

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"
#include "tessera/Dialect/TSched/Transforms/Passes.h"

#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

// Passes that work function by function are nested on func.func, so the
// functions of a module (the layers of a model) go through them on
// parallel threads.
void mlir::tessera::buildCPUPipeline(OpPassManager &pm) {
  // Shapes first: every '?' that can be named is, and the rules that depend
  // on symbol values become run-time checks (cf.assert after lowering).
  pm.addPass(tgraph::createTGraphInferShapes());
  // The CPU back end has no fused kernels for composites yet: expand them.
  pm.addPass(tgraph::createTGraphDecompose());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  // Graph IR -> linalg on tensors; folds the dim arithmetic it introduced.
  pm.addPass(createTGraphLowerToLinalg());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  // Chains of elementwise ops become one loop nest before buffers exist.
  pm.addPass(tsched::createTSchedFuseElementwise());
  // Schedule IR: tiles, packed micro-kernels, vectors, scf.forall.
  pm.addNestedPass<func::FuncOp>(tsched::createTSchedCPUSchedule());
  // f32 transcendentals as straight-line (vector) code, not libm calls.
  pm.addNestedPass<func::FuncOp>(createMathApproximations());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
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
  // Identical subviews merge, and copies between them disappear.
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  // Small fixed-size temporaries (a row's partial sums) live on the stack,
  // except in sequential loops, where allocas would pile up per iteration
  // (parallel loop bodies get their own stack scope).
  pm.addNestedPass<func::FuncOp>(
      bufferization::createPromoteBuffersToStackPass([](Value alloc) {
        auto type = dyn_cast<MemRefType>(alloc.getType());
        if (!type || !type.hasStaticShape() ||
            !type.getElementType().isIntOrFloat())
          return false;
        int64_t bytes =
            type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
        if (bytes > 4096)
          return false;
        Operation *op = alloc.getDefiningOp();
        return op && !op->getParentOfType<scf::ForOp>() &&
               !op->getParentOfType<scf::WhileOp>();
      }));
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  // Results that alias arguments are cloned for the caller to own.
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Parallel tiles run on OpenMP threads.
  pm.addPass(createForallToParallelLoopPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  // What the schedule left as linalg becomes loops; vector transfers
  // become plain loads and stores (fully unrolled: no stack temporaries).
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  // LLVM has no fp8: fp8 arithmetic runs in f32, conversions on bits.
  pm.addNestedPass<func::FuncOp>(createExpandSmallFloats());
  // (MLIR 22's expand-strided-metadata needs this first: it handles one
  // dynamic dim per expanded group only.)
  pm.addNestedPass<func::FuncOp>(createExpandShapeViews());
  pm.addNestedPass<func::FuncOp>(memref::createExpandStridedMetadataPass());
  pm.addNestedPass<func::FuncOp>(createLowerAffinePass());
  // Memrefs go first: OpenMP loop bodies sit in memref.alloca_scope, which
  // must become LLVM before its region is split into blocks. Allocations
  // go through the runtime's allocator (_mlir_memref_to_llvm_alloc/free).
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addNestedPass<func::FuncOp>(createSCFToControlFlowPass());
  // Math ops with an LLVM intrinsic become it; the others (tanh, erf, ...)
  // call libm, one element at a time for vectors (so before vectors become
  // LLVM).
  pm.addNestedPass<func::FuncOp>(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addNestedPass<func::FuncOp>(createConvertVectorToLLVMPass());
  pm.addNestedPass<func::FuncOp>(createArithToLLVMConversionPass());
  pm.addNestedPass<func::FuncOp>(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  // Last: the OpenMP regions hold code the passes above converted.
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::tessera::registerPipelines() {
  PassPipelineRegistration<>(
      "tessera-cpu-pipeline",
      "Compile Graph IR to the LLVM dialect for the host CPU",
      [](OpPassManager &pm) { buildCPUPipeline(pm); });
}
