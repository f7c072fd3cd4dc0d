//===- HostProgram.cpp - The host program of a function of GPU groups ----===//
//
// -tessera-gpu-host-program: after -tessera-gpu-generate-kernels, each
// function of fusion groups becomes the program the host runs, on memrefs:
// a launch of its kernel for each group, views for reshapes, the
// temporaries in one workspace whose offsets are planned from the
// launches that write and read them, constants as memref.globals, and the
// results in buffers of their own.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TSched/IR/TSched.h"
#include "tessera/Dialect/TSched/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tessera::tsched {
#define GEN_PASS_DEF_TSCHEDGPUHOSTPROGRAM
#define GEN_PASS_DEF_TSCHEDGPUOUTLINEKERNELS
#include "tessera/Dialect/TSched/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tsched

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::tsched;

namespace {

namespace tg = mlir::tessera::tgraph;

/// Workspace buffers start at multiples of this: what cudaMalloc gives,
/// and more than TMA and vector loads need.
constexpr int64_t kAlignment = 256;

/// The memref a tensor lives in on the device: the same shape, i1 stored
/// as i8 (as kernels store it).
FailureOr<MemRefType> deviceType(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return failure();
  Type elt = t.getElementType();
  if (elt.isInteger(1))
    elt = IntegerType::get(type.getContext(), 8);
  return MemRefType::get(t.getShape(), elt);
}

int64_t byteSize(MemRefType type) {
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * llvm::divideCeil(bits, 8);
}

/// A reshape that keeps every element in place: a `tgraph.reshape`, or a
/// broadcast of a value to a shape with as many elements that keeps its
/// dims in order (it only adds dims of one).
bool isView(Operation *op) {
  if (isa<tg::ReshapeOp>(op))
    return true;
  auto bcast = dyn_cast<tg::BroadcastInDimOp>(op);
  if (!bcast)
    return false;
  auto in = dyn_cast<RankedTensorType>(bcast.getX().getType());
  auto out = dyn_cast<RankedTensorType>(bcast.getType());
  return in && out && in.hasStaticShape() && out.hasStaticShape() &&
         in.getNumElements() == out.getNumElements() &&
         llvm::is_sorted(bcast.getBroadcastDimensions());
}

/// A layout group that only reshapes its input.
bool isViewGroup(GroupOp group) {
  Block &body = group.getBodyBlock();
  if (group.getKind() != GroupKind::Layout ||
      !llvm::hasSingleElement(body.without_terminator()) ||
      group.getNumResults() != 1)
    return false;
  Operation &op = body.front();
  return isView(&op) && op.getOperand(0) == body.getArgument(0);
}

class HostBuilder {
public:
  HostBuilder(func::FuncOp fn, ModuleOp module, SymbolTable &symbols)
      : fn(fn), module(module), symbols(symbols), b(fn.getContext()) {}

  LogicalResult run();

private:
  /// Where a value's memory comes from.
  enum class Root { Argument, Workspace, Result, Global };
  struct Storage {
    Root root;
    /// The op that makes the buffer (a tsched.buffer or memref.alloc
    /// placeholder, replaced once the workspace is planned), or null for
    /// arguments and globals.
    Operation *def = nullptr;
    int64_t bytes = 0;
    /// Launch indices of its first write and last read.
    int64_t first = 0, last = 0;
  };

  LogicalResult convertOp(Operation *op);
  LogicalResult launch(GroupOp group);
  LogicalResult launchAll(GroupOp group, ArrayAttr launchList);
  memref::GlobalOp global(tg::ConstantOp op);
  /// Storage of the buffer a (view of a) memref `v` lives in.
  Storage *storageOf(Value v) {
    auto it = rootOf.find(v);
    return it == rootOf.end() ? nullptr : &storages[it->second];
  }
  Value newBuffer(MemRefType type, Location loc);
  /// `src` under `type` (same memory, same storage); `src` itself if it
  /// has that type.
  Value view(Value src, MemRefType type, Location loc) {
    if (src.getType() == type)
      return src;
    Value &v = views[{src, type}];
    if (!v) {
      v = ViewOp::create(b, loc, type, src);
      rootOf[v] = rootOf.lookup(src);
    }
    return v;
  }
  LogicalResult finishResults(func::ReturnOp ret);
  void planWorkspace();

