//===- LowerDataMovement.cpp - Tiles between layouts ---===//
//
// Layout conversions, transposes and broadcasts: registers renamed when
// the layouts hold the same elements on the same threads, otherwise through
// swizzled shared memory (ldmatrix for tensor-core operands).
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

using namespace mlir;
using namespace mlir::tessera::ttile;
using namespace mlir::tessera::ttile::detail;

/// How many registers from register 0 on hold consecutive elements along
/// `dim`, with every run starting at a multiple of its length.
int64_t KernelLowering::runAlong(const Distribution &d, unsigned dim) {
  if (d.wraps(dim))
    return 1;
  int64_t n = 1;
  size_t i = 0;
  for (; i < d.regBases.size(); ++i) {
    bool unit = true;
    for (unsigned k = 0; k < d.rank(); ++k)
      unit &= d.regBases[i][k] == (k == dim ? n : 0);
    if (!unit)
      break;
    n *= 2;
  }
  auto aligned = [&](int64_t len) {
    auto ok = [&](ArrayRef<Basis> bases) {
      return llvm::all_of(bases,
                          [&](const Basis &x) { return x[dim] % len == 0; });
    };
    return ok(ArrayRef<Basis>(d.regBases).drop_front(llvm::Log2_64(len))) &&
           ok(d.laneBases) && ok(d.warpBases);
  };
  while (n > 1 && !aligned(n))
    n /= 2;
  return n;
}

