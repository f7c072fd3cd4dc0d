//===- LowerProducer.cpp - TMA copies from a producer warpgroup -----------===//
//
// On Hopper the shared-tile rings of a kernel's top-level ranges can be
// filled by the Tensor Memory Accelerator instead of every thread's
// cp.async copies. The kernel then runs one more warpgroup, the producer,
// after its `ttile.num_warps` warps (the consumers, whose code and warp
// numbering are unchanged):
//
//   - one producer warp walks each ring's iterations: it waits until the
//     consumers gave the slot back (the slot's `empty` mbarrier), announces
//     the bytes to come on its `full` mbarrier and issues one TMA copy per
//     box of each tile (a box is one swizzle row wide, at most 256 rows:
//     TMA writes the same 128/64/32-byte swizzled layout the tiles have);
//   - the consumers wait on `full` at the top of an iteration and arrive on
//     `empty` at its end (for the previous iteration's slot when wgmma
//     groups stay in flight across iterations);
//   - the producer gives its registers to the consumers (setmaxnreg) and
//     the consumers' barriers become a named barrier of their own threads.
//
// With several programs a block (ttile.programs_per_block, a ping-pong
// GEMM) the programs share the rings and the one producer warp: the
// producer walks program 0's loops around a ring and, at each run of the
// ring's loop, fills program 0's run, then program 1's, ... (the order in
// which the programs take their turns on the tensor cores), so a ring as
// deep as one program would have runs on under both. Each program's run
// starts after those of the programs before it in the same round; every
// program's loop takes as many slots (its bounds are the same in all).
//
// In a kernel of `ttile.cluster` programs a cluster, a ring's loads marked
// `multicast` (the same tile in every program of the cluster) are copied
// once for the cluster: the producer of cluster rank r issues the tile's
// boxes b with b % cluster == r, each written by TMA into the same slot of
// every program's shared memory and counted on every program's `full`
// mbarrier. A slot of such a ring is free once the consumers of the whole
// cluster gave it back, so each consumer warp arrives on the slot's
// `empty` mbarrier in every program of the cluster. The cluster's threads
// meet after the mbarriers are made (a program's copies reach the others'
// barriers) and before they exit (the others' arrivals reach its own).
//
// The tensor maps (CUtensorMap, 128 bytes each) are made by the runtime at
// each launch from the memref arguments and passed in device memory, the
// address as one extra kernel parameter; after the maps come one i32 per
// map, 1 where the map could be made. Where it could not (an argument TMA
// cannot address: a row stride or base not a multiple of 16 bytes), the
// producer warp copies that tile with cp.async instead, its lanes
// arriving on `full` as the copies land.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"
#include "tessera/Dialect/TTile/Transforms/LoopAhead.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;
using namespace mlir::tessera::ttile::detail;

namespace {

/// Registers a producer warp keeps (setmaxnreg) unless the kernel says
/// (`ttile.producer_registers`). Its loops fit in 56 without spilling, but
/// the attention forward ran 11-16% slower with the consumers' 224
/// registers that gives than with 200 (H200, same call).
constexpr int64_t kProducerRegisters = 96;
/// Bytes of one tensor map.
constexpr int64_t kTensorMapBytes = 128;

/// Waits until the mbarrier at `addr` completed the phase of `parity`:
/// try_wait (which may suspend the thread until then or a time limit of
/// the hardware's) until it says so.
void waitBarrier(OpBuilder &b, Location loc, Value addr, Value parity) {
  Value ptr = sharedPointer(b, loc, addr);
  scf::WhileOp::create(
      b, loc, TypeRange{}, ValueRange{},
      [&](OpBuilder &nb, Location l, ValueRange) {
        Value done = NVVM::MBarrierTryWaitOp::create(nb, l, nb.getI1Type(), ptr,
                                                     parity, Value());
        Value again = arith::XOrIOp::create(
            nb, l, done,
            arith::ConstantIntOp::create(nb, l, nb.getI1Type(), 1));
        scf::ConditionOp::create(nb, l, again, ValueRange{});
      },
      [&](OpBuilder &nb, Location l, ValueRange) {
        scf::YieldOp::create(nb, l);
      });
}

/// Iterations of a loop from `lb` to `ub` by `step` (0 when ub <= lb).
Value tripCount(OpBuilder &b, Location loc, Value lb, Value ub, Value step) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value n = arith::DivUIOp::create(
      b, loc,
      arith::SubIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, arith::SubIOp::create(b, loc, ub, lb),
                                step),
          one),
      step);
  Value some = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lb, ub);
  return arith::SelectOp::create(b, loc, some, n, zero);
}

