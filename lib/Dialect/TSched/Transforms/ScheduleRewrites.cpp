//===- ScheduleRewrites.cpp - IR rewrites around the CPU schedule ---------===//
//
// What the transform scripts leave to plain C++: vector patterns run while
// cleaning up after a script, per-iteration buffers for row-fused
// intermediates, and data movement (GEMM packing) split over threads and
// copied in vectors.
//
//===----------------------------------------------------------------------===//

#include "CPUScheduler.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Interfaces/TilingInterface.h"

using namespace mlir;

namespace {

/// addf(x, mulf(a, b)) with the `contract` flag on the product (set by the
/// Graph IR lowering for contractions) becomes one fused multiply-add; the
/// vectorizer rebuilds the sum without flags, so look at the product only.
struct FuseMultiplyAdd : public OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::AddFOp add,
                                PatternRewriter &rewriter) const override {
    for (int i = 0; i < 2; ++i) {
      auto mul = add->getOperand(i).getDefiningOp<arith::MulFOp>();
      if (!mul || !mul->hasOneUse() ||
          !bitEnumContainsAll(mul.getFastmath(),
                              arith::FastMathFlags::contract))
        continue;
      rewriter.replaceOpWithNewOp<math::FmaOp>(add, mul.getLhs(), mul.getRhs(),
                                               add->getOperand(1 - i));
      return success();
    }
    return failure();
  }
};

/// The micro-kernel's A operand: a column x of MR values is broadcast to
/// NR copies (vector.broadcast adds leading dims only), flattened to
/// NR x MR and transposed to MR x NR. That is x stretched along a trailing
/// dim, which lowers to MR splats instead of an element-by-element
/// transpose (MR * NR extracts and inserts of code to compile).
struct BroadcastThenTranspose : public OpRewritePattern<vector::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    VectorType type = transpose.getResultVectorType();
    if (type.getRank() != 2 || type.isScalable() ||
        transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
      return failure();
    Value source = transpose.getVector();
    if (auto cast = source.getDefiningOp<vector::ShapeCastOp>())
      source = cast.getSource();
    auto broadcast = source.getDefiningOp<vector::BroadcastOp>();
    if (!broadcast)
      return failure();
    auto x = dyn_cast<VectorType>(broadcast.getSourceType());
    int64_t rows = type.getDimSize(0), copies = type.getDimSize(1);
    // The broadcast must only prepend the NR copies.
    if (!x || x.isScalable() || x.getNumElements() != rows ||
        broadcast.getResultVectorType().getShape() !=
            ArrayRef<int64_t>(llvm::to_vector(llvm::concat<const int64_t>(
                ArrayRef<int64_t>{copies}, x.getShape()))))
      return failure();
    Location loc = transpose.getLoc();
    Value column = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get({rows, 1}, type.getElementType()),
        broadcast.getSource());
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(transpose, type, column);
    return success();
  }
};

/// Copies in vectors, along the innermost dim when the source's
/// innermost dim moves with it (an NR-wide panel row, a head's 64
/// features): the other dims become loops of one element each, and each
/// step reads and writes one static run of contiguous elements (whole,
/// up to 256, else in chunks of 64). Transposes of the innermost dim (a
/// column of A into an MR panel, rows of a transposed B into an NR panel)
/// go through registers in 16-wide blocks where the shapes allow (f32),
/// else stay scalar loops.
/// A transpose of the two innermost dims of a panel ([.., R, C] ->
/// [.., C, R], R the rows of a register tile, C a multiple of 16): tiles
/// of 16 x min(R, 16) elements, each read as vectors along C, transposed in
/// registers (16 x 16 f32 blocks become 64 shuffles) and written as vectors
/// along R.
} // namespace

