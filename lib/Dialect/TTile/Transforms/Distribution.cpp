//===- Distribution.cpp - How a tile layout spreads elements over threads -===//

#include "tessera/Dialect/TTile/Transforms/Distribution.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tessera::ttile;

Basis Distribution::regCoord(int64_t r) const {
  Basis c(rank(), 0);
  for (auto [i, b] : llvm::enumerate(regBases))
    if (r >> i & 1)
      for (unsigned d = 0; d < rank(); ++d)
        c[d] += b[d];
  return c;
}

bool Distribution::wraps(unsigned d) const {
  int64_t reach = 0;
  for (auto *bases : {&regBases, &laneBases, &warpBases})
    for (const Basis &b : *bases)
      reach += b[d];
  return reach >= shape[d];
}

static FailureOr<Distribution> fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return failure();
}

static Basis unit(unsigned rank, unsigned d, int64_t v) {
  Basis b(rank, 0);
  b[d] = v;
  return b;
}

/// Adds log2(count) bases along dim d: step, 2 * step, 4 * step, ...
static void addBits(SmallVector<Basis> &bases, unsigned rank, unsigned d,
                    int64_t count, int64_t step) {
  for (int64_t v = 1; v < count; v *= 2)
    bases.push_back(unit(rank, d, v * step));
}

static FailureOr<Distribution> describe(Attribute layout,
                                        ArrayRef<int64_t> shape, Type element,
                                        std::string *error);

static FailureOr<Distribution>
blocked(BlockedAttr layout, ArrayRef<int64_t> shape, std::string *error) {
  unsigned rank = shape.size();
  if (layout.getRank() != rank)
    return fail(error, "the layout's rank differs from the tile's");
  auto spt = layout.getSizePerThread(), tpw = layout.getThreadsPerWarp(),
       wpc = layout.getWarpsPerCTA();
  for (auto arr : {spt, tpw, wpc})
    for (int64_t v : arr)
      if (!llvm::isPowerOf2_64(v))
        return fail(error, "the GPU lowering needs power-of-two layout sizes");
  Distribution dist;
  dist.shape.assign(shape.begin(), shape.end());
  for (int64_t d : layout.getOrder()) {
    int64_t footprint = spt[d] * tpw[d] * wpc[d];
    addBits(dist.regBases, rank, d, spt[d], 1);
    addBits(dist.regBases, rank, d, llvm::divideCeil(shape[d], footprint),
            footprint);
    addBits(dist.laneBases, rank, d, tpw[d], spt[d]);
    addBits(dist.warpBases, rank, d, wpc[d], spt[d] * tpw[d]);
  }
  // Lane and warp bits in id order: dims from fastest, as added above.
  return dist;
}

/// Ampere/Hopper mma.sync m16n8k16 fragments (16-bit operands, f32
/// accumulators): the accumulator (opIdx -1), A (0) or B (1), with warps
/// numbered N-fastest over warpsPerCTA [WM, WN].
static FailureOr<Distribution>
mmaV2(MmaAttr mma, int opIdx, ArrayRef<int64_t> shape, std::string *error) {
  int64_t wm = mma.getWarpsPerCTA()[0], wn = mma.getWarpsPerCTA()[1];
  int64_t m = opIdx == 1 ? 0 : shape[0], n = opIdx == 0 ? 0 : shape[1];
  int64_t k = opIdx == 0 ? shape[1] : opIdx == 1 ? shape[0] : 16;
  if ((opIdx != 1 && m % (16 * wm)) || (opIdx != 0 && n % (8 * wn)) || k % 16 ||
      !llvm::isPowerOf2_64(wm) || !llvm::isPowerOf2_64(wn))
    return fail(error, "an mma.sync tile must be a multiple of 16 x 8 per "
                       "warp (and K of 16)");
  Distribution dist;
  dist.shape.assign(shape.begin(), shape.end());
  auto at = [](int64_t r, int64_t c) { return Basis{r, c}; };
  // Lanes: q = lane % 4 along the columns (k for A, k for B), g = lane / 4
  // along the rows (n for B).
  if (opIdx == 1)
    dist.laneBases = {at(2, 0), at(4, 0), at(0, 1), at(0, 2), at(0, 4)};
  else
    dist.laneBases = {at(0, 2), at(0, 4), at(1, 0), at(2, 0), at(4, 0)};
  // Warps: wn bits, then wm bits; an operand is replicated over the other
  // operand's warps.
  for (int64_t v = 1; v < wn; v *= 2)
    dist.warpBases.push_back(opIdx == 0 ? at(0, 0) : at(0, 8 * v));
  for (int64_t v = 1; v < wm; v *= 2)
    dist.warpBases.push_back(opIdx == 1 ? at(0, 0) : at(16 * v, 0));
  if (opIdx == -1) {
    dist.regBases = {at(0, 1), at(8, 0)};
    for (int64_t v = 1; v < n / (8 * wn); v *= 2)
      dist.regBases.push_back(at(0, 8 * wn * v));
    for (int64_t v = 1; v < m / (16 * wm); v *= 2)
      dist.regBases.push_back(at(16 * wm * v, 0));
  } else if (opIdx == 0) {
    dist.regBases = {at(0, 1), at(8, 0), at(0, 8)};
    for (int64_t v = 1; v < k / 16; v *= 2)
      dist.regBases.push_back(at(0, 16 * v));
    for (int64_t v = 1; v < m / (16 * wm); v *= 2)
      dist.regBases.push_back(at(16 * wm * v, 0));
  } else {
    dist.regBases = {at(1, 0), at(8, 0)};
    for (int64_t v = 1; v < k / 16; v *= 2)
      dist.regBases.push_back(at(16 * v, 0));
    for (int64_t v = 1; v < n / (8 * wn); v *= 2)
      dist.regBases.push_back(at(0, 8 * wn * v));
  }
  return dist;
}

