//===- ADBuilder.cpp - Building derivative code for Graph IR --------------===//

#include "tessera/Dialect/TGraph/IR/Autodiff.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

//===----------------------------------------------------------------------===//
// ADBuilder
//===----------------------------------------------------------------------===//

bool ADBuilder::isDifferentiableElement(Type t) {
  // The Graph IR's float element types (f80 and f128 are not among them).
  return isa<Float64Type, Float32Type, FloatTF32Type, BFloat16Type, Float16Type,
             Float8E4M3FNType, Float8E5M2Type>(t);
}

bool ADBuilder::isDifferentiable(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isDifferentiableElement(t.getElementType());
}

Value ADBuilder::scalar(Type element, double v) {
  auto type = RankedTensorType::get({}, element);
  Attribute a = isa<FloatType>(element)
                    ? Attribute(FloatAttr::get(element, v))
                    : Attribute(IntegerAttr::get(element, int64_t(v)));
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, a));
}

Value ADBuilder::zerosLike(Value x) { return ZerosLikeOp::create(b, loc, x); }
Value ADBuilder::add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
Value ADBuilder::sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
Value ADBuilder::mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
Value ADBuilder::div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
Value ADBuilder::neg(Value x) { return NegOp::create(b, loc, x); }
Value ADBuilder::exp(Value x) { return ExpOp::create(b, loc, x); }
Value ADBuilder::log(Value x) { return LogOp::create(b, loc, x); }
Value ADBuilder::sin(Value x) { return SinOp::create(b, loc, x); }
Value ADBuilder::cos(Value x) { return CosOp::create(b, loc, x); }
Value ADBuilder::tanh(Value x) { return TanhOp::create(b, loc, x); }
Value ADBuilder::sigmoid(Value x) { return SigmoidOp::create(b, loc, x); }
Value ADBuilder::sqrt(Value x) { return SqrtOp::create(b, loc, x); }
Value ADBuilder::square(Value x) { return SquareOp::create(b, loc, x); }
Value ADBuilder::sign(Value x) { return SignOp::create(b, loc, x); }
Value ADBuilder::pow(Value x, Value y) { return PowOp::create(b, loc, x, y); }
Value ADBuilder::compare(CompareDirection d, Value x, Value y) {
  return CompareOp::create(b, loc, d, x, y);
}
Value ADBuilder::select(Value c, Value x, Value y) {
  return SelectOp::create(b, loc, c, x, y);
}
Value ADBuilder::convert(Value x, Type element) {
  RankedTensorType t = typeOf(x);
  if (t.getElementType() == element)
    return x;
  return CastOp::create(b, loc, t.clone(element), x, PolicyAttr());
}
Value ADBuilder::indicator(Value predicate, Value like) {
  Type t = elementOf(like);
  return select(predicate, scalar(t, 1.0), scalar(t, 0.0));
}

Value ADBuilder::reduceSum(Value x, ArrayRef<int64_t> dims, bool keep) {
  if (dims.empty())
    return x;
  return ReduceSumOp::create(b, loc, x, dims, keep, /*stable=*/false,
                             PolicyAttr());
}
Value ADBuilder::softmax(Value x, int64_t dim) {
  return SoftmaxOp::create(b, loc, x, dim);
}
Value ADBuilder::softmaxSafe(Value x, int64_t dim) {
  return SoftmaxSafeOp::create(b, loc, x, dim);
}
Value ADBuilder::transpose(Value x, ArrayRef<int64_t> permutation) {
  if (llvm::equal(permutation, llvm::seq<int64_t>(0, permutation.size())))
    return x;
  return TransposeOp::create(b, loc, x, permutation);
}
Value ADBuilder::reshape(Value x, RankedTensorType type) {
  if (x.getType() == type)
    return x;
  return ReshapeOp::create(b, loc, type.clone(elementOf(x)), x);
}
Value ADBuilder::matmul(Value lhs, Value rhs, bool transposeLhs,
                        bool transposeRhs, PolicyAttr policy) {
  return inferred<MatmulOp>(lhs.getType(), lhs, rhs, transposeLhs, transposeRhs,
                            policy);
}

