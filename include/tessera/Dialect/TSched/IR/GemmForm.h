//===- GemmForm.h - A Graph IR contraction as a GEMM --------------*- C++ -*-===//
//
// The GPU runs `tgraph.matmul`, `tgraph.batch_matmul` and the `dot_general`s
// that are batched matrix products as GEMMs: C[z] = op(A[za]) @ op(B[zb]),
// op a transpose or not, over the product Z of the result's batch dims
// (each operand's batch dims broadcast against them). Forming the groups
// and generating their kernels read a contraction through this one
// description, so a contraction group the first pass forms is one the
// second can compile.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TSCHED_IR_GEMMFORM_H
#define TESSERA_DIALECT_TSCHED_IR_GEMMFORM_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::tessera::tsched {

struct GemmForm {
  /// A is stored [K, M] (B: [N, K]) and read transposed.
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  /// The result's batch dims; each operand's, right-aligned and padded
  /// with ones to as many dims (a 1 broadcasts).
  SmallVector<int64_t> batch, aBatch, bBatch;
  /// The products of the three.
  int64_t z = 1, za = 1, zb = 1;
  /// The operands' element type (bf16, f16 or f32).
  Type operandType;

  /// Whether the batch folds into the rows: B is shared by every batch
  /// and A is not transposed, so that C is one [Z * M, N] product of A's
  /// [Z * M, K] rows.
  bool flat() const { return zb == 1 && (z == 1 || (za == z && !transA)); }
};

/// The GEMM that `op` computes, or nullopt: `op` is not a contraction,
/// its shapes are not static, its operands are not bf16, f16 or f32 of
/// one type, or (a dot_general) its batch dims do not lead in order on
/// both sides or it contracts more or other than one of the last two
/// dims of each.
std::optional<GemmForm> gemmForm(Operation *op);

} // namespace mlir::tessera::tsched

#endif // TESSERA_DIALECT_TSCHED_IR_GEMMFORM_H
