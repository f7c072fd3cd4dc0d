//===- KernelLowering.h - One Tile IR kernel, thread by thread -*- C++ -*-===//
//
// Each tile becomes the scalars its layout gives a thread (Distribution.h);
// the kernel body is rewritten op by op into a gpu.func run by
// 32 * num_warps threads. The class is shared by TTileToGPU.cpp (driver,
// blocks, memory), LowerDataMovement.cpp (layout changes through shared
// memory, ldmatrix) and LowerCompute.cpp (reductions, dots, casts, masks).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_CONVERSION_TTILETOGPU_KERNELLOWERING_H
#define TESSERA_CONVERSION_TTILETOGPU_KERNELLOWERING_H

#include "LoweringHelpers.h"
#include "tessera/Dialect/TTile/Transforms/Distribution.h"

#include "tessera/Conversion/Passes.h"
#include "tessera/Runtime/LaunchRecord.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <map>

namespace mlir::tessera::ttile::detail {

class KernelLowering {
public:
  /// `tma`: on sm_90a, fill the shared-tile rings of top-level ranges with
  /// TMA copies from a producer warpgroup (LowerProducer.cpp) where the
  /// kernel allows it.
  /// `sharedLimit`: the shared memory a block of the chip may use with the
  /// opt-in (Hopper: 227 KiB); TMA rings and staged stores are planned
  /// within it.
  KernelLowering(func::FuncOp src, gpu::GPUFuncOp dst, bool tma = false,
                 int64_t sharedLimit = kHopperSharedBytes)
      : src(src), dst(dst), b(src.getContext()), numWarps(kernelNumWarps(src)),
        useTma(tma), sharedLimit(sharedLimit) {
    if (auto n = src->getAttrOfType<IntegerAttr>("ttile.programs_per_block"))
      programs = n.getInt();
  }

  /// Lowers the kernel into `dst` (KernelLowering.cpp).
  LogicalResult run();

  /// Dynamic shared memory the kernel needs at launch (0 for none): the
  /// shared tiles at their peak, then the scratch area.
  int64_t dynamicSharedBytes() const {
    int64_t total = ringAreaBytes + programs * windowBytes();
    return total ? total + 1024 : 0;
  }
  /// Of which each program's (one window a program, with
  /// ttile.programs_per_block; the rings the programs share come first).
  int64_t windowBytes() const {
    int64_t total = tileSharedBytes() + scratchBytes;
    return programs > 1 ? int64_t(llvm::alignTo(total, 1024)) : total;
  }
  /// Of which the shared tiles (and their stages and barriers).
  int64_t tileSharedBytes() const {
    return llvm::alignTo(std::max(dynamicPeak, dynamicBytes), 128);
  }
  /// Of which layout conversions and reductions.
  int64_t scratchSharedBytes() const { return scratchBytes; }

  /// Whether the kernel runs a producer warpgroup (TMA copies) beside its
  /// `ttile.num_warps` warps: it then takes one more parameter, the device
  /// address of its tensor maps, and needs 128 more threads.
  bool isSpecialized() const { return specialized; }

  /// What a launch of the kernel needs (tessera/Runtime/LaunchRecord.h):
  /// its threads, dynamic shared memory, parameter slots, cluster and
  /// tensor maps.
  ::tessera::runtime::KernelLaunchRecord launchRecord() const;

private:
  func::FuncOp src;
  gpu::GPUFuncOp dst;
  OpBuilder b;
  IRMapping map;
  DenseMap<Value, Regs> tiles;
  /// The thread's lane, and its warp within its program (consumers), or
  /// numWarps + j for producer warp j.
  Value lane, warp;
  int64_t numWarps;
  /// Programs a block (ttile.programs_per_block), and this thread's: each
  /// has numWarps consumer warps and a window of shared memory of its own,
  /// they share the TMA rings and the producer warp that fills them, and
  /// they take turns to run their wgmma loops.
  int64_t programs = 1;
  Value programIndex;
  /// With several programs a block: the rings they share (and their
  /// mbarriers), at the start of dynamic shared memory before the
  /// programs' windows, and the address they start at.
  int64_t ringAreaBytes = 0;
  Value ringAreaBase;
  /// The offset of the first window (the ring area's size, set once the
  /// kernel is lowered).
  arith::ConstantIndexOp windowsOffset;
  /// Dynamic shared memory: the 1024-byte aligned base address, the bytes
  /// handed out (a stack: a loop gives back the buffers of the shared tiles
  /// it loads when it ends, so loops one after the other reuse them) and
  /// the most handed out at once.
  Value dynamicBase;
  int64_t dynamicBytes = 0;
  int64_t dynamicPeak = 0;
  /// The scratch area: its offset from the base (a constant set once the
  /// tiles' peak is known), its size, and the bytes of the current use.
  arith::ConstantIndexOp scratchOffset;
  /// The distance between programs' windows (set once the kernel is
  /// lowered).
  arith::ConstantIndexOp windowStride;
  Value scratchBase;
  int64_t scratchBytes = 0;
  int64_t scratchUsed = 0;
  /// Places the scratch area after the tiles (once the kernel is lowered).
  void placeScratch() {
    if (scratchOffset)
      scratchOffset->setAttr("value", b.getIndexAttr(tileSharedBytes()));
    if (windowStride)
      windowStride->setAttr("value", b.getIndexAttr(windowBytes()));
    if (windowsOffset)
      windowsOffset->setAttr("value", b.getIndexAttr(ringAreaBytes));
  }
  /// Shared-tile loads of the range being lowered: this iteration's buffer.
  DenseMap<Operation *, Value> ringSlots;
  /// wgmma dots that leave their group in flight into the next iteration
  /// (waited for at the next one's end, or after the loop).
  llvm::SmallPtrSet<Operation *, 4> overlappedDots;
  /// Results of wgmma dots issued and not yet waited for, in issue order
  /// (waitForUses).
  SmallVector<Value, 2> pendingWgmma;