  func::FuncOp fn;
  ModuleOp module;
  SymbolTable &symbols;
  OpBuilder b;
  func::FuncOp host;
  IRMapping map;
  /// Each host value's storage (views share their source's).
  DenseMap<Value, unsigned> rootOf;
  /// The views made so far, reused by later launches.
  DenseMap<std::pair<Value, Type>, Value> views;
  /// Workspace buffers returned as results: the memref.alloc that replaced
  /// each (the old value is only a key).
  DenseMap<Value, Value> promoted;
  /// The buffer a group saved with each of its results (`tsched.saved`),
  /// keyed by the result (a Graph IR value).
  DenseMap<Value, Value> saved;
  SmallVector<Storage> storages;
  int64_t launches = 0;
  int64_t globals = 0;
  int64_t workspaceBytes = 0;
};

LogicalResult HostBuilder::run() {
  FunctionType type = fn.getFunctionType();
  SmallVector<Type> inputs, outputs;
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    FailureOr<MemRefType> m = deviceType(t);
    if (failed(m))
      return fn.emitError() << "argument " << i << " is " << t
                            << "; the GPU host program takes tensors of "
                               "static shape (give symbolic dims sizes: "
                               "the pipeline's dims=NAME=SIZE)";
    inputs.push_back(*m);
  }
  for (auto [i, t] : llvm::enumerate(type.getResults())) {
    FailureOr<MemRefType> m = deviceType(t);
    if (failed(m))
      return fn.emitError() << "result " << i << " is " << t
                            << "; the GPU host program returns tensors of "
                               "static shape";
    outputs.push_back(*m);
  }
  b.setInsertionPoint(fn);
  host = func::FuncOp::create(b, fn.getLoc(), fn.getName(),
                              b.getFunctionType(inputs, outputs));
  host.setVisibility(fn.getVisibility());
  Block *entry = host.addEntryBlock();
  for (auto [old, arg] : llvm::zip(fn.getArguments(), entry->getArguments())) {
    map.map(old, arg);
    storages.push_back(Storage{Root::Argument, nullptr, 0, 0, 0});
    rootOf[arg] = storages.size() - 1;
  }
  b.setInsertionPointToStart(entry);
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "has " << fn.getBody().getBlocks().size()
                          << " blocks; the GPU host program is built from "
                             "one";
  for (Operation &op : fn.getBody().front())
    if (failed(convertOp(&op)))
      return failure();
  planWorkspace();
  host->setAttr("tsched.workspace", b.getI64IntegerAttr(workspaceBytes));
  symbols.erase(fn);
  return success();
}

Value HostBuilder::newBuffer(MemRefType type, Location loc) {
  // Placed at offset 0 for now; planWorkspace() sets the offset.
  auto buffer = BufferOp::create(b, loc, type, b.getI64IntegerAttr(0));
  storages.push_back(
      Storage{Root::Workspace, buffer, byteSize(type), launches, launches});
  rootOf[buffer] = storages.size() - 1;
  return buffer;
}

