//===- LowerCompute.cpp - Reductions, dots, casts and masks ---===//
//
// Deterministic reductions (registers, shuffle butterflies, warps through
// shared memory), FMA and mma.sync dots, iota, casts and causal masks.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "tessera/Conversion/RandomBits.h"

using namespace mlir;
using namespace mlir::tessera::ttile;
using namespace mlir::tessera::ttile::detail;
using mlir::tessera::philox;
using mlir::tessera::PhiloxWords;
using mlir::tessera::roundStochastically;
using mlir::tessera::uniformFraction;

Value KernelLowering::combine(Location loc, ReduceKind kind, Value x, Value y) {
  bool f = isa<FloatType>(x.getType());
  switch (kind) {
  case ReduceKind::sum:
    return f ? arith::AddFOp::create(b, loc, x, y).getResult()
             : arith::AddIOp::create(b, loc, x, y).getResult();
  case ReduceKind::prod:
    return f ? arith::MulFOp::create(b, loc, x, y).getResult()
             : arith::MulIOp::create(b, loc, x, y).getResult();
  case ReduceKind::max:
    return f ? arith::MaximumFOp::create(b, loc, x, y).getResult()
             : arith::MaxSIOp::create(b, loc, x, y).getResult();
  case ReduceKind::min:
    return f ? arith::MinimumFOp::create(b, loc, x, y).getResult()
             : arith::MinSIOp::create(b, loc, x, y).getResult();
  }
  llvm_unreachable("reduce kind");
}

Value KernelLowering::identity(Location loc, ReduceKind kind, Type t) {
  if (auto ft = dyn_cast<FloatType>(t)) {
    double v = kind == ReduceKind::sum    ? 0.0
               : kind == ReduceKind::prod ? 1.0
               : kind == ReduceKind::max  ? -INFINITY
                                          : INFINITY;
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, v));
  }
  unsigned w = t.getIntOrFloatBitWidth();
  APInt v = kind == ReduceKind::sum    ? APInt(w, 0)
            : kind == ReduceKind::prod ? APInt(w, 1)
            : kind == ReduceKind::max  ? APInt::getSignedMinValue(w)
                                       : APInt::getSignedMaxValue(w);
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, v));
}

/// `v` from the lane `lane ^ offset` (32- and 64-bit values).
Value KernelLowering::shuffleXor(Location loc, Value v, int64_t offset) {
  Type t = v.getType();
  unsigned bits = t.getIntOrFloatBitWidth();
  auto shuffle32 = [&](Value x) -> Value {
    return gpu::ShuffleOp::create(b, loc, x, int32_t(offset), 32,
                                  gpu::ShuffleMode::XOR)
        .getShuffleResult();
  };
  if (bits == 32)
    return shuffle32(v);
  Type i64 = b.getI64Type(), i32 = b.getI32Type();
  Value x = t.isInteger(64) ? v : arith::BitcastOp::create(b, loc, i64, v);
  Value lo = arith::TruncIOp::create(b, loc, i32, x);
  Value hi = arith::TruncIOp::create(
      b, loc, i32,
      arith::ShRUIOp::create(b, loc, x,
                             arith::ConstantIntOp::create(b, loc, i64, 32)));
  lo = arith::ExtUIOp::create(b, loc, i64, shuffle32(lo));
  hi = arith::ExtUIOp::create(b, loc, i64, shuffle32(hi));
  Value y = arith::OrIOp::create(
      b, loc, lo,
      arith::ShLIOp::create(b, loc, hi,
                            arith::ConstantIntOp::create(b, loc, i64, 32)));
  return t.isInteger(64) ? y : arith::BitcastOp::create(b, loc, t, y);
}

/// From this many warps along a reduced dim, their partial results are
/// combined by a butterfly over the lanes that read them (one shared load
/// a thread) rather than read one after another by every thread.
static constexpr int64_t kShuffledWarpSums = 16;

