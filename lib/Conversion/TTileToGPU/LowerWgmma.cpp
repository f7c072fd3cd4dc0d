//===- LowerWgmma.cpp - Shared tiles, asynchronous copies and wgmma -------===//
//
// Hopper's warpgroup MMA reads both operands from shared memory through
// 64-bit matrix descriptors. A `#ttile.shared` tile is a buffer in dynamic
// shared memory (1024-byte aligned, as the swizzle patterns need) holding
// the tile in the canonical layout of its `swizzle`:
//
//   byte(r, c) = (c / E) * (R * W) + r * W + (c % E) * s,  E = W / s
//   physical   = byte ^ (((byte >> 7) & (W / 16 - 1)) << 4)
//
// for an R x C tile of s-byte elements (16-bit, or fp8) with rows of W
// bytes (`order` [1, 0]: C contiguous; a transposed view has order
// [0, 1]). `ttile.load` fills it with 16-byte cp.async copies
// (zero-filled past the memref's edges); inside a `ttile.range` with
// `stages = S > 1` each such load gets a ring of S buffers, filled S - 1
// iterations ahead, so that one barrier per iteration separates the copies
// from the tensor cores.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"
#include "tessera/Dialect/TTile/Transforms/LoopAhead.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <optional>

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;
using namespace mlir::tessera::ttile::detail;

/// The extern shared array that dynamic shared memory is.
static constexpr llvm::StringLiteral kDynamicSharedSymbol =
    "tessera_dynamic_shared";

Value KernelLowering::dynamicSharedBase() {
  if (dynamicBase)
    return dynamicBase;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&dst.getBody().front());
  Location loc = src.getLoc();
  // An extern shared array, the kernel's only shared memory: the shared
  // tiles, then the scratch area of conversions and reductions.
  // (gpu.dynamic_shared_memory would become a one-byte static variable in
  // the PTX.)
  auto gpuModule = dst->getParentOfType<gpu::GPUModuleOp>();
  if (!SymbolTable::lookupSymbolIn(gpuModule, kDynamicSharedSymbol)) {
    OpBuilder mb(gpuModule.getBody(), gpuModule.getBody()->begin());
    LLVM::GlobalOp::create(mb, loc, LLVM::LLVMArrayType::get(b.getI8Type(), 0),
                           /*isConstant=*/false, LLVM::Linkage::External,
                           kDynamicSharedSymbol, Attribute(),
                           /*alignment=*/1024, /*addrSpace=*/3);
  }
  Value addr = LLVM::AddressOfOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3),
      kDynamicSharedSymbol);
  Value raw = arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      LLVM::PtrToIntOp::create(b, loc, b.getI64Type(), addr));
  // Launches give 1024 more bytes than the buffers need; round up into them.
  dynamicBase = arith::AndIOp::create(
      b, loc, arith::AddIOp::create(b, loc, raw, index(1023)), index(~1023LL));
  if (programs > 1) {
    // The rings the programs share, then this program's window (the ring
    // area's size and the windows' stride set once the kernel is lowered).
    ringAreaBase = dynamicBase;
    b.setInsertionPointAfterValue(programIndex);
    windowsOffset = arith::ConstantIndexOp::create(b, loc, 0);
    windowStride = arith::ConstantIndexOp::create(b, loc, 0);
    dynamicBase = arith::AddIOp::create(
        b, loc, arith::AddIOp::create(b, loc, ringAreaBase, windowsOffset),
        arith::MulIOp::create(b, loc, programIndex, windowStride));
  }
  return dynamicBase;
}

Value KernelLowering::ringsBase() {
  Value base = dynamicSharedBase();
  return programs > 1 ? ringAreaBase : base;
}

int64_t KernelLowering::allocateDynamicShared(int64_t bytes) {
  int64_t offset = dynamicBytes;
  dynamicBytes += llvm::alignTo(bytes, 1024);
  return offset;
}

int64_t KernelLowering::allocateRingShared(int64_t bytes) {
  if (programs == 1)
    return allocateDynamicShared(bytes);
  int64_t offset = ringAreaBytes;
  ringAreaBytes += llvm::alignTo(bytes, 1024);
  return offset;
}

KernelLowering::SharedArray KernelLowering::sharedBuffer(Type element,
                                                         int64_t count) {
  if (!scratchOffset) {
    Value base = dynamicSharedBase();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(base);
    // 0 until the kernel is lowered: placeScratch() sets it.
    scratchOffset = arith::ConstantIndexOp::create(b, src.getLoc(), 0);
    scratchBase = arith::AddIOp::create(b, src.getLoc(), base, scratchOffset);
  }
  Type storage = storageType(element);
  int64_t bytes =
      count * std::max<int64_t>(1, storage.getIntOrFloatBitWidth() / 8);
  int64_t offset = scratchUsed;
  scratchUsed += llvm::alignTo(bytes, 128);
  scratchBytes = std::max(scratchBytes, scratchUsed);
  Value addr = scratchBase;
  if (offset)
    addr = arith::AddIOp::create(b, src.getLoc(), scratchBase, index(offset));
  return {addr, storage};
}

Value KernelLowering::sharedElement(Location loc, const SharedArray &array,
                                    Value i) {
  int64_t bytes =
      std::max<int64_t>(1, array.element.getIntOrFloatBitWidth() / 8);
  Value addr = arith::AddIOp::create(
      b, loc, array.base, arith::MulIOp::create(b, loc, i, index(bytes)));
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3),
      ValueRange{arith::IndexCastOp::create(b, loc, b.getI64Type(), addr)});
}

