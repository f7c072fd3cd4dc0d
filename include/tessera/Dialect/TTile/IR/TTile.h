//===- TTile.h - Tessera Tile IR dialect ------------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_TTILE_IR_TTILE_H
#define TESSERA_DIALECT_TTILE_IR_TTILE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tessera/Dialect/TTile/IR/TTileDialect.h.inc"
#include "tessera/Dialect/TTile/IR/TTileEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/TTile/IR/TTileAttrs.h.inc"

#define GET_OP_CLASSES
#include "tessera/Dialect/TTile/IR/TTileOps.h.inc"

namespace mlir::tessera::ttile {

/// Whether `attr` is one of the tile layouts.
bool isLayout(Attribute attr);
/// The rank of tiles a layout describes.
unsigned layoutRank(Attribute layout);

} // namespace mlir::tessera::ttile

#endif // TESSERA_DIALECT_TTILE_IR_TTILE_H
