//===- RowFusion.cpp - Row-fused groups, each op computed once per row ---===//
//
// A row-fused group is a root op and the producers that only feed the
// group, row for row. The root is tiled by rows into one scf.forall, and
// each producer is computed inside it, nearest first, so intermediate rows
// stay in cache.
//
// A producer whose row the group reads several times (a value used by two
// ops of the group, or twice by one op) is fused once: its identical row
// slices merge before it is fused. Fusing once per slice, as the transform
// dialect's fuse_into_containing_op does, copies every producer chain for
// each of its consumers: a chain of softmaxes with residual connections
// grows threefold per softmax.
//
// Slices that differ (two other parts of a row) recompute the producer:
// that is allowed while the group's recomputed operations stay within a
// quarter of its operations. Beyond that budget the producer stays a loop
// of its own, computed once into a buffer, and so do its own producers.
//
//===----------------------------------------------------------------------===//

#include "CPUScheduler.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tessera::tsched;

namespace {

/// The most ops a row-fused group holds. Each op of a row becomes a few
/// loops in one function, and LLVM's loop passes take time proportional
/// to the function's size for each loop: a bounded group keeps that
/// linear in the program. The rest of a longer chain forms further groups
/// (the rows of the last op of one group are written to a buffer that the
/// next reads).
constexpr int64_t kMaxRowGroupOps = 32;

/// Whether row i of `consumer` reads row i of the producer of `use`: the
/// first loop of both ops indexes the first dim of the value.
bool readsRowByRow(linalg::LinalgOp consumer, OpOperand &use,
                   linalg::LinalgOp producer) {
  MLIRContext *ctx = consumer->getContext();
  AffineMap read = consumer.getMatchingIndexingMap(&use);
  AffineMap write =
      producer.getIndexingMapMatchingResult(cast<OpResult>(use.get()));
  return read.getNumResults() > 0 && write.getNumResults() > 0 &&
         read.getResult(0) == getAffineDimExpr(0, ctx) &&
         write.getResult(0) == getAffineDimExpr(0, ctx);
}

/// Whether two slices take the same part of their sources.
bool sameTile(tensor::ExtractSliceOp a, tensor::ExtractSliceOp b) {
  return a.getMixedOffsets() == b.getMixedOffsets() &&
         a.getMixedSizes() == b.getMixedSizes() &&
         a.getMixedStrides() == b.getMixedStrides();
}

/// The scalar operations `op` does per point of its iteration space.
int64_t operationsPerPoint(Operation *op) {
  int64_t count = 0;
  for (Region &region : op->getRegions())
    for (Block &block : region)
      count += int64_t(block.getOperations().size()) - 1;
  return std::max<int64_t>(count, 1);
}

} // namespace

SmallVector<SmallVector<linalg::LinalgOp>> mlir::tessera::tsched::formRowGroups(
    ArrayRef<linalg::LinalgOp> ops,
    function_ref<bool(linalg::LinalgOp)> fusible) {
  DenseMap<Operation *, int64_t> groupOf;
  // Per producer met while growing group `first`: its users not yet in the
  // group (`second`), or -1 once one of its uses cannot read row by row.
  DenseMap<Operation *, std::pair<int64_t, int64_t>> waiting;
  SmallVector<SmallVector<linalg::LinalgOp>> groups;
  for (linalg::LinalgOp root : llvm::reverse(ops)) {
    if (groupOf.count(root) || !fusible(root))
      continue;
    int64_t g = groups.size();
    groups.emplace_back(1, root);
    groupOf[root] = g;
    // A producer joins when its last user joins (every user must be in the
    // group): each use is looked at once, when its consumer joins.
    for (size_t m = 0; m < groups[g].size(); ++m) {
      linalg::LinalgOp consumer = groups[g][m];
      // Each producer of the consumer, and whether all its uses by the
      // consumer read row by row.
      llvm::SmallMapVector<Operation *, bool, 4> producers;
      for (OpOperand &use : consumer->getOpOperands()) {
        auto producer = use.get().getDefiningOp<linalg::LinalgOp>();
        if (!producer || groupOf.count(producer) || !fusible(producer) ||
            producer->getBlock() != root->getBlock())
          continue;
        bool rows = readsRowByRow(consumer, use, producer);
        auto [it, fresh] = producers.insert({producer, rows});
        if (!fresh)
          it->second = it->second && rows;
      }
      for (auto [producer, rows] : producers) {
        auto [it, fresh] = waiting.try_emplace(producer, g, 0);
        if (fresh || it->second.first != g) {
          llvm::SmallPtrSet<Operation *, 4> users(producer->user_begin(),
                                                  producer->user_end());
          it->second = {g, int64_t(users.size())};
        }
        int64_t &left = it->second.second;
        if (left < 0)
          continue;
        if (!rows) {
          left = -1;
          continue;
        }
        if (--left > 0 || int64_t(groups[g].size()) >= kMaxRowGroupOps)
          continue;
        groupOf[producer] = g;
        groups[g].push_back(cast<linalg::LinalgOp>(producer));
      }
    }
    llvm::sort(groups[g], [](linalg::LinalgOp a, linalg::LinalgOp b) {
      return a->isBeforeInBlock(b);
    });
  }
  return groups;
}

