//===- StdlibKernels.h - The stdlib kernels' Tile IR, built in -*- C++ -*-===//
//
// The table python/tessera/stdlib/_library.py writes at build time: the
// Tile IR of each stdlib kernel specialization the compiler generates
// launches of without Python (today the flash-attention kernels).
// Private to -tessera-gpu-generate-kernels.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_CONVERSION_TSCHEDTOTTILE_STDLIBKERNELS_H
#define TESSERA_CONVERSION_TSCHEDTOTTILE_STDLIBKERNELS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir::tessera::stdlib_kernels {

struct Entry {
  /// The tile-DSL kernel (tessera.stdlib._kernels), its element type and
  /// constants.
  const char *kernel;
  const char *dtype;
  int64_t headDim;
  bool causal;
  /// The Hopper schedules (sm_90a), or those before it.
  bool hopper;
  /// The schedule's block (queries x keys for attention), which sets the
  /// grid.
  int64_t blockM, blockN;
  /// Its schedule, as `#tsched.schedule` prints it.
  const char *schedule;
  /// A module holding the kernel's func.func (Tile IR), named `kernel`.
  const char *ir;
};

llvm::ArrayRef<Entry> all();

/// The specialization, or null when the table has none.
const Entry *find(llvm::StringRef kernel, llvm::StringRef dtype,
                  int64_t headDim, bool causal, bool hopper);

} // namespace mlir::tessera::stdlib_kernels

#endif // TESSERA_CONVERSION_TSCHEDTOTTILE_STDLIBKERNELS_H
