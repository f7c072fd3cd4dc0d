//===- LowerControlFlow.cpp - Regions, calls and collectives to scf/func --===//
//
// Structured control flow becomes scf: `cond` an scf.if, `while` an
// scf.while, `scan` an scf.for that slices its inputs and stacks its
// outputs, `fixed_point` an scf.while that also carries the iteration count
// and the last change (and reports non-convergence as an error of the
// call), `checkpoint` its body. Bodies move into scf.execute_region ops
// (which canonicalization inlines), so every tgraph.yield becomes a plain
// scf.yield of its parent's result types. Calls, custom_vjp and custom_jvp
// become func.call of the callee (their rules matter to autodiff only).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;
using namespace mlir::tessera::tgraph::lowering;

namespace {

/// `v` as `type` (a tensor.cast where two tensor types differ only in which
/// dims are static).
Value castTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(b, loc, type, v);
}

SmallVector<Value> castAll(OpBuilder &b, Location loc, ValueRange values,
                           TypeRange types) {
  SmallVector<Value> out;
  for (auto [v, t] : llvm::zip_equal(values, types))
    out.push_back(castTo(b, loc, v, t));
  return out;
}

FailureOr<SmallVector<Type>> convertAll(const TypeConverter *tc,
                                        TypeRange types) {
  SmallVector<Type> out;
  if (failed(tc->convertTypes(types, out)))
    return failure();
  return out;
}

/// Moves `body` into a new scf.execute_region at the insertion point, its
/// arguments replaced by `args` (cast to their converted types); its
/// tgraph.yield becomes an scf.yield of `results` (YieldLowering).
scf::ExecuteRegionOp inlineBody(ConversionPatternRewriter &rewriter,
                                const TypeConverter *tc, Location loc,
                                Block *body, ValueRange args,
                                TypeRange results) {
  SmallVector<Value> casted;
  for (auto [arg, v] : llvm::zip_equal(body->getArguments(), args))
    casted.push_back(castTo(rewriter, loc, v, tc->convertType(arg.getType())));
  auto exec = scf::ExecuteRegionOp::create(rewriter, loc, results);
  OpBuilder::InsertionGuard guard(rewriter);
  Block *block = rewriter.createBlock(&exec.getRegion());
  rewriter.mergeBlocks(body, block, casted);
  return exec;
}

/// Like inlineBody, but copies `body` (which stays in place).
scf::ExecuteRegionOp cloneBody(ConversionPatternRewriter &rewriter,
                               const TypeConverter *tc, Location loc,
                               Block *body, ValueRange args,
                               TypeRange results) {
  IRMapping map;
  for (auto [arg, v] : llvm::zip_equal(body->getArguments(), args))
    map.map(arg, castTo(rewriter, loc, v, tc->convertType(arg.getType())));
  auto exec = scf::ExecuteRegionOp::create(rewriter, loc, results);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.createBlock(&exec.getRegion());
  for (Operation &op : *body)
    rewriter.clone(op, map);
  return exec;
}

/// Inside scf.if and scf.execute_region: scf.yield of the parent's result
/// types.
struct YieldLowering : public OpConversionPattern<YieldOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(YieldOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Operation *parent = op->getParentOp();
    if (!isa<scf::IfOp, scf::ExecuteRegionOp>(parent))
      return rewriter.notifyMatchFailure(op, "parent is not lowered yet");
    rewriter.replaceOpWithNewOp<scf::YieldOp>(
        op, castAll(rewriter, op.getLoc(), adaptor.getValues(),
                    parent->getResultTypes()));
    return success();
  }
};

struct CondLowering : public OpConversionPattern<CondOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CondOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto types = convertAll(getTypeConverter(), op.getResultTypes());
    if (failed(types))
      return failure();
    Value pred = tensor::ExtractOp::create(rewriter, op.getLoc(),
                                           adaptor.getPred(), ValueRange{});
    auto ifOp = scf::IfOp::create(rewriter, op.getLoc(), *types, pred,
                                  /*addThenBlock=*/false,
                                  /*addElseBlock=*/false);
    rewriter.inlineRegionBefore(op.getThenRegion(), ifOp.getThenRegion(),
                                ifOp.getThenRegion().end());
    rewriter.inlineRegionBefore(op.getElseRegion(), ifOp.getElseRegion(),
                                ifOp.getElseRegion().end());
    rewriter.replaceOp(op, ifOp.getResults());
    return success();
  }
};

