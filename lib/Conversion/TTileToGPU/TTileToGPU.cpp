//===- TTileToGPU.cpp - Tile IR kernels to GPU dialect kernels ------------===//
//
// The pass, and the memory side of KernelLowering: loads and stores with
// vector accesses where aligned and in bounds.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_CONVERTTTILETOGPU
#include "tessera/Conversion/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;
using namespace mlir::tessera::ttile::detail;

/// Elements per vector access: a thread's elements along the memref's
/// last dim, when that dim has unit stride and its registers are adjacent,
/// up to 16 bytes.
int64_t KernelLowering::vectorWidth(const Distribution &d, MemRefType type) {
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  if (bits < 8 || bits % 8)
    return 1;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return 1;
  return std::min<int64_t>(runAlong(d, d.rank() - 1), 128 / bits);
}

KernelLowering::Access KernelLowering::describeMemref(Location loc, Value mem,
                                                      MemRefType type,
                                                      bool vec) {
  Access a;
  for (int64_t i = 0; i < type.getRank(); ++i)
    a.sizes.push_back(memref::DimOp::create(b, loc, mem, i));
  if (vec) {
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, mem);
    a.offset = meta.getOffset();
    a.strides.assign(meta.getStrides().begin(), meta.getStrides().end());
    a.alignedBase = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, mem);
  }
  return a;
}

/// Whether every vector access of a tile at `start` is aligned: a
/// thread's runs of `v` elements start at coordinates that are multiples
/// of `v` along the last dim (runAlong), so it suffices that the first
/// element's address and the other dims' strides are multiples of `v`
/// elements. Checked once per access op.
Value KernelLowering::allAligned(Location loc, const Access &a,
                                 ValueRange start, int64_t v,
                                 int64_t elementBytes) {
  Value first =
      arith::AddIOp::create(b, loc, a.offset, map.lookup(start.back()));
  Value addr = arith::AddIOp::create(
      b, loc, a.alignedBase,
      arith::MulIOp::create(b, loc, first, index(elementBytes)));
  auto multiple = [&](Value x, int64_t m) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                 arith::RemUIOp::create(b, loc, x, index(m)),
                                 index(0));
  };
  SmallVector<Value> conds = {multiple(addr, v * elementBytes)};
  for (Value stride : ArrayRef<Value>(a.strides).drop_back())
    conds.push_back(multiple(stride, v));
  return allOf(loc, conds);
}

/// Memory coordinates of register `r`'s element: start + coordinate.
SmallVector<Value> KernelLowering::memCoords(Location loc,
                                             const Distribution &d,
                                             ArrayRef<Value> bases,
                                             ValueRange start, int64_t r) {
  SmallVector<Value> coords;
  for (unsigned i = 0; i < d.rank(); ++i)
    coords.push_back(arith::AddIOp::create(b, loc, map.lookup(start[i]),
                                           coord(loc, d, bases, r, i)));
  return coords;
}

/// Conditions for the element at `coords` + `extra` along the last dim.
Value KernelLowering::inBounds(Location loc, const Access &a,
                               ArrayRef<Value> coords, int64_t extra) {
  SmallVector<Value> conds;
  for (auto [i, c] : llvm::enumerate(coords)) {
    Value x = c;
    if (extra && i + 1 == coords.size())
      x = arith::AddIOp::create(b, loc, c, index(extra));
    conds.push_back(lessThan(loc, x, a.sizes[i]));
  }
  return allOf(loc, conds);
}

