//===- LayoutShapes.cpp - transpose, reshape, broadcast, slice, pad -------===//

#include "tessera/Shape/ShapeFunctions.h"

#include "llvm/ADT/SmallSet.h"

using namespace tessera::shape;

ShapeResult tessera::shape::inferTranspose(ShapeDiag &diag,
                                           const TensorShape &x,
                                           llvm::ArrayRef<int64_t> perm) {
  if (perm.size() != x.rank())
    return diag.error("permutation has " +
                      countOf(perm.size(), "entry", "entries") +
                      " but the operand has rank " + std::to_string(x.rank()));
  if (!checkDimList(diag, perm, x.rank(), "permutation"))
    return std::nullopt;
  TensorShape result;
  for (int64_t p : perm)
    result.dims.push_back(x.dims[p]);
  return result;
}

ShapeResult tessera::shape::inferReshape(ShapeDiag &diag, const TensorShape &x,
                                         const TensorShape &target) {
  int unknownAt = -1;
  DimExpr known = DimExpr::constant(1);
  for (size_t d = 0; d < target.rank(); ++d) {
    if (!target.dims[d].isUnknown()) {
      known = known * target.dims[d];
      continue;
    }
    if (unknownAt >= 0)
      return diag.error("the result may have at most one '?' dimension, but "
                        "dims " +
                        std::to_string(unknownAt) + " and " +
                        std::to_string(d) + " are both '?'");
    unknownAt = int(d);
  }
  DimExpr count = x.numElements();
  std::vector<DimRef> countRefs;
  for (size_t d = 0; d < x.rank(); ++d)
    countRefs.push_back({0, int(d)});
  TensorShape result = target;
  if (unknownAt >= 0) {
    if (count.isUnknown())
      return result; // the '?' is solved at run time
    if (auto k = known.getConstant(); k && *k == 0)
      return diag.error("cannot solve the '?' dimension: the other result "
                        "dims have zero elements");
    auto c = count.getConstant(), k = known.getConstant();
    if (c && k && *c % *k != 0)
      return diag.error("cannot solve the '?' dimension: " +
                        diag.operandLabel(0) + " has " + std::to_string(*c) +
                        " elements, which is not a multiple of the other "
                        "result dims' product " + std::to_string(*k));
    DimExpr solved = *count.floorDiv(known);
    result.dims[unknownAt] = solved;
    known = known * solved;
  }
  if (!diag.unify(count, diag.operandLabel(0) + " element count",
                  std::move(countRefs), known, "result element count", {},
                  "reshape must preserve the element count"))
    return std::nullopt;
  return result;
}

ShapeResult
tessera::shape::inferBroadcastInDim(ShapeDiag &diag, const TensorShape &x,
                                    const TensorShape &target,
                                    llvm::ArrayRef<int64_t> broadcastDims) {
  if (broadcastDims.size() != x.rank())
    return diag.error("broadcast_dimensions has " +
                      countOf(broadcastDims.size(), "entry", "entries") +
                      " but the operand has rank " + std::to_string(x.rank()));
  if (!checkDimList(diag, broadcastDims, target.rank(), "broadcast_dimensions",
                    "the result"))
    return std::nullopt;
  TensorShape result = target;
  for (size_t i = 0; i < x.rank(); ++i) {
    int64_t r = broadcastDims[i];
    // A '?' result dim cannot be expanded to: it takes the operand's dim.
    auto d = diag.requireEqualOrOne(
        DimSide{x.dims[i], diag.dimLabel(0, i), {{0, int(i)}}},
        DimSide{target.dims[r], "result dim " + std::to_string(r), {}},
        "broadcast_in_dim needs each operand dim to be 1 or equal to its "
        "result dim");
    if (!d)
      return std::nullopt;
    result.dims[r] = *d;
  }
  for (size_t r = 0; r < result.rank(); ++r)
    if (result.dims[r].isUnknown() &&
        llvm::find(broadcastDims, int64_t(r)) == broadcastDims.end())
      return diag.error("result dim " + std::to_string(r) +
                        " is '?' and no operand dim determines it");
  return result;
}

ShapeResult tessera::shape::inferSlice(ShapeDiag &diag, const TensorShape &x,
                                       llvm::ArrayRef<DimExpr> start,
                                       llvm::ArrayRef<DimExpr> limit,
                                       llvm::ArrayRef<int64_t> stride) {
  size_t r = x.rank();
  if (start.size() != r || limit.size() != r || stride.size() != r)
    return diag.error("start, limit and stride need one entry per operand dim "
                      "(" +
                      std::to_string(r) + "), but have " +
                      std::to_string(start.size()) + ", " +
                      std::to_string(limit.size()) + " and " +
                      std::to_string(stride.size()));
  TensorShape result;
  for (size_t d = 0; d < r; ++d) {
    std::string at = "dim " + std::to_string(d);
    if (start[d].isUnknown() || limit[d].isUnknown())
      return diag.error("start and limit of " + at + " must be known");
    if (stride[d] < 1)
      return diag.error("stride of " + at + " must be >= 1, but is " +
                        std::to_string(stride[d]));
    auto negativeFor = [](const DimExpr &e) { // e < 0 for all symbols
      auto lb = (DimExpr::constant(0) - e).lowerBound();
      return lb && *lb > 0;
    };
    if (negativeFor(start[d]))
      return diag.error("start of " + at + " is negative (" + start[d].str() +
                        ")");
    DimExpr size = limit[d] - start[d];
    if (negativeFor(size))
      return diag.error("limit of " + at + " (" + limit[d].str() +
                        ") is below its start (" + start[d].str() + ")");
    auto over = (limit[d] - x.dims[d]).lowerBound();
    if (!x.dims[d].isUnknown() && over && *over > 0)
      return diag.error("limit of " + at + " (" + limit[d].str() +
                        ") is past the end of " + diag.dimLabel(0, d) + " (" +
                        x.dims[d].str() + ")");
    // Bounds that hold only for some sizes (x[1:] of a dim that may be
    // empty) are checked at run time: 0 <= start <= limit <= dim.
    DimSide zero{DimExpr::constant(0), "0", {}};
    DimSide from{start[d], "its start", {}}, to{limit[d], "its limit", {}};
    DimSide end{x.dims[d], diag.dimLabel(0, d), {DimRef{0, int(d)}}};
    std::string what = "slice of " + at;
    if (!diag.requireLessEqual(zero, from, what) ||
        !diag.requireLessEqual(from, to, what) ||
        !diag.requireLessEqual(to, end, what))
      return std::nullopt;
    result.dims.push_back(*(size + DimExpr::constant(stride[d] - 1))
                               .floorDiv(DimExpr::constant(stride[d])));
  }
  return result;
}

