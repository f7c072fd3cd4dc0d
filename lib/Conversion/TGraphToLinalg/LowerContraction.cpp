//===- LowerContraction.cpp - matmul, batch_matmul, dot_general -----------===//
//
// Each contraction becomes a linalg.generic over (result dims, contracted
// dims) accumulating `acc + a * b` in the accumulation type (the policy's,
// else the result's), with one conversion to the result type at the end
// when they differ. Batch dims that are statically 1 broadcast.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;
using namespace mlir::tessera::tgraph::lowering;

namespace {

/// Where each operand dim goes in the iteration space (`-1`: a broadcast dim
/// read at index 0), and which operand dim gives each result dim's size.
struct ContractionSpec {
  int64_t resultRank = 0, contracted = 0;
  SmallVector<int64_t> lhsDims, rhsDims;
  SmallVector<std::pair<int, int64_t>>
      sizeFrom; // (operand, dim) per result dim
};

Value buildContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       const ContractionSpec &spec, RankedTensorType resultType,
                       Type accum) {
  MLIRContext *ctx = b.getContext();
  int64_t iters = spec.resultRank + spec.contracted;
  auto mapFor = [&](ArrayRef<int64_t> dims) {
    SmallVector<AffineExpr> exprs;
    for (int64_t d : dims)
      exprs.push_back(d < 0 ? b.getAffineConstantExpr(0)
                            : b.getAffineDimExpr(d));
    return AffineMap::get(iters, 0, exprs, ctx);
  };
  SmallVector<AffineExpr> outExprs;
  for (int64_t i = 0; i < spec.resultRank; ++i)
    outExprs.push_back(b.getAffineDimExpr(i));
  SmallVector<AffineMap> maps{mapFor(spec.lhsDims), mapFor(spec.rhsDims),
                              AffineMap::get(iters, 0, outExprs, ctx)};
  SmallVector<utils::IteratorType> iterators(spec.resultRank,
                                             utils::IteratorType::parallel);
  iterators.append(spec.contracted, utils::IteratorType::reduction);

  SmallVector<Value> sizes;
  Value operands[2] = {lhs, rhs};
  for (int64_t i = 0; i < spec.resultRank; ++i)
    if (resultType.isDynamicDim(i))
      sizes.push_back(dimOf(b, loc, operands[spec.sizeFrom[i].first],
                            spec.sizeFrom[i].second));
  auto accType = RankedTensorType::get(resultType.getShape(), accum);
  Value init =
      filledTensor(b, loc, accType, sizes, scalarConstant(b, loc, accum, 0.0));
  bool isFloat = isa<FloatType>(accum);
  Value acc =
      linalg::GenericOp::create(
          b, loc, accType, ValueRange{lhs, rhs}, init, maps, iterators,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value x = convertScalar(nb, l, args[0], accum);
            Value y = convertScalar(nb, l, args[1], accum);
            Value p = isFloat ? Value(arith::MulFOp::create(nb, l, x, y))
                              : Value(arith::MulIOp::create(nb, l, x, y));
            Value s = isFloat ? Value(arith::AddFOp::create(nb, l, args[2], p))
                              : Value(arith::AddIOp::create(nb, l, args[2], p));
            linalg::YieldOp::create(nb, l, s);
          })
          .getResult(0);
  if (accum == resultType.getElementType())
    return acc;
  // One rounding to the result type.
  Value out = emptyTensor(b, loc, resultType, sizes);
  int64_t r = resultType.getRank();
  SmallVector<AffineMap> idMaps(2, b.getMultiDimIdentityMap(r));
  SmallVector<utils::IteratorType> par(r, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, resultType, acc, out, idMaps, par,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l,
                   convertScalar(nb, l, args[0], resultType.getElementType()));
             })
      .getResult(0);
}

Type accumulationType(PolicyAttr policy, RankedTensorType result) {
  return policy && policy.getAccum() ? policy.getAccum()
                                     : result.getElementType();
}