/// The carried values have the (converted) types of the cond region's
/// arguments; inits, body arguments and results are cast to and from them.
struct WhileLowering : public OpConversionPattern<WhileOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WhileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    const TypeConverter *tc = getTypeConverter();
    Block *condBody = &op.getCondRegion().front();
    Block *loopBody = &op.getBodyRegion().front();
    auto carried = convertAll(tc, condBody->getArgumentTypes());
    auto results = convertAll(tc, op.getResultTypes());
    if (failed(carried) || failed(results))
      return failure();
    Type predType = tc->convertType(
        cast<YieldOp>(condBody->getTerminator()).getValues()[0].getType());
    SmallVector<Location> locs(carried->size(), loc);

    auto loop = scf::WhileOp::create(
        rewriter, loc, *carried,
        castAll(rewriter, loc, adaptor.getInits(), *carried));
    {
      OpBuilder::InsertionGuard guard(rewriter);
      Block *before =
          rewriter.createBlock(&loop.getBefore(), {}, *carried, locs);
      auto pred = inlineBody(rewriter, tc, loc, condBody,
                             before->getArguments(), predType);
      Value flag = tensor::ExtractOp::create(rewriter, loc, pred.getResult(0),
                                             ValueRange{});
      scf::ConditionOp::create(rewriter, loc, flag, before->getArguments());

      Block *after = rewriter.createBlock(&loop.getAfter(), {}, *carried, locs);
      auto next = inlineBody(rewriter, tc, loc, loopBody, after->getArguments(),
                             *carried);
      scf::YieldOp::create(rewriter, loc, next.getResults());
    }
    rewriter.replaceOp(op, castAll(rewriter, loc, loop.getResults(), *results));
    return success();
  }
};

/// An scf.for over the leading dim: each step extracts one slice of every
/// input, runs the body and inserts its outputs into the stacked results.
struct ScanLowering : public OpConversionPattern<ScanOp> {
  ScanLowering(LoweringContext &ctx, MLIRContext *mlir)
      : OpConversionPattern(ctx.types, mlir), ctx(ctx) {}

  LogicalResult
  matchAndRewrite(ScanOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    const TypeConverter *tc = getTypeConverter();
    Block *body = &op.getBody().front();
    size_t numCarries = op.getInits().size();
    auto carried =
        convertAll(tc, TypeRange(body->getArguments().take_front(numCarries)));
    auto results = convertAll(tc, op.getResultTypes());
    auto yielded = convertAll(
        tc, cast<YieldOp>(body->getTerminator()).getValues().getTypes());
    if (failed(carried) || failed(results) || failed(yielded))
      return failure();

    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value length = adaptor.getXs().empty()
                       ? Value(arith::ConstantIndexOp::create(rewriter, loc,
                                                              *op.getLength()))
                       : dimOf(rewriter, loc, adaptor.getXs()[0], 0);

    // The stacked outputs start empty, sized from their symbolic shapes.
    SmallVector<Value> iterArgs =
        castAll(rewriter, loc, adaptor.getInits(), *carried);
    for (OpResult r : op.getResults().drop_front(numCarries)) {
      auto type = cast<RankedTensorType>((*results)[r.getResultNumber()]);
      FailureOr<SmallVector<Value>> sizes =
          dynamicSizes(rewriter, op, getShape(r.getType()), type, ctx.symbols);
      if (failed(sizes))
        return failure();
      iterArgs.push_back(emptyTensor(rewriter, loc, type, *sizes));
    }

    auto loop = scf::ForOp::create(rewriter, loc, zero, length, one, iterArgs);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      Block *loopBody = loop.getBody();
      if (!loopBody->empty())
        rewriter.eraseOp(loopBody->getTerminator());
      rewriter.setInsertionPointToEnd(loopBody);
      Value index = loop.getInductionVar();
      if (op.getReverse()) {
        Value last = arith::SubIOp::create(rewriter, loc, length, one);
        index = arith::SubIOp::create(rewriter, loc, last, index);
      }
      SmallVector<Value> args(loop.getRegionIterArgs().take_front(numCarries));
      for (Value x : adaptor.getXs())
        args.push_back(sliceAt(rewriter, loc, x, index));
      auto step = inlineBody(rewriter, tc, loc, body, args, *yielded);

      SmallVector<Value> next = castAll(
          rewriter, loc, step.getResults().take_front(numCarries), *carried);
      for (auto [y, acc] :
           llvm::zip_equal(step.getResults().drop_front(numCarries),
                           loop.getRegionIterArgs().drop_front(numCarries)))
        next.push_back(insertAt(rewriter, loc, y, acc, index));
      scf::YieldOp::create(rewriter, loc, next);
    }
    rewriter.replaceOp(op, castAll(rewriter, loc, loop.getResults(), *results));
    return success();
  }

  /// `x[index]` with the leading dim dropped.
  static Value sliceAt(OpBuilder &b, Location loc, Value x, Value index) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    offsets[0] = index;
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    sizes[0] = b.getIndexAttr(1);
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    auto sliceType = RankedTensorType::get(type.getShape().drop_front(),
                                           type.getElementType());
    return tensor::ExtractSliceOp::create(b, loc, sliceType, x, offsets, sizes,
                                          strides);
  }

  /// `acc` with `acc[index] = y`.
  static Value insertAt(OpBuilder &b, Location loc, Value y, Value acc,
                        Value index) {
    auto type = cast<RankedTensorType>(acc.getType());
    auto sliceType = RankedTensorType::get(type.getShape().drop_front(),
                                           type.getElementType());
    y = castTo(b, loc, y, sliceType);
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
    offsets[0] = index;
    SmallVector<OpFoldResult> sizes{b.getIndexAttr(1)};
    llvm::append_range(sizes, tensor::getMixedSizes(b, loc, y));
    SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
    return tensor::InsertSliceOp::create(b, loc, y, acc, offsets, sizes,
                                         strides);
  }

  LoweringContext &ctx;
};

