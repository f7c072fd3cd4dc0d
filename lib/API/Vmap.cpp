//===- Vmap.cpp - A traced function mapped over a batch dim ---------------===//
//
// vmap copies the ops of the mapped function into the trace, rewriting each
// op whose operands carry the batch (batching rules): the batch is always
// the leading dim, elementwise operands are aligned so that NumPy
// broadcasting keeps per-element semantics, axis attributes shift by one,
// contractions become batched contractions, and calls are batched through
// their callee. Values that do not depend on a mapped argument are computed
// once. A function with an op that has no rule (control flow reading the
// batch, random numbers from mapped keys, collectives, ...) runs as a
// tgraph.scan over the batch instead: slower, same values.
//
//===----------------------------------------------------------------------===//

#include "ModuleState.h"

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/IR/TypeInference.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

using namespace mlir;
namespace tg = mlir::tessera::tgraph;
namespace shape = ::tessera::shape;

namespace tessera::detail {

namespace {

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

/// Rewrites ops of per-element functions into ops on the whole batch, at
/// the trace's insertion point.
class Batcher {
public:
  Batcher(ModuleState &state, shape::DimExpr batch)
      : state(state), b(state.builder()), batch(std::move(batch)) {}

  /// Copies `fn`'s body with its arguments bound to `args` (those flagged
  /// in `isBatched` carry the batch); false when an op has no rule.
  bool inlineBody(func::FuncOp fn, ArrayRef<Value> args,
                  ArrayRef<bool> isBatched, SmallVectorImpl<Value> &results);
  /// `v` with the batch as a new leading dim (the same value for every
  /// element).
  Value broadcast(Value v, Location loc);

private:
  struct Scope {
    IRMapping map;
    DenseSet<Value> batched; // new values that carry the batch
  };
  bool batchOp(Operation *op, Scope &s);
  bool usesBatch(Operation *op, Scope &s);
  bool isBatched(Scope &s, Value orig) {
    return s.batched.contains(s.map.lookupOrDefault(orig));
  }
  Type batchedType(Type t) {
    auto ranked = cast<RankedTensorType>(t);
    shape::TensorShape sh = tg::getShape(ranked);
    sh.dims.insert(sh.dims.begin(), batch);
    return tg::getTensorType(sh, ranked.getElementType());
  }
  /// Clones `op` with `operands`, sets `attrs` and infers the result types;
  /// results listed in `batchedResults` carry the batch.
  Operation *rebuild(Operation *op, ArrayRef<Value> operands, Scope &s,
                     ArrayRef<NamedAttribute> attrs = {},
                     bool resultsBatched = true);
  /// A batched `v` reshaped to `rank` per-element dims by unit dims after
  /// the batch (so NumPy broadcasting aligns it like the element).
  Value expand(Value v, int64_t rank, Location loc);
  Value transpose(Value v, ArrayRef<int64_t> perm, Location loc);
  bool broadcastingRule(Operation *op, Scope &s, int64_t minRank);
  bool dotGeneralRule(tg::DotGeneralOp op, Scope &s);
  bool callRule(tg::CallOp op, Scope &s);
  bool condRule(tg::CondOp op, Scope &s);
  bool crossEntropyRule(tg::CrossEntropyOp op, Scope &s);
  bool conv2dRule(tg::Conv2dOp op, Scope &s);
  bool scanRule(tg::ScanOp op, Scope &s);
  bool whileRule(tg::WhileOp op, Scope &s);
  /// Batches the ops of `from` (a region's block) at the insertion point,
  /// its arguments bound to `args` (batched ones flagged), and returns what
  /// its terminator yields.
  bool batchBlock(Block &from, ArrayRef<Value> args, ArrayRef<bool> batchedArgs,
                  Scope &s, SmallVectorImpl<Value> &yielded);
  bool gatherRule(tg::GatherOp op, Scope &s);
  /// Records `to` as the batched value of `from`.
  void bind(Value from, Value to, Scope &s) {
    s.map.map(from, to);
    s.batched.insert(to);
  }
  Value reshape(Value v, const shape::TensorShape &to, Location loc) {
    Type t = tg::getTensorType(
        to, cast<RankedTensorType>(v.getType()).getElementType());
    auto op = tg::ReshapeOp::create(b, loc, t, v);
    if (!state.finish(op, {t}))
      return {};
    return op.getResult();
  }

public:
  /// The innermost op that had no rule ("'tgraph.while' op at f.py:3:7").
  std::string missing;

private:
  ModuleState &state;
  OpBuilder &b;
  shape::DimExpr batch;
};

} // namespace

bool Batcher::usesBatch(Operation *op, Scope &s) {
  for (Value v : op->getOperands())
    if (isBatched(s, v))
      return true;
  bool found = false;
  for (Region &r : op->getRegions())
    r.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (!op->isAncestor(v.getParentRegion()->getParentOp()) &&
            isBatched(s, v))
          found = true;
    });
  return found;
}

