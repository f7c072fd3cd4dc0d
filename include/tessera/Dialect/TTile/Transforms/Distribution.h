//===- Distribution.h - How a tile layout spreads elements over threads ---===//
//
// A program's 32 * W threads hold a tile's elements in registers. Every
// layout Tessera lowers (blocked, slices, the FMA dot operands, the
// tensor-core fragments) maps a register number, lane id and warp id to an
// element linearly: each bit of the three numbers adds a fixed offset (its
// basis) to the element's coordinates, and coordinates wrap modulo the
// tile's (power-of-two) shape, which replicates elements of tiles smaller
// than the layout's footprint:
//
//   coord = (sum_i r_i * regBases[i] + sum_j l_j * laneBases[j]
//            + sum_k w_k * warpBases[k]) mod shape
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TTILE_TRANSFORMS_DISTRIBUTION_H
#define TESSERA_DIALECT_TTILE_TRANSFORMS_DISTRIBUTION_H

#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::tessera::ttile {

using Basis = SmallVector<int64_t, 2>;

struct Distribution {
  SmallVector<int64_t> shape;
  SmallVector<Basis> regBases, laneBases, warpBases;

  unsigned rank() const { return shape.size(); }
  int64_t numRegs() const { return int64_t(1) << regBases.size(); }
  int64_t numWarps() const { return int64_t(1) << warpBases.size(); }
  /// The register part of register r's coordinates (before wrapping).
  Basis regCoord(int64_t r) const;
  /// Whether coordinates along dim d can reach past the shape (elements
  /// repeat over threads or registers).
  bool wraps(unsigned d) const;
};

/// The distribution of a tile type, or failure with a message in `error`.
FailureOr<Distribution> distributionOf(RankedTensorType type,
                                       std::string *error = nullptr);

/// The blocked layout Tessera picks for a tile without one.
BlockedAttr defaultBlockedLayout(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                 Type elementType, int64_t numWarps);

/// The warp count of a kernel function (`ttile.num_warps`, default 4).
int64_t kernelNumWarps(Operation *kernel);

} // namespace mlir::tessera::ttile

#endif // TESSERA_DIALECT_TTILE_TRANSFORMS_DISTRIBUTION_H
