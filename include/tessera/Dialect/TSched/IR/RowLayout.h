//===- RowLayout.h - Values of a row group's [R, C] layout -------*- C++ -*-===//
//
// A row or contraction group works on one [R, C] layout: C is the last dim
// of its full shape, R the product of the others. Each value it reads or
// computes is a full tile of that shape, a row ([..., 1], one value a row),
// a column ([C], one value a column) or a scalar. Forming the groups
// (-tessera-gpu-form-groups) and generating their kernels
// (-tessera-gpu-generate-kernels) classify shapes with the same rule, so a
// group the first pass forms is one the second can compile.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TSCHED_IR_ROWLAYOUT_H
#define TESSERA_DIALECT_TSCHED_IR_ROWLAYOUT_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace mlir::tessera::tsched {

enum class RowClass { Full, Row, Col, Scalar, Periodic, None };

/// The rows a periodic value repeats: row r of the layout reads its row
/// r mod periodRows. A multiple of this, so that a row kernel's block of
/// rows (a power of two up to 16) never wraps.
inline constexpr int64_t kPeriodMultiple = 16;

/// The number of elements of a static shape.
int64_t numElements(ArrayRef<int64_t> shape);

/// How a value of `shape` spreads over the layout whose full shape is
/// `full`, right-aligned as broadcasting reads it: the full shape itself,
/// a row ([..., 1] with the full shape's leading dims), a column (ones,
/// then C), a scalar (one element), periodic (ones, then the full shape's
/// trailing dims, whose rows are a multiple of kPeriodMultiple: a rotary
/// table [S, D] of [B, H, S, D] scores), or None. In a layout of one
/// element every value of one element is the full tile.
RowClass classifyInLayout(ArrayRef<int64_t> shape, ArrayRef<int64_t> full);

/// Where a broadcast puts its source of `in` (its dims at `dims` of a
/// result of rank `rank`): `in`'s sizes at `dims`, 1 elsewhere. Nullopt if
/// a dim is out of range or the counts differ. A broadcast whose dims
/// increase reads its source's memory as this shape.
std::optional<SmallVector<int64_t>> placedShape(ArrayRef<int64_t> in,
                                                ArrayRef<int64_t> dims,
                                                size_t rank);

/// The rows of a value of `shape` as a [P, C] matrix: its elements over
/// its last dim.
int64_t periodRows(ArrayRef<int64_t> shape);

} // namespace mlir::tessera::tsched

#endif // TESSERA_DIALECT_TSCHED_IR_ROWLAYOUT_H
