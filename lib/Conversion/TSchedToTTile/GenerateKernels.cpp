//===- GenerateKernels.cpp - Tile IR kernels for GPU fusion groups --------===//
//
// A row group's kernel: each program takes BM consecutive rows of the
// group's [R, C] layout and computes every op of the group on them in
// registers. Values are tiles of four shapes: a full [BM, BN] tile, a row
// statistic [BM], a column vector [BN] and a scalar [1]; an op whose
// operands differ broadcasts the smaller ones. This is what the Python
// planner wrote as tile-DSL source; here it is built as IR.
//
// A contraction group's kernel is a GEMM whose programs loop over output
// tiles [BM, BN] (a persistent grid when it is smaller than the tiles):
// the K loop accumulates in f32, then the group's epilogue runs on the
// accumulator with the same tile values as a row kernel's, at the tile's
// rows and columns, before the stores.
//
//===----------------------------------------------------------------------===//

#include "tessera/Conversion/Passes.h"
#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TSched/IR/GemmForm.h"
#include "tessera/Dialect/TSched/IR/RowLayout.h"
#include "tessera/Dialect/TSched/IR/TSched.h"
#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSCHEDGENERATEKERNELS
#include "tessera/Conversion/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;
namespace tg = mlir::tessera::tgraph;
namespace tt = mlir::tessera::ttile;

namespace {

/// How a value spreads over the rows a program holds (never None here).
using Class = tsched::RowClass;

struct Tile {
  Value value;
  Class cls;
};

/// A GEMM's schedule: the output tile, the K step, warps and the loads'
/// pipeline stages.
struct GemmSchedule {
  int64_t bm, bn, bk, warps, stages;
};

/// The tiles a GEMM of `form` is built with: of the candidates for its
/// operand type (wide tiles on the tensor cores, narrower ones for small
/// products; f32 on FMAs), the one that finishes first on `sms`
/// multiprocessors, counting waves of tiles and the lower throughput of
/// smaller tiles. A 128x256 tile keeps 128 f32 accumulators a thread: with
/// an epilogue beyond the final cast its temporaries spill (ptxas,
/// sm_90a), so it is only a candidate for plain products.
GemmSchedule chooseGemmSchedule(const tsched::GemmForm &form, int64_t sms,
                                bool plain) {
  struct Candidate {
    GemmSchedule s;
    double efficiency;
  };
  SmallVector<Candidate> candidates;
  if (form.operandType.isF32())
    candidates = {{{64, 64, 16, 4, 2}, 1.0},
                  {{128, 64, 16, 8, 2}, 1.0},
                  {{32, 64, 16, 4, 2}, 0.8}};
  else
    candidates = {{{128, 256, 64, 8, 4}, 1.0},
                  {{128, 128, 64, 8, 4}, 0.9},
                  {{64, 128, 64, 4, 4}, 0.75}};
  const Candidate *best = nullptr;
  double bestCost = 0;
  for (const Candidate &c : candidates) {
    if (c.s.bm * c.s.bn > 128 * 128 && !plain)
      continue;
    int64_t tiles =
        form.flat() ? llvm::divideCeil(form.z * form.m, c.s.bm) *
                          llvm::divideCeil(form.n, c.s.bn)
                    : form.z * llvm::divideCeil(form.m, c.s.bm) *
                          llvm::divideCeil(form.n, c.s.bn);
    double waves = double(llvm::divideCeil(std::max<int64_t>(tiles, 1), sms));
    double cost = waves * double(c.s.bm * c.s.bn) / c.efficiency;
    if (!best || cost < bestCost) {
      best = &c;
      bestCost = cost;
    }
  }
  return best->s;
}

class RowKernel {
public:
  RowKernel(tsched::GroupOp group, int64_t rows, int64_t cols,
            int64_t sms = 132)
      : group(group), b(group.getContext()), rows(rows), cols(cols) {
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
      GemmSchedule s = chooseGemmSchedule(*gemm, sms, plain);
      // The parts of the product's own schedule replace the chosen ones.
      if (auto user = gemmOp->getAttrOfType<tsched::ScheduleAttr>(
              tsched::TSchedDialect::kScheduleAttrName)) {
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
      }
      bm = s.bm;
      bn = s.bn;
      bk = s.bk;
      warps = s.warps;
      stages = s.stages;
      return;
    }
    bn = int64_t(llvm::PowerOf2Ceil(uint64_t(std::max<int64_t>(cols, 1))));
    bm = std::max<int64_t>(1, std::min<int64_t>(16, 4096 / bn));
    warps = bm * bn >= 4096 ? 8 : 4;
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

