//===- LowerIndexing.cpp - gather, embedding, one_hot, scatter_add, ... ---===//
//
// Reads at computed indices: gather and embedding are linalg.generic ops
// over the result that read the table with tensor.extract at the clamped
// index; one_hot compares each id with the class index; dynamic_slice is an
// extract_slice at clamped run-time offsets. scatter_add walks the indices
// in row-major order (so repeated indices accumulate in a fixed order) and
// adds one slice of updates per index.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "tessera/Dialect/TGraph/IR/DimValues.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;
using namespace mlir::tessera::tgraph::lowering;

namespace {

/// `i` (an i32/i64 scalar) as an index clamped to [0, size - 1].
Value clampIndex(OpBuilder &b, Location loc, Value i, Value size) {
  Value idx = arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value last = arith::SubIOp::create(b, loc, size, one);
  Value low = arith::MaxSIOp::create(b, loc, idx, zero);
  return arith::MinSIOp::create(b, loc, low, last);
}

/// Stops the call when indices (any) index an empty `dim` of `x`: clamping
/// into nothing has no answer.
void checkNotEmpty(OpBuilder &b, Operation *op, Value x, Value indices,
                   int64_t dim) {
  Location loc = op->getLoc();
  auto xt = cast<RankedTensorType>(x.getType());
  auto it = cast<RankedTensorType>(indices.getType());
  if (!xt.isDynamicDim(dim) && xt.getDimSize(dim) != 0)
    return;
  Value count = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t d = 0; d < it.getRank(); ++d)
    count = arith::MulIOp::create(b, loc, count, dimOf(b, loc, indices, d));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value empty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      dimOf(b, loc, x, dim), zero);
  Value some =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, count, zero);
  callHook(b, op, arith::AndIOp::create(b, loc, empty, some),
           RuntimeHook::Failed,
           describeOp(op) + ": dim " + std::to_string(dim) +
               " of the operand is empty, so the indices have nothing to "
               "select (out-of-range indices are clamped into the dim)",
           {});
}

/// result[a..., i..., b...] = x[a..., clamp(indices[i...]), b...].
Value buildGather(OpBuilder &b, Operation *op, Value x, Value indices,
                  int64_t dim, RankedTensorType resultType) {
  Location loc = op->getLoc();
  checkNotEmpty(b, op, x, indices, dim);
  auto it = cast<RankedTensorType>(indices.getType());
  int64_t r = resultType.getRank(), ir = it.getRank();
  // Dynamic sizes, from the operand dim each result dim comes from.
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < r; ++d) {
    if (!resultType.isDynamicDim(d))
      continue;
    if (d < dim)
      sizes.push_back(dimOf(b, loc, x, d));
    else if (d < dim + ir)
      sizes.push_back(dimOf(b, loc, indices, d - dim));
    else
      sizes.push_back(dimOf(b, loc, x, d - ir + 1));
  }
  Value out = emptyTensor(b, loc, resultType, sizes);
  SmallVector<AffineExpr> idxExprs;
  for (int64_t j = 0; j < ir; ++j)
    idxExprs.push_back(b.getAffineDimExpr(dim + j));
  SmallVector<AffineMap> maps{AffineMap::get(r, 0, idxExprs, b.getContext()),
                              b.getMultiDimIdentityMap(r)};
  SmallVector<utils::IteratorType> par(r, utils::IteratorType::parallel);
  Value extent = dimOf(b, loc, x, dim);
  return linalg::GenericOp::create(
             b, loc, resultType, indices, out, maps, par,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               SmallVector<Value> at;
               for (int64_t d = 0; d < dim; ++d)
                 at.push_back(linalg::IndexOp::create(nb, l, d));
               at.push_back(clampIndex(nb, l, args[0], extent));
               for (int64_t d = dim + ir; d < r; ++d)
                 at.push_back(linalg::IndexOp::create(nb, l, d));
               Value v = tensor::ExtractOp::create(nb, l, x, at);
               linalg::YieldOp::create(nb, l, v);
             })
      .getResult(0);
}

struct GatherLowering : public OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    rewriter.replaceOp(op,
                       buildGather(rewriter, op, adaptor.getX(),
                                   adaptor.getIndices(),
                                   static_cast<int64_t>(op.getDim()), type));
    return success();
  }
};

/// embedding(table [V, D], ids [...]) is gather along dim 0.
struct EmbeddingLowering : public OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    rewriter.replaceOp(op, buildGather(rewriter, op,
                                       adaptor.getTable(), adaptor.getIds(),
                                       /*dim=*/0, type));
    return success();
  }
};

