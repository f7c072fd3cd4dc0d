//===- RowLayout.cpp - Values of a row group's [R, C] layout --------------===//

#include "tessera/Dialect/TSched/IR/RowLayout.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using namespace mlir::tessera::tsched;

int64_t mlir::tessera::tsched::numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

RowClass mlir::tessera::tsched::classifyInLayout(ArrayRef<int64_t> shape,
                                                 ArrayRef<int64_t> full) {
  bool one = numElements(shape) == 1;
  SmallVector<int64_t> padded(
      full.size() > shape.size() ? full.size() - shape.size() : 0, 1);
  llvm::append_range(padded, shape);
  if (ArrayRef<int64_t>(padded) == full || (one && numElements(full) == 1))
    return RowClass::Full;
  if (one)
    return RowClass::Scalar;
  if (shape.size() > full.size() || full.empty())
    return RowClass::None;
  ArrayRef<int64_t> lead = ArrayRef<int64_t>(padded).drop_back();
  if (lead == full.drop_back() && padded.back() == 1)
    return RowClass::Row;
  if (llvm::all_of(lead, [](int64_t d) { return d == 1; }) &&
      padded.back() == full.back())
    return RowClass::Col;
  // Ones, then the full shape's trailing dims (from j on).
  size_t j = padded.size();
  while (j > 0 && padded[j - 1] == full[j - 1])
    --j;
  if (j < padded.size() &&
      llvm::all_of(ArrayRef<int64_t>(padded).take_front(j),
                   [](int64_t d) { return d == 1; }) &&
      periodRows(padded) % kPeriodMultiple == 0)
    return RowClass::Periodic;
  return RowClass::None;
}

std::optional<SmallVector<int64_t>>
mlir::tessera::tsched::placedShape(ArrayRef<int64_t> in,
                                   ArrayRef<int64_t> dims, size_t rank) {
  if (dims.size() != in.size())
    return std::nullopt;
  SmallVector<int64_t> placed(rank, 1);
  for (auto [d, size] : llvm::zip(dims, in)) {
    if (d < 0 || d >= int64_t(rank))
      return std::nullopt;
    placed[d] = size;
  }
  return placed;
}

int64_t mlir::tessera::tsched::periodRows(ArrayRef<int64_t> shape) {
  if (shape.empty() || shape.back() == 0)
    return 1;
  return numElements(shape) / shape.back();
}