Operation *Batcher::rebuild(Operation *op, ArrayRef<Value> operands, Scope &s,
                            ArrayRef<NamedAttribute> attrs,
                            bool resultsBatched) {
  IRMapping local;
  for (auto [from, to] : llvm::zip(op->getOperands(), operands))
    local.map(from, to);
  Operation *c = b.clone(*op, local);
  for (const NamedAttribute &a : attrs)
    c->setAttr(a.getName(), a.getValue());
  // Ops that state their result types (reshape, cast, contractions) read
  // them; the others infer them from operands and attributes.
  SmallVector<Type> declared;
  if (!isa<InferTypeOpInterface>(c) && resultsBatched)
    for (Type t : op->getResultTypes())
      declared.push_back(batchedType(t));
  if (!state.finish(c, declared))
    return nullptr;
  for (auto [from, to] : llvm::zip(op->getResults(), c->getResults())) {
    s.map.map(from, to);
    if (resultsBatched)
      s.batched.insert(to);
  }
  return c;
}

Value Batcher::expand(Value v, int64_t rank, Location loc) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t have = type.getRank() - 1;
  if (have >= rank)
    return v;
  shape::TensorShape sh = tg::getShape(type);
  sh.dims.insert(sh.dims.begin() + 1, size_t(rank - have),
                 shape::DimExpr::constant(1));
  Type to = tg::getTensorType(sh, type.getElementType());
  auto op = tg::ReshapeOp::create(b, loc, to, v);
  if (!state.finish(op, {to}))
    return {};
  return op.getResult();
}

Value Batcher::broadcast(Value v, Location loc) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < type.getRank(); ++i)
    dims.push_back(i + 1);
  Type to = batchedType(type);
  auto op =
      tg::BroadcastInDimOp::create(b, loc, to, v, b.getDenseI64ArrayAttr(dims));
  if (!state.finish(op, {to}))
    return {};
  return op.getResult();
}

Value Batcher::transpose(Value v, ArrayRef<int64_t> perm, Location loc) {
  auto op = tg::TransposeOp::create(b, loc, v, b.getDenseI64ArrayAttr(perm));
  if (!state.finish(op))
    return {};
  return op.getResult();
}

/// Elementwise ops and matmul broadcast NumPy-style from the right: a
/// batched operand with fewer per-element dims than the others gets unit
/// dims after the batch; unbatched operands broadcast over it as they are.
bool Batcher::broadcastingRule(Operation *op, Scope &s, int64_t minRank) {
  int64_t rank = minRank;
  for (Value v : op->getOperands())
    rank = std::max(rank, rankOf(v));
  SmallVector<Value> operands;
  for (Value v : op->getOperands()) {
    Value nv = s.map.lookupOrDefault(v);
    if (isBatched(s, v) && !(nv = expand(nv, rank, op->getLoc())))
      return false;
    operands.push_back(nv);
  }
  return rebuild(op, operands, s);
}

/// dot_general: a batch on both sides becomes a new leading batching dim;
/// a batch on one side is a free dim of that side, moved to the front.
bool Batcher::dotGeneralRule(tg::DotGeneralOp op, Scope &s) {
  bool lb = isBatched(s, op.getLhs()), rb = isBatched(s, op.getRhs());
  auto shift = [](ArrayRef<int64_t> dims, bool on) {
    SmallVector<int64_t> out;
    for (int64_t d : dims)
      out.push_back(d + (on ? 1 : 0));
    return out;
  };
  SmallVector<int64_t> lbd = shift(op.getLhsBatchingDims(), lb),
                       rbd = shift(op.getRhsBatchingDims(), rb),
                       lcd = shift(op.getLhsContractingDims(), lb),
                       rcd = shift(op.getRhsContractingDims(), rb);
  if (lb && rb) {
    lbd.insert(lbd.begin(), 0);
    rbd.insert(rbd.begin(), 0);
  }
  // Where the batch lands in the result: batching dims, then the free dims
  // of lhs (the batch first among them), then those of rhs.
  int64_t nb = int64_t(op.getLhsBatchingDims().size());
  int64_t lhsFree =
      rankOf(op.getLhs()) - nb - int64_t(op.getLhsContractingDims().size());
  int64_t at = lb && rb ? 0 : lb ? nb : nb + lhsFree;
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("lhs_batching_dims", b.getDenseI64ArrayAttr(lbd)),
      b.getNamedAttr("rhs_batching_dims", b.getDenseI64ArrayAttr(rbd)),
      b.getNamedAttr("lhs_contracting_dims", b.getDenseI64ArrayAttr(lcd)),
      b.getNamedAttr("rhs_contracting_dims", b.getDenseI64ArrayAttr(rcd))};
  // The declared result type has the batch at `at`.
  IRMapping local;
  local.map(op.getLhs(), s.map.lookupOrDefault(op.getLhs()));
  local.map(op.getRhs(), s.map.lookupOrDefault(op.getRhs()));
  Operation *c = b.clone(*op, local);
  for (const NamedAttribute &a : attrs)
    c->setAttr(a.getName(), a.getValue());
  auto rt = cast<RankedTensorType>(op.getType());
  shape::TensorShape sh = tg::getShape(rt);
  sh.dims.insert(sh.dims.begin() + at, batch);
  Type declared = tg::getTensorType(sh, rt.getElementType());
  if (!state.finish(c, {declared}))
    return false;
  Value result = c->getResult(0);
  if (at != 0) {
    SmallVector<int64_t> perm = {at};
    for (int64_t i = 0; i < int64_t(sh.rank()); ++i)
      if (i != at)
        perm.push_back(i);
    if (!(result = transpose(result, perm, op.getLoc())))
      return false;
  }
  s.map.map(op.getResult(), result);
  s.batched.insert(result);
  return true;
}

