//===- CustomRules.cpp - checkpoint, custom_vjp and custom_jvp ------------===//
//
// Calls of traced functions whose differentiation is steered: recomputed in
// the backward pass (tgraph.checkpoint), or given user-defined rules
// (tgraph.custom_vjp / tgraph.custom_jvp).
//
//===----------------------------------------------------------------------===//

#include "ModuleState.h"

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include "tessera/Dialect/TGraph/IR/TypeInference.h"

using namespace mlir;
namespace tg = mlir::tessera::tgraph;

namespace tessera::detail {

/// The operands of a call of `fn` with `args` (captures at their place),
/// or nothing after recording an error.
std::optional<SmallVector<Value>>
ModuleState::callOperands(const Function &fn, const std::vector<Tensor> &args,
                          Location loc) {
  if (!ready({}))
    return std::nullopt;
  auto callee = module->lookupSymbol<func::FuncOp>(fn.name);
  if (!callee) {
    failAt(loc, "call of @" + fn.name + ", which is not in this Module");
    return std::nullopt;
  }
  if (args.size() != fn.inputs.size()) {
    failAt(loc, "@" + fn.name + " takes " + std::to_string(fn.inputs.size()) +
                    " arguments, got " + std::to_string(args.size()));
    return std::nullopt;
  }
  SmallVector<Value> operands;
  for (const Tensor &a : args) {
    if (!a.valid() || a.getState() != this)
      return std::nullopt;
    operands.push_back(use(a));
  }
  SmallVector<Value> captured;
  for (const Tensor &c : fn.captures)
    captured.push_back(use(c));
  if (firstError)
    return std::nullopt;
  operands.insert(operands.begin() + fn.capturePosition(), captured.begin(),
                  captured.end());
  FunctionType type = callee.getFunctionType();
  for (auto [i, v] : llvm::enumerate(operands)) {
    if (!tg::areCompatibleTypes(v.getType(), type.getInput(i))) {
      failAt(loc, "argument " + std::to_string(i) + " of @" + fn.name +
                      " must be " + tg::typeName(type.getInput(i)) + ", got " +
                      tg::typeName(v.getType()));
      return std::nullopt;
    }
  }
  return operands;
}

std::vector<Tensor> ModuleState::checkpoint(const Function &fn,
                                            const std::vector<Tensor> &args,
                                            SourceLoc where) {
  Location loc = location(where);
  auto operands = callOperands(fn, args, loc);
  if (!operands)
    return {};
  auto callee = module->lookupSymbol<func::FuncOp>(fn.name);
  auto op =
      tg::CheckpointOp::create(b, loc, callee.getResultTypes(), *operands);
  // The body is a copy of the callee's (isolated: its captures are among
  // the operands, so every argument becomes a block argument).
  copyBody(op.getBody(), fn, {}, loc);
  if (!finish(op))
    return {};
  return wrapResults(op);
}

/// fixed_point / solve: the body's arguments are x, the params, then the
/// values it captured (IsolatedFromAbove: they are params too).
template <typename OpTy>
static std::optional<OpTy>
iterative(ModuleState &s, OpBuilder &b, const Function &body, Value init,
          ArrayRef<Value> params, double tol, int64_t maxIter, Location loc) {
  auto op = OpTy::create(b, loc, init.getType(), init, params,
                         b.getF64FloatAttr(tol), b.getI64IntegerAttr(maxIter));
  s.copyBody(op.getBody(), body, {}, loc);
  if (!s.finish(op))
    return std::nullopt;
  return op;
}

Tensor ModuleState::solveLike(llvm::StringRef kind, const Function &fn,
                              const Tensor &init,
                              const std::vector<Tensor> &params, double tol,
                              int64_t maxIter, SourceLoc where) {
  Location loc = location(where);
  auto body = module->lookupSymbol<func::FuncOp>(fn.name);
  if (!body || !init.valid())
    return {};
  if (body.getNumResults() != 1 || fn.inputs.size() != params.size() + 1) {
    failAt(loc, kind.str() + ": the body must take x and " +
                    std::to_string(params.size()) +
                    " params and return one tensor");
    return {};
  }
  std::vector<Tensor> args = {init};
  args.insert(args.end(), params.begin(), params.end());
  auto operands = callOperands(fn, args, loc);
  if (!operands)
    return {};
  if (body.getResultTypes()[0] != (*operands)[0].getType() &&
      kind == "fixed_point") {
    failAt(loc, "fixed_point: the body returns " +
                    tg::typeName(body.getResultTypes()[0]) + " but x is " +
                    tg::typeName((*operands)[0].getType()));
    return {};
  }
  Value x = (*operands)[0];
  SmallVector<Value> rest(operands->begin() + 1, operands->end());
  std::optional<Operation *> op;
  if (kind == "fixed_point") {
    if (auto o = iterative<tg::FixedPointOp>(*this, b, fn, x, rest, tol,
                                             maxIter, loc))
      op = o->getOperation();
  } else if (auto o = iterative<tg::SolveOp>(*this, b, fn, x, rest, tol,
                                             maxIter, loc)) {
    op = o->getOperation();
  }
  if (!op)
    return {};
  return wrap((*op)->getResult(0));
}

std::vector<Tensor> ModuleState::scan(const Function &fn,
                                      const std::vector<Tensor> &inits,
                                      const std::vector<Tensor> &xs,
                                      std::optional<int64_t> length,
                                      bool reverse, SourceLoc where) {
  Location loc = location(where);
  if (!ready({}))
    return {};
  auto body = module->lookupSymbol<func::FuncOp>(fn.name);
  if (!body || fn.inputs.size() != inits.size() + xs.size() ||
      body.getNumResults() < inits.size()) {
    failAt(loc, "scan: the body must take " + std::to_string(inits.size()) +
                    " carries and " + std::to_string(xs.size()) +
                    " slices, and return the carries first");
    return {};
  }
  if (xs.empty() && !length) {
    failAt(loc, "scan without xs needs a length");
    return {};
  }
  SmallVector<Value> initValues, xValues;
  for (const Tensor &t : inits)
    initValues.push_back(use(t));
  for (const Tensor &t : xs)
    xValues.push_back(use(t));
  // The region sees the enclosing function: captured values are used
  // directly, not passed.
  SmallVector<Value> captured;
  for (const Tensor &c : fn.captures)
    captured.push_back(use(c));
  if (firstError)
    return {};
  IntegerAttr lengthAttr =
      length ? b.getI64IntegerAttr(*length) : IntegerAttr();
  auto op = tg::ScanOp::create(b, loc, body.getResultTypes(), initValues,
                               xValues, lengthAttr, reverse);
  copyBody(op.getBody(), fn, captured, loc);
  if (!finish(op))
    return {};
  return wrapResults(op);
}

/// Rule functions are called with the arguments alone: they must not read
/// values of the enclosing trace.
bool ModuleState::requireNoCaptures(const Function &fn, Location loc,
                                    const char *role) {
  if (fn.captures.empty())
    return true;
  return failAt(loc, std::string("the ") + role + " function @" + fn.name +
                         " reads " + std::to_string(fn.captures.size()) +
                         " value(s) of the enclosing trace; pass them as "
                         "arguments instead");
}

/// Checks the type contract of a custom rule op (its symbol uses).
bool ModuleState::verifyRule(Operation *op) {
  SymbolTableCollection symbols;
  pendingDiagnostic.clear();
  auto user = cast<SymbolUserOpInterface>(op);
  if (failed(user.verifySymbolUses(symbols))) {
    std::string message = pendingDiagnostic;
    op->erase();
    return fail(message.empty() ? "a custom rule does not fit its function"
                                : message);
  }
  return finish(op);
}

std::vector<Tensor> ModuleState::customVjp(const Function &fn,
                                           const Function &fwd,
                                           const Function &bwd,
                                           const std::vector<Tensor> &args,
                                           SourceLoc where) {
  Location loc = location(where);
  if (!requireNoCaptures(fn, loc, "primal") ||
      !requireNoCaptures(fwd, loc, "fwd") ||
      !requireNoCaptures(bwd, loc, "bwd"))
    return {};
  auto operands = callOperands(fn, args, loc);
  if (!operands)
    return {};
  auto callee = module->lookupSymbol<func::FuncOp>(fn.name);
  auto op = tg::CustomVjpOp::create(b, loc, callee.getResultTypes(), fn.name,
                                    *operands, fwd.name, bwd.name);
  if (!verifyRule(op))
    return {};
  return wrapResults(op);
}

std::vector<Tensor> ModuleState::customJvp(const Function &fn,
                                           const Function &jvp,
                                           const std::vector<Tensor> &args,
                                           SourceLoc where) {
  Location loc = location(where);
  if (!requireNoCaptures(fn, loc, "primal") ||
      !requireNoCaptures(jvp, loc, "jvp"))
    return {};
  auto operands = callOperands(fn, args, loc);
  if (!operands)
    return {};
  auto callee = module->lookupSymbol<func::FuncOp>(fn.name);
  auto op = tg::CustomJvpOp::create(b, loc, callee.getResultTypes(), fn.name,
                                    *operands, jvp.name);
  if (!verifyRule(op))
    return {};
  return wrapResults(op);
}

} // namespace tessera::detail
