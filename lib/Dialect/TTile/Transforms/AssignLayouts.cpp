//===- AssignLayouts.cpp - Give every tile of a kernel a layout -----------===//

#include "tessera/Dialect/TTile/Transforms/Distribution.h"
#include "ExpandSoftmax.h"

#include "tessera/Dialect/TTile/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::tessera::ttile {
#define GEN_PASS_DEF_TTILEASSIGNLAYOUTS
#include "tessera/Dialect/TTile/Transforms/Passes.h.inc"
} // namespace mlir::tessera::ttile

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;

namespace {

RankedTensorType tileType(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

RankedTensorType withLayout(RankedTensorType t, Attribute layout) {
  return RankedTensorType::get(t.getShape(), t.getElementType(), layout);
}

//===----------------------------------------------------------------------===//
// Layout assignment
//===----------------------------------------------------------------------===//

class Assigner {
public:
  Assigner(func::FuncOp kernel, bool wgmma)
      : ctx(kernel.getContext()), numWarps(kernelNumWarps(kernel)),
        wgmma(wgmma) {}

  LogicalResult run(Block &block) {
    for (Operation &op : llvm::make_early_inc_range(block))
      if (failed(visit(&op)))
        return failure();
    return success();
  }

private:
  MLIRContext *ctx;
  int64_t numWarps;
  bool wgmma;

  Attribute defaultLayout(RankedTensorType t) {
    return defaultBlockedLayout(ctx, t.getShape(), t.getElementType(),
                                numWarps);
  }

  static void setType(Value v, Attribute layout) {
    v.setType(withLayout(cast<RankedTensorType>(v.getType()), layout));
  }

  /// Whether `v` is cheaper to compute again in another layout than to
  /// move between threads: splat constants, splats, iota, and elementwise
  /// ops of those (a column mask, say).
  static bool isCheap(Value v, int depth = 0) {
    Operation *def = v.getDefiningOp();
    if (!def || depth > 4)
      return false;
    if (auto cst = dyn_cast<arith::ConstantOp>(def)) {
      auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
      return dense && dense.isSplat();
    }
    if (isa<tensor::SplatOp, IotaOp>(def))
      return true;
    if (!OpTrait::hasElementwiseMappableTraits(def) ||
        !isa<arith::ArithDialect, math::MathDialect>(def->getDialect()) ||
        def->getNumResults() != 1)
      return false;
    return llvm::all_of(def->getOperands(), [&](Value x) {
      return !tileType(x) || isCheap(x, depth + 1);
    });
  }

  /// Whether `v` is a tile loaded in `block`, through casts and
  /// elementwise ops (any of whose tile operands may be the loaded one).
  static bool loadedIn(Value v, Block *block, int depth = 0) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != block || depth > 4)
      return false;
    if (isa<LoadOp>(def))
      return true;
    if (!isa<CastOp>(def) &&
        !(OpTrait::hasElementwiseMappableTraits(def) &&
          isa<arith::ArithDialect, math::MathDialect>(def->getDialect())))
      return false;
    return llvm::any_of(def->getOperands(), [&](Value x) {
      return tileType(x) && loadedIn(x, block, depth + 1);
    });
  }

  /// `v` computed again in layout `layout` before `user` (v is cheap).
  Value rematerialize(Value v, Attribute layout, Operation *user) {
    auto to = withLayout(cast<RankedTensorType>(v.getType()), layout);
    Operation *def = v.getDefiningOp();
    OpBuilder b(user);
    if (auto cst = dyn_cast<arith::ConstantOp>(def))
      return arith::ConstantOp::create(
          b, cst.getLoc(), to,
          DenseElementsAttr::get(to, cast<DenseElementsAttr>(cst.getValue())
                                         .getSplatValue<Attribute>()));
    if (auto splat = dyn_cast<tensor::SplatOp>(def))
      return tensor::SplatOp::create(b, splat.getLoc(), to, splat.getInput());
    if (auto iota = dyn_cast<IotaOp>(def))
      return IotaOp::create(b, iota.getLoc(), to, iota.getDim());
    Operation *clone = b.clone(*def);
    for (OpOperand &operand : clone->getOpOperands())
      if (tileType(operand.get()))
        operand.set(rematerialize(operand.get(), layout, clone));
    clone->getResult(0).setType(to);
    return clone->getResult(0);
  }

