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

FailureOr<Distribution> KernelLowering::widenRuns(Location loc,
                                                  const Distribution &d,
                                                  Regs &vals, Type elt) {
  unsigned last = d.rank() - 1;
  auto unit = [&](const Basis &x, int64_t n) {
    for (unsigned k = 0; k < d.rank(); ++k)
      if (x[k] != (k == last ? n : 0))
        return false;
    return true;
  };
  if (elt.getIntOrFloatBitWidth() != 16 || d.wraps(last) ||
      d.regBases.size() < 3 || d.laneBases.size() < 2 ||
      !unit(d.regBases[0], 1) || !unit(d.laneBases[0], 2) ||
      !unit(d.laneBases[1], 4))
    return failure();
  auto bitOf = [&](int64_t n) -> int64_t {
    for (size_t i = 1; i < d.regBases.size(); ++i)
      if (unit(d.regBases[i], n))
        return int64_t(i);
    return -1;
  };
  int64_t p = bitOf(8), q = bitOf(16);
  if (p < 0 || q < 0)
    return failure();
  // Pairs as 32-bit words: register bit k is word bit k - 1.
  Type i32 = b.getI32Type();
  auto pair = VectorType::get({2}, elt);
  Regs words(vals.size() / 2);
  for (size_t w = 0; w < words.size(); ++w)
    words[w] = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, i32),
        vector::FromElementsOp::create(
            b, loc, pair, ValueRange{vals[2 * w], vals[2 * w + 1]}));
  for (Value &w : words)
    w = vector::ExtractOp::create(b, loc, w, int64_t(0));
  // Swap lane bit `laneBit` with register bit `regBit`: the thread whose
  // lane bit is x keeps its words whose register bit is x and takes the
  // others from the lane that differs in that bit.
  Distribution wide = d;
  for (auto [laneBit, regBit] : {std::pair<int64_t, int64_t>{0, p}, {1, q}}) {
    Value x = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, loc, lane, index(int64_t(1) << laneBit)),
        index(0));
    size_t bit = size_t(1) << (regBit - 1);
    for (size_t i = 0; i < words.size(); ++i) {
      if (i & bit)
        continue;
      size_t j = i | bit;
      Value send = arith::SelectOp::create(b, loc, x, words[i], words[j]);
      Value recv = shuffleXor(loc, send, int64_t(1) << laneBit);
      Value lo = arith::SelectOp::create(b, loc, x, recv, words[i]);
      Value hi = arith::SelectOp::create(b, loc, x, words[j], recv);
      words[i] = lo;
      words[j] = hi;
    }
    std::swap(wide.laneBases[laneBit], wide.regBases[regBit]);
  }
  Regs swapped(vals.size());
  for (size_t w = 0; w < words.size(); ++w) {
    Value v = vector::BitCastOp::create(
        b, loc, pair,
        vector::FromElementsOp::create(b, loc, VectorType::get({1}, i32),
                                       ValueRange{words[w]}));
    swapped[2 * w] = vector::ExtractOp::create(b, loc, v, int64_t(0));
    swapped[2 * w + 1] = vector::ExtractOp::create(b, loc, v, int64_t(1));
  }
  // Register bits reordered so the run's bits (offsets 1, 2, 4) come first.
  SmallVector<int64_t> order = {0, p, q};
  for (int64_t i = 1, n = int64_t(d.regBases.size()); i < n; ++i)
    if (i != p && i != q)
      order.push_back(i);
  Distribution out = wide;
  for (auto [k, from] : llvm::enumerate(order))
    out.regBases[k] = wide.regBases[from];
  for (size_t n = 0; n < vals.size(); ++n) {
    size_t o = 0;
    for (auto [k, from] : llvm::enumerate(order))
      if (n >> k & 1)
        o |= size_t(1) << from;
    vals[n] = swapped[o];
  }
  return out;
}