memref::GlobalOp HostBuilder::global(tg::ConstantOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  MemRefType mtype = *deviceType(type);
  auto value = cast<ElementsAttr>(op.getValue());
  Attribute init = value;
  if (type.getElementType().isInteger(1)) {
    // Stored as bytes, as on the device.
    auto dense = cast<DenseElementsAttr>(value);
    SmallVector<APInt> bytes;
    for (bool v : dense.getValues<bool>())
      bytes.push_back(APInt(8, v ? 1 : 0));
    init = DenseElementsAttr::get(
        RankedTensorType::get(type.getShape(), mtype.getElementType()),
        bytes);
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(host);
  std::string name =
      (host.getName() + "_constant" + std::to_string(globals++)).str();
  auto g = memref::GlobalOp::create(
      b, op.getLoc(), name, b.getStringAttr("private"), mtype, init,
      /*constant=*/true, /*alignment=*/b.getI64IntegerAttr(kAlignment));
  symbols.insert(g);
  return g;
}

LogicalResult HostBuilder::convertOp(Operation *op) {
  Location loc = op->getLoc();
  if (auto ret = dyn_cast<func::ReturnOp>(op))
    return finishResults(ret);
  // What the groups compute themselves (an iota, a broadcast they read
  // lazily) is left outside them unread.
  if (op->use_empty() && isMemoryEffectFree(op))
    return success();
  if (auto group = dyn_cast<GroupOp>(op); group && !isViewGroup(group))
    return launch(group);
  if (isView(op) || isa<GroupOp>(op)) {
    // A reshape, outside groups or as a layout group of its own.
    Value in = isa<GroupOp>(op) ? cast<GroupOp>(op).getInputs()[0]
                                : op->getOperand(0);
    FailureOr<MemRefType> type = deviceType(op->getResult(0).getType());
    if (failed(type))
      return op->emitError() << "has a result of dynamic shape; the GPU host "
                                "program's shapes are static";
    map.map(op->getResult(0), view(map.lookup(in), *type, loc));
    return success();
  }
  if (auto constant = dyn_cast<tg::ConstantOp>(op)) {
    FailureOr<MemRefType> type = deviceType(constant.getType());
    if (failed(type) || !isa<ElementsAttr>(constant.getValue()))
      return op->emitError() << "is a constant the GPU host program cannot "
                                "hold: a tensor of static shape is expected";
    memref::GlobalOp g = global(constant);
    Value v = memref::GetGlobalOp::create(b, loc, *type, g.getSymName());
    storages.push_back(Storage{Root::Global, nullptr, 0, 0, 0});
    rootOf[v] = storages.size() - 1;
    map.map(constant.getResult(), v);
    return success();
  }
  return op->emitError() << "'" << op->getName()
                         << "' is in no fusion group; the GPU host program "
                            "launches groups";
}

LogicalResult HostBuilder::launch(GroupOp group) {
  Location loc = group.getLoc();
  if (auto list = group->getAttrOfType<ArrayAttr>("tsched.launches"))
    return launchAll(group, list);
  auto kernel = group->getAttrOfType<FlatSymbolRefAttr>("tsched.kernel");
  auto grid = group->getAttrOfType<DenseI64ArrayAttr>("tsched.grid");
  auto views = group->getAttrOfType<ArrayAttr>("tsched.views");
  if (!kernel || !grid || !views) {
    // Named by its ops: what the user wrote, at the line that wrote it.
    llvm::SetVector<StringRef> names;
    for (Operation &op : group.getBodyBlock().without_terminator())
      names.insert(op.getName().getStringRef());
    std::string ops;
    for (StringRef name : names.getArrayRef().take_front(3))
      ops += (ops.empty() ? "'" : ", '") + name.str() + "'";
    if (names.size() > 3)
      ops += " and " + std::to_string(names.size() - 3) + " more";
    InFlightDiagnostic diag =
        group.emitOpError()
        << "of kind '" << stringifyGroupKind(group.getKind()) << "' (" << ops
        << ") has no generated kernel: ";
    if (auto why = group->getAttrOfType<StringAttr>("tsched.no_kernel"))
      diag << why.getValue();
    else
      diag << "no GPU lowering for it yet (-tessera-gpu-generate-kernels "
              "generates them for row, contraction, reduction, attention "
              "and layout groups)";
    return diag;
  }
  size_t count = group.getInputs().size() + group.getNumResults();
  if (views.size() != count)
    return group.emitOpError()
           << "has " << views.size() << " tsched.views for its " << count
           << " inputs and results";
  SmallVector<Value> args;
  auto viewAs = [&](Value v, Attribute shapeAttr, size_t i) -> FailureOr<Value> {
    auto shape = dyn_cast<DenseI64ArrayAttr>(shapeAttr);
    auto type = cast<MemRefType>(v.getType());
    if (!shape)
      return group.emitOpError() << "tsched.views entry " << i
                                 << " is not an array of dims";
    if (shape.asArrayRef() == type.getShape())
      return v;
    auto viewType = MemRefType::get(shape.asArrayRef(), type.getElementType());
    if (viewType.getNumElements() != type.getNumElements())
      return group.emitOpError()
             << "reads argument " << i << " of type " << type << " as "
             << viewType << ", which has another number of elements";
    return view(v, viewType, loc);
  };
  for (auto [i, input] : llvm::enumerate(group.getInputs())) {
    Value v = map.lookup(input);
    if (!v)
      return group.emitOpError() << "reads input " << i
                                 << ", which the host program has not made";
    if (Storage *s = storageOf(v))
      s->last = launches;
    FailureOr<Value> a = viewAs(v, views[i], i);
    if (failed(a))
      return failure();
    args.push_back(*a);
  }
  for (auto [i, result] : llvm::enumerate(group.getResults())) {
    FailureOr<MemRefType> type = deviceType(result.getType());
    if (failed(type))
      return group.emitOpError() << "result " << i << " is "
                                 << result.getType()
                                 << "; a tensor of static shape is expected";
    Value buffer = newBuffer(*type, loc);
    map.map(result, buffer);
    size_t at = group.getInputs().size() + i;
    FailureOr<Value> a = viewAs(buffer, views[at], at);
    if (failed(a))
      return failure();
    args.push_back(*a);
  }
  // An empty grid (no rows) computes nothing.
  if (llvm::all_of(grid.asArrayRef(), [](int64_t g) { return g > 0; })) {
    auto launch = LaunchOp::create(b, loc, SymbolRefAttr::get(kernel.getAttr()),
                                   grid, args, ArrayAttr());
    // The schedule the kernel was generated with, for the program file.
    if (Attribute schedule = group->getAttr("tsched.schedule"))
      launch->setAttr("tsched.schedule", schedule);
    if (Attribute key = group->getAttr("tsched.tuning_key"))
      launch->setAttr("tsched.tuning", key);
  }
  ++launches;
  return success();
}

LogicalResult HostBuilder::launchAll(GroupOp group, ArrayAttr launchList) {
  Location loc = group.getLoc();
  SmallVector<Value> inputs, results, scratch;
  for (auto [i, input] : llvm::enumerate(group.getInputs())) {
    Value v = map.lookup(input);
    if (!v)
      return group.emitOpError() << "reads input " << i
                                 << ", which the host program has not made";
    inputs.push_back(v);
  }
  for (auto [i, result] : llvm::enumerate(group.getResults())) {
    FailureOr<MemRefType> type = deviceType(result.getType());
    if (failed(type))
      return group.emitOpError() << "result " << i << " is "
                                 << result.getType()
                                 << "; a tensor of static shape is expected";
    results.push_back(newBuffer(*type, loc));
    map.map(result, results.back());
  }
  // A type for each entry, or a unit where there is none.
  auto buffers = [&](StringRef name, size_t count,
                     SmallVectorImpl<Value> &into) -> LogicalResult {
    auto list = group->getAttrOfType<ArrayAttr>(name);
    if (!list)
      return success();
    if (count != size_t(-1) && list.size() != count)
      return group.emitOpError()
             << "has " << list.size() << " " << name << " entries for its "
             << count << " results";
    for (Attribute a : list) {
      if (isa<UnitAttr>(a)) {
        into.push_back(Value());
        continue;
      }
      auto t = dyn_cast<TypeAttr>(a);
      auto m = t ? dyn_cast<MemRefType>(t.getValue()) : MemRefType();
      if (!m || !m.hasStaticShape() || !m.getLayout().isIdentity())
        return group.emitOpError()
               << name << " entry " << a
               << " is not a contiguous memref type of static shape";
      into.push_back(newBuffer(m, loc));
    }
    return success();
  };
  SmallVector<Value> savedHere;
  if (failed(buffers("tsched.saved", group.getNumResults(), savedHere)) ||
      failed(buffers("tsched.scratch", size_t(-1), scratch)))
    return failure();
  for (auto [result, buffer] : llvm::zip(group.getResults(), savedHere))
    if (buffer)
      saved[result] = buffer;

  for (size_t n = 0; n < launchList.size(); ++n) {
    auto dict = dyn_cast<DictionaryAttr>(launchList[n]);
    auto kernel = dict ? dict.getAs<FlatSymbolRefAttr>("kernel")
                       : FlatSymbolRefAttr();
    auto grid = dict ? dict.getAs<DenseI64ArrayAttr>("grid")
                     : DenseI64ArrayAttr();
    auto refs = dict ? dict.getAs<ArrayAttr>("args") : ArrayAttr();
    auto scalars = dict ? dict.getAs<ArrayAttr>("scalars") : ArrayAttr();
    if (!kernel || !grid || !refs)
      return group.emitOpError()
             << "tsched.launches entry " << n
             << " is not {kernel = @symbol, grid = array<i64>, args = [...]}";
    SmallVector<Value> args;
    for (size_t i = 0; i < refs.size(); ++i) {
      auto r = dyn_cast<DenseI64ArrayAttr>(refs[i]);
      if (!r || r.size() < 2)
        return group.emitOpError()
               << "launch " << n << " argument " << i
               << " is not array<i64: kind, index, dims...>";
      int64_t kind = r[0], index = r[1];
      ArrayRef<int64_t> dims = r.asArrayRef().drop_front(2);
      auto pick = [&](ArrayRef<Value> from, StringRef what) -> Value {
        if (index < 0 || size_t(index) >= from.size() || !from[index]) {
          group.emitOpError() << "launch " << n << " argument " << i
                              << " names " << what << " " << index
                              << ", which it does not have";
          return Value();
        }
        return from[index];
      };
      Value v;
      switch (kind) {
      case 0:
        v = pick(inputs, "input");
        break;
      case 1:
        v = pick(results, "result");
        break;
      case 2:
        v = pick(savedHere, "a buffer saved with result");
        break;
      case 3: {
        if (index < 0 || size_t(index) >= inputs.size())
          return group.emitOpError() << "launch " << n << " argument " << i
                                     << " names input " << index
                                     << ", which it does not have";
        v = saved.lookup(group.getInputs()[index]);
        if (!v)
          return group.emitOpError()
                 << "launch " << n << " argument " << i
                 << " reads the buffer saved with input " << index
                 << ", which the group that made it did not save";
        break;
      }
      case 4:
        v = pick(scratch, "scratch buffer");
        break;
      default:
        return group.emitOpError()
               << "launch " << n << " argument " << i << " is of kind "
               << kind << "; kinds are 0 input, 1 result, 2 saved with a "
               << "result, 3 saved with an input, 4 scratch";
      }
      if (!v)
        return failure();
      if (Storage *s = storageOf(v))
        s->last = launches;
      auto type = cast<MemRefType>(v.getType());
      auto viewType = MemRefType::get(dims, type.getElementType());
      if (viewType.getNumElements() != type.getNumElements())
        return group.emitOpError()
               << "launch " << n << " reads argument " << i << " of type "
               << type << " as " << viewType
               << ", which has another number of elements";
      args.push_back(view(v, viewType, loc));
    }
    if (llvm::all_of(grid.asArrayRef(), [](int64_t g) { return g > 0; })) {
      auto launch = LaunchOp::create(
          b, loc, SymbolRefAttr::get(kernel.getAttr()), grid, args, scalars);
      if (auto schedule = dict.getAs<StringAttr>("schedule"))
        launch->setAttr("tsched.schedule", schedule);
      if (auto key = dict.getAs<StringAttr>("tuning"))
        launch->setAttr("tsched.tuning", key);
    }
    ++launches;
  }
  return success();
}

LogicalResult HostBuilder::finishResults(func::ReturnOp ret) {
  SmallVector<Value> results;
  llvm::SmallDenseSet<unsigned> returned;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Value m = map.lookup(v);
    if (!m)
      return ret.emitError() << "returns value " << i
                             << ", which the host program has not made";
    // A buffer already turned into a result.
    if (Value alloc = promoted.lookup(m))
      m = alloc;
    unsigned root = rootOf.lookup(m);
    Storage &s = storages[root];
    // A temporary returned once becomes a buffer of its own; an
    // argument, a constant or a value returned twice is copied into one.
    if (s.root == Root::Workspace && returned.insert(root).second) {
      auto buffer = cast<BufferOp>(s.def);
      bool whole = m == buffer.getResult();
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(buffer);
      Value alloc = memref::AllocOp::create(b, buffer.getLoc(),
                                            buffer.getType());
      buffer.getResult().replaceAllUsesWith(alloc);
      promoted[buffer.getResult()] = alloc;
      rootOf[alloc] = root;
      buffer.erase();
      s.root = Root::Result;
      s.def = alloc.getDefiningOp();
      results.push_back(whole ? alloc : m);
      continue;
    }
    auto type = cast<MemRefType>(m.getType());
    Value alloc = memref::AllocOp::create(b, ret.getLoc(), type);
    memref::CopyOp::create(b, ret.getLoc(), m, alloc);
    results.push_back(alloc);
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  return success();
}

void HostBuilder::planWorkspace() {
  // Largest first, each at the lowest aligned offset where it overlaps no
  // placed buffer that is live at the same time (a launch's inputs and
  // outputs are live together).
  SmallVector<unsigned> order;
  for (auto [i, s] : llvm::enumerate(storages))
    if (s.root == Root::Workspace)
      order.push_back(i);
  // Ties keep program order (the index breaks them): the plan is the
  // same on every compiler.
  llvm::sort(order, [&](unsigned x, unsigned y) {
    if (storages[x].bytes != storages[y].bytes)
      return storages[x].bytes > storages[y].bytes;
    return x < y;
  });
  struct Placed {
    int64_t offset, end, first, last;
  };
  SmallVector<Placed> placed;
  for (unsigned i : order) {
    Storage &s = storages[i];
    int64_t size = llvm::alignTo(std::max<int64_t>(s.bytes, 1), kAlignment);
    SmallVector<std::pair<int64_t, int64_t>> busy;
    for (const Placed &p : placed)
      if (p.first <= s.last && s.first <= p.last)
        busy.push_back({p.offset, p.end});
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [start, end] : busy) {
      if (offset + size <= start)
        break;
      offset = std::max(offset, end);
    }
    placed.push_back({offset, offset + size, s.first, s.last});
    cast<BufferOp>(s.def).setOffset(offset);
    workspaceBytes = std::max(workspaceBytes, offset + size);
  }
}

