//===- LowerSharedStore.cpp - Computed tiles into shared memory ----------===//
//
// A tile computed in registers that a wgmma reads from shared memory (a
// transposed A such as attention's P^T, or an A the warpgroups cannot feed
// from registers) is written into a #ttile.shared buffer between two
// barriers: earlier readers of the buffer are done before, and the writes
// are fenced for the async proxy and visible to every reader after.
// Tensor-core fragments of 16-bit elements go out with stmatrix. When each
// warpgroup reads back only what it wrote, the barriers are that
// warpgroup's own.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;
using namespace mlir::tessera::ttile::detail;

bool KernelLowering::fitsStmatrix(const Distribution &d, Type elt) {
  // Lane t holds row t / 4, columns 2 (t % 4) and 2 (t % 4) + 1 of each
  // 8x8 matrix (register bit 0 the second column); the matrices lie 8
  // rows or columns apart, at least four of them.
  if (elt.getIntOrFloatBitWidth() != 16 || d.rank() != 2 || d.wraps(0) ||
      d.wraps(1) || d.regBases.size() < 3 || d.regBases[0] != Basis{0, 1} ||
      d.laneBases != ArrayRef<Basis>{{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}})
    return false;
  for (const Basis &c : ArrayRef<Basis>(d.regBases).drop_front())
    if (c[0] % 8 || c[1] % 8)
      return false;
  return true;
}

void KernelLowering::writeSharedTile(Location loc, const Distribution &d,
                                     ArrayRef<Value> vals, Value addr,
                                     int64_t rows, int64_t rowBytes, Type elt) {
  int64_t eltBytes = elt.getIntOrFloatBitWidth() / 8;
  if (fitsStmatrix(d, elt)) {
    // stmatrix .x4: lane l gives the address of row l % 8 of matrix l / 8
    // of four, the matrices at register bits 1 and 2 of a group; each
    // thread's register i holds its pair of matrix i. Four 16-byte rows a
    // lane per instruction, against four 4-byte stores, and a quarter of
    // the addresses.
    SmallVector<Value> bases = threadBases(loc, d, /*withLanes=*/false);
    const Basis &b1 = d.regBases[1], &b2 = d.regBases[2];
    Value bit3 = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, lane, index(3)), index(1));
    Value bit4 = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, lane, index(4)), index(1));
    SmallVector<Value> laneAt;
    for (unsigned i = 0; i < 2; ++i) {
      Value c = arith::AddIOp::create(
          b, loc, bases[i],
          arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, bit3, index(b1[i])),
              arith::MulIOp::create(b, loc, bit4, index(b2[i]))));
      if (i == 0)
        c = arith::AddIOp::create(
            b, loc, c, arith::AndIOp::create(b, loc, lane, index(7)));
      laneAt.push_back(c);
    }
    auto pair = [&](int64_t r) -> Value {
      Value v = vector::FromElementsOp::create(
          b, loc, VectorType::get({2}, storageType(elt)),
          ValueRange{toStorage(loc, vals[r]), toStorage(loc, vals[r + 1])});
      return LLVM::BitcastOp::create(b, loc, b.getI32Type(), v);
    };
    for (int64_t r = 0, n = d.numRegs(); r < n; r += 8) {
      Basis o = d.regCoord(r);
      Value row = arith::AddIOp::create(b, loc, laneAt[0], index(o[0]));
      Value col = arith::AddIOp::create(b, loc, laneAt[1], index(o[1]));
      Value at = arith::AddIOp::create(
          b, loc, addr,
          sharedTileOffset(loc, row, col, rows, rowBytes, eltBytes));
      MLIRContext *ctx = b.getContext();
      NVVM::StMatrixOp::create(
          b, loc, sharedPointer(b, loc, at),
          ValueRange{pair(r), pair(r + 2), pair(r + 4), pair(r + 6)},
          NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
          NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
          NVVM::LdStMatrixEltTypeAttr::get(ctx, NVVM::LdStMatrixEltType::B16));
    }
    return;
  }
  SmallVector<Value> bases = threadBases(loc, d);
  int64_t vw = std::min(runAlong(d, 1), 16 / eltBytes);
  Type storage = storageType(elt);
  for (int64_t r = 0, n = d.numRegs(); r < n; r += vw) {
    // (Registers replicated across threads are written by each: the same
    // value to the same place.)
    Value row = coord(loc, d, bases, r, 0);
    Value col = coord(loc, d, bases, r, 1);
    Value ptr = LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3),
        ValueRange{arith::IndexCastOp::create(
            b, loc, b.getI64Type(),
            arith::AddIOp::create(
                b, loc, addr,
                sharedTileOffset(loc, row, col, rows, rowBytes, eltBytes)))});
    Value v = toStorage(loc, vals[r]);
    if (vw > 1) {
      SmallVector<Value> elems;
      for (int64_t e = 0; e < vw; ++e)
        elems.push_back(toStorage(loc, vals[r + e]));
      v = vector::FromElementsOp::create(b, loc, VectorType::get({vw}, storage),
                                         elems);
    }
    LLVM::StoreOp::create(b, loc, v, ptr, unsigned(vw * eltBytes));
  }
}