LogicalResult KernelLowering::lowerLoad(LoadOp op) {
  if (isa_and_nonnull<SharedAttr>(op.getType().getEncoding()))
    return lowerSharedLoad(op);
  Location loc = op.getLoc();
  auto d = dist(op, op.getType());
  if (failed(d))
    return failure();
  if (op.getMask() &&
      op.getMask().getType() != op.getType().clone(b.getI1Type()))
    return op.emitError("the mask's layout differs from the tile's (run "
                        "-tessera-ttile-assign-layouts)");
  Value mem = map.lookup(op.getSource());
  auto type = cast<MemRefType>(mem.getType());
  Type elt = type.getElementType();
  int64_t v = vectorWidth(*d, type);
  int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
  Access acc = describeMemref(loc, mem, type, v > 1);
  Value alignedAll =
      v > 1 ? allAligned(loc, acc, op.getIndices(), v, bytes) : Value();
  SmallVector<Value> bases = threadBases(loc, *d);
  Value pad = scalarConstant(loc, elt, op.getPaddingAttr());
  Regs mask = op.getMask() ? tiles.lookup(op.getMask()) : Regs();
  Regs out(d->numRegs());
  auto scalarLoad = [&](ArrayRef<Value> coords, Value cond) -> Value {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{elt}, cond, true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    scf::YieldOp::create(
        b, loc, ValueRange{memref::LoadOp::create(b, loc, mem, coords)});
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    scf::YieldOp::create(b, loc, ValueRange{pad});
    return ifOp.getResult(0);
  };
  for (int64_t r = 0, n = d->numRegs(); r < n; r += v) {
    SmallVector<Value> coords = memCoords(loc, *d, bases, op.getIndices(), r);
    SmallVector<Value> conds = {inBounds(loc, acc, coords, v - 1)};
    for (int64_t e = 0; e < v && !mask.empty(); ++e)
      conds.push_back(mask[r + e]);
    if (v == 1) {
      out[r] = scalarLoad(coords, allOf(loc, conds));
      continue;
    }
    conds.push_back(alignedAll);
    auto vecType = VectorType::get({v}, elt);
    auto ifOp =
        scf::IfOp::create(b, loc, TypeRange{vecType}, allOf(loc, conds), true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      Value fast = vector::LoadOp::create(b, loc, vecType, mem, coords, false,
                                          llvm::Align(v * bytes));
      scf::YieldOp::create(b, loc, fast);
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      SmallVector<Value> elems;
      for (int64_t e = 0; e < v; ++e) {
        SmallVector<Value> c = coords;
        c.back() = arith::AddIOp::create(b, loc, c.back(), index(e));
        SmallVector<Value> ec = {inBounds(loc, acc, c, 0)};
        if (!mask.empty())
          ec.push_back(mask[r + e]);
        elems.push_back(scalarLoad(c, allOf(loc, ec)));
      }
      scf::YieldOp::create(
          b, loc,
          ValueRange{vector::FromElementsOp::create(b, loc, vecType, elems)});
    }
    for (int64_t e = 0; e < v; ++e)
      out[r + e] =
          vector::ExtractOp::create(b, loc, ifOp.getResult(0), int64_t(e));
  }
  tiles[op.getResult()] = std::move(out);
  return success();
}

LogicalResult KernelLowering::lowerStore(StoreOp op) {
  Location loc = op.getLoc();
  auto valueType = cast<RankedTensorType>(op.getValue().getType());
  auto d = dist(op, valueType);
  if (failed(d))
    return failure();
  if (op.getMask() && op.getMask().getType() != valueType.clone(b.getI1Type()))
    return op.emitError("the mask's layout differs from the tile's (run "
                        "-tessera-ttile-assign-layouts)");
  Value mem = map.lookup(op.getDest());
  auto type = cast<MemRefType>(mem.getType());
  Type elt = type.getElementType();
  int64_t v = vectorWidth(*d, type);
  int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
  Access acc = describeMemref(loc, mem, type, v > 1);
  Value alignedAll =
      v > 1 ? allAligned(loc, acc, op.getIndices(), v, bytes) : Value();
  SmallVector<Value> bases = threadBases(loc, *d);
  Regs vals = tiles.lookup(op.getValue());
  Regs mask = op.getMask() ? tiles.lookup(op.getMask()) : Regs();
  auto scalarStore = [&](Value val, ArrayRef<Value> coords, Value cond) {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{}, cond, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    memref::StoreOp::create(b, loc, val, mem, coords);
  };
  for (int64_t r = 0, n = d->numRegs(); r < n; r += v) {
    SmallVector<Value> coords = memCoords(loc, *d, bases, op.getIndices(), r);
    SmallVector<Value> conds = {inBounds(loc, acc, coords, v - 1)};
    for (int64_t e = 0; e < v && !mask.empty(); ++e)
      conds.push_back(mask[r + e]);
    if (v == 1) {
      scalarStore(vals[r], coords, allOf(loc, conds));
      continue;
    }
    conds.push_back(alignedAll);
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{}, allOf(loc, conds), true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    auto vecType = VectorType::get({v}, elt);
    Value vec = vector::FromElementsOp::create(
        b, loc, vecType, ArrayRef<Value>(vals).slice(r, v));
    vector::StoreOp::create(b, loc, vec, mem, coords, false,
                            llvm::Align(v * bytes));
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    for (int64_t e = 0; e < v; ++e) {
      SmallVector<Value> c = coords;
      c.back() = arith::AddIOp::create(b, loc, c.back(), index(e));
      SmallVector<Value> ec = {inBounds(loc, acc, c, 0)};
      if (!mask.empty())
        ec.push_back(mask[r + e]);
      scalarStore(vals[r + e], c, allOf(loc, ec));
    }
  }
  return success();
}

