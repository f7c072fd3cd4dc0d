//===- Passes.h - Schedule IR passes ----------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_TSCHED_TRANSFORMS_PASSES_H
#define TESSERA_DIALECT_TSCHED_TRANSFORMS_PASSES_H

#include "tessera/Dialect/TSched/IR/TSched.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tessera::tsched {

#define GEN_PASS_DECL
#include "tessera/Dialect/TSched/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessera/Dialect/TSched/Transforms/Passes.h.inc"

/// The vector register width of the host CPU in bytes (64 with AVX-512,
/// 32 with AVX2, else 16).
int64_t hostVectorBytes();

} // namespace mlir::tessera::tsched

#endif // TESSERA_DIALECT_TSCHED_TRANSFORMS_PASSES_H
