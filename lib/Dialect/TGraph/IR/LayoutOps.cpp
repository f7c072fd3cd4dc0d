//===- LayoutOps.cpp - data movement, indexing and dimension ops ----------===//
//
// Shape functions, verifiers and folders of TGraphLayoutOps.td.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

/// The result shape `s` with the element type of `v`.
static LogicalResult addResultLike(TypeInference &ti,
                                   const shape::ShapeResult &s, Value v) {
  return ti.addResult(s, getElementTypeOrSelf(v.getType()));
}

//===----------------------------------------------------------------------===//
// transpose, reshape, broadcast_in_dim
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferTypes(TypeInference &ti, Adaptor a) {
  return addResultLike(ti,
                       shape::inferTranspose(ti.diag(),
                                             getShape(a.getX().getType()),
                                             a.getPermutation()),
                       a.getX());
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  bool identity = llvm::all_of(llvm::enumerate(perm), [](auto p) {
    return p.value() == int64_t(p.index());
  });
  if (identity && getX().getType() == getType())
    return getX();
  // transpose(transpose(x, p), q) -> transpose(x, p o q)
  if (auto inner = getX().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> p = inner.getPermutation();
    if (p.size() != perm.size())
      return {};
    SmallVector<int64_t> composed;
    for (int64_t q : perm)
      composed.push_back(p[q]);
    setPermutation(composed);
    getXMutable().assign(inner.getX());
    return getResult();
  }
  return {};
}

LogicalResult ReshapeOp::inferTypes(TypeInference &ti, Adaptor a) {
  FailureOr<RankedTensorType> declared = ti.requireDeclaredTensor(0);
  if (failed(declared))
    return failure();
  Type element = getElementTypeOrSelf(a.getX().getType());
  if (declared->getElementType() != element)
    return ti.fail("reshape keeps the element type " + typeName(element) +
                   ", but the result has " +
                   typeName(declared->getElementType()));
  return addResultLike(ti,
                       shape::inferReshape(ti.diag(),
                                           getShape(a.getX().getType()),
                                           getShape(*declared)),
                       a.getX());
}

OpFoldResult ReshapeOp::fold(FoldAdaptor a) {
  if (getX().getType() == getType())
    return getX();
  // reshape(reshape(x)) -> reshape(x)
  if (auto inner = getX().getDefiningOp<ReshapeOp>()) {
    getXMutable().assign(inner.getX());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(a.getX()))
    if (getType().hasStaticShape())
      return dense.reshape(getType());
  return {};
}

LogicalResult BroadcastInDimOp::inferTypes(TypeInference &ti, Adaptor a) {
  FailureOr<RankedTensorType> declared = ti.requireDeclaredTensor(0);
  if (failed(declared))
    return failure();
  Type element = getElementTypeOrSelf(a.getX().getType());
  if (declared->getElementType() != element)
    return ti.fail("broadcast_in_dim keeps the element type " +
                   typeName(element) + ", but the result has " +
                   typeName(declared->getElementType()));
  return addResultLike(
      ti,
      shape::inferBroadcastInDim(ti.diag(), getShape(a.getX().getType()),
                                 getShape(*declared),
                                 a.getBroadcastDimensions()),
      a.getX());
}

OpFoldResult BroadcastInDimOp::fold(FoldAdaptor a) {
  ArrayRef<int64_t> dims = getBroadcastDimensions();
  bool identity = llvm::all_of(llvm::enumerate(dims), [](auto p) {
    return p.value() == int64_t(p.index());
  });
  if (identity && getX().getType() == getType())
    return getX();
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(a.getX()))
    if (getType().hasStaticShape())
      return splat.resizeSplat(getType());
  return {};
}

//===----------------------------------------------------------------------===//
// slice, dynamic_slice, concat, pad
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::inferTypes(TypeInference &ti, Adaptor a) {
  std::vector<shape::DimExpr> start = a.getStart().getDims();
  std::vector<shape::DimExpr> limit = a.getLimit().getDims();
  return addResultLike(ti,
                       shape::inferSlice(ti.diag(), getShape(a.getX().getType()),
                                         start, limit, a.getStride()),
                       a.getX());
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getX().getType() != getType())
    return {};
  shape::TensorShape x = getShape(getX().getType());
  std::vector<shape::DimExpr> start = getStart().getDims();
  std::vector<shape::DimExpr> limit = getLimit().getDims();
  for (size_t d = 0; d < x.rank(); ++d) {
    auto s = start[d].getConstant();
    if (!s || *s != 0 || getStride()[d] != 1 ||
        shape::decideEqual(limit[d], x.dims[d]) != shape::Truth::Always)
      return {};
  }
  return getX(); // the whole tensor
}

LogicalResult DynamicSliceOp::inferTypes(TypeInference &ti, Adaptor a) {
  return addResultLike(ti,
                       shape::inferDynamicSlice(
                           ti.diag(), getShape(a.getX().getType()),
                           a.getStarts().size(), a.getSizes().getDims()),
                       a.getX());
}

LogicalResult ConcatOp::inferTypes(TypeInference &ti, Adaptor a) {
  if (a.getInputs().empty())
    return ti.fail("expected at least one operand");
  std::vector<shape::TensorShape> shapes;
  for (Value v : a.getInputs())
    shapes.push_back(getShape(v.getType()));
  return addResultLike(ti, shape::inferConcat(ti.diag(), shapes, a.getDim()),
                       a.getInputs().front());
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  return {};
}