/// A consumer thread's arrival on the mbarrier at `addr`.
void arriveOn(OpBuilder &b, Location loc, Value addr) {
  NVVM::MBarrierArriveOp::create(b, loc, Type(), sharedPointer(b, loc, addr),
                                 Value());
}

/// Where the iteration at `iv` of a ring's loop (from `lb` by `step`) is:
/// whether it is the first of this run (`first`, i1), its number among
/// all of the ring's iterations (`k`, i32; the run starting at `start`),
/// its slot (index) and the parity of the slot's phase it fills (i32).
/// In 32-bit arithmetic (a ring's iterations are counted in i32): a loop
/// of wgmma products runs these each iteration, and 64-bit divisions by
/// the stage count took a tenth of a ping-pong K loop's instructions.
struct RingPosition {
  Value first, k, slot, parity;
};

RingPosition ringPosition(OpBuilder &b, Location loc, Value start, Value iv,
                          Value lb, Value step, int64_t stages) {
  Type i32 = b.getI32Type();
  auto narrow = [&](Value v) {
    return arith::IndexCastUIOp::create(b, loc, i32, v).getResult();
  };
  auto c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  RingPosition p;
  p.first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, iv, lb);
  Value local = arith::DivUIOp::create(
      b, loc, narrow(arith::SubIOp::create(b, loc, iv, lb)), narrow(step));
  p.k = arith::AddIOp::create(b, loc, narrow(start), local);
  p.slot = arith::IndexCastUIOp::create(
      b, loc, b.getIndexType(), arith::RemUIOp::create(b, loc, p.k, c(stages)));
  p.parity = arith::AndIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, p.k, c(stages)), c(1));
  return p;
}

} // namespace

Operation *mlir::tessera::ttile::detail::ptx(OpBuilder &b, Location loc,
                                             TypeRange results,
                                             ValueRange operands,
                                             StringRef text,
                                             StringRef constraints) {
  return LLVM::InlineAsmOp::create(
      b, loc, results, operands, text, constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      ArrayAttr());
}

Value mlir::tessera::ttile::detail::i32Of(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
}

Value mlir::tessera::ttile::detail::sharedPointer(OpBuilder &b, Location loc,
                                                  Value addr) {
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), addr);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), i64);
}

Value mlir::tessera::ttile::detail::genericPointer(OpBuilder &b, Location loc,
                                                   Value addr) {
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), addr);
}

Value mlir::tessera::ttile::detail::mapAddress(OpBuilder &b, Location loc,
                                               Value table, unsigned i) {
  return arith::AddIOp::create(
      b, loc, table,
      arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                   kTensorMapBytes * i));
}

Value mlir::tessera::ttile::detail::mapUsable(OpBuilder &b, Location loc,
                                              Value table, unsigned i,
                                              unsigned count) {
  Type i64 = b.getI64Type();
  Value addr =
      arith::AddIOp::create(b, loc, table,
                            arith::ConstantIntOp::create(
                                b, loc, i64, kTensorMapBytes * count + 4 * i));
  Value ptr = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), addr);
  Value flag = LLVM::LoadOp::create(b, loc, b.getI32Type(), ptr, 4);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, flag,
                               i32Constant(b, loc, 0));
}

SmallVector<Value> mlir::tessera::ttile::detail::tmaCoordinates(
    OpBuilder &b, Location loc, Value col, Value row, ArrayRef<Value> leading) {
  SmallVector<Value> coords = {i32Of(b, loc, col), i32Of(b, loc, row)};
  for (Value l : llvm::reverse(leading))
    coords.push_back(i32Of(b, loc, l));
  return coords;
}

Value mlir::tessera::ttile::detail::i32Constant(OpBuilder &b, Location loc,
                                                int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}

void mlir::tessera::ttile::detail::under(OpBuilder &b, Location loc, Value cond,
                                         function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{}, cond, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  body();
}

Value mlir::tessera::ttile::detail::inductionVar(Operation *loop) {
  if (auto r = dyn_cast<RangeOp>(loop))
    return r.getInductionVar();
  return cast<scf::ForOp>(loop).getInductionVar();
}

