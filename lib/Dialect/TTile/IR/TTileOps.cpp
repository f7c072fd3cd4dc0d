//===- TTileOps.cpp - Tile IR op verifiers and assembly -------------------===//

#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::tessera::ttile;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// `x`, `y` or `z` for grid dims 0..2.
static ParseResult parseGridDim(OpAsmParser &parser, IntegerAttr &dim) {
  StringRef name;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&name))
    return failure();
  int32_t d = name == "x" ? 0 : name == "y" ? 1 : name == "z" ? 2 : -1;
  if (d < 0)
    return parser.emitError(loc)
           << "expected grid dim x, y or z, got '" << name << "'";
  dim = parser.getBuilder().getI32IntegerAttr(d);
  return success();
}

static void printGridDim(OpAsmPrinter &p, Operation *, IntegerAttr dim) {
  int64_t d = dim.getInt();
  p << (d == 0 ? "x" : d == 1 ? "y" : d == 2 ? "z" : "?");
}

#define GET_OP_CLASSES
#include "tessera/Dialect/TTile/IR/TTileOps.cpp.inc"

namespace {

RankedTensorType tileOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A tile's encoding must be a layout of its rank.
LogicalResult checkLayout(Operation *op, Value v, StringRef what) {
  auto t = tileOf(v);
  Attribute enc = t.getEncoding();
  if (!enc)
    return success();
  if (!isLayout(enc))
    return op->emitOpError()
           << what << " has encoding " << enc << ", which is not a tile layout";
  if (layoutRank(enc) != t.getRank())
    return op->emitOpError()
           << what << " is " << t.getRank() << "-d but its layout describes "
           << layoutRank(enc) << "-d tiles";
  return success();
}

LogicalResult checkLayouts(Operation *op) {
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (isa<RankedTensorType>(v.getType()) &&
        failed(checkLayout(op, v, "operand " + std::to_string(i))))
      return failure();
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (isa<RankedTensorType>(v.getType()) &&
        failed(checkLayout(op, v, "result " + std::to_string(i))))
      return failure();
  return success();
}

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

/// The slice layout `dim` of `parent` (null for no layout).
Attribute sliceOf(Attribute parent, unsigned dim) {
  if (!parent)
    return {};
  return SliceAttr::get(parent.getContext(), dim, parent);
}

LogicalResult memoryAccess(Operation *op, Type memory, ValueRange indices,
                           RankedTensorType tile, Value mask) {
  auto mem = dyn_cast<MemRefType>(memory);
  if (!mem)
    return op->emitOpError() << "needs a ranked memref, got " << memory;
  if (Attribute space = mem.getMemorySpace()) {
    auto gpuSpace = dyn_cast<gpu::AddressSpaceAttr>(space);
    if (!gpuSpace || (gpuSpace.getValue() != gpu::AddressSpace::Global &&
                      gpuSpace.getValue() != gpu::AddressSpace::Workgroup))
      return op->emitOpError() << "memory must be global (no memory space or "
                                  "#gpu.address_space<global>) or shared "
                                  "(#gpu.address_space<workgroup>), got "
                               << space;
  }
  if (mem.getRank() != tile.getRank())
    return op->emitOpError()
           << "the tile is " << tile.getRank() << "-d but the memref is "
           << mem.getRank() << "-d (use unit tile dims)";
  if (int64_t(indices.size()) != mem.getRank())
    return op->emitOpError() << "takes one index per memref dim ("
                             << mem.getRank() << "), got " << indices.size();
  if (mem.getElementType() != tile.getElementType())
    return op->emitOpError()
           << "the tile's elements are " << tile.getElementType()
           << " but the memref's " << mem.getElementType();
  if (mask && tileOf(mask).getShape() != tile.getShape())
    return op->emitOpError()
           << "the mask is " << shapeStr(tileOf(mask).getShape())
           << " but the tile " << shapeStr(tile.getShape());
  return checkLayouts(op);
}

} // namespace

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

LogicalResult ProgramIdOp::verify() {
  if (getDim() > 2)
    return emitOpError() << "grid dims are x, y and z (0..2), got " << getDim();
  return success();
}

LogicalResult NumProgramsOp::verify() {
  if (getDim() > 2)
    return emitOpError() << "grid dims are x, y and z (0..2), got " << getDim();
  return success();
}

