//===- CPUScheduler.cpp - Transform scripts for linalg ops
//-----------------===//
//
// Every linalg op on tensors gets a schedule (its `tsched.schedule`
// attribute completed with defaults), written out as transform-dialect
// text: one block of transform ops per payload op, which finds its op by a
// `tsched.id` attribute. Contractions get packed register tiles, ops whose
// innermost loop is a reduction get lane partials, the others vectors along
// the innermost loop; row-fused groups share one loop over rows.
//
//===----------------------------------------------------------------------===//

#include "CPUScheduler.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::tessera::tsched;

namespace {

/// "[1, 0, 16]"
std::string list(ArrayRef<int64_t> v) {
  return "[" +
         llvm::join(
             llvm::map_range(v, [](int64_t x) { return std::to_string(x); }),
             ", ") +
         "]";
}

/// Writes the transform ops of one payload op. Handles are named
/// %o<id>_<n> so blocks of different ops never clash.
class ScriptWriter {
public:
  ScriptWriter(std::string &out, int64_t id) : os(out), id(id) {}

  std::string fresh() { return llvm::formatv("%o{0}_{1}", id, next++).str(); }

  /// The handle to the payload op (split off the scheduled ops at the
  /// start of the script).
  std::string matchOp() const { return opHandle(id); }

  void line(const Twine &text) { os += ("    " + text + "\n").str(); }

  /// Tiles `handle` with scf.for loops by `sizes` (optionally in `order`):
  /// the tiled op's handle and the loops' (`%x`, or `%x#i` for the i-th
  /// when there are several). The first loop's handle is typed scf.for
  /// when `forLoop` (loop transforms need that).
  std::pair<std::string, std::string> tileUsingFor(const std::string &handle,
                                                   ArrayRef<int64_t> sizes,
                                                   ArrayRef<int64_t> order = {},
                                                   bool forLoop = false) {
    int64_t count = llvm::count_if(sizes, [](int64_t x) { return x != 0; });
    std::string tiled = fresh(), loops = fresh(), types;
    for (int64_t i = 0; i < count; ++i)
      types += i == 0 && forLoop ? ", !transform.op<\"scf.for\">"
                                 : ", !transform.any_op";
    line(tiled + ", " + loops + (count > 1 ? ":" + std::to_string(count) : "") +
         " = transform.structured.tile_using_for " + handle + " tile_sizes " +
         list(sizes) + (order.empty() ? "" : " interchange = " + list(order)) +
         " : (!transform.any_op) -> (!transform.any_op" + types + ")");
    return {tiled, loops};
  }

  std::string &os;
  int64_t id;
  int next = 0;
};

/// The schedule of one op: the attribute's parts, defaults for the rest.
struct Schedule {
  int64_t blockM = 0, blockN = 0, k = 0, tileM = 0, tileN = 0, vector = 0,
          threads = 0;
};

Schedule scheduleOf(Operation *op) {
  Schedule s;
  auto attr = op->getAttrOfType<ScheduleAttr>(TSchedDialect::kScheduleAttrName);
  if (!attr)
    return s;
  if (!attr.getBlock().empty()) {
    s.blockM = attr.getBlock()[0];
    s.blockN = attr.getBlock()[1];
  }
  if (!attr.getTile().empty()) {
    s.tileM = attr.getTile()[0];
    s.tileN = attr.getTile()[1];
  }
  s.k = attr.getK();
  s.vector = attr.getVector();
  s.threads = attr.getThreads();
  return s;
}

/// The widest element type among the operands of `op`, in bytes.
int64_t widestElementBytes(linalg::LinalgOp op) {
  int64_t bytes = 1;
  for (OpOperand &o : op->getOpOperands()) {
    Type t = getElementTypeOrSelf(o.get().getType());
    if (t.isIntOrFloat())
      bytes = std::max<int64_t>(bytes, (t.getIntOrFloatBitWidth() + 7) / 8);
  }
  return bytes;
}

/// Positions of the loops of `op` that the operand's map uses, in the
/// order of the operand's dims (-1 for a non-dim expression).
SmallVector<int64_t> operandLoops(linalg::LinalgOp op, OpOperand &operand) {
  SmallVector<int64_t> dims;
  for (AffineExpr e : op.getMatchingIndexingMap(&operand).getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    dims.push_back(d ? int64_t(d.getPosition()) : -1);
  }
  return dims;
}

} // namespace

