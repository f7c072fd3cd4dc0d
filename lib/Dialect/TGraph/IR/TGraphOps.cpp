//===- TGraphOps.cpp - Graph IR op definitions ----------------------------===//
//
// The generated op classes and the assembly helpers they use. The shape
// functions, verifiers and folders live in one file per op family.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

//===----------------------------------------------------------------------===//
// custom<OpTypes>: `: T`, `: T0 -> R` or `: (T0, T1, ...) -> R`
//===----------------------------------------------------------------------===//

template <typename... Ts>
static ParseResult parseOpTypes(OpAsmParser &parser, Ts &...types) {
  SmallVector<Type *> refs{&types...};
  Type *result = refs.pop_back_val();
  SMLoc loc = parser.getCurrentLocation();
  if (succeeded(parser.parseOptionalLParen())) {
    for (size_t i = 0; i < refs.size(); ++i)
      if ((i && parser.parseComma()) || parser.parseType(*refs[i]))
        return failure();
    return failure(parser.parseRParen() || parser.parseArrow() ||
                   parser.parseType(*result));
  }
  Type first;
  if (parser.parseType(first))
    return failure();
  if (succeeded(parser.parseOptionalArrow())) {
    if (refs.size() != 1)
      return parser.emitError(loc)
             << "expected '(' and the " << refs.size()
             << " operand types before '->'";
    *refs[0] = first;
    return parser.parseType(*result);
  }
  for (Type *t : refs)
    *t = first;
  *result = first;
  return success();
}

template <typename... Ts>
static void printOpTypes(OpAsmPrinter &printer, Operation *, Ts... types) {
  SmallVector<Type> all{types...};
  Type result = all.pop_back_val();
  if (llvm::all_of(all, [&](Type t) { return t == result; })) {
    printer << result;
    return;
  }
  if (all.size() == 1) {
    printer << all[0] << " -> " << result;
    return;
  }
  printer << "(";
  llvm::interleaveComma(all, printer);
  printer << ") -> " << result;
}

//===----------------------------------------------------------------------===//
// custom<CompareDirection>: the bare keyword (`lt`)
//===----------------------------------------------------------------------===//

static ParseResult parseCompareDirection(OpAsmParser &parser,
                                         CompareDirectionAttr &attr) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<CompareDirection> dir = symbolizeCompareDirection(keyword);
  if (!dir)
    return parser.emitError(loc) << "unknown comparison '" << keyword
                                 << "'; expected eq, ne, lt, le, gt or ge";
  attr = CompareDirectionAttr::get(parser.getContext(), *dir);
  return success();
}

static void printCompareDirection(OpAsmPrinter &printer, Operation *,
                                  CompareDirectionAttr attr) {
  printer << stringifyCompareDirection(attr.getValue());
}

//===----------------------------------------------------------------------===//
// custom<DimRelation>: the bare keyword (`eq`, `eq_or_one`, `divisible`, `le`)
//===----------------------------------------------------------------------===//

static ParseResult parseDimRelation(OpAsmParser &parser,
                                    DimRelationAttr &attr) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<DimRelation> rel = symbolizeDimRelation(keyword);
  if (!rel)
    return parser.emitError(loc) << "unknown relation '" << keyword
                                 << "'; expected eq, eq_or_one, divisible or le";
  attr = DimRelationAttr::get(parser.getContext(), *rel);
  return success();
}

static void printDimRelation(OpAsmPrinter &printer, Operation *,
                             DimRelationAttr attr) {
  printer << stringifyDimRelation(attr.getValue());
}

#define GET_OP_CLASSES
#include "tessera/Dialect/TGraph/IR/TGraphOps.cpp.inc"
