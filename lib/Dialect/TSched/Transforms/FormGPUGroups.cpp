//===- FormGPUGroups.cpp - Graph IR ops into GPU fusion groups ------------===//
//
// Visits a function's ops in program order and puts each into a group: the
// group of one of its operands when the op fits that group's kernel, else a
// new one. A group takes ops only while it is open, that is, until a value
// of it is read by an op outside it; so every group can be placed where its
// last op is, after all of its inputs and before all of its readers.
//
// Row and contraction groups work on one static [R, C] layout (C the last
// dim, R the product of the others). A value of such a group is a full
// tile ([..., C], the layout's shape), a row ([..., 1] or [...] computed by
// a reduction), a column ([C]) or a scalar; values from outside are
// classified by their shape, right-aligned as broadcasting reads them.
//
// Column windows: a slice of a tensor's last dim alone is read by the row
// groups that use it straight from the tensor (a window of its columns, a
// strided view), and a concat along the last dim of full values of one
// row group is written by that group into the windows of its result: the
// halves of a rotary embedding cost no copies. (A sum of two zero pads
// that place two values side by side along the last dim, which is what
// the gradient of such a slice looks like, is taken as their concat
// first.) A transpose of leading dims that only windows read is read in
// place as well, and one that is the only reader of such a concat is
// written in place: heads split off a product and put back cost none.
//
// Head transposes around flash attention ([B, S, H, D] to [B, H, S, D]
// and back) are not copied either: the attention group reads an operand
// that only attention ops read through such a transpose in place, and
// takes into itself the one transpose of a result, writing the result in
// [B, S, H, D] order. (Another attention op that reads that result, the
// backward reading the forward's output, reads it back through a
// transpose of its own.)
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TSched/Transforms/Passes.h"

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"
#include "tessera/Dialect/TSched/IR/GemmForm.h"
#include "tessera/Dialect/TSched/IR/RowLayout.h"
#include "tessera/Dialect/TSched/Transforms/RowOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"

#include <deque>
#include <functional>

