//===- DimEval.h - Dim expressions of manifests -----------------*- C++ -*-===//
//
// The runtime checks arguments against signatures whose dims are
// expressions of symbols ("B", "2*S", "(S+1)/2"). It parses them with the
// compiler's LLVM-free parser (tessera/Shape/DimSyntax.h), so both accept
// the same texts, and evaluates the tree rather than linking the compiler's
// shape algebra (and LLVM with it).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_DIMEVAL_H
#define TESSERA_RUNTIME_LIB_DIMEVAL_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace tessera::dimsyntax {
struct Node;
} // namespace tessera::dimsyntax

namespace tessera::runtime::detail {

/// A parsed dim expression: integers, symbols, '?', + - * and floor
/// division /, unary minus, parentheses.
class DimEval {
public:
  /// Parses `text`; on failure sets `error`.
  static std::optional<DimEval> parse(std::string_view text,
                                      std::string &error);

  bool isUnknown() const;
  std::optional<int64_t> getConstant() const;
  /// The name if the expression is exactly one symbol.
  std::optional<std::string> getSymbol() const;
  std::set<std::string> symbols() const;
  /// The value under `env`; nullopt if a symbol is unbound, the expression
  /// is '?', or a division by zero or an overflow occurs.
  std::optional<int64_t>
  evaluate(const std::map<std::string, int64_t> &env) const;
  const std::string &str() const { return text; }

private:
  std::shared_ptr<const dimsyntax::Node> root;
  std::string text;
};

} // namespace tessera::runtime::detail

#endif // TESSERA_RUNTIME_LIB_DIMEVAL_H
