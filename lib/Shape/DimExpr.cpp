//===- DimExpr.cpp - Symbolic tensor dimensions ---------------------------===//
//
// Canonical form: a sorted list of terms `coeff * f1^p1 * f2^p2 ...` where
// each factor is an atom (a symbol, or an irreducible floor quotient). Terms
// with equal monomials are merged and zero terms dropped, so identical
// canonical forms <=> equal polynomials.
//
//===----------------------------------------------------------------------===//

#include "tessera/Shape/DimExpr.h"
#include "tessera/Shape/DimSyntax.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <limits>

using namespace tessera::shape;

namespace tessera::shape::detail {

struct Quotient {
  DimExpr num, den;
};

/// A symbol (quot == nullptr) or a quotient; `key` is its canonical text and
/// orders atoms.
struct Atom {
  std::string key;
  std::shared_ptr<const Quotient> quot;
};

struct Factor {
  Atom atom;
  unsigned power;
};

struct Term {
  int64_t coeff;
  std::vector<Factor> factors; // sorted by atom.key, powers >= 1

  unsigned degree() const {
    unsigned d = 0;
    for (const Factor &f : factors)
      d += f.power;
    return d;
  }
};

using Monomial = std::vector<Factor>;

static bool monomialLess(const Monomial &a, const Monomial &b) {
  unsigned da = 0, db = 0;
  for (const Factor &f : a)
    da += f.power;
  for (const Factor &f : b)
    db += f.power;
  if (da != db)
    return da > db; // higher degree first, constants last
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].atom.key != b[i].atom.key)
      return a[i].atom.key < b[i].atom.key;
    if (a[i].power != b[i].power)
      return a[i].power > b[i].power;
  }
  return a.size() < b.size();
}

static bool monomialEqual(const Monomial &a, const Monomial &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].atom.key != b[i].atom.key || a[i].power != b[i].power)
      return false;
  return true;
}

struct DimExprImpl {
  /// Bound on the size of one expression: shapes never need more, and it
  /// keeps hostile input (products of long sums) from blowing up.
  static constexpr size_t kMaxTerms = 64;

  bool unknown = false;
  std::vector<Term> terms;

  static DimExpr make(std::shared_ptr<const DimExprImpl> impl) {
    return DimExpr(std::move(impl));
  }
  static DimExpr makeUnknown() { return DimExpr(); }

  /// Normalizes `terms` (sort, merge, drop zeros); unknown on overflow or
  /// when the expression grows past kMaxTerms terms.
  static DimExpr fromTerms(std::vector<Term> terms) {
    if (terms.size() > kMaxTerms)
      return makeUnknown();
    std::sort(terms.begin(), terms.end(), [](const Term &a, const Term &b) {
      return monomialLess(a.factors, b.factors);
    });
    std::vector<Term> merged;
    for (Term &t : terms) {
      if (!merged.empty() && monomialEqual(merged.back().factors, t.factors)) {
        int64_t sum;
        if (llvm::AddOverflow(merged.back().coeff, t.coeff, sum))
          return makeUnknown();
        merged.back().coeff = sum;
        continue;
      }
      merged.push_back(std::move(t));
    }
    auto impl = std::make_shared<DimExprImpl>();
    for (Term &t : merged)
      if (t.coeff != 0)
        impl->terms.push_back(std::move(t));
    return make(std::move(impl));
  }
};

} // namespace tessera::shape::detail

using namespace tessera::shape::detail;

//===----------------------------------------------------------------------===//
// Construction
//===----------------------------------------------------------------------===//

DimExpr::DimExpr() {
  auto i = std::make_shared<DimExprImpl>();
  i->unknown = true;
  impl = std::move(i);
}

DimExpr::DimExpr(std::shared_ptr<const DimExprImpl> impl)
    : impl(std::move(impl)) {}

DimExpr DimExpr::constant(int64_t value) {
  std::vector<Term> terms;
  terms.push_back(Term{value, {}});
  return DimExprImpl::fromTerms(std::move(terms));
}

DimExpr DimExpr::symbol(llvm::StringRef name) {
  assert(isValidSymbolName(name) && "invalid symbol name");
  std::vector<Term> terms;
  terms.push_back(Term{1, {Factor{Atom{name.str(), nullptr}, 1}}});
  return DimExprImpl::fromTerms(std::move(terms));
}

