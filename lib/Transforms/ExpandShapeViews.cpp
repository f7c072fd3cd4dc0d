//===- ExpandShapeViews.cpp - expand_shape with several dynamic dims ------===//
//
// An expanded dim's stride is the next inner dim's stride times its size;
// the innermost dim of a group keeps the source dim's stride. With every
// size given by output_shape, the expanded memref is a reinterpret_cast of
// the source's base buffer at the source's offset.
//
//===----------------------------------------------------------------------===//

#include "tessera/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_EXPANDSHAPEVIEWS
#include "tessera/Transforms/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

bool hasGroupWithSeveralDynamicDims(memref::ExpandShapeOp op) {
  MemRefType type = op.getResultType();
  return llvm::any_of(op.getReassociationIndices(),
                      [&](const ReassociationIndices &group) {
                        return llvm::count_if(group, [&](int64_t d) {
                                 return type.isDynamicDim(d);
                               }) > 1;
                      });
}

struct ExpandShapeToView : public OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasGroupWithSeveralDynamicDims(op))
      return failure();
    MemRefType type = op.getResultType();
    SmallVector<int64_t> staticStrides;
    int64_t staticOffset;
    if (failed(type.getStridesAndOffset(staticStrides, staticOffset)))
      return rewriter.notifyMatchFailure(op, "result is not strided");
    Location loc = op.getLoc();
    auto source =
        memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> strides(type.getRank());
    for (auto [srcDim, group] : llvm::enumerate(op.getReassociationIndices())) {
      OpFoldResult stride = source.getConstifiedMixedStrides()[srcDim];
      for (auto [i, d] : llvm::enumerate(llvm::reverse(group))) {
        strides[d] = stride;
        if (i + 1 == group.size())
          break;
        Value inner = getValueOrCreateConstantIndexOp(rewriter, loc, stride);
        Value size = getValueOrCreateConstantIndexOp(rewriter, loc, sizes[d]);
        stride = rewriter.createOrFold<arith::MulIOp>(loc, inner, size);
      }
    }
    // Where the result type states a stride or the offset, give it as a
    // constant (the cast's verifier compares them).
    for (auto [stride, fixed] : llvm::zip(strides, staticStrides))
      if (!ShapedType::isDynamic(fixed))
        stride = rewriter.getIndexAttr(fixed);
    for (auto [size, fixed] : llvm::zip(sizes, type.getShape()))
      if (!ShapedType::isDynamic(fixed))
        size = rewriter.getIndexAttr(fixed);
    OpFoldResult offset =
        ShapedType::isDynamic(staticOffset)
            ? source.getConstifiedMixedOffset()
            : OpFoldResult(rewriter.getIndexAttr(staticOffset));
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, type, source.getBaseBuffer(), offset, sizes, strides);
    return success();
  }
};

struct ExpandShapeViews
    : public tessera::impl::ExpandShapeViewsBase<ExpandShapeViews> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandShapeToView>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
