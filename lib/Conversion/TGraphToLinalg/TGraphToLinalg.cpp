//===- TGraphToLinalg.cpp - The -tessera-tgraph-lower-to-linalg pass ------===//
//
// Dialect conversion from tgraph to linalg/tensor/arith/math/cf. This file
// holds the pass, the type converter and the symbol environment; the
// patterns live in one file per op family.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/TGraph/IR/DimValues.h"
#include "tessera/Dialect/TSched/IR/TSched.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TGRAPHLOWERTOLINALG
#include "tessera/Conversion/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera::tgraph;
using namespace mlir::tessera::tgraph::lowering;

//===----------------------------------------------------------------------===//
// Types and symbols
//===----------------------------------------------------------------------===//

TGraphTypeConverter::TGraphTypeConverter() {
  addConversion([](Type t) { return t; });
  addConversion([](RankedTensorType t) -> Type {
    if (isa_and_nonnull<DimsAttr>(t.getEncoding()))
      return RankedTensorType::get(t.getShape(), t.getElementType());
    return t;
  });
  addConversion([](KeyType t) -> Type {
    return RankedTensorType::get({2}, IntegerType::get(t.getContext(), 32));
  });
  addStateConversions(*this);
}

void SymbolEnv::build(func::FuncOp fn) {
  if (fn.isExternal())
    return;
  OpBuilder b = OpBuilder::atBlockBegin(&fn.getBody().front());
  llvm::StringMap<Value> &env = perFunction[fn];
  for (BlockArgument arg : fn.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()))
      continue;
    for (auto [i, d] : llvm::enumerate(getShape(arg.getType()).dims)) {
      auto name = d.getSymbolName();
      if (!name || env.count(*name))
        continue;
      env[*name] = DimOp::create(b, fn.getLoc(), arg, i);
    }
  }
}

FailureOr<Value> SymbolEnv::lookup(Operation *op, StringRef name) const {
  auto fn = op->getParentOfType<func::FuncOp>();
  auto it = fn ? perFunction.find(fn) : perFunction.end();
  if (it != perFunction.end())
    if (Value v = it->second.lookup(name))
      return v;
  return op->emitOpError() << "needs the run-time value of symbol " << name
                           << ", but no argument of the function has a dim "
                              "that is exactly "
                           << name;
}

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>> mlir::tessera::tgraph::lowering::dynamicSizes(
    OpBuilder &b, Operation *op, const shape::TensorShape &shape,
    RankedTensorType type, const SymbolEnv &symbols) {
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (!type.isDynamicDim(i))
      continue;
    FailureOr<Value> v =
        buildDimExpr(b, op->getLoc(), shape.dims[i],
                     [&](StringRef name) { return symbols.lookup(op, name); });
    if (failed(v))
      return failure();
    sizes.push_back(*v);
  }
  return sizes;
}

Value mlir::tessera::tgraph::lowering::emptyTensor(OpBuilder &b, Location loc,
                                                   RankedTensorType type,
                                                   ValueRange dynamicSizes) {
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(),
                                 dynamicSizes);
}

Value mlir::tessera::tgraph::lowering::scalarConstant(OpBuilder &b,
                                                      Location loc, Type type,
                                                      double value) {
  if (auto f = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(f, value));
  return arith::ConstantOp::create(b, loc,
                                   b.getIntegerAttr(type, int64_t(value)));
}