static DimExpr makeQuotientAtom(const DimExpr &num, const DimExpr &den) {
  std::string numText = num.str(), denText = den.str();
  if (num.isSum())
    numText = "(" + numText + ")";
  bool denIsAtom = den.getSymbolName().has_value() ||
                   (den.getConstant() && *den.getConstant() > 0);
  if (!denIsAtom)
    denText = "(" + denText + ")";
  auto quot = std::make_shared<Quotient>(Quotient{num, den});
  std::vector<Term> terms;
  terms.push_back(Term{1, {Factor{Atom{numText + "/" + denText, quot}, 1}}});
  return DimExprImpl::fromTerms(std::move(terms));
}

//===----------------------------------------------------------------------===//
// Queries
//===----------------------------------------------------------------------===//

bool DimExpr::isUnknown() const { return impl->unknown; }

std::optional<int64_t> DimExpr::getConstant() const {
  if (impl->unknown)
    return std::nullopt;
  if (impl->terms.empty())
    return 0;
  if (impl->terms.size() == 1 && impl->terms[0].factors.empty())
    return impl->terms[0].coeff;
  return std::nullopt;
}

std::optional<std::string> DimExpr::getSymbolName() const {
  if (impl->unknown || impl->terms.size() != 1)
    return std::nullopt;
  const Term &t = impl->terms[0];
  if (t.coeff != 1 || t.factors.size() != 1 || t.factors[0].power != 1 ||
      t.factors[0].atom.quot)
    return std::nullopt;
  return t.factors[0].atom.key;
}

bool DimExpr::hasSymbols() const {
  if (impl->unknown)
    return false;
  for (const Term &t : impl->terms)
    if (!t.factors.empty())
      return true;
  return false;
}

bool DimExpr::isSum() const {
  if (impl->unknown)
    return false;
  if (impl->terms.size() > 1)
    return true;
  return impl->terms.size() == 1 && impl->terms[0].coeff < 0;
}

bool DimExpr::isIdentical(const DimExpr &other) const {
  if (impl == other.impl)
    return true;
  if (impl->unknown || other.impl->unknown)
    return impl->unknown && other.impl->unknown;
  const auto &a = impl->terms, &b = other.impl->terms;
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].coeff != b[i].coeff || !monomialEqual(a[i].factors, b[i].factors))
      return false;
  return true;
}

void DimExpr::collectSymbols(std::set<std::string> &out) const {
  if (impl->unknown)
    return;
  for (const Term &t : impl->terms)
    for (const Factor &f : t.factors) {
      if (f.atom.quot) {
        f.atom.quot->num.collectSymbols(out);
        f.atom.quot->den.collectSymbols(out);
      } else {
        out.insert(f.atom.key);
      }
    }
}

std::vector<DimExpr::Product> DimExpr::products() const {
  std::vector<Product> out;
  if (impl->unknown)
    return out;
  for (const detail::Term &t : impl->terms) {
    Product view{t.coeff, {}};
    for (const Factor &f : t.factors) {
      std::vector<detail::Term> single;
      single.push_back(detail::Term{1, {Factor{f.atom, 1}}});
      view.factors.push_back({DimExprImpl::fromTerms(std::move(single)), f.power});
    }
    out.push_back(std::move(view));
  }
  return out;
}