std::array<Value, 3>
mlir::tessera::ttile::detail::loopBounds(Operation *loop) {
  if (auto r = dyn_cast<RangeOp>(loop))
    return {r.getLowerBound(), r.getUpperBound(), r.getStep()};
  auto f = cast<scf::ForOp>(loop);
  return {f.getLowerBound(), f.getUpperBound(), f.getStep()};
}

Value KernelLowering::producerValue(Value v, IRMapping &pmap) {
  if (pmap.contains(v))
    return pmap.lookup(v);
  if (isa<BlockArgument>(v))
    return map.lookup(v); // a kernel argument (induction variables are in
                          // pmap)
  Operation *def = v.getDefiningOp();
  Location loc = def->getLoc();
  if (auto pid = dyn_cast<ProgramIdOp>(def)) {
    Value id = programId(loc, pid.getDim());
    pmap.map(v, id);
    return id;
  }
  if (auto n = dyn_cast<NumProgramsOp>(def)) {
    Value dim = numPrograms(loc, n.getDim());
    pmap.map(v, dim);
    return dim;
  }
  IRMapping operands;
  for (Value o : def->getOperands())
    operands.map(o, producerValue(o, pmap));
  Operation *copy = b.clone(*def, operands);
  for (auto [from, to] : llvm::zip(def->getResults(), copy->getResults()))
    pmap.map(from, to);
  return pmap.lookup(v);
}

void KernelLowering::hoistInto(Operation *loop, ArrayRef<Value> needed,
                               IRMapping &pmap) {
  llvm::SmallPtrSet<Value, 16> seen;
  std::function<void(Value)> visit = [&](Value v) {
    if (pmap.contains(v) || !seen.insert(v).second)
      return;
    Operation *owner = isa<BlockArgument>(v)
                           ? cast<BlockArgument>(v).getOwner()->getParentOp()
                           : v.getDefiningOp();
    if (!loop->isAncestor(owner)) {
      (void)producerValue(v, pmap);
      return;
    }
    if (Operation *def = v.getDefiningOp())
      for (Value o : def->getOperands())
        visit(o);
  };
  for (Value v : needed)
    visit(v);
}

Value KernelLowering::barrierAddress(const ProducerRing &ring, bool empty,
                                     Value slot) {
  RangeOp loop = ring.loop;
  Location loc = loop.getLoc();
  int64_t first = ring.barriers + (empty ? 8 * loop.getStages() : 0);
  return arith::AddIOp::create(
      b, loc, ringsBase(),
      arith::AddIOp::create(b, loc, index(first),
                            arith::MulIOp::create(b, loc, slot, index(8))));
}

