//===- Remat.cpp - Rematerialization within a memory budget ---------------===//
//
// Liveness in program order over a function's top-level block: a tensor
// value is live from its definition to its last use (uses inside a region
// count at the region's op). The peak of the summed sizes is the estimate
// the budget applies to. Each round takes the program point of the peak,
// the values live across it (defined before, used after), largest first,
// and recomputes the first one whose later uses can be served by a copy of
// a small pure slice of ops reading only arguments and values live there.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tessera::tgraph {
#define GEN_PASS_DEF_TGRAPHREMAT
#include "tessera/Dialect/TGraph/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tgraph

using namespace mlir;
using namespace mlir::tessera::tgraph;

namespace {

struct Liveness {
  DenseMap<Operation *, int64_t> position;
  /// value -> (definition position, last use position)
  DenseMap<Value, std::pair<int64_t, int64_t>> range;
  int64_t peak = 0, peakAt = 0;
};

struct TGraphRematPass
    : public mlir::tessera::tgraph::impl::TGraphRematBase<TGraphRematPass> {
  using Base::Base;

  int64_t bytes(Value v) const {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    // Constants are data of the program, not buffers of the call.
    Operation *def = v.getDefiningOp();
    if (!t || (def && def->hasTrait<OpTrait::ConstantLike>()))
      return 0;
    int64_t n = 1;
    for (int64_t d : t.getShape())
      n *= ShapedType::isDynamic(d) ? int64_t(dimEstimate) : d;
    return n * int64_t((t.getElementTypeBitWidth() + 7) / 8);
  }

  Liveness analyze(Block &block) const {
    Liveness l;
    int64_t i = 0;
    for (Operation &op : block)
      l.position[&op] = i++;
    auto note = [&](Value v, int64_t def) {
      int64_t last = def;
      for (OpOperand &use : v.getUses()) {
        Operation *user = block.findAncestorOpInBlock(*use.getOwner());
        if (user)
          last = std::max(last, l.position[user]);
      }
      l.range[v] = {def, last};
    };
    for (BlockArgument a : block.getArguments())
      note(a, -1);
    for (Operation &op : block)
      for (Value r : op.getResults())
        note(r, l.position[&op]);
    // Sizes live at each point (a value occupies [def, last]).
    std::vector<int64_t> delta(i + 2, 0);
    for (auto &[v, r] : l.range) {
      if (isa<BlockArgument>(v))
        continue; // arguments belong to the caller
      delta[r.first] += bytes(v);
      delta[r.second + 1] -= bytes(v);
    }
    int64_t live = 0;
    for (int64_t p = 0; p < i; ++p) {
      live += delta[p];
      if (live > l.peak) {
        l.peak = live;
        l.peakAt = p;
      }
    }
    return l;
  }

  /// The ops to copy to recompute `v` at position `at`, producers first:
  /// pure ops without regions whose other operands are arguments or live
  /// at `at`; empty if there is no such slice of at most maxDepth ops.
  SmallVector<Operation *> slice(Value v, int64_t at, const Liveness &l) const {
    SetVector<Operation *> ops;
    SmallVector<Value> work{v};
    while (!work.empty()) {
      Value x = work.pop_back_val();
      if (isa<BlockArgument>(x))
        continue;
      auto r = l.range.lookup(x);
      Operation *def = x.getDefiningOp();
      if (x != v && r.second >= at)
        continue; // live there anyway
      if (!def || def->getNumRegions() || !isPure(def) ||
          ops.size() >= maxDepth)
        return {};
      if (!ops.insert(def))
        continue;
      for (Value o : def->getOperands())
        work.push_back(o);
    }
    SmallVector<Operation *> ordered(ops.begin(), ops.end());
    llvm::sort(ordered, [&](Operation *a, Operation *b) {
      return l.position.lookup(a) < l.position.lookup(b);
    });
    return ordered;
  }

  /// A call, before `at`, of a new private function made of `ops` that
  /// returns `v`: a function, so later CSE does not merge the copy back
  /// into the original (which would keep the value live again); the CPU
  /// pipeline inlines it after its last CSE.
  Value recompute(func::FuncOp fn, ArrayRef<Operation *> ops, Value v,
                  Operation *at) {
    SetVector<Value> inputs;
    DenseSet<Operation *> inside(ops.begin(), ops.end());
    for (Operation *op : ops)
      for (Value o : op->getOperands())
        if (!o.getDefiningOp() || !inside.contains(o.getDefiningOp()))
          inputs.insert(o);
    ModuleOp module = fn->getParentOfType<ModuleOp>();
    std::string name = (fn.getName() + "_remat").str();
    for (int k = 1; module.lookupSymbol(name); ++k)
      name = (fn.getName() + "_remat" + Twine(k)).str();
    OpBuilder mb(fn);
    SmallVector<Type> types = llvm::to_vector(
        llvm::map_range(inputs, [](Value x) { return x.getType(); }));
    auto callee = func::FuncOp::create(
        mb, v.getLoc(), name, mb.getFunctionType(types, {v.getType()}));
    callee.setPrivate();
    // Inlined again once no CSE can merge it with the original (see
    // -tessera-inline-recompute).
    callee->setAttr("tgraph.recompute", mb.getUnitAttr());
    Block *entry = callee.addEntryBlock();
    OpBuilder cb = OpBuilder::atBlockEnd(entry);
    IRMapping map;
    map.map(inputs.getArrayRef(), entry->getArguments());
    for (Operation *op : ops)
      cb.clone(*op, map);
    func::ReturnOp::create(cb, v.getLoc(), map.lookup(v));
    OpBuilder b(at);
    auto call = CallOp::create(b, v.getLoc(), TypeRange{v.getType()},
                               FlatSymbolRefAttr::get(callee.getSymNameAttr()),
                               inputs.getArrayRef(), ArrayAttr(), ArrayAttr());
    return call.getResult(0);
  }

  void runOnOperation() override {
    SmallVector<func::FuncOp> fns(getOperation().getOps<func::FuncOp>());
    for (func::FuncOp fn : fns)
      rematerialize(fn);
  }

  void rematerialize(func::FuncOp fn) {
    int64_t budget = budgetBytes;
    if (budget <= 0)
      if (auto attr = fn->getAttrOfType<IntegerAttr>("tgraph.remat_budget"))
        budget = attr.getInt();
    if (budget <= 0 || fn.isExternal() || fn.getBlocks().size() != 1)
      return;
    Block &block = fn.front();
    Liveness l = analyze(block);
    int64_t before = l.peak;
    DenseSet<Value> tried;
    while (l.peak > budget) {
      // Values live across the peak, largest first.
      SmallVector<Value> across;
      for (auto &[v, r] : l.range)
        if (!isa<BlockArgument>(v) && bytes(v) > 0 && r.first < l.peakAt &&
            r.second > l.peakAt && !tried.contains(v))
          across.push_back(v);
      llvm::sort(across, [&](Value a, Value b) {
        int64_t sa = bytes(a), sb = bytes(b);
        if (sa != sb)
          return sa > sb;
        return l.range[a].first < l.range[b].first;
      });
      bool changed = false;
      for (Value v : across) {
        tried.insert(v);
        // The uses after the peak get the copy.
        SmallVector<OpOperand *> late;
        Operation *first = nullptr;
        for (OpOperand &use : v.getUses()) {
          Operation *user = block.findAncestorOpInBlock(*use.getOwner());
          if (user && l.position[user] > l.peakAt) {
            late.push_back(&use);
            if (!first || l.position[user] < l.position[first])
              first = user;
          }
        }
        if (late.empty())
          continue;
        SmallVector<Operation *> ops = slice(v, l.position[first], l);
        if (ops.empty())
          continue;
        Value copy = recompute(fn, ops, v, first);
        for (OpOperand *use : late)
          use->set(copy);
        // Kept only if the estimated peak goes down.
        Liveness after = analyze(block);
        if (after.peak < l.peak) {
          changed = true;
          break;
        }
        for (OpOperand *use : late)
          use->set(v);
        auto call = cast<CallOp>(copy.getDefiningOp());
        auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr());
        call.erase();
        callee.erase();
      }
      if (!changed)
        break;
      l = analyze(block);
    }
    if (l.peak > budget)
      fn.emitWarning() << "rematerialization: estimated peak of live tensors "
                       << l.peak << " bytes is above the budget of " << budget
                       << " (it was " << before
                       << "); no more values can be recomputed";
    else if (l.peak != before)
      fn.emitRemark() << "rematerialization: estimated peak of live tensors "
                      << before << " -> " << l.peak << " bytes (budget "
                      << budget << ")";
  }
};

} // namespace
