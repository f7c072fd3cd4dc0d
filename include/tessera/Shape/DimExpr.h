//===- DimExpr.h - Symbolic tensor dimensions -------------------*- C++ -*-===//
//
// A tensor dimension in Tessera is a constant (64), a named symbol (B, S_max)
// or an integer expression of symbols (2*S, B*H, D/H, S-1). This header is the
// IR-free algebra of such dimensions: the compiler's verifiers and shape
// inference, the Python tracer and the runtime all use it, so every layer
// reasons about shapes the same way and prints the same text.
//
// Model:
//  * Symbols stand for integers >= 0: any size, an empty one included. So
//    D and 2*D are equal when D is 0 (a run-time check, not a compile-time
//    error), and S - 1 may be negative.
//  * `/` is floor division (as Python's `//`). Exact cases simplify
//    ((2*S)/2 == S, (B*S)/B == S); the rest stay as opaque quotient atoms,
//    so H*(D/H) == D is *not* provable and needs a run-time check. A
//    quotient is defined where its denominator is >= 1: a denominator of 0
//    at run time is an error of the call (a divisibility check fails, or
//    the argument check reports it), never a value.
//  * Expressions are kept in a canonical form (a sum of integer-weighted
//    monomials over atoms), so two expressions are equal for all values of
//    their symbols iff their canonical forms are identical.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SHAPE_DIMEXPR_H
#define TESSERA_SHAPE_DIMEXPR_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tessera::shape {

namespace detail {
struct DimExprImpl;
} // namespace detail

/// Result of comparing two dimensions for all values of their symbols.
enum class Truth {
  /// Equal for every value of the symbols.
  Always,
  /// Different for every value of the symbols (e.g. D vs 2*D, 4 vs 8).
  Never,
  /// Depends on the values (e.g. S vs T, or any comparison with `?`).
  Unknown,
};

/// An immutable symbolic dimension. Cheap to copy (shared representation).
class DimExpr {
public:
  /// The unknown dimension, printed `?`.
  DimExpr();
  static DimExpr unknown() { return DimExpr(); }
  static DimExpr constant(int64_t value);
  /// A named symbol. The name must be an identifier ([A-Za-z_][A-Za-z0-9_]*).
  static DimExpr symbol(llvm::StringRef name);

  bool isUnknown() const;
  /// The value if the expression is a constant.
  std::optional<int64_t> getConstant() const;
  /// The name if the expression is exactly one symbol.
  std::optional<std::string> getSymbolName() const;
  /// True if the expression names at least one symbol.
  bool hasSymbols() const;

  /// Arithmetic. Any operand unknown, or an int64 overflow, gives unknown.
  DimExpr operator+(const DimExpr &rhs) const;
  DimExpr operator-(const DimExpr &rhs) const;
  DimExpr operator*(const DimExpr &rhs) const;
  /// Floor division. Returns std::nullopt for a division by a constant 0.
  std::optional<DimExpr> floorDiv(const DimExpr &rhs) const;

  /// Structural identity of canonical forms; `?` is identical only to `?`.
  bool isIdentical(const DimExpr &other) const;

  /// Canonical text: `64`, `B`, `2*S`, `B*H`, `S-1`, `D/H`, `(S+1)/2`, `?`.
  std::string str() const;
  /// True if str() needs parentheses when it is a factor of a product.
  bool isSum() const;

  /// All symbol names in the expression (including inside quotients).
  void collectSymbols(std::set<std::string> &out) const;

  /// Value under the given symbol bindings; nullopt if a symbol is unbound,
  /// the expression is unknown, or a division by zero or overflow occurs.
  std::optional<int64_t> evaluate(const llvm::StringMap<int64_t> &env) const;

  /// Replace symbols by expressions (symbols not in `env` stay).
  DimExpr substitute(const llvm::StringMap<DimExpr> &env) const;

  /// Lower bound over all values of the symbols (symbols >= 0, quotients of
  /// non-negative expressions >= 0), or nullopt when the expression can get
  /// arbitrarily small.
  std::optional<int64_t> lowerBound() const;

  /// One term of the canonical sum: coeff * atom1^p1 * atom2^p2 ...; each
  /// atom is a symbol or a quotient (see getQuotient).
  struct Product {
    int64_t coeff;
    std::vector<std::pair<DimExpr, unsigned>> factors;
  };
  /// The canonical terms (empty for 0 and for `?`).
  std::vector<Product> products() const;
  /// For an expression that is exactly one floor quotient: its numerator and
  /// denominator.
  std::optional<std::pair<DimExpr, DimExpr>> getQuotient() const;

  const detail::DimExprImpl *getImpl() const { return impl.get(); }

private:
  explicit DimExpr(std::shared_ptr<const detail::DimExprImpl> impl);
  std::shared_ptr<const detail::DimExprImpl> impl;
  friend struct detail::DimExprImpl;
};

/// Decide `a == b` for all values of the symbols.
Truth decideEqual(const DimExpr &a, const DimExpr &b);

/// Parse a dimension expression: integers, identifiers, `?`, `+ - * /` and
/// parentheses with the usual precedence. On failure returns nullopt and sets
/// `error` to a message that names the offending text.
std::optional<DimExpr> parseDimExpr(llvm::StringRef text, std::string &error);

/// True if `name` is a valid symbol name.
bool isValidSymbolName(llvm::StringRef name);

} // namespace tessera::shape

#endif // TESSERA_SHAPE_DIMEXPR_H
