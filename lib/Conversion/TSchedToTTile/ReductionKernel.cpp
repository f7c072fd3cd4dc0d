//===- ReductionKernel.cpp - Tile IR kernels for GPU reduction groups -----===//
//
// A reduction group holds one reduce op over a contiguous run of dims: a
// bias gradient summing [tokens, D] down to [D], a loss summed over
// everything, a mean over a middle dim. The kernel reads the input as
// [P * R, C] (C > 1: each program sums BN columns of one batch down its R
// rows) or [P, R] (C == 1: each program sums BM whole rows), accumulating
// f32 [BM, BN] tiles along the reduced run with the next tile's load
// issued one step ahead, then reducing the tile. One program computes each
// output element from start to end, in an order fixed by the shape:
// results are the same bits at every run, with no atomics. A reduction
// whose outputs leave the chip idle over long runs (a loss over
// everything, a bias gradient over all tokens) runs in two launches:
// partial results of fixed chunks of the run, then the reduction of the
// partials, again in a fixed order.
//
//===----------------------------------------------------------------------===//

#include "GroupKernel.h"

#include <limits>

using namespace mlir;
using namespace mlir::tessera;

namespace mlir::tessera::group_kernels {

std::optional<std::string> ReductionKernel::analyze() {
  Block &body = group.getBodyBlock();
  auto ops = body.without_terminator();
  if (!llvm::hasSingleElement(ops) || group.getInputs().size() != 1 ||
      group.getNumResults() != 1)
    return std::string("it holds more than one reduce op");
  reduce = &*ops.begin();
  if (reduce->getNumOperands() != 1 ||
      reduce->getOperand(0) != body.getArgument(0))
    return std::string("it reduces something other than its input");
  if (isa<tg::ReduceSumOp>(reduce))
    kind = tt::ReduceKind::sum;
  else if (isa<tg::ReduceMeanOp>(reduce))
    kind = tt::ReduceKind::sum, mean = true;
  else if (isa<tg::ReduceMaxOp>(reduce))
    kind = tt::ReduceKind::max;
  else if (isa<tg::ReduceMinOp>(reduce))
    kind = tt::ReduceKind::min;
  else if (isa<tg::ReduceProdOp>(reduce))
    kind = tt::ReduceKind::prod;
  else
    return ("'" + reduce->getName().getStringRef() + "' is not a sum, mean, "
            "max, min or product").str();
  auto in = dyn_cast<RankedTensorType>(reduce->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(reduce->getResult(0).getType());
  auto dims = reduce->getAttrOfType<DenseI64ArrayAttr>("dims");
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() || !dims)
    return std::string("its shapes are not static");
  inElt = in.getElementType();
  outElt = out.getElementType();
  auto str = [](auto v) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << v;
    return text;
  };
  if (!isa<FloatType>(inElt) || !isa<FloatType>(outElt) ||
      inElt.getIntOrFloatBitWidth() < 16 ||
      inElt.getIntOrFloatBitWidth() > 32)
    return "it reduces " + str(in) + ", not f32, f16 or bf16";
  ArrayRef<int64_t> d = dims.asArrayRef();
  ArrayRef<int64_t> shape = in.getShape();
  if (d.empty())
    return std::string("it reduces no dims");
  for (size_t i = 0; i < d.size(); ++i)
    if (d[i] < 0 || d[i] >= int64_t(shape.size()) ||
        (i > 0 && d[i] != d[i - 1] + 1))
      return "it reduces dims [" + llvm::join(llvm::map_range(d, [](int64_t v) {
               return std::to_string(v);
             }), ", ") + "] of " + str(in) +
             ", not one run of consecutive dims";
  p = tsched::numElements(shape.take_front(d.front()));
  r = tsched::numElements(shape.slice(d.front(), d.size()));
  c = tsched::numElements(shape.drop_front(d.back() + 1));
  divisor = r;
  chooseTile();
  return std::nullopt;
}