void KernelLowering::storeShared(Location loc, Value value,
                                 const SharedArray &array, Value i,
                                 unsigned align) {
  LLVM::StoreOp::create(b, loc, value, sharedElement(loc, array, i), align);
}

Value KernelLowering::loadShared(Location loc, Type type,
                                 const SharedArray &array, Value i,
                                 unsigned align) {
  return LLVM::LoadOp::create(b, loc, type, sharedElement(loc, array, i),
                              align);
}

Value KernelLowering::sharedTileOffset(Location loc, Value row, Value col,
                                       int64_t rows, int64_t rowBytes,
                                       int64_t eltBytes) {
  // Columns in blocks of one swizzle row, each block rows x rowBytes; in a
  // block, the 16-byte chunks of a row XOR-ed with the row's phase (bits 7
  // and up of the unswizzled offset: the 128-byte line within 1024 bytes).
  int64_t rowElts = rowBytes / eltBytes;
  Value logical = arith::AddIOp::create(
      b, loc,
      arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(
              b, loc, arith::DivUIOp::create(b, loc, col, index(rowElts)),
              index(rows * rowBytes)),
          arith::MulIOp::create(b, loc, row, index(rowBytes))),
      arith::MulIOp::create(b, loc,
                            arith::RemUIOp::create(b, loc, col, index(rowElts)),
                            index(eltBytes)));
  Value phase = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, logical, index(7)),
      index(rowBytes / 16 - 1));
  return arith::XOrIOp::create(b, loc, logical,
                               arith::ShLIOp::create(b, loc, phase, index(4)));
}

void KernelLowering::waitForUses(Operation *op) {
  if (pendingWgmma.empty())
    return;
  // An op with regions may read anything: every group.
  int64_t needed = op->getNumRegions() ? int64_t(pendingWgmma.size()) - 1 : -1;
  for (auto [i, p] : llvm::enumerate(pendingWgmma))
    if (llvm::is_contained(op->getOperands(), p))
      needed = std::max(needed, int64_t(i));
  if (needed >= 0)
    finishWgmma(op->getLoc(), needed);
}

void KernelLowering::finishWgmma(Location loc, int64_t last) {
  ArrayRef<Value> done = ArrayRef<Value>(pendingWgmma).take_front(last + 1);
  Regs all;
  for (Value p : done)
    llvm::append_range(all, tiles.lookup(p));
  // The younger groups keep running.
  waitForWgmma(loc, int64_t(pendingWgmma.size()) - 1 - last, all);
  int64_t next = 0;
  for (Value p : done)
    for (Value &r : tiles[p])
      r = all[next++];
  pendingWgmma.erase(pendingWgmma.begin(), pendingWgmma.begin() + last + 1);
}