ShapeResult tessera::shape::inferDynamicSlice(ShapeDiag &diag,
                                              const TensorShape &x,
                                              size_t numStarts,
                                              llvm::ArrayRef<DimExpr> sizes) {
  if (numStarts != x.rank())
    return diag.error("expected one start index per operand dim (" +
                      std::to_string(x.rank()) + "), but got " +
                      std::to_string(numStarts));
  if (sizes.size() != x.rank())
    return diag.error("sizes has " + countOf(sizes.size(), "entry", "entries") +
                      " but the operand has rank " + std::to_string(x.rank()));
  for (size_t d = 0; d < x.rank(); ++d) {
    if (sizes[d].isUnknown())
      return diag.error("size of dim " + std::to_string(d) + " must be known");
    auto lb = sizes[d].lowerBound();
    if (!lb || *lb < 0)
      return diag.error("size of dim " + std::to_string(d) + " (" +
                        sizes[d].str() + ") may be negative");
    auto over = (sizes[d] - x.dims[d]).lowerBound();
    if (!x.dims[d].isUnknown() && over && *over > 0)
      return diag.error("size of dim " + std::to_string(d) + " (" +
                        sizes[d].str() + ") exceeds " + diag.dimLabel(0, d) +
                        " (" + x.dims[d].str() + ")");
  }
  return TensorShape(std::vector<DimExpr>(sizes.begin(), sizes.end()));
}

ShapeResult tessera::shape::inferConcat(ShapeDiag &diag,
                                        llvm::ArrayRef<TensorShape> ops,
                                        int64_t dim) {
  if (ops.empty())
    return diag.error("expected at least one operand");
  if (!checkAxis(diag, dim, ops[0].rank()))
    return std::nullopt;
  TensorShape result = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    if (ops[i].rank() != ops[0].rank())
      return diag.error(diag.operandLabel(i) + " has rank " +
                        std::to_string(ops[i].rank()) + " but " +
                        diag.operandLabel(0) + " has rank " +
                        std::to_string(ops[0].rank()));
    for (size_t d = 0; d < ops[0].rank(); ++d) {
      if (int64_t(d) == dim) {
        result.dims[d] = result.dims[d] + ops[i].dims[d];
        continue;
      }
      auto u = diag.unifyOperandDims(ops[0], 0, d, ops[i], i, d,
                                     "non-concatenated dimension mismatch");
      if (!u)
        return std::nullopt;
      result.dims[d] = *u;
    }
  }
  return result;
}

ShapeResult tessera::shape::inferPad(ShapeDiag &diag, const TensorShape &x,
                                     llvm::ArrayRef<int64_t> low,
                                     llvm::ArrayRef<int64_t> high,
                                     llvm::ArrayRef<int64_t> interior) {
  size_t r = x.rank();
  if (low.size() != r || high.size() != r || interior.size() != r)
    return diag.error("low, high and interior need one entry per operand dim "
                      "(" +
                      std::to_string(r) + "), but have " +
                      std::to_string(low.size()) + ", " +
                      std::to_string(high.size()) + " and " +
                      std::to_string(interior.size()));
  TensorShape result;
  for (size_t d = 0; d < r; ++d) {
    if (interior[d] < 0)
      return diag.error("interior padding of dim " + std::to_string(d) +
                        " must be >= 0, but is " + std::to_string(interior[d]));
    const DimExpr &n = x.dims[d];
    DimExpr gaps = n - DimExpr::constant(1);
    if (auto c = n.getConstant(); c && *c == 0)
      gaps = DimExpr::constant(0);
    DimExpr out = n + DimExpr::constant(low[d]) + DimExpr::constant(high[d]) +
                  gaps * DimExpr::constant(interior[d]);
    if (out.isUnknown() && !n.isUnknown())
      return diag.error("padding of dim " + std::to_string(d) +
                        " overflows 64-bit sizes");
    if (auto c = out.getConstant(); c && *c < 0)
      return diag.error("padding makes dim " + std::to_string(d) +
                        " negative (" + std::to_string(*c) + ")");
    result.dims.push_back(out);
  }
  return result;
}
