//===- GPUCompiler.cpp - Graph IR to a runnable GPU program ---------------===//

#include "tessera/Execution/GPUCompiler.h"
#include "tessera/Conversion/Passes.h"
#include "tessera/Runtime/Cuda.h"
#include "tessera/Runtime/Tuning.h"

#include "tessera/Execution/CPUCompiler.h"
#include "tessera/Shape/DimExpr.h"

#include "tessera/Dialect/TGraph/IR/TypeInference.h"
#include "tessera/Dialect/TSched/IR/TSched.h"
#include "tessera/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace mlir;
using namespace mlir::tessera;
namespace rt = ::tessera::runtime;
using Image = rt::GpuProgramImage;

namespace {

/// Flattens a compiled host function into an image.
class ImageBuilder {
public:
  ImageBuilder(ModuleOp module, func::FuncOp host) : module(module), host(host) {}

  FailureOr<Image> build(StringRef chip);

private:
  FailureOr<int32_t> storage(Image::StorageKind kind, MemRefType type,
                             Operation *at, int64_t index = 0,
                             int64_t offset = 0);
  FailureOr<Image::Operand> operand(Value v, Operation *user);
  LogicalResult constant(memref::GetGlobalOp get);

  ModuleOp module;
  func::FuncOp host;
  Image img;
  /// The storage and shape of each memref value of the host function.
  DenseMap<Value, Image::Operand> values;
};

FailureOr<int32_t> ImageBuilder::storage(Image::StorageKind kind,
                                         MemRefType type, Operation *at,
                                         int64_t index, int64_t offset) {
  std::optional<rt::DType> dtype =
      rt::parseDType(tgraph::typeName(type.getElementType()));
  if (!dtype || !type.hasStaticShape() || !type.getLayout().isIdentity()) {
    at->emitError() << "has a buffer of type " << type
                    << ", which a GPU program cannot hold";
    return failure();
  }
  Image::Storage s;
  s.kind = kind;
  s.index = index;
  s.offset = offset;
  s.type = *dtype;
  s.shape.assign(type.getShape().begin(), type.getShape().end());
  img.storages.push_back(std::move(s));
  return int32_t(img.storages.size() - 1);
}

FailureOr<Image::Operand> ImageBuilder::operand(Value v, Operation *user) {
  auto it = values.find(v);
  if (it == values.end()) {
    user->emitError() << "reads a buffer the host program did not make";
    return failure();
  }
  return it->second;
}

LogicalResult ImageBuilder::constant(memref::GetGlobalOp get) {
  auto global = module.lookupSymbol<memref::GlobalOp>(get.getNameAttr());
  auto init = global ? dyn_cast_or_null<DenseElementsAttr>(
                           global.getInitialValueAttr())
                     : DenseElementsAttr();
  if (!init)
    return get.emitError() << "reads " << get.getNameAttr()
                           << ", which is not a constant with dense contents";
  MemRefType type = get.getType();
  int64_t bits = type.getElementTypeBitWidth();
  if (bits % 8)
    return get.emitError() << "reads a constant of " << type
                           << ", whose elements are not whole bytes";
  size_t bytes = size_t(type.getNumElements()) * size_t(bits / 8);
  ArrayRef<char> raw = init.getRawData();
  std::vector<char> data;
  if (init.isSplat()) {
    data.reserve(bytes);
    for (int64_t i = 0; i < type.getNumElements(); ++i)
      data.insert(data.end(), raw.begin(), raw.begin() + bits / 8);
  } else {
    data.assign(raw.begin(), raw.end());
  }
  if (data.size() != bytes)
    return get.emitError() << "reads a constant of " << data.size()
                           << " bytes; its type needs " << bytes;
  img.constants.push_back(std::move(data));
  FailureOr<int32_t> s =
      storage(Image::StorageKind::Constant, type, get,
              int64_t(img.constants.size() - 1));
  if (failed(s))
    return failure();
  values[get.getResult()] = {*s, img.storages[*s].shape};
  return success();
}

FailureOr<Image> ImageBuilder::build(StringRef chip) {
  img.compilerVersion = rt::tesseraVersion();
  img.chip = chip.str();
  img.name = host.getName().str();
  auto workspace = host->getAttrOfType<IntegerAttr>("tsched.workspace");
  if (!workspace)
    return host.emitError() << "is not a GPU host program (it has no "
                               "tsched.workspace)";
  img.workspaceBytes = workspace.getInt();
  for (BlockArgument arg : host.getArguments()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type)
      return host.emitError() << "takes " << arg.getType()
                              << "; a GPU program takes memrefs";
    FailureOr<int32_t> s = storage(Image::StorageKind::Argument, type, host,
                                   int64_t(arg.getArgNumber()));
    if (failed(s))
      return failure();
    img.arguments.push_back(*s);
    values[arg] = {*s, img.storages[*s].shape};
  }
  for (Operation &op : host.getBody().front()) {
    if (auto buffer = dyn_cast<tsched::BufferOp>(op)) {
      FailureOr<int32_t> s =
          storage(Image::StorageKind::Workspace, buffer.getType(), &op, 0,
                  int64_t(buffer.getOffset()));
      if (failed(s))
        return failure();
      values[buffer.getResult()] = {*s, img.storages[*s].shape};
    } else if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      FailureOr<int32_t> s =
          storage(Image::StorageKind::Result, alloc.getType(), &op);
      if (failed(s))
        return failure();
      values[alloc.getResult()] = {*s, img.storages[*s].shape};
    } else if (auto get = dyn_cast<memref::GetGlobalOp>(op)) {
      if (failed(constant(get)))
        return failure();
    } else if (auto view = dyn_cast<tsched::ViewOp>(op)) {
      FailureOr<Image::Operand> src = operand(view.getSource(), &op);
      if (failed(src))
        return failure();
      ArrayRef<int64_t> shape = view.getType().getShape();
      values[view.getResult()] = {src->storage, {shape.begin(), shape.end()}};
    } else if (auto launch = dyn_cast<tsched::LaunchOp>(op)) {
      Image::Step step;
      step.kind = Image::Step::Kind::Launch;
      step.kernel = launch.getKernel().getLeafReference().str();
      ArrayRef<int64_t> grid = launch.getGrid();
      for (size_t i = 0; i < grid.size(); ++i)
        step.grid[i] = grid[i];
      for (Value a : launch.getArgs()) {
        FailureOr<Image::Operand> o = operand(a, &op);
        if (failed(o))
          return failure();
        step.operands.push_back(*o);
      }
      if (std::optional<ArrayAttr> scalars = launch.getScalars())
        for (Attribute a : *scalars) {
          Image::Scalar c;
          if (auto f = dyn_cast<FloatAttr>(a)) {
            c.type = rt::DType::f32;
            c.bits = f.getValue().bitcastToAPInt().getZExtValue();
          } else {
            auto i = cast<IntegerAttr>(a);
            bool wide = i.getType().isInteger(64);
            c.type = wide ? rt::DType::i64 : rt::DType::i32;
            c.bits = i.getValue().getZExtValue();
          }
          step.scalars.push_back(c);
        }
      if (Attribute schedule = launch->getAttr("tsched.schedule")) {
        if (auto text = dyn_cast<StringAttr>(schedule)) {
          step.schedule = text.getValue().str();
        } else {
          // #tsched.schedule<"block(16, 64).warps(4)">: the chain.
          std::string printed;
          llvm::raw_string_ostream os(printed);
          schedule.print(os);
          size_t open = printed.find('"'), close = printed.rfind('"');
          step.schedule = open < close
                              ? printed.substr(open + 1, close - open - 1)
                              : printed;
        }
      }
      if (auto key = launch->getAttrOfType<StringAttr>("tsched.tuning"))
        step.tuning = key.getValue().str();
      img.steps.push_back(std::move(step));
    } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      Image::Step step;
      step.kind = Image::Step::Kind::Copy;
      for (Value a : {copy.getSource(), copy.getTarget()}) {
        FailureOr<Image::Operand> o = operand(a, &op);
        if (failed(o))
          return failure();
        step.operands.push_back(*o);
      }
      img.steps.push_back(std::move(step));
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands()) {
        FailureOr<Image::Operand> o = operand(v, &op);
        if (failed(o))
          return failure();
        img.results.push_back(*o);
      }
    } else {
      return op.emitError() << "'" << op.getName()
                            << "' is not an op of a GPU host program";
    }
  }
  // The kernels' PTX: the device module's gpu.binary.
  gpu::BinaryOp binary;
  module.walk([&](gpu::BinaryOp b) {
    if (!binary)
      binary = b;
  });
  if (img.steps.empty() ||
      llvm::none_of(img.steps, [](const Image::Step &s) {
        return s.kind == Image::Step::Kind::Launch;
      })) {
    // Nothing to launch: an empty module of PTX.
  } else if (!binary || binary.getObjects().empty()) {
    return host.emitError() << "launches kernels, but the module has no "
                               "compiled gpu.binary of them";
  } else {
    auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
    if (object.getFormat() != gpu::CompilationTarget::Assembly)
      return host.emitError() << "needs its kernels as PTX text (format isa)";
    img.ptx = object.getObject().getValue().str();
  }
  if (::tessera::runtime::Status st = img.verify(); !st)
    return host.emitError() << "makes an inconsistent GPU program: "
                            << st.error().message;
  return std::move(img);
}

} // namespace

