//===- AutodiffControlFlow.cpp - Autodiff of ops with regions ------------===//
//
// The forward and reverse rules of cond, scan, while, fixed_point and
// solve (implicit: through the adjoint equation), custom_jvp/custom_vjp
// and checkpoint: members of the Differentiator (Differentiator.h) that
// the walks in Autodiff.cpp dispatch to.
//
//===----------------------------------------------------------------------===//

#include "Differentiator.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;
using namespace mlir::tessera::tgraph::autodiff;

/// A cond with the tangents as extra results: each branch computes its
/// values and their tangents.
LogicalResult Differentiator::forwardCond(CondOp cond,
                                          DenseMap<Value, Value> &tangent) {
  OpBuilder b(cond);
  SmallVector<Type> types(cond.getResultTypes());
  SmallVector<unsigned> floats;
  for (auto [i, r] : llvm::enumerate(cond.getResults()))
    if (ADBuilder::isDifferentiable(r)) {
      floats.push_back(i);
      types.push_back(r.getType());
    }
  auto next = CondOp::create(b, cond.getLoc(), types, cond.getPred());
  for (auto [from, to] :
       {std::pair(&cond.getThenRegion(), &next.getThenRegion()),
        std::pair(&cond.getElseRegion(), &next.getElseRegion())}) {
    IRMapping regionMap;
    from->cloneInto(to, regionMap);
    Block &block = to->front();
    if (failed(forwardOps(block, tangent)))
      return failure();
    auto yield = cast<YieldOp>(block.getTerminator());
    OpBuilder yb(yield);
    ADBuilder ad(yb, yield.getLoc());
    SmallVector<Value> values(yield.getValues());
    for (unsigned i : floats) {
      Value v = yield.getValues()[i];
      Value t = tangent.lookup(v);
      values.push_back(t ? t : ad.zerosLike(v));
    }
    YieldOp::create(yb, yield.getLoc(), values);
    yield.erase();
  }
  for (auto [i, r] : llvm::enumerate(cond.getResults()))
    r.replaceAllUsesWith(next.getResult(i));
  for (auto [k, i] : llvm::enumerate(floats))
    tangent[next.getResult(i)] = next.getResult(cond.getNumResults() + k);
  cond.erase();
  return success();
}

/// x* = F(x*, p) (fixed_point) or F(x*, p) = 0 (solve): the tangent t of
/// x* solves t = J_x t + J_p dp, resp. J_x t + J_p dp = 0, itself a
/// fixed_point / solve over t whose body is the JVP of F at x*.
template <typename OpTy>
LogicalResult Differentiator::forwardImplicit(OpTy op,
                                              DenseMap<Value, Value> &tangent,
                                              bool root) {
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  ADBuilder ad(b, op.getLoc());
  Value x = op.getResult();
  SmallVector<Value> params{x};
  SmallVector<int> tangentOf; // param index -> position of its tangent
  for (Value p : op.getParams())
    params.push_back(p);
  for (Value p : op.getParams())
    if (Value t = tangent.lookup(p))
      params.push_back(t);
  auto next = OpTy::create(b, op.getLoc(), x.getType(), ad.zerosLike(x), params,
                           op.getTolAttr(), op.getMaxIterAttr());
  Block *block = new Block();
  next.getBody().push_back(block);
  Value t = block->addArgument(x.getType(), op.getLoc());
  SmallVector<Value> args;
  for (Value p : params)
    args.push_back(block->addArgument(p.getType(), op.getLoc()));
  // The body of F on (x*, p), then its JVP with tangents t and dp.
  IRMapping map;
  Block &body = op.getBody().front();
  map.map(body.getArgument(0), args[0]);
  for (unsigned i = 1; i < body.getNumArguments(); ++i)
    map.map(body.getArgument(i), args[i]);
  OpBuilder inner = OpBuilder::atBlockEnd(block);
  for (Operation &o : body.without_terminator())
    inner.clone(o, map);
  DenseMap<Value, Value> local;
  local[args[0]] = t;
  unsigned k = 1 + op.getParams().size();
  for (auto [i, p] : llvm::enumerate(op.getParams()))
    if (tangent.lookup(p))
      local[args[1 + i]] = args[k++];
  // F's value through a yield the walk updates if it replaces an op.
  auto primal = YieldOp::create(
      inner, op.getLoc(),
      ValueRange{map.lookupOrDefault(body.getTerminator()->getOperand(0))});
  if (failed(forwardOps(*block, local)))
    return failure();
  Value f = primal.getValues()[0];
  inner.setInsertionPoint(primal);
  ADBuilder ia(inner, op.getLoc());
  Value df = local.lookup(f);
  if (!df)
    df = ia.zerosLike(f);
  // fixed_point: the next t is dF; solve: the residual is dF.
  YieldOp::create(inner, op.getLoc(), ValueRange{df});
  primal.erase();
  (void)root;
  tangent[x] = next.getResult();
  return success();
}

