//===- GenerateKernels.cpp - Tile IR kernels for GPU fusion groups --------===//
//
// A row group's kernel: each program takes BM consecutive rows of the
// group's [R, C] layout and computes every op of the group on them in
// registers. Values are tiles of four shapes: a full [BM, BN] tile, a row
// statistic [BM], a column vector [BN] and a scalar [1]; an op whose
// operands differ broadcasts the smaller ones. This is what the Python
// planner wrote as tile-DSL source; here it is built as IR.
//
// A contraction group's kernel is a GEMM (GemmKernel.cpp), a reduction
// group's a deterministic reduction (ReductionKernel.cpp); an attention
// group launches the stdlib's flash-attention kernels (AttentionKernel.cpp).
//
//===----------------------------------------------------------------------===//

#include "GroupKernel.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

namespace mlir::tessera {
#define GEN_PASS_DEF_TSCHEDGENERATEKERNELS
#include "tessera/Conversion/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;

namespace mlir::tessera::group_kernels {

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
  if (auto slice = dyn_cast<tg::SliceOp>(op)) {
    // A window of a windowed input's columns (predictClasses() checked),
    // or of its transpose of leading dims.
    int64_t at = *slice.getStart().getDims().back().getConstant();
    auto type = cast<RankedTensorType>(slice.getType());
    if (auto t = slice.getX().getDefiningOp<tg::TransposeOp>()) {
      Value source = windowSource.lookup(t.getX());
      tiles[slice.getResult()] =
          load(permutedWindow(source, t.getType().getShape(),
                              rowStridesOf(t, /*input=*/true), at, loc),
               Class::Full, type.getElementType(), loc, 0, /*atOrigin=*/true);
      return success();
    }
    Value source = windowSource.lookup(slice.getX());
    tiles[slice.getResult()] = load(columnWindow(source, at, loc), Class::Full,
                                    type.getElementType(), loc);
    return success();
  }
  if (isa<tg::ConcatOp, tg::TransposeOp>(op))
    return success(); // (read through their windows, or stored into them)
  if (auto c = dyn_cast<tg::ConstantOp>(op)) {
    auto value = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!value || !value.isSplat())
      return unsupported(op);
    // One element: a scalar; one value over a tensor: a splat of its
    // class (as predicted).
    Class cls = Class::Scalar;
    if (value.getNumElements() != 1) {
      std::optional<Class> c = classify(value.getType().getShape());
      if (!c)
        return unsupported(op);
      cls = *c == Class::Periodic ? Class::Full : *c;
    }
    Type elt = value.getElementType();
    if (elt.isInteger(1))
      return result(splat(cls, elt,
                          value.getSplatValue<APInt>().getBoolValue(), loc),
                    cls);
    if (isa<FloatType>(elt))
      return result(
          splat(cls, f32, value.getSplatValue<APFloat>().convertToDouble(),
                loc),
          cls);
    if (elt.isInteger(32) || elt.isInteger(64))
      return result(
          splat(cls, elt,
                double(value.getSplatValue<APInt>().getSExtValue()), loc),
          cls);
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
    // Computed as a full tile from each element's row and column: the
    // iota's dims are the layout's trailing dims, so a column ([C]) or a
    // periodic table reads the same indices.
    std::optional<Class> cls = classify(resultType.getShape());
    if (!(cls == Class::Full || cls == Class::Col ||
          cls == Class::Periodic) ||
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
    if (cls == Class::Periodic)
      cls = Class::Full;
    if (!cls)
      return unsupported(op);
    if (*cls != Class::Full) {
      // A row, a column or a scalar of the layout (one row: [1] to [1, 1]).
      if (src.cls == *cls)
        return result(src.value, *cls);
      if (src.cls == Class::Scalar)
        return result(expand(src, *cls, loc), *cls);
      return unsupported(op);
    }
    // The source's tile must spread over the rows as the broadcast places
    // it: [B] at dim 0 of [B, B] is a row, not the column its shape reads
    // as right-aligned.
    std::optional<SmallVector<int64_t>> placed = placedShape(bcast);
    std::optional<Class> want =
        placed ? classify(*placed) : std::optional<Class>();
    // (With one row or one column, a row, a column and a scalar of one
    // element are the same values.)
    if (!want || (*want == Class::Row && src.cls == Class::Col) ||
        (*want == Class::Col && src.cls == Class::Row))
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
  if (isa<tg::ArgmaxOp, tg::ArgminOp>(op)) {
    // The first index of the row's extreme, a NaN counting as the extreme
    // (as the CPU and NumPy): the first NaN's column if the row has one,
    // else the first column equal to the row's max (min). Column indices
    // are f32 (exact up to 2^24; rows are at most max-row long).
    bool isMax = isa<tg::ArgmaxOp>(op);
    Tile src = tiles.lookup(op->getOperand(0));
    Type inElt = getElementTypeOrSelf(op->getOperand(0).getType());
    if (src.cls != Class::Full || !isa<FloatType>(inElt) ||
        inElt.getIntOrFloatBitWidth() > 32)
      return unsupported(op);
    double inf = std::numeric_limits<double>::infinity();
    auto i32Tile = RankedTensorType::get({bm, bn}, b.getI32Type());
    Value col = arith::SIToFPOp::create(
        b, loc, tileType(Class::Full, f32),
        tt::IotaOp::create(b, loc, i32Tile, b.getI32IntegerAttr(1)));
    Value none = splat(Class::Full, f32, double(cols), loc);
    auto firstWhere = [&](Value where) {
      if (colMask)
        where = arith::AndIOp::create(b, loc, where, colMask);
      Value idx = arith::SelectOp::create(b, loc, where, col, none);
      return tt::ReduceOp::create(
          b, loc, tileType(Class::Row, f32),
          tt::ReduceKindAttr::get(b.getContext(), tt::ReduceKind::min), idx,
          b.getI32IntegerAttr(1));
    };
    Value x = src.value;
    Value firstNan = firstWhere(
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x));
    if (colMask)
      x = arith::SelectOp::create(
          b, loc, colMask, x,
          splat(Class::Full, f32, isMax ? -inf : inf, loc));
    Value extreme = tt::ReduceOp::create(
        b, loc, tileType(Class::Row, f32),
        tt::ReduceKindAttr::get(b.getContext(), isMax ? tt::ReduceKind::max
                                                      : tt::ReduceKind::min),
        x, b.getI32IntegerAttr(1));
    Value firstExtreme = firstWhere(arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OEQ, x,
        expand(Tile{extreme, Class::Row}, Class::Full, loc)));
    Value hasNan =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, firstNan,
                              splat(Class::Row, f32, double(cols), loc));
    Value index =
        arith::SelectOp::create(b, loc, hasNan, firstNan, firstExtreme);
    return result(castTo(tileType(Class::Row, resultElt), index, loc),
                  Class::Row);
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
} // namespace mlir::tessera::group_kernels

