//===- ElementwiseShapes.cpp - Broadcasting -------------------------------===//

#include "tessera/Shape/ShapeFunctions.h"

using namespace tessera::shape;

static bool isStaticOne(const DimExpr &d) {
  auto c = d.getConstant();
  return c && *c == 1;
}

ShapeResult tessera::shape::inferBroadcast(ShapeDiag &diag,
                                           llvm::ArrayRef<TensorShape> ops) {
  size_t rank = 0;
  for (const TensorShape &s : ops)
    rank = std::max(rank, s.rank());
  TensorShape result;
  result.dims.assign(rank, DimExpr::constant(1));
  for (size_t r = 0; r < rank; ++r) {
    // The first operand (in order) with a dim that is not statically 1 at
    // this position decides the result; the others must equal it.
    std::optional<DimExpr> acc;
    int accOp = -1, accDim = -1;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].rank() + r < rank)
        continue;
      int d = int(ops[i].rank() + r - rank);
      const DimExpr &dim = ops[i].dims[d];
      if (isStaticOne(dim))
        continue;
      if (!acc) {
        acc = dim;
        accOp = int(i);
        accDim = d;
        continue;
      }
      auto u = diag.unify(*acc, diag.dimLabel(accOp, accDim), {{accOp, accDim}},
                          dim, diag.dimLabel(i, d), {{int(i), d}},
                          "broadcast mismatch");
      if (!u)
        return std::nullopt;
      acc = *u;
    }
    if (acc)
      result.dims[r] = *acc;
  }
  return result;
}
