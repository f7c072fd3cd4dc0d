//===- Distribution.cpp - How a tile layout spreads elements over threads -===//

#include "Distribution.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tessera::ttile;

int64_t Distribution::regs(unsigned d) const {
  return llvm::divideCeil(shape[d], footprint(d)) * spt[d];
}

int64_t Distribution::numRegs() const {
  int64_t n = 1;
  for (unsigned d = 0; d < rank(); ++d)
    n *= regs(d);
  return n;
}

SmallVector<int64_t> Distribution::regIndex(int64_t r) const {
  SmallVector<int64_t> index(rank(), 0);
  for (unsigned d : regOrder) {
    index[d] = r % regs(d);
    r /= regs(d);
  }
  return index;
}

int64_t Distribution::flatten(ArrayRef<int64_t> index) const {
  int64_t r = 0, scale = 1;
  for (unsigned d : regOrder) {
    r += index[d] * scale;
    scale *= regs(d);
  }
  return r;
}

bool Distribution::sameDim(unsigned d, const Distribution &o,
                           unsigned od) const {
  if (shape[d] != o.shape[od] || spt[d] != o.spt[od] || tpw[d] != o.tpw[od] ||
      wpc[d] != o.wpc[od] || numWarps != o.numWarps)
    return false;
  // The lane and warp strides matter only where the dim is spread.
  return (tpw[d] == 1 || laneStride[d] == o.laneStride[od]) &&
         (wpc[d] == 1 || warpStride[d] == o.warpStride[od]);
}

static FailureOr<Distribution> fail(std::string *error, std::string message) {
  if (error)
    *error = std::move(message);
  return failure();
}

/// The per-dim description of a layout for tiles of `shape`.
static FailureOr<Distribution>
describe(Attribute layout, ArrayRef<int64_t> shape, std::string *error) {
  Distribution dist;
  dist.shape.assign(shape.begin(), shape.end());
  unsigned rank = shape.size();
  if (auto blocked = dyn_cast_or_null<BlockedAttr>(layout)) {
    if (blocked.getRank() != rank)
      return fail(error, "the layout's rank differs from the tile's");
    dist.spt.assign(blocked.getSizePerThread().begin(),
                    blocked.getSizePerThread().end());
    dist.tpw.assign(blocked.getThreadsPerWarp().begin(),
                    blocked.getThreadsPerWarp().end());
    dist.wpc.assign(blocked.getWarpsPerCTA().begin(),
                    blocked.getWarpsPerCTA().end());
    dist.laneStride.assign(rank, 0);
    dist.warpStride.assign(rank, 0);
    int64_t lanes = 1, warps = 1;
    for (int64_t d : blocked.getOrder()) {
      dist.laneStride[d] = lanes;
      dist.warpStride[d] = warps;
      lanes *= dist.tpw[d];
      warps *= dist.wpc[d];
      dist.regOrder.push_back(d);
    }
    dist.numWarps = warps;
    return dist;
  }
  if (auto slice = dyn_cast_or_null<SliceAttr>(layout)) {
    // The parent's description for a tile with a unit dim inserted, less
    // that dim: each element sits on the threads that held its row.
    unsigned dim = slice.getDim();
    SmallVector<int64_t> parentShape(shape.begin(), shape.end());
    parentShape.insert(parentShape.begin() + dim, 1);
    auto parent = describe(slice.getParent(), parentShape, error);
    if (failed(parent))
      return failure();
    for (auto *v : {&parent->spt, &parent->tpw, &parent->wpc,
                    &parent->laneStride, &parent->warpStride})
      v->erase(v->begin() + dim);
    parent->shape.assign(shape.begin(), shape.end());
    SmallVector<unsigned> order;
    for (unsigned d : parent->regOrder)
      if (d != dim)
        order.push_back(d > dim ? d - 1 : d);
    parent->regOrder = order;
    return parent;
  }
  if (auto operand = dyn_cast_or_null<DotOperandAttr>(layout)) {
    // FMA operands of a blocked accumulator: A's rows (B's columns) sit
    // where the accumulator's do, and each thread holds all of K.
    auto parentLayout = dyn_cast<BlockedAttr>(operand.getParent());
    if (!parentLayout || rank != 2)
      return fail(error, "dot operands of tensor-core (#ttile.mma) "
                         "accumulators are lowered by the mma lowering");
    unsigned kDim = operand.getOpIdx() == 0 ? 1 : 0, free = 1 - kDim;
    SmallVector<int64_t> accShape = {shape[0], shape[1]};
    auto parent = describe(parentLayout, accShape, error);
    if (failed(parent))
      return failure();
    parent->spt[kDim] = shape[kDim];
    parent->tpw[kDim] = 1;
    parent->wpc[kDim] = 1;
    parent->laneStride[kDim] = parent->warpStride[kDim] = 0;
    // Registers along the last dim first: a row-major operand's elements
    // are then adjacent in memory too.
    parent->regOrder = {1, 0};
    (void)free;
    return parent;
  }
  if (isa_and_nonnull<MmaAttr>(layout))
    return fail(error, "tensor-core (#ttile.mma) tiles are lowered by the mma "
                       "lowering");
  return fail(error, "the tile has no layout (run "
                     "-tessera-ttile-assign-layouts first)");
}

FailureOr<Distribution>
mlir::tessera::ttile::distributionOf(RankedTensorType type,
                                     std::string *error) {
  return describe(type.getEncoding(), type.getShape(), error);
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