LogicalResult KernelLowering::lowerReduce(ReduceOp op) {
  Location loc = op.getLoc();
  auto from = dist(op, op.getSource().getType());
  auto to = dist(op, op.getType());
  if (failed(from) || failed(to))
    return failure();
  unsigned dim = op.getDim();
  // Which register, lane and warp bits move along the reduced dim; each
  // must move along it alone.
  auto alongDim = [&](ArrayRef<Basis> bases, SmallVector<unsigned> &bits,
                      SmallVector<unsigned> &others) -> bool {
    for (auto [i, basis] : llvm::enumerate(bases)) {
      bool other = false;
      for (unsigned d = 0; d < basis.size(); ++d)
        other |= d != dim && basis[d] != 0;
      if (basis[dim] == 0)
        others.push_back(i);
      else if (other)
        return false;
      else
        bits.push_back(i);
    }
    return true;
  };
  SmallVector<unsigned> regBits, keptRegBits, laneBits, warpBits, unused;
  if (!alongDim(from->regBases, regBits, keptRegBits) ||
      !alongDim(from->laneBases, laneBits, unused) ||
      !alongDim(from->warpBases, warpBits, unused))
    return op.emitError("the operand's layout moves along the reduced dim "
                        "and another at once");
  // The operand's distribution less the reduced dim, and how the
  // result's registers map onto it.
  Distribution kept;
  kept.shape = to->shape;
  auto drop = [&](const Basis &b) {
    Basis r(b);
    r.erase(r.begin() + dim);
    return r;
  };
  for (unsigned i : keptRegBits)
    kept.regBases.push_back(drop(from->regBases[i]));
  for (const Basis &b : from->laneBases)
    kept.laneBases.push_back(drop(b));
  for (const Basis &b : from->warpBases)
    kept.warpBases.push_back(drop(b));
  auto resultMap = registerMap(*to, kept, [](const Basis &c) { return c; });
  if (failed(resultMap))
    return op.emitError("the result's layout is not the slice of the "
                        "operand's along the reduced dim");

  ReduceKind kind = op.getKind();
  Type elt = op.getType().getElementType();
  unsigned width = elt.getIntOrFloatBitWidth();
  // Narrow values are combined in 32 bits.
  Type work = elt;
  if (width < 32)
    work = isa<FloatType>(elt) ? Type(b.getF32Type()) : Type(b.getI32Type());
  auto widen = [&](Value x) -> Value {
    if (work == elt)
      return x;
    if (isa<FloatType>(elt))
      return arith::ExtFOp::create(b, loc, work, x);
    return arith::ExtSIOp::create(b, loc, work, x);
  };
  Regs vals = tiles.lookup(op.getSource());
  SmallVector<Value> bases = threadBases(loc, *from);
  Value ident = identity(loc, kind, work);
  // Within the thread: for each kept register, its registers along dim.
  Regs partial;
  for (int64_t k = 0, nk = kept.numRegs(); k < nk; ++k) {
    int64_t base = 0;
    for (auto [bit, i] : llvm::enumerate(keptRegBits))
      if (k >> bit & 1)
        base |= int64_t(1) << i;
    Value acc;
    for (int64_t c = 0, nc = int64_t(1) << regBits.size(); c < nc; ++c) {
      int64_t r = base;
      for (auto [bit, i] : llvm::enumerate(regBits))
        if (c >> bit & 1)
          r |= int64_t(1) << i;
      Value x = widen(vals[r]);
      if (from->wraps(dim)) {
        // Replicated elements count once.
        Value cd = coord(loc, *from, bases, r, dim, /*wrap=*/false);
        x = arith::SelectOp::create(
            b, loc, lessThan(loc, cd, index(from->shape[dim])), x, ident);
      }
      acc = acc ? combine(loc, kind, acc, x) : x;
    }
    partial.push_back(acc);
  }
  // Across the lanes of a warp: a butterfly leaves every lane the same
  // value (each step combines two values in either order, which IEEE
  // sums, products, maxima and minima give bit for bit).
  for (unsigned bit : laneBits)
    for (Value &p : partial)
      p = combine(loc, kind, p, shuffleXor(loc, p, int64_t(1) << bit));
  // Across warps: through shared memory, in warp order.
  if (!warpBits.empty()) {
    int64_t n = partial.size();
    beginScratch();
    SharedArray buf = sharedBuffer(work, numWarps * 32 * n);
    Value tid = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, warp, index(32)), lane);
    auto slot = [&](Value thread, int64_t r) -> Value {
      return arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, thread, index(n)), index(r));
    };
    gpu::BarrierOp::create(b, loc);
    for (int64_t r = 0; r < n; ++r)
      storeShared(loc, toStorage(loc, partial[r]), buf, slot(tid, r),
                  unsigned(buf.element.getIntOrFloatBitWidth() / 8));
    gpu::BarrierOp::create(b, loc);
    int64_t mask = 0;
    for (unsigned bit : warpBits)
      mask |= int64_t(1) << bit;
    Value warp0 = arith::AndIOp::create(b, loc, warp, index(~mask));
    int64_t sources = int64_t(1) << warpBits.size();
    // Whether all the lanes of a warp hold its partials (every lane bit
    // moves along the reduced dim or holds copies); not so when lanes run
    // along a kept dim (a column sum).
    bool lanesAgree = llvm::all_of(from->laneBases, [&](const Basis &basis) {
      return basis[dim] != 0 ||
             llvm::all_of(basis, [](int64_t v) { return v == 0; });
    });
    // Partial r of warp `srcWarp`, as this thread's lane stored it.
    auto readPartial = [&](Value srcWarp, int64_t r) -> Value {
      Value srcTid = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, srcWarp, index(32)), lane);
      return fromStorage(
          loc,
          loadShared(loc, buf.element, buf, slot(srcTid, r),
                     unsigned(buf.element.getIntOrFloatBitWidth() / 8)),
          work);
    };
    if (sources >= kShuffledWarpSums && lanesAgree) {
      // Many warps: lane l reads the partial of the l-th warp (mod the
      // warps), and a butterfly over those lanes combines them. A thread
      // then issues one shared load and log2(warps) shuffles a value
      // instead of a load and a combine for every warp; every lane ends
      // with the same bits (each step combines the same two values).
      Value c = arith::AndIOp::create(b, loc, lane, index(sources - 1));
      Value srcWarp = warp0;
      for (auto [k, bit] : llvm::enumerate(warpBits)) {
        // Bit k of c goes to bit `bit` of the warp index.
        Value one = arith::AndIOp::create(
            b, loc, arith::ShRUIOp::create(b, loc, c, index(int64_t(k))),
            index(1));
        srcWarp = arith::OrIOp::create(
            b, loc, srcWarp,
            arith::ShLIOp::create(b, loc, one, index(int64_t(bit))));
      }
      for (int64_t r = 0; r < n; ++r) {
        Value x = readPartial(srcWarp, r);
        for (int64_t step = 1; step < sources; step <<= 1)
          x = combine(loc, kind, x, shuffleXor(loc, x, step));
        partial[r] = x;
      }
    } else {
      // Every thread reads the warps' partials and combines them in warp
      // order.
      for (int64_t c = 0; c < sources; ++c) {
        int64_t offset = 0;
        for (auto [k, bit] : llvm::enumerate(warpBits))
          if (c >> k & 1)
            offset |= int64_t(1) << bit;
        Value srcWarp = arith::OrIOp::create(b, loc, warp0, index(offset));
        for (int64_t r = 0; r < n; ++r) {
          Value x = readPartial(srcWarp, r);
          partial[r] = c == 0 ? x : combine(loc, kind, partial[r], x);
        }
      }
    }
  }
  if (work != elt)
    for (Value &p : partial)
      p = isa<FloatType>(elt)
              ? arith::TruncFOp::create(b, loc, elt, p).getResult()
              : arith::TruncIOp::create(b, loc, elt, p).getResult();
  Regs out;
  for (int64_t r : *resultMap)
    out.push_back(partial[r]);
  tiles[op.getResult()] = std::move(out);
  return success();
}