Value mlir::tessera::tgraph::lowering::filledTensor(OpBuilder &b, Location loc,
                                                    RankedTensorType type,
                                                    ValueRange dynamicSizes,
                                                    Value value) {
  Value empty = emptyTensor(b, loc, type, dynamicSizes);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

Value mlir::tessera::tgraph::lowering::dimOf(OpBuilder &b, Location loc,
                                             Value v, int64_t i) {
  return tensor::DimOp::create(b, loc, v, i);
}

Value mlir::tessera::tgraph::lowering::convertScalar(OpBuilder &b, Location loc,
                                                     Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  auto ff = dyn_cast<FloatType>(from), ft = dyn_cast<FloatType>(to);
  if (ff && ft) {
    if (ff.getWidth() < ft.getWidth())
      return arith::ExtFOp::create(b, loc, to, v);
    if (ff.getWidth() > ft.getWidth())
      return arith::TruncFOp::create(b, loc, to, v);
    // Same width, different formats (f16/bf16, the fp8s): through f32,
    // which holds every value of both exactly.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return arith::TruncFOp::create(b, loc, to, wide);
  }
  if (ff)
    return arith::FPToSIOp::create(b, loc, to, v);
  bool fromBool = from.isInteger(1);
  if (ft)
    return fromBool ? Value(arith::UIToFPOp::create(b, loc, to, v))
                    : Value(arith::SIToFPOp::create(b, loc, to, v));
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw < tw)
    return fromBool ? Value(arith::ExtUIOp::create(b, loc, to, v))
                    : Value(arith::ExtSIOp::create(b, loc, to, v));
  return arith::TruncIOp::create(b, loc, to, v);
}

void mlir::tessera::tgraph::lowering::callHook(OpBuilder &b, Operation *op,
                                               Value failed, RuntimeHook hook,
                                               StringRef message,
                                               ValueRange values) {
  MLIRContext *ctx = b.getContext();
  auto check = scf::IfOp::create(b, op->getLoc(), failed, /*withElse=*/false);
  OpBuilder::InsertionGuard outer(b);
  b.setInsertionPoint(check.thenBlock()->getTerminator());
  auto module = op->getParentOfType<ModuleOp>();
  Location loc = op->getLoc();
  StringRef name;
  SmallVector<Type> params{LLVM::LLVMPointerType::get(ctx)};
  switch (hook) {
  case RuntimeHook::ShapeCheckFailed:
    name = "tessera_shape_check_failed";
    params.append({b.getI64Type(), b.getI64Type()});
    break;
  case RuntimeHook::NotConverged:
    name = "tessera_not_converged";
    params.append({b.getI64Type(), b.getF64Type()});
    break;
  case RuntimeHook::Failed:
    name = "tessera_failed";
    break;
  }
  auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (!fn) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto type =
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params);
    fn = LLVM::LLVMFuncOp::create(b, module.getLoc(), name, type);
  }
  // One global per message; names are unique in the module.
  std::string global;
  for (unsigned i = 0;; ++i) {
    global = "__tessera_message_" + std::to_string(i);
    if (!module.lookupSymbol(global))
      break;
  }
  std::string text = message.str();
  text.push_back('\0');
  Value str =
      LLVM::createGlobalString(loc, b, global, text, LLVM::Linkage::Internal);
  SmallVector<Value> args{str};
  // Sizes arrive as index values; the hooks take i64.
  for (Value v : values)
    args.push_back(
        v.getType().isIndex()
            ? arith::IndexCastOp::create(b, loc, b.getI64Type(), v).getResult()
            : v);
  LLVM::CallOp::create(b, loc, fn, args);
}

