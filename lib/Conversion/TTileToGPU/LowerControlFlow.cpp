//===- LowerControlFlow.cpp - Loops, branches and warpgroup turns ---------===//
//
// Loops (scf.for, ttile.range) with their rings of shared tiles, branches,
// and ping-pong scheduling of a kernel's consumer warpgroups.
//
// Ping-pong (a kernel marked `ttile.pingpong`, two warpgroups or more):
// in a range whose body issues wgmma products, the warpgroups take turns
// to issue them. Warpgroup g waits on named barrier 2 + g
// before its first product of a run of them and arrives on the next
// warpgroup's barrier after the last one (before any wait, barrier or
// other computation), so the tensor cores run one warpgroup's products
// while the others compute on their own (an attention's softmax), instead
// of every warpgroup issuing at once and then leaving them idle together.
// Each barrier counts the 128 threads of its warpgroup and the 128 of the
// previous one; the last warpgroup hands the first its turn once at the
// kernel's start, and the first takes back the last one
// handed to it at the end, so every barrier ends balanced whatever the
// trip counts (the same for every warpgroup: ranges are uniform over the
// block).
//
// A kernel of several programs a block (ttile.programs_per_block) takes
// turns between its programs, a whole loop at a time: a program waits
// for its turn before each ring loop that issues wgmma products and hands
// it to the next program once the loop's last product is issued, so the
// tensor cores run one program's K loop while the others run their
// epilogues. The same barriers and hand-offs, one a program; the loops
// around must run the same number of times in every program. The programs
// share the loop's ring (LowerProducer.cpp): program p's run starts after
// the runs of programs 0..p-1 of the same round.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;
using namespace mlir::tessera::ttile::detail;


