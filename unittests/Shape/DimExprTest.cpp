//===- DimExprTest.cpp - Symbolic dimension algebra -----------------------===//

#include "tessera/Shape/DimExpr.h"

#include "gtest/gtest.h"

using namespace tessera::shape;

namespace {

DimExpr parse(llvm::StringRef text) {
  std::string error;
  auto e = parseDimExpr(text, error);
  EXPECT_TRUE(e.has_value()) << text.str() << ": " << error;
  return e ? *e : DimExpr::unknown();
}

std::string parseError(llvm::StringRef text) {
  std::string error;
  EXPECT_FALSE(parseDimExpr(text, error).has_value()) << text.str();
  return error;
}

TEST(DimExpr, CanonicalText) {
  EXPECT_EQ(parse("64").str(), "64");
  EXPECT_EQ(parse("B").str(), "B");
  EXPECT_EQ(parse("S*2").str(), "2*S");
  EXPECT_EQ(parse("2*S").str(), "2*S");
  EXPECT_EQ(parse("H*B").str(), "B*H");
  EXPECT_EQ(parse("S - 1").str(), "S-1");
  EXPECT_EQ(parse("1 + S").str(), "S+1");
  EXPECT_EQ(parse("D/H").str(), "D/H");
  EXPECT_EQ(parse("(S+1)/2").str(), "(S+1)/2");
  EXPECT_EQ(parse("2*(D/H)").str(), "2*(D/H)");
  EXPECT_EQ(parse("?").str(), "?");
  EXPECT_EQ(parse("S*S").str(), "S*S");
  EXPECT_EQ(parse("-S + 3").str(), "-S+3");
}

TEST(DimExpr, PolynomialIdentities) {
  EXPECT_TRUE(parse("(B+1)*(B+1)").isIdentical(parse("B*B + 2*B + 1")));
  EXPECT_TRUE(parse("B*S*H*(D/H)").isIdentical(parse("(D/H)*H*S*B")));
  EXPECT_TRUE(parse("S + S").isIdentical(parse("2*S")));
  EXPECT_EQ(parse("S - S").getConstant(), 0);
  EXPECT_EQ(parse("3*4 - 2").getConstant(), 10);
}

TEST(DimExpr, FloorDivision) {
  EXPECT_TRUE(parse("(2*S)/2").isIdentical(parse("S")));
  EXPECT_TRUE(parse("(4*B*S)/(2*B)").isIdentical(parse("2*S")));
  EXPECT_TRUE(parse("(2*S+2)/(S+1)").isIdentical(parse("2")));
  // floor((5S + 1) / 2) = 2S + floor((S + 1) / 2)
  EXPECT_TRUE(parse("(5*S+1)/2").isIdentical(parse("2*S + (S+1)/2")));
  EXPECT_EQ(parse("7/2").getConstant(), 3);
  EXPECT_EQ(parse("-7/2").getConstant(), -4); // floor, as Python's //
  // H * (D / H) is D only when H divides D: not an identity.
  EXPECT_EQ(decideEqual(parse("H*(D/H)"), parse("D")), Truth::Unknown);
  // A coefficient near the 64-bit minimum: floor(c / 21) * 21 does not fit
  // in 64 bits, yet the quotient does (a fuzzer find).
  DimExpr big = parse("(-9223372036854775807*S)/21");
  llvm::StringMap<int64_t> one{{"S", 1}};
  EXPECT_EQ(big.evaluate(one), -439208192231179801);
  EXPECT_EQ(parse("S + (-9223372036854775807*S)/(21)").evaluate(one),
            -439208192231179800);
}

TEST(DimExpr, DecideEqual) {
  EXPECT_EQ(decideEqual(parse("B"), parse("B")), Truth::Always);
  EXPECT_EQ(decideEqual(parse("4"), parse("8")), Truth::Never);
  // Symbols may be 0: D == 2*D and B*S == B*S+B hold for an empty dim.
  EXPECT_EQ(decideEqual(parse("D"), parse("2*D")), Truth::Unknown);
  EXPECT_EQ(decideEqual(parse("S+1"), parse("S")), Truth::Never);
  EXPECT_EQ(decideEqual(parse("B*S"), parse("B*S+B")), Truth::Unknown);
  EXPECT_EQ(decideEqual(parse("B*S+1"), parse("B*S")), Truth::Never);
  EXPECT_EQ(decideEqual(parse("S"), parse("T")), Truth::Unknown);
  EXPECT_EQ(decideEqual(parse("S"), parse("4")), Truth::Unknown);
  EXPECT_EQ(decideEqual(parse("S*T"), parse("S")), Truth::Unknown); // T == 1
  EXPECT_EQ(decideEqual(parse("?"), parse("?")), Truth::Unknown);
  EXPECT_EQ(decideEqual(parse("D/H"), parse("D/H")), Truth::Always);
  // 2*S is even, yet deciding that is beyond the algebra: 2*S vs 1 is
  // left to a run-time check, while 2*S+1 vs 0 is decided.
  EXPECT_EQ(decideEqual(parse("2*S"), parse("1")), Truth::Unknown);
  EXPECT_EQ(decideEqual(parse("2*S+1"), parse("0")), Truth::Never);
}

TEST(DimExpr, EvaluateAndSubstitute) {
  llvm::StringMap<int64_t> env{{"B", 3}, {"D", 10}, {"H", 4}};
  EXPECT_EQ(parse("B*D + 1").evaluate(env), 31);
  EXPECT_EQ(parse("D/H").evaluate(env), 2);
  EXPECT_EQ(parse("(D-11)/H").evaluate(env), -1);
  EXPECT_EQ(parse("S").evaluate(env), std::nullopt);
  EXPECT_EQ(parse("D/(H-4)").evaluate(env), std::nullopt);

  llvm::StringMap<DimExpr> bind{{"B", parse("2*N")}, {"H", parse("8")}};
  EXPECT_EQ(parse("B*H").substitute(bind).str(), "16*N");
  EXPECT_EQ(parse("(16*D)/H").substitute(bind).str(), "2*D");
}

TEST(DimExpr, Symbols) {
  std::set<std::string> syms;
  parse("B*(D/H) + S").collectSymbols(syms);
  EXPECT_EQ(syms, (std::set<std::string>{"B", "D", "H", "S"}));
  EXPECT_EQ(parse("S_max").getSymbolName(), "S_max");
  EXPECT_EQ(parse("2*S").getSymbolName(), std::nullopt);
  EXPECT_TRUE(parse("2*S").hasSymbols());
  EXPECT_FALSE(parse("2*3").hasSymbols());
}

TEST(DimExpr, LowerBound) {
  EXPECT_EQ(parse("2*S + 3").lowerBound(), 3);
  EXPECT_EQ(parse("S - 1").lowerBound(), -1); // symbols are >= 0
  EXPECT_EQ(parse("B*S").lowerBound(), 0);
  EXPECT_EQ(parse("1 - S").lowerBound(), std::nullopt);
  EXPECT_EQ(parse("D/H").lowerBound(), 0);
  EXPECT_EQ(parse("-4").lowerBound(), -4);
}

TEST(DimExpr, ParseErrors) {
  EXPECT_NE(parseError("S*").find("expected an integer, a symbol"),
            std::string::npos);
  EXPECT_NE(parseError("(S+1").find("expected ')'"), std::string::npos);
  EXPECT_NE(parseError("S/0").find("division by zero"), std::string::npos);
  EXPECT_NE(parseError("99999999999999999999").find("64 bits"),
            std::string::npos);
  EXPECT_NE(parseError("9223372036854775807*2").find("overflow"),
            std::string::npos);
  EXPECT_NE(parseError("S $").find("unexpected '$'"), std::string::npos);
  EXPECT_NE(parseError(std::string(100, '(') + "S" + std::string(100, ')'))
                .find("nested too deeply"),
            std::string::npos);
  // Products of long sums are capped rather than expanded without bound.
  std::string big = "(A+B+C+D+E+F+G+H)";
  EXPECT_NE(parseError(big + "*" + big + "*" + big).find("too large"),
            std::string::npos);
}

TEST(DimExpr, DivisionOverflowIsNotACrash) {
  // (INT64_MIN * S) / (-S) is 2^63 for every S: it stays a quotient, whose
  // evaluation reports the overflow.
  DimExpr e = parse("(-9223372036854775808*S)/(-S)");
  EXPECT_FALSE(e.isUnknown());
  EXPECT_EQ(e.evaluate({{"S", 1}}), std::nullopt);
  EXPECT_NE(parseError("S + (-9223372036854775808*S)/(-1)").find("overflow"),
            std::string::npos);
}

TEST(DimExpr, Overflow) {
  DimExpr big = DimExpr::constant(std::numeric_limits<int64_t>::max());
  EXPECT_TRUE((big + DimExpr::constant(1)).isUnknown());
  EXPECT_TRUE((big * DimExpr::constant(2)).isUnknown());
  EXPECT_FALSE(DimExpr::constant(5).floorDiv(DimExpr::constant(0)).has_value());
}

} // namespace

namespace {
TEST(DimExpr, PrintedFormParsesBack) {
  for (const char *text :
       {"-9223372036854775808", "S-9223372036854775807-1", "-2*S+3",
        "(S+1)/2", "2*(D/H)", "B*H*(D/H)", "-(S/2)", "D/(2*H)"}) {
    DimExpr e = parse(text);
    EXPECT_TRUE(parse(e.str()).isIdentical(e)) << text << " -> " << e.str();
  }
  EXPECT_EQ(parse("-9223372036854775808").getConstant(),
            std::numeric_limits<int64_t>::min());
  EXPECT_NE(parseError("-9223372036854775809").find("64 bits"),
            std::string::npos);
}
} // namespace