  /// Programs along x: one per row block, or per GEMM output tile.
  int64_t gridSize() const {
    if (!gemm)
      return llvm::divideCeil(rows, bm);
    return tileCount();
  }

  /// The kernel's schedule, as the group records it.
  tsched::ScheduleAttr scheduleAttr() {
    MLIRContext *ctx = group.getContext();
    if (gemm)
      return tsched::ScheduleAttr::get(ctx, {bm, bn}, bk, {}, 0, 0, warps,
                                       stages);
    return tsched::ScheduleAttr::get(ctx, {bm, bn}, 0, {}, 0, 0, warps, 0);
  }

  /// The class of a value of `shape` read from memory (right-aligned
  /// against the full shape, as broadcasting reads it).
  std::optional<Class> classify(ArrayRef<int64_t> shape) const {
    Class c = tsched::classifyInLayout(shape, full);
    if (c == Class::None)
      return std::nullopt;
    return c;
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
    // Inputs.
    for (auto [arg, input] :
         llvm::zip(entry->getArguments().take_front(body.getNumArguments()),
                   body.getArguments())) {
      auto type = cast<RankedTensorType>(input.getType());
      tiles[input] = load(arg, predicted.lookup(input), type.getElementType(),
                          loc, tsched::periodRows(type.getShape()));
    }
    for (Operation &op : body.without_terminator())
      if (failed(lower(&op)))
        return failure();
    // Outputs.
    auto yield = cast<tsched::YieldOp>(body.getTerminator());
    for (auto [value, arg] :
         llvm::zip(yield.getValues(),
                   entry->getArguments().drop_front(body.getNumArguments()))) {
      Tile t = tiles.lookup(value);
      Type elt = cast<RankedTensorType>(value.getType()).getElementType();
      assert(t.cls == predicted.lookup(value) && "class as predicted");
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
      std::optional<Class> cls = classify(type.getShape());
      if (gemm && cls == Class::Periodic)
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
      } else if (isa<tg::ConstantOp>(op)) {
        cls = Class::Scalar;
      } else if (isa<tg::FullOp, tg::ZerosLikeOp, tg::OnesLikeOp,
                     tg::IotaOp>(op)) {
        std::optional<Class> c = classify(type.getShape());
        if (!c)
          return unsupported(&op);
        // A constant repeated over the rows is a full tile.
        cls = *c == Class::Periodic ? Class::Full : *c;
      } else if (isa<tg::BroadcastInDimOp>(op)) {
        cls = Class::Full;
      } else if (isa<tg::ReduceSumOp, tg::ReduceMeanOp, tg::ReduceMaxOp,
                     tg::ReduceMinOp>(op)) {
        cls = Class::Row;
      } else {
        SmallVector<Tile> ts;
        for (Value v : op.getOperands())
          ts.push_back(Tile{Value(), predicted.lookup(v)});
        cls = join(ts);
      }
      predicted[op.getResult(0)] = cls;
    }
    for (Value v : body.getTerminator()->getOperands()) {
      Class cls = predicted.lookup(v);
      if (cls == Class::Col || cls == Class::Scalar)
        return group.emitOpError()
               << "yields a " << (cls == Class::Col ? "column" : "scalar")
               << " of its layout; a row kernel writes full tiles and rows";
    }
    return success();
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
    switch (predicted.lookup(v)) {
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
      return {tsched::periodRows(cast<RankedTensorType>(v.getType())
                                     .getShape()),
              cols};
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

  LogicalResult buildGemm(func::FuncOp kernel);
  Value batchIndex(Value z, ArrayRef<int64_t> operandBatch, Location loc);
  Value batchSlice(Value memref, Value z, Location loc);
  DenseMap<Value, Tile> tiles;
  DenseMap<Value, Class> predicted;

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

  Value castTo(RankedTensorType type, Value v, Location loc) {
    return tt::CastOp::create(b, loc, type, v, /*saturate=*/nullptr,
                              /*stochastic_round=*/nullptr, /*seed=*/Value());
  }

  /// A tile of `memref` as class `cls` reads it; a periodic value of
  /// `period` rows at the block's row modulo the period (whole blocks: the
  /// period is a multiple of the block's rows), then a full tile.
  Tile load(Value memref, Class cls, Type elt, Location loc,
            int64_t period = 0) {
    SmallVector<Value> at;
    switch (cls) {
    case Class::Full:
      at = {rowStart, colStart};
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

  void store(Tile t, Value memref, Type elt, Location loc) {
    Value v = t.value;
    Type stored = cast<MemRefType>(memref.getType()).getElementType();
    if (elt.isInteger(1))
      v = arith::ExtUIOp::create(b, loc, tileType(t.cls, stored), v);
    else if (stored != f32)
      v = castTo(tileType(t.cls, stored), v, loc);
    SmallVector<Value> at = t.cls == Class::Full
                                ? SmallVector<Value>{rowStart, colStart}
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

Value RowKernel::unary(Operation *op, Value x, Location loc) {
  Type type = x.getType();
  if (isa<IntegerType>(getElementTypeOrSelf(type))) {
    if (isa<tg::NegOp>(op)) {
      Value zero = arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(
              cast<ShapedType>(type),
              b.getIntegerAttr(getElementTypeOrSelf(type), 0)));
      return arith::SubIOp::create(b, loc, zero, x);
    }
    if (isa<tg::AbsOp>(op))
      return math::AbsIOp::create(b, loc, x);
    return Value();
  }
  auto one = [&] {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(cast<ShapedType>(type), b.getF32FloatAttr(1)));
  };
  auto num = [&](double v) {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(cast<ShapedType>(type),
                               b.getF32FloatAttr(float(v))));
  };
  // sigmoid(x) = (x >= 0 ? 1 : e) / (1 + e), e = exp(-|x|): nothing
  // overflows, and the divisor in [1, 2] keeps IEEE division on its fast
  // path.
  auto stableSigmoid = [&]() -> Value {
    Value e = math::ExpOp::create(
        b, loc, arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x)));
    Value nonNegative =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, x, num(0));
    Value top = arith::SelectOp::create(b, loc, nonNegative, one(), e);
    return divide(loc, top,
                                 arith::AddFOp::create(b, loc, one(), e));
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](tg::NegOp) { return arith::NegFOp::create(b, loc, x); })
      .Case([&](tg::AbsOp) { return math::AbsFOp::create(b, loc, x); })
      .Case([&](tg::ExpOp) { return math::ExpOp::create(b, loc, x); })
      .Case([&](tg::LogOp) { return math::LogOp::create(b, loc, x); })
      .Case([&](tg::Log1pOp) { return math::Log1pOp::create(b, loc, x); })
      .Case([&](tg::SinOp) { return math::SinOp::create(b, loc, x); })
      .Case([&](tg::CosOp) { return math::CosOp::create(b, loc, x); })
      .Case([&](tg::TanhOp) { return math::TanhOp::create(b, loc, x); })
      .Case([&](tg::ErfOp) { return math::ErfOp::create(b, loc, x); })
      .Case([&](tg::SqrtOp) { return math::SqrtOp::create(b, loc, x); })
      .Case([&](tg::RsqrtOp) { return math::RsqrtOp::create(b, loc, x); })
      .Case([&](tg::FloorOp) { return math::FloorOp::create(b, loc, x); })
      .Case([&](tg::SquareOp) { return arith::MulFOp::create(b, loc, x, x); })
      .Case([&](tg::ReciprocalOp) {
        return divide(loc, one(), x);
      })
      .Case([&](tg::ReluOp) {
        return arith::MaximumFOp::create(b, loc, x, num(0));
      })
      .Case([&](tg::SigmoidOp) { return stableSigmoid(); })
      .Case([&](tg::SiluOp) {
        return arith::MulFOp::create(b, loc, x, stableSigmoid());
      })
      .Case([&](tg::GeluOp gelu) -> Value {
        Value half = arith::MulFOp::create(b, loc, num(0.5), x);
        Value inner;
        if (gelu.getApproximate()) {
          Value x3 = arith::MulFOp::create(
              b, loc, arith::MulFOp::create(b, loc, x, x), x);
          Value poly = arith::AddFOp::create(
              b, loc, x, arith::MulFOp::create(b, loc, num(0.044715), x3));
          inner = math::TanhOp::create(
              b, loc,
              arith::MulFOp::create(b, loc, num(0.7978845608028654), poly));
        } else {
          inner = math::ErfOp::create(
              b, loc,
              arith::MulFOp::create(b, loc, x, num(0.7071067811865476)));
        }
        return arith::MulFOp::create(b, loc, half,
                                     arith::AddFOp::create(b, loc, one(), inner));
      })
      .Case([&](tg::SignOp) -> Value {
        Value zero = num(0);
        Value pos = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                                          zero);
        Value neg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                          zero);
        Value s = arith::SelectOp::create(b, loc, neg, num(-1), x);
        return arith::SelectOp::create(b, loc, pos, one(), s);
      })
      .Default([&](Operation *) { return Value(); });
}