LogicalResult KernelLowering::lowerIota(IotaOp op) {
  Location loc = op.getLoc();
  auto d = dist(op, op.getType());
  if (failed(d))
    return failure();
  Type elt = op.getType().getElementType();
  SmallVector<Value> bases = threadBases(loc, *d);
  Regs out;
  for (int64_t r = 0, n = d->numRegs(); r < n; ++r)
    out.push_back(arith::IndexCastOp::create(
        b, loc, elt, coord(loc, *d, bases, r, op.getDim())));
  tiles[op.getResult()] = std::move(out);
  return success();
}

LogicalResult KernelLowering::lowerCast(CastOp op) {
  Location loc = op.getLoc();
  if (op.getStochasticRound())
    return lowerStochasticCast(op);
  Type from = op.getSource().getType().getElementType();
  Type to = op.getType().getElementType();
  // Saturating: the value, widened exactly to f32 (f64 where either type
  // is f64), clamped to the target's finite range, then converted (NaN
  // stays NaN: minimumf and maximumf propagate it).
  Type work;
  Value satHi, satLo;
  if (op.getSaturate()) {
    auto target = dyn_cast<FloatType>(to);
    if (!target || !isa<FloatType>(from))
      return op.emitError() << "saturate clamps a float to a float type's "
                               "finite range; got "
                            << from << " -> " << to;
    work = from.isF64() || to.isF64() ? Type(b.getF64Type())
                                      : Type(b.getF32Type());
    APFloat big = APFloat::getLargest(target.getFloatSemantics());
    bool lost = false;
    big.convert(cast<FloatType>(work).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
    satHi = arith::ConstantOp::create(b, loc, b.getFloatAttr(work, big));
    satLo = arith::ConstantOp::create(b, loc, b.getFloatAttr(work, -big));
  }
  Type source = from;
  if (work)
    from = work;
  Regs out;
  for (Value x : tiles.lookup(op.getSource())) {
    if (satHi) {
      if (source != work)
        x = arith::ExtFOp::create(b, loc, work, x);
      x = arith::MaximumFOp::create(
          b, loc, arith::MinimumFOp::create(b, loc, x, satHi), satLo);
    }
    Value y = x;
    if (from == to)
      y = x;
    else if (isa<FloatType>(from) && isa<FloatType>(to)) {
      unsigned fw = from.getIntOrFloatBitWidth();
      unsigned tw = to.getIntOrFloatBitWidth();
      // f16 <-> bf16: through f32, which holds both exactly (one rounding).
      if (fw == tw)
        x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
      y = fw < tw ? arith::ExtFOp::create(b, loc, to, x).getResult()
                  : arith::TruncFOp::create(b, loc, to, x).getResult();
    } else if (isa<FloatType>(to))
      y = from.isInteger(1)
              ? arith::UIToFPOp::create(b, loc, to, x).getResult()
              : arith::SIToFPOp::create(b, loc, to, x).getResult();
    else if (isa<FloatType>(from))
      y = arith::FPToSIOp::create(b, loc, to, x);
    else if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      y = from.isInteger(1) ? arith::ExtUIOp::create(b, loc, to, x).getResult()
                            : arith::ExtSIOp::create(b, loc, to, x).getResult();
    else
      y = arith::TruncIOp::create(b, loc, to, x);
    out.push_back(y);
  }
  tiles[op.getResult()] = std::move(out);
  return success();
}

/// A stochastically rounded cast. Each element draws the Philox block of
/// key (seed, 0) and counter (its row-major place in the tile, the
/// program's linear index x + X (y + Y z), 3, 0), and rounds by
/// roundStochastically in f32 with a 24-bit draw (f64 and a 53-bit draw
/// for f64 sources). The same seed, program and place draw the same bits:
/// kernels vary the seed between steps and loop iterations.
LogicalResult KernelLowering::lowerStochasticCast(CastOp op) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getType();
  auto target = cast<FloatType>(type.getElementType());
  Type from = op.getSource().getType().getElementType();
  auto d = dist(op, type);
  if (failed(d))
    return failure();
  FloatType work =
      from.isF64() ? FloatType(b.getF64Type()) : FloatType(b.getF32Type());
  Value seed = map.lookup(op.getSeed());
  auto block = [&](gpu::Dimension dim) -> Value {
    return gpu::BlockIdOp::create(b, loc, dim);
  };
  auto grid = [&](gpu::Dimension dim) -> Value {
    return gpu::GridDimOp::create(b, loc, dim);
  };
  // (Along x, the program's: several programs may share a block.)
  Value program = arith::AddIOp::create(
      b, loc, programId(loc, 0),
      arith::MulIOp::create(
          b, loc, numPrograms(loc, 0),
          arith::AddIOp::create(
              b, loc, block(gpu::Dimension::y),
              arith::MulIOp::create(b, loc, grid(gpu::Dimension::y),
                                    block(gpu::Dimension::z)))));
  Type i32 = b.getI32Type();
  program = arith::IndexCastUIOp::create(b, loc, i32, program);
  Value zero = i32Constant(b, loc, 0), stream = i32Constant(b, loc, 3);
  SmallVector<Value> bases = threadBases(loc, *d);
  Regs src = tiles.lookup(op.getSource());
  Regs out;
  for (int64_t r = 0, n = d->numRegs(); r < n; ++r) {
    Value place = index(0);
    for (unsigned i = 0; i < type.getRank(); ++i)
      place = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, place, index(type.getDimSize(i))),
          coord(loc, *d, bases, r, i));
    PhiloxWords w = philox(b, loc, seed, zero,
                           {arith::IndexCastUIOp::create(b, loc, i32, place),
                            program, stream, zero});
    Value u = uniformFraction(b, loc, work, w[0], w[1]);
    Value x = src[r];
    if (from != work)
      x = arith::ExtFOp::create(b, loc, work, x);
    out.push_back(roundStochastically(b, loc, x, target, u, op.getSaturate()));
  }
  tiles[op.getResult()] = std::move(out);
  return success();
}

