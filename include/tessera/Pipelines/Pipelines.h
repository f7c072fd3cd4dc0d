//===- Pipelines.h - Tessera compilation pipelines --------------*- C++ -*-===//
//
// The pipelines are C++ functions registered as pass pipelines, so
// `tessera-opt --tessera-cpu-pipeline` reproduces exactly what the tools
// and front ends run.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PIPELINES_PIPELINES_H
#define TESSERA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::tessera {

/// Where buildCPUPipeline() may stop (to inspect the IR at that level).
enum class CPUStage {
  /// Graph IR after shape inference, autodiff, inlining and decomposition.
  GraphOptimized,
  /// linalg and tensor ops, before the schedule.
  Linalg,
  /// After the CPU schedule (tiles, packing, vectors), before buffers.
  Scheduled,
  /// The LLVM dialect: the whole pipeline.
  LLVM,
};

/// Graph IR to the LLVM dialect for the host CPU (or the IR at `stopAfter`).
/// `keepGpuAttention` (for GraphOptimized listings that the GPU executor
/// plans) keeps the attention ops it runs as flash attention.
void buildCPUPipeline(OpPassManager &pm, CPUStage stopAfter = CPUStage::LLVM,
                      bool keepGpuAttention = false);

/// Where and how Tile IR kernels are compiled for NVIDIA GPUs.
struct TileToPTXOptions : public PassPipelineOptions<TileToPTXOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target GPU (sm_80, sm_90a, ...)"),
                           llvm::cl::init("sm_90a")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features (+ptx80, ...)"),
                               llvm::cl::init("+ptx80")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("isa (PTX text), bin (cubin, needs ptxas) or fatbin"),
      llvm::cl::init("isa")};
  Option<bool> tma{
      *this, "tma",
      llvm::cl::desc("sm_90a: fill shared-tile rings with TMA copies from a "
                     "producer warpgroup where the kernel allows it"),
      llvm::cl::init(true)};
  Option<bool> fpContract{
      *this, "fp-contract",
      llvm::cl::desc("Fuse float multiplies and adds into fma (as nvcc's "
                     "--fmad=true): one rounding instead of two, same "
                     "results run to run"),
      llvm::cl::init(true)};
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("LLVM optimization level"),
                       llvm::cl::init(3)};
};

/// Tile IR kernels (`ttile.kernel` functions) to a gpu.binary holding their
/// PTX or cubin: -tessera-ttile-assign-layouts (wgmma for sm_90a),
/// -tessera-ttile-pipeline-loads, -tessera-convert-ttile-to-gpu,
/// canonicalization, then the NVVM pipeline.
/// Math functions link libdevice from the CUDA toolkit CUDA_ROOT names.
void buildTileToPTXPipeline(OpPassManager &pm, const TileToPTXOptions &options);
/// Its two halves: Tile IR to gpu.func kernels (each with its
/// `tessera_launch_<kernel>` record), then the NVVM pipeline to the
/// gpu.binary.
void buildTileToGPUPipeline(OpPassManager &pm, const TileToPTXOptions &options);
void buildGPUToBinaryPipeline(OpPassManager &pm,
                              const TileToPTXOptions &options);

/// The whole GPU path from Graph IR: `--tessera-gpu-pipeline`.
struct GPUPipelineOptions : public PassPipelineOptions<GPUPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target GPU (sm_80, sm_90a, ...)"),
                           llvm::cl::init("sm_90a")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features (+ptx80, ...)"),
                               llvm::cl::init("+ptx80")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("isa (PTX text), bin (cubin, needs ptxas) or fatbin"),
      llvm::cl::init("isa")};
  Option<int64_t> multiprocessors{
      *this, "multiprocessors",
      llvm::cl::desc("SMs of the target card, for the GEMM tile choice"),
      llvm::cl::init(132)};
  Option<int64_t> maxRow{
      *this, "max-row",
      llvm::cl::desc("Longest row a row group reduces in one program"),
      llvm::cl::init(16384)};
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("LLVM optimization level"),
                       llvm::cl::init(3)};
  Option<int64_t> variant{
      *this, "variant",
      llvm::cl::desc("Build each tunable product with candidate N of its "
                     "autotune space (-1: the cost model's choice)"),
      llvm::cl::init(-1)};
  Option<std::string> tuning{
      *this, "tuning",
      llvm::cl::desc("A file of tuned schedules ('KEY SCHEDULE' lines)"),
      llvm::cl::init("")};
  Option<std::string> tuningText{
      *this, "tuning-text",
      llvm::cl::desc("The tuning file's text as the caller read it (parsed "
                     "instead of reading the file again)"),
      llvm::cl::init("")};
  ListOption<std::string> dims{
      *this, "dims",
      llvm::cl::desc("Sizes of the symbolic dims, NAME=SIZE (e.g. B=32,S=128): "
                     "the host program takes static shapes")};
};

/// Where buildGPUPipeline() may stop.
enum class GPUStage {
  /// Fusion groups (-tessera-gpu-form-groups).
  Groups,
  /// Each group's Tile IR kernel (-tessera-gpu-generate-kernels).
  Kernels,
  /// The host program, its kernels still Tile IR at the top level.
  Host,
  /// The host program beside its device module `@kernels`, compiled to a
  /// gpu.binary: the whole pipeline.
  Binary,
};

/// Graph IR to a host program and its compiled kernels: the Graph IR
/// optimizations (attention kept whole), -tessera-gpu-form-groups,
/// -tessera-gpu-generate-kernels, -tessera-gpu-host-program,
/// -tessera-gpu-outline-kernels, then the Tile IR -> PTX pipeline on the
/// device module.
void buildGPUPipeline(OpPassManager &pm, const GPUPipelineOptions &options,
                      GPUStage stopAfter = GPUStage::Binary);

/// Registers `tessera-cpu-pipeline`.
void registerPipelines();
/// Registers `tessera-ttile-to-ptx` and `tessera-gpu-pipeline`.
void registerGPUPipelines();

} // namespace mlir::tessera

#endif // TESSERA_PIPELINES_PIPELINES_H
