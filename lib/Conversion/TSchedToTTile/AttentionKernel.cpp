//===- AttentionKernel.cpp - Flash-attention launches of attention groups -===//
//
// An attention group (one tgraph.attention or tgraph.attention_grad that
// tgraph::isGpuFlashAttention accepts) runs the stdlib's flash-attention
// kernels, taken from the table built from their tile-DSL source
// (StdlibKernels.h) and cloned into the module once per specialization.
// The group records its launches (`tsched.launches`) and the buffers they
// need besides its inputs and results:
//   - forward: one launch writing the output and each query's log-sum-exp
//     (lse, f32 [BH, S]), which the group keeps for a backward that reads
//     its output (`tsched.saved`);
//   - backward: the dQ kernel (which also writes delta = rowsum(dO * O),
//     f32 [BH, S], a temporary: `tsched.scratch`), then the dK/dV kernel.
//     The lse comes from the forward group whose output it differentiates
//     (same q, k, v, causal and scale); otherwise the forward runs again
//     first, into temporaries.
// Every tensor is read as [BH, S, D] (the batch and head dims folded),
// except those the group reads or writes through a head transpose
// ([B, S, H, D] in memory, -tessera-gpu-form-groups): the kernels read
// those as [B, S, H*D], each head a window of D columns.
//
//===----------------------------------------------------------------------===//

#include "GroupKernel.h"
#include "StdlibKernels.h"

#include "tessera/Dialect/TGraph/Transforms/Passes.h"
#include "tessera/Dialect/TSched/Transforms/RowOps.h"

#include "mlir/Parser/Parser.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::group_kernels;

namespace {

/// A PTX identifier for a specialization.
std::string specializationName(const stdlib_kernels::Entry &e) {
  return (Twine(e.kernel) + "_" + e.dtype + "_d" + Twine(e.headDim) +
          (e.causal ? "_causal" : "") + (e.hopper ? "" : "_sm80"))
      .str();
}

} // namespace

AttentionLaunches::AttentionLaunches(ModuleOp module, SymbolTable &symbols,
                                     bool hopper)
    : module(module), symbols(symbols), hopper(hopper),
      b(module.getContext()) {}

FailureOr<FlatSymbolRefAttr>
AttentionLaunches::kernel(const stdlib_kernels::Entry &e, Location loc) {
  if (FlatSymbolRefAttr done = loaded.lookup(&e))
    return done;
  ParserConfig config(module.getContext());
  OwningOpRef<ModuleOp> parsed =
      parseSourceString<ModuleOp>(e.ir, config, "stdlib kernel");
  func::FuncOp fn;
  if (parsed)
    fn = parsed->lookupSymbol<func::FuncOp>(e.kernel);
  if (!fn)
    return emitError(loc) << "the built-in Tile IR of stdlib kernel '"
                          << e.kernel << "' (" << e.dtype << ", head dim "
                          << e.headDim << ") does not parse; the compiler "
                          << "was built from inconsistent sources";
  fn->remove();
  fn.setName(specializationName(e));
  module.getBody()->push_back(fn);
  symbols.insert(fn);
  auto ref = FlatSymbolRefAttr::get(fn.getSymNameAttr());
  loaded[&e] = ref;
  return ref;
}

