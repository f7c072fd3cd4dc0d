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
    Value shape = tensor::FromElementsOp::create(rewriter, loc, extents);
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
    auto sizes =
        dynamicSizes(rewriter, op, getShape(op.getType()), type, ctx.symbols);
    if (failed(sizes))
      return failure();
    SmallVector<Value> xSizes;
    for (int64_t j = 0; j < xt.getRank(); ++j)
      xSizes.push_back(dimOf(rewriter, loc, x, j));
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
struct PadLowering : public OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = getTypeConverter()->convertType<RankedTensorType>(op.getType());
    SmallVector<OpFoldResult> low, high;
    for (auto [l, h] : llvm::zip(op.getLow(), op.getHigh())) {
      low.push_back(rewriter.getIndexAttr(l));
      high.push_back(rewriter.getIndexAttr(h));
    }
    Value value = arith::ConstantOp::create(rewriter, op.getLoc(),
                                            cast<TypedAttr>(op.getValue()));
    rewriter.replaceOpWithNewOp<tensor::PadOp>(op, type, adaptor.getX(), low,
                                               high, value);
    return success();
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

  static constexpr StringLiteral kHook = "tessera_shape_check_failed";

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
    }
    llvm_unreachable("unknown relation");
  }

  /// `llvm.func @tessera_shape_check_failed(!llvm.ptr, i64, i64)`, declared
  /// once.
  LLVM::LLVMFuncOp hook(ConversionPatternRewriter &rewriter,
                        ModuleOp module) const {
    if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(kHook))
      return fn;
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    auto type = LLVM::LLVMFunctionType::get(
        LLVM::LLVMVoidType::get(rewriter.getContext()),
        {LLVM::LLVMPointerType::get(rewriter.getContext()),
         rewriter.getI64Type(), rewriter.getI64Type()});
    return LLVM::LLVMFuncOp::create(rewriter, module.getLoc(), kHook, type);
  }

  LogicalResult
  matchAndRewrite(AssertDimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto module = op->getParentOfType<ModuleOp>();
    LLVM::LLVMFuncOp fn = hook(rewriter, module);
    Value ok = holds(rewriter, loc, op, adaptor.getLhs(), adaptor.getRhs());
    Value failed = arith::XOrIOp::create(
        rewriter, loc, ok,
        arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(true)));
    std::string name = "__tessera_check_" + std::to_string(counter++);
    std::string message = op.getMessage().str();
    message.push_back('\0');
    auto ifOp = scf::IfOp::create(rewriter, loc, failed, /*withElse=*/false);
    {
      // The global string needs its module: fill the region once attached.
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      Value text = LLVM::createGlobalString(loc, rewriter, name, message,
                                            LLVM::Linkage::Internal);
      auto i64 = [&](Value v) -> Value {
        return arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                          v);
      };
      LLVM::CallOp::create(
          rewriter, loc, fn,
          ValueRange{text, i64(adaptor.getLhs()), i64(adaptor.getRhs())});
    }
    rewriter.eraseOp(op);
    return success();
  }

  mutable unsigned counter = 0;
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
