//===- CPUCompiler.cpp - Graph IR to loaded native code -------------------===//

#include "tessera/Execution/CPUCompiler.h"

#include "CompileProgress.h"

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/IR/TypeInference.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"
#include "tessera/Pipelines/Pipelines.h"
#include "tessera/Runtime/CompileCache.h"
#include "tessera/Runtime/DType.h"
#include "tessera/Runtime/Signature.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Target/LLVMIR/LLVMTranslationInterface.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"
#include "llvm/Transforms/Utils/SplitModule.h"
#include <atomic>

#include <chrono>
#include <dlfcn.h>
#include <mutex>
#include <thread>
#include <unordered_map>

using namespace mlir;
using namespace mlir::tessera;
namespace rt = ::tessera::runtime;

#ifndef TESSERA_VERSION
#define TESSERA_VERSION "0.1"
#endif

namespace {

/// The compilation this thread is running (a compile runs on one thread;
/// the threads it starts report through their pass instrumentation).
thread_local CompileProgress *activeProgress = nullptr;

/// Watches the compilation of `module`'s public functions while in scope.
class WatchCompile {
public:
  explicit WatchCompile(ModuleOp module)
      : progress(publicFunctions(module)), previous(activeProgress) {
    activeProgress = &progress;
  }
  ~WatchCompile() { activeProgress = previous; }

private:
  static std::string publicFunctions(ModuleOp module) {
    std::string names;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal())
        names += (names.empty() ? "@" : ", @") + fn.getName().str();
    return names.empty() ? "the module" : names;
  }

  CompileProgress progress;
  CompileProgress *previous;
};

/// With TESSERA_COMPILE_TIMING set, each phase of a compile reports its
/// wall time on stderr; a compile that runs long names the phase
/// (CompileProgress).
class PhaseTimer {
public:
  explicit PhaseTimer(const char *phase)
      : phase(phase), start(std::chrono::steady_clock::now()) {
    if (activeProgress)
      activeProgress->phase(phase);
  }
  ~PhaseTimer() {
    if (activeProgress)
      activeProgress->phase("");
    static const bool enabled = std::getenv("TESSERA_COMPILE_TIMING");
    if (enabled)
      llvm::errs() << llvm::format("tessera: %s %.1f ms\n", phase,
                                   std::chrono::duration<double, std::milli>(
                                       std::chrono::steady_clock::now() - start)
                                       .count());
  }

private:
  const char *phase;
  std::chrono::steady_clock::time_point start;
};

/// The host CPU as the code generator sees it: name and feature string.
std::pair<std::string, std::string> hostCPU() {
  std::string features;
  llvm::StringMap<bool> map = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> list;
  for (auto &f : map)
    list.push_back((f.second ? "+" : "-") + f.first().str());
  std::sort(list.begin(), list.end());
  for (const std::string &f : list)
    features += (features.empty() ? "" : ",") + f;
  return {llvm::sys::getHostCPUName().str(), features};
}

std::string pipelineText(const CPUCompileOptions &options) {
  if (!options.passPipeline.empty())
    return options.passPipeline;
  std::string text;
  llvm::raw_string_ostream os(text);
  // The default pipeline, spelled out, so a change to it changes the key.
  OpPassManager opm(ModuleOp::getOperationName());
  buildCPUPipeline(opm);
  opm.printAsTextualPipeline(os);
  return text;
}

/// The runtime's name for a tensor element type.
std::optional<rt::DType> runtimeDType(Type t) {
  if (t.isF64())
    return rt::DType::f64;
  if (t.isF32())
    return rt::DType::f32;
  if (t.isF16())
    return rt::DType::f16;
  if (t.isBF16())
    return rt::DType::bf16;
  if (isa<Float8E4M3FNType>(t))
    return rt::DType::f8E4M3FN;
  if (isa<Float8E5M2Type>(t))
    return rt::DType::f8E5M2;
  for (auto [width, type] :
       {std::pair(64, rt::DType::i64), std::pair(32, rt::DType::i32),
        std::pair(16, rt::DType::i16), std::pair(8, rt::DType::i8),
        std::pair(4, rt::DType::i4), std::pair(1, rt::DType::i1)})
    if (t.isSignlessInteger(width))
      return type;
  return std::nullopt;
}