FailureOr<Value> RowKernel::binary(Operation *op, Value l, Value r,
                                   Location loc) {
  if (isa<IntegerType>(getElementTypeOrSelf(l.getType()))) {
    Value out = llvm::TypeSwitch<Operation *, Value>(op)
                    .Case([&](tg::AddOp) {
                      return arith::AddIOp::create(b, loc, l, r);
                    })
                    .Case([&](tg::SubOp) {
                      return arith::SubIOp::create(b, loc, l, r);
                    })
                    .Case([&](tg::MulOp) {
                      return arith::MulIOp::create(b, loc, l, r);
                    })
                    .Case([&](tg::MaxOp) {
                      return arith::MaxSIOp::create(b, loc, l, r);
                    })
                    .Case([&](tg::MinOp) {
                      return arith::MinSIOp::create(b, loc, l, r);
                    })
                    .Default([&](Operation *) { return Value(); });
    if (!out)
      return failure();
    return out;
  }
  Value out = llvm::TypeSwitch<Operation *, Value>(op)
                  .Case([&](tg::AddOp) {
                    return arith::AddFOp::create(b, loc, l, r);
                  })
                  .Case([&](tg::SubOp) {
                    return arith::SubFOp::create(b, loc, l, r);
                  })
                  .Case([&](tg::MulOp) {
                    return arith::MulFOp::create(b, loc, l, r);
                  })
                  .Case([&](tg::DivOp) {
                    return divide(loc, l, r);
                  })
                  .Case([&](tg::MaxOp) {
                    return arith::MaximumFOp::create(b, loc, l, r);
                  })
                  .Case([&](tg::MinOp) {
                    return arith::MinimumFOp::create(b, loc, l, r);
                  })
                  .Case([&](tg::PowOp) {
                    return math::PowFOp::create(b, loc, l, r);
                  })
                  .Default([&](Operation *) { return Value(); });
  if (!out)
    return failure();
  return out;
}