std::optional<std::pair<DimExpr, DimExpr>> DimExpr::getQuotient() const {
  if (impl->unknown || impl->terms.size() != 1)
    return std::nullopt;
  const detail::Term &t = impl->terms[0];
  if (t.coeff != 1 || t.factors.size() != 1 || t.factors[0].power != 1 ||
      !t.factors[0].atom.quot)
    return std::nullopt;
  return std::make_pair(t.factors[0].atom.quot->num, t.factors[0].atom.quot->den);
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

/// `inProduct`: the monomial is multiplied by a coefficient, so a quotient
/// needs parentheses even when it is the only factor (2*(D/H), not 2*D/H).
static std::string monomialText(const Monomial &m, bool inProduct) {
  unsigned count = 0;
  for (const Factor &f : m)
    count += f.power;
  std::string s;
  for (const Factor &f : m) {
    for (unsigned p = 0; p < f.power; ++p) {
      if (!s.empty())
        s += "*";
      bool paren = f.atom.quot && (inProduct || count > 1);
      s += paren ? "(" + f.atom.key + ")" : f.atom.key;
    }
  }
  return s;
}

std::string DimExpr::str() const {
  if (impl->unknown)
    return "?";
  if (impl->terms.empty())
    return "0";
  std::string s;
  bool first = true;
  for (const Term &t : impl->terms) {
    int64_t c = t.coeff;
    bool negative = c < 0;
    uint64_t mag = negative ? 0 - static_cast<uint64_t>(c) : c;
    // A leading '-' is a unary minus, which binds tighter than '/': the
    // quotient needs parentheses (-(S/2), not -S/2).
    bool unaryMinus = first && negative;
    if (!first && c == std::numeric_limits<int64_t>::min()) {
      // 2^63 has no positive int64 literal: write the coefficient signed.
      s += "+(-" + std::to_string(mag) + ")";
      if (!t.factors.empty())
        s += "*" + monomialText(t.factors, true);
      continue;
    }
    if (first)
      s += negative ? "-" : "";
    else
      s += negative ? "-" : "+";
    first = false;
    if (t.factors.empty()) {
      s += std::to_string(mag);
      continue;
    }
    if (mag != 1)
      s += std::to_string(mag) + "*";
    s += monomialText(t.factors, mag != 1 || unaryMinus);
  }
  return s;
}

//===----------------------------------------------------------------------===//
// Arithmetic
//===----------------------------------------------------------------------===//

DimExpr DimExpr::operator+(const DimExpr &rhs) const {
  if (impl->unknown || rhs.impl->unknown)
    return DimExpr();
  std::vector<Term> terms = impl->terms;
  terms.insert(terms.end(), rhs.impl->terms.begin(), rhs.impl->terms.end());
  return DimExprImpl::fromTerms(std::move(terms));
}

DimExpr DimExpr::operator-(const DimExpr &rhs) const {
  return *this + rhs * DimExpr::constant(-1);
}

static Monomial multiplyMonomials(const Monomial &a, const Monomial &b) {
  Monomial out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].atom.key < b[j].atom.key)) {
      out.push_back(a[i++]);
    } else if (i == a.size() || b[j].atom.key < a[i].atom.key) {
      out.push_back(b[j++]);
    } else {
      Factor f = a[i++];
      f.power += b[j++].power;
      out.push_back(std::move(f));
    }
  }
  return out;
}

DimExpr DimExpr::operator*(const DimExpr &rhs) const {
  if (impl->unknown || rhs.impl->unknown)
    return DimExpr();
  std::vector<Term> terms;
  for (const Term &a : impl->terms)
    for (const Term &b : rhs.impl->terms) {
      int64_t c;
      if (llvm::MulOverflow(a.coeff, b.coeff, c))
        return DimExpr();
      terms.push_back(Term{c, multiplyMonomials(a.factors, b.factors)});
    }
  return DimExprImpl::fromTerms(std::move(terms));
}

static int64_t floorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

/// Divides `m` by `d` if every factor of `d` occurs in `m` often enough.
static std::optional<Monomial> divideMonomial(const Monomial &m,
                                              const Monomial &d) {
  Monomial out;
  size_t j = 0;
  for (const Factor &f : m) {
    if (j < d.size() && d[j].atom.key == f.atom.key) {
      if (d[j].power > f.power)
        return std::nullopt;
      if (f.power > d[j].power)
        out.push_back(Factor{f.atom, f.power - d[j].power});
      ++j;
      continue;
    }
    out.push_back(f);
  }
  if (j != d.size())
    return std::nullopt;
  return out;
}

/// floor(num / c) for a constant c > 0: every coefficient is split as
/// c*q + r (0 <= r < c); the multiples of c leave the quotient exactly.
static DimExpr divideByPositiveConstant(const DimExpr &num, int64_t c) {
  if (num.isUnknown())
    return num;
  std::vector<Term> whole, rest;
  for (const Term &t : num.getImpl()->terms) {
    // Truncating division, then adjusted: q * c itself may not fit in 64
    // bits (for a coefficient near the minimum).
    int64_t q = t.coeff / c, r = t.coeff % c;
    if (r < 0) {
      r += c;
      --q;
    }
    if (q != 0)
      whole.push_back(Term{q, t.factors});
    if (r != 0)
      rest.push_back(Term{r, t.factors});
  }
  DimExpr result = DimExprImpl::fromTerms(std::move(whole));
  if (rest.empty())
    return result;
  DimExpr remainder = DimExprImpl::fromTerms(std::move(rest));
  if (auto r = remainder.getConstant())
    return result + DimExpr::constant(floorDivInt(*r, c));
  return result + makeQuotientAtom(remainder, DimExpr::constant(c));
}

