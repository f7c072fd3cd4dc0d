//===- ParallelLoops.cpp - Parallel loops before OpenMP -------------------===//
//
// Two steps between the schedule's parallel loops and their OpenMP lowering
// (the pass descriptions in Passes.td say why):
//   - loops with too little work to pay for a parallel region run serially;
//   - each remaining outermost parallel loop moves into a function of its
//     own, so LLVM's OpenMP outlining stays linear in the program.
//
//===----------------------------------------------------------------------===//

#include "tessera/Transforms/Passes.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include <limits>

namespace mlir::tessera {
#define GEN_PASS_DEF_SERIALIZESMALLPARALLELLOOPS
#define GEN_PASS_DEF_OUTLINEPARALLELLOOPS
#include "tessera/Transforms/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();

int64_t add(int64_t a, int64_t b) {
  return a > kUnbounded - b ? kUnbounded : a + b;
}

int64_t mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0)
    return 0;
  return a > kUnbounded / b ? kUnbounded : a * b;
}

/// The static trip count of a loop dimension; kUnbounded when a bound or
/// the step is not a constant.
int64_t tripCount(Value lb, Value ub, Value step) {
  std::optional<int64_t> l = getConstantIntValue(lb);
  std::optional<int64_t> u = getConstantIntValue(ub);
  std::optional<int64_t> s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return kUnbounded;
  return *u <= *l ? 0 : (*u - *l + *s - 1) / *s;
}

int64_t workOf(Operation *op);

int64_t workOf(Region &region) {
  int64_t total = 0;
  for (Block &block : region)
    for (Operation &op : block) {
      total = add(total, workOf(&op));
      if (total == kUnbounded)
        return total;
    }
  return total;
}

/// Estimated scalar operations of one execution of `op` (kUnbounded when a
/// size is not known statically, or for a call).
int64_t workOf(Operation *op) {
  if (isa<CallOpInterface>(op) || isa<scf::WhileOp>(op))
    return kUnbounded;
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return mul(tripCount(loop.getLowerBound(), loop.getUpperBound(),
                         loop.getStep()),
               add(workOf(loop.getRegion()), 1));
  if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
    int64_t trips = 1;
    for (auto [l, u, s] : llvm::zip(loop.getLowerBound(), loop.getUpperBound(),
                                    loop.getStep()))
      trips = mul(trips, tripCount(l, u, s));
    return mul(trips, add(workOf(loop.getRegion()), 1));
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    int64_t points = 1;
    for (int64_t size : linalgOp.getStaticLoopRanges())
      points = mul(points, ShapedType::isDynamic(size) ? kUnbounded : size);
    // Each point loads its operands, runs the body and stores.
    int64_t perPoint = add(int64_t(op->getNumOperands()),
                           workOf(op->getRegion(0)));
    return mul(points, perPoint);
  }
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    auto type = cast<MemRefType>(copy.getSource().getType());
    return type.hasStaticShape() ? mul(type.getNumElements(), 2) : kUnbounded;
  }
  int64_t total = 1;
  for (Region &region : op->getRegions())
    total = add(total, workOf(region));
  return total;
}

/// Whether `op` can run as ordinary loops: its stack allocations, if any,
/// have static sizes, sit directly in its body, and can move to just before
/// the loops, which must then be where the stack is not re-entered per
/// iteration (directly in a function or in a parallel body, a stack scope
/// of its own once it is an OpenMP region). Sequential iterations may share
/// one buffer: nothing a parallel iteration allocates outlives it.
bool serializable(scf::ParallelOp op) {
  if (op.getNumReductions() != 0 || op.getNumLoops() == 0)
    return false;
  Block &body = op.getRegion().front();
  bool allocates = false, hoistable = true;
  body.walk([&](memref::AllocaOp alloca) {
    allocates = true;
    hoistable &= alloca->getBlock() == &body &&
                 alloca.getType().hasStaticShape() &&
                 alloca->getNumOperands() == 0;
  });
  if (!allocates)
    return true;
  Operation *parent = op->getParentOp();
  // (Not any AutomaticAllocationScope: scf.for is one, but its lowering
  // does not restore the stack per iteration.)
  return hoistable &&
         (isa<FunctionOpInterface>(parent) || isa<scf::ParallelOp>(parent));
}

