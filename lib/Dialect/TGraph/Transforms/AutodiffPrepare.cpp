//===- AutodiffPrepare.cpp - The form autodiff differentiates -------------===//
//
// Before its walks, autodiff rewrites a copy of the function: calls
// inlined (the callee's shape symbols bound), conv2d as im2col, while loops
// with a trip count as scans that store their carries, and the custom
// rules of the other mode replaced by their callees.
//
//===----------------------------------------------------------------------===//

#include "AutodiffPrepare.h"

#include "tessera/Dialect/TGraph/IR/Autodiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#include <set>

using namespace mlir;
using namespace mlir::tessera::tgraph;

/// A while with trip_count N runs as a scan of length N whose body steps
/// the carries only while the condition holds (so reverse mode keeps
/// each step's carries instead of recomputing them), followed by the
/// original loop from where the scan stopped: it runs no iteration when
/// N was enough, and keeps results and derivatives exact when not.
static void storeCarries(WhileOp loop) {
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  Block &cond = loop.getCondRegion().front();
  Block &body = loop.getBodyRegion().front();
  SmallVector<Type> types(loop.getResultTypes());
  auto scan = ScanOp::create(b, loc, types, loop.getInits(), ValueRange{},
                             b.getI64IntegerAttr(*loop.getTripCount()), false);
  Block *step = new Block();
  scan.getBody().push_back(step);
  for (Type t : types)
    step->addArgument(t, loc);
  OpBuilder sb = OpBuilder::atBlockEnd(step);
  IRMapping cmap;
  cmap.map(cond.getArguments(), step->getArguments());
  for (Operation &o : cond.without_terminator())
    sb.clone(o, cmap);
  Value go = cmap.lookupOrDefault(cond.getTerminator()->getOperand(0));
  auto guard = CondOp::create(sb, loc, types, go);
  {
    Block *then = new Block();
    guard.getThenRegion().push_back(then);
    OpBuilder tb = OpBuilder::atBlockEnd(then);
    IRMapping bmap;
    bmap.map(body.getArguments(), step->getArguments());
    for (Operation &o : body.without_terminator())
      tb.clone(o, bmap);
    SmallVector<Value> next = llvm::to_vector(
        llvm::map_range(body.getTerminator()->getOperands(),
                        [&](Value v) { return bmap.lookupOrDefault(v); }));
    YieldOp::create(tb, loc, next);
    Block *otherwise = new Block();
    guard.getElseRegion().push_back(otherwise);
    OpBuilder eb = OpBuilder::atBlockEnd(otherwise);
    YieldOp::create(eb, loc, step->getArguments());
  }
  YieldOp::create(sb, loc, guard.getResults());
  auto rest = WhileOp::create(b, loc, types, scan.getResults(), IntegerAttr());
  IRMapping none;
  loop.getCondRegion().cloneInto(&rest.getCondRegion(), none);
  loop.getBodyRegion().cloneInto(&rest.getBodyRegion(), none);
  loop->replaceAllUsesWith(rest.getResults());
  loop.erase();
}

