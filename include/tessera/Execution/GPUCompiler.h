//===- GPUCompiler.h - Graph IR to a runnable GPU program -------*- C++ -*-===//
//
// Compiles a function with --tessera-gpu-pipeline and flattens what it
// gives (the host program and the gpu.binary of its kernels) into a
// runtime::GpuProgramImage, which the runtime loads and runs without the
// compiler (cuda::HostProgram) and which saves as one file.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_EXECUTION_GPUCOMPILER_H
#define TESSERA_EXECUTION_GPUCOMPILER_H

#include "tessera/Runtime/GpuProgram.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <string>

namespace mlir::tessera {

struct GPUCompileOptions {
  /// The function to compile (empty: the module's only public function).
  std::string entry;
  std::string chip = "sm_90a";
  std::string features = "+ptx80";
  /// SMs of the target card (the GEMM tile choice).
  int64_t multiprocessors = 132;
  /// Sizes of the entry's symbolic dims (the host program takes static
  /// shapes); the image records them with the entry's symbolic signature.
  std::map<std::string, int64_t> dims;
  /// Where GPU programs are kept across processes (`<key>.tgpu`, keyed by
  /// the IR, the entry, its sizes, the chip and the compiler build); empty:
  /// nowhere. A damaged file there is replaced.
  std::string cacheDirectory;
  /// Also compile the PTX into a cubin for `chip` with ptxas (from
  /// $CUDA_ROOT/bin, /usr/local/cuda/bin or the PATH), which the runtime
  /// loads without the driver's JIT: for programs shipped to other
  /// machines. An error when ptxas is not found or refuses the PTX.
  bool cubin = false;
  /// Builds each tunable product with candidate `variant` of its autotune
  /// space (-1: the cost model's choice); see tuneGpuPrograms.
  int64_t variant = -1;
  /// A file of tuned schedules (`KEY SCHEDULE` lines, as
  /// runtime::TuningTable saves them) used where a product's key matches;
  /// empty: none. Its contents are part of the cache key.
  std::string tuningFile;
};

/// Compiles `entry` of `module` (left unchanged). Errors are reported as
/// diagnostics on the module.
FailureOr<::tessera::runtime::GpuProgramImage>
compileForGPU(ModuleOp module, const GPUCompileOptions &options);

/// compileForGPU with the products' schedules tuned on CUDA device
/// `device`: when `options.tuningFile` (started if missing) lacks a
/// product of the program, the function is compiled once for each
/// candidate rank of the spaces, the programs are timed there
/// (runtime::cuda::tunePrograms, `reps` runs), and the file gains each
/// product's fastest schedule (`report`, if given, gets what was found)
/// before the tuned program is compiled. A file that knows every product
/// costs nothing more than compileForGPU (a product whose kept schedule
/// has left its space is tuned again).
FailureOr<::tessera::runtime::GpuProgramImage>
compileTunedForGPU(ModuleOp module, const GPUCompileOptions &options,
                   int device, int reps = 10, std::string *report = nullptr);

/// The image of a module that --tessera-gpu-pipeline has already run on
/// (its host function `entry`, or the only one).
FailureOr<::tessera::runtime::GpuProgramImage>
gpuProgramImage(ModuleOp compiled, StringRef entry, StringRef chip);

} // namespace mlir::tessera

#endif // TESSERA_EXECUTION_GPUCOMPILER_H
