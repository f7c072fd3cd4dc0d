//===- DimValues.h - Symbolic dims as run-time index values -----*- C++ -*-===//
//
// Turning a dimension expression (`B*H`, `D/H`, `S-1`) into `index`
// arithmetic, given a way to get each symbol's run-time value. Used where
// the compiler needs sizes at run time: shape checks and the lowering of
// ops whose result shapes are symbolic.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TGRAPH_IR_DIMVALUES_H
#define TESSERA_DIALECT_TGRAPH_IR_DIMVALUES_H

#include "tessera/Shape/DimExpr.h"

#include "mlir/IR/Builders.h"

namespace mlir::tessera::tgraph {

/// Builds `expr` with arith ops on `index` values. `symbol` returns the
/// value of a symbol, or failure (after emitting a diagnostic) when it has
/// none. Fails for `?`.
FailureOr<Value> buildDimExpr(OpBuilder &builder, Location loc,
                              const ::tessera::shape::DimExpr &expr,
                              function_ref<FailureOr<Value>(StringRef)> symbol);

} // namespace mlir::tessera::tgraph

#endif // TESSERA_DIALECT_TGRAPH_IR_DIMVALUES_H
