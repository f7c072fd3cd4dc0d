//===- LowerReduction.cpp - Reductions and arg-reductions to linalg -------===//
//
// A reduction becomes a linalg.generic with reduction iterators over the
// reduced dims, accumulating in a fixed (sequential) order, so results do
// not depend on how the loops are later parallelized over the kept dims.
// `stable` sums carry a Kahan compensation term. keepdims reshapes the
// result to put size-1 dims back.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/SmallSet.h"

#include <limits>

using namespace mlir;
using namespace mlir::tessera::tgraph;
using namespace mlir::tessera::tgraph::lowering;

namespace {

enum class Kind { Sum, Prod, Max, Min };

/// Maps and iterators of a reduction of `rank` dims over `reduced`.
struct ReductionSpace {
  SmallVector<AffineMap> maps;
  SmallVector<utils::IteratorType> iterators;
  SmallVector<int64_t> kept;
};

ReductionSpace reductionSpace(OpBuilder &b, int64_t rank,
                              ArrayRef<int64_t> reduced, int outputs) {
  ReductionSpace s;
  llvm::SmallSet<int64_t, 8> set(reduced.begin(), reduced.end());
  SmallVector<AffineExpr> out;
  for (int64_t d = 0; d < rank; ++d) {
    bool red = set.count(d);
    s.iterators.push_back(red ? utils::IteratorType::reduction
                              : utils::IteratorType::parallel);
    if (!red) {
      out.push_back(b.getAffineDimExpr(d));
      s.kept.push_back(d);
    }
  }
  s.maps.push_back(b.getMultiDimIdentityMap(rank));
  for (int i = 0; i < outputs; ++i)
    s.maps.push_back(AffineMap::get(rank, 0, out, b.getContext()));
  return s;
}

/// The reduction's identity: 0, 1, -inf/INT_MIN, +inf/INT_MAX.
Value identity(OpBuilder &b, Location loc, Type t, Kind kind) {
  if (kind == Kind::Sum || kind == Kind::Prod)
    return scalarConstant(b, loc, t, kind == Kind::Sum ? 0.0 : 1.0);
  bool max = kind == Kind::Max;
  if (auto f = dyn_cast<FloatType>(t))
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(f, APFloat::getInf(f.getFloatSemantics(), max)));
  unsigned w = t.getIntOrFloatBitWidth();
  APInt v = max ? APInt::getSignedMinValue(w) : APInt::getSignedMaxValue(w);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, v));
}

Value combine(OpBuilder &b, Location loc, Kind kind, Value acc, Value x) {
  bool f = isa<FloatType>(x.getType());
  switch (kind) {
  case Kind::Sum:
    return f ? Value(arith::AddFOp::create(b, loc, acc, x))
             : Value(arith::AddIOp::create(b, loc, acc, x));
  case Kind::Prod:
    return f ? Value(arith::MulFOp::create(b, loc, acc, x))
             : Value(arith::MulIOp::create(b, loc, acc, x));
  // Float maxima and minima propagate NaN; which zero a tie of -0 and +0
  // gives is left open (nsz): x86 then needs three instructions per vector
  // instead of six.
  case Kind::Max:
    return f ? Value(arith::MaximumFOp::create(b, loc, acc, x,
                                               arith::FastMathFlags::nsz))
             : Value(arith::MaxSIOp::create(b, loc, acc, x));
  case Kind::Min:
    return f ? Value(arith::MinimumFOp::create(b, loc, acc, x,
                                               arith::FastMathFlags::nsz))
             : Value(arith::MinSIOp::create(b, loc, acc, x));
  }
  llvm_unreachable("unknown reduction");
}

/// Sizes of `x`'s kept dims that are dynamic in the reduced type.
SmallVector<Value> keptSizes(OpBuilder &b, Location loc, Value x,
                             ArrayRef<int64_t> kept) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<Value> sizes;
  for (int64_t d : kept)
    if (t.isDynamicDim(d))
      sizes.push_back(dimOf(b, loc, x, d));
  return sizes;
}

/// The reduced type: `x`'s kept dims.
RankedTensorType reducedType(Value x, ArrayRef<int64_t> kept, Type element) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t d : kept)
    shape.push_back(t.getDimSize(d));
  return RankedTensorType::get(shape, element);
}

/// keepdims: expand the reduced value to `type`, whose reduced dims are 1
/// (an expand_shape, which fusion can fold into the consumers' indexing
/// maps).
Value restoreKeptDims(OpBuilder &b, Location loc, Value reduced, Value x,
                      RankedTensorType type, ArrayRef<int64_t> dims) {
  llvm::SmallSet<int64_t, 8> set(dims.begin(), dims.end());
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(set.count(d) ? OpFoldResult(b.getIndexAttr(1))
                    : type.isDynamicDim(d)
                        ? OpFoldResult(dimOf(b, loc, x, d))
                        : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  // Each kept dim takes the reduced dims that precede it (the leading ones
  // go with the first kept dim; with no kept dim, everything collapses
  // from a 0-d tensor: no groups).
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    pending.push_back(d);
    if (!set.count(d)) {
      groups.push_back(pending);
      pending.clear();
    }
  }
  if (!pending.empty() && !groups.empty())
    llvm::append_range(groups.back(), pending);
  return tensor::ExpandShapeOp::create(b, loc, type, reduced, groups, sizes);
}