LogicalResult KernelLowering::lowerLoop(Operation *op) {
  Location loc = op->getLoc();
  Value lb, ub, step;
  if (auto f = dyn_cast<scf::ForOp>(op)) {
    lb = f.getLowerBound();
    ub = f.getUpperBound();
    step = f.getStep();
  } else {
    auto r = cast<RangeOp>(op);
    lb = r.getLowerBound();
    ub = r.getUpperBound();
    step = r.getStep();
  }
  Block &body = op->getRegion(0).front();
  unsigned numInits = op->getNumResults();
  SmallVector<Value> inits = flatten(op->getOperands().take_back(numInits));
  // Shared tiles loaded ahead through rings of buffers.
  SmallVector<LoadOp> ring;
  SmallVector<int64_t> ringOffsets;
  int64_t ahead = 0;
  bool overlap = false;
  // The shared tiles the loop loads (its rings, and synchronous loads in
  // its body) are read by its dots alone: their buffers are free once it
  // ends. Later copies into them start behind a barrier (startRing, and
  // every synchronous shared load), so no warp still reads them.
  int64_t sharedMark = dynamicBytes;
  ProducerRing *fed = nullptr;
  if (specialized) {
    for (ProducerRing &r : producerRings)
      if (r.loop.getOperation() == op)
        fed = &r;
    if (fed)
      overlap = fed->overlap;
  } else if (auto range = dyn_cast<RangeOp>(op)) {
    ring = ringLoads(range);
    if (!ring.empty()) {
      // With a wgmma group left in flight, the buffers it reads stay
      // busy one iteration longer: copies run one iteration less ahead.
      overlap = canOverlapDots(range, ring);
      ahead = range.getStages() - (overlap ? 2 : 1);
      startRing(range, ring, ahead, ringOffsets);
    }
  }
  // With wgmma groups in flight across iterations, the loop sits in an
  // `if` of its first iteration's test: its exit is then reached from its
  // last iteration only, where the last groups are waited for (ptxas
  // serializes every wgmma of a kernel when a path may read accumulators
  // while a group might run, as a zero-trip path joining the exit would).
  // A program's turn for the whole loop (several programs a block).
  bool loopTurn = wantsLoopTurn(op);
  if (loopTurn)
    waitTurn(loc);
  if (fed)
    startRun(*fed);
  bool alternate = wantsPingPong(op);
  pingPong = pingPong || alternate;
  scf::IfOp guardIf;
  if (overlap) {
    Value nonEmpty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           map.lookup(lb), map.lookup(ub));
    guardIf = scf::IfOp::create(b, loc, ValueRange(inits).getTypes(), nonEmpty,
                                /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&guardIf.getElseRegion().front());
    if (loopTurn)
      handTurn(loc);
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    scf::YieldOp::create(b, loc, inits);
  }
  OpBuilder::InsertionGuard guardLoop(b);
  if (guardIf)
    b.setInsertionPointToStart(&guardIf.getThenRegion().front());
  LogicalResult status = success();
  auto loop = scf::ForOp::create(
      b, loc, map.lookup(lb), map.lookup(ub), map.lookup(step), inits,
      [&](OpBuilder &nested, Location, Value iv, ValueRange args) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(nested.getInsertionBlock());
        map.map(body.getArgument(0), iv);
        if (fed)
          consumeRing(*fed, iv);
        else if (!ring.empty())
          advanceRing(cast<RangeOp>(op), ring, ahead, ringOffsets, iv);
        if (failed(bind(op, body.getArguments().drop_front(), args)) ||
            failed(lowerBlock(body))) {
          status = failure();
          scf::YieldOp::create(b, loc, args);
          return;
        }
        // (The body's last wait handed the turn on: a turn is taken only
        // to issue a product, and every product is waited for by then.)
        assert(!turnHeld && "a warpgroup's turn outlived its loop body");
        if (fed)
          releaseRing(*fed, iv);
        scf::YieldOp::create(b, loc,
                             flatten(body.getTerminator()->getOperands()));
      });
  if (alternate)
    pingPong = false;
  if (failed(status))
    return failure();
  SmallVector<Value> results(loop.getResults());
  if (guardIf) {
    // The last iteration's groups, waited for through the accumulators
    // they write.
    Operation *yield = body.getTerminator();
    SmallVector<std::pair<int64_t, int64_t>> spans; // first flat, count
    Regs pending;
    int64_t pos = 0;
    for (auto [i, v] : llvm::enumerate(yield->getOperands())) {
      int64_t count = 1;
      if (isTile(v.getType())) {
        auto d = dist(op, v.getType());
        if (failed(d))
          return failure();
        count = d->numRegs();
      }
      if (Operation *dot = v.getDefiningOp();
          dot && overlappedDots.contains(dot)) {
        spans.push_back({pos, count});
        llvm::append_range(pending, ArrayRef<Value>(results).slice(pos, count));
      }
      pos += count;
    }
    // (Every product is issued: the next program's may go while this
    // one's last run.)
    if (loopTurn)
      handTurn(loc);
    waitForWgmma(loc, 0, pending);
    if (fed)
      finishRun(*fed, /*lastSlot=*/true);
    int64_t next = 0;
    for (auto [first, count] : spans)
      for (int64_t r = 0; r < count; ++r)
        results[first + r] = pending[next++];
    // (After the wgmma wait: ptxas takes a cp.async wait between a wgmma
    // group and its wait for a read of the accumulators.)
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    scf::YieldOp::create(b, loc, results);
    results.assign(guardIf.getResults().begin(), guardIf.getResults().end());
  } else {
    if (!ring.empty())
      NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    if (loopTurn)
      handTurn(loc);
  }
  if (guardIf)
    b.setInsertionPointAfter(guardIf);
  if (fed)
    finishRun(*fed, /*lastSlot=*/false);
  dynamicPeak = std::max(dynamicPeak, dynamicBytes);
  dynamicBytes = sharedMark;
  return bind(op, op->getResults(), results);
}

LogicalResult KernelLowering::lowerIf(scf::IfOp op) {
  auto types = flatTypes(op, op.getResultTypes());
  if (failed(types))
    return failure();
  bool hasElse = !op.getElseRegion().empty();
  auto lowered = scf::IfOp::create(b, op.getLoc(), *types,
                                   map.lookup(op.getCondition()), hasElse);
  auto lowerRegion = [&](Region &from, Region &to) -> LogicalResult {
    OpBuilder::InsertionGuard guard(b);
    Block &block = to.front();
    if (!block.empty() && block.back().hasTrait<OpTrait::IsTerminator>())
      block.back().erase();
    b.setInsertionPointToEnd(&block);
    if (failed(lowerBlock(from.front())))
      return failure();
    scf::YieldOp::create(b, op.getLoc(),
                         flatten(from.front().getTerminator()->getOperands()));
    return success();
  };
  if (failed(lowerRegion(op.getThenRegion(), lowered.getThenRegion())))
    return failure();
  if (hasElse &&
      failed(lowerRegion(op.getElseRegion(), lowered.getElseRegion())))
    return failure();
  return bind(op, op.getResults(), lowered.getResults());
}

/// Whether `op`'s body issues a wgmma product.
static bool issuesWgmma(Operation *op) {
  return llvm::any_of(op->getRegion(0).front().getOps<DotOp>(), [](DotOp dot) {
    auto mma =
        dyn_cast<MmaAttr>(cast<RankedTensorType>(dot.getType()).getEncoding());
    return mma && mma.getVersion() == 3;
  });
}

