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
// Every tensor is read as [BH, S, D] (the batch and head dims folded).
//
//===----------------------------------------------------------------------===//

#include "GroupKernel.h"
#include "StdlibKernels.h"

#include "tessera/Dialect/TGraph/Transforms/Passes.h"

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

LogicalResult AttentionLaunches::generate(tsched::GroupOp group) {
  Block &body = group.getBodyBlock();
  auto noKernel = [&](const Twine &why) {
    group->setAttr("tsched.no_kernel", b.getStringAttr(why));
    return success();
  };
  if (!llvm::hasSingleElement(body.without_terminator()))
    return noKernel("an attention group holds one attention op");
  Operation *op = &body.front();
  bool forward = isa<tg::AttentionOp>(op);
  if (!forward && !isa<tg::AttentionGradOp>(op))
    return noKernel("an attention group holds tgraph.attention or "
                    "tgraph.attention_grad");
  if (!tg::isGpuFlashAttention(op))
    return noKernel("flash attention takes bf16 or f16 operands of one "
                    "static shape [..., S, 64 or 128], rank 3 or 4, at most "
                    "65535 batch x heads, and no policy but accum = f32");
  // Where each operand comes from (an input of the group) and where each
  // result goes (a result of the group).
  SmallVector<int64_t> inputOf;
  for (Value v : op->getOperands()) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &body)
      return noKernel("the attention op reads a value computed in its group");
    inputOf.push_back(arg.getArgNumber());
  }
  Operation *yield = body.getTerminator();
  SmallVector<int64_t> resultOf(op->getNumResults(), -1);
  for (auto [i, v] : llvm::enumerate(yield->getOperands())) {
    auto r = dyn_cast<OpResult>(v);
    if (!r || r.getOwner() != op || resultOf[r.getResultNumber()] != -1)
      return noKernel("an attention group yields each result of its op once");
    resultOf[r.getResultNumber()] = int64_t(i);
  }
  if (llvm::is_contained(resultOf, -1))
    return noKernel("an attention group yields every result of its op");

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

  SmallVector<int64_t> rows = {bh, seq, d}, stats = {bh, seq};
  auto ref = [&](LaunchArg kind, int64_t index, ArrayRef<int64_t> dims) {
    return launchArg(b, kind, index, dims);
  };
  auto in = [&](int64_t operand, ArrayRef<int64_t> dims) {
    return ref(LaunchArg::Input, inputOf[operand], dims);
  };
  auto out = [&](int64_t result) {
    return ref(LaunchArg::Result, resultOf[result], rows);
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
    saved[resultOf[0]] = TypeAttr::get(MemRefType::get(stats, f32));
    if (failed(launch(*fwd, fwd->blockM,
                      {in(0, rows), in(1, rows), in(2, rows), out(0),
                       ref(LaunchArg::SavedWithResult, resultOf[0], stats)})))
      return failure();
    group->setAttr("tsched.saved", b.getArrayAttr(saved));
  } else {
    // q, k, v, o, do -> dq, dk, dv.
    Attribute lse;
    Value o = group.getInputs()[inputOf[3]];
    auto producer = o.getDefiningOp<tsched::GroupOp>();
    if (producer && producer.getKind() == tsched::GroupKind::Attention &&
        producer->hasAttr("tsched.saved")) {
      Block &pb = producer.getBodyBlock();
      Operation *pop = &pb.front();
      auto r = cast<OpResult>(o);
      auto sameInput = [&](int64_t operand) {
        auto arg = cast<BlockArgument>(pop->getOperand(operand));
        return producer.getInputs()[arg.getArgNumber()] ==
               group.getInputs()[inputOf[operand]];
      };
      auto yielded = dyn_cast<OpResult>(
          pb.getTerminator()->getOperand(r.getResultNumber()));
      if (isa<tg::AttentionOp>(pop) && yielded && yielded.getOwner() == pop &&
          sameInput(0) && sameInput(1) && sameInput(2) &&
          pop->hasAttr("causal") == causal &&
          pop->getAttr("scale") == op->getAttr("scale"))
        lse = ref(LaunchArg::SavedWithInput, inputOf[3], stats);
    }
    if (!lse) {
      // The forward again, into temporaries: o' (unused) and the lse.
      scratch.push_back(
          TypeAttr::get(MemRefType::get(rows, q.getElementType())));
      scratch.push_back(TypeAttr::get(MemRefType::get(stats, f32)));
      lse = ref(LaunchArg::Scratch, 1, stats);
      if (failed(launch(*fwd, fwd->blockM,
                        {in(0, rows), in(1, rows), in(2, rows),
                         ref(LaunchArg::Scratch, 0, rows), lse})))
        return failure();
    }
    Attribute delta = ref(LaunchArg::Scratch, int64_t(scratch.size()), stats);
    scratch.push_back(TypeAttr::get(MemRefType::get(stats, f32)));
    if (failed(launch(*dq, dq->blockM,
                      {in(0, rows), in(1, rows), in(2, rows), in(3, rows),
                       in(4, rows), lse, delta, out(0)})) ||
        failed(launch(*dkdv, dkdv->blockN,
                      {in(0, rows), in(1, rows), in(2, rows), in(4, rows),
                       lse, delta, out(1), out(2)})))
      return failure();
    group->setAttr("tsched.scratch", b.getArrayAttr(scratch));
  }
  group->setAttr("tsched.launches", b.getArrayAttr(launches));
  return success();
}
