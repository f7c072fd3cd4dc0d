//===- Distribution.h - How a tile layout spreads elements over threads ---===//
//
// A tile of shape S with a blocked layout is held by the 32 * W threads of a
// program: along dim d, each thread holds `spt[d]` contiguous elements, the
// lanes of a warp cover `tpw[d]` such blocks and the warps `wpc[d]`; a tile
// larger than that footprint repeats it, a smaller one wraps (elements are
// replicated). A thread's elements are its registers, numbered with
// `regOrder[0]` the fastest dim. Slices (reduction results) and the FMA dot
// operands of a blocked accumulator are described the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_CONVERSION_TTILETOGPU_DISTRIBUTION_H
#define TESSERA_CONVERSION_TTILETOGPU_DISTRIBUTION_H

#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::tessera::ttile {

struct Distribution {
  SmallVector<int64_t> shape;
  /// Per tile dim: elements per thread, lanes, warps, and the stride of the
  /// dim's lane (warp) index within the lane (warp) id.
  SmallVector<int64_t> spt, tpw, wpc, laneStride, warpStride;
  /// Tile dims, the one whose registers are adjacent first.
  SmallVector<unsigned> regOrder;
  int64_t numWarps = 1;

  unsigned rank() const { return shape.size(); }
  int64_t footprint(unsigned d) const { return spt[d] * tpw[d] * wpc[d]; }
  /// Whether dim d is smaller than the footprint, so that elements repeat.
  bool wraps(unsigned d) const { return shape[d] < footprint(d); }
  /// Registers a thread holds along dim d.
  int64_t regs(unsigned d) const;
  int64_t numRegs() const;
  /// Register number <-> per-dim register indices.
  SmallVector<int64_t> regIndex(int64_t r) const;
  int64_t flatten(ArrayRef<int64_t> index) const;
  /// The part of the coordinate along d that does not depend on the thread,
  /// for register index `rd` along d (before wrapping).
  int64_t regOffset(unsigned d, int64_t rd) const {
    return (rd / spt[d]) * footprint(d) + rd % spt[d];
  }
  /// Whether dim d of two distributions puts the same coordinates on the
  /// same threads and registers.
  bool sameDim(unsigned d, const Distribution &other, unsigned od) const;
};

/// The distribution of a tile type, or an error message naming what is not
/// supported.
FailureOr<Distribution> distributionOf(RankedTensorType type,
                                       std::string *error = nullptr);

/// The blocked layout Tessera picks for a tile without one.
BlockedAttr defaultBlockedLayout(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                 Type elementType, int64_t numWarps);

/// The warp count of a kernel function (`ttile.num_warps`, default 4).
int64_t kernelNumWarps(Operation *kernel);

} // namespace mlir::tessera::ttile

#endif // TESSERA_CONVERSION_TTILETOGPU_DISTRIBUTION_H