/// The signatures of the public functions, as the runtime checks them.
FailureOr<std::vector<rt::FunctionSignature>> buildManifest(ModuleOp module) {
  std::vector<rt::FunctionSignature> out;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn.isPublic() || fn.isExternal())
      continue;
    rt::FunctionSignature sig;
    sig.name = fn.getSymName().str();
    auto spec = [&](Type t, const Twine &what) -> FailureOr<rt::TensorSpec> {
      rt::TensorSpec s;
      if (isa<tgraph::KeyType>(t)) {
        s.isKey = true;
        s.dtype = rt::DType::i32;
        s.dims = {"2"};
        return s;
      }
      if (isa<tgraph::KVCacheType>(t))
        return fn.emitError()
               << what
               << " is a kv_cache, but caches are state: pass the cache as an "
                  "argument, which the function updates in place";
      auto tensor = dyn_cast<RankedTensorType>(t);
      std::optional<rt::DType> dtype =
          tensor ? runtimeDType(tensor.getElementType()) : std::nullopt;
      if (!dtype)
        return fn.emitError()
               << what << " has type " << tgraph::typeName(t)
               << ", but compiled functions take and return ranked tensors of "
                  "f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, "
                  "i4 or i1, and random keys";
      s.dtype = *dtype;
      for (const ::tessera::shape::DimExpr &d : tgraph::getShape(t).dims)
        s.dims.push_back(d.str());
      return s;
    };
    for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes())) {
      // A KV cache is three state buffers: keys, values, (length, window).
      if (auto cache = dyn_cast<tgraph::KVCacheType>(t)) {
        std::optional<rt::DType> dtype = runtimeDType(cache.getElementType());
        if (!dtype)
          return fn.emitError() << "argument " << i << " is a kv_cache of "
                                << tgraph::typeName(cache.getElementType())
                                << ", which the runtime has no dtype for";
        rt::TensorSpec buffer;
        buffer.isState = true;
        buffer.dtype = *dtype;
        for (const ::tessera::shape::DimExpr &d : cache.getShape().getDims())
          buffer.dims.push_back(d.str());
        sig.arguments.push_back(buffer);
        sig.arguments.push_back(buffer);
        rt::TensorSpec words;
        words.isState = true;
        words.dtype = rt::DType::i64;
        words.dims = {"2"};
        sig.arguments.push_back(words);
        continue;
      }
      auto s = spec(t, "argument " + Twine(i));
      if (failed(s))
        return failure();
      sig.arguments.push_back(*s);
    }
    for (auto [i, t] : llvm::enumerate(fn.getResultTypes())) {
      auto s = spec(t, "result " + Twine(i));
      if (failed(s))
        return failure();
      sig.results.push_back(*s);
    }
    out.push_back(std::move(sig));
  }
  return out;
}

/// Adds the manifest to `module` (in the LLVM dialect) as a constant
/// NUL-terminated string the runtime finds by name.
void addManifest(ModuleOp module, const std::string &manifest) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  std::string text = manifest + '\0';
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
  LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true,
                         LLVM::Linkage::External, rt::kManifestSymbol,
                         b.getStringAttr(text));
}

void prepareTranslation(MLIRContext *ctx);