  /// Warp specialization (LowerProducer.cpp).
  bool useTma = false;
  int64_t sharedLimit = kHopperSharedBytes;
  bool specialized = false;
  /// One TMA tensor map: a kernel argument of rank `rank` (2 to 5) read in
  /// boxes of `rows` x `cols` elements of its last two dims (`cols` one
  /// swizzle row), one index of each leading dim.
  struct TmaMap {
    unsigned arg, rank;
    int64_t rows, cols, eltBytes, swizzle;
  };
  SmallVector<TmaMap> tmaMaps;
  /// A top-level range whose shared tiles the producer copies: its ring
  /// buffers, each load's map, and `stages` full then `stages` empty
  /// mbarriers at `barriers`.
  struct ProducerRing {
    RangeOp loop;
    SmallVector<LoadOp> loads;
    SmallVector<int64_t> offsets;
    SmallVector<unsigned> maps;
    /// Per load: the indices of its argument's leading dims (a subview
    /// that selects one, `q[bh]`).
    SmallVector<SmallVector<OpFoldResult>> leading;
    /// The loops around it, outermost first, and it.
    SmallVector<Operation *> chain;
    /// Ring iterations before this run of the loop (a private counter: the
    /// loop may run once per iteration of loops around it), its value
    /// when the run being lowered starts (`round`) and the run's first
    /// iteration in the ring (`start`: with several programs a block
    /// sharing the ring, program p's run comes after those of programs
    /// 0..p-1 in the same round).
    Value counter, round, start;
    int64_t barriers = 0;
    bool overlap = false;
    /// Whether it holds a tile multicast to the cluster (its slots are
    /// given back to every program of the cluster, one arrival a warp).
    bool multicast = false;
    /// Per load: whether it is one (its boxes split over the cluster).
    SmallVector<bool> multicastLoads;
  };
  /// Programs a cluster whose producers multicast tiles (1: none).
  int64_t multicastCluster = 1;
  SmallVector<ProducerRing, 2> producerRings;
  /// The kernel parameter holding the maps' device address (i64), and, in
  /// the consumers, whether any load copies with cp.async instead (an
  /// argument TMA cannot address).
  Value tmaTable, anyFallback;

  //===--------------------------------------------------------------------===//
  // Helpers
  //===--------------------------------------------------------------------===//

  Value index(int64_t v) {
    return arith::ConstantIndexOp::create(b, src.getLoc(), v);
  }

  /// program_id / num_programs along `dim`: the block's (along x, with
  /// several programs a block, block * programs + this thread's).
  Value programId(Location loc, int64_t dim);
  Value numPrograms(Location loc, int64_t dim);
  /// The warpgroup of this consumer thread among the block's.
  Value blockWarpgroup(Location loc);

  FailureOr<Distribution> dist(Operation *op, Type type) {
    std::string error;
    auto t = cast<RankedTensorType>(type);
    auto d = distributionOf(t, &error);
    if (failed(d)) {
      op->emitError() << "cannot lower tile " << type << ": " << error;
      return failure();
    }
    if (d->numWarps() != numWarps) {
      op->emitError() << "tile " << type << " is spread over " << d->numWarps()
                      << " warps but the kernel has ttile.num_warps = "
                      << numWarps;
      return failure();
    }
    return d;
  }

  /// The thread-dependent part of each dim's coordinate (only the warp's
  /// part without `withLanes`).
  SmallVector<Value> threadBases(Location loc, const Distribution &d,
                                 bool withLanes = true) {
    SmallVector<Value> bases;
    for (unsigned i = 0; i < d.rank(); ++i) {
      Value sum = index(0);
      auto addBits = [&](Value id, ArrayRef<Basis> bits) {
        for (auto [j, basis] : llvm::enumerate(bits)) {
          if (basis[i] == 0)
            continue;
          Value bit = arith::AndIOp::create(
              b, loc, arith::ShRUIOp::create(b, loc, id, index(j)), index(1));
          sum = arith::AddIOp::create(
              b, loc, sum, arith::MulIOp::create(b, loc, bit, index(basis[i])));
        }
      };
      if (withLanes)
        addBits(lane, d.laneBases);
      addBits(warp, d.warpBases);
      bases.push_back(sum);
    }
    return bases;
  }

  /// Coordinate along dim i of register r's element.
  Value coord(Location loc, const Distribution &d, ArrayRef<Value> bases,
              int64_t r, unsigned i, bool wrap = true) {
    Value c = arith::AddIOp::create(b, loc, bases[i], index(d.regCoord(r)[i]));
    if (wrap && d.wraps(i))
      c = arith::AndIOp::create(b, loc, c, index(d.shape[i] - 1));
    return c;
  }

