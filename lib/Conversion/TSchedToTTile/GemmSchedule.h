//===- GemmSchedule.h - The schedules of a contraction group's GEMM -*- C++ -*-===//
//
// How a contraction group's GEMM is tiled: the schedule type, the
// ping-pong GEMM's defaults, and the estimate that ranks the candidates
// of a product's autotune space (GemmKernel.cpp). Private to
// -tessera-gpu-generate-kernels.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_CONVERSION_TSCHEDTOTTILE_GEMMSCHEDULE_H
#define TESSERA_CONVERSION_TSCHEDTOTTILE_GEMMSCHEDULE_H

#include "tessera/Dialect/TSched/IR/GemmForm.h"
#include "tessera/Dialect/TSched/IR/TSched.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace mlir::tessera::group_kernels {

/// A GEMM's schedule: the output tile, the K step, warps and the loads'
/// pipeline stages; `splits` > 1 splits K (see chooseGemmSchedule);
/// `pingpong` runs two programs a block, taking turns on the tensor cores.
struct GemmSchedule {
  int64_t bm, bn, bk, warps, stages;
  int64_t splits = 1;
  bool pingpong = false;

  /// As a schedule (split only when K is split).
  tsched::ScheduleAttr attr(MLIRContext *ctx) const {
    return tsched::ScheduleAttr::get(ctx, {bm, bn}, bk, {}, 0, 0, warps,
                                     stages, splits > 1 ? splits : 0,
                                     pingpong);
  }
};

/// Programs a block of a ping-pong GEMM. (Its producer warps keep the
/// default 96 registers, the consumers 200: with fewer the producer's
/// loops spill, ptxas, sm_90a.)
constexpr int64_t kPingPongPrograms = 2;
/// The ping-pong GEMM's schedule (the parts a product's own `pingpong`
/// schedule does not give come from it): a 128x128 tile a warpgroup, as
/// the cooperative 128x256 tile gives each of its two.
constexpr GemmSchedule kPingPongSchedule{128, 128, 64, 4, 4, 1, true};

/// The tiles a GEMM of `form` is built with: of the candidates for its
/// operand type (wide tiles on the tensor cores, narrower ones for small
/// products; f32 on FMAs), the one that finishes first on `sms`
/// multiprocessors, counting waves of tiles and the lower throughput of
/// smaller tiles. A 128x256 tile keeps 128 f32 accumulators a thread: with
/// an epilogue beyond the final cast its temporaries spill (ptxas,
/// sm_90a), so it is only a candidate for plain products.
///
/// On Hopper (`hopper`), a product of 16-bit operands with an epilogue
/// beyond the final cast may also be built as a ping-pong GEMM (second in
/// its space, never the estimate's choice): two programs a block, one
/// warpgroup each with a 64x128 tile of its own, on a persistent grid of
/// one block an SM, the programs taking turns to run their K loops so that
/// the tensor cores work through one's while the other runs its epilogue.
///
/// With `maysplit`, a product of few output tiles and a long K may also
/// split K in `splits` equal chunks: one launch writes each chunk's f32
/// product of each tile (a plain product, so any tile), a second adds the
/// chunks in order and runs the epilogue. The split is chosen when its
/// time (the programs' waves, plus writing and reading the partials and
/// one more launch) is below the unsplit kernel's. The order of the sums
/// is fixed by the schedule, so results are the same bits at every run.
GemmSchedule chooseGemmSchedule(const tsched::GemmForm &form, int64_t sms,
                                bool plain, bool maysplit = false);
/// The schedules chooseGemmSchedule weighs (each tile with each split it
/// may take), fastest first by its estimate, the first few of
/// them (kGemmAutotuneSpace): the autotune space of the product.
///
/// On Hopper the K loop's operands come through a ring of shared tiles
/// that TMA fills, and each 16-bit output tile leaves through a shared
/// buffer of its own (`stagedOutputs` of them). A whole tile of the space
/// takes the deepest ring (up to kMaxGemmStages) that fits in the block's
/// shared memory beside those buffers, never fewer stages than its
/// candidate's: a deeper ring keeps more loads in flight over L2's latency.
///
/// A 128x256 tile (128 accumulators a consumer thread) is in the space of
/// a plain product and of one whose epilogue is `wideEpilogue`: it holds no
/// tile of its own beside the accumulator (it reads vectors only, a bias,
/// and writes 16-bit tiles), which fits the consumers' registers.
SmallVector<GemmSchedule> gemmScheduleSpace(const tsched::GemmForm &form,
                                            int64_t sms, bool plain,
                                            bool maysplit, bool hopper,
                                            int64_t stagedOutputs = 0,
                                            bool wideEpilogue = false);

/// The ping-pong GEMM of a product of `form` whose epilogue stores
/// `stagedOutputs` 16-bit tiles: kPingPongSchedule with the deepest ring
/// the two programs' shared ring can take.
GemmSchedule pingPongSchedule(const tsched::GemmForm &form,
                              int64_t stagedOutputs);

/// The deepest ring a Hopper GEMM's space gives a tile (cuBLAS keeps six
/// 128x128x64 stages in flight on the H100 and H200).
constexpr int64_t kMaxGemmStages = 6;

} // namespace mlir::tessera::group_kernels

#endif // TESSERA_CONVERSION_TSCHEDTOTTILE_GEMMSCHEDULE_H
