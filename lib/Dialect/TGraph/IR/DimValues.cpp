//===- DimValues.cpp - Symbolic dims as run-time index values -------------===//

#include "tessera/Dialect/TGraph/IR/DimValues.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;
namespace shape = ::tessera::shape;

static FailureOr<Value>
buildAtom(OpBuilder &b, Location loc, const shape::DimExpr &atom,
          function_ref<FailureOr<Value>(StringRef)> symbol) {
  if (auto name = atom.getSymbolName())
    return symbol(*name);
  auto q = atom.getQuotient();
  FailureOr<Value> num = buildDimExpr(b, loc, q->first, symbol);
  FailureOr<Value> den = buildDimExpr(b, loc, q->second, symbol);
  if (failed(num) || failed(den))
    return failure();
  // A denominator of 0 (an empty dim) is reported by the run-time checks
  // that guard the quotient (a divisibility check, the argument check);
  // dividing by 1 instead keeps the division itself from trapping.
  Value d = *den;
  if (auto c = q->second.getConstant(); !c || *c == 0) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value isZero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, d, zero);
    d = arith::SelectOp::create(b, loc, isZero, one, d);
  }
  return Value(arith::FloorDivSIOp::create(b, loc, *num, d));
}

FailureOr<Value> mlir::tessera::tgraph::buildDimExpr(
    OpBuilder &b, Location loc, const shape::DimExpr &expr,
    function_ref<FailureOr<Value>(StringRef)> symbol) {
  if (expr.isUnknown())
    return emitError(loc, "cannot compute an unknown ('?') dim at run time");
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // sum of coeff * atom^power over the canonical terms
  Value sum;
  for (const shape::DimExpr::Product &t : expr.products()) {
    Value prod =
        t.factors.empty() || t.coeff != 1 ? constant(t.coeff) : Value();
    for (const auto &[atom, power] : t.factors) {
      FailureOr<Value> v = buildAtom(b, loc, atom, symbol);
      if (failed(v))
        return failure();
      for (unsigned p = 0; p < power; ++p)
        prod = prod ? arith::MulIOp::create(b, loc, prod, *v) : *v;
    }
    sum = sum ? arith::AddIOp::create(b, loc, sum, prod) : prod;
  }
  return sum ? sum : constant(0);
}