void KernelLowering::issueSharedCopy(LoadOp op, Value dstAddr,
                                     ArrayRef<Value> start, Value valid,
                                     Value threadId, int64_t threads,
                                     Value source) {
  Location loc = op.getLoc();
  auto t = cast<RankedTensorType>(op.getType());
  auto shared = cast<SharedAttr>(t.getEncoding());
  Value mem = source ? source : map.lookup(op.getSource());
  auto type = cast<MemRefType>(mem.getType());
  int64_t rows = t.getShape()[0], cols = t.getShape()[1];
  int64_t eltBytes = t.getElementTypeBitWidth() / 8;
  int64_t chunkElts = 16 / eltBytes, chunksPerRow = cols / chunkElts;
  int64_t rowBytes = shared.getSwizzle();
  if (!threads)
    threads = 32 * numWarps;
  int64_t chunks = rows * chunksPerRow;
  Access acc = describeMemref(loc, mem, type, /*vec=*/true);
  Type i64 = b.getI64Type(), i32 = b.getI32Type();
  auto i64Of = [&](Value v) {
    return arith::IndexCastOp::create(b, loc, i64, v).getResult();
  };

  // 16-byte copies need every chunk's global address 16-byte aligned: the
  // first element and the row stride; checked once per load.
  Value first = arith::MulIOp::create(
      b, loc,
      arith::AddIOp::create(
          b, loc, acc.offset,
          arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, start[0], acc.strides[0]),
              start[1])),
      index(eltBytes));
  Value firstAddr = arith::AddIOp::create(b, loc, acc.alignedBase, first);
  auto multiple = [&](Value x, int64_t m) -> Value {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                 arith::RemUIOp::create(b, loc, x, index(m)),
                                 index(0));
  };
  Value aligned = allOf(
      loc, {multiple(firstAddr, 16), multiple(acc.strides[0], chunkElts)});
  Value tid = threadId ? threadId
                       : arith::AddIOp::create(
                             b, loc, lane,
                             arith::MulIOp::create(b, loc, warp, index(32)));

  // The chunk `q` of the tile: its row, first column and shared address.
  struct Chunk {
    Value row, col, dst, inRange;
  };
  auto chunkOfValue = [&](Value round) {
    Chunk c;
    Value q = arith::AddIOp::create(
        b, loc, tid, arith::MulIOp::create(b, loc, round, index(threads)));
    Value r = arith::DivUIOp::create(b, loc, q, index(chunksPerRow));
    Value cc = arith::RemUIOp::create(b, loc, q, index(chunksPerRow));
    Value col = arith::MulIOp::create(b, loc, cc, index(chunkElts));
    c.dst = arith::AddIOp::create(
        b, loc, dstAddr,
        sharedTileOffset(loc, r, col, rows, rowBytes, eltBytes));
    c.row = arith::AddIOp::create(b, loc, start[0], r);
    c.col = arith::AddIOp::create(b, loc, start[1], col);
    c.inRange =
        chunks % threads == 0 ? Value() : lessThan(loc, q, index(chunks));
    return c;
  };
  auto chunkOf = [&](int64_t round) { return chunkOfValue(index(round)); };
  int64_t rounds = llvm::divideCeil(chunks, threads);
  // When a round moves every thread down by whole swizzle periods (1024
  // bytes), later rounds are the first one's chunks shifted by constants:
  // one address computation per thread instead of one per chunk.
  int64_t roundRows = threads / chunksPerRow;
  bool shifted = chunks % threads == 0 && threads % chunksPerRow == 0 &&
                 roundRows * rowBytes % 1024 == 0;
  std::optional<Chunk> firstChunk;
  auto chunkAt = [&](int64_t round) -> Chunk {
    if (!shifted)
      return chunkOf(round);
    if (!firstChunk)
      firstChunk = chunkOf(0);
    Chunk c = *firstChunk;
    if (round) {
      c.dst = arith::AddIOp::create(b, loc, c.dst,
                                    index(round * roundRows * rowBytes));
      c.row = arith::AddIOp::create(b, loc, c.row, index(round * roundRows));
    }
    return c;
  };
  auto guarded = [&](Value cond, function_ref<void()> body) {
    if (!cond)
      return body();
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{}, cond, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    body();
  };
  // Every round, unrolled; or, for a few threads copying a whole tile (the
  // producer warp), a loop over the rounds (unrolled, the chunk addresses
  // that LLVM hoists out of the producer's loop would not fit its
  // registers).
  bool rolled = bool(threadId);
  auto forEachChunk = [&](function_ref<void(Chunk)> body) {
    firstChunk.reset();
    if (!rolled) {
      for (int64_t round = 0; round < rounds; ++round) {
        Chunk c = chunkAt(round);
        guarded(c.inRange, [&] { body(c); });
      }
      return;
    }
    scf::ForOp::create(
        b, loc, index(0), index(rounds), index(1), ValueRange{},
        [&](OpBuilder &nested, Location, Value round, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(nested.getInsertionBlock());
          Chunk c = chunkOfValue(round);
          guarded(c.inRange, [&] { body(c); });
          scf::YieldOp::create(b, loc);
        });
  };
  auto sharedPtr = [&](Value addr) {
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), i64Of(addr));
  };

  auto ifAligned = scf::IfOp::create(b, loc, TypeRange{}, aligned, true);
  {
    // Fast path: cp.async.cg of 16 bytes, the bytes past the memref's last
    // column (or of rows past its end, or of an iteration past the loop's)
    // zero-filled.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifAligned.getThenRegion().front());
    forEachChunk([&](Chunk c) {
      {
        Value ok = allOf(loc, {lessThan(loc, c.row, acc.sizes[0]),
                               lessThan(loc, c.col, acc.sizes[1])});
        if (valid)
          ok = arith::AndIOp::create(b, loc, ok, valid);
        Value left = arith::MulIOp::create(
            b, loc, arith::SubIOp::create(b, loc, acc.sizes[1], c.col),
            index(eltBytes));
        Value bytes = arith::SelectOp::create(
            b, loc, ok, arith::MinUIOp::create(b, loc, left, index(16)),
            index(0));
        Value offset = arith::AddIOp::create(
            b, loc, acc.offset,
            arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, c.row, acc.strides[0]),
                c.col));
        Value addr = arith::AddIOp::create(
            b, loc, acc.alignedBase,
            arith::MulIOp::create(b, loc, offset, index(eltBytes)));
        addr = arith::SelectOp::create(b, loc, ok, addr, acc.alignedBase);
        Value src = LLVM::IntToPtrOp::create(
            b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), i64Of(addr));
        NVVM::CpAsyncOp::create(
            b, loc, sharedPtr(c.dst), src, b.getI32IntegerAttr(16),
            NVVM::LoadCacheModifierKindAttr::get(
                b.getContext(), NVVM::LoadCacheModifierKind::CG),
            arith::IndexCastOp::create(b, loc, i32, bytes));
      }
    });
    // Slow path (unaligned rows): element loads, one 16-byte shared store
    // per chunk.
    b.setInsertionPointToStart(&ifAligned.getElseRegion().front());
    Type elt = t.getElementType();
    Type bits = b.getIntegerType(t.getElementTypeBitWidth());
    Value zero = scalarConstant(loc, elt);
    forEachChunk([&](Chunk c) {
      {
        SmallVector<Value> elems;
        for (int64_t e = 0; e < chunkElts; ++e) {
          Value col = arith::AddIOp::create(b, loc, c.col, index(e));
          Value ok = allOf(loc, {lessThan(loc, c.row, acc.sizes[0]),
                                 lessThan(loc, col, acc.sizes[1])});
          if (valid)
            ok = arith::AndIOp::create(b, loc, ok, valid);
          auto ifOp = scf::IfOp::create(b, loc, TypeRange{elt}, ok, true);
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPointToStart(&ifOp.getThenRegion().front());
          scf::YieldOp::create(b, loc,
                               ValueRange{memref::LoadOp::create(
                                   b, loc, mem, ValueRange{c.row, col})});
          b.setInsertionPointToStart(&ifOp.getElseRegion().front());
          scf::YieldOp::create(b, loc, ValueRange{zero});
          b.setInsertionPointAfter(ifOp);
          // As integers of the same width: the LLVM dialect has no fp8.
          elems.push_back(
              arith::BitcastOp::create(b, loc, bits, ifOp.getResult(0)));
        }
        auto vecType = VectorType::get({chunkElts}, bits);
        Value vec = vector::FromElementsOp::create(b, loc, vecType, elems);
        LLVM::StoreOp::create(b, loc, vec, sharedPtr(c.dst), /*alignment=*/16);
      }
    });
  }
}