LogicalResult KernelLowering::runSpecialized() {
  Location loc = src.getLoc();
  unsigned tableArg = src.getNumArguments();
  if (failed(dst.insertArgument(tableArg, b.getI64Type(), {}, loc)))
    return src.emitError("cannot add the tensor-map parameter");
  tmaTable = dst.getArgument(tableArg);
  Value tid = arith::AddIOp::create(
      b, loc, lane, arith::MulIOp::create(b, loc, warp, index(32)));

  // Each ring's iteration counter (private: a register once promoted).
  for (ProducerRing &ring : producerRings) {
    ring.counter = memref::AllocaOp::create(
        b, loc, MemRefType::get({1}, b.getIndexType()));
    memref::StoreOp::create(b, loc, index(0), ring.counter, index(0));
  }
  // The mbarriers, initialized by one thread before the roles split (of
  // program 0 where the programs of a block share the rings). A slot is
  // given back by each consumer thread of the program it was filled for,
  // or, in a multicast ring, by each consumer warp of the cluster.
  Value initializer =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, index(0));
  if (programs > 1)
    initializer = arith::AndIOp::create(
        b, loc, initializer,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, programIndex,
                              index(0)));
  under(
      b, loc, initializer,
      [&] {
        for (ProducerRing &ring : producerRings) {
          Value consumers = i32Constant(
              b, loc,
              ring.multicast ? numWarps * multicastCluster : 32 * numWarps);
          for (int64_t s = 0; s < ring.loop.getStages(); ++s)
            for (bool empty : {false, true})
              NVVM::MBarrierInitOp::create(
                  b, loc,
                  sharedPointer(b, loc, barrierAddress(ring, empty, index(s))),
                  empty ? consumers : i32Constant(b, loc, 1), Value());
        }
        NVVM::FenceMbarrierInitOp::create(b, loc);
      });
  if (multicastCluster > 1)
    clusterBarrier(loc);
  else
    gpu::BarrierOp::create(b, loc);

  Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                           warp, index(numWarps));
  auto roles = scf::IfOp::create(b, loc, TypeRange{}, isProducer, true);
  // The registers the consumers take from the producer. A block starts
  // with `initial` per thread (65536 over its threads, in steps of 8: what
  // ptxas allocates a kernel that moves registers); setmaxnreg.inc waits
  // until the pool has what it asks for, so the consumers may grow by what
  // the producer gives back and no more. Only where they can grow (8 or
  // more consumer warps).
  int64_t threads = 32 * numWarps * programs;
  int64_t initial = 65536 / (threads + 128) / 8 * 8;
  auto given = src->getAttrOfType<IntegerAttr>("ttile.producer_registers");
  int64_t producerRegisters = given ? given.getInt() : kProducerRegisters;
  int64_t consumerRegisters = std::min<int64_t>(
      240,
      (initial * (threads + 128) - producerRegisters * 128) / threads / 8 * 8);
  bool moveRegisters = numWarps * programs >= 8 &&
                       consumerRegisters > initial &&
                       producerRegisters < initial;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&roles.getThenRegion().front());
    if (moveRegisters)
      NVVM::SetMaxRegisterOp::create(b, loc, producerRegisters,
                                     NVVM::SetMaxRegisterAction::decrease);
    emitProducer(loc);
  }
  LogicalResult status = success();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&roles.getElseRegion().front());
    if (moveRegisters)
      NVVM::SetMaxRegisterOp::create(b, loc, consumerRegisters,
                                     NVVM::SetMaxRegisterAction::increase);
    SmallVector<Value> fallbacks;
    for (unsigned i = 0; i < tmaMaps.size(); ++i)
      fallbacks.push_back(arith::XOrIOp::create(
          b, loc, mapUsable(b, loc, tmaTable, i, unsigned(tmaMaps.size())),
          arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
    anyFallback = fallbacks.front();
    for (Value f : ArrayRef<Value>(fallbacks).drop_front())
      anyFallback = arith::OrIOp::create(b, loc, anyFallback, f);
    status = lowerKernelBody();
    if (!stagedStores.empty()) {
      // The last tiles' copies out of shared memory complete before the
      // program ends.
      Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                          index(0));
      under(b, loc, first,
            [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, 0, nullptr); });
    }
  }
  if (failed(status))
    return failure();
  if (multicastCluster > 1)
    clusterBarrier(loc);
  gpu::ReturnOp::create(b, loc);

  // The consumers synchronize among themselves: the producer's warps do
  // not come to their barriers. (With several programs a block, each
  // program's consumers among themselves: barrier 1 + its index.)
  SmallVector<gpu::BarrierOp> barriers;
  roles.getElseRegion().walk(
      [&](gpu::BarrierOp bar) { barriers.push_back(bar); });
  for (gpu::BarrierOp bar : barriers) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(bar);
    Location bl = bar.getLoc();
    Value id = i32Constant(b, bl, 1);
    if (programs > 1)
      id = arith::AddIOp::create(
          b, bl, id, arith::IndexCastOp::create(b, bl, b.getI32Type(),
                                                programIndex));
    NVVM::BarrierOp::create(b, bl, Type(), id,
                            i32Constant(b, bl, 32 * numWarps),
                            NVVM::BarrierReductionAttr(), Value());
    bar.erase();
  }
  return success();
}

void KernelLowering::emitProducer(Location loc) {
  // (One warp fills the rings, for every program of the block: its
  // program index is 0.)
  Value oneWarp = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warp,
                                        index(numWarps));
  under(b, loc, oneWarp, [&] {
    unsigned count = unsigned(tmaMaps.size());
    SmallVector<Value> usable;
    for (unsigned i = 0; i < count; ++i)
      usable.push_back(mapUsable(b, loc, tmaTable, i, count));
    Value laneZero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
    Value anyCopy = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
    for (Value u : usable)
      anyCopy = arith::OrIOp::create(
          b, loc, anyCopy,
          arith::XOrIOp::create(
              b, loc, u,
              arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)));
    under(b, loc, laneZero, [&] {
      for (unsigned i = 0; i < count; ++i)
        under(b, loc, usable[i], [&] {
          NVVM::PrefetchOp::create(
              b, loc, NVVM::PrefetchCacheLevelAttr(),
              NVVM::CacheEvictionPriorityAttr(),
              genericPointer(b, loc, mapAddress(b, loc, tmaTable, i)), Value(),
              /*tensormap=*/true);
        });
    });

    IRMapping pmap;
    emitProducerLoops(src.getBody().front(), pmap, usable, laneZero, anyCopy);
  });
}