/// max |a - b| over all elements, as an f64 scalar (NaN if any is NaN).
Value maxAbsDifference(OpBuilder &b, Location loc, Value x, Value y) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  Type element = type.getElementType();
  auto scalar = RankedTensorType::get({}, element);
  Value init = filledTensor(
      b, loc, scalar, {},
      arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0)));
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(rank));
  maps.push_back(AffineMap::get(rank, 0, {}, b.getContext()));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  auto reduce = linalg::GenericOp::create(
      b, loc, scalar, ValueRange{x, y}, ValueRange{init}, maps, iterators,
      [](OpBuilder &nb, Location nl, ValueRange a) {
        Value d = arith::SubFOp::create(nb, nl, a[0], a[1]);
        Value m = arith::MaximumFOp::create(nb, nl, a[2],
                                            math::AbsFOp::create(nb, nl, d));
        linalg::YieldOp::create(nb, nl, m);
      });
  Value v =
      tensor::ExtractOp::create(b, loc, reduce.getResult(0), ValueRange{});
  return convertScalar(b, loc, v, b.getF64Type());
}

/// max |x| over all elements, as an f64 scalar (NaN if any is NaN).
Value maxAbs(OpBuilder &b, Location loc, Value x) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  auto zero = cast<RankedTensorType>(x.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < zero.getRank(); ++d)
    if (zero.isDynamicDim(d))
      sizes.push_back(dimOf(b, loc, x, d));
  Value zeros = filledTensor(
      b, loc, zero, sizes,
      arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0)));
  return maxAbsDifference(b, loc, x, zeros);
}