/// Runs the pipeline on `module`, which ends in the LLVM dialect.
LogicalResult lowerToLLVMDialect(ModuleOp module,
                                 const CPUCompileOptions &options) {
  PassManager pm(module.getContext());
  if (options.passPipeline.empty()) {
    buildCPUPipeline(pm);
  } else {
    StringRef text = StringRef(options.passPipeline).trim();
    if (text.consume_front("builtin.module(")) {
      if (!text.consume_back(")"))
        return module.emitError("cannot parse the pass pipeline: expected ')' "
                                "closing 'builtin.module(' at its end");
    }
    std::string error;
    llvm::raw_string_ostream os(error);
    if (failed(parsePassPipeline(text, pm, os)))
      return module.emitError("cannot parse the pass pipeline: ") << error;
  }
  // The IR is verified once at the end, not after every pass (that would
  // take a third of the time); TESSERA_VERIFY_EACH=1 verifies after each
  // pass, to find the pass that breaks it.
  static const bool verifyEach = [] {
    const char *v = std::getenv("TESSERA_VERIFY_EACH");
    return v && *v && std::string(v) != "0";
  }();
  pm.enableVerifier(verifyEach);
  if (activeProgress)
    pm.addInstrumentation(activeProgress->instrumentation());
  if (failed(pm.run(module)))
    return failure();
  if (!verifyEach && failed(verify(module)))
    return module.emitError(
        "internal error: the CPU pipeline produced IR that does not verify "
        "(TESSERA_VERIFY_EACH=1 finds the pass)");
  // A pipeline of one's own may stop short of what translates to LLVM IR
  // (the LLVM dialect, and OpenMP's).
  prepareTranslation(module.getContext());
  WalkResult left = module.walk([](Operation *op) {
    Dialect *dialect = op->getDialect();
    if (isa<ModuleOp>(op) ||
        (dialect &&
         dialect->getRegisteredInterface<LLVMTranslationDialectInterface>()))
      return WalkResult::advance();
    op->emitError("the pass pipeline must lower everything to the LLVM "
                  "dialect, but '")
        << op->getName() << "' remains";
    return WalkResult::interrupt();
  });
  return failure(left.wasInterrupted());
}

/// For every C-interface function `_mlir_ciface_<f>`, a packed wrapper
/// `_mlir__mlir_ciface_<f>(void **args)` that loads each parameter from
/// the pointer in args[i] (and stores a return value through the last
/// one): one calling convention for every signature.
void addPackedWrappers(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  SmallVector<llvm::Function *> targets;
  for (llvm::Function &f : module)
    if (!f.isDeclaration() && f.getName().starts_with("_mlir_ciface_"))
      targets.push_back(&f);
  for (llvm::Function *f : targets) {
    auto *ptr = llvm::PointerType::get(ctx, 0);
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr},
                                         /*isVarArg=*/false);
    auto *wrapper =
        llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                               "_mlir_" + f->getName(), module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", wrapper));
    llvm::Value *args = wrapper->getArg(0);
    SmallVector<llvm::Value *> values;
    for (auto [i, param] : llvm::enumerate(f->args())) {
      llvm::Value *slot = b.CreateLoad(
          ptr, b.CreateConstGEP1_64(ptr, args, static_cast<int64_t>(i)));
      values.push_back(b.CreateLoad(param.getType(), slot));
    }
    llvm::Value *result = b.CreateCall(f, values);
    if (!result->getType()->isVoidTy()) {
      llvm::Value *slot = b.CreateLoad(
          ptr,
          b.CreateConstGEP1_64(ptr, args, static_cast<int64_t>(f->arg_size())));
      b.CreateStore(result, slot);
    }
    b.CreateRetVoid();
  }
}

/// The native target and the translations to LLVM IR, once per process
/// (targets) and per context (translations).
void prepareTranslation(MLIRContext *ctx) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  registerOpenMPDialectTranslation(*ctx);
}

/// A target machine for the host, for one thread's use.
FailureOr<std::unique_ptr<llvm::TargetMachine>>
hostMachine(std::string &error) {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    error = "no code generator for " + triple.str() + ": " + error;
    return failure();
  }
  auto [cpu, features] = hostCPU();
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpu, features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Default));
}

