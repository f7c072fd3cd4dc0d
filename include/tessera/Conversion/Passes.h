//===- Passes.h - Tessera conversion passes ---------------------*- C++ -*-===//

#ifndef TESSERA_CONVERSION_PASSES_H
#define TESSERA_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Pass/Pass.h"
#include "tessera/Dialect/TTile/IR/TTile.h"

namespace mlir::tessera {

/// Schedules in a generated GEMM's autotune space (tsched.space): the
/// estimate's best few; an autotuner compiles one program per rank.
inline constexpr size_t kGemmAutotuneSpace = 4;
/// The dynamic shared memory a Hopper block may use (227 KiB, with the
/// opt-in): the TTile GPU lowering's limit and the GEMM generator's budget
/// for its rings and output buffers.
inline constexpr int64_t kHopperSharedBytes = 227 * 1024;

#define GEN_PASS_DECL
#include "tessera/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessera/Conversion/Passes.h.inc"

} // namespace mlir::tessera

#endif // TESSERA_CONVERSION_PASSES_H