namespace mlir::tessera::tsched {
#define GEN_PASS_DEF_TSCHEDFORMGPUGROUPS
#include "tessera/Dialect/TSched/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tsched

using namespace mlir;
using namespace mlir::tessera::tsched;

using mlir::tessera::tgraph::isGpuFlashAttention;

namespace {

/// How a value spreads over a group's [R, C] layout.
using Class = RowClass;

/// Elementwise Graph IR ops (with NumPy broadcasting of their operands).
bool isElementwise(Operation *op) {
  static const llvm::StringSet<> names = {
      "tgraph.neg",        "tgraph.abs",       "tgraph.exp",
      "tgraph.log",        "tgraph.log1p",     "tgraph.sin",
      "tgraph.cos",        "tgraph.tanh",      "tgraph.erf",
      "tgraph.sigmoid",    "tgraph.relu",      "tgraph.gelu",
      "tgraph.silu",       "tgraph.sqrt",      "tgraph.rsqrt",
      "tgraph.reciprocal", "tgraph.square",    "tgraph.floor",
      "tgraph.sign",       "tgraph.add",       "tgraph.sub",
      "tgraph.mul",        "tgraph.div",       "tgraph.pow",
      "tgraph.max",        "tgraph.min",       "tgraph.compare",
      "tgraph.select",     "tgraph.cast",      "tgraph.zeros_like",
      "tgraph.ones_like"};
  return names.contains(op->getName().getStringRef());
}

/// A unary op that costs a reader less to compute again from its operand
/// than to read from memory: square, neg, abs, relu, and casts between
/// floats that do not narrow (its operand is no larger than its result).
bool isCheapUnary(Operation *op) {
  static const llvm::StringSet<> names = {"tgraph.square", "tgraph.neg",
                                          "tgraph.abs", "tgraph.relu",
                                          "tgraph.cast"};
  if (op->getNumOperands() != 1 || op->getNumResults() != 1 ||
      !names.contains(op->getName().getStringRef()))
    return false;
  Type from = getElementTypeOrSelf(op->getOperand(0));
  Type to = getElementTypeOrSelf(op->getResult(0));
  if (op->getName().getStringRef() == "tgraph.cast")
    return isa<FloatType>(from) && isa<FloatType>(to) &&
           from.getIntOrFloatBitWidth() <= to.getIntOrFloatBitWidth();
  return isa<FloatType>(to);
}

/// The one dim a reduction reduces (`dims` of one entry, or the `dim` of
/// argmax and argmin, which also need a float operand of at most 32 bits:
/// the row kernel compares values and computes indices in f32).
std::optional<int64_t> reducedDim(Operation *op) {
  if (auto dims = op->getAttrOfType<DenseI64ArrayAttr>("dims"))
    return dims.size() == 1 ? std::optional<int64_t>(dims[0]) : std::nullopt;
  auto dim = op->getAttrOfType<IntegerAttr>("dim");
  // f32 and narrower floats read into f32 exactly; f64 would not.
  Type element = getElementTypeOrSelf(op->getOperand(0));
  if (!dim || !isa<FloatType>(element) || element.getIntOrFloatBitWidth() > 32)
    return std::nullopt;
  return dim.getInt();
}

/// Reductions a reduction group computes (argmax and argmin only in row
/// groups: over their last dim).
bool isReduction(Operation *op) {
  StringRef name = op->getName().getStringRef();
  return (isRowReduction(op) && name != "tgraph.argmax" &&
          name != "tgraph.argmin") ||
         name == "tgraph.reduce_prod";
}

/// Contractions a generated GEMM computes (others are library `single`
/// groups).
bool isContraction(Operation *op) { return gemmForm(op).has_value(); }

bool isAttention(Operation *op) {
  StringRef name = op->getName().getStringRef();
  return name == "tgraph.attention" || name == "tgraph.attention_grad";
}

/// Whether the head transpose `op` is read only as operands of flash
/// attention ops of its block, which then read its operand in place.
bool onlyAttentionReads(Operation *op) {
  return !op->use_empty() && llvm::all_of(op->getUsers(), [&](Operation *u) {
    return isGpuFlashAttention(u) && u->getBlock() == op->getBlock();
  });
}

/// Puts the head transpose of each flash attention result right after its
/// op, and makes it the result's only reader: another flash attention op
/// reading the result reads a transpose of the transpose instead (the
/// backward reading the forward's output). The attention group then takes
/// the transpose in and writes the result once, in the transposed order.
void headTransposesAfterAttention(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (!isGpuFlashAttention(&op))
      continue;
    Operation *after = &op;
    for (Value r : op.getResults()) {
      // (A transpose has one operand: each reader appears once.)
      auto heads = llvm::make_filter_range(r.getUsers(), isHeadTranspose);
      if (!llvm::hasSingleElement(heads))
        continue;
      Operation *t = *heads.begin();
      bool others = llvm::all_of(r.getUsers(), [&](Operation *u) {
        return u == t || (isGpuFlashAttention(u) && u->getBlock() == &block);
      });
      if (!others || t->getBlock() != &block)
        continue;
      t->moveAfter(after);
      after = t;
      for (OpOperand &use : llvm::make_early_inc_range(r.getUses())) {
        Operation *u = use.getOwner();
        if (u == t)
          continue;
        OpBuilder b(u);
        auto back = mlir::tessera::tgraph::TransposeOp::create(
            b, t->getLoc(), r.getType(), t->getResult(0),
            b.getDenseI64ArrayAttr({0, 2, 1, 3}));
        use.set(back.getResult());
      }
    }
  }
}

bool isLayout(Operation *op) {
  static const llvm::StringSet<> names = {
      "tgraph.transpose", "tgraph.slice",     "tgraph.dynamic_slice",
      "tgraph.concat",    "tgraph.pad",       "tgraph.gather",
      "tgraph.broadcast_in_dim", "tgraph.embedding", "tgraph.one_hot"};
  return names.contains(op->getName().getStringRef());
}

/// Ops that are views of their operand's buffer: no kernel.
bool isView(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (name == "tgraph.reshape")
    return true;
  return name == "tgraph.stop_gradient" &&
         op->getOperand(0).getType() == op->getResult(0).getType();
}

/// The static shape of `v`, or nullopt.
std::optional<ArrayRef<int64_t>> staticShape(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return std::nullopt;
  return t.getShape();
}

/// Whether `op` concatenates along the last dim.
bool isColumnConcat(Operation *op) {
  auto concat = dyn_cast<mlir::tessera::tgraph::ConcatOp>(op);
  auto out = concat ? staticShape(concat.getResult()) : std::nullopt;
  return out && !out->empty() &&
         int64_t(concat.getDim()) == int64_t(out->size()) - 1;
}

/// `op` as [low, high) columns of its result if it is a zero pad of its
/// operand's last dim alone (a value placed in a window of zeros).
std::optional<std::pair<int64_t, int64_t>> columnPlacement(Operation *op) {
  auto pad = dyn_cast_or_null<mlir::tessera::tgraph::PadOp>(op);
  if (!pad)
    return std::nullopt;
  std::optional<ArrayRef<int64_t>> out = staticShape(pad.getResult());
  if (!out || out->empty())
    return std::nullopt;
  auto value = dyn_cast<TypedAttr>(pad.getValue());
  bool zero = false;
  if (auto f = dyn_cast_or_null<FloatAttr>(value))
    zero = f.getValue().isPosZero();
  else if (auto i = dyn_cast_or_null<IntegerAttr>(value))
    zero = i.getValue().isZero();
  size_t last = out->size() - 1;
  if (!zero || llvm::any_of(pad.getInterior(), [](int64_t i) { return i; }))
    return std::nullopt;
  for (size_t d = 0; d < last; ++d)
    if (pad.getLow()[d] || pad.getHigh()[d])
      return std::nullopt;
  int64_t low = pad.getLow()[last], high = pad.getHigh()[last];
  if (low < 0 || high < 0)
    return std::nullopt;
  return std::make_pair(low, (*out)[last] - high);
}

/// A sum of two zero pads along the last dim whose values lie side by
/// side and fill it (what the gradient of two column windows of one
/// tensor is) becomes their concat: one write instead of two pads and a
/// sum. (The only difference: a -0 element stays -0 where the sum gave
/// +0.)
void padSumsToConcats(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto add = dyn_cast<mlir::tessera::tgraph::AddOp>(op);
    if (!add || add.getLhs().getType() != add.getResult().getType() ||
        add.getRhs().getType() != add.getResult().getType())
      continue;
    Operation *l = add.getLhs().getDefiningOp();
    Operation *r = add.getRhs().getDefiningOp();
    auto lp = columnPlacement(l), rp = columnPlacement(r);
    if (!lp || !rp)
      continue;
    if (lp->first > rp->first) {
      std::swap(l, r);
      std::swap(lp, rp);
    }
    int64_t width = cast<RankedTensorType>(add.getType()).getShape().back();
    if (lp->first != 0 || lp->second != rp->first || rp->second != width ||
        lp->first == lp->second || rp->first == rp->second)
      continue;
    OpBuilder b(add);
    Value concat = mlir::tessera::tgraph::ConcatOp::create(
        b, add.getLoc(), ValueRange{l->getOperand(0), r->getOperand(0)},
        int64_t(cast<RankedTensorType>(add.getType()).getRank() - 1));
    add.getResult().replaceAllUsesWith(concat);
    add.erase();
    for (Operation *pad : {l, r})
      if (pad->use_empty())
        pad->erase();
  }
}

