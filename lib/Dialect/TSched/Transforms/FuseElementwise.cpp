//===- FuseElementwise.cpp - elementwise fusion that keeps GEMMs flat -----===//
//
// Elementwise producer/consumer fusion and reshape propagation before the
// CPU schedule. Reshapes stop at contractions: a matrix product whose
// leading activation dims were collapsed into M stays a plain GEMM.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TSched/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tessera::tsched {
#define GEN_PASS_DEF_TSCHEDFUSEELEMENTWISE
#include "tessera/Dialect/TSched/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tsched

using namespace mlir;

namespace {

bool isContraction(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.getNumReductionLoops() > 0 &&
         linalg::isaContractionOpInterface(linalgOp);
}

struct FuseElementwise
    : public tessera::tsched::impl::TSchedFuseElementwiseBase<FuseElementwise> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // A producer is fused into its only user (it is then computed once).
    linalg::ControlFusionFn oneUse = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      return producer && producer->hasOneUse();
    };
    // The same, but a reshape never crosses a contraction (in either
    // direction: the operand belongs to the consumer or is the
    // producer's result).
    linalg::ControlFusionFn reshapes = [&](OpOperand *fused) {
      return oneUse(fused) && !isContraction(fused->getOwner()) &&
             !isContraction(fused->get().getDefiningOp());
    };
    // A producer over fewer loops than its consumer reads it (a per-row
    // value, 1 / sum or rsqrt(var + eps), broadcast along the row) would be
    // recomputed for every element: it stays a loop of its own, which the
    // CPU schedule then computes once per row.
    linalg::ControlFusionFn elementwise = [&](OpOperand *fused) {
      auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
      if (consumer && !consumer.getMatchingIndexingMap(fused).isPermutation())
        return false;
      return oneUse(fused);
    };
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(patterns, elementwise);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, reshapes);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(
        patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, oneUse);
    // Sizes read from results (tensor.dim of a reshape of a reduction) come
    // from the operands instead, so nothing keeps an op alive only for its
    // shape once the CPU schedule fuses it into a loop.
    memref::populateResolveRankedShapedTypeResultDimsPatterns(patterns);
    memref::populateResolveShapedTypeResultDimsPatterns(patterns);
    if (failed(applyPatternsGreedily(
            getOperation(), std::move(patterns),
            GreedyRewriteConfig().setUseTopDownTraversal(true))))
      return signalPassFailure();
  }
};

} // namespace