/// The mma.sync A (opIdx 0) or B (opIdx 1) fragments of `type` read from
/// the shared buffer `buf` (contiguous along dim `fast`, 16-byte chunks
/// at `address`) with ldmatrix: each lane gives the address of one
/// 8-element buffer row of an 8x8 matrix.
Regs KernelLowering::ldmatrix(Location loc, const SharedArray &buf,
                              const Distribution &d, RankedTensorType type,
                              unsigned opIdx, MmaAttr mma, unsigned fast,
                              function_ref<Value(ArrayRef<Value>)> address,
                              Type elt) {
  // Buffer rows run along the fragment pairs' dim (K) for A with fast 1
  // and B with fast 0: plain ldmatrix; otherwise transposed. A lane gives
  // the start of one 8-element buffer row: its row coordinate takes the
  // lane's row within the 8x8 matrix.
  bool trans = (opIdx == 0) != (fast == 1);
  auto laneRow = [&](unsigned dim) { return dim != fast; };
  MLIRContext *ctx = b.getContext();
  int64_t wm = mma.getWarpsPerCTA()[0], wn = mma.getWarpsPerCTA()[1];
  int64_t nK = type.getShape()[opIdx == 0 ? 1 : 0] / 16;
  int64_t nOuter = opIdx == 0 ? type.getShape()[0] / (16 * wm)
                              : type.getShape()[1] / (8 * wn);
  SmallVector<Value> wbase = threadBases(loc, d, /*withLanes=*/false);
  Value base = buf.base;
  Value l8 = arith::RemUIOp::create(b, loc, lane, index(8));
  Value j = arith::DivUIOp::create(b, loc, lane, index(8));
  Value jLow = arith::RemUIOp::create(b, loc, j, index(2));
  Value jHigh = arith::DivUIOp::create(b, loc, j, index(2));
  Type i32 = b.getI32Type();
  auto pairType = VectorType::get({2}, elt);
  auto i32Vec = VectorType::get({1}, i32);
  auto load = [&](Value row, Value col, int64_t num) -> SmallVector<Value> {
    Value byteAddr = arith::AddIOp::create(
        b, loc, base,
        arith::MulIOp::create(b, loc, address({row, col}), index(2)));
    Value ptr =
        LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(ctx, 3),
                                 ValueRange{arith::IndexCastOp::create(
                                     b, loc, b.getI64Type(), byteAddr)});
    Type res = num == 1 ? i32
                        : Type(LLVM::LLVMStructType::getLiteral(
                              ctx, SmallVector<Type>(num, i32)));
    Value m = NVVM::LdMatrixOp::create(
        b, loc, res, ptr, b.getI32IntegerAttr(num),
        NVVM::MMALayoutAttr::get(ctx, trans ? NVVM::MMALayout::col
                                            : NVVM::MMALayout::row),
        NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
        NVVM::LdStMatrixEltTypeAttr::get(ctx, NVVM::LdStMatrixEltType::B16));
    SmallVector<Value> words;
    for (int64_t i = 0; i < num; ++i)
      words.push_back(num == 1 ? m
                               : LLVM::ExtractValueOp::create(
                                     b, loc, m, ArrayRef<int64_t>{i})
                                     .getResult());
    return words;
  };
  Regs out(d.numRegs());
  auto unpack = [&](Value word, int64_t r) {
    Value v = vector::BitCastOp::create(
        b, loc, pairType,
        vector::FromElementsOp::create(b, loc, i32Vec, ValueRange{word}));
    out[r] = vector::ExtractOp::create(b, loc, v, int64_t(0));
    out[r + 1] = vector::ExtractOp::create(b, loc, v, int64_t(1));
  };
  for (int64_t o = 0; o < nOuter; ++o)
    for (int64_t kt = 0; kt < nK; ++kt) {
      if (opIdx == 0) {
        // Matrices: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7,
        // k 8-15), (rows 8-15, k 8-15) = the pairs a0a1 .. a6a7.
        int64_t r0 = 8 * (kt + nK * o);
        Basis c = d.regCoord(r0);
        Value row = arith::AddIOp::create(
            b, loc, arith::AddIOp::create(b, loc, wbase[0], index(c[0])),
            arith::MulIOp::create(b, loc, jLow, index(8)));
        Value col = arith::AddIOp::create(
            b, loc, arith::AddIOp::create(b, loc, wbase[1], index(c[1])),
            arith::MulIOp::create(b, loc, jHigh, index(8)));
        if (laneRow(0))
          row = arith::AddIOp::create(b, loc, row, l8);
        else
          col = arith::AddIOp::create(b, loc, col, l8);
        auto words = load(row, col, 4);
        for (int64_t i = 0; i < 4; ++i)
          unpack(words[i], r0 + 2 * i);
        continue;
      }
      // B, two N fragments at a time where there are two: matrices (k
      // 0-7, n), (k 8-15, n), (k 0-7, n'), (k 8-15, n').
      if (o % 2)
        continue;
      bool pair = o + 1 < nOuter;
      int64_t r0 = 4 * (kt + nK * o), r1 = 4 * (kt + nK * (o + 1));
      Basis c = d.regCoord(r0);
      int64_t delta = pair ? d.regCoord(r1)[1] - c[1] : 0;
      Value row = arith::AddIOp::create(
          b, loc, arith::AddIOp::create(b, loc, wbase[0], index(c[0])),
          arith::MulIOp::create(b, loc, jLow, index(8)));
      Value col = arith::AddIOp::create(
          b, loc, arith::AddIOp::create(b, loc, wbase[1], index(c[1])),
          arith::MulIOp::create(b, loc, jHigh, index(delta)));
      if (laneRow(0))
        row = arith::AddIOp::create(b, loc, row, l8);
      else
        col = arith::AddIOp::create(b, loc, col, l8);
      auto words = load(row, col, pair ? 4 : 2);
      unpack(words[0], r0);
      unpack(words[1], r0 + 2);
      if (pair) {
        unpack(words[2], r1);
        unpack(words[3], r1 + 2);
      }
    }
  return out;
}

KernelLowering::SharedTransfer
KernelLowering::planShared(const Distribution &from, const Distribution &to,
                           Type elt, bool plain) {
  SharedTransfer t;
  t.shape = from.shape;
  unsigned rank = from.rank();
  int64_t count = 1;
  for (int64_t s : from.shape)
    count *= s;
  t.storage = storageType(elt);
  t.bytes = std::max<int64_t>(1, t.storage.getIntOrFloatBitWidth() / 8);
  t.chunk = std::max<int64_t>(1, 16 / t.bytes);
  t.fast = rank - 1;
  if (plain) {
    auto accesses = [&](unsigned d) {
      return 1.0 / double(std::min(runAlong(from, d), t.chunk)) +
             1.0 / double(std::min(runAlong(to, d), t.chunk));
    };
    for (unsigned d = 0; d < rank; ++d)
      if (accesses(d) < accesses(t.fast))
        t.fast = d;
  }
  t.rowLength = from.shape[t.fast];
  t.swizzle = t.rowLength % t.chunk == 0
                  ? std::min<int64_t>(t.rowLength / t.chunk, 8)
                  : 1;
  t.buf = sharedBuffer(t.storage, count);
  return t;
}