/// conv2d is differentiated through im2col: the padded input's KH x KW
/// strided slices, stacked into patches [N, C*KH*KW, OH, OW], contracted
/// with the filter as a [O, C*KH*KW] matrix (dot_general), all ops with
/// rules. With g groups the patches are [N, g, C/g*KH*KW, OH, OW] and the
/// filter [g, O/g, C/g*KH*KW], contracted with the group as a batch dim
/// (output channel o belongs to group o / (O/g), as in PyTorch). Static
/// spatial sizes and channels.
static LogicalResult expandConv2d(Conv2dOp conv) {
  auto fail = [&](const Twine &why) {
    return conv.emitOpError("has no differentiation rule here: ") << why;
  };
  OpBuilder b(conv);
  ADBuilder ad(b, conv.getLoc());
  MLIRContext *ctx = conv.getContext();
  bool nhwc = conv.getLayout() == ConvLayout::nhwc;
  Value x = conv.getInput(), w = conv.getFilter();
  if (nhwc) {
    x = ad.transpose(x, {0, 3, 1, 2}); // NHWC -> NCHW
    w = ad.transpose(w, {3, 2, 0, 1}); // HWIO -> OIHW
  }
  auto xt = ADBuilder::typeOf(x), wt = ADBuilder::typeOf(w);
  if (!wt.hasStaticShape() || xt.isDynamicDim(1) || xt.isDynamicDim(2) ||
      xt.isDynamicDim(3))
    return fail("dims other than the batch must be numbers");
  int64_t c = xt.getDimSize(1), h = xt.getDimSize(2), wd = xt.getDimSize(3);
  int64_t o = wt.getDimSize(0), kh = wt.getDimSize(2), kw = wt.getDimSize(3);
  ArrayRef<int64_t> st = conv.getStrides(), pad = conv.getPadding(),
                    dil = conv.getDilation();
  int64_t oh = (h + pad[0] + pad[1] - dil[0] * (kh - 1) - 1) / st[0] + 1;
  int64_t ow = (wd + pad[2] + pad[3] - dil[1] * (kw - 1) - 1) / st[1] + 1;
  Type e = ADBuilder::elementOf(x);
  if (llvm::any_of(pad, [](int64_t p) { return p != 0; }))
    x = PadOp::create(b, conv.getLoc(), x,
                      b.getDenseI64ArrayAttr({0, 0, pad[0], pad[2]}),
                      b.getDenseI64ArrayAttr({0, 0, pad[1], pad[3]}),
                      b.getDenseI64ArrayAttr({0, 0, 0, 0}),
                      cast<TypedAttr>(FloatAttr::get(e, 0.0)));
  shape::DimExpr n = getShape(x.getType()).dims[0];
  auto dims = [&](ArrayRef<shape::DimExpr> d) { return DimsAttr::get(ctx, d); };
  auto k = [](int64_t v) { return shape::DimExpr::constant(v); };
  SmallVector<Value> slices;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      Value s = SliceOp::create(
          b, conv.getLoc(), x, dims({k(0), k(0), k(i * dil[0]), k(j * dil[1])}),
          dims({n, k(c), k(i * dil[0] + (oh - 1) * st[0] + 1),
                k(j * dil[1] + (ow - 1) * st[1] + 1)}),
          b.getDenseI64ArrayAttr({1, 1, st[0], st[1]}));
      slices.push_back(ad.reshape(
          s,
          getTensorType(shape::TensorShape({n, k(c), k(1), k(oh), k(ow)}), e)));
    }
  Value patches = slices.size() == 1
                      ? slices[0]
                      : Value(ConcatOp::create(b, conv.getLoc(), slices, 2));
  patches = ad.reshape(
      patches,
      getTensorType(shape::TensorShape({n, k(c * kh * kw), k(oh), k(ow)}), e));
  int64_t g = conv.getGroups(), cg = c / g, kg = cg * kh * kw;
  Value y;
  if (g == 1) {
    Value w2 =
        ad.reshape(w, getTensorType(shape::TensorShape({k(o), k(kg)}), e));
    y = ad.inferred<DotGeneralOp>(
        w2.getType(), w2, patches, b.getDenseI64ArrayAttr({}),
        b.getDenseI64ArrayAttr({}), b.getDenseI64ArrayAttr({1}),
        b.getDenseI64ArrayAttr({1}), conv.getPolicyAttr());
  } else {
    // Channels are group-major in both the patches (c = group * C/g + i,
    // then the KH x KW offsets) and the filter's outputs.
    patches = ad.reshape(
        patches,
        getTensorType(shape::TensorShape({n, k(g), k(kg), k(oh), k(ow)}), e));
    Value w3 = ad.reshape(
        w, getTensorType(shape::TensorShape({k(g), k(o / g), k(kg)}), e));
    // [g, O/g, N, OH, OW] -> [O, N, OH, OW]
    y = ad.inferred<DotGeneralOp>(
        w3.getType(), w3, patches, b.getDenseI64ArrayAttr({0}),
        b.getDenseI64ArrayAttr({1}), b.getDenseI64ArrayAttr({2}),
        b.getDenseI64ArrayAttr({2}), conv.getPolicyAttr());
    y = ad.reshape(
        y, getTensorType(shape::TensorShape({k(o), n, k(oh), k(ow)}), e));
  }
  // [O, N, OH, OW] -> NCHW (or NHWC).
  y = ad.transpose(y, nhwc ? SmallVector<int64_t>{1, 2, 3, 0}
                           : SmallVector<int64_t>{1, 0, 2, 3});
  y = ad.reshape(y, conv.getType());
  conv.getResult().replaceAllUsesWith(y);
  conv.erase();
  return success();
}

