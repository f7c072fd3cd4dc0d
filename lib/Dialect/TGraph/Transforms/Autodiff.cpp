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
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/Autodiff.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <set>

namespace mlir::tessera::tgraph {
#define GEN_PASS_DEF_TGRAPHAUTODIFF
#include "tessera/Dialect/TGraph/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tgraph

using namespace mlir;
using namespace mlir::tessera::tgraph;

namespace {

/// Composites differentiated through their decomposition.
constexpr const char *kExpandedForAutodiff[] = {
    "layernorm", "layernorm_safe", "rmsnorm",   "rmsnorm_safe",
    "attention", "cross_entropy",  "embedding", "one_hot"};

/// Replaces the return with `values`, sets the function type and erases
/// the ops nothing uses any more.
void finish(func::FuncOp fn, func::ReturnOp ret, ArrayRef<Value> values) {
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
      if (isOpTriviallyDead(&op)) {
        op.erase();
        erased = true;
      }
  }
}

/// Appends an argument named `name` (for later wrt(...)) to `fn`.
Value addArgument(func::FuncOp fn, Type type, StringRef name) {
  unsigned index = fn.getNumArguments();
  Builder b(fn.getContext());
  (void)fn.insertArgument(
      index, type,
      b.getDictionaryAttr(b.getNamedAttr(kArgNameAttr, b.getStringAttr(name))),
      fn.getLoc());
  return fn.getArgument(index);
}

class Differentiator {
public:
  Differentiator(ModuleOp module, Operation *request)
      : module(module), request(request) {}

  /// A copy of `source` named `name`, placed after it, with composites
  /// expanded.
  FailureOr<func::FuncOp> copy(func::FuncOp source, StringRef name) {
    auto fn = source.clone();
    fn.setName(name);
    module.getBody()->getOperations().insertAfter(source->getIterator(), fn);
    RewritePatternSet patterns(module.getContext());
    std::vector<std::string> only(std::begin(kExpandedForAutodiff),
                                  std::end(kExpandedForAutodiff));
    populateDecompositionPatterns(patterns, only);
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(fn, std::move(patterns), config))) {
      fn.erase();
      return request->emitOpError("cannot expand the composite ops of @")
             << source.getName();
    }
    return fn;
  }

  /// Reverse mode on `fn` in place: arguments, then seeds (unless the only
  /// result is a scalar), to the cotangents of the `wrt` arguments.
  LogicalResult reverse(func::FuncOp fn, ArrayRef<unsigned> wrt,
                        StringRef source) {
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
    DenseSet<Value> active = activeValues(fn, wrt);
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops)) {
      SmallVector<Value> cts;
      bool any = false;
      for (Value r : op->getResults()) {
        cts.push_back(cotangent.lookup(r));
        any |= bool(cts.back());
      }
      if (!any || !isActive(op, active) || op->hasTrait<NonDifferentiable>())
        continue;
      auto rule = dyn_cast<DifferentiableOpInterface>(op);
      if (!rule || op->getNumRegions())
        return missingRule(op, source);
      ad.setLoc(op->getLoc());
      SmallVector<Value> operandCts;
      if (failed(rule.vjp(ad, cts, operandCts)))
        return failure();
      for (auto [operand, c] : llvm::zip(op->getOperands(), operandCts))
        if (c && active.contains(operand))
          cotangent[operand] = ad.accumulate(cotangent.lookup(operand), c);
    }
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
  LogicalResult forward(func::FuncOp fn, ArrayRef<unsigned> wrt,
                        ArrayRef<std::string> tangentNames, StringRef source) {
    Block &body = fn.front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder b(ret);
    ADBuilder ad(b, ret.getLoc());
    DenseMap<Value, Value> tangent;
    for (auto [i, name] : llvm::zip(wrt, tangentNames)) {
      Value arg = body.getArgument(i);
      tangent[arg] = addArgument(fn, arg.getType(), name);
    }
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops) {
      SmallVector<Value> ts;
      bool any = false;
      for (Value operand : op->getOperands()) {
        ts.push_back(tangent.lookup(operand));
        any |= bool(ts.back());
      }
      if (!any || op->hasTrait<NonDifferentiable>())
        continue;
      auto rule = dyn_cast<DifferentiableOpInterface>(op);
      if (!rule || op->getNumRegions())
        return missingRule(op, source);
      b.setInsertionPointAfter(op);
      ad.setLoc(op->getLoc());
      SmallVector<Value> resultTs;
      if (failed(rule.jvp(ad, ts, resultTs)))
        return failure();
      for (auto [r, t] : llvm::zip(op->getResults(), resultTs))
        if (t && ADBuilder::isDifferentiable(r))
          tangent[r] = t;
    }
    b.setInsertionPoint(ret);
    ad.setLoc(ret.getLoc());
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

private:
  /// Values that depend on the `wrt` arguments through float values.
  static DenseSet<Value> activeValues(func::FuncOp fn, ArrayRef<unsigned> wrt) {
    DenseSet<Value> active;
    for (unsigned i : wrt)
      active.insert(fn.getArgument(i));
    for (Operation &op : fn.front().without_terminator()) {
      if (op.hasTrait<NonDifferentiable>() ||
          llvm::none_of(op.getOperands(),
                        [&](Value v) { return active.contains(v); }))
        continue;
      for (Value r : op.getResults())
        if (ADBuilder::isDifferentiable(r))
          active.insert(r);
    }
    return active;
  }
  static bool isActive(Operation *op, const DenseSet<Value> &active) {
    return llvm::any_of(op->getOperands(),
                        [&](Value v) { return active.contains(v); });
  }

  LogicalResult missingRule(Operation *op, StringRef source) {
    InFlightDiagnostic diag = op->emitError()
                              << "'" << op->getName()
                              << "' has no differentiation rule";
    if (op->getNumRegions())
      diag << " (ops with regions are not differentiated yet)";
    diag.attachNote(request->getLoc())
        << "needed to differentiate @" << source << " here";
    return failure();
  }

  ModuleOp module;
  Operation *request;
};

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
      if (failed(expand(module, op)))
        return signalPassFailure();
      op->erase();
    }
  }

  LogicalResult expand(ModuleOp module, Operation *op) {
    auto source = module.lookupSymbol<func::FuncOp>(
        op->getAttrOfType<FlatSymbolRefAttr>("fn").getValue());
    StringRef name = op->getAttrOfType<StringAttr>("result").getValue();
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
      auto fn = d.copy(source, name);
      if (failed(fn) || failed(d.reverse(*fn, *wrt, source.getName())))
        return failure();
      return success();
    }
    if (isa<JvpOp>(op)) {
      auto fn = d.copy(source, name);
      if (failed(fn) ||
          failed(d.forward(*fn, *wrt, tangentNames(wrtNames, true),
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
    auto fn = d.copy(source, name);
    if (failed(fn) || failed(d.reverse(*fn, *wrt, source.getName())) ||
        failed(d.forward(
            *fn, *wrt, tangentNames(op->getAttrOfType<ArrayAttr>("dir"), false),
            source.getName())))
      return failure();
    auto ret = cast<func::ReturnOp>(fn->front().getTerminator());
    SmallVector<Value> tangents(ret.getOperands().drop_front(wrt->size()));
    finish(*fn, ret, tangents);
    return success();
  }
};

} // namespace