LogicalResult RowKernel::lower(Operation *op) {
  Location loc = op->getLoc();
  auto result = [&](Value v, Class cls) {
    tiles[op->getResult(0)] = Tile{v, cls};
    return success();
  };
  if (auto c = dyn_cast<tg::ConstantOp>(op)) {
    auto value = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!value || value.getNumElements() != 1)
      return unsupported(op);
    Type elt = value.getElementType();
    if (elt.isInteger(1))
      return result(splat(Class::Scalar, elt,
                          value.getSplatValue<APInt>().getBoolValue(), loc),
                    Class::Scalar);
    if (isa<FloatType>(elt))
      return result(
          splat(Class::Scalar, f32,
                value.getSplatValue<APFloat>().convertToDouble(), loc),
          Class::Scalar);
    if (elt.isInteger(32) || elt.isInteger(64))
      return result(
          splat(Class::Scalar, elt,
                double(value.getSplatValue<APInt>().getSExtValue()), loc),
          Class::Scalar);
    return unsupported(op);
  }
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Type resultElt = resultType.getElementType();
  if (!resultElt.isInteger(1) && !resultElt.isInteger(32) &&
      !resultElt.isInteger(64) &&
      !isa<Float32Type, BFloat16Type, Float16Type>(resultElt))
    return op->emitError() << "a generated GPU kernel computes f32, bf16, "
                              "f16, i32, i64 and i1 values, not "
                           << resultElt;
  // Floats are computed in f32, integers in their own type.
  Type computeElt = isa<FloatType>(resultElt) ? f32 : resultElt;
  if (auto full = dyn_cast<tg::FullOp>(op)) {
    auto value = dyn_cast<TypedAttr>(full.getValue());
    double v = 0;
    if (auto f = dyn_cast_if_present<FloatAttr>(value))
      v = f.getValueAsDouble();
    else if (auto i = dyn_cast_if_present<IntegerAttr>(value))
      v = double(i.getValue().getSExtValue());
    else
      return unsupported(op);
    std::optional<Class> cls = classify(resultType.getShape());
    if (!cls)
      return unsupported(op);
    if (*cls == Class::Periodic)
      cls = Class::Full;
    return result(splat(*cls, computeElt, v, loc), *cls);
  }
  if (auto iota = dyn_cast<tg::IotaOp>(op)) {
    if (classify(resultType.getShape()) != Class::Full ||
        resultElt.isInteger(1))
      return unsupported(op);
    int64_t dim = int64_t(iota.getDim());
    int64_t rank = resultType.getRank();
    auto i32Tile = RankedTensorType::get({bm, bn}, b.getI32Type());
    Value idx;
    if (dim == rank - 1) {
      idx = tt::IotaOp::create(b, loc, i32Tile, b.getI32IntegerAttr(1));
      if (gemm) {
        Value start = arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                                 colStart);
        idx = arith::AddIOp::create(
            b, loc, idx, tensor::SplatOp::create(b, loc, i32Tile, start));
      }
    } else {
      // The global row, then its index along `dim`.
      Value row = tt::IotaOp::create(b, loc, i32Tile, b.getI32IntegerAttr(0));
      Value start = arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                               globalRow);
      Value startTile = tensor::SplatOp::create(b, loc, i32Tile, start);
      row = arith::AddIOp::create(b, loc, row, startTile);
      int64_t inner = tsched::numElements(resultType.getShape().slice(dim + 1,
                                                          rank - dim - 2));
      auto c = [&](int64_t v) {
        return arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(i32Tile, b.getI32IntegerAttr(int32_t(v))));
      };
      idx = arith::RemSIOp::create(
          b, loc, arith::DivSIOp::create(b, loc, row, c(inner)),
          c(resultType.getShape()[dim]));
    }
    auto type = RankedTensorType::get({bm, bn}, computeElt);
    if (isa<FloatType>(computeElt))
      return result(arith::SIToFPOp::create(b, loc, type, idx), Class::Full);
    if (computeElt.isInteger(64))
      return result(arith::ExtSIOp::create(b, loc, type, idx), Class::Full);
    return result(idx, Class::Full);
  }
  if (isa<tg::ZerosLikeOp, tg::OnesLikeOp>(op)) {
    std::optional<Class> cls = classify(resultType.getShape());
    if (!cls || resultElt.isInteger(1))
      return unsupported(op);
    if (*cls == Class::Periodic)
      cls = Class::Full;
    return result(
        splat(*cls, computeElt, isa<tg::OnesLikeOp>(op) ? 1 : 0, loc), *cls);
  }
  if (auto bcast = dyn_cast<tg::BroadcastInDimOp>(op)) {
    Tile src = tiles.lookup(bcast.getX());
    std::optional<Class> cls = classify(resultType.getShape());
    if (cls != Class::Full)
      return unsupported(op);
    return result(expand(src, Class::Full, loc), Class::Full);
  }
  if (isa<tg::ReduceSumOp, tg::ReduceMeanOp, tg::ReduceMaxOp,
          tg::ReduceMinOp>(op)) {
    Tile src = tiles.lookup(op->getOperand(0));
    if (src.cls != Class::Full)
      return unsupported(op);
    tt::ReduceKind kind = isa<tg::ReduceMaxOp>(op)   ? tt::ReduceKind::max
                          : isa<tg::ReduceMinOp>(op) ? tt::ReduceKind::min
                                                     : tt::ReduceKind::sum;
    Value x = src.value;
    if (colMask) {
      double neutral = kind == tt::ReduceKind::max
                           ? -std::numeric_limits<double>::infinity()
                       : kind == tt::ReduceKind::min
                           ? std::numeric_limits<double>::infinity()
                           : 0.0;
      x = arith::SelectOp::create(b, loc, colMask, x,
                                  splat(Class::Full, f32, neutral, loc));
    }
    Value red = tt::ReduceOp::create(
        b, loc, tileType(Class::Row, f32),
        tt::ReduceKindAttr::get(b.getContext(), kind), x,
        b.getI32IntegerAttr(1));
    if (isa<tg::ReduceMeanOp>(op))
      red = divide(loc, red,
                                  splat(Class::Row, f32, double(cols), loc));
    return result(red, Class::Row);
  }
  if (auto cmp = dyn_cast<tg::CompareOp>(op)) {
    auto [vals, cls] = operands(op, op->getOperands());
    Type operandElt = getElementTypeOrSelf(vals[0].getType());
    if (operandElt.isInteger(32) || operandElt.isInteger(64)) {
      arith::CmpIPredicate ipred;
      switch (cmp.getDirection()) {
      case tg::CompareDirection::eq:
        ipred = arith::CmpIPredicate::eq;
        break;
      case tg::CompareDirection::ne:
        ipred = arith::CmpIPredicate::ne;
        break;
      case tg::CompareDirection::lt:
        ipred = arith::CmpIPredicate::slt;
        break;
      case tg::CompareDirection::le:
        ipred = arith::CmpIPredicate::sle;
        break;
      case tg::CompareDirection::gt:
        ipred = arith::CmpIPredicate::sgt;
        break;
      case tg::CompareDirection::ge:
        ipred = arith::CmpIPredicate::sge;
        break;
      }
      return result(arith::CmpIOp::create(b, loc, ipred, vals[0], vals[1]),
                    cls);
    }
    if (!isa<FloatType>(operandElt))
      return unsupported(op);
    arith::CmpFPredicate pred;
    switch (cmp.getDirection()) {
    case tg::CompareDirection::eq:
      pred = arith::CmpFPredicate::OEQ;
      break;
    case tg::CompareDirection::ne:
      pred = arith::CmpFPredicate::UNE;
      break;
    case tg::CompareDirection::lt:
      pred = arith::CmpFPredicate::OLT;
      break;
    case tg::CompareDirection::le:
      pred = arith::CmpFPredicate::OLE;
      break;
    case tg::CompareDirection::gt:
      pred = arith::CmpFPredicate::OGT;
      break;
    case tg::CompareDirection::ge:
      pred = arith::CmpFPredicate::OGE;
      break;
    }
    return result(arith::CmpFOp::create(b, loc, pred, vals[0], vals[1]), cls);
  }
  if (isa<tg::SelectOp>(op)) {
    auto [vals, cls] = operands(op, op->getOperands());
    return result(arith::SelectOp::create(b, loc, vals[0], vals[1], vals[2]),
                  cls);
  }
  if (auto cast = dyn_cast<tg::CastOp>(op)) {
    Tile src = tiles.lookup(cast.getX());
    Type from = getElementTypeOrSelf(src.value.getType());
    bool fromInt = from.isInteger(32) || from.isInteger(64);
    bool toInt = resultElt.isInteger(32) || resultElt.isInteger(64);
    if (fromInt || toInt) {
      RankedTensorType to = tileType(src.cls, computeElt);
      if (fromInt && toInt) {
        if (from == computeElt)
          return result(src.value, src.cls);
        return result(from.getIntOrFloatBitWidth() < 64
                          ? Value(arith::ExtSIOp::create(b, loc, to, src.value))
                          : Value(arith::TruncIOp::create(b, loc, to,
                                                          src.value)),
                      src.cls);
      }
      if (fromInt && isa<FloatType>(computeElt)) {
        Value f = arith::SIToFPOp::create(b, loc, to, src.value);
        if (resultElt != f32)
          f = castTo(to, castTo(tileType(src.cls, resultElt), f, loc), loc);
        return result(f, src.cls);
      }
      if (toInt && isa<FloatType>(from))
        return result(arith::FPToSIOp::create(b, loc, to, src.value),
                      src.cls);
      return unsupported(op);
    }
    if (resultElt.isInteger(1)) {
      if (from.isInteger(1))
        return result(src.value, src.cls);
      return result(arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE,
                                          src.value,
                                          splat(src.cls, f32, 0, loc)),
                    src.cls);
    }
    if (from.isInteger(1))
      return result(arith::SelectOp::create(b, loc, src.value,
                                            splat(src.cls, f32, 1, loc),
                                            splat(src.cls, f32, 0, loc)),
                    src.cls);
    if (resultElt == f32)
      return result(src.value, src.cls);
    // Round to bf16 or f16, computed on in f32.
    Value narrow = castTo(tileType(src.cls, resultElt), src.value, loc);
    return result(castTo(tileType(src.cls, f32), narrow, loc), src.cls);
  }
  if (op->getNumOperands() == 1 && op->getNumResults() == 1) {
    Tile src = tiles.lookup(op->getOperand(0));
    if (Value v = unary(op, src.value, loc))
      return result(v, src.cls);
    return unsupported(op);
  }
  if (op->getNumOperands() == 2 && op->getNumResults() == 1) {
    auto [vals, cls] = operands(op, op->getOperands());
    FailureOr<Value> v = binary(op, vals[0], vals[1], loc);
    if (failed(v))
      return unsupported(op);
    return result(*v, cls);
  }
  return unsupported(op);
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

