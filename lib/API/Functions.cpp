//===- Functions.cpp - Traced functions, calls and derivatives ------------===//

#include "ModuleState.h"

#include "tessera/Dialect/TGraph/IR/Autodiff.h"
#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/IR/TypeInference.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;
namespace tg = mlir::tessera::tgraph;

namespace tessera::detail {

std::string ModuleState::uniqueName(const std::string &base) {
  std::string name = base.empty() ? "fn" : base;
  for (int k = 2; module->lookupSymbol(name); ++k)
    name = (base.empty() ? "fn" : base) + "_" + std::to_string(k);
  return name;
}

/// Argument names must be unique for wrt(...) to name them.
static std::string uniqueArgName(std::string name, std::set<std::string> &taken,
                                 size_t index) {
  if (name.empty())
    name = "arg" + std::to_string(index);
  std::string candidate = name;
  for (int k = 2; taken.count(candidate); ++k)
    candidate = name + "_" + std::to_string(k);
  taken.insert(candidate);
  return candidate;
}

Function ModuleState::describeFunction(func::FuncOp fn) const {
  Function f;
  f.name = fn.getName().str();
  FunctionType type = fn.getFunctionType();
  auto spec = [&](Type t, std::string name) {
    TensorSpec s;
    if (isa<tg::KeyType>(t)) {
      s.isKey = true;
      s.dtype = DType::i32;
      s.name = std::move(name);
      return s;
    }
    if (auto cache = dyn_cast<tg::KVCacheType>(t)) {
      s.isKVCache = true;
      s.shape = shapeOf(t);
      s.dtype = dtypeOf(cache.getElementType()).value_or(DType::f32);
      s.name = std::move(name);
      return s;
    }
    s.shape = shapeOf(t);
    s.dtype = dtypeOf(getElementTypeOrSelf(t)).value_or(DType::f32);
    s.name = std::move(name);
    return s;
  };
  for (unsigned i = 0; i < type.getNumInputs(); ++i)
    f.inputs.push_back(spec(type.getInput(i), tg::argumentName(fn, i)));
  for (Type t : type.getResults())
    f.outputs.push_back(spec(t, ""));
  return f;
}

Result<std::vector<Tensor>>
ModuleState::beginTrace(const std::string &name,
                        const std::vector<TensorSpec> &inputs, bool isPublic) {
  if (firstError)
    return *firstError;
  SmallVector<Type> argTypes;
  for (const TensorSpec &spec : inputs) {
    Type t = argumentType(spec);
    if (!t)
      return *firstError;
    argTypes.push_back(t);
  }
  Frame frame;
  frame.saved = b.saveInsertionPoint();
  frame.outer = activeState;
  frame.numInputs = inputs.size();
  frame.firstValue = values.size();
  b.setInsertionPointToEnd(module->getBody());
  auto fn = func::FuncOp::create(b, current, uniqueName(name),
                                 b.getFunctionType(argTypes, {}));
  if (!isPublic || !frames.empty())
    fn.setPrivate();
  std::set<std::string> taken;
  for (auto [i, spec] : llvm::enumerate(inputs))
    fn.setArgAttr(i, tg::kArgNameAttr,
                  b.getStringAttr(uniqueArgName(spec.name, taken, i)));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  frame.fn = fn;
  frames.push_back(std::move(frame));
  activeState = this;

  std::vector<Tensor> args;
  for (BlockArgument a : entry->getArguments())
    args.push_back(wrap(a));
  return args;
}

void ModuleState::abortTrace() {
  if (frames.empty())
    return;
  Frame done = std::move(frames.back());
  frames.pop_back();
  activeState = done.outer;
  b.restoreInsertionPoint(done.saved);
  // The function's values die with it: their Tensors become invalid.
  for (size_t i = done.firstValue; i < values.size(); ++i)
    values[i] = Value();
  done.fn.erase();
}

Result<Function> ModuleState::endTrace(const std::vector<Tensor> &results) {
  if (frames.empty())
    return Error{"endTrace without a running trace"};
  func::FuncOp fn = frames.back().fn;
  SmallVector<Value> returned;
  for (auto [i, r] : llvm::enumerate(results)) {
    if (firstError)
      break;
    if (!r.valid() || r.getState() != this) {
      fail("@" + fn.getName().str() + " returned an invalid tensor (result " +
           std::to_string(i) + ")");
      break;
    }
    returned.push_back(use(r));
  }
  if (firstError) {
    Error e = *firstError;
    abortTrace();
    return e;
  }
  Frame done = std::move(frames.back());
  frames.pop_back();
  activeState = done.outer;
  Block *entry = &fn.getBody().front();
  b.setInsertionPointToEnd(entry);
  func::ReturnOp::create(b, fn.getLoc(), returned);
  fn.setType(b.getFunctionType(entry->getArgumentTypes(),
                               ValueRange(returned).getTypes()));
  b.restoreInsertionPoint(done.saved);

  Function f = describeFunction(fn);
  f.inputs.resize(done.numInputs);
  for (Value source : done.captureSources)
    f.captures.push_back(wrap(source));
  return f;
}

Result<Function> ModuleState::trace(const std::string &name,
                                    const std::vector<TensorSpec> &inputs,
                                    const Module::Body &body, bool isPublic) {
  auto args = beginTrace(name, inputs, isPublic);
  if (!args)
    return args.error();
  return endTrace(body(*args));
}

std::vector<Tensor> ModuleState::call(const Function &fn,
                                      const std::vector<Tensor> &args,
                                      SourceLoc where) {
  Location loc = location(where);
  auto operands = callOperands(fn, args, loc);
  if (!operands)
    return {};
  FunctionType type =
      module->lookupSymbol<func::FuncOp>(fn.name).getFunctionType();
  auto op = tg::CallOp::create(b, loc, type.getResults(), fn.name, *operands,
                               ArrayAttr(), ArrayAttr());
  return wrapResults(op);
}

/// Names of `fn`'s arguments at `wrt`, or an error.
static Result<SmallVector<Attribute>>
wrtNames(func::FuncOp fn, const std::vector<int> &wrt, size_t numInputs) {
  SmallVector<Attribute> names;
  for (int i : wrt) {
    if (i < 0 || size_t(i) >= numInputs)
      return Error{"wrt index " + std::to_string(i) + " is out of range: @" +
                   fn.getName().str() + " takes " + std::to_string(numInputs) +
                   " arguments"};
    names.push_back(
        StringAttr::get(fn.getContext(), tg::argumentName(fn, unsigned(i))));
  }
  return names;
}

Result<Function> ModuleState::derive(const Function &f,
                                     const std::vector<int> &wrt,
                                     StringRef kind, bool isPublic) {
  if (firstError)
    return *firstError;
  auto source = module->lookupSymbol<func::FuncOp>(f.name);
  if (!source)
    return Error{"@" + f.name + " is not in this Module"};
  auto names = wrtNames(source, wrt, f.inputs.size());
  if (!names)
    return names.error();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module->getBody());
  std::string suffix = kind == "adjoint" ? "grad" : kind.str();
  std::string result = uniqueName(f.name + "_" + suffix);
  OperationState state(source.getLoc(), "tgraph." + kind.str());
  state.addAttribute("fn", FlatSymbolRefAttr::get(source.getNameAttr()));
  state.addAttribute("wrt", b.getArrayAttr(*names));
  state.addAttribute("result", b.getStringAttr(result));
  if (kind == "hvp") {
    SmallVector<Attribute> dirs;
    for (Attribute n : *names)
      dirs.push_back(b.getStringAttr("v_" + cast<StringAttr>(n).str()));
    state.addAttribute("dir", b.getArrayAttr(dirs));
  }
  Operation *decl = b.create(state);
  pendingDiagnostic.clear();
  LogicalResult expanded = tg::expandAutodiffDeclaration(*module, decl);
  decl->erase();
  if (failed(expanded)) {
    std::string message = pendingDiagnostic;
    if (auto stale = module->lookupSymbol<func::FuncOp>(result))
      stale.erase();
    return Error{message.empty() ? "differentiation of @" + f.name + " failed"
                                 : message};
  }
  auto fn = module->lookupSymbol<func::FuncOp>(result);
  if (isPublic)
    fn.setPublic();
  else
    fn.setPrivate();
  Function out = describeFunction(fn);
  // The generated function takes the source's arguments (captures
  // included) first; the caller passes captures, not the user.
  size_t position = f.capturePosition();
  out.inputs.erase(out.inputs.begin() + position,
                   out.inputs.begin() + position + f.captures.size());
  out.captures = f.captures;
  out.captureAt = position;
  return out;
}

} // namespace tessera::detail
