//===- tessera-run.cpp - Run a Graph IR function on the CPU ---------------===//
//
//   tessera-run model.mlir [--fn NAME] [--input a.npy --input b.npy ...]
//               [--dims B=32,S=128 --seed 0] [--out-dir DIR] [--bench N]
//
// Compiles the function with the CPU pipeline, JIT-compiles it for the host
// and calls it. Inputs come from .npy files or, for each argument, from a
// seeded uniform generator given sizes for its symbolic dims. Outputs are
// written as out0.npy, out1.npy, ...; --bench times repeated calls.
//
//===----------------------------------------------------------------------===//

#include "HostArray.h"

#include "tessera/Execution/CPUCompiler.h"
#include "tessera/Runtime/Allocator.h"
#include "tessera/Runtime/CompileCache.h"
#include "tessera/Runtime/Errors.h"

#include "tessera/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/TargetSelect.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>

using namespace mlir;
using namespace mlir::tessera::run;
namespace shape = ::tessera::shape;

static llvm::cl::OptionCategory runCategory("tessera-run options");
static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                            llvm::cl::desc("<input .mlir>"),
                                            llvm::cl::Required,
                                            llvm::cl::cat(runCategory));
static llvm::cl::opt<std::string>
    fnName("fn", llvm::cl::desc("Function to run (default: the first public)"),
           llvm::cl::cat(runCategory));
static llvm::cl::list<std::string>
    inputs("input", llvm::cl::desc("An argument as a .npy file, in order"),
           llvm::cl::cat(runCategory));
static llvm::cl::opt<std::string>
    dims("dims",
         llvm::cl::desc("Sizes of symbolic dims for random inputs, "
                        "e.g. B=32,S=128"),
         llvm::cl::cat(runCategory));
static llvm::cl::opt<unsigned> seed("seed", llvm::cl::init(0),
                                    llvm::cl::desc("Seed of random inputs"),
                                    llvm::cl::cat(runCategory));
static llvm::cl::opt<std::string>
    outDir("out-dir", llvm::cl::desc("Write results as DIR/out<i>.npy"),
           llvm::cl::cat(runCategory));