/// out[i..., c] = (ids[i...] == c) ? 1 : 0; ids out of range give zeros.
struct OneHotLowering : public OpConversionPattern<OneHotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OneHotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Value ids = adaptor.getIds();
    int64_t r = type.getRank();
    SmallVector<Value> sizes;
    for (int64_t d = 0; d + 1 < r; ++d)
      if (type.isDynamicDim(d))
        sizes.push_back(dimOf(rewriter, loc, ids, d));
    Value out = emptyTensor(rewriter, loc, type, sizes);
    SmallVector<AffineExpr> idExprs;
    for (int64_t d = 0; d + 1 < r; ++d)
      idExprs.push_back(rewriter.getAffineDimExpr(d));
    SmallVector<AffineMap> maps{
        AffineMap::get(r, 0, idExprs, rewriter.getContext()),
        rewriter.getMultiDimIdentityMap(r)};
    SmallVector<utils::IteratorType> par(r, utils::IteratorType::parallel);
    Type element = type.getElementType();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ids, out, maps, par,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value c = linalg::IndexOp::create(b, l, r - 1);
          Value id =
              arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          Value hit =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, id, c);
          Value v = arith::SelectOp::create(b, l, hit,
                                            scalarConstant(b, l, element, 1.0),
                                            scalarConstant(b, l, element, 0.0));
          linalg::YieldOp::create(b, l, v);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// extract_slice at offsets clamped to [0, dim - size]; a size larger than
/// its dim fails the call with the sizes found.
struct DynamicSliceLowering : public OpConversionPattern<DynamicSliceOp> {
  DynamicSliceLowering(LoweringContext &ctx, MLIRContext *mlir)
      : OpConversionPattern(ctx.types, mlir), ctx(ctx) {}

  LogicalResult
  matchAndRewrite(DynamicSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    Value x = adaptor.getX();
    std::vector<shape::DimExpr> sizeDims = op.getSizes().getDims();
    SmallVector<OpFoldResult> offsets, sizes;
    SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    for (auto [d, start] : llvm::enumerate(adaptor.getStarts())) {
      Value size;
      if (auto c = sizeDims[d].getConstant()) {
        size = arith::ConstantIndexOp::create(rewriter, loc, *c);
        sizes.push_back(rewriter.getIndexAttr(*c));
      } else {
        FailureOr<Value> v =
            buildDimExpr(rewriter, loc, sizeDims[d], [&](StringRef name) {
              return ctx.symbols.lookup(op, name);
            });
        if (failed(v))
          return failure();
        size = *v;
        sizes.push_back(size);
      }
      Value extent = dimOf(rewriter, loc, x, d);
      Value fits = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::sle, size, extent);
      Value tooBig = arith::XOrIOp::create(
          rewriter, loc, fits,
          arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(1)));
      callHook(rewriter, op, tooBig, RuntimeHook::ShapeCheckFailed,
               describeOp(op) + ": slice size of dim " + std::to_string(d) +
                   " must not exceed the operand's dim",
               {size, extent});
      Value s = tensor::ExtractOp::create(rewriter, loc, start, ValueRange{});
      Value idx =
          arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), s);
      Value room = arith::SubIOp::create(rewriter, loc, extent, size);
      Value low = arith::MaxSIOp::create(rewriter, loc, idx, zero);
      Value clamped = arith::MinSIOp::create(rewriter, loc, low, room);
      offsets.push_back(
          arith::MaxSIOp::create(rewriter, loc, clamped, zero).getResult());
    }
    Value slice = tensor::ExtractSliceOp::create(rewriter, loc, x, offsets,
                                                 sizes, strides);
    if (slice.getType() != type)
      slice = tensor::CastOp::create(rewriter, loc, type, slice);
    rewriter.replaceOp(op, slice);
    return success();
  }

  LoweringContext &ctx;
};

/// `t` with its dims [from, from + count) merged into one (a new unit dim
/// when count is 0).
Value mergeDims(OpBuilder &b, Location loc, Value t, int64_t from,
                int64_t count) {
  auto type = cast<RankedTensorType>(t.getType());
  int64_t r = type.getRank();
  if (count == 1)
    return t;
  if (count == 0) {
    // A unit dim at `from`, grouped with the input dim it precedes (or the
    // last one when it is appended; no groups for a 0-d input).
    SmallVector<int64_t> shape(type.getShape());
    shape.insert(shape.begin() + from, 1);
    SmallVector<OpFoldResult> outSizes = tensor::getMixedSizes(b, loc, t);
    outSizes.insert(outSizes.begin() + from, b.getIndexAttr(1));
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d < r; ++d) {
      int64_t o = d < from ? d : d + 1;
      if (d == from)
        groups.push_back({d, d + 1});
      else if (d == r - 1 && from == r)
        groups.push_back({d, d + 1});
      else
        groups.push_back({o});
    }
    auto outType = RankedTensorType::get(shape, type.getElementType());
    return tensor::ExpandShapeOp::create(b, loc, outType, t, groups, outSizes);
  }
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < r;) {
    ReassociationIndices g;
    int64_t n = d == from ? count : 1;
    for (int64_t k = 0; k < n; ++k)
      g.push_back(d++);
    groups.push_back(g);
  }
  return tensor::CollapseShapeOp::create(b, loc, t, groups);
}

