//===- Autodiff.cpp - Reverse and forward mode as IR transformations ------===//
//
// -tessera-tgraph-autodiff expands tgraph.adjoint / tgraph.jvp / tgraph.hvp
// into functions. Each starts as a copy of the differentiated function
// (its composites without rules expanded into primitives):
//
//  - forward mode walks the ops in order and adds, after each op that a
//    tangent reaches, the op's JVP; the function takes one tangent per wrt
//    argument and returns its results and their tangents;
//  - reverse mode walks the ops backwards from the seeded results,
//    accumulating each value's cotangent from its uses' VJPs; the function
//    returns the cotangents of the wrt arguments (the primal ops it does
//    not need are erased);
//  - hvp is forward mode over the reverse-mode gradient.
//
// Only values on a path from the wrt arguments (active values) are
// differentiated, so ops without rules elsewhere in the function are fine.
// This file has the walks over ops and the pass; the rules of ops with
// regions are in AutodiffControlFlow.cpp (the class is in
// Differentiator.h).
//
//===----------------------------------------------------------------------===//

#include "AutodiffPrepare.h"
#include "Differentiator.h"

#include "tessera/Dialect/TGraph/IR/Autodiff.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <set>

namespace mlir::tessera::tgraph {
#define GEN_PASS_DEF_TGRAPHAUTODIFF
#include "tessera/Dialect/TGraph/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tgraph

using namespace mlir;
using namespace mlir::tessera::tgraph;
using namespace mlir::tessera::tgraph::autodiff;

namespace {

/// Composites differentiated through their decomposition.
constexpr const char *kExpandedForAutodiff[] = {
    "layernorm",      "layernorm_safe", "rmsnorm",   "rmsnorm_safe",
    "attention_grad", "cross_entropy",  "embedding", "one_hot"};

} // namespace

/// Replaces the return with `values`, sets the function type and erases
/// the ops nothing uses any more. That includes collectives: the primal
/// ones a gradient does not need would otherwise still communicate, and
/// every device of a group runs the same generated function, so all of
/// them skip the same exchanges.
void autodiff::finish(func::FuncOp fn, func::ReturnOp ret,
                      ArrayRef<Value> values) {
  OpBuilder b(ret);
  func::ReturnOp::create(b, ret.getLoc(), values);
  ret.erase();
  SmallVector<Type> types = llvm::to_vector(
      llvm::map_range(values, [](Value v) { return v.getType(); }));
  fn.setFunctionType(
      FunctionType::get(fn.getContext(), fn.front().getArgumentTypes(), types));
  fn.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(fn.front())))
      if (isOpTriviallyDead(&op) ||
          (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
               PermuteOp>(op) &&
           op.use_empty())) {
        op.erase();
        erased = true;
      }
  }
}

/// Appends an argument named `name` (for later wrt(...)) to `fn`.
Value autodiff::addArgument(func::FuncOp fn, Type type, StringRef name) {
  unsigned index = fn.getNumArguments();
  Builder b(fn.getContext());
  (void)fn.insertArgument(
      index, type,
      b.getDictionaryAttr(b.getNamedAttr(kArgNameAttr, b.getStringAttr(name))),
      fn.getLoc());
  return fn.getArgument(index);
}

/// Expands the composites without rules of their own in `fn`.
static LogicalResult expandComposites(func::FuncOp fn) {
  RewritePatternSet patterns(fn.getContext());
  std::vector<std::string> only(std::begin(kExpandedForAutodiff),
                                std::end(kExpandedForAutodiff));
  populateDecompositionPatterns(patterns, only);
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return applyPatternsGreedily(fn, std::move(patterns), config);
}

/// A copy of `source` named `name`, placed after it, with calls inlined
/// and composites expanded.
FailureOr<func::FuncOp> Differentiator::copy(func::FuncOp source,
                                             StringRef name, bool forwardMode) {
  auto fn = source.clone();
  fn.setName(name);
  module.getBody()->getOperations().insertAfter(source->getIterator(), fn);
  if (failed(prepareForAutodiff(fn, forwardMode))) {
    fn.erase();
    return failure();
  }
  if (failed(expandComposites(fn))) {
    fn.erase();
    return request->emitOpError("cannot expand the composite ops of @")
           << source.getName();
  }
  return fn;
}

