//===- DimSyntax.h - The text of a dimension expression ---------*- C++ -*-===//
//
// One parser for the text of a dimension (`64`, `B`, `2*S`, `(S+1)/2`, `?`),
// shared by the compiler's shape algebra (tessera/Shape/DimExpr.h builds its
// canonical form from the tree) and the runtime (which checks arguments
// against manifests and must not link LLVM). So this header uses the C++
// standard library only, and both read and reject exactly the same texts,
// with the same messages.
//
// Grammar, usual precedence, `/` is floor division:
//   sum     := product (('+' | '-') product)*
//   product := unary (('*' | '/') unary)*
//   unary   := '-' unary | primary
//   primary := integer | identifier | '?' | '(' sum ')'
// Spaces may separate tokens. `-<digits>` is one literal, so that the
// smallest int64 (which a printer writes) reads back.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SHAPE_DIMSYNTAX_H
#define TESSERA_SHAPE_DIMSYNTAX_H

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::dimsyntax {

/// A node of the syntax tree. `column` (1-based) is where an error found
/// while computing the node's value is reported: for a binary operation the
/// end of its right operand (an overflow), for a division the start of its
/// divisor (a division by zero).
struct Node {
  enum Kind { Constant, Symbol, Unknown, Neg, Add, Sub, Mul, Div } kind;
  int64_t value = 0;
  std::string name;
  std::shared_ptr<const Node> lhs, rhs;
  size_t column = 0;
  size_t divisorColumn = 0;
};
using NodePtr = std::shared_ptr<const Node>;

/// The message of an error at `column` of `text`.
inline std::string errorAt(std::string_view text, size_t column,
                           const std::string &what) {
  return what + " at column " + std::to_string(column) +
         " of dimension expression '" + std::string(text) + "'";
}

namespace detail {
class Parser {
public:
  Parser(std::string_view text, std::string &error)
      : text(text), error(error) {}

  NodePtr parse() {
    NodePtr e = sum();
    if (!e)
      return nullptr;
    skipSpace();
    if (pos != text.size())
      return fail("unexpected '" + std::string(1, text[pos]) + "'");
    return e;
  }

private:
  static constexpr unsigned kMaxDepth = 32;
  std::string_view text;
  std::string &error;
  size_t pos = 0;
  unsigned depth = 0;

  std::nullptr_t fail(const std::string &what) {
    error = errorAt(text, pos + 1, what);
    return nullptr;
  }
  static bool isDigit(char c) { return c >= '0' && c <= '9'; }
  static bool isIdentStart(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

  void skipSpace() {
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
  }
  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  NodePtr binary(Node::Kind kind, NodePtr lhs, NodePtr rhs,
                 size_t divisorColumn = 0) {
    auto n = std::make_shared<Node>();
    n->kind = kind;
    n->lhs = std::move(lhs);
    n->rhs = std::move(rhs);
    n->column = pos + 1;
    n->divisorColumn = divisorColumn;
    return n;
  }

  NodePtr sum() {
    NodePtr lhs = product();
    while (lhs) {
      Node::Kind kind;
      if (consume('+'))
        kind = Node::Add;
      else if (consume('-'))
        kind = Node::Sub;
      else
        break;
      NodePtr rhs = product();
      if (!rhs)
        return nullptr;
      lhs = binary(kind, lhs, rhs);
    }
    return lhs;
  }

  NodePtr product() {
    NodePtr lhs = unary();
    while (lhs) {
      Node::Kind kind;
      if (consume('*'))
        kind = Node::Mul;
      else if (consume('/'))
        kind = Node::Div;
      else
        break;
      size_t divisorColumn = pos + 1;
      NodePtr rhs = unary();
      if (!rhs)
        return nullptr;
      lhs = binary(kind, lhs, rhs, divisorColumn);
    }
    return lhs;
  }

  NodePtr unary() {
    if (++depth > kMaxDepth)
      return fail("expression nested too deeply");
    NodePtr e = unaryImpl();
    --depth;
    return e;
  }

  NodePtr unaryImpl() {
    if (!consume('-'))
      return primary();
    skipSpace();
    if (pos < text.size() && isDigit(text[pos]))
      return integer(/*negative=*/true);
    NodePtr operand = unary();
    if (!operand)
      return nullptr;
    auto n = std::make_shared<Node>();
    n->kind = Node::Neg;
    n->lhs = std::move(operand);
    n->column = pos + 1;
    return n;
  }

  /// Digits at `pos`, as a constant (negated when `negative`).
  NodePtr integer(bool negative) {
    size_t start = pos;
    uint64_t magnitude = 0;
    const uint64_t limit =
        uint64_t(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0);
    bool tooLarge = false;
    while (pos < text.size() && isDigit(text[pos])) {
      unsigned digit = text[pos++] - '0';
      if (magnitude > (limit - digit) / 10)
        tooLarge = true;
      else
        magnitude = magnitude * 10 + digit;
    }
    if (tooLarge) {
      pos = start;
      return fail("integer does not fit in 64 bits");
    }
    auto n = std::make_shared<Node>();
    n->kind = Node::Constant;
    n->value = !negative ? int64_t(magnitude)
               : magnitude == uint64_t(1) << 63
                   ? std::numeric_limits<int64_t>::min()
                   : -int64_t(magnitude);
    return n;
  }

  NodePtr primary() {
    skipSpace();
    if (pos >= text.size())
      return fail("expected an integer, a symbol, '?' or '('");
    char c = text[pos];
    if (c == '(') {
      ++pos;
      NodePtr e = sum();
      if (!e)
        return nullptr;
      if (!consume(')'))
        return fail("expected ')'");
      return e;
    }
    if (c == '?') {
      ++pos;
      auto n = std::make_shared<Node>();
      n->kind = Node::Unknown;
      return n;
    }
    if (isDigit(c))
      return integer(/*negative=*/false);
    if (isIdentStart(c)) {
      size_t start = pos;
      while (pos < text.size() && isIdentChar(text[pos]))
        ++pos;
      auto n = std::make_shared<Node>();
      n->kind = Node::Symbol;
      n->name = std::string(text.substr(start, pos - start));
      return n;
    }
    return fail("expected an integer, a symbol, '?' or '('");
  }
};
} // namespace detail

/// Parses `text`. On failure returns null and sets `error` to a message
/// naming the column and the text.
inline NodePtr parse(std::string_view text, std::string &error) {
  return detail::Parser(text, error).parse();
}

/// The value of `n`, with `lookup(name)` giving a symbol's value (nullopt
/// when unbound). Nullopt for `?`, an unbound symbol, a division by zero or
/// an int64 overflow.
template <typename Lookup>
std::optional<int64_t> evaluate(const Node &n, const Lookup &lookup) {
  switch (n.kind) {
  case Node::Constant:
    return n.value;
  case Node::Unknown:
    return std::nullopt;
  case Node::Symbol:
    return lookup(n.name);
  case Node::Neg: {
    auto a = evaluate(*n.lhs, lookup);
    int64_t out;
    if (!a || __builtin_sub_overflow(int64_t(0), *a, &out))
      return std::nullopt;
    return out;
  }
  default:
    break;
  }
  auto a = evaluate(*n.lhs, lookup);
  auto b = evaluate(*n.rhs, lookup);
  if (!a || !b)
    return std::nullopt;
  int64_t out;
  switch (n.kind) {
  case Node::Add:
    return __builtin_add_overflow(*a, *b, &out) ? std::nullopt
                                                : std::optional(out);
  case Node::Sub:
    return __builtin_sub_overflow(*a, *b, &out) ? std::nullopt
                                                : std::optional(out);
  case Node::Mul:
    return __builtin_mul_overflow(*a, *b, &out) ? std::nullopt
                                                : std::optional(out);
  default: // floor division
    if (*b == 0 || (*a == std::numeric_limits<int64_t>::min() && *b == -1))
      return std::nullopt;
    out = *a / *b;
    if (*a % *b != 0 && ((*a < 0) != (*b < 0)))
      --out;
    return out;
  }
}

/// Calls `fn(name)` for every symbol of `n`, left to right.
template <typename Fn>
void forEachSymbol(const Node &n, const Fn &fn) {
  if (n.kind == Node::Symbol)
    fn(n.name);
  if (n.lhs)
    forEachSymbol(*n.lhs, fn);
  if (n.rhs)
    forEachSymbol(*n.rhs, fn);
}

} // namespace tessera::dimsyntax

#endif // TESSERA_SHAPE_DIMSYNTAX_H
