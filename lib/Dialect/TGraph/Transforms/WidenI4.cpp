//===- WidenI4.cpp - i4 tensors computed in bytes
//--------------------------===//
//
// Back ends whose memory has no sub-byte elements compute i4 tensors as i8
// ones holding the i4 value (sign-extended, in [-8, 7]). Integer addition,
// subtraction and multiplication wrap modulo 256 in i8 and modulo 16 in i4,
// so an op computed on in-range i8 values and wrapped back to 4 bits
// afterwards gives exactly the i4 result; ops that cannot leave the range
// (max, select, layout ops, ...) need nothing, and casts to i4 saturate as
// every narrowing integer cast does. At the boundary of a public function
// an i4 element is one byte with the value in its low 4 bits (how
// ml_dtypes.int4 arrays store it): arguments are sign-extended from their
// low nibble on entry (the high bits are ignored), results leave with the
// high bits zero.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::tessera::tgraph {
#define GEN_PASS_DEF_TGRAPHWIDENI4
#include "tessera/Dialect/TGraph/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tgraph

using namespace mlir;
using namespace mlir::tessera::tgraph;

namespace {

bool isI4(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && tensor.getElementType().isInteger(4);
}

Type widen(Type t) {
  if (!isI4(t))
    return t;
  auto tensor = cast<RankedTensorType>(t);
  return tensor.clone(IntegerType::get(t.getContext(), 8));
}

/// Ops whose i4 results are always in range when their operands are.
bool keepsRange(Operation *op) {
  return isa<MaxOp, MinOp, ReluOp, SignOp, SelectOp, TransposeOp, ReshapeOp,
             BroadcastInDimOp, SliceOp, DynamicSliceOp, ConcatOp, PadOp,
             GatherOp, EmbeddingOp, OneHotOp, ZerosLikeOp, OnesLikeOp,
             StopGradientOp, ConstantOp, FullOp, ReduceMaxOp, ReduceMinOp,
             CondOp, WhileOp, ScanOp, CallOp, CheckpointOp, YieldOp>(op);
}

class Widener {
public:
  explicit Widener(MLIRContext *ctx) : b(ctx) {}

  /// A 0-d i8 constant.
  Value constant(int8_t v, Location loc) {
    auto type = RankedTensorType::get({}, b.getI8Type());
    return ConstantOp::create(
        b, loc, type, DenseElementsAttr::get(type, b.getI8IntegerAttr(v)));
  }
  Value binary(StringRef kind, Value l, Value r, Location loc) {
    Type t = l.getType();
    if (kind == "add")
      return AddOp::create(b, loc, t, l, r);
    if (kind == "sub")
      return SubOp::create(b, loc, t, l, r);
    if (kind == "mul")
      return MulOp::create(b, loc, t, l, r);
    if (kind == "div")
      return DivOp::create(b, loc, t, l, r);
    if (kind == "max")
      return MaxOp::create(b, loc, t, l, r);
    return MinOp::create(b, loc, t, l, r);
  }
  Value compare(CompareDirection d, Value l, Value r, Location loc) {
    auto t = cast<RankedTensorType>(l.getType()).clone(b.getI1Type());
    return CompareOp::create(b, loc, t, d, l, r);
  }
  /// The i4 value of the low 4 bits of `x` (an i8 tensor), in [-8, 7].
  Value wrap(Value x, Location loc) {
    Value c16 = constant(16, loc), c7 = constant(7, loc),
          cm8 = constant(-8, loc);
    // x - 16 * trunc(x / 16) is x mod 16 with x's sign, in [-15, 15].
    Value r = binary("sub", x,
                     binary("mul", binary("div", x, c16, loc), c16, loc), loc);
    r = SelectOp::create(b, loc, r.getType(),
                         compare(CompareDirection::gt, r, c7, loc),
                         binary("sub", r, c16, loc), r);
    return SelectOp::create(b, loc, r.getType(),
                            compare(CompareDirection::lt, r, cm8, loc),
                            binary("add", r, c16, loc), r);
  }
  /// A cast result saturated to [-8, 7].
  Value clamp(Value x, Location loc) {
    return binary("max", binary("min", x, constant(7, loc), loc),
                  constant(-8, loc), loc);
  }
  /// The boundary form: the value in the low 4 bits, the high bits zero.
  Value toNibble(Value x, Location loc) {
    Value zero = constant(0, loc);
    return SelectOp::create(b, loc, x.getType(),
                            compare(CompareDirection::lt, x, zero, loc),
                            binary("add", x, constant(16, loc), loc), x);
  }