/// The class in `out`'s [R, C] layout of a broadcast of `in` (its dims at
/// `dims` of `out`): the source read as a tensor of the result's rank, 1
/// where it broadcasts. None if a dim is out of range.
Class broadcastClass(ArrayRef<int64_t> in, ArrayRef<int64_t> dims,
                     ArrayRef<int64_t> out) {
  std::optional<SmallVector<int64_t>> placed =
      placedShape(in, dims, out.size());
  return placed ? classifyInLayout(*placed, out) : Class::None;
}

/// Whether a broadcast of `in` (its dims at `dims` of `out`) reads as a
/// row, a column, a scalar or a periodic value of `out`'s [R, C] layout.
bool readsAsVector(ArrayRef<int64_t> in, ArrayRef<int64_t> dims,
                   ArrayRef<int64_t> out) {
  // Dims must keep their order for the source's memory to be read as is.
  if (out.empty() || !llvm::is_sorted(dims))
    return false;
  Class c = broadcastClass(in, dims, out);
  return c == Class::Row || c == Class::Col || c == Class::Scalar ||
         c == Class::Periodic || (c == Class::Full && numElements(out) == 1);
}

struct Group {
  GroupKind kind;
  /// The full shape of a row or contraction group.
  SmallVector<int64_t> full;
  SmallVector<Operation *> ops;
  /// The class of each value computed inside (row and contraction groups).
  DenseMap<Value, Class> classes;
  bool open = true;
  /// A row group's concat whose one reader, a transpose of its leading
  /// dims, may still join (the only op that may).
  Operation *tail = nullptr;

  bool contains(Operation *op) const { return llvm::is_contained(ops, op); }
};

class GroupFormer {
public:
  GroupFormer(int64_t maxRow) : maxRow(maxRow) {}