Value mlir::tessera::tgraph::lowering::convertScalarSaturating(OpBuilder &b,
                                                               Location loc,
                                                               Value v,
                                                               Type to) {
  Type from = v.getType();
  if (from == to || to.isInteger(1))
    return convertScalar(b, loc, v, to);
  auto ff = dyn_cast<FloatType>(from);
  if (auto ft = dyn_cast<FloatType>(to)) {
    // A strictly wider float holds every value of a narrower one.
    if (ff && ff.getWidth() < ft.getWidth())
      return convertScalar(b, loc, v, to);
    // Clamp in the source type (f64 for integers), then round; NaN
    // propagates through minimumf/maximumf.
    FloatType wide = ff ? ff : b.getF64Type();
    Value x = convertScalar(b, loc, v, wide);
    APFloat max = APFloat::getLargest(ft.getFloatSemantics());
    bool lost;
    max.convert(wide.getFloatSemantics(), APFloat::rmTowardZero, &lost);
    APFloat low = max;
    low.changeSign();
    x = arith::MinimumFOp::create(
        b, loc, x,
        arith::ConstantOp::create(b, loc, b.getFloatAttr(wide, max)));
    x = arith::MaximumFOp::create(
        b, loc, x,
        arith::ConstantOp::create(b, loc, b.getFloatAttr(wide, low)));
    return convertScalar(b, loc, x, to);
  }
  unsigned tw = to.getIntOrFloatBitWidth();
  APInt maxInt = APInt::getSignedMaxValue(tw),
        minInt = APInt::getSignedMinValue(tw);
  Value maxV = arith::ConstantOp::create(b, loc, b.getIntegerAttr(to, maxInt));
  Value minV = arith::ConstantOp::create(b, loc, b.getIntegerAttr(to, minInt));
  if (ff) {
    // x >= 2^(w-1) -> max, x < -2^(w-1) -> min, NaN -> 0, else truncate.
    bool lost;
    APFloat two(std::ldexp(1.0, tw - 1));
    two.convert(ff.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    Value hi = arith::ConstantOp::create(b, loc, b.getFloatAttr(ff, two));
    APFloat negTwo = two;
    negTwo.changeSign();
    Value lo = arith::ConstantOp::create(b, loc, b.getFloatAttr(ff, negTwo));
    Value over =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, v, hi);
    Value under =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, v, lo);
    Value nan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, v, v);
    Value zeroF = arith::ConstantOp::create(b, loc, b.getFloatAttr(ff, 0.0));
    Value safe = arith::SelectOp::create(
        b, loc,
        arith::OrIOp::create(b, loc, arith::OrIOp::create(b, loc, over, under),
                             nan),
        zeroF, v);
    Value i = arith::FPToSIOp::create(b, loc, to, safe);
    i = arith::SelectOp::create(b, loc, over, maxV, i);
    return arith::SelectOp::create(b, loc, under, minV, i);
  }
  // Integer to a narrower integer: clamp, then truncate.
  unsigned fw = from.getIntOrFloatBitWidth();
  if (fw <= tw)
    return convertScalar(b, loc, v, to);
  Value wideMax = arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(from, maxInt.sext(fw)));
  Value wideMin = arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(from, minInt.sext(fw)));
  Value x = arith::MinSIOp::create(b, loc, v, wideMax);
  x = arith::MaxSIOp::create(b, loc, x, wideMin);
  return arith::TruncIOp::create(b, loc, to, x);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Reports, once each, the forms this lowering does not handle yet, so the
/// user gets a reason instead of "failed to legalize".
static LogicalResult checkLowerable(ModuleOp module) {
  bool ok = true;
  // Caches: a number or a symbol for the batch, numbers for the rest (the
  // buffers' shape); state flows into functions, not through regions.
  auto checkCache = [&](Operation *op, Type t, StringRef where) {
    auto cache = dyn_cast<KVCacheType>(t);
    if (!cache)
      return;
    std::vector<::tessera::shape::DimExpr> dims = cache.getShape().getDims();
    for (size_t d = 1; d < dims.size(); ++d)
      if (!dims[d].getConstant()) {
        op->emitOpError() << where << " is a kv_cache whose dim " << d << " is "
                          << dims[d].str()
                          << "; on the CPU only the batch (dim 0) may be a "
                             "symbol: heads, max_length and head_dim are "
                             "numbers";
        ok = false;
        return;
      }
    if (!dims[0].getConstant() && !dims[0].getSymbolName()) {
      op->emitOpError() << where << " is a kv_cache whose batch is "
                        << dims[0].str()
                        << "; on the CPU it is a number or a symbol";
      ok = false;
    }
  };
  // i4 tensors would reach memory with two layouts at once (vector loads
  // and stores pack sub-byte elements, scalar ones take a byte each), and
  // give wrong values: -tessera-tgraph-widen-i4 (part of the CPU pipeline)
  // computes them in bytes first.
  auto checkNarrow = [&](Operation *op, Type t, StringRef where) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor || !tensor.getElementType().isInteger(4))
      return;
    op->emitOpError() << where
                      << " is an i4 tensor, which this lowering cannot "
                         "store (sub-byte elements have no single memory "
                         "layout in compiled code); run "
                         "-tessera-tgraph-widen-i4 first";
    ok = false;
  };
  module.walk([&](Operation *op) {
    for (auto [i, t] : llvm::enumerate(op->getResultTypes())) {
      checkCache(op, t, "result " + std::to_string(i));
      checkNarrow(op, t, "result " + std::to_string(i));
    }
    if (auto fn = dyn_cast<func::FuncOp>(op))
      for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes())) {
        checkCache(op, t, "argument " + std::to_string(i));
        checkNarrow(op, t, "argument " + std::to_string(i));
      }
    if (isa<CondOp, WhileOp, ScanOp, FixedPointOp, SolveOp, CheckpointOp>(op) &&
        llvm::any_of(op->getOperandTypes(), llvm::IsaPred<KVCacheType>)) {
      op->emitOpError("takes a kv_cache, but on the CPU caches are state "
                      "that regions cannot carry: call a function that takes "
                      "the cache instead");
      ok = false;
    }
    if (auto fn = dyn_cast<func::FuncOp>(op);
        fn && llvm::any_of(fn.getResultTypes(), llvm::IsaPred<KVCacheType>)) {
      op->emitOpError("returns a kv_cache, but caches are state: pass the "
                      "cache as an argument, which the function updates in "
                      "place");
      ok = false;
    } else if (auto size = op->getAttrOfType<IntegerAttr>("group_size");
               size && size.getInt() != 1 && op->getDialect() &&
               isa<TGraphDialect>(op->getDialect())) {
      op->emitOpError() << "runs over " << size.getInt()
                        << " devices, but a CPU executable runs on one; "
                           "only group_size = 1 can run here";
      ok = false;
    } else if (auto permute = dyn_cast<PermuteOp>(op)) {
      for (Attribute a : permute.getPairs()) {
        auto pair = llvm::cast<DenseI64ArrayAttr>(a).asArrayRef();
        if (pair[0] != 0 || pair[1] != 0) {
          op->emitOpError()
              << "sends from device " << pair[0] << " to device " << pair[1]
              << ", but a CPU executable runs on one device";
          ok = false;
          break;
        }
      }
    }
  });
  return success(ok);
}