/// `op` as a nest of scf.for loops, its stack allocations before them.
void serialize(scf::ParallelOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Block &body = op.getRegion().front();
  for (Operation &inner : llvm::make_early_inc_range(body))
    if (isa<memref::AllocaOp>(inner))
      inner.moveBefore(op);
  SmallVector<Value> ivs;
  Block *dest = nullptr;
  for (auto [l, u, s] :
       llvm::zip(op.getLowerBound(), op.getUpperBound(), op.getStep())) {
    auto loop = scf::ForOp::create(b, loc, l, u, s);
    ivs.push_back(loop.getInductionVar());
    dest = loop.getBody();
    b.setInsertionPoint(dest->getTerminator());
  }
  for (auto [arg, iv] : llvm::zip(body.getArguments(), ivs))
    arg.replaceAllUsesWith(iv);
  dest->getOperations().splice(Block::iterator(dest->getTerminator()),
                               body.getOperations(), body.begin(),
                               std::prev(body.end()));
  op.erase();
}

struct SerializeSmallParallelLoopsPass
    : public tessera::impl::SerializeSmallParallelLoopsBase<
          SerializeSmallParallelLoopsPass> {
  using SerializeSmallParallelLoopsBase::SerializeSmallParallelLoopsBase;

  void runOnOperation() override {
    if (minWork < 0) {
      getOperation()->emitError("tessera-serialize-small-parallel-loops: "
                                "min-work must be at least 0, but is ")
          << int64_t(minWork);
      return signalPassFailure();
    }
    SmallVector<scf::ParallelOp> small;
    getOperation()->walk([&](scf::ParallelOp op) {
      if (workOf(op) < minWork && serializable(op))
        small.push_back(op);
    });
    for (scf::ParallelOp op : small)
      serialize(op);
  }
};

/// Whether `value` is defined by a constant that the outlined function
/// copies instead of receiving.
Operation *copiedConstant(Value value) {
  Operation *def = value.getDefiningOp();
  if (def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
      def->getNumResults() == 1 && def->hasTrait<OpTrait::ConstantLike>())
    return def;
  return nullptr;
}

struct OutlineParallelLoopsPass
    : public tessera::impl::OutlineParallelLoopsBase<OutlineParallelLoopsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (fn.isExternal())
        continue;
      SmallVector<scf::ParallelOp> outermost;
      fn.walk<WalkOrder::PreOrder>([&](scf::ParallelOp op) {
        outermost.push_back(op);
        return WalkResult::skip();
      });
      Operation *after = fn;
      for (auto [k, op] : llvm::enumerate(outermost))
        after = outline(op, (fn.getName() + ".parallel" + Twine(k)).str(),
                        after, symbols);
      // Constants only the loops used.
      if (!outermost.empty())
        fn.walk([](Operation *op) {
          if (op->hasTrait<OpTrait::ConstantLike>() && op->use_empty() &&
              op->getNumRegions() == 0)
            op->erase();
        });
    }
  }

  /// Moves `op` into a new function `name` placed after `after`, calls it
  /// in its place, and returns the function.
  func::FuncOp outline(scf::ParallelOp op, StringRef name, Operation *after,
                       SymbolTable &symbols) {
    Location loc = op.getLoc();
    // What the loop reads from outside: its bounds and the values its body
    // uses from above. Constants are copied in.
    llvm::SetVector<Value> used;
    for (Value v : op->getOperands())
      used.insert(v);
    getUsedValuesDefinedAbove(op.getRegion(), used);
    SmallVector<Value> inputs;
    SmallVector<Operation *> constants;
    for (Value v : used) {
      if (Operation *c = copiedConstant(v))
        constants.push_back(c);
      else
        inputs.push_back(v);
    }

    OpBuilder b(op->getContext());
    b.setInsertionPointAfter(after);
    auto callee = func::FuncOp::create(
        b, loc, name,
        b.getFunctionType(ValueRange(inputs).getTypes(), op->getResultTypes()));
    callee.setPrivate();
    callee->setAttr("llvm.linkage",
                    LLVM::LinkageAttr::get(b.getContext(),
                                           LLVM::Linkage::Internal));
    // Not inlined back by LLVM: that would make the caller as large as
    // before for LLVM's passes. (func.func's own no_inline does not reach
    // the llvm.func; `passthrough` does.)
    callee->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
    symbols.insert(callee);
    Block *entry = callee.addEntryBlock();
    b.setInsertionPointToStart(entry);
    IRMapping map;
    for (Operation *c : constants)
      map.map(c->getResults(), b.clone(*c)->getResults());
    for (auto [value, arg] : llvm::zip(inputs, entry->getArguments()))
      map.map(value, arg);
    Operation *copy = b.clone(*op, map);
    func::ReturnOp::create(b, loc, copy->getResults());

    // (A loop with reductions returns their values.)
    b.setInsertionPoint(op);
    auto call = func::CallOp::create(b, loc, callee, inputs);
    op->replaceAllUsesWith(call.getResults());
    op.erase();
    return callee;
  }
};

} // namespace