/// Optimizes `module` (O2 without LLVM's loop vectorizer and unroller: the
/// code is vectorized and tiled already, they would only grow it) and
/// writes it as an object file at `path`. Returns an error message, empty
/// on success.
std::string optimizeAndEmit(llvm::Module &module, llvm::TargetMachine &machine,
                            const std::string &path) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = false;
  tuning.LoopVectorization = false;
  tuning.SLPVectorization = false;
  llvm::PassBuilder pb(&machine, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  mpm.run(module, mam);

  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return "cannot write " + path + ": " + ec.message();
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, out, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return "the code generator cannot emit object files";
  codegen.run(module);
  out.close();
  if (out.has_error())
    return "cannot write " + path + ": " + out.error().message();
  return "";
}

/// Parts the LLVM module is split into: its functions (the public ones,
/// and the bodies of their parallel loops, which OpenMP outlines) are
/// spread over this many modules by size, each optimized and compiled on
/// its own thread. A fixed number, so the code does not depend on the
/// machine's core count.
constexpr unsigned kCodegenParts = 4;

/// LLVM IR for the host, optimized, as object files (`objects`, one per
/// part, created in the temp directory; the caller removes them).
LogicalResult emitObjects(ModuleOp module,
                          SmallVectorImpl<std::string> &objects) {
  prepareTranslation(module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = [&] {
    PhaseTimer timer("translation to LLVM IR");
    return translateModuleToLLVMIR(module, llvmContext);
  }();
  if (!llvmModule)
    return module.emitError("cannot translate the module to LLVM IR");
  std::string error;
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine = hostMachine(error);
  if (failed(machine))
    return module.emitError(error);
  llvmModule->setDataLayout((*machine)->createDataLayout());
  llvmModule->setTargetTriple((*machine)->getTargetTriple());
  addPackedWrappers(*llvmModule);
  {
    // Identical functions (the parallel loop bodies of identical layers)
    // are compiled once: one calls the other.
    PhaseTimer timer("LLVM function merging");
    llvm::MergeFunctionsPass::runOnModule(*llvmModule);
  }

  // Each part crosses to its thread as bitcode (an LLVMContext belongs to
  // one thread).
  SmallVector<SmallString<0>> parts;
  unsigned functions =
      llvm::count_if(llvmModule->functions(), [](const llvm::Function &f) {
        return !f.isDeclaration();
      });
  {
    PhaseTimer timer("LLVM module split");
    if (functions < 2) {
      parts.emplace_back();
      llvm::raw_svector_ostream os(parts.back());
      llvm::WriteBitcodeToFile(*llvmModule, os);
    } else {
      llvm::SplitModule(*llvmModule, std::min(kCodegenParts, functions),
                        [&](std::unique_ptr<llvm::Module> part) {
                          parts.emplace_back();
                          llvm::raw_svector_ostream os(parts.back());
                          llvm::WriteBitcodeToFile(*part, os);
                        });
    }
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    SmallString<128> object;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("tessera", "o", object))
      return module.emitError("cannot create a temporary file: ")
             << ec.message();
    objects.push_back(std::string(object));
  }

  PhaseTimer timer("LLVM optimization and code generation");
  SmallVector<std::string> errors(parts.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < parts.size(); i = next++) {
      llvm::LLVMContext context;
      llvm::Expected<std::unique_ptr<llvm::Module>> part =
          llvm::parseBitcodeFile(llvm::MemoryBufferRef(parts[i].str(), "part"),
                                 context);
      if (!part) {
        errors[i] = llvm::toString(part.takeError());
        continue;
      }
      std::string machineError;
      FailureOr<std::unique_ptr<llvm::TargetMachine>> tm =
          hostMachine(machineError);
      if (failed(tm)) {
        errors[i] = machineError;
        continue;
      }
      errors[i] = optimizeAndEmit(**part, **tm, objects[i]);
    }
  };
  unsigned threads = std::min<unsigned>(
      parts.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  for (const std::string &e : errors)
    if (!e.empty())
      return module.emitError("LLVM code generation failed: ") << e;
  return success();
}