  /// For each register of `to`, the register of `from` that holds the
  /// element `f` maps its element to, on the same thread; failure when
  /// elements would have to move between threads. `f` maps coordinates
  /// linearly (a permutation or projection of dims).
  FailureOr<SmallVector<int64_t>>
  registerMap(const Distribution &to, const Distribution &from,
              function_ref<Basis(const Basis &)> f) {
    auto norm = [&](Basis c) {
      for (unsigned d = 0; d < from.rank(); ++d)
        c[d] &= from.shape[d] - 1;
      return c;
    };
    for (auto [x, y] : llvm::zip_equal(to.laneBases, from.laneBases))
      if (norm(f(x)) != norm(y))
        return failure();
    if (to.warpBases.size() != from.warpBases.size())
      return failure();
    for (auto [x, y] : llvm::zip(to.warpBases, from.warpBases))
      if (norm(f(x)) != norm(y))
        return failure();
    std::map<Basis, int64_t> where;
    for (int64_t r = from.numRegs() - 1; r >= 0; --r)
      where[norm(from.regCoord(r))] = r;
    SmallVector<int64_t> map;
    for (int64_t r = 0, n = to.numRegs(); r < n; ++r) {
      auto it = where.find(norm(f(to.regCoord(r))));
      if (it == where.end())
        return failure();
      map.push_back(it->second);
    }
    return map;
  }

  Value allOf(Location loc, ArrayRef<Value> conds) {
    Value r;
    for (Value c : conds)
      r = r ? arith::AndIOp::create(b, loc, r, c).getResult() : c;
    return r ? r : arith::ConstantIntOp::create(b, loc, 1, 1).getResult();
  }

