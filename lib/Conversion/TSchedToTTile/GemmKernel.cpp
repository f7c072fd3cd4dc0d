//===- GemmKernel.cpp - A contraction group's GEMM kernel ------------------===//
//
// A contraction group's kernel is a GEMM whose programs loop over output
// tiles [BM, BN] (a persistent grid when it is smaller than the tiles):
// the K loop accumulates in f32, then the group's epilogue runs on the
// accumulator with the same tile values as a row kernel's, at the tile's
// rows and columns, before the stores.
//
//===----------------------------------------------------------------------===//

#include "GroupKernel.h"

using namespace mlir;
using namespace mlir::tessera;

namespace mlir::tessera::group_kernels {

/// The shared memory of a Hopper block that a GEMM's ring and output
/// buffers may take: all of it but the launch's alignment slack and the
/// ring's mbarriers (1 KiB each).
static constexpr int64_t kRingRoom = kHopperSharedBytes - 2 * 1024;

GemmSchedule chooseGemmSchedule(const tsched::GemmForm &form, int64_t sms,
                                bool plain, bool maysplit) {
  // (Never a ping-pong GEMM: it is second in a space at most.)
  return gemmScheduleSpace(form, sms, plain, maysplit, /*hopper=*/false)
      .front();
}

SmallVector<GemmSchedule> gemmScheduleSpace(const tsched::GemmForm &form,
                                            int64_t sms, bool plain,
                                            bool maysplit, bool hopper,
                                            int64_t stagedOutputs,
                                            bool wideEpilogue) {
  struct Candidate {
    GemmSchedule s;
    double efficiency;
  };
  // Throughput relative to the best tile, as measured on an H200 (a
  // 64x128 tile of 4 warps reaches about half of a 128x256 tile's).
  SmallVector<Candidate> candidates;
  // A multiprocessor's product rate (FLOP/s), the card's memory bandwidth
  // (bytes/s) and a launch in a replayed program (s): the H200's, which
  // weigh a split's extra traffic against the waves it saves.
  double smRate, bandwidth = 3.5e12, launch = 2e-6;
  if (form.operandType.isF32()) {
    candidates = {{{64, 64, 16, 4, 2}, 1.0},
                  {{128, 64, 16, 8, 2}, 1.0},
                  {{32, 64, 16, 4, 2}, 0.8}};
    smRate = 0.4e12;
  } else {
    candidates = {{{128, 256, 64, 8, 4}, 1.0},
                  {{128, 128, 64, 8, 4}, 0.85},
                  {{64, 128, 64, 4, 4}, 0.5}};
    smRate = 6e12;
  }
  // On Hopper a whole tile's 16-bit outputs leave through shared buffers
  // beside the ring (TMA stores); where two or more of them do not fit
  // beside the candidate's ring they are stored from registers, and the
  // tile loses what a smaller one with its outputs staged gains: the
  // 128x256 tile of the block step's up projection (its GELU and its
  // input) took 312 us against 269 for 128x128 with five stages, and
  // the same product alone 294 against 269 (H200, same call).
  if (hopper && !form.operandType.isF32() && stagedOutputs >= 2) {
    int64_t elt = form.operandType.getIntOrFloatBitWidth() / 8;
    for (Candidate &c : candidates) {
      int64_t ring = c.s.stages * (c.s.bm + c.s.bn) * c.s.bk * elt;
      int64_t buffers = stagedOutputs * c.s.bm * c.s.bn * 2;
      if (ring + buffers > kRingRoom)
        c.efficiency *= 0.8;
    }
  }
  int64_t rows = form.flat() ? form.z * form.m : form.m;
  int64_t batches = form.flat() ? 1 : form.z;
  auto seconds = [&](const Candidate &c, int64_t splits) {
    int64_t tiles = batches * llvm::divideCeil(rows, c.s.bm) *
                    llvm::divideCeil(form.n, c.s.bn);
    double waves =
        double(llvm::divideCeil(std::max<int64_t>(tiles * splits, 1), sms));
    double chunk = double(llvm::divideCeil(form.k, splits));
    double t = waves * 2.0 * double(c.s.bm * c.s.bn) * chunk /
               (smRate * c.efficiency);
    if (splits > 1)
      t += 2.0 * 4.0 * double(splits * rows * form.n) / bandwidth + launch;
    return t;
  };
  SmallVector<std::pair<double, GemmSchedule>> ranked;
  for (const Candidate &c : candidates) {
    for (int64_t splits = 1; splits <= 16; splits *= 2) {
      if (splits > 1) {
        // Equal chunks of whole K steps, each at least 1024 long.
        if (!maysplit || rows * form.n == 0 ||
            form.k % (splits * c.s.bk) != 0 || form.k / splits < 1024)
          break;
      } else if (c.s.bm * c.s.bn > 128 * 128 && !plain && !wideEpilogue) {
        // An epilogue that holds other tiles beside a 128x256 accumulator
        // (a residual, an f32 output) spills; the partials kernel of a
        // split is plain whatever the epilogue.
        continue;
      }
      GemmSchedule s = c.s;
      s.splits = splits;
      ranked.push_back({seconds(c, splits), s});
    }
  }
  // Fastest first; equal estimates keep the candidates' order.
  SmallVector<size_t> order(ranked.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::sort(order, [&](size_t a, size_t b) {
    return ranked[a].first < ranked[b].first ||
           (ranked[a].first == ranked[b].first && a < b);
  });
  // The estimate is good enough to leave out the rest: an autotuner
  // compiles one program for each candidate rank.
  SmallVector<GemmSchedule> out;
  for (size_t i : order)
    if (out.size() < kGemmAutotuneSpace)
      out.push_back(ranked[i].second);
  // Deeper rings where shared memory allows (Hopper's TMA rings): the
  // profile of the 128x128 tile with a GELU epilogue had its consumers
  // waiting for loads a quarter of the time with four stages (Nsight
  // Compute, H200). The lowering plans the ring and its mbarriers (1 KiB
  // each, with the alignment slack) first, then the output buffers.
  if (hopper && !form.operandType.isF32()) {
    int64_t elt = form.operandType.getIntOrFloatBitWidth() / 8;
    for (GemmSchedule &s : out) {
      // A split's partials are f32 (no shared buffer); its sum has no ring.
      int64_t outputs = s.splits > 1 ? 0 : stagedOutputs;
      int64_t stage = (s.bm + s.bn) * s.bk * elt;
      int64_t room = kRingRoom - outputs * s.bm * s.bn * 2;
      int64_t kSteps = llvm::divideCeil(
          s.splits > 1 ? form.k / s.splits : form.k, s.bk);
      int64_t fit = std::min({room / stage, kMaxGemmStages, kSteps});
      s.stages = std::max(s.stages, fit);
    }
  }
  // The ping-pong GEMM (two programs of one warpgroup a block, taking
  // turns on the tensor cores) for a product with an epilogue to hide,
  // second: on the H200 it ties the 128x128 tile on the block step's GELU
  // and bias products and loses on its residual and plain ones
  // (docs/PERFORMANCE.md), so the estimate's choice stays first and the
  // tuner decides.
  if (hopper && !plain && form.operandType.getIntOrFloatBitWidth() == 16) {
    out.insert(out.begin() + 1, pingPongSchedule(form, stagedOutputs));
    if (out.size() > kGemmAutotuneSpace)
      out.pop_back();
  }
  return out;
}

GemmSchedule pingPongSchedule(const tsched::GemmForm &form,
                              int64_t stagedOutputs) {
  GemmSchedule s = kPingPongSchedule;
  // The programs share one ring: the deepest that fits, up to
  // kMaxGemmStages, beside a shared buffer for each output tile of each
  // program where that leaves five stages or more; else the deepest ring
  // alone (the outputs are stored from registers).
  int64_t elt = form.operandType.getIntOrFloatBitWidth() / 8;
  int64_t stage = (s.bm + s.bn) * s.bk * elt;
  int64_t room = kRingRoom;
  int64_t buffers = kPingPongPrograms * stagedOutputs * s.bm * s.bn * 2;
  int64_t withBuffers = (room - buffers) / stage;
  int64_t fit = withBuffers >= 5 ? withBuffers : room / stage;
  int64_t kSteps = llvm::divideCeil(form.k, s.bk);
  s.stages = std::max<int64_t>(
      2, std::min({fit, kMaxGemmStages, std::max<int64_t>(kSteps, 1)}));
  return s;
}

/// The flat batch index of an operand whose batch dims are
/// `operandBatch` (ones broadcast) for the result's flat batch index `z`.
Value RowKernel::batchIndex(Value z, ArrayRef<int64_t> operandBatch,
                            Location loc) {
  ArrayRef<int64_t> batch = gemm->batch;
  if (llvm::equal(operandBatch, batch))
    return z;
  Value out = index(0);
  int64_t inner = 1, operandStride = 1;
  for (int64_t d = int64_t(batch.size()) - 1; d >= 0; --d) {
    if (operandBatch[d] != 1) {
      // (z / inner) % batch[d], times the operand's stride of dim d.
      Value idx = arith::RemSIOp::create(
          b, loc, arith::DivSIOp::create(b, loc, z, index(inner)),
          index(batch[d]));
      out = arith::AddIOp::create(
          b, loc, out,
          arith::MulIOp::create(b, loc, idx, index(operandStride)));
      operandStride *= operandBatch[d];
    }
    inner *= batch[d];
  }
  return out;
}

/// memref[z] of a memref with a leading batch dim: the matrix (or row
/// vector) of batch z, as a strided view.
Value RowKernel::batchSlice(Value memref, Value z, Location loc) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets[0] = z;
  SmallVector<OpFoldResult> sizes(1, b.getIndexAttr(1));
  for (int64_t d = 1; d < rank; ++d)
    sizes.push_back(
        memref::DimOp::create(b, loc, memref, index(d)).getResult());
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  SmallVector<int64_t> layoutStrides(rank - 1, ShapedType::kDynamic);
  layoutStrides.back() = 1;
  auto layout = StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                                       layoutStrides);
  auto sliced = MemRefType::get(
      SmallVector<int64_t>(rank - 1, ShapedType::kDynamic),
      type.getElementType(), layout);
  return memref::SubViewOp::create(b, loc, sliced, memref, offsets, sizes,
                                   strides);
}