namespace {
/// A generic reading `tensor.expand_shape` that only inserts unit dims
/// (keepdims results) at positions it indexes with 0 reads the source
/// directly instead, so the reduction and its consumers stay in one row
/// space for fusion.
/// Whether loop `e` (a dim) of `op` has trip count 1 fixed by an operand
/// other than `except`: some operand indexes a static unit dim with it.
static bool boundToOneElsewhere(linalg::GenericOp op, OpOperand *except,
                                AffineExpr e) {
  if (!isa<AffineDimExpr>(e))
    return false;
  for (OpOperand &other : op->getOpOperands()) {
    if (&other == except)
      continue;
    auto type = dyn_cast<RankedTensorType>(other.get().getType());
    if (!type)
      continue;
    AffineMap m = op.getMatchingIndexingMap(&other);
    for (auto [i, r] : llvm::enumerate(m.getResults()))
      if (r == e && type.getDimSize(i) == 1)
        return true;
  }
  return false;
}

struct FoldUnitExpandIntoConsumer : public OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    for (OpOperand *input : op.getDpsInputOperands()) {
      auto expand = input->get().getDefiningOp<tensor::ExpandShapeOp>();
      if (!expand)
        continue;
      auto outType = expand.getResultType();
      AffineMap map = op.getMatchingIndexingMap(input);
      // Per group: the one dim that carries the source dim; the others
      // must be static 1 and read at index 0.
      SmallVector<AffineExpr> kept;
      bool ok = true;
      // From a 0-d source (no groups) every dim is a unit dim nothing
      // carries: each must be read at 0 or have its loop bound elsewhere
      // (else the loop would lose its trip count).
      if (expand.getReassociationIndices().empty())
        for (int64_t d = 0; d < outType.getRank(); ++d) {
          auto c = dyn_cast<AffineConstantExpr>(map.getResult(d));
          ok &= (c && c.getValue() == 0) ||
                boundToOneElsewhere(op, input, map.getResult(d));
        }
      for (ReassociationIndices group : expand.getReassociationIndices()) {
        int64_t carrier = -1;
        for (int64_t d : group)
          if (outType.getDimSize(d) != 1) {
            ok &= carrier < 0;
            carrier = d;
          }
        if (carrier < 0)
          carrier = group.front();
        for (int64_t d : group) {
          if (d == carrier)
            continue;
          auto c = dyn_cast<AffineConstantExpr>(map.getResult(d));
          ok &= outType.getDimSize(d) == 1 &&
                ((c && c.getValue() == 0) ||
                 boundToOneElsewhere(op, input, map.getResult(d)));
        }
        kept.push_back(map.getResult(carrier));
      }
      if (!ok)
        continue;
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      maps[input->getOperandNumber()] =
          AffineMap::get(map.getNumDims(), 0, kept, op.getContext());
      rewriter.modifyOpInPlace(op, [&] {
        input->set(expand.getSrc());
        op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
      });
      return success();
    }
    return failure();
  }
};

