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

#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

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

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Reports, once each, the forms this lowering does not handle yet, so the
/// user gets a reason instead of "failed to legalize".
static LogicalResult checkLowerable(ModuleOp module) {
  bool ok = true;
  module.walk([&](Operation *op) {
    if (auto cast = dyn_cast<CastOp>(op)) {
      PolicyAttr p = cast.getPolicyAttr();
      if (p && (p.getSaturate() || p.getStochasticRound())) {
        op->emitOpError(
            "saturating and stochastic casts have no CPU lowering yet");
        ok = false;
      }
    } else if (auto pad = dyn_cast<PadOp>(op)) {
      auto negative = [](ArrayRef<int64_t> v) {
        return llvm::any_of(v, [](int64_t x) { return x < 0; });
      };
      if (llvm::any_of(pad.getInterior(), [](int64_t x) { return x != 0; }) ||
          negative(pad.getLow()) || negative(pad.getHigh())) {
        op->emitOpError("interior or negative padding has no CPU lowering yet");
        ok = false;
      }
    } else if (op->getDialect() && isa<TGraphDialect>(op->getDialect()) &&
               op->getNumRegions() > 0) {
      op->emitOpError("structured control flow has no CPU lowering yet");
      ok = false;
    }
  });
  return success(ok);
}

namespace {
struct TGraphLowerToLinalgPass
    : public mlir::tessera::impl::TGraphLowerToLinalgBase<
          TGraphLowerToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkLowerable(module)))
      return signalPassFailure();
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
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   types);
    populateReturnOpTypeConversionPattern(patterns, types);
    populateCallOpTypeConversionPattern(patterns, types);

    ConversionTarget target(getContext());
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           cf::ControlFlowDialect, scf::SCFDialect,
                           LLVM::LLVMDialect>();
    target.addIllegalDialect<TGraphDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp fn) {
      return types.isSignatureLegal(fn.getFunctionType()) &&
             types.isLegal(&fn.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return types.isLegal(op); });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
