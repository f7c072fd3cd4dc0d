//===- Module.cpp - tessera::Module ---------------------------------------===//

#include "ModuleState.h"

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/TSched/Transforms/Passes.h"
#include "tessera/Execution/CPUCompiler.h"
#include "tessera/Execution/GPUCompiler.h"
#include "tessera/Pipelines/Pipelines.h"
#include "tessera/Runtime/CompileCache.h"
#include "tessera/Runtime/Cuda.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

#include <mutex>

using namespace mlir;

namespace tessera {

Module::Module() : state(std::make_unique<detail::ModuleState>()) {}
Module::~Module() = default;
Module::Module(Module &&) noexcept = default;
Module &Module::operator=(Module &&) noexcept = default;

Result<Function> Module::trace(const std::string &name,
                               const std::vector<TensorSpec> &inputs,
                               const Body &body, bool isPublic) {
  return state->trace(name, inputs, body, isPublic);
}

Result<std::vector<Tensor>>
Module::beginTrace(const std::string &name,
                   const std::vector<TensorSpec> &inputs, bool isPublic) {
  return state->beginTrace(name, inputs, isPublic);
}

Result<Function> Module::endTrace(const std::vector<Tensor> &results) {
  return state->endTrace(results);
}

void Module::abortTrace() { state->abortTrace(); }

std::vector<Tensor> Module::call(const Function &fn,
                                 const std::vector<Tensor> &args,
                                 SourceLoc loc) {
  return state->call(fn, args, loc);
}

std::vector<Tensor> Module::checkpoint(const Function &fn,
                                       const std::vector<Tensor> &args,
                                       SourceLoc loc) {
  return state->checkpoint(fn, args, loc);
}

std::vector<Tensor> Module::customVjp(const Function &fn, const Function &fwd,
                                      const Function &bwd,
                                      const std::vector<Tensor> &args,
                                      SourceLoc loc) {
  return state->customVjp(fn, fwd, bwd, args, loc);
}

std::vector<Tensor> Module::customJvp(const Function &fn, const Function &jvp,
                                      const std::vector<Tensor> &args,
                                      SourceLoc loc) {
  return state->customJvp(fn, jvp, args, loc);
}

std::vector<Tensor> Module::cond(const Tensor &pred, const Function &thenFn,
                                 const Function &elseFn, SourceLoc loc) {
  return state->cond(pred, thenFn, elseFn, loc);
}

std::vector<Tensor> Module::whileLoop(const Function &condFn,
                                      const Function &bodyFn,
                                      const std::vector<Tensor> &inits,
                                      std::optional<int64_t> tripCount,
                                      SourceLoc loc) {
  return state->whileLoop(condFn, bodyFn, inits, tripCount, loc);
}

std::vector<Tensor> Module::scan(const Function &body,
                                 const std::vector<Tensor> &inits,
                                 const std::vector<Tensor> &xs,
                                 std::optional<int64_t> length, bool reverse,
                                 SourceLoc loc) {
  return state->scan(body, inits, xs, length, reverse, loc);
}

std::vector<Tensor> Module::vmap(const Function &fn,
                                 const std::vector<Tensor> &args,
                                 const std::vector<bool> &mapped,
                                 SourceLoc loc) {
  return state->vmap(fn, args, mapped, loc);
}

Tensor Module::fixedPoint(const Function &body, const Tensor &init,
                          const std::vector<Tensor> &params, double tol,
                          int64_t maxIter, SourceLoc loc) {
  return state->solveLike("fixed_point", body, init, params, tol, maxIter, loc);
}

Tensor Module::solve(const Function &body, const Tensor &init,
                     const std::vector<Tensor> &params, double tol,
                     int64_t maxIter, SourceLoc loc) {
  return state->solveLike("solve", body, init, params, tol, maxIter, loc);
}

/// grad() is vjp() of a function with one scalar float result.
Result<Function> Module::grad(const Function &fn, const std::vector<int> &wrt,
                              bool isPublic) {
  const auto &out = fn.outputs;
  if (out.size() != 1 || !out[0].shape.empty() ||
      !runtime::isFloat(out[0].dtype)) {
    std::string found;
    for (const TensorSpec &o : out)
      found += (found.empty() ? "" : ", ") +
               std::string(runtime::name(o.dtype)) + describe(o.shape);
    return Error{"grad needs @" + fn.name +
                 " to return one scalar float (a rank-0 tensor), got (" +
                 found + "); use vjp for other results"};
  }
  return state->derive(fn, wrt, "adjoint", isPublic);
}

Result<Function> Module::vjp(const Function &fn, const std::vector<int> &wrt,
                             bool isPublic) {
  return state->derive(fn, wrt, "adjoint", isPublic);
}

Result<Function> Module::jvp(const Function &fn, const std::vector<int> &wrt,
                             bool isPublic) {
  return state->derive(fn, wrt, "jvp", isPublic);
}

Result<Function> Module::hvp(const Function &fn, const std::vector<int> &wrt,
                             bool isPublic) {
  return state->derive(fn, wrt, "hvp", isPublic);
}

Result<Function> Module::outline(const std::vector<Tensor> &results,
                                 const std::vector<Tensor> &inputs,
                                 const std::string &name) {
  return state->outline(results, inputs, name);
}

Result<Tensor> Module::addArgument(const TensorSpec &spec) {
  return state->addArgument(spec);
}

Status Module::makePublic(const std::string &name) {
  auto fn = state->getModule().lookupSymbol<func::FuncOp>(name);
  if (!fn)
    return Error{"no function @" + name + " in this Module"};
  fn.setPublic();
  return Status::ok();
}

void Module::setLocation(const SourceLoc &loc) { state->location(loc); }

void Module::setLocation(const std::string &file, int line, int column) {
  MLIRContext *ctx = state->getContext();
  state->setLocation(FileLineColLoc::get(ctx, file, line, column));
}

const std::optional<Error> &Module::error() const { return state->firstError; }

std::optional<Error> Module::takeError() {
  std::optional<Error> e = std::move(state->firstError);
  state->firstError.reset();
  return e;
}

bool Module::tracing() const { return state->tracing(); }

std::string Module::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  state->getModule().print(os);
  return text;
}

