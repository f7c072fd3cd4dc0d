//===- ShapeFunctionsTest.cpp - Shape rules without IR --------------------===//

#include "tessera/Shape/ShapeFunctions.h"

#include "gtest/gtest.h"

using namespace tessera::shape;

namespace {

TensorShape shape(std::initializer_list<const char *> dims) {
  TensorShape s;
  for (const char *d : dims) {
    std::string error;
    s.dims.push_back(*parseDimExpr(d, error));
  }
  return s;
}

TEST(ShapeFunctions, BroadcastStaticOnesExpand) {
  ShapeDiag diag;
  auto r = inferBroadcast(diag, {shape({"B", "1", "64"}), shape({"S", "64"})});
  ASSERT_TRUE(r) << diag.message();
  EXPECT_EQ(r->str(), "[B, S, 64]");
  EXPECT_TRUE(diag.constraints().empty());
}

TEST(ShapeFunctions, BroadcastSymbolsNeedRuntimeCheck) {
  ShapeDiag diag({"lhs", "rhs"});
  auto r = inferBroadcast(diag, {shape({"4", "S"}), shape({"4", "T"})});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->str(), "[4, S]");
  ASSERT_EQ(diag.constraints().size(), 1u);
  const DimConstraint &c = diag.constraints()[0];
  EXPECT_EQ(c.message, "broadcast mismatch: lhs (operand 0) dim 1 (S) must "
                       "equal rhs (operand 1) dim 1 (T)");
  ASSERT_EQ(c.lhsRefs.size(), 1u);
  EXPECT_EQ(c.lhsRefs[0].operand, 0);
  EXPECT_EQ(c.rhsRefs[0].operand, 1);
}

TEST(ShapeFunctions, BroadcastMismatch) {
  ShapeDiag diag({"lhs", "rhs"});
  EXPECT_FALSE(inferBroadcast(diag, {shape({"3"}), shape({"4"})}));
  EXPECT_EQ(diag.message(), "broadcast mismatch: lhs (operand 0) dim 0 is 3 "
                            "but rhs (operand 1) dim 0 is 4");
}

TEST(ShapeFunctions, MatmulNamesSymbols) {
  ShapeDiag diag({"lhs", "rhs"});
  EXPECT_FALSE(inferMatmul(diag, shape({"B", "D"}), shape({"2*D+1", "H"}),
                           false, false));
  EXPECT_EQ(diag.message(),
            "contracting dimension mismatch: lhs (operand 0) dim 1 is D but "
            "rhs (operand 1) dim 0 is 2*D+1, which differ for every value of "
            "D");
  // D and 2*D are equal for an empty D: a run-time check, not an error.
  ShapeDiag empty({"lhs", "rhs"});
  EXPECT_TRUE(inferMatmul(empty, shape({"B", "D"}), shape({"2*D", "H"}),
                          false, false));
  EXPECT_EQ(empty.constraints().size(), 1u);
}

TEST(ShapeFunctions, MatmulBatchAndTranspose) {
  ShapeDiag diag;
  auto r = inferMatmul(diag, shape({"B", "1", "K", "M"}),
                       shape({"H", "N", "K"}), true, true);
  ASSERT_TRUE(r) << diag.message();
  EXPECT_EQ(r->str(), "[B, H, M, N]");
}

TEST(ShapeFunctions, DotGeneral) {
  ShapeDiag diag;
  auto r = inferDotGeneral(diag, shape({"B", "S", "D"}), shape({"B", "T", "D"}),
                           {0}, {0}, {2}, {2});
  ASSERT_TRUE(r) << diag.message();
  EXPECT_EQ(r->str(), "[B, S, T]");
  ShapeDiag bad;
  EXPECT_FALSE(inferDotGeneral(bad, shape({"B", "S"}), shape({"B", "S"}), {0},
                               {0}, {0}, {1}));
  EXPECT_EQ(bad.message(),
            "lhs_contracting_dims entry 0 repeats a dimension already used");
}

TEST(ShapeFunctions, Reshape) {
  ShapeDiag diag;
  auto r = inferReshape(diag, shape({"B", "S", "512"}),
                        shape({"B", "S", "8", "?"}));
  ASSERT_TRUE(r) << diag.message();
  EXPECT_EQ(r->str(), "[B, S, 8, 64]");
  EXPECT_TRUE(diag.constraints().empty());

  ShapeDiag split;
  auto s = inferReshape(split, shape({"B", "D"}), shape({"B", "H", "D/H"}));
  ASSERT_TRUE(s);
  ASSERT_EQ(split.constraints().size(), 1u); // H must divide D
  EXPECT_EQ(split.constraints()[0].lhsRefs.size(), 2u);

  ShapeDiag bad;
  EXPECT_FALSE(inferReshape(bad, shape({"4", "6"}), shape({"5", "5"})));
  EXPECT_EQ(bad.message(),
            "reshape must preserve the element count: operand 0 element count "
            "is 24 but result element count is 25");
}