void ReductionKernel::chooseTile() {
  auto pow2 = [](int64_t v) {
    return int64_t(llvm::PowerOf2Ceil(uint64_t(std::max<int64_t>(v, 1))));
  };
  if (c > 1) {
    // Narrower column blocks until the programs fill the chip, down to 32
    // bytes a row of a tile (one memory sector).
    int64_t minCols = 32 / (inElt.getIntOrFloatBitWidth() / 8);
    bn = std::min<int64_t>(pow2(c), 128);
    while (bn > minCols && p * int64_t(llvm::divideCeil(c, bn)) < sms)
      bn /= 2;
    bm = std::max<int64_t>(1, std::min<int64_t>(pow2(r), 4096 / bn));
  } else {
    bn = std::min<int64_t>(pow2(r), 1024);
    bm = std::max<int64_t>(1, std::min<int64_t>(pow2(p), 4096 / bn));
    while (bm > 1 && int64_t(llvm::divideCeil(p, bm)) < sms)
      bm /= 2;
  }
  warps = bm * bn >= 4096 ? 8 : 4;
}

std::optional<std::pair<ReductionKernel, ReductionKernel>>
ReductionKernel::splitRows() const {
  // Worth it when one program per output (C == 1) or per column block of
  // 128 leaves most of the chip idle, each with a long run to reduce. The
  // chunks must tile the reduced run exactly (a view).
  int64_t work = c == 1 ? p : p * int64_t(llvm::divideCeil(c, 128));
  int64_t minChunk = c == 1 ? 1024 : 64;
  if (work >= sms || r < (c == 1 ? (int64_t(1) << 16) : 4096))
    return std::nullopt;
  int64_t target = std::max<int64_t>(2, 4 * sms / work), splits = 0;
  for (int64_t s = std::min(target, r / minChunk); s >= 2; --s)
    if (r % s == 0) {
      splits = s;
      break;
    }
  if (!splits)
    return std::nullopt;
  ReductionKernel first = *this, second = *this;
  Type f32 = Float32Type::get(inElt.getContext());
  first.p = p * splits;
  first.r = r / splits;
  first.outElt = f32;
  first.mean = false;
  first.chooseTile();
  second.p = p;
  second.r = splits;
  second.inElt = f32;
  second.divisor = r;
  second.chooseTile();
  return std::make_pair(first, second);
}

SmallVector<SmallVector<int64_t>> ReductionKernel::views() const {
  if (c > 1)
    return {{p * r, c}, {p * c}};
  return {{p, r}, {p}};
}

SmallVector<Type> ReductionKernel::signature() const {
  int64_t dyn = ShapedType::kDynamic;
  return {MemRefType::get({dyn, dyn}, inElt), MemRefType::get({dyn}, outElt)};
}

int64_t ReductionKernel::gridSize() const {
  if (c > 1)
    return p * llvm::divideCeil(c, bn);
  return llvm::divideCeil(p, bm);
}

tsched::ScheduleAttr ReductionKernel::scheduleAttr() const {
  return tsched::ScheduleAttr::get(b.getContext(), {bm, bn}, 0, {}, 0, 0,
                                   warps, 0, 0, false);
}

