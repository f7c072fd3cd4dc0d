//===- LayoutKernel.cpp - Copy kernels of GPU layout groups ---------------===//
//
// A layout group (one tgraph.transpose, slice, concat or pad) is a set of
// pieces: boxes of the output, each copied from a box of an input (read
// through the op's permutation and strides) or filled with the pad value.
// Each piece is a kernel and a launch of the group's launch list. A
// program copies a [BM, BN] tile of one 2-D slab of its piece: the
// piece's last two output dims, at one index of the dims before them.
// The slab is a rank-reducing memref.subview of the input and of the
// output, so rows may be strided (a transpose of leading dims, a slice
// with steps); the last dim must stay last with step 1, which keeps each
// row's elements consecutive. Tiles past a slab's edge are masked by the
// subview's sizes. A broadcast along the slab's rows reads the one row of
// the input's slab and repeats it down the tile.
//
//===----------------------------------------------------------------------===//

#include "GroupKernel.h"

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::group_kernels;

namespace {

struct Piece {
  /// The input it reads, or -1 for the pad value.
  int64_t input = -1;
  /// Output box: offsets and sizes per output dim.
  SmallVector<int64_t> outOffset, size;
  /// Input dim read by each output dim, and per input dim the offset of
  /// the box's first element and the step between its elements.
  SmallVector<int64_t> perm, inOffset, inStep;
};

/// Pieces of `op`, or why it has none.
FailureOr<SmallVector<Piece, 4>> piecesOf(Operation *op, std::string &why) {
  auto out = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = out.getRank();
  SmallVector<int64_t> identity = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  auto whole = [&](int64_t input) {
    Piece p;
    p.input = input;
    p.outOffset.assign(rank, 0);
    p.size.assign(out.getShape().begin(), out.getShape().end());
    p.perm = identity;
    p.inOffset.assign(rank, 0);
    p.inStep.assign(rank, 1);
    return p;
  };
  SmallVector<Piece, 4> pieces;
  if (auto t = dyn_cast<tg::TransposeOp>(op)) {
    Piece p = whole(0);
    p.perm.assign(t.getPermutation().begin(), t.getPermutation().end());
    pieces.push_back(p);
  } else if (auto s = dyn_cast<tg::SliceOp>(op)) {
    Piece p = whole(0);
    std::vector<::tessera::shape::DimExpr> start = s.getStart().getDims();
    for (int64_t d = 0; d < rank; ++d) {
      std::optional<int64_t> c = start[d].getConstant();
      if (!c) {
        why = "a slice with a symbolic start";
        return failure();
      }
      p.inOffset[d] = *c;
      p.inStep[d] = s.getStride()[d];
    }
    pieces.push_back(p);
  } else if (auto c = dyn_cast<tg::ConcatOp>(op)) {
    int64_t dim = c.getDim(), at = 0;
    for (auto [i, v] : llvm::enumerate(c.getInputs())) {
      Piece p = whole(int64_t(i));
      int64_t n = cast<RankedTensorType>(v.getType()).getDimSize(dim);
      p.outOffset[dim] = at;
      p.size[dim] = n;
      at += n;
      if (n > 0)
        pieces.push_back(p);
    }
  } else if (auto pad = dyn_cast<tg::PadOp>(op)) {
    ArrayRef<int64_t> low = pad.getLow(), high = pad.getHigh();
    if (llvm::any_of(pad.getInterior(), [](int64_t i) { return i != 0; }) ||
        llvm::any_of(low, [](int64_t v) { return v < 0; }) ||
        llvm::any_of(high, [](int64_t v) { return v < 0; })) {
      why = "a pad with interior or negative padding";
      return failure();
    }
    auto in = cast<RankedTensorType>(pad.getX().getType());
    // The input's box, then the pad value around it: per dim, the slabs
    // below and above the input, within the input's range on the dims
    // before it.
    Piece inner = whole(0);
    for (int64_t d = 0; d < rank; ++d) {
      inner.outOffset[d] = low[d];
      inner.size[d] = in.getDimSize(d);
    }
    if (in.getNumElements() > 0)
      pieces.push_back(inner);
    for (int64_t d = 0; d < rank; ++d)
      for (bool below : {true, false}) {
        Piece p = whole(-1);
        for (int64_t e = 0; e < d; ++e) {
          p.outOffset[e] = low[e];
          p.size[e] = in.getDimSize(e);
        }
        p.outOffset[d] = below ? 0 : low[d] + in.getDimSize(d);
        p.size[d] = below ? low[d] : high[d];
        if (p.size[d] > 0 &&
            llvm::all_of(p.size, [](int64_t n) { return n > 0; }))
          pieces.push_back(p);
      }
  } else if (auto bc = dyn_cast<tg::BroadcastInDimOp>(op)) {
    // Output dims the input does not have, or has as a dim of one, read
    // the same elements at every index (perm -1).
    auto in = cast<RankedTensorType>(bc.getX().getType());
    Piece p = whole(0);
    p.perm.assign(rank, -1);
    p.inOffset.assign(in.getRank(), 0);
    p.inStep.assign(in.getRank(), 1);
    for (auto [d, k] : llvm::enumerate(bc.getBroadcastDimensions()))
      if (in.getDimSize(d) == out.getDimSize(k))
        p.perm[k] = int64_t(d);
    // (A broadcast along the second-last dim reads one row per slab and
    // repeats it down the tile.)
    pieces.push_back(p);
  } else {
    why = "no copy kernel for '" + op->getName().getStringRef().str() + "'";
    return failure();
  }
  for (const Piece &p : pieces) {
    if (p.input < 0)
      continue;
    int64_t inRank =
        cast<RankedTensorType>(op->getOperand(p.input).getType()).getRank();
    if (p.perm[rank - 1] != inRank - 1 || p.inStep[inRank - 1] != 1) {
      why = "a layout change that moves the last dim or steps along it";
      return failure();
    }
  }
  return pieces;
}

/// Shapes of rank 2 or more: rank 0 and 1 read as [1, ...].
SmallVector<int64_t> atLeast2(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.begin(), shape.end());
  while (s.size() < 2)
    s.insert(s.begin(), 1);
  return s;
}

} // namespace

