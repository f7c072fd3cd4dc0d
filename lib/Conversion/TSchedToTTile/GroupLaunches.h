//===- GroupLaunches.h - Reduction kernels and launch lists -----*- C++ -*-===//
//
// The kernels of reduction groups, and what the other group kernels share
// to record their launches (`tsched.launches`): launch-list arguments and
// entries, attention launches of the stdlib kernels, layout copy kernels.
// Split from GroupKernel.h, which keeps the row and GEMM kernel.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_CONVERSION_TSCHEDTOTTILE_GROUPLAUNCHES_H
#define TESSERA_CONVERSION_TSCHEDTOTTILE_GROUPLAUNCHES_H

#include "StdlibKernels.h"
#include "tessera/Dialect/TSched/IR/TSched.h"
#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include <optional>
#include <string>

namespace mlir::tessera::group_kernels {

namespace tt = mlir::tessera::ttile;

/// The kernel of a reduction group: one reduction over a contiguous run
/// of dims of a float tensor (ReductionKernel.cpp). Its input is read as
/// [P * R, C] (R the reduced elements between P leading and C trailing
/// ones) when C > 1, and each program sums a block of BN columns of one of
/// the P batches down all R rows; as [P, R] when C == 1, each program
/// summing BM whole rows. The order is fixed by the schedule, so results
/// are the same bits at every run.
class ReductionKernel {
public:
  explicit ReductionKernel(tsched::GroupOp group, int64_t sms = 132)
      : group(group), b(group.getContext()), sms(sms) {}

  /// Checks the group and chooses the tile; on failure, why no kernel is
  /// generated for it.
  std::optional<std::string> analyze();
  /// The kernel's parameters: the input's view, then the output's.
  SmallVector<Type> signature() const;
  SmallVector<SmallVector<int64_t>> views() const;
  int64_t gridSize() const;
  int64_t numWarps() const { return warps; }
  tsched::ScheduleAttr scheduleAttr() const;
  void build(func::FuncOp kernel);
  /// After analyze(): a reduction whose programs (one per output when
  /// C == 1, per 128 columns of a batch otherwise) are fewer than the SMs,
  /// over a long run R, as two kernels: the f32 partials of `splits`
  /// chunks of the run (the input read as P * splits batches of R /
  /// splits), then the partials reduced (splits rows a batch, a mean
  /// divided by R). None when one kernel fills the chip or no chunk size
  /// divides R.
  std::optional<std::pair<ReductionKernel, ReductionKernel>> splitRows() const;
  int64_t rows() const { return p; }

private:
  void chooseTile();

  tsched::GroupOp group;
  OpBuilder b;
  int64_t sms;
  Operation *reduce = nullptr;
  tt::ReduceKind kind = tt::ReduceKind::sum;
  bool mean = false;
  int64_t p = 1, r = 1, c = 1;
  /// What a mean divides by (R, or the first stage's R of a split).
  int64_t divisor = 1;
  int64_t bm = 1, bn = 1, warps = 4;
  Type inElt, outElt;
  Value index(int64_t v, Location loc) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
};

/// What a launch-list argument reads (`tsched.launches`, see
/// -tessera-gpu-host-program): the group's input or result `index`, the
/// buffer saved with its result `index`, the buffer saved with its input
/// `index` by the group that made it, or its scratch buffer `index`.
enum class LaunchArg : int64_t {
  Input = 0,
  Result = 1,
  SavedWithResult = 2,
  SavedWithInput = 3,
  Scratch = 4,
};

/// A launch-list argument: `array<i64: kind, index, dims...>`, the buffer
/// read under the shape `dims`.
inline DenseI64ArrayAttr launchArg(Builder &b, LaunchArg kind, int64_t index,
                                   ArrayRef<int64_t> dims) {
  SmallVector<int64_t> r = {int64_t(kind), index};
  r.append(dims.begin(), dims.end());
  return b.getDenseI64ArrayAttr(r);
}

/// A launch-list entry (`tsched.launches`): `kernel` on `grid` programs
/// with `args` (launchArg()s), the `schedule` it was built with, and
/// scalar parameters after the buffers.
inline DictionaryAttr launchEntry(Builder &b, FlatSymbolRefAttr kernel,
                                  ArrayRef<int64_t> grid,
                                  ArrayRef<Attribute> args, StringRef schedule,
                                  ArrayRef<Attribute> scalars = {},
                                  StringRef tuning = {}) {
  NamedAttrList fields;
  fields.append("kernel", kernel);
  fields.append("grid", b.getDenseI64ArrayAttr(grid));
  fields.append("args", b.getArrayAttr(args));
  if (!scalars.empty())
    fields.append("scalars", b.getArrayAttr(scalars));
  fields.append("schedule", b.getStringAttr(schedule));
  // The group's tuning key (autotuned products): the runtime's tuner
  // times the launches of each key together.
  if (!tuning.empty())
    fields.append("tuning", b.getStringAttr(tuning));
  return b.getDictionaryAttr(fields);
}

/// Marks `kernel` a Tile IR kernel of `warps` warps.
inline void markKernel(func::FuncOp kernel, int64_t warps) {
  Builder b(kernel.getContext());
  kernel->setAttr("ttile.kernel", b.getUnitAttr());
  kernel->setAttr("ttile.num_warps", b.getI32IntegerAttr(int32_t(warps)));
}

/// Launches of the stdlib's flash-attention kernels for attention groups
/// (AttentionKernel.cpp). Each specialization's kernel is added to the
/// module once.
class AttentionLaunches {
public:
  AttentionLaunches(ModuleOp module, SymbolTable &symbols, bool hopper);
  /// Records the group's launches (`tsched.launches`, with `tsched.saved`
  /// or `tsched.scratch`), or `tsched.no_kernel` saying why it has none;
  /// fails only when a built-in kernel cannot be loaded.
  LogicalResult generate(tsched::GroupOp group);

private:
  FailureOr<FlatSymbolRefAttr> kernel(const stdlib_kernels::Entry &e,
                                      Location loc);

  ModuleOp module;
  SymbolTable &symbols;
  bool hopper;
  Builder b;
  llvm::DenseMap<const stdlib_kernels::Entry *, FlatSymbolRefAttr> loaded;
};

/// Copy kernels of layout groups (LayoutKernel.cpp): transposes that keep
/// the last dim, slices, concats and pads.
class LayoutKernels {
public:
  LayoutKernels(ModuleOp module, SymbolTable &symbols)
      : module(module), symbols(symbols) {}
  /// Records the group's launches (`tsched.launches`), or
  /// `tsched.no_kernel` saying why it has none; a reshape or broadcast
  /// (a view of the host program) is left as it is. Kernels are named
  /// after `fn`.
  LogicalResult generate(tsched::GroupOp group, StringRef fn);

private:
  ModuleOp module;
  SymbolTable &symbols;
  int64_t count = 0;
};

} // namespace mlir::tessera::group_kernels

#endif // TESSERA_CONVERSION_TSCHEDTOTTILE_GROUPLAUNCHES_H