LogicalResult LoadOp::verify() {
  if (auto pad = getPaddingAttr())
    if (pad.getType() != getType().getElementType())
      return emitOpError() << "padding " << pad << " is not a "
                           << getType().getElementType();
  if (getMulticast()) {
    auto fn = (*this)->getParentOfType<func::FuncOp>();
    auto cluster =
        fn ? fn->getAttrOfType<IntegerAttr>("ttile.cluster") : IntegerAttr();
    if (!cluster || cluster.getInt() < 2)
      return emitOpError() << "is 'multicast' in a kernel without clusters: "
                              "the kernel needs ttile.cluster >= 2, got "
                           << (cluster ? std::to_string(cluster.getInt())
                                       : std::string("none"));
    auto mem = dyn_cast<MemRefType>(getSource().getType());
    auto space =
        mem ? dyn_cast_or_null<gpu::AddressSpaceAttr>(mem.getMemorySpace())
            : gpu::AddressSpaceAttr();
    if (!mem || (space && space.getValue() == gpu::AddressSpace::Workgroup))
      return emitOpError() << "multicasts a tile of global memory, got "
                           << getSource().getType();
  }
  return memoryAccess(*this, getSource().getType(), getIndices(), getType(),
                      getMask());
}

LogicalResult StoreOp::verify() {
  return memoryAccess(*this, getDest().getType(), getIndices(),
                      tileOf(getValue()), getMask());
}

LogicalResult DotOp::verify() {
  auto a = tileOf(getA()), b = tileOf(getB()), acc = tileOf(getAcc());
  if (getType() != acc)
    return emitOpError() << "the result has the accumulator's type " << acc
                         << ", got " << getType();
  if (a.getRank() != 2 || b.getRank() != 2 || acc.getRank() != 2)
    return emitOpError() << "multiplies 2-d tiles, got " << a.getRank()
                         << "-d, " << b.getRank() << "-d and " << acc.getRank()
                         << "-d";
  if (a.getDimSize(1) != b.getDimSize(0) ||
      acc.getDimSize(0) != a.getDimSize(0) ||
      acc.getDimSize(1) != b.getDimSize(1))
    return emitOpError() << "shapes do not chain: a " << shapeStr(a.getShape())
                         << " x b " << shapeStr(b.getShape()) << " + acc "
                         << shapeStr(acc.getShape())
                         << " (want [M, K] x [K, N] + [M, N])";
  Type ea = a.getElementType(), eb = b.getElementType(),
       ec = acc.getElementType();
  auto isFp8 = [](Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); };
  bool ok = false;
  if (isFp8(ea) && isFp8(eb))
    ok = ec.isF32();
  else if (ea != eb)
    ok = false;
  else if (ea.isBF16() || ea.isTF32() || ea.isF32())
    ok = ec.isF32();
  else if (ea.isF16())
    ok = ec.isF32() || ec.isF16();
  else if (ea.isInteger(8))
    ok = ec.isInteger(32);
  if (!ok)
    return emitOpError()
           << "has no tensor-core form for " << ea << " x " << eb << " -> "
           << ec
           << " (bf16, tf32, f32 or fp8 -> f32; f16 -> f32 or f16; i8 -> i32)";
  if (getTf32() && !(ea.isF32() && eb.isF32()))
    return emitOpError() << "tf32 reads f32 operands as tf32; the operands are "
                         << ea << " and " << eb;
  if (failed(checkLayouts(*this)))
    return failure();
  Attribute la = a.getEncoding(), lb = b.getEncoding(), lc = acc.getEncoding();
  if (!lc) {
    if (la || lb)
      return emitOpError() << "operands have layouts but the accumulator has "
                              "none";
    return success();
  }
  Attribute operandLayouts[] = {la, lb};
  if (auto mma = dyn_cast<MmaAttr>(lc); mma && mma.getVersion() == 3) {
    // wgmma reads B from shared memory, A from shared memory or registers.
    auto aReg = dyn_cast_or_null<DotOperandAttr>(la);
    if (!isa_and_nonnull<SharedAttr>(la) &&
        !(aReg && aReg.getOpIdx() == 0 && aReg.getParent() == lc))
      return emitOpError() << "operand a of a wgmma (#ttile.mma version 3) "
                              "dot must be a #ttile.shared tile or "
                              "#ttile.dot_operand<opIdx = 0, parent = "
                           << lc << ", ...>, got " << (la ? la : Attribute());
    if (!isa_and_nonnull<SharedAttr>(lb))
      return emitOpError() << "operand b of a wgmma (#ttile.mma version 3) "
                              "dot must be a #ttile.shared tile, got "
                           << (lb ? lb : Attribute());
    return success();
  }
  for (auto [i, l] : llvm::enumerate(operandLayouts)) {
    auto dot = dyn_cast_or_null<DotOperandAttr>(l);
    if (!dot || dot.getOpIdx() != i || dot.getParent() != lc)
      return emitOpError() << "operand " << (i ? "b" : "a")
                           << " must have layout #ttile.dot_operand<opIdx = "
                           << i << ", parent = " << lc << ", ...>, got "
                           << (l ? l : Attribute());
  }
  return success();
}