/// The directory of the runtime library this process uses (so an
/// installed compiler links against the installed runtime), else where the
/// build put it.
const std::string &runtimeDirectory() {
  static const std::string dir = [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&rt::byteSize), &info) &&
        info.dli_fname) {
      StringRef path(info.dli_fname);
      if (path.contains("libTesseraRuntime"))
        return llvm::sys::path::parent_path(path).str();
    }
    return std::string(TESSERA_RUNTIME_DIR);
  }();
  return dir;
}

/// Links the object at `object` into the shared library `library`.
LogicalResult link(ModuleOp module, ArrayRef<std::string> objects,
                   const std::string &library) {
  // -Bsymbolic: calls inside the library bind to its own functions, even
  // where a function shares its name with one loaded earlier (a model
  // function called `step` or `index` must not call libc's).
  SmallVector<StringRef> args{TESSERA_LLD, "-shared", "-Bsymbolic", "-o",
                              library};
  for (const std::string &object : objects)
    args.push_back(object);
  std::string runtimeFlag = "-L" + runtimeDirectory();
  args.append({"--as-needed", runtimeFlag, "-lTesseraRuntime", "-rpath",
               "$ORIGIN", "-rpath", runtimeDirectory(),
               "-L" TESSERA_LLVM_LIBRARY_DIR, "-lomp", "-rpath",
               TESSERA_LLVM_LIBRARY_DIR, TESSERA_LIBM,
               // (Conversions the CPU has no instruction for: f32 to bf16
               // without AVX512-BF16 is a call of __truncsfbf2.)
               TESSERA_BUILTINS});
  PhaseTimer timer("linking");
  std::string error;
  int status = llvm::sys::ExecuteAndWait(TESSERA_LLD, args, std::nullopt, {}, 0,
                                         0, &error);
  if (status != 0)
    return module.emitError("linking the compiled code failed (")
           << TESSERA_LLD << " exited with " << status
           << (error.empty() ? "" : ": " + error) << ")";
  return success();
}

std::mutex memoryCacheMutex;
std::unordered_map<std::string, std::weak_ptr<rt::Executable>> memoryCache;

} // namespace

// The compiler binary this code was linked into (its path, size and
// modification time): a rebuilt compiler, whose passes may emit different
// code under the same version number, does not reuse old entries.
std::string mlir::tessera::compilerBuild() {
  static const std::string build = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&mlir::tessera::compilerBuild), &info) ||
        !info.dli_fname)
      return std::string("unknown build");
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(info.dli_fname, status))
      return std::string(info.dli_fname);
    return std::string(info.dli_fname) + ":" +
           std::to_string(status.getSize()) + ":" +
           std::to_string(
               status.getLastModificationTime().time_since_epoch().count());
  }();
  return build;
}

/// The cache key of a prepared module under `options` for this host and
/// compiler build.
static std::string cacheKey(ModuleOp module, const CPUCompileOptions &options) {
  llvm::SHA256 digest;
  auto add = [&](StringRef part) {
    digest.update(part);
    digest.update(StringRef("\0", 1));
  };
  add("tessera-cpu");
  add(TESSERA_VERSION);
  add(compilerBuild());
  add(LLVM_VERSION_STRING);
  auto [cpu, features] = hostCPU();
  add(cpu);
  add(features);
  add(pipelineText(options));
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().enableDebugInfo(true, false));
  add(text);
  return llvm::toHex(digest.final(), /*LowerCase=*/true);
}

namespace {
/// A module ready to lower: a clone with C interfaces on its public
/// functions, and the manifest of their Graph IR signatures.
struct Prepared {
  OwningOpRef<ModuleOp> module;
  std::string manifest;
};

} // namespace