bool mlir::tessera::tsched::isRegisterTransposable(linalg::TransposeOp op,
                                                   int64_t rowsPerTile) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = type.getRank();
  ArrayRef<int64_t> perm = op.getPermutation();
  if (rank < 2 || perm[rank - 1] != rank - 2 || perm[rank - 2] != rank - 1 ||
      !type.hasStaticShape() || !type.getElementType().isF32())
    return false;
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != d)
      return false;
  int64_t c = rowsPerTile ? rowsPerTile : type.getDimSize(rank - 2);
  int64_t r = type.getDimSize(rank - 1);
  return c % 16 == 0 && type.getDimSize(rank - 2) % c == 0 &&
         (r == 8 || r % 16 == 0);
}

namespace {

/// `op` tiled by `sizes` in sequential loops and the tile vectorized;
/// false if it could not be tiled.
bool tileAndVectorize(IRRewriter &rewriter, TilingInterface op,
                      ArrayRef<OpFoldResult> sizes) {
  scf::SCFTilingOptions options;
  options.setTileSizes(sizes);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, op, options);
  if (failed(tiled) || tiled->tiledOps.size() != 1)
    return false;
  rewriter.replaceOp(op, tiled->replacements);
  Operation *block = tiled->tiledOps[0];
  rewriter.setInsertionPoint(block);
  FailureOr<linalg::VectorizationResult> vectorized =
      linalg::vectorize(rewriter, block);
  if (succeeded(vectorized))
    rewriter.replaceOp(block, vectorized->replacements);
  return true;
}

bool vectorizeInnerTranspose(IRRewriter &rewriter, linalg::TransposeOp op) {
  if (!mlir::tessera::tsched::isRegisterTransposable(op))
    return false;
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = type.getRank();
  int64_t r = type.getDimSize(rank - 1);
  SmallVector<OpFoldResult> sizes(rank, rewriter.getIndexAttr(1));
  sizes[rank - 2] = rewriter.getIndexAttr(16);
  sizes[rank - 1] = rewriter.getIndexAttr(std::min<int64_t>(r, 16));
  return tileAndVectorize(rewriter, cast<TilingInterface>(op.getOperation()),
                          sizes);
}

void vectorizeMovement(IRRewriter &rewriter, TilingInterface op) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = type.getRank();
  if (auto transpose = dyn_cast<linalg::TransposeOp>(op.getOperation()))
    if (transpose.getPermutation().back() != rank - 1) {
      vectorizeInnerTranspose(rewriter, transpose);
      return;
    }
  int64_t inner = type.getDimSize(rank - 1);
  if (ShapedType::isDynamic(inner) || inner < 4)
    return;
  int64_t chunk = inner <= 256 ? inner : (inner % 64 == 0 ? 64 : 0);
  if (!chunk)
    return;
  SmallVector<OpFoldResult> sizes(rank, rewriter.getIndexAttr(1));
  sizes.back() = rewriter.getIndexAttr(chunk == inner ? 0 : chunk);
  tileAndVectorize(rewriter, op, sizes);
}

} // namespace

void mlir::tessera::tsched::populateScheduleCleanupPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
  vector::populateDropUnitDimWithShapeCastPatterns(patterns);
  vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  vector::populateVectorMultiReductionLoweringPatterns(
      patterns, vector::VectorMultiReductionLowering::InnerReduction);
  patterns.add<FuseMultiplyAdd, BroadcastThenTranspose>(ctx);
  // A tile of a filled tensor is a filled tile: a packed GEMM's initial
  // accumulator tile is then zeroed in place (the fill folds through the
  // packing's pad, reshape and transpose) instead of the whole output
  // being zeroed serially first and packed tile by tile.
  linalg::populateSwapExtractSliceWithFillPatterns(patterns);
}

void mlir::tessera::tsched::populateTransposeLoweringPatterns(
    RewritePatternSet &patterns) {
  // 16 x 16 f32 transposes (panel packing) as shuffles; other 2-D shapes as
  // one flat shuffle, which LLVM lowers to permutes.
  vector::populateVectorTransposeLoweringPatterns(
      patterns, vector::VectorTransposeLowering::Shuffle16x16,
      /*benefit=*/2);
  vector::populateVectorTransposeLoweringPatterns(
      patterns, vector::VectorTransposeLowering::Shuffle1D);
}

