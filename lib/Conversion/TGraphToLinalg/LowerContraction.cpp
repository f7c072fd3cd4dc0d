//===- LowerContraction.cpp - matmul, batch_matmul, dot_general -----------===//
//
// Each contraction becomes a linalg.generic over (result dims, contracted
// dims) accumulating `acc + a * b` (fused) in the accumulation type (the
// policy's, else the result's), with one conversion to the result type at the
// end when they differ. Batch dims that are statically 1 broadcast.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

#include <tuple>

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

/// acc + x * y. Float products and sums carry the `contract` flag: the
/// code generator fuses them into one multiply-add (a single rounding),
/// which is what the vector units execute; the vectorizer still sees an
/// add reduction.
Value multiplyAdd(OpBuilder &b, Location loc, Value x, Value y, Value acc) {
  if (isa<FloatType>(x.getType())) {
    auto contract = arith::FastMathFlags::contract;
    Value p = arith::MulFOp::create(b, loc, x, y, contract);
    return arith::AddFOp::create(b, loc, acc, p, contract);
  }
  return arith::AddIOp::create(b, loc, acc,
                               arith::MulIOp::create(b, loc, x, y));
}

Value buildContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       const ContractionSpec &spec, RankedTensorType resultType,
                       Type accum, bool saturate) {
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
  Value acc =
      linalg::GenericOp::create(
          b, loc, accType, ValueRange{lhs, rhs}, init, maps, iterators,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value x = convertScalar(nb, l, args[0], accum);
            Value y = convertScalar(nb, l, args[1], accum);
            linalg::YieldOp::create(nb, l, multiplyAdd(nb, l, x, y, args[2]));
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
               Type t = resultType.getElementType();
               linalg::YieldOp::create(
                   nb, l,
                   saturate ? convertScalarSaturating(nb, l, args[0], t)
                            : convertScalar(nb, l, args[0], t));
             })
      .getResult(0);
}

bool saturates(PolicyAttr policy) { return policy && policy.getSaturate(); }

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
    if (lt.getRank() > 2 && rt.getRank() == 2 && !op.getTransposeLhs()) {
      rewriter.replaceOp(op, collapsedMatmul(op, adaptor, type, rewriter));
      return success();
    }
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
                             accumulationType(op.getPolicyAttr(), type),
                             saturates(op.getPolicyAttr())));
    return success();
  }

private:
  /// Activations times a weight matrix, [..., M, K] x [K, N]: the leading
  /// dims of the activations collapse into the rows of one matrix product
  /// (which then gets the packed GEMM schedule, with as many rows as there
  /// are tokens) and the result expands back. Both reshapes are views.
  Value collapsedMatmul(MatmulOp op, OpAdaptor adaptor, RankedTensorType type,
                        ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    auto lt = cast<RankedTensorType>(lhs.getType());
    auto rt = cast<RankedTensorType>(rhs.getType());
    int64_t lr = lt.getRank();
    ReassociationIndices rows = llvm::to_vector(llvm::seq<int64_t>(0, lr - 1));
    SmallVector<ReassociationIndices> toMatrix{rows, {lr - 1}};
    Value flatLhs =
        tensor::CollapseShapeOp::create(rewriter, loc, lhs, toMatrix);
    int64_t nDim = op.getTransposeRhs() ? 0 : 1;
    auto flatType = RankedTensorType::get(
        {cast<RankedTensorType>(flatLhs.getType()).getDimSize(0),
         rt.getDimSize(nDim)},
        type.getElementType());
    ContractionSpec spec;
    spec.resultRank = 2;
    spec.contracted = 1;
    spec.lhsDims = {0, 2};
    spec.rhsDims = op.getTransposeRhs() ? SmallVector<int64_t>{1, 2}
                                        : SmallVector<int64_t>{2, 1};
    spec.sizeFrom = {{0, 0}, {1, nDim}};
    Value flat = buildContraction(rewriter, loc, flatLhs, rhs, spec, flatType,
                                  accumulationType(op.getPolicyAttr(), type),
                                  saturates(op.getPolicyAttr()));
    // Back to [..., M, N], with the sizes of the operands.
    SmallVector<int64_t> shape;
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < lr - 1; ++i) {
      shape.push_back(lt.getDimSize(i));
      sizes.push_back(lt.isDynamicDim(i)
                          ? OpFoldResult(dimOf(rewriter, loc, lhs, i))
                          : OpFoldResult(rewriter.getIndexAttr(shape.back())));
    }
    shape.push_back(rt.getDimSize(nDim));
    sizes.push_back(rt.isDynamicDim(nDim)
                        ? OpFoldResult(dimOf(rewriter, loc, rhs, nDim))
                        : OpFoldResult(rewriter.getIndexAttr(shape.back())));
    auto expandedType = RankedTensorType::get(shape, type.getElementType());
    Value out = tensor::ExpandShapeOp::create(rewriter, loc, expandedType, flat,
                                              toMatrix, sizes);
    if (expandedType != type)
      out = tensor::CastOp::create(rewriter, loc, type, out);
    return out;
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
                             accumulationType(op.getPolicyAttr(), type),
                             saturates(op.getPolicyAttr())));
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
                             accumulationType(op.getPolicyAttr(), type),
                             saturates(op.getPolicyAttr())));
    return success();
  }
};