/// The element index of `coords` in the buffer.
Value KernelLowering::sharedAddress(Location loc, const SharedTransfer &t,
                                    ArrayRef<Value> coords) {
  Value row = index(0);
  for (unsigned i = 0; i < t.shape.size(); ++i)
    if (i != t.fast)
      row = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, row, index(t.shape[i])),
          coords[i]);
  Value col = coords[t.fast];
  if (t.swizzle > 1) {
    Value c = arith::DivUIOp::create(b, loc, col, index(t.chunk));
    Value x = arith::XOrIOp::create(
        b, loc, c, arith::RemUIOp::create(b, loc, row, index(t.swizzle)));
    col = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, x, index(t.chunk)),
        arith::RemUIOp::create(b, loc, col, index(t.chunk)));
  }
  return arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, row, index(t.rowLength)), col);
}

SmallVector<Value> KernelLowering::coordsOf(Location loc, const Distribution &d,
                                            ArrayRef<Value> bases, int64_t r) {
  SmallVector<Value> c;
  for (unsigned i = 0; i < d.rank(); ++i)
    c.push_back(coord(loc, d, bases, r, i));
  return c;
}

void KernelLowering::writeShared(Location loc, const SharedTransfer &t,
                                 const Regs &vals, const Distribution &from) {
  SmallVector<Value> bases = threadBases(loc, from);
  int64_t vw = std::min(runAlong(from, t.fast), t.chunk);
  for (int64_t r = 0, n = from.numRegs(); r < n; r += vw) {
    Value addr = sharedAddress(loc, t, coordsOf(loc, from, bases, r));
    if (vw == 1) {
      storeShared(loc, toStorage(loc, vals[r]), t.buf, addr, t.bytes);
      continue;
    }
    SmallVector<Value> elems;
    for (int64_t e = 0; e < vw; ++e)
      elems.push_back(toStorage(loc, vals[r + e]));
    Value vec = vector::FromElementsOp::create(
        b, loc, VectorType::get({vw}, t.storage), elems);
    storeShared(loc, vec, t.buf, addr, unsigned(vw * t.bytes));
  }
}

/// The registers of a tile with distribution `to`, element `c` of which
/// is element `srcCoords(c)` of the buffer's tile.
Regs KernelLowering::readShared(
    Location loc, const SharedTransfer &t, const Distribution &to, Type elt,
    function_ref<SmallVector<Value>(ArrayRef<Value>)> srcCoords,
    RankedTensorType plainTo) {
  bool plain = bool(plainTo);
  auto address = [&](ArrayRef<Value> c) { return sharedAddress(loc, t, c); };
  // Tensor-core fragments of 16-bit values from a buffer with 16-byte
  // rows along the fragment's K (A) or N (B): ldmatrix.
  if (plain && t.bytes == 2 && t.shape.size() == 2 && t.chunk == 8 &&
      t.rowLength % 8 == 0)
    if (auto operand = dyn_cast<DotOperandAttr>(plainTo.getEncoding()))
      if (auto mma = dyn_cast<MmaAttr>(operand.getParent());
          mma && mma.getVersion() == 2)
        return ldmatrix(loc, t.buf, to, plainTo, operand.getOpIdx(), mma,
                        t.fast, address, elt);
  SmallVector<Value> bases = threadBases(loc, to);
  int64_t vr = plain ? std::min(runAlong(to, t.fast), t.chunk) : 1;
  Regs out;
  for (int64_t r = 0, n = to.numRegs(); r < n; r += vr) {
    Value addr = address(srcCoords(coordsOf(loc, to, bases, r)));
    if (vr == 1) {
      Value x = loadShared(loc, t.storage, t.buf, addr, t.bytes);
      out.push_back(fromStorage(loc, x, elt));
      continue;
    }
    Value vec = loadShared(loc, VectorType::get({vr}, t.storage), t.buf, addr,
                           unsigned(vr * t.bytes));
    for (int64_t e = 0; e < vr; ++e)
      out.push_back(
          fromStorage(loc, vector::ExtractOp::create(b, loc, vec, e), elt));
  }
  return out;
}