/// Solves a x = rhs (a: N x N, rhs: N) by Gaussian elimination with
/// partial pivoting. A zero pivot (a singular Jacobian) gives infinities or
/// NaN, which the caller's convergence test rejects.
Value solveDense(OpBuilder &b, Location loc, Value a, Value rhs, Value n) {
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
  auto at = [](OpBuilder &b, Location l, Value m, ValueRange ij) {
    return tensor::ExtractOp::create(b, l, m, ij).getResult();
  };
  auto put = [](OpBuilder &b, Location l, Value v, Value m, ValueRange ij) {
    return tensor::InsertOp::create(b, l, v, m, ij).getResult();
  };
  auto abs = [](OpBuilder &b, Location l, Value v) {
    return math::AbsFOp::create(b, l, v).getResult();
  };
  auto elimination = scf::ForOp::create(
      b, loc, c0, n, c1, ValueRange{a, rhs},
      [&](OpBuilder &b, Location l, Value k, ValueRange acc) {
        Value kp1 = arith::AddIOp::create(b, l, k, c1);
        // The largest |a[i, k]|, i >= k, becomes the pivot.
        auto search = scf::ForOp::create(
            b, l, kp1, n, c1,
            ValueRange{k, abs(b, l, at(b, l, acc[0], {k, k}))},
            [&](OpBuilder &b, Location l, Value i, ValueRange best) {
              Value v = abs(b, l, at(b, l, acc[0], {i, k}));
              Value better = arith::CmpFOp::create(
                  b, l, arith::CmpFPredicate::OGT, v, best[1]);
              scf::YieldOp::create(
                  b, l,
                  ValueRange{
                      arith::SelectOp::create(b, l, better, i, best[0]),
                      arith::SelectOp::create(b, l, better, v, best[1])});
            });
        Value p = search.getResult(0);
        auto swap = scf::ForOp::create(
            b, l, c0, n, c1, ValueRange{acc[0]},
            [&](OpBuilder &b, Location l, Value j, ValueRange m) {
              Value x = at(b, l, m[0], {k, j}), y = at(b, l, m[0], {p, j});
              Value s = put(b, l, y, m[0], {k, j});
              scf::YieldOp::create(b, l, put(b, l, x, s, {p, j}));
            });
        Value bk = at(b, l, acc[1], {k}), bp = at(b, l, acc[1], {p});
        Value rhsSwapped = put(b, l, bk, put(b, l, bp, acc[1], {k}), {p});
        Value swapped = swap.getResult(0);
        Value pivot = at(b, l, swapped, {k, k});
        auto rows = scf::ForOp::create(
            b, l, kp1, n, c1, ValueRange{swapped, rhsSwapped},
            [&](OpBuilder &b, Location l, Value i, ValueRange m) {
              Value f =
                  arith::DivFOp::create(b, l, at(b, l, m[0], {i, k}), pivot);
              auto cols = scf::ForOp::create(
                  b, l, k, n, c1, ValueRange{m[0]},
                  [&](OpBuilder &b, Location l, Value j, ValueRange mm) {
                    Value v = arith::SubFOp::create(
                        b, l, at(b, l, mm[0], {i, j}),
                        arith::MulFOp::create(b, l, f,
                                              at(b, l, mm[0], {k, j})));
                    scf::YieldOp::create(b, l, put(b, l, v, mm[0], {i, j}));
                  });
              Value bi = arith::SubFOp::create(
                  b, l, at(b, l, m[1], {i}),
                  arith::MulFOp::create(b, l, f, at(b, l, m[1], {k})));
              scf::YieldOp::create(
                  b, l,
                  ValueRange{cols.getResult(0), put(b, l, bi, m[1], {i})});
            });
        scf::YieldOp::create(b, l, rows.getResults());
      });
  Value u = elimination.getResult(0);
  // Back substitution, last row first, into the right-hand side.
  auto back = scf::ForOp::create(
      b, loc, c0, n, c1, ValueRange{elimination.getResult(1)},
      [&](OpBuilder &b, Location l, Value t, ValueRange x) {
        Value i =
            arith::SubIOp::create(b, l, arith::SubIOp::create(b, l, n, c1), t);
        Value ip1 = arith::AddIOp::create(b, l, i, c1);
        auto sum = scf::ForOp::create(
            b, l, ip1, n, c1, ValueRange{at(b, l, x[0], {i})},
            [&](OpBuilder &b, Location l, Value j, ValueRange s) {
              scf::YieldOp::create(
                  b, l,
                  arith::SubFOp::create(
                      b, l, s[0],
                      arith::MulFOp::create(b, l, at(b, l, u, {i, j}),
                                            at(b, l, x[0], {j})))
                      .getResult());
            });
        Value xi =
            arith::DivFOp::create(b, l, sum.getResult(0), at(b, l, u, {i, i}));
        scf::YieldOp::create(b, l, put(b, l, xi, x[0], {i}));
      });
  return back.getResult(0);
}