  /// `v` in layout `layout`, for use by `user`: cheap values are computed
  /// again in that layout, others converted.
  Value convert(Value v, Attribute layout, Operation *user) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getEncoding() == layout)
      return v;
    // (A cheap value is re-created in a register layout; it is stored into
    // a shared one.)
    if (isCheap(v) && !isa<SharedAttr>(layout))
      return rematerialize(v, layout, user);
    // Right after the value when it comes from outside the user's block (a
    // loop invariant is converted once, not per iteration).
    OpBuilder b(user);
    if (v.getParentBlock() != user->getBlock()) {
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(v.getParentBlock());
    }
    return ConvertLayoutOp::create(b, user->getLoc(), withLayout(t, layout), v);
  }

  void convertOperand(OpOperand &operand, Attribute layout) {
    operand.set(convert(operand.get(), layout, operand.getOwner()));
  }

  /// The layout a broadcast's operand needs so that no data moves.
  FailureOr<Attribute> broadcastOperandLayout(BroadcastOp op,
                                              Attribute result) {
    auto src = cast<RankedTensorType>(op.getSource().getType());
    auto dst = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> dims = op.getDims();
    if (src.getRank() == dst.getRank())
      return result;
    for (unsigned i = 1; i < dims.size(); ++i)
      if (dims[i] <= dims[i - 1])
        return op.emitError() << "the GPU lowering needs a broadcast's dims in "
                                 "increasing order (transpose first), got "
                              << op.getDimsAttr();
    Attribute layout = result;
    for (int64_t d = dst.getRank() - 1; d >= 0; --d)
      if (!llvm::is_contained(dims, d))
        layout = SliceAttr::get(ctx, d, layout);
    return layout;
  }

public:
  /// Moves a conversion's target layout up into the op that produced its
  /// operand when that op has no other user (a load, broadcast, cast or
  /// elementwise op then computes the tile in the layout wanted, and the
  /// conversion goes or moves up to that op's operands). Returns whether
  /// anything changed.
  bool hoist(ConvertLayoutOp cvt) {
    Value src = cvt.getSource();
    Operation *def = src.getDefiningOp();
    if (!def || def->getNumResults() != 1 || src.getType() == cvt.getType() ||
        cvt.use_empty())
      return false;
    Attribute layout = cvt.getType().getEncoding();
    // A computed tile stored for wgmma stays computed in registers.
    if (isa<SharedAttr>(layout))
      return false;
    // (Conversions hoistShared left without users do not count.)
    if (llvm::any_of(src.getUsers(), [&](Operation *user) {
          auto c = dyn_cast<ConvertLayoutOp>(user);
          return user != cvt && !(c && c.use_empty());
        }))
      return hoistShared(cvt);
    if (auto load = dyn_cast<LoadOp>(def)) {
      // Tensor-core fragments come through shared memory: the global
      // loads stay coalesced 16-byte accesses.
      if (auto operand = dyn_cast<DotOperandAttr>(layout);
          operand && isa<MmaAttr>(operand.getParent()))
        return false;
      setType(load.getResult(), layout);
      if (load.getMask())
        convertOperand(load.getMaskMutable()[0], layout);
    } else if (auto bcast = dyn_cast<BroadcastOp>(def)) {
      if (isa<DotOperandAttr>(layout))
        return false;
      auto need = broadcastOperandLayout(bcast, layout);
      if (failed(need))
        return false;
      setType(bcast.getResult(), layout);
      convertOperand(bcast.getSourceMutable(), *need);
    } else if (isa<CastOp>(def) ||
               (OpTrait::hasElementwiseMappableTraits(def) &&
                isa<arith::ArithDialect, math::MathDialect>(
                    def->getDialect()))) {
      setType(def->getResult(0), layout);
      for (OpOperand &operand : def->getOpOperands())
        if (tileType(operand.get()))
          convertOperand(operand, layout);
    } else {
      return false;
    }
    cvt.getResult().replaceAllUsesWith(src);
    cvt.erase();
    return true;
  }

  /// A load (without a mask) that every live user converts to `cvt`'s
  /// layout reads in that layout instead: a row statistic broadcast twice
  /// in a loop, say, would otherwise move through shared memory twice an
  /// iteration. The conversions are left without users (the caller holds
  /// them; the dead-code sweep removes them).
  bool hoistShared(ConvertLayoutOp cvt) {
    Value src = cvt.getSource();
    auto load = src.getDefiningOp<LoadOp>();
    if (!load || load.getMask() ||
        isa<DotOperandAttr>(cvt.getType().getEncoding()))
      return false;
    for (Operation *user : src.getUsers()) {
      auto c = dyn_cast<ConvertLayoutOp>(user);
      if (!c || (!c.use_empty() && c.getType() != cvt.getType()))
        return false;
    }
    setType(load.getResult(), cvt.getType().getEncoding());
    for (Operation *user : llvm::to_vector(src.getUsers()))
      cast<ConvertLayoutOp>(user).getResult().replaceAllUsesWith(src);
    return true;
  }