Regs KernelLowering::throughShared(
    Location loc, const Regs &vals, const Distribution &from,
    const Distribution &to, Type elt,
    function_ref<SmallVector<Value>(ArrayRef<Value>)> srcCoords,
    RankedTensorType plainTo) {
  beginScratch();
  SharedTransfer t = planShared(from, to, elt, bool(plainTo));
  gpu::BarrierOp::create(b, loc);
  writeShared(loc, t, vals, from);
  gpu::BarrierOp::create(b, loc);
  return readShared(loc, t, to, elt, srcCoords, plainTo);
}

LogicalResult KernelLowering::lowerBlock(Block &block) {
  if (failed(lowerBlockOps(block)))
    return failure();
  // The block's terminator reads what it yields: no group outlives it.
  if (!pendingWgmma.empty())
    finishWgmma(block.getTerminator()->getLoc(),
                int64_t(pendingWgmma.size()) - 1);
  return success();
}

LogicalResult KernelLowering::lowerBlockOps(Block &block) {
  for (auto it = block.begin(), end = std::prev(block.end()); it != end;) {
    if (turnHeld && !keepsTurn(&*it))
      passTurn(it->getLoc());
    waitForUses(&*it);
    // Tiles stored for wgmma one after the other (views of them and
    // constants between) share their barriers.
    if (storesShared(&*it)) {
      SmallVector<ConvertLayoutOp> stores;
      SmallVector<Operation *> others;
      auto next = it;
      for (; next != end; ++next) {
        if (storesShared(&*next)) {
          stores.push_back(cast<ConvertLayoutOp>(&*next));
          continue;
        }
        auto tr = dyn_cast<TransposeOp>(&*next);
        if ((tr && isa_and_nonnull<SharedAttr>(
                       cast<RankedTensorType>(tr.getSource().getType())
                           .getEncoding())) ||
            isa<arith::ConstantOp>(&*next)) {
          others.push_back(&*next);
          continue;
        }
        break;
      }
      for (ConvertLayoutOp op : stores)
        waitForUses(op);
      // Constants first (a store may read one), views of the stored
      // tiles after.
      for (Operation *op : others)
        if (isa<arith::ConstantOp>(op) && failed(lowerOp(op)))
          return failure();
      if (failed(lowerStoreSharedGroup(stores)))
        return failure();
      for (Operation *op : others)
        if (!isa<arith::ConstantOp>(op) && failed(lowerOp(op)))
          return failure();
      it = next;
      continue;
    }
    // Adjacent conversions through shared memory share their barriers.
    SmallVector<ConvertLayoutOp> group;
    for (auto next = it; next != end; ++next) {
      auto cvt = dyn_cast<ConvertLayoutOp>(&*next);
      if (!cvt || !movesData(cvt) ||
          llvm::any_of(group, [&](ConvertLayoutOp g) {
            return g.getResult() == cvt.getSource();
          }))
        break;
      group.push_back(cvt);
    }
    if (group.size() > 1) {
      for (ConvertLayoutOp op : group)
        waitForUses(op);
      if (failed(lowerConvertGroup(group)))
        return failure();
      std::advance(it, group.size());
      continue;
    }
    if (failed(lowerOp(&*it)))
      return failure();
    ++it;
  }
  return success();
}

/// Lowers `ops`, consecutive layout conversions that move data between
/// threads and do not feed each other, with two barriers in all: every
/// tile is written, then every tile read.
LogicalResult
KernelLowering::lowerConvertGroup(MutableArrayRef<ConvertLayoutOp> ops) {
  Location loc = ops.front().getLoc();
  SmallVector<SharedTransfer> transfers;
  SmallVector<Distribution> tos;
  beginScratch();
  for (ConvertLayoutOp op : ops) {
    auto from = dist(op, op.getSource().getType());
    auto to = dist(op, op.getType());
    if (failed(from) || failed(to))
      return failure();
    transfers.push_back(
        planShared(*from, *to, op.getType().getElementType(), true));
    tos.push_back(*to);
    if (transfers.size() == 1)
      gpu::BarrierOp::create(b, loc);
    writeShared(op.getLoc(), transfers.back(), tiles.lookup(op.getSource()),
                *from);
  }
  gpu::BarrierOp::create(b, loc);
  for (auto [op, t, to] : llvm::zip(ops, transfers, tos))
    tiles[op.getResult()] = readShared(
        op.getLoc(), t, to, op.getType().getElementType(),
        [](ArrayRef<Value> c) { return SmallVector<Value>(c); }, op.getType());
  return success();
}