namespace {
/// ptxas of the CUDA toolkit: $CUDA_ROOT/bin, /usr/local/cuda/bin, PATH.
std::optional<std::string> findPtxas() {
  for (const char *root :
       {static_cast<const char *>(std::getenv("CUDA_ROOT")),
        static_cast<const char *>("/usr/local/cuda")})
    if (root) {
      std::string path = std::string(root) + "/bin/ptxas";
      if (llvm::sys::fs::can_execute(path))
        return path;
    }
  if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("ptxas"))
    return *found;
  return std::nullopt;
}

/// The PTX compiled for `chip` by ptxas, or why not.
FailureOr<std::vector<char>> compileCubin(ModuleOp module, StringRef ptx,
                                          StringRef chip) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas)
    return module.emitError()
           << "a cubin needs ptxas of the CUDA toolkit, which is not in "
              "$CUDA_ROOT/bin, /usr/local/cuda/bin or on the PATH";
  SmallString<128> in, out, err;
  llvm::scope_exit cleanup([&] {
    for (const SmallString<128> &p : {in, out, err})
      if (!p.empty())
        llvm::sys::fs::remove(p);
  });
  if (llvm::sys::fs::createTemporaryFile("tessera", "ptx", in) ||
      llvm::sys::fs::createTemporaryFile("tessera", "cubin", out) ||
      llvm::sys::fs::createTemporaryFile("tessera", "log", err))
    return module.emitError() << "cannot create temporary files for ptxas";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in, ec);
    if (ec)
      return module.emitError() << "cannot write " << in << ": "
                                << ec.message();
    os << ptx;
  }
  std::string arch = ("-arch=" + chip).str();
  SmallVector<StringRef> argv = {*ptxas, arch, in, "-o", out};
  std::optional<StringRef> redirects[] = {std::nullopt, err, err};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*ptxas, argv, std::nullopt, redirects,
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                     &message);
  if (rc != 0) {
    auto log = llvm::MemoryBuffer::getFile(err);
    return module.emitError()
           << "ptxas " << arch << " failed"
           << (message.empty() ? "" : ": " + message) << "\n"
           << (log ? (*log)->getBuffer() : StringRef());
  }
  auto cubin = llvm::MemoryBuffer::getFile(out, /*IsText=*/false);
  if (!cubin)
    return module.emitError() << "cannot read the cubin ptxas wrote";
  StringRef bytes = (*cubin)->getBuffer();
  return std::vector<char>(bytes.begin(), bytes.end());
}
} // namespace

