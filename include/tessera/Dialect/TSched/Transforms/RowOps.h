//===- RowOps.h - Graph IR ops a row kernel takes in special ways -*- C++ -*-===//
//
// Forming GPU fusion groups (-tessera-gpu-form-groups) and generating their
// kernels (-tessera-gpu-generate-kernels) agree on which Graph IR ops a row
// kernel computes across its rows (reductions) and which slices and
// transposes it reads or writes in place instead of copying (and the head
// transposes an attention kernel reads and writes in place): the tests are
// spelled here once, so a group the first pass forms around such an op is
// one the second compiles.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TSCHED_TRANSFORMS_ROWOPS_H
#define TESSERA_DIALECT_TSCHED_TRANSFORMS_ROWOPS_H

#include "tessera/Dialect/TGraph/IR/TGraph.h"

namespace mlir::tessera::tsched {

/// Whether `op` is a reduction a row kernel can compute along its rows
/// (when it reduces the last dim): a sum, mean, max or min, or an argmax
/// or argmin.
inline bool isRowReduction(Operation *op) {
  return isa<tgraph::ReduceSumOp, tgraph::ReduceMeanOp, tgraph::ReduceMaxOp,
             tgraph::ReduceMinOp, tgraph::ArgmaxOp, tgraph::ArgminOp>(op);
}

/// Whether `op` is a slice of its operand's last dim alone (every other
/// dim whole, unit steps, static shapes, at least one column): a window of
/// the operand's columns, which a row kernel reads in place.
inline bool isColumnWindow(Operation *op) {
  auto slice = dyn_cast<tgraph::SliceOp>(op);
  if (!slice)
    return false;
  auto in = dyn_cast<RankedTensorType>(slice.getX().getType());
  auto out = dyn_cast<RankedTensorType>(slice.getResult().getType());
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
      in.getRank() == 0 || in.getRank() != out.getRank() ||
      out.getShape().back() == 0)
    return false;
  auto start = slice.getStart().getDims();
  int64_t last = in.getRank() - 1;
  for (int64_t d = 0; d <= last; ++d) {
    std::optional<int64_t> c = start[d].getConstant();
    if (!c || slice.getStride()[d] != 1 ||
        (d < last && (*c != 0 || out.getDimSize(d) != in.getDimSize(d))))
      return false;
  }
  return true;
}

/// Whether `op` is a transpose of leading dims (the last dim stays last)
/// of static shapes: its rows are another order of its operand's rows,
/// which a row kernel reads or writes in place.
inline bool isRowTranspose(Operation *op) {
  auto t = dyn_cast<tgraph::TransposeOp>(op);
  if (!t)
    return false;
  ArrayRef<int64_t> perm = t.getPermutation();
  return t.getX().getType().hasStaticShape() && perm.size() >= 2 &&
         perm.back() == int64_t(perm.size()) - 1;
}

/// Whether `op` is a head transpose: [B, S, H, D] to [B, H, S, D] or back
/// (a rank-4 transpose swapping dims 1 and 2, static shapes). Attention
/// kernels read and write such a tensor in place, its heads side by side
/// in each row of [B, S, H*D], so splitting heads off a product and
/// merging them back costs no copies.
inline bool isHeadTranspose(Operation *op) {
  auto t = dyn_cast<tgraph::TransposeOp>(op);
  return t && t.getX().getType().hasStaticShape() &&
         t.getPermutation() == ArrayRef<int64_t>({0, 2, 1, 3});
}

} // namespace mlir::tessera::tsched

#endif // TESSERA_DIALECT_TSCHED_TRANSFORMS_ROWOPS_H