void KernelLowering::fenceSharedForTensorCores(Location loc) {
  // Copies (and stores) are generic-proxy writes; wgmma reads through the
  // async proxy.
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

/// Whether a load into a shared tile can be lowered: from a 2-d global
/// memref with unit stride along rows, 8-, 16- or 32-bit elements, unmasked,
/// at least one swizzle row wide.
static bool isLowerableSharedLoad(LoadOp op) {
  auto t = cast<RankedTensorType>(op.getType());
  auto mem = dyn_cast<MemRefType>(op.getSource().getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  return !op.getMask() && mem && mem.getRank() == 2 &&
         !isa_and_nonnull<gpu::AddressSpaceAttr>(mem.getMemorySpace()) &&
         succeeded(mem.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1 &&
         (t.getElementTypeBitWidth() == 32 ||
          t.getElementTypeBitWidth() == 16 ||
          t.getElementTypeBitWidth() == 8) &&
         cast<SharedAttr>(t.getEncoding()).getOrder() ==
             ArrayRef<int64_t>{1, 0} &&
         t.getShape()[1] * t.getElementTypeBitWidth() / 8 >=
             cast<SharedAttr>(t.getEncoding()).getSwizzle();
}

LogicalResult KernelLowering::lowerSharedLoad(LoadOp op) {
  Location loc = op.getLoc();
  auto t = cast<RankedTensorType>(op.getType());
  if (!isLowerableSharedLoad(op))
    return op.emitError()
           << "a #ttile.shared tile is loaded from a 2-d global memref of "
              "8-, 16- or 32-bit elements, unmasked, rows contiguous (unit "
              "stride) and at least one swizzle row wide; got "
           << t << " from " << op.getSource().getType();
  // Filled ahead by the enclosing pipelined range.
  if (auto it = ringSlots.find(op.getOperation()); it != ringSlots.end()) {
    tiles[op.getResult()] = Regs{it->second};
    return success();
  }
  // Alone: wait for the previous readers of the buffer, copy, wait.
  int64_t offset = allocateDynamicShared(sharedTileBytes(t));
  Value addr =
      arith::AddIOp::create(b, loc, dynamicSharedBase(), index(offset));
  gpu::BarrierOp::create(b, loc);
  SmallVector<Value> start;
  for (Value v : op.getIndices())
    start.push_back(map.lookup(v));
  issueSharedCopy(op, addr, start, Value());
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  fenceSharedForTensorCores(loc);
  gpu::BarrierOp::create(b, loc);
  tiles[op.getResult()] = Regs{addr};
  return success();
}

SmallVector<LoadOp> KernelLowering::ringLoads(RangeOp loop) {
  SmallVector<LoadOp> loads;
  if (loop.getStages() < 2)
    return loads;
  Block &body = loop.getBody().front();
  // Copies made ahead must not read what the loop writes; a write whose
  // target is unknown rules the ring out.
  auto written = writtenMemrefs(loop);
  if (failed(written))
    return loads;
  auto outside = [&](Value v) {
    return !loop->isAncestor(v.getParentRegion()->getParentOp());
  };
  for (LoadOp load : body.getOps<LoadOp>()) {
    if (!isa_and_nonnull<SharedAttr>(load.getType().getEncoding()) ||
        !isLowerableSharedLoad(load) || !outside(load.getSource()) ||
        llvm::is_contained(*written, load.getSource()))
      continue;
    // Indices: the induction variable, invariants, or pure arith ops of
    // the body on those (computed again for the iteration copied).
    llvm::SetVector<Operation *> slice;
    if (llvm::all_of(load.getIndices(),
                     [&](Value v) { return computableAhead(v, loop, slice); }))
      loads.push_back(load);
  }
  return loads;
}

bool KernelLowering::canOverlapDots(RangeOp loop, ArrayRef<LoadOp> ring,
                                    int64_t minStages) {
  if (loop.getStages() < minStages)
    return false;
  Block &body = loop.getBody().front();
  Operation *yield = body.getTerminator();
  SmallVector<Operation *> dots;
  for (DotOp dot : body.getOps<DotOp>()) {
    auto mma =
        dyn_cast<MmaAttr>(cast<RankedTensorType>(dot.getType()).getEncoding());
    if (!mma || mma.getVersion() != 3)
      continue;
    auto acc = dyn_cast<BlockArgument>(dot.getAcc());
    auto inRing = [&](Value v) {
      if (auto tr = v.getDefiningOp<TransposeOp>())
        v = tr.getSource();
      auto load = v.getDefiningOp<LoadOp>();
      return load && llvm::is_contained(ring, load);
    };
    if (!acc || acc.getOwner() != &body || acc.getArgNumber() == 0 ||
        !acc.hasOneUse() || !dot.getResult().hasOneUse() ||
        *dot.getResult().getUsers().begin() != yield ||
        yield->getOperand(acc.getArgNumber() - 1) != dot.getResult() ||
        !inRing(dot.getA()) || !inRing(dot.getB()))
      return false;
    dots.push_back(dot);
  }
  if (dots.empty())
    return false;
  overlappedDots.insert(dots.begin(), dots.end());
  return true;
}

void KernelLowering::startRing(RangeOp loop, ArrayRef<LoadOp> loads,
                               int64_t ahead,
                               SmallVectorImpl<int64_t> &offsets) {
  Location loc = loop.getLoc();
  int64_t stages = loop.getStages();
  Value lb = map.lookup(loop.getLowerBound()),
        ub = map.lookup(loop.getUpperBound()),
        step = map.lookup(loop.getStep());
  for (LoadOp load : loads)
    offsets.push_back(allocateDynamicShared(
        stages * sharedTileBytes(cast<RankedTensorType>(load.getType()))));
  // The buffers may still be read by a previous run of this loop (inside
  // another loop) on slower warps.
  gpu::BarrierOp::create(b, loc);
  // The first `ahead` iterations' tiles, one copy group each.
  for (int64_t s = 0; s < ahead; ++s) {
    Value ivS = arith::AddIOp::create(
        b, loc, lb, arith::MulIOp::create(b, loc, step, index(s)));
    Value valid =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, ivS, ub);
    for (auto [load, offset] : llvm::zip(loads, offsets))
      issueSharedCopy(load, ringAddress(load, offset, index(s)),
                      startAt(loop, load, ivS), valid);
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
  }
}

void KernelLowering::advanceRing(RangeOp loop, ArrayRef<LoadOp> loads,
                                 int64_t ahead, ArrayRef<int64_t> offsets,
                                 Value iv) {
  Location loc = loop.getLoc();
  int64_t stages = loop.getStages();
  Value lb = map.lookup(loop.getLowerBound()),
        ub = map.lookup(loop.getUpperBound()),
        step = map.lookup(loop.getStep());
  Value k = arith::DivUIOp::create(b, loc,
                                   arith::SubIOp::create(b, loc, iv, lb), step);
  Value slot = arith::RemUIOp::create(b, loc, k, index(stages));
  // This iteration's copies have landed (each thread's own, then everyone's
  // through the barrier); every warp is done with the buffers of iteration
  // k + ahead - stages (k - 1, or k - 2 while a wgmma group stays in
  // flight across iterations).
  NVVM::CpAsyncWaitGroupOp::create(b, loc, int32_t(ahead - 1));
  fenceSharedForTensorCores(loc);
  gpu::BarrierOp::create(b, loc);
  // The tiles of iteration k + ahead into those buffers.
  Value at = arith::AddIOp::create(
      b, loc, iv, arith::MulIOp::create(b, loc, step, index(ahead)));
  Value valid =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, at, ub);

  Value aheadSlot = arith::RemUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, k, index(ahead)), index(stages));
  for (auto [load, offset] : llvm::zip(loads, offsets)) {
    LoadOp op = load;
    issueSharedCopy(op, ringAddress(op, offset, aheadSlot),
                    startAt(loop, op, at), valid);
    ringSlots[op.getOperation()] = ringAddress(op, offset, slot);
  }
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
}