TEST(ShapeFunctions, Conv2dOutputSize) {
  ShapeDiag diag;
  Conv2dParams p;
  p.strides = {2, 2};
  p.padding = {1, 1, 1, 1};
  auto r = inferConv2d(diag, shape({"N", "3", "H", "32"}),
                       shape({"16", "3", "3", "3"}), p);
  ASSERT_TRUE(r) << diag.message();
  // floor((H + 2 - 2 - 1) / 2) + 1 == floor((H + 1) / 2)
  EXPECT_EQ(r->str(), "[N, 16, (H+1)/2, 16]");
}

TEST(ShapeFunctions, SliceToSymbolicEnd) {
  ShapeDiag diag;
  std::string e;
  auto r = inferSlice(diag, shape({"B", "S"}),
                      {DimExpr::constant(0), DimExpr::constant(1)},
                      {*parseDimExpr("B", e), *parseDimExpr("S", e)}, {1, 2});
  ASSERT_TRUE(r) << diag.message();
  EXPECT_EQ(r->str(), "[B, S/2]");
}

TEST(ShapeFunctions, ConcatAndPad) {
  ShapeDiag diag;
  auto c = inferConcat(diag, {shape({"N", "4"}), shape({"M", "4"})}, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->str(), "[M+N, 4]");
  auto p = inferPad(diag, shape({"S"}), {1}, {2}, {1});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->str(), "[2*S+2]");
}

TEST(ShapeFunctions, BroadcastInDimAllowsRuntimeOne) {
  ShapeDiag diag;
  auto r = inferBroadcastInDim(diag, shape({"S"}), shape({"B", "T"}), {1});
  ASSERT_TRUE(r) << diag.message();
  EXPECT_EQ(r->str(), "[B, T]"); // T, whether S is T or 1
  ASSERT_EQ(diag.constraints().size(), 1u);
  EXPECT_EQ(diag.constraints()[0].relation, DimRelation::EqualOrOne);
}

TEST(ShapeFunctions, CallBindsPlainSymbolsFirst) {
  // @g(["2*S"], [S]) called with ([K], [M]): S binds to M, then K == 2*M.
  ShapeDiag diag;
  llvm::StringMap<DimExpr> b;
  ASSERT_TRUE(bindSymbols(diag, {shape({"2*S"}), shape({"S"})},
                          {shape({"K"}), shape({"M"})}, b));
  EXPECT_EQ(b.lookup("S").str(), "M");
  ASSERT_EQ(diag.constraints().size(), 1u);
  EXPECT_EQ(diag.constraints()[0].lhs.str(), "K");
  EXPECT_EQ(diag.constraints()[0].rhs.str(), "2*M");
  // @g(["T+1"], [T]) with ([T], [N]) is fine when T == N + 1: no error.
  ShapeDiag d2;
  llvm::StringMap<DimExpr> b2;
  EXPECT_TRUE(bindSymbols(d2, {shape({"T+1"}), shape({"T"})},
                          {shape({"T"}), shape({"N"})}, b2));
  EXPECT_FALSE(d2.failed());
}

TEST(ShapeFunctions, CallBindsSymbols) {
  ShapeDiag diag;
  llvm::StringMap<DimExpr> b;
  ASSERT_TRUE(bindSymbols(diag, {shape({"B", "D"}), shape({"D", "H"})},
                          {shape({"32", "N"}), shape({"N", "8"})}, b));
  EXPECT_EQ(substitute(shape({"B", "2*H"}), b).str(), "[32, 16]");
  ShapeDiag bad;
  llvm::StringMap<DimExpr> b2;
  EXPECT_FALSE(bindSymbols(bad, {shape({"B", "D"}), shape({"D"})},
                           {shape({"4", "8"}), shape({"9"})}, b2));
  EXPECT_EQ(bad.message(), "argument shape mismatch: operand 1 dim 0 is 9 but "
                           "the callee's parameter 1 dim 0 (D) is 8");
}

TEST(ShapeFunctions, CollectivesDivideEvenly) {
  ShapeDiag diag;
  auto r = inferReduceScatter(diag, shape({"512", "64"}), 0, 4);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->str(), "[128, 64]");
  ShapeDiag bad;
  EXPECT_FALSE(inferReduceScatter(bad, shape({"10"}), 0, 4));
  EXPECT_EQ(bad.message(),
            "the split dimension must divide evenly over group_size: operand "
            "0 dim 0 is 10, which is not a multiple of 4");
  // A symbolic dim is checked at run time.
  ShapeDiag sym;
  std::string e;
  TensorShape s;
  s.dims.push_back(*parseDimExpr("S", e));
  auto r2 = inferReduceScatter(sym, s, 0, 4);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->str(), "[S/4]");
  ASSERT_EQ(sym.constraints().size(), 1u);
  EXPECT_EQ(sym.constraints()[0].relation, DimRelation::Divisible);
}

} // namespace