namespace {

/// Fuses the producers of a group into the scf.forall over its rows.
class RowFuser {
public:
  RowFuser(RewriterBase &rewriter, scf::ForallOp loop, int64_t budget)
      : rewriter(rewriter), loop(loop), budget(budget) {}

  /// Computes `producer` inside the loop: once per distinct row slice, or
  /// not at all (false) when that would exceed the budget or the producer
  /// is also read outside the loop.
  bool fuse(linalg::LinalgOp producer, SmallVector<Operation *> &rowOps) {
    SmallVector<tensor::ExtractSliceOp> slices;
    if (!collectSlices(producer, slices) || slices.empty())
      return false;
    int64_t extra = (distinctTiles(slices) - 1) * operationsPerPoint(producer);
    if (recomputed + extra > budget)
      return false;
    // The tiled copies so far, with the slice each was fused for.
    SmallVector<std::pair<tensor::ExtractSliceOp, Operation *>> copies;
    for (tensor::ExtractSliceOp slice : slices) {
      if (reuse(slice, copies))
        continue;
      SmallVector<LoopLikeOpInterface> loops{loop};
      rewriter.setInsertionPoint(slice);
      std::optional<scf::SCFFuseProducerOfSliceResult> fused =
          scf::tileAndFuseProducerOfSlice(rewriter, slice, loops);
      if (!fused)
        return false;
      rowOps.append(fused->tiledOps.begin(), fused->tiledOps.end());
      copies.push_back({slice, fused->tiledOps.front()});
    }
    for (auto [slice, copy] : copies)
      if (slice->use_empty())
        rewriter.eraseOp(slice);
    recomputed += extra;
    eraseIfDead(producer);
    return true;
  }

  int64_t recomputedOperations() const { return recomputed; }

private:
  /// How many different parts of the producer's iteration space `slices`
  /// read (slices of different results over the same part count once).
  static int64_t distinctTiles(ArrayRef<tensor::ExtractSliceOp> slices) {
    SmallVector<tensor::ExtractSliceOp> tiles;
    for (tensor::ExtractSliceOp slice : slices)
      if (llvm::none_of(tiles, [&](tensor::ExtractSliceOp t) {
            return sameTile(t, slice);
          }))
        tiles.push_back(slice);
    return int64_t(tiles.size());
  }

  /// Whether a tiled copy made for another result of the producer already
  /// computes `slice` (the same part of the row of a result with several):
  /// then its result replaces the slice.
  bool reuse(tensor::ExtractSliceOp slice,
             ArrayRef<std::pair<tensor::ExtractSliceOp, Operation *>> copies) {
    auto source = dyn_cast<OpResult>(slice.getSource());
    if (!source)
      return false;
    for (auto [fusedFor, copy] : copies) {
      if (fusedFor.getSource() == slice.getSource() ||
          !sameTile(fusedFor, slice))
        continue;
      Value result = copy->getResult(source.getResultNumber());
      if (result.getType() != slice.getType())
        continue;
      rewriter.replaceOp(slice, result);
      return true;
    }
    return false;
  }