/// A slice, taken inside a loop, of a buffer allocated outside it holds
/// an iteration's private part of an intermediate (a producer fused into
/// a row loop writes its row there). The buffer's contents start out
/// undefined, so the slice may as well be a buffer of its own: one row,
/// allocated per iteration (from the runtime's per-thread cache), instead
/// of a whole intermediate that makes a round trip through memory.
void mlir::tessera::tsched::privatizeSlices(func::FuncOp module) {
  SmallVector<tensor::ExtractSliceOp> slices;
  module.walk([&](tensor::ExtractSliceOp slice) {
    auto alloc =
        slice.getSource().getDefiningOp<bufferization::AllocTensorOp>();
    if (!alloc || alloc.getCopy() ||
        alloc->getParentRegion() == slice->getParentRegion() ||
        !slice->getParentOfType<LoopLikeOpInterface>())
      return;
    slices.push_back(slice);
  });
  for (tensor::ExtractSliceOp slice : slices) {
    OpBuilder b(slice);
    SmallVector<Value> dynamicSizes;
    for (OpFoldResult size : slice.getMixedSizes())
      if (auto v = dyn_cast<Value>(size))
        dynamicSizes.push_back(v);
    // Rank-reducing slices keep only the result's dims.
    auto type = slice.getResultType();
    if (dynamicSizes.size() != size_t(type.getNumDynamicDims()))
      continue;
    Value fresh = bufferization::AllocTensorOp::create(b, slice.getLoc(), type,
                                                       dynamicSizes);
    slice.replaceAllUsesWith(fresh);
    slice.erase();
  }
  module.walk([](bufferization::AllocTensorOp alloc) {
    if (alloc->use_empty())
      alloc.erase();
  });
}

/// Unpacking a GEMM's result ends in a copy of the valid part into the
/// contraction's original output, a tensor whose contents nothing reads
/// (a fresh buffer, or one filled with the zeros the contraction started
/// from before it was packed). The copy's value is its input, so its users
/// take the input: no pass over the result, and the fill goes away too.
void mlir::tessera::tsched::foldCopiesIntoFreshTensors(func::FuncOp module) {
  SmallVector<linalg::CopyOp> copies;
  module.walk([&](linalg::CopyOp copy) {
    if (!copy.hasPureTensorSemantics())
      return;
    Value dest = copy.getOutputs()[0];
    if (auto fill = dest.getDefiningOp<linalg::FillOp>())
      dest = fill.getOutputs()[0];
    if (dest.getDefiningOp<tensor::EmptyOp>() ||
        dest.getDefiningOp<bufferization::AllocTensorOp>())
      copies.push_back(copy);
  });
  for (linalg::CopyOp copy : copies) {
    Value input = copy.getInputs()[0];
    if (input.getType() != copy->getResult(0).getType())
      continue;
    Value dest = copy.getOutputs()[0];
    copy->getResult(0).replaceAllUsesWith(input);
    copy.erase();
    if (auto fill = dest.getDefiningOp<linalg::FillOp>();
        fill && fill->use_empty())
      fill.erase();
  }
}

/// Whether every use of `blockArg` in `forall`'s body, besides the
/// terminator's inserts, is a slice whose contents nobody reads (the
/// destination of a linalg.fill).
static bool onlyOverwritten(scf::ForallOp forall, BlockArgument blockArg) {
  for (Operation *user : blockArg.getUsers()) {
    if (isa<tensor::ParallelInsertSliceOp>(user))
      continue;
    auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
    if (!slice || !llvm::all_of(slice->getUsers(), [&](Operation *u) {
          auto fill = dyn_cast<linalg::FillOp>(u);
          return fill && fill.getOutputs()[0] == slice.getResult();
        }))
      return false;
  }
  return true;
}