namespace mlir::tessera::tsched {

std::string opHandle(int64_t id) { return "%op" + std::to_string(id); }

std::string matchScheduledOps(int64_t count) {
  if (count == 0)
    return "";
  std::string handles, types;
  for (int64_t id = 0; id < count; ++id) {
    handles += (id ? ", " : "") + opHandle(id);
    types += id ? ", !transform.any_op" : "!transform.any_op";
  }
  return "    %scheduled = transform.structured.match attributes{" +
         kScheduledAttr.str() +
         "} in %root : (!transform.any_op) -> !transform.any_op\n    " +
         handles + " = transform.split_handle %scheduled : "
                   "(!transform.any_op) -> (" +
         types + ")\n";
}

class CPUScheduler::Impl {
public:
  explicit Impl(int64_t vectorBytes) : vectorBytes(vectorBytes) {}

  /// Whether `op` gets the packed contraction schedule.
  /// An op with a loop of static size 0 does no work: it is left to the
  /// plain lowering (tiling a zero-size loop is not defined upstream).
  static bool hasEmptyLoop(linalg::LinalgOp op) {
    return llvm::is_contained(op.getStaticLoopRanges(), 0);
  }

  bool isGemm(linalg::LinalgOp op) {
    if (!op.hasPureTensorSemantics() || hasEmptyLoop(op))
      return false;
    Schedule s = withDefaults(op);
    return gemmShape(op, s).has_value();
  }

  /// Appends the script of `op` (tagged with `id`); false when the op is
  /// left alone.
  bool schedule(linalg::LinalgOp op, int64_t id, std::string &script) {
    if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 ||
        hasEmptyLoop(op))
      return false;
    // Transposes of the innermost dims are left to the data movement pass,
    // which splits them into 16-row parallel tiles transposed in registers.
    if (auto t = dyn_cast<linalg::TransposeOp>(op.getOperation()))
      if (t.getPermutation().size() == 2 && isRegisterTransposable(t, 16))
        return false;
    Schedule s = withDefaults(op);
    ScriptWriter w(script, id);
    w.line("// " + op->getName().getStringRef() + " (id " + Twine(id) + ")");
    if (gemm(op, s, w))
      return true;
    if (innerReduction(op, s, w))
      return true;
    if (innerParallel(op, s, w))
      return true;
    return parallelOnly(op, s, w);
  }

  /// Whether `op` can lead or join a row-fused group: not a packed
  /// contraction, first loop parallel.
  bool fusible(linalg::LinalgOp op) {
    if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 ||
        hasEmptyLoop(op) || isGemm(op))
      return false;
    return op.getIteratorTypesArray()[0] == utils::IteratorType::parallel;
  }

  /// Appends the vector schedule of `op`, one row of a row-fused group.
  void scheduleRowOp(linalg::LinalgOp op, int64_t id, std::string &script) {
    if (isa<linalg::FillOp>(op) || hasEmptyLoop(op))
      return;
    ScriptWriter w(script, id);
    w.line("// row of " + op->getName().getStringRef() + " (id " + Twine(id) +
           ")");
    std::string h = w.matchOp();
    Schedule s = withDefaults(op);
    if (!innerReduction(op, s, w, &h))
      innerParallel(op, s, w, &h);
  }

  bool usedPacking = false;