static Status ready(const detail::ModuleState &s, bool tracing) {
  if (tracing)
    return Error{"the Module cannot be compiled while a trace is running"};
  if (s.firstError)
    return *s.firstError;
  return Status::ok();
}

Result<std::string> Module::lower(Stage stage) const {
  if (Status s = ready(*state, tracing()); !s)
    return s.error();
  if (stage == Stage::Graph)
    return str();
  OwningOpRef<ModuleOp> copy = state->getModule().clone();
  PassManager pm(state->getContext());
  static const std::map<Stage, mlir::tessera::GPUStage> gpuStops = {
      {Stage::GPUGroups, mlir::tessera::GPUStage::Groups},
      {Stage::GPUKernels, mlir::tessera::GPUStage::Kernels},
      {Stage::GPUHost, mlir::tessera::GPUStage::Host},
      {Stage::GPUBinary, mlir::tessera::GPUStage::Binary}};
  bool gpu = gpuStops.count(stage) != 0;
  if (gpu) {
    mlir::tessera::GPUPipelineOptions options;
    mlir::tessera::buildGPUPipeline(pm, options, gpuStops.at(stage));
  } else {
    static const std::map<Stage, mlir::tessera::CPUStage> stops = {
        {Stage::GraphOptimized, mlir::tessera::CPUStage::GraphOptimized},
        {Stage::Linalg, mlir::tessera::CPUStage::Linalg},
        {Stage::Scheduled, mlir::tessera::CPUStage::Scheduled},
        {Stage::LLVM, mlir::tessera::CPUStage::LLVM}};
    mlir::tessera::buildCPUPipeline(pm, stops.at(stage));
  }
  state->clearDiagnostics();
  if (failed(pm.run(*copy)))
    return Error{state->takeDiagnostics(gpu ? "the GPU pipeline failed"
                                            : "the CPU pipeline failed")};
  std::string text;
  llvm::raw_string_ostream os(text);
  copy->print(os);
  return text;
}

std::string Target::str() const {
  return kind == Kind::CPU ? std::string("cpu")
                           : "cuda:" + std::to_string(device);
}

namespace {
/// What a GPU executable compiles from: a snapshot of the module (so later
/// changes to it, or its end, do not reach the executable), used by one
/// compile at a time.
struct GpuSource {
  detail::ModuleState state;
  std::mutex mutex;
};

} // namespace