/// The adjoint of a cond is a cond on the same predicate: each branch
/// recomputes its values, then runs their backward code, and yields the
/// cotangents of the active values it uses from outside.
LogicalResult Differentiator::reverseCond(CondOp cond, ArrayRef<Value> cts,
                                          DenseSet<Value> &active,
                                          DenseMap<Value, Value> &cotangent,
                                          OpBuilder &b) {
  SmallVector<Value> free = freeActiveValues(cond, active);
  if (free.empty())
    return success();
  SmallVector<Type> types = llvm::to_vector(
      llvm::map_range(free, [](Value v) { return v.getType(); }));
  auto back = CondOp::create(b, cond.getLoc(), types, cond.getPred());
  for (auto [from, to] :
       {std::pair(&cond.getThenRegion(), &back.getThenRegion()),
        std::pair(&cond.getElseRegion(), &back.getElseRegion())}) {
    IRMapping regionMap;
    from->cloneInto(to, regionMap);
    Block &block = to->front();
    auto yield = cast<YieldOp>(block.getTerminator());
    OpBuilder inner(yield);
    ADBuilder ad(inner, yield.getLoc());
    DenseMap<Value, Value> local;
    for (auto [v, c] : llvm::zip(yield.getValues(), cts))
      if (c && ADBuilder::isDifferentiable(v))
        local[v] = ad.accumulate(local.lookup(v), c);
    DenseSet<Value> localActive(active.begin(), active.end());
    if (failed(reverseOps(block, localActive, local, inner)))
      return failure();
    SmallVector<Value> outs;
    for (Value v : free) {
      Value c = local.lookup(v);
      outs.push_back(c ? c : ad.zerosLike(v));
    }
    YieldOp::create(inner, yield.getLoc(), outs);
    yield.erase();
  }
  ADBuilder ad(b, cond.getLoc());
  for (auto [v, c] : llvm::zip(free, back.getResults()))
    cotangent[v] = ad.accumulate(cotangent.lookup(v), c);
  return success();
}

/// Implicit differentiation (spec 004 §10). With xbar the cotangent of
/// x*: fixed_point solves lambda = xbar + J_x^T lambda, solve solves
/// J_x^T lambda = xbar (each with an op of the same kind, whose body is
/// the VJP of F at x*); then pbar = J_p^T lambda (times -1 for solve).
/// The initial value gets no cotangent.
template <typename OpTy>
LogicalResult Differentiator::reverseImplicit(OpTy op, Value xbar,
                                              DenseSet<Value> &active,
                                              DenseMap<Value, Value> &cotangent,
                                              OpBuilder &b, bool root) {
  Location loc = op.getLoc();
  ADBuilder ad(b, loc);
  Value x = op.getResult();
  Block &body = op.getBody().front();
  SmallVector<Value> params{x};
  for (Value p : op.getParams())
    params.push_back(p);
  params.push_back(xbar);
  auto adjoint =
      OpTy::create(b, loc, x.getType(), root ? ad.zerosLike(x) : xbar, params,
                   op.getTolAttr(), op.getMaxIterAttr());
  Block *block = new Block();
  adjoint.getBody().push_back(block);
  Value lambda = block->addArgument(x.getType(), loc);
  SmallVector<Value> args;
  for (Value p : params)
    args.push_back(block->addArgument(p.getType(), loc));
  {
    // J_x^T lambda: F's body on (x*, p), then its backward code seeded
    // with lambda, keeping x's cotangent.
    OpBuilder inner = OpBuilder::atBlockEnd(block);
    IRMapping map;
    for (unsigned i = 0; i < body.getNumArguments(); ++i)
      map.map(body.getArgument(i), args[i]);
    for (Operation &o : body.without_terminator())
      inner.clone(o, map);
    Value f = map.lookupOrDefault(body.getTerminator()->getOperand(0));
    DenseMap<Value, Value> local;
    local[f] = lambda;
    DenseSet<Value> localActive{args[0]};
    if (failed(reverseOps(*block, localActive, local, inner)))
      return failure();
    ADBuilder ia(inner, loc);
    Value jt = local.lookup(args[0]);
    if (!jt)
      jt = ia.zerosLike(lambda);
    Value next = root ? ia.sub(jt, args.back()) : ia.add(args.back(), jt);
    YieldOp::create(inner, loc, ValueRange{next});
  }
  // pbar = (+/-) J_p^T lambda, from F's body on (x*, p) out here.
  IRMapping map;
  map.map(body.getArgument(0), x);
  for (auto [a, p] :
       llvm::zip(body.getArguments().drop_front(), op.getParams()))
    map.map(a, p);
  // The clone runs in the enclosing block, before the backward code.
  for (Operation &o : body.without_terminator())
    b.clone(o, map);
  Value f = map.lookupOrDefault(body.getTerminator()->getOperand(0));
  Value seed = adjoint.getResult();
  if (root)
    seed = ad.neg(seed);
  DenseMap<Value, Value> local;
  local[f] = seed;
  DenseSet<Value> localActive;
  for (Value p : op.getParams())
    if (active.contains(p))
      localActive.insert(p);
  if (failed(reverseCloned({f}, op, localActive, local, b)))
    return failure();
  for (Value p : op.getParams())
    if (Value c = local.lookup(p); c && active.contains(p))
      cotangent[p] = ad.accumulate(cotangent.lookup(p), c);
  return success();
}

