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

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

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

/// Whether `op` can be part of a cluster: an elementwise generic on
/// tensors (all loops parallel, one block) writing each result with the
/// identity map.
bool clusterable(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumReductionLoops() != 0 ||
      !op.getRegion().hasOneBlock())
    return false;
  return llvm::all_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
    return op.getMatchingIndexingMap(&init).isIdentity();
  });
}

/// Whether `use` reads a whole element per iteration: an input of a
/// generic through the identity map.
bool readsElementwise(OpOperand &use) {
  auto user = dyn_cast<linalg::GenericOp>(use.getOwner());
  return user && user.isDpsInput(&use) &&
         user.getMatchingIndexingMap(&use).isIdentity();
}

/// The members of one cluster as a single generic in place of its root
/// (the last member, the only one whose results are used outside): each
/// member's body is copied once, its reads of other members' results
/// replaced by the values their bodies yield.
void fuseCluster(ArrayRef<linalg::GenericOp> members) {
  linalg::GenericOp root = members.back();
  DenseSet<Operation *> inCluster;
  for (linalg::GenericOp m : members)
    inCluster.insert(m);
  auto internal = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && inCluster.contains(def);
  };
  // The inputs from outside, one per (value, map).
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  DenseMap<std::pair<Value, AffineMap>, unsigned> inputIndex;
  for (linalg::GenericOp m : members)
    for (OpOperand *in : m.getDpsInputOperands()) {
      if (internal(in->get()))
        continue;
      auto key = std::make_pair(in->get(), m.getMatchingIndexingMap(in));
      if (inputIndex.try_emplace(key, inputs.size()).second) {
        inputs.push_back(key.first);
        maps.push_back(key.second);
      }
    }
  SmallVector<Value> outputs = root.getDpsInits();
  for (OpOperand &init : root.getDpsInitsMutable())
    maps.push_back(root.getMatchingIndexingMap(&init));

  IRRewriter b(root->getContext());
  b.setInsertionPoint(root);
  Location loc = root.getLoc();
  auto fused = linalg::GenericOp::create(
      b, loc, root->getResultTypes(), inputs, outputs, maps,
      root.getIteratorTypesArray());
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (Value v : llvm::concat<Value>(inputs, outputs)) {
    argTypes.push_back(getElementTypeOrSelf(v.getType()));
    argLocs.push_back(loc);
  }
  Block *body = b.createBlock(&fused.getRegion(), {}, argTypes, argLocs);
  b.setInsertionPointToStart(body);
  IRMapping map;
  DenseMap<Value, Value> scalarOf; // member result -> its value per point
  for (linalg::GenericOp m : members) {
    Block &mb = m.getRegion().front();
    for (OpOperand *in : m.getDpsInputOperands()) {
      BlockArgument arg = m.getMatchingBlockArgument(in);
      if (internal(in->get()))
        map.map(arg, scalarOf.lookup(in->get()));
      else
        map.map(arg, body->getArgument(inputIndex.lookup(
                         {in->get(), m.getMatchingIndexingMap(in)})));
    }
    if (m == root)
      for (auto [k, init] : llvm::enumerate(m.getDpsInitsMutable()))
        map.map(m.getMatchingBlockArgument(&init),
                body->getArgument(inputs.size() + k));
    for (Operation &op : mb.without_terminator())
      b.clone(op, map);
    for (auto [result, yielded] :
         llvm::zip(m->getResults(), mb.getTerminator()->getOperands()))
      scalarOf[result] = map.lookupOrDefault(yielded);
  }
  SmallVector<Value> yields;
  for (Value r : root->getResults())
    yields.push_back(scalarOf.lookup(r));
  linalg::YieldOp::create(b, loc, yields);
  b.replaceOp(root, fused->getResults());
  for (linalg::GenericOp m : llvm::reverse(members.drop_back()))
    b.eraseOp(m);
}

