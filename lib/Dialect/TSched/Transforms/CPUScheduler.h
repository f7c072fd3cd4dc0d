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
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <memory>
#include <string>

namespace mlir::tessera::tsched {

/// Attributes the scripts use: the ops they schedule (matched once, the
/// handle split into one per op, in program order), and loops marked for
/// accumulator hoisting and unrolling.
inline constexpr llvm::StringLiteral kScheduledAttr = "tsched.scheduled";
inline constexpr llvm::StringLiteral kHoistAttr = "tsched.hoist";
inline constexpr llvm::StringLiteral kUnrollAttr = "tsched.unroll";

/// The script's handle to the scheduled op number `id` (in program order).
std::string opHandle(int64_t id);

/// The head of a script for `count` scheduled ops: their handles, one
/// match for all (each op-by-op match would walk the whole function).
std::string matchScheduledOps(int64_t count);

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
  /// Appends the script of `op` (tagged `id`), one row of a row-fused
  /// group's scf.forall: vectors within the row, no loops over threads.
  void scheduleRowOp(linalg::LinalgOp op, int64_t id, std::string &script);
  /// Whether a script so far packs a contraction (and needs pack lowering).
  bool usedPacking() const;

private:
  class Impl;
  std::unique_ptr<Impl> impl;
};

/// Row-fused groups among `ops` (in program order): a root and the
/// producers all of whose users are in its group and read them row by row
/// (row i of the consumer reads row i of the producer). Each group lists
/// its ops in program order, the root last.
SmallVector<SmallVector<linalg::LinalgOp>>
formRowGroups(ArrayRef<linalg::LinalgOp> ops,
              function_ref<bool(linalg::LinalgOp)> fusible);

/// A row-fused group after fusion.
struct RowFusion {
  /// The loop over the rows of the root.
  scf::ForallOp loop;
  /// The ops in the loop: the root's row and its producers' rows.
  SmallVector<Operation *> rowOps;
  /// Producers left outside the loop (computed once into a buffer): read
  /// outside the group, or over the recomputation budget.
  SmallVector<linalg::LinalgOp> materialized;
  /// Scalar operations per row point computed more than once.
  int64_t recomputed = 0;
};

/// Tiles the root of `group` (the last op) by rows into an scf.forall and
/// computes each producer inside it, once per distinct row slice it is
/// read through (identical slices merge first). Recomputing a producer
/// for a second, different slice is allowed while the recomputed
/// operations stay within a quarter of the group's; beyond that the
/// producer is materialized. Fails, changing nothing, when the root cannot
/// be tiled.
FailureOr<RowFusion> fuseRowGroup(RewriterBase &rewriter,
                                  ArrayRef<linalg::LinalgOp> group);

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