bool Batcher::callRule(tg::CallOp op, Scope &s) {
  auto callee = state.getModule().lookupSymbol<func::FuncOp>(op.getCallee());
  if (!callee)
    return false;
  SmallVector<Value> args;
  SmallVector<bool> flags;
  for (Value v : op.getOperands()) {
    args.push_back(s.map.lookupOrDefault(v));
    flags.push_back(isBatched(s, v));
  }
  SmallVector<Value> results;
  if (!inlineBody(callee, args, flags, results))
    return false;
  for (auto [from, to] : llvm::zip(op->getResults(), results)) {
    s.map.map(from, to);
    s.batched.insert(to);
  }
  return true;
}

/// A branch on a value shared by every element: the branches are batched.
bool Batcher::condRule(tg::CondOp op, Scope &s) {
  if (isBatched(s, op.getPred())) {
    // A branch per element: both branches run on the whole batch (the ops
    // are pure) and each element takes its own.
    for (Type t : op.getResultTypes())
      if (!isa<RankedTensorType>(t))
        return false;
    SmallVector<Value> thenValues, elseValues;
    if (!batchBlock(op.getThenRegion().front(), {}, {}, s, thenValues) ||
        !batchBlock(op.getElseRegion().front(), {}, {}, s, elseValues))
      return false;
    Value pred = s.map.lookupOrDefault(op.getPred());
    for (auto [r, t, e] : llvm::zip(op.getResults(), thenValues, elseValues)) {
      if (!s.batched.contains(t) && !(t = broadcast(t, op.getLoc())))
        return false;
      if (!s.batched.contains(e) && !(e = broadcast(e, op.getLoc())))
        return false;
      Value p = expand(pred, rankOf(t) - 1, op.getLoc());
      if (!p)
        return false;
      auto sel = tg::SelectOp::create(b, op.getLoc(), t.getType(), p, t, e);
      if (!state.finish(sel))
        return false;
      bind(r, sel.getResult(), s);
    }
    return true;
  }
  SmallVector<Type> types;
  for (Type t : op.getResultTypes())
    types.push_back(batchedType(t));
  auto c = tg::CondOp::create(b, op.getLoc(), types,
                              s.map.lookupOrDefault(op.getPred()));
  for (auto [from, to] : llvm::zip(op->getRegions(), c->getRegions())) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&to.emplaceBlock());
    Block &body = from.front();
    for (Operation &inner : body.without_terminator())
      if (!batchOp(&inner, s)) {
        if (missing.empty())
          missing = tg::describeOp(&inner);
        return false;
      }
    SmallVector<Value> yielded;
    for (Value v : body.getTerminator()->getOperands()) {
      Value nv = s.map.lookupOrDefault(v);
      if (!s.batched.contains(nv) && !(nv = broadcast(nv, op.getLoc())))
        return false;
      yielded.push_back(nv);
    }
    tg::YieldOp::create(b, op.getLoc(), yielded);
  }
  if (!state.finish(c))
    return false;
  for (auto [from, to] : llvm::zip(op->getResults(), c->getResults())) {
    s.map.map(from, to);
    s.batched.insert(to);
  }
  return true;
}

/// Per-example losses, then the example's own reduction over its dims.
bool Batcher::crossEntropyRule(tg::CrossEntropyOp op, Scope &s) {
  SmallVector<Value> ins;
  for (Value v : op->getOperands()) {
    Value nv = s.map.lookupOrDefault(v);
    if (!isBatched(s, v) && !(nv = broadcast(nv, op.getLoc())))
      return false;
    ins.push_back(nv);
  }
  IRMapping local;
  for (auto [from, to] : llvm::zip(op->getOperands(), ins))
    local.map(from, to);
  Operation *c = b.clone(*op, local);
  c->setAttr("reduction", tg::LossReductionAttr::get(b.getContext(),
                                                     tg::LossReduction::none));
  if (!state.finish(c))
    return false;
  Value result = c->getResult(0);
  SmallVector<int64_t> dims;
  for (int64_t d = 1; d < rankOf(result); ++d)
    dims.push_back(d);
  if (op.getReduction() != tg::LossReduction::none && !dims.empty()) {
    auto attr = b.getDenseI64ArrayAttr(dims);
    Operation *r =
        op.getReduction() == tg::LossReduction::sum
            ? tg::ReduceSumOp::create(b, op.getLoc(), result.getType(), result,
                                      attr, false, false, tg::PolicyAttr())
                  .getOperation()
            : tg::ReduceMeanOp::create(b, op.getLoc(), result.getType(), result,
                                       attr, false, false, tg::PolicyAttr())
                  .getOperation();
    if (!state.finish(r))
      return false;
    result = r->getResult(0);
  }
  s.map.map(op.getResult(), result);
  s.batched.insert(result);
  return true;
}