/// Clones the ops of `from` (a region's body, without its yield) to the
/// end of `block` through `map` and runs forward mode over them; `values`
/// gets the mapped values `from` yields and `tangents` each one's tangent
/// (zeros where none reached it; null for values without one). The caller
/// adds `block`'s yield.
LogicalResult Differentiator::forwardBody(Block &from, Block &block,
                                          IRMapping &map,
                                          DenseMap<Value, Value> &tangent,
                                          SmallVectorImpl<Value> &values,
                                          SmallVectorImpl<Value> &tangents) {
  Location loc = from.getParentOp()->getLoc();
  OpBuilder inner = OpBuilder::atBlockEnd(&block);
  for (Operation &o : from.without_terminator())
    inner.clone(o, map);
  // The body's values, through a yield the walk updates when it replaces
  // an op (a cond gains tangent results).
  auto primal =
      YieldOp::create(inner, loc,
                      llvm::to_vector(llvm::map_range(
                          cast<YieldOp>(from.getTerminator()).getValues(),
                          [&](Value v) { return map.lookupOrDefault(v); })));
  if (failed(forwardOps(block, tangent)))
    return failure();
  values.assign(primal.getValues().begin(), primal.getValues().end());
  inner.setInsertionPoint(primal);
  ADBuilder ad(inner, loc);
  for (Value v : values) {
    Value t = tangent.lookup(v);
    tangents.push_back(t                                ? t
                       : ADBuilder::isDifferentiable(v) ? ad.zerosLike(v)
                                                        : Value());
  }
  primal.erase();
  return success();
}

/// `slice` stacked along a new leading dim of `scan`'s length.
Type Differentiator::stacked(ScanOp scan, Type slice) {
  shape::DimExpr length =
      scan.getXs().empty()
          ? shape::DimExpr::constant(int64_t(*scan.getLength()))
          : getShape(scan.getXs().front().getType()).dims.front();
  auto t = cast<RankedTensorType>(slice);
  shape::TensorShape s = getShape(t);
  s.dims.insert(s.dims.begin(), length);
  return getTensorType(s, t.getElementType());
}

/// Forward mode through scan: a scan that also carries the carries'
/// tangents, takes the tangents of xs as inputs and stacks the tangents
/// of its outputs.
LogicalResult Differentiator::forwardScan(ScanOp scan,
                                          DenseMap<Value, Value> &tangent) {
  Location loc = scan.getLoc();
  Block &body = scan.getBody().front();
  unsigned nc = scan.getInits().size(), nx = scan.getXs().size();
  OpBuilder b(scan);
  ADBuilder ad(b, loc);
  SmallVector<unsigned> fc, fy, tx;
  for (auto [i, c] : llvm::enumerate(scan.getInits()))
    if (ADBuilder::isDifferentiable(c))
      fc.push_back(i);
  for (auto [j, x] : llvm::enumerate(scan.getXs()))
    if (tangent.lookup(x))
      tx.push_back(j);
  auto yields = body.getTerminator()->getOperands();
  for (unsigned j = nc; j < yields.size(); ++j)
    if (ADBuilder::isDifferentiable(yields[j]))
      fy.push_back(j - nc);
  SmallVector<Value> inits(scan.getInits()), xs(scan.getXs());
  for (unsigned i : fc) {
    Value t = tangent.lookup(scan.getInits()[i]);
    inits.push_back(t ? t : ad.zerosLike(scan.getInits()[i]));
  }
  for (unsigned j : tx)
    xs.push_back(tangent.lookup(scan.getXs()[j]));
  SmallVector<Type> types;
  for (unsigned i = 0; i < nc; ++i)
    types.push_back(scan.getResult(i).getType());
  for (unsigned i : fc)
    types.push_back(scan.getResult(i).getType());
  for (unsigned j = 0; j + nc < scan.getNumResults(); ++j)
    types.push_back(scan.getResult(nc + j).getType());
  for (unsigned j : fy)
    types.push_back(scan.getResult(nc + j).getType());
  auto next = ScanOp::create(b, loc, types, inits, xs, scan.getLengthAttr(),
                             scan.getReverseAttr());
  Block *block = new Block();
  next.getBody().push_back(block);
  SmallVector<Value> carries, dcarries, slices, dslices;
  for (unsigned i = 0; i < nc; ++i)
    carries.push_back(block->addArgument(body.getArgument(i).getType(), loc));
  for (unsigned i : fc)
    dcarries.push_back(block->addArgument(body.getArgument(i).getType(), loc));
  for (unsigned j = 0; j < nx; ++j)
    slices.push_back(
        block->addArgument(body.getArgument(nc + j).getType(), loc));
  for (unsigned j : tx)
    dslices.push_back(
        block->addArgument(body.getArgument(nc + j).getType(), loc));
  IRMapping map;
  map.map(body.getArguments().take_front(nc), carries);
  map.map(body.getArguments().drop_front(nc), slices);
  for (auto [k, i] : llvm::enumerate(fc))
    tangent[carries[i]] = dcarries[k];
  for (auto [k, j] : llvm::enumerate(tx))
    tangent[slices[j]] = dslices[k];
  SmallVector<Value> values, tangents;
  if (failed(forwardBody(body, *block, map, tangent, values, tangents)))
    return failure();
  SmallVector<Value> outs(values.begin(), values.begin() + nc);
  for (unsigned i : fc)
    outs.push_back(tangents[i]);
  outs.append(values.begin() + nc, values.end());
  for (unsigned j : fy)
    outs.push_back(tangents[nc + j]);
  OpBuilder end = OpBuilder::atBlockEnd(block);
  YieldOp::create(end, loc, outs);
  unsigned ny = scan.getNumResults() - nc;
  for (unsigned i = 0; i < nc; ++i)
    scan.getResult(i).replaceAllUsesWith(next.getResult(i));
  for (unsigned j = 0; j < ny; ++j)
    scan.getResult(nc + j).replaceAllUsesWith(
        next.getResult(nc + fc.size() + j));
  for (auto [k, i] : llvm::enumerate(fc))
    tangent[next.getResult(i)] = next.getResult(nc + k);
  for (auto [k, j] : llvm::enumerate(fy))
    tangent[next.getResult(nc + fc.size() + j)] =
        next.getResult(nc + fc.size() + ny + k);
  scan.erase();
  return success();
}

