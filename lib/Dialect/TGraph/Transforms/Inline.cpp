//===- Inline.cpp - Inline calls of private functions ---------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tessera::tgraph {
#define GEN_PASS_DEF_TGRAPHINLINE
#include "tessera/Dialect/TGraph/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tgraph

using namespace mlir;
using namespace mlir::tessera::tgraph;

namespace {

/// The callee of `call` if the call can be replaced by its body.
func::FuncOp inlinableCallee(CallOp call, SymbolTable &symbols) {
  auto fn = symbols.lookup<func::FuncOp>(call.getCallee());
  // Recomputations (checkpoint, remat) must stay apart until no CSE can
  // merge them with the values they recompute (-tessera-inline-recompute).
  if (!fn || !fn.isPrivate() || !fn.getBody().hasOneBlock() ||
      fn->hasAttr("tgraph.recompute"))
    return {};
  FunctionType type = fn.getFunctionType();
  if (TypeRange(call.getArgs()) != type.getInputs() ||
      call.getResultTypes() != type.getResults())
    return {};
  return fn;
}

} // namespace

void mlir::tessera::tgraph::inlineFunctionAt(Operation *call, ValueRange args,
                                             func::FuncOp fn) {
  Block &body = fn.getBody().front();
  OpBuilder b(call);
  IRMapping map;
  map.map(body.getArguments(), args);
  for (Operation &op : body.without_terminator())
    b.clone(op, map);
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [result, value] : llvm::zip(call->getResults(), ret.getOperands()))
    result.replaceAllUsesWith(map.lookupOrDefault(value));
  call->erase();
}

namespace {

struct TGraphInlinePass
    : public mlir::tessera::tgraph::impl::TGraphInlineBase<TGraphInlinePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // Inlined bodies may hold further calls: repeat until none is left.
    // Recursion is impossible (a traced function cannot call itself), but
    // a bound keeps malformed input from looping.
    for (int round = 0; round < 64; ++round) {
      SmallVector<std::pair<CallOp, func::FuncOp>> calls;
      module.walk([&](CallOp call) {
        if (auto fn = inlinableCallee(call, symbols))
          calls.push_back({call, fn});
      });
      if (calls.empty())
        break;
      for (auto [call, fn] : calls)
        inlineFunctionAt(call, call.getArgs(), fn);
    }
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (fn.isPrivate() && SymbolTable::symbolKnownUseEmpty(fn, module))
        fn.erase();
  }
};

} // namespace
