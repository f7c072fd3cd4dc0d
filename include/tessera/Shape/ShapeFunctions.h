//===- ShapeFunctions.h - Shape rules of the Graph IR ops -------*- C++ -*-===//
//
// One pure function per family of Graph IR ops. They take operand shapes and
// attribute values (no IR types), return the result shape, and report through
// a ShapeDiag. The `tgraph` verifiers and InferTypeOpInterface hooks call
// them, and so does the Python tracer, which is why a shape mistake reads the
// same at trace time and at compile time.
//
// Operand positions in messages follow the op's operand order.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SHAPE_SHAPEFUNCTIONS_H
#define TESSERA_SHAPE_SHAPEFUNCTIONS_H

#include "tessera/Shape/ShapeDiag.h"

#include "llvm/ADT/StringMap.h"

namespace tessera::shape {

using ShapeResult = std::optional<TensorShape>;

//===-- Elementwise ------------------------------------------------------===//

/// NumPy-style broadcasting, right-aligned. A dimension broadcasts only when
/// it is statically 1; any other pair of dims must be equal (symbolic pairs
/// that may differ become run-time checks).
ShapeResult inferBroadcast(ShapeDiag &diag, llvm::ArrayRef<TensorShape> ops);

//===-- Contractions -----------------------------------------------------===//

/// matmul: [..., M, K] x [..., K, N] -> [..., M, N], batch dims broadcast.
/// `transposeLhs`/`transposeRhs` swap the last two dims of that operand.
ShapeResult inferMatmul(ShapeDiag &diag, const TensorShape &lhs,
                        const TensorShape &rhs, bool transposeLhs,
                        bool transposeRhs);

/// batch_matmul: [B, M, K] x [B, K, N] -> [B, M, N].
ShapeResult inferBatchMatmul(ShapeDiag &diag, const TensorShape &lhs,
                             const TensorShape &rhs);

/// dot_general (StableHLO semantics): result is batch dims, then lhs free
/// dims, then rhs free dims.
ShapeResult inferDotGeneral(ShapeDiag &diag, const TensorShape &lhs,
                            const TensorShape &rhs,
                            llvm::ArrayRef<int64_t> lhsBatch,
                            llvm::ArrayRef<int64_t> rhsBatch,
                            llvm::ArrayRef<int64_t> lhsContract,
                            llvm::ArrayRef<int64_t> rhsContract);

/// conv2d. `channelsLast`: input NHWC and filter HWIO; otherwise NCHW/OIHW.
/// `padding` is [top, bottom, left, right].
struct Conv2dParams {
  std::vector<int64_t> strides{1, 1};
  std::vector<int64_t> padding{0, 0, 0, 0};
  std::vector<int64_t> dilation{1, 1};
  int64_t groups = 1;
  bool channelsLast = false;
};
ShapeResult inferConv2d(ShapeDiag &diag, const TensorShape &input,
                        const TensorShape &filter, const Conv2dParams &p);

/// attention: q [..., Sq, D], k [..., Sk, D], v [..., Sk, Dv] ->
/// [..., Sq, Dv]; leading dims must match exactly.
ShapeResult inferAttention(ShapeDiag &diag, const TensorShape &q,
                           const TensorShape &k, const TensorShape &v);
/// attention_grad: q, k, v as for attention, then the output and its
/// gradient, both of attention's result shape. Checks them and returns the
/// attention result's shape (the gradients have the shapes of q, k, v).
ShapeResult inferAttentionGrad(ShapeDiag &diag, const TensorShape &q,
                               const TensorShape &k, const TensorShape &v,
                               const TensorShape &o, const TensorShape &dO);

//===-- Reductions and normalizations ------------------------------------===//

/// Checks a list of distinct in-range dims ("reduction dims") of `subject`
/// ("an operand", "the result").
bool checkDimList(ShapeDiag &diag, llvm::ArrayRef<int64_t> dims, size_t rank,
                  const std::string &attrName,
                  const std::string &subject = "an operand");
/// Reduction over `dims` (all dims if empty and `allIfEmpty`).
ShapeResult inferReduce(ShapeDiag &diag, const TensorShape &x,
                        llvm::ArrayRef<int64_t> dims, bool keepDims);
/// A single in-range axis (softmax, argmax, ...).
bool checkAxis(ShapeDiag &diag, int64_t axis, size_t rank,
               const std::string &attrName = "dim");
/// layernorm/rmsnorm: normalizes dims [axis, rank); scale and bias (if
/// present, shape nullopt otherwise) must have the shape of those dims.
ShapeResult inferNormalization(ShapeDiag &diag, const TensorShape &x,
                               const std::optional<TensorShape> &scale,
                               const std::optional<TensorShape> &bias,
                               int64_t axis);
/// cross_entropy: logits [..., C] with integer labels [...] or soft labels
/// [..., C]; `reduce` gives a scalar, else the shape [...].
ShapeResult inferCrossEntropy(ShapeDiag &diag, const TensorShape &logits,
                              const TensorShape &labels, bool softLabels,
                              bool reduce);

//===-- Layout -----------------------------------------------------------===//

ShapeResult inferTranspose(ShapeDiag &diag, const TensorShape &x,
                           llvm::ArrayRef<int64_t> permutation);
/// reshape to `target`; at most one target dim may be `?` and is solved from
/// the element count. Element counts that may differ become a run-time
/// check.
ShapeResult inferReshape(ShapeDiag &diag, const TensorShape &x,
                         const TensorShape &target);
/// broadcast_in_dim: operand dim i maps to result dim `broadcastDims[i]` and
/// must be 1 or equal to it.
ShapeResult inferBroadcastInDim(ShapeDiag &diag, const TensorShape &x,
                                const TensorShape &target,
                                llvm::ArrayRef<int64_t> broadcastDims);
/// slice with per-dim start, limit (exclusive) and stride > 0.
ShapeResult inferSlice(ShapeDiag &diag, const TensorShape &x,
                       llvm::ArrayRef<DimExpr> start,
                       llvm::ArrayRef<DimExpr> limit,
                       llvm::ArrayRef<int64_t> stride);
/// dynamic_slice: `numStarts` index operands and static `sizes`.
ShapeResult inferDynamicSlice(ShapeDiag &diag, const TensorShape &x,
                              size_t numStarts, llvm::ArrayRef<DimExpr> sizes);
ShapeResult inferConcat(ShapeDiag &diag, llvm::ArrayRef<TensorShape> ops,
                        int64_t dim);
ShapeResult inferPad(ShapeDiag &diag, const TensorShape &x,
                     llvm::ArrayRef<int64_t> low, llvm::ArrayRef<int64_t> high,
                     llvm::ArrayRef<int64_t> interior);

//===-- Indexing ---------------------------------------------------------===//

/// gather (take along `dim`): x[..d.., N, ...] with indices I ->
/// x.shape[:dim] + I + x.shape[dim+1:].
ShapeResult inferGather(ShapeDiag &diag, const TensorShape &x,
                        const TensorShape &indices, int64_t dim);
/// scatter_add: the inverse of gather; updates must have the gather shape.
ShapeResult inferScatterAdd(ShapeDiag &diag, const TensorShape &x,
                            const TensorShape &indices,
                            const TensorShape &updates, int64_t dim);
/// embedding: table [V, D], ids [...] -> [..., D].
ShapeResult inferEmbedding(ShapeDiag &diag, const TensorShape &table,
                           const TensorShape &ids);
/// one_hot: ids [...] -> [..., numClasses].
ShapeResult inferOneHot(ShapeDiag &diag, const TensorShape &ids,
                        const DimExpr &numClasses);

//===-- Collectives ------------------------------------------------------===//

ShapeResult inferAllGather(ShapeDiag &diag, const TensorShape &x, int64_t dim,
                           int64_t groupSize);
ShapeResult inferReduceScatter(ShapeDiag &diag, const TensorShape &x,
                               int64_t dim, int64_t groupSize);
ShapeResult inferAllToAll(ShapeDiag &diag, const TensorShape &x,
                          int64_t splitDim, int64_t concatDim,
                          int64_t groupSize);

//===-- Calls ------------------------------------------------------------===//

/// Binds the symbols of a callee's parameter shapes to the caller's argument
/// shapes: a parameter dim that is a plain symbol binds it on first use;
/// every other dim must equal the argument dim after substitution.
bool bindSymbols(ShapeDiag &diag, llvm::ArrayRef<TensorShape> params,
                 llvm::ArrayRef<TensorShape> args,
                 llvm::StringMap<DimExpr> &bindings);
/// Substitutes `bindings` into `shape`.
TensorShape substitute(const TensorShape &shape,
                       const llvm::StringMap<DimExpr> &bindings);

/// Requires `actual` to have the shape `expected` (rank and every dim);
/// `what` names the pair ("carry 0 of the body").
bool requireSameShape(ShapeDiag &diag, const TensorShape &expected,
                      const std::string &expectedLabel,
                      const TensorShape &actual, const std::string &actualLabel,
                      const std::string &what);

} // namespace tessera::shape

#endif // TESSERA_SHAPE_SHAPEFUNCTIONS_H
