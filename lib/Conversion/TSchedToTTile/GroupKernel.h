//===- GroupKernel.h - The Tile IR kernel of one GPU fusion group -*- C++ -*-===//
//
// RowKernel builds the kernel of a row or contraction group: a row
// group's on the rows a program holds (GenerateKernels.cpp, with the
// lowering of the group's Graph IR ops to tile values), a contraction
// group's as a GEMM with its epilogue (GemmKernel.cpp). Private to
// -tessera-gpu-generate-kernels.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_CONVERSION_TSCHEDTOTTILE_GROUPKERNEL_H
#define TESSERA_CONVERSION_TSCHEDTOTTILE_GROUPKERNEL_H

#include "GemmSchedule.h"
#include "GroupLaunches.h"
#include "StdlibKernels.h"
#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TSched/IR/GemmForm.h"
#include "tessera/Dialect/TSched/IR/RowLayout.h"
#include "tessera/Dialect/TSched/IR/TSched.h"
#include "tessera/Dialect/TSched/Transforms/RowOps.h"
#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tessera::group_kernels {

namespace tg = mlir::tessera::tgraph;
namespace tt = mlir::tessera::ttile;

/// How a value spreads over the rows a program holds (never None here).
using Class = tsched::RowClass;

struct Tile {
  Value value;
  Class cls;
};


class RowKernel {
public:
  RowKernel(tsched::GroupOp group, int64_t rows, int64_t cols,
            int64_t sms = 132, bool hopper = false)
      : group(group), b(group.getContext()), rows(rows), cols(cols), sms(sms),
        hopper(hopper) {
    f32 = b.getF32Type();
    Block &body = group.getBodyBlock();
    if (group.getKind() == tsched::GroupKind::Contraction &&
        !body.without_terminator().empty()) {
      gemmOp = &body.front();
      gemm = tsched::gemmForm(gemmOp);
    }
    if (gemm) {
      bool plain = llvm::all_of(body.without_terminator(), [&](Operation &op) {
        return &op == gemmOp || isa<tg::CastOp>(op);
      });
      auto user = gemmOp->getAttrOfType<tsched::ScheduleAttr>(
          tsched::TSchedDialect::kScheduleAttrName);
      // A product with a schedule of its own is built as it says (whole
      // unless it says split); the others have a space to tune in.
      // The outputs that leave through shared buffers on Hopper: 16-bit
      // tiles (see gemmScheduleSpace).
      int64_t staged = llvm::count_if(group->getResultTypes(), [](Type t) {
        auto r = dyn_cast<RankedTensorType>(t);
        return r && r.getRank() >= 2 && isa<FloatType>(r.getElementType()) &&
               r.getElementTypeBitWidth() == 16;
      });
      // An epilogue that reads no tile besides the product's operands and
      // writes only 16-bit tiles.
      bool wide =
          llvm::all_of(body.getArguments(),
                       [&](BlockArgument a) {
                         auto t = dyn_cast<RankedTensorType>(a.getType());
                         return !t || t.getRank() < 2 ||
                                llvm::is_contained(gemmOp->getOperands(), a);
                       }) &&
          llvm::all_of(group->getResultTypes(), [](Type t) {
            auto r = dyn_cast<RankedTensorType>(t);
            return !r || r.getRank() < 2 || r.getElementTypeBitWidth() <= 16;
          });
      if (!user)
        candidates = gemmScheduleSpace(*gemm, sms, plain, gemm->flat(),
                                       hopper, staged, wide);
      deepestRing = !user && hopper;
      GemmSchedule s = user ? chooseGemmSchedule(*gemm, sms, plain)
                            : candidates.front();
      // (A schedule of its own that asks for ping-pong starts from the
      // ping-pong GEMM's.)
      if (user && user.getPingpong())
        s = pingPongSchedule(*gemm, staged);
      // The parts of the product's own schedule replace the chosen ones.
      if (user) {
        if (user.getSplit())
          s.splits = user.getSplit();
        if (!user.getBlock().empty()) {
          s.bm = user.getBlock()[0];
          s.bn = user.getBlock()[1];
        }
        if (user.getK())
          s.bk = user.getK();
        if (user.getWarps())
          s.warps = user.getWarps();
        if (user.getStages())
          s.stages = user.getStages();
        s.pingpong = user.getPingpong();
      }
      useSchedule(s);
      return;
    }
    bn = int64_t(llvm::PowerOf2Ceil(uint64_t(std::max<int64_t>(cols, 1))));
    // 4096 elements a program, in at most 16 rows where rows are reduced
    // (each reduction runs across the block's rows); an elementwise group
    // of narrow rows (a rotary embedding's 32 columns) takes up to 128, so
    // that each thread moves 16-byte vectors.
    bool reduces = llvm::any_of(body.without_terminator(), [](Operation &op) {
      return tsched::isRowReduction(&op);
    });
    bm = std::max<int64_t>(
        1, std::min<int64_t>({reduces ? tsched::kPeriodMultiple : 128,
                              4096 / bn,
                              int64_t(llvm::PowerOf2Ceil(
                                  uint64_t(std::max<int64_t>(rows, 1))))}));
    warps = bm * bn >= 4096 ? 8 : 4;
  }

