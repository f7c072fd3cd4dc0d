//===- PlanSpecialization.cpp - Rings, tensor maps and shared memory -----===//
//
// Whether a kernel gets a TMA producer warpgroup (LowerProducer.cpp), and
// its shared memory if so: the rings of its top-level ranges (each load a
// tensor map of a kernel argument the producer can address with values it
// computes itself), the kernel's other shared tiles, then a shared buffer
// for each 2-byte output tile stored in a loop, while they fit. Rings whose
// depth the GEMM generator chose (`ttile.deepest_ring`) give up stages to
// fit rather than the producer. With several programs a block
// (ttile.programs_per_block) the rings are the programs' together, at the
// start of shared memory; each program's other tiles are in a window of
// its own after them.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;
using namespace mlir::tessera::ttile::detail;

bool KernelLowering::producerComputable(Value v, ArrayRef<Operation *> scope) {
  if (isTile(v.getType()))
    return false;
  Block *entry = &src.getBody().front();
  auto inScope = [&](Block *block) {
    return block == entry || llvm::any_of(scope, [&](Operation *loop) {
             return block == &loop->getRegion(0).front();
           });
  };
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == entry || llvm::any_of(scope, [&](Operation *loop) {
             return v == inductionVar(loop);
           });
  Operation *def = v.getDefiningOp();
  if (!inScope(def->getBlock()))
    return false;
  if (isa<ProgramIdOp, NumProgramsOp>(def))
    return true;
  bool scalarPure = def->getNumRegions() == 0 &&
                    (isa<memref::DimOp, memref::SubViewOp>(def) ||
                     (isa<arith::ArithDialect>(def->getDialect()) &&
                      isMemoryEffectFree(def)));
  return scalarPure && llvm::all_of(def->getOperands(), [&](Value o) {
           return producerComputable(o, scope);
         });
}

bool KernelLowering::uniformOverPrograms(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == &src.getBody().front();
  Operation *def = v.getDefiningOp();
  if (isa<NumProgramsOp>(def))
    return true;
  if (def->getNumRegions() || isa<ProgramIdOp>(def) ||
      !(isa<memref::DimOp>(def) ||
        (isa<arith::ArithDialect>(def->getDialect()) &&
         isMemoryEffectFree(def))))
    return false;
  return llvm::all_of(def->getOperands(),
                      [&](Value o) { return uniformOverPrograms(o); });
}

FailureOr<std::pair<BlockArgument, SmallVector<OpFoldResult>>>
KernelLowering::tmaSource(LoadOp load, ArrayRef<Operation *> scope) {
  return tmaView(load.getSource(), scope, /*anyIndex=*/false);
}

FailureOr<std::pair<BlockArgument, SmallVector<OpFoldResult>>>
KernelLowering::tmaView(Value source, ArrayRef<Operation *> scope,
                        bool anyIndex) {
  Block *entry = &src.getBody().front();
  if (auto arg = dyn_cast<BlockArgument>(source)) {
    if (arg.getOwner() != entry)
      return failure();
    return std::make_pair(arg, SmallVector<OpFoldResult>());
  }
  auto view = source.getDefiningOp<memref::SubViewOp>();
  if (!view || (!anyIndex && !producerComputable(view.getResult(), scope)))
    return failure();
  auto arg = dyn_cast<BlockArgument>(view.getSource());
  auto argType = cast<MemRefType>(view.getSource().getType());
  int64_t rank = argType.getRank();
  if (!arg || arg.getOwner() != entry || rank > 5 ||
      view.getType().getRank() != 2)
    return failure();
  SmallVector<OpFoldResult> offsets = view.getMixedOffsets(),
                            sizes = view.getMixedSizes(),
                            strides = view.getMixedStrides();
  // The whole extent of dim `d`: its static size or memref.dim of it.
  auto whole = [&](OpFoldResult size, int64_t d) {
    if (auto attr = getConstantIntValue(size))
      return !argType.isDynamicDim(d) && *attr == argType.getDimSize(d);
    auto dim = cast<Value>(size).getDefiningOp<memref::DimOp>();
    auto index = dim ? getConstantIntValue(dim.getIndex()) : std::nullopt;
    return dim && dim.getSource() == view.getSource() && index && *index == d;
  };
  SmallVector<OpFoldResult> leading;
  for (int64_t d = 0; d < rank; ++d) {
    if (getConstantIntValue(strides[d]) != 1)
      return failure();
    if (d >= rank - 2) {
      if (getConstantIntValue(offsets[d]) != 0 || !whole(sizes[d], d))
        return failure();
      continue;
    }
    if (getConstantIntValue(sizes[d]) != 1)
      return failure();
    leading.push_back(offsets[d]);
  }
  return std::make_pair(arg, leading);
}