private:
  /// Loop-carried tiles whose initial value is cheap: their layout is the
  /// one the loop body computes them in, decided after the body.
  llvm::SmallPtrSet<void *, 8> deferred;

  bool isDeferred(Value v) {
    return !cast<RankedTensorType>(v.getType()).getEncoding() &&
           deferred.contains(v.getAsOpaquePointer());
  }

  /// Gives deferred loop-carried operands of `op` (but `skip`) a default
  /// layout.
  void settleOperands(Operation *op, ArrayRef<Value> skip = {}) {
    for (Value v : op->getOperands())
      if (!llvm::is_contained(skip, v) && tileType(v) && isDeferred(v))
        setType(v, defaultLayout(tileType(v)));
  }

  /// Whether `v` (through elementwise ops and casts) is reduced along its
  /// rows or combined with a row statistic broadcast back over the rows.
  static bool rowWise(Value v, int depth = 0) {
    if (depth > 4)
      return false;
    for (Operation *user : v.getUsers()) {
      if (auto reduce = dyn_cast<ReduceOp>(user);
          reduce && reduce.getDim() == 1)
        return true;
      if (isa<CastOp, ConvertLayoutOp>(user) ||
          (OpTrait::hasElementwiseMappableTraits(user) &&
           isa<arith::ArithDialect, math::MathDialect>(user->getDialect()))) {
        for (Value x : user->getOperands())
          if (auto b = x.getDefiningOp<BroadcastOp>();
              b && b.getDims() == ArrayRef<int64_t>{0} &&
              cast<RankedTensorType>(b.getType()).getRank() == 2)
            return true;
        for (Value r : user->getResults())
          if (rowWise(r, depth + 1))
            return true;
      }
    }
    return false;
  }

  /// The mma.sync accumulator layout for a dot of 16-bit floats (or of
  /// f32 read as tf32) into f32 whose tile is a whole number of 16 x 8
  /// fragments per warp, K a multiple of 16; null otherwise.
  Attribute mmaLayoutFor(DotOp dot) {
    auto a = tileType(dot.getA()), acc = tileType(dot.getAcc());
    Type in = a.getElementType();
    bool tf32 = dot.getTf32() && in.isF32();
    if (!(in.isBF16() || in.isF16() || tf32) || !acc.getElementType().isF32() ||
        tileType(dot.getB()).getElementType() != in)
      return {};
    int64_t m = acc.getShape()[0], n = acc.getShape()[1], k = a.getShape()[1];
    if (k % 16)
      return {};
    // Warps along M only when the product's rows meet row statistics (a
    // softmax): each warp then owns whole rows and the statistics need no
    // shared memory, and products meeting each other agree on a layout.
    if (m % (16 * numWarps) == 0 && n % 8 == 0 && rowWise(dot.getResult()))
      return MmaAttr::get(ctx, 2, {numWarps, 1}, {16, 8, 16});
    // Otherwise the warp grid whose warps load the least (A rows plus B
    // columns per warp), more warps along M on ties.
    int64_t best = 0, bestCost = 0;
    for (int64_t wm = numWarps; wm >= 1; wm /= 2) {
      int64_t wn = numWarps / wm;
      if (m % (16 * wm) || n % (8 * wn))
        continue;
      int64_t cost = m / wm + n / wn;
      if (!best || cost < bestCost) {
        best = wm;
        bestCost = cost;
      }
    }
    if (!best)
      return {};
    return MmaAttr::get(ctx, 2, {best, numWarps / best}, {16, 8, 16});
  }

  /// The load that gives `v` when it can fill a shared tile for wgmma: an
  /// unmasked load from a global memref with unit stride along its last
  /// dim, in `block` or a block around it (a loop invariant, copied once),
  /// used only by the dot.
  static LoadOp sharedOperandLoad(Value v, Block *block) {
    auto load = v.getDefiningOp<LoadOp>();
    if (!load || !v.hasOneUse() || load.getMask())
      return {};
    if (load->getBlock() != block &&
        !load->getBlock()->findAncestorOpInBlock(*block->getParentOp()))
      return {};
    auto mem = dyn_cast<MemRefType>(load.getSource().getType());
    if (!mem || mem.getRank() != 2 ||
        isa_and_nonnull<gpu::AddressSpaceAttr>(mem.getMemorySpace()))
      return {};
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(mem.getStridesAndOffset(strides, offset)) || strides.back() != 1)
      return {};
    return load;
  }

  /// B given transposed: `v` is the [1, 0] transpose, used only by the dot,
  /// of such a load of B^T (rows N, K contiguous: wgmma's K-major B). For
  /// A, the transpose of a load of A^T (rows K, M contiguous: wgmma's
  /// M-major A, 16-bit types).
  static TransposeOp transposedOperand(Value v, Block *block) {
    auto tr = v.getDefiningOp<TransposeOp>();
    if (!tr || tr->getBlock() != block || !v.hasOneUse() ||
        tr.getPermutation() != ArrayRef<int64_t>{1, 0} ||
        !sharedOperandLoad(tr.getSource(), block))
      return {};
    return tr;
  }

  /// A computed 16-bit A given transposed (`v` the one-use [1, 0]
  /// transpose of a tile in registers, as attention's P^T): the tile is
  /// stored once into shared memory, where wgmma reads it M-major.
  static TransposeOp storedTransposedA(Value v, Block *block) {
    auto tr = v.getDefiningOp<TransposeOp>();
    if (!tr || tr->getBlock() != block || !v.hasOneUse() ||
        tr.getPermutation() != ArrayRef<int64_t>{1, 0} ||
        sharedOperandLoad(tr.getSource(), block))
      return {};
    Type t = cast<RankedTensorType>(v.getType()).getElementType();
    return t.isBF16() || t.isF16() ? tr : TransposeOp();
  }

  static bool isFp8(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); }

  /// For a dot wgmma can run (bf16/f16, or fp8 with B given transposed,
  /// into f32; both operands loaded for it; whole 64-row instruction tiles
  /// per warpgroup): the accumulator layout; null otherwise. Warpgroups go
  /// along M as far as M allows, then along N.
  Attribute wgmmaLayoutFor(DotOp dot) {
    if (!wgmma || numWarps % 4)
      return {};
    auto a = tileType(dot.getA()), b = tileType(dot.getB()),
         acc = tileType(dot.getAcc());
    Type in = a.getElementType(), inB = b.getElementType();
    bool fp8 = isFp8(in) && isFp8(inB);
    // f32 products allowed to read their operands as tf32; like fp8, wgmma
    // takes them K-contiguous only (B given transposed), A from shared.
    bool tf32 = dot.getTf32() && in.isF32() && inB.isF32();
    bool kMajorOnly = fp8 || tf32;
    if (!acc.getElementType().isF32() ||
        !(kMajorOnly || ((in.isBF16() || in.isF16()) && inB == in)))
      return {};
    Block *block = dot->getBlock();
    bool bKMajor = bool(transposedOperand(dot.getB(), block));
    // A loaded transposed (a weight gradient's X^T): read M-major from the
    // loaded tile, 16-bit types only.
    bool aMMajor = !kMajorOnly && transposedOperand(dot.getA(), block);
    // A from registers (computed, as attention's P) for 16-bit types, with
    // the warpgroups along M; or computed and stored into shared memory
    // (given transposed, or with warpgroups along N).
    bool aStored = bool(storedTransposedA(dot.getA(), block));
    bool aInRegisters =
        !sharedOperandLoad(dot.getA(), block) && !aStored && !aMMajor;
    if ((aInRegisters && kMajorOnly) ||
        !(bKMajor || sharedOperandLoad(dot.getB(), block)) ||
        (kMajorOnly && !bKMajor))
      return {};
    int64_t m = acc.getShape()[0], n = acc.getShape()[1], k = a.getShape()[1];
    for (int64_t d : {m, n, k})
      if (!llvm::isPowerOf2_64(d))
        return {};
    // Every K step of the instruction is 32 bytes of a row.
    int64_t eltBytes = fp8 ? 1 : tf32 ? 4 : 2, instrK = 32 / eltBytes;
    if (k < instrK || n < 16 || m % 64)
      return {};
    int64_t groups = numWarps / 4, gm = groups;
    while (gm > 1 && m % (64 * gm))
      gm /= 2;
    int64_t gn = groups / gm;
    if (n % gn)
      return {};
    if (aInRegisters && (gn != 1 || (gm > 1 && m != 64 * gm))) {
      if (kMajorOnly)
        return {};
      aInRegisters = false; // stored K-major
    }
    int64_t perGroup = n / gn, instrN = std::min<int64_t>(perGroup, 256);
    // An N-major B: a warpgroup's columns start on a whole swizzle row.
    int64_t atom = std::min<int64_t>(128, eltBytes * n) / eltBytes;
    if (instrN % 8 || (!bKMajor && instrN % atom))
      return {};
    return MmaAttr::get(ctx, 3, {4 * gm, gn}, {64, instrN, instrK});
  }

  /// Rows of min(128, row bytes) for a tile as loaded (order [1, 0]).
  Attribute sharedLayoutFor(RankedTensorType t) {
    int64_t rowBytes = t.getShape()[1] * t.getElementTypeBitWidth() / 8;
    return SharedAttr::get(ctx, unsigned(std::min<int64_t>(128, rowBytes)),
                           {1, 0});
  }

  /// Gives operand `v` of a wgmma dot (and the load, and transpose, it
  /// comes from) shared layouts.
  void setSharedOperand(Value v) {
    if (auto tr = v.getDefiningOp<TransposeOp>()) {
      auto loaded = cast<SharedAttr>(sharedLayoutFor(tileType(tr.getSource())));
      setType(tr.getSource(), loaded);
      setType(tr.getResult(),
              SharedAttr::get(ctx, loaded.getSwizzle(), {0, 1}));
      return;
    }
    setType(v, sharedLayoutFor(tileType(v)));
  }

  LogicalResult visit(Operation *op) {
    if (!OpTrait::hasElementwiseMappableTraits(op) &&
        !op->hasTrait<OpTrait::IsTerminator>() && !isa<DotOp>(op))
      settleOperands(op);
    bool hasTiles =
        llvm::any_of(op->getOperandTypes(), llvm::IsaPred<RankedTensorType>) ||
        llvm::any_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>);
    if (isa<scf::ForOp, RangeOp>(op))
      return visitLoop(op);
    if (auto ifOp = dyn_cast<scf::IfOp>(op))
      return visitIf(ifOp);
    if (!hasTiles || op->hasTrait<OpTrait::IsTerminator>())
      return success();

    auto unset = [](Value v) {
      return !cast<RankedTensorType>(v.getType()).getEncoding();
    };
    if (auto load = dyn_cast<LoadOp>(op)) {
      if (load.getMask() && unset(load.getMask()))
        return op->emitError("the mask has no layout");
      if (unset(load.getResult()))
        setType(load.getResult(), load.getMask()
                                      ? tileType(load.getMask()).getEncoding()
                                      : defaultLayout(tileType(load)));
      if (load.getMask())
        convertOperand(load.getMaskMutable()[0], tileType(load).getEncoding());
      return success();
    }
    if (auto store = dyn_cast<StoreOp>(op)) {
      if (store.getMask())
        convertOperand(store.getMaskMutable()[0],
                       tileType(store.getValue()).getEncoding());
      return success();
    }
    if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
      auto t = tileType(cst.getResult());
      auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
      if (!t.getEncoding() && dense) {
        // The value attribute carries the type too.
        auto to = withLayout(t, defaultLayout(t));
        cst.setValueAttr(
            dense.isSplat()
                ? DenseElementsAttr::get(to, dense.getSplatValue<Attribute>())
                : dense.reshape(to));
        cst.getResult().setType(to);
      }
      return success();
    }
    if (isa<IotaOp, tensor::SplatOp>(op)) {
      if (unset(op->getResult(0)))
        setType(op->getResult(0), defaultLayout(tileType(op->getResult(0))));
      return success();
    }
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      if (unset(reduce.getResult()))
        setType(reduce.getResult(),
                SliceAttr::get(ctx, reduce.getDim(),
                               tileType(reduce.getSource()).getEncoding()));
      return success();
    }
    if (auto bcast = dyn_cast<BroadcastOp>(op)) {
      Attribute from = tileType(bcast.getSource()).getEncoding();
      if (unset(bcast.getResult())) {
        Attribute to;
        // A row statistic broadcast back over the tile it came from.
        auto slice = dyn_cast<SliceAttr>(from);
        auto dst = tileType(bcast);
        if (slice && layoutRank(slice.getParent()) == dst.getRank() &&
            bcast.getDims().size() + 1 == size_t(dst.getRank())) {
          bool match = true;
          for (auto [i, d] : llvm::enumerate(bcast.getDims()))
            match &= d == int64_t(i < slice.getDim() ? i : i + 1);
          if (match)
            to = slice.getParent();
        }
        setType(bcast.getResult(), to ? to : defaultLayout(dst));
      }
      auto need = broadcastOperandLayout(bcast, tileType(bcast).getEncoding());
      if (failed(need))
        return failure();
      convertOperand(bcast.getSourceMutable(), *need);
      return success();
    }
    if (auto tr = dyn_cast<TransposeOp>(op)) {
      if (!unset(tr.getResult()))
        return success();
      auto src = dyn_cast<BlockedAttr>(tileType(tr.getSource()).getEncoding());
      if (!src) {
        setType(tr.getResult(), defaultLayout(tileType(tr)));
        return success();
      }
      ArrayRef<int64_t> perm = tr.getPermutation();
      SmallVector<int64_t> spt, tpw, wpc, order, inverse(perm.size());
      for (auto [i, p] : llvm::enumerate(perm)) {
        spt.push_back(src.getSizePerThread()[p]);
        tpw.push_back(src.getThreadsPerWarp()[p]);
        wpc.push_back(src.getWarpsPerCTA()[p]);
        inverse[p] = i;
      }
      for (int64_t d : src.getOrder())
        order.push_back(inverse[d]);
      setType(tr.getResult(), BlockedAttr::get(ctx, spt, tpw, wpc, order));
      return success();
    }
    if (isa<CastOp, MaskCausalOp, MaskKeysOp>(op)) {
      if (unset(op->getResult(0)))
        setType(op->getResult(0), tileType(op->getOperand(0)).getEncoding());
      return success();
    }
    if (auto cvt = dyn_cast<ConvertLayoutOp>(op)) {
      if (unset(cvt.getResult()))
        setType(cvt.getResult(), defaultLayout(tileType(cvt)));
      return success();
    }
    if (auto dot = dyn_cast<DotOp>(op)) {
      settleOperands(op, /*skip=*/{dot.getAcc(), dot.getA()});
      auto accType = tileType(dot.getAcc());
      if (Attribute acc = wgmmaLayoutFor(dot)) {
        if (isDeferred(dot.getAcc()))
          setType(dot.getAcc(), acc);
        else
          convertOperand(dot.getAccMutable(), acc);
        setType(dot.getResult(), acc);
        auto mma = cast<MmaAttr>(acc);
        int64_t gn = mma.getWarpsPerCTA()[1], gm = mma.getWarpsPerCTA()[0] / 4;
        int64_t m = accType.getShape()[0];
        bool inRegisters = gn == 1 && !(gm > 1 && m != 64 * gm);
        Attribute aRegisters = DotOperandAttr::get(ctx, 0, acc, 2);
        if (isDeferred(dot.getA()) && inRegisters) {
          // A carried A operand with a cheap start (software-pipelined
          // probabilities) is carried in the layout its product reads.
          setType(dot.getA(), aRegisters);
        } else {
          settleOperands(op, /*skip=*/dot.getAcc());
          bool fp8OrTf32 = !tileType(dot.getA()).getElementType().isBF16() &&
                           !tileType(dot.getA()).getElementType().isF16();
          if (sharedOperandLoad(dot.getA(), dot->getBlock()) ||
              (!fp8OrTf32 && transposedOperand(dot.getA(), dot->getBlock()))) {
            setSharedOperand(dot.getA());
          } else if (TransposeOp tr =
                         storedTransposedA(dot.getA(), dot->getBlock())) {
            auto stored =
                cast<SharedAttr>(sharedLayoutFor(tileType(tr.getSource())));
            convertOperand(tr.getSourceMutable(), stored);
            setType(tr.getResult(),
                    SharedAttr::get(ctx, stored.getSwizzle(), {0, 1}));
          } else if (!inRegisters) {
            convertOperand(dot.getAMutable(),
                           sharedLayoutFor(tileType(dot.getA())));
          } else {
            convertOperand(dot.getAMutable(), aRegisters);
          }
        }
        setSharedOperand(dot.getB());
        return success();
      }
      settleOperands(op, /*skip=*/dot.getAcc());
      // Tensor cores where the types and shapes allow, FMAs otherwise.
      Attribute acc = mmaLayoutFor(dot);
      unsigned kWidth = acc ? 2 : 1;
      if (!acc)
        acc = accType.getEncoding() ? accType.getEncoding()
                                    : defaultLayout(accType);
      if (isDeferred(dot.getAcc()))
        setType(dot.getAcc(), acc);
      else
        convertOperand(dot.getAccMutable(), acc);
      setType(dot.getResult(), acc);
      if (isa<BlockedAttr, MmaAttr>(acc)) {
        convertOperand(dot.getAMutable(),
                       DotOperandAttr::get(ctx, 0, acc, kWidth));
        convertOperand(dot.getBMutable(),
                       DotOperandAttr::get(ctx, 1, acc, kWidth));
      }
      return success();
    }
    if (OpTrait::hasElementwiseMappableTraits(op) &&
        isa<arith::ArithDialect, math::MathDialect>(op->getDialect())) {
      // The layout of the first operand loaded in this block (so that a
      // loop's data keeps its load layout and what else the op reads is
      // converted, once when it is loop-invariant), else of the first
      // operand that is not cheap to recompute.
      Attribute layout, loaded, cheapLayout, productLayout;
      for (Value v : op->getOperands()) {
        auto t = tileType(v);
        if (!t || !t.getEncoding())
          continue;
        // (Never move a tensor-core accumulator to another operand's
        // layout: an epilogue's bias or residual converts instead, which
        // a load then reads in the accumulator's layout.)
        if (!productLayout &&
            (isa<MmaAttr, DotOperandAttr>(t.getEncoding()) ||
             isa_and_nonnull<DotOp>(v.getDefiningOp())))
          productLayout = t.getEncoding();
        if (!loaded && loadedIn(v, op->getBlock()))
          loaded = t.getEncoding();
        if (!isCheap(v)) {
          if (!layout)
            layout = t.getEncoding();
        } else if (!cheapLayout) {
          cheapLayout = t.getEncoding();
        }
      }
      if (productLayout)
        layout = productLayout;
      else if (loaded)
        layout = loaded;
      if (!layout)
        layout = cheapLayout;
      if (!layout) {
        settleOperands(op);
        layout = tileType(op->getOperand(0)).getEncoding();
      }
      if (!layout)
        return op->emitError("no operand tile has a layout");
      for (OpOperand &operand : op->getOpOperands())
        if (tileType(operand.get()))
          convertOperand(operand, layout);
      for (Value r : op->getResults())
        if (tileType(r) && unset(r))
          setType(r, layout);
      return success();
    }
    return op->emitError() << "the Tile IR layout assignment has no rule for '"
                           << op->getName() << "' on tiles";
  }

  /// Loop-carried tiles keep their initial value's layout.
  LogicalResult visitLoop(Operation *op) {
    Block &body = op->getRegion(0).front();
    unsigned numInits = op->getNumResults();
    ValueRange inits = op->getOperands().take_back(numInits);
    ValueRange args = body.getArguments().take_back(numInits);
    for (auto [init, arg, result] : llvm::zip(inits, args, op->getResults()))
      if (auto t = tileType(init)) {
        if (isCheap(init)) {
          arg.setType(withLayout(t, {}));
          deferred.insert(arg.getAsOpaquePointer());
        } else {
          arg.setType(t);
        }
      }
    if (failed(run(body)))
      return failure();
    Operation *yield = body.getTerminator();
    for (auto [i, arg] : llvm::enumerate(args)) {
      if (!tileType(arg))
        continue;
      if (isDeferred(arg))
        arg.setType(yield->getOperand(i).getType());
      deferred.erase(arg.getAsOpaquePointer());
      Attribute layout = tileType(arg).getEncoding();
      OpOperand &init = op->getOpOperand(op->getNumOperands() - numInits + i);
      convertOperand(init, layout);
      convertOperand(yield->getOpOperand(i), layout);
      op->getResult(i).setType(arg.getType());
    }
    return success();
  }

  /// The results take the then-branch's layouts.
  LogicalResult visitIf(scf::IfOp op) {
    if (failed(run(op.getThenRegion().front())))
      return failure();
    if (!op.getElseRegion().empty() && failed(run(op.getElseRegion().front())))
      return failure();
    if (op.getNumResults() == 0)
      return success();
    Operation *thenYield = op.thenYield();
    for (auto [v, r] : llvm::zip(thenYield->getOperands(), op.getResults()))
      if (tileType(r))
        r.setType(v.getType());
    for (auto [operand, r] :
         llvm::zip(op.elseYield()->getOpOperands(), op.getResults()))
      if (auto t = tileType(r))
        convertOperand(operand, t.getEncoding());
    return success();
  }
};