  /// K chunks of a split GEMM (1: one kernel). A split GEMM is built as
  /// two kernels: buildPartials() then buildSum().
  int64_t kSplits() const { return splits; }
  /// The schedules a GEMM without one of its own may take, the chosen one
  /// first (empty for other groups).
  ArrayRef<GemmSchedule> space() const { return candidates; }
  /// Builds the GEMM with `s` instead (one of space(); before build()).
  void useSchedule(const GemmSchedule &s) {
    bm = s.bm;
    bn = s.bn;
    bk = s.bk;
    warps = s.warps;
    stages = s.stages;
    splits = s.splits;
    pingpong = s.pingpong;
    chosen = s;
  }
  /// Programs a block of the GEMM kernel (ttile.programs_per_block): 2 for
  /// a ping-pong GEMM, else 1.
  int64_t programsPerBlock() const {
    return gemm && pingpong && !summing ? kPingPongPrograms : 1;
  }
  /// The GEMM's schedule as chosen (with its split), whatever kernel is
  /// built last.
  GemmSchedule gemmSchedule() const { return chosen; }
  /// The rows of a flat GEMM's result (Z * M).
  int64_t gemmRows() const { return gemm->z * gemm->m; }
  /// The partials of a split GEMM: [splits, Z * M, N] f32.
  SmallVector<int64_t> partialsView() const {
    return {splits, gemmRows(), gemm->n};
  }
  /// The group inputs the GEMM reads as its A and B.
  std::pair<unsigned, unsigned> gemmInputs() const {
    return {cast<BlockArgument>(gemmOp->getOperand(0)).getArgNumber(),
            cast<BlockArgument>(gemmOp->getOperand(1)).getArgNumber()};
  }
  /// The first kernel of a split GEMM, taking (A, B, partials): program
  /// p computes output tile p % tiles over K chunk p / tiles.
  LogicalResult buildPartials(func::FuncOp kernel) {
    return buildGemm(kernel, GemmPart::Partials);
  }
  /// The second kernel of a split GEMM, taking (partials, the group's
  /// inputs..., its outputs...): each program adds the chunks of its tile
  /// in order, then runs the epilogue. Its tile is sumTile(); call after
  /// buildPartials().
  LogicalResult buildSum(func::FuncOp kernel) {
    bm = sumRows;
    bn = sumCols;
    warps = 4;
    summing = true;
    return buildGemm(kernel, GemmPart::Sum);
  }
  /// Tiles the kernel built last (or to be built) computes: its output
  /// tiles, and those of each K chunk for the partials of a split.
  int64_t gemmGrid(bool partials) const {
    return partials ? tileCount() * splits : tileCount();
  }
  /// Blocks a GEMM kernel over `tiles` tiles is launched on. On Hopper, a
  /// GEMM of 16-bit or narrower operands (wgmma consumers beside a TMA
  /// producer warpgroup, the deepest ring that fits: one block an SM) runs
  /// on a persistent grid of at most one block a multiprocessor, each
  /// program looping over its tiles: the producer fills the ring for a
  /// program's next tile while its consumers run the epilogue of the last,
  /// where a block a tile started each tile with an empty ring. (NVIDIA
  /// H200, [16384, 1024] x [1024, 4096] bf16: 2048 blocks of a 128x256
  /// tile ran at 207 us; see docs/PERFORMANCE.md.)
  int64_t gemmLaunchGrid(int64_t tiles) const {
    if (hopper && gemm && !gemm->operandType.isF32())
      return std::max<int64_t>(1, std::min(tiles, sms));
    return tiles;
  }

  int64_t blockRows() const { return bm; }
  int64_t blockCols() const { return bn; }
  int64_t numWarps() const { return warps; }
  /// A contraction group whose first op is not a GEMM.
  bool badContraction() {
    return group.getKind() == tsched::GroupKind::Contraction && !gemm;
  }

  /// Fails, at the product, on a GEMM schedule the Tile IR lowering
  /// cannot build: tile dims and K steps are powers of two (at least 16
  /// rows and columns, and K steps of at least 16 bytes), stages at least 1.
  LogicalResult checkSchedule() {
    if (!gemm)
      return success();
    auto pow2 = [](int64_t v) { return v > 0 && llvm::isPowerOf2_64(v); };
    int64_t bytes = gemm->operandType.getIntOrFloatBitWidth() / 8;
    if (splits > 1 && (!gemm->flat() || gemm->k % (splits * bk) != 0))
      return gemmOp->emitOpError()
             << "has the GPU schedule " << scheduleAttr().str()
             << ", which splits K: only a product without batch dims whose "
                "K ("
             << gemm->k << ") is a multiple of split x k (" << splits * bk
             << ") splits";
    if (pingpong && (!hopper || warps % 4 || splits > 1 || bytes != 2))
      return gemmOp->emitOpError()
             << "has the GPU schedule " << scheduleAttr().str()
             << ", which is a ping-pong GEMM: it needs sm_90a (wgmma and "
                "TMA), 16-bit operands (bf16, f16; got "
             << gemm->operandType
             << "), whole warpgroups (warps 4, 8 or 16) and no split";
    if (pow2(bm) && pow2(bn) && pow2(bk) && bm >= 16 && bn >= 16 &&
        bk * bytes >= 16 && stages >= 1)
      return success();
    return gemmOp->emitOpError()
           << "has the GPU schedule " << scheduleAttr().str()
           << ", which no GEMM kernel is built with: the tile's rows and "
              "columns must be powers of two from 16, k a power of two of "
              "at least 16 bytes of "
           << gemm->operandType << " (" << 16 / bytes
           << " elements), stages at least 1";
  }