/// Hopper wgmma accumulators (f32): a warpgroup's four warps take 16 rows
/// each of a 64 x instrN instruction tile, with the m16n8 fragment of
/// mma.sync repeated along N in registers. warpsPerCTA [4 * GM, GN] places
/// GM x GN warpgroups (warp ids: the warp within its group, then the group's
/// N index, then its M index); each group owns a contiguous
/// [M / GM, N / GN] block, instruction tiles repeated over it.
static FailureOr<Distribution> mmaV3(MmaAttr mma, ArrayRef<int64_t> shape,
                                     std::string *error) {
  int64_t gm = mma.getWarpsPerCTA()[0] / 4, gn = mma.getWarpsPerCTA()[1];
  int64_t in = mma.getInstrShape()[1];
  if (mma.getWarpsPerCTA()[0] % 4 || !llvm::isPowerOf2_64(gm) ||
      !llvm::isPowerOf2_64(gn) || !llvm::isPowerOf2_64(in) ||
      shape[0] % (64 * gm) || shape[1] % (in * gn))
    return fail(error, "a wgmma tile must be whole 64 x N instruction tiles "
                       "per warpgroup (power-of-two N, warpsPerCTA [4 * GM, "
                       "GN])");
  Distribution dist;
  dist.shape.assign(shape.begin(), shape.end());
  auto at = [](int64_t r, int64_t c) { return Basis{r, c}; };
  dist.laneBases = {at(0, 2), at(0, 4), at(1, 0), at(2, 0), at(4, 0)};
  dist.regBases = {at(0, 1), at(8, 0)};
  addBits(dist.regBases, 2, 1, in / 8, 8);
  addBits(dist.regBases, 2, 1, shape[1] / gn / in, in);
  addBits(dist.regBases, 2, 0, shape[0] / gm / 64, 64);
  dist.warpBases = {at(16, 0), at(32, 0)};
  addBits(dist.warpBases, 2, 1, gn, shape[1] / gn);
  addBits(dist.warpBases, 2, 0, gm, shape[0] / gm);
  return dist;
}