/// The unpacking transpose of a packed GEMM's result ([Mt, Nt, 8, 32]
/// tiles -> [Mt, 8, Nt, 32] rows) moves into the GEMM's parallel loop:
/// each block is transposed into the result as soon as it is computed,
/// while it is still in cache, instead of in one more parallel pass over
/// the whole result in memory. The block's accumulator becomes a private
/// tile (its contents were only ever zeroed).
void mlir::tessera::tsched::fuseUnpackIntoContraction(func::FuncOp module) {
  SmallVector<linalg::TransposeOp> transposes;
  module.walk([&](linalg::TransposeOp t) {
    if (!isa_and_nonnull<func::FuncOp>(t->getParentOp()) ||
        !t.hasPureTensorSemantics())
      return;
    auto forall = t.getInput().getDefiningOp<scf::ForallOp>();
    Value init = t.getInit();
    if (forall && forall->getNumResults() == 1 && forall->hasOneUse() &&
        (init.getDefiningOp<tensor::EmptyOp>() ||
         init.getDefiningOp<bufferization::AllocTensorOp>()))
      transposes.push_back(t);
  });
  for (linalg::TransposeOp t : transposes) {
    auto forall = t.getInput().getDefiningOp<scf::ForallOp>();
    BlockArgument shared = forall.getRegionIterArgs()[0];
    auto inserts = forall.getTerminator().getYieldingOps();
    if (llvm::range_size(inserts) != 1 || !onlyOverwritten(forall, shared))
      continue;
    auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(*inserts.begin());
    if (!insert || insert.getDest() != shared ||
        !llvm::all_of(insert.getMixedStrides(), isOneInteger))
      continue;
    ArrayRef<int64_t> perm = t.getPermutation();
    IRRewriter rewriter(t);
    // Accumulator slices of the old result become private tiles.
    for (Operation *user : llvm::make_early_inc_range(shared.getUsers()))
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user)) {
        rewriter.setInsertionPoint(slice);
        rewriter.replaceOpWithNewOp<tensor::EmptyOp>(
            slice, slice.getMixedSizes(), slice.getType().getElementType());
      }
    rewriter.setInsertionPoint(t);
    auto next = scf::ForallOp::create(
        rewriter, forall.getLoc(), forall.getMixedLowerBound(),
        forall.getMixedUpperBound(), forall.getMixedStep(), t.getInit(),
        forall.getMapping());
    IRMapping map;
    map.map(forall.getInductionVars(), next.getInductionVars());
    rewriter.setInsertionPointToStart(next.getBody());
    for (Operation &op : forall.getBody()->without_terminator())
      rewriter.clone(op, map);
    // The block, transposed, at the transposed offsets.
    Value block = map.lookupOrDefault(insert.getSource());
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (int64_t d : perm) {
      OpFoldResult o = insert.getMixedOffsets()[d];
      OpFoldResult z = insert.getMixedSizes()[d];
      if (auto v = dyn_cast<Value>(o))
        o = map.lookupOrDefault(v);
      if (auto v = dyn_cast<Value>(z))
        z = map.lookupOrDefault(v);
      offsets.push_back(o);
      sizes.push_back(z);
      strides.push_back(rewriter.getIndexAttr(1));
    }
    Location loc = insert.getLoc();
    // Written in place: the destination is the result's own slice.
    Value dest = tensor::ExtractSliceOp::create(
        rewriter, loc, next.getRegionIterArgs()[0], offsets, sizes, strides);
    auto moved = linalg::TransposeOp::create(rewriter, loc, block, dest, perm);
    rewriter.setInsertionPointToStart(next.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(rewriter, loc, moved->getResult(0),
                                          next.getRegionIterArgs()[0], offsets,
                                          sizes, strides);
    rewriter.replaceOp(t, next->getResults());
    rewriter.eraseOp(forall);
    vectorizeMovement(rewriter, cast<TilingInterface>(moved.getOperation()));
  }
}

