//===- CPUSchedule.cpp - The CPU schedule pass ----------------------------===//
//
// Per function: fuses row groups into loops over rows (RowFusion.cpp), has
// CPUScheduler write the transform script of every linalg op
// (CPUScheduler.cpp), parses
// and applies it with the transform interpreter (`print-scripts` shows
// it), then cleans up, privatizes per-row buffers and spreads data movement
// over threads (ScheduleRewrites.cpp), and finally hoists and unrolls the
// micro-kernel loops with a second script.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TSched/Transforms/Passes.h"

#include "CPUScheduler.h"

#include "mlir/Dialect/Affine/TransformOps/AffineTransformOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/TransformOps/DialectExtension.h"
#include "mlir/Dialect/MemRef/TransformOps/MemRefTransformOps.h"
#include "mlir/Dialect/SCF/TransformOps/SCFTransformOps.h"
#include "mlir/Dialect/Tensor/TransformOps/TensorTransformOps.h"
#include "mlir/Dialect/Transform/LoopExtension/LoopExtension.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Dialect/Vector/TransformOps/VectorTransformOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/TargetParser/Host.h"

#include <mutex>

namespace mlir::tessera::tsched {
#define GEN_PASS_DEF_TSCHEDCPUSCHEDULE
#include "tessera/Dialect/TSched/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tsched

using namespace mlir;
using namespace mlir::tessera::tsched;

int64_t mlir::tessera::tsched::hostVectorBytes() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  if (features.lookup("avx512f"))
    return 64;
  if (features.lookup("avx2"))
    return 32;
  return 16;
}

namespace {

void registerTransformExtensions(DialectRegistry &registry) {
  linalg::registerTransformDialectExtension(registry);
  scf::registerTransformDialectExtension(registry);
  tensor::registerTransformDialectExtension(registry);
  vector::registerTransformDialectExtension(registry);
  affine::registerTransformDialectExtension(registry);
  memref::registerTransformDialectExtension(registry);
  transform::registerLoopExtension(registry);
}

struct CPUSchedulePass
    : public mlir::tessera::tsched::impl::TSchedCPUScheduleBase<
          CPUSchedulePass> {
  using TSchedCPUScheduleBase::TSchedCPUScheduleBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    TSchedCPUScheduleBase::getDependentDialects(registry);
    registerTransformExtensions(registry);
  }

  static std::string wrapScript(const std::string &body) {
    return "module attributes {transform.with_named_sequence} {\n"
           "  transform.named_sequence @__transform_main(%root: "
           "!transform.any_op {transform.readonly}) {\n" +
           body + "    transform.yield\n  }\n}\n";
  }

  /// Prints a script whole (functions are scheduled on parallel threads).
  static void printScript(const std::string &body) {
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    llvm::outs() << wrapScript(body);
    llvm::outs().flush();
  }

  /// Parses and applies a transform script to the function.
  LogicalResult applyScript(func::FuncOp module, const std::string &body) {
    ParserConfig config(&getContext());
    OwningOpRef<ModuleOp> transforms =
        parseSourceString<ModuleOp>(wrapScript(body), config, "tsched-script");
    if (!transforms)
      return module.emitError("internal error: a generated schedule script "
                              "does not parse (print-scripts shows it)");
    Operation *entry = transform::detail::findTransformEntryPoint(
        module, *transforms, "__transform_main");
    if (!entry)
      return failure();
    // (The expensive checks compare every consumed handle with every live
    // one: quadratic in the ops of the function. The scripts are generated
    // and tested, not written by users.)
    return transform::applyTransformNamedSequence(
        module, entry, *transforms,
        transform::TransformOptions().enableExpensiveChecks(false));
  }

  /// Canonical vector code: unit dims gone, transfers with permutations
  /// and multi-reductions lowered, products and sums fused.
  LogicalResult cleanUp(func::FuncOp module) {
    OpPassManager pm(func::FuncOp::getOperationName());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    if (failed(runPipeline(pm, module)))
      return failure();
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    populateScheduleCleanupPatterns(patterns);
    for (Dialect *d : ctx->getLoadedDialects())
      d->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return failure();
    // Transposes the cleanup left (register transposes of packing; the
    // micro-kernels' broadcasts are gone by now) become shuffles.
    RewritePatternSet transposes(ctx);
    populateTransposeLoweringPatterns(transposes);
    return applyPatternsGreedily(module, std::move(transposes));
  }