/// The batch merged into the convolution's own batch dim (dim 0 in both
/// layouts): [B, N, ...] -> [B*N, ...] -> conv -> [B, N', ...].
bool Batcher::conv2dRule(tg::Conv2dOp op, Scope &s) {
  if (isBatched(s, op.getFilter()))
    return false;
  Location loc = op.getLoc();
  Value input = s.map.lookupOrDefault(op.getInput());
  shape::TensorShape in = tg::getShape(input.getType());
  shape::TensorShape merged;
  merged.dims.push_back(in.dims[0] * in.dims[1]);
  merged.dims.insert(merged.dims.end(), in.dims.begin() + 2, in.dims.end());
  Value flat = reshape(input, merged, loc);
  if (!flat)
    return false;
  IRMapping local;
  local.map(op.getInput(), flat);
  local.map(op.getFilter(), s.map.lookupOrDefault(op.getFilter()));
  Operation *c = b.clone(*op, local);
  shape::TensorShape out = tg::getShape(op.getType());
  out.dims[0] = merged.dims[0];
  Type declared = tg::getTensorType(
      out, cast<RankedTensorType>(op.getType()).getElementType());
  if (!state.finish(c, {declared}))
    return false;
  shape::TensorShape split = tg::getShape(op.getType());
  split.dims.insert(split.dims.begin(), batch);
  Value result = reshape(c->getResult(0), split, loc);
  if (!result)
    return false;
  bind(op.getResult(), result, s);
  return true;
}

/// gather from a batched tensor at shared indices takes the next dim;
/// gather from a shared tensor at batched indices puts the batch at `dim`,
/// then moves it to the front.
bool Batcher::gatherRule(tg::GatherOp op, Scope &s) {
  bool xb = isBatched(s, op.getX()), ib = isBatched(s, op.getIndices());
  int64_t dim = normalizeAxis(op.getDim(), rankOf(op.getX()));
  Value x = s.map.lookupOrDefault(op.getX());
  Value idx = s.map.lookupOrDefault(op.getIndices());
  if (xb && ib)
    return false;
  if (xb)
    return rebuild(op, {x, idx}, s,
                   {b.getNamedAttr("dim", b.getI64IntegerAttr(dim + 1))});
  Operation *c = rebuild(op, {x, idx}, s,
                         {b.getNamedAttr("dim", b.getI64IntegerAttr(dim))});
  if (!c)
    return false;
  if (dim == 0)
    return true;
  SmallVector<int64_t> perm = {dim};
  for (int64_t i = 0; i < rankOf(c->getResult(0)); ++i)
    if (i != dim)
      perm.push_back(i);
  Value moved = transpose(c->getResult(0), perm, op.getLoc());
  if (!moved)
    return false;
  bind(op.getResult(), moved, s);
  return true;
}

/// A loop over time inside the map: every carry gets the batch (leading),
/// batched sequences [B, T, ...] are scanned as [T, B, ...], and the
/// stacked outputs [T, B, ...] are turned back to [B, T, ...].
bool Batcher::scanRule(tg::ScanOp op, Scope &s) {
  Location loc = op.getLoc();
  size_t nc = op.getInits().size();
  SmallVector<Value> inits, xs;
  for (Value v : op.getInits()) {
    if (!isa<RankedTensorType>(v.getType()))
      return false; // keys and caches are not batched
    Value nv = s.map.lookupOrDefault(v);
    if (!isBatched(s, v) && !(nv = broadcast(nv, loc)))
      return false;
    inits.push_back(nv);
  }
  SmallVector<bool> xBatched;
  for (Value v : op.getXs()) {
    Value nv = s.map.lookupOrDefault(v);
    bool batchedX = isBatched(s, v);
    if (batchedX) {
      SmallVector<int64_t> perm = {1, 0};
      for (int64_t i = 2; i < rankOf(nv); ++i)
        perm.push_back(i);
      if (!(nv = transpose(nv, perm, loc)))
        return false;
    }
    xs.push_back(nv);
    xBatched.push_back(batchedX);
  }
  // Results: batched carries, then outputs stacked as [T, B, ...].
  SmallVector<Type> types;
  for (auto [i, r] : llvm::enumerate(op.getResults())) {
    if (i < nc) {
      types.push_back(batchedType(r.getType()));
      continue;
    }
    auto rt = cast<RankedTensorType>(r.getType());
    shape::TensorShape sh = tg::getShape(rt);
    sh.dims.insert(sh.dims.begin() + 1, batch);
    types.push_back(tg::getTensorType(sh, rt.getElementType()));
  }
  auto loop = tg::ScanOp::create(b, loc, types, inits, xs, op.getLengthAttr(),
                                 op.getReverse());
  Block &from = op.getBody().front();
  Block *to = &loop.getBody().emplaceBlock();
  for (auto [i, arg] : llvm::enumerate(from.getArguments())) {
    bool batchedArg = i < nc || xBatched[i - nc];
    Type t = batchedArg ? batchedType(arg.getType()) : arg.getType();
    BlockArgument na = to->addArgument(t, arg.getLoc());
    s.map.map(arg, na);
    if (batchedArg)
      s.batched.insert(na);
  }
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(to);
    for (Operation &inner : from.without_terminator())
      if (!batchOp(&inner, s)) {
        if (missing.empty())
          missing = tg::describeOp(&inner);
        return false;
      }
    SmallVector<Value> yielded;
    for (Value v : from.getTerminator()->getOperands()) {
      Value nv = s.map.lookupOrDefault(v);
      if (!s.batched.contains(nv) && !(nv = broadcast(nv, loc)))
        return false;
      yielded.push_back(nv);
    }
    tg::YieldOp::create(b, loc, yielded);
  }
  if (!state.finish(loop))
    return false;
  for (auto [i, r] : llvm::enumerate(op.getResults())) {
    Value nr = loop.getResult(i);
    if (i >= nc) {
      SmallVector<int64_t> perm = {1, 0};
      for (int64_t d = 2; d < rankOf(nr); ++d)
        perm.push_back(d);
      if (!(nr = transpose(nr, perm, loc)))
        return false;
    }
    bind(r, nr, s);
  }
  return true;
}

