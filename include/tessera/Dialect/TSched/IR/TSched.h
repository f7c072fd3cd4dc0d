//===- TSched.h - Tessera Schedule IR dialect -------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_TSCHED_IR_TSCHED_H
#define TESSERA_DIALECT_TSCHED_IR_TSCHED_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tessera/Dialect/TSched/IR/TSchedDialect.h.inc"

#include "tessera/Dialect/TSched/IR/TSchedEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/TSched/IR/TSchedAttrs.h.inc"

#define GET_OP_CLASSES
#include "tessera/Dialect/TSched/IR/TSchedOps.h.inc"

#endif // TESSERA_DIALECT_TSCHED_IR_TSCHED_H