namespace {

/// Where an attention op's operand comes from or its result goes: an
/// input or result of its group, and whether through a head transpose
/// ([B, S, H, D] in memory, read or written as [B, S, H*D]).
struct Place {
  int64_t index = -1;
  bool heads = false;
};

/// The group input that `v`, an operand of the group's attention op, reads:
/// a block argument, or one through a head transpose. Nullopt otherwise.
std::optional<Place> inputPlace(Value v, Block &body) {
  Place p;
  if (Operation *def = v.getDefiningOp()) {
    if (!tsched::isHeadTranspose(def))
      return std::nullopt;
    v = def->getOperand(0);
    p.heads = true;
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &body)
    return std::nullopt;
  p.index = arg.getArgNumber();
  return p;
}

/// The attention op of an attention group's body, with the head transposes
/// (of its operands before it, of its results after it) that the kernels
/// read and write in place; null if the body holds anything else.
Operation *attentionOf(Block &body) {
  Operation *found = nullptr;
  for (Operation &op : body.without_terminator()) {
    if (tsched::isHeadTranspose(&op))
      continue;
    if (found || !isa<tg::AttentionOp, tg::AttentionGradOp>(op))
      return nullptr;
    found = &op;
  }
  return found;
}

/// The group result each result of `op` is yielded as, directly or through
/// its one reader, a head transpose; nullopt if one is not yielded, or
/// yielded more than once or otherwise read.
std::optional<SmallVector<Place>> resultPlaces(Operation *op, Block &body) {
  Operation *yield = body.getTerminator();
  SmallVector<Place> places(op->getNumResults());
  for (auto [i, v] : llvm::enumerate(yield->getOperands())) {
    Value from = v;
    bool heads = false;
    if (Operation *def = v.getDefiningOp();
        def && tsched::isHeadTranspose(def)) {
      from = def->getOperand(0);
      heads = true;
    }
    auto r = dyn_cast<OpResult>(from);
    if (!r || r.getOwner() != op || places[r.getResultNumber()].index != -1)
      return std::nullopt;
    places[r.getResultNumber()] = {int64_t(i), heads};
  }
  for (auto [r, p] : llvm::zip(op->getResults(), places))
    if (p.index == -1 || !r.hasOneUse())
      return std::nullopt;
  return places;
}

} // namespace

