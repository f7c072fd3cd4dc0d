//===- GPUCompiler.cpp - Graph IR to a runnable GPU program ---------------===//

#include "tessera/Execution/GPUCompiler.h"

#include "tessera/Dialect/TGraph/IR/TypeInference.h"
#include "tessera/Dialect/TSched/IR/TSched.h"
#include "tessera/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"

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
  OwningOpRef<ModuleOp> copy = module.clone();
  PassManager pm(module.getContext());
  GPUPipelineOptions pipeline;
  pipeline.chip = options.chip;
  pipeline.features = options.features;
  pipeline.multiprocessors = options.multiprocessors;
  buildGPUPipeline(pm, pipeline);
  if (failed(pm.run(*copy)))
    return failure();
  return gpuProgramImage(*copy, options.entry, options.chip);
}