/// A pad whose high padding is only known at run time (rows of a packed
/// GEMM operand rounded up to the register tile) is usually no padding
/// at all: the rows are a multiple of the tile. Then the operand is used
/// as it is instead of being copied (in tiles, each filled with zeros
/// first) into a new buffer.
static void skipEmptyPadding(RewriterBase &rewriter, tensor::PadOp pad) {
  if (!llvm::all_of(pad.getMixedLowPad(), isZeroInteger))
    return;
  SmallVector<Value> dynamicHigh;
  for (OpFoldResult high : pad.getMixedHighPad()) {
    if (auto v = dyn_cast<Value>(high))
      dynamicHigh.push_back(v);
    else if (!isZeroInteger(high))
      return; // pads for sure
  }
  if (dynamicHigh.empty())
    return;
  Location loc = pad.getLoc();
  rewriter.setInsertionPoint(pad);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value none;
  for (Value high : dynamicHigh) {
    Value eq = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                     high, zero);
    none = none ? arith::AndIOp::create(rewriter, loc, none, eq) : eq;
  }
  auto type = pad.getResultType();
  auto ifOp = scf::IfOp::create(rewriter, loc, type, none,
                                /*withElseRegion=*/true);
  rewriter.setInsertionPointToStart(ifOp.thenBlock());
  Value same = pad.getSource();
  if (same.getType() != type)
    same = tensor::CastOp::create(rewriter, loc, type, same);
  scf::YieldOp::create(rewriter, loc, same);
  rewriter.setInsertionPointToStart(ifOp.elseBlock());
  auto yield = scf::YieldOp::create(rewriter, loc, pad.getResult());
  rewriter.replaceAllUsesExcept(pad.getResult(), ifOp.getResult(0), yield);
  rewriter.moveOpBefore(pad, yield);
}

/// Data movement left at function level (packing a GEMM's operands:
/// padding and transposing into panels; unpacking its result) is split
/// over rows into a parallel loop: otherwise one thread copies whole
/// matrices while the others wait.
void mlir::tessera::tsched::parallelizeDataMovement(func::FuncOp module) {
  SmallVector<TilingInterface> ops;
  module.walk([&](Operation *op) {
    if (!isa_and_nonnull<func::FuncOp>(op->getParentOp()))
      return;
    if (!isa<linalg::TransposeOp, linalg::CopyOp, tensor::PadOp>(op))
      return;
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || type.getRank() < 2)
      return;
    // Nothing to move (and zero-size tiles are not defined upstream).
    auto empty = [](Type t) {
      auto r = dyn_cast<RankedTensorType>(t);
      return r && llvm::is_contained(r.getShape(), 0);
    };
    if (empty(type) || llvm::any_of(op->getOperandTypes(), empty))
      return;
    ops.push_back(cast<TilingInterface>(op));
  });
  for (TilingInterface op : ops) {
    IRRewriter rewriter(op);
    if (auto pad = dyn_cast<tensor::PadOp>(op.getOperation())) {
      skipEmptyPadding(rewriter, pad);
      rewriter.setInsertionPoint(op);
    }
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    // Panels (rank 4: a block of rows each) one at a time; plain
    // matrices 16 rows at a time.
    int64_t rows = type.getRank() > 2 ? 1 : 16;
    SmallVector<OpFoldResult> sizes(type.getRank(), rewriter.getIndexAttr(0));
    sizes[0] = rewriter.getIndexAttr(rows);
    scf::SCFTilingOptions options;
    options.setTileSizes(sizes);
    options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
    FailureOr<scf::SCFTilingResult> tiled =
        scf::tileUsingSCF(rewriter, op, options);
    if (failed(tiled))
      continue; // stays sequential
    rewriter.replaceOp(op, tiled->replacements);
    if (tiled->tiledOps.size() == 1 &&
        isa<linalg::TransposeOp, linalg::CopyOp>(tiled->tiledOps[0]))
      vectorizeMovement(rewriter, cast<TilingInterface>(tiled->tiledOps[0]));
  }
}