LogicalResult RowKernel::buildGemm(func::FuncOp kernel, GemmPart part) {
  const tsched::GemmForm &g = *gemm;
  Location loc = gemmOp->getLoc();
  Block *entry = kernel.addEntryBlock();
  b.setInsertionPointToStart(entry);
  // The second kernel of a split takes the partials first.
  unsigned shift = part == GemmPart::Sum ? 1 : 0;
  auto argOf = [&](Value v) {
    return entry->getArgument(cast<BlockArgument>(v).getArgNumber() + shift);
  };
  bool batched = !g.flat();
  assert((part == GemmPart::Whole || !batched) && "only flat GEMMs split");
  int64_t m = batched ? g.m : g.z * g.m;
  int64_t tilesM = llvm::divideCeil(m, bm), tilesN = llvm::divideCeil(g.n, bn);
  int64_t perBatch = tilesM * tilesN;
  // Each program takes output tile program_id, then every num_programs-th;
  // the first kernel of a split has a tile for each K chunk.
  Value pid = tt::ProgramIdOp::create(b, loc, b.getIndexType(),
                                      b.getI32IntegerAttr(0));
  Value programs = tt::NumProgramsOp::create(b, loc, b.getIndexType(),
                                             b.getI32IntegerAttr(0));
  // The programs of a ping-pong block take turns, so each runs the tiles
  // loop as often as the others: over the tiles rounded up to a whole
  // number a block (program p of block q starts at 2q + p, the step is
  // even), a program past the last tile computing nothing.
  int64_t perBlock = programsPerBlock();
  int64_t tileCountHere = gemmGrid(part == GemmPart::Partials);
  int64_t loopTiles = llvm::alignTo(tileCountHere, perBlock);
  auto tilesLoop = tt::RangeOp::create(b, loc, TypeRange(), pid,
                                       index(loopTiles), programs,
                                       ValueRange(), b.getI32IntegerAttr(1));
  Block *tileBody = b.createBlock(&tilesLoop.getBody(), {},
                                  {b.getIndexType()}, {loc});
  b.setInsertionPointToStart(tileBody);
  Value t = tileBody->getArgument(0);
  Value valid;
  if (loopTiles != tileCountHere) {
    valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, t,
                                  index(tileCountHere));
    // (The tile's coordinates stay in range; its K loop and epilogue do
    // not run.)
    t = arith::MinSIOp::create(b, loc, t, index(tileCountHere - 1));
  }
  Value z = index(0);
  if (batched) {
    z = arith::DivSIOp::create(b, loc, t, index(perBatch));
    t = arith::SubIOp::create(b, loc, t,
                              arith::MulIOp::create(b, loc, z,
                                                    index(perBatch)));
  }
  // The K chunk of the first kernel of a split.
  Value chunk;
  if (part == GemmPart::Partials) {
    chunk = arith::DivSIOp::create(b, loc, t, index(perBatch));
    t = arith::RemSIOp::create(b, loc, t, index(perBatch));
  }
  // Tiles in groups of 8 row blocks (column by column within a group):
  // tiles that run together share A's and B's blocks in L2.
  const int64_t groupRows = 8;
  int64_t inGroup = groupRows * tilesN;
  Value groupIdx = arith::DivSIOp::create(b, loc, t, index(inGroup));
  Value first = arith::MulIOp::create(b, loc, groupIdx, index(groupRows));
  Value rowsHere = arith::MinSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, index(tilesM), first),
      index(groupRows));
  Value within = arith::RemSIOp::create(b, loc, t, index(inGroup));
  Value ti = arith::AddIOp::create(
      b, loc, first, arith::RemSIOp::create(b, loc, within, rowsHere));
  Value tj = arith::DivSIOp::create(b, loc, within, rowsHere);
  rowStart = arith::MulIOp::create(b, loc, ti, index(bm));
  colStart = arith::MulIOp::create(b, loc, tj, index(bn));
  globalRow = batched ? Value(arith::AddIOp::create(
                            b, loc,
                            arith::MulIOp::create(b, loc, z, index(g.m)),
                            rowStart))
                      : rowStart;

  auto accType = RankedTensorType::get({bm, bn}, f32);
  if (part == GemmPart::Sum) {
    // The chunks' products of this tile, added in chunk order.
    Value partials = entry->getArgument(0);
    Value acc;
    for (int64_t c = 0; c < splits; ++c) {
      Value p = tt::LoadOp::create(b, loc, accType,
                                   batchSlice(partials, index(c), loc),
                                   ValueRange{rowStart, colStart}, Value(),
                                   nullptr, nullptr);
      acc = acc ? Value(arith::AddFOp::create(b, loc, acc, p)) : p;
    }
    tiles[gemmOp->getResult(0)] = Tile{acc, Class::Full};
    return buildEpilogue(entry, shift, z, batched, loc, tilesLoop, valid);
  }
  Value aMem = argOf(gemmOp->getOperand(0));
  Value bMem = argOf(gemmOp->getOperand(1));
  if (batched) {
    aMem = batchSlice(aMem, batchIndex(z, g.aBatch, loc), loc);
    bMem = batchSlice(bMem, batchIndex(z, g.bBatch, loc), loc);
  }
  // The K loop: acc += op(A tile) @ op(B tile), the loads `stages - 1`
  // steps ahead; over one chunk in the first kernel of a split.
  int64_t kLength = part == GemmPart::Partials ? g.k / splits : g.k;
  Value kBase = part == GemmPart::Partials
                    ? Value(arith::MulIOp::create(b, loc, chunk,
                                                  index(kLength)))
                    : Value();
  Value zeros = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0)));
  // (A ping-pong program's tile past the last runs its K loop on the last
  // tile's operands all the same: the programs of a block share the ring,
  // each run of the loop as long as the others'.)
  Value kEnd = index(kLength);
  auto kLoop = tt::RangeOp::create(b, loc, TypeRange{accType}, index(0), kEnd,
                                   index(bk), ValueRange{zeros},
                                   b.getI32IntegerAttr(int32_t(stages)));
  if (deepestRing)
    kLoop->setAttr("ttile.deepest_ring", b.getUnitAttr());
  Block *kBody = b.createBlock(&kLoop.getBody(), {},
                               {b.getIndexType(), accType}, {loc, loc});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kBody);
    Value kk = kBody->getArgument(0);
    if (kBase)
      kk = arith::AddIOp::create(b, loc, kBase, kk);
    Type elt = g.operandType;
    auto loadTile = [&](Value mem, Value r, Value c, int64_t rs, int64_t cs,
                        bool transposed) -> Value {
      Value tileV = transposed
                        ? tt::LoadOp::create(
                              b, loc, RankedTensorType::get({cs, rs}, elt),
                              mem, ValueRange{c, r}, Value(), nullptr,
                              nullptr)
                              .getResult()
                        : tt::LoadOp::create(
                              b, loc, RankedTensorType::get({rs, cs}, elt),
                              mem, ValueRange{r, c}, Value(), nullptr,
                              nullptr)
                              .getResult();
      if (!transposed)
        return tileV;
      return tt::TransposeOp::create(b, loc, RankedTensorType::get({rs, cs},
                                                                   elt),
                                     tileV, b.getDenseI64ArrayAttr({1, 0}));
    };
    Value aTile = loadTile(aMem, rowStart, kk, bm, bk, g.transA);
    Value bTile = loadTile(bMem, kk, colStart, bk, bn, g.transB);
    Value acc = tt::DotOp::create(b, loc, accType, aTile, bTile,
                                  kBody->getArgument(1), nullptr);
    tt::YieldOp::create(b, loc, ValueRange{acc});
  }
  b.setInsertionPointAfter(kLoop);
  if (part == GemmPart::Partials) {
    assert(!valid && "a split GEMM is not a ping-pong one");
    // The chunk's product, unrounded, at [chunk, rows, cols].
    tt::StoreOp::create(b, loc, kLoop.getResult(0),
                        batchSlice(entry->getArgument(2), chunk, loc),
                        ValueRange{rowStart, colStart}, Value());
    tt::YieldOp::create(b, loc);
    b.setInsertionPointAfter(tilesLoop);
    func::ReturnOp::create(b, loc);
    return success();
  }
  tiles[gemmOp->getResult(0)] = Tile{kLoop.getResult(0), Class::Full};
  if (failed(buildEpilogue(entry, shift, z, batched, loc, tilesLoop, valid)))
    return failure();
  hoistEpilogueLoads(kLoop);
  return success();
}