LogicalResult KernelLowering::lowerMask(Operation *op, Value col0, int64_t span,
                                        Value bound, int64_t rowCoef,
                                        Value limit) {
  Location loc = op->getLoc();
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  auto d = dist(op, type);
  if (failed(d))
    return failure();
  Value any = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::sgt,
      arith::AddIOp::create(b, loc, col0,
                            arith::ConstantIndexOp::create(b, loc, span)),
      bound);
  Regs vals = tiles.lookup(op->getOperand(0));
  SmallVector<Type> types;
  for (Value v : vals)
    types.push_back(v.getType());
  // `any` is the same in every thread of the program: the branch costs a
  // block without masked scores one uniform jump.
  auto branch = scf::IfOp::create(b, loc, types, any, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&branch.getThenRegion().front());
    SmallVector<Value> bases = threadBases(loc, *d);
    Value ninf = arith::ConstantOp::create(
        b, loc, b.getFloatAttr(type.getElementType(), -INFINITY));
    auto scaled = [&](Value colPart, Value rowPart) -> Value {
      if (rowCoef == 0)
        return colPart;
      return arith::SubIOp::create(
          b, loc, colPart,
          arith::MulIOp::create(b, loc, rowPart, index(rowCoef)));
    };
    // A coordinate is the thread's base plus a constant of the register
    // (unless the layout wraps the tile): the test is then one scalar of
    // the thread, `limit - (its part of col - rowCoef * row)`, against a
    // constant per register. (Comparing col + row0 against row + col0 per
    // element instead has the compiler keep each element's coordinates in
    // registers across the loop around it.)
    bool exact = !d->wraps(0) && !d->wraps(1);
    Value rest;
    if (exact)
      rest = arith::IndexCastOp::create(
          b, loc, b.getI32Type(),
          arith::SubIOp::create(b, loc, limit, scaled(bases[1], bases[0])));
    SmallVector<Value> out;
    for (int64_t r = 0, n = d->numRegs(); r < n; ++r) {
      Value hide;
      if (exact) {
        Basis c = d->regCoord(r);
        hide = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::slt, rest,
            arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                         c[1] - rowCoef * c[0]));
      } else {
        hide = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::sgt,
            scaled(coord(loc, *d, bases, r, 1), coord(loc, *d, bases, r, 0)),
            limit);
      }
      out.push_back(arith::SelectOp::create(b, loc, hide, ninf, vals[r]));
    }
    scf::YieldOp::create(b, loc, out);
    b.setInsertionPointToEnd(&branch.getElseRegion().front());
    scf::YieldOp::create(b, loc, SmallVector<Value>(vals));
  }
  tiles[op->getResult(0)] = SmallVector<Value>(branch.getResults());
  return success();
}

