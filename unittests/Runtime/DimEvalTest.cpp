//===- DimEvalTest.cpp - Dim expressions of manifests ---------------------===//

#include "DimEval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using tessera::runtime::detail::DimEval;

namespace {
std::optional<int64_t> eval(const char *text,
                            std::map<std::string, int64_t> env = {}) {
  std::string error;
  auto e = DimEval::parse(text, error);
  EXPECT_TRUE(e) << error;
  return e ? e->evaluate(env) : std::nullopt;
}

TEST(DimEval, PrecedenceAndFloorDivision) {
  EXPECT_EQ(eval("2+3*4"), 14);
  EXPECT_EQ(eval("(2+3)*4"), 20);
  EXPECT_EQ(eval("10-4-3"), 3); // left associative
  EXPECT_EQ(eval("7/2"), 3);
  EXPECT_EQ(eval("(0-7)/2"), -4); // floor, not truncation
  EXPECT_EQ(eval("(S+1)/2", {{"S", 5}}), 3);
  EXPECT_EQ(eval("B*H*64", {{"B", 2}, {"H", 3}}), 384);
}

TEST(DimEval, UnknownUnboundAndErrors) {
  EXPECT_EQ(eval("?"), std::nullopt);
  EXPECT_EQ(eval("S*2"), std::nullopt);
  EXPECT_EQ(eval("4/0"), std::nullopt);
  EXPECT_EQ(eval("9223372036854775807+1"), std::nullopt); // overflow
  std::string error;
  EXPECT_FALSE(DimEval::parse("2*", error));
  EXPECT_EQ(error, "expected an integer, a symbol, '?' or '(' at column 3 of "
                   "dimension expression '2*'");
  EXPECT_FALSE(DimEval::parse("(S", error));
  EXPECT_FALSE(DimEval::parse("S$", error));
  EXPECT_NE(error.find("unexpected '$'"), std::string::npos) << error;
  EXPECT_FALSE(DimEval::parse("99999999999999999999", error));
  EXPECT_NE(error.find("integer does not fit in 64 bits at column 1"),
            std::string::npos)
      << error;
  std::string deep(33, '(');
  EXPECT_FALSE(DimEval::parse(deep + "S" + std::string(33, ')'), error));
  EXPECT_NE(error.find("nested too deeply"), std::string::npos) << error;
}

// Texts the compiler prints for negative coefficients and constants.
TEST(DimEval, UnaryMinusAndNegativeLiterals) {
  EXPECT_EQ(eval("-S+4", {{"S", 1}}), 3);
  EXPECT_EQ(eval("-2*S", {{"S", 3}}), -6);
  EXPECT_EQ(eval("- (S-1)", {{"S", 3}}), -2);
  EXPECT_EQ(eval("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(eval("-(-9223372036854775807-1)"), std::nullopt); // overflow
}

TEST(DimEval, Accessors) {
  std::string error;
  auto s = DimEval::parse("Seq_1", error);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->getSymbol(), "Seq_1");
  auto c = DimEval::parse("64", error);
  EXPECT_EQ(c->getConstant(), 64);
  auto e = DimEval::parse("B*S/H", error);
  EXPECT_EQ(e->symbols(), (std::set<std::string>{"B", "H", "S"}));
  EXPECT_FALSE(e->getSymbol());
}

// Random expressions over two symbols against a direct double-based
// reference (exact for these magnitudes).
TEST(DimEval, RandomExpressionsMatchReference) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(0, 5), value(1, 9);
  for (int trial = 0; trial < 2000; ++trial) {
    int64_t a = value(rng), b = value(rng);
    std::string text = "A";
    double ref = double(a);
    for (int k = 0; k < 4; ++k) {
      int64_t c = value(rng);
      switch (pick(rng)) {
      case 0:
        text = "(" + text + ")+" + std::to_string(c);
        ref += c;
        break;
      case 1:
        text = "(" + text + ")-B";
        ref -= b;
        break;
      case 2:
        text = "(" + text + ")*" + std::to_string(c);
        ref *= c;
        break;
      case 3:
        text = "(" + text + ")/" + std::to_string(c);
        ref = std::floor(ref / c);
        break;
      case 4:
        text = "B*(" + text + ")";
        ref *= b;
        break;
      default:
        text = "(" + text + ")/B";
        ref = std::floor(ref / b);
        break;
      }
    }
    EXPECT_EQ(eval(text.c_str(), {{"A", a}, {"B", b}}), int64_t(ref)) << text;
  }
}
} // namespace
