//===- LowerLayout.cpp - Layout, dimension and check ops ------------------===//
//
// transpose -> linalg.transpose, reshape -> tensor.reshape (with its shape
// computed from the symbols), broadcast_in_dim -> linalg.generic, slice ->
// tensor.extract_slice, concat -> tensor.concat, pad -> tensor.pad, dim ->
// tensor.dim, and tgraph.assert_dim -> a call of the runtime's check hook.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "tessera/Dialect/TGraph/IR/DimValues.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;
using namespace mlir::tessera::tgraph::lowering;

namespace {

/// A pattern that needs the symbol environment.
template <typename OpTy>
struct SymbolicPattern : public OpConversionPattern<OpTy> {
  SymbolicPattern(LoweringContext &ctx, MLIRContext *mlir)
      : OpConversionPattern<OpTy>(ctx.types, mlir), ctx(ctx) {}
  LoweringContext &ctx;

  FailureOr<Value> dimValue(OpBuilder &b, Operation *op,
                            const shape::DimExpr &e) const {
    return buildDimExpr(b, op->getLoc(), e, [&](StringRef name) {
      return ctx.symbols.lookup(op, name);
    });
  }

  /// A constant as an attribute (so static sizes stay static), else a value.
  FailureOr<OpFoldResult> foldResult(OpBuilder &b, Operation *op,
                                     const shape::DimExpr &e) const {
    if (auto c = e.getConstant())
      return OpFoldResult(b.getIndexAttr(*c));
    FailureOr<Value> v = dimValue(b, op, e);
    if (failed(v))
      return failure();
    return OpFoldResult(*v);
  }
};

struct TransposeLowering : public OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    ArrayRef<int64_t> perm = op.getPermutation();
    SmallVector<Value> sizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        sizes.push_back(dimOf(rewriter, loc, adaptor.getX(), perm[i]));
    Value init = emptyTensor(rewriter, loc, type, sizes);
    rewriter.replaceOp(op, linalg::TransposeOp::create(
                               rewriter, loc, adaptor.getX(), init, perm)
                               .getResult());
    return success();
  }
};

/// reshape: the target extents come from the symbols; a '?' extent is the
/// element count divided by the others.
struct ReshapeLowering : public SymbolicPattern<ReshapeOp> {
  using SymbolicPattern::SymbolicPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    shape::TensorShape target = getShape(op.getType());
    SmallVector<Value> extents(type.getRank());
    int64_t unknownAt = -1;
    for (int64_t i = 0; i < type.getRank(); ++i) {
      if (target.dims[i].isUnknown()) {
        unknownAt = i;
        continue;
      }
      FailureOr<Value> v = dimValue(rewriter, op, target.dims[i]);
      if (failed(v))
        return failure();
      extents[i] = *v;
    }
    if (unknownAt >= 0) {
      auto in = cast<RankedTensorType>(adaptor.getX().getType());
      Value count = arith::ConstantIndexOp::create(rewriter, loc, 1);
      for (int64_t d = 0; d < in.getRank(); ++d)
        count = arith::MulIOp::create(rewriter, loc, count,
                                      dimOf(rewriter, loc, adaptor.getX(), d));
      Value others = arith::ConstantIndexOp::create(rewriter, loc, 1);
      for (int64_t i = 0; i < type.getRank(); ++i)
        if (i != unknownAt)
          others = arith::MulIOp::create(rewriter, loc, others, extents[i]);
      extents[unknownAt] = arith::DivUIOp::create(rewriter, loc, count, others);
    }
    // (The type is explicit: a 0-d result has no extents to infer it from.)
    Value shape = tensor::FromElementsOp::create(
        rewriter, loc,
        RankedTensorType::get({type.getRank()}, rewriter.getIndexType()),
        extents);
    rewriter.replaceOpWithNewOp<tensor::ReshapeOp>(op, type, adaptor.getX(),
                                                   shape);
    return success();
  }
};