  void run(Block &block) {
    padSumsToConcats(block);
    headTransposesAfterAttention(block);
    for (Operation &op : block.without_terminator())
      visit(&op);
    // A broadcast that something other than a row or contraction kernel
    // reads (a library kernel, an op in no group) is written out, by a row
    // kernel of its own, built last: the groups that read it lazily copy
    // it first.
    SmallVector<Group *> written;
    // So is one that a GEMM multiplies (its operands come from memory),
    // and a periodic one that a GEMM's epilogue reads.
    llvm::SmallPtrSet<Operation *, 8> writtenOps;
    for (Operation *op : lazy)
      if (llvm::any_of(op->getUsers(), [&](Operation *u) {
            // (A lazy reader, a window of a lazy transpose, takes it
            // into whatever row kernel computes it.)
            Group *g = groupOf.lookup(u);
            return (!g && !lazy.contains(u)) ||
                   (g && !replicableIn(op, *g)) || isContraction(u);
          })) {
        Group &g = newGroup(GroupKind::Row,
                            *staticShape(op->getResult(0)));
        g.ops.push_back(op);
        g.classes[op->getResult(0)] = Class::Full;
        g.open = false;
        written.push_back(&g);
        writtenOps.insert(op);
      }
    OpBuilder b(block.getParentOp()->getContext());
    for (Group &g : groups)
      if (!llvm::is_contained(written, &g))
        materialize(b, g);
    for (Group *g : written)
      materialize(b, *g);
    // (A written broadcast was erased with its group's ops.)
    // (Readers first: a lazy transpose is read by lazy windows.)
    for (Operation *op : llvm::reverse(lazy))
      if (!writtenOps.contains(op) && op->use_empty())
        op->erase();
  }

private:
  int64_t maxRow;
  std::deque<Group> groups;
  DenseMap<Operation *, Group *> groupOf;
  /// Broadcasts that the groups reading them compute themselves, reading
  /// the source as a row, column or scalar; cheap unary ops that they
  /// compute again from their operand (recomputed()); and column windows
  /// that row groups read in place (isColumnWindow()), with transposes of
  /// leading dims that only windows read.
  llvm::SetVector<Operation *> lazy;

  Group *producerGroup(Value v) {
    Operation *def = v.getDefiningOp();
    return def ? groupOf.lookup(def) : nullptr;
  }

  /// Whether `op` was taken as recomputed (see recomputed()).
  bool isRecomputed(Operation *op) const {
    return op && lazy.contains(op) && isCheapUnary(op);
  }

  /// The group a reader of `v` reads: `v`'s, or for a recomputed unary op
  /// its operand's.
  Group *readGroup(Value v) {
    if (Group *g = producerGroup(v))
      return g;
    Operation *def = v.getDefiningOp();
    return isRecomputed(def) ? producerGroup(def->getOperand(0)) : nullptr;
  }

  /// Whether the cheap unary op `op` is computed by each group that reads
  /// it, from its operand, instead of being written by one and read by
  /// the others: its readers are all elementwise ops of static shapes (so
  /// all in generated kernels), its operand has its shape (so it reads as
  /// the same class) and is not itself recomputed; or reductions along the
  /// last dim (row groups' too). A value kept only for the backward pass
  /// (the u^2 of a GELU) is then not written out: the backward's group
  /// reads u, which it reads anyway; nor is the f32 copy of a product's
  /// bf16 output that a layernorm's mean sums, beside the bf16 one the
  /// same layernorm reads.
  bool recomputed(Operation *op) {
    if (!isCheapUnary(op) || op->use_empty() ||
        staticShape(op->getResult(0)) != staticShape(op->getOperand(0)) ||
        !staticShape(op->getResult(0)))
      return false;
    if (Operation *def = op->getOperand(0).getDefiningOp();
        def && lazy.contains(def))
      return false;
    return llvm::all_of(op->getUsers(), [&](Operation *user) {
      if (user->getBlock() != op->getBlock())
        return false;
      if (isRowReduction(user)) {
        // A reduction along the last dim is always in a row group (see
        // visit()), whose kernel computes `op` on the rows it reads.
        std::optional<ArrayRef<int64_t>> in = staticShape(user->getOperand(0));
        return in && !in->empty() &&
               reducedDim(user) == int64_t(in->size()) - 1 &&
               in->back() <= maxRow;
      }
      return isElementwise(user) && user->getNumResults() == 1 &&
             staticShape(user->getResult(0));
    });
  }

