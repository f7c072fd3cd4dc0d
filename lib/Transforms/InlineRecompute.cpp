//===- InlineRecompute.cpp - Inline checkpoint recomputations -------------===//

#include "tessera/Transforms/Passes.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_INLINERECOMPUTE
#include "tessera/Transforms/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;

namespace {

constexpr StringLiteral kRecompute = "tgraph.recompute";

struct InlineRecomputePass
    : public mlir::tessera::impl::InlineRecomputeBase<InlineRecomputePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // Inlined bodies may call further recomputations (nested checkpoints):
    // repeat until none is left.
    while (true) {
      SmallVector<func::CallOp> calls;
      module.walk([&](func::CallOp call) {
        auto fn = symbols.lookup<func::FuncOp>(call.getCallee());
        if (fn && fn->hasAttr(kRecompute))
          calls.push_back(call);
      });
      if (calls.empty())
        break;
      for (func::CallOp call : calls)
        if (failed(inlineInto(call,
                              symbols.lookup<func::FuncOp>(call.getCallee()))))
          return signalPassFailure();
    }
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (fn->hasAttr(kRecompute) &&
          SymbolTable::symbolKnownUseEmpty(fn, module))
        fn.erase();
  }

  /// The callee's single block, cloned at the call.
  static LogicalResult inlineInto(func::CallOp call, func::FuncOp fn) {
    if (!fn.getBody().hasOneBlock())
      return call.emitOpError("calls recomputation @")
             << fn.getName() << ", which has more than one block";
    mlir::tessera::tgraph::inlineFunctionAt(call, call.getOperands(), fn);
    return success();
  }
};

} // namespace