/// solve: Newton's method on F(x, params) = 0 (see the file comment).
struct SolveLowering : public OpConversionPattern<SolveOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SolveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    const TypeConverter *tc = getTypeConverter();
    Block *body = &op.getBody().front();
    auto xType =
        cast<RankedTensorType>(tc->convertType(body->getArgument(0).getType()));
    auto element = cast<FloatType>(xType.getElementType());
    Type resultType = tc->convertType(op.getType());
    Type i1 = rewriter.getI1Type(), f64 = rewriter.getF64Type();
    Type index = rewriter.getIndexType();
    SmallVector<Type> carried{xType, index, i1, f64, i1};
    SmallVector<Location> locs(carried.size(), loc);

    Value init = castTo(rewriter, loc, adaptor.getInit(), xType);
    SmallVector<OpFoldResult> xSizes =
        tensor::getMixedSizes(rewriter, loc, init);
    Value n = arith::ConstantIndexOp::create(rewriter, loc, 1);
    for (OpFoldResult size : xSizes)
      n = arith::MulIOp::create(
          rewriter, loc, n,
          getValueOrCreateConstantIndexOp(rewriter, loc, size));
    int64_t staticN =
        xType.hasStaticShape() ? xType.getNumElements() : ShapedType::kDynamic;
    auto flatType = RankedTensorType::get({staticN}, element);
    int64_t rank = xType.getRank();
    SmallVector<ReassociationIndices> all;
    if (rank > 0)
      all.push_back(llvm::to_vector(llvm::seq<int64_t>(0, rank)));
    auto flat = [&](OpBuilder &b, Location l, Value v) -> Value {
      v = castTo(b, l, v, xType);
      if (rank == 1)
        return castTo(b, l, v, flatType);
      if (rank == 0)
        return tensor::ExpandShapeOp::create(
            b, l, flatType, v, ArrayRef<ReassociationIndices>{},
            ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      return tensor::CollapseShapeOp::create(b, l, flatType, v, all);
    };
    auto shaped = [&](OpBuilder &b, Location l, Value v) -> Value {
      if (rank == 1)
        return castTo(b, l, v, xType);
      if (rank == 0)
        return tensor::CollapseShapeOp::create(
            b, l, xType, v, ArrayRef<ReassociationIndices>{});
      return tensor::ExpandShapeOp::create(b, l, xType, v, all, xSizes);
    };

    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value no =
        arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(0));
    Value yes =
        arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(1));
    Value inf = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getF64FloatAttr(std::numeric_limits<double>::infinity()));
    auto loop = scf::WhileOp::create(rewriter, loc, carried,
                                     ValueRange{init, zero, no, inf, no});
    {
      OpBuilder::InsertionGuard guard(rewriter);
      Block *before =
          rewriter.createBlock(&loop.getBefore(), {}, carried, locs);
      // Go on while neither converged nor out of steps.
      Value stop = arith::OrIOp::create(rewriter, loc, before->getArgument(2),
                                        before->getArgument(4));
      scf::ConditionOp::create(rewriter, loc,
                               arith::XOrIOp::create(rewriter, loc, stop, yes),
                               before->getArguments());

      Block *after = rewriter.createBlock(&loop.getAfter(), {}, carried, locs);
      Value x = after->getArgument(0), steps = after->getArgument(1);
      SmallVector<Value> args{x};
      llvm::append_range(args, adaptor.getParams());
      Value r = cloneBody(rewriter, tc, loc, body, args, xType).getResult(0);
      Value norm = maxAbs(rewriter, loc, r);
      Value tol = arith::ConstantOp::create(rewriter, loc, op.getTolAttr());
      Value done = arith::CmpFOp::create(rewriter, loc,
                                         arith::CmpFPredicate::OLE, norm, tol);
      Value maxIter = arith::ConstantIndexOp::create(
          rewriter, loc, static_cast<int64_t>(op.getMaxIter()));
      Value canStep = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, steps, maxIter);
      Value exhausted = arith::AndIOp::create(
          rewriter, loc, arith::XOrIOp::create(rewriter, loc, done, yes),
          arith::XOrIOp::create(rewriter, loc, canStep, yes));
      Value step = arith::AndIOp::create(
          rewriter, loc, arith::XOrIOp::create(rewriter, loc, done, yes),
          canStep);
      auto update = scf::IfOp::create(rewriter, loc, TypeRange{xType}, step,
                                      /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard g(rewriter);
        rewriter.setInsertionPointToStart(update.elseBlock());
        scf::YieldOp::create(rewriter, loc, x);
        rewriter.setInsertionPointToStart(update.thenBlock());
        Value next = newtonStep(rewriter, loc, tc, body, op, x, r, n, element,
                                flat, shaped, adaptor.getParams());
        scf::YieldOp::create(rewriter, loc, next);
      }
      Value count = arith::SelectOp::create(
          rewriter, loc, step,
          arith::AddIOp::create(
              rewriter, loc, steps,
              arith::ConstantIndexOp::create(rewriter, loc, 1)),
          steps);
      scf::YieldOp::create(
          rewriter, loc,
          ValueRange{update.getResult(0), count, done, norm, exhausted});
    }
    std::string message;
    llvm::raw_string_ostream(message)
        << describeOp(op) << ": did not converge to |F(x)| <= "
        << llvm::format("%g", op.getTol().convertToDouble()) << " within "
        << op.getMaxIter()
        << " Newton steps (a singular Jacobian, or no root near init?)";
    callHook(rewriter, op,
             arith::XOrIOp::create(rewriter, loc, loop.getResult(2), yes),
             RuntimeHook::NotConverged, message,
             {loop.getResult(1), loop.getResult(3)});
    rewriter.replaceOp(op,
                       castTo(rewriter, loc, loop.getResult(0), resultType));
    return success();
  }

  /// x - J^-1 r, with J by forward differences: column j is
  /// (F(x + h e_j) - r) / h, h = sqrt(eps) max(|x_j|, 1) (the step
  /// actually taken after rounding).
  template <typename Flat, typename Shaped>
  static Value newtonStep(ConversionPatternRewriter &rewriter, Location loc,
                          const TypeConverter *tc, Block *body, SolveOp op,
                          Value x, Value r, Value n, FloatType element,
                          Flat flat, Shaped shaped, ValueRange params) {
    Value xf = flat(rewriter, loc, x);
    Value rf = flat(rewriter, loc, r);
    auto flatType = cast<RankedTensorType>(xf.getType());
    int64_t staticN = flatType.getDimSize(0);
    auto matrixType = RankedTensorType::get({staticN, staticN}, element);
    SmallVector<Value> dyn;
    if (ShapedType::isDynamic(staticN))
      dyn = {n, n};
    Value jt = emptyTensor(rewriter, loc, matrixType, dyn);
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    // sqrt of the element type's machine epsilon.
    double eps = std::ldexp(
        1.0, 1 - int(APFloat::semanticsPrecision(element.getFloatSemantics())));
    Value root = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(element, std::sqrt(eps)));
    Value one = arith::ConstantOp::create(rewriter, loc,
                                          rewriter.getFloatAttr(element, 1));
    auto columns = scf::ForOp::create(rewriter, loc, c0, n, c1, ValueRange{jt});
    {
      OpBuilder::InsertionGuard g(rewriter);
      rewriter.setInsertionPointToStart(columns.getBody());
      Value j = columns.getInductionVar();
      Value acc = columns.getRegionIterArgs()[0];
      Value xj = tensor::ExtractOp::create(rewriter, loc, xf, ValueRange{j});
      Value h = arith::MulFOp::create(
          rewriter, loc, root,
          arith::MaximumFOp::create(
              rewriter, loc, math::AbsFOp::create(rewriter, loc, xj), one));
      Value moved = arith::AddFOp::create(rewriter, loc, xj, h);
      Value taken = arith::SubFOp::create(rewriter, loc, moved, xj);
      Value xp =
          tensor::InsertOp::create(rewriter, loc, moved, xf, ValueRange{j});
      SmallVector<Value> args{shaped(rewriter, loc, xp)};
      llvm::append_range(args, params);
      Value fj = flat(rewriter, loc,
                      inlineBody(rewriter, tc, loc, body, args,
                                 TypeRange{cast<RankedTensorType>(x.getType())})
                          .getResult(0));
      SmallVector<AffineMap> maps(3, rewriter.getMultiDimIdentityMap(1));
      Value colInit =
          emptyTensor(rewriter, loc, flatType,
                      flatType.hasStaticShape() ? ValueRange{} : ValueRange{n});
      Value col =
          linalg::GenericOp::create(
              rewriter, loc, flatType, ValueRange{fj, rf}, colInit, maps,
              {utils::IteratorType::parallel},
              [&](OpBuilder &b, Location l, ValueRange a) {
                Value d = arith::SubFOp::create(b, l, a[0], a[1]);
                linalg::YieldOp::create(
                    b, l, arith::DivFOp::create(b, l, d, taken).getResult());
              })
              .getResult(0);
      SmallVector<OpFoldResult> offsets{j, rewriter.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes{rewriter.getIndexAttr(1),
                                      ShapedType::isDynamic(staticN)
                                          ? OpFoldResult(n)
                                          : rewriter.getIndexAttr(staticN)};
      SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
      Value row = tensor::InsertSliceOp::create(rewriter, loc, col, acc,
                                                offsets, sizes, strides);
      scf::YieldOp::create(rewriter, loc, row);
    }
    // J is the transpose of the rows just built.
    Value jInit = emptyTensor(rewriter, loc, matrixType, dyn);
    Value jac = linalg::TransposeOp::create(rewriter, loc, columns.getResult(0),
                                            jInit, ArrayRef<int64_t>{1, 0})
                    .getResult()[0];
    Value negInit =
        emptyTensor(rewriter, loc, flatType,
                    flatType.hasStaticShape() ? ValueRange{} : ValueRange{n});
    SmallVector<AffineMap> maps(2, rewriter.getMultiDimIdentityMap(1));
    Value minusR =
        linalg::GenericOp::create(
            rewriter, loc, flatType, ValueRange{rf}, negInit, maps,
            {utils::IteratorType::parallel},
            [](OpBuilder &b, Location l, ValueRange a) {
              linalg::YieldOp::create(
                  b, l, arith::NegFOp::create(b, l, a[0]).getResult());
            })
            .getResult(0);
    Value dx = solveDense(rewriter, loc, jac, minusR, n);
    SmallVector<AffineMap> addMaps(3, rewriter.getMultiDimIdentityMap(1));
    Value sumInit =
        emptyTensor(rewriter, loc, flatType,
                    flatType.hasStaticShape() ? ValueRange{} : ValueRange{n});
    Value next =
        linalg::GenericOp::create(
            rewriter, loc, flatType, ValueRange{xf, dx}, sumInit, addMaps,
            {utils::IteratorType::parallel},
            [](OpBuilder &b, Location l, ValueRange a) {
              linalg::YieldOp::create(
                  b, l, arith::AddFOp::create(b, l, a[0], a[1]).getResult());
            })
            .getResult(0);
    return shaped(rewriter, loc, next);
  }
};