template <typename OpTy, Kind kind>
struct ReduceLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getX();
    auto type =
        this->getTypeConverter()->template convertType<RankedTensorType>(
            op.getType());
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    Type element = type.getElementType();
    Type accum = element;
    bool stable = false;
    if constexpr (kind == Kind::Sum || kind == Kind::Prod) {
      if (PolicyAttr p = op.getPolicyAttr(); p && p.getAccum())
        accum = p.getAccum();
      stable = kind == Kind::Sum && op.getStable() && isa<FloatType>(accum);
    }
    ReductionSpace space =
        reductionSpace(rewriter, rank, op.getDims(), stable ? 2 : 1);
    auto accType = reducedType(x, space.kept, accum);
    SmallVector<Value> sizes = keptSizes(rewriter, loc, x, space.kept);
    SmallVector<Value> inits{filledTensor(
        rewriter, loc, accType, sizes, identity(rewriter, loc, accum, kind))};
    if (stable)
      inits.push_back(filledTensor(rewriter, loc, accType, sizes,
                                   scalarConstant(rewriter, loc, accum, 0.0)));
    SmallVector<Type> resultTypes(inits.size(), accType);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultTypes, x, inits, space.maps, space.iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value v = convertScalar(b, l, args[0], accum);
          if (!stable) {
            linalg::YieldOp::create(b, l, combine(b, l, kind, args[1], v));
            return;
          }
          // Kahan: y = v - c; t = sum + y; c' = (t - sum) - y; sum' = t.
          Value y = arith::SubFOp::create(b, l, v, args[2]);
          Value t = arith::AddFOp::create(b, l, args[1], y);
          Value c = arith::SubFOp::create(
              b, l, arith::SubFOp::create(b, l, t, args[1]), y);
          linalg::YieldOp::create(b, l, ValueRange{t, c});
        });
    Value result = generic.getResult(0);
    if (accum != element) {
      auto outType = reducedType(x, space.kept, element);
      Value out = emptyTensor(rewriter, loc, outType, sizes);
      int64_t r = outType.getRank();
      SmallVector<AffineMap> id(2, rewriter.getMultiDimIdentityMap(r));
      SmallVector<utils::IteratorType> par(r, utils::IteratorType::parallel);
      result = linalg::GenericOp::create(
                   rewriter, loc, outType, result, out, id, par,
                   [&](OpBuilder &b, Location l, ValueRange args) {
                     linalg::YieldOp::create(
                         b, l, convertScalar(b, l, args[0], element));
                   })
                   .getResult(0);
    }
    if (op.getKeepdims())
      result = restoreKeptDims(rewriter, loc, result, x, type, op.getDims());
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// argmax/argmin: the first index of the extreme value along `dim`; a NaN
/// counts as the extreme (as NumPy).
template <typename OpTy, bool isMax>
struct ArgReduceLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getX();
    auto type =
        this->getTypeConverter()->template convertType<RankedTensorType>(
            op.getType());
    Type element = getElementTypeOrSelf(x.getType());
    Type index = type.getElementType();
    auto xType = cast<RankedTensorType>(x.getType());
    int64_t rank = xType.getRank();
    int64_t dim = op.getDim();
    // An empty dim (a size known only at run time) has no index to give.
    if (xType.isDynamicDim(dim)) {
      Value size = dimOf(rewriter, loc, x, dim);
      Value empty = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::eq, size,
          arith::ConstantIndexOp::create(rewriter, loc, 0));
      callHook(rewriter, op, empty, RuntimeHook::Failed,
               describeOp(op) + ": dim " + std::to_string(dim) +
                   " of the operand is empty: there is no element to take "
                   "the index of",
               {});
    }
    ReductionSpace space = reductionSpace(rewriter, rank, {dim}, 2);
    SmallVector<Value> sizes = keptSizes(rewriter, loc, x, space.kept);
    Value best = filledTensor(
        rewriter, loc, reducedType(x, space.kept, element), sizes,
        identity(rewriter, loc, element, isMax ? Kind::Max : Kind::Min));
    Value where = filledTensor(rewriter, loc, reducedType(x, space.kept, index),
                               sizes, scalarConstant(rewriter, loc, index, 0));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{best.getType(), where.getType()}, x,
        ValueRange{best, where}, space.maps, space.iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value v = args[0], cur = args[1];
          Value take;
          if (isa<FloatType>(element)) {
            Value better = arith::CmpFOp::create(
                b, l,
                isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT,
                v, cur);
            Value vNan =
                arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, v, v);
            Value curOk = arith::CmpFOp::create(b, l, arith::CmpFPredicate::ORD,
                                                cur, cur);
            take = arith::OrIOp::create(
                b, l, better, arith::AndIOp::create(b, l, vNan, curOk));
          } else {
            take = arith::CmpIOp::create(b, l,
                                         isMax ? arith::CmpIPredicate::sgt
                                               : arith::CmpIPredicate::slt,
                                         v, cur);
          }
          Value i = arith::IndexCastOp::create(
              b, l, index, linalg::IndexOp::create(b, l, dim));
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, take, v, cur),
                         arith::SelectOp::create(b, l, take, i, args[2])});
        });
    Value result = generic.getResult(1);
    if (op.getKeepdims())
      result = restoreKeptDims(rewriter, loc, result, x, type, {dim});
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::tessera::tgraph::lowering::populateReductionPatterns(
    LoweringContext &ctx, RewritePatternSet &patterns) {
  patterns.add<ReduceLowering<ReduceSumOp, Kind::Sum>,
               ReduceLowering<ReduceProdOp, Kind::Prod>,
               ReduceLowering<ReduceMaxOp, Kind::Max>,
               ReduceLowering<ReduceMinOp, Kind::Min>,
               ArgReduceLowering<ArgmaxOp, true>,
               ArgReduceLowering<ArgminOp, false>>(ctx.types,
                                                   patterns.getContext());
}