static llvm::cl::opt<std::string> passPipeline(
    "pass-pipeline",
    llvm::cl::desc("Compile with this textual pass pipeline instead of "
                   "--tessera-cpu-pipeline (it must end in the LLVM dialect)"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<std::string> cacheDir(
    "cache-dir",
    llvm::cl::desc("Compile cache directory (default: $TESSERA_CACHE_DIR, "
                   "else ~/.cache/tessera)"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<bool>
    noCache("no-cache", llvm::cl::desc("Compile without the compile cache"),
            llvm::cl::cat(runCategory));
static llvm::cl::opt<bool> timeCompile(
    "time-compile",
    llvm::cl::desc("Print how long compiling (pipeline and JIT) took"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<bool>
    quiet("quiet", llvm::cl::desc("Do not print a summary of each result"),
          llvm::cl::cat(runCategory));
static llvm::cl::opt<unsigned>
    bench("bench", llvm::cl::init(0),
          llvm::cl::desc("Time N calls; print median, min and max"),
          llvm::cl::cat(runCategory));

/// Prints "tessera-run: <message>" and returns 1.
static int fail(const llvm::Twine &message) {
  llvm::errs() << "tessera-run: " << message << "\n";
  return 1;
}

static func::FuncOp findFunction(ModuleOp module) {
  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal() &&
        (fnName.empty() ? fn.isPublic() : fn.getSymName() == fnName))
      return fn;
  return {};
}

/// Parses "B=32,S=128".
static FailureOr<llvm::StringMap<int64_t>> parseDims(StringRef text) {
  llvm::StringMap<int64_t> out;
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [name, value] = item.split('=');
    int64_t v;
    if (!shape::isValidSymbolName(name.trim()) ||
        value.trim().getAsInteger(10, v) || v < 0) {
      fail("--dims expects NAME=SIZE pairs with SIZE >= 0, got '" + item + "'");
      return failure();
    }
    out[name.trim()] = v;
  }
  return out;
}

/// The arguments: loaded from --input files, or random from --dims.
static FailureOr<std::vector<HostArray>> makeArguments(func::FuncOp fn) {
  FunctionType type = runtimeSignature(fn.getFunctionType());
  std::vector<HostArray> args;
  if (!inputs.empty()) {
    if (inputs.size() != type.getNumInputs()) {
      fail("@" + fn.getSymName() + " takes " +
           llvm::Twine(type.getNumInputs()) + " arguments but " +
           llvm::Twine(inputs.size()) + " --input files were given");
      return failure();
    }
    for (auto [i, path] : llvm::enumerate(inputs)) {
      auto a = HostArray::load(path, type.getInput(i), i);
      if (failed(a))
        return failure();
      args.push_back(std::move(*a));
    }
    if (failed(checkBindings(args, type)))
      return failure();
    return args;
  }
  auto bindings = parseDims(dims);
  if (failed(bindings))
    return failure();
  std::mt19937_64 rng(seed);
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    auto a = HostArray::random(t, *bindings, rng, i);
    if (failed(a))
      return failure();
    args.push_back(std::move(*a));
  }
  return args;
}

/// A prepared call of the compiled function: argument descriptors and the
/// packed argument list, built once and reused by every run().
class Invocation {
public:
  Invocation(void (*function)(void **), FunctionType type,
             std::vector<HostArray> &args)
      : function(function), results(type.getResults()), args(args) {
    for (HostArray &a : args)
      descriptors.push_back(a.descriptor());
    for (Descriptor &d : descriptors)
      pointers.push_back(d.data());
    resultPointer = results.data();
    if (type.getNumResults())
      packed.push_back(&resultPointer);
    for (void *&p : pointers)
      packed.push_back(&p);
  }

  /// Runs the function once; the error it raised, if any.
  std::optional<std::string> run() {
    return ::tessera::runtime::callCatchingErrors(
        [](void *self) {
          auto *me = static_cast<Invocation *>(self);
          me->function(me->packed.data());
        },
        this);
  }

  /// Copies the results of the last run out and frees them.
  std::vector<HostArray> take() { return results.take(args); }
  /// Frees the results of the last run.
  void drop() { results.take(args, /*copy=*/false); }

private:
  void (*function)(void **);
  ResultBuffer results;
  std::vector<HostArray> &args;
  std::vector<Descriptor> descriptors;
  std::vector<void *> pointers;
  void *resultPointer;
  std::vector<void *> packed;
};

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  mlir::registerAllPasses();
  mlir::tessera::registerAllPasses();
  llvm::cl::HideUnrelatedOptions(runCategory);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "Run a Graph IR function on the CPU\n");

  // The pipeline needs the upstream dialects and their interface models
  // (bufferization, conversion to LLVM).
  DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::tessera::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(inputFile, &context);
  if (!module)
    return 1; // the parser reported why
  func::FuncOp fn = findFunction(*module);
  if (!fn)
    return fail(fnName.empty() ? "no public function with a body"
                               : "no function @" + fnName);
  std::string name = fn.getSymName().str();
  FunctionType type = runtimeSignature(fn.getFunctionType());
  if (failed(checkSignature(type)))
    return 1;
  auto args = makeArguments(fn);
  if (failed(args))
    return 1;
  auto compileStart = std::chrono::steady_clock::now();
  mlir::tessera::CPUCompileOptions options;
  options.passPipeline = passPipeline;
  if (!noCache)
    options.cacheDirectory =
        cacheDir.empty() ? ::tessera::runtime::CompileCache::defaultDirectory()
                         : std::string(cacheDir);
  auto compiled = mlir::tessera::compileForCPU(*module, options);
  if (failed(compiled))
    return 1;
  auto function = compiled->executable->lookup(name);
  if (!function)
    return fail(function.error().message);
  if (timeCompile)
    llvm::outs() << llvm::format(
        "compile: %.1f ms%s\n",
        std::chrono::duration<double, std::milli>(
            std::chrono::steady_clock::now() - compileStart)
            .count(),
        compiled->cached ? " (cached)" : "");
  Invocation invocation(*function, type, *args);
  if (std::optional<std::string> error = invocation.run()) {
    fail(*error);
    return 2;
  }
  std::vector<HostArray> results = invocation.take();
  if (!quiet)
    for (auto [i, r] : llvm::enumerate(results))
      llvm::outs() << "result " << i << ": " << r.summary() << "\n";
  if (!outDir.empty())
    for (auto [i, r] : llvm::enumerate(results))
      if (failed(r.save(outDir + "/out" + std::to_string(i) + ".npy")))
        return 1;
  if (bench > 0) {
    // Each timed call includes freeing its results (back to the runtime's
    // cache), not copying them out.
    std::vector<double> ms;
    for (unsigned i = 0; i < bench; ++i) {
      auto start = std::chrono::steady_clock::now();
      std::optional<std::string> error = invocation.run();
      invocation.drop();
      auto stop = std::chrono::steady_clock::now();
      if (error) {
        fail(*error);
        return 2;
      }
      ms.push_back(
          std::chrono::duration<double, std::milli>(stop - start).count());
    }
    std::sort(ms.begin(), ms.end());
    llvm::outs() << llvm::format("@%s: %u calls, median %.4f ms, min %.4f ms, "
                                 "max %.4f ms\n",
                                 name.c_str(), bench.getValue(),
                                 ms[ms.size() / 2], ms.front(), ms.back());
  }
  return 0;
}