/// Reverse mode through scan. The forward scan also stacks the carries
/// each step starts from; the backward code is a scan in the opposite
/// direction over those, the xs and the outputs' cotangents, carrying the
/// carries' cotangents and the cotangents of the outer values the body
/// uses: each step recomputes its body and runs its backward code.
LogicalResult Differentiator::reverseScan(ScanOp scan, ArrayRef<Value> cts,
                                          DenseSet<Value> &active,
                                          DenseMap<Value, Value> &cotangent,
                                          OpBuilder &b) {
  Location loc = scan.getLoc();
  Block &body = scan.getBody().front();
  unsigned nc = scan.getInits().size(), nx = scan.getXs().size();
  unsigned ny = scan.getNumResults() - nc;
  // Forward: the same scan, stacking the carries as extra outputs.
  OpBuilder pb(scan);
  SmallVector<Type> types(scan.getResultTypes());
  for (unsigned i = 0; i < nc; ++i)
    types.push_back(stacked(scan, body.getArgument(i).getType()));
  auto primal = ScanOp::create(pb, loc, types, scan.getInits(), scan.getXs(),
                               scan.getLengthAttr(), scan.getReverseAttr());
  {
    IRMapping map;
    scan.getBody().cloneInto(&primal.getBody(), map);
    Block &pbody = primal.getBody().front();
    auto yield = cast<YieldOp>(pbody.getTerminator());
    SmallVector<Value> outs(yield.getValues());
    for (unsigned i = 0; i < nc; ++i)
      outs.push_back(pbody.getArgument(i));
    OpBuilder yb(yield);
    YieldOp::create(yb, yield.getLoc(), outs);
    yield.erase();
  }
  for (unsigned r = 0; r < scan.getNumResults(); ++r)
    scan.getResult(r).replaceAllUsesWith(primal.getResult(r));
  ADBuilder ad(b, loc);
  SmallVector<Value> free = freeActiveValues(scan, active);
  SmallVector<unsigned> fc, fx, fy;
  for (unsigned i = 0; i < nc; ++i)
    if (ADBuilder::isDifferentiable(primal.getResult(i)))
      fc.push_back(i);
  for (auto [j, x] : llvm::enumerate(scan.getXs()))
    if (ADBuilder::isDifferentiable(x))
      fx.push_back(j);
  for (unsigned j = 0; j < ny; ++j)
    if (ADBuilder::isDifferentiable(primal.getResult(nc + j)))
      fy.push_back(j);
  SmallVector<Value> inits, xs;
  for (unsigned i : fc)
    inits.push_back(cts[i] ? cts[i] : ad.zerosLike(primal.getResult(i)));
  for (Value f : free)
    inits.push_back(ad.zerosLike(f));
  for (unsigned i = 0; i < nc; ++i)
    xs.push_back(primal.getResult(scan.getNumResults() + i));
  for (Value x : scan.getXs())
    xs.push_back(x);
  for (unsigned j : fy)
    xs.push_back(cts[nc + j] ? cts[nc + j]
                             : ad.zerosLike(primal.getResult(nc + j)));
  SmallVector<Type> backTypes;
  for (Value v : inits)
    backTypes.push_back(v.getType());
  for (unsigned j : fx)
    backTypes.push_back(scan.getXs()[j].getType());
  auto back = ScanOp::create(b, loc, backTypes, inits, xs, scan.getLengthAttr(),
                             !scan.getReverse());
  Block *block = new Block();
  back.getBody().push_back(block);
  SmallVector<Value> ctc, accFree, carries, slices, cty;
  for (unsigned i : fc)
    ctc.push_back(block->addArgument(body.getArgument(i).getType(), loc));
  for (Value f : free)
    accFree.push_back(block->addArgument(f.getType(), loc));
  for (unsigned i = 0; i < nc; ++i)
    carries.push_back(block->addArgument(body.getArgument(i).getType(), loc));
  for (unsigned j = 0; j < nx; ++j)
    slices.push_back(
        block->addArgument(body.getArgument(nc + j).getType(), loc));
  auto yields = body.getTerminator()->getOperands();
  for (unsigned j : fy)
    cty.push_back(block->addArgument(yields[nc + j].getType(), loc));
  IRMapping map;
  map.map(body.getArguments().take_front(nc), carries);
  map.map(body.getArguments().drop_front(nc), slices);
  OpBuilder inner = OpBuilder::atBlockEnd(block);
  for (Operation &o : body.without_terminator())
    inner.clone(o, map);
  DenseMap<Value, Value> local;
  SmallVector<Value> roots;
  ADBuilder ia(inner, loc);
  auto seed = [&](Value v, Value c) {
    Value m = map.lookupOrDefault(v);
    if (!ADBuilder::isDifferentiable(m))
      return;
    local[m] = ia.accumulate(local.lookup(m), c);
    roots.push_back(m);
  };
  for (auto [k, i] : llvm::enumerate(fc))
    seed(yields[i], ctc[k]);
  for (auto [k, j] : llvm::enumerate(fy))
    seed(yields[nc + j], cty[k]);
  DenseSet<Value> localActive;
  for (unsigned i : fc)
    localActive.insert(carries[i]);
  for (unsigned j : fx)
    localActive.insert(slices[j]);
  for (Value f : free)
    localActive.insert(f);
  if (failed(reverseCloned(roots, nullptr, localActive, local, inner)))
    return failure();
  auto cotangentOf = [&](Value v) {
    Value c = local.lookup(v);
    return c ? c : ia.zerosLike(v);
  };
  SmallVector<Value> outs;
  for (unsigned i : fc)
    outs.push_back(cotangentOf(carries[i]));
  for (auto [k, f] : llvm::enumerate(free))
    outs.push_back(local.lookup(f) ? ia.add(accFree[k], local.lookup(f))
                                   : accFree[k]);
  for (unsigned j : fx)
    outs.push_back(cotangentOf(slices[j]));
  YieldOp::create(inner, loc, outs);
  unsigned r = 0;
  for (unsigned i : fc) {
    Value init = scan.getInits()[i];
    if (active.contains(init))
      cotangent[init] =
          ad.accumulate(cotangent.lookup(init), back.getResult(r));
    ++r;
  }
  for (Value f : free)
    cotangent[f] = ad.accumulate(cotangent.lookup(f), back.getResult(r++));
  for (unsigned j : fx) {
    Value x = scan.getXs()[j];
    if (active.contains(x))
      cotangent[x] = ad.accumulate(cotangent.lookup(x), back.getResult(r));
    ++r;
  }
  scan.erase();
  return success();
}

