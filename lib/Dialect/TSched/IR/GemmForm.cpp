//===- GemmForm.cpp - A Graph IR contraction as a GEMM ----------------------===//

#include "tessera/Dialect/TSched/IR/GemmForm.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::tessera::tsched;

namespace {

std::optional<ArrayRef<int64_t>> staticShape(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return std::nullopt;
  return t.getShape();
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// `dims` right-aligned in `rank` dims, padded with leading ones.
SmallVector<int64_t> padded(ArrayRef<int64_t> dims, size_t rank) {
  SmallVector<int64_t> out(rank - dims.size(), 1);
  out.append(dims.begin(), dims.end());
  return out;
}

} // namespace

std::optional<GemmForm> mlir::tessera::tsched::gemmForm(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (name != "tgraph.matmul" && name != "tgraph.batch_matmul" &&
      name != "tgraph.dot_general")
    return std::nullopt;
  if (op->getNumOperands() != 2 || op->getNumResults() != 1)
    return std::nullopt;
  auto a = staticShape(op->getOperand(0));
  auto b = staticShape(op->getOperand(1));
  auto c = staticShape(op->getResult(0));
  if (!a || !b || !c || a->size() < 2 || b->size() < 2 || c->size() < 2)
    return std::nullopt;
  Type elt = cast<RankedTensorType>(op->getOperand(0).getType())
                 .getElementType();
  Type bElt = cast<RankedTensorType>(op->getOperand(1).getType())
                  .getElementType();
  Type cElt = cast<RankedTensorType>(op->getResult(0).getType())
                  .getElementType();
  if (elt != bElt || !(elt.isBF16() || elt.isF16() || elt.isF32()) ||
      !isa<FloatType>(cElt))
    return std::nullopt;

  GemmForm g;
  g.operandType = elt;
  size_t nb = c->size() - 2;
  if (name == "tgraph.dot_general") {
    // Batch dims 0..nb-1 on both sides, then one contracted dim among the
    // last two of each.
    auto dimsOf = [&](StringRef attr) -> std::optional<ArrayRef<int64_t>> {
      auto d = op->getAttrOfType<DenseI64ArrayAttr>(attr);
      if (!d)
        return std::nullopt;
      return d.asArrayRef();
    };
    auto lb = dimsOf("lhs_batching_dims"), rb = dimsOf("rhs_batching_dims");
    auto lc = dimsOf("lhs_contracting_dims"),
         rc = dimsOf("rhs_contracting_dims");
    if (!lb || !rb || !lc || !rc || a->size() != nb + 2 ||
        b->size() != nb + 2 || lb->size() != nb || rb->size() != nb ||
        lc->size() != 1 || rc->size() != 1)
      return std::nullopt;
    for (size_t i = 0; i < nb; ++i)
      if ((*lb)[i] != int64_t(i) || (*rb)[i] != int64_t(i))
        return std::nullopt;
    int64_t l = (*lc)[0], r = (*rc)[0];
    if ((l != int64_t(nb) && l != int64_t(nb) + 1) ||
        (r != int64_t(nb) && r != int64_t(nb) + 1))
      return std::nullopt;
    g.transA = l == int64_t(nb);
    g.transB = r == int64_t(nb) + 1;
  } else if (name == "tgraph.matmul") {
    g.transA = op->hasAttr("transpose_lhs");
    g.transB = op->hasAttr("transpose_rhs");
  }
  int64_t aRows = (*a)[a->size() - 2], aCols = a->back();
  int64_t bRows = (*b)[b->size() - 2], bCols = b->back();
  g.m = g.transA ? aCols : aRows;
  g.k = g.transA ? aRows : aCols;
  int64_t bk = g.transB ? bCols : bRows;
  g.n = g.transB ? bRows : bCols;
  if (bk != g.k || (*c)[nb] != g.m || (*c)[nb + 1] != g.n)
    return std::nullopt;
  g.batch.assign(c->begin(), c->begin() + nb);
  if (a->size() - 2 > nb || b->size() - 2 > nb)
    return std::nullopt;
  g.aBatch = padded(a->drop_back(2), nb);
  g.bBatch = padded(b->drop_back(2), nb);
  for (size_t i = 0; i < nb; ++i)
    for (int64_t d : {g.aBatch[i], g.bBatch[i]})
      if (d != 1 && d != g.batch[i])
        return std::nullopt;
  g.z = product(g.batch);
  g.za = product(g.aBatch);
  g.zb = product(g.bBatch);
  return g;
}
