//===- CPUScheduler.h - The CPU schedule's parts ----------------*- C++ -*-===//
//
// Private to the Schedule IR transforms: the script writer
// (CPUScheduler.cpp), the IR rewrites around the scripts
// (ScheduleRewrites.cpp) and the pass that runs both (CPUSchedule.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LIB_DIALECT_TSCHED_TRANSFORMS_CPUSCHEDULER_H
#define TESSERA_LIB_DIALECT_TSCHED_TRANSFORMS_CPUSCHEDULER_H

#include "tessera/Dialect/TSched/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#include <memory>
#include <string>

namespace mlir::tessera::tsched {

/// Attributes the scripts use: an op's id for `transform.structured.match`,
/// and loops marked for accumulator hoisting and unrolling.
inline constexpr llvm::StringLiteral kIdAttr = "tsched.id";
inline constexpr llvm::StringLiteral kHoistAttr = "tsched.hoist";
inline constexpr llvm::StringLiteral kUnrollAttr = "tsched.unroll";

/// Writes the transform script of linalg ops for a vector width.
class CPUScheduler {
public:
  explicit CPUScheduler(int64_t vectorBytes);
  ~CPUScheduler();
  /// Whether `op` gets the packed contraction schedule.
  bool isGemm(linalg::LinalgOp op);
  /// Whether `op` can lead or join a row-fused group.
  bool fusible(linalg::LinalgOp op);
  /// Appends the script of `op` (tagged `id`); false when it is left alone.
  bool schedule(linalg::LinalgOp op, int64_t id, std::string &script);
  /// Appends the script of a row-fused group (producers in program order,
  /// the root last).
  void scheduleGroup(ArrayRef<linalg::LinalgOp> group, ArrayRef<int64_t> ids,
                     std::string &script);
  /// Whether a script so far packs a contraction (and needs pack lowering).
  bool usedPacking() const;

private:
  class Impl;
  std::unique_ptr<Impl> impl;
};

/// Vector rewrites for the clean-up after a script: fused multiply-adds,
/// broadcasts instead of transposes, unit dims dropped.
void populateScheduleCleanupPatterns(RewritePatternSet &patterns);
/// Whether a transpose of the two innermost dims of `op` goes through
/// registers in 16-wide tiles (f32, static sizes); `rowsPerTile`: the rows
/// of the tiles it will be split into first (0: as it is).
bool isRegisterTransposable(linalg::TransposeOp op, int64_t rowsPerTile = 0);
/// vector.transpose as shuffles (after the cleanup, so the micro-kernels'
/// broadcast-then-transpose forms are gone first).
void populateTransposeLoweringPatterns(RewritePatternSet &patterns);

/// Slices of a buffer allocated outside a loop become per-iteration
/// buffers (row-fused intermediates).
void privatizeSlices(func::FuncOp fn);

/// Copies of an unpacked GEMM result into a tensor nobody reads (fresh,
/// or zero-filled for the contraction before it was packed) fold away.
void foldCopiesIntoFreshTensors(func::FuncOp fn);

/// The unpacking transpose of a packed GEMM's result moves into the GEMM's
/// parallel loop, block by block.
void fuseUnpackIntoContraction(func::FuncOp fn);

/// Data movement left at function level (packing) runs over rows on
/// threads, copying in vectors where the innermost dim stays innermost.
void parallelizeDataMovement(func::FuncOp fn);

} // namespace mlir::tessera::tsched

#endif // TESSERA_LIB_DIALECT_TSCHED_TRANSFORMS_CPUSCHEDULER_H