/// A 0-d i64 constant.
Value Differentiator::index(OpBuilder &b, Location loc, int64_t v) {
  auto type = RankedTensorType::get({}, b.getI64Type());
  return ConstantOp::create(
      b, loc, type, DenseElementsAttr::get(type, b.getI64IntegerAttr(v)));
}

/// Forward mode through while: the loop also carries the tangents of its
/// float carries (the condition only sees the values).
LogicalResult Differentiator::forwardWhile(WhileOp loop,
                                           DenseMap<Value, Value> &tangent) {
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  ADBuilder ad(b, loc);
  unsigned n = loop.getInits().size();
  SmallVector<unsigned> fc;
  SmallVector<Value> inits(loop.getInits());
  for (auto [i, c] : llvm::enumerate(loop.getInits()))
    if (ADBuilder::isDifferentiable(c)) {
      fc.push_back(i);
      Value t = tangent.lookup(c);
      inits.push_back(t ? t : ad.zerosLike(c));
    }
  SmallVector<Type> types = llvm::to_vector(
      llvm::map_range(inits, [](Value v) { return v.getType(); }));
  auto next = WhileOp::create(b, loc, types, inits, loop.getTripCountAttr());
  Block &cond = loop.getCondRegion().front();
  Block &body = loop.getBodyRegion().front();
  for (auto [from, to] : {std::pair(&cond, &next.getCondRegion()),
                          std::pair(&body, &next.getBodyRegion())}) {
    Block *block = new Block();
    to->push_back(block);
    for (Type t : types)
      block->addArgument(t, loc);
    IRMapping map;
    map.map(from->getArguments(), block->getArguments().take_front(n));
    if (from == &cond) {
      // The condition sees the carries only.
      OpBuilder inner = OpBuilder::atBlockEnd(block);
      for (Operation &o : from->without_terminator())
        inner.clone(o, map);
      inner.clone(*from->getTerminator(), map);
      continue;
    }
    for (auto [k, i] : llvm::enumerate(fc))
      tangent[block->getArgument(i)] = block->getArgument(n + k);
    SmallVector<Value> outs, tangents;
    if (failed(forwardBody(*from, *block, map, tangent, outs, tangents)))
      return failure();
    for (unsigned i : fc)
      outs.push_back(tangents[i]);
    OpBuilder end = OpBuilder::atBlockEnd(block);
  YieldOp::create(end, loc, outs);
  }
  for (unsigned i = 0; i < n; ++i)
    loop.getResult(i).replaceAllUsesWith(next.getResult(i));
  for (auto [k, i] : llvm::enumerate(fc))
    tangent[next.getResult(i)] = next.getResult(n + k);
  loop.erase();
  return success();
}

