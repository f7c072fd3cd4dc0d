//===- SplitFunctions.cpp - Long functions as parts called in turn --------===//
//
// Cuts the body of a long function, in program order, into parts of a
// bounded number of operations, each a private function the original calls
// (the pass description in Passes.td says why).
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TSched/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tessera::tsched {
#define GEN_PASS_DEF_TSCHEDSPLITFUNCTIONS
#include "tessera/Dialect/TSched/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tsched

using namespace mlir;

namespace {

/// An op that each part copies rather than receives: a constant, or an
/// empty tensor of static shape (a destination; its contents are not read).
bool copiedIntoParts(Operation *op) {
  if (op->getNumOperands() != 0 || op->getNumRegions() != 0)
    return false;
  return op->hasTrait<OpTrait::ConstantLike>() ||
         isa<tensor::EmptyOp, bufferization::AllocTensorOp>(op);
}

/// The operations in `op`, itself included.
int64_t weight(Operation *op) {
  int64_t n = 0;
  op->walk([&](Operation *) { ++n; });
  return n;
}

/// Whether values of `type` may cross a function boundary here (the
/// bufferization and lowerings after this pass handle these).
bool crossable(Type type) {
  return isa<TensorType, VectorType, IndexType, IntegerType, FloatType>(type);
}

/// The ops of the body, in order, cut into parts of at most `maxOps`
/// operations (constants left out: each part copies those it uses).
SmallVector<SmallVector<Operation *>> cut(Block &body, int64_t maxOps) {
  SmallVector<SmallVector<Operation *>> parts(1);
  int64_t size = 0;
  for (Operation &op : body.without_terminator()) {
    if (copiedIntoParts(&op))
      continue;
    int64_t w = weight(&op);
    if (size > 0 && size + w > maxOps) {
      parts.emplace_back();
      size = 0;
    }
    parts.back().push_back(&op);
    size += w;
  }
  return parts;
}

/// One part as a function: what it reads from before it, what it defines
/// that is read after it.
struct Interface {
  SetVector<Value> inputs;
  SetVector<Value> outputs;
  SetVector<Operation *> constants;
};

/// The interface of `part` (ops of `body`).
FailureOr<Interface> interfaceOf(Block &body, ArrayRef<Operation *> part) {
  llvm::SmallPtrSet<Operation *, 32> inPart(part.begin(), part.end());
  Interface io;
  for (Operation *top : part) {
    top->walk([&](Operation *op) {
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        Operation *owner = def ? def : v.getParentBlock()->getParentOp();
        Operation *ancestor = body.findAncestorOpInBlock(*owner);
        if (ancestor && inPart.contains(ancestor))
          continue;
        if (ancestor && copiedIntoParts(ancestor))
          io.constants.insert(ancestor);
        else
          io.inputs.insert(v);
      }
    });
    for (Value result : top->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !inPart.contains(body.findAncestorOpInBlock(*user));
          }))
        io.outputs.insert(result);
  }
  if (!llvm::all_of(io.inputs, [](Value v) { return crossable(v.getType()); }) ||
      !llvm::all_of(io.outputs, [](Value v) { return crossable(v.getType()); }))
    return failure();
  return io;
}

/// Moves `part` into a new private function named `name` (inserted after
/// `after`), calls it where the part was, and returns the function.
func::FuncOp outline(Operation *after, ArrayRef<Operation *> part,
                     const Interface &io, StringRef name,
                     SymbolTable &symbols) {
  Location loc = part.front()->getLoc();
  OpBuilder b(after->getContext());
  b.setInsertionPointAfter(after);
  auto type = b.getFunctionType(TypeRange(io.inputs.getArrayRef()),
                                TypeRange(io.outputs.getArrayRef()));
  auto callee = func::FuncOp::create(b, loc, name, type);
  callee.setPrivate();
  symbols.insert(callee);
  // A part may not write into what it receives: the caller may read it
  // after the call (bufferization then copies before writing in place).
  for (auto [k, value] : llvm::enumerate(io.inputs))
    if (isa<TensorType>(value.getType()))
      callee.setArgAttr(k, bufferization::BufferizationDialect::kWritableAttrName,
                        b.getBoolAttr(false));
  Block *entry = callee.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  for (Operation *constant : io.constants)
    map.map(constant->getResults(), b.clone(*constant)->getResults());
  for (auto [value, arg] : llvm::zip(io.inputs, entry->getArguments()))
    map.map(value, arg);
  for (Operation *op : part)
    b.clone(*op, map);
  SmallVector<Value> results;
  for (Value v : io.outputs)
    results.push_back(map.lookup(v));
  func::ReturnOp::create(b, loc, results);
  // The call, and the part's results replaced by the call's.
  b.setInsertionPoint(part.front());
  auto call = func::CallOp::create(b, loc, callee,
                                   SmallVector<Value>(io.inputs.getArrayRef()));
  for (auto [value, result] : llvm::zip(io.outputs, call.getResults()))
    Value(value).replaceAllUsesWith(result);
  for (Operation *op : llvm::reverse(part)) {
    op->dropAllUses();
    op->erase();
  }
  return callee;
}

struct SplitFunctions
    : public tessera::tsched::impl::TSchedSplitFunctionsBase<SplitFunctions> {
  using TSchedSplitFunctionsBase::TSchedSplitFunctionsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>()))
      split(fn, symbols);
  }

  void split(func::FuncOp fn, SymbolTable &symbols) {
    if (fn.isExternal() || !fn.getBody().hasOneBlock() ||
        weight(fn) <= maxOps)
      return;
    Block &body = fn.getBody().front();
    SmallVector<SmallVector<Operation *>> parts = cut(body, maxOps);
    if (parts.size() < 2)
      return;
    // In order: a part's inputs include the calls of the parts before it.
    // A part whose values cannot cross a call stays in the function, and
    // so does the rest.
    Operation *last = fn;
    for (auto [k, part] : llvm::enumerate(parts)) {
      FailureOr<Interface> io = interfaceOf(body, part);
      if (failed(io))
        break;
      last = outline(last, part, *io,
                     (fn.getName() + ".part" + Twine(k)).str(), symbols);
    }
    // The constants the parts copied, where the function no longer reads
    // them.
    for (Operation &op : llvm::make_early_inc_range(body))
      if (copiedIntoParts(&op) && op.use_empty())
        op.erase();
  }
};

} // namespace