static LogicalResult inlineCall(CallOp call) {
  auto module = call->getParentOfType<ModuleOp>();
  auto callee = module.lookupSymbol<func::FuncOp>(call.getCalleeAttr());
  if (!callee || callee.isExternal() ||
      callee.getBody().getBlocks().size() != 1)
    return call.emitOpError("can be differentiated only by inlining a "
                            "callee with a body of one block");
  TypeInference ti(call.getContext(), call.getLoc(),
                   call->getName().getStringRef());
  std::vector<shape::TensorShape> params, actual;
  for (auto [p, a] :
       llvm::zip(callee.getArgumentTypes(), call.getArgs().getTypes())) {
    bool tensors = isa<RankedTensorType>(p) && isa<RankedTensorType>(a);
    params.push_back(tensors ? getShape(p) : shape::TensorShape());
    actual.push_back(tensors ? getShape(a) : shape::TensorShape());
  }
  llvm::StringMap<shape::DimExpr> bindings;
  if (!shape::bindSymbols(ti.diag(), params, actual, bindings))
    return call.emitOpError("cannot bind the callee's shape symbols: ")
           << ti.message();
  auto retype = [&](Type t) -> Type {
    auto rt = dyn_cast<RankedTensorType>(t);
    if (!rt)
      return t;
    shape::TensorShape declared = getShape(rt);
    shape::TensorShape out = shape::substitute(declared, bindings);
    for (size_t d = 0; d < out.rank(); ++d) {
      std::set<std::string> symbols;
      declared.dims[d].collectSymbols(symbols);
      if (llvm::any_of(symbols, [&](const std::string &n) {
            return !bindings.count(n);
          }))
        out.dims[d] = shape::DimExpr::unknown();
    }
    return getTensorType(out, rt.getElementType());
  };
  IRMapping map;
  for (auto [p, a] : llvm::zip(callee.getArguments(), call.getArgs()))
    map.map(p, a);
  OpBuilder b(call);
  for (Operation &op : callee.front().without_terminator()) {
    Operation *clone = b.clone(op, map);
    clone->walk([&](Operation *nested) {
      for (Value r : nested->getResults())
        r.setType(retype(r.getType()));
      for (Region &region : nested->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            arg.setType(retype(arg.getType()));
      for (NamedAttribute attr : nested->getAttrs())
        if (auto dims = dyn_cast<DimsAttr>(attr.getValue())) {
          std::vector<shape::DimExpr> exprs;
          for (const shape::DimExpr &e : dims.getDims())
            exprs.push_back(e.substitute(bindings));
          nested->setAttr(attr.getName(),
                          DimsAttr::get(nested->getContext(), exprs));
        }
    });
  }
  for (auto [r, v] : llvm::zip(call.getResults(),
                               callee.front().getTerminator()->getOperands()))
    r.replaceAllUsesWith(map.lookupOrDefault(v));
  call.erase();
  return success();
}

/// Brings `fn` into the form the walks differentiate: calls inlined,
/// conv2d as im2col and dot_general; for
/// forward mode, custom_vjp evaluates its callee (differentiated as
/// usual) and checkpoints are inlined; for reverse mode, custom_jvp
/// evaluates its callee.
LogicalResult mlir::tessera::tgraph::prepareForAutodiff(func::FuncOp fn,
                                                        bool forwardMode) {
  for (int round = 0;; ++round) {
    bool changed = false;
    SmallVector<Operation *> ops;
    fn.walk([&](Operation *op) {
      if ((forwardMode && isa<CustomVjpOp, CheckpointOp>(op)) ||
          (!forwardMode && isa<CustomJvpOp>(op)))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      changed = true;
      OpBuilder b(op);
      if (auto cp = dyn_cast<CheckpointOp>(op)) {
        IRMapping map;
        Block &body = cp.getBody().front();
        map.map(body.getArguments(), cp.getArgs());
        for (Operation &o : body.without_terminator())
          b.clone(o, map);
        for (auto [r, v] :
             llvm::zip(cp.getResults(), body.getTerminator()->getOperands()))
          r.replaceAllUsesWith(map.lookupOrDefault(v));
        cp.erase();
        continue;
      }
      auto callee = op->getAttrOfType<FlatSymbolRefAttr>("callee");
      auto call = CallOp::create(b, op->getLoc(), op->getResultTypes(), callee,
                                 op->getOperands(), ArrayAttr(), ArrayAttr());
      op->replaceAllUsesWith(call.getResults());
      op->erase();
    }
    SmallVector<CallOp> calls;
    fn.walk([&](CallOp c) { calls.push_back(c); });
    changed |= !calls.empty();
    if (!changed) {
      // while with a trip count: its carries are stored (a scan).
      SmallVector<WhileOp> loops;
      fn.walk([&](WhileOp w) {
        if (w.getTripCount())
          loops.push_back(w);
      });
      for (WhileOp w : loops)
        storeCarries(w);
      // conv2d through im2col (after inlining: callees have them too).
      SmallVector<Conv2dOp> convs;
      fn.walk([&](Conv2dOp c) { convs.push_back(c); });
      for (Conv2dOp c : convs)
        if (failed(expandConv2d(c)))
          return failure();
      return success();
    }
    if (round == 64)
      return fn.emitOpError("calls nest more than 64 deep (recursion?); "
                            "autodiff inlines calls");
    for (CallOp call : calls)
      if (failed(inlineCall(call)))
        return failure();
  }
}