LogicalResult KernelLowering::lowerMaskCausal(MaskCausalOp op) {
  Location loc = op.getLoc();
  Value row0 = map.lookup(op.getRowOffset());
  Value col0 = map.lookup(op.getColOffset());
  // Masked scores exist when the block's last key comes after its first
  // query; key col0 + col is masked for query row0 + row when
  // col - row > row0 - col0.
  int64_t n = op.getType().getShape()[1];
  return lowerMask(op, col0, n - 1, row0, /*rowCoef=*/1,
                   arith::SubIOp::create(b, loc, row0, col0));
}

LogicalResult KernelLowering::lowerMaskKeys(MaskKeysOp op) {
  Location loc = op.getLoc();
  Value col0 = map.lookup(op.getColOffset());
  Value count = map.lookup(op.getCount());
  // ... when the block runs past the last key: col > count - col0 - 1.
  int64_t n = op.getType().getShape()[1];
  return lowerMask(
      op, col0, n, count, /*rowCoef=*/0,
      arith::SubIOp::create(b, loc, arith::SubIOp::create(b, loc, count, col0),
                            index(1)));
}

LogicalResult KernelLowering::lowerDot(DotOp op) {
  auto accType = cast<RankedTensorType>(op.getAcc().getType());
  if (auto mma = dyn_cast<MmaAttr>(accType.getEncoding()))
    return mma.getVersion() == 3 ? lowerWgmma(op, mma) : lowerMmaSync(op, mma);
  if (!isa<BlockedAttr>(accType.getEncoding()))
    return op.emitError("a dot's accumulator must have a blocked or "
                        "#ttile.mma layout");
  Location loc = op.getLoc();
  auto acc = dist(op, accType);
  auto da = dist(op, op.getA().getType());
  auto db = dist(op, op.getB().getType());
  if (failed(acc) || failed(da) || failed(db))
    return failure();
  // A's rows sit on the threads of the accumulator's rows, B's columns
  // on those of its columns.
  auto only = [](const Basis &c, unsigned d) {
    Basis r(2, 0);
    r[d] = c[d];
    return r;
  };
  auto threadsMatch = [&](ArrayRef<Basis> x, ArrayRef<Basis> ya,
                          ArrayRef<Basis> yb) {
    if (x.size() != ya.size() || x.size() != yb.size())
      return false;
    for (auto [c, ca, cb] : llvm::zip(x, ya, yb))
      if (only(c, 0) != ca || only(c, 1) != cb)
        return false;
    return true;
  };
  if (!threadsMatch(acc->laneBases, da->laneBases, db->laneBases) ||
      !threadsMatch(acc->warpBases, da->warpBases, db->warpBases))
    return op.emitError("the operands' layouts are not the accumulator's "
                        "dot operands");
  int64_t m = accType.getShape()[0], n = accType.getShape()[1];
  int64_t k = da->shape[1];
  std::map<std::pair<int64_t, int64_t>, int64_t> aReg, bReg;
  for (int64_t r = da->numRegs() - 1; r >= 0; --r) {
    Basis c = da->regCoord(r);
    aReg[{c[0] & (m - 1), c[1] & (k - 1)}] = r;
  }
  for (int64_t r = db->numRegs() - 1; r >= 0; --r) {
    Basis c = db->regCoord(r);
    bReg[{c[0] & (k - 1), c[1] & (n - 1)}] = r;
  }
  Type accElt = accType.getElementType();
  bool isFloat = isa<FloatType>(accElt);
  auto toAcc = [&](Value x) -> Value {
    if (x.getType() == accElt)
      return x;
    if (isFloat)
      return arith::ExtFOp::create(b, loc, accElt, x);
    return arith::ExtSIOp::create(b, loc, accElt, x);
  };
  // Operand registers in the accumulator's type, converted once.
  Regs wa, wb;
  for (Value x : tiles.lookup(op.getA()))
    wa.push_back(toAcc(x));
  for (Value x : tiles.lookup(op.getB()))
    wb.push_back(toAcc(x));
  Regs out = tiles.lookup(op.getAcc());
  for (int64_t r = 0, nr = acc->numRegs(); r < nr; ++r) {
    Basis c = acc->regCoord(r);
    int64_t row = c[0] & (m - 1), col = c[1] & (n - 1);
    Value sum = out[r];
    for (int64_t kk = 0; kk < k; ++kk) {
      auto ia = aReg.find({row, kk});
      auto ib = bReg.find({kk, col});
      if (ia == aReg.end() || ib == bReg.end())
        return op.emitError("the operands' layouts are not the "
                            "accumulator's dot operands");
      Value x = wa[ia->second], y = wb[ib->second];
      sum = isFloat ? math::FmaOp::create(b, loc, x, y, sum).getResult()
                    : arith::AddIOp::create(b, loc, sum,
                                            arith::MulIOp::create(b, loc, x, y))
                          .getResult();
    }
    out[r] = sum;
  }
  tiles[op.getResult()] = std::move(out);
  return success();
}