/// Moves the epilogue's loads of the tile (a bias, a residual) that do not
/// depend on the K loop above it, with the index arithmetic they need: their
/// latency then passes under the loop's products instead of after them.
/// (The K loop writes no memory, and the tile's stores stay after its loads.
/// A ping-pong GEMM's epilogue, under its `valid` test, keeps its loads.)
void RowKernel::hoistEpilogueLoads(tt::RangeOp kLoop) {
  Block *block = kLoop->getBlock();
  SmallVector<tt::LoadOp> loads;
  for (Operation *op = kLoop->getNextNode(); op; op = op->getNextNode())
    if (auto load = dyn_cast<tt::LoadOp>(op))
      loads.push_back(load);
  for (tt::LoadOp load : loads) {
    // The ops after the loop that the load's operands need, operands first.
    llvm::SetVector<Operation *> slice;
    bool movable = true;
    std::function<void(Value)> visit = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!movable || !def || def->getBlock() != block ||
          def->isBeforeInBlock(kLoop) || slice.contains(def))
        return;
      if (def == kLoop.getOperation() || !isPure(def) ||
          def->getNumRegions()) {
        movable = false;
        return;
      }
      for (Value o : def->getOperands())
        visit(o);
      slice.insert(def);
    };
    for (Value o : load->getOperands())
      visit(o);
    if (!movable)
      continue;
    for (Operation *def : slice)
      def->moveBefore(kLoop);
    load->moveBefore(kLoop);
  }
}