LogicalResult RowKernel::buildGemm(func::FuncOp kernel) {
  const tsched::GemmForm &g = *gemm;
  Block &body = group.getBodyBlock();
  Location loc = gemmOp->getLoc();
  Block *entry = kernel.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto argOf = [&](Value v) {
    return entry->getArgument(cast<BlockArgument>(v).getArgNumber());
  };
  bool batched = !g.flat();
  int64_t m = batched ? g.m : g.z * g.m;
  int64_t tilesM = llvm::divideCeil(m, bm), tilesN = llvm::divideCeil(g.n, bn);
  int64_t perBatch = tilesM * tilesN;
  // Each program takes output tile program_id, then every num_programs-th.
  Value pid = tt::ProgramIdOp::create(b, loc, b.getIndexType(),
                                      b.getI32IntegerAttr(0));
  Value programs = tt::NumProgramsOp::create(b, loc, b.getIndexType(),
                                             b.getI32IntegerAttr(0));
  auto tilesLoop = tt::RangeOp::create(b, loc, TypeRange(), pid,
                                       index(tileCount()), programs,
                                       ValueRange(), b.getI32IntegerAttr(1));
  Block *tileBody = b.createBlock(&tilesLoop.getBody(), {},
                                  {b.getIndexType()}, {loc});
  b.setInsertionPointToStart(tileBody);
  Value t = tileBody->getArgument(0);
  Value z = index(0);
  if (batched) {
    z = arith::DivSIOp::create(b, loc, t, index(perBatch));
    t = arith::SubIOp::create(b, loc, t,
                              arith::MulIOp::create(b, loc, z,
                                                    index(perBatch)));
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

  Value aMem = argOf(gemmOp->getOperand(0));
  Value bMem = argOf(gemmOp->getOperand(1));
  if (batched) {
    aMem = batchSlice(aMem, batchIndex(z, g.aBatch, loc), loc);
    bMem = batchSlice(bMem, batchIndex(z, g.bBatch, loc), loc);
  }
  // The K loop: acc += op(A tile) @ op(B tile), the loads `stages - 1`
  // steps ahead.
  auto accType = RankedTensorType::get({bm, bn}, f32);
  Value zeros = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0)));
  auto kLoop = tt::RangeOp::create(b, loc, TypeRange{accType}, index(0),
                                   index(g.k), index(bk), ValueRange{zeros},
                                   b.getI32IntegerAttr(int32_t(stages)));
  Block *kBody = b.createBlock(&kLoop.getBody(), {},
                               {b.getIndexType(), accType}, {loc, loc});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(kBody);
    Value kk = kBody->getArgument(0);
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
  tiles[gemmOp->getResult(0)] = Tile{kLoop.getResult(0), Class::Full};

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
       llvm::zip(yield.getValues(),
                 entry->getArguments().drop_front(body.getNumArguments()))) {
    Tile tv = tiles.lookup(value);
    Type elt = cast<RankedTensorType>(value.getType()).getElementType();
    store(tv, viewFor(arg, tv.cls), elt, loc);
  }
  tt::YieldOp::create(b, loc);
  b.setInsertionPointAfter(tilesLoop);
  func::ReturnOp::create(b, loc);
  return success();
}