/// Whether a conversion moves data between threads.
bool KernelLowering::movesData(ConvertLayoutOp op) {
  std::string error;
  auto from = distributionOf(op.getSource().getType(), &error);
  auto to = distributionOf(op.getType(), &error);
  return succeeded(from) && succeeded(to) &&
         failed(registerMap(*to, *from, [](const Basis &c) { return c; }));
}

LogicalResult KernelLowering::lowerConvert(ConvertLayoutOp op) {
  if (isa_and_nonnull<SharedAttr>(op.getType().getEncoding()))
    return lowerStoreSharedGroup({op});
  auto from = dist(op, op.getSource().getType());
  auto to = dist(op, op.getType());
  if (failed(from) || failed(to))
    return failure();
  Regs vals = tiles.lookup(op.getSource());
  auto same = registerMap(*to, *from, [](const Basis &c) { return c; });
  if (succeeded(same)) {
    Regs out;
    for (int64_t r : *same)
      out.push_back(vals[r]);
    tiles[op.getResult()] = std::move(out);
    return success();
  }
  tiles[op.getResult()] = throughShared(
      op.getLoc(), vals, *from, *to, op.getType().getElementType(),
      [](ArrayRef<Value> c) { return SmallVector<Value>(c); }, op.getType());
  return success();
}

LogicalResult KernelLowering::lowerTranspose(TransposeOp op) {
  // A shared tile's transpose is a view of its buffer (the verifier checks
  // the orders).
  if (isa_and_nonnull<SharedAttr>(
          cast<RankedTensorType>(op.getSource().getType()).getEncoding())) {
    tiles[op.getResult()] = tiles.lookup(op.getSource());
    return success();
  }
  auto from = dist(op, op.getSource().getType());
  auto to = dist(op, op.getType());
  if (failed(from) || failed(to))
    return failure();
  ArrayRef<int64_t> perm = op.getPermutation();
  Regs vals = tiles.lookup(op.getSource());
  auto same = registerMap(*to, *from, [&](const Basis &c) {
    Basis s(c.size());
    for (auto [i, p] : llvm::enumerate(perm))
      s[p] = c[i];
    return s;
  });
  if (succeeded(same)) {
    Regs out;
    for (int64_t r : *same)
      out.push_back(vals[r]);
    tiles[op.getResult()] = std::move(out);
    return success();
  }
  tiles[op.getResult()] =
      throughShared(op.getLoc(), vals, *from, *to,
                    op.getType().getElementType(), [&](ArrayRef<Value> c) {
                      SmallVector<Value> s(c.size());
                      for (auto [i, p] : llvm::enumerate(perm))
                        s[p] = c[i];
                      return s;
                    });
  return success();
}

LogicalResult KernelLowering::lowerBroadcast(BroadcastOp op) {
  auto from = dist(op, op.getSource().getType());
  auto to = dist(op, op.getType());
  if (failed(from) || failed(to))
    return failure();
  ArrayRef<int64_t> dims = op.getDims();
  Regs vals = tiles.lookup(op.getSource());
  auto expanded = [&](unsigned i) {
    return from->shape[i] == 1 && to->shape[dims[i]] != 1;
  };
  auto same = registerMap(*to, *from, [&](const Basis &c) {
    Basis s;
    for (unsigned i = 0; i < from->rank(); ++i)
      s.push_back(expanded(i) ? 0 : c[dims[i]]);
    return s;
  });
  if (succeeded(same)) {
    Regs out;
    for (int64_t r : *same)
      out.push_back(vals[r]);
    tiles[op.getResult()] = std::move(out);
    return success();
  }
  tiles[op.getResult()] =
      throughShared(op.getLoc(), vals, *from, *to,
                    op.getType().getElementType(), [&](ArrayRef<Value> c) {
                      SmallVector<Value> s;
                      for (unsigned i = 0; i < from->rank(); ++i)
                        s.push_back(expanded(i) ? index(0) : c[dims[i]]);
                      return s;
                    });
  return success();
}