unsigned KernelLowering::tmaMapFor(BlockArgument arg, size_t leadingDims,
                                   RankedTensorType tile, int64_t swizzle) {
  TmaMap m;
  m.arg = arg.getArgNumber();
  m.rank = unsigned(leadingDims) + 2;
  m.eltBytes = tile.getElementTypeBitWidth() / 8;
  m.swizzle = swizzle;
  m.cols = swizzle / m.eltBytes;
  m.rows = std::min<int64_t>(tile.getShape()[0], 256);
  auto same = llvm::find_if(tmaMaps, [&](const TmaMap &o) {
    return o.arg == m.arg && o.rank == m.rank && o.rows == m.rows &&
           o.cols == m.cols && o.eltBytes == m.eltBytes &&
           o.swizzle == m.swizzle;
  });
  if (same != tmaMaps.end())
    return unsigned(same - tmaMaps.begin());
  tmaMaps.push_back(m);
  return unsigned(tmaMaps.size() - 1);
}

bool KernelLowering::planSpecialization() {
  // Warpgroups of consumers (wgmma's unit).
  if (numWarps % 4)
    return false;
  SmallVector<std::pair<RangeOp, SmallVector<LoadOp>>> found;
  src.walk([&](RangeOp r) {
    SmallVector<LoadOp> loads = ringLoads(r);
    if (!loads.empty())
      found.push_back({r, std::move(loads)});
  });
  if (found.empty())
    return false;
  // The loops around each ring, outermost first: the producer runs the
  // same loops (so they are loops alone, not a ring's loop, with bounds it
  // can compute).
  SmallVector<SmallVector<Operation *>> chains;
  for (auto &[loop, loads] : found) {
    SmallVector<Operation *> chain = {loop};
    for (Operation *p = loop->getParentOp(); p != src.getOperation();
         p = p->getParentOp()) {
      if (!isa<RangeOp, scf::ForOp>(p) ||
          llvm::any_of(found, [&](auto &f) { return f.first == p; }))
        return false;
      chain.insert(chain.begin(), p);
    }
    for (auto [i, l] : llvm::enumerate(chain))
      for (Value v : loopBounds(l))
        if (!producerComputable(v, ArrayRef<Operation *>(chain).take_front(i)))
          return false;
    chains.push_back(std::move(chain));
  }

  // With several programs a block, the programs take turns on one ring a
  // loop, each run of the loop in program order: every program's run must
  // take the same number of the ring's slots.
  if (programs > 1)
    for (auto &[loop, loads] : found)
      for (Value v : loopBounds(loop))
        if (!uniformOverPrograms(v)) {
          planError = true;
          loop.emitError()
              << "ttile.programs_per_block = " << programs
              << ": the programs of a block share this loop's ring, so its "
                 "bounds must be the same in every program (computed from "
                 "constants, kernel arguments and num_programs), but "
              << v << " is not";
          return false;
        }
  // Shared memory: the rings (shared by the programs of a block), then
  // each program's other tiles.
  int64_t ringBytes = 0, windowTiles = 0;
  auto total = [&] { return 1024 + ringBytes + programs * windowTiles; };
  llvm::SmallPtrSet<Operation *, 8> inRings;
  // A stage of each ring's loop (its loads' tiles).
  SmallVector<int64_t> stageBytes;
  for (auto [f, chain] : llvm::zip(found, chains)) {
    auto &[loop, loads] = f;
    stageBytes.push_back(0);
    for (LoadOp load : loads) {
      auto t = cast<RankedTensorType>(load.getType());
      auto shared = cast<SharedAttr>(t.getEncoding());
      int64_t eltBytes = t.getElementTypeBitWidth() / 8;
      int64_t rows = t.getShape()[0], cols = t.getShape()[1];
      int64_t boxCols = shared.getSwizzle() / eltBytes;
      if (failed(tmaSource(load, chain)) || cols % boxCols ||
          (rows > 256 && rows % 256))
        return false;
      for (Value i : load.getIndices())
        if (!producerComputable(i, chain))
          return false;
      ringBytes += loop.getStages() * sharedTileBytes(t);
      stageBytes.back() += sharedTileBytes(t);
      inRings.insert(load);
    }
    ringBytes += 1024; // the ring's mbarriers
  }
  // Synchronous shared tiles live beside the rings (which are not reused
  // from one loop to the next: the producer runs ahead into the next one).
  // So do computed tiles stored for wgmma.
  src.walk([&](LoadOp load) {
    if (!inRings.contains(load) &&
        isa_and_nonnull<SharedAttr>(load.getType().getEncoding()))
      windowTiles += sharedTileBytes(cast<RankedTensorType>(load.getType()));
  });
  src.walk([&](ConvertLayoutOp cvt) {
    if (isa_and_nonnull<SharedAttr>(cvt.getType().getEncoding()))
      windowTiles += sharedTileBytes(cvt.getType());
  });
  // Rings whose depth the GEMM generator chose as the deepest that fits
  // (`ttile.deepest_ring`: it does not see the epilogue's other shared
  // tiles) give up a stage at a time where they do not fit beside those,
  // the widest stage first and two at least. A kernel's own stages are
  // kept: one that does not fit is an error of the schedule.
  while (total() > sharedLimit) {
    int64_t widest = -1;
    for (auto [i, f] : llvm::enumerate(found))
      if (f.first->hasAttr("ttile.deepest_ring") && f.first.getStages() > 2 &&
          (widest < 0 || stageBytes[i] > stageBytes[widest]))
        widest = int64_t(i);
    if (widest < 0)
      return false;
    RangeOp loop = found[widest].first;
    loop->setAttr("stages", b.getI32IntegerAttr(loop.getStages() - 1));
    ringBytes -= stageBytes[widest];
  }
  // Stores of 2-byte tiles inside loops (a persistent kernel's output
  // tiles) go through a shared buffer and TMA where it fits: the consumers
  // go on to the next tile while TMA copies the buffer out. (A store at the
  // top level ends the program: nothing would overlap it.)
  SmallVector<StoreOp> staged;
  src.walk([&](StoreOp st) {
    auto t = cast<RankedTensorType>(st.getValue().getType());
    if (st->getParentOp() == src.getOperation() || st.getMask() ||
        t.getRank() != 2 || t.getElementTypeBitWidth() != 16 ||
        t.getShape()[1] % 64 || t.getShape()[0] % 8 ||
        (t.getShape()[0] > 256 && t.getShape()[0] % 256) ||
        failed(tmaView(st.getDest(), {}, /*anyIndex=*/true)) ||
        total() + programs * sharedTileBytes(t) > sharedLimit)
      return;
    windowTiles += sharedTileBytes(t);
    staged.push_back(st);
  });

  for (auto [f, chain] : llvm::zip(found, chains)) {
    auto &[loop, loads] = f;
    ProducerRing ring;
    ring.loop = loop;
    ring.loads = loads;
    ring.chain = chain;
    for (LoadOp load : loads) {
      auto t = cast<RankedTensorType>(load.getType());
      auto shared = cast<SharedAttr>(t.getEncoding());
      auto [arg, leading] = *tmaSource(load, chain);
      ring.leading.push_back(leading);
      ring.maps.push_back(
          tmaMapFor(arg, leading.size(), t, shared.getSwizzle()));
      ring.offsets.push_back(
          allocateRingShared(loop.getStages() * sharedTileBytes(t)));
    }
    ring.barriers = allocateRingShared(16 * loop.getStages());
    ring.overlap = canOverlapDots(loop, loads, /*minStages=*/2);
    // Multicast loads whose boxes split evenly over the cluster (others
    // are copied by each program: the same tile, only more traffic).
    auto cluster = src->getAttrOfType<IntegerAttr>("ttile.cluster");
    int64_t clusterSize = cluster ? cluster.getInt() : 1;
    for (auto [load, m] : llvm::zip(loads, ring.maps)) {
      auto t = cast<RankedTensorType>(load.getType());
      const TmaMap &tm = tmaMaps[m];
      int64_t boxes = t.getShape()[1] / tm.cols * (t.getShape()[0] / tm.rows);
      bool cast = load.getMulticast() && clusterSize > 1 &&
                  boxes % clusterSize == 0;
      ring.multicastLoads.push_back(cast);
      ring.multicast = ring.multicast || cast;
      if (cast)
        multicastCluster = clusterSize;
    }
    producerRings.push_back(std::move(ring));
  }
  for (StoreOp st : staged) {
    auto t = cast<RankedTensorType>(st.getValue().getType());
    auto [arg, leading] = *tmaView(st.getDest(), {}, /*anyIndex=*/true);
    StagedStore s;
    s.map = tmaMapFor(arg, leading.size(), t, /*swizzle=*/128);
    s.offset = allocateDynamicShared(sharedTileBytes(t));
    s.leading = leading;
    stagedStores[st.getOperation()] = std::move(s);
  }
  specialized = true;
  return true;
}
