//===- TypeInference.cpp - Running shape functions on IR ------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

shape::TensorShape mlir::tessera::tgraph::getShape(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return shape::TensorShape(); // only reached for IR the verifier rejects
  if (auto dims = dyn_cast_or_null<DimsAttr>(tensor.getEncoding()))
    return shape::TensorShape(dims.getDims());
  shape::TensorShape s;
  for (int64_t d : tensor.getShape())
    s.dims.push_back(ShapedType::isDynamic(d) ? shape::DimExpr::unknown()
                                              : shape::DimExpr::constant(d));
  return s;
}

RankedTensorType
mlir::tessera::tgraph::getTensorType(const shape::TensorShape &s,
                                     Type elementType) {
  SmallVector<int64_t> sizes;
  bool symbolic = false;
  for (const shape::DimExpr &d : s.dims) {
    auto c = d.getConstant();
    sizes.push_back(c && *c >= 0 ? *c : ShapedType::kDynamic);
    symbolic |= !c && !d.isUnknown();
  }
  Attribute encoding;
  if (symbolic)
    encoding = DimsAttr::get(elementType.getContext(), s.dims);
  return RankedTensorType::get(sizes, elementType, encoding);
}

std::string mlir::tessera::tgraph::describeLocation(Location loc) {
  std::string text;
  loc->walk([&](Location l) {
    if (auto file = dyn_cast<FileLineColLoc>(l)) {
      text = (file.getFilename().getValue() + ":" + Twine(file.getLine()) +
              ":" + Twine(file.getColumn()))
                 .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (text.empty()) {
    llvm::raw_string_ostream os(text);
    loc.print(os);
  }
  return text;
}

std::string mlir::tessera::tgraph::describeOp(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "' op at " +
         describeLocation(op->getLoc());
}

std::string mlir::tessera::tgraph::typeName(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

TypeInference::TypeInference(MLIRContext *context, std::optional<Location> loc,
                             StringRef opName, TypeRange declared)
    : context(context), loc(loc), opName(opName.str()),
      declaredTypes(declared.begin(), declared.end()) {}

void TypeInference::setOperandNames(std::vector<std::string> names) {
  shapeDiag = shape::ShapeDiag(std::move(names));
}

Type TypeInference::declared(unsigned i) const {
  return i < declaredTypes.size() ? declaredTypes[i] : Type();
}

FailureOr<RankedTensorType> TypeInference::requireDeclaredTensor(unsigned i) {
  auto t = dyn_cast_or_null<RankedTensorType>(declared(i));
  if (!t) {
    (void)fail("needs an explicit ranked tensor type for result " + Twine(i));
    return failure();
  }
  return t;
}

void TypeInference::addResult(const shape::TensorShape &s, Type elementType) {
  results.push_back(getTensorType(s, elementType));
}

LogicalResult
TypeInference::addResult(const std::optional<shape::TensorShape> &s,
                         Type elementType) {
  if (!s)
    return failure();
  addResult(*s, elementType);
  return success();
}

LogicalResult TypeInference::fail(const Twine &message) {
  shapeDiag.error(message.str());
  return failure();
}

LogicalResult TypeInference::requireSameElementType(
    ArrayRef<std::pair<Value, unsigned>> vals) {
  if (vals.empty())
    return success();
  Type first = getElementTypeOrSelf(vals.front().first.getType());
  for (auto [v, idx] : vals.drop_front()) {
    Type t = getElementTypeOrSelf(v.getType());
    if (t != first)
      return fail(shapeDiag.operandLabel(vals.front().second) +
                  " has element type " + typeName(first) + " but " +
                  shapeDiag.operandLabel(idx) + " has " + typeName(t) +
                  "; tensor dtypes do not promote: cast one of them "
                  "(tgraph.cast, op.cast)");
  }
  return success();
}

std::string TypeInference::message() const {
  return shapeDiag.failed() ? shapeDiag.message()
                            : std::string("shape inference failed");
}

LogicalResult TypeInference::run(LogicalResult result,
                                 SmallVectorImpl<Type> &out) {
  if (failed(result) || shapeDiag.failed()) {
    if (loc)
      emitError(*loc) << "'" << opName << "' op " << message();
    return failure();
  }
  out.assign(results.begin(), results.end());
  return success();
}

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

/// Compares a declared result type with the inferred one.
static LogicalResult compareResult(Operation *op, unsigned i, Type declared,
                                   Type inferred) {
  auto d = dyn_cast<RankedTensorType>(declared);
  auto n = dyn_cast<RankedTensorType>(inferred);
  if (!d || !n) {
    if (declared == inferred)
      return success();
    return op->emitOpError() << "result " << i << " has type " << declared
                             << " but the op produces " << inferred;
  }
  if (d.getElementType() != n.getElementType())
    return op->emitOpError()
           << "result " << i << " has element type "
           << typeName(d.getElementType()) << " but the op produces "
           << typeName(n.getElementType());
  shape::TensorShape ds = getShape(d), ns = getShape(n);
  if (ds.rank() != ns.rank())
    return op->emitOpError()
           << "result " << i << " has shape " << ds.str() << " (rank "
           << ds.rank() << ") but the op produces shape " << ns.str()
           << " (rank " << ns.rank() << ")";
  for (size_t k = 0; k < ds.rank(); ++k) {
    if (shape::decideEqual(ds.dims[k], ns.dims[k]) != shape::Truth::Never)
      continue;
    std::string syms = shape::describeSymbols({ds.dims[k], ns.dims[k]});
    auto diag = op->emitOpError()
                << "result " << i << " dim " << k << " is declared as "
                << ds.dims[k].str() << " but the op produces "
                << ns.dims[k].str() << " (result shape " << ns.str() << ")";
    if (!syms.empty())
      diag << ", which differ for every value of " << syms;
    return diag;
  }
  return success();
}

LogicalResult mlir::tessera::tgraph::verifyInferredTypes(Operation *op) {
  auto iface = cast<ShapeInferenceOpInterface>(op);
  TypeInference ti(op->getContext(), op->getLoc(), op->getName().getStringRef(),
                   op->getResultTypes());
  if (failed(iface.inferResultTypes(ti)) || ti.diag().failed())
    return op->emitOpError() << ti.message();
  if (ti.getResults().size() != op->getNumResults())
    return op->emitOpError()
           << "has " << op->getNumResults() << " results but the op produces "
           << ti.getResults().size();
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(op->getResultTypes(), ti.getResults())))
    if (failed(compareResult(op, i, std::get<0>(pair), std::get<1>(pair))))
      return failure();
  return success();
}

bool mlir::tessera::tgraph::areCompatibleTypes(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != rhs.size())
    return false;
  for (auto [a, b] : llvm::zip(lhs, rhs)) {
    auto ta = dyn_cast<RankedTensorType>(a);
    auto tb = dyn_cast<RankedTensorType>(b);
    if (!ta || !tb) {
      if (a != b)
        return false;
      continue;
    }
    if (ta.getElementType() != tb.getElementType() ||
        ta.getRank() != tb.getRank())
      return false;
    shape::TensorShape sa = getShape(ta), sb = getShape(tb);
    for (size_t k = 0; k < sa.rank(); ++k)
      if (shape::decideEqual(sa.dims[k], sb.dims[k]) == shape::Truth::Never)
        return false;
  }
  return true;
}

bool mlir::tessera::tgraph::isFloat8(Type t) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(t);
}