void KernelLowering::emitProducerLoops(Block &block, IRMapping &pmap,
                                       ArrayRef<Value> usable, Value laneZero,
                                       Value anyCopy) {
  for (Operation &op : block) {
    auto ring = llvm::find_if(producerRings, [&](ProducerRing &r) {
      return r.loop.getOperation() == &op;
    });
    if (ring != producerRings.end()) {
      emitProducerRing(*ring, pmap, usable, laneZero, anyCopy);
      continue;
    }
    bool holdsRing = llvm::any_of(producerRings, [&](ProducerRing &r) {
      return op.isProperAncestor(r.loop);
    });
    if (!holdsRing)
      continue;
    // A loop around rings: the same loop, computing what its rings need
    // from outside it first.
    Location loc = op.getLoc();
    auto opBounds = loopBounds(&op);
    SmallVector<Value> needed(opBounds.begin(), opBounds.end());
    for (ProducerRing &r : producerRings) {
      if (!op.isProperAncestor(r.loop))
        continue;
      for (Operation *l : r.chain) {
        auto bounds = loopBounds(l);
        needed.append(bounds.begin(), bounds.end());
      }
      ringNeeds(r, needed);
    }
    hoistInto(&op, needed, pmap);
    auto [lb, ub, step] = loopBounds(&op);
    scf::ForOp::create(b, loc, producerValue(lb, pmap), producerValue(ub, pmap),
                       producerValue(step, pmap), ValueRange{},
                       [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                         OpBuilder::InsertionGuard guard(b);
                         b.setInsertionPointToStart(nested.getInsertionBlock());
                         pmap.map(inductionVar(&op), iv);
                         emitProducerLoops(op.getRegion(0).front(), pmap,
                                           usable, laneZero, anyCopy);
                         scf::YieldOp::create(b, loc);
                       });
  }
}

void KernelLowering::ringNeeds(ProducerRing &ring,
                               SmallVectorImpl<Value> &needed) {
  auto bounds = loopBounds(ring.loop);
  needed.append(bounds.begin(), bounds.end());
  for (LoadOp load : ring.loads) {
    llvm::append_range(needed, load.getIndices());
    needed.push_back(load.getSource());
  }
  for (auto &leading : ring.leading)
    for (OpFoldResult o : leading)
      if (auto v = dyn_cast<Value>(o))
        needed.push_back(v);
}

void KernelLowering::emitProducerRing(ProducerRing &ring, IRMapping &pmap,
                                      ArrayRef<Value> usable, Value laneZero,
                                      Value anyCopy) {
  Location loc = ring.loop.getLoc();
  RangeOp loop = ring.loop;
  Value round = memref::LoadOp::create(b, loc, ring.counter, index(0));
  if (programs == 1) {
    emitProducerRun(ring, pmap, round, usable, laneZero, anyCopy);
    Value n = tripCount(b, loc, producerValue(loop.getLowerBound(), pmap),
                        producerValue(loop.getUpperBound(), pmap),
                        producerValue(loop.getStep(), pmap));
    memref::StoreOp::create(b, loc, arith::AddIOp::create(b, loc, round, n),
                            ring.counter, index(0));
    return;
  }
  // The programs' runs in program order, each `n` iterations (the same in
  // every program, planSpecialization). The producer walks program 0's
  // loops around the ring (`pmap`); program p's are at the same iteration
  // of each: induction variable lb_p + j * step_p where program 0's is
  // lb_0 + j * step_0 (the loops run as often in every program, as their
  // turns need).
  Value n = tripCount(b, loc, producerValue(loop.getLowerBound(), pmap),
                      producerValue(loop.getUpperBound(), pmap),
                      producerValue(loop.getStep(), pmap));
  Value own = programIndex;
  for (int64_t p = 0; p < programs; ++p) {
    Value start = arith::AddIOp::create(
        b, loc, round, arith::MulIOp::create(b, loc, n, index(p)));
    if (p == 0) {
      emitProducerRun(ring, pmap, start, usable, laneZero, anyCopy);
      continue;
    }
    programIndex = index(p);
    IRMapping other;
    for (Operation *l : ArrayRef<Operation *>(ring.chain).drop_back()) {
      auto [lb, ub, step] = loopBounds(l);
      Value j = arith::DivUIOp::create(
          b, loc,
          arith::SubIOp::create(b, loc, pmap.lookup(inductionVar(l)),
                                producerValue(lb, pmap)),
          producerValue(step, pmap));
      Value iv = arith::AddIOp::create(
          b, loc, producerValue(lb, other),
          arith::MulIOp::create(b, loc, j, producerValue(step, other)));
      other.map(inductionVar(l), iv);
    }
    emitProducerRun(ring, other, start, usable, laneZero, anyCopy);
    programIndex = own;
  }
  memref::StoreOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, round,
                            arith::MulIOp::create(b, loc, n, index(programs))),
      ring.counter, index(0));
}