  void runOnOperation() override {
    // One function at a time (functions are scheduled in parallel).
    func::FuncOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // One new buffer per use of a tensor.empty, as an alloc_tensor that
    // CSE cannot merge again: ops fused into one loop must not share an
    // output buffer (that forces copies).
    module.walk([&](tensor::EmptyOp empty) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : empty->getUses())
        uses.push_back(&use);
      OpBuilder b(empty);
      for (OpOperand *use : uses)
        use->set(bufferization::AllocTensorOp::create(
            b, empty.getLoc(), empty.getType(), empty.getDynamicSizes()));
      empty->erase();
    });
    // Likewise one fill per use: CSE merges identical fills (the zero
    // initial values of two row sums), but each reduction accumulates into
    // its init; fused into one row loop, a shared fill would be fused
    // for one of them and leave the other accumulating into unfilled
    // memory.
    SmallVector<linalg::FillOp> sharedFills;
    module.walk([&](linalg::FillOp fill) {
      if (fill.hasPureTensorSemantics() && !fill->getResult(0).hasOneUse() &&
          !fill->getResult(0).use_empty())
        sharedFills.push_back(fill);
    });
    for (linalg::FillOp fill : sharedFills) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : fill->getResult(0).getUses())
        uses.push_back(&use);
      OpBuilder b(fill);
      for (OpOperand *use : llvm::drop_begin(uses)) {
        Value dest = fill.getOutputs()[0];
        IRMapping map;
        if (auto alloc = dest.getDefiningOp<bufferization::AllocTensorOp>())
          map.map(dest, b.clone(*alloc)->getResult(0));
        use->set(b.clone(*fill, map)->getResult(0));
      }
    }
    CPUScheduler scheduler(vectorBytes ? int64_t(vectorBytes)
                                       : hostVectorBytes());
    std::string body;
    int64_t next = 0;
    SmallVector<linalg::LinalgOp> ops;
    module.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    // The initial value of a packed contraction is packed with it.
    llvm::SmallPtrSet<Operation *, 8> packedInits;
    for (linalg::LinalgOp op : ops)
      if (scheduler.isGemm(op))
        if (Operation *init = op.getDpsInitOperand(0)->get().getDefiningOp())
          if (isa<linalg::FillOp>(init) && init->hasOneUse())
            packedInits.insert(init);
    // Row-fused groups become one loop over rows each, before the script:
    // it then schedules each op of a row within the row.
    llvm::SmallPtrSet<Operation *, 16> rowOps;
    IRRewriter rewriter(ctx);
    for (ArrayRef<linalg::LinalgOp> group :
         formRowGroups(ops, [&](linalg::LinalgOp op) {
           return !packedInits.contains(op) && scheduler.fusible(op);
         })) {
      if (group.size() < 2)
        continue;
      // (The root is replaced by its loop.)
      std::string root = group.back()->getName().getStringRef().str();
      FailureOr<RowFusion> fused = fuseRowGroup(rewriter, group);
      if (failed(fused))
        continue;
      rowOps.insert(fused->rowOps.begin(), fused->rowOps.end());
      body += llvm::formatv("    // row loop of {0}: {1} ops, {2} "
                            "materialized, {3} operations recomputed\n",
                            root, fused->rowOps.size(), fused->materialized.size(),
                            fused->recomputed)
                  .str();
    }
    ops.clear();
    module.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    for (linalg::LinalgOp op : ops) {
      if (packedInits.contains(op))
        continue;
      int64_t id = next++;
      op->setAttr(kScheduledAttr, UnitAttr::get(ctx));
      if (rowOps.contains(op))
        scheduler.scheduleRowOp(op, id, body);
      else
        scheduler.schedule(op, id, body);
    }
    body = matchScheduledOps(next) + body;
    if (scheduler.usedPacking()) {
      // Packing and unpacking become pad/reshape/transpose.
      body += "    %packs = transform.structured.match ops{[\"linalg.pack\"]} "
              "in %root : (!transform.any_op) -> "
              "!transform.op<\"linalg.pack\">\n"
              "    transform.structured.lower_pack %packs : "
              "(!transform.op<\"linalg.pack\">) -> "
              "(!transform.op<\"tensor.pad\">, "
              "!transform.op<\"tensor.expand_shape\">, "
              "!transform.op<\"linalg.transpose\">)\n"
              "    %unpacks = transform.structured.match "
              "ops{[\"linalg.unpack\"]} in %root : (!transform.any_op) -> "
              "!transform.op<\"linalg.unpack\">\n"
              "    transform.structured.lower_unpack %unpacks : "
              "(!transform.op<\"linalg.unpack\">) -> "
              "(!transform.op<\"tensor.empty\">, "
              "!transform.op<\"linalg.transpose\">, "
              "!transform.op<\"tensor.collapse_shape\">, "
              "!transform.op<\"tensor.extract_slice\">)\n";
    }
    if (printScripts)
      printScript(body);
    if (!body.empty() && failed(applyScript(module, body)))
      return signalPassFailure();
    if (failed(cleanUp(module)))
      return signalPassFailure();
    privatizeSlices(module);
    foldCopiesIntoFreshTensors(module);
    fuseUnpackIntoContraction(module);
    parallelizeDataMovement(module);
    // Loop-carried vectors (accumulators) move out of the loops marked for
    // it, once the vector code is in canonical form.
    std::string hoist =
        "    %hoist = transform.structured.match ops{[\"scf.for\"]} "
        "attributes{" +
        kHoistAttr.str() +
        "} in %root : "
        "(!transform.any_op) -> !transform.any_op\n"
        "    transform.loop.hoist_loop_invariant_subsets %hoist : "
        "!transform.any_op\n"
        "    transform.loop.hoist_loop_invariant_subsets %hoist : "
        "!transform.any_op\n"
        "    %unroll = transform.structured.match ops{[\"scf.for\"]} "
        "attributes{" +
        kUnrollAttr.str() +
        "} in %root : "
        "(!transform.any_op) -> !transform.any_op\n"
        "    transform.loop.unroll %unroll {factor = 4} : "
        "!transform.any_op\n";
    if (printScripts)
      printScript(hoist);
    if (failed(applyScript(module, hoist)) || failed(cleanUp(module)))
      return signalPassFailure();
    module.walk([](Operation *op) {
      op->removeAttr(kScheduledAttr);
      op->removeAttr(kHoistAttr);
      op->removeAttr(kUnrollAttr);
    });
  }
};

} // namespace