/// Reverse mode on `fn` in place: arguments, then seeds (unless the only
/// result is a scalar), to the cotangents of the `wrt` arguments.
LogicalResult Differentiator::reverse(func::FuncOp fn, ArrayRef<unsigned> wrt,
                                      StringRef source) {
  sourceName = source;
  Block &body = fn.front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> results(ret.getOperands());
  OpBuilder b(ret);
  ADBuilder ad(b, ret.getLoc());
  DenseMap<Value, Value> cotangent;
  bool scalarSeed = results.size() == 1 &&
                    ADBuilder::isDifferentiable(results[0]) &&
                    ADBuilder::typeOf(results[0]).getRank() == 0;
  if (scalarSeed) {
    cotangent[results[0]] = ad.scalarLike(results[0], 1.0);
  } else {
    for (auto [i, r] : llvm::enumerate(results)) {
      if (!ADBuilder::isDifferentiable(r))
        continue;
      Value seed = addArgument(fn, r.getType(), "d" + std::to_string(i));
      cotangent[r] = ad.accumulate(cotangent.lookup(r), seed);
    }
  }
  DenseSet<Value> active;
  for (unsigned i : wrt)
    active.insert(body.getArgument(i));
  if (failed(reverseOps(body, active, cotangent, b)))
    return failure();
  ad.setLoc(ret.getLoc());
  SmallVector<Value> grads;
  for (unsigned i : wrt) {
    Value arg = body.getArgument(i);
    Value g = cotangent.lookup(arg);
    grads.push_back(g ? g : ad.zerosLike(arg));
  }
  finish(fn, ret, grads);
  return success();
}

/// Forward mode on `fn` in place: arguments, then one tangent per `wrt`
/// argument, to the results and then the tangents of the float results.
LogicalResult Differentiator::forward(func::FuncOp fn, ArrayRef<unsigned> wrt,
                                      ArrayRef<std::string> tangentNames,
                                      StringRef source) {
  sourceName = source;
  Block &body = fn.front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  DenseMap<Value, Value> tangent;
  for (auto [i, name] : llvm::zip(wrt, tangentNames)) {
    Value arg = body.getArgument(i);
    tangent[arg] = addArgument(fn, arg.getType(), name);
  }
  if (failed(forwardOps(body, tangent)))
    return failure();
  OpBuilder b(ret);
  ADBuilder ad(b, ret.getLoc());
  SmallVector<Value> outs(ret.getOperands());
  for (Value r : ret.getOperands()) {
    if (!ADBuilder::isDifferentiable(r))
      continue;
    Value t = tangent.lookup(r);
    outs.push_back(t ? t : ad.zerosLike(r));
  }
  finish(fn, ret, outs);
  return success();
}

//===----------------------------------------------------------------------===//
// Forward mode
//===----------------------------------------------------------------------===//
/// Adds, after each op of `block` that a tangent reaches, the tangents of
/// its results.
LogicalResult Differentiator::forwardOps(Block &block,
                                         DenseMap<Value, Value> &tangent) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (op->hasTrait<NonDifferentiable>() || !reached(op, tangent))
      continue;
    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(op);
    ADBuilder ad(b, op->getLoc());
    LogicalResult done =
        TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](CondOp c) { return forwardCond(c, tangent); })
            .Case([&](FixedPointOp f) {
              return forwardImplicit(f, tangent, /*root=*/false);
            })
            .Case([&](SolveOp f) {
              return forwardImplicit(f, tangent, /*root=*/true);
            })
            .Case([&](CustomJvpOp c) { return forwardCustom(c, tangent); })
            .Case([&](ScanOp c) { return forwardScan(c, tangent); })
            .Case([&](WhileOp c) { return forwardWhile(c, tangent); })
            .Default([&](Operation *op) -> LogicalResult {
              auto rule = dyn_cast<DifferentiableOpInterface>(op);
              if (!rule || op->getNumRegions())
                return missingRule(op);
              SmallVector<Value> ts, resultTs;
              for (Value operand : op->getOperands())
                ts.push_back(tangent.lookup(operand));
              if (failed(rule.jvp(ad, ts, resultTs)))
                return failure();
              for (auto [r, t] : llvm::zip(op->getResults(), resultTs))
                if (t && ADBuilder::isDifferentiable(r))
                  tangent[r] = t;
              return success();
            });
    if (failed(done))
      return failure();
  }
  return success();
}