/// broadcast_in_dim: operand dim j feeds result dim map[j]; when it may be 1
/// at run time it is read at index (size == 1 ? 0 : i).
struct BroadcastInDimLowering : public SymbolicPattern<BroadcastInDimOp> {
  using SymbolicPattern::SymbolicPattern;
  LogicalResult
  matchAndRewrite(BroadcastInDimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Value x = adaptor.getX();
    auto xt = cast<RankedTensorType>(x.getType());
    ArrayRef<int64_t> map = op.getBroadcastDimensions();
    SmallVector<Value> xSizes;
    for (int64_t j = 0; j < xt.getRank(); ++j)
      xSizes.push_back(dimOf(rewriter, loc, x, j));
    // An unnamed '?' result dim that an operand dim (not 1) maps to has
    // that dim's size: the only size it can have without broadcasting, and
    // the one derivative code (which broadcasts a value back to the shape
    // it came from) relies on.
    ::tessera::shape::TensorShape shape = getShape(op.getType());
    DenseMap<int64_t, Value> fromOperand;
    for (int64_t j = 0; j < xt.getRank(); ++j)
      if (shape.dims[map[j]].isUnknown() && xt.getDimSize(j) != 1) {
        fromOperand[map[j]] = xSizes[j];
        shape.dims[map[j]] = ::tessera::shape::DimExpr::constant(1);
      }
    auto sizes = dynamicSizes(rewriter, op, shape, type, ctx.symbols);
    if (failed(sizes))
      return failure();
    for (int64_t d = 0, k = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d))
        continue;
      if (Value v = fromOperand.lookup(d))
        (*sizes)[k] = v;
      ++k;
    }
    int64_t rank = type.getRank();
    Value init = emptyTensor(rewriter, loc, type, *sizes);
    SmallVector<utils::IteratorType> par(rank, utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{}, init,
        SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(rank)}, par,
        [&](OpBuilder &b, Location l, ValueRange) {
          SmallVector<Value> idx;
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value one = arith::ConstantIndexOp::create(b, l, 1);
          for (int64_t j = 0; j < xt.getRank(); ++j) {
            Value i = linalg::IndexOp::create(b, l, map[j]);
            if (xt.getDimSize(j) == 1) {
              idx.push_back(zero);
              continue;
            }
            if (!xt.isDynamicDim(j)) {
              idx.push_back(i);
              continue;
            }
            Value isOne = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                xSizes[j], one);
            idx.push_back(arith::SelectOp::create(b, l, isOne, zero, i));
          }
          Value v = tensor::ExtractOp::create(b, l, x, idx);
          linalg::YieldOp::create(b, l, v);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// slice: tensor.extract_slice with offsets `start` and the result extents.
struct SliceLowering : public SymbolicPattern<SliceOp> {
  using SymbolicPattern::SymbolicPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    std::vector<shape::DimExpr> start = op.getStart().getDims();
    std::vector<shape::DimExpr> limit = op.getLimit().getDims();
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (size_t d = 0; d < start.size(); ++d) {
      int64_t stride = op.getStride()[d];
      shape::DimExpr extent =
          *(limit[d] - start[d] + shape::DimExpr::constant(stride - 1))
               .floorDiv(shape::DimExpr::constant(stride));
      FailureOr<OpFoldResult> off = foldResult(rewriter, op, start[d]);
      FailureOr<OpFoldResult> size = foldResult(rewriter, op, extent);
      if (failed(off) || failed(size))
        return failure();
      offsets.push_back(*off);
      sizes.push_back(*size);
      strides.push_back(rewriter.getIndexAttr(stride));
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, adaptor.getX(), offsets, sizes, strides);
    return success();
  }
};

struct ConcatLowering : public OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    rewriter.replaceOpWithNewOp<tensor::ConcatOp>(op, type, op.getDim(),
                                                  adaptor.getInputs());
    return success();
  }
};