void KernelLowering::emitProducerRun(ProducerRing &ring, IRMapping &pmap,
                                     Value start, ArrayRef<Value> usable,
                                     Value laneZero, Value anyCopy) {
  Location loc = ring.loop.getLoc();
  RangeOp loop = ring.loop;
  int64_t stages = loop.getStages();
  // What the loop needs from outside it, computed before it.
  SmallVector<Value> needed;
  ringNeeds(ring, needed);
  hoistInto(loop, needed, pmap);
  Value lb = producerValue(loop.getLowerBound(), pmap);
  Value ub = producerValue(loop.getUpperBound(), pmap);
  Value step = producerValue(loop.getStep(), pmap);
  // The memrefs (for cp.async copies) and the leading-dim indices of
  // the maps.
  SmallVector<Value> sources;
  SmallVector<SmallVector<Value>> leads;
  for (auto [load, leading] : llvm::zip(ring.loads, ring.leading)) {
    sources.push_back(producerValue(load.getSource(), pmap));
    SmallVector<Value> lead;
    for (OpFoldResult o : leading)
      lead.push_back(isa<Value>(o) ? producerValue(cast<Value>(o), pmap)
                                   : index(*getConstantIntValue(o)));
    leads.push_back(lead);
  }

  // This program's rank in its cluster and the mask of all of them.
  Value rank, everyProgram;
  if (ring.multicast) {
    rank = NVVM::ClusterId::create(b, loc, b.getI32Type());
    everyProgram = arith::ConstantIntOp::create(b, loc, b.getI16Type(),
                                                (1 << multicastCluster) - 1);
  }
  scf::ForOp::create(
      b, loc, lb, ub, step, ValueRange{},
      [&](OpBuilder &nested, Location, Value iv, ValueRange) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(nested.getInsertionBlock());
        pmap.map(loop.getInductionVar(), iv);
        RingPosition at = ringPosition(b, loc, start, iv, lb, step, stages);
        Value slot = at.slot;
        // The slot is free once the consumers completed the phase before
        // the one this fill completes (in the first round, the phase
        // before the barrier's first: the wait returns at once).
        Value parity =
            arith::XOrIOp::create(b, loc, at.parity, i32Constant(b, loc, 1));
        waitBarrier(b, loc, barrierAddress(ring, true, slot), parity);
        Value full = barrierAddress(ring, false, slot);
        SmallVector<SmallVector<Value>> starts;
        SmallVector<Value> slotAddrs;
        Value tx = i32Constant(b, loc, 0);
        for (auto [load, offset, m] :
             llvm::zip(ring.loads, ring.offsets, ring.maps)) {
          SmallVector<Value> start;
          for (Value i : load.getIndices())
            start.push_back(producerValue(i, pmap));
          starts.push_back(start);
          slotAddrs.push_back(ringAddress(load, offset, slot));
          auto t = cast<RankedTensorType>(load.getType());
          int64_t bytes = t.getNumElements() * t.getElementTypeBitWidth() / 8;
          tx = arith::AddIOp::create(
              b, loc, tx,
              arith::SelectOp::create(b, loc, usable[m],
                                      i32Constant(b, loc, bytes),
                                      i32Constant(b, loc, 0)));
        }
        // Tiles TMA cannot copy: cp.async by the warp's lanes, each
        // lane's copies counted on `full` until they land.
        for (size_t idx = 0; idx < ring.loads.size(); ++idx) {
          LoadOp load = ring.loads[idx];
          Value copy = arith::XOrIOp::create(
              b, loc, usable[ring.maps[idx]],
              arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
          under(b, loc, copy, [&] {
            issueSharedCopy(load, slotAddrs[idx], starts[idx], Value(), lane,
                            32, sources[idx]);
          });
        }
        under(b, loc, anyCopy, [&] {
          NVVM::CpAsyncMBarrierArriveOp::create(b, loc,
                                                sharedPointer(b, loc, full));
        });
        NVVM::SyncWarpOp::create(b, loc, i32Constant(b, loc, -1));
        under(b, loc, laneZero, [&] {
          NVVM::MBarrierArriveExpectTxOp::create(
              b, loc, Type(), sharedPointer(b, loc, full), tx,
              NVVM::MemScopeKind::CTA, /*relaxed=*/false, Value());
          for (size_t idx = 0; idx < ring.loads.size(); ++idx) {
            LoadOp load = ring.loads[idx];
            unsigned m = ring.maps[idx];
            const TmaMap &tm = tmaMaps[m];
            auto t = cast<RankedTensorType>(load.getType());
            int64_t rows = t.getShape()[0], cols = t.getShape()[1];
            bool multicast = ring.multicastLoads[idx];
            under(b, loc, usable[m], [&] {
              // Box (p, q): columns p * boxCols.., rows q * boxRows..,
              // at panel p's rows q * boxRows in the tile's layout. (Of a
              // multicast tile, those of this program's rank.)
              for (int64_t p = 0; p < cols / tm.cols; ++p)
                for (int64_t q = 0; q < rows / tm.rows; ++q) {
                  std::optional<OpBuilder::InsertionGuard> mine;
                  if (multicast) {
                    int64_t box = p * (rows / tm.rows) + q;
                    auto ifOp = scf::IfOp::create(
                        b, loc, TypeRange{},
                        arith::CmpIOp::create(
                            b, loc, arith::CmpIPredicate::eq, rank,
                            i32Constant(b, loc, box % multicastCluster)),
                        false);
                    mine.emplace(b);
                    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
                  }
                  Value dstAddr = arith::AddIOp::create(
                      b, loc, slotAddrs[idx],
                      index(p * rows * tm.swizzle + q * tm.rows * tm.swizzle));
                  Value col = arith::AddIOp::create(b, loc, starts[idx][1],
                                                    index(p * tm.cols));
                  Value row = arith::AddIOp::create(b, loc, starts[idx][0],
                                                    index(q * tm.rows));
                  // The destination as a shared::cluster address: this
                  // program's slot (in every program's, multicast).
                  Value slotPtr = LLVM::AddrSpaceCastOp::create(
                      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 7),
                      sharedPointer(b, loc, dstAddr));
                  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
                      b, loc, slotPtr,
                      genericPointer(b, loc, mapAddress(b, loc, tmaTable, m)),
                      tmaCoordinates(b, loc, col, row, leads[idx]),
                      sharedPointer(b, loc, full), ValueRange{},
                      multicast ? everyProgram : Value(), Value(),
                      NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false,
                      NVVM::CTAGroupKindAttr(), Value());
                }
            });
          }
        });
        scf::YieldOp::create(b, loc);
      });
}

