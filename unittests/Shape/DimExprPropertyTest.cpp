//===- DimExprPropertyTest.cpp - Canonical forms against direct evaluation ===//
//
// Random dimension expressions are evaluated two ways: by DimExpr (parse,
// canonicalize, evaluate) and by a tiny reference interpreter that walks the
// text directly with Python's floor-division semantics. They must agree for
// random symbol values, and decideEqual's verdicts must hold at every
// sampled point (Always: equal everywhere; Never: different everywhere).
//
//===----------------------------------------------------------------------===//

#include "tessera/Shape/DimExpr.h"
#include "tessera/Shape/DimSyntax.h"

#include "gtest/gtest.h"

#include <optional>
#include <random>

using namespace tessera::shape;

namespace {

/// Reference: evaluates `+ - * /` (floor), parentheses, integers and
/// symbols left to right with the usual precedence, on int64 with overflow
/// reported as nullopt.
class Reference {
public:
  Reference(const std::string &text, const std::map<std::string, int64_t> &env)
      : text(text), env(env) {}

  std::optional<int64_t> run() {
    auto v = sum();
    return pos == text.size() ? v : std::nullopt;
  }

private:
  const std::string &text;
  const std::map<std::string, int64_t> &env;
  size_t pos = 0;

  static std::optional<int64_t> floorDiv(int64_t a, int64_t b) {
    if (b == 0 || (a == INT64_MIN && b == -1))
      return std::nullopt;
    int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
      --q;
    return q;
  }

  std::optional<int64_t> sum() {
    auto v = product();
    while (v && pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
      char op = text[pos++];
      auto r = product();
      int64_t out;
      if (!r || (op == '+' ? __builtin_add_overflow(*v, *r, &out)
                           : __builtin_sub_overflow(*v, *r, &out)))
        return std::nullopt;
      v = out;
    }
    return v;
  }

  std::optional<int64_t> product() {
    auto v = unary();
    while (v && pos < text.size() && (text[pos] == '*' || text[pos] == '/')) {
      char op = text[pos++];
      auto r = unary();
      if (!r)
        return std::nullopt;
      if (op == '*') {
        int64_t out;
        if (__builtin_mul_overflow(*v, *r, &out))
          return std::nullopt;
        v = out;
      } else {
        v = floorDiv(*v, *r);
      }
    }
    return v;
  }

  std::optional<int64_t> unary() {
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      auto v = unary();
      if (!v || *v == INT64_MIN)
        return std::nullopt;
      return -*v;
    }
    return primary();
  }

  std::optional<int64_t> primary() {
    if (pos >= text.size())
      return std::nullopt;
    if (text[pos] == '(') {
      ++pos;
      auto v = sum();
      if (pos >= text.size() || text[pos] != ')')
        return std::nullopt;
      ++pos;
      return v;
    }
    if (std::isdigit(text[pos])) {
      int64_t v = 0;
      while (pos < text.size() && std::isdigit(text[pos]))
        v = v * 10 + (text[pos++] - '0');
      return v;
    }
    size_t start = pos;
    while (pos < text.size() && std::isalpha(text[pos]))
      ++pos;
    auto it = env.find(text.substr(start, pos - start));
    if (it == env.end())
      return std::nullopt;
    return it->second;
  }
};

/// Random expression text over symbols A, B, C with small constants.
std::string randomExpr(std::mt19937 &rng, int depth) {
  std::uniform_int_distribution<int> pick(0, 9);
  int k = pick(rng);
  if (depth == 0 || k < 3) {
    static const char *atoms[] = {"A", "B", "C", "1", "2", "3", "4", "7"};
    return atoms[std::uniform_int_distribution<int>(0, 7)(rng)];
  }
  std::string l = randomExpr(rng, depth - 1), r = randomExpr(rng, depth - 1);
  switch (k) {
  case 3:
  case 4:
    return "(" + l + "+" + r + ")";
  case 5:
    return "(" + l + "-" + r + ")";
  case 6:
  case 7:
    return l + "*" + r;
  case 8:
    // Divide by a positive value so the reference never divides by zero.
    return "(" + l + ")/(" + r + "*" + r + "+1)";
  default:
    return "-(" + l + ")";
  }
}

std::map<std::string, int64_t> randomEnv(std::mt19937 &rng) {
  // Sizes from 0 (an empty dim) up.
  std::uniform_int_distribution<int64_t> v(0, 40);
  return {{"A", v(rng)}, {"B", v(rng)}, {"C", v(rng)}};
}

llvm::StringMap<int64_t> toStringMap(const std::map<std::string, int64_t> &m) {
  llvm::StringMap<int64_t> out;
  for (auto &[k, v] : m)
    out[k] = v;
  return out;
}

TEST(DimExprProperty, CanonicalFormEvaluatesLikeTheText) {
  std::mt19937 rng(1234);
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = randomExpr(rng, 4);
    std::string error;
    auto e = parseDimExpr(text, error);
    ASSERT_TRUE(e) << text << ": " << error;
    if (e->isUnknown())
      continue; // grew past the size cap
    // The printed canonical form must denote the same function.
    auto reparsed = parseDimExpr(e->str(), error);
    ASSERT_TRUE(reparsed) << e->str() << ": " << error;
    // The runtime reads the printed text of a manifest with the syntax tree
    // alone (no canonical form): it must evaluate the same.
    auto tree = tessera::dimsyntax::parse(e->str(), error);
    ASSERT_TRUE(tree) << e->str() << ": " << error;
    for (int j = 0; j < 5; ++j) {
      auto env = randomEnv(rng);
      auto expected = Reference(text, env).run();
      if (!expected)
        continue; // overflow in the reference
      EXPECT_EQ(e->evaluate(toStringMap(env)), expected)
          << text << " canonical " << e->str();
      EXPECT_EQ(reparsed->evaluate(toStringMap(env)), expected)
          << text << " reprinted " << e->str();
      auto lookup = [&](const std::string &name) -> std::optional<int64_t> {
        return env.at(name);
      };
      // The canonical form may overflow int64 in an intermediate product
      // where the text does not; it never differs otherwise.
      auto fromTree = tessera::dimsyntax::evaluate(*tree, lookup);
      if (fromTree)
        EXPECT_EQ(fromTree, expected) << text << " tree of " << e->str();
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
}

TEST(DimExprProperty, DecideEqualIsSound) {
  std::mt19937 rng(99);
  int never = 0, always = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string a = randomExpr(rng, 3), b = randomExpr(rng, 3);
    if (i % 4 == 0)
      b = "(" + a + ")+" + std::to_string(i % 3); // near misses and equals
    std::string error;
    auto ea = parseDimExpr(a, error), eb = parseDimExpr(b, error);
    ASSERT_TRUE(ea && eb);
    Truth t = decideEqual(*ea, *eb);
    if (t == Truth::Unknown)
      continue;
    (t == Truth::Always ? always : never)++;
    for (int j = 0; j < 20; ++j) {
      auto env = randomEnv(rng);
      auto va = Reference(a, env).run(), vb = Reference(b, env).run();
      if (!va || !vb)
        continue;
      if (t == Truth::Always)
        EXPECT_EQ(*va, *vb) << a << " vs " << b << " decided always equal";
      else
        EXPECT_NE(*va, *vb) << a << " vs " << b << " decided never equal";
    }
  }
  EXPECT_GT(always, 100);
  EXPECT_GT(never, 100);
}

} // namespace