/// Iterates x <- F(x, params) while the largest change exceeds `tol`, at
/// most `max_iter` times; if it never got within `tol` the call fails with
/// the op's message, the iteration count and the last change.
struct FixedPointLowering : public OpConversionPattern<FixedPointOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(FixedPointOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    const TypeConverter *tc = getTypeConverter();
    Block *body = &op.getBody().front();
    Type xType = tc->convertType(body->getArgument(0).getType());
    Type resultType = tc->convertType(op.getType());
    Type i1 = rewriter.getI1Type(), f64 = rewriter.getF64Type();
    Type index = rewriter.getIndexType();
    SmallVector<Type> carried{xType, index, i1, f64};
    SmallVector<Location> locs(carried.size(), loc);

    Value init = castTo(rewriter, loc, adaptor.getInit(), xType);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value no =
        arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(0));
    Value inf = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getF64FloatAttr(std::numeric_limits<double>::infinity()));
    auto loop = scf::WhileOp::create(rewriter, loc, carried,
                                     ValueRange{init, zero, no, inf});
    {
      OpBuilder::InsertionGuard guard(rewriter);
      Block *before =
          rewriter.createBlock(&loop.getBefore(), {}, carried, locs);
      Value maxIter = arith::ConstantIndexOp::create(
          rewriter, loc, static_cast<int64_t>(op.getMaxIter()));
      Value more =
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                before->getArgument(1), maxIter);
      Value yes =
          arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(1));
      Value open =
          arith::XOrIOp::create(rewriter, loc, before->getArgument(2), yes);
      Value go = arith::AndIOp::create(rewriter, loc, more, open);
      scf::ConditionOp::create(rewriter, loc, go, before->getArguments());

      Block *after = rewriter.createBlock(&loop.getAfter(), {}, carried, locs);
      Value x = after->getArgument(0);
      SmallVector<Value> args{x};
      llvm::append_range(args, adaptor.getParams());
      auto step = inlineBody(rewriter, tc, loc, body, args, xType);
      Value next = step.getResult(0);
      Value change = maxAbsDifference(rewriter, loc, next, x);
      Value tol = arith::ConstantOp::create(rewriter, loc, op.getTolAttr());
      Value done = arith::CmpFOp::create(
          rewriter, loc, arith::CmpFPredicate::OLE, change, tol);
      Value count = arith::AddIOp::create(
          rewriter, loc, after->getArgument(1),
          arith::ConstantIndexOp::create(rewriter, loc, 1));
      scf::YieldOp::create(rewriter, loc,
                           ValueRange{next, count, done, change});
    }
    Value notConverged = arith::XOrIOp::create(
        rewriter, loc, loop.getResult(2),
        arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(1)));
    std::string message;
    llvm::raw_string_ostream(message)
        << describeOp(op) << ": did not converge to tol = "
        << llvm::format("%g", op.getTol().convertToDouble())
        << " within max_iter = " << op.getMaxIter() << " iterations";
    callHook(rewriter, op, notConverged, RuntimeHook::NotConverged, message,
             {loop.getResult(1), loop.getResult(3)});
    rewriter.replaceOp(op,
                       castTo(rewriter, loc, loop.getResult(0), resultType));
    return success();
  }
};