LogicalResult PadOp::inferTypes(TypeInference &ti, Adaptor a) {
  Type element = getElementTypeOrSelf(a.getX().getType());
  auto value = cast<TypedAttr>(a.getValue());
  if (value.getType() != element)
    return ti.fail("padding value has type " + typeName(value.getType()) +
                   " but the operand's element type is " + typeName(element));
  return addResultLike(ti,
                       shape::inferPad(ti.diag(), getShape(a.getX().getType()),
                                       a.getLow(), a.getHigh(), a.getInterior()),
                       a.getX());
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  auto isZero = [](ArrayRef<int64_t> v) {
    return llvm::all_of(v, [](int64_t x) { return x == 0; });
  };
  if (isZero(getLow()) && isZero(getHigh()) && isZero(getInterior()) &&
      getX().getType() == getType())
    return getX();
  return {};
}

//===----------------------------------------------------------------------===//
// gather, scatter_add, embedding, one_hot
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"x", "indices"});
  return addResultLike(ti,
                       shape::inferGather(ti.diag(),
                                          getShape(a.getX().getType()),
                                          getShape(a.getIndices().getType()),
                                          a.getDim()),
                       a.getX());
}

LogicalResult ScatterAddOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"x", "indices", "updates"});
  if (failed(ti.requireSameElementType({{a.getX(), 0}, {a.getUpdates(), 2}})))
    return failure();
  return addResultLike(
      ti,
      shape::inferScatterAdd(ti.diag(), getShape(a.getX().getType()),
                             getShape(a.getIndices().getType()),
                             getShape(a.getUpdates().getType()), a.getDim()),
      a.getX());
}

LogicalResult EmbeddingOp::inferTypes(TypeInference &ti, Adaptor a) {
  ti.setOperandNames({"table", "ids"});
  return addResultLike(ti,
                       shape::inferEmbedding(ti.diag(),
                                             getShape(a.getTable().getType()),
                                             getShape(a.getIds().getType())),
                       a.getTable());
}

LogicalResult OneHotOp::inferTypes(TypeInference &ti, Adaptor a) {
  FailureOr<RankedTensorType> declared = ti.requireDeclaredTensor(0);
  if (failed(declared))
    return failure();
  auto result = shape::inferOneHot(
      ti.diag(), getShape(a.getIds().getType()),
      shape::DimExpr::constant(a.getNumClasses()));
  return ti.addResult(result, declared->getElementType());
}

//===----------------------------------------------------------------------===//
// dim, dim_size, assert_dim_eq
//===----------------------------------------------------------------------===//

/// `dim` names a dim of `x`.
static LogicalResult verifyDimIndex(Operation *op, RankedTensorType x,
                                    int64_t dim, StringRef attr) {
  if (dim < 0 || dim >= x.getRank())
    return op->emitOpError() << attr << " " << dim
                             << " is out of range for an operand of rank "
                             << x.getRank();
  return success();
}

LogicalResult DimOp::verify() {
  return verifyDimIndex(*this, getX().getType(), getIndex(), "index");
}

OpFoldResult DimOp::fold(FoldAdaptor) {
  auto c = getShape(getX().getType()).dims[getIndex()].getConstant();
  if (!c)
    return {};
  return IntegerAttr::get(IndexType::get(getContext()), *c);
}

LogicalResult DimSizeOp::verify() {
  if (failed(verifyDimIndex(*this, getX().getType(), getDim(), "dim")))
    return failure();
  // Sizes are non-negative int64 values: integers need 32 or 64 bits (and a
  // static size must fit), floats round to nearest.
  auto element = dyn_cast<IntegerType>(getType().getElementType());
  if (!element)
    return success();
  if (element.getWidth() < 32)
    return emitOpError() << "result element type " << typeName(element)
                         << " cannot hold dimension sizes; use i32, i64 or "
                            "a float type";
  auto size = getShape(getX().getType()).dims[getDim()].getConstant();
  if (size && element.getWidth() == 32 &&
      *size > std::numeric_limits<int32_t>::max())
    return emitOpError() << "dim " << getDim() << " has size " << *size
                         << ", which does not fit in i32";
  return success();
}

OpFoldResult DimSizeOp::fold(FoldAdaptor) {
  auto c = getShape(getX().getType()).dims[getDim()].getConstant();
  if (!c)
    return {};
  Type element = getType().getElementType();
  Attribute v = isa<FloatType>(element)
                    ? Attribute(FloatAttr::get(element, double(*c)))
                    : Attribute(IntegerAttr::get(element, *c));
  return DenseElementsAttr::get(getType(), v);
}

/// True if `rel` holds for the constants l and r.
static bool holds(DimRelation rel, const APInt &l, const APInt &r) {
  switch (rel) {
  case DimRelation::eq:
    return l == r;
  case DimRelation::eq_or_one:
    return l == r || l.isOne();
  case DimRelation::divisible:
    return !r.isZero() && l.srem(r).isZero();
  case DimRelation::le:
    return l.sle(r);
  }
  llvm_unreachable("unknown relation");
}

void AssertDimOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  // A check that holds by construction is dropped.
  results.add(+[](AssertDimOp op, PatternRewriter &rewriter) {
    APInt l, r;
    bool lc = matchPattern(op.getLhs(), m_ConstantInt(&l));
    bool rc = matchPattern(op.getRhs(), m_ConstantInt(&r));
    DimRelation rel = op.getRelation();
    bool same = op.getLhs() == op.getRhs() && rel != DimRelation::divisible;
    bool trivial = same || (lc && rc && holds(rel, l, r)) ||
                   (rel == DimRelation::eq_or_one && lc && l.isOne()) ||
                   (rel == DimRelation::divisible && rc && r.isOne());
    if (!trivial)
      return failure();
    rewriter.eraseOp(op);
    return success();
  });
}