/// Reverse mode through while, for any number of iterations: the forward
/// loop also counts its iterations n; the backward loop runs k = n-1 ... 0,
/// each time recomputing the carry c_k from the initial one (an inner
/// loop of k body steps) and running the body's backward code at c_k.
/// Only the initial carry is kept (O(n^2) body evaluations, O(1) carries).
LogicalResult Differentiator::reverseWhile(WhileOp loop, ArrayRef<Value> cts,
                                           DenseSet<Value> &active,
                                           DenseMap<Value, Value> &cotangent,
                                           OpBuilder &b) {
  Location loc = loop.getLoc();
  Block &cond = loop.getCondRegion().front();
  Block &body = loop.getBodyRegion().front();
  unsigned n = loop.getInits().size();
  auto cloneInto = [&](Block &from, Block *to, ValueRange args, OpBuilder &at) {
    IRMapping map;
    map.map(from.getArguments(), args);
    for (Operation &o : from.without_terminator())
      at.clone(o, map);
    return llvm::to_vector(
        llvm::map_range(from.getTerminator()->getOperands(),
                        [&](Value v) { return map.lookupOrDefault(v); }));
  };
  // A loop over (carries, counter) with the original condition; the body
  // steps the carries and the counter.
  auto countingLoop = [&](OpBuilder &at, ValueRange inits, Value limit) {
    SmallVector<Value> all(inits);
    all.push_back(index(at, loc, 0));
    SmallVector<Type> types = llvm::to_vector(
        llvm::map_range(all, [](Value v) { return v.getType(); }));
    auto w = WhileOp::create(at, loc, types, all, IntegerAttr());
    Block *c = new Block(), *d = new Block();
    w.getCondRegion().push_back(c);
    w.getBodyRegion().push_back(d);
    for (Type t : types) {
      c->addArgument(t, loc);
      d->addArgument(t, loc);
    }
    OpBuilder cb = OpBuilder::atBlockEnd(c);
    Value go;
    if (limit)
      go = CompareOp::create(cb, loc, CompareDirection::lt, c->getArgument(n),
                             limit);
    else
      go = cloneInto(cond, c, c->getArguments().take_front(n), cb)[0];
    YieldOp::create(cb, loc, ValueRange{go});
    OpBuilder db = OpBuilder::atBlockEnd(d);
    SmallVector<Value> next =
        cloneInto(body, d, d->getArguments().take_front(n), db);
    next.push_back(
        AddOp::create(db, loc, d->getArgument(n), index(db, loc, 1)));
    YieldOp::create(db, loc, next);
    return w;
  };
  // Forward: the same loop, counting.
  OpBuilder pb(loop);
  auto counted = countingLoop(pb, loop.getInits(), Value());
  for (unsigned i = 0; i < n; ++i)
    loop.getResult(i).replaceAllUsesWith(counted.getResult(i));
  Value iterations = counted.getResult(n);
  // Backward.
  ADBuilder ad(b, loc);
  SmallVector<Value> free = freeActiveValues(loop, active);
  SmallVector<unsigned> fc;
  for (unsigned i = 0; i < n; ++i)
    if (ADBuilder::isDifferentiable(loop.getInits()[i]))
      fc.push_back(i);
  SmallVector<Value> inits{ad.sub(iterations, index(b, loc, 1))};
  for (unsigned i : fc)
    inits.push_back(cts[i] ? cts[i] : ad.zerosLike(loop.getResult(i)));
  for (Value f : free)
    inits.push_back(ad.zerosLike(f));
  SmallVector<Type> types = llvm::to_vector(
      llvm::map_range(inits, [](Value v) { return v.getType(); }));
  auto back = WhileOp::create(b, loc, types, inits, IntegerAttr());
  Block *c = new Block(), *d = new Block();
  back.getCondRegion().push_back(c);
  back.getBodyRegion().push_back(d);
  for (Type t : types) {
    c->addArgument(t, loc);
    d->addArgument(t, loc);
  }
  {
    OpBuilder cb = OpBuilder::atBlockEnd(c);
    Value go = CompareOp::create(cb, loc, CompareDirection::ge,
                                 c->getArgument(0), index(cb, loc, 0));
    YieldOp::create(cb, loc, ValueRange{go});
  }
  OpBuilder db = OpBuilder::atBlockEnd(d);
  Value k = d->getArgument(0);
  // c_k: k steps from the initial carry.
  auto recompute = countingLoop(db, loop.getInits(), k);
  SmallVector<Value> ck(recompute.getResults().take_front(n));
  SmallVector<Value> stepped = cloneInto(body, d, ck, db);
  DenseMap<Value, Value> local;
  SmallVector<Value> roots;
  ADBuilder ia(db, loc);
  for (auto [j, i] : llvm::enumerate(fc)) {
    Value v = stepped[i];
    if (!ADBuilder::isDifferentiable(v))
      continue;
    local[v] = ia.accumulate(local.lookup(v), d->getArgument(1 + j));
    roots.push_back(v);
  }
  DenseSet<Value> localActive;
  for (unsigned i : fc)
    localActive.insert(ck[i]);
  for (Value f : free)
    localActive.insert(f);
  if (failed(reverseCloned(roots, recompute, localActive, local, db)))
    return failure();
  SmallVector<Value> outs{ia.sub(k, index(db, loc, 1))};
  for (unsigned i : fc) {
    Value g = local.lookup(ck[i]);
    outs.push_back(g ? g : ia.zerosLike(ck[i]));
  }
  for (auto [j, f] : llvm::enumerate(free)) {
    Value acc = d->getArgument(1 + fc.size() + j);
    Value g = local.lookup(f);
    outs.push_back(g ? ia.add(acc, g) : acc);
  }
  YieldOp::create(db, loc, outs);
  for (auto [j, i] : llvm::enumerate(fc)) {
    Value init = loop.getInits()[i];
    if (active.contains(init))
      cotangent[init] =
          ad.accumulate(cotangent.lookup(init), back.getResult(1 + j));
  }
  for (auto [j, f] : llvm::enumerate(free))
    cotangent[f] =
        ad.accumulate(cotangent.lookup(f), back.getResult(1 + fc.size() + j));
  loop.erase();
  return success();
}