LogicalResult mlir::tessera::expandAutodiff(ModuleOp module) {
  if (llvm::none_of(module.getBody()->getOperations(), [](Operation &op) {
        return isa<tgraph::AdjointOp, tgraph::JvpOp, tgraph::HvpOp>(op);
      }))
    return success();
  PassManager pm(module.getContext());
  // Composites expand (for their derivatives) once shapes are inferred.
  pm.addPass(tgraph::createTGraphInferShapes());
  pm.addPass(tgraph::createTGraphAutodiff());
  return pm.run(module);
}

namespace {
FailureOr<Prepared> prepare(ModuleOp module) {
  Prepared p{module.clone(), ""};
  if (failed(expandAutodiff(*p.module)))
    return failure();
  auto manifest = buildManifest(*p.module);
  if (failed(manifest))
    return failure();
  p.manifest = rt::printManifest(*manifest);
  // Compiled functions live under `tessera.<name>`, apart from the C
  // library: a model function called `exp` or `malloc` must neither be
  // called by the code that means libm's or libc's, nor call itself there.
  SymbolTable symbols(*p.module);
  for (auto fn : llvm::to_vector(p.module->getOps<func::FuncOp>()))
    if (!fn.isExternal() &&
        failed(symbols.rename(
            fn, (Twine(rt::compiledSymbolPrefix) + fn.getName()).str())))
      return fn.emitError("cannot rename the function for compilation");
  // Every public function gets a C interface (and its packed wrapper).
  for (auto fn : p.module->getOps<func::FuncOp>())
    if (fn.isPublic() && !fn.isExternal())
      fn->setAttr("llvm.emit_c_interface", UnitAttr::get(module.getContext()));
  return p;
}

/// The CPU pipeline (or the given one) to the LLVM dialect, then the
/// manifest as a global.
LogicalResult lower(Prepared &p, const CPUCompileOptions &options) {
  PhaseTimer timer("MLIR pipeline");
  if (failed(lowerToLLVMDialect(*p.module, options)))
    return failure();
  addManifest(*p.module, p.manifest);
  return success();
}

/// Pipeline, manifest, object, link: the shared library `library`.
LogicalResult buildLibrary(ModuleOp module, Prepared &p,
                           const CPUCompileOptions &options,
                           const std::string &library) {
  if (failed(lower(p, options)))
    return failure();
  SmallVector<std::string> objects;
  llvm::scope_exit removeObjects([&] {
    for (const std::string &object : objects)
      llvm::sys::fs::remove(object);
  });
  if (failed(emitObjects(*p.module, objects)))
    return failure();
  return link(module, objects, library);
}

/// Compiles in process with mlir::ExecutionEngine (ORC JIT).
FailureOr<std::shared_ptr<rt::Executable>>
compileInProcess(ModuleOp module, Prepared &p,
                 const CPUCompileOptions &options) {
  if (failed(lower(p, options)))
    return failure();
  prepareTranslation(module.getContext());
  // The runtime (allocator, errors, memref copies) is already loaded in
  // this process; OpenMP is loaded with the code.
  SmallVector<StringRef> libraries{TESSERA_LLVM_LIBRARY_DIR "/libomp.so"};
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(2, 0, nullptr);
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = optimize;
  engineOptions.sharedLibPaths = libraries;
  std::unique_ptr<ExecutionEngine> engine;
  {
    PhaseTimer timer("JIT compilation");
    auto created = ExecutionEngine::create(*p.module, engineOptions);
    if (!created)
      return module.emitError("JIT compilation failed: ")
             << llvm::toString(created.takeError());
    engine = std::move(*created);
    engine->initialize();
  }
  std::shared_ptr<ExecutionEngine> owner(std::move(engine));
  ExecutionEngine *raw = owner.get();
  auto executable = rt::Executable::fromResolver(
      [raw](const std::string &symbol) -> void * {
        auto address = raw->lookup(symbol);
        if (!address) {
          llvm::consumeError(address.takeError());
          return nullptr;
        }
        return *address;
      },
      owner, "in-process JIT code");
  if (!executable)
    return module.emitError(executable.error().message);
  return *executable;
}
} // namespace