/// mma.sync m16n8k16 (bf16 or f16 into f32, nvvm.mma.sync: the nvgpu
/// dialect's op takes f16 only): each warp multiplies its
/// 16 x 8 fragments, K in steps of 16. The register numbering is the
/// one Distribution.cpp gives the fragments.
///
/// f32 operands of a `tf32` dot, rounded to tf32 (cvt.rna), take two
/// m16n8k8 steps per 16 of K from the same fragments: a product sums over
/// K, so the two only have to pair A's and B's elements alike. Lane t of
/// a quad holds K columns 2t, 2t + 1 (and 2t + 8, 2t + 9) of the
/// 16-bit fragments; the first step gives the instruction's K index t
/// (a0/a1, b0) column 2t and t + 4 (a2/a3, b1) column 2t + 1, the second
/// the same from 2t + 8.
LogicalResult KernelLowering::lowerMmaSync(DotOp op, MmaAttr mma) {
  Location loc = op.getLoc();
  auto accType = cast<RankedTensorType>(op.getAcc().getType());
  auto aType = cast<RankedTensorType>(op.getA().getType());
  auto bType = cast<RankedTensorType>(op.getB().getType());
  Type in = aType.getElementType();
  bool tf32 = op.getTf32() && in.isF32();
  if (mma.getVersion() != 2 || !accType.getElementType().isF32() ||
      !(in.isBF16() || in.isF16() || tf32) || bType.getElementType() != in)
    return op.emitError("the tensor-core lowering takes mma.sync (version "
                        "2) dots of bf16 or f16, or of f32 read as tf32, "
                        "into f32");
  auto acc = dist(op, accType);
  auto da = dist(op, aType);
  auto db = dist(op, bType);
  if (failed(acc) || failed(da) || failed(db))
    return failure();
  int64_t wm = mma.getWarpsPerCTA()[0], wn = mma.getWarpsPerCTA()[1];
  int64_t nM = accType.getShape()[0] / (16 * wm);
  int64_t nN = accType.getShape()[1] / (8 * wn);
  int64_t nK = aType.getShape()[1] / 16;
  Regs a = tiles.lookup(op.getA()), bv = tiles.lookup(op.getB());
  Regs out = tiles.lookup(op.getAcc());
  // Two 16-bit values in one 32-bit register, the first in the low half:
  // as the intrinsic types them, <2 x half> for f16 and i32 for bf16.
  auto pairVec = VectorType::get({2}, in);
  auto i32Vec = VectorType::get({1}, b.getI32Type());
  auto pack = [&](Value lo, Value hi) -> Value {
    Value v =
        vector::FromElementsOp::create(b, loc, pairVec, ValueRange{lo, hi});
    if (in.isF16())
      return v;
    return vector::ExtractOp::create(
        b, loc, vector::BitCastOp::create(b, loc, i32Vec, v), int64_t(0));
  };
  Type f32 = b.getF32Type();
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  NVVM::MMATypes ptxType = tf32          ? NVVM::MMATypes::tf32
                           : in.isBF16() ? NVVM::MMATypes::bf16
                                         : NVVM::MMATypes::f16;
  auto layouts = std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                                NVVM::MMALayout::col};
  auto toTf32 = [&](Value x) -> Value {
    return NVVM::ConvertFloatToTF32Op::create(b, loc, b.getI32Type(), x,
                                              NVVM::FPRoundingMode::RNA,
                                              NVVM::SaturationMode::NONE,
                                              /*relu=*/false);
  };
  if (tf32) {
    for (Value &x : a)
      x = toTf32(x);
    for (Value &x : bv)
      x = toTf32(x);
  }
  for (int64_t mt = 0; mt < nM; ++mt)
    for (int64_t nt = 0; nt < nN; ++nt) {
      int64_t c0 = 4 * (nt + nN * mt);
      SmallVector<Value> c(ArrayRef<Value>(out).slice(c0, 4));
      for (int64_t kt = 0; kt < nK; ++kt) {
        int64_t a0 = 8 * (kt + nK * mt), b0 = 4 * (kt + nK * nt);
        if (tf32) {
          for (int64_t half = 0; half < 2; ++half) {
            int64_t a1 = a0 + 4 * half, b1 = b0 + 2 * half;
            SmallVector<Value> av = {a[a1], a[a1 + 2], a[a1 + 1], a[a1 + 3]};
            SmallVector<Value> bvv = {bv[b1], bv[b1 + 1]};
            Value d = NVVM::MmaOp::create(
                b, loc, resultType, av, bvv, c, ArrayRef<int64_t>{16, 8, 8},
                std::nullopt, std::nullopt,
                std::array<NVVM::MMATypes, 2>{ptxType, ptxType}, layouts);
            for (int64_t i = 0; i < 4; ++i)
              c[i] =
                  LLVM::ExtractValueOp::create(b, loc, d, ArrayRef<int64_t>{i});
          }
          continue;
        }
        SmallVector<Value> av, bvv;
        for (int64_t i = 0; i < 4; ++i)
          av.push_back(pack(a[a0 + 2 * i], a[a0 + 2 * i + 1]));
        for (int64_t i = 0; i < 2; ++i)
          bvv.push_back(pack(bv[b0 + 2 * i], bv[b0 + 2 * i + 1]));
        Value d = NVVM::MmaOp::create(
            b, loc, resultType, av, bvv, c, ArrayRef<int64_t>{16, 8, 16},
            std::nullopt, std::nullopt,
            std::array<NVVM::MMATypes, 2>{ptxType, ptxType}, layouts);
        for (int64_t i = 0; i < 4; ++i)
          c[i] = LLVM::ExtractValueOp::create(b, loc, d, ArrayRef<int64_t>{i});
      }
      for (int64_t i = 0; i < 4; ++i)
        out[c0 + i] = c[i];
    }
  tiles[op.getResult()] = std::move(out);
  return success();
}