  LogicalResult run(func::FuncOp fn);

private:
  /// Replaces the uses `v` has now by `make(v)` (built at the insertion
  /// point; its own uses of `v` stay).
  template <typename Make> void replaceUses(Value v, Make make) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : v.getUses())
      uses.push_back(&use);
    Value fixed = make(v);
    for (OpOperand *use : uses)
      use->set(fixed);
  }
  LogicalResult widenOp(Operation *op);
  OpBuilder b;
};

/// An i4 attribute (constant, fill and pad values) as i8.
Attribute widenAttr(Attribute a) {
  auto i8 = IntegerType::get(a.getContext(), 8);
  if (auto dense = dyn_cast<DenseIntElementsAttr>(a)) {
    if (!dense.getElementType().isInteger(4))
      return a;
    SmallVector<APInt> values;
    for (APInt v : dense.getValues<APInt>())
      values.push_back(v.sext(8));
    return DenseElementsAttr::get(dense.getType().clone(i8), values);
  }
  if (auto attr = dyn_cast<IntegerAttr>(a))
    if (attr.getType().isInteger(4))
      return IntegerAttr::get(i8, attr.getValue().sext(8));
  return a;
}

LogicalResult Widener::widenOp(Operation *op) {
  for (Type t : op->getResultTypes())
    if (auto cache = dyn_cast<KVCacheType>(t);
        cache && cache.getElementType().isInteger(4))
      return op->emitOpError() << "makes a KV cache of i4, which no back end "
                                  "stores; use i8";
  for (NamedAttribute a : op->getAttrs())
    if (Attribute w = widenAttr(a.getValue()); w != a.getValue())
      op->setAttr(a.getName(), w);
  for (Region &r : op->getRegions())
    for (Block &block : r)
      for (BlockArgument arg : block.getArguments())
        arg.setType(widen(arg.getType()));
  SmallVector<unsigned> adjust;
  for (OpResult r : op->getResults())
    if (isI4(r.getType())) {
      r.setType(widen(r.getType()));
      adjust.push_back(r.getResultNumber());
    }
  if (adjust.empty() || keepsRange(op))
    return success();
  b.setInsertionPointAfter(op);
  for (unsigned i : adjust)
    replaceUses(op->getResult(i), [&](Value r) {
      return isa<CastOp>(op) ? clamp(r, op->getLoc()) : wrap(r, op->getLoc());
    });
  return success();
}

LogicalResult Widener::run(func::FuncOp fn) {
  FunctionType type = fn.getFunctionType();
  if (!llvm::any_of(type.getInputs(), isI4) &&
      !llvm::any_of(type.getResults(), isI4)) {
    bool any = false;
    fn.walk([&](Operation *op) {
      any |= llvm::any_of(op->getResultTypes(), isI4);
    });
    if (!any)
      return success();
  }
  SmallVector<Operation *> ops;
  fn.getBody().walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops)
    if (failed(widenOp(op)))
      return failure();
  if (fn.isExternal())
    return success();
  Block &entry = fn.getBody().front();
  bool boundary = fn.isPublic();
  b.setInsertionPointToStart(&entry);
  for (BlockArgument arg : entry.getArguments()) {
    if (!isI4(arg.getType()))
      continue;
    arg.setType(widen(arg.getType()));
    if (boundary)
      replaceUses(arg, [&](Value v) { return wrap(v, fn.getLoc()); });
  }
  if (boundary)
    fn.walk([&](func::ReturnOp ret) {
      b.setInsertionPoint(ret);
      for (OpOperand &o : ret->getOpOperands())
        if (isI4(type.getResult(o.getOperandNumber())))
          o.set(toNibble(o.get(), ret.getLoc()));
    });
  SmallVector<Type> inputs, results;
  for (Type t : type.getInputs())
    inputs.push_back(widen(t));
  for (Type t : type.getResults())
    results.push_back(widen(t));
  fn.setFunctionType(b.getFunctionType(inputs, results));
  return success();
}

struct TGraphWidenI4Pass
    : public mlir::tessera::tgraph::impl::TGraphWidenI4Base<TGraphWidenI4Pass> {
  void runOnOperation() override {
    Widener w(&getContext());
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (failed(w.run(fn)))
        return signalPassFailure();
  }
};

} // namespace