LogicalResult KernelLowering::lowerStore(StoreOp op) {
  auto staged = stagedStores.find(op);
  if (staged != stagedStores.end())
    return lowerStagedStore(op, staged->second);
  return lowerStoreDirect(op);
}

LogicalResult KernelLowering::lowerStoreDirect(StoreOp op) {
  Location loc = op.getLoc();
  auto valueType = cast<RankedTensorType>(op.getValue().getType());
  auto found = dist(op, valueType);
  if (failed(found))
    return failure();
  if (op.getMask() && op.getMask().getType() != valueType.clone(b.getI1Type()))
    return op.emitError("the mask's layout differs from the tile's (run "
                        "-tessera-ttile-assign-layouts)");
  Value mem = map.lookup(op.getDest());
  auto type = cast<MemRefType>(mem.getType());
  Type elt = type.getElementType();
  Distribution d = *found;
  Regs vals = tiles.lookup(op.getValue());
  Regs mask = op.getMask() ? tiles.lookup(op.getMask()) : Regs();
  int64_t v = vectorWidth(d, type);
  // Pairs of 2-byte elements (the tensor cores' accumulators) become runs
  // of 8 after an exchange within each quad: a warp then writes whole
  // 32-byte sectors, with a quarter of the store instructions.
  if (v == 2 && mask.empty()) {
    FailureOr<Distribution> widened = widenRuns(loc, d, vals, elt);
    if (succeeded(widened)) {
      d = *widened;
      v = vectorWidth(d, type);
    }
  }
  int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
  Access acc = describeMemref(loc, mem, type, v > 1);
  Value alignedAll =
      v > 1 ? allAligned(loc, acc, op.getIndices(), v, bytes) : Value();
  SmallVector<Value> bases = threadBases(loc, d);
  auto scalarStore = [&](Value val, ArrayRef<Value> coords, Value cond) {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{}, cond, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    memref::StoreOp::create(b, loc, val, mem, coords);
  };
  auto vectorStore = [&](int64_t r, ArrayRef<Value> coords) {
    auto vecType = VectorType::get({v}, elt);
    Value vec = vector::FromElementsOp::create(
        b, loc, vecType, ArrayRef<Value>(vals).slice(r, v));
    vector::StoreOp::create(b, loc, vec, mem, coords, false,
                            llvm::Align(v * bytes));
  };
  // A whole tile inside the memref, aligned and without a mask (every
  // thread the same: a uniform branch) stores each vector without a test.
  // The branch is taken for each vector, not once for the tile: a vector's
  // values (an epilogue's chain, after -tessera-gpu-sink-to-uses) are then
  // made just before their store and die there, instead of all the tile's
  // values living until one branch that stores them all.
  Value whole;
  if (v > 1 && mask.empty()) {
    SmallVector<Value> inside = {alignedAll};
    for (auto [i, size] : llvm::enumerate(acc.sizes)) {
      Value first = map.lookup(op.getIndices()[i]);
      Value end = arith::AddIOp::create(b, loc, first,
                                        index(valueType.getDimSize(i) - 1));
      inside.push_back(lessThan(loc, first, size));
      inside.push_back(lessThan(loc, end, size));
    }
    whole = allOf(loc, inside);
  }
  for (int64_t r = 0, n = d.numRegs(); r < n; r += v) {
    SmallVector<Value> coords = memCoords(loc, d, bases, op.getIndices(), r);
    // Restores the insertion point after this vector's branches.
    OpBuilder::InsertionGuard afterVector(b);
    if (whole) {
      auto fast = scf::IfOp::create(b, loc, TypeRange{}, whole, true);
      b.setInsertionPointToStart(&fast.getThenRegion().front());
      vectorStore(r, coords);
      b.setInsertionPointToStart(&fast.getElseRegion().front());
    }
    SmallVector<Value> conds = {inBounds(loc, acc, coords, v - 1)};
    for (int64_t e = 0; e < v && !mask.empty(); ++e)
      conds.push_back(mask[r + e]);
    if (v == 1) {
      scalarStore(vals[r], coords, allOf(loc, conds));
      continue;
    }
    conds.push_back(alignedAll);
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{}, allOf(loc, conds), true);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    vectorStore(r, coords);
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

/// Adds `contract` to the fastmath flags of the kernel's float arithmetic:
/// LLVM may then fuse a multiply that feeds an add into one fma (without
/// it, NVPTX prints `mul.rn`/`add.rn`, which ptxas must not fuse either).
/// Conversions keep their flags: with `contract` the arith folder drops
/// the rounding of a conversion to a narrower type and back (extf of
/// truncf), which a cast in the kernel asked for.
static void allowContraction(gpu::GPUFuncOp kernel) {
  MLIRContext *ctx = kernel.getContext();
  kernel.walk([&](arith::ArithFastMathInterface op) {
    if (isa<arith::ExtFOp, arith::TruncFOp>(op))
      return;
    arith::FastMathFlagsAttr attr = op.getFastMathFlagsAttr();
    arith::FastMathFlags flags =
        attr ? attr.getValue() : arith::FastMathFlags::none;
    op->setAttr(op.getFastMathAttrName(),
                arith::FastMathFlagsAttr::get(
                    ctx, flags | arith::FastMathFlags::contract));
  });
}

struct ConvertTTileToGPUPass
    : mlir::tessera::impl::ConvertTTileToGPUBase<ConvertTTileToGPUPass> {
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
      KernelLowering lowering(fn, kernel, tma, sharedLimit);
      if (failed(lowering.run()))
        return signalPassFailure();
      if (fpContract)
        allowContraction(kernel);
      ::tessera::runtime::KernelLaunchRecord record = lowering.launchRecord();
      if (lowering.isSpecialized()) {
        kernel.setKnownBlockSizeAttr(
            b.getDenseI32ArrayAttr({record.blockThreads(), 1, 1}));
        // One block an SM at least (.minnctapersm 1): ptxas then knows the
        // registers each thread starts with, which setmaxnreg moves
        // between the warpgroups (without it ptxas may ignore them when
        // the kernel would need fewer).
        kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                        b.getI32IntegerAttr(1));
      }
      // programs_per_sm = N (.minnctapersm N): ptxas keeps each thread's
      // registers within what N programs an SM leave it, so that N
      // programs' loads are in flight at once.
      if (auto perSm =
              fn->getAttrOfType<IntegerAttr>("ttile.programs_per_sm")) {
        int64_t all = record.blockThreads();
        if (perSm.getInt() * all > 2048) {
          fn.emitError() << "ttile.programs_per_sm = " << perSm.getInt()
                         << " needs " << perSm.getInt() * all
                         << " threads an SM (" << all
                         << " a program, with its producer warps); an SM "
                            "holds 2048";
          return signalPassFailure();
        }
        kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                        b.getI32IntegerAttr(int32_t(perSm.getInt())));
      }
      // All shared memory is dynamic; the launch record says how much.
      if (int64_t dynamic = lowering.dynamicSharedBytes();
          dynamic > int64_t(sharedLimit)) {
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
      // What a launch needs, for the compiler and the runtime alike.
      std::vector<int32_t> words = record.encode();
      b.setInsertionPoint(kernel);
      LLVM::GlobalOp::create(
          b, fn.getLoc(), LLVM::LLVMArrayType::get(b.getI32Type(), words.size()),
          /*isConstant=*/true, LLVM::Linkage::External,
          (::tessera::runtime::KernelLaunchRecord::kGlobalPrefix + fn.getName()).str(),
          DenseElementsAttr::get(
              RankedTensorType::get({int64_t(words.size())}, b.getI32Type()),
              ArrayRef<int32_t>(words)),
          /*alignment=*/4, /*addrSpace=*/1);
      fn.erase();
    }
  }
};

} // namespace