/// conv2d as one linalg.generic over (n, g, o, oh, ow | c, kh, kw): the
/// channels split into groups with expand_shape (unit group dims when
/// groups = 1), the input is zero-padded first, and products accumulate in
/// the accumulation type like the other contractions.
struct Conv2dLowering : public OpConversionPattern<Conv2dOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(Conv2dOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Type accum = accumulationType(op.getPolicyAttr(), type);
    bool nchw = op.getLayout() == ConvLayout::nchw;
    int64_t groups = static_cast<int64_t>(op.getGroups());
    ArrayRef<int64_t> stride = op.getStrides(), pad = op.getPadding(),
                      dil = op.getDilation();
    Value input = adaptor.getInput(), filter = adaptor.getFilter();
    auto it = cast<RankedTensorType>(input.getType());

    // Dims of each operand: input (n, c, h, w), filter (o, kh, kw).
    int64_t inC = nchw ? 1 : 3, inH = nchw ? 2 : 1, inW = nchw ? 3 : 2;
    int64_t fO = nchw ? 0 : 3, fH = nchw ? 2 : 0, fW = nchw ? 3 : 1;
    int64_t outC = inC, outH = inH, outW = inW;

    // Zero padding of the spatial dims.
    if (llvm::any_of(pad, [](int64_t p) { return p != 0; })) {
      SmallVector<OpFoldResult> low(4, b.getIndexAttr(0)),
          high(4, b.getIndexAttr(0));
      low[inH] = b.getIndexAttr(pad[0]);
      high[inH] = b.getIndexAttr(pad[1]);
      low[inW] = b.getIndexAttr(pad[2]);
      high[inW] = b.getIndexAttr(pad[3]);
      SmallVector<int64_t> shape(it.getShape());
      for (auto [d, lo, hi] :
           {std::tuple{inH, pad[0], pad[1]}, std::tuple{inW, pad[2], pad[3]}})
        if (!ShapedType::isDynamic(shape[d]))
          shape[d] += lo + hi;
      auto padded = RankedTensorType::get(shape, it.getElementType());
      input = tensor::PadOp::create(
          b, loc, padded, input, low, high,
          scalarConstant(b, loc, it.getElementType(), 0.0));
    }

    // Output spatial sizes: (in - dil * (k - 1) - 1) / stride + 1.
    auto spatial = [&](int64_t in, int64_t k, int64_t s, int64_t d) -> Value {
      Value size = dimOf(b, loc, input, in);
      Value kk = dimOf(b, loc, filter, k);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      Value span = arith::MulIOp::create(
          b, loc, arith::ConstantIndexOp::create(b, loc, d),
          arith::SubIOp::create(b, loc, kk, one));
      Value room = arith::SubIOp::create(
          b, loc, arith::SubIOp::create(b, loc, size, span), one);
      return arith::AddIOp::create(
          b, loc,
          arith::DivSIOp::create(b, loc, room,
                                 arith::ConstantIndexOp::create(b, loc, s)),
          one);
    };
    auto ofr = [&](RankedTensorType t, int64_t d, Value v) -> OpFoldResult {
      return t.isDynamicDim(d) ? OpFoldResult(v)
                               : OpFoldResult(b.getIndexAttr(t.getDimSize(d)));
    };
    auto splitSize = [&](Value t, int64_t d) -> OpFoldResult {
      auto tt = cast<RankedTensorType>(t.getType());
      if (!tt.isDynamicDim(d))
        return b.getIndexAttr(tt.getDimSize(d) / groups);
      return arith::DivSIOp::create(
                 b, loc, dimOf(b, loc, t, d),
                 arith::ConstantIndexOp::create(b, loc, groups))
          .getResult();
    };
    auto splitDim = [](int64_t size, int64_t g) {
      return ShapedType::isDynamic(size) ? size : size / g;
    };
    // Splits dim `d` of `t` into (groups, size / groups).
    auto split = [&](Value t, int64_t d) -> Value {
      auto tt = cast<RankedTensorType>(t.getType());
      SmallVector<int64_t> shape;
      SmallVector<OpFoldResult> sizes;
      SmallVector<ReassociationIndices> reassoc;
      for (int64_t i = 0, o = 0; i < tt.getRank(); ++i) {
        if (i == d) {
          shape.append({groups, splitDim(tt.getDimSize(i), groups)});
          sizes.append({b.getIndexAttr(groups), splitSize(t, i)});
          reassoc.push_back({o, o + 1});
          o += 2;
        } else {
          shape.push_back(tt.getDimSize(i));
          sizes.push_back(
              ofr(tt, i, tt.isDynamicDim(i) ? dimOf(b, loc, t, i) : Value()));
          reassoc.push_back({o++});
        }
      }
      auto st = RankedTensorType::get(shape, tt.getElementType());
      return tensor::ExpandShapeOp::create(b, loc, st, t, reassoc, sizes);
    };
    Value in5 = split(input, inC);
    Value f5 = split(filter, fO);

    // The accumulator, in the output layout with the channel dim split.
    SmallVector<int64_t> accShape(type.getShape());
    SmallVector<Value> accSizes;
    Value outSizes[4];
    outSizes[0] =
        type.isDynamicDim(0) ? dimOf(b, loc, adaptor.getInput(), 0) : Value();
    outSizes[outH] = spatial(inH, fH, stride[0], dil[0]);
    outSizes[outW] = spatial(inW, fW, stride[1], dil[1]);
    outSizes[outC] =
        type.isDynamicDim(outC) ? dimOf(b, loc, filter, fO) : Value();
    SmallVector<int64_t> acc5;
    for (int64_t d = 0; d < 4; ++d) {
      if (d == outC) {
        acc5.append({groups, splitDim(type.getDimSize(d), groups)});
        if (type.isDynamicDim(d))
          accSizes.push_back(arith::DivSIOp::create(
              b, loc, outSizes[d],
              arith::ConstantIndexOp::create(b, loc, groups)));
        continue;
      }
      acc5.push_back(type.getDimSize(d));
      if (type.isDynamicDim(d))
        accSizes.push_back(outSizes[d]);
    }
    auto accType = RankedTensorType::get(acc5, accum);
    Value init = filledTensor(b, loc, accType, accSizes,
                              scalarConstant(b, loc, accum, 0.0));

    // Iteration dims: n, g, o, oh, ow, c, kh, kw.
    enum { N, G, O, OH, OW, C, KH, KW };
    auto e = [&](int d) { return b.getAffineDimExpr(d); };
    AffineExpr ih = e(OH) * stride[0] + e(KH) * dil[0];
    AffineExpr iw = e(OW) * stride[1] + e(KW) * dil[1];
    SmallVector<AffineExpr> inExprs, fExprs, outExprs;
    if (nchw) {
      inExprs = {e(N), e(G), e(C), ih, iw};
      fExprs = {e(G), e(O), e(C), e(KH), e(KW)};
      outExprs = {e(N), e(G), e(O), e(OH), e(OW)};
    } else {
      inExprs = {e(N), ih, iw, e(G), e(C)};
      fExprs = {e(KH), e(KW), e(C), e(G), e(O)};
      outExprs = {e(N), e(OH), e(OW), e(G), e(O)};
    }
    MLIRContext *ctx = b.getContext();
    SmallVector<AffineMap> maps{AffineMap::get(8, 0, inExprs, ctx),
                                AffineMap::get(8, 0, fExprs, ctx),
                                AffineMap::get(8, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(5,
                                               utils::IteratorType::parallel);
    iterators.append(3, utils::IteratorType::reduction);
    Value acc =
        linalg::GenericOp::create(
            b, loc, accType, ValueRange{in5, f5}, init, maps, iterators,
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Value x = convertScalar(nb, l, args[0], accum);
              Value y = convertScalar(nb, l, args[1], accum);
              linalg::YieldOp::create(nb, l, multiplyAdd(nb, l, x, y, args[2]));
            })
            .getResult(0);

    // Merge the group dims back and round once to the result type.
    SmallVector<ReassociationIndices> merge;
    for (int64_t d = 0, o = 0; d < 4; ++d) {
      if (d == outC) {
        merge.push_back({o, o + 1});
        o += 2;
      } else {
        merge.push_back({o++});
      }
    }
    auto merged = RankedTensorType::get(type.getShape(), accum);
    Value out = tensor::CollapseShapeOp::create(b, loc, merged, acc, merge);
    if (accum != type.getElementType()) {
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < 4; ++d)
        if (type.isDynamicDim(d))
          sizes.push_back(dimOf(b, loc, out, d));
      Value dest = emptyTensor(b, loc, type, sizes);
      SmallVector<AffineMap> idMaps(2, b.getMultiDimIdentityMap(4));
      SmallVector<utils::IteratorType> par(4, utils::IteratorType::parallel);
      out = linalg::GenericOp::create(
                b, loc, type, out, dest, idMaps, par,
                [&](OpBuilder &nb, Location l, ValueRange args) {
                  Type t = type.getElementType();
                  linalg::YieldOp::create(
                      nb, l,
                      saturates(op.getPolicyAttr())
                          ? convertScalarSaturating(nb, l, args[0], t)
                          : convertScalar(nb, l, args[0], t));
                })
                .getResult(0);
    }
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::tessera::tgraph::lowering::populateContractionPatterns(
    LoweringContext &ctx, RewritePatternSet &patterns) {
  patterns.add<MatmulLowering, BatchMatmulLowering, DotGeneralLowering,
               Conv2dLowering>(ctx.types, patterns.getContext());
}
