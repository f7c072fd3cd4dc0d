//===- DimEval.cpp - Dim expressions of manifests -------------------------===//

#include "DimEval.h"

#include <cctype>
#include <vector>

using namespace tessera::runtime::detail;

struct DimEval::Node {
  enum Kind { Constant, Symbol, Unknown, Add, Sub, Mul, Div } kind;
  int64_t value = 0;
  std::string name;
  std::shared_ptr<const Node> lhs, rhs;
};

namespace {
using NodePtr = std::shared_ptr<const DimEval::Node>;

/// Recursive descent over expr := term (('+'|'-') term)*,
/// term := factor (('*'|'/') factor)*, factor := int | name | '?' | '(' expr
/// ')'.
class Parser {
public:
  explicit Parser(std::string_view text) : text(text) {}

  NodePtr parseAll(std::string &error) {
    NodePtr e = expr();
    skip();
    if (e && pos != text.size())
      fail("unexpected '" + std::string(1, text[pos]) + "'");
    if (!this->error.empty()) {
      error = this->error;
      return nullptr;
    }
    return e;
  }

private:
  void skip() {
    while (pos < text.size() && text[pos] == ' ')
      ++pos;
  }
  NodePtr fail(const std::string &why) {
    if (error.empty())
      error = why + " at offset " + std::to_string(pos) + " of '" +
              std::string(text) + "'";
    return nullptr;
  }
  static NodePtr make(DimEval::Node::Kind kind, NodePtr lhs, NodePtr rhs) {
    auto n = std::make_shared<DimEval::Node>();
    n->kind = kind;
    n->lhs = std::move(lhs);
    n->rhs = std::move(rhs);
    return n;
  }
  NodePtr expr() {
    NodePtr lhs = term();
    while (lhs) {
      skip();
      if (pos >= text.size() || (text[pos] != '+' && text[pos] != '-'))
        return lhs;
      auto kind = text[pos++] == '+' ? DimEval::Node::Add : DimEval::Node::Sub;
      NodePtr rhs = term();
      if (!rhs)
        return nullptr;
      lhs = make(kind, lhs, rhs);
    }
    return nullptr;
  }
  NodePtr term() {
    NodePtr lhs = factor();
    while (lhs) {
      skip();
      if (pos >= text.size() || (text[pos] != '*' && text[pos] != '/'))
        return lhs;
      auto kind = text[pos++] == '*' ? DimEval::Node::Mul : DimEval::Node::Div;
      NodePtr rhs = factor();
      if (!rhs)
        return nullptr;
      lhs = make(kind, lhs, rhs);
    }
    return nullptr;
  }
  NodePtr factor() {
    skip();
    if (pos >= text.size())
      return fail("expected a dim");
    char c = text[pos];
    auto n = std::make_shared<DimEval::Node>();
    if (c == '(') {
      ++pos;
      NodePtr e = expr();
      skip();
      if (!e)
        return nullptr;
      if (pos >= text.size() || text[pos] != ')')
        return fail("expected ')'");
      ++pos;
      return e;
    }
    if (c == '?') {
      ++pos;
      n->kind = DimEval::Node::Unknown;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      n->kind = DimEval::Node::Constant;
      while (pos < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos]))) {
        if (__builtin_mul_overflow(n->value, 10, &n->value) ||
            __builtin_add_overflow(n->value, text[pos++] - '0', &n->value))
          return fail("integer too large");
      }
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      n->kind = DimEval::Node::Symbol;
      while (pos < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[pos])) ||
              text[pos] == '_'))
        n->name += text[pos++];
      return n;
    }
    return fail("unexpected '" + std::string(1, c) + "'");
  }

  std::string_view text;
  size_t pos = 0;
  std::string error;
};

std::optional<int64_t> eval(const DimEval::Node &n,
                            const std::map<std::string, int64_t> &env) {
  switch (n.kind) {
  case DimEval::Node::Constant:
    return n.value;
  case DimEval::Node::Unknown:
    return std::nullopt;
  case DimEval::Node::Symbol: {
    auto it = env.find(n.name);
    if (it == env.end())
      return std::nullopt;
    return it->second;
  }
  default:
    break;
  }
  auto a = eval(*n.lhs, env), b = eval(*n.rhs, env);
  if (!a || !b)
    return std::nullopt;
  int64_t out;
  switch (n.kind) {
  case DimEval::Node::Add:
    if (__builtin_add_overflow(*a, *b, &out))
      return std::nullopt;
    return out;
  case DimEval::Node::Sub:
    if (__builtin_sub_overflow(*a, *b, &out))
      return std::nullopt;
    return out;
  case DimEval::Node::Mul:
    if (__builtin_mul_overflow(*a, *b, &out))
      return std::nullopt;
    return out;
  default: // floor division
    if (*b == 0 || (*a == INT64_MIN && *b == -1))
      return std::nullopt;
    out = *a / *b;
    if ((*a % *b != 0) && ((*a < 0) != (*b < 0)))
      --out;
    return out;
  }
}

void collect(const DimEval::Node &n, std::set<std::string> &out) {
  if (n.kind == DimEval::Node::Symbol)
    out.insert(n.name);
  if (n.lhs)
    collect(*n.lhs, out);
  if (n.rhs)
    collect(*n.rhs, out);
}
} // namespace

std::optional<DimEval> DimEval::parse(std::string_view text,
                                      std::string &error) {
  Parser parser(text);
  NodePtr root = parser.parseAll(error);
  if (!root)
    return std::nullopt;
  DimEval e;
  e.root = root;
  e.text = std::string(text);
  return e;
}

bool DimEval::isUnknown() const { return root->kind == Node::Unknown; }

std::optional<int64_t> DimEval::getConstant() const {
  if (root->kind == Node::Constant)
    return root->value;
  return std::nullopt;
}

std::optional<std::string> DimEval::getSymbol() const {
  if (root->kind == Node::Symbol)
    return root->name;
  return std::nullopt;
}

std::set<std::string> DimEval::symbols() const {
  std::set<std::string> out;
  collect(*root, out);
  return out;
}

std::optional<int64_t>
DimEval::evaluate(const std::map<std::string, int64_t> &env) const {
  return eval(*root, env);
}