LogicalResult LayoutKernels::generate(tsched::GroupOp group, StringRef fn) {
  Block &body = group.getBodyBlock();
  OpBuilder b(group.getContext());
  auto noKernel = [&](const Twine &why) {
    group->setAttr("tsched.no_kernel", b.getStringAttr(why));
    return success();
  };
  if (!llvm::hasSingleElement(body.without_terminator()) ||
      group.getNumResults() != 1)
    return noKernel("a layout group holds one op with one result");
  Operation *op = &body.front();
  // Reshapes and broadcasts that only add dims of one are views of the
  // host program.
  if (isa<tg::ReshapeOp>(op))
    return success();
  if (auto bc = dyn_cast<tg::BroadcastInDimOp>(op)) {
    auto in = cast<RankedTensorType>(bc.getX().getType());
    auto out = cast<RankedTensorType>(bc.getType());
    if (in.hasStaticShape() && out.hasStaticShape() &&
        in.getNumElements() == out.getNumElements() &&
        llvm::is_sorted(bc.getBroadcastDimensions()))
      return success();
  }
  if (body.getTerminator()->getOperand(0) != op->getResult(0))
    return noKernel("a layout group yields its op's result");
  SmallVector<int64_t> inputOf;
  for (Value v : op->getOperands()) {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &body)
      return noKernel("the layout op reads a value computed in its group");
    inputOf.push_back(arg.getArgNumber());
  }
  auto outType = cast<RankedTensorType>(op->getResult(0).getType());
  if (!outType.hasStaticShape() ||
      llvm::any_of(op->getOperandTypes(), [](Type t) {
        return !cast<RankedTensorType>(t).hasStaticShape();
      }))
    return noKernel("a layout change of dynamic shape");
  Type elt = outType.getElementType();
  if (elt.isInteger(1))
    elt = b.getI8Type(); // stored as bytes
  unsigned bits = elt.getIntOrFloatBitWidth();
  if (bits != 8 && bits != 16 && bits != 32)
    return noKernel("copy kernels move 8-, 16- and 32-bit elements");
  std::string why;
  FailureOr<SmallVector<Piece, 4>> pieces = piecesOf(op, why);
  if (failed(pieces))
    return noKernel(why);
  Attribute padValue;
  if (auto pad = dyn_cast<tg::PadOp>(op)) {
    padValue = pad.getValue();
    if (auto i = dyn_cast<IntegerAttr>(padValue); i && i.getType() != elt)
      padValue = b.getIntegerAttr(elt, i.getType().isInteger(1)
                                           ? int64_t(i.getValue().getZExtValue())
                                           : i.getValue().getSExtValue());
    if (auto f = dyn_cast<FloatAttr>(padValue); f && f.getType() != elt)
      padValue = b.getFloatAttr(elt, f.getValueAsDouble());
  }

  int64_t rank = outType.getRank();
  SmallVector<int64_t> outShape = atLeast2(outType.getShape());
  // Each tensor as the kernels take it: rank 2 or more.
  auto memrefOf = [&](Value v) {
    return MemRefType::get(
        atLeast2(cast<RankedTensorType>(v.getType()).getShape()), elt);
  };
  SmallVector<Attribute> launches;
  for (const Piece &raw : *pieces) {
    // Rank >= 2: leading dims of one in front of the output and of the
    // input.
    Piece p = raw;
    int64_t extra = int64_t(outShape.size()) - rank;
    int64_t inExtra = 0;
    if (p.input >= 0)
      inExtra = int64_t(memrefOf(op->getOperand(p.input)).getRank()) -
                cast<RankedTensorType>(op->getOperand(p.input).getType())
                    .getRank();
    for (int64_t &d : p.perm)
      if (d >= 0)
        d += inExtra;
    for (int64_t i = 0; i < inExtra; ++i) {
      p.inOffset.insert(p.inOffset.begin(), 0);
      p.inStep.insert(p.inStep.begin(), 1);
    }
    for (int64_t i = 0; i < extra; ++i) {
      p.outOffset.insert(p.outOffset.begin(), 0);
      p.size.insert(p.size.begin(), 1);
      p.perm.insert(p.perm.begin(), p.input >= 0 && inExtra > i ? i : -1);
    }
    int64_t n = int64_t(p.size.size());
    int64_t rows = p.size[n - 2], cols = p.size[n - 1];
    int64_t bn = std::min<int64_t>(llvm::PowerOf2Ceil(uint64_t(cols)),
                                   std::max<int64_t>(1024 * 8 / bits, 32));
    bn = std::max<int64_t>(bn, 16);
    int64_t bm = std::max<int64_t>(
        1, std::min<int64_t>(llvm::PowerOf2Ceil(uint64_t(rows)),
                             4096 / bn));
    int64_t rowBlocks = llvm::divideCeil(rows, bm);
    int64_t colBlocks = llvm::divideCeil(cols, bn);
    int64_t slabs = 1;
    for (int64_t k = 0; k + 2 < n; ++k)
      slabs *= p.size[k];
    int64_t programs = slabs * rowBlocks * colBlocks;
    if (programs > INT32_MAX)
      return noKernel("a layout change of more than 2^31 - 1 tiles");

    // The kernel: (input, output) or (output).
    SmallVector<Type> params;
    MemRefType inType;
    if (p.input >= 0) {
      inType = memrefOf(op->getOperand(p.input));
      params.push_back(inType);
    }
    auto outMem = MemRefType::get(outShape, elt);
    params.push_back(outMem);
    OpBuilder mb(module.getBodyRegion());
    mb.setInsertionPointToEnd(module.getBody());
    std::string name = (fn + "_layout" + Twine(count++)).str();
    for (char &ch : name)
      if (!llvm::isAlnum(ch) && ch != '_')
        ch = '_';
    auto kernel = func::FuncOp::create(mb, group.getLoc(), name,
                                       mb.getFunctionType(params, {}));
    symbols.insert(kernel);
    int64_t warps = bm * bn >= 4096 ? 8 : 4;
    kernel->setAttr("ttile.kernel", mb.getUnitAttr());
    kernel->setAttr("ttile.num_warps", mb.getI32IntegerAttr(int32_t(warps)));
    Location loc = group.getLoc();
    Block *entry = kernel.addEntryBlock();
    OpBuilder kb = OpBuilder::atBlockBegin(entry);
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(kb, loc, v);
    };
    Value pid = tt::ProgramIdOp::create(kb, loc, kb.getIndexType(),
                                        kb.getI32IntegerAttr(0));
    Value t = pid;
    Value cb = arith::RemSIOp::create(kb, loc, t, index(colBlocks));
    t = arith::DivSIOp::create(kb, loc, t, index(colBlocks));
    Value rb = arith::RemSIOp::create(kb, loc, t, index(rowBlocks));
    t = arith::DivSIOp::create(kb, loc, t, index(rowBlocks));
    SmallVector<Value> j(n, Value());
    for (int64_t k = n - 3; k >= 0; --k) {
      j[k] = arith::RemSIOp::create(kb, loc, t, index(p.size[k]));
      t = arith::DivSIOp::create(kb, loc, t, index(p.size[k]));
    }
    auto tile = RankedTensorType::get({bm, bn}, elt);
    // The input's slab is one row where the output's rows broadcast it.
    bool rowBroadcast = p.input >= 0 && p.perm[n - 2] < 0;
    auto slab = [&](Value mem, MemRefType type, ArrayRef<int64_t> offset,
                    ArrayRef<int64_t> step, ArrayRef<int64_t> perm,
                    ArrayRef<int64_t> shape) -> Value {
      // Output dim k reads input dim perm[k] (none: -1); the slab keeps
      // the last two.
      int64_t r = type.getRank();
      SmallVector<OpFoldResult> offsets(r), sizes(r), strides(r);
      for (int64_t d = 0; d < r; ++d) {
        offsets[d] = kb.getIndexAttr(offset[d]);
        sizes[d] = kb.getIndexAttr(1);
        strides[d] = kb.getIndexAttr(1);
      }
      for (int64_t k = 0; k < n; ++k) {
        int64_t d = perm[k];
        if (d < 0)
          continue;
        OpFoldResult at = kb.getIndexAttr(offset[d]);
        if (k + 2 < n) {
          Value v = j[k];
          if (step[d] != 1)
            v = arith::MulIOp::create(kb, loc, v, index(step[d]));
          if (offset[d] != 0)
            v = arith::AddIOp::create(kb, loc, v, index(offset[d]));
          at = v;
        }
        offsets[d] = at;
        sizes[d] = kb.getIndexAttr(k + 2 < n ? 1 : p.size[k]);
        strides[d] = kb.getIndexAttr(step[d]);
      }
      auto reduced = memref::SubViewOp::inferRankReducedResultType(
          shape, type, offsets, sizes, strides);
      return memref::SubViewOp::create(kb, loc, cast<MemRefType>(reduced),
                                       mem, offsets, sizes, strides);
    };
    SmallVector<int64_t> identity = llvm::to_vector(llvm::seq<int64_t>(0, n));
    SmallVector<int64_t> ones(n, 1);
    Value outSlab = slab(entry->getArguments().back(), outMem, p.outOffset,
                         ones, identity, {rows, cols});
    Value at[2] = {arith::MulIOp::create(kb, loc, rb, index(bm)),
                   arith::MulIOp::create(kb, loc, cb, index(bn))};
    Value value;
    if (p.input >= 0) {
      if (rowBroadcast) {
        Value inRow = slab(entry->getArgument(0), inType, p.inOffset,
                           p.inStep, p.perm, {cols});
        Value row = tt::LoadOp::create(
            kb, loc, RankedTensorType::get({bn}, elt), inRow,
            ValueRange{at[1]}, Value(), TypedAttr(), /*multicast=*/nullptr);
        value = tt::BroadcastOp::create(kb, loc, tile, row,
                                        kb.getDenseI64ArrayAttr({1}));
      } else {
        Value inSlab = slab(entry->getArgument(0), inType, p.inOffset,
                            p.inStep, p.perm, {rows, cols});
        value = tt::LoadOp::create(kb, loc, tile, inSlab, ValueRange(at),
                                   Value(), TypedAttr(),
                                   /*multicast=*/nullptr);
      }
    } else {
      value = arith::ConstantOp::create(
          kb, loc, DenseElementsAttr::get(tile, padValue));
    }
    tt::StoreOp::create(kb, loc, value, outSlab, ValueRange(at), Value());
    func::ReturnOp::create(kb, loc);

    SmallVector<Attribute> args;
    if (p.input >= 0)
      args.push_back(launchArg(b, LaunchArg::Input, inputOf[p.input],
                               inType.getShape()));
    args.push_back(launchArg(b, LaunchArg::Result, 0, outShape));
    launches.push_back(launchEntry(
        b, FlatSymbolRefAttr::get(kernel.getSymNameAttr()), {programs}, args,
        ("block(" + Twine(bm) + ", " + Twine(bn) + ").warps(" + Twine(warps) +
         ")")
            .str()));
  }
  group->setAttr("tsched.launches", b.getArrayAttr(launches));
  return success();
}
