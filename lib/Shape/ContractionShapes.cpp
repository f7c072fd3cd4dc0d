//===- ContractionShapes.cpp - matmul, dot_general, conv, attention -------===//

#include "tessera/Shape/ShapeFunctions.h"

#include "llvm/ADT/SmallSet.h"

using namespace tessera::shape;

static std::nullopt_t rankError(ShapeDiag &diag, unsigned operand,
                                const TensorShape &s,
                                const std::string &expected) {
  return diag.error(diag.operandLabel(operand) + " must have " + expected +
                    ", but has rank " + std::to_string(s.rank()) + " (shape " +
                    s.str() + ")");
}

ShapeResult tessera::shape::inferMatmul(ShapeDiag &diag, const TensorShape &lhs,
                                        const TensorShape &rhs,
                                        bool transposeLhs, bool transposeRhs) {
  if (lhs.rank() < 2)
    return rankError(diag, 0, lhs, "rank >= 2");
  if (rhs.rank() < 2)
    return rankError(diag, 1, rhs, "rank >= 2");
  unsigned lr = lhs.rank(), rr = rhs.rank();
  unsigned mDim = transposeLhs ? lr - 1 : lr - 2;
  unsigned kDim = transposeLhs ? lr - 2 : lr - 1;
  unsigned kDim2 = transposeRhs ? rr - 1 : rr - 2;
  unsigned nDim = transposeRhs ? rr - 2 : rr - 1;
  if (!diag.unifyOperandDims(lhs, 0, kDim, rhs, 1, kDim2,
                             "contracting dimension mismatch"))
    return std::nullopt;
  TensorShape lb(std::vector<DimExpr>(lhs.dims.begin(), lhs.dims.end() - 2));
  TensorShape rb(std::vector<DimExpr>(rhs.dims.begin(), rhs.dims.end() - 2));
  auto batch = inferBroadcast(diag, {lb, rb});
  if (!batch)
    return std::nullopt;
  batch->dims.push_back(lhs.dims[mDim]);
  batch->dims.push_back(rhs.dims[nDim]);
  return batch;
}

ShapeResult tessera::shape::inferBatchMatmul(ShapeDiag &diag,
                                             const TensorShape &lhs,
                                             const TensorShape &rhs) {
  if (lhs.rank() != 3)
    return rankError(diag, 0, lhs, "rank 3 ([batch, M, K])");
  if (rhs.rank() != 3)
    return rankError(diag, 1, rhs, "rank 3 ([batch, K, N])");
  auto b =
      diag.unifyOperandDims(lhs, 0, 0, rhs, 1, 0, "batch dimension mismatch");
  if (!b)
    return std::nullopt;
  if (!diag.unifyOperandDims(lhs, 0, 2, rhs, 1, 1,
                             "contracting dimension mismatch"))
    return std::nullopt;
  return TensorShape({*b, lhs.dims[1], rhs.dims[2]});
}

/// Checks that `dims` are in range for `rank` and not already in `used`.
static bool checkDims(ShapeDiag &diag, llvm::ArrayRef<int64_t> dims,
                      size_t rank, llvm::SmallSet<int64_t, 8> &used,
                      const std::string &attr) {
  for (int64_t d : dims) {
    if (d < 0 || d >= int64_t(rank)) {
      diag.error(attr + " entry " + std::to_string(d) +
                 " is out of range for rank " + std::to_string(rank));
      return false;
    }
    if (!used.insert(d).second) {
      diag.error(attr + " entry " + std::to_string(d) +
                 " repeats a dimension already used");
      return false;
    }
  }
  return true;
}

