//===- TGraphTypes.cpp - Graph IR types -----------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

/// `[B, 8, 4096, 64]` as a DimsAttr (used by the kv_cache type).
static ParseResult parseDimList(AsmParser &parser, DimsAttr &dims) {
  FailureOr<DimsAttr> parsed = mlir::tessera::tgraph::parseDimExprList(parser);
  if (failed(parsed))
    return failure();
  dims = *parsed;
  return success();
}

static void printDimList(AsmPrinter &printer, DimsAttr dims) {
  mlir::tessera::tgraph::printDimExprList(printer, dims);
}

#define GET_TYPEDEF_CLASSES
#include "tessera/Dialect/TGraph/IR/TGraphOpsTypes.cpp.inc"

void TGraphDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "tessera/Dialect/TGraph/IR/TGraphOpsTypes.cpp.inc"
      >();
}

LogicalResult KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  DimsAttr shape, Type elementType) {
  if (shape.size() != 4)
    return emitError() << "kv_cache shape must be [batch, heads, max_length, "
                          "head_dim], but has "
                       << shape.size() << " dims";
  // Symbolic dims may be 0 at run time (an empty batch); a constant one
  // must hold something.
  for (auto [i, d] : llvm::enumerate(shape.getDims())) {
    auto lb = d.lowerBound();
    auto c = d.getConstant();
    if (d.isUnknown() || !lb || *lb < 0 || (c && *c < 1))
      return emitError() << "kv_cache dim " << i
                         << " must be known and positive, but is " << d.str();
  }
  if (!isa<FloatType>(elementType))
    return emitError() << "kv_cache element type must be a float type, but is "
                       << elementType;
  return success();
}