Value KernelLowering::ringAddress(LoadOp load, int64_t offset, Value slot) {
  Location loc = load.getLoc();
  int64_t bytes = sharedTileBytes(cast<RankedTensorType>(load.getType()));
  return arith::AddIOp::create(
      b, loc, ringsBase(),
      arith::AddIOp::create(b, loc, index(offset),
                            arith::MulIOp::create(b, loc, slot, index(bytes))));
}

SmallVector<Value> KernelLowering::startAt(RangeOp loop, LoadOp load,
                                           Value at) {
  // The body's index ops, cloned with the induction variable replaced
  // (ringLoads checked that they can be).
  llvm::SetVector<Operation *> slice;
  for (Value v : load.getIndices())
    (void)computableAhead(v, loop, slice);
  IRMapping ahead;
  ahead.map(loop.getInductionVar(), at);
  auto lowered = [&](Value v) {
    if (!ahead.contains(v))
      ahead.map(v, map.lookup(v));
    return ahead.lookup(v);
  };
  for (Operation *op : inBodyOrder(slice.getArrayRef())) {
    for (Value operand : op->getOperands())
      (void)lowered(operand);
    b.clone(*op, ahead);
  }
  SmallVector<Value> start;
  for (Value v : load.getIndices())
    start.push_back(lowered(v));
  return start;
}

/// The start-address field of wgmma matrix descriptors of the shared
/// tile part at `addr` (bits 4..17 of the shared address, as an i32).
/// Shared addresses are below 256 KiB: the field of `addr + offset` is
/// this one plus offset / 16 for any offset (a multiple of 16) that stays
/// in the block's shared memory, without a carry out of the field.
static Value descriptorStart(OpBuilder &b, Location loc, Value addr) {
  Type i32 = b.getI32Type();
  Value a = arith::IndexCastOp::create(b, loc, i32, addr);
  return arith::AndIOp::create(
      b, loc,
      arith::ShRUIOp::create(b, loc, a,
                             arith::ConstantIntOp::create(b, loc, i32, 4)),
      arith::ConstantIntOp::create(b, loc, i32, 0x3FFF));
}