struct TSchedGPUHostProgramPass
    : mlir::tessera::tsched::impl::TSchedGPUHostProgramBase<
          TSchedGPUHostProgramPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> fns;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn->hasAttr("ttile.kernel") && !fn.isExternal())
        fns.push_back(fn);
    for (func::FuncOp fn : fns)
      if (failed(HostBuilder(fn, module, symbols).run()))
        return signalPassFailure();
  }
};

struct TSchedGPUOutlineKernelsPass
    : mlir::tessera::tsched::impl::TSchedGPUOutlineKernelsBase<
          TSchedGPUOutlineKernelsPass> {
  using TSchedGPUOutlineKernelsBase::TSchedGPUOutlineKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("ttile.kernel"))
        kernels.push_back(fn);
    if (kernels.empty())
      return;
    SymbolTable symbols(module);
    auto device = dyn_cast_or_null<ModuleOp>(symbols.lookup(moduleName));
    if (!device) {
      if (symbols.lookup(moduleName)) {
        module.emitError() << "has a symbol @" << moduleName
                           << " that is not a module; the kernels' device "
                              "module takes that name";
        return signalPassFailure();
      }
      OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
      device = ModuleOp::create(b, module.getLoc(), StringRef(moduleName));
      symbols.insert(device);
    }
    SymbolTable deviceSymbols(device);
    auto root = StringAttr::get(&getContext(), moduleName);
    for (func::FuncOp fn : kernels) {
      StringAttr name = fn.getSymNameAttr();
      fn->moveBefore(device.getBody(), device.getBody()->end());
      if (deviceSymbols.lookup(name)) {
        fn.emitError() << "is a kernel named like one already in @"
                       << moduleName;
        return signalPassFailure();
      }
      deviceSymbols.insert(fn);
      auto nested =
          SymbolRefAttr::get(root, {FlatSymbolRefAttr::get(name)});
      module.walk([&](LaunchOp launch) {
        if (launch.getKernel() == FlatSymbolRefAttr::get(name))
          launch.setKernelAttr(nested);
      });
    }
  }
};

} // namespace