struct TTileAssignLayoutsPass
    : ttile::impl::TTileAssignLayoutsBase<TTileAssignLayoutsPass> {
  using TTileAssignLayoutsBase::TTileAssignLayoutsBase;

  /// A tile loaded once and read by several tensor-core products alone
  /// (the query block of attention's two key loops) is loaded once per
  /// product: each copy can then sit in shared memory for its wgmma, the
  /// fast form, instead of being converted into registers (a second read
  /// of the same tile costs one pass through L2). A tile with other users
  /// stays one load (its product takes it from registers).
  static void splitSharedOperandLoads(func::FuncOp fn) {
    auto tensorCoreDot = [](DotOp dot) {
      auto acc = cast<RankedTensorType>(dot.getAcc().getType());
      Type in = cast<RankedTensorType>(dot.getA().getType()).getElementType();
      return acc.getElementType().isF32() &&
             (in.isBF16() || in.isF16() ||
              isa<Float8E4M3FNType, Float8E5M2Type>(in));
    };
    SmallVector<OpOperand *> uses;
    fn.walk([&](DotOp dot) {
      if (!tensorCoreDot(dot))
        return;
      for (OpOperand &operand : dot->getOpOperands().take_front(2)) {
        Value v = operand.get();
        if (auto tr = v.getDefiningOp<TransposeOp>(); tr && v.hasOneUse())
          v = tr.getSource(), uses.push_back(&tr->getOpOperand(0));
        else
          uses.push_back(&operand);
      }
    });
    llvm::SmallPtrSet<OpOperand *, 8> productUses(uses.begin(), uses.end());
    for (OpOperand *use : uses) {
      auto load = use->get().getDefiningOp<LoadOp>();
      if (!load || load.getMask() || load->hasOneUse() ||
          !llvm::all_of(load->getUses(),
                        [&](OpOperand &u) { return productUses.contains(&u); }))
        continue;
      OpBuilder b(load);
      b.setInsertionPointAfter(load);
      use->set(b.clone(*load)->getResult(0));
      if (load->use_empty())
        load->erase();
    }
  }

  /// Loads split for their products that got the same shared layout read
  /// the same tile: the later one reads the earlier one's buffer instead
  /// (one copy into shared memory instead of two), unless something
  /// between them may write memory.
  static void mergeSharedLoads(func::FuncOp fn) {
    auto writes = [](Operation *op) {
      bool found = false;
      op->walk([&](Operation *inner) {
        auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
        if (isa<StoreOp>(inner) ||
            (effects ? effects.hasEffect<MemoryEffects::Write>()
                     : !inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
                           inner->getNumRegions() == 0 && !isPure(inner)))
          found = true;
      });
      return found;
    };
    // Values computed alike by pure ops (a row index traced twice).
    std::function<bool(Value, Value, int)> sameValue = [&](Value x, Value y,
                                                           int depth) {
      if (x == y)
        return true;
      Operation *a = x.getDefiningOp(), *b = y.getDefiningOp();
      if (!a || !b || depth == 0 || !isPure(a) || a->getNumRegions() ||
          a->getName() != b->getName() ||
          a->getAttrDictionary() != b->getAttrDictionary() ||
          a->getNumOperands() != b->getNumOperands() ||
          a->getResultTypes() != b->getResultTypes() ||
          cast<OpResult>(x).getResultNumber() !=
              cast<OpResult>(y).getResultNumber())
        return false;
      return llvm::all_of(
          llvm::zip(a->getOperands(), b->getOperands()), [&](auto pair) {
            return sameValue(std::get<0>(pair), std::get<1>(pair), depth - 1);
          });
    };
    auto sameLoad = [&](LoadOp a, LoadOp b) {
      return a.getType() == b.getType() && !a.getMask() && !b.getMask() &&
             a->getAttrDictionary() == b->getAttrDictionary() &&
             sameValue(a.getSource(), b.getSource(), 8) &&
             a.getIndices().size() == b.getIndices().size() &&
             llvm::all_of(
                 llvm::zip(a.getIndices(), b.getIndices()), [&](auto pair) {
                   return sameValue(std::get<0>(pair), std::get<1>(pair), 8);
                 });
    };
    fn.walk([&](Block *block) {
      SmallVector<LoadOp> seen;
      for (Operation &op : llvm::make_early_inc_range(*block)) {
        auto load = dyn_cast<LoadOp>(&op);
        if (!load) {
          if (writes(&op))
            seen.clear();
          continue;
        }
        if (!isa_and_nonnull<SharedAttr>(load.getType().getEncoding()))
          continue;
        auto same =
            llvm::find_if(seen, [&](LoadOp s) { return sameLoad(s, load); });
        if (same == seen.end()) {
          seen.push_back(load);
          continue;
        }
        load.getResult().replaceAllUsesWith(same->getResult());
        load->erase();
      }
    });
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    RewritePatternSet patterns(&getContext());
    populateSoftmaxExpansionPatterns(patterns);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!fn->hasAttr("ttile.kernel") || fn.isExternal())
        continue;
      if (wgmma)
        splitSharedOperandLoads(fn);
      Assigner assigner(fn, wgmma);
      if (failed(assigner.run(fn.getBody().front())))
        return signalPassFailure();
      for (bool changed = true; changed;) {
        changed = false;
        SmallVector<ConvertLayoutOp> converts;
        fn.walk([&](ConvertLayoutOp c) { converts.push_back(c); });
        for (ConvertLayoutOp c : converts)
          changed |= assigner.hoist(c);
      }
      if (wgmma)
        mergeSharedLoads(fn);
      // Values re-created in other layouts leave their originals unused.
      for (bool changed = true; changed;) {
        SmallVector<Operation *> dead;
        fn.walk([&](Operation *op) {
          if (auto cvt = dyn_cast<ConvertLayoutOp>(op);
              cvt && cvt.getSource().getType() == cvt.getType())
            cvt.getResult().replaceAllUsesWith(cvt.getSource());
          if (isOpTriviallyDead(op))
            dead.push_back(op);
        });
        changed = !dead.empty();
        for (Operation *op : llvm::reverse(dead))
          op->erase();
      }
    }
  }
};

} // namespace