  /// The class of `v` in `g` (nullopt: not usable there).
  Class classIn(Value v, const Group &g) {
    auto it = g.classes.find(v);
    if (it != g.classes.end())
      return it->second;
    std::optional<ArrayRef<int64_t>> shape = staticShape(v);
    if (!shape)
      return Class::None;
    return classifyInLayout(*shape, g.full);
  }

  /// The class `op`'s result has in `g` when `op` joins it, or None.
  Class joinClass(Operation *op, const Group &g) {
    if (!g.open || op->getNumResults() != 1)
      return Class::None;
    if (g.tail)
      return op->getNumOperands() == 1 &&
                     op->getOperand(0) == g.tail->getResult(0) &&
                     isRowTranspose(op)
                 ? Class::Full
                 : Class::None;
    Value result = op->getResult(0);
    std::optional<ArrayRef<int64_t>> shape = staticShape(result);
    if (!shape)
      return Class::None;
    if (isElementwise(op)) {
      bool full = false, row = false, col = false;
      for (Value v : op->getOperands()) {
        // The epilogue reads the GEMM's operands through the GEMM's own
        // views of them: as full tiles only.
        if (g.kind == GroupKind::Contraction &&
            llvm::is_contained(g.ops.front()->getOperands(), v) &&
            classIn(v, g) != Class::Full)
          return Class::None;
        switch (classIn(v, g)) {
        case Class::Full:
          full = true;
          break;
        case Class::Row:
          row = true;
          break;
        case Class::Col:
          col = true;
          break;
        case Class::Scalar:
          break;
        case Class::Periodic:
          // Read at the row modulo its period: row kernels only (a GEMM's
          // tile of up to 128 rows could wrap).
          if (g.kind != GroupKind::Row)
            return Class::None;
          full = true;
          break;
        case Class::None:
          return Class::None;
        }
      }
      if ((full || (row && col)) && *shape == ArrayRef<int64_t>(g.full))
        return Class::Full;
      // Row statistics (rows and scalars only) stay in a row kernel, in
      // the shape of a row operand.
      if (g.kind == GroupKind::Row && row && !full && !col)
        for (Value v : op->getOperands())
          if (classIn(v, g) == Class::Row &&
              staticShape(v) == std::optional<ArrayRef<int64_t>>(*shape))
            return Class::Row;
      return Class::None;
    }
    if (g.kind == GroupKind::Attention) {
      // The one head transpose of a result (headTransposesAfterAttention),
      // which the kernel writes in place.
      if (!isHeadTranspose(op))
        return Class::None;
      Value x = op->getOperand(0);
      Operation *def = x.getDefiningOp();
      return def && isGpuFlashAttention(def) && g.contains(def) &&
                     x.hasOneUse() && !op->use_empty()
                 ? Class::Full
                 : Class::None;
    }
    if (g.kind != GroupKind::Row)
      return Class::None;
    if (isColumnConcat(op)) {
      // Full values of the group side by side, written into the columns of
      // the result (which nothing in the group reads: it closes).
      for (Value v : op->getOperands())
        if (classIn(v, g) != Class::Full ||
            staticShape(v) != std::optional<ArrayRef<int64_t>>(g.full))
          return Class::None;
      return Class::Full;
    }
    if (isRowReduction(op)) {
      Value x = op->getOperand(0);
      if (classIn(x, g) != Class::Full ||
          reducedDim(op) != int64_t(g.full.size()) - 1 ||
          g.full.back() > maxRow)
        return Class::None;
      return Class::Row;
    }
    if (op->getName().getStringRef() == "tgraph.broadcast_in_dim") {
      Value x = op->getOperand(0);
      auto dims = op->getAttrOfType<DenseI64ArrayAttr>("broadcast_dimensions");
      if (classIn(x, g) != Class::Row || *shape != ArrayRef<int64_t>(g.full) ||
          !dims)
        return Class::None;
      // The row's dims stay where they are (a row broadcast along C).
      for (auto [i, d] : llvm::enumerate(dims.asArrayRef()))
        if (d != int64_t(i))
          return Class::None;
      return Class::Full;
    }
    return Class::None;
  }

  Group &newGroup(GroupKind kind, ArrayRef<int64_t> full = {}) {
    groups.emplace_back();
    Group &g = groups.back();
    g.kind = kind;
    g.full.assign(full.begin(), full.end());
    return g;
  }

  void add(Group &g, Operation *op, Class cls) {
    // Producers of its other operands are read outside their groups now.
    for (Value v : op->getOperands())
      if (Group *h = readGroup(v); h && h != &g)
        h->open = false;
    g.ops.push_back(op);
    groupOf[op] = &g;
    for (Value r : op->getResults())
      g.classes[r] = cls;
  }

