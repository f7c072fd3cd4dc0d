//===- tessera-run.cpp - Run a Graph IR function on the CPU ---------------===//
//
//   tessera-run model.mlir [--fn NAME] [--input a.npy --input b.npy ...]
//               [--dims B=32,S=128 --seed 0] [--out-dir DIR] [--calls N]
//               [--bench N]
//               [--num-threads T] [--jit] [--cache-dir DIR | --no-cache]
//   tessera-run model.mlir --emit-library model.so
//   tessera-run model.so [--fn NAME] ...
//   tessera-run model.mlir --device cuda[:K] [--fn NAME] ...
//   tessera-run model.mlir --emit-gpu-program f.tgpu --dims B=32
//               [--chip sm_90a,sm_80] [--cubin]
//   tessera-run f.tgpu [--device cuda:K] ...
//   tessera-run f.tgpu --describe
//   tessera-run model.mlir --emit-gpu-program v.tgpu --dims B=32 --variants
//   tessera-run v.tgpu --tune tuning.txt [--device cuda:K]
//   tessera-run model.mlir --emit-gpu-program f.tgpu --tuning tuning.txt
//   tessera-run model.mlir --device cuda --autotune [--tuning tuning.txt]
//
// Compiles the function with the CPU pipeline (through the compile cache)
// and calls it through the runtime, or, given a library compiled ahead of
// time with --emit-library, loads and calls it without compiling. Inputs
// come from .npy files or, for each argument, from a seeded uniform
// generator given sizes for its symbolic dims; state arguments (the
// buffers of a KV cache) start empty (zeros) and carry over from call to
// call. Outputs are written as out0.npy, out1.npy, ... (state as
// arg<i>.npy); --bench times repeated calls.
//
// With --device cuda the function runs on an NVIDIA GPU: it is compiled with
// the GPU pipeline for the sizes its arguments give its symbolic dims (kept
// in the compile cache), its arguments are copied to the device and its
// results back; --bench times calls on device-resident arguments.
// --emit-gpu-program compiles a GPU program file ahead of time (no GPU
// needed), which `tessera-run f.tgpu` runs with the runtime alone.
//
//===----------------------------------------------------------------------===//

#include "tessera/Conversion/Passes.h"
#include "tessera/Execution/CPUCompiler.h"
#include "tessera/Execution/GPUCompiler.h"
#include "tessera/Execution/GradCheck.h"
#include "tessera/Runtime/Runtime.h"
#include "tessera/Runtime/Tuning.h"
#include "tessera/Shape/DimExpr.h"

#include "tessera/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <mutex>
#include <set>

using namespace mlir;
namespace rt = ::tessera::runtime;
namespace shape = ::tessera::shape;