/// Walks the (flattened) indices in order; each in-range index adds one
/// slice of updates into the running result.
struct ScatterAddLowering : public OpConversionPattern<ScatterAddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterAddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    int64_t dim = static_cast<int64_t>(op.getDim());
    Value x = adaptor.getX();
    Value indices = adaptor.getIndices();
    int64_t ir = cast<RankedTensorType>(indices.getType()).getRank();
    if (ir == 0) {
      auto t = RankedTensorType::get(
          {1}, cast<RankedTensorType>(indices.getType()).getElementType());
      indices = tensor::ExpandShapeOp::create(
          rewriter, loc, t, indices, ArrayRef<ReassociationIndices>{},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
    } else {
      indices = mergeDims(rewriter, loc, indices, 0, ir);
    }
    Value updates = mergeDims(rewriter, loc, adaptor.getUpdates(), dim, ir);
    Value start = castTo(rewriter, loc, x, type);

    int64_t r = type.getRank();
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value count = dimOf(rewriter, loc, indices, 0);
    Value extent = dimOf(rewriter, loc, start, dim);
    auto loop = scf::ForOp::create(rewriter, loc, zero, count, one, start);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(loop.getBody());
      Value p = loop.getInductionVar();
      Value acc = loop.getRegionIterArgs()[0];
      Value raw = tensor::ExtractOp::create(rewriter, loc, indices, p);
      Value idx = arith::IndexCastOp::create(rewriter, loc,
                                             rewriter.getIndexType(), raw);
      Value inRange = arith::AndIOp::create(
          rewriter, loc,
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, idx,
                                zero),
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, idx,
                                extent));
      auto branch = scf::IfOp::create(rewriter, loc, TypeRange{type}, inRange,
                                      /*withElse=*/true);
      rewriter.setInsertionPointToStart(branch.thenBlock());
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(rewriter, loc, acc);
      sizes[dim] = rewriter.getIndexAttr(1);
      SmallVector<OpFoldResult> strides(r, rewriter.getIndexAttr(1));
      SmallVector<OpFoldResult> accAt(r, rewriter.getIndexAttr(0));
      accAt[dim] = idx;
      SmallVector<OpFoldResult> updAt(r, rewriter.getIndexAttr(0));
      updAt[dim] = p;
      Value target = tensor::ExtractSliceOp::create(rewriter, loc, acc, accAt,
                                                    sizes, strides);
      Value source = tensor::ExtractSliceOp::create(rewriter, loc, updates,
                                                    updAt, sizes, strides);
      if (source.getType() != target.getType())
        source =
            tensor::CastOp::create(rewriter, loc, target.getType(), source);
      auto sliceType = cast<RankedTensorType>(target.getType());
      SmallVector<AffineMap> maps(3, rewriter.getMultiDimIdentityMap(r));
      SmallVector<utils::IteratorType> par(r, utils::IteratorType::parallel);
      bool isFloat = isa<FloatType>(type.getElementType());
      Value sum =
          linalg::GenericOp::create(
              rewriter, loc, sliceType, ValueRange{target, source}, target,
              maps, par,
              [&](OpBuilder &b, Location l, ValueRange a) {
                Value s = isFloat
                              ? Value(arith::AddFOp::create(b, l, a[0], a[1]))
                              : Value(arith::AddIOp::create(b, l, a[0], a[1]));
                linalg::YieldOp::create(b, l, s);
              })
              .getResult(0);
      Value updated = tensor::InsertSliceOp::create(rewriter, loc, sum, acc,
                                                    accAt, sizes, strides);
      scf::YieldOp::create(rewriter, loc, updated);
      rewriter.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(rewriter, loc, acc);
      rewriter.setInsertionPointAfter(branch);
      scf::YieldOp::create(rewriter, loc, branch.getResult(0));
    }
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }

  static Value castTo(OpBuilder &b, Location loc, Value v, Type t) {
    return v.getType() == t ? v : tensor::CastOp::create(b, loc, t, v);
  }
};

} // namespace

void mlir::tessera::tgraph::lowering::populateIndexingPatterns(
    LoweringContext &ctx, RewritePatternSet &patterns) {
  MLIRContext *mlir = patterns.getContext();
  patterns.add<GatherLowering, EmbeddingLowering, OneHotLowering,
               ScatterAddLowering>(ctx.types, mlir);
  patterns.add<DynamicSliceLowering>(ctx, mlir);
}