/// Forward evaluation runs the body once; recomputation is autodiff's
/// business.
struct CheckpointLowering : public OpConversionPattern<CheckpointOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CheckpointOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto results = convertAll(getTypeConverter(), op.getResultTypes());
    if (failed(results))
      return failure();
    auto exec = inlineBody(rewriter, getTypeConverter(), op.getLoc(),
                           &op.getBody().front(), adaptor.getArgs(), *results);
    rewriter.replaceOp(op, exec.getResults());
    return success();
  }
};

/// func.call of `callee`, casting arguments to the callee's (converted)
/// parameter types and its results to the op's.
LogicalResult lowerCall(Operation *op, StringRef callee, ValueRange args,
                        const TypeConverter *tc,
                        ConversionPatternRewriter &rewriter) {
  auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      op, StringAttr::get(op->getContext(), callee));
  if (!fn)
    return op->emitOpError()
           << "calls @" << callee << ", which is not a func.func";
  auto params = convertAll(tc, fn.getArgumentTypes());
  auto calleeResults = convertAll(tc, fn.getResultTypes());
  auto results = convertAll(tc, op->getResultTypes());
  if (failed(params) || failed(calleeResults) || failed(results))
    return failure();
  Location loc = op->getLoc();
  auto call = func::CallOp::create(rewriter, loc, callee, *calleeResults,
                                   castAll(rewriter, loc, args, *params));
  rewriter.replaceOp(op, castAll(rewriter, loc, call.getResults(), *results));
  return success();
}