void ReductionKernel::build(func::FuncOp kernel) {
  Location loc = group.getLoc();
  Type f32 = b.getF32Type();
  Block *entry = kernel.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value in = entry->getArgument(0), out = entry->getArgument(1);
  double neutral = kind == tt::ReduceKind::max
                       ? -std::numeric_limits<double>::infinity()
                   : kind == tt::ReduceKind::min
                       ? std::numeric_limits<double>::infinity()
                   : kind == tt::ReduceKind::prod ? 1.0
                                                  : 0.0;
  auto tile = [&](ArrayRef<int64_t> shape, Type elt) {
    return RankedTensorType::get(shape, elt);
  };
  auto splatF = [&](RankedTensorType type, double v) -> Value {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            type, b.getFloatAttr(type.getElementType(), v)));
  };
  auto splatIndex = [&](RankedTensorType type, Value v) -> Value {
    Value i = arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
    return tensor::SplatOp::create(b, loc, type, i);
  };
  auto accType = tile({bm, bn}, f32);
  Value pid = tt::ProgramIdOp::create(b, loc, b.getIndexType(),
                                      b.getI32IntegerAttr(0));
  bool columns = c > 1;
  int64_t reduceDim = columns ? 0 : 1;
  Value batch, colStart, rowStart;
  if (columns) {
    int64_t blocks = llvm::divideCeil(c, bn);
    batch = arith::DivSIOp::create(b, loc, pid, index(blocks, loc));
    colStart = arith::MulIOp::create(
        b, loc, arith::RemSIOp::create(b, loc, pid, index(blocks, loc)),
        index(bn, loc));
  } else {
    rowStart = arith::MulIOp::create(b, loc, pid, index(bm, loc));
  }
  int64_t step = columns ? bm : bn;
  auto loop = tt::RangeOp::create(b, loc, TypeRange{accType}, index(0, loc),
                                  index(r, loc), index(step, loc),
                                  ValueRange{splatF(accType, neutral)},
                                  b.getI32IntegerAttr(2));
  Block *body = b.createBlock(&loop.getBody(), {},
                              {b.getIndexType(), accType}, {loc, loc});
  b.setInsertionPointToStart(body);
  Value k = body->getArgument(0), acc = body->getArgument(1);
  SmallVector<Value> at;
  Value mask;
  if (columns) {
    // Row k of batch `batch`; rows past R belong to the next batch.
    at = {arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, batch, index(r, loc)), k),
          colStart};
    if (p > 1 && r % bm != 0) {
      auto i32Tile = tile({bm, bn}, b.getI32Type());
      Value rows = arith::AddIOp::create(
          b, loc,
          tt::IotaOp::create(b, loc, i32Tile, b.getI32IntegerAttr(0)),
          splatIndex(i32Tile, k));
      mask = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rows,
                                   splatIndex(i32Tile, index(r, loc)));
    }
  } else {
    at = {rowStart, k};
  }
  Value x = tt::LoadOp::create(b, loc, tile({bm, bn}, inElt), in, at, mask,
                               b.getFloatAttr(inElt, neutral),
                               /*multicast=*/nullptr);
  if (inElt != f32)
    x = tt::CastOp::create(b, loc, accType, x, /*saturate=*/nullptr,
                           /*stochastic_round=*/nullptr, /*seed=*/Value());
  Value next;
  switch (kind) {
  case tt::ReduceKind::sum:
    next = arith::AddFOp::create(b, loc, acc, x);
    break;
  case tt::ReduceKind::max:
    next = arith::MaximumFOp::create(b, loc, acc, x);
    break;
  case tt::ReduceKind::min:
    next = arith::MinimumFOp::create(b, loc, acc, x);
    break;
  case tt::ReduceKind::prod:
    next = arith::MulFOp::create(b, loc, acc, x);
    break;
  }
  tt::YieldOp::create(b, loc, ValueRange{next});
  b.setInsertionPointAfter(loop);
  int64_t kept = columns ? bn : bm;
  auto keptType = tile({kept}, f32);
  Value red = tt::ReduceOp::create(
      b, loc, keptType, tt::ReduceKindAttr::get(b.getContext(), kind),
      loop.getResult(0), b.getI32IntegerAttr(int32_t(reduceDim)));
  if (mean)
    red = arith::DivFOp::create(b, loc, red, splatF(keptType, double(divisor)),
                                arith::FastMathFlags::afn);
  if (outElt != f32)
    red = tt::CastOp::create(b, loc, tile({kept}, outElt), red,
                             /*saturate=*/nullptr,
                             /*stochastic_round=*/nullptr, /*seed=*/Value());
  if (columns) {
    // Output [P * C]: columns past C belong to the next batch.
    Value start = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, batch, index(c, loc)),
        colStart);
    Value storeMask;
    if (p > 1 && c % bn != 0) {
      auto i32Tile = tile({bn}, b.getI32Type());
      Value cols = arith::AddIOp::create(
          b, loc,
          tt::IotaOp::create(b, loc, i32Tile, b.getI32IntegerAttr(0)),
          splatIndex(i32Tile, colStart));
      storeMask = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                        cols,
                                        splatIndex(i32Tile, index(c, loc)));
    }
    tt::StoreOp::create(b, loc, red, out, ValueRange{start}, storeMask);
  } else {
    tt::StoreOp::create(b, loc, red, out, ValueRange{rowStart}, Value());
  }
  func::ReturnOp::create(b, loc);
}

} // namespace mlir::tessera::group_kernels