void KernelLowering::consumeRing(ProducerRing &ring, Value iv) {
  Location loc = ring.loop.getLoc();
  RingPosition at = ringPosition(
      b, loc, ring.start, iv, map.lookup(ring.loop.getLowerBound()),
      map.lookup(ring.loop.getStep()), ring.loop.getStages());
  waitBarrier(b, loc, barrierAddress(ring, false, at.slot), at.parity);
  // cp.async copies are writes of the generic proxy; wgmma reads through
  // the async one (TMA writes through it already).
  under(b, loc, anyFallback, [&] { fenceSharedForTensorCores(loc); });
  for (auto [load, offset] : llvm::zip(ring.loads, ring.offsets))
    ringSlots[load.getOperation()] = ringAddress(load, offset, at.slot);
}

void KernelLowering::releaseRing(ProducerRing &ring, Value iv) {
  Location loc = ring.loop.getLoc();
  int64_t stages = ring.loop.getStages();
  RingPosition at = ringPosition(b, loc, ring.start, iv,
                                 map.lookup(ring.loop.getLowerBound()),
                                 map.lookup(ring.loop.getStep()), stages);
  if (!ring.overlap) {
    releaseSlot(ring, at.slot);
    return;
  }
  // This iteration's wgmma wait left only its own group running: the
  // previous iteration's slot is no longer read (the last one's is given
  // back after the loop, finishRun).
  Value previous = arith::XOrIOp::create(
      b, loc, at.first,
      arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  under(b, loc, previous, [&] {
    Value slot = arith::RemUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, at.k, i32Constant(b, loc, stages - 1)),
        i32Constant(b, loc, stages));
    releaseSlot(ring, arith::IndexCastUIOp::create(b, loc, b.getIndexType(),
                                                   slot));
  });
}

