//===- ControlFlow.cpp - cond and while from traced functions -------------===//
//
// The branches of tgraph.cond and the condition and body of tgraph.while
// are traced as private functions and copied into the op's regions. The
// regions see the enclosing function, so values a function captured are
// used directly.
//
//===----------------------------------------------------------------------===//

#include "ModuleState.h"

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/IR/TypeInference.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
namespace tg = mlir::tessera::tgraph;

namespace tessera::detail {

void ModuleState::copyBody(Region &region, const Function &fn,
                           ArrayRef<Value> captured, Location loc) {
  auto body = module->lookupSymbol<func::FuncOp>(fn.name);
  Block *block = new Block;
  region.push_back(block);
  IRMapping map;
  size_t own = body.getNumArguments() - captured.size();
  for (auto [i, a] : llvm::enumerate(body.getArguments()))
    map.map(a, i < own ? Value(block->addArgument(a.getType(), a.getLoc()))
                       : captured[i - own]);
  OpBuilder inner = OpBuilder::atBlockEnd(block);
  Block &from = body.getBody().front();
  for (Operation &o : from.without_terminator())
    inner.clone(o, map);
  SmallVector<Value> yielded;
  for (Value v : from.getTerminator()->getOperands())
    yielded.push_back(map.lookupOrDefault(v));
  tg::YieldOp::create(inner, loc, yielded);
}

std::vector<Tensor> ModuleState::wrapResults(Operation *op) {
  std::vector<Tensor> out;
  for (Value r : op->getResults())
    out.push_back(wrap(r));
  return out;
}

std::optional<SmallVector<Value>> ModuleState::capturesOf(const Function &fn,
                                                          Location loc) {
  if (!module->lookupSymbol<func::FuncOp>(fn.name)) {
    failAt(loc, "@" + fn.name + " is not in this Module");
    return std::nullopt;
  }
  SmallVector<Value> captured;
  for (const Tensor &c : fn.captures)
    captured.push_back(use(c));
  if (firstError)
    return std::nullopt;
  return captured;
}

std::vector<Tensor> ModuleState::cond(const Tensor &pred,
                                      const Function &thenFn,
                                      const Function &elseFn, SourceLoc where) {
  Location loc = location(where);
  if (!ready({&pred}) || !pred.valid())
    return {};
  if (!thenFn.inputs.empty() || !elseFn.inputs.empty()) {
    failAt(loc, "cond: the branches take no arguments (they read the values "
                "they need from the enclosing trace)");
    return {};
  }
  auto thenCaptures = capturesOf(thenFn, loc);
  auto elseCaptures = capturesOf(elseFn, loc);
  if (!thenCaptures || !elseCaptures)
    return {};
  Value p = use(pred);
  auto types = module->lookupSymbol<func::FuncOp>(thenFn.name).getResultTypes();
  auto op = tg::CondOp::create(b, loc, types, p);
  copyBody(op.getThenRegion(), thenFn, *thenCaptures, loc);
  copyBody(op.getElseRegion(), elseFn, *elseCaptures, loc);
  if (!finish(op))
    return {};
  return wrapResults(op);
}

std::vector<Tensor> ModuleState::whileLoop(const Function &condFn,
                                           const Function &bodyFn,
                                           const std::vector<Tensor> &inits,
                                           std::optional<int64_t> tripCount,
                                           SourceLoc where) {
  Location loc = location(where);
  if (!ready({}))
    return {};
  if (condFn.inputs.size() != inits.size() ||
      bodyFn.inputs.size() != inits.size()) {
    failAt(loc, "while: the condition and the body take the " +
                    std::to_string(inits.size()) + " carried values");
    return {};
  }
  auto condCaptures = capturesOf(condFn, loc);
  auto bodyCaptures = capturesOf(bodyFn, loc);
  if (!condCaptures || !bodyCaptures)
    return {};
  SmallVector<Value> values;
  for (const Tensor &t : inits) {
    if (!t.valid())
      return {};
    values.push_back(use(t));
  }
  if (firstError)
    return {};
  IntegerAttr trips =
      tripCount ? b.getI64IntegerAttr(*tripCount) : IntegerAttr();
  auto op =
      tg::WhileOp::create(b, loc, ValueRange(values).getTypes(), values, trips);
  copyBody(op.getCondRegion(), condFn, *condCaptures, loc);
  copyBody(op.getBodyRegion(), bodyFn, *bodyCaptures, loc);
  if (!finish(op))
    return {};
  return wrapResults(op);
}

} // namespace tessera::detail