/// Whether a tangent reaches `op`: through an operand, or through a value
/// from outside used in its regions.
bool Differentiator::reached(Operation *op,
                             const DenseMap<Value, Value> &tangent) {
  if (llvm::any_of(op->getOperands(),
                   [&](Value v) { return tangent.lookup(v); }))
    return true;
  bool inside = false;
  op->walk([&](Operation *nested) {
    if (nested != op)
      for (Value v : nested->getOperands())
        if (tangent.lookup(v))
          inside = true;
  });
  return inside;
}

//===----------------------------------------------------------------------===//
// Reverse mode
//===----------------------------------------------------------------------===//
/// Backward code for the ops of `block` at `b`'s insertion point: from
/// the cotangents in `cotangent`, accumulates those of the values the
/// ops use (block arguments and values from outside). `active` holds the
/// values that depend on what is differentiated; it grows with the ops'
/// results.
LogicalResult Differentiator::reverseOps(Block &block, DenseSet<Value> &active,
                                         DenseMap<Value, Value> &cotangent,
                                         OpBuilder &b) {
  SmallVector<Operation *> ops = llvm::to_vector(llvm::map_range(
      block.without_terminator(), [](Operation &op) { return &op; }));
  return reverseInOrder(ops, block.getParentOp()->getLoc(), active, cotangent,
                        b);
}

/// Marks the results of `ops` (in program order) that the active values
/// reach as active, then walks them backwards emitting each reached op's
/// VJP where its results have cotangents.
LogicalResult Differentiator::reverseInOrder(ArrayRef<Operation *> ops,
                                             Location loc,
                                             DenseSet<Value> &active,
                                             DenseMap<Value, Value> &cotangent,
                                             OpBuilder &b) {
  for (Operation *op : ops) {
    if (op->hasTrait<NonDifferentiable>() || !reachedBy(op, active))
      continue;
    // A derivative that would flow through state (a value stored into a
    // KV cache and read back later) has no rule: stop instead of
    // silently dropping it.
    if (writesStateWithoutRule(op))
      return missingRule(op);
    for (Value r : op->getResults())
      if (ADBuilder::isDifferentiable(r))
        active.insert(r);
  }
  ADBuilder ad(b, loc);
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> cts;
    bool any = false;
    for (Value r : op->getResults()) {
      cts.push_back(cotangent.lookup(r));
      any |= bool(cts.back());
    }
    if (!any || op->hasTrait<NonDifferentiable>() || !reachedBy(op, active))
      continue;
    ad.setLoc(op->getLoc());
    if (failed(reverseOp(op, cts, active, cotangent, b, ad)))
      return failure();
  }
  return success();
}

/// The backward code of one op (its cotangents `cts`) at `b`.
LogicalResult Differentiator::reverseOp(Operation *op, ArrayRef<Value> cts,
                                        DenseSet<Value> &active,
                                        DenseMap<Value, Value> &cotangent,
                                        OpBuilder &b, ADBuilder &ad) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](CondOp c) { return reverseCond(c, cts, active, cotangent, b); })
      .Case([&](FixedPointOp f) {
        return reverseImplicit(f, cts[0], active, cotangent, b,
                               /*root=*/false);
      })
      .Case([&](SolveOp f) {
        return reverseImplicit(f, cts[0], active, cotangent, b,
                               /*root=*/true);
      })
      .Case([&](CustomVjpOp c) {
        return reverseCustom(c, cts, active, cotangent, b);
      })
      .Case([&](CheckpointOp c) {
        return reverseCheckpoint(c, cts, active, cotangent, b);
      })
      .Case([&](ScanOp c) { return reverseScan(c, cts, active, cotangent, b); })
      .Case(
          [&](WhileOp c) { return reverseWhile(c, cts, active, cotangent, b); })
      .Default([&](Operation *op) -> LogicalResult {
        auto rule = dyn_cast<DifferentiableOpInterface>(op);
        if (!rule || op->getNumRegions())
          return missingRule(op);
        SmallVector<Value> operandCts;
        if (failed(rule.vjp(ad, cts, operandCts)))
          return failure();
        for (auto [operand, c] : llvm::zip(op->getOperands(), operandCts))
          if (c && active.contains(operand))
            cotangent[operand] = ad.accumulate(cotangent.lookup(operand), c);
        return success();
      });
}