  void visit(Operation *op) {
    if (op->getNumRegions() || op->getNumResults() == 0 ||
        op->getDialect() == nullptr ||
        op->getDialect()->getNamespace() != "tgraph" ||
        op->getName().getStringRef() == "tgraph.constant" ||
        isGenerated(op->getResult(0)) || isView(op)) {
      // Not in a group: every group it reads is read outside.
      for (Value v : op->getOperands())
        if (Group *h = readGroup(v))
          h->open = false;
      return;
    }
    if (recomputed(op)) {
      lazy.insert(op);
      return;
    }
    // A head transpose that only flash attention reads: their kernels read
    // its operand in place. (Not an operand that is itself read lazily, a
    // column window or a broadcast: only row kernels compute those, so it
    // stays a copy that writes it out.)
    if (isHeadTranspose(op) && !isGenerated(op->getOperand(0)) &&
        !lazy.contains(op->getOperand(0).getDefiningOp()) &&
        onlyAttentionReads(op)) {
      if (Group *h = producerGroup(op->getOperand(0)))
        h->open = false;
      lazy.insert(op);
      return;
    }
    // A transpose of leading dims that only windows read: they read it in
    // place too, each row in its order.
    if (isRowTranspose(op) && !isGenerated(op->getOperand(0)) &&
        !op->use_empty() &&
        llvm::all_of(op->getUsers(),
                     [](Operation *u) { return isColumnWindow(u); })) {
      if (Group *h = producerGroup(op->getOperand(0)))
        h->open = false;
      lazy.insert(op);
      return;
    }
    // A column window: read in place by the row groups that use it (its
    // operand's group is read outside from here on); written out by a row
    // kernel of its own for other readers.
    if (isColumnWindow(op) && !isGenerated(op->getOperand(0))) {
      if (Group *h = producerGroup(op->getOperand(0)))
        h->open = false;
      lazy.insert(op);
      return;
    }
    // Join the open group of an operand, in operand order.
    for (Value v : op->getOperands()) {
      Group *g = readGroup(v);
      if (!g || !g->open)
        continue;
      Class cls = joinClass(op, *g);
      if (cls != Class::None) {
        add(*g, op, cls);
        if (isColumnConcat(op)) {
          // Nothing in the group reads it; a transpose of leading dims
          // that is its one reader may still join, writing the parts in
          // its order of rows.
          Value r = op->getResult(0);
          if (r.hasOneUse() && isRowTranspose(*r.getUsers().begin()))
            g->tail = op;
          else
            g->open = false;
        } else if (g->tail) {
          g->open = false;
        }
        return;
      }
    }
    std::optional<ArrayRef<int64_t>> shape =
        op->getNumResults() == 1 ? staticShape(op->getResult(0))
                                 : std::nullopt;
    // Else the latest open row group of its layout, though it reads none
    // of its values: one launch fewer. (No cycle: the groups the op reads
    // are closed, so they come before that group, and an open group is
    // read by no other.)
    if (shape && (isElementwise(op) || isRowReduction(op)))
      for (Group &g : llvm::reverse(groups)) {
        if (g.kind != GroupKind::Row || !g.open)
          continue;
        Class cls = joinClass(op, g);
        if (cls != Class::None)
          return add(g, op, cls);
        break;
      }
    if (shape && isElementwise(op)) {
      // An operand broadcast along more than rows, columns or all of the
      // result (a [S, D] mask of [B, H, S, D] scores) is written out at the
      // result's shape first, by a layout kernel.
      for (OpOperand &operand : op->getOpOperands()) {
        std::optional<ArrayRef<int64_t>> in = staticShape(operand.get());
        if (!in || classifyInLayout(*in, *shape) != Class::None ||
            in->size() > shape->size())
          continue;
        OpBuilder b(op);
        auto type = RankedTensorType::get(
            *shape, cast<RankedTensorType>(operand.get().getType())
                        .getElementType());
        SmallVector<int64_t> dims;
        for (size_t i = 0; i < in->size(); ++i)
          dims.push_back(int64_t(shape->size() - in->size() + i));
        OperationState state(op->getLoc(), "tgraph.broadcast_in_dim");
        state.addOperands(operand.get());
        state.addTypes(type);
        state.addAttribute("broadcast_dimensions",
                           b.getDenseI64ArrayAttr(dims));
        Operation *bcast = b.create(state);
        Group &layout = newGroup(GroupKind::Layout);
        add(layout, bcast, Class::None);
        layout.open = false;
        operand.set(bcast->getResult(0));
      }
      Group &g = newGroup(GroupKind::Row, *shape);
      return add(g, op, Class::Full);
    }
    // A broadcast of a row, a column or a scalar of its result: the
    // groups that read it compute it from its source, nothing is written
    // out. (Its source's group is read outside it from here on.)
    if (shape && op->getName().getStringRef() == "tgraph.broadcast_in_dim") {
      std::optional<ArrayRef<int64_t>> in = staticShape(op->getOperand(0));
      auto dims = op->getAttrOfType<DenseI64ArrayAttr>("broadcast_dimensions");
      if (in && dims && readsAsVector(*in, dims.asArrayRef(), *shape)) {
        if (Group *h = producerGroup(op->getOperand(0)))
          h->open = false;
        lazy.insert(op);
        return;
      }
    }
    if (isRowReduction(op)) {
      std::optional<ArrayRef<int64_t>> in = staticShape(op->getOperand(0));
      if (in && !in->empty() && reducedDim(op) == int64_t(in->size()) - 1 &&
          in->back() <= maxRow) {
        Group &g = newGroup(GroupKind::Row, *in);
        return add(g, op, Class::Row);
      }
    }
    if (shape && !shape->empty() && isContraction(op)) {
      Group &g = newGroup(GroupKind::Contraction, *shape);
      return add(g, op, Class::Full);
    }
    GroupKind kind = isAttention(op)     ? GroupKind::Attention
                     : isLayout(op)      ? GroupKind::Layout
                     : isReduction(op)   ? GroupKind::Reduction
                                         : GroupKind::Single;
    Group &g = newGroup(kind);
    add(g, op, Class::None);
    // (A flash attention group stays open for the head transposes of its
    // results.)
    g.open = kind == GroupKind::Attention && isGpuFlashAttention(op);
  }