ShapeResult tessera::shape::inferDotGeneral(
    ShapeDiag &diag, const TensorShape &lhs, const TensorShape &rhs,
    llvm::ArrayRef<int64_t> lhsBatch, llvm::ArrayRef<int64_t> rhsBatch,
    llvm::ArrayRef<int64_t> lhsContract, llvm::ArrayRef<int64_t> rhsContract) {
  if (lhsBatch.size() != rhsBatch.size())
    return diag.error("lhs_batching_dims has " +
                      countOf(lhsBatch.size(), "entry", "entries") +
                      " but rhs_batching_dims has " +
                      std::to_string(rhsBatch.size()));
  if (lhsContract.size() != rhsContract.size())
    return diag.error("lhs_contracting_dims has " +
                      countOf(lhsContract.size(), "entry", "entries") +
                      " but rhs_contracting_dims has " +
                      std::to_string(rhsContract.size()));
  llvm::SmallSet<int64_t, 8> lhsUsed, rhsUsed;
  if (!checkDims(diag, lhsBatch, lhs.rank(), lhsUsed, "lhs_batching_dims") ||
      !checkDims(diag, lhsContract, lhs.rank(), lhsUsed,
                 "lhs_contracting_dims") ||
      !checkDims(diag, rhsBatch, rhs.rank(), rhsUsed, "rhs_batching_dims") ||
      !checkDims(diag, rhsContract, rhs.rank(), rhsUsed,
                 "rhs_contracting_dims"))
    return std::nullopt;
  TensorShape result;
  for (size_t i = 0; i < lhsBatch.size(); ++i) {
    auto b = diag.unifyOperandDims(lhs, 0, lhsBatch[i], rhs, 1, rhsBatch[i],
                                   "batch dimension mismatch");
    if (!b)
      return std::nullopt;
    result.dims.push_back(*b);
  }
  for (size_t i = 0; i < lhsContract.size(); ++i)
    if (!diag.unifyOperandDims(lhs, 0, lhsContract[i], rhs, 1, rhsContract[i],
                               "contracting dimension mismatch"))
      return std::nullopt;
  for (size_t d = 0; d < lhs.rank(); ++d)
    if (!lhsUsed.count(d))
      result.dims.push_back(lhs.dims[d]);
  for (size_t d = 0; d < rhs.rank(); ++d)
    if (!rhsUsed.count(d))
      result.dims.push_back(rhs.dims[d]);
  return result;
}

static bool checkPositive(ShapeDiag &diag, llvm::ArrayRef<int64_t> values,
                          size_t count, int64_t min, const std::string &name) {
  if (values.size() != count) {
    diag.error(name + " must have " + countOf(count, "entry", "entries") +
               ", but has " + std::to_string(values.size()));
    return false;
  }
  for (int64_t v : values)
    if (v < min) {
      diag.error(name + " entries must be >= " + std::to_string(min) +
                 ", but one is " + std::to_string(v));
      return false;
    }
  return true;
}

/// floor((in + padLo + padHi - dilation*(k-1) - 1) / stride) + 1
static std::optional<DimExpr>
convOutDim(ShapeDiag &diag, const DimExpr &in, const DimExpr &k, int64_t lo,
           int64_t hi, int64_t dil, int64_t stride, const std::string &which) {
  DimExpr padded = in + DimExpr::constant(lo) + DimExpr::constant(hi);
  DimExpr span = padded -
                 DimExpr::constant(dil) * (k - DimExpr::constant(1)) -
                 DimExpr::constant(1);
  DimExpr out =
      *span.floorDiv(DimExpr::constant(stride)) + DimExpr::constant(1);
  if (out.isUnknown() && !in.isUnknown() && !k.isUnknown())
    return diag.error("the padded input " + which + " overflows 64-bit sizes");
  if (auto c = out.getConstant(); c && *c < 1)
    return diag.error("the dilated kernel " + which + " (" + k.str() +
                      ", dilation " + std::to_string(dil) +
                      ") is larger than the padded input " + which + " (" +
                      padded.str() + ")");
  return out;
}