Value ADBuilder::finishInferred(Operation *op) {
  TypeInference ti(op->getContext(), op->getLoc(),
                   op->getName().getStringRef());
  if (failed(cast<ShapeInferenceOpInterface>(op).inferResultTypes(ti)) ||
      ti.getResults().size() != op->getNumResults()) {
    // The operands come from ops that were valid: a rule's shapes are
    // wrong, which the verifier of the new function reports.
    return op->getResult(0);
  }
  for (auto [r, t] : llvm::zip(op->getResults(), ti.getResults()))
    r.setType(t);
  return op->getResult(0);
}

Value ADBuilder::accumulate(Value x, Value y) {
  if (!x)
    return y;
  if (!y)
    return x;
  return add(x, y);
}

Value ADBuilder::broadcastLike(Value t, Value like) {
  auto to = typeOf(like);
  RankedTensorType from = typeOf(t);
  if (from.getShape() == to.getShape() &&
      from.getEncoding() == to.getEncoding())
    return t;
  int64_t offset = to.getRank() - from.getRank();
  // A new dim that is '?' (unnamed) cannot be a broadcast_in_dim result:
  // broadcast against zeros shaped like `like` instead.
  shape::TensorShape ts = getShape(to);
  for (int64_t d = 0; d < to.getRank(); ++d)
    if (ts.dims[d].isUnknown() &&
        (d < offset || from.getShape()[d - offset] == 1))
      return add(zerosLike(like), t);
  SmallVector<int64_t> dims =
      llvm::to_vector(llvm::seq<int64_t>(offset, to.getRank()));
  return BroadcastInDimOp::create(b, loc, to.clone(from.getElementType()), t,
                                  dims);
}

Value ADBuilder::unbroadcast(Value ct, Type target) {
  auto to = llvm::cast<RankedTensorType>(target);
  RankedTensorType from = typeOf(ct);
  int64_t offset = from.getRank() - to.getRank();
  SmallVector<int64_t> expanded;
  for (int64_t i = 0; i < to.getRank(); ++i)
    if (to.getShape()[i] == 1 && from.getShape()[offset + i] != 1)
      expanded.push_back(offset + i);
  Value v = reduceSum(ct, expanded, /*keep=*/true);
  v = reduceSum(v, llvm::to_vector(llvm::seq<int64_t>(0, offset)),
                /*keep=*/false);
  return v;
}

Value ADBuilder::expandReduced(Value reduced, Value x, ArrayRef<int64_t> dims,
                               bool keep) {
  RankedTensorType xt = typeOf(x);
  shape::TensorShape xs = getShape(xt);
  Type e = elementOf(reduced);
  bool unknown =
      llvm::any_of(dims, [&](int64_t d) { return xs.dims[d].isUnknown(); });
  if (unknown) {
    // The reduced dims as 1s, then NumPy broadcasting against x's zeros
    // (a '?' dim cannot be a broadcast_in_dim result).
    Value v = reduced;
    if (!keep) {
      shape::TensorShape kept = xs;
      for (int64_t d : dims)
        kept.dims[d] = shape::DimExpr::constant(1);
      SmallVector<int64_t> map;
      for (int64_t d = 0; d < xt.getRank(); ++d)
        if (!llvm::is_contained(dims, d))
          map.push_back(d);
      v = BroadcastInDimOp::create(b, loc, getTensorType(kept, e), v, map);
    }
    return add(zerosLike(convert(x, e)), v);
  }
  SmallVector<int64_t> map;
  for (int64_t d = 0; d < xt.getRank(); ++d)
    if (keep || !llvm::is_contained(dims, d))
      map.push_back(d);
  return BroadcastInDimOp::create(b, loc, xt.clone(e), reduced, map);
}

Value ADBuilder::count(Value x, ArrayRef<int64_t> dims) {
  Type t = elementOf(x);
  auto scalarType = RankedTensorType::get({}, t);
  Value n = scalar(t, 1.0);
  int64_t known = 1;
  RankedTensorType xt = typeOf(x);
  for (int64_t d : dims) {
    if (!xt.isDynamicDim(d)) {
      known *= xt.getShape()[d];
      continue;
    }
    n = mul(n, DimSizeOp::create(b, loc, scalarType, x, d));
  }
  return known == 1 ? n : mul(n, scalar(t, double(known)));
}
