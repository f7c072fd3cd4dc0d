//===- StdlibKernels.cpp - The stdlib kernels' Tile IR, built in ---------===//

#include "StdlibKernels.h"

using namespace mlir::tessera;

namespace {
const stdlib_kernels::Entry kEntries[] = {
#include "StdlibKernels.inc"
};
} // namespace

llvm::ArrayRef<stdlib_kernels::Entry> stdlib_kernels::all() {
  return kEntries;
}

const stdlib_kernels::Entry *
stdlib_kernels::find(llvm::StringRef kernel, llvm::StringRef dtype,
                     int64_t headDim, bool causal, bool hopper) {
  for (const Entry &e : kEntries)
    if (kernel == e.kernel && dtype == e.dtype && headDim == e.headDim &&
        causal == e.causal && hopper == e.hopper)
      return &e;
  return nullptr;
}