FailureOr<rt::GpuProgramImage>
mlir::tessera::gpuProgramImage(ModuleOp compiled, StringRef entry,
                               StringRef chip) {
  func::FuncOp host;
  for (auto fn : compiled.getOps<func::FuncOp>()) {
    if (!fn->hasAttr("tsched.workspace"))
      continue;
    if (!entry.empty() ? fn.getName() == entry : !host)
      host = fn;
    else if (entry.empty())
      return compiled.emitError()
             << "has more than one GPU host program; name the one to run";
  }
  if (!host)
    return compiled.emitError()
           << "has no GPU host program"
           << (entry.empty() ? std::string() : " named @" + entry.str());
  return ImageBuilder(compiled, host).build(chip);
}

FailureOr<rt::GpuProgramImage>
mlir::tessera::compileForGPU(ModuleOp module,
                             const GPUCompileOptions &options) {
  // The chip: sm_<major><minor>, "a" for the arch-specific instructions,
  // 8.0 or newer (the kernels use cp.async, bf16 and ldmatrix).
  if (std::optional<rt::ChipVersion> v = rt::parseChip(options.chip);
      !v || v->major < 8)
    return module.emitError()
           << "the chip '" << options.chip
           << "' is not sm_<major><minor> (with 'a' for arch-specific "
              "code) of compute capability 8.0 or newer, such as sm_80, "
              "sm_90a or sm_100a";
  // The functions autodiff declarations create are functions of their
  // own: expanded first, so that one can be the entry.
  OwningOpRef<ModuleOp> copy = module.clone();
  if (failed(expandAutodiff(*copy)))
    return failure();
  // The entry's signature as written (symbolic dims and all).
  auto signatures = publicSignatures(*copy);
  if (failed(signatures))
    return failure();
  const rt::FunctionSignature *signature = nullptr;
  std::string names;
  for (const rt::FunctionSignature &s : *signatures)
    names += (names.empty() ? "@" : ", @") + s.name;
  for (const rt::FunctionSignature &s : *signatures) {
    if (!options.entry.empty() && s.name != options.entry)
      continue;
    if (signature)
      return module.emitError()
             << "has more than one public function (" << names
             << "); name the one to compile for the GPU";
    signature = &s;
  }
  if (!signature)
    return module.emitError()
           << "has no public function"
           << (options.entry.empty() ? std::string()
                                     : " @" + options.entry + " (it has " +
                                           (names.empty() ? "none" : names) +
                                           ")");
  // Every symbol of the signature needs a size, and only those have one.
  std::set<std::string> symbols;
  for (const auto *specs : {&signature->arguments, &signature->results})
    for (const rt::TensorSpec &t : *specs)
      for (const std::string &d : t.dims) {
        std::string error;
        if (auto e = ::tessera::shape::parseDimExpr(d, error))
          e->collectSymbols(symbols);
      }
  for (const std::string &s : symbols)
    if (!options.dims.count(s))
      return module.emitError()
             << signature->describe() << " has the symbolic dim " << s
             << ", which needs a size for the GPU (the host program takes "
                "static shapes)";
  for (const auto &[s, size] : options.dims)
    if (!symbols.count(s))
      return module.emitError()
             << "a size is given for " << s << ", which is not a dim of "
             << signature->describe();

  std::string tuningText;
  if (!options.tuningFile.empty()) {
    auto file = llvm::MemoryBuffer::getFile(options.tuningFile, true);
    if (!file)
      return module.emitError() << "cannot read the tuning file "
                                << options.tuningFile << ": "
                                << file.getError().message();
    tuningText = (*file)->getBuffer().str();
  }
  // The cache: the key covers everything the program depends on.
  std::string cached;
  if (!options.cacheDirectory.empty()) {
    llvm::SHA256 digest;
    auto add = [&](StringRef part) {
      digest.update(part);
      digest.update(StringRef("\0", 1));
    };
    add("tessera-gpu");
    add(rt::tesseraVersion());
    add(compilerBuild());
    add(options.chip);
    add(options.features);
    add(std::to_string(options.multiprocessors));
    add(options.cubin ? "cubin" : "ptx");
    add("variant " + std::to_string(options.variant));
    add(tuningText);
    add(signature->name);
    for (const auto &[s, size] : options.dims)
      add(s + "=" + std::to_string(size));
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, OpPrintingFlags().enableDebugInfo(true, false));
    add(text);
    cached = options.cacheDirectory + "/" +
             llvm::toHex(digest.final(), /*LowerCase=*/true) + ".tgpu";
    if (llvm::sys::fs::exists(cached)) {
      auto image = rt::GpuProgramImage::load(cached);
      if (image && image->name == signature->name && image->dims == options.dims)
        return std::move(*image);
      // A damaged or foreign entry is compiled again and replaced.
      llvm::errs() << "tessera: replacing the GPU program cache entry "
                   << cached << ": "
                   << (image ? std::string("it holds another function")
                             : image.error().message)
                   << "\n";
    }
  }

  // The entry alone is compiled: the other public functions become
  // private, so those it does not call go away when callees are inlined.
  for (auto fn : copy->getOps<func::FuncOp>())
    if (fn.isPublic() && fn.getName() != signature->name && !fn.isExternal())
      fn.setPrivate();
  std::string graph;
  {
    llvm::raw_string_ostream os(graph);
    copy->print(os);
  }
  PassManager pm(module.getContext());
  GPUPipelineOptions pipeline;
  pipeline.chip = options.chip;
  pipeline.features = options.features;
  pipeline.multiprocessors = options.multiprocessors;
  pipeline.variant = options.variant;
  // The text the key hashed, not the file again (it may have changed
  // since); an empty file tunes nothing.
  pipeline.tuning = tuningText.empty() ? std::string() : options.tuningFile;
  pipeline.tuningText = tuningText;
  for (const auto &[s, size] : options.dims)
    pipeline.dims.push_back(s + "=" + std::to_string(size));
  buildGPUPipeline(pm, pipeline);
  if (failed(pm.run(*copy)))
    return failure();
  auto image = gpuProgramImage(*copy, signature->name, options.chip);
  if (failed(image))
    return failure();
  image->signature = *signature;
  image->dims = options.dims;
  image->graph = std::move(graph);
  if (options.cubin && !image->ptx.empty()) {
    auto cubin = compileCubin(module, image->ptx, options.chip);
    if (failed(cubin))
      return failure();
    image->cubin = std::move(*cubin);
  }
  if (rt::Status st = image->verify(); !st)
    return module.emitError() << "compiles @" << signature->name
                              << " into a program that disagrees with "
                              << st.error().message;
  if (!cached.empty()) {
    // Written under a temporary name and renamed: a reader never sees half
    // a file. A cache that cannot be written only costs the next compile.
    if (std::error_code ec =
            llvm::sys::fs::create_directories(options.cacheDirectory)) {
      llvm::errs() << "tessera: cannot create the cache directory "
                   << options.cacheDirectory << ": " << ec.message() << "\n";
    } else {
      // A name of its own for each writer (threads and processes).
      int fd = -1;
      SmallString<128> temporary;
      if (std::error_code ec = llvm::sys::fs::createUniqueFile(
              cached + ".tmp-%%%%%%%%", fd, temporary)) {
        llvm::errs() << "tessera: cannot store " << cached << ": "
                     << ec.message() << "\n";
      } else {
        llvm::sys::Process::SafelyCloseFileDescriptor(fd);
        if (rt::Status st = image->save(temporary.str().str()); !st) {
          llvm::errs() << "tessera: " << st.error().message << "\n";
          llvm::sys::fs::remove(temporary);
        } else if (std::error_code ec =
                       llvm::sys::fs::rename(temporary, cached)) {
          llvm::errs() << "tessera: cannot store " << cached << ": "
                       << ec.message() << "\n";
          llvm::sys::fs::remove(temporary);
        }
      }
    }
  }
  return image;
}

