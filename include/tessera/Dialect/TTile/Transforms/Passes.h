//===- Passes.h - Tile IR passes --------------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_TTILE_TRANSFORMS_PASSES_H
#define TESSERA_DIALECT_TTILE_TRANSFORMS_PASSES_H

#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tessera::ttile {

#define GEN_PASS_DECL
#include "tessera/Dialect/TTile/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessera/Dialect/TTile/Transforms/Passes.h.inc"

} // namespace mlir::tessera::ttile

#endif // TESSERA_DIALECT_TTILE_TRANSFORMS_PASSES_H