LogicalResult KernelLowering::lowerStoreShared(ConvertLayoutOp op) {
  Location loc = op.getLoc();
  auto t = op.getType();
  auto shared = cast<SharedAttr>(t.getEncoding());
  int64_t eltBits = t.getElementTypeBitWidth();
  if (t.getRank() != 2 || shared.getOrder() != ArrayRef<int64_t>{1, 0} ||
      !(eltBits == 8 || eltBits == 16 || eltBits == 32) ||
      t.getShape()[1] * eltBits / 8 % shared.getSwizzle() ||
      t.getShape()[0] % 8)
    return op.emitError()
           << "a tile in registers is stored as a #ttile.shared tile when it "
              "is 2-d, of 8-, 16- or 32-bit elements, with order [1, 0], "
              "rows a multiple of the swizzle row and a multiple of 8 of "
              "them; got "
           << t;
  auto from = dist(op, op.getSource().getType());
  if (failed(from))
    return failure();
  int64_t rows = t.getShape()[0], rowBytes = shared.getSwizzle();
  Value addr =
      arith::AddIOp::create(b, loc, dynamicSharedBase(),
                            index(allocateDynamicShared(sharedTileBytes(t))));
  writeSharedTile(loc, *from, tiles.lookup(op.getSource()), addr, rows,
                  rowBytes, t.getElementType());
  tiles[op.getResult()] = Regs{addr};
  return success();
}

bool KernelLowering::storedForOwnGroup(ConvertLayoutOp op) {
  int64_t groups = numWarps / 4;
  auto t = op.getType();
  if (numWarps % 4 || groups < 2 || t.getRank() != 2)
    return false;
  auto from = distributionOf(op.getSource().getType());
  if (failed(from) || from->numWarps() != numWarps)
    return false;
  int64_t rows = t.getShape()[0], cols = t.getShape()[1];
  // The warpgroup that stores each element (-1: none, -2: several).
  SmallVector<int8_t> owner(rows * cols, -1);
  auto add = [](Basis &c, ArrayRef<Basis> bases, int64_t id) {
    for (auto [i, basis] : llvm::enumerate(bases))
      if (id >> i & 1)
        for (unsigned d = 0; d < c.size(); ++d)
          c[d] += basis[d];
  };
  int64_t lanes = int64_t(1) << from->laneBases.size();
  for (int64_t w = 0; w < numWarps; ++w)
    for (int64_t l = 0; l < lanes; ++l)
      for (int64_t r = 0, n = from->numRegs(); r < n; ++r) {
        Basis c = from->regCoord(r);
        add(c, from->laneBases, l);
        add(c, from->warpBases, w);
        int8_t &o = owner[(c[0] & (rows - 1)) * cols + (c[1] & (cols - 1))];
        int8_t g = int8_t(w / 4);
        o = o == -1 || o == g ? g : -2;
      }
  // Each reader is a wgmma dot taking the tile (or its transpose) as A or
  // B; the warpgroup that reads an element is then a function of its row
  // (A, one warpgroup per row block) or column (B).
  SmallVector<std::pair<Value, bool>> views{{op.getResult(), false}};
  for (size_t i = 0; i < views.size(); ++i) {
    auto [v, transposed] = views[i];
    for (Operation *user : v.getUsers()) {
      if (auto tr = dyn_cast<TransposeOp>(user)) {
        views.push_back({tr.getResult(), !transposed});
        continue;
      }
      auto dot = dyn_cast<DotOp>(user);
      auto mma = dot ? dyn_cast<MmaAttr>(
                           cast<RankedTensorType>(dot.getType()).getEncoding())
                     : MmaAttr();
      if (!mma || mma.getVersion() != 3)
        return false;
      int64_t gm = mma.getWarpsPerCTA()[0] / 4, gn = mma.getWarpsPerCTA()[1];
      if (gm * gn != groups)
        return false;
      for (bool isA : {true, false}) {
        if ((isA ? dot.getA() : dot.getB()) != v)
          continue;
        // Several warpgroups read each row of A when they split N, each
        // column of B when they split M.
        if ((isA && gn > 1) || (!isA && gm > 1))
          return false;
        auto operand = cast<RankedTensorType>(v.getType());
        int64_t block =
            isA ? operand.getShape()[0] / gm : operand.getShape()[1] / gn;
        for (int64_t i0 = 0; i0 < rows; ++i0)
          for (int64_t i1 = 0; i1 < cols; ++i1) {
            int64_t row = transposed ? i1 : i0, col = transposed ? i0 : i1;
            if (owner[i0 * cols + i1] != (isA ? row : col) / block)
              return false;
          }
      }
    }
  }
  return true;
}

void KernelLowering::groupBarrier(Location loc) {
  // Named barriers kFirstGroupBarrier + g, one per warpgroup, 128 threads.
  NVVM::BarrierOp::create(
      b, loc, Type(),
      arith::AddIOp::create(b, loc,
                            arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                                       blockWarpgroup(loc)),
                            i32Constant(b, loc, kFirstGroupBarrier)),
      i32Constant(b, loc, 128), NVVM::BarrierReductionAttr(), Value());
}

LogicalResult
KernelLowering::lowerStoreSharedGroup(ArrayRef<ConvertLayoutOp> ops) {
  Location loc = ops.front()->getLoc();
  // Tiles each warpgroup stores for its own products only need that
  // warpgroup's threads to meet: the warpgroups then run apart, one's
  // products on the tensor cores while another computes.
  bool own = llvm::all_of(
      ops, [&](ConvertLayoutOp op) { return storedForOwnGroup(op); });
  auto barrier = [&] {
    if (own)
      groupBarrier(loc);
    else
      gpu::BarrierOp::create(b, loc);
  };
  // Earlier readers of the buffers (the previous iteration's products)
  // are done.
  barrier();
  for (ConvertLayoutOp op : ops)
    if (failed(lowerStoreShared(op)))
      return failure();
  // Generic-proxy stores, read by wgmma through the async proxy.
  fenceSharedForTensorCores(loc);
  barrier();
  return success();
}