struct TGraphLowerToLinalgPass
    : public mlir::tessera::impl::TGraphLowerToLinalgBase<
          TGraphLowerToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkLowerable(module)))
      return signalPassFailure();
    stampStochasticKeys(module);
    SymbolEnv symbols;
    for (auto fn : module.getOps<func::FuncOp>())
      symbols.build(fn);

    TGraphTypeConverter types;
    LoweringContext ctx{types, symbols};
    RewritePatternSet patterns(&getContext());
    populateElementwisePatterns(ctx, patterns);
    populateContractionPatterns(ctx, patterns);
    populateReductionPatterns(ctx, patterns);
    populateLayoutPatterns(ctx, patterns);
    populateControlFlowPatterns(ctx, patterns);
    populateIndexingPatterns(ctx, patterns);
    populateRandomPatterns(ctx, patterns);
    populateStatePatterns(ctx, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   types);
    populateReturnOpTypeConversionPattern(patterns, types);
    populateCallOpTypeConversionPattern(patterns, types);

    ConversionTarget target(getContext());
    target.addLegalDialect<
        linalg::LinalgDialect, tensor::TensorDialect, memref::MemRefDialect,
        bufferization::BufferizationDialect, arith::ArithDialect,
        math::MathDialect, cf::ControlFlowDialect, scf::SCFDialect,
        LLVM::LLVMDialect>();
    target.addIllegalDialect<TGraphDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp fn) {
      return types.isSignatureLegal(fn.getFunctionType()) &&
             types.isLegal(&fn.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return types.isLegal(op); });
    // Schedules travel with the ops: every op a pattern creates for a
    // scheduled Graph IR op carries that op's location, tagged here and
    // untagged (onto the linalg ops it produced) after the conversion.
    SmallVector<Attribute> schedules;
    StringRef scheduleName =
        mlir::tessera::tsched::TSchedDialect::kScheduleAttrName;
    module.walk([&](Operation *op) {
      if (!isa_and_nonnull<TGraphDialect>(op->getDialect()))
        return;
      Attribute s = op->getAttr(scheduleName);
      if (!s)
        return;
      op->setLoc(NameLoc::get(
          StringAttr::get(&getContext(),
                          "tsched." + std::to_string(schedules.size())),
          op->getLoc()));
      schedules.push_back(s);
    });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    {
      RewritePatternSet cleanup(&getContext());
      cleanup.add<FoldUnitExpandIntoConsumer>(&getContext());
      if (failed(applyPatternsGreedily(module, std::move(cleanup))))
        return signalPassFailure();
    }
    // Callers own their arguments: compiled code never writes into them
    // (one-shot bufferization would otherwise reuse an argument's buffer
    // for a result or a temporary).
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn.isPublic() && !fn.isExternal())
        for (BlockArgument arg : fn.getArguments())
          if (isa<TensorType>(arg.getType()))
            fn.setArgAttr(arg.getArgNumber(), "bufferization.writable",
                          BoolAttr::get(&getContext(), false));
    if (schedules.empty())
      return;
    module.walk([&](Operation *op) {
      auto name = dyn_cast<NameLoc>(op->getLoc());
      if (!name)
        return;
      StringRef text = name.getName().getValue();
      unsigned index;
      if (!text.consume_front("tsched.") || text.getAsInteger(10, index) ||
          index >= schedules.size())
        return;
      op->setLoc(name.getChildLoc());
      if (isa<linalg::LinalgOp>(op) && !isa<linalg::FillOp>(op))
        op->setAttr(scheduleName, schedules[index]);
    });
  }
};
} // namespace