  /// Programs along x: one per row block, or per GEMM output tile up to
  /// gemmLaunchGrid's bound (a ping-pong GEMM: blocks of two programs, one
  /// a multiprocessor at most, each program looping over tiles).
  int64_t gridSize() const {
    if (!gemm)
      return llvm::divideCeil(rows, bm);
    if (programsPerBlock() > 1)
      return std::max<int64_t>(
          1, std::min<int64_t>(
                 sms, llvm::divideCeil(tileCount(), programsPerBlock())));
    return gemmLaunchGrid(tileCount());
  }

  /// The kernel's schedule, as the group records it.
  tsched::ScheduleAttr scheduleAttr() {
    MLIRContext *ctx = group.getContext();
    if (gemm && !summing)
      return GemmSchedule{bm, bn, bk, warps, stages, splits, pingpong}.attr(
          ctx);
    return tsched::ScheduleAttr::get(ctx, {bm, bn}, 0, {}, 0, 0, warps, 0, 0,
                                     false);
  }

  /// The class of a value of `shape` read from memory (right-aligned
  /// against the full shape, as broadcasting reads it).
  std::optional<Class> classify(ArrayRef<int64_t> shape) const {
    Class c = tsched::classifyInLayout(shape, full);
    if (c == Class::None)
      return std::nullopt;
    return c;
  }

  /// The shape an input is read as. Right-aligned (its own shape), unless
  /// only broadcasts read it, all placing its dims at the same increasing
  /// dims of their result: then the shape the broadcasts place it at, 1
  /// where they broadcast ([B] at dim 0 of [B, C] reads as the row
  /// [B, 1]). Its memory is the same either way.
  SmallVector<int64_t> readShape(Value input) const {
    auto type = cast<RankedTensorType>(input.getType());
    SmallVector<int64_t> own(type.getShape());
    if (input.use_empty())
      return own;
    std::optional<SmallVector<int64_t>> placed;
    for (Operation *user : input.getUsers()) {
      auto bcast = dyn_cast<tg::BroadcastInDimOp>(user);
      if (!bcast)
        return own;
      ArrayRef<int64_t> dims = bcast.getBroadcastDimensions();
      auto out = cast<RankedTensorType>(bcast.getType()).getShape();
      if (dims.size() != own.size() || !llvm::is_sorted(dims) ||
          out.size() != full.size())
        return own;
      std::optional<SmallVector<int64_t>> p = placedShape(bcast);
      if (!p)
        return own;
      if (placed && *placed != *p)
        return own;
      placed = std::move(*p);
    }
    return *placed;
  }

  /// The shape a broadcast places its source at in its result: the
  /// source's sizes at its dims, 1 elsewhere. Nullopt unless the dims
  /// increase and the result has the layout's rank.
  std::optional<SmallVector<int64_t>>
  placedShape(tg::BroadcastInDimOp bcast) const {
    ArrayRef<int64_t> dims = bcast.getBroadcastDimensions();
    auto in = cast<RankedTensorType>(bcast.getX().getType()).getShape();
    auto out = cast<RankedTensorType>(bcast.getType()).getShape();
    if (!llvm::is_sorted(dims) || out.size() != full.size())
      return std::nullopt;
    return tsched::placedShape(in, dims, out.size());
  }