/// The 64-bit wgmma matrix descriptor of the shared tile part `offset`
/// bytes after the one whose start field is `start` (descriptorStart):
/// leading and stride byte offsets, and the swizzle mode of `rowBytes`.
/// Built from two 32-bit halves, one add for the low half and a constant
/// high half, so that a loop of products issues few instructions between
/// wgmmas (64-bit address arithmetic for each descriptor left a
/// warpgroup's 64x128 products waiting on their operands' descriptors).
static Value descriptor(OpBuilder &b, Location loc, Value start, int64_t offset,
                        int64_t leading, int64_t stride, int64_t rowBytes) {
  assert(offset % 16 == 0 && "wgmma operands start at 16-byte boundaries");
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  int64_t mode = rowBytes == 128 ? 1 : rowBytes == 64 ? 2 : 3;
  int64_t lowFixed = ((leading >> 4) & 0x3FFF) << 16;
  int64_t high = ((stride >> 4) & 0x3FFF) | mode << 30;
  Value low = arith::AddIOp::create(
      b, loc, start,
      arith::ConstantIntOp::create(b, loc, i32, (offset >> 4) + lowFixed));
  auto pair = VectorType::get({2}, i32);
  Value v = vector::FromElementsOp::create(
      b, loc, pair,
      ValueRange{low, arith::ConstantIntOp::create(b, loc, i32, high)});
  return vector::ExtractOp::create(
      b, loc,
      vector::BitCastOp::create(b, loc, VectorType::get({1}, i64), v),
      int64_t(0));
}

/// Whether `v` is a constant tile of +0.0 (every bit clear).
static bool isPositiveZeroSplat(Value v) {
  auto cst = v.getDefiningOp<arith::ConstantOp>();
  auto dense = cst ? dyn_cast<DenseFPElementsAttr>(cst.getValue()) : nullptr;
  return dense && dense.isSplat() && dense.getSplatValue<APFloat>().isPosZero();
}

/// The PTX name of a wgmma operand type.
/// The wgmma operand type of elements `t` (f32 read as tf32 where `tf32`),
/// or none.
static std::optional<NVVM::WGMMATypes> wgmmaTypeOf(Type t, bool tf32) {
  if (tf32 && t.isF32())
    return NVVM::WGMMATypes::tf32;
  if (t.isBF16())
    return NVVM::WGMMATypes::bf16;
  if (t.isF16())
    return NVVM::WGMMATypes::f16;
  if (isa<Float8E4M3FNType>(t))
    return NVVM::WGMMATypes::e4m3;
  if (isa<Float8E5M2Type>(t))
    return NVVM::WGMMATypes::e5m2;
  return std::nullopt;
}