bool KernelLowering::wantsPingPong(Operation *op) {
  if (programs > 1 || pingPong || !src->hasAttr("ttile.pingpong") ||
      numWarps < 8 || numWarps % 4 || !isa<RangeOp>(op))
    return false;
  return issuesWgmma(op);
}

bool KernelLowering::wantsLoopTurn(Operation *op) {
  if (programs == 1 || !isa<RangeOp>(op))
    return false;
  bool fed = llvm::any_of(producerRings, [&](ProducerRing &r) {
    return r.loop.getOperation() == op;
  });
  return fed && issuesWgmma(op);
}

int32_t KernelLowering::firstTurnBarrier() const {
  // After the block's (0) and the consumers' (1, or 1 + p of program p).
  return programs > 1 ? int32_t(1 + programs) : 2;
}

Value KernelLowering::turnGroup(Location loc) {
  return programs > 1 ? programIndex
                      : Value(arith::DivUIOp::create(b, loc, warp, index(4)));
}

int64_t KernelLowering::turnGroups() const {
  return programs > 1 ? programs : numWarps / 4;
}

int64_t KernelLowering::turnThreads() const {
  // A turn's barrier counts the group handing it on and the one taking it.
  return programs > 1 ? 2 * 32 * numWarps : 256;
}

Value KernelLowering::turnBarrier(Location loc, int64_t step) {
  Value group = turnGroup(loc);
  if (step)
    group = arith::RemUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, group, index(step)),
        index(turnGroups()));
  return arith::AddIOp::create(
      b, loc, arith::IndexCastOp::create(b, loc, b.getI32Type(), group),
      i32Constant(b, loc, firstTurnBarrier()));
}

void KernelLowering::inTurnGroup(Location loc, int64_t group,
                                 function_ref<void()> body) {
  Value is = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                   turnGroup(loc), index(group));
  under(b, loc, is, body);
}

LogicalResult KernelLowering::lowerKernelBody() {
  Block &body = src.getBody().front();
  Location loc = src.getLoc();
  bool any = false;
  body.walk([&](RangeOp r) {
    any = any || wantsPingPong(r) || wantsLoopTurn(r);
  });
  // (Once for the kernel: a hand-off before each loop could reach the
  // first warpgroup's barrier while the last loop's final turn still waits
  // there, and complete it without the first warpgroup.)
  int64_t groups = turnGroups();
  if (any)
    inTurnGroup(loc, groups - 1, [&] {
      NVVM::BarrierArriveOp::create(b, loc,
                                    i32Constant(b, loc, firstTurnBarrier()),
                                    i32Constant(b, loc, turnThreads()));
    });
  if (failed(lowerBlock(body)))
    return failure();
  if (any)
    inTurnGroup(loc, 0, [&] {
      NVVM::BarrierOp::create(
          b, loc, Type(), i32Constant(b, loc, firstTurnBarrier()),
          i32Constant(b, loc, turnThreads()), NVVM::BarrierReductionAttr(),
          Value());
    });
  return success();
}

void KernelLowering::waitTurn(Location loc) {
  NVVM::BarrierOp::create(b, loc, Type(), turnBarrier(loc, 0),
                          i32Constant(b, loc, turnThreads()),
                          NVVM::BarrierReductionAttr(), Value());
}

void KernelLowering::handTurn(Location loc) {
  NVVM::BarrierArriveOp::create(b, loc, turnBarrier(loc, 1),
                                i32Constant(b, loc, turnThreads()));
}

void KernelLowering::takeTurn(Location loc) {
  if (!pingPong || turnHeld)
    return;
  waitTurn(loc);
  turnHeld = true;
}

void KernelLowering::passTurn(Location loc) {
  if (!turnHeld)
    return;
  handTurn(loc);
  turnHeld = false;
}

bool KernelLowering::keepsTurn(Operation *op) {
  if (auto dot = dyn_cast<DotOp>(op)) {
    auto mma =
        dyn_cast<MmaAttr>(cast<RankedTensorType>(dot.getType()).getEncoding());
    return mma && mma.getVersion() == 3;
  }
  if (isa<LoadOp>(op))
    return ringSlots.count(op) != 0;
  if (auto tr = dyn_cast<TransposeOp>(op))
    return isa_and_nonnull<SharedAttr>(
        cast<RankedTensorType>(tr.getSource().getType()).getEncoding());
  if (isa<arith::ConstantOp>(op))
    return true;
  // Scalar arithmetic (indices, bounds).
  return op->getNumRegions() == 0 && isPure(op) &&
         llvm::none_of(op->getOperandTypes(), isTile) &&
         llvm::none_of(op->getResultTypes(), isTile);
}
