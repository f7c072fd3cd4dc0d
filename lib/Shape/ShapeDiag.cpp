//===- ShapeDiag.cpp - Shape checking results and messages ----------------===//

#include "tessera/Shape/ShapeDiag.h"

#include <cstdio>

using namespace tessera::shape;

TensorShape TensorShape::ofConstants(llvm::ArrayRef<int64_t> sizes) {
  TensorShape s;
  for (int64_t v : sizes)
    s.dims.push_back(DimExpr::constant(v));
  return s;
}

std::string TensorShape::str() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + dims[i].str();
  return s + "]";
}

DimExpr TensorShape::numElements() const {
  DimExpr n = DimExpr::constant(1);
  for (const DimExpr &d : dims)
    n = n * d;
  return n;
}

std::string ShapeDiag::operandLabel(unsigned operand) const {
  std::string pos = "operand " + std::to_string(operand);
  if (operand < operandNames.size() && !operandNames[operand].empty())
    return operandNames[operand] + " (" + pos + ")";
  return pos;
}

std::string ShapeDiag::dimLabel(unsigned operand, unsigned dim) const {
  return operandLabel(operand) + " dim " + std::to_string(dim);
}

std::nullopt_t ShapeDiag::error(std::string message) {
  if (!firstError)
    firstError = std::move(message);
  return std::nullopt;
}

std::string tessera::shape::describeSymbols(llvm::ArrayRef<DimExpr> exprs) {
  std::set<std::string> names;
  for (const DimExpr &e : exprs)
    e.collectSymbols(names);
  std::string s;
  size_t i = 0;
  for (const std::string &n : names) {
    if (i)
      s += i + 1 == names.size() ? " and " : ", ";
    s += n;
    ++i;
  }
  return s;
}

std::string tessera::shape::countOf(size_t n, const char *singular,
                                    const char *plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

std::string tessera::shape::formatNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", value);
  return buf;
}

std::optional<DimExpr> ShapeDiag::unify(const DimExpr &a,
                                        const std::string &aLabel,
                                        std::vector<DimRef> aRefs,
                                        const DimExpr &b,
                                        const std::string &bLabel,
                                        std::vector<DimRef> bRefs,
                                        const std::string &what) {
  switch (decideEqual(a, b)) {
  case Truth::Always:
    return a;
  case Truth::Never: {
    std::string msg = what + ": " + aLabel + " is " + a.str() + " but " +
                      bLabel + " is " + b.str();
    std::string syms = describeSymbols({a, b});
    if (!syms.empty())
      msg += ", which differ for every value of " + syms;
    return error(std::move(msg));
  }
  case Truth::Unknown:
    break;
  }
  // A '?' that no operand dim carries (a declared result dim, a callee
  // parameter) is simply refined by the other side: there is nothing to
  // compare at run time.
  if ((a.isUnknown() && aRefs.empty()) || (b.isUnknown() && bRefs.empty()))
    return a.isUnknown() ? b : a;
  // Equality depends on run-time values: check it then.
  runtime.push_back(DimConstraint{a, b, std::move(aRefs), std::move(bRefs),
                                  what + ": " + aLabel + " (" + a.str() +
                                      ") must equal " + bLabel + " (" +
                                      b.str() + ")"});
  if (a.isUnknown())
    return b;
  if (b.isUnknown())
    return a;
  // Prefer the constant, then the simpler expression.
  if (b.getConstant() && !a.getConstant())
    return b;
  return a;
}

std::optional<DimExpr> ShapeDiag::unifyOperandDims(const TensorShape &a,
                                                   unsigned ao, unsigned ad,
                                                   const TensorShape &b,
                                                   unsigned bo, unsigned bd,
                                                   const std::string &what) {
  return unify(a.dims[ad], dimLabel(ao, ad), {DimRef{int(ao), int(ad)}},
               b.dims[bd], dimLabel(bo, bd), {DimRef{int(bo), int(bd)}}, what);
}