static Result<std::shared_ptr<runtime::Executable>>
compileForCuda(detail::ModuleState &state, const CompileOptions &options) {
  int device = options.target.device;
  auto info = runtime::cuda::deviceInfo(device);
  if (!info)
    return Error{"cannot compile for " + options.target.str() + ": " +
                 info.error().message};
  std::optional<std::string> chip =
      runtime::chipForDevice(info->major, info->minor);
  if (!chip)
    return Error{"cannot compile for " + options.target.str() + " (" +
                 info->describe() +
                 "): Tessera's GPU back end needs compute capability 8.0 "
                 "or newer"};
  state.clearDiagnostics();
  auto signatures = mlir::tessera::publicSignatures(state.getModule());
  if (failed(signatures))
    return Error{state.takeDiagnostics("compilation failed")};
  auto source = std::make_shared<GpuSource>();
  std::string text;
  llvm::raw_string_ostream os(text);
  state.getModule()->print(os,
                           mlir::OpPrintingFlags().enableDebugInfo(true, false));
  if (!source->state.loadModule(text))
    return Error{source->state.takeDiagnostics(
        "the module does not read back from its own text")};
  int64_t multiprocessors = info->multiprocessors;
  std::string cacheDirectory =
      options.cacheDirectory.empty() ? std::string()
                                     : options.cacheDirectory + "/gpu";
  // Tuned schedules live beside the cached programs (or, without a cache,
  // in a file of this process).
  std::string tuningFile;
  if (options.autotune) {
    if (!cacheDirectory.empty()) {
      llvm::sys::fs::create_directories(cacheDirectory);
      tuningFile = cacheDirectory + "/tuning.txt";
    } else {
      llvm::SmallString<128> path;
      llvm::sys::path::system_temp_directory(true, path);
      llvm::sys::path::append(path, "tessera-tuning-" +
                                        std::to_string(::getpid()) + ".txt");
      tuningFile = path.str().str();
    }
  }
  runtime::Executable::GpuCompiler compile =
      [source, chip = *chip, multiprocessors, cacheDirectory, tuningFile,
       device](const std::string &name,
               const std::map<std::string, int64_t> &dims)
      -> Result<runtime::GpuProgramImage> {
    std::lock_guard<std::mutex> lock(source->mutex);
    mlir::tessera::GPUCompileOptions gpu;
    gpu.entry = name;
    gpu.chip = chip;
    gpu.multiprocessors = multiprocessors;
    gpu.dims = dims;
    gpu.cacheDirectory = cacheDirectory;
    gpu.tuningFile = tuningFile;
    source->state.clearDiagnostics();
    auto image =
        tuningFile.empty()
            ? mlir::tessera::compileForGPU(source->state.getModule(), gpu)
            : mlir::tessera::compileTunedForGPU(source->state.getModule(),
                                                gpu, device);
    if (failed(image))
      return Error{source->state.takeDiagnostics(
          "the GPU pipeline failed on @" + name)};
    return std::move(*image);
  };
  return runtime::Executable::forCuda(
      device, std::move(*signatures), {}, std::move(compile), source,
      "module compiled for " + options.target.str() + " (" + info->name +
          ", " + *chip + ")");
}

Result<std::shared_ptr<runtime::Executable>>
Module::compile(const CompileOptions &options) const {
  if (Status s = ready(*state, tracing()); !s)
    return s.error();
  if (options.target.kind == Target::Kind::CUDA)
    return compileForCuda(*state, options);
  mlir::tessera::CPUCompileOptions cpu;
  cpu.cacheDirectory = options.cacheDirectory;
  state->clearDiagnostics();
  auto compiled = mlir::tessera::compileForCPU(state->getModule(), cpu);
  if (failed(compiled))
    return Error{state->takeDiagnostics("compilation failed")};
  return compiled->executable;
}

Result<runtime::GpuProgramImage>
Module::compileGPU(const GPUCompileOptions &options) const {
  if (Status s = ready(*state, tracing()); !s)
    return s.error();
  mlir::tessera::GPUCompileOptions gpu;
  gpu.entry = options.entry;
  gpu.chip = options.chip;
  gpu.multiprocessors = options.multiprocessors;
  gpu.dims = options.dims;
  gpu.cubin = options.cubin;
  gpu.cacheDirectory = options.cacheDirectory;
  gpu.variant = options.variant;
  gpu.tuningFile = options.tuningFile;
  if (options.autotuneDevice >= 0 && options.tuningFile.empty())
    return Error{"autotuning keeps its choices in a file: set "
                 "GPUCompileOptions::tuningFile"};
  state->clearDiagnostics();
  auto image = options.autotuneDevice >= 0
                   ? mlir::tessera::compileTunedForGPU(
                         state->getModule(), gpu, options.autotuneDevice)
                   : mlir::tessera::compileForGPU(state->getModule(), gpu);
  if (failed(image))
    return Error{state->takeDiagnostics("the GPU pipeline failed")};
  return std::move(*image);
}

std::string Module::defaultCacheDirectory() {
  return runtime::CompileCache::defaultDirectory();
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

std::string Dim::str() const {
  return isStatic() ? std::to_string(value) : expression;
}

std::string describe(const Shape &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + shape[i].str();
  return out + "]";
}

bool Tensor::valid() const { return state && state->isLive(id); }

bool Tensor::isKey() const { return valid() && state->isKey(*this); }

bool Tensor::isKVCache() const { return valid() && state->isKVCache(*this); }

Shape Tensor::shape() const {
  if (!valid() || isKey())
    return Shape();
  return state->shapeOf(state->raw(*this).getType());
}

int64_t Tensor::rank() const { return int64_t(shape().size()); }

DType Tensor::dtype() const {
  if (!valid() || isKey())
    return isKey() ? DType::i32 : DType::f32;
  if (isKVCache())
    return detail::dtypeOf(cast<mlir::tessera::tgraph::KVCacheType>(
                               state->raw(*this).getType())
                               .getElementType())
        .value_or(DType::f32);
  return detail::dtypeOf(state->typeOf(*this).getElementType())
      .value_or(DType::f32);
}

std::string Tensor::str() const {
  if (!valid())
    return "<invalid tensor>";
  if (isKey())
    return "key";
  if (isKVCache())
    return "kv_cache<" + describe(shape()) + ", " + runtime::name(dtype()) +
           ">";
  return std::string(runtime::name(dtype())) + describe(shape());
}

} // namespace tessera
