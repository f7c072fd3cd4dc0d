//===- ReductionShapes.cpp - Reductions and normalizations ----------------===//

#include "tessera/Shape/ShapeFunctions.h"

#include "llvm/ADT/SmallSet.h"

using namespace tessera::shape;

bool tessera::shape::checkDimList(ShapeDiag &diag,
                                  llvm::ArrayRef<int64_t> dims, size_t rank,
                                  const std::string &attrName,
                                  const std::string &subject) {
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= int64_t(rank)) {
      diag.error(attrName + " entry " + std::to_string(d) +
                 " is out of range for " + subject + " of rank " +
                 std::to_string(rank));
      return false;
    }
    if (!seen.insert(d).second) {
      diag.error(attrName + " names dimension " + std::to_string(d) +
                 " twice");
      return false;
    }
  }
  return true;
}

bool tessera::shape::checkAxis(ShapeDiag &diag, int64_t axis, size_t rank,
                               const std::string &attrName) {
  if (axis >= 0 && axis < int64_t(rank))
    return true;
  if (rank == 0)
    diag.error(attrName + " " + std::to_string(axis) +
               " is out of range: the operand is a scalar and has no dims");
  else
    diag.error(attrName + " " + std::to_string(axis) +
               " is out of range for an operand of rank " +
               std::to_string(rank) + " (expected 0.." +
               std::to_string(int64_t(rank) - 1) + ")");
  return false;
}

ShapeResult tessera::shape::inferReduce(ShapeDiag &diag, const TensorShape &x,
                                        llvm::ArrayRef<int64_t> dims,
                                        bool keepDims) {
  if (!checkDimList(diag, dims, x.rank(), "dims"))
    return std::nullopt;
  llvm::SmallSet<int64_t, 8> reduced(dims.begin(), dims.end());
  TensorShape result;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (!reduced.count(d))
      result.dims.push_back(x.dims[d]);
    else if (keepDims)
      result.dims.push_back(DimExpr::constant(1));
  }
  return result;
}

ShapeResult tessera::shape::inferNormalization(
    ShapeDiag &diag, const TensorShape &x,
    const std::optional<TensorShape> &scale,
    const std::optional<TensorShape> &bias, int64_t axis) {
  if (!checkAxis(diag, axis, x.rank(), "axis"))
    return std::nullopt;
  TensorShape normalized(
      std::vector<DimExpr>(x.dims.begin() + axis, x.dims.end()));
  TensorShape result = x;
  unsigned operand = 1;
  for (const auto *param : {&scale, &bias}) {
    if (!param->has_value())
      continue;
    const TensorShape &p = **param;
    if (p.rank() != normalized.rank())
      return diag.error(diag.operandLabel(operand) + " must have rank " +
                        std::to_string(normalized.rank()) +
                        " (the normalized dims " + normalized.str() +
                        " of the input), but has shape " + p.str());
    for (size_t d = 0; d < p.rank(); ++d) {
      auto u = diag.unifyOperandDims(x, 0, axis + d, p, operand, d,
                                     "normalized dimension mismatch");
      if (!u)
        return std::nullopt;
      result.dims[axis + d] = *u;
    }
    ++operand;
  }
  return result;
}

ShapeResult tessera::shape::inferCrossEntropy(ShapeDiag &diag,
                                              const TensorShape &logits,
                                              const TensorShape &labels,
                                              bool softLabels, bool reduce) {
  if (logits.rank() < 1)
    return diag.error(diag.operandLabel(0) +
                      " must have rank >= 1 ([..., classes]), but is a scalar");
  size_t expectedRank = softLabels ? logits.rank() : logits.rank() - 1;
  if (labels.rank() != expectedRank)
    return diag.error(
        diag.operandLabel(1) + " must have rank " +
        std::to_string(expectedRank) +
        (softLabels ? " (soft labels have the shape of the logits)"
                    : " (class indices have the logits' shape without the "
                      "class dim)") +
        ", but has shape " + labels.str());
  TensorShape perExample; // the logits' dims without the class dim
  for (size_t d = 0; d < expectedRank; ++d) {
    auto u = diag.unifyOperandDims(logits, 0, d, labels, 1, d,
                                   "label dimension mismatch");
    if (!u)
      return std::nullopt;
    if (d + 1 < logits.rank())
      perExample.dims.push_back(*u);
  }
  if (reduce)
    return TensorShape();
  return perExample;
}
