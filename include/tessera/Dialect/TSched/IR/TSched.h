//===- TSched.h - Tessera Schedule IR dialect -------------------*- C++ -*-===//

#ifndef TESSERA_DIALECT_TSCHED_IR_TSCHED_H
#define TESSERA_DIALECT_TSCHED_IR_TSCHED_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "tessera/Dialect/TSched/IR/TSchedDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/TSched/IR/TSchedAttrs.h.inc"

#endif // TESSERA_DIALECT_TSCHED_IR_TSCHED_H