namespace {

using mlir::tessera::group_kernels::RowKernel;
using mlir::tessera::group_kernels::launchArg;
using mlir::tessera::group_kernels::launchEntry;
using mlir::tessera::group_kernels::markKernel;

/// A PTX identifier: letters, digits and '_'.
std::string kernelName(StringRef fn, StringRef kind, int64_t n) {
  std::string name = (fn + "_" + kind + std::to_string(n)).str();
  for (char &c : name)
    if (!llvm::isAlnum(c) && c != '_')
      c = '_';
  return name;
}

struct TSchedGenerateKernelsPass
    : mlir::tessera::impl::TSchedGenerateKernelsBase<
          TSchedGenerateKernelsPass> {
  using TSchedGenerateKernelsBase::TSchedGenerateKernelsBase;

  /// The kernel of a reduction group, or `tsched.no_kernel` on the group
  /// saying why it has none.
  void reductionKernel(tsched::GroupOp group, func::FuncOp fn,
                       ModuleOp module, SymbolTable &symbols,
                       int64_t &count) {
    mlir::tessera::group_kernels::ReductionKernel gen(group, multiprocessors);
    OpBuilder b(module.getBodyRegion());
    if (std::optional<std::string> why = gen.analyze()) {
      group->setAttr("tsched.no_kernel", b.getStringAttr(*why));
      return;
    }
    b.setInsertionPointToEnd(module.getBody());
    auto make = [&](mlir::tessera::group_kernels::ReductionKernel &k) {
      auto kernel = func::FuncOp::create(
          b, group.getLoc(), kernelName(fn.getName(), "reduce", count++),
          b.getFunctionType(k.signature(), {}));
      symbols.insert(kernel);
      k.build(kernel);
      markKernel(kernel, k.numWarps());
      return kernel;
    };
    if (auto split = gen.splitRows()) {
      // Two launches: the partials into a scratch buffer, then the rows.
      auto &[first, second] = *split;
      func::FuncOp k1 = make(first), k2 = make(second);
      SmallVector<int64_t> partialsView = first.views()[1];
      using mlir::tessera::group_kernels::LaunchArg;
      auto launch = [&](func::FuncOp k,
                        mlir::tessera::group_kernels::ReductionKernel &g,
                        LaunchArg inKind, LaunchArg outKind) {
        SmallVector<SmallVector<int64_t>> v = g.views();
        return launchEntry(b, FlatSymbolRefAttr::get(k.getSymNameAttr()),
                           {g.gridSize()},
                           {launchArg(b, inKind, 0, v[0]),
                            launchArg(b, outKind, 0, v[1])},
                           g.scheduleAttr().str());
      };
      group->setAttr("tsched.launches",
                     b.getArrayAttr(
                         {launch(k1, first, LaunchArg::Input,
                                 LaunchArg::Scratch),
                          launch(k2, second, LaunchArg::Scratch,
                                 LaunchArg::Result)}));
      group->setAttr("tsched.scratch",
                     b.getArrayAttr({TypeAttr::get(MemRefType::get(
                         partialsView, b.getF32Type()))}));
      return;
    }
    func::FuncOp kernel = make(gen);
    SmallVector<Attribute> views;
    for (ArrayRef<int64_t> v : gen.views())
      views.push_back(b.getDenseI64ArrayAttr(v));
    record(group, kernel, gen.numWarps(), gen.gridSize(), gen.scheduleAttr(),
           b.getArrayAttr(views));
  }

  /// The two kernels of a GEMM whose K is split (RowKernel::kSplits):
  /// the chunks' products into a scratch buffer of f32 partials, then
  /// their sum and the epilogue, recorded as the group's launches.
  LogicalResult splitGemm(tsched::GroupOp group, RowKernel &gen,
                          func::FuncOp fn, SymbolTable &symbols,
                          int64_t &count) {
    using mlir::tessera::group_kernels::LaunchArg;
    OpBuilder b(group.getContext());
    ModuleOp module = getOperation();
    b.setInsertionPointToEnd(module.getBody());
    Block &body = group.getBodyBlock();
    auto [aInput, bInput] = gen.gemmInputs();
    SmallVector<int64_t> partials = gen.partialsView();
    auto partialsType =
        MemRefType::get(SmallVector<int64_t>(3, ShapedType::kDynamic),
                        b.getF32Type());
    auto make = [&](StringRef kind, ArrayRef<Type> args) {
      auto kernel = func::FuncOp::create(
          b, group.getLoc(), kernelName(fn.getName(), kind, count),
          b.getFunctionType(args, {}));
      symbols.insert(kernel);
      return kernel;
    };
    StringRef tuning;
    if (auto key = group->getAttrOfType<StringAttr>("tsched.tuning_key"))
      tuning = key.getValue();
    auto launch = [&](func::FuncOp k, int64_t grid,
                      ArrayRef<Attribute> args) -> Attribute {
      markKernel(k, gen.numWarps());
      return launchEntry(b, FlatSymbolRefAttr::get(k.getSymNameAttr()),
                         {grid}, args, gen.scheduleAttr().str(), {}, tuning);
    };
    // The first: (A, B, partials).
    Value aArg = body.getArgument(aInput), bArg = body.getArgument(bInput);
    func::FuncOp first = make(
        "gemm", {gen.memrefFor(aArg), gen.memrefFor(bArg), partialsType});
    if (failed(gen.buildPartials(first))) {
      first.erase();
      return failure();
    }
    Attribute firstLaunch = launch(
        first, gen.gemmLaunchGrid(gen.gemmGrid(/*partials=*/true)),
        {launchArg(b, LaunchArg::Input, aInput, gen.viewOf(aArg)),
         launchArg(b, LaunchArg::Input, bInput, gen.viewOf(bArg)),
         launchArg(b, LaunchArg::Scratch, 0, partials)});
    // The second: (partials, inputs..., outputs...).
    SmallVector<Type> args = {partialsType};
    SmallVector<Attribute> refs = {
        launchArg(b, LaunchArg::Scratch, 0, partials)};
    for (BlockArgument v : body.getArguments()) {
      args.push_back(gen.memrefFor(v));
      refs.push_back(
          launchArg(b, LaunchArg::Input, v.getArgNumber(), gen.viewOf(v)));
    }
    for (auto [i, v] : llvm::enumerate(body.getTerminator()->getOperands())) {
      args.push_back(gen.memrefFor(v));
      refs.push_back(
          launchArg(b, LaunchArg::Result, int64_t(i), gen.viewOf(v)));
    }
    func::FuncOp second = make("gemm_sum", args);
    ++count;
    if (failed(gen.buildSum(second))) {
      second.erase();
      return failure();
    }
    Attribute secondLaunch = launch(second, gen.gemmGrid(false), refs);
    group->setAttr("tsched.launches",
                   b.getArrayAttr({firstLaunch, secondLaunch}));
    group->setAttr(tsched::TSchedDialect::kScheduleAttrName,
                   gen.gemmSchedule().attr(b.getContext()));
    group->setAttr("tsched.scratch",
                   b.getArrayAttr({TypeAttr::get(
                       MemRefType::get(partials, b.getF32Type()))}));
    return success();
  }

  /// Marks `kernel` a Tile IR kernel of `warps` warps and records on
  /// `group` how it is launched.
  static void record(tsched::GroupOp group, func::FuncOp kernel,
                     int64_t warps, int64_t grid,
                     tsched::ScheduleAttr schedule, ArrayAttr views) {
    Builder b(group.getContext());
    markKernel(kernel, warps);
    group->setAttr("tsched.kernel",
                   FlatSymbolRefAttr::get(kernel.getSymNameAttr()));
    group->setAttr("tsched.grid", b.getDenseI64ArrayAttr({grid}));
    group->setAttr(tsched::TSchedDialect::kScheduleAttrName, schedule);
    group->setAttr("tsched.views", views);
  }

  /// Tuned schedules by key (the `tuning` file), read once.
  llvm::StringMap<std::string> tuned;

  /// Reads the `tuning` file (or `tuningText`, its text as the caller read
  /// it): one `KEY SCHEDULE` a line (the key of a product, gemm-<16 hex
  /// digits>, and its schedule chain); '#' starts a comment.
  LogicalResult readTuning() {
    tuned.clear();
    if (tuning.empty() && tuningText.empty())
      return success();
    ModuleOp module = getOperation();
    // Errors name the file, not an op (the module is not at fault).
    auto error = [&] { return mlir::emitError(UnknownLoc::get(&getContext())); };
    std::string name = tuning.empty() ? std::string("the tuning text")
                                      : std::string(tuning);
    std::unique_ptr<llvm::MemoryBuffer> buffer;
    StringRef text = tuningText;
    if (text.empty()) {
      auto file = llvm::MemoryBuffer::getFile(tuning, /*IsText=*/true);
      if (!file)
        return error() << "cannot read the tuning file " << tuning << ": "
                       << file.getError().message();
      buffer = std::move(*file);
      text = buffer->getBuffer();
    }
    SmallVector<StringRef> lines;
    text.split(lines, '\n');
    for (size_t n = 0; n < lines.size(); ++n) {
      StringRef line = lines[n].split('#').first.trim();
      if (line.empty())
        continue;
      StringRef key = line.split(' ').first;
      StringRef chain = line.split(' ').second.trim();
      auto bad = [&]() {
        return error()
               << name << ":" << n + 1 << ": expected 'KEY SCHEDULE' (a "
               << "product's key gemm-<16 hex digits> and its schedule "
               << "chain), got '" << line << "'";
      };
      if (!key.starts_with("gemm-") || key.size() != 21 ||
          key.drop_front(5).find_first_not_of("0123456789abcdef") !=
              StringRef::npos ||
          chain.empty())
        return bad();
      FailureOr<tsched::ScheduleAttr> parsed =
          tsched::ScheduleAttr::parseSchedule(chain, module.getContext(), [&] {
            return error() << name << ":" << n + 1 << ": the schedule of "
                           << key << ": ";
          });
      if (failed(parsed))
        return failure();
      // As the compiler writes chains, so that any spelling matches.
      tuned[key] = parsed->str();
    }
    return success();
  }

  /// The key a product's tuned schedule is kept under: what the group
  /// computes (its ops, types and attributes, printed without names or
  /// locations) on `chip` with `multiprocessors` SMs.
  std::string tuningKey(tsched::GroupOp group) {
    std::string text;
    llvm::raw_string_ostream os(text);
    group->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
    os << "|" << chip << "|" << multiprocessors;
    return llvm::formatv("gemm-{0:x-16}", llvm::xxh3_64bits(text)).str();
  }

  /// Records a product's autotune space and tuning key on its group and
  /// picks its schedule: candidate `variant` of the space (the last if
  /// there are fewer), else the tuned one if the `tuning` file has its key
  /// (and the schedule is still in its space: a warning says so when it is
  /// not), else the estimate's.
  LogicalResult tune(tsched::GroupOp group, RowKernel &gen) {
    Builder b(group.getContext());
    std::string key = tuningKey(group);
    ArrayRef<group_kernels::GemmSchedule> space = gen.space();
    SmallVector<Attribute> chains;
    for (const group_kernels::GemmSchedule &s : space)
      chains.push_back(b.getStringAttr(s.attr(b.getContext()).str()));
    group->setAttr("tsched.space", b.getArrayAttr(chains));
    group->setAttr("tsched.tuning_key", b.getStringAttr(key));
    // A variant is what a tuner times: the tuning file does not change it.
    if (variant >= 0) {
      gen.useSchedule(space[std::min<size_t>(variant, space.size() - 1)]);
      return success();
    }
    auto it = tuned.find(key);
    if (it == tuned.end())
      return success();
    for (const group_kernels::GemmSchedule &s : space)
      if (s.attr(b.getContext()).str() == it->second) {
        gen.useSchedule(s);
        return success();
      }
    // A file tuned against another space (another compiler version or
    // card): its entry is not used, and the reader is told why.
    std::string spaceText;
    llvm::raw_string_ostream os(spaceText);
    llvm::interleaveComma(chains, os, [&](Attribute a) {
      os << cast<StringAttr>(a).getValue();
    });
    group.emitWarning()
        << "the tuning file gives product " << key << " the schedule '"
        << it->second << "', which is not in its autotune space ["
        << spaceText << "] (a file tuned by another compiler version or "
        << "for another card?); the estimate's '"
        << gen.gemmSchedule().attr(b.getContext()).str() << "' is used";
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(readTuning()))
      return signalPassFailure();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> fns(module.getOps<func::FuncOp>());
    mlir::tessera::group_kernels::AttentionLaunches attention(
        module, symbols, chip == "sm_90a");
    mlir::tessera::group_kernels::LayoutKernels layouts(module, symbols);
    for (func::FuncOp fn : fns) {
      if (fn->hasAttr("ttile.kernel"))
        continue;
      int64_t rowCount = 0, gemmCount = 0, reduceCount = 0;
      WalkResult walk = fn.walk([&](tsched::GroupOp group) {
        if (group.getKind() == tsched::GroupKind::Layout)
          return succeeded(layouts.generate(group, fn.getName()))
                     ? WalkResult::advance()
                     : WalkResult::interrupt();
        if (group.getKind() == tsched::GroupKind::Attention)
          return succeeded(attention.generate(group))
                     ? WalkResult::advance()
                     : WalkResult::interrupt();
        if (group.getKind() == tsched::GroupKind::Reduction) {
          reductionKernel(group, fn, module, symbols, reduceCount);
          return WalkResult::advance();
        }
        bool row = group.getKind() == tsched::GroupKind::Row;
        if ((!row && group.getKind() != tsched::GroupKind::Contraction) ||
            !group.getLayout())
          return WalkResult::advance();
        ArrayRef<int64_t> layout = *group.getLayout();
        RowKernel gen(group, layout[0], layout[1], multiprocessors,
                      chip == "sm_90a");
        if (gen.badContraction()) {
          group.emitOpError() << "is a contraction group whose first op is "
                                 "not a GEMM the GPU generates";
          return WalkResult::interrupt();
        }
        if (!gen.space().empty() && failed(tune(group, gen)))
          return WalkResult::interrupt();
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
        if (!row && gen.kSplits() > 1) {
          if (failed(splitGemm(group, gen, fn, symbols, gemmCount)))
            return WalkResult::interrupt();
          return WalkResult::advance();
        }
        std::string name =
            kernelName(fn.getName(), row ? "row" : "gemm",
                       row ? rowCount++ : gemmCount++);
        auto kernel = func::FuncOp::create(b, group.getLoc(), name,
                                           b.getFunctionType(args, {}));
        symbols.insert(kernel);
        if (failed(gen.build(kernel))) {
          kernel.erase();
          return WalkResult::interrupt();
        }
        record(group, kernel, gen.numWarps(), gen.gridSize(),
               gen.scheduleAttr(), b.getArrayAttr(views));
        if (int64_t programs = gen.programsPerBlock(); programs > 1)
          kernel->setAttr("ttile.programs_per_block",
                          b.getI32IntegerAttr(int32_t(programs)));
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
    }
  }
};

} // namespace