/// Whether `op` uses an active value (directly or in its regions).
bool Differentiator::reachedBy(Operation *op, const DenseSet<Value> &active) {
  bool found = false;
  op->walk([&](Operation *nested) {
    for (Value v : nested->getOperands())
      if (active.contains(v))
        found = true;
  });
  return found;
}

/// Active values from outside `op` that its regions use.
SmallVector<Value>
Differentiator::freeActiveValues(Operation *op, const DenseSet<Value> &active) {
  SetVector<Value> free;
  op->walk([&](Operation *nested) {
    for (Value v : nested->getOperands())
      if (active.contains(v) &&
          !op->isAncestor(v.getParentBlock()->getParentOp()))
        free.insert(v);
  });
  return free.takeVector();
}

/// Backward code for the ops that compute `roots` from values in
/// `active`: those after `after` (all, if null) and before `b`'s
/// insertion point in its block (earlier values are constants here).
LogicalResult Differentiator::reverseCloned(ArrayRef<Value> roots,
                                            Operation *after,
                                            DenseSet<Value> &active,
                                            DenseMap<Value, Value> &cotangent,
                                            OpBuilder &b) {
  // The ops between the first op that root depends on and the insertion
  // point: walk back from root's definition collecting its slice.
  SetVector<Operation *> slice;
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != b.getInsertionBlock() ||
        (after && !after->isBeforeInBlock(def)) || !slice.insert(def))
      continue;
    // Operands, and values from outside used in its regions.
    def->walk([&](Operation *nested) {
      for (Value o : nested->getOperands())
        if (nested == def ||
            !def->isAncestor(o.getParentBlock()->getParentOp()))
          work.push_back(o);
    });
  }
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *c) { return a->isBeforeInBlock(c); });
  return reverseInOrder(ordered, b.getInsertionBlock()->getParentOp()->getLoc(),
                        active, cotangent, b);
}

/// An op without a rule that writes memory (state) instead of returning
/// its effect as results.
bool Differentiator::writesStateWithoutRule(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  return effects && !isa<DifferentiableOpInterface>(op) &&
         effects.hasEffect<MemoryEffects::Write>();
}

LogicalResult Differentiator::missingRule(Operation *op) {
  StringRef source = sourceName;
  InFlightDiagnostic diag = op->emitError() << "'" << op->getName()
                                            << "' has no differentiation rule";
  if (op->getNumRegions())
    diag << " (ops with regions are not differentiated yet)";
  else if (writesStateWithoutRule(op))
    diag << ": a value that depends on the differentiated arguments "
            "reaches state it writes, and derivatives do not flow through "
            "state";
  diag.attachNote(request->getLoc())
      << "needed to differentiate @" << source << " here";
  return failure();
}