bool Batcher::batchBlock(Block &from, ArrayRef<Value> args,
                         ArrayRef<bool> batchedArgs, Scope &s,
                         SmallVectorImpl<Value> &yielded) {
  for (auto [arg, v, flag] :
       llvm::zip(from.getArguments(), args, batchedArgs)) {
    s.map.map(arg, v);
    if (flag)
      s.batched.insert(v);
  }
  for (Operation &inner : from.without_terminator())
    if (!batchOp(&inner, s)) {
      if (missing.empty())
        missing = tg::describeOp(&inner);
      return false;
    }
  for (Value v : from.getTerminator()->getOperands())
    yielded.push_back(s.map.lookupOrDefault(v));
  return true;
}

/// A loop whose condition may differ per element runs while any element's
/// condition holds; an element whose condition is false keeps its carries
/// (the body's results are selected away), so each element ends with the
/// values its own loop would give.
bool Batcher::whileRule(tg::WhileOp op, Scope &s) {
  Location loc = op.getLoc();
  SmallVector<Value> inits;
  SmallVector<Type> types;
  for (Value v : op.getInits()) {
    if (!isa<RankedTensorType>(v.getType()))
      return false; // keys and caches are not batched
    Value nv = s.map.lookupOrDefault(v);
    if (!isBatched(s, v) && !(nv = broadcast(nv, loc)))
      return false;
    inits.push_back(nv);
    types.push_back(nv.getType());
  }
  auto loop = tg::WhileOp::create(b, loc, types, inits, op.getTripCountAttr());
  SmallVector<bool> allBatched(inits.size(), true);
  // any(pred) over the batch, as the loop's condition.
  auto anyOf = [&](Value pred) -> Value {
    auto t = cast<RankedTensorType>(pred.getType());
    Type i8 = t.clone(b.getI8Type());
    auto asInt = tg::CastOp::create(b, loc, i8, pred, tg::PolicyAttr());
    if (!state.finish(asInt, {i8}))
      return {};
    auto scalar = RankedTensorType::get({}, b.getI8Type());
    auto any = tg::ReduceMaxOp::create(b, loc, scalar, asInt.getResult(),
                                       b.getDenseI64ArrayAttr({0}), false);
    if (!state.finish(any))
      return {};
    auto zero = tg::ConstantOp::create(
        b, loc, scalar, DenseElementsAttr::get(scalar, b.getI8IntegerAttr(0)));
    auto cmp = tg::CompareOp::create(
        b, loc, RankedTensorType::get({}, b.getI1Type()),
        tg::CompareDirection::ne, any.getResult(), zero.getResult());
    if (!state.finish(cmp))
      return {};
    return cmp.getResult();
  };
  {
    OpBuilder::InsertionGuard guard(b);
    Block *cond = &loop.getCondRegion().emplaceBlock();
    SmallVector<Value> args;
    for (Type t : types)
      args.push_back(cond->addArgument(t, loc));
    b.setInsertionPointToEnd(cond);
    SmallVector<Value> yielded;
    if (!batchBlock(op.getCondRegion().front(), args, allBatched, s, yielded))
      return false;
    Value pred = yielded[0];
    if (s.batched.contains(pred) && !(pred = anyOf(pred)))
      return false;
    tg::YieldOp::create(b, loc, ValueRange{pred});
  }
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = &loop.getBodyRegion().emplaceBlock();
    SmallVector<Value> args;
    for (Type t : types)
      args.push_back(body->addArgument(t, loc));
    b.setInsertionPointToEnd(body);
    // The condition again, per element, to keep the finished ones.
    SmallVector<Value> predOut;
    if (!batchBlock(op.getCondRegion().front(), args, allBatched, s, predOut))
      return false;
    Value pred = predOut[0];
    bool perElement = s.batched.contains(pred);
    SmallVector<Value> next;
    if (!batchBlock(op.getBodyRegion().front(), args, allBatched, s, next))
      return false;
    SmallVector<Value> yielded;
    for (auto [v, old] : llvm::zip(next, args)) {
      if (!s.batched.contains(v) && !(v = broadcast(v, loc)))
        return false;
      if (perElement) {
        Value p = expand(pred, rankOf(v) - 1, loc);
        if (!p)
          return false;
        auto sel = tg::SelectOp::create(b, loc, v.getType(), p, v, old);
        if (!state.finish(sel))
          return false;
        v = sel.getResult();
      }
      yielded.push_back(v);
    }
    tg::YieldOp::create(b, loc, yielded);
  }
  if (!state.finish(loop))
    return false;
  for (auto [from, to] : llvm::zip(op.getResults(), loop.getResults()))
    bind(from, to, s);
  return true;
}