std::optional<DimExpr> DimExpr::floorDiv(const DimExpr &rhs) const {
  if (auto c = rhs.getConstant(); c && *c == 0)
    return std::nullopt;
  if (impl->unknown || rhs.impl->unknown)
    return DimExpr();
  if (auto c = rhs.getConstant()) {
    if (*c > 0)
      return divideByPositiveConstant(*this, *c);
    if (*c == std::numeric_limits<int64_t>::min())
      return DimExpr();
    // floor(a / -c) == floor(-a / c)
    DimExpr negated = *this * DimExpr::constant(-1);
    if (negated.isUnknown())
      return DimExpr(); // -a overflowed
    return divideByPositiveConstant(negated, -*c);
  }
  const auto &den = rhs.impl->terms;
  // Exact division by a single positive term c*m.
  if (den.size() == 1 && den[0].coeff > 0) {
    std::vector<Term> out;
    bool exact = true;
    for (const Term &t : impl->terms) {
      auto m = divideMonomial(t.factors, den[0].factors);
      if (!m || t.coeff % den[0].coeff != 0) {
        exact = false;
        break;
      }
      out.push_back(Term{t.coeff / den[0].coeff, std::move(*m)});
    }
    if (exact)
      return DimExprImpl::fromTerms(std::move(out));
  }
  // num == k * den for an integer k (INT64_MIN / -1 overflows: skip).
  const auto &num = impl->terms;
  bool overflows = num.size() && den[0].coeff == -1 &&
                   num[0].coeff == std::numeric_limits<int64_t>::min();
  if (num.size() == den.size() && !num.empty() && !overflows) {
    bool proportional = den[0].coeff != 0 && num[0].coeff % den[0].coeff == 0;
    int64_t k = proportional ? num[0].coeff / den[0].coeff : 0;
    for (size_t i = 0; proportional && i < num.size(); ++i) {
      int64_t prod;
      proportional = monomialEqual(num[i].factors, den[i].factors) &&
                     !llvm::MulOverflow(den[i].coeff, k, prod) &&
                     prod == num[i].coeff;
    }
    if (proportional)
      return DimExpr::constant(k);
  }
  return makeQuotientAtom(*this, rhs);
}

//===----------------------------------------------------------------------===//
// Evaluation, substitution, bounds
//===----------------------------------------------------------------------===//

static std::optional<int64_t> evaluateAtom(const Atom &atom,
                                           const llvm::StringMap<int64_t> &env) {
  if (!atom.quot) {
    auto it = env.find(atom.key);
    if (it == env.end())
      return std::nullopt;
    return it->second;
  }
  auto n = atom.quot->num.evaluate(env);
  auto d = atom.quot->den.evaluate(env);
  if (!n || !d || *d == 0)
    return std::nullopt;
  if (*n == std::numeric_limits<int64_t>::min() && *d == -1)
    return std::nullopt;
  return floorDivInt(*n, *d);
}

std::optional<int64_t>
DimExpr::evaluate(const llvm::StringMap<int64_t> &env) const {
  if (impl->unknown)
    return std::nullopt;
  int64_t sum = 0;
  for (const Term &t : impl->terms) {
    int64_t prod = t.coeff;
    for (const Factor &f : t.factors) {
      auto v = evaluateAtom(f.atom, env);
      if (!v)
        return std::nullopt;
      for (unsigned p = 0; p < f.power; ++p)
        if (llvm::MulOverflow(prod, *v, prod))
          return std::nullopt;
    }
    if (llvm::AddOverflow(sum, prod, sum))
      return std::nullopt;
  }
  return sum;
}

static DimExpr substituteAtom(const Atom &atom,
                              const llvm::StringMap<DimExpr> &env) {
  if (!atom.quot) {
    auto it = env.find(atom.key);
    return it == env.end() ? DimExpr::symbol(atom.key) : it->second;
  }
  auto q = atom.quot->num.substitute(env).floorDiv(
      atom.quot->den.substitute(env));
  return q ? *q : DimExpr::unknown();
}

DimExpr DimExpr::substitute(const llvm::StringMap<DimExpr> &env) const {
  if (impl->unknown)
    return *this;
  DimExpr sum = DimExpr::constant(0);
  for (const Term &t : impl->terms) {
    DimExpr prod = DimExpr::constant(t.coeff);
    for (const Factor &f : t.factors) {
      DimExpr v = substituteAtom(f.atom, env);
      for (unsigned p = 0; p < f.power; ++p)
        prod = prod * v;
    }
    sum = sum + prod;
  }
  return sum;
}