/// Fuses, in each block, every cluster of elementwise generics in which
/// all results but the root's are read only inside the cluster, element by
/// element: going up from the last op, a generic joins the cluster of its
/// users when all its uses are such reads by members of one cluster (it is
/// then computed once, in that cluster's loop). Each member's body is
/// copied once, so this is linear in the program; fusing pair by pair
/// copies the growing body at each step instead (a 64-layer Hessian-vector
/// product fused into one loop of 3,000 operations took 2.5 s that way).
/// Returns whether anything fused.
bool fuseClusters(Operation *root) {
  // (Not the blocks inside linalg ops: fusing erases those.)
  SmallVector<Block *> blocks;
  root->walk([&](Block *block) {
    Operation *parent = block->getParentOp();
    if (!isa<linalg::LinalgOp>(parent) &&
        !parent->getParentOfType<linalg::LinalgOp>())
      blocks.push_back(block);
  });
  bool fused = false;
  for (Block *block : blocks) {
    DenseMap<Operation *, Operation *> rootOf;
    // Members of each cluster in reverse program order, by root.
    llvm::MapVector<Operation *, SmallVector<linalg::GenericOp>> clusters;
    for (Operation &op : llvm::reverse(*block)) {
      auto g = dyn_cast<linalg::GenericOp>(op);
      if (!g || !clusterable(g))
        continue;
      Operation *joined = nullptr;
      bool joins = !g->use_empty() &&
                   llvm::all_of(g.getDpsInitsMutable(), [&](OpOperand &init) {
                     return g.getMatchingBlockArgument(&init).use_empty();
                   });
      for (OpOperand &use : g->getUses()) {
        auto it = rootOf.find(use.getOwner());
        if (!joins || it == rootOf.end() || !readsElementwise(use) ||
            (joined && it->second != joined)) {
          joins = false;
          break;
        }
        joined = it->second;
      }
      Operation *r = joins ? joined : g.getOperation();
      rootOf[g] = r;
      clusters[r].push_back(g);
    }
    for (auto &[r, members] : clusters) {
      if (members.size() < 2)
        continue;
      std::reverse(members.begin(), members.end());
      fuseCluster(members);
      fused = true;
    }
  }
  return fused;
}

/// One round of producer-into-consumer fusion in which each op takes part
/// in at most one fusion: going up from the last op, a consumer not yet
/// taken takes every fusible producer not yet taken. On a chain this fuses
/// disjoint pairs, so the chain halves each round and each op's body is
/// copied O(log n) times in all (fusing one growing op with its next
/// producer, as the greedy pattern does, copies the body once per step:
/// quadratic on a long chain). Returns whether anything fused.
bool fuseRound(Operation *root, const linalg::ControlFusionFn &control) {
  SmallVector<linalg::GenericOp> generics;
  root->walk([&](linalg::GenericOp op) { generics.push_back(op); });
  DenseSet<Operation *> taken;
  SmallVector<std::pair<Operation *, SetVector<Operation *>>> plan;
  for (linalg::GenericOp consumer : llvm::reverse(generics)) {
    if (taken.contains(consumer))
      continue;
    SetVector<Operation *> producers;
    for (OpOperand &operand : consumer->getOpOperands()) {
      Operation *producer = operand.get().getDefiningOp();
      if (!producer || taken.contains(producer) ||
          !linalg::areElementwiseOpsFusable(&operand) || !control(&operand))
        continue;
      producers.insert(producer);
      taken.insert(producer);
    }
    if (producers.empty())
      continue;
    taken.insert(consumer);
    plan.emplace_back(consumer, std::move(producers));
  }

  IRRewriter rewriter(root->getContext());
  bool fused = false;
  for (auto &[consumer, producers] : plan) {
    Operation *current = consumer;
    while (!producers.empty()) {
      OpOperand *next = nullptr;
      for (OpOperand &operand : current->getOpOperands())
        if (producers.contains(operand.get().getDefiningOp())) {
          next = &operand;
          break;
        }
      if (!next)
        break;
      Operation *producer = next->get().getDefiningOp();
      producers.remove(producer);
      if (!linalg::areElementwiseOpsFusable(next))
        continue;
      rewriter.setInsertionPoint(current);
      FailureOr<linalg::ElementwiseOpFusionResult> result =
          linalg::fuseElementwiseOps(rewriter, next);
      if (failed(result))
        continue;
      for (auto [original, replacement] : result->replacements)
        rewriter.replaceUsesWithIf(original, replacement, [&](OpOperand &use) {
          return use.getOwner() != producer;
        });
      rewriter.eraseOp(current);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      current = result->fusedOp;
      fused = true;
    }
  }
  return fused;
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
    // The patterns fold reshapes, constants and fills into the generics and
    // clean up; the fusion itself fuses whole clusters at once, then what
    // remains (transposed reads) in rounds, each followed by the patterns,
    // until nothing fuses (fuseClusters and fuseRound say why).
    RewritePatternSet patterns(ctx);
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *) { return false; });
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
    FrozenRewritePatternSet frozen(std::move(patterns));
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    do {
      if (failed(applyPatternsGreedily(getOperation(), frozen, config)))
        return signalPassFailure();
    } while (fuseClusters(getOperation()) ||
             fuseRound(getOperation(), elementwise));
  }
};

} // namespace