LogicalResult ReduceOp::verify() {
  auto src = tileOf(getSource());
  if (getDim() >= src.getRank())
    return emitOpError() << "dim " << getDim() << " is not a dim of a "
                         << src.getRank() << "-d tile";
  SmallVector<int64_t> shape(src.getShape());
  shape.erase(shape.begin() + getDim());
  auto want = RankedTensorType::get(shape, src.getElementType(),
                                    sliceOf(src.getEncoding(), getDim()));
  if (getType() != want)
    return emitOpError() << "reducing dim " << getDim() << " of " << src
                         << " gives " << want << ", not " << getType();
  return checkLayouts(*this);
}

LogicalResult BroadcastOp::verify() {
  auto src = tileOf(getSource()), res = getType();
  ArrayRef<int64_t> dims = getDims();
  if (src.getElementType() != res.getElementType())
    return emitOpError() << "changes the element type";
  if (int64_t(dims.size()) != src.getRank())
    return emitOpError() << "needs one target dim per operand dim ("
                         << src.getRank() << "), got " << dims.size();
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= res.getRank() || (i && d <= dims[i - 1]))
      return emitOpError() << "dims must increase and lie in [0, "
                           << res.getRank() << "), got " << shapeStr(dims);
    int64_t s = src.getDimSize(i);
    if (s != 1 && s != res.getDimSize(d))
      return emitOpError() << "operand dim " << i << " (" << s
                           << ") is neither 1 nor result dim " << d << " ("
                           << res.getDimSize(d) << ")";
  }
  if (failed(checkLayouts(*this)))
    return failure();
  Attribute ls = src.getEncoding(), lr = res.getEncoding();
  if (src.getRank() == res.getRank() && ls != lr)
    return emitOpError() << "keeps the rank, so the layout must stay: " << ls
                         << " vs " << lr;
  if (src.getRank() + 1 == res.getRank() && lr) {
    int64_t added = 0;
    while (added < int64_t(dims.size()) && dims[added] == added)
      ++added;
    if (ls != sliceOf(lr, unsigned(added)))
      return emitOpError() << "the operand's layout must be "
                           << sliceOf(lr, unsigned(added)) << ", got " << ls;
  }
  return success();
}

LogicalResult TransposeOp::verify() {
  auto src = tileOf(getSource()), res = getType();
  ArrayRef<int64_t> perm = getPermutation();
  if (int64_t(perm.size()) != src.getRank())
    return emitOpError() << "permutation " << shapeStr(perm) << " for a "
                         << src.getRank() << "-d tile";
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= src.getRank() || seen[p])
      return emitOpError() << shapeStr(perm) << " is not a permutation";
    seen[p] = true;
    shape.push_back(src.getDimSize(p));
  }
  if (res.getShape() != ArrayRef<int64_t>(shape) ||
      res.getElementType() != src.getElementType())
    return emitOpError() << "transposing " << src << " by " << shapeStr(perm)
                         << " gives shape " << shapeStr(shape) << ", not "
                         << res;
  // A shared tile transposed is a view of the same buffer: its order is
  // the source's, renumbered.
  auto srcShared = dyn_cast_or_null<SharedAttr>(src.getEncoding());
  auto resShared = dyn_cast_or_null<SharedAttr>(res.getEncoding());
  if (srcShared || resShared) {
    SmallVector<int64_t> inverse(perm.size()), order;
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = i;
    if (srcShared)
      for (int64_t d : srcShared.getOrder())
        order.push_back(inverse[d]);
    if (!srcShared || !resShared ||
        resShared.getSwizzle() != srcShared.getSwizzle() ||
        resShared.getOrder() != ArrayRef<int64_t>(order))
      return emitOpError() << "a transpose of a #ttile.shared tile is the "
                              "same buffer with its order renumbered: "
                           << (srcShared ? SharedAttr::get(
                                               getContext(),
                                               srcShared.getSwizzle(), order)
                                         : Attribute())
                           << " for " << src << ", got " << res;
  }
  return checkLayouts(*this);
}

