//===- Passes.h - Tessera transforms on upstream dialects -------*- C++ -*-===//

#ifndef TESSERA_TRANSFORMS_PASSES_H
#define TESSERA_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tessera {

#define GEN_PASS_DECL
#include "tessera/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessera/Transforms/Passes.h.inc"

} // namespace mlir::tessera

#endif // TESSERA_TRANSFORMS_PASSES_H
