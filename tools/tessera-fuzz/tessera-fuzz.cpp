//===- tessera-fuzz.cpp - libFuzzer target for the Graph IR front door ----===//
//
// Feeds arbitrary text through what every Tessera front end relies on: the
// parser (including #tgraph.dims expressions and #tgraph.policy), the op
// verifiers (shape functions and numeric-policy rules) and the
// -tessera-tgraph-infer-shapes pass, then -tessera-tgraph-autodiff (on the
// module's own declarations, or a JVP and a gradient of its first function
// with a float argument). Errors are fine; crashes, hangs and sanitizer
// reports are bugs. As extra oracles, IR that verified must still verify
// after shape inference and after autodiff, and must print and re-parse to
// IR that verifies.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/Transforms/Passes.h"
#include "tessera/InitAllDialects.h"

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <memory>

using namespace mlir;

/// A context reused across inputs, replaced every few thousand inputs so
/// that uniqued types and attributes from past inputs do not pile up.
static MLIRContext &context() {
  static std::unique_ptr<MLIRContext> ctx;
  static unsigned uses = 0;
  if (!ctx || ++uses % 4096 == 0) {
    DialectRegistry registry;
    mlir::tessera::registerAllDialects(registry);
    ctx = std::make_unique<MLIRContext>(registry,
                                        MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
    // Diagnostics are expected on most inputs; drop them.
    ctx->getDiagEngine().registerHandler(
        [](Diagnostic &) { return success(); });
  }
  return *ctx;
}

[[noreturn]] static void bug(const char *what, ModuleOp module) {
  llvm::errs() << "tessera-fuzz: " << what << "\n";
  module->print(llvm::errs(), OpPrintingFlags().printGenericOpForm());
  std::abort();
}

/// Autodiff on a copy: the module's declarations, else a JVP and a
/// gradient of its first function with a float tensor argument. What it
/// produces when it succeeds must verify.
static void differentiate(ModuleOp module) {
  namespace tg = mlir::tessera::tgraph;
  OwningOpRef<ModuleOp> copy = module.clone();
  bool declared =
      llvm::any_of(copy->getBody()->getOperations(), [](Operation &op) {
        return isa<tg::AdjointOp, tg::JvpOp, tg::HvpOp>(op);
      });
  if (!declared) {
    for (auto fn : copy->getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      std::optional<unsigned> arg;
      for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes()))
        if (auto rt = dyn_cast<RankedTensorType>(t);
            rt && isa<FloatType>(rt.getElementType()) && !arg)
          arg = i;
      if (!arg)
        continue;
      OpBuilder b = OpBuilder::atBlockEnd(copy->getBody());
      auto ref = FlatSymbolRefAttr::get(fn.getSymNameAttr());
      auto wrt = b.getArrayAttr({b.getStringAttr(tg::argumentName(fn, *arg))});
      tg::JvpOp::create(b, fn.getLoc(), ref, wrt,
                        b.getStringAttr("__fuzz_jvp"));
      tg::AdjointOp::create(b, fn.getLoc(), ref, wrt,
                            b.getStringAttr("__fuzz_grad"));
      break;
    }
  }
  PassManager pm(module.getContext());
  pm.enableVerifier(false);
  pm.addPass(tg::createTGraphAutodiff());
  if (succeeded(pm.run(*copy)) && failed(verify(*copy)))
    bug("autodiff produced IR that does not verify", *copy);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 16 * 1024)
    return -1; // long inputs only slow the search down
  std::string text(reinterpret_cast<const char *>(data), size);
  MLIRContext &ctx = context();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  if (!module)
    return 0;
  if (failed(mlir::tessera::tgraph::inferShapes(*module,
                                                /*allowRuntimeChecks=*/true)))
    return 0;
  if (failed(verify(*module)))
    bug("shape inference produced IR that does not verify", *module);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
  OwningOpRef<ModuleOp> reparsed = parseSourceString<ModuleOp>(printed, &ctx);
  if (!reparsed)
    bug("printed IR does not parse again", *module);
  differentiate(*module);
  return 0;
}
