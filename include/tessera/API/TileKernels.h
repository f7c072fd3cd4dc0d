//===- TileKernels.h - Tile IR kernels to PTX -------------------*- C++ -*-===//
//
// Part of Tessera's C++ API: no MLIR or LLVM types in this header.
//
// Compiles the text of a module of Tile IR kernels (`ttile.kernel`
// functions, as the Python kernel DSL writes them) for an NVIDIA GPU:
//
//   tessera::TileCompileOptions options;
//   options.chip = "sm_90a";
//   auto compiled = tessera::compileTileKernels(text, options);
//   // compiled->ptx, compiled->kernels[i].{name, numWarps, sharedBytes,
//   //                                      launch}
//
// Errors (parse, verifier, lowering) are values whose message lists each
// diagnostic as "file:line:col: error: ..." with the locations of the
// source (the kernel's Python lines for DSL kernels).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_API_TILEKERNELS_H
#define TESSERA_API_TILEKERNELS_H

#include "tessera/Runtime/LaunchRecord.h"
#include "tessera/Runtime/Result.h"

#include <string>
#include <vector>

namespace tessera {

using runtime::Error;
using runtime::Result;

struct TileCompileOptions {
  /// The GPU: sm_80, sm_86, sm_89, sm_90a (Hopper: wgmma), ...
  std::string chip = "sm_90a";
  /// PTX ISA features handed to LLVM's NVPTX backend.
  std::string features = "+ptx80";
  int optLevel = 3;
};

struct TileKernelInfo {
  std::string name;
  /// The kernel's warps (32 * numWarps threads, with a TMA producer's
  /// beside them: launch.blockThreads()).
  int numWarps = 4;
  /// Dynamic shared memory every launch needs (shared tiles), in bytes.
  unsigned sharedBytes = 0;
  /// Everything a launch needs, as the runtime reads it from the module.
  runtime::KernelLaunchRecord launch;
};

struct CompiledTileModule {
  std::string ptx;
  std::vector<TileKernelInfo> kernels;
};

/// Parses, verifies and compiles `source` (MLIR text of a module of
/// `ttile.kernel` functions; `sourceName` names it in diagnostics that
/// have no location of their own) to PTX.
Result<CompiledTileModule>
compileTileKernels(const std::string &source, const TileCompileOptions &options,
                   const std::string &sourceName = "<tile-kernels>");

} // namespace tessera

#endif // TESSERA_API_TILEKERNELS_H