/// pad: tensor.pad with the constant (interior and negative padding are
/// rejected before the conversion starts, see checkLowerable).
/// Edge padding without interior padding is a tensor.pad (negative edges
/// crop with an extract_slice after it); interior padding is a
/// linalg.generic over the result that reads the source where a result
/// position maps onto an element and yields the value elsewhere.
struct PadLowering : public OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Value x = adaptor.getX();
    Value value = arith::ConstantOp::create(rewriter, loc,
                                            cast<TypedAttr>(op.getValue()));
    ArrayRef<int64_t> lowA = op.getLow(), highA = op.getHigh(),
                      interior = op.getInterior();
    int64_t r = type.getRank();
    if (llvm::any_of(interior, [](int64_t i) { return i != 0; })) {
      rewriter.replaceOp(op, interiorPad(rewriter, loc, x, type, lowA, highA,
                                         interior, value));
      return success();
    }
    SmallVector<OpFoldResult> low, high;
    bool crops = false;
    for (auto [l, h] : llvm::zip(lowA, highA)) {
      low.push_back(rewriter.getIndexAttr(std::max<int64_t>(l, 0)));
      high.push_back(rewriter.getIndexAttr(std::max<int64_t>(h, 0)));
      crops |= l < 0 || h < 0;
    }
    if (!crops) {
      rewriter.replaceOpWithNewOp<tensor::PadOp>(op, type, x, low, high, value);
      return success();
    }
    Value padded =
        tensor::PadOp::create(rewriter, loc, Type(), x, low, high, value);
    SmallVector<OpFoldResult> offsets, sizes;
    SmallVector<OpFoldResult> strides(r, rewriter.getIndexAttr(1));
    for (int64_t d = 0; d < r; ++d) {
      int64_t cropLow = std::max<int64_t>(-lowA[d], 0);
      int64_t cropHigh = std::max<int64_t>(-highA[d], 0);
      offsets.push_back(rewriter.getIndexAttr(cropLow));
      if (!type.isDynamicDim(d)) {
        sizes.push_back(rewriter.getIndexAttr(type.getDimSize(d)));
        continue;
      }
      Value size = dimOf(rewriter, loc, padded, d);
      Value crop =
          arith::ConstantIndexOp::create(rewriter, loc, cropLow + cropHigh);
      sizes.push_back(
          arith::SubIOp::create(rewriter, loc, size, crop).getResult());
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, padded, offsets, sizes, strides);
    return success();
  }

  static Value interiorPad(OpBuilder &b, Location loc, Value x,
                           RankedTensorType type, ArrayRef<int64_t> low,
                           ArrayRef<int64_t> high, ArrayRef<int64_t> interior,
                           Value value) {
    int64_t r = type.getRank();
    // Result size: low + high + n + (n - 1) * interior, n - 1 taken as 0
    // for empty dims.
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < r; ++d) {
      if (!type.isDynamicDim(d))
        continue;
      Value n = dimOf(b, loc, x, d);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value gaps = arith::MaxSIOp::create(
          b, loc, arith::SubIOp::create(b, loc, n, one), zero);
      Value size = arith::AddIOp::create(
          b, loc, n,
          arith::MulIOp::create(
              b, loc, gaps,
              arith::ConstantIndexOp::create(b, loc, interior[d])));
      sizes.push_back(arith::AddIOp::create(
          b, loc, size,
          arith::ConstantIndexOp::create(b, loc, low[d] + high[d])));
    }
    Value out = emptyTensor(b, loc, type, sizes);
    SmallVector<Value> extents;
    for (int64_t d = 0; d < r; ++d)
      extents.push_back(dimOf(b, loc, x, d));
    SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(r)};
    SmallVector<utils::IteratorType> par(r, utils::IteratorType::parallel);
    return linalg::GenericOp::create(
               b, loc, type, ValueRange{}, out, maps, par,
               [&](OpBuilder &nb, Location l, ValueRange) {
                 Value valid =
                     arith::ConstantOp::create(nb, l, nb.getBoolAttr(true));
                 SmallVector<Value> at;
                 Value zero = arith::ConstantIndexOp::create(nb, l, 0);
                 for (int64_t d = 0; d < r; ++d) {
                   Value p = linalg::IndexOp::create(nb, l, d);
                   Value q = arith::SubIOp::create(
                       nb, l, p, arith::ConstantIndexOp::create(nb, l, low[d]));
                   Value step =
                       arith::ConstantIndexOp::create(nb, l, interior[d] + 1);
                   Value src = arith::DivSIOp::create(nb, l, q, step);
                   Value onGrid = arith::CmpIOp::create(
                       nb, l, arith::CmpIPredicate::eq,
                       arith::RemSIOp::create(nb, l, q, step), zero);
                   Value inside = arith::AndIOp::create(
                       nb, l,
                       arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge,
                                             q, zero),
                       arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt,
                                             src, extents[d]));
                   valid = arith::AndIOp::create(
                       nb, l, valid,
                       arith::AndIOp::create(nb, l, onGrid, inside));
                   at.push_back(src);
                 }
                 auto read =
                     scf::IfOp::create(nb, l, TypeRange{value.getType()}, valid,
                                       /*withElse=*/true);
                 {
                   OpBuilder::InsertionGuard guard(nb);
                   nb.setInsertionPointToStart(read.thenBlock());
                   Value v = tensor::ExtractOp::create(nb, l, x, at);
                   scf::YieldOp::create(nb, l, v);
                   nb.setInsertionPointToStart(read.elseBlock());
                   scf::YieldOp::create(nb, l, value);
                 }
                 linalg::YieldOp::create(nb, l, read.getResult(0));
               })
        .getResult(0);
  }
};