ShapeResult tessera::shape::inferConv2d(ShapeDiag &diag,
                                        const TensorShape &input,
                                        const TensorShape &filter,
                                        const Conv2dParams &p) {
  bool nhwc = p.channelsLast;
  if (input.rank() != 4)
    return rankError(diag, 0, input, nhwc ? "rank 4 (NHWC)" : "rank 4 (NCHW)");
  if (filter.rank() != 4)
    return rankError(diag, 1, filter, nhwc ? "rank 4 (HWIO)" : "rank 4 (OIHW)");
  if (!checkPositive(diag, p.strides, 2, 1, "strides") ||
      !checkPositive(diag, p.dilation, 2, 1, "dilation") ||
      !checkPositive(diag, p.padding, 4, 0, "padding"))
    return std::nullopt;
  if (p.groups < 1)
    return diag.error("groups must be >= 1, but is " +
                      std::to_string(p.groups));
  unsigned cDim = nhwc ? 3 : 1, hDim = nhwc ? 1 : 2, wDim = nhwc ? 2 : 3;
  unsigned oDim = nhwc ? 3 : 0, iDim = nhwc ? 2 : 1, khDim = nhwc ? 0 : 2,
           kwDim = nhwc ? 1 : 3;
  DimExpr groupedIn = filter.dims[iDim] * DimExpr::constant(p.groups);
  if (!diag.unify(DimSide{input.dims[cDim], diag.dimLabel(0, cDim),
                          {{0, int(cDim)}}},
                  DimSide{groupedIn,
                          diag.dimLabel(1, iDim) + " times groups (" +
                              std::to_string(p.groups) + ")",
                          {{1, int(iDim)}}, p.groups},
                  "input channel mismatch"))
    return std::nullopt;
  if (auto o = filter.dims[oDim].getConstant(); o && *o % p.groups != 0)
    return diag.error(diag.dimLabel(1, oDim) + " (output channels, " +
                      std::to_string(*o) + ") is not divisible by groups (" +
                      std::to_string(p.groups) + ")");
  auto oh = convOutDim(diag, input.dims[hDim], filter.dims[khDim], p.padding[0],
                       p.padding[1], p.dilation[0], p.strides[0], "height");
  if (!oh)
    return std::nullopt;
  auto ow = convOutDim(diag, input.dims[wDim], filter.dims[kwDim], p.padding[2],
                       p.padding[3], p.dilation[1], p.strides[1], "width");
  if (!ow)
    return std::nullopt;
  const DimExpr &n = input.dims[0], &o = filter.dims[oDim];
  return nhwc ? TensorShape({n, *oh, *ow, o}) : TensorShape({n, o, *oh, *ow});
}

ShapeResult tessera::shape::inferAttention(ShapeDiag &diag,
                                           const TensorShape &q,
                                           const TensorShape &k,
                                           const TensorShape &v) {
  if (q.rank() < 2)
    return rankError(diag, 0, q, "rank >= 2 ([..., S, D])");
  for (unsigned i = 1; i < 3; ++i) {
    const TensorShape &s = i == 1 ? k : v;
    if (s.rank() != q.rank())
      return rankError(diag, i, s,
                       "the rank of the query (" + std::to_string(q.rank()) +
                           ")");
  }
  unsigned r = q.rank();
  TensorShape result;
  for (unsigned d = 0; d + 2 < r; ++d) {
    auto b =
        diag.unifyOperandDims(q, 0, d, k, 1, d, "batch dimension mismatch");
    if (!b ||
        !diag.unifyOperandDims(q, 0, d, v, 2, d, "batch dimension mismatch"))
      return std::nullopt;
    result.dims.push_back(*b);
  }
  if (!diag.unifyOperandDims(q, 0, r - 1, k, 1, r - 1,
                             "head dimension mismatch") ||
      !diag.unifyOperandDims(k, 1, r - 2, v, 2, r - 2,
                             "key/value sequence length mismatch"))
    return std::nullopt;
  result.dims.push_back(q.dims[r - 2]);
  result.dims.push_back(v.dims[r - 1]);
  return result;
}

ShapeResult tessera::shape::inferAttentionGrad(
    ShapeDiag &diag, const TensorShape &q, const TensorShape &k,
    const TensorShape &v, const TensorShape &o, const TensorShape &dO) {
  auto result = inferAttention(diag, q, k, v);
  if (!result)
    return std::nullopt;
  unsigned r = q.rank();
  for (unsigned i = 3; i < 5; ++i) {
    const TensorShape &s = i == 3 ? o : dO;
    if (s.rank() != r)
      return rankError(diag, i, s,
                       "the rank of the query (" + std::to_string(r) + ")");
    // The output is [..., Sq, Dv]: q's dims, then v's last.
    for (unsigned d = 0; d < r; ++d)
      if (!diag.unifyOperandDims(s, i, d, d + 1 < r ? q : v, d + 1 < r ? 0 : 2,
                                 d, "does not have attention's output shape"))
        return std::nullopt;
  }
  return result;
}
