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

/// A side can be evaluated at run time if it is a known expression or has
/// operand dims to read.
static bool checkable(const DimSide &s) {
  return !s.expr.isUnknown() || !s.refs.empty();
}

static void addCheck(std::vector<DimConstraint> &out, DimRelation rel,
                     DimSide a, DimSide b, std::string message) {
  DimConstraint c;
  c.relation = rel;
  c.lhs = a.expr;
  c.rhs = b.expr;
  c.lhsRefs = std::move(a.refs);
  c.rhsRefs = std::move(b.refs);
  c.lhsFactor = a.factor;
  c.rhsFactor = b.factor;
  c.message = std::move(message);
  out.push_back(std::move(c));
}

std::nullopt_t ShapeDiag::neverEqual(const DimSide &a, const DimSide &b,
                                     const std::string &what) {
  std::string msg = what + ": " + a.label + " is " + a.expr.str() + " but " +
                    b.label + " is " + b.expr.str();
  std::string syms = describeSymbols({a.expr, b.expr});
  if (!syms.empty())
    msg += ", which differ for every value of " + syms;
  return error(std::move(msg));
}

std::optional<DimExpr> ShapeDiag::unify(DimSide a, DimSide b,
                                        const std::string &what) {
  switch (decideEqual(a.expr, b.expr)) {
  case Truth::Always:
    return a.expr;
  case Truth::Never:
    return neverEqual(a, b, what);
  case Truth::Unknown:
    break;
  }
  DimExpr ea = a.expr, eb = b.expr;
  // A '?' that no operand dim carries (a declared result dim, a callee
  // parameter) is simply refined by the other side: there is nothing to
  // compare at run time.
  if (!checkable(a) || !checkable(b))
    return ea.isUnknown() ? eb : ea;
  // Equality depends on run-time values: check it then.
  std::string message = what + ": " + a.label + " (" + ea.str() +
                        ") must equal " + b.label + " (" + eb.str() + ")";
  addCheck(runtime, DimRelation::Equal, std::move(a), std::move(b),
           std::move(message));
  if (ea.isUnknown())
    return eb;
  if (eb.isUnknown())
    return ea;
  // Prefer the constant, then the simpler expression.
  if (eb.getConstant() && !ea.getConstant())
    return eb;
  return ea;
}

std::optional<DimExpr> ShapeDiag::unify(const DimExpr &a,
                                        const std::string &aLabel,
                                        std::vector<DimRef> aRefs,
                                        const DimExpr &b,
                                        const std::string &bLabel,
                                        std::vector<DimRef> bRefs,
                                        const std::string &what) {
  return unify(DimSide{a, aLabel, std::move(aRefs)},
               DimSide{b, bLabel, std::move(bRefs)}, what);
}

std::optional<DimExpr> ShapeDiag::requireEqualOrOne(DimSide a, DimSide b,
                                                    const std::string &what) {
  auto one = a.expr.getConstant();
  if (one && *one == 1)
    return b.expr;
  Truth t = decideEqual(a.expr, b.expr);
  if (t == Truth::Always)
    return b.expr;
  bool mayBeOne = decideEqual(a.expr, DimExpr::constant(1)) != Truth::Never;
  if (t == Truth::Never && !mayBeOne)
    return neverEqual(a, b, what);
  if (!checkable(a) || !checkable(b))
    return b.expr.isUnknown() ? a.expr : b.expr;
  DimExpr eb = b.expr, ea = a.expr;
  std::string message = what + ": " + a.label + " (" + ea.str() +
                        ") must be 1 or equal " + b.label + " (" + eb.str() +
                        ")";
  addCheck(runtime, DimRelation::EqualOrOne, std::move(a), std::move(b),
           std::move(message));
  return eb.isUnknown() ? ea : eb;
}

bool ShapeDiag::requireDivisible(DimSide a, int64_t n,
                                 const std::string &what) {
  if (n == 1)
    return true;
  DimExpr quotient = *a.expr.floorDiv(DimExpr::constant(n));
  DimExpr multiple = quotient * DimExpr::constant(n);
  std::string label = std::to_string(n);
  switch (decideEqual(a.expr, multiple)) {
  case Truth::Always:
    return true;
  case Truth::Never:
    error(what + ": " + a.label + " is " + a.expr.str() +
          ", which is not a multiple of " + label);
    return false;
  case Truth::Unknown:
    break;
  }
  if (!checkable(a))
    return true;
  std::string message = what + ": " + a.label + " (" + a.expr.str() +
                        ") must be a multiple of " + label;
  addCheck(runtime, DimRelation::Divisible, std::move(a),
           DimSide{DimExpr::constant(n), label, {}, 1}, std::move(message));
  return true;
}

bool ShapeDiag::requireLessEqual(DimSide a, DimSide b,
                                 const std::string &what) {
  if (a.expr.isUnknown() || b.expr.isUnknown())
    return true;
  if (auto room = (b.expr - a.expr).lowerBound(); room && *room >= 0)
    return true;
  if (auto over = (a.expr - b.expr).lowerBound(); over && *over > 0) {
    error(what + ": " + a.label + " (" + a.expr.str() + ") is past " +
          b.label + " (" + b.expr.str() + ")");
    return false;
  }
  std::string message = what + ": " + a.label + " (" + a.expr.str() +
                        ") must be at most " + b.label + " (" + b.expr.str() +
                        ")";
  addCheck(runtime, DimRelation::LessEqual, std::move(a), std::move(b),
           std::move(message));
  return true;
}

std::optional<DimExpr> ShapeDiag::unifyOperandDims(const TensorShape &a,
                                                   unsigned ao, unsigned ad,
                                                   const TensorShape &b,
                                                   unsigned bo, unsigned bd,
                                                   const std::string &what) {
  return unify(a.dims[ad], dimLabel(ao, ad), {DimRef{int(ao), int(ad)}},
               b.dims[bd], dimLabel(bo, bd), {DimRef{int(bo), int(bd)}}, what);
}