struct DimLowering : public OpConversionPattern<DimOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, dimOf(rewriter, op.getLoc(), adaptor.getX(), op.getIndex()));
    return success();
  }
};

struct DimSizeLowering : public OpConversionPattern<DimSizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DimSizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value size = arith::IndexCastOp::create(
        rewriter, loc, rewriter.getI64Type(),
        dimOf(rewriter, loc, adaptor.getX(), op.getDim()));
    Value v = convertScalar(rewriter, loc, size, op.getType().getElementType());
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, op.getType(), v);
    return success();
  }
};

/// assert_dim -> if the relation fails, call the runtime hook
/// `tessera_shape_check_failed(message, lhs, rhs)` with the two sizes found,
/// which reports both as an error of the call (tessera-run prints it and
/// exits with status 2).
struct AssertDimLowering : public OpConversionPattern<AssertDimOp> {
  using OpConversionPattern::OpConversionPattern;

  Value holds(ConversionPatternRewriter &rewriter, Location loc, AssertDimOp op,
              Value l, Value r) const {
    auto eq = [&](Value a, Value b) {
      return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, a,
                                   b);
    };
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    switch (op.getRelation()) {
    case DimRelation::eq:
      return eq(l, r);
    case DimRelation::eq_or_one:
      return arith::OrIOp::create(
          rewriter, loc, eq(l, r),
          eq(l, arith::ConstantIndexOp::create(rewriter, loc, 1)));
    case DimRelation::divisible: {
      Value nonzero = arith::CmpIOp::create(rewriter, loc,
                                            arith::CmpIPredicate::ne, r, zero);
      Value safe = arith::SelectOp::create(
          rewriter, loc, nonzero, r,
          arith::ConstantIndexOp::create(rewriter, loc, 1));
      return arith::AndIOp::create(
          rewriter, loc, nonzero,
          eq(arith::RemSIOp::create(rewriter, loc, l, safe), zero));
    }
    case DimRelation::le:
      return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sle, l,
                                   r);
    }
    llvm_unreachable("unknown relation");
  }

  LogicalResult
  matchAndRewrite(AssertDimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value ok = holds(rewriter, loc, op, adaptor.getLhs(), adaptor.getRhs());
    Value failed = arith::XOrIOp::create(
        rewriter, loc, ok,
        arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(true)));
    callHook(rewriter, op, failed, RuntimeHook::ShapeCheckFailed,
             op.getMessage(), {adaptor.getLhs(), adaptor.getRhs()});
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::tessera::tgraph::lowering::populateLayoutPatterns(
    LoweringContext &ctx, RewritePatternSet &patterns) {
  MLIRContext *mlir = patterns.getContext();
  patterns.add<TransposeLowering, ConcatLowering, PadLowering, DimLowering,
               DimSizeLowering, AssertDimLowering>(ctx.types, mlir);
  patterns.add<ReshapeLowering, BroadcastInDimLowering, SliceLowering>(ctx,
                                                                       mlir);
}