bool Batcher::batchOp(Operation *op, Scope &s) {
  if (!usesBatch(op, s)) {
    b.clone(*op, s.map);
    return true;
  }
  if (auto call = dyn_cast<tg::CallOp>(op))
    return callRule(call, s);
  if (auto c = dyn_cast<tg::CondOp>(op))
    return condRule(c, s);
  if (auto loop = dyn_cast<tg::ScanOp>(op))
    return scanRule(loop, s);
  if (auto loop = dyn_cast<tg::WhileOp>(op))
    return whileRule(loop, s);
  if (op->getNumRegions())
    return false;
  Location loc = op->getLoc();
  auto operand = [&](unsigned i) {
    return s.map.lookupOrDefault(op->getOperand(i));
  };
  // An axis attribute of a per-element dim, moved past the batch.
  auto shifted = [&](StringRef name, int64_t rank) -> NamedAttribute {
    int64_t d = cast<IntegerAttr>(op->getAttr(name)).getInt();
    return b.getNamedAttr(name,
                          b.getI64IntegerAttr(normalizeAxis(d, rank) + 1));
  };
  auto shiftedArray = [&](StringRef name, int64_t rank, bool lead) {
    SmallVector<int64_t> out;
    if (lead)
      out.push_back(0);
    for (int64_t d : cast<DenseI64ArrayAttr>(op->getAttr(name)).asArrayRef())
      out.push_back(normalizeAxis(d, rank) + 1);
    return b.getNamedAttr(name, b.getDenseI64ArrayAttr(out));
  };
  auto prepended = [&](StringRef name, int64_t value) {
    SmallVector<int64_t> out = {value};
    llvm::append_range(out,
                       cast<DenseI64ArrayAttr>(op->getAttr(name)).asArrayRef());
    return b.getNamedAttr(name, b.getDenseI64ArrayAttr(out));
  };
  auto operands = [&]() {
    SmallVector<Value> out;
    for (Value v : op->getOperands())
      out.push_back(s.map.lookupOrDefault(v));
    return out;
  };

  if (isa<tg::AddOp, tg::SubOp, tg::MulOp, tg::DivOp, tg::PowOp, tg::MaxOp,
          tg::MinOp, tg::CompareOp, tg::SelectOp>(op))
    return broadcastingRule(op, s, 0);
  if (isa<tg::MatmulOp>(op))
    return broadcastingRule(op, s, 2);
  if (auto bmm = dyn_cast<tg::BatchMatmulOp>(op)) {
    // [B, b, M, K] x [b, K, N] broadcasts as a matmul does.
    Type to = batchedType(bmm.getType());
    auto mm = tg::MatmulOp::create(b, loc, to, operand(0), operand(1), false,
                                   false, bmm.getPolicyAttr());
    if (!state.finish(mm, {to}))
      return false;
    s.map.map(bmm.getResult(), mm.getResult());
    s.batched.insert(mm.getResult());
    return true;
  }
  if (auto dg = dyn_cast<tg::DotGeneralOp>(op))
    return dotGeneralRule(dg, s);
  if (auto ce = dyn_cast<tg::CrossEntropyOp>(op))
    return crossEntropyRule(ce, s);
  if (auto conv = dyn_cast<tg::Conv2dOp>(op))
    return conv2dRule(conv, s);
  if (auto gather = dyn_cast<tg::GatherOp>(op))
    return gatherRule(gather, s);
  if (isa<tg::AttentionOp>(op)) {
    // Leading dims of q, k and v are batch dims: give each the batch.
    SmallVector<Value> ins;
    for (Value v : op->getOperands()) {
      Value nv = s.map.lookupOrDefault(v);
      if (!isBatched(s, v) && !(nv = broadcast(nv, loc)))
        return false;
      ins.push_back(nv);
    }
    return rebuild(op, ins, s);
  }
  if (auto sa = dyn_cast<tg::ScatterAddOp>(op)) {
    // Shared indices: the batch is one more leading dim of x and updates.
    if (isBatched(s, sa.getIndices()))
      return false;
    SmallVector<Value> ins = operands();
    for (unsigned i : {0u, 2u})
      if (!isBatched(s, op->getOperand(i)) &&
          !(ins[i] = broadcast(ins[i], loc)))
        return false;
    return rebuild(op, ins, s, {shifted("dim", rankOf(op->getOperand(0)))});
  }
  if (auto ds = dyn_cast<tg::DynamicSliceOp>(op)) {
    // Shared starts: the whole batch, from 0.
    for (Value v : ds.getStarts())
      if (isBatched(s, v))
        return false;
    SmallVector<Value> ins = operands();
    if (ds.getStarts().empty())
      return false;
    auto t = cast<RankedTensorType>(ds.getStarts()[0].getType());
    Value zero = tg::ConstantOp::create(
        b, loc, t,
        DenseElementsAttr::get(t, b.getIntegerAttr(t.getElementType(), 0)));
    ins.insert(ins.begin() + 1, zero);
    std::vector<shape::DimExpr> sizes = ds.getSizes().getDims();
    sizes.insert(sizes.begin(), batch);
    IRMapping local;
    local.map(op->getOperand(0), ins[0]);
    Operation *c =
        tg::DynamicSliceOp::create(b, loc, ins[0], ValueRange(ins).drop_front(),
                                   tg::DimsAttr::get(b.getContext(), sizes));
    if (!state.finish(c))
      return false;
    bind(op->getResult(0), c->getResult(0), s);
    return true;
  }

  int64_t rank = op->getNumOperands() ? rankOf(op->getOperand(0)) : 0;
  // Shape-preserving ops on one tensor (unary math, gelu, stop_gradient,
  // zeros_like, ...) and cast.
  if (isa<tg::SoftmaxOp, tg::LogSoftmaxOp, tg::SoftmaxSafeOp>(op))
    return rebuild(op, operands(), s, {shifted("dim", rank)});
  if (op->hasTrait<OpTrait::SameOperandsAndResultType>() &&
      op->getNumOperands() == 1)
    return rebuild(op, operands(), s);
  if (isa<tg::CastOp, tg::ReshapeOp, tg::OneHotOp>(op))
    return rebuild(op, operands(), s);
  if (isa<tg::EmbeddingOp>(op)) {
    if (isBatched(s, op->getOperand(0)))
      return false; // a table per element
    return rebuild(op, operands(), s);
  }
  if (isa<tg::ReduceSumOp, tg::ReduceMeanOp, tg::ReduceProdOp, tg::ReduceMaxOp,
          tg::ReduceMinOp>(op))
    return rebuild(op, operands(), s, {shiftedArray("dims", rank, false)});
  if (isa<tg::ArgmaxOp, tg::ArgminOp, tg::LogsumexpOp, tg::LogsumexpSafeOp>(op))
    return rebuild(op, operands(), s, {shifted("dim", rank)});
  if (isa<tg::LayerNormOp, tg::RMSNormOp, tg::LayerNormSafeOp,
          tg::RMSNormSafeOp>(op)) {
    // scale and bias have the normalized (trailing) dims' shape.
    for (unsigned i = 1; i < op->getNumOperands(); ++i)
      if (isBatched(s, op->getOperand(i)))
        return false;
    return rebuild(op, operands(), s, {shifted("axis", rank)});
  }
  if (isa<tg::TransposeOp>(op))
    return rebuild(op, operands(), s,
                   {shiftedArray("permutation", rank, true)});
  if (isa<tg::BroadcastInDimOp>(op))
    return rebuild(op, operands(), s,
                   {shiftedArray("broadcast_dimensions", rank, true)});
  if (auto slice = dyn_cast<tg::SliceOp>(op)) {
    std::vector<shape::DimExpr> start = slice.getStart().getDims(),
                                limit = slice.getLimit().getDims();
    start.insert(start.begin(), shape::DimExpr::constant(0));
    limit.insert(limit.begin(), batch);
    return rebuild(
        op, operands(), s,
        {b.getNamedAttr("start", tg::DimsAttr::get(b.getContext(), start)),
         b.getNamedAttr("limit", tg::DimsAttr::get(b.getContext(), limit)),
         prepended("stride", 1)});
  }
  if (isa<tg::PadOp>(op))
    return rebuild(
        op, operands(), s,
        {prepended("low", 0), prepended("high", 0), prepended("interior", 0)});
  if (isa<tg::ConcatOp>(op)) {
    SmallVector<Value> ins;
    for (Value v : op->getOperands()) {
      Value nv = s.map.lookupOrDefault(v);
      if (!isBatched(s, v) && !(nv = broadcast(nv, loc)))
        return false;
      ins.push_back(nv);
    }
    return rebuild(op, ins, s, {shifted("dim", rank)});
  }
  // Sizes of per-element dims are the same for every element.
  if (isa<tg::DimOp>(op))
    return rebuild(op, operands(), s, {shifted("index", rank)}, false);
  if (isa<tg::DimSizeOp>(op))
    return rebuild(op, operands(), s, {shifted("dim", rank)}, false);
  return false;
}