static std::optional<int64_t> atomLowerBound(const Atom &atom) {
  if (!atom.quot)
    return 0; // a size: empty dims are allowed
  auto numLb = atom.quot->num.lowerBound();
  auto denLb = atom.quot->den.lowerBound();
  if (!numLb || !denLb || *denLb < 0)
    return std::nullopt;
  // A quotient is defined only where its denominator is >= 1 (a zero
  // denominator is a run-time error, never a value), and there floor(n/d)
  // is >= 0 for n >= 0, and >= n for n < 0.
  return *numLb >= 0 ? 0 : *numLb;
}

std::optional<int64_t> DimExpr::lowerBound() const {
  if (impl->unknown)
    return std::nullopt;
  int64_t sum = 0;
  for (const Term &t : impl->terms) {
    int64_t monoLb = 1;
    for (const Factor &f : t.factors) {
      auto lb = atomLowerBound(f.atom);
      if (!lb || *lb < 0)
        return std::nullopt; // sign of the monomial not bounded
      monoLb = 0; // every atom can be 0
    }
    // A negative coefficient on a non-constant monomial is unbounded below.
    if (t.coeff < 0 && !t.factors.empty())
      return std::nullopt;
    int64_t termLb;
    if (llvm::MulOverflow(t.coeff, monoLb, termLb) ||
        llvm::AddOverflow(sum, termLb, sum))
      return std::nullopt;
  }
  return sum;
}

Truth tessera::shape::decideEqual(const DimExpr &a, const DimExpr &b) {
  if (a.isUnknown() || b.isUnknown())
    return Truth::Unknown;
  if (a.isIdentical(b))
    return Truth::Always;
  DimExpr diff = a - b;
  if (diff.isUnknown())
    return Truth::Unknown;
  if (auto c = diff.getConstant())
    return *c == 0 ? Truth::Always : Truth::Never;
  auto lb = diff.lowerBound();
  if (lb && *lb > 0)
    return Truth::Never;
  auto negLb = (b - a).lowerBound();
  if (negLb && *negLb > 0)
    return Truth::Never;
  return Truth::Unknown;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

bool tessera::shape::isValidSymbolName(llvm::StringRef name) {
  if (name.empty() || !(std::isalpha(name[0]) || name[0] == '_'))
    return false;
  return llvm::all_of(name.drop_front(),
                      [](char c) { return std::isalnum(c) || c == '_'; });
}

namespace {
/// The canonical form of a parsed tree; the errors of computing it (an
/// overflow, a division by a constant zero) are reported at the node's
/// column.
std::optional<DimExpr> build(const tessera::dimsyntax::Node &n,
                             std::string_view text, std::string &error) {
  using tessera::dimsyntax::Node;
  auto fail = [&](size_t column, const char *what) -> std::nullopt_t {
    error = tessera::dimsyntax::errorAt(text, column, what);
    return std::nullopt;
  };
  switch (n.kind) {
  case Node::Constant:
    return DimExpr::constant(n.value);
  case Node::Symbol:
    return DimExpr::symbol(n.name);
  case Node::Unknown:
    return DimExpr::unknown();
  default:
    break;
  }
  auto lhs = build(*n.lhs, text, error);
  if (!lhs)
    return std::nullopt;
  std::optional<DimExpr> rhs;
  if (n.kind != Node::Neg) {
    rhs = build(*n.rhs, text, error);
    if (!rhs)
      return std::nullopt;
  }
  DimExpr out;
  switch (n.kind) {
  case Node::Neg:
    out = *lhs * DimExpr::constant(-1);
    break;
  case Node::Add:
    out = *lhs + *rhs;
    break;
  case Node::Sub:
    out = *lhs - *rhs;
    break;
  case Node::Mul:
    out = *lhs * *rhs;
    break;
  default: {
    auto q = lhs->floorDiv(*rhs);
    if (!q)
      return fail(n.divisorColumn, "division by zero");
    out = *q;
    break;
  }
  }
  // An unknown result of known operands is an overflow.
  if (out.isUnknown() && !lhs->isUnknown() && !(rhs && rhs->isUnknown()))
    return fail(n.column, "integer overflow or expression too large");
  return out;
}
} // namespace

std::optional<DimExpr> tessera::shape::parseDimExpr(llvm::StringRef text,
                                                    std::string &error) {
  auto tree = tessera::dimsyntax::parse(std::string_view(text), error);
  if (!tree)
    return std::nullopt;
  return build(*tree, std::string_view(text), error);
}