template <typename OpTy>
struct CallLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return lowerCall(op, op.getCallee(), adaptor.getArgs(),
                     this->getTypeConverter(), rewriter);
  }
};

/// With one device in the group (the only case a single process can run),
/// every collective hands the input back: all_reduce, all_gather,
/// reduce_scatter and all_to_all over one device are the identity, and a
/// permute is the identity if the device sends to itself and zeros
/// otherwise.
template <typename OpTy>
struct SingleDeviceCollectiveLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = this->getTypeConverter()->convertType(op.getType());
    Value x = adaptor.getX();
    if constexpr (std::is_same_v<OpTy, PermuteOp>) {
      bool toSelf = llvm::any_of(op.getPairs(), [](Attribute a) {
        auto pair = cast<DenseI64ArrayAttr>(a).asArrayRef();
        return pair[0] == 0 && pair[1] == 0;
      });
      if (!toSelf) {
        auto t = cast<RankedTensorType>(x.getType());
        SmallVector<Value> sizes;
        for (int64_t d = 0; d < t.getRank(); ++d)
          if (t.isDynamicDim(d))
            sizes.push_back(dimOf(rewriter, op.getLoc(), x, d));
        x = filledTensor(
            rewriter, op.getLoc(), t, sizes,
            scalarConstant(rewriter, op.getLoc(), t.getElementType(), 0.0));
      }
    }
    rewriter.replaceOp(op, castTo(rewriter, op.getLoc(), x, type));
    return success();
  }
};

} // namespace

void mlir::tessera::tgraph::lowering::populateControlFlowPatterns(
    LoweringContext &ctx, RewritePatternSet &patterns) {
  MLIRContext *mlir = patterns.getContext();
  patterns.add<YieldLowering, CondLowering, WhileLowering, FixedPointLowering,
               SolveLowering, CheckpointLowering, CallLowering<CallOp>,
               CallLowering<CustomVjpOp>, CallLowering<CustomJvpOp>,
               SingleDeviceCollectiveLowering<AllReduceOp>,
               SingleDeviceCollectiveLowering<AllGatherOp>,
               SingleDeviceCollectiveLowering<ReduceScatterOp>,
               SingleDeviceCollectiveLowering<AllToAllOp>,
               SingleDeviceCollectiveLowering<PermuteOp>>(ctx.types, mlir);
  patterns.add<ScanLowering>(ctx, mlir);
}