/// The result types of calling `fn` with `args` (its shape symbols bound).
FailureOr<SmallVector<Type>>
Differentiator::callTypes(Operation *at, StringRef fn, ValueRange args) {
  auto callee = module.lookupSymbol<func::FuncOp>(fn);
  if (!callee)
    return at->emitOpError()
           << "refers to @" << fn << ", which is not a function";
  TypeInference ti(at->getContext(), at->getLoc(),
                   at->getName().getStringRef());
  if (failed(inferCallResults(ti, callee.getFunctionType(), args.getTypes())) ||
      ti.diag().failed())
    return at->emitOpError() << "calling @" << fn << ": " << ti.message();
  return SmallVector<Type>(ti.getResults());
}

/// custom_jvp in forward mode: the user's jvp function on the arguments
/// and their tangents (zeros where there are none).
LogicalResult Differentiator::forwardCustom(CustomJvpOp op,
                                            DenseMap<Value, Value> &tangent) {
  OpBuilder b(op);
  ADBuilder ad(b, op.getLoc());
  SmallVector<Value> args(op.getArgs());
  for (Value a : op.getArgs()) {
    Value t = tangent.lookup(a);
    args.push_back(t ? t : ad.zerosLike(a));
  }
  auto types = callTypes(op, op.getJvp(), args);
  if (failed(types))
    return failure();
  auto call = CallOp::create(b, op.getLoc(), *types, op.getJvpAttr(), args,
                             ArrayAttr(), ArrayAttr());
  unsigned n = op.getNumResults();
  if (call.getNumResults() != 2 * n)
    return op.emitOpError() << "@" << op.getJvp() << " returns "
                            << call.getNumResults() << " values; expected "
                            << 2 * n << " (the results, then their tangents)";
  for (unsigned i = 0; i < n; ++i) {
    op.getResult(i).replaceAllUsesWith(call.getResult(i));
    if (ADBuilder::isDifferentiable(call.getResult(i)))
      tangent[call.getResult(i)] = call.getResult(n + i);
  }
  op.erase();
  return success();
}

/// custom_vjp in reverse mode: the primal call becomes the user's fwd
/// (results, then residuals); the backward code calls bwd on the
/// residuals and the results' cotangents (zeros where there are none).
LogicalResult Differentiator::reverseCustom(CustomVjpOp op, ArrayRef<Value> cts,
                                            DenseSet<Value> &active,
                                            DenseMap<Value, Value> &cotangent,
                                            OpBuilder &b) {
  OpBuilder pb(op);
  auto fwdTypes = callTypes(op, op.getFwd(), op.getArgs());
  if (failed(fwdTypes))
    return failure();
  unsigned n = op.getNumResults();
  if (fwdTypes->size() < n)
    return op.emitOpError()
           << "@" << op.getFwd() << " returns " << fwdTypes->size()
           << " values; expected the " << n << " results, then residuals";
  auto fwd = CallOp::create(pb, op.getLoc(), *fwdTypes, op.getFwdAttr(),
                            op.getArgs(), ArrayAttr(), ArrayAttr());
  for (unsigned i = 0; i < n; ++i)
    op.getResult(i).replaceAllUsesWith(fwd.getResult(i));
  ADBuilder ad(b, op.getLoc());
  SmallVector<Value> args(fwd.getResults().drop_front(n));
  for (unsigned i = 0; i < n; ++i)
    args.push_back(cts[i] ? cts[i] : ad.zerosLike(fwd.getResult(i)));
  auto bwdTypes = callTypes(op, op.getBwd(), args);
  if (failed(bwdTypes))
    return failure();
  if (bwdTypes->size() != op.getArgs().size())
    return op.emitOpError()
           << "@" << op.getBwd() << " returns " << bwdTypes->size()
           << " values; expected one "
           << "cotangent per argument (" << op.getArgs().size() << ")";
  auto bwd = CallOp::create(b, op.getLoc(), *bwdTypes, op.getBwdAttr(), args,
                            ArrayAttr(), ArrayAttr());
  for (auto [a, c] : llvm::zip(op.getArgs(), bwd.getResults()))
    if (active.contains(a) && ADBuilder::isDifferentiable(a))
      cotangent[a] = ad.accumulate(cotangent.lookup(a), c);
  op.erase();
  return success();
}