static FailureOr<Distribution> describe(Attribute layout,
                                        ArrayRef<int64_t> shape, Type element,
                                        std::string *error) {
  unsigned rank = shape.size();
  for (int64_t s : shape)
    if (!llvm::isPowerOf2_64(s))
      return fail(error, "the GPU lowering needs power-of-two tile dims");
  if (auto b = dyn_cast_or_null<BlockedAttr>(layout))
    return blocked(b, shape, error);
  if (auto slice = dyn_cast_or_null<SliceAttr>(layout)) {
    // The parent's distribution for a tile with a unit dim inserted, less
    // that dim: each element sits on the threads that held its row.
    unsigned dim = slice.getDim();
    SmallVector<int64_t> parentShape(shape.begin(), shape.end());
    int64_t size = 1; // the sliced dim's size does not matter; one fragment
    if (auto mma = dyn_cast<MmaAttr>(slice.getParent()))
      size = mma.getVersion() == 3
                 ? (dim == 0 ? 16 * mma.getWarpsPerCTA()[0]
                             : mma.getInstrShape()[1] * mma.getWarpsPerCTA()[1])
                 : (dim == 0 ? 16 * mma.getWarpsPerCTA()[0]
                             : 8 * mma.getWarpsPerCTA()[1]);
    parentShape.insert(parentShape.begin() + dim, size);
    auto parent = describe(slice.getParent(), parentShape, element, error);
    if (failed(parent))
      return failure();
    Distribution dist;
    dist.shape.assign(shape.begin(), shape.end());
    auto drop = [&](const Basis &b) {
      Basis r(b);
      r.erase(r.begin() + dim);
      return r;
    };
    for (const Basis &b : parent->regBases)
      if (llvm::any_of(drop(b), [](int64_t v) { return v != 0; }))
        dist.regBases.push_back(drop(b));
    for (const Basis &b : parent->laneBases)
      dist.laneBases.push_back(drop(b));
    for (const Basis &b : parent->warpBases)
      dist.warpBases.push_back(drop(b));
    return dist;
  }
  if (auto operand = dyn_cast_or_null<DotOperandAttr>(layout)) {
    if (rank != 2)
      return fail(error, "dot operands are 2-d");
    int opIdx = operand.getOpIdx();
    if (auto mma = dyn_cast<MmaAttr>(operand.getParent())) {
      // The m16n8k16 fragments; any element type may sit there (a tile
      // converted before a cast to bf16), the dot itself takes 16 bits.
      if (mma.getVersion() == 3) {
        // wgmma's A from registers: per warp, mma.sync's m16k16 A
        // fragments; warps along M as the accumulator's (warpgroups along
        // M only, one instruction tile of M per group or one group).
        int64_t gm = mma.getWarpsPerCTA()[0] / 4;
        if (opIdx != 0 || mma.getWarpsPerCTA()[1] != 1 ||
            (gm > 1 && shape[0] != 64 * gm))
          return fail(error, "wgmma takes B from shared memory only, and A "
                             "from registers with warpgroups along M (64 "
                             "rows each, or one warpgroup)");
        auto asSync = MmaAttr::get(mma.getContext(), 2,
                                   {mma.getWarpsPerCTA()[0], 1}, {16, 8, 16});
        return mmaV2(asSync, 0, shape, error);
      }
      return mmaV2(mma, opIdx, shape, error);
    }
    // FMA operands of a blocked accumulator: A's rows (B's columns) sit
    // where the accumulator's do, and each thread holds all of K.
    auto parentLayout = cast<BlockedAttr>(operand.getParent());
    unsigned kDim = opIdx == 0 ? 1 : 0, free = 1 - kDim;
    SmallVector<int64_t> accShape(shape.begin(), shape.end());
    accShape[kDim] = 1;
    auto acc = blocked(parentLayout, accShape, error);
    if (failed(acc))
      return failure();
    Distribution dist;
    dist.shape.assign(shape.begin(), shape.end());
    auto keepFree = [&](const Basis &b) {
      Basis r(2, 0);
      r[free] = b[free];
      return r;
    };
    // Registers along the last dim first: a row-major operand's elements
    // are then adjacent in memory too.
    SmallVector<Basis> kBits, freeBits;
    addBits(kBits, 2, kDim, shape[kDim], 1);
    for (const Basis &b : acc->regBases)
      if (b[free] != 0)
        freeBits.push_back(keepFree(b));
    dist.regBases = kDim == 1 ? kBits : freeBits;
    llvm::append_range(dist.regBases, kDim == 1 ? freeBits : kBits);
    for (const Basis &b : acc->laneBases)
      dist.laneBases.push_back(keepFree(b));
    for (const Basis &b : acc->warpBases)
      dist.warpBases.push_back(keepFree(b));
    return dist;
  }
  if (auto mma = dyn_cast_or_null<MmaAttr>(layout)) {
    if (rank != 2)
      return fail(error, "mma tiles are 2-d");
    if (mma.getVersion() == 3)
      return mmaV3(mma, shape, error);
    return mmaV2(mma, -1, shape, error);
  }
  if (isa_and_nonnull<SharedAttr>(layout))
    return fail(error, "the tile lives in shared memory: only ttile.load "
                       "(from global memory) and wgmma dots take it");
  return fail(error, "the tile has no layout (run "
                     "-tessera-ttile-assign-layouts first)");
}

FailureOr<Distribution>
mlir::tessera::ttile::distributionOf(RankedTensorType type,
                                     std::string *error) {
  return describe(type.getEncoding(), type.getShape(), type.getElementType(),
                  error);
}

/// The largest power of two <= n (n >= 1).
static int64_t floorPow2(int64_t n) {
  return n < 1 ? 1 : int64_t(1) << llvm::Log2_64(uint64_t(n));
}

BlockedAttr mlir::tessera::ttile::defaultBlockedLayout(MLIRContext *ctx,
                                                       ArrayRef<int64_t> shape,
                                                       Type elementType,
                                                       int64_t numWarps) {
  unsigned rank = shape.size(), last = rank - 1;
  unsigned bits = std::max<unsigned>(8, elementType.getIntOrFloatBitWidth());
  SmallVector<int64_t> spt(rank, 1), tpw(rank, 1), wpc(rank, 1), order;
  // Up to 16 bytes along the contiguous dim per thread.
  spt[last] = std::min(floorPow2(shape[last]), int64_t(128 / bits));
  // Lanes along the fastest dims, warps along the slowest.
  int64_t lanes = 32;
  for (int d = last; d >= 0 && lanes > 1; --d) {
    int64_t t = std::min(lanes, floorPow2(shape[d] / spt[d]));
    tpw[d] = t;
    lanes /= t;
  }
  tpw[last] *= lanes; // a tile smaller than a warp: replicate
  int64_t warps = numWarps;
  for (unsigned d = 0; d < rank && warps > 1; ++d) {
    int64_t w = std::min(warps, floorPow2(shape[d] / (spt[d] * tpw[d])));
    wpc[d] = w;
    warps /= w;
  }
  wpc[0] *= warps;
  for (int d = last; d >= 0; --d)
    order.push_back(d);
  return BlockedAttr::get(ctx, spt, tpw, wpc, order);
}

int64_t mlir::tessera::ttile::kernelNumWarps(Operation *kernel) {
  if (auto w = kernel->getAttrOfType<IntegerAttr>("ttile.num_warps"))
    return w.getInt();
  return 4;
}