  /// A constant of one element or one value (a literal of the kernel), or
  /// a tensor the
  /// kernel computes from its indices (iota, full): copied into each group
  /// that reads it instead of being read from memory.
  static bool isGenerated(Value v) {
    Operation *def = v.getDefiningOp();
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!def || !t || !t.hasStaticShape() || def->getNumOperands())
      return false;
    StringRef name = def->getName().getStringRef();
    if (name == "tgraph.constant") {
      // One value everywhere: a literal of the kernel, not a tensor read
      // from memory.
      auto value = def->getAttrOfType<DenseElementsAttr>("value");
      return t.getNumElements() == 1 || (value && value.isSplat());
    }
    return name == "tgraph.iota" || name == "tgraph.full";
  }

  /// Computed again in each group that reads it: a generated tensor or a
  /// lazy broadcast (of another group's value or an argument).
  /// Whether `g`'s kernel is generated, so that it can compute a lazy
  /// broadcast or a generated tensor itself; library kernels (attention,
  /// layout changes, reductions, single ops) read them from memory.
  static bool computesInRegisters(const Group &g) {
    return g.kind == GroupKind::Row || g.kind == GroupKind::Contraction;
  }

  /// Whether `g`'s kernel computes the lazy broadcast `op` from its
  /// source: a row kernel reads any source, a GEMM's epilogue no periodic
  /// one. (An attention kernel reads a head transpose's operand in
  /// place.)
  static bool replicableIn(Operation *op, const Group &g) {
    if (g.kind == GroupKind::Attention)
      return isHeadTranspose(op);
    if (!computesInRegisters(g))
      return false;
    if (g.kind == GroupKind::Row || isCheapUnary(op))
      return true;
    if (isColumnWindow(op) || isRowTranspose(op))
      return false; // (a GEMM's epilogue reads whole rows in order)
    std::optional<ArrayRef<int64_t>> in = staticShape(op->getOperand(0));
    auto dims = op->getAttrOfType<DenseI64ArrayAttr>("broadcast_dimensions");
    if (!in || !dims)
      return false;
    return broadcastClass(*in, dims.asArrayRef(), g.full) != Class::Periodic;
  }

  /// (`user`: the op of `g` that reads `v`; a GEMM reads its operands
  /// from memory.)
  bool isReplicated(Value v, const Group &g, Operation *user) const {
    Operation *def = v.getDefiningOp();
    if (g.kind == GroupKind::Attention)
      return def && lazy.contains(def) && !g.contains(def) &&
             replicableIn(def, g);
    if (!computesInRegisters(g) || isContraction(user))
      return false;
    return isGenerated(v) || (def && lazy.contains(def) && !g.contains(def) &&
                              replicableIn(def, g));
  }

  void materialize(OpBuilder &b, Group &g) {
    // Inputs in the order the ops read them (a lazy broadcast's source for
    // the broadcast); outputs in program order.
    llvm::SetVector<Value> inputs;
    // A GEMM's operands are inputs; its epilogue reads them from there.
    SmallVector<Value> gemmOperands;
    if (g.kind == GroupKind::Contraction)
      gemmOperands.assign(g.ops.front()->operand_begin(),
                          g.ops.front()->operand_end());
    for (Operation *op : g.ops)
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && g.contains(def))
          continue;
        if (isReplicated(v, g, op) && !llvm::is_contained(gemmOperands, v)) {
          if (!isGenerated(v)) {
            // Through a chain of replicated ops (a window of a transpose)
            // to what is read from memory.
            Value source = def->getOperand(0);
            Operation *sourceDef = source.getDefiningOp();
            while (sourceDef && !g.contains(sourceDef) &&
                   isReplicated(source, g, def) && !isGenerated(source)) {
              def = sourceDef;
              source = def->getOperand(0);
              sourceDef = source.getDefiningOp();
            }
            if (!(sourceDef && g.contains(sourceDef)) && !isGenerated(source))
              inputs.insert(source);
          }
          continue;
        }
        inputs.insert(v);
      }
    // Read outside: by an op of another group, or by a recomputed op that
    // one reads.
    auto outside = [&](Operation *user) {
      if (g.contains(user))
        return false;
      if (isRecomputed(user))
        return llvm::any_of(user->getUsers(),
                            [&](Operation *u) { return !g.contains(u); });
      return true;
    };
    SmallVector<Value> outputs;
    for (Operation *op : g.ops)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), outside))
          outputs.push_back(r);
    Operation *last = g.ops.back();
    b.setInsertionPoint(last);
    DenseI64ArrayAttr layout;
    if (g.kind == GroupKind::Row || g.kind == GroupKind::Contraction) {
      ArrayRef<int64_t> full = g.full;
      int64_t cols = full.empty() ? 1 : full.back();
      int64_t rows = full.empty() ? 1 : numElements(full.drop_back());
      layout = b.getDenseI64ArrayAttr({rows, cols});
    }
    SmallVector<Type> types;
    for (Value v : outputs)
      types.push_back(v.getType());
    // The group's location is its last op's: diagnostics of the kernel
    // name the user's line.
    auto group = GroupOp::create(b, last->getLoc(), g.kind, layout,
                                 inputs.getArrayRef(), types);
    Block &body = group.getBodyBlock();
    IRMapping map;
    for (auto [v, arg] : llvm::zip(inputs, body.getArguments()))
      map.map(v, arg);
    OpBuilder inner = OpBuilder::atBlockBegin(&body);
    // Replicated values just before their first reader (a broadcast after
    // its source).
    std::function<void(Value, Operation *)> replicate = [&](Value v,
                                                           Operation *user) {
      if (map.contains(v) || !isReplicated(v, g, user))
        return;
      Operation *def = v.getDefiningOp();
      for (Value operand : def->getOperands())
        replicate(operand, def);
      inner.clone(*def, map);
    };
    for (Operation *op : g.ops) {
      for (Value v : op->getOperands())
        replicate(v, op);
      inner.clone(*op, map);
    }
    SmallVector<Value> yielded;
    for (Value v : outputs)
      yielded.push_back(map.lookup(v));
    YieldOp::create(inner, last->getLoc(), yielded);
    for (auto [v, r] : llvm::zip(outputs, group.getResults()))
      v.replaceUsesWithIf(r, [&](OpOperand &use) {
        return !g.contains(use.getOwner()) &&
               use.getOwner()->getParentOp() != group;
      });
    for (Operation *op : llvm::reverse(g.ops)) {
      // A recomputed op that only this group read (its readers are gone).
      for (Operation *user : llvm::make_early_inc_range(op->getUsers()))
        if (lazy.contains(user) && user->use_empty()) {
          lazy.remove(user);
          user->erase();
        }
      op->erase();
    }
  }
};

struct TSchedFormGPUGroupsPass
    : mlir::tessera::tsched::impl::TSchedFormGPUGroupsBase<
          TSchedFormGPUGroupsPass> {
  using TSchedFormGPUGroupsBase::TSchedFormGPUGroupsBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    for (Block &block : fn.getBody())
      GroupFormer(maxRow).run(block);
  }
};

} // namespace