LogicalResult RowKernel::buildEpilogue(Block *entry, unsigned shift, Value z,
                                       bool batched, Location loc,
                                       Operation *tilesLoop, Value valid) {
  Block &body = group.getBodyBlock();
  // A tile past the last (`valid` false) stores nothing.
  scf::IfOp only;
  if (valid) {
    only = scf::IfOp::create(b, loc, TypeRange{}, valid, false);
    b.setInsertionPoint(only.thenBlock()->getTerminator());
  }
  auto argOf = [&](Value v) {
    return entry->getArgument(cast<BlockArgument>(v).getArgNumber() + shift);
  };
  // The epilogue's other inputs, read at the tile (a batched GEMM reads
  // full tiles and rows of batch z).
  auto viewFor = [&](Value arg, Class cls) {
    if (batched && (cls == Class::Full || cls == Class::Row))
      return batchSlice(arg, z, loc);
    return arg;
  };
  for (BlockArgument input : body.getArguments()) {
    if (llvm::all_of(input.getUsers(),
                     [&](Operation *u) { return u == gemmOp; }))
      continue;
    Class cls = predicted.lookup(input);
    tiles[input] = load(viewFor(argOf(input), cls), cls,
                        cast<RankedTensorType>(input.getType())
                            .getElementType(),
                        input.getLoc());
  }
  for (Operation &op : body.without_terminator())
    if (&op != gemmOp && failed(lower(&op)))
      return failure();
  auto yield = cast<tsched::YieldOp>(body.getTerminator());
  for (auto [value, arg] :
       llvm::zip(yield.getValues(), entry->getArguments().drop_front(
                                        body.getNumArguments() + shift))) {
    Tile tv = tiles.lookup(value);
    Type elt = cast<RankedTensorType>(value.getType()).getElementType();
    store(tv, viewFor(arg, tv.cls), elt, loc);
  }
  if (only)
    b.setInsertionPointAfter(only);
  tt::YieldOp::create(b, loc);
  b.setInsertionPointAfter(tilesLoop);
  func::ReturnOp::create(b, loc);
  return success();
}
} // namespace mlir::tessera::group_kernels