/// checkpoint: the forward pass keeps only the region's operands and
/// results; the backward code calls a private function that recomputes
/// the body from the operands and runs its backward code (a function, so
/// the recomputation is not merged back into the forward pass's copy of
/// the same ops and their results are not kept alive in between).
LogicalResult Differentiator::reverseCheckpoint(
    CheckpointOp op, ArrayRef<Value> cts, DenseSet<Value> &active,
    DenseMap<Value, Value> &cotangent, OpBuilder &b) {
  Block &body = op.getBody().front();
  SmallVector<unsigned> wanted, seeded;
  for (auto [i, a] : llvm::enumerate(op.getArgs()))
    if (active.contains(a) && ADBuilder::isDifferentiable(a))
      wanted.push_back(i);
  for (auto [i, c] : llvm::enumerate(cts))
    if (c)
      seeded.push_back(i);
  if (wanted.empty() || seeded.empty())
    return success();
  auto parent = op->getParentOfType<func::FuncOp>();
  std::string name = (parent.getName() + "_recompute").str();
  for (int k = 1; module.lookupSymbol(name); ++k)
    name = (parent.getName() + "_recompute" + Twine(k)).str();
  SmallVector<Type> inputs(op.getArgs().getTypes());
  for (unsigned i : seeded)
    inputs.push_back(cts[i].getType());
  SmallVector<Type> outputs;
  for (unsigned i : wanted)
    outputs.push_back(op.getArgs()[i].getType());
  OpBuilder mb(parent);
  mb.setInsertionPointAfter(parent);
  auto fn = func::FuncOp::create(mb, op.getLoc(), name,
                                 mb.getFunctionType(inputs, outputs));
  fn.setPrivate();
  // Inlined again once no CSE can merge it with the forward pass (see
  // -tessera-inline-recompute).
  fn->setAttr("tgraph.recompute", mb.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  OpBuilder fb = OpBuilder::atBlockEnd(entry);
  IRMapping map;
  map.map(body.getArguments(),
          entry->getArguments().take_front(op.getArgs().size()));
  for (Operation &o : body.without_terminator())
    fb.clone(o, map);
  DenseMap<Value, Value> local;
  SmallVector<Value> roots;
  for (auto [k, i] : llvm::enumerate(seeded)) {
    Value v = map.lookupOrDefault(body.getTerminator()->getOperand(i));
    Value seed = entry->getArgument(op.getArgs().size() + k);
    if (!ADBuilder::isDifferentiable(v))
      continue;
    local[v] =
        local.lookup(v) ? ADBuilder(fb, op.getLoc()).add(local[v], seed) : seed;
    roots.push_back(v);
  }
  DenseSet<Value> localActive;
  for (unsigned i : wanted)
    localActive.insert(entry->getArgument(i));
  if (failed(reverseCloned(roots, nullptr, localActive, local, fb)))
    return failure();
  ADBuilder fa(fb, op.getLoc());
  SmallVector<Value> grads;
  for (unsigned i : wanted) {
    Value c = local.lookup(entry->getArgument(i));
    grads.push_back(c ? c : fa.zerosLike(entry->getArgument(i)));
  }
  func::ReturnOp::create(fb, op.getLoc(), grads);
  SmallVector<Value> args(op.getArgs());
  for (unsigned i : seeded)
    args.push_back(cts[i]);
  auto call = CallOp::create(b, op.getLoc(), outputs,
                             FlatSymbolRefAttr::get(fn.getSymNameAttr()), args,
                             ArrayAttr(), ArrayAttr());
  ADBuilder ad(b, op.getLoc());
  for (auto [i, c] : llvm::zip(wanted, call.getResults())) {
    Value a = op.getArgs()[i];
    cotangent[a] = ad.accumulate(cotangent.lookup(a), c);
  }
  return success();
}

template LogicalResult
Differentiator::forwardImplicit<FixedPointOp>(FixedPointOp,
                                              DenseMap<Value, Value> &, bool);
template LogicalResult
Differentiator::forwardImplicit<SolveOp>(SolveOp, DenseMap<Value, Value> &,
                                         bool);
template LogicalResult Differentiator::reverseImplicit<FixedPointOp>(
    FixedPointOp, Value, DenseSet<Value> &, DenseMap<Value, Value> &,
    OpBuilder &, bool);
template LogicalResult
Differentiator::reverseImplicit<SolveOp>(SolveOp, Value, DenseSet<Value> &,
                                         DenseMap<Value, Value> &, OpBuilder &,
                                         bool);