LogicalResult IotaOp::verify() {
  if (getDim() >= getType().getRank())
    return emitOpError() << "dim " << getDim() << " is not a dim of a "
                         << getType().getRank() << "-d tile";
  return checkLayouts(*this);
}

LogicalResult CastOp::verify() {
  auto src = tileOf(getSource()), res = getType();
  if (src.getShape() != res.getShape() ||
      src.getEncoding() != res.getEncoding())
    return emitOpError() << "changes only the element type: " << src << " vs "
                         << res;
  if (getStochasticRound() != bool(getSeed()))
    return emitOpError() << "stochastic_round and the seed operand go "
                            "together";
  if (getStochasticRound() &&
      (!isa<FloatType>(src.getElementType()) ||
       !isa<FloatType>(res.getElementType()) ||
       res.getElementType().getIntOrFloatBitWidth() >=
           src.getElementType().getIntOrFloatBitWidth()))
    return emitOpError() << "stochastic rounding narrows a float type";
  return checkLayouts(*this);
}

LogicalResult ConvertLayoutOp::verify() {
  auto src = tileOf(getSource()), res = getType();
  if (src.getShape() != res.getShape() ||
      src.getElementType() != res.getElementType())
    return emitOpError() << "changes only the layout: " << src << " vs " << res;
  return checkLayouts(*this);
}

OpFoldResult ConvertLayoutOp::fold(FoldAdaptor) {
  if (getSource().getType() == getType())
    return getSource();
  if (auto inner = getSource().getDefiningOp<ConvertLayoutOp>())
    if (inner.getSource().getType() == getType())
      return inner.getSource();
  return {};
}

static LogicalResult verifyMask(Operation *op, RankedTensorType scores,
                                RankedTensorType result) {
  if (scores.getRank() != 2 || result != scores)
    return op->emitOpError() << "masks a 2-d score tile into one of its type, "
                                "got "
                             << scores << " -> " << result;
  return checkLayouts(op);
}

LogicalResult MaskCausalOp::verify() {
  return verifyMask(*this, getScores().getType(), getType());
}

LogicalResult MaskKeysOp::verify() {
  return verifyMask(*this, getScores().getType(), getType());
}

LogicalResult SoftmaxOnlineOp::verify() {
  auto s = tileOf(getScores());
  if (s.getRank() != 2)
    return emitOpError() << "takes a 2-d score tile, got " << s;
  if (getP().getType() != s)
    return emitOpError() << "p has the scores' type " << s;
  auto row = RankedTensorType::get({s.getDimSize(0)}, s.getElementType(),
                                   sliceOf(s.getEncoding(), 1));
  if (getMC().getType() != row || getLC().getType() != row)
    return emitOpError() << "the row maximum and sum are " << row;
  return checkLayouts(*this);
}

LogicalResult SoftmaxAccumulateOp::verify() {
  auto acc = tileOf(getAcc()), p = tileOf(getP()), v = tileOf(getV());
  if (acc.getRank() != 2 || p.getRank() != 2 || v.getRank() != 2)
    return emitOpError() << "acc, p and v are 2-d tiles";
  int64_t m = acc.getDimSize(0), d = acc.getDimSize(1);
  if (p.getDimSize(0) != m || v.getDimSize(1) != d ||
      p.getDimSize(1) != v.getDimSize(0))
    return emitOpError() << "shapes do not chain: acc "
                         << shapeStr(acc.getShape()) << ", p "
                         << shapeStr(p.getShape()) << ", v "
                         << shapeStr(v.getShape())
                         << " (want [M, D], [M, N], [N, D])";
  for (Value r : {getM(), getL(), getMC(), getLC()})
    if (tileOf(r).getShape() != ArrayRef<int64_t>{m})
      return emitOpError() << "row statistics are [" << m << "], got "
                           << r.getType();
  if (getMC().getType() != getM().getType() ||
      getLC().getType() != getL().getType())
    return emitOpError() << "the block's statistics have the running ones' "
                            "types";
  if (getNewAcc().getType() != acc || getNewM().getType() != getM().getType() ||
      getNewL().getType() != getL().getType())
    return emitOpError() << "results have the types of acc, m and l";
  return checkLayouts(*this);
}