LogicalResult KernelLowering::lowerWgmma(DotOp op, MmaAttr mma) {
  Location loc = op.getLoc();
  // A dot whose group stays in flight across iterations waits for one
  // group only: no other may be running then.
  if (overlappedDots.contains(op) && !pendingWgmma.empty())
    finishWgmma(loc, int64_t(pendingWgmma.size()) - 1);
  auto aType = cast<RankedTensorType>(op.getA().getType());
  auto bType = cast<RankedTensorType>(op.getB().getType());
  auto accType = cast<RankedTensorType>(op.getAcc().getType());
  auto d = dist(op, accType);
  if (failed(d))
    return failure();
  auto aShared = dyn_cast<SharedAttr>(aType.getEncoding());
  auto bShared = dyn_cast<SharedAttr>(bType.getEncoding());
  if (!bShared)
    return op.emitError() << "wgmma takes B as a #ttile.shared tile, got "
                          << bType;
  Type inA = aType.getElementType(), inB = bType.getElementType();
  bool fp8 = isa<Float8E4M3FNType, Float8E5M2Type>(inA);
  // f32 operands read as tf32 (the dot allows it; AssignLayouts gives such
  // dots wgmma accumulators only then).
  bool tf32 = op.getTf32() && inA.isF32() && inB.isF32();
  bool kMajorOnly = fp8 || tf32;
  std::optional<NVVM::WGMMATypes> typeA = wgmmaTypeOf(inA, tf32),
                                  typeB = wgmmaTypeOf(inB, tf32);
  // A from shared memory (K contiguous) or from registers (mma.sync's A
  // fragments per warp, Distribution.cpp).
  bool aInRegisters = isa<DotOperandAttr>(aType.getEncoding());
  // A shared A with order [0, 1] is M contiguous (a transpose's view, read
  // transposed by the instruction: 16-bit types only).
  bool aMMajor = aShared && aShared.getOrder() == ArrayRef<int64_t>{0, 1};
  if (aInRegisters) {
    if (failed(dist(op, aType)))
      return failure();
  } else if (!aShared) {
    return op.emitError("wgmma takes A as a #ttile.shared tile or as "
                        "registers (#ttile.dot_operand 0 of the "
                        "accumulator)");
  }
  // B's order: [1, 0] is N contiguous (transposed by the instruction, 16-bit
  // types only), [0, 1] K contiguous.
  bool bKMajor = bShared.getOrder() == ArrayRef<int64_t>{0, 1};
  if (!typeA || !typeB || !accType.getElementType().isF32() ||
      (!fp8 && inA != inB) ||
      (fp8 && !isa<Float8E4M3FNType, Float8E5M2Type>(inB)) ||
      (kMajorOnly && (!bKMajor || aInRegisters || aMMajor)))
    return op.emitError() << "wgmma is lowered for bf16 or f16 operands, or "
                             "fp8 (e4m3, e5m2) or f32 read as tf32 with A "
                             "from shared memory and B K-contiguous, into "
                             "f32; got "
                          << inA << " x " << inB << " (B order "
                          << (bKMajor ? "[0, 1]" : "[1, 0]") << ") -> "
                          << accType.getElementType();
  int64_t eltBytes = fp8 ? 1 : tf32 ? 4 : 2, instrK = 32 / eltBytes;
  int64_t m = accType.getShape()[0], n = accType.getShape()[1],
          k = aType.getShape()[1];
  int64_t gm = mma.getWarpsPerCTA()[0] / 4, gn = mma.getWarpsPerCTA()[1];
  int64_t instrN = mma.getInstrShape()[1];
  int64_t groupM = m / gm, groupN = n / gn;
  int64_t repM = groupM / 64, repN = groupN / instrN, regs = instrN / 2;
  int64_t rowA = aShared ? aShared.getSwizzle() : 0,
          rowB = bShared.getSwizzle();
  int64_t eltB = rowB / eltBytes, eltA = rowA / eltBytes;
  if (k % instrK || mma.getInstrShape()[2] != instrK ||
      (!bKMajor && instrN % eltB) || (aMMajor && 64 % eltA))
    return op.emitError() << "wgmma needs K a multiple of " << instrK
                          << " (instrShape K " << instrK
                          << ") and, for an N-contiguous B, each "
                             "instruction's N a multiple of its swizzle row ("
                          << eltB << " elements); got K = " << k
                          << ", instrShape " << mma.getInstrShape()[0] << "x"
                          << instrN << "x" << mma.getInstrShape()[2];
  Value aBase = aInRegisters ? Value() : tiles.lookup(op.getA())[0],
        bBase = tiles.lookup(op.getB())[0];
  Value group = arith::DivUIOp::create(b, loc, warp, index(4));
  Value groupN0 = arith::RemUIOp::create(b, loc, group, index(gn));
  Value groupM0 = arith::DivUIOp::create(b, loc, group, index(gn));
  // This warpgroup's first A row and first B row (K-contiguous B) or
  // column block (N-contiguous B), in bytes.
  Value aRows;
  if (!aInRegisters)
    aRows = arith::AddIOp::create(
        b, loc, aBase,
        arith::MulIOp::create(
            b, loc, groupM0,
            index(aMMajor ? groupM / eltA * k * rowA : groupM * rowA)));
  Value bPart = arith::AddIOp::create(
      b, loc, bBase,
      arith::MulIOp::create(
          b, loc, groupN0,
          index(bKMajor ? groupN * rowB : groupN / eltB * k * rowB)));

  Regs acc = tiles.lookup(op.getAcc());
  Type f32 = b.getF32Type();
  // A product into a +0 accumulator starts with scale-d 0 (D = A * B) on
  // undefined registers: ptxas then sees no register written before the
  // group that the group also reads, and needs no waits around it.
  bool fromZero = isPositiveZeroSplat(op.getAcc());
  auto structType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(regs, f32));
  // A from registers: the NVVM dialect's wgmma takes A only as a
  // descriptor, so that form is written as PTX (the same instruction, with
  // four registers of A in place of its descriptor).
  std::string asmText, constraints;
  if (aInRegisters) {
    llvm::raw_string_ostream os(asmText);
    os << "{\n.reg .pred p;\nsetp.ne.b32 p, $" << regs + 5
       << ", 0;\nwgmma.mma_async.sync.aligned.m64n" << instrN << "k" << instrK
       << ".f32." << NVVM::stringifyWGMMATypes(*typeA) << "."
       << NVVM::stringifyWGMMATypes(*typeB) << " {";
    for (int64_t i = 0; i < regs; ++i)
      os << (i ? ", " : "") << "$" << i;
    os << "}, {$" << regs << ", $" << regs + 1 << ", $" << regs + 2 << ", $"
       << regs + 3 << "}, $" << regs + 4 << ", p, 1, 1, " << (bKMajor ? 0 : 1)
       << ";\n}";
    for (int64_t i = 0; i < regs; ++i)
      constraints += "=f,";
    constraints += "r,r,r,r,l,r";
    for (int64_t i = 0; i < regs; ++i)
      constraints += "," + std::to_string(i);
  }
  // Of A from shared memory: K-major is row (no transpose), M-major col;
  // of B, K-major is col, N-major row (transposed by the instruction).
  MLIRContext *ctx = b.getContext();
  auto layoutAttr = [&](bool row) {
    return NVVM::MMALayoutAttr::get(ctx, row ? NVVM::MMALayout::row
                                             : NVVM::MMALayout::col);
  };
  auto typeAttr = [&](NVVM::WGMMATypes t) {
    return NVVM::WGMMATypesAttr::get(ctx, t);
  };
  auto scaleIn = NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one);
  auto shape = NVVM::MMAShapeAttr::get(ctx, 64, instrN, instrK);
  // The PTX form's scale-d operand and, from +0, its undefined inputs.
  Value one, zero, undef;
  if (aInRegisters) {
    one = i32Constant(b, loc, 1);
    zero = fromZero ? i32Constant(b, loc, 0) : Value();
    undef = fromZero ? LLVM::UndefOp::create(b, loc, f32) : Value();
  }
  Regs aRegs = aInRegisters ? tiles.lookup(op.getA()) : Regs();
  // Two 16-bit values in one 32-bit register, the first in the low half.
  auto pack = [&](Value lo, Value hi) -> Value {
    auto pairVec = VectorType::get({2}, inA);
    auto i32Vec = VectorType::get({1}, b.getI32Type());
    Value v =
        vector::FromElementsOp::create(b, loc, pairVec, ValueRange{lo, hi});
    return vector::ExtractOp::create(
        b, loc, vector::BitCastOp::create(b, loc, i32Vec, v), int64_t(0));
  };

  // A's registers, packed before the fence (wgmma must not see registers
  // written after it).
  Regs aPacked;
  for (int64_t r = 0; r + 1 < int64_t(aRegs.size()); r += 2)
    aPacked.push_back(pack(aRegs[r], aRegs[r + 1]));
  // (With ping-pong, once this warpgroup's turn has come.)
  takeTurn(loc);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  Value bStart = descriptorStart(b, loc, bPart);
  Value aStart = aInRegisters ? Value() : descriptorStart(b, loc, aRows);
  for (int64_t kk = 0; kk < k; kk += instrK) {
    int64_t kb = kk * eltBytes; // the K step's first byte along a row
    for (int64_t i = 0; i < repM; ++i) {
      for (int64_t j = 0; j < repN; ++j) {
        Value descB =
            bKMajor ? descriptor(b, loc, bStart,
                                 kb / rowB * n * rowB + j * instrN * rowB +
                                     kb % rowB,
                                 16, 8 * rowB, rowB)
                    : descriptor(b, loc, bStart,
                                 j * instrN / eltB * k * rowB + kk * rowB,
                                 k * rowB, 8 * rowB, rowB);
        int64_t first = (i * repN + j) * regs;
        SmallVector<Value> operands;
        if (aInRegisters) {
          // The m16k16 fragment of this warp's rows of instruction tile i
          // at K step kk: (col, col + 1), rows + 8, cols + 8, both.
          int64_t a0 = 4 * (kk / 16 + k / 16 * i);
          for (int64_t e = 0; e < 4; ++e)
            operands.push_back(aPacked[a0 + e]);
        } else if (aMMajor) {
          // As an N-contiguous B: blocks of one swizzle row of M, K rows
          // each.
          operands.push_back(descriptor(b, loc, aStart,
                                        64 * i / eltA * k * rowA + kk * rowA,
                                        k * rowA, 8 * rowA, rowA));
        } else {
          operands.push_back(descriptor(
              b, loc, aStart, kb / rowA * m * rowA + 64 * i * rowA + kb % rowA,
              16, 8 * rowA, rowA));
        }
        operands.push_back(descB);
        Value product;
        if (aInRegisters) {
          if (fromZero && kk == 0) {
            operands.push_back(zero);
            operands.append(regs, undef);
          } else {
            operands.push_back(one);
            llvm::append_range(operands,
                               ArrayRef<Value>(acc).slice(first, regs));
          }
          product =
              ptx(b, loc, TypeRange{structType}, operands, asmText, constraints)
                  ->getResult(0);
        } else {
          // The accumulators in and out as one struct.
          bool zeroD = fromZero && kk == 0;
          Value inouts = LLVM::UndefOp::create(b, loc, structType);
          if (!zeroD)
            for (int64_t r = 0; r < regs; ++r)
              inouts = LLVM::InsertValueOp::create(b, loc, inouts,
                                                   acc[first + r], r);
          product = NVVM::WgmmaMmaAsyncOp::create(
              b, loc, structType, inouts, operands[0], operands[1], shape,
              typeAttr(*typeA), typeAttr(*typeB),
              typeAttr(NVVM::WGMMATypes::f32),
              NVVM::WGMMAScaleOutAttr::get(ctx, zeroD
                                                    ? NVVM::WGMMAScaleOut::zero
                                                    : NVVM::WGMMAScaleOut::one),
              scaleIn, scaleIn, layoutAttr(!aMMajor), layoutAttr(!bKMajor),
              NVVM::MMAIntOverflowAttr());
        }
        for (int64_t r = 0; r < regs; ++r)
          acc[first + r] = LLVM::ExtractValueOp::create(b, loc, product,
                                                        ArrayRef<int64_t>{r});
      }
    }
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  // An overlapped dot's group stays in flight into the next iteration:
  // wait for the previous iteration's only.
  if (overlappedDots.contains(op)) {
    waitForWgmma(loc, 1, acc);
    tiles[op.getResult()] = std::move(acc);
    return success();
  }
  // The group runs until an op reads its product (waitForUses): later
  // products and other work overlap it.
  pendingWgmma.push_back(op.getResult());
  tiles[op.getResult()] = std::move(acc);
  return success();
}

void KernelLowering::waitForWgmma(Location loc, int64_t pending, Regs &acc) {
  // The next warpgroup's products may go while this one waits.
  passTurn(loc);
  // The accumulators pass through the wait (tied operands): LLVM cannot
  // move a read of them above it, and ptxas sees no other instruction
  // touch them while the group runs. (The NVVM dialect's wait takes no
  // operands, so nothing would keep such a read after it.)
  int64_t n = acc.size();
  auto structType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), llvm::to_vector(ValueRange(acc).getTypes()));
  std::string constraints;
  for (int64_t i = 0; i < n; ++i)
    constraints += "=f,";
  for (int64_t i = 0; i < n; ++i)
    constraints += std::to_string(i) + (i + 1 < n ? "," : "");
  Operation *wait =
      ptx(b, loc, TypeRange{structType}, acc,
          "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";",
          constraints);
  for (int64_t r = 0; r < n; ++r)
    acc[r] = LLVM::ExtractValueOp::create(b, loc, wait->getResult(0),
                                          ArrayRef<int64_t>{r});
}