private:
  int64_t vectorBytes;

  static SmallVector<utils::IteratorType> iterators(linalg::LinalgOp op) {
    return op.getIteratorTypesArray();
  }

  /// Tiles the leading parallel loops with scf.forall: each parallel loop
  /// other than the innermost one with size 1 (or `threads` chunks of the
  /// first), or chunks of `chunk` when only the innermost loop is parallel.
  /// Returns the tile sizes used (0: not distributed).
  SmallVector<int64_t> distribute(linalg::LinalgOp op, const Schedule &s,
                                  ScriptWriter &w, std::string &handle,
                                  int64_t chunk) {
    auto its = iterators(op);
    int64_t n = its.size();
    SmallVector<int64_t> sizes(n, 0);
    bool any = false;
    for (int64_t d = 0; d + 1 < n; ++d)
      if (its[d] == utils::IteratorType::parallel) {
        sizes[d] = 1;
        any = true;
      }
    if (!any && its[n - 1] == utils::IteratorType::parallel) {
      // A static size of at most one chunk stays whole (one task; a
      // min(chunk, size) tile would lose its static size).
      int64_t size = op.getStaticLoopRanges()[n - 1];
      if (!ShapedType::isDynamic(size) && size <= chunk)
        return SmallVector<int64_t>(n, 0);
      sizes[n - 1] = chunk;
      any = true;
    }
    if (!any)
      return SmallVector<int64_t>(n, 0);
    std::string tiled = w.fresh(), forall = w.fresh();
    if (s.threads) {
      // `threads` chunks of the first distributed loop, the others whole.
      SmallVector<int64_t> counts(n, 0);
      for (int64_t d = 0; d < n; ++d)
        if (sizes[d]) {
          counts[d] = s.threads;
          break;
        }
      w.line(
          tiled + ", " + forall + " = transform.structured.tile_using_forall " +
          handle + " num_threads " + list(counts) +
          " : (!transform.any_op) -> (!transform.any_op, !transform.any_op)");
      handle = tiled;
      // The tiles are no longer of size 1: nothing is known statically.
      return SmallVector<int64_t>(n, 0);
    }
    w.line(tiled + ", " + forall +
           " = transform.structured.tile_using_forall " + handle +
           " tile_sizes " + list(sizes) +
           " : (!transform.any_op) -> (!transform.any_op, !transform.any_op)");
    handle = tiled;
    return sizes;
  }

  //===------------------------------------------------------------------===//
  // Contractions: packed register tiles, cache blocks, a vector micro-kernel
  //===------------------------------------------------------------------===//

  /// The schedule of `op` with every part filled in.
  Schedule withDefaults(linalg::LinalgOp op) {
    Schedule s = scheduleOf(op);
    int64_t lanes = vectorBytes / widestElementBytes(op);
    if (!s.vector)
      s.vector = lanes;
    // Contractions: NR = two vectors, MR rows of accumulators.
    if (!s.tileN)
      s.tileN = 2 * s.vector;
    if (!s.tileM)
      s.tileM = vectorBytes >= 64 ? 8 : 6;
    if (!s.blockM)
      s.blockM = s.tileM * 16;
    if (!s.blockN)
      s.blockN = s.tileN * 8;
    if (!s.k)
      s.k = 256;
    return s;
  }

  /// The M, N, K loops of a contraction the packed schedule handles.
  std::optional<linalg::ContractionDimensions> gemmShape(linalg::LinalgOp op,
                                                         const Schedule &s) {
    if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
        !linalg::isaContractionOpInterface(op))
      return std::nullopt;
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
        dims->k.size() != 1)
      return std::nullopt;
    // Every operand must index its dims with plain loop indices.
    for (OpOperand &o : op->getOpOperands())
      if (llvm::is_contained(operandLoops(op, o), -1) ||
          !op.getMatchingIndexingMap(&o).isProjectedPermutation())
        return std::nullopt;
    if (s.blockM % s.tileM || s.blockN % s.tileN)
      return std::nullopt;
    return *dims;
  }

  bool gemm(linalg::LinalgOp op, Schedule s, ScriptWriter &w) {
    std::optional<linalg::ContractionDimensions> dims = gemmShape(op, s);
    if (!dims)
      return false;
    int64_t m = dims->m[0], n = dims->n[0], k = dims->k[0];
    int64_t loops = op.getNumLoops();

    SmallVector<int64_t> packed(loops, 0);
    packed[m] = s.tileM;
    packed[n] = s.tileN;
    // K is not tiled: the inner tiles are MR rows of A and NR columns of
    // B, read as 1-D vectors.
    std::string h = w.matchOp();
    std::string p = w.fresh();
    w.line(p + " = transform.structured.pack " + h +
           " packed_sizes = " + list(packed) +
           " : (!transform.any_op) -> !transform.op<\"linalg.generic\">");
    // Outer dims of each packed input in the order the micro-kernel walks
    // them: A as (.., M, K), B as (.., N, K), so one register tile of each
    // is contiguous over K.
    for (int64_t input = 0; input < 2; ++input) {
      SmallVector<int64_t> ls = operandLoops(op, *op.getDpsInputOperand(input));
      int64_t free = llvm::is_contained(ls, m) ? m : n;
      auto posFree = llvm::find(ls, free) - ls.begin();
      auto posK = llvm::find(ls, k) - ls.begin();
      if (posFree < posK)
        continue;
      SmallVector<int64_t> perm = llvm::to_vector(
          llvm::seq<int64_t>(0, static_cast<int64_t>(ls.size())));
      std::swap(perm[posFree], perm[posK]);
      std::string pk = w.fresh(), pk2 = w.fresh(), p2 = w.fresh(),
                  un = w.fresh();
      w.line(pk + " = transform.get_producer_of_operand " + p + "[" +
             Twine(input) +
             "] : (!transform.op<\"linalg.generic\">) -> "
             "!transform.op<\"linalg.pack\">");
      w.line(p2 + ", " + pk2 + ", " + un +
             " = transform.structured.pack_transpose " + pk +
             " with_compute_op(" + p + ") outer_perm = " + list(perm) +
             " : (!transform.op<\"linalg.pack\">, "
             "!transform.op<\"linalg.generic\">) -> "
             "(!transform.op<\"linalg.generic\">, "
             "!transform.op<\"linalg.pack\">, !transform.any_op)");
      p = p2;
    }
    usedPacking = true;
    // Packed loops: the original ones, then MR and NR.
    int64_t packedLoops = loops + 2;
    std::string fill = w.fresh();
    w.line(fill + " = transform.get_producer_of_operand " + p +
           "[2] : (!transform.op<\"linalg.generic\">) -> !transform.any_op");
    // Cache blocks of C over threads.
    SmallVector<int64_t> blocks(packedLoops, 0);
    for (unsigned b : dims->batch)
      blocks[b] = 1;
    blocks[m] = s.blockM / s.tileM;
    blocks[n] = s.blockN / s.tileN;
    std::string t0 = w.fresh(), forall = w.fresh();
    if (s.threads) {
      SmallVector<int64_t> counts(packedLoops, 0);
      counts[m] = s.threads;
      w.line(t0 + ", " + forall + " = transform.structured.tile_using_forall " +
             p + " num_threads " + list(counts) +
             " : (!transform.op<\"linalg.generic\">) -> (!transform.any_op, "
             "!transform.any_op)");
    } else {
      w.line(t0 + ", " + forall + " = transform.structured.tile_using_forall " +
             p + " tile_sizes " + list(blocks) +
             " : (!transform.op<\"linalg.generic\">) -> (!transform.any_op, "
             "!transform.any_op)");
    }
    std::string f2 = w.fresh(), fa2 = w.fresh();
    w.line(f2 + ", " + fa2 +
           " = transform.structured.fuse_into_containing_op " + fill +
           " into " + forall +
           " : (!transform.any_op, !transform.any_op) -> (!transform.any_op, "
           "!transform.any_op)");
    // K blocks.
    SmallVector<int64_t> kBlock(packedLoops, 0);
    kBlock[k] = s.k;
    std::string t1 = w.tileUsingFor(t0, kBlock).first;
    // Register tiles: NR panels outside, MR panels inside.
    SmallVector<int64_t> regs(packedLoops, 0), order;
    regs[m] = 1;
    regs[n] = 1;
    for (unsigned b : dims->batch)
      regs[b] = 1;
    order.push_back(n);
    order.push_back(m);
    for (int64_t d = 0; d < packedLoops; ++d)
      if (d != m && d != n)
        order.push_back(d);
    std::string t2 = w.tileUsingFor(t1, regs, order).first;
    // The micro-kernel: one K step of an MR x NR tile.
    SmallVector<int64_t> kStep(packedLoops, 0);
    kStep[k] = 1;
    auto [t3, l3] = w.tileUsingFor(t2, kStep);
    w.line("transform.structured.vectorize " + t3 + " : !transform.any_op");
    // The accumulators stay in registers across this loop, which is then
    // unrolled (second script).
    w.line("transform.annotate " + l3 + " \"" + kHoistAttr.str() +
           "\" : !transform.any_op");
    w.line("transform.annotate " + l3 + " \"" + kUnrollAttr.str() +
           "\" : !transform.any_op");
    return true;
  }

  //===------------------------------------------------------------------===//
  // Innermost-loop reductions: one partial result per lane
  //===------------------------------------------------------------------===//

  /// Vectors of i1 are bit-packed in memory while i1 buffers hold a byte
  /// per element: ops touching i1 tensors keep scalar loops.
  static bool hasBoolOperands(linalg::LinalgOp op) {
    return llvm::any_of(op->getOperandTypes(), [](Type t) {
      return getElementTypeOrSelf(t).isInteger(1);
    });
  }

  /// Reads at computed indices (tensor.extract in the body: gathers,
  /// run-time broadcasts) and nested regions keep scalar loops.
  static bool hasIrregularBody(linalg::LinalgOp op) {
    bool irregular = false;
    op->walk([&](Operation *inner) {
      if (inner != op.getOperation() &&
          (isa<tensor::ExtractOp>(inner) || inner->getNumRegions() > 0))
        irregular = true;
    });
    return irregular;
  }

  /// Whether the vectorizer takes the op's tiles (one element of each
  /// outer loop, `lanes` of the innermost). The probe gives static loops
  /// their full size: the vectorizer refuses vector sizes below a static
  /// size (masks only cover the part of a vector past the data), while
  /// the real tiles are static and small.
  static bool vectorizable(linalg::LinalgOp op, int64_t lanes) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t n = ranges.size();
    SmallVector<int64_t> probe(n, 1);
    for (int64_t d = 0; d < n; ++d)
      probe[d] = !ShapedType::isDynamic(ranges[d]) ? ranges[d]
                 : d == n - 1                      ? lanes
                                                   : 1;
    return succeeded(linalg::vectorizeOpPrecondition(op, probe));
  }

  bool innerReduction(linalg::LinalgOp op, const Schedule &s, ScriptWriter &w,
                      const std::string *fused = nullptr) {
    if (hasBoolOperands(op) || hasIrregularBody(op) || !contiguousInnermost(op))
      return false;
    auto its = iterators(op);
    int64_t n = its.size();
    if (its[n - 1] != utils::IteratorType::reduction ||
        op.getNumReductionLoops() != 1 || op.getNumDpsInits() != 1)
      return false;
    if (!vectorizable(op, s.vector))
      return false;
    std::string h = fused ? *fused : w.matchOp();
    if (!fused) {
      distribute(op, s, w, h, /*chunk=*/1024);
    } else if (n > 2) {
      // A row of a group fixes the first loop only: the other outer loops
      // (S of a [B, S, D] norm) step one element at a time, so each lane
      // partial is one vector.
      SmallVector<int64_t> outer(n, 0);
      for (int64_t d = 1; d + 1 < n; ++d)
        outer[d] = 1;
      h = w.tileUsingFor(h, outer).first;
    }
    // Four vectors of lane partials: four independent chains of adds or
    // maxima per step, so the loop runs at the units' throughput rather
    // than one operation's latency per vector (a NaN-propagating maximum
    // takes several). Rows shorter than that use one vector.
    int64_t size = op.getStaticLoopRanges()[n - 1];
    int64_t width = !ShapedType::isDynamic(size) && size < 4 * s.vector
                        ? s.vector
                        : 4 * s.vector;
    SmallVector<int64_t> sizes(n, 0);
    sizes[n - 1] = width;
    std::string fill = w.fresh(), split = w.fresh(), comb = w.fresh(),
                loop = w.fresh();
    w.line(fill + ", " + split + ", " + comb + ", " + loop +
           " = transform.structured.tile_reduction_using_for " + h +
           " by tile_sizes = " + list(sizes) +
           " : (!transform.any_op) -> (!transform.any_op, !transform.any_op, "
           "!transform.any_op, !transform.op<\"scf.for\">)");
    Chunks how = chunks(op, n - 1, width);
    vectorizeChunks(w, loop, n, n - 1, width, how);
    if (how == Chunks::Partial)
      return true;
    // The lane partials have static shapes.
    w.line("transform.structured.vectorize " + fill + " : !transform.any_op");
    w.line("transform.structured.vectorize " + comb + " : !transform.any_op");
    return true;
  }

  //===------------------------------------------------------------------===//
  // Everything else with a parallel innermost loop: vectors along it
  //===------------------------------------------------------------------===//

  /// Whether every operand reads or writes its innermost dim along the
  /// innermost loop with unit stride (or does not depend on that loop):
  /// vectors then load and store contiguous memory. Transposed and strided
  /// accesses would be gathers; those ops keep scalar loops.
  static bool contiguousInnermost(linalg::LinalgOp op) {
    unsigned inner = op.getNumLoops() - 1;
    for (OpOperand &o : op->getOpOperands()) {
      AffineMap map = op.getMatchingIndexingMap(&o);
      for (unsigned r = 0; r < map.getNumResults(); ++r) {
        AffineExpr e = map.getResult(r);
        if (!e.isFunctionOfDim(inner))
          continue;
        if (r + 1 != map.getNumResults())
          return false;
        if (e == getAffineDimExpr(inner, op->getContext()))
          continue;
        // d_inner + (terms without d_inner), as a stride-1 convolution has.
        auto add = dyn_cast<AffineBinaryOpExpr>(e);
        if (!add || add.getKind() != AffineExprKind::Add)
          return false;
        AffineExpr dim = getAffineDimExpr(inner, op->getContext());
        bool lhs = add.getLHS() == dim && !add.getRHS().isFunctionOfDim(inner);
        bool rhs = add.getRHS() == dim && !add.getLHS().isFunctionOfDim(inner);
        if (!lhs && !rhs)
          return false;
      }
    }
    return true;
  }

  bool innerParallel(linalg::LinalgOp op, const Schedule &s, ScriptWriter &w,
                     const std::string *fused = nullptr) {
    if (hasBoolOperands(op) || hasIrregularBody(op) || !contiguousInnermost(op))
      return false;
    auto its = iterators(op);
    int64_t n = its.size();
    if (its[n - 1] != utils::IteratorType::parallel)
      return false;
    if (!vectorizable(op, s.vector))
      return false;
    std::string h = fused ? *fused : w.matchOp();
    // A fused op is already one row of its group's scf.forall.
    SmallVector<int64_t> done(n, 0);
    if (fused)
      done[0] = 1;
    else
      done = distribute(op, s, w, h, /*chunk=*/4096);
    // Inner tiles: the innermost loop by V (outermost of the new loops),
    // reduction loops by 1 inside it, other parallel loops by 1.
    SmallVector<int64_t> sizes(n, 0), order{n - 1};
    for (int64_t d = 0; d + 1 < n; ++d)
      if (its[d] == utils::IteratorType::reduction) {
        sizes[d] = 1;
        order.push_back(d);
      }
    for (int64_t d = 0; d + 1 < n; ++d)
      if (its[d] == utils::IteratorType::parallel) {
        if (done[d] != 1)
          sizes[d] = 1;
        order.push_back(d);
      }
    sizes[n - 1] = s.vector;
    int64_t count = llvm::count_if(sizes, [](int64_t x) { return x != 0; });
    auto [t, l] = w.tileUsingFor(h, sizes, order, /*forLoop=*/true);
    Chunks how = chunks(op, n - 1, s.vector);
    // Chunks of the innermost loop over threads end with a partial one
    // unless the chunk divides the static size.
    int64_t size = op.getStaticLoopRanges()[n - 1];
    if (done[n - 1] > 1 &&
        (ShapedType::isDynamic(size) || size % done[n - 1] != 0))
      how = Chunks::Peel;
    vectorizeChunks(w, count > 1 ? l + "#0" : l, n, n - 1, s.vector, how);
    return true;
  }

  /// How the loop over vector chunks of loop `dim` splits: only full
  /// chunks, full chunks and a partial last one (peeled off), or only one
  /// partial chunk.
  enum class Chunks { Full, Peel, Partial };
  static Chunks chunks(linalg::LinalgOp op, int64_t dim, int64_t lanes) {
    int64_t size = op.getStaticLoopRanges()[dim];
    if (ShapedType::isDynamic(size))
      return Chunks::Peel;
    if (size < lanes)
      return Chunks::Partial;
    return size % lanes ? Chunks::Peel : Chunks::Full;
  }

  /// Vectorizes the ops inside `loop` (the loop over vector chunks of loop
  /// dim `dim`): full chunks get static vectors (no masks); a partial last
  /// chunk keeps scalar code, after peeling when there are full ones too.
  /// Loops inside are marked for hoisting their loop-carried vectors.
  void vectorizeChunks(ScriptWriter &w, const std::string &loop, int64_t n,
                       int64_t dim, int64_t lanes, Chunks how) {
    if (how == Chunks::Partial)
      return;
    std::string full = loop, fullType = "!transform.op<\"scf.for\">";
    if (how == Chunks::Peel) {
      std::string rest = w.fresh();
      full = w.fresh();
      fullType = "!transform.any_op";
      w.line(full + ", " + rest + " = transform.loop.peel " + loop +
             " : (!transform.op<\"scf.for\">) -> (!transform.any_op, "
             "!transform.any_op)");
    }
    // The chunk sizes are constants by now but the tensor types are not
    // refined yet: vector sizes give the shape, and the masks they imply
    // fold to all-true.
    SmallVector<int64_t> sizes(n, 1);
    sizes[dim] = lanes;
    std::string ops = w.fresh(), inner = w.fresh();
    w.line(ops + " = transform.structured.match interface{LinalgOp} in " +
           full + " : (" + fullType + ") -> !transform.any_op");
    w.line("transform.structured.vectorize " + ops + " vector_sizes " +
           list(sizes) + " : !transform.any_op");
    w.line(inner + " = transform.structured.match ops{[\"scf.for\"]} in " +
           full + " : (" + fullType + ") -> !transform.any_op");
    w.line("transform.annotate " + inner + " \"" + kHoistAttr.str() +
           "\" : !transform.any_op");
  }

  //===------------------------------------------------------------------===//
  // Ops the vectorizer cannot take: parallel loops only
  //===------------------------------------------------------------------===//

  bool parallelOnly(linalg::LinalgOp op, const Schedule &s, ScriptWriter &w) {
    if (op.getNumParallelLoops() == 0)
      return false;
    std::string h = w.matchOp();
    distribute(op, s, w, h, /*chunk=*/1024);
    return true;
  }
};

CPUScheduler::CPUScheduler(int64_t vectorBytes)
    : impl(std::make_unique<Impl>(vectorBytes)) {}
CPUScheduler::~CPUScheduler() = default;
bool CPUScheduler::isGemm(linalg::LinalgOp op) { return impl->isGemm(op); }
bool CPUScheduler::fusible(linalg::LinalgOp op) { return impl->fusible(op); }
bool CPUScheduler::schedule(linalg::LinalgOp op, int64_t id,
                            std::string &script) {
  return impl->schedule(op, id, script);
}
void CPUScheduler::scheduleRowOp(linalg::LinalgOp op, int64_t id,
                                 std::string &script) {
  impl->scheduleRowOp(op, id, script);
}
bool CPUScheduler::usedPacking() const { return impl->usedPacking; }

} // namespace mlir::tessera::tsched