/// True if every finite value, infinity and NaN of `a` has an exact value
/// in `b`: b's exponent range and precision cover a's (then a's subnormals
/// also land on b's grid), and b has inf where a has.
static bool floatCovers(const llvm::fltSemantics &a,
                        const llvm::fltSemantics &b) {
  using llvm::APFloat;
  return APFloat::semanticsMaxExponent(b) >= APFloat::semanticsMaxExponent(a) &&
         APFloat::semanticsMinExponent(b) <= APFloat::semanticsMinExponent(a) &&
         APFloat::semanticsPrecision(b) >= APFloat::semanticsPrecision(a) &&
         (!APFloat::semanticsHasInf(a) || APFloat::semanticsHasInf(b)) &&
         (!APFloat::semanticsHasNaN(a) || APFloat::semanticsHasNaN(b));
}

bool mlir::tessera::tgraph::isExactWidening(Type from, Type to) {
  Type a = getElementTypeOrSelf(from), b = getElementTypeOrSelf(to);
  if (a == b)
    return true;
  auto fa = dyn_cast<FloatType>(a), fb = dyn_cast<FloatType>(b);
  auto ia = dyn_cast<IntegerType>(a), ib = dyn_cast<IntegerType>(b);
  if (fa && fb)
    return floatCovers(fa.getFloatSemantics(), fb.getFloatSemantics());
  // i1 converts to 0 or 1; other integers are signed and need their
  // magnitude bits (width - 1) to fit.
  unsigned magnitude = ia ? (ia.getWidth() == 1 ? 1 : ia.getWidth() - 1) : 0;
  if (ia && ib)
    return ia.getWidth() == 1
               ? ib.getWidth() >= 2
               : ia.getWidth() <= ib.getWidth() && ib.getWidth() > 1;
  if (ia && fb)
    return magnitude <=
           llvm::APFloat::semanticsPrecision(fb.getFloatSemantics());
  return false;
}
