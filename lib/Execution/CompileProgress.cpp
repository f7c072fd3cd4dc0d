//===- CompileProgress.cpp - Telling the user a compile is still running --===//

#include "CompileProgress.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>

using namespace mlir;
using namespace mlir::tessera;

namespace mlir::tessera {

/// Passes as they start and finish, per thread.
class ProgressInstrumentation : public PassInstrumentation {
public:
  explicit ProgressInstrumentation(CompileProgress &progress)
      : progress(progress) {}

  void runBeforePass(Pass *pass, Operation *op) override {
    std::string where = "the module";
    if (auto name = op->getAttrOfType<StringAttr>(
            SymbolTable::getSymbolAttrName()))
      where = "@" + name.str();
    progress.set(pass->getName().str() + " on " + where);
  }
  void runAfterPass(Pass *, Operation *) override { progress.set(""); }
  void runAfterPassFailed(Pass *, Operation *) override { progress.set(""); }

private:
  CompileProgress &progress;
};

} // namespace mlir::tessera

double CompileProgress::thresholdSeconds() {
  const char *text = std::getenv("TESSERA_COMPILE_NOTICE_SECONDS");
  if (!text || !*text)
    return 30;
  char *end = nullptr;
  double seconds = std::strtod(text, &end);
  // A value that is not a number keeps the default.
  if (*end || !std::isfinite(seconds) || seconds < 0)
    return 30;
  return seconds;
}

CompileProgress::CompileProgress(std::string functions)
    : functions(std::move(functions)), threshold(thresholdSeconds()),
      start(std::chrono::steady_clock::now()) {
  if (threshold > 0)
    watcher = std::thread([this] { watch(); });
}

CompileProgress::~CompileProgress() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  wake.notify_all();
  if (watcher.joinable())
    watcher.join();
}

void CompileProgress::phase(std::string name) { set(std::move(name)); }

std::unique_ptr<PassInstrumentation> CompileProgress::instrumentation() {
  return std::make_unique<ProgressInstrumentation>(*this);
}

void CompileProgress::set(std::string what) {
  std::lock_guard<std::mutex> lock(mutex);
  if (what.empty())
    current.erase(std::this_thread::get_id());
  else
    current[std::this_thread::get_id()] = std::move(what);
}

std::string CompileProgress::running() {
  std::string text;
  for (const auto &[thread, what] : current)
    text += (text.empty() ? "" : "; ") + what;
  return text.empty() ? "between passes" : text;
}

void CompileProgress::watch() {
  auto period = std::chrono::duration<double>(threshold);
  std::unique_lock<std::mutex> lock(mutex);
  for (int64_t k = 1;; ++k) {
    auto due = start + std::chrono::duration_cast<
                           std::chrono::steady_clock::duration>(period * k);
    if (wake.wait_until(lock, due, [this] { return done; }))
      return;
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    llvm::errs() << "tessera: compiling " << functions << " has taken "
                 << llvm::format("%.0f", seconds) << " s so far; running: "
                 << running() << "\n";
    llvm::errs().flush();
  }
}