LogicalResult AttentionLaunches::generate(tsched::GroupOp group) {
  Block &body = group.getBodyBlock();
  auto noKernel = [&](const Twine &why) {
    group->setAttr("tsched.no_kernel", b.getStringAttr(why));
    return success();
  };
  Operation *op = attentionOf(body);
  if (!op)
    return noKernel("an attention group holds one tgraph.attention or "
                    "tgraph.attention_grad, and head transposes of its "
                    "operands and results");
  bool forward = isa<tg::AttentionOp>(op);
  if (!tg::isGpuFlashAttention(op))
    return noKernel("flash attention takes bf16 or f16 operands of one "
                    "static shape [..., S, 64 or 128], rank 3 or 4, at most "
                    "65535 batch x heads, and no policy but accum = f32");
  // Where each operand comes from (an input of the group) and where each
  // result goes (a result of the group).
  SmallVector<Place> inputOf;
  for (Value v : op->getOperands()) {
    std::optional<Place> p = inputPlace(v, body);
    if (!p)
      return noKernel("the attention op reads a value computed in its "
                      "group other than a head transpose of an input");
    inputOf.push_back(*p);
  }
  std::optional<SmallVector<Place>> resultOf = resultPlaces(op, body);
  if (!resultOf)
    return noKernel("an attention group yields each result of its op once, "
                    "as it is or through a head transpose");

  auto q = cast<RankedTensorType>(op->getOperand(0).getType());
  ArrayRef<int64_t> shape = q.getShape();
  int64_t d = shape.back(), seq = shape[shape.size() - 2], bh = 1;
  for (int64_t s : shape.drop_back(2))
    bh *= s;
  bool causal = op->hasAttr("causal");
  auto scaleAttr = op->getAttrOfType<FloatAttr>("scale");
  double scale =
      scaleAttr ? scaleAttr.getValueAsDouble() : 1.0 / std::sqrt(double(d));
  std::string dtype = q.getElementType().isBF16() ? "bf16" : "f16";

  auto entry = [&](StringRef name) -> const stdlib_kernels::Entry * {
    return stdlib_kernels::find(name, dtype, d, causal, hopper);
  };
  const stdlib_kernels::Entry *fwd = entry("flash_attention_fwd");
  const stdlib_kernels::Entry *dq = entry("flash_attention_bwd_dq");
  const stdlib_kernels::Entry *dkdv = entry("flash_attention_bwd_dkdv");
  if (!fwd || !dq || !dkdv)
    return noKernel(Twine("the stdlib table has no flash-attention kernels "
                          "for ") +
                    dtype + ", head dim " + Twine(d));

  // A tensor is read as [BH, S, D], or with its heads side by side in
  // each row as [B, S, H*D] (a head transpose's operand, [B, S, H, D]).
  SmallVector<int64_t> rows = {bh, seq, d}, stats = {bh, seq};
  SmallVector<int64_t> headRows =
      shape.size() == 4 ? SmallVector<int64_t>{shape[0], seq, shape[1] * d}
                        : rows;
  auto ref = [&](LaunchArg kind, int64_t index, ArrayRef<int64_t> dims) {
    return launchArg(b, kind, index, dims);
  };
  auto in = [&](int64_t operand) {
    const Place &p = inputOf[operand];
    return ref(LaunchArg::Input, p.index, p.heads ? headRows : rows);
  };
  auto out = [&](int64_t result) {
    const Place &p = (*resultOf)[result];
    return ref(LaunchArg::Result, p.index, p.heads ? headRows : rows);
  };
  auto scaleF32 = b.getF32FloatAttr(float(scale));
  SmallVector<Attribute> launches;
  auto launch = [&](const stdlib_kernels::Entry &e, int64_t programs,
                    ArrayRef<Attribute> args) -> LogicalResult {
    FailureOr<FlatSymbolRefAttr> k = kernel(e, group.getLoc());
    if (failed(k))
      return failure();
    launches.push_back(launchEntry(
        b, *k, {int64_t(llvm::divideCeil(seq, programs)), bh}, args,
        e.schedule, {scaleF32}));
    return success();
  };
  Type f32 = b.getF32Type();
  SmallVector<Attribute> scratch;

  if (forward) {
    // o, and the lse saved with it.
    SmallVector<Attribute> saved(group.getNumResults(), b.getUnitAttr());
    int64_t o = (*resultOf)[0].index;
    saved[o] = TypeAttr::get(MemRefType::get(stats, f32));
    if (failed(launch(*fwd, fwd->blockM,
                      {in(0), in(1), in(2), out(0),
                       ref(LaunchArg::SavedWithResult, o, stats)})))
      return failure();
    group->setAttr("tsched.saved", b.getArrayAttr(saved));
  } else {
    // q, k, v, o, do -> dq, dk, dv.
    Attribute lse;
    // The forward group that computed o (read as it was written: the
    // group's attention writes it through a head transpose exactly when
    // this one reads it through one) from the same q, k, v read the same
    // way, with the same mask and scale, saved its lse.
    Value o = group.getInputs()[inputOf[3].index];
    auto producer = o.getDefiningOp<tsched::GroupOp>();
    Operation *pop =
        producer && producer.getKind() == tsched::GroupKind::Attention &&
                producer->hasAttr("tsched.saved")
            ? attentionOf(producer.getBodyBlock())
            : nullptr;
    if (pop && isa<tg::AttentionOp>(pop)) {
      Block &pb = producer.getBodyBlock();
      auto sameInput = [&](int64_t operand) {
        std::optional<Place> p = inputPlace(pop->getOperand(operand), pb);
        return p && p->heads == inputOf[operand].heads &&
               producer.getInputs()[p->index] ==
                   group.getInputs()[inputOf[operand].index];
      };
      std::optional<SmallVector<Place>> written = resultPlaces(pop, pb);
      if (written &&
          (*written)[0].index == cast<OpResult>(o).getResultNumber() &&
          (*written)[0].heads == inputOf[3].heads && sameInput(0) &&
          sameInput(1) && sameInput(2) && pop->hasAttr("causal") == causal &&
          pop->getAttr("scale") == op->getAttr("scale"))
        lse = ref(LaunchArg::SavedWithInput, inputOf[3].index, stats);
    }
    if (!lse) {
      // The forward again, into temporaries: o' (unused) and the lse.
      scratch.push_back(
          TypeAttr::get(MemRefType::get(rows, q.getElementType())));
      scratch.push_back(TypeAttr::get(MemRefType::get(stats, f32)));
      lse = ref(LaunchArg::Scratch, 1, stats);
      if (failed(launch(
              *fwd, fwd->blockM,
              {in(0), in(1), in(2), ref(LaunchArg::Scratch, 0, rows), lse})))
        return failure();
    }
    Attribute delta = ref(LaunchArg::Scratch, int64_t(scratch.size()), stats);
    scratch.push_back(TypeAttr::get(MemRefType::get(stats, f32)));
    if (failed(
            launch(*dq, dq->blockM,
                   {in(0), in(1), in(2), in(3), in(4), lse, delta, out(0)})) ||
        failed(
            launch(*dkdv, dkdv->blockN,
                   {in(0), in(1), in(2), in(4), lse, delta, out(1), out(2)})))
      return failure();
    group->setAttr("tsched.scratch", b.getArrayAttr(scratch));
  }
  group->setAttr("tsched.launches", b.getArrayAttr(launches));
  return success();
}