  Value lessThan(Location loc, Value a, Value bound) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a, bound);
  }

  /// A scalar constant of `type` from an attribute (or zero).
  Value scalarConstant(Location loc, Type type, Attribute value = {}) {
    if (auto typed = dyn_cast_or_null<TypedAttr>(value))
      return arith::ConstantOp::create(b, loc, typed);
    return arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
  }

  /// A buffer of the scratch area: the byte address of its first element.
  struct SharedArray {
    Value base;
    Type element;
  };

  /// Layout conversions and cross-warp reductions meet in one scratch area
  /// of dynamic shared memory, placed after the shared tiles at their peak.
  /// Every use of it starts behind a barrier, after which no thread still
  /// reads an earlier use: uses one after the other share it, and it is as
  /// large as the largest use. beginScratch() starts a use; sharedBuffer()
  /// hands out buffers of that use (live together), 128-byte aligned: they
  /// are read and written with 16-byte vector accesses.
  void beginScratch() { scratchUsed = 0; }
  SharedArray sharedBuffer(Type element, int64_t count);

  /// Element `i` of `array` as a shared-memory pointer.
  Value sharedElement(Location loc, const SharedArray &array, Value i);
  void storeShared(Location loc, Value value, const SharedArray &array, Value i,
                   unsigned align);
  Value loadShared(Location loc, Type type, const SharedArray &array, Value i,
                   unsigned align);

  /// Element type used in shared memory for `t`: i1 as i8, 8-bit floats
  /// as i8 (the LLVM dialect has no fp8), index as i64.
  Type storageType(Type t) {
    if (t.isInteger(1) || (isa<FloatType>(t) && t.getIntOrFloatBitWidth() == 8))
      return b.getI8Type();
    if (t.isIndex())
      return b.getI64Type();
    return t;
  }
  Value toStorage(Location loc, Value v) {
    Type t = v.getType(), s = storageType(t);
    if (s == t)
      return v;
    if (t.isInteger(1))
      return arith::ExtUIOp::create(b, loc, s, v);
    if (t.isIndex())
      return arith::IndexCastOp::create(b, loc, s, v);
    return arith::BitcastOp::create(b, loc, s, v);
  }
  Value fromStorage(Location loc, Value v, Type t) {
    if (v.getType() == t)
      return v;
    if (t.isInteger(1))
      return arith::TruncIOp::create(b, loc, t, v);
    if (t.isIndex())
      return arith::IndexCastOp::create(b, loc, t, v);
    return arith::BitcastOp::create(b, loc, t, v);
  }

  //===--------------------------------------------------------------------===//
  // Blocks and ops
  //===--------------------------------------------------------------------===//

  /// Whether `op` stores a tile in registers as a shared tile.
  static bool storesShared(Operation *op) {
    auto cvt = dyn_cast<ConvertLayoutOp>(op);
    return cvt && isa_and_nonnull<SharedAttr>(cvt.getType().getEncoding());
  }

  /// Lowers the ops of `block` (but its terminator) in order; groups
  /// consecutive stores of shared tiles and consecutive conversions through
  /// shared memory, which then share their barriers.
  LogicalResult lowerBlock(Block &block);
  LogicalResult lowerBlockOps(Block &block);

  /// The lowered values of `values`, tiles flattened into their registers.
  SmallVector<Value> flatten(ValueRange values) {
    SmallVector<Value> flat;
    for (Value v : values) {
      if (isTile(v.getType()))
        llvm::append_range(flat, tiles.lookup(v));
      else
        flat.push_back(map.lookup(v));
    }
    return flat;
  }

  /// Binds `values` to consecutive entries of `flat` (the inverse of
  /// flatten).
  LogicalResult bind(Operation *op, ValueRange values, ValueRange flat) {
    unsigned pos = 0;
    for (Value v : values) {
      if (isTile(v.getType())) {
        auto d = dist(op, v.getType());
        if (failed(d))
          return failure();
        int64_t n = d->numRegs();
        tiles[v] = Regs(flat.slice(pos, n));
        pos += n;
      } else {
        map.map(v, flat[pos++]);
      }
    }
    return success();
  }

  FailureOr<SmallVector<Type>> flatTypes(Operation *op, TypeRange types) {
    SmallVector<Type> flat;
    for (Type t : types) {
      if (isTile(t)) {
        auto d = dist(op, t);
        if (failed(d))
          return failure();
        flat.append(d->numRegs(), cast<RankedTensorType>(t).getElementType());
      } else {
        flat.push_back(t);
      }
    }
    return flat;
  }

  LogicalResult lowerOp(Operation *op) {
    if (isa<scf::ForOp, RangeOp>(op))
      return lowerLoop(op);
    if (auto ifOp = dyn_cast<scf::IfOp>(op))
      return lowerIf(ifOp);
    if (auto load = dyn_cast<LoadOp>(op))
      return lowerLoad(load);
    if (auto store = dyn_cast<StoreOp>(op))
      return lowerStore(store);
    if (auto pid = dyn_cast<ProgramIdOp>(op)) {
      map.map(pid.getResult(), programId(op->getLoc(), pid.getDim()));
      return success();
    }
    if (auto n = dyn_cast<NumProgramsOp>(op)) {
      map.map(n.getResult(), numPrograms(op->getLoc(), n.getDim()));
      return success();
    }
    if (auto reduce = dyn_cast<ReduceOp>(op))
      return lowerReduce(reduce);
    if (auto bcast = dyn_cast<BroadcastOp>(op))
      return lowerBroadcast(bcast);
    if (auto tr = dyn_cast<TransposeOp>(op))
      return lowerTranspose(tr);
    if (auto cvt = dyn_cast<ConvertLayoutOp>(op))
      return lowerConvert(cvt);
    if (auto iota = dyn_cast<IotaOp>(op))
      return lowerIota(iota);
    if (auto cast = dyn_cast<CastOp>(op))
      return lowerCast(cast);
    if (auto mask = dyn_cast<MaskCausalOp>(op))
      return lowerMaskCausal(mask);
    if (auto mask = dyn_cast<MaskKeysOp>(op))
      return lowerMaskKeys(mask);
    if (auto dot = dyn_cast<DotOp>(op))
      return lowerDot(dot);
    if (isa<SoftmaxOnlineOp, SoftmaxAccumulateOp>(op))
      return op->emitError("run -tessera-ttile-assign-layouts first: it "
                           "expands the online-softmax ops");

    bool tileResults =
        llvm::any_of(op->getResultTypes(), [](Type t) { return isTile(t); });
    bool tileOperands =
        llvm::any_of(op->getOperandTypes(), [](Type t) { return isTile(t); });
    if (auto cst = dyn_cast<arith::ConstantOp>(op); cst && tileResults)
      return lowerConstant(cst);
    if (auto splat = dyn_cast<tensor::SplatOp>(op)) {
      auto d = dist(op, splat.getType());
      if (failed(d))
        return failure();
      tiles[splat.getResult()] =
          Regs(d->numRegs(), map.lookup(splat.getInput()));
      return success();
    }
    if (tileResults || tileOperands) {
      if (OpTrait::hasElementwiseMappableTraits(op) &&
          isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
        return lowerElementwise(op);
      return op->emitError() << "the Tile IR GPU lowering has no rule for '"
                             << op->getName() << "' on tiles";
    }
    if (op->getNumRegions())
      return op->emitError() << "the Tile IR GPU lowering has no rule for '"
                             << op->getName() << "' (an op with regions)";
    if (isa<func::ReturnOp>(op))
      return success();
    b.clone(*op, map);
    return success();
  }

  LogicalResult lowerElementwise(Operation *op) {
    auto d = dist(op, op->getResult(0).getType());
    if (failed(d))
      return failure();
    SmallVector<Type> scalarTypes;
    for (Type t : op->getResultTypes())
      scalarTypes.push_back(cast<RankedTensorType>(t).getElementType());
    SmallVector<Regs> results(op->getNumResults());
    // f32 powers of two are the hardware's ex2 (2 ulp, subnormal results
    // flushed to zero): one instruction, where libdevice's exp2f scales
    // around it for subnormals.
    bool ex2 = isa<math::Exp2Op>(op) && scalarTypes.front().isF32();
    for (int64_t r = 0, n = d->numRegs(); r < n; ++r) {
      if (ex2) {
        auto call = LLVM::InlineAsmOp::create(
            b, op->getLoc(), TypeRange{b.getF32Type()},
            ValueRange{tiles.lookup(op->getOperand(0))[r]},
            "ex2.approx.ftz.f32 $0, $1;", "=f,f",
            /*has_side_effects=*/false, /*is_align_stack=*/false,
            LLVM::tailcallkind::TailCallKind::None,
            LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
            ArrayAttr());
        results[0].push_back(call.getResult(0));
        continue;
      }
      OperationState state(op->getLoc(), op->getName());
      for (Value v : op->getOperands())
        state.addOperands(isTile(v.getType()) ? tiles.lookup(v)[r]
                                              : map.lookup(v));
      state.addTypes(scalarTypes);
      state.addAttributes(op->getAttrs());
      Operation *scalar = b.create(state);
      for (auto [i, res] : llvm::enumerate(scalar->getResults()))
        results[i].push_back(res);
    }
    for (auto [res, regs] : llvm::zip(op->getResults(), results))
      tiles[res] = std::move(regs);
    return success();
  }

  LogicalResult lowerConstant(arith::ConstantOp op) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!dense || !dense.isSplat())
      return op.emitError("the Tile IR GPU lowering takes splat tile "
                          "constants only (use ttile.iota and arith for "
                          "others)");
    auto d = dist(op, op.getType());
    if (failed(d))
      return failure();
    Value v = arith::ConstantOp::create(
        b, op.getLoc(), cast<TypedAttr>(dense.getSplatValue<Attribute>()));
    tiles[op.getResult()] = Regs(d->numRegs(), v);
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Control flow
  //===--------------------------------------------------------------------===//

  /// An scf.for or ttile.range: the loop, its rings of shared tiles
  /// (cp.async, or the producer's), and ping-pong of the consumer
  /// warpgroups where the kernel asks for it (LowerControlFlow.cpp).
  LogicalResult lowerLoop(Operation *op);

  LogicalResult lowerIf(scf::IfOp op);

  /// Ping-pong (ttile.pingpong): the warpgroups of a range whose body
  /// issues wgmma products take turns, through one named barrier each, to
  /// issue them, so that the tensor cores run one warpgroup's products
  /// while the others compute on theirs. Whether the range being lowered
  /// does, and whether this warpgroup holds the turn now.
  bool pingPong = false;
  bool turnHeld = false;
  /// Whether `op` (a loop) alternates its warpgroups.
  bool wantsPingPong(Operation *op);
  /// The kernel's body (of its consumers, when specialized); with
  /// ping-pong loops, the last warpgroup hands the first its turn before
  /// it, and the first takes back the last turn handed to it after it
  /// (every named barrier ends balanced).
  LogicalResult lowerKernelBody();
  /// Whether `op` (a ring loop of a kernel of several programs a block)
  /// runs in its program's turn, taken before it and handed on once its
  /// products are issued.
  bool wantsLoopTurn(Operation *op);
  /// The turns' named barriers: the first, this thread's group (warpgroup,
  /// or program), how many groups take turns and the threads of a
  /// barrier; `step` groups after this thread's.
  int32_t firstTurnBarrier() const;
  Value turnGroup(Location loc);
  int64_t turnGroups() const;
  int64_t turnThreads() const;
  Value turnBarrier(Location loc, int64_t step);
  /// Runs `body` in turn group `group` only.
  void inTurnGroup(Location loc, int64_t group, function_ref<void()> body);
  /// Waits for this group's turn / hands it to the next group.
  void waitTurn(Location loc);
  void handTurn(Location loc);
  /// Waits for this warpgroup's turn (if not held).
  void takeTurn(Location loc);
  /// Hands the turn to the next warpgroup (if held).
  void passTurn(Location loc);
  /// Whether `op` may be lowered with the turn held: it issues a wgmma
  /// product or emits no code that waits (views, constants, scalars).
  bool keepsTurn(Operation *op);

  //===--------------------------------------------------------------------===//
  // Memory
  //===--------------------------------------------------------------------===//

  /// Elements per vector access: a thread's elements along the memref's
  /// last dim, when that dim has unit stride and its registers are adjacent,
  /// up to 16 bytes.
  int64_t vectorWidth(const Distribution &d, MemRefType type);

  struct Access {
    SmallVector<Value> sizes;
    Value alignedBase, offset; // for vector accesses
    SmallVector<Value> strides;
  };

  Access describeMemref(Location loc, Value mem, MemRefType type, bool vec);

  /// Whether every vector access of a tile at `start` is aligned: a
  /// thread's runs of `v` elements start at coordinates that are multiples
  /// of `v` along the last dim (runAlong), so it suffices that the first
  /// element's address and the other dims' strides are multiples of `v`
  /// elements. Checked once per access op.
  Value allAligned(Location loc, const Access &a, ValueRange start, int64_t v,
                   int64_t elementBytes);

  /// Memory coordinates of register `r`'s element: start + coordinate.
  SmallVector<Value> memCoords(Location loc, const Distribution &d,
                               ArrayRef<Value> bases, ValueRange start,
                               int64_t r);

  /// Conditions for the element at `coords` + `extra` along the last dim.
  Value inBounds(Location loc, const Access &a, ArrayRef<Value> coords,
                 int64_t extra);

  LogicalResult lowerLoad(LoadOp op);

  LogicalResult lowerStore(StoreOp op);
  /// Registers `vals` of a tile whose threads hold pairs of 2-byte
  /// elements along the last dim, the quad's lanes at offsets 2 and 4 and
  /// two register bits at 8 and 16 (the tensor cores' accumulators),
  /// exchanged within each quad (two rounds of shuffles) so that each
  /// thread holds runs of 8: the distribution of the exchanged registers,
  /// or failure (vals unchanged) where the tile is not of that form.
  FailureOr<Distribution> widenRuns(Location loc, const Distribution &d,
                                    Regs &vals, Type elt);

  //===--------------------------------------------------------------------===//
  // Data movement between threads
  //===--------------------------------------------------------------------===//

  /// How many registers from register 0 on hold consecutive elements along
  /// `dim`, with every run starting at a multiple of its length.
  static int64_t runAlong(const Distribution &d, unsigned dim);

  /// The mma.sync A (opIdx 0) or B (opIdx 1) fragments of `type` read from
  /// the shared buffer `buf` (contiguous along dim `fast`, 16-byte chunks
  /// at `address`) with ldmatrix: each lane gives the address of one
  /// 8-element buffer row of an 8x8 matrix.
  Regs ldmatrix(Location loc, const SharedArray &buf, const Distribution &d,
                RankedTensorType type, unsigned opIdx, MmaAttr mma,
                unsigned fast, function_ref<Value(ArrayRef<Value>)> address,
                Type elt);

  /// A shared-memory buffer for moving one tile between layouts: its
  /// contiguous dim is the one that needs the fewest accesses on both sides
  /// (for a plain conversion; a thread moves up to 16 bytes per access
  /// along it) and its 16-byte chunks are XOR-swizzled by row against bank
  /// conflicts.
  struct SharedTransfer {
    SharedArray buf;
    SmallVector<int64_t> shape;
    unsigned fast;
    int64_t rowLength, chunk, swizzle, bytes;
    Type storage;
  };

  SharedTransfer planShared(const Distribution &from, const Distribution &to,
                            Type elt, bool plain);

  /// The element index of `coords` in the buffer.
  Value sharedAddress(Location loc, const SharedTransfer &t,
                      ArrayRef<Value> coords);

  SmallVector<Value> coordsOf(Location loc, const Distribution &d,
                              ArrayRef<Value> bases, int64_t r);

  void writeShared(Location loc, const SharedTransfer &t, const Regs &vals,
                   const Distribution &from);

  /// The registers of a tile with distribution `to`, element `c` of which
  /// is element `srcCoords(c)` of the buffer's tile.
  Regs readShared(Location loc, const SharedTransfer &t, const Distribution &to,
                  Type elt,
                  function_ref<SmallVector<Value>(ArrayRef<Value>)> srcCoords,
                  RankedTensorType plainTo);

  /// The registers of a tile with distribution `to`, element `c` of which
  /// is element `srcCoords(c)` of the tile `vals` with distribution `from`:
  /// every thread writes its elements to shared memory, then reads
  /// (`plainTo` is the result type of a plain layout conversion).
  Regs
  throughShared(Location loc, const Regs &vals, const Distribution &from,
                const Distribution &to, Type elt,
                function_ref<SmallVector<Value>(ArrayRef<Value>)> srcCoords,
                RankedTensorType plainTo = {});

  /// Lowers `ops`, consecutive layout conversions that move data between
  /// threads and do not feed each other, with two barriers in all: every
  /// tile is written, then every tile read.
  LogicalResult lowerConvertGroup(MutableArrayRef<ConvertLayoutOp> ops);

  /// Whether a conversion moves data between threads.
  bool movesData(ConvertLayoutOp op);

  LogicalResult lowerConvert(ConvertLayoutOp op);

  LogicalResult lowerTranspose(TransposeOp op);

  LogicalResult lowerBroadcast(BroadcastOp op);

  //===--------------------------------------------------------------------===//
  // Reductions
  //===--------------------------------------------------------------------===//

  Value combine(Location loc, ReduceKind kind, Value x, Value y);

  Value identity(Location loc, ReduceKind kind, Type t);

  /// `v` from the lane `lane ^ offset` (32- and 64-bit values).
  Value shuffleXor(Location loc, Value v, int64_t offset);

  LogicalResult lowerReduce(ReduceOp op);

  //===--------------------------------------------------------------------===//
  // Indices, casts, masks
  //===--------------------------------------------------------------------===//

  LogicalResult lowerIota(IotaOp op);

  LogicalResult lowerCast(CastOp op);
  LogicalResult lowerStochasticCast(CastOp op);

  /// Scores set to -inf where `col - rowCoef * row > limit` (coordinates
  /// in the tile; `limit` a program scalar), computed in a branch taken
  /// only when the tile has a masked element: `col0 + span > bound`.
  LogicalResult lowerMask(Operation *op, Value col0, int64_t span, Value bound,
                          int64_t rowCoef, Value limit);
  LogicalResult lowerMaskCausal(MaskCausalOp op);
  LogicalResult lowerMaskKeys(MaskKeysOp op);

  //===--------------------------------------------------------------------===//
  // Dot on blocked layouts (FMA)
  //===--------------------------------------------------------------------===//

  LogicalResult lowerDot(DotOp op);

  /// mma.sync m16n8k16 (bf16 or f16 into f32, nvvm.mma.sync: the nvgpu
  /// dialect's op takes f16 only): each warp multiplies its
  /// 16 x 8 fragments, K in steps of 16. The register numbering is the
  /// one Distribution.cpp gives the fragments.
  LogicalResult lowerMmaSync(DotOp op, MmaAttr mma);

  //===--------------------------------------------------------------------===//
  // Shared tiles and wgmma (LowerWgmma.cpp)
  //===--------------------------------------------------------------------===//

  /// The 1024-byte aligned start of dynamic shared memory.
  Value dynamicSharedBase();

  /// Reserves `bytes` (rounded up to 1024) of dynamic shared memory; returns
  /// their offset from dynamicSharedBase().
  int64_t allocateDynamicShared(int64_t bytes);
  /// Reserves `bytes` for a ring's buffers or mbarriers: in the area the
  /// programs of a block share (offsets from ringsBase()), or with one
  /// program a block, as allocateDynamicShared.
  int64_t allocateRingShared(int64_t bytes);
  /// Where ring offsets count from.
  Value ringsBase();

  /// The byte offset of element (row, col) in a shared tile of `rows` rows
  /// in the layout wgmma, TMA and the cp.async copies share.
  Value sharedTileOffset(Location loc, Value row, Value col, int64_t rows,
                         int64_t rowBytes, int64_t eltBytes);

  /// A tile in registers stored as a shared tile (a computed wgmma
  /// operand): a buffer of the stack, written by every thread between
  /// barriers.
  LogicalResult lowerStoreShared(ConvertLayoutOp op);
  /// Writes the registers `vals` of a 2-d tile of distribution `d` into
  /// the shared tile at `addr` (`rows` rows, swizzle rows of `rowBytes`,
  /// the layout wgmma and TMA share), up to 16 bytes a store.
  void writeSharedTile(Location loc, const Distribution &d,
                       ArrayRef<Value> vals, Value addr, int64_t rows,
                       int64_t rowBytes, Type elt);
  /// Whether tiles of distribution `d` and element type `elt` are the
  /// tensor-core fragments stmatrix stores (16-bit, four 8x8 matrices or
  /// more a thread); writeSharedTile then uses it (sm_90).
  static bool fitsStmatrix(const Distribution &d, Type elt);

  /// Stores `ops` (consecutive) between one pair of barriers (of each
  /// warpgroup alone when every tile is storedForOwnGroup).
  LogicalResult lowerStoreSharedGroup(ArrayRef<ConvertLayoutOp> ops);
  /// Whether, of the several warpgroups of the kernel, each reads exactly
  /// the elements of shared tile `op` that it stores: every user is a
  /// wgmma dot (of the tile or its transpose) whose warpgroups each take
  /// the A rows, or B columns, that their threads hold.
  bool storedForOwnGroup(ConvertLayoutOp op);
  /// The barrier of the calling thread's warpgroup alone.
  void groupBarrier(Location loc);

  /// Before `op`: waits for the wgmma groups in flight up to the youngest
  /// whose product `op` reads (all of them for an op with regions);
  /// younger groups keep running (wgmma.wait_group N).
  void waitForUses(Operation *op);
  /// Waits for the groups of pendingWgmma[0..last] (issue order).
  void finishWgmma(Location loc, int64_t last);

  /// Copies the tile `op` loads, starting at `start`, into the shared
  /// buffer at `dstAddr` (its swizzled layout) with cp.async; `valid`
  /// (optional) false zero-fills it instead.
  /// The copies are spread over `threads` threads (all of the kernel's by
  /// default), `threadId` numbering them.
  /// `source` replaces the load's (lowered) memref.
  void issueSharedCopy(LoadOp op, Value dstAddr, ArrayRef<Value> start,
                       Value valid, Value threadId = {}, int64_t threads = 0,
                       Value source = {});

  /// Orders earlier shared-memory writes before wgmma's reads.
  void fenceSharedForTensorCores(Location loc);

  LogicalResult lowerSharedLoad(LoadOp op);

  /// The loads of `loop`'s body into shared tiles that can be issued
  /// stages - 1 iterations ahead (indices the induction variable or
  /// defined outside, from memrefs the loop does not write).
  SmallVector<LoadOp> ringLoads(RangeOp loop);

  /// Whether every wgmma dot of `loop`'s body only accumulates (its
  /// accumulator is a loop-carried tile used by it alone, its result only
  /// yielded in that place) from operands in the ring: then each
  /// iteration's group may still run while the next iteration starts (the
  /// dots are marked in overlappedDots). Needs stages >= 3.
  bool canOverlapDots(RangeOp loop, ArrayRef<LoadOp> ring,
                      int64_t minStages = 3);

  /// Before the loop: buffers for `loads` (stages each) and the copies of
  /// the first `ahead` iterations.
  void startRing(RangeOp loop, ArrayRef<LoadOp> loads, int64_t ahead,
                 SmallVectorImpl<int64_t> &offsets);

  /// At the top of the iteration at `iv`: wait for its copies, start those
  /// of iteration + `ahead`, and point the loads at this iteration's
  /// buffers.
  void advanceRing(RangeOp loop, ArrayRef<LoadOp> loads, int64_t ahead,
                   ArrayRef<int64_t> offsets, Value iv);

  Value ringAddress(LoadOp load, int64_t offset, Value slot);

  /// `load`'s indices (lowered) for the iteration of `loop` whose induction
  /// variable is `at`.
  SmallVector<Value> startAt(RangeOp loop, LoadOp load, Value at);

  //===--------------------------------------------------------------------===//
  // Warp specialization: TMA copies from a producer warpgroup
  // (LowerProducer.cpp)
  //===--------------------------------------------------------------------===//

  /// Whether the producer can compute `v`: from the kernel's arguments and
  /// program ids through pure scalar ops of the entry block or of the
  /// bodies of the loops in `scope` (and their induction variables).
  bool producerComputable(Value v, ArrayRef<Operation *> scope);

  /// `v` computed at the insertion point (or earlier, from `pmap`).
  Value producerValue(Value v, IRMapping &pmap);

  /// Computes, at the insertion point, what `needed` depends on from
  /// outside `loop` (for the producer's copy of the loop).
  void hoistInto(Operation *loop, ArrayRef<Value> needed, IRMapping &pmap);

  /// The producer's copies of the loops in `block` that hold rings.
  void emitProducerLoops(Block &block, IRMapping &pmap, ArrayRef<Value> usable,
                         Value laneZero, Value anyCopy);

  /// Appends the values the producer's copy of `ring`'s loop reads: its
  /// bounds and its loads' indices, memrefs and leading-dim indices.
  void ringNeeds(ProducerRing &ring, SmallVectorImpl<Value> &needed);

  /// The producer's loops of one ring: one run of the loop, or with
  /// several programs a block, one run of each program in turn.
  void emitProducerRing(ProducerRing &ring, IRMapping &pmap,
                        ArrayRef<Value> usable, Value laneZero, Value anyCopy);
  /// One program's run of `ring` from ring iteration `start`, its values
  /// from `pmap`.
  void emitProducerRun(ProducerRing &ring, IRMapping &pmap, Value start,
                       ArrayRef<Value> usable, Value laneZero, Value anyCopy);
  /// Whether `v` (a ring loop's bound) is the same in every program of a
  /// block: computed from constants, kernel arguments and num_programs
  /// alone.
  bool uniformOverPrograms(Value v);

  /// Decides whether the kernel is specialized and, if so, allocates the
  /// rings, their barriers and the tensor maps.
  bool planSpecialization();
  /// Whether planSpecialization refused the kernel with an error of its
  /// own (not merely chose not to specialize it).
  bool planError = false;

  /// The kernel argument a ring load reads through TMA, with the indices
  /// of its leading dims: the load's memref itself (2-d), or a subview of
  /// it that keeps its last two dims whole and selects one index of each
  /// other (q[bh]); failure otherwise.
  FailureOr<std::pair<BlockArgument, SmallVector<OpFoldResult>>>
  tmaSource(LoadOp load, ArrayRef<Operation *> scope);
  /// The index in tmaMaps of the map reading `tile`s (one swizzle row of
  /// columns, at most 256 rows) from kernel argument `arg` with
  /// `leadingDims` selected leading dims, added unless an equal one is.
  unsigned tmaMapFor(BlockArgument arg, size_t leadingDims,
                     RankedTensorType tile, int64_t swizzle);
  /// The same for a memref `view` whose leading indices the producer need
  /// not compute (`scope` empty: any index).
  FailureOr<std::pair<BlockArgument, SmallVector<OpFoldResult>>>
  tmaView(Value view, ArrayRef<Operation *> scope, bool anyIndex);

  /// A store written through a shared buffer and TMA (a tile of 2-byte
  /// elements stored in a loop of a specialized kernel: the consumers
  /// write it to shared memory, one thread hands it to TMA and they go on
  /// while it is copied out). Its buffer's offset, the map of its memref
  /// and the indices of the memref's leading dims.
  struct StagedStore {
    int64_t offset = 0;
    unsigned map = 0;
    SmallVector<OpFoldResult> leading;
  };
  DenseMap<Operation *, StagedStore> stagedStores;
  /// Stores `op` through its staging buffer (direct stores where its map
  /// could not be made).
  LogicalResult lowerStagedStore(StoreOp op, const StagedStore &staged);
  /// Stores `op` from registers to global memory.
  LogicalResult lowerStoreDirect(StoreOp op);

  LogicalResult runSpecialized();

  /// The producer warp: for each ring, each iteration waits for its slot
  /// to be free, then copies the iteration's tiles into it.
  void emitProducer(Location loc);

  Value barrierAddress(const ProducerRing &ring, bool empty, Value slot);

  /// In a consumer iteration: wait for the slot's tiles.
  void consumeRing(ProducerRing &ring, Value iv);

  /// At the end of a consumer iteration: give back the slot the iteration
  /// (or, with wgmma groups in flight, the previous one) read.
  void releaseRing(ProducerRing &ring, Value iv);
  /// The consumers give back `slot` of `ring`: each thread on its own
  /// block's `empty` mbarrier, or, in a multicast ring, each warp on the
  /// slot's `empty` mbarrier in every program of the cluster.
  void releaseSlot(ProducerRing &ring, Value slot);
  /// Every thread of the cluster waits for all of them.
  void clusterBarrier(Location loc);

  /// Before a run of a ring's loop in the consumers: its first iteration's
  /// number.
  void startRun(ProducerRing &ring);

  /// After it: the counter moves past the run; with `lastSlot` (where the
  /// run's last wgmma groups were waited for), that iteration's slot is
  /// given back instead.
  void finishRun(ProducerRing &ring, bool lastSlot);

  /// wgmma.wait_group `pending` with the accumulators `acc` passed
  /// through (replaced by the values after the wait).
  void waitForWgmma(Location loc, int64_t pending, Regs &acc);

  /// wgmma m64nNk16 (bf16 or f16 into f32) on shared operands: each
  /// warpgroup multiplies its instruction tiles, K in steps of 16, then
  /// waits for them.
  LogicalResult lowerWgmma(DotOp op, MmaAttr mma);
};

} // namespace mlir::tessera::ttile::detail

#endif // TESSERA_CONVERSION_TTILETOGPU_KERNELLOWERING_H