static llvm::cl::OptionCategory runCategory("tessera-run options");
static llvm::cl::opt<std::string>
    inputFile(llvm::cl::Positional,
              llvm::cl::desc("<input .mlir, or a library from --emit-library>"),
              llvm::cl::Required, llvm::cl::cat(runCategory));
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
static llvm::cl::opt<std::string> outDir(
    "out-dir",
    llvm::cl::desc("Write results as DIR/out<i>.npy (and state arguments, "
                   "such as KV caches, as DIR/arg<i>.npy)"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<unsigned>
    calls("calls",
          llvm::cl::desc("Call the function N times before reporting (state "
                         "arguments carry over from call to call)"),
          llvm::cl::init(1), llvm::cl::cat(runCategory));
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
static llvm::cl::opt<bool>
    jit("jit",
        llvm::cl::desc("Compile in process with the ORC JIT "
                       "(mlir::ExecutionEngine) instead of a shared library"),
        llvm::cl::cat(runCategory));
static llvm::cl::opt<std::string> emitLibrary(
    "emit-library",
    llvm::cl::desc("Compile ahead of time into this shared library and exit"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<bool> checkGrads(
    "check-grads",
    llvm::cl::desc("Check the function's derivatives with respect to its "
                   "float64 arguments against central differences at the "
                   "inputs (JVP, VJP), and exit"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<unsigned> checkOrder(
    "check-order", llvm::cl::init(1),
    llvm::cl::desc("With --check-grads: 2 also checks the JVP of the VJP"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<bool> memoryStats(
    "memory-stats",
    llvm::cl::desc("Print the peak bytes of live allocations during the "
                   "calls (arguments included; per-thread block caches off)"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<bool>
    timeCompile("time-compile",
                llvm::cl::desc("Print how long compiling (or loading) took"),
                llvm::cl::cat(runCategory));
static llvm::cl::opt<int>
    threads("num-threads",
            llvm::cl::desc("Threads for parallel loops (default: "
                           "OMP_NUM_THREADS, else every hardware thread)"),
            llvm::cl::init(0), llvm::cl::cat(runCategory));
static llvm::cl::opt<bool>
    quiet("quiet", llvm::cl::desc("Do not print a summary of each result"),
          llvm::cl::cat(runCategory));
static llvm::cl::opt<std::string>
    device("device", llvm::cl::init("cpu"),
           llvm::cl::desc("Where the function runs: cpu, cuda or cuda:K "
                          "(a .tgpu input runs on cuda:0 by default)"),
           llvm::cl::cat(runCategory));
static llvm::cl::opt<std::string> emitGpuProgram(
    "emit-gpu-program",
    llvm::cl::desc("Compile the function for the GPU, for the sizes --dims "
                   "gives its symbolic dims, into this program file and exit"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<int64_t> variant(
    "variant",
    llvm::cl::desc("With --emit-gpu-program: build each generated product "
                   "with candidate N of its autotune space (tsched.space)"),
    llvm::cl::init(-1), llvm::cl::cat(runCategory));
static llvm::cl::opt<bool> variants(
    "variants",
    llvm::cl::desc("With --emit-gpu-program: write one program for each "
                   "candidate rank of the products' autotune spaces, as a "
                   "bundle that `tessera-run FILE --tune T` times on a GPU"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<int64_t> sms(
    "sms",
    llvm::cl::desc("With --emit-gpu-program: SMs of the target card (the "
                   "GEMM tile choice and the tuning keys; default 132, an "
                   "H100 or H200)"),
    llvm::cl::init(132), llvm::cl::cat(runCategory));
static llvm::cl::opt<std::string> tuningFile(
    "tuning",
    llvm::cl::desc("A file of tuned schedules to compile with (what --tune "
                   "and --autotune write)"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<std::string> tuneInto(
    "tune",
    llvm::cl::desc("For a .tgpu bundle of --variants: time its programs on "
                   "the GPU and merge each product's fastest schedule into "
                   "this tuning file"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<bool> autotune(
    "autotune",
    llvm::cl::desc("With --device cuda: tune the products' schedules on the "
                   "device at the first compile (kept in --tuning, else "
                   "<cache>/gpu/tuning.txt)"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<bool> describeProgram(
    "describe",
    llvm::cl::desc("Print what a .tgpu program or bundle file holds (its "
                   "buffers, launches, schedules and content hashes) and "
                   "exit; needs no GPU"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<std::string> chip(
    "chip",
    llvm::cl::desc("With --emit-gpu-program: the chips, comma-separated "
                   "(default sm_90a); several make one bundle file whose "
                   "loader takes the newest the device runs"),
    llvm::cl::init("sm_90a"), llvm::cl::cat(runCategory));
static llvm::cl::opt<bool> cubin(
    "cubin",
    llvm::cl::desc("With --emit-gpu-program: also compile each chip's PTX "
                   "into a cubin with ptxas (no JIT when loaded)"),
    llvm::cl::cat(runCategory));
static llvm::cl::opt<unsigned>
    bench("bench", llvm::cl::init(0),
          llvm::cl::desc("Time N calls; print median, min, max and "
                         "interquartile range"),
          llvm::cl::cat(runCategory));

/// Prints "tessera-run: <message>" and returns 1.
static int fail(const llvm::Twine &message) {
  llvm::errs() << "tessera-run: " << message << "\n";
  return 1;
}

/// Parses "B=32,S=128".
static std::optional<llvm::StringMap<int64_t>> parseDims(StringRef text) {
  llvm::StringMap<int64_t> out;
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [name, value] = item.split('=');
    int64_t v;
    if (!shape::isValidSymbolName(name.trim()) ||
        value.trim().getAsInteger(10, v) || v < 0) {
      fail("--dims expects NAME=SIZE pairs with SIZE >= 0, got '" + item + "'");
      return std::nullopt;
    }
    out[name.trim()] = v;
  }
  return out;
}

/// The LLVM semantics of a narrow float dtype.
static const llvm::fltSemantics &semantics(rt::DType t) {
  switch (t) {
  case rt::DType::f16:
    return llvm::APFloat::IEEEhalf();
  case rt::DType::bf16:
    return llvm::APFloat::BFloat();
  case rt::DType::f8E4M3FN:
    return llvm::APFloat::Float8E4M3FN();
  default:
    return llvm::APFloat::Float8E5M2();
  }
}

/// A seeded uniform fill ([-1, 1) for floats, [0, 8) for integers, fair
/// coins for i1) of argument `index`, sized by `sizes` for symbolic dims.
static std::optional<rt::HostBuffer>
randomArgument(const rt::TensorSpec &spec,
               const llvm::StringMap<int64_t> &sizes, std::mt19937_64 &rng,
               size_t index) {
  std::vector<int64_t> shape;
  for (auto [d, text] : llvm::enumerate(spec.dims)) {
    std::string error;
    auto e = shape::parseDimExpr(text, error);
    std::optional<int64_t> v = e ? e->evaluate(sizes) : std::nullopt;
    if (!v || *v < 0) {
      std::set<std::string> symbols;
      if (e)
        e->collectSymbols(symbols);
      std::string names;
      for (const std::string &s : symbols)
        names += (names.empty() ? "" : ", ") + s;
      fail("argument " + llvm::Twine(index) + " dim " + llvm::Twine(d) +
           " is " + text +
           (text == "?" ? "; pass the argument as an .npy file with --input"
                        : "; give its size with --dims (" + names + ")"));
      return std::nullopt;
    }
    shape.push_back(*v);
  }
  auto buffer = rt::HostBuffer::allocate(spec.dtype, shape);
  if (!buffer) {
    fail(buffer.error().message);
    return std::nullopt;
  }
  // State (a KV cache) starts empty: zeros, length 0, no window.
  if (spec.isState) {
    std::memset(buffer->data(), 0,
                buffer->numElements() * rt::byteSize(spec.dtype));
    return std::move(*buffer);
  }
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> small(0, 7), coin(0, 1);
  size_t size = rt::byteSize(spec.dtype);
  auto *p = static_cast<char *>(buffer->data());
  for (int64_t i = 0, n = buffer->numElements(); i < n; ++i, p += size) {
    if (spec.dtype == rt::DType::f64) {
      double v = unit(rng);
      std::memcpy(p, &v, 8);
    } else if (spec.dtype == rt::DType::f32) {
      float v = float(unit(rng));
      std::memcpy(p, &v, 4);
    } else if (rt::isFloat(spec.dtype)) {
      // Round the double to the narrow format and store its bits.
      llvm::APFloat v(unit(rng));
      bool lost;
      v.convert(semantics(spec.dtype), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      uint64_t bits = v.bitcastToAPInt().getZExtValue();
      std::memcpy(p, &bits, size); // little endian
    } else {
      int64_t v = spec.dtype == rt::DType::i1 ? coin(rng) : small(rng);
      std::memcpy(p, &v, size); // little endian
    }
  }
  return std::move(*buffer);
}

/// The arguments: loaded from --input files, or random from --dims.
static std::optional<std::vector<rt::HostBuffer>>
makeArguments(const rt::FunctionSignature &sig) {
  std::vector<rt::HostBuffer> args;
  if (!inputs.empty()) {
    if (inputs.size() != sig.arguments.size()) {
      fail("@" + sig.name + " takes " + llvm::Twine(sig.arguments.size()) +
           " arguments " + sig.describe() + " but " +
           llvm::Twine(inputs.size()) + " --input files were given");
      return std::nullopt;
    }
    for (auto [i, path] : llvm::enumerate(inputs)) {
      auto a = rt::HostBuffer::loadNpy(path, sig.arguments[i].dtype);
      if (!a) {
        fail("argument " + llvm::Twine(i) + ": " + a.error().message);
        return std::nullopt;
      }
      args.push_back(std::move(*a));
    }
    return args;
  }
  auto sizes = parseDims(dims);
  if (!sizes)
    return std::nullopt;
  std::mt19937_64 rng(seed);
  for (auto [i, spec] : llvm::enumerate(sig.arguments)) {
    auto a = randomArgument(spec, *sizes, rng, i);
    if (!a)
      return std::nullopt;
    args.push_back(std::move(*a));
  }
  return args;
}

/// One line: dtype, shape, min/max/mean of the finite values, the count of
/// non-finite ones and the first few values.
static std::string summary(const rt::HostBuffer &b) {
  size_t n = b.numElements(), size = rt::byteSize(b.dtype());
  auto *p = static_cast<const char *>(b.data());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << rt::name(b.dtype()) << "[";
  llvm::interleave(b.shape(), os, "x");
  os << "]";
  size_t nonFinite = 0;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (size_t i = 0; i < n; ++i) {
    double x = rt::toDouble(b.dtype(), p + i * size);
    if (!std::isfinite(x)) {
      ++nonFinite;
      continue;
    }
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  size_t finite = n - nonFinite;
  if (finite)
    os << llvm::format(" min %.6g max %.6g mean %.6g", lo, hi, sum / finite);
  if (nonFinite)
    os << " (" << nonFinite << " not finite)";
  os << " first [";
  for (size_t i = 0; i < std::min<size_t>(n, 4); ++i)
    os << (i ? ", " : "")
       << llvm::format("%.6g", rt::toDouble(b.dtype(), p + i * size));
  os << (n > 4 ? ", ...]" : "]");
  return text;
}

/// Every dialect and extension the input may use (upstream and Tessera's).
static DialectRegistry fullRegistry() {
  DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::tessera::registerAllDialects(registry);
  // The GPU pipeline serializes its kernels through LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);
  return registry;
}

/// Compiles the .mlir input (or writes it as a library with
/// --emit-library, returning null).
static std::optional<std::shared_ptr<rt::Executable>> compile(bool &cached) {
  MLIRContext context(fullRegistry());
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(inputFile, &context);
  if (!module)
    return std::nullopt; // the parser reported why
  mlir::tessera::CPUCompileOptions options;
  options.passPipeline = passPipeline;
  options.jit = jit;
  if (!emitLibrary.empty()) {
    if (failed(mlir::tessera::compileToLibrary(*module, options, emitLibrary)))
      return std::nullopt;
    return std::shared_ptr<rt::Executable>();
  }
  if (!noCache && !jit)
    options.cacheDirectory = cacheDir.empty()
                                 ? rt::CompileCache::defaultDirectory()
                                 : std::string(cacheDir);
  auto compiled = mlir::tessera::compileForCPU(*module, options);
  if (failed(compiled))
    return std::nullopt;
  cached = compiled->cached;
  return compiled->executable;
}

/// --check-grads: the derivatives of the function against differences.
static int runGradCheck() {
  MLIRContext context(fullRegistry());
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(inputFile, &context);
  if (!module)
    return 1;
  mlir::tessera::GradCheckOptions options;
  if (checkOrder < 1 || checkOrder > 2)
    return fail("--check-order expects 1 or 2, got " +
                llvm::Twine(checkOrder.getValue()));
  options.order = checkOrder;
  options.seed = seed;
  options.compile.passPipeline = passPipeline;
  if (!noCache)
    options.compile.cacheDirectory = cacheDir.empty()
                                         ? rt::CompileCache::defaultDirectory()
                                         : std::string(cacheDir);
  // The function's signature, for random inputs: compile it alone first.
  auto plain = mlir::tessera::compileForCPU(*module, options.compile);
  if (failed(plain))
    return 1;
  std::string name = fnName.empty()
                         ? (plain->executable->functions().empty()
                                ? std::string()
                                : plain->executable->functions().front().name)
                         : std::string(fnName);
  auto function = plain->executable->function(name);
  if (!function)
    return fail(function.error().message);
  auto args = makeArguments(function->signature());
  if (!args)
    return 1;
  SmallVector<unsigned> wrt;
  for (auto [i, a] : llvm::enumerate(*args))
    if (a.dtype() == rt::DType::f64)
      wrt.push_back(i);
  if (wrt.empty())
    return fail("--check-grads: @" + name + " has no float64 arguments");
  auto result =
      mlir::tessera::checkGradients(*module, name, wrt, *args, options);
  if (failed(result))
    return 1;
  for (const std::string &line : result->lines)
    llvm::outs() << "@" << name << " " << line << "\n";
  llvm::outs() << (result->passed ? "passed" : "FAILED")
               << llvm::format(" (worst relative error %.2e)\n",
                               result->worstError);
  return result->passed ? 0 : 1;
}

/// --device: -1 for the CPU, else the CUDA device's index.
static std::optional<int> parseDevice(StringRef text) {
  if (text == "cpu")
    return -1;
  if (text == "cuda")
    return 0;
  int index;
  if (text.consume_front("cuda:") && !text.getAsInteger(10, index) &&
      index >= 0)
    return index;
  fail("--device expects cpu, cuda or cuda:K, got '" + device + "'");
  return std::nullopt;
}

/// The function to run: --fn, else the only public one (or the first).
static std::string pickFunction(
    const std::vector<rt::FunctionSignature> &signatures) {
  if (!fnName.empty())
    return fnName;
  return signatures.empty() ? std::string() : signatures.front().name;
}

/// The module of a GPU executable and the context it lives in.
struct GpuSource {
  MLIRContext context{fullRegistry()};
  OwningOpRef<ModuleOp> module;
  std::mutex mutex;
};

/// Parses the .mlir input for the GPU; null on an error (reported).
static std::shared_ptr<GpuSource> parseForGpu() {
  auto source = std::make_shared<GpuSource>();
  source->context.loadAllAvailableDialects();
  source->module = parseSourceFile<ModuleOp>(inputFile, &source->context);
  if (!source->module)
    return nullptr;
  return source;
}

/// --emit-gpu-program: the function compiled for --dims, written out.
static int emitGpu() {
  auto source = parseForGpu();
  if (!source)
    return 1;
  auto signatures = mlir::tessera::publicSignatures(*source->module);
  if (failed(signatures))
    return 1;
  auto sizes = parseDims(dims);
  if (!sizes)
    return 1;
  SmallVector<StringRef> chips;
  StringRef(chip).split(chips, ',', -1, /*KeepEmpty=*/false);
  if (chips.empty())
    return fail("--chip expects one or more chips such as sm_90a,sm_80");
  for (auto [i, c] : llvm::enumerate(chips))
    for (size_t j = 0; j < i; ++j)
      if (chips[j].trim() == c.trim())
        return fail("--chip names " + c.trim() + " twice");
  if (variants && chips.size() != 1)
    return fail("--variants compiles for one chip, got --chip " + chip);
  if (variants && variant >= 0)
    return fail("--variants writes every variant; leave out --variant");
  if (sms < 1)
    return fail("--sms expects a number of SMs >= 1, got " +
                llvm::Twine(sms.getValue()));
  rt::GpuBundle bundle;
  int64_t count = variants ? int64_t(mlir::tessera::kGemmAutotuneSpace) : 1;
  for (StringRef c : chips)
    for (int64_t v = 0; v < count; ++v) {
      mlir::tessera::GPUCompileOptions options;
      options.entry = pickFunction(*signatures);
      options.chip = c.trim().str();
      options.cubin = cubin;
      options.multiprocessors = sms;
      options.variant = variants ? v : variant;
      options.tuningFile = tuningFile;
      for (const auto &entry : *sizes)
        options.dims[entry.getKey().str()] = entry.getValue();
      auto image = mlir::tessera::compileForGPU(*source->module, options);
      if (failed(image))
        return 1;
      bundle.programs.push_back(std::move(*image));
    }
  rt::Status st = bundle.programs.size() == 1
                      ? bundle.programs[0].save(emitGpuProgram)
                      : bundle.save(emitGpuProgram);
  if (!st)
    return fail(st.error().message);
  return 0;
}

/// The .mlir input as an executable on CUDA device `index`: each function
/// compiled for the sizes of its first call with them.
static rt::Result<std::shared_ptr<rt::Executable>> compileForCuda(int index) {
  auto info = rt::cuda::deviceInfo(index);
  if (!info)
    return rt::Error{"--device " + device + ": " + info.error().message};
  std::string target =
      rt::chipForDevice(info->major, info->minor).value_or("");
  if (target.empty())
    return rt::Error{"--device " + device + " (" + info->describe() +
                     "): the GPU back end needs compute capability 8.0 or "
                     "newer"};
  auto source = parseForGpu();
  if (!source)
    return rt::Error{"the input does not parse"};
  auto signatures = mlir::tessera::publicSignatures(*source->module);
  if (failed(signatures))
    return rt::Error{"the input's functions have no runtime signature"};
  std::string cache;
  if (!noCache)
    cache = (cacheDir.empty() ? rt::CompileCache::defaultDirectory()
                              : std::string(cacheDir)) +
            "/gpu";
  int64_t multiprocessors = info->multiprocessors;
  std::string tuning = tuningFile;
  if (autotune && tuning.empty()) {
    if (cache.empty())
      return rt::Error{"--autotune keeps its choices in a file: give "
                       "--tuning FILE (or leave the compile cache on)"};
    llvm::sys::fs::create_directories(cache);
    tuning = cache + "/tuning.txt";
  }
  auto compile = [source, target, multiprocessors, cache, tuning,
                  index](const std::string &name,
                         const std::map<std::string, int64_t> &sizes)
      -> rt::Result<rt::GpuProgramImage> {
    std::lock_guard<std::mutex> lock(source->mutex);
    mlir::tessera::GPUCompileOptions options;
    options.entry = name;
    options.chip = target;
    options.multiprocessors = multiprocessors;
    options.dims = sizes;
    options.cacheDirectory = cache;
    options.tuningFile = tuning;
    // The pipeline's diagnostics went to stderr already.
    std::string report;
    auto image =
        autotune ? mlir::tessera::compileTunedForGPU(*source->module, options,
                                                     index, 10, &report)
                 : mlir::tessera::compileForGPU(*source->module, options);
    if (!report.empty())
      llvm::errs() << "tuned @" << name << " (kept in " << tuning
                   << "):\n" << report;
    if (failed(image))
      return rt::Error{"the GPU pipeline failed on @" + name};
    return std::move(*image);
  };
  return rt::Executable::forCuda(index, std::move(*signatures), {},
                                 std::move(compile), source,
                                 inputFile + " on " + device);
}

/// Times --bench calls of a GPU function on device-resident arguments,
/// each call waited for.
static int benchGpu(const rt::Executable &executable,
                    const rt::Function &function,
                    const std::vector<rt::HostBuffer> &args) {
  rt::cuda::Stream &stream = *executable.stream();
  std::vector<rt::cuda::DeviceBuffer> onDevice;
  for (const rt::HostBuffer &a : args) {
    auto d = rt::cuda::DeviceBuffer::fromHost(a, executable.cudaDevice(),
                                              &stream);
    if (!d)
      return fail(d.error().message);
    onDevice.push_back(std::move(*d));
  }
  std::vector<double> ms;
  for (unsigned i = 0; i < bench; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto r = function.call(onDevice);
    if (!r) {
      fail(r.error().message);
      return 2;
    }
    if (rt::Status st = stream.synchronize(); !st)
      return fail(st.error().message);
    r->clear();
    auto stop = std::chrono::steady_clock::now();
    ms.push_back(
        std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(ms.begin(), ms.end());
  double iqr = ms[(ms.size() * 3) / 4] - ms[ms.size() / 4];
  llvm::outs() << llvm::format("@%s on %s: %u calls, median %.4f ms, min "
                               "%.4f ms, max %.4f ms, interquartile range "
                               "%.4f ms\n",
                               function.signature().name.c_str(),
                               device.c_str(), bench.getValue(),
                               ms[ms.size() / 2], ms.front(), ms.back(), iqr);
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerAllPasses();
  mlir::tessera::registerAllPasses();
  llvm::cl::HideUnrelatedOptions(runCategory);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "Run a Graph IR function on the CPU or an NVIDIA GPU\n");
  if (threads.getNumOccurrences())
    if (rt::Status s = rt::Device::host().setThreadCount(threads); !s)
      return fail("--num-threads: " + s.error().message);
  if (calls < 1)
    return fail("--calls expects a number of calls >= 1, got " +
                llvm::Twine(calls.getValue()));

  bool gpuFile = StringRef(inputFile).ends_with(".tgpu");
  if (describeProgram) {
    if (!gpuFile)
      return fail("--describe takes a GPU program file (.tgpu), got " +
                  inputFile);
    auto bundle = rt::GpuBundle::load(inputFile);
    if (!bundle)
      return fail(bundle.error().message);
    std::size_t n = bundle->programs.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (n > 1)
        llvm::outs() << "# program " << i + 1 << " of " << n << "\n";
      llvm::outs() << bundle->programs[i].listing();
    }
    return 0;
  }
  if (gpuFile && !device.getNumOccurrences())
    device = "cuda";
  if (!tuneInto.empty()) {
    if (!gpuFile)
      return fail("--tune takes a .tgpu bundle of --variants programs, got " +
                  inputFile);
    auto index = parseDevice(device);
    if (!index)
      return 1;
    if (*index < 0)
      return fail("--tune times programs on a GPU: --device cuda[:K]");
    auto bundle = rt::GpuBundle::load(inputFile);
    if (!bundle)
      return fail(bundle.error().message);
    // The file it merges into is read first: a damaged one is reported
    // before the GPU time is spent (and is not overwritten).
    auto table = rt::TuningTable::load(tuneInto);
    if (!table)
      return fail(table.error().message);
    auto tuned = rt::cuda::tunePrograms(bundle->programs, *index);
    if (!tuned)
      return fail(tuned.error().message);
    table->merge(*tuned);
    if (rt::Status st = table->save(tuneInto); !st)
      return fail(st.error().message);
    llvm::outs() << tuned->str();
    return 0;
  }
  std::optional<int> cudaIndex = parseDevice(device);
  if (!cudaIndex)
    return 1;
  bool onGpu = *cudaIndex >= 0;
  if (!emitGpuProgram.empty()) {
    if (gpuFile || StringRef(inputFile).ends_with(".so"))
      return fail("--emit-gpu-program needs an .mlir input, got " + inputFile);
    return emitGpu();
  }
  if (gpuFile && !onGpu)
    return fail(inputFile + " is a GPU program: it runs with --device cuda");
  if (onGpu) {
    // What only the CPU path does.
    for (auto [given, flag] :
         {std::pair(!emitLibrary.empty(), "--emit-library"),
          std::pair(bool(jit), "--jit"),
          std::pair(!passPipeline.empty(), "--pass-pipeline"),
          std::pair(bool(checkGrads), "--check-grads"),
          std::pair(bool(memoryStats), "--memory-stats"),
          std::pair(threads.getNumOccurrences() > 0, "--num-threads"),
          std::pair(StringRef(inputFile).ends_with(".so"), "a .so input")})
      if (given)
        return fail(llvm::Twine(flag) + " is for the CPU; --device " +
                    device + " runs on a GPU");
  }

  if (checkGrads)
    return runGradCheck();

  auto compileStart = std::chrono::steady_clock::now();
  bool cached = false;
  std::shared_ptr<rt::Executable> executable;
  if (gpuFile) {
    auto loaded = rt::Executable::loadGpuPrograms({inputFile}, *cudaIndex);
    if (!loaded)
      return fail(loaded.error().message);
    executable = *loaded;
  } else if (onGpu) {
    auto compiled = compileForCuda(*cudaIndex);
    if (!compiled)
      return fail(compiled.error().message);
    executable = *compiled;
  } else if (StringRef(inputFile).ends_with(".so")) {
    if (!emitLibrary.empty())
      return fail("--emit-library needs an .mlir input, got " + inputFile);
    auto loaded = rt::Executable::load(inputFile);
    if (!loaded)
      return fail(loaded.error().message);
    executable = *loaded;
  } else {
    auto compiled = compile(cached);
    if (!compiled)
      return 1;
    if (!*compiled)
      return 0; // --emit-library
    executable = *compiled;
  }
  if (timeCompile)
    llvm::outs() << llvm::format(
        "compile: %.1f ms%s\n",
        std::chrono::duration<double, std::milli>(
            std::chrono::steady_clock::now() - compileStart)
            .count(),
        cached ? " (cached)" : "");

  if (executable->functions().empty())
    return fail(inputFile + " has no public function with a body");
  std::string name =
      fnName.empty() ? executable->functions().front().name : fnName;
  auto function = executable->function(name);
  if (!function)
    return fail(function.error().message);
  auto args = makeArguments(function->signature());
  if (!args)
    return 1;
  if (auto bound = function->bind(*args); !bound)
    return fail(bound.error().message);

  rt::CachingAllocator &allocator = rt::CachingAllocator::global();
  if (memoryStats)
    allocator.setExactAccounting(true);
  allocator.resetPeak();
  std::size_t atStart = allocator.stats().bytesInUse;
  auto results = function->call(*args);
  for (unsigned call = 1; results && call < calls; ++call)
    results = function->call(*args);
  if (!results) {
    fail(results.error().message);
    return 2;
  }
  if (memoryStats)
    llvm::outs() << "peak memory: " << allocator.stats().peakBytesInUse
                 << " bytes in use (" << atStart << " before the calls)\n";
  if (!quiet)
    for (auto [i, r] : llvm::enumerate(*results))
      llvm::outs() << "result " << i << ": " << summary(r) << "\n";
  if (!outDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(outDir))
      return fail("cannot create the output directory " + outDir + ": " +
                  ec.message());
    for (auto [i, r] : llvm::enumerate(*results))
      if (rt::Status s =
              r.saveNpy(outDir + "/out" + std::to_string(i) + ".npy");
          !s)
        return fail(s.error().message);
    // State arguments after the calls, to inspect or to pass back in.
    for (auto [i, spec] : llvm::enumerate(function->signature().arguments))
      if (spec.isState)
        if (rt::Status s = (*args)[i].saveNpy(outDir + "/arg" +
                                              std::to_string(i) + ".npy");
            !s)
          return fail(s.error().message);
  }
  if (bench > 0 && onGpu)
    return benchGpu(*executable, *function, *args);
  if (bench > 0) {
    // Each timed call includes checking the arguments and freeing the
    // results (back to the runtime's cache), not copying them.
    // State arguments (KV caches) start each timed call as they were
    // after the reported calls, so every call does the same work and a
    // cache without a window does not fill up.
    std::vector<std::pair<size_t, rt::HostBuffer>> saved;
    for (auto [i, spec] : llvm::enumerate(function->signature().arguments))
      if (spec.isState) {
        auto copy = (*args)[i].clone();
        if (!copy)
          return fail(copy.error().message);
        saved.emplace_back(i, std::move(*copy));
      }
    std::vector<double> ms;
    for (unsigned i = 0; i < bench; ++i) {
      for (auto &[index, copy] : saved)
        std::memcpy((*args)[index].data(), copy.data(), copy.byteSize());
      auto start = std::chrono::steady_clock::now();
      auto r = function->call(*args);
      if (!r) {
        fail(r.error().message);
        return 2;
      }
      r->clear();
      auto stop = std::chrono::steady_clock::now();
      ms.push_back(
          std::chrono::duration<double, std::milli>(stop - start).count());
    }
    std::sort(ms.begin(), ms.end());
    // Spread: the interquartile range, the middle half of the calls.
    double iqr = ms[(ms.size() * 3) / 4] - ms[ms.size() / 4];
    llvm::outs() << llvm::format("@%s: %u calls, median %.4f ms, min %.4f ms, "
                                 "max %.4f ms, interquartile range %.4f ms\n",
                                 name.c_str(), bench.getValue(),
                                 ms[ms.size() / 2], ms.front(), ms.back(), iqr);
  }
  return 0;
}