namespace {

/// Names the global that holds a kernel's dynamic shared memory bytes.
constexpr llvm::StringLiteral kDynamicSharedPrefix = "tessera_dynamic_smem_";
/// Names the global that describes a warp-specialized kernel's launch.
constexpr llvm::StringLiteral kTmaPrefix = "tessera_tma_";

/// Adds `contract` to the fastmath flags of the kernel's float arithmetic:
/// LLVM may then fuse a multiply that feeds an add into one fma (without
/// it, NVPTX prints `mul.rn`/`add.rn`, which ptxas must not fuse either).
static void allowContraction(gpu::GPUFuncOp kernel) {
  MLIRContext *ctx = kernel.getContext();
  kernel.walk([&](arith::ArithFastMathInterface op) {
    arith::FastMathFlagsAttr attr = op.getFastMathFlagsAttr();
    arith::FastMathFlags flags =
        attr ? attr.getValue() : arith::FastMathFlags::none;
    op->setAttr(op.getFastMathAttrName(),
                arith::FastMathFlagsAttr::get(
                    ctx, flags | arith::FastMathFlags::contract));
  });
}

struct ConvertTTileToGPUPass
    : tessera::impl::ConvertTTileToGPUBase<ConvertTTileToGPUPass> {
  using ConvertTTileToGPUBase::ConvertTTileToGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("ttile.kernel") && !fn.isExternal())
        kernels.push_back(fn);
    if (kernels.empty())
      return;
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    gpu::GPUModuleOp gpuModule;
    for (auto m : module.getOps<gpu::GPUModuleOp>())
      if (m.getName() == moduleName)
        gpuModule = m;
    if (!gpuModule)
      gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), moduleName);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    for (func::FuncOp fn : kernels) {
      b.setInsertionPointToEnd(gpuModule.getBody());
      auto kernel = gpu::GPUFuncOp::create(b, fn.getLoc(), fn.getName(),
                                           fn.getFunctionType());
      kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                      b.getUnitAttr());
      int32_t threads = int32_t(32 * kernelNumWarps(fn));
      kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({threads, 1, 1}));
      KernelLowering lowering(fn, kernel, tma);
      if (failed(lowering.run()))
        return signalPassFailure();
      if (fpContract)
        allowContraction(kernel);
      if (lowering.isSpecialized()) {
        SmallVector<int32_t> record = lowering.launchRecord();
        kernel.setKnownBlockSizeAttr(
            b.getDenseI32ArrayAttr({threads + record[1], 1, 1}));
        // One block an SM at least (.minnctapersm 1): ptxas then knows the
        // registers each thread starts with, which setmaxnreg moves
        // between the warpgroups (without it ptxas may ignore them when
        // the kernel would need fewer).
        kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                        b.getI32IntegerAttr(1));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(kernel);
        auto type = LLVM::LLVMArrayType::get(b.getI32Type(), record.size());
        LLVM::GlobalOp::create(
            b, fn.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::External,
            (kTmaPrefix + fn.getName()).str(),
            DenseElementsAttr::get(
                RankedTensorType::get({int64_t(record.size())}, b.getI32Type()),
                ArrayRef<int32_t>(record)),
            /*alignment=*/4, /*addrSpace=*/1);
      }
      // All shared memory is dynamic: the kernel states how much it needs
      // in a global the runtime reads at load time.
      if (int64_t dynamic = lowering.dynamicSharedBytes()) {
        if (dynamic > int64_t(sharedLimit)) {
          fn.emitError() << "kernel '" << fn.getName() << "' needs " << dynamic
                         << " bytes of shared memory ("
                         << lowering.tileSharedBytes()
                         << " for its shared tiles and their stages, "
                         << lowering.scratchSharedBytes()
                         << " for its layout conversions and reductions, "
                            "1024 for alignment); a block has at most "
                         << int64_t(sharedLimit)
                         << " (use smaller tiles, fewer stages or fewer "
                            "warps)";
          return signalPassFailure();
        }
        b.setInsertionPoint(kernel);
        LLVM::GlobalOp::create(b, fn.getLoc(), b.getI32Type(),
                               /*isConstant=*/true, LLVM::Linkage::External,
                               (kDynamicSharedPrefix + fn.getName()).str(),
                               b.getI32IntegerAttr(int32_t(dynamic)),
                               /*alignment=*/4,
                               /*addrSpace=*/1);
      }
      fn.erase();
    }
  }
};

} // namespace
