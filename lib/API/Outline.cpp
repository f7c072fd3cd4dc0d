//===- Outline.cpp - Functions cut out of the trace in progress -----------===//
//
// graph.backward(loss, wrt=[...]) differentiates a value already computed
// in the function being traced. The ops that compute `results` from
// `inputs` are copied into a new private function (values they read from
// elsewhere become its captured arguments), which the autodiff
// transformation then differentiates like any traced function.
//
//===----------------------------------------------------------------------===//

#include "ModuleState.h"

#include "tessera/Dialect/TGraph/IR/Autodiff.h"
#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/IR/TypeInference.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
namespace tg = mlir::tessera::tgraph;

namespace tessera::detail {

namespace {

/// The ops of `block` that `results` depend on, stopping at `inputs`, in
/// block order, and the values they read from outside (live-ins).
struct Slice {
  llvm::SetVector<Operation *> ops;
  llvm::SetVector<Value> liveIns;
};

Slice sliceOf(Block &block, ArrayRef<Value> results,
              const llvm::DenseSet<Value> &inputs) {
  Slice s;
  SmallVector<Value> work(results.begin(), results.end());
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second || inputs.contains(v))
      continue;
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != &block) {
      s.liveIns.insert(v);
      continue;
    }
    if (!s.ops.insert(def))
      continue;
    llvm::append_range(work, def->getOperands());
    llvm::SetVector<Value> above;
    for (Region &r : def->getRegions())
      getUsedValuesDefinedAbove(r, above);
    llvm::append_range(work, above);
  }
  SmallVector<Operation *> ordered(s.ops.begin(), s.ops.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  s.ops = llvm::SetVector<Operation *>(ordered.begin(), ordered.end());
  return s;
}

} // namespace

Result<Function> ModuleState::outline(const std::vector<Tensor> &results,
                                      const std::vector<Tensor> &inputs,
                                      const std::string &name) {
  if (firstError)
    return *firstError;
  if (frames.empty())
    return Error{"outline needs a running trace"};
  Block &block = frames.back().fn.getBody().front();
  SmallVector<Value> outs, ins;
  for (const Tensor &t : results) {
    if (!t.valid() || t.getState() != this)
      return Error{"a value to differentiate is not a tensor of this trace"};
    outs.push_back(use(t));
  }
  for (const Tensor &t : inputs) {
    if (!t.valid() || t.getState() != this)
      return Error{"a wrt value is not a tensor of this trace"};
    ins.push_back(use(t));
  }
  if (firstError)
    return *firstError;
  llvm::DenseSet<Value> inputSet(ins.begin(), ins.end());
  if (inputSet.size() != ins.size())
    return Error{"a wrt value is named twice"};
  Slice slice = sliceOf(block, outs, inputSet);

  // The new function: inputs, then live-ins; a copy of the slice.
  SmallVector<Type> types;
  for (Value v : ins)
    types.push_back(v.getType());
  for (Value v : slice.liveIns)
    types.push_back(v.getType());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module->getBody());
  Location loc = current;
  auto fn = func::FuncOp::create(b, loc, uniqueName(name),
                                 b.getFunctionType(types, {}));
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  IRMapping map;
  for (auto [i, v] : llvm::enumerate(ins)) {
    map.map(v, entry->getArgument(i));
    fn.setArgAttr(i, tg::kArgNameAttr,
                  b.getStringAttr("wrt" + std::to_string(i)));
  }
  for (auto [i, v] : llvm::enumerate(slice.liveIns))
    map.map(v, entry->getArgument(ins.size() + i));
  b.setInsertionPointToEnd(entry);
  for (Operation *op : slice.ops)
    b.clone(*op, map);
  SmallVector<Value> returned;
  for (Value v : outs)
    returned.push_back(map.lookupOrDefault(v));
  func::ReturnOp::create(b, loc, returned);
  fn.setType(b.getFunctionType(types, ValueRange(returned).getTypes()));

  Function f = describeFunction(fn);
  f.inputs.resize(ins.size());
  for (Value v : slice.liveIns)
    f.captures.push_back(wrap(v));
  return f;
}

Result<Tensor> ModuleState::addArgument(const TensorSpec &spec) {
  if (firstError)
    return *firstError;
  if (frames.empty())
    return Error{"addArgument needs a running trace"};
  Frame &top = frames.front();
  Type type = argumentType(spec);
  if (!type)
    return *firstError;
  Block &entry = top.fn.getBody().front();
  if (entry.getNumArguments() != top.numInputs)
    return Error{"arguments can only be added before a nested trace captures "
                 "values"};
  BlockArgument arg = entry.addArgument(type, top.fn.getLoc());
  unsigned index = arg.getArgNumber();
  top.fn.setType(
      b.getFunctionType(entry.getArgumentTypes(), top.fn.getResultTypes()));
  std::set<std::string> taken;
  for (unsigned i = 0; i < index; ++i)
    taken.insert(tg::argumentName(top.fn, i));
  std::string name = spec.name.empty() ? "param" : spec.name;
  std::string unique = name;
  for (int k = 2; taken.count(unique); ++k)
    unique = name + "_" + std::to_string(k);
  top.fn.setArgAttr(index, tg::kArgNameAttr, b.getStringAttr(unique));
  ++top.numInputs;
  return wrap(arg);
}

} // namespace tessera::detail