struct TSchedGenerateKernelsPass
    : mlir::tessera::impl::TSchedGenerateKernelsBase<
          TSchedGenerateKernelsPass> {
  using TSchedGenerateKernelsBase::TSchedGenerateKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> fns(module.getOps<func::FuncOp>());
    for (func::FuncOp fn : fns) {
      if (fn->hasAttr("ttile.kernel"))
        continue;
      int64_t rowCount = 0, gemmCount = 0;
      WalkResult walk = fn.walk([&](tsched::GroupOp group) {
        bool row = group.getKind() == tsched::GroupKind::Row;
        if ((!row && group.getKind() != tsched::GroupKind::Contraction) ||
            !group.getLayout())
          return WalkResult::advance();
        ArrayRef<int64_t> layout = *group.getLayout();
        RowKernel gen(group, layout[0], layout[1], multiprocessors);
        if (gen.badContraction()) {
          group.emitOpError() << "is a contraction group whose first op is "
                                 "not a GEMM the GPU generates";
          return WalkResult::interrupt();
        }
        if (failed(gen.checkSchedule()))
          return WalkResult::interrupt();
        gen.findFullShape();
        if (failed(gen.predictClasses()))
          return WalkResult::interrupt();
        // The kernel's signature: a memref per input, then per output.
        SmallVector<Type> args;
        SmallVector<Attribute> views;
        OpBuilder b(module.getBodyRegion());
        Block &body = group.getBodyBlock();
        for (Value v : llvm::concat<Value>(
                 body.getArguments(), body.getTerminator()->getOperands())) {
          args.push_back(gen.memrefFor(v));
          views.push_back(b.getDenseI64ArrayAttr(gen.viewOf(v)));
        }
        b.setInsertionPointToEnd(module.getBody());
        // A PTX identifier: letters, digits and '_' (unique in the module).
        std::string name =
            (fn.getName() + (row ? "_row" : "_gemm") +
             std::to_string(row ? rowCount++ : gemmCount++))
                .str();
        for (char &c : name)
          if (!llvm::isAlnum(c) && c != '_')
            c = '_';
        auto kernel = func::FuncOp::create(b, group.getLoc(), name,
                                           b.getFunctionType(args, {}));
        symbols.insert(kernel);
        if (failed(gen.build(kernel))) {
          kernel.erase();
          return WalkResult::interrupt();
        }
        kernel->setAttr("ttile.kernel", b.getUnitAttr());
        kernel->setAttr("ttile.num_warps",
                        b.getI32IntegerAttr(int32_t(gen.numWarps())));
        group->setAttr("tsched.kernel",
                       FlatSymbolRefAttr::get(kernel.getSymNameAttr()));
        group->setAttr("tsched.grid",
                       b.getDenseI64ArrayAttr({gen.gridSize()}));
        group->setAttr(tsched::TSchedDialect::kScheduleAttrName,
                       gen.scheduleAttr());
        group->setAttr("tsched.views", b.getArrayAttr(views));
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
    }
  }
};

} // namespace