FailureOr<rt::GpuProgramImage>
mlir::tessera::compileTunedForGPU(ModuleOp module,
                                  const GPUCompileOptions &options, int device,
                                  int reps, std::string *report) {
  if (options.tuningFile.empty())
    return module.emitError() << "autotuning needs a tuning file to keep its "
                                 "choices in";
  auto table = rt::TuningTable::load(options.tuningFile);
  if (!table)
    return module.emitError() << table.error().message;
  // A first tuning starts the file (the compile below reads it).
  if (!llvm::sys::fs::exists(options.tuningFile))
    if (rt::Status st = table->save(options.tuningFile); !st)
      return module.emitError() << st.error().message;
  auto image = compileForGPU(module, options);
  if (failed(image))
    return failure();
  // Tuned already when the file knows every product of the program and
  // its choice was built (a schedule no longer in the product's space is
  // stale: the product is tuned again). The first launch of a key records
  // the product's whole schedule.
  llvm::StringSet<> seen;
  bool known = llvm::all_of(image->steps, [&](const rt::GpuProgramImage::Step &s) {
    if (s.tuning.empty() || !seen.insert(s.tuning).second)
      return true;
    auto it = table->entries.find(s.tuning);
    return it != table->entries.end() && it->second.schedule == s.schedule;
  });
  if (known)
    return image;
  // One program per candidate rank of the products' spaces, timed on the
  // device; the file gains each product's fastest schedule.
  std::vector<rt::GpuProgramImage> variants;
  for (int64_t v = 0; v < int64_t(kGemmAutotuneSpace); ++v) {
    GPUCompileOptions each = options;
    each.tuningFile.clear();
    each.variant = v;
    each.cubin = false;
    auto compiled = compileForGPU(module, each);
    if (failed(compiled))
      return failure();
    variants.push_back(std::move(*compiled));
  }
  auto tuned = rt::cuda::tunePrograms(variants, device, reps);
  if (!tuned)
    return module.emitError() << "autotuning @" << image->name << ": "
                              << tuned.error().message;
  if (report)
    *report = tuned->str();
  table->merge(*tuned);
  if (rt::Status st = table->save(options.tuningFile); !st)
    return module.emitError() << st.error().message;
  return compileForGPU(module, options);
}