  /// Builds the body of `kernel`, whose signature takes memrefFor() of
  /// each input and output (after predictClasses()).
  LogicalResult build(func::FuncOp kernel) {
    if (gemm)
      return buildGemm(kernel);
    Block &body = group.getBodyBlock();
    Location loc = group.getLoc();
    Block *entry = kernel.addEntryBlock();
    b.setInsertionPointToStart(entry);
    Value pid = tt::ProgramIdOp::create(b, loc, b.getIndexType(),
                                        b.getI32IntegerAttr(0));
    rowStart = arith::MulIOp::create(b, loc, pid, index(bm));
    globalRow = rowStart;
    colStart = index(0);
    if (bn != cols) {
      auto i32Tile = RankedTensorType::get({bm, bn}, b.getI32Type());
      Value col = tt::IotaOp::create(b, loc, i32Tile, b.getI32IntegerAttr(1));
      Value limit = arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(i32Tile, b.getI32IntegerAttr(
                                                      int32_t(cols))));
      colMask = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, col,
                                      limit);
    }
    // Inputs (a windowed one is read by its slices).
    for (auto [arg, input] :
         llvm::zip(entry->getArguments().take_front(body.getNumArguments()),
                   body.getArguments())) {
      if (windowed.contains(input)) {
        windowSource[input] = arg;
        continue;
      }
      auto type = cast<RankedTensorType>(input.getType());
      tiles[input] = load(arg, predicted.lookup(input), type.getElementType(),
                          loc, tsched::periodRows(readShape(input)));
    }
    for (Operation &op : body.without_terminator())
      if (failed(lower(&op)))
        return failure();
    // Outputs.
    auto yield = cast<tsched::YieldOp>(body.getTerminator());
    for (auto [value, arg] :
         llvm::zip(yield.getValues(),
                   entry->getArguments().drop_front(body.getNumArguments()))) {
      Type elt = cast<RankedTensorType>(value.getType()).getElementType();
      if (auto concat = value.getDefiningOp<tg::ConcatOp>()) {
        // Each part into its window of the result's columns.
        int64_t at = 0;
        for (Value part : concat.getInputs()) {
          store(tiles.lookup(part), columnWindow(arg, at, loc), elt, loc);
          at += cols;
        }
        continue;
      }
      if (auto t = value.getDefiningOp<tg::TransposeOp>()) {
        // A concat written in the transpose's order of rows: each part
        // into its window of the rows where the transpose puts them.
        auto concat = t.getX().getDefiningOp<tg::ConcatOp>();
        SmallVector<int64_t> strides = rowStridesOf(t, /*input=*/false);
        int64_t at = 0;
        for (Value part : concat.getInputs()) {
          Tile p = tiles.lookup(part);
          store(p, permutedWindow(arg, concat.getType().getShape(), strides, at,
                                  loc),
                elt, loc, /*atOrigin=*/true);
          at += cols;
        }
        continue;
      }
      Tile t = tiles.lookup(value);
      assert(t.cls == predicted.lookup(value) && "class as predicted");
      Class cls = outputClass(value);
      if (t.cls != cls)
        t = Tile{expand(t, cls, loc), cls};
      store(t, arg, elt, loc);
    }
    func::ReturnOp::create(b, loc);
    return success();
  }

  /// The class of every value of the body, as build() computes it: the
  /// kernel's signature and the host's views depend on it. Fails on an
  /// input that fits no class or an output that is a column or a scalar.
  LogicalResult predictClasses() {
    Block &body = group.getBodyBlock();
    for (Value arg : body.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      // Read through windows of its columns (slices of its last dim, each
      // a full tile of the layout).
      // Or through a transpose of its leading dims that only windows read
      // (each tile's rows then a strided run of the input's rows).
      auto windowsOnly = [&](Value v) {
        return !v.use_empty() && llvm::all_of(v.getUsers(), [&](Operation *u) {
          return isWindowOf(u, v);
        });
      };
      auto transposedWindows = [&](Operation *u) {
        auto t = dyn_cast<tg::TransposeOp>(u);
        return t && t.getX() == arg && tsched::isRowTranspose(t) &&
               windowsOnly(t.getResult());
      };
      if (!gemm && !arg.use_empty() &&
          llvm::all_of(arg.getUsers(), [&](Operation *u) {
            return isWindowOf(u, arg) || transposedWindows(u);
          })) {
        windowed.insert(arg);
        predicted[arg] = Class::Full;
        // A block's rows lie in one index of the other leading dims of
        // each transpose.
        for (Operation *u : arg.getUsers())
          if (auto t = dyn_cast<tg::TransposeOp>(u))
            leadingRows.push_back(t.getType().getShape().drop_back().back());
        continue;
      }
      std::optional<Class> cls = classify(readShape(arg));
      // (A GEMM operand is read through the GEMM's view, whatever its
      // shape says in the output's layout: a [K, N] weight of a [B, T, K]
      // input with T == K reads as periodic there.)
      if (gemm && cls == Class::Periodic && !isGemmOperand(arg))
        return group.emitOpError()
               << "input of type " << type << " repeats over the rows of "
               << "the layout [" << rows << ", " << cols << "]; a GEMM's "
               << "epilogue reads full tiles, rows, columns and scalars";
      if (isGemmOperand(arg)) {
        // Read through the GEMM's view; by the epilogue only as a full
        // tile (the groups are formed so).
        bool otherReaders = llvm::any_of(
            arg.getUsers(), [&](Operation *u) { return u != gemmOp; });
        if (otherReaders && cls != Class::Full)
          return group.emitOpError()
                 << "epilogue reads GEMM operand of type " << type
                 << " as other than a full tile of the layout [" << rows
                 << ", " << cols << "]";
        predicted[arg] = Class::Full;
        continue;
      }
      if (!cls)
        return group.emitOpError()
               << "input of type " << type << " is neither a full tile, a "
               << "row, a column nor a scalar of the layout [" << rows << ", "
               << cols << "]";
      predicted[arg] = *cls;
    }
    for (Operation &op : body.without_terminator()) {
      if (op.getNumResults() != 1)
        return unsupported(&op);
      auto type = dyn_cast<RankedTensorType>(op.getResult(0).getType());
      if (!type)
        return unsupported(&op);
      Class cls;
      if (&op == gemmOp) {
        cls = Class::Full;
      } else if (isa<tg::ConstantOp>(op) && type.getNumElements() == 1) {
        cls = Class::Scalar;
      } else if (isa<tg::ConstantOp>(op)) {
        // One value over a tensor: a splat of the class its shape has.
        std::optional<Class> c = classify(type.getShape());
        if (!c)
          return unsupported(&op);
        cls = *c == Class::Periodic ? Class::Full : *c;
      } else if (isa<tg::IotaOp>(op)) {
        std::optional<Class> c = classify(type.getShape());
        if (!(c == Class::Full || c == Class::Col || c == Class::Periodic))
          return unsupported(&op);
        cls = Class::Full;
      } else if (isa<tg::FullOp, tg::ZerosLikeOp, tg::OnesLikeOp>(op)) {
        std::optional<Class> c = classify(type.getShape());
        if (!c)
          return unsupported(&op);
        // A constant repeated over the rows is a full tile.
        cls = *c == Class::Periodic ? Class::Full : *c;
      } else if (isa<tg::BroadcastInDimOp>(op)) {
        // A full tile, or a row, column or scalar that it stays.
        std::optional<Class> c = classify(type.getShape());
        cls = !c || *c == Class::Periodic ? Class::Full : *c;
      } else if (tsched::isRowReduction(&op)) {
        cls = Class::Row;
      } else if (isa<tg::SliceOp>(op)) {
        Value x = op.getOperand(0);
        if (auto t = x.getDefiningOp<tg::TransposeOp>())
          x = t.getX();
        if (gemm || !windowed.contains(x))
          return unsupported(&op);
        cls = Class::Full;
      } else if (auto t = dyn_cast<tg::TransposeOp>(op)) {
        // Of a windowed input (read by its windows), or of a concat (only
        // yielded: written in its order of rows).
        auto concat = t.getX().getDefiningOp<tg::ConcatOp>();
        bool written = concat && llvm::all_of(t->getUsers(), [](Operation *u) {
                         return isa<tsched::YieldOp>(u);
                       });
        if (gemm || !tsched::isRowTranspose(t) ||
            !(windowed.contains(t.getX()) || written))
          return unsupported(&op);
        if (written)
          leadingRows.push_back(concat.getType().getShape().drop_back().back());
        cls = Class::Full;
      } else if (auto concat = dyn_cast<tg::ConcatOp>(op)) {
        // Full tiles side by side, written into the result's columns: the
        // result is only yielded.
        auto fullTile = [&](Value v) {
          auto t = cast<RankedTensorType>(v.getType());
          return predicted.lookup(v) == Class::Full &&
                 t.getShape().back() == cols &&
                 t.getNumElements() == rows * cols;
        };
        auto written = [](Operation *u) {
          return isa<tsched::YieldOp, tg::TransposeOp>(u);
        };
        bool parts = !gemm &&
                     int64_t(concat.getDim()) == type.getRank() - 1 &&
                     llvm::all_of(concat.getInputs(), fullTile) &&
                     llvm::all_of(concat->getUsers(), written);
        if (!parts)
          return unsupported(&op);
        cls = Class::Full;
      } else {
        SmallVector<Tile> ts;
        for (Value v : op.getOperands())
          ts.push_back(Tile{Value(), predicted.lookup(v)});
        cls = join(ts);
      }
      predicted[op.getResult(0)] = cls;
    }
    // A periodic input repeats every multiple of kPeriodMultiple rows: a
    // block of more rows must divide its period (it is read at the block's
    // row modulo the period).
    // Rows read or written in another order: a block's rows must lie in
    // one index of the other leading dims.
    for (int64_t n : leadingRows) {
      while (bm > 1 && n % bm)
        bm /= 2;
      warps = bm * bn >= 4096 ? 8 : 4;
    }
    if (!gemm)
      for (Value arg : body.getArguments())
        if (predicted.lookup(arg) == Class::Periodic) {
          int64_t period = tsched::periodRows(readShape(arg));
          while (bm > tsched::kPeriodMultiple && period % bm)
            bm /= 2;
          warps = bm * bn >= 4096 ? 8 : 4;
        }
    for (Value v : body.getTerminator()->getOperands()) {
      Class cls = outputClass(v);
      if (cls == Class::Col || cls == Class::Scalar)
        return group.emitOpError()
               << "yields a " << (cls == Class::Col ? "column" : "scalar")
               << " of its layout; a row kernel writes full tiles and rows";
    }
    return success();
  }

  /// The class a yielded value is stored as: its own, but a scalar (a
  /// literal) of a layout of one element is its full tile.
  Class outputClass(Value v) const {
    Class c = predicted.lookup(v);
    if ((c == Class::Col || c == Class::Scalar) && rows * cols == 1 &&
        !isa<BlockArgument>(v))
      return Class::Full;
    return c;
  }

  /// The memref type the kernel takes for body value `v` (a block argument
  /// or a yielded value).
  MemRefType memrefFor(Value v) const {
    auto type = cast<RankedTensorType>(v.getType());
    Type elt = type.getElementType().isInteger(1)
                   ? IntegerType::get(type.getContext(), 8)
                   : type.getElementType();
    size_t rank = viewOf(v).size();
    return MemRefType::get(SmallVector<int64_t>(rank, ShapedType::kDynamic),
                           elt);
  }

  /// The shape the kernel reads body value `v` as: [R, C] for a full
  /// tile, [R] for a row, [C] for a column, [1] for a scalar.
  SmallVector<int64_t> viewOf(Value v) const {
    if (gemm && isGemmOperand(v)) {
      const tsched::GemmForm &g = *gemm;
      bool isA = v == gemmOp->getOperand(0);
      int64_t outer = isA ? g.m : g.n;
      bool trans = isA ? g.transA : g.transB;
      SmallVector<int64_t> mat = trans == isA
                                     ? SmallVector<int64_t>{g.k, outer}
                                     : SmallVector<int64_t>{outer, g.k};
      if (g.flat()) {
        if (isA)
          mat[0] *= g.za;
        return mat;
      }
      return {isA ? g.za : g.zb, mat[0], mat[1]};
    }
    bool batched = gemm && !gemm->flat();
    // A windowed input and a concat are read and written whole: [R, their
    // own columns].
    if (windowed.contains(v) || v.getDefiningOp<tg::ConcatOp>() ||
        v.getDefiningOp<tg::TransposeOp>())
      return {rows, cast<RankedTensorType>(v.getType()).getShape().back()};
    switch (isa<BlockArgument>(v) ? predicted.lookup(v) : outputClass(v)) {
    case Class::Full:
      if (batched)
        return {gemm->z, gemm->m, gemm->n};
      return {rows, cols};
    case Class::Row:
      if (batched)
        return {gemm->z, gemm->m};
      return {rows};
    case Class::Col:
      return {cols};
    case Class::Scalar:
      return {1};
    case Class::Periodic:
      return {tsched::periodRows(readShape(v)), cols};
    case Class::None:
      break;
    }
    llvm_unreachable("class");
  }

  void findFullShape() {
    // The shape of a full value: one of R * C elements ending in C.
    auto fits = [&](Type t) {
      auto r = dyn_cast<RankedTensorType>(t);
      return r && r.hasStaticShape() && r.getRank() > 0 &&
             r.getNumElements() == rows * cols && r.getShape().back() == cols;
    };
    for (Operation &op : group.getBodyBlock())
      for (Value v : llvm::concat<Value>(op.getOperands(), op.getResults()))
        if (fits(v.getType())) {
          full = llvm::to_vector(
              cast<RankedTensorType>(v.getType()).getShape());
          return;
        }
    for (Value v : group.getBodyBlock().getArguments())
      if (fits(v.getType())) {
        full = llvm::to_vector(cast<RankedTensorType>(v.getType()).getShape());
        return;
      }
    full = {rows, cols};
  }