  /// The row slices of `producer` inside the loop, identical ones merged
  /// into the first; false if a result is used otherwise than by slices in
  /// the loop, as the loop's destination, or for its sizes.
  bool collectSlices(linalg::LinalgOp producer,
                     SmallVector<tensor::ExtractSliceOp> &distinct) {
    SmallVector<tensor::ExtractSliceOp> all;
    for (OpResult result : producer->getResults()) {
      for (OpOperand &use : result.getUses()) {
        Operation *user = use.getOwner();
        if (isa<tensor::DimOp>(user))
          continue;
        if (user == loop.getOperation()) {
          // The destination: its slices are those of the block argument.
          if (!loop.isDpsInit(&use))
            return false;
          for (Operation *u : loop.getTiedBlockArgument(&use).getUsers())
            if (auto slice = dyn_cast<tensor::ExtractSliceOp>(u))
              all.push_back(slice);
          continue;
        }
        auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
        if (!slice || slice->getParentOp() != loop.getOperation())
          return false;
        all.push_back(slice);
      }
    }
    llvm::sort(all, [](tensor::ExtractSliceOp a, tensor::ExtractSliceOp b) {
      return a->isBeforeInBlock(b);
    });
    for (tensor::ExtractSliceOp slice : all) {
      auto same = llvm::find_if(distinct, [&](tensor::ExtractSliceOp kept) {
        return OperationEquivalence::isEquivalentTo(
            kept, slice, OperationEquivalence::IgnoreLocations);
      });
      if (same == distinct.end()) {
        distinct.push_back(slice);
        continue;
      }
      rewriter.replaceOp(slice, same->getResult());
    }
    return true;
  }

  /// Erases the original producer once only size queries read it (they
  /// read the same sizes from its destination).
  void eraseIfDead(linalg::LinalgOp producer) {
    for (OpResult result : producer->getResults()) {
      Value init = producer.getDpsInitOperand(result.getResultNumber())->get();
      for (Operation *user : llvm::make_early_inc_range(result.getUsers()))
        if (auto dim = dyn_cast<tensor::DimOp>(user))
          rewriter.modifyOpInPlace(
              dim, [&] { dim.getSourceMutable().assign(init); });
    }
    if (producer->use_empty())
      rewriter.eraseOp(producer);
  }

  RewriterBase &rewriter;
  scf::ForallOp loop;
  int64_t budget;
  int64_t recomputed = 0;
};

} // namespace

FailureOr<RowFusion>
mlir::tessera::tsched::fuseRowGroup(RewriterBase &rewriter,
                                    ArrayRef<linalg::LinalgOp> group) {
  linalg::LinalgOp root = group.back();
  SmallVector<OpFoldResult> rows(root.getNumLoops(), rewriter.getIndexAttr(0));
  rows[0] = rewriter.getIndexAttr(1);
  scf::SCFTilingOptions options;
  options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  options.setTileSizes(rows);
  rewriter.setInsertionPoint(root);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(root.getOperation()), options);
  if (failed(tiled) || tiled->loops.size() != 1)
    return failure();
  rewriter.replaceOp(root, tiled->replacements);
  RowFusion result;
  result.loop = cast<scf::ForallOp>(tiled->loops.front().getOperation());
  result.rowOps.append(tiled->tiledOps.begin(), tiled->tiledOps.end());
  int64_t operations = 0;
  for (linalg::LinalgOp op : group)
    operations += operationsPerPoint(op);
  RowFuser fuser(rewriter, result.loop, operations / 4);
  // Nearest producers first: each fusion exposes the next one's slices.
  for (linalg::LinalgOp producer : llvm::reverse(group.drop_back()))
    if (!fuser.fuse(producer, result.rowOps))
      result.materialized.push_back(producer);
  result.recomputed = fuser.recomputedOperations();
  return result;
}