//===----------------------------------------------------------------------===//
// ttile.range
//===----------------------------------------------------------------------===//

ParseResult RangeOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::Argument iv;
  OpAsmParser::UnresolvedOperand lb, ub, step;
  Type index = parser.getBuilder().getIndexType();
  if (parser.parseArgument(iv) || parser.parseEqual() ||
      parser.parseOperand(lb) || parser.parseKeyword("to") ||
      parser.parseOperand(ub) || parser.parseKeyword("step") ||
      parser.parseOperand(step))
    return failure();
  iv.type = index;
  if (succeeded(parser.parseOptionalKeyword("stages"))) {
    int32_t stages;
    if (parser.parseInteger(stages))
      return failure();
    result.addAttribute("stages",
                        parser.getBuilder().getI32IntegerAttr(stages));
  }
  SmallVector<OpAsmParser::Argument> args = {iv};
  SmallVector<OpAsmParser::UnresolvedOperand> inits;
  if (succeeded(parser.parseOptionalKeyword("iter_args"))) {
    if (parser.parseAssignmentList(args, inits) ||
        parser.parseArrowTypeList(result.types))
      return failure();
  }
  if (args.size() != inits.size() + 1 || result.types.size() != inits.size())
    return parser.emitError(parser.getCurrentLocation())
           << "iter_args and result types do not match";
  for (auto [arg, t] : llvm::zip(llvm::drop_begin(args), result.types))
    arg.type = t;
  if (parser.resolveOperand(lb, index, result.operands) ||
      parser.resolveOperand(ub, index, result.operands) ||
      parser.resolveOperand(step, index, result.operands) ||
      parser.resolveOperands(inits, result.types, parser.getCurrentLocation(),
                             result.operands))
    return failure();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, args) ||
      parser.parseOptionalAttrDict(result.attributes))
    return failure();
  RangeOp::ensureTerminator(*body, parser.getBuilder(), result.location);
  return success();
}

void RangeOp::print(OpAsmPrinter &p) {
  p << " " << getInductionVar() << " = " << getLowerBound() << " to "
    << getUpperBound() << " step " << getStep();
  if (getStages() != 1)
    p << " stages " << getStages();
  if (!getInits().empty()) {
    p << " iter_args(";
    llvm::interleaveComma(
        llvm::zip(getBody().getArguments().drop_front(), getInits()), p,
        [&](auto pair) {
          p << std::get<0>(pair) << " = " << std::get<1>(pair);
        });
    p << ") -> (" << getResultTypes() << ")";
  }
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/!getInits().empty());
  p.printOptionalAttrDict((*this)->getAttrs(), {"stages"});
}

LogicalResult RangeOp::verify() {
  if (getStages() < 1)
    return emitOpError() << "stages must be >= 1, got " << getStages();
  Block &body = getBody().front();
  if (body.getNumArguments() != getInits().size() + 1 ||
      !body.getArgument(0).getType().isIndex())
    return emitOpError() << "the body takes the index and one value per "
                            "iter_arg";
  for (auto [i, init, arg, res] : llvm::enumerate(
           getInits(), body.getArguments().drop_front(), getResults()))
    if (init.getType() != arg.getType() || init.getType() != res.getType())
      return emitOpError() << "iter_arg " << i << " is " << init.getType()
                           << " but its block argument / result is "
                           << arg.getType() << " / " << res.getType();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (TypeRange(yield.getValues()) != getResultTypes())
    return emitOpError() << "the body yields " << yield.getValues().getTypes()
                         << ", the loop carries " << getResultTypes();
  return success();
}
