//===- TGraphAttrs.cpp - Graph IR attributes ------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

#include "tessera/Dialect/TGraph/IR/TGraphEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/TGraph/IR/TGraphAttrDefs.cpp.inc"

void TGraphDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tessera/Dialect/TGraph/IR/TGraphAttrDefs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// DimsAttr
//===----------------------------------------------------------------------===//

DimsAttr DimsAttr::get(MLIRContext *context,
                       ArrayRef<shape::DimExpr> dims) {
  SmallVector<StringAttr> exprs;
  for (const shape::DimExpr &d : dims)
    exprs.push_back(StringAttr::get(context, d.str()));
  return get(context, exprs);
}

std::vector<shape::DimExpr> DimsAttr::getDims() const {
  std::vector<shape::DimExpr> dims;
  for (StringAttr s : getExprs()) {
    std::string error;
    auto d = shape::parseDimExpr(s.getValue(), error);
    // The verifier guarantees every entry parses.
    dims.push_back(d ? *d : shape::DimExpr::unknown());
  }
  return dims;
}

LogicalResult DimsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<StringAttr> exprs) {
  for (auto [i, s] : llvm::enumerate(exprs)) {
    std::string error;
    if (!shape::parseDimExpr(s.getValue(), error))
      return emitError() << "dim " << i << ": " << error;
  }
  return success();
}

LogicalResult
DimsAttr::verifyEncoding(ArrayRef<int64_t> sizes, Type elementType,
                         function_ref<InFlightDiagnostic()> emitError) const {
  std::vector<shape::DimExpr> dims = getDims();
  if (dims.size() != sizes.size())
    return emitError() << "#tgraph.dims has "
                       << shape::countOf(dims.size(), "entry", "entries")
                       << " but the tensor has rank " << sizes.size();
  bool anySymbolic = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    auto c = dims[i].getConstant();
    if (c && *c < 0)
      return emitError() << "#tgraph.dims entry " << i << " is negative ("
                         << *c << ")";
    if (c && *c != sizes[i])
      return emitError() << "#tgraph.dims entry " << i << " is " << *c
                         << " but the tensor's dim " << i << " is "
                         << (ShapedType::isDynamic(sizes[i])
                                 ? std::string("?")
                                 : std::to_string(sizes[i]));
    if (!c && !ShapedType::isDynamic(sizes[i]))
      return emitError() << "#tgraph.dims entry " << i << " is "
                         << dims[i].str() << " but the tensor's dim " << i
                         << " is the constant " << sizes[i]
                         << " (write '?' for a symbolic dim)";
    anySymbolic |= !c && !dims[i].isUnknown();
  }
  if (!anySymbolic)
    return emitError() << "#tgraph.dims names no symbolic dim; drop the "
                          "encoding (the builtin shape says it all)";
  return success();
}

/// Parses one entry: `?`, an integer, a symbol, or a quoted expression.
static FailureOr<shape::DimExpr> parseDimEntry(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  if (succeeded(parser.parseOptionalQuestion()))
    return shape::DimExpr::unknown();
  int64_t value;
  OptionalParseResult intResult = parser.parseOptionalInteger(value);
  if (intResult.has_value()) {
    if (failed(*intResult))
      return failure();
    return shape::DimExpr::constant(value);
  }
  std::string text;
  StringRef keyword;
  if (succeeded(parser.parseOptionalKeyword(&keyword))) {
    text = keyword.str();
  } else if (failed(parser.parseOptionalString(&text))) {
    parser.emitError(loc, "expected a dimension: an integer, a symbol, '?' "
                          "or a quoted expression such as \"2*S\"");
    return failure();
  }
  std::string error;
  auto dim = shape::parseDimExpr(text, error);
  if (!dim) {
    parser.emitError(loc, error);
    return failure();
  }
  return *dim;
}

FailureOr<DimsAttr> mlir::tessera::tgraph::parseDimExprList(AsmParser &parser) {
  SmallVector<shape::DimExpr> dims;
  auto parseOne = [&]() -> ParseResult {
    auto d = parseDimEntry(parser);
    if (failed(d))
      return failure();
    dims.push_back(*d);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseOne))
    return failure();
  return DimsAttr::get(parser.getContext(), dims);
}

void mlir::tessera::tgraph::printDimExprList(AsmPrinter &printer, DimsAttr dims) {
  printer << "[";
  llvm::interleaveComma(dims.getDims(), printer, [&](const shape::DimExpr &d) {
    auto c = d.getConstant();
    if (d.isUnknown())
      printer << "?";
    else if (c && *c >= 0)
      printer << *c;
    else if (auto name = d.getSymbolName())
      printer << *name;
    else
      printer << "\"" << d.str() << "\"";
  });
  printer << "]";
}

Attribute DimsAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  FailureOr<DimsAttr> dims = parseDimExprList(parser);
  if (failed(dims) || parser.parseGreater())
    return {};
  return *dims;
}

void DimsAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printDimExprList(printer, *this);
  printer << ">";
}

//===----------------------------------------------------------------------===//
// PolicyAttr
//===----------------------------------------------------------------------===//

LogicalResult PolicyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 Type accum, bool, FloatAttr lossScale, bool) {
  if (accum && !accum.isF32() && !accum.isBF16())
    return emitError() << "accum must be f32 or bf16, but is "
                       << typeName(accum);
  if (lossScale) {
    double k = lossScale.getValueAsDouble();
    if (!(k > 0) || std::isinf(k))
      return emitError() << "loss_scale must be a finite positive number, "
                            "but is "
                         << k;
  }
  return success();
}

Attribute PolicyAttr::parse(AsmParser &parser, Type) {
  Type accum;
  bool stochastic = false, saturate = false;
  FloatAttr lossScale;
  auto parseItem = [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    StringRef key;
    if (parser.parseKeyword(&key))
      return failure();
    if (key == "accum")
      return failure(parser.parseEqual() || parser.parseType(accum));
    if (key == "loss_scale") {
      double k;
      if (parser.parseEqual() || parser.parseFloat(k))
        return failure();
      lossScale = FloatAttr::get(Float64Type::get(parser.getContext()), k);
      return success();
    }
    if (key == "stochastic_round")
      return stochastic = true, success();
    if (key == "saturate")
      return saturate = true, success();
    return parser.emitError(loc)
           << "unknown policy '" << key
           << "'; expected accum, stochastic_round, loss_scale or saturate";
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::LessGreater,
                                     parseItem))
    return {};
  return PolicyAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), accum, stochastic, lossScale, saturate);
}

void PolicyAttr::print(AsmPrinter &printer) const {
  printer << "<";
  bool first = true;
  auto sep = [&]() -> AsmPrinter & {
    if (!first)
      printer << ", ";
    first = false;
    return printer;
  };
  if (getAccum())
    sep() << "accum = " << getAccum();
  if (getStochasticRound())
    sep() << "stochastic_round";
  if (getLossScale()) {
    sep() << "loss_scale = ";
    printer.printFloat(getLossScale().getValue());
  }
  if (getSaturate())
    sep() << "saturate";
  printer << ">";
}