LogicalResult mlir::tessera::tgraph::expandAutodiffDeclaration(ModuleOp module,
                                                               Operation *op) {
  auto source = module.lookupSymbol<func::FuncOp>(
      op->getAttrOfType<FlatSymbolRefAttr>("fn").getValue());
  StringRef name = op->getAttrOfType<StringAttr>("result").getValue();
  if (module.lookupSymbol(name))
    return op->emitOpError() << "cannot create @" << name
                             << ": the module already has a symbol of "
                                "that name";
  auto wrtNames = op->getAttrOfType<ArrayAttr>("wrt");
  auto wrt = resolveArguments(op, source, wrtNames);
  if (failed(wrt))
    return failure();
  if (source.getBody().getBlocks().size() != 1)
    return op->emitOpError("needs @")
           << source.getName() << " to have a single block";
  Differentiator d(module, op);
  // "d<name>" for the tangent of <name>, numbered ("dx_2") where that
  // name is taken, so every argument can be named in a later wrt(...).
  auto tangentNames = [&](ArrayAttr names, bool prefix) {
    std::set<std::string> taken;
    for (unsigned i = 0; i < source.getNumArguments(); ++i)
      taken.insert(argumentName(source, i));
    std::vector<std::string> out;
    for (auto [i, n] : llvm::enumerate(names.getAsValueRange<StringAttr>())) {
      std::string base =
          prefix ? "d" + argumentName(source, (*wrt)[i]) : n.str();
      std::string name = base;
      for (int k = 2; prefix && taken.count(name); ++k)
        name = base + "_" + std::to_string(k);
      taken.insert(name);
      out.push_back(name);
    }
    return out;
  };
  if (isa<AdjointOp>(op)) {
    auto fn = d.copy(source, name, /*forwardMode=*/false);
    if (failed(fn) || failed(d.reverse(*fn, *wrt, source.getName())))
      return failure();
    // For -tessera-tgraph-remat.
    if (auto budget = op->getAttrOfType<IntegerAttr>("remat_budget"))
      (*fn)->setAttr("tgraph.remat_budget", budget);
    return success();
  }
  if (isa<JvpOp>(op)) {
    auto fn = d.copy(source, name, /*forwardMode=*/true);
    if (failed(fn) || failed(d.forward(*fn, *wrt, tangentNames(wrtNames, true),
                                       source.getName())))
      return failure();
    return success();
  }
  // hvp: the gradient (one scalar result), then its JVP, of which only
  // the tangents are kept.
  FunctionType type = source.getFunctionType();
  if (type.getNumResults() != 1 ||
      !ADBuilder::isDifferentiable(
          source.getBody().front().getTerminator()->getOperand(0)) ||
      cast<RankedTensorType>(type.getResult(0)).getRank() != 0)
    return op->emitOpError("needs @")
           << source.getName()
           << " to return one scalar float (a rank-0 tensor), got "
           << type.getResults();
  // (The gradient's own composites, attention_grad, are expanded for the
  // forward pass over it.)
  auto fn = d.copy(source, name, /*forwardMode=*/false);
  if (failed(fn) || failed(d.reverse(*fn, *wrt, source.getName())) ||
      failed(prepareForAutodiff(*fn, /*forwardMode=*/true)) ||
      failed(expandComposites(*fn)) ||
      failed(d.forward(*fn, *wrt,
                       tangentNames(op->getAttrOfType<ArrayAttr>("dir"), false),
                       source.getName())))
    return failure();
  auto ret = cast<func::ReturnOp>(fn->front().getTerminator());
  SmallVector<Value> tangents(ret.getOperands().drop_front(wrt->size()));
  finish(*fn, ret, tangents);
  return success();
}

namespace {

struct TGraphAutodiffPass
    : public mlir::tessera::tgraph::impl::TGraphAutodiffBase<
          TGraphAutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> pending;
    for (Operation &op : module.getBody()->getOperations())
      if (isa<AdjointOp, JvpOp, HvpOp>(op))
        pending.push_back(&op);
    // A declaration runs once the function it differentiates exists.
    while (!pending.empty()) {
      auto ready = llvm::find_if(pending, [&](Operation *op) {
        return module.lookupSymbol<func::FuncOp>(
            op->getAttrOfType<FlatSymbolRefAttr>("fn").getValue());
      });
      if (ready == pending.end()) {
        pending.front()->emitOpError()
            << "differentiates @"
            << pending.front()
                   ->getAttrOfType<FlatSymbolRefAttr>("fn")
                   .getValue()
            << ", which neither exists nor is created by another "
               "declaration that can run first";
        return signalPassFailure();
      }
      Operation *op = *ready;
      pending.erase(ready);
      if (failed(expandAutodiffDeclaration(module, op)))
        return signalPassFailure();
      op->erase();
    }
  }
};

} // namespace