FailureOr<CPUCompileResult>
mlir::tessera::compileForCPU(ModuleOp module,
                             const CPUCompileOptions &options) {
  WatchCompile watch(module);
  FailureOr<Prepared> prepared = [&] {
    PhaseTimer timer("autodiff and manifest");
    return prepare(module);
  }();
  if (failed(prepared))
    return failure();
  std::string key = [&] {
    PhaseTimer timer("cache key");
    return cacheKey(*prepared->module, options);
  }();
  std::string memoryKey = key + (options.jit ? ":jit" : ":library");

  {
    std::lock_guard<std::mutex> lock(memoryCacheMutex);
    if (auto it = memoryCache.find(memoryKey); it != memoryCache.end())
      if (std::shared_ptr<rt::Executable> e = it->second.lock())
        return CPUCompileResult{e, true};
  }
  if (options.jit) {
    auto executable = compileInProcess(module, *prepared, options);
    if (failed(executable))
      return failure();
    std::lock_guard<std::mutex> lock(memoryCacheMutex);
    memoryCache[memoryKey] = *executable;
    return CPUCompileResult{*executable, false};
  }

  std::optional<rt::CompileCache> cache;
  if (!options.cacheDirectory.empty())
    cache.emplace(options.cacheDirectory);
  if (cache)
    if (std::optional<std::string> path = cache->find(key)) {
      auto loaded = rt::Executable::load(*path);
      if (loaded) {
        std::lock_guard<std::mutex> lock(memoryCacheMutex);
        memoryCache[memoryKey] = *loaded;
        return CPUCompileResult{*loaded, true};
      }
      // A library that passed its checksum but does not load (a different
      // runtime, say) is reported and rebuilt.
      llvm::errs() << "tessera: compile cache entry " << *path
                   << " does not load (" << loaded.error().message
                   << "); recompiling\n";
      std::remove(path->c_str());
    }

  std::string library;
  bool temporary = !cache;
  if (cache) {
    auto scratch = cache->scratchPath(key);
    if (!scratch)
      return module.emitError(scratch.error().message);
    library = *scratch;
  } else {
    SmallString<128> path;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("tessera", "so", path))
      return module.emitError("cannot create a temporary file: ")
             << ec.message();
    library = std::string(path);
  }
  if (failed(buildLibrary(module, *prepared, options, library))) {
    llvm::sys::fs::remove(library);
    return failure();
  }
  if (cache) {
    auto stored = cache->store(key, library);
    if (!stored)
      return module.emitError(stored.error().message);
    library = *stored;
  }
  auto loaded = rt::Executable::load(library);
  if (temporary)
    llvm::sys::fs::remove(library); // stays mapped while loaded
  if (!loaded)
    return module.emitError(loaded.error().message);
  std::lock_guard<std::mutex> lock(memoryCacheMutex);
  memoryCache[memoryKey] = *loaded;
  return CPUCompileResult{*loaded, false};
}

LogicalResult mlir::tessera::compileToLibrary(ModuleOp module,
                                              const CPUCompileOptions &options,
                                              StringRef path) {
  WatchCompile watch(module);
  auto prepared = prepare(module);
  if (failed(prepared))
    return failure();
  // Written next to its destination, then renamed: a failed compile leaves
  // no half-written library behind.
  std::string scratch = (path + ".tmp").str();
  if (failed(buildLibrary(module, *prepared, options, scratch))) {
    llvm::sys::fs::remove(scratch);
    return failure();
  }
  if (std::error_code ec = llvm::sys::fs::rename(scratch, path)) {
    llvm::sys::fs::remove(scratch);
    return module.emitError("cannot write ") << path << ": " << ec.message();
  }
  return success();
}

FailureOr<std::vector<rt::FunctionSignature>>
mlir::tessera::publicSignatures(ModuleOp module) {
  OwningOpRef<ModuleOp> copy = module.clone();
  if (failed(expandAutodiff(*copy)))
    return failure();
  return buildManifest(*copy);
}