private:
  tsched::GroupOp group;
  OpBuilder b;
  int64_t rows, cols, bm = 1, bn = 1, warps = 4, bk = 0, stages = 1;
  int64_t splits = 1;
  int64_t sms;
  bool hopper;
  bool pingpong = false;
  /// The K loop's stages are the space's (the deepest ring that fits), not
  /// a schedule of the product's own: the lowering may give some up.
  bool deepestRing = false;
  SmallVector<GemmSchedule> candidates;
  GemmSchedule chosen{};
  /// The tile of a split GEMM's second kernel: 256 programs for a
  /// [1024, 1024] result, each reading a [32, 128] f32 tile a chunk.
  static constexpr int64_t sumRows = 32, sumCols = 128;
  /// Whether the kernel being built is a split GEMM's second one.
  bool summing = false;
  enum class GemmPart { Whole, Partials, Sum };
  SmallVector<int64_t> full;
  Type f32;
  /// The tile's first row and column (within its batch, for a batched
  /// GEMM), and its first row of the whole [R, C] layout.
  Value rowStart, colStart, globalRow, colMask;
  /// A contraction group's GEMM (its first op) and its form.
  Operation *gemmOp = nullptr;
  std::optional<tsched::GemmForm> gemm;

  bool isGemmOperand(Value v) const {
    return gemmOp && llvm::is_contained(gemmOp->getOperands(), v) &&
           isa<BlockArgument>(v);
  }

  int64_t tileCount() const {
    const tsched::GemmForm &g = *gemm;
    if (g.flat())
      return llvm::divideCeil(g.z * g.m, bm) * llvm::divideCeil(g.n, bn);
    return g.z * llvm::divideCeil(g.m, bm) * llvm::divideCeil(g.n, bn);
  }

  LogicalResult buildGemm(func::FuncOp kernel,
                          GemmPart part = GemmPart::Whole);
  /// The epilogue on the GEMM's tile (in `tiles`) and the stores, closing
  /// the tiles loop; `shift` kernel arguments come before the group's.
  void hoistEpilogueLoads(tt::RangeOp kLoop);
  LogicalResult buildEpilogue(Block *entry, unsigned shift, Value z,
                              bool batched, Location loc,
                              Operation *tilesLoop, Value valid = Value());
  Value batchIndex(Value z, ArrayRef<int64_t> operandBatch, Location loc);
  Value batchSlice(Value memref, Value z, Location loc);
  DenseMap<Value, Tile> tiles;
  DenseMap<Value, Class> predicted;
  /// Inputs read through windows of their columns (isWindowOf()), and the
  /// kernel argument of each.
  llvm::SmallPtrSet<Value, 4> windowed;
  DenseMap<Value, Value> windowSource;
  /// The last leading dim of each layout whose rows are read or written
  /// in another order (a block's rows divide it).
  SmallVector<int64_t> leadingRows;

  Value index(int64_t v) {
    return arith::ConstantIndexOp::create(b, group.getLoc(), v);
  }

  SmallVector<int64_t> shapeOf(Class cls) const {
    switch (cls) {
    case Class::Full:
    case Class::Periodic:
      return {bm, bn};
    case Class::Row:
      return {bm};
    case Class::Col:
      return {bn};
    case Class::Scalar:
      return {1};
    case Class::None:
      break;
    }
    llvm_unreachable("class");
  }

  RankedTensorType tileType(Class cls, Type elt) const {
    return RankedTensorType::get(shapeOf(cls), elt);
  }

  Value splat(Class cls, Type elt, double v, Location loc) {
    auto type = tileType(cls, elt);
    TypedAttr a;
    if (auto ft = dyn_cast<FloatType>(elt))
      a = b.getFloatAttr(ft, v);
    else
      a = b.getIntegerAttr(elt, int64_t(v));
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, a));
  }

  /// `t` as a tile of class `to` (to is Full, or t is a scalar).
  Value expand(Tile t, Class to, Location loc) {
    if (t.cls == to)
      return t.value;
    Type elt = cast<RankedTensorType>(t.value.getType()).getElementType();
    // A literal becomes a literal of the larger shape.
    if (auto c = t.value.getDefiningOp<arith::ConstantOp>())
      if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
          dense && dense.isSplat())
        return arith::ConstantOp::create(
            b, loc, dense.resizeSplat(tileType(to, elt)));
    SmallVector<int64_t> dims;
    if (to == Class::Full)
      dims = {t.cls == Class::Row ? 0 : 1};
    else
      dims = {0};
    return tt::BroadcastOp::create(b, loc, tileType(to, elt), t.value,
                                   b.getDenseI64ArrayAttr(dims));
  }

  static Class join(ArrayRef<Tile> ts) {
    bool row = false, col = false, fullSeen = false;
    for (const Tile &t : ts) {
      row |= t.cls == Class::Row;
      col |= t.cls == Class::Col;
      fullSeen |= t.cls == Class::Full || t.cls == Class::Periodic;
    }
    if (fullSeen || (row && col))
      return Class::Full;
    if (row)
      return Class::Row;
    if (col)
      return Class::Col;
    return Class::Scalar;
  }

  /// l / r in f32 as the GPU's approximate division (div.approx.f32: at
  /// most 2 ulp for divisors of normal magnitude, 0 beyond 2^126, no
  /// branch). IEEE division (div.rn.f32) checks each quotient and calls a
  /// slow path for huge, tiny or zero operands; in a GEMM epilogue of
  /// 64 quotients a thread, the checks and branches cost more than the
  /// product itself.
  Value divide(Location loc, Value l, Value r) {
    return arith::DivFOp::create(b, loc, l, r, arith::FastMathFlags::afn);
  }

  /// Whether `op` is a window of `arg`'s columns (tsched::isColumnWindow)
  /// that a full tile of the layout reads (`cols` of them).
  bool isWindowOf(Operation *op, Value arg) const {
    if (!tsched::isColumnWindow(op) || op->getOperand(0) != arg)
      return false;
    auto out = cast<RankedTensorType>(op->getResult(0).getType());
    return out.getShape().back() == cols &&
           out.getNumElements() == rows * cols;
  }

  /// The stride in elements of each leading dim of the layout's rows in
  /// the row-major buffer on the other side of `t`: its operand's buffer
  /// (`input`: the layout is `t`'s result) or its result's (the layout is
  /// its operand).
  static SmallVector<int64_t> rowStridesOf(tg::TransposeOp t, bool input) {
    ArrayRef<int64_t> perm = t.getPermutation();
    ArrayRef<int64_t> shape =
        input ? t.getX().getType().getShape() : t.getType().getShape();
    SmallVector<int64_t> strides(shape.size(), 1);
    for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * shape[d + 1];
    SmallVector<int64_t> out(perm.size() - 1);
    for (size_t j = 0; j + 1 < perm.size(); ++j) {
      if (input)
        out[j] = strides[perm[j]]; // layout dim j is the operand's perm[j]
      else
        out[perm[j]] = strides[j]; // the operand's dim perm[j] is result j
    }
    return out;
  }

  /// The block's [BM, cols] tile of a layout whose leading dims `shape`
  /// (the last dim ignored) lie in `memref` (a buffer of as many
  /// elements) at `strides`, from column `at`: rows of one index of the
  /// other leading dims (a block divides the last one), read or written
  /// at [0, 0].
  Value permutedWindow(Value memref, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> strides, int64_t at, Location loc) {
    size_t k = strides.size();
    Value rest = rowStart;
    Value offset = index(at);
    for (size_t m = k; m-- > 0;) {
      Value i = arith::RemUIOp::create(b, loc, rest, index(shape[m]));
      rest = arith::DivUIOp::create(b, loc, rest, index(shape[m]));
      offset = arith::AddIOp::create(
          b, loc, offset, arith::MulIOp::create(b, loc, i, index(strides[m])));
    }
    Type elt = cast<MemRefType>(memref.getType()).getElementType();
    auto type = MemRefType::get(
        {bm, cols}, elt,
        StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                               {strides[k - 1], 1}));
    return memref::ReinterpretCastOp::create(
        b, loc, type, memref, OpFoldResult(offset),
        ArrayRef<OpFoldResult>{b.getIndexAttr(bm), b.getIndexAttr(cols)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(strides[k - 1]),
                               b.getIndexAttr(1)});
  }

  /// The [rows, cols] window of `memref` ([rows, C]) from column `at`.
  Value columnWindow(Value memref, int64_t at, Location loc) {
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0),
                                         b.getIndexAttr(at)};
    SmallVector<OpFoldResult> sizes = {b.getIndexAttr(rows),
                                       b.getIndexAttr(cols)};
    SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
    return memref::SubViewOp::create(b, loc, memref, offsets, sizes, strides);
  }

  Value castTo(RankedTensorType type, Value v, Location loc) {
    return tt::CastOp::create(b, loc, type, v, /*saturate=*/nullptr,
                              /*stochastic_round=*/nullptr, /*seed=*/Value());
  }

  /// A tile of `memref` as class `cls` reads it; a periodic value of
  /// `period` rows at the block's row modulo the period (whole blocks: the
  /// period is a multiple of the block's rows), then a full tile.
  Tile load(Value memref, Class cls, Type elt, Location loc,
            int64_t period = 0, bool atOrigin = false) {
    SmallVector<Value> at;
    switch (cls) {
    case Class::Full:
      // (A permuted window starts at the block's tile.)
      at = atOrigin ? SmallVector<Value>{index(0), index(0)}
                    : SmallVector<Value>{rowStart, colStart};
      break;
    case Class::Periodic:
      at = {arith::RemSIOp::create(b, loc, rowStart, index(period)),
            colStart};
      break;
    case Class::Row:
      at = {rowStart};
      break;
    case Class::Col:
      at = {colStart};
      break;
    case Class::Scalar:
    case Class::None:
      at = {index(0)};
      break;
    }
    Type stored = cast<MemRefType>(memref.getType()).getElementType();
    Value v = tt::LoadOp::create(b, loc, tileType(cls, stored), memref, at,
                                 /*mask=*/Value(), /*padding=*/nullptr,
                                 /*multicast=*/nullptr);
    if (elt.isInteger(1))
      v = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                splat(cls, stored, 0, loc));
    else if (isa<FloatType>(elt) && elt != f32)
      v = castTo(tileType(cls, f32), v, loc);
    return {v, cls == Class::Periodic ? Class::Full : cls};
  }

  void store(Tile t, Value memref, Type elt, Location loc,
             bool atOrigin = false) {
    Value v = t.value;
    Type stored = cast<MemRefType>(memref.getType()).getElementType();
    if (elt.isInteger(1))
      v = arith::ExtUIOp::create(b, loc, tileType(t.cls, stored), v);
    else if (stored != f32)
      v = castTo(tileType(t.cls, stored), v, loc);
    SmallVector<Value> at =
        atOrigin ? SmallVector<Value>{index(0), index(0)}
        : t.cls == Class::Full ? SmallVector<Value>{rowStart, colStart}
                               : SmallVector<Value>{rowStart};
    tt::StoreOp::create(b, loc, v, memref, at, Value());
  }

  /// The operands of `op` as tiles of one class (the join of theirs).
  std::pair<SmallVector<Value>, Class> operands(Operation *op,
                                                ValueRange values) {
    SmallVector<Tile> ts;
    for (Value v : values)
      ts.push_back(tiles.lookup(v));
    Class cls = join(ts);
    SmallVector<Value> out;
    for (Tile &t : ts)
      out.push_back(expand(t, cls, op->getLoc()));
    return {out, cls};
  }

  LogicalResult unsupported(Operation *op) {
    return op->emitError() << "'" << op->getName()
                           << "' in a row fusion group has no generated GPU "
                              "kernel";
  }

  LogicalResult lower(Operation *op);
  Value unary(Operation *op, Value x, Location loc);
  FailureOr<Value> binary(Operation *op, Value l, Value r, Location loc);
};

} // namespace mlir::tessera::group_kernels

#endif // TESSERA_CONVERSION_TSCHEDTOTTILE_GROUPKERNEL_H