/// matmul: [..., M, K] x [..., K, N] with broadcast batch dims.
struct MatmulLowering : public OpConversionPattern<MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    auto lt = cast<RankedTensorType>(adaptor.getLhs().getType());
    auto rt = cast<RankedTensorType>(adaptor.getRhs().getType());
    int64_t r = type.getRank(), nb = r - 2;
    ContractionSpec spec;
    spec.resultRank = r;
    spec.contracted = 1;
    spec.sizeFrom.resize(r);
    auto batchDims = [&](RankedTensorType t, int which,
                         SmallVector<int64_t> &dims) {
      int64_t tb = t.getRank() - 2;
      for (int64_t j = 0; j < tb; ++j) {
        int64_t i = j + nb - tb;
        bool expand = t.getDimSize(j) == 1 && type.getDimSize(i) != 1;
        dims.push_back(expand ? -1 : i);
        if (!expand)
          spec.sizeFrom[i] = {which, j};
      }
    };
    batchDims(lt, 0, spec.lhsDims);
    batchDims(rt, 1, spec.rhsDims);
    int64_t m = nb, n = nb + 1, k = r;
    int64_t lr = lt.getRank(), rr = rt.getRank();
    if (op.getTransposeLhs())
      spec.lhsDims.append({k, m});
    else
      spec.lhsDims.append({m, k});
    if (op.getTransposeRhs())
      spec.rhsDims.append({n, k});
    else
      spec.rhsDims.append({k, n});
    spec.sizeFrom[m] = {0, op.getTransposeLhs() ? lr - 1 : lr - 2};
    spec.sizeFrom[n] = {1, op.getTransposeRhs() ? rr - 2 : rr - 1};
    rewriter.replaceOp(
        op, buildContraction(rewriter, op.getLoc(), adaptor.getLhs(),
                             adaptor.getRhs(), spec, type,
                             accumulationType(op.getPolicyAttr(), type)));
    return success();
  }
};

/// batch_matmul: [B, M, K] x [B, K, N].
struct BatchMatmulLowering : public OpConversionPattern<BatchMatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BatchMatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    ContractionSpec spec;
    spec.resultRank = 3;
    spec.contracted = 1;
    spec.lhsDims = {0, 1, 3};
    spec.rhsDims = {0, 3, 2};
    spec.sizeFrom = {{0, 0}, {0, 1}, {1, 2}};
    rewriter.replaceOp(
        op, buildContraction(rewriter, op.getLoc(), adaptor.getLhs(),
                             adaptor.getRhs(), spec, type,
                             accumulationType(op.getPolicyAttr(), type)));
    return success();
  }
};

/// dot_general: batch dims, then lhs free dims, then rhs free dims.
struct DotGeneralLowering : public OpConversionPattern<DotGeneralOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DotGeneralOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    int64_t lr = cast<RankedTensorType>(adaptor.getLhs().getType()).getRank();
    int64_t rr = cast<RankedTensorType>(adaptor.getRhs().getType()).getRank();
    ArrayRef<int64_t> lb = op.getLhsBatchingDims(),
                      rb = op.getRhsBatchingDims();
    ArrayRef<int64_t> lc = op.getLhsContractingDims(),
                      rc = op.getRhsContractingDims();
    ContractionSpec spec;
    spec.resultRank = type.getRank();
    spec.contracted = lc.size();
    spec.lhsDims.assign(lr, 0);
    spec.rhsDims.assign(rr, 0);
    spec.sizeFrom.resize(spec.resultRank);
    int64_t next = 0;
    for (size_t i = 0; i < lb.size(); ++i, ++next) {
      spec.lhsDims[lb[i]] = next;
      spec.rhsDims[rb[i]] = next;
      spec.sizeFrom[next] = {0, lb[i]};
    }
    auto used = [](ArrayRef<int64_t> a, ArrayRef<int64_t> b, int64_t d) {
      return llvm::is_contained(a, d) || llvm::is_contained(b, d);
    };
    for (int64_t d = 0; d < lr; ++d)
      if (!used(lb, lc, d)) {
        spec.lhsDims[d] = next;
        spec.sizeFrom[next++] = {0, d};
      }
    for (int64_t d = 0; d < rr; ++d)
      if (!used(rb, rc, d)) {
        spec.rhsDims[d] = next;
        spec.sizeFrom[next++] = {1, d};
      }
    for (size_t i = 0; i < lc.size(); ++i) {
      spec.lhsDims[lc[i]] = spec.resultRank + i;
      spec.rhsDims[rc[i]] = spec.resultRank + i;
    }
    rewriter.replaceOp(
        op, buildContraction(rewriter, op.getLoc(), adaptor.getLhs(),
                             adaptor.getRhs(), spec, type,
                             accumulationType(op.getPolicyAttr(), type)));
    return success();
  }
};

} // namespace

void mlir::tessera::tgraph::lowering::populateContractionPatterns(
    LoweringContext &ctx, RewritePatternSet &patterns) {
  patterns.add<MatmulLowering, BatchMatmulLowering, DotGeneralLowering>(
      ctx.types, patterns.getContext());
}
