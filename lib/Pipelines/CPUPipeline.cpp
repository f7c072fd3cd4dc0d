//===- CPUPipeline.cpp - Graph IR to LLVM for the host CPU ----------------===//

#include "tessera/Pipelines/Pipelines.h"

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"
#include "tessera/Dialect/TSched/Transforms/Passes.h"
#include "tessera/Transforms/Passes.h"

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
void mlir::tessera::buildCPUPipeline(OpPassManager &pm, CPUStage stopAfter,
                                     bool keepGpuAttention) {
  // Consecutive function passes share one nest: each function goes through
  // all of them without waiting for the others.
  OpPassManager *nest = nullptr;
  auto perFunction = [&](std::unique_ptr<Pass> pass) {
    if (!nest)
      nest = &pm.nest<func::FuncOp>();
    nest->addPass(std::move(pass));
  };
  auto whole = [&](std::unique_ptr<Pass> pass) {
    nest = nullptr;
    pm.addPass(std::move(pass));
  };
  // Shapes first: every '?' that can be named is, and the rules that depend
  // on symbol values become run-time checks (cf.assert after lowering).
  whole(tgraph::createTGraphInferShapes());
  // tgraph.adjoint / jvp / hvp become functions (then their shapes).
  whole(tgraph::createTGraphAutodiff());
  whole(tgraph::createTGraphInferShapes());
  // Gradients with a memory budget recompute what would not fit.
  whole(tgraph::createTGraphRemat());
  // Callees traced by front ends (a loss and its gradient inside a training
  // step) join their callers, so CSE and fusion work across them.
  whole(tgraph::createTGraphInline());
  // The CPU back end has no fused kernels for composites yet: expand them.
  tgraph::TGraphDecomposeOptions decompose;
  decompose.gpuAttention = keepGpuAttention;
  whole(tgraph::createTGraphDecompose(decompose));
  // Ops on tensors with a static dim of 0 become constants: nothing to
  // compute, and nothing of size 0 to tile or slice later.
  perFunction(tgraph::createTGraphFoldEmpty());
  perFunction(createCanonicalizerPass());
  perFunction(createCSEPass());
  if (stopAfter == CPUStage::GraphOptimized)
    return;
  // Memory has no sub-byte elements: i4 tensors are computed as i8 ones.
  whole(tgraph::createTGraphWidenI4());
  // Graph IR -> linalg on tensors; folds the dim arithmetic it introduced.
  whole(createTGraphLowerToLinalg());
  perFunction(createCanonicalizerPass());
  perFunction(createCSEPass());
  if (stopAfter == CPUStage::Linalg)
    return;
  // Chains of elementwise ops become one loop nest before buffers exist.
  whole(tsched::createTSchedFuseElementwise());
  // Schedule IR: tiles, packed micro-kernels, vectors, scf.forall.
  perFunction(tsched::createTSchedCPUSchedule());
  // f32 transcendentals as straight-line (vector) code, not libm calls.
  perFunction(createMathApproximations());
  perFunction(createCanonicalizerPass());
  perFunction(createCSEPass());
  if (stopAfter == CPUStage::Scheduled)
    return;
  // Checkpoint recomputations join their callers now that no CSE can merge
  // them with the forward pass any more.
  whole(createInlineRecompute());
  // Tensors -> buffers, including function arguments and results (plain
  // strided layouts, so callers pass ordinary dense arrays), then frees for
  // every temporary.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  // Loop bodies (scf.while, scan) yield new tensors each iteration.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  whole(bufferization::createOneShotBufferizePass(bufferize));
  // Identical subviews merge, and copies between them disappear.
  perFunction(createCSEPass());
  perFunction(createCanonicalizerPass());
  // Small fixed-size temporaries (a row's partial sums) live on the stack,
  // except in sequential loops, where allocas would pile up per iteration
  // (parallel loop bodies get their own stack scope).
  perFunction(bufferization::createPromoteBuffersToStackPass([](Value alloc) {
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
  nest = nullptr;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  // ...and frees each temporary after its last use, not at the end of its
  // block.
  perFunction(createEarlyDeallocs());
  // Results that alias arguments are cloned for the caller to own.
  whole(createConvertBufferizationToMemRefPass());
  // Parallel tiles run on OpenMP threads, except those with too little
  // work to pay for a parallel region. Each parallel loop moves into a
  // function of its own first: the functions LLVM's OpenMP outlining and
  // optimizations see stay small however long the program.
  whole(createForallToParallelLoopPass());
  whole(createOutlineParallelLoops());
  perFunction(createSerializeSmallParallelLoops());
  whole(createConvertSCFToOpenMPPass());
  // What the schedule left as linalg becomes loops; vector transfers
  // become plain loads and stores (fully unrolled: no stack temporaries).
  perFunction(createConvertLinalgToLoopsPass());
  perFunction(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  // LLVM has no fp8: fp8 arithmetic runs in f32, conversions on bits.
  perFunction(createExpandSmallFloats());
  // (MLIR 22's expand-strided-metadata needs this first: it handles one
  // dynamic dim per expanded group only.)
  perFunction(createExpandShapeViews());
  perFunction(memref::createExpandStridedMetadataPass());
  perFunction(createLowerAffinePass());
  // Memrefs go first: OpenMP loop bodies sit in memref.alloca_scope, which
  // must become LLVM before its region is split into blocks. Allocations
  // go through the runtime's allocator (_mlir_memref_to_llvm_alloc/free).
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useGenericFunctions = true;
  whole(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  perFunction(createSCFToControlFlowPass());
  // Math ops with an LLVM intrinsic become it; the others (tanh, erf, ...)
  // call libm, one element at a time for vectors (so before vectors become
  // LLVM).
  perFunction(createConvertMathToLLVMPass());
  whole(createConvertMathToLibmPass());
  // (x86vector: the AVX-512 exp's vscalefps.)
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.x86Vector = true;
  perFunction(createConvertVectorToLLVMPass(vectorToLLVM));
  perFunction(createArithToLLVMConversionPass());
  perFunction(createConvertIndexToLLVMPass());
  whole(createConvertControlFlowToLLVMPass());
  whole(createConvertFuncToLLVMPass());
  whole(createUBToLLVMConversionPass());
  // Last: the OpenMP regions hold code the passes above converted.
  whole(createConvertOpenMPToLLVMPass());
  whole(createReconcileUnrealizedCastsPass());
}

void mlir::tessera::registerPipelines() {
  PassPipelineRegistration<>(
      "tessera-cpu-pipeline",
      "Compile Graph IR to the LLVM dialect for the host CPU",
      [](OpPassManager &pm) { buildCPUPipeline(pm); });
  registerGPUPipelines();
}