void KernelLowering::releaseSlot(ProducerRing &ring, Value slot) {
  Location loc = ring.loop.getLoc();
  Value addr = barrierAddress(ring, true, slot);
  if (!ring.multicast) {
    arriveOn(b, loc, addr);
    return;
  }
  // The warp's reads are done (its wgmma groups were waited for, or its
  // lanes' loads are ordered by the warp's sync).
  NVVM::SyncWarpOp::create(b, loc, i32Constant(b, loc, -1));
  Value laneZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
  under(b, loc, laneZero, [&] {
    Value local = sharedPointer(b, loc, addr);
    for (int64_t r = 0; r < multicastCluster; ++r) {
      Value remote = NVVM::MapaOp::create(
          b, loc, LLVM::LLVMPointerType::get(b.getContext(), 7), local,
          i32Constant(b, loc, r));
      NVVM::MBarrierArriveOp::create(b, loc, Type(), remote, Value(),
                                     NVVM::MemScopeKind::CLUSTER,
                                     /*relaxed=*/false);
    }
  });
}

void KernelLowering::clusterBarrier(Location loc) {
  NVVM::ClusterArriveOp::create(b, loc, /*aligned=*/nullptr);
  NVVM::ClusterWaitOp::create(b, loc, /*aligned=*/nullptr);
}

void KernelLowering::startRun(ProducerRing &ring) {
  RangeOp loop = ring.loop;
  Location loc = loop.getLoc();
  ring.round = memref::LoadOp::create(b, loc, ring.counter, index(0));
  ring.start = ring.round;
  if (programs == 1)
    return;
  // After the runs of the programs before this one (each as long as its
  // own).
  Value n =
      tripCount(b, loc, map.lookup(loop.getLowerBound()),
                map.lookup(loop.getUpperBound()), map.lookup(loop.getStep()));
  ring.start = arith::AddIOp::create(
      b, loc, ring.round, arith::MulIOp::create(b, loc, n, programIndex));
}

void KernelLowering::finishRun(ProducerRing &ring, bool lastSlot) {
  RangeOp loop = ring.loop;
  Location loc = loop.getLoc();
  Value n =
      tripCount(b, loc, map.lookup(loop.getLowerBound()),
                map.lookup(loop.getUpperBound()), map.lookup(loop.getStep()));
  Value end = arith::AddIOp::create(b, loc, ring.start, n);
  if (lastSlot) {
    // (In the branch where the loop ran: n > 0.)
    Value slot = arith::RemUIOp::create(
        b, loc, arith::SubIOp::create(b, loc, end, index(1)),
        index(loop.getStages()));
    releaseSlot(ring, slot);
    return;
  }
  // (Past every program's run of this round.)
  if (programs > 1)
    end = arith::AddIOp::create(
        b, loc, ring.round, arith::MulIOp::create(b, loc, n, index(programs)));
  memref::StoreOp::create(b, loc, end, ring.counter, index(0));
}

::tessera::runtime::KernelLaunchRecord KernelLowering::launchRecord() const {
  ::tessera::runtime::KernelLaunchRecord record;
  SmallVector<int32_t> slots;
  int32_t slot = 0;
  func::FuncOp fn = src;
  for (BlockArgument arg : fn.getArguments()) {
    slots.push_back(slot);
    if (auto m = dyn_cast<MemRefType>(arg.getType()))
      slot += 3 + 2 * int32_t(m.getRank());
    else
      slot += 1;
  }
  record.consumerThreads = int32_t(32 * numWarps * programs);
  record.parameterSlots = slot;
  record.dynamicSharedBytes = int32_t(dynamicSharedBytes());
  if (!specialized)
    return record;
  record.producerThreads = 128;
  record.cluster = int32_t(multicastCluster);
  record.tensorMapTable = true;
  for (const TmaMap &m : tmaMaps)
    record.maps.push_back({slots[m.arg], int32_t(m.rank), int32_t(m.eltBytes),
                           int32_t(m.cols), int32_t(m.rows),
                           int32_t(m.swizzle)});
  return record;
}