bool Batcher::inlineBody(func::FuncOp fn, ArrayRef<Value> args,
                         ArrayRef<bool> isBatched,
                         SmallVectorImpl<Value> &results) {
  Scope s;
  for (auto [a, v, flag] : llvm::zip(fn.getArguments(), args, isBatched)) {
    s.map.map(a, v);
    if (flag)
      s.batched.insert(v);
  }
  Block &body = fn.getBody().front();
  for (Operation &op : body.without_terminator())
    if (!batchOp(&op, s)) {
      if (missing.empty())
        missing = tg::describeOp(&op);
      return false;
    }
  for (Value v : body.getTerminator()->getOperands()) {
    Value nv = s.map.lookupOrDefault(v);
    if (!s.batched.contains(nv) && !(nv = broadcast(nv, fn.getLoc())))
      return false;
    results.push_back(nv);
  }
  return true;
}

std::vector<Tensor> ModuleState::vmap(const Function &fn,
                                      const std::vector<Tensor> &args,
                                      const std::vector<bool> &mapped,
                                      SourceLoc where) {
  Location loc = location(where);
  if (!ready({}))
    return {};
  auto callee = module->lookupSymbol<func::FuncOp>(fn.name);
  if (!callee) {
    failAt(loc, "vmap of @" + fn.name + ", which is not in this Module");
    return {};
  }
  if (args.size() != fn.inputs.size() || mapped.size() != args.size()) {
    failAt(loc, "vmap: @" + fn.name + " takes " +
                    std::to_string(fn.inputs.size()) + " arguments, got " +
                    std::to_string(args.size()) + " with " +
                    std::to_string(mapped.size()) + " mapped flags");
    return {};
  }
  SmallVector<Value> operands;
  SmallVector<bool> flags;
  std::optional<shape::DimExpr> batch;
  FunctionType type = callee.getFunctionType();
  for (auto [i, t] : llvm::enumerate(args)) {
    if (!t.valid() || t.getState() != this)
      return {};
    Value v = use(t);
    Type want = type.getInput(i);
    if (mapped[i]) {
      auto vt = dyn_cast<RankedTensorType>(v.getType());
      if (!vt || vt.getRank() == 0) {
        failAt(loc, "vmap: mapped argument " + std::to_string(i) +
                        " needs a dim to map over, got " +
                        tg::typeName(v.getType()));
        return {};
      }
      shape::TensorShape sh = tg::getShape(vt);
      shape::DimExpr lead = sh.dims.front();
      if (!batch) {
        batch = lead;
      } else if (shape::decideEqual(*batch, lead) != shape::Truth::Always) {
        failAt(loc, "vmap: mapped arguments have different sizes along the "
                    "mapped axis: " +
                        batch->str() + " and " + lead.str() + " (argument " +
                        std::to_string(i) + ")");
        return {};
      }
      sh.dims.erase(sh.dims.begin());
      Type element = tg::getTensorType(sh, vt.getElementType());
      if (!tg::areCompatibleTypes(element, want)) {
        failAt(loc, "vmap: an element of argument " + std::to_string(i) +
                        " is " + tg::typeName(element) + ", @" + fn.name +
                        " takes " + tg::typeName(want));
        return {};
      }
    } else if (!tg::areCompatibleTypes(v.getType(), want)) {
      failAt(loc, "vmap: argument " + std::to_string(i) + " of @" + fn.name +
                      " must be " + tg::typeName(want) + ", got " +
                      tg::typeName(v.getType()));
      return {};
    }
    operands.push_back(v);
    flags.push_back(mapped[i]);
  }
  if (!batch) {
    failAt(loc, "vmap: no argument is mapped");
    return {};
  }
  for (const Tensor &c : fn.captures) {
    if (!c.valid())
      return {};
    Value v = use(c);
    operands.insert(operands.begin() + fn.capturePosition() +
                        (operands.size() - args.size()),
                    v);
    flags.insert(flags.begin() + fn.capturePosition() +
                     (flags.size() - args.size()),
                 false);
  }
  if (firstError)
    return {};

  // Batching rules first; ops added before a missing rule are dropped.
  Block *block = b.getInsertionBlock();
  Block::iterator point = b.getInsertionPoint();
  Operation *before = point == block->begin() ? nullptr : &*std::prev(point);
  Batcher batcher(*this, *batch);
  SmallVector<Value> results;
  if (batcher.inlineBody(callee, operands, flags, results)) {
    std::vector<Tensor> out;
    for (Value r : results)
      out.push_back(wrap(r));
    return out;
  }
  firstError.reset();
  pendingDiagnostic.clear();
  Block::iterator end = b.getInsertionPoint();
  Block::iterator first =
      before ? std::next(before->getIterator()) : block->begin();
  SmallVector<Operation *> added;
  for (Block::iterator it = first; it != end; ++it)
    added.push_back(&*it);
  for (Operation *op : llvm::reverse(added))
    op->erase();

  // A loop over the batch: the mapped arguments are the scanned sequences,
  // the others are read from the enclosing trace.
  SmallVector<Value> xs;
  for (auto [v, flag] : llvm::zip(operands, flags))
    if (flag)
      xs.push_back(v);
  SmallVector<Type> resultTypes;
  for (Type t : callee.getResultTypes()) {
    auto rt = cast<RankedTensorType>(t);
    shape::TensorShape sh = tg::getShape(rt);
    sh.dims.insert(sh.dims.begin(), *batch);
    resultTypes.push_back(tg::getTensorType(sh, rt.getElementType()));
  }
  auto scan = tg::ScanOp::create(b, loc, resultTypes, ValueRange{}, xs,
                                 IntegerAttr(), false);
  // Why the map is a loop, for readers of the IR (lower()).
  scan->setAttr("vmap_loop",
                b.getStringAttr("no batching rule for " + batcher.missing));
  Block *inner = new Block;
  scan.getBody().push_back(inner);
  IRMapping map;
  for (auto [a, v, flag] : llvm::zip(callee.getArguments(), operands, flags))
    map.map(a, flag ? Value(inner->addArgument(a.getType(), a.getLoc())) : v);
  OpBuilder ib = OpBuilder::atBlockEnd(inner);
  Block &from = callee.getBody().front();
  for (Operation &o : from.without_terminator())
    ib.clone(o, map);
  SmallVector<Value> yielded;
  for (Value v : from.getTerminator()->getOperands())
    yielded.push_back(map.lookupOrDefault(v));
  tg::YieldOp::create(ib, loc, yielded);
  if (!finish(scan))
    return {};
  return wrapResults(scan);
}

} // namespace tessera::detail
