//===- LowerState.cpp - KV caches as buffers updated in place -------------===//
//
// A `!tgraph.kv_cache<[B, H, S, D], T>` value is three buffers: keys and
// values, `memref<BxHxSxDxT>` each, and `memref<2xi64>` holding the number
// of valid positions and the window (0: none, the cache holds S
// positions). Positions at or past the length are zero. As a function
// argument the cache is those three buffers, which the function updates in
// place (the runtime lists them as state arguments).
//
//   create   allocates zeroed buffers; length 0, the op's window
//   append   writes the new positions after the valid ones. Without a
//            window, running past S fails the call; with window w only the
//            last w positions are kept: the oldest ones are dropped (the
//            rest move to the front) and only the last w new ones are kept
//   read     copies of the keys and values, and the length
//   prune    keeps the `keep` most recent positions, moved to the front,
//            and zeroes the rest
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;
using namespace mlir::tessera::tgraph::lowering;

namespace {

/// The three buffers of a cache.
struct Cache {
  Value keys, values, state;
};

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// state[i] as an index.
Value loadWord(OpBuilder &b, Location loc, Value state, int64_t i) {
  Value w = memref::LoadOp::create(b, loc, state, index(b, loc, i));
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), w);
}

void storeWord(OpBuilder &b, Location loc, Value v, Value state, int64_t i) {
  Value w = arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
  memref::StoreOp::create(b, loc, w, state, index(b, loc, i));
}

/// buffer[:, :, start : start + count, :].
Value positions(OpBuilder &b, Location loc, Value buffer, Value start,
                Value count) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(0), start,
                                    b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < 4; ++d)
    sizes.push_back(
        d == 2 ? OpFoldResult(count)
        : type.isDynamicDim(d)
            ? OpFoldResult(memref::DimOp::create(b, loc, buffer, d).getResult())
            : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  return memref::SubViewOp::create(b, loc, buffer, offsets, sizes, strides);
}

/// A zero of the cache's element type.
Value zeroOf(OpBuilder &b, Location loc, Value buffer) {
  Type t = cast<MemRefType>(buffer.getType()).getElementType();
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, 0.0));
}

/// Moves positions [from, from + count) of each buffer to [0, count)
/// (through a temporary: the ranges may overlap) and zeroes
/// [count, from + count).
void moveToFront(OpBuilder &b, Location loc, const Cache &c, Value from,
                 Value count) {
  Value zero = index(b, loc, 0);
  Value end = arith::AddIOp::create(b, loc, from, count);
  for (Value buffer : {c.keys, c.values}) {
    Value source = positions(b, loc, buffer, from, count);
    auto sourceType = cast<MemRefType>(source.getType());
    SmallVector<int64_t> shape(sourceType.getShape());
    auto tempType = MemRefType::get(shape, sourceType.getElementType());
    SmallVector<Value> dyn;
    for (int64_t d = 0; d < 4; ++d)
      if (tempType.isDynamicDim(d))
        dyn.push_back(memref::DimOp::create(b, loc, source, d));
    Value temp = memref::AllocOp::create(b, loc, tempType, dyn);
    memref::CopyOp::create(b, loc, source, temp);
    memref::CopyOp::create(b, loc, temp,
                           positions(b, loc, buffer, zero, count));
    Value stale = positions(b, loc, buffer, count,
                            arith::SubIOp::create(b, loc, end, count));
    linalg::FillOp::create(b, loc, zeroOf(b, loc, buffer), stale);
  }
}

/// The length and window of `c`, checked: a state buffer from outside
/// (a file, a caller's buffer) with a length or window outside
/// [0, capacity], or a length past the window, fails the call instead of
/// indexing past the buffers.
std::pair<Value, Value> checkedState(OpBuilder &b, Operation *op,
                                     const Cache &c) {
  Location loc = op->getLoc();
  int64_t capacity = cast<MemRefType>(c.keys.getType()).getDimSize(2);
  Value length = loadWord(b, loc, c.state, 0);
  Value window = loadWord(b, loc, c.state, 1);
  Value zero = index(b, loc, 0), cap = index(b, loc, capacity);
  auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y).getResult();
  };
  auto any = [&](Value x, Value y) {
    return arith::OrIOp::create(b, loc, x, y).getResult();
  };
  using P = arith::CmpIPredicate;
  Value bad = any(any(cmp(P::slt, length, zero), cmp(P::sgt, length, cap)),
                  any(cmp(P::slt, window, zero), cmp(P::sgt, window, cap)));
  bad = any(bad, arith::AndIOp::create(b, loc, cmp(P::sgt, window, zero),
                                       cmp(P::sgt, length, window)));
  std::string message;
  llvm::raw_string_ostream(message)
      << describeOp(op) << ": the cache's state is invalid: its length and "
      << "window must lie in [0, " << capacity
      << "] with the length at most a nonzero window; length vs window";
  callHook(b, op, bad, RuntimeHook::ShapeCheckFailed, message,
           {length, window});
  return {length, window};
}

/// A cache with a static dim of 0 (no batch, say) holds no elements: only
/// its length changes. (Its positions are not sliced: slices of a static
/// dim of size 0 are not valid IR.)
bool holdsNothing(const Cache &c) {
  return llvm::is_contained(cast<MemRefType>(c.keys.getType()).getShape(), 0);
}

Cache cacheOf(ValueRange buffers) {
  assert(buffers.size() == 3 && "a cache is three buffers");
  return {buffers[0], buffers[1], buffers[2]};
}

struct CreateLowering : public OpConversionPattern<KVCacheCreateOp> {
  CreateLowering(LoweringContext &ctx, MLIRContext *mlir)
      : OpConversionPattern(ctx.types, mlir), ctx(ctx) {}
  LoweringContext &ctx;

  LogicalResult
  matchAndRewrite(KVCacheCreateOp op, OneToNOpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Type> types;
    if (failed(getTypeConverter()->convertType(op.getType(), types)))
      return failure();
    auto bufferType = cast<MemRefType>(types[0]);
    SmallVector<Value> dyn;
    if (bufferType.isDynamicDim(0)) {
      // The batch size is a symbol bound by a tensor argument.
      auto name = op.getType().getShape().getDims()[0].getSymbolName();
      if (!name)
        return op.emitOpError("needs a batch size that is a number or a "
                              "symbol");
      FailureOr<Value> b = ctx.symbols.lookup(op, *name);
      if (failed(b))
        return failure();
      dyn.push_back(*b);
    }
    Value keys = memref::AllocOp::create(rewriter, loc, bufferType, dyn);
    Value values = memref::AllocOp::create(rewriter, loc, bufferType, dyn);
    Value state =
        memref::AllocOp::create(rewriter, loc, cast<MemRefType>(types[2]));
    for (Value buffer : {keys, values})
      linalg::FillOp::create(rewriter, loc, zeroOf(rewriter, loc, buffer),
                             buffer);
    storeWord(rewriter, loc, index(rewriter, loc, 0), state, 0);
    int64_t window = op.getWindow() ? int64_t(*op.getWindow()) : 0;
    storeWord(rewriter, loc, index(rewriter, loc, window), state, 1);
    rewriter.replaceOpWithMultiple(op, {{keys, values, state}});
    return success();
  }
};

struct AppendLowering : public OpConversionPattern<KVCacheAppendOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(KVCacheAppendOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Cache c = cacheOf(adaptor.getCache());
    Value newKeys = adaptor.getKeys().front();
    Value newValues = adaptor.getValues().front();
    auto bufferType = cast<MemRefType>(c.keys.getType());
    int64_t capacity = bufferType.getDimSize(2);
    // Sizes the types leave open (a batch symbol, a `?`) are checked
    // here: the writes below take their extents from keys and values.
    auto mustEqual = [&](Value v, int64_t d, Value other, int64_t od,
                         StringRef what) {
      auto vt = cast<ShapedType>(v.getType());
      auto ot = cast<ShapedType>(other.getType());
      if (!vt.isDynamicDim(d) && !ot.isDynamicDim(od) &&
          vt.getDimSize(d) == ot.getDimSize(od))
        return;
      Value a = isa<MemRefType>(vt)
                    ? memref::DimOp::create(rewriter, loc, v, d).getResult()
                    : dimOf(rewriter, loc, v, d);
      Value e =
          isa<MemRefType>(ot)
              ? memref::DimOp::create(rewriter, loc, other, od).getResult()
              : dimOf(rewriter, loc, other, od);
      callHook(
          rewriter, op,
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ne, a, e),
          RuntimeHook::ShapeCheckFailed, describeOp(op) + ": " + what.str(),
          {a, e});
    };
    for (auto [v, name] :
         {std::pair(newKeys, "keys"), std::pair(newValues, "values")}) {
      mustEqual(v, 0, c.keys, 0,
                (Twine(name) + " batch vs the cache's batch").str());
      mustEqual(v, 1, c.keys, 1,
                (Twine(name) + " heads vs the cache's heads").str());
      mustEqual(v, 3, c.keys, 3,
                (Twine(name) + " head_dim vs the cache's head_dim").str());
    }
    mustEqual(newValues, 2, newKeys, 2, "values positions vs keys positions");
    auto [length, window] = checkedState(rewriter, op, c);
    Value count = dimOf(rewriter, loc, newKeys, 2);
    Value zero = index(rewriter, loc, 0);
    Value hasWindow = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::sgt, window, zero);
    Value limit = arith::SelectOp::create(rewriter, loc, hasWindow, window,
                                          index(rewriter, loc, capacity));
    Value total = arith::AddIOp::create(rewriter, loc, length, count);
    // Without a window, past the capacity is an error of the call.
    Value overflow = arith::AndIOp::create(
        rewriter, loc,
        arith::XOrIOp::create(
            rewriter, loc, hasWindow,
            arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(1))),
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sgt, total,
                              limit));
    std::string message;
    llvm::raw_string_ostream(message)
        << describeOp(op) << ": the cache holds " << capacity
        << " positions, but the valid ones plus the appended ones exceed "
           "that (use a window to drop the oldest); positions after the "
           "append vs max_length";
    callHook(rewriter, op, overflow, RuntimeHook::ShapeCheckFailed, message,
             {total, limit});
    // With a window: only the last `limit` new positions can stay, and the
    // oldest cached ones make room for them.
    Value kept = arith::MinSIOp::create(rewriter, loc, count, limit);
    Value skipped = arith::SubIOp::create(rewriter, loc, count, kept);
    Value drop = arith::MaxSIOp::create(
        rewriter, loc,
        arith::SubIOp::create(
            rewriter, loc, arith::AddIOp::create(rewriter, loc, length, kept),
            limit),
        zero);
    Value remaining = arith::SubIOp::create(rewriter, loc, length, drop);
    auto shift = scf::IfOp::create(
        rewriter, loc,
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sgt, drop,
                              zero),
        false);
    if (!holdsNothing(c)) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(shift.thenBlock()->getTerminator());
      moveToFront(rewriter, loc, c, drop, remaining);
    }
    SmallVector<std::pair<Value, Value>> writes;
    if (!holdsNothing(c))
      writes = {{c.keys, newKeys}, {c.values, newValues}};
    for (auto [buffer, source] : writes) {
      auto type = cast<RankedTensorType>(source.getType());
      SmallVector<OpFoldResult> offsets{rewriter.getIndexAttr(0),
                                        rewriter.getIndexAttr(0), skipped,
                                        rewriter.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(rewriter, loc, source);
      sizes[2] = kept;
      SmallVector<OpFoldResult> strides(4, rewriter.getIndexAttr(1));
      auto sliceType =
          RankedTensorType::get({type.getDimSize(0), type.getDimSize(1),
                                 ShapedType::kDynamic, type.getDimSize(3)},
                                type.getElementType());
      Value slice = tensor::ExtractSliceOp::create(
          rewriter, loc, sliceType, source, offsets, sizes, strides);
      Value destination = positions(rewriter, loc, buffer, remaining, kept);
      auto write = bufferization::MaterializeInDestinationOp::create(
          rewriter, loc, TypeRange{}, slice, destination);
      write.setRestrict(true);
      write.setWritable(true);
    }
    storeWord(rewriter, loc,
              arith::AddIOp::create(rewriter, loc, remaining, kept), c.state,
              0);
    rewriter.eraseOp(op);
    return success();
  }
};

struct ReadLowering : public OpConversionPattern<KVCacheReadOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(KVCacheReadOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Cache c = cacheOf(adaptor.getCache());
    SmallVector<Value> results;
    for (auto [buffer, result] : {std::pair(c.keys, op.getKeys()),
                                  std::pair(c.values, op.getValues())}) {
      auto type = cast<MemRefType>(buffer.getType());
      SmallVector<Value> dyn;
      if (type.isDynamicDim(0))
        dyn.push_back(memref::DimOp::create(rewriter, loc, buffer, 0));
      // A copy: later appends must not change what was read.
      Value copy = memref::AllocOp::create(rewriter, loc, type, dyn);
      memref::CopyOp::create(rewriter, loc, buffer, copy);
      auto tensorType =
          RankedTensorType::get(type.getShape(), type.getElementType());
      Value t = bufferization::ToTensorOp::create(rewriter, loc, tensorType,
                                                  copy, /*restrict=*/true,
                                                  /*writable=*/true);
      Type want = getTypeConverter()->convertType(result.getType());
      if (want != t.getType())
        t = tensor::CastOp::create(rewriter, loc, want, t);
      results.push_back(t);
    }
    Value length =
        memref::LoadOp::create(rewriter, loc, c.state, index(rewriter, loc, 0));
    results.push_back(tensor::FromElementsOp::create(
        rewriter, loc, RankedTensorType::get({}, rewriter.getI64Type()),
        ValueRange{length}));
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct PruneLowering : public OpConversionPattern<KVCachePruneOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(KVCachePruneOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Cache c = cacheOf(adaptor.getCache());
    Value length = checkedState(rewriter, op, c).first;
    Value keep = index(rewriter, loc, op.getKeep());
    Value drop = arith::SubIOp::create(rewriter, loc, length, keep);
    auto shift = scf::IfOp::create(
        rewriter, loc,
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sgt, drop,
                              index(rewriter, loc, 0)),
        false);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPoint(shift.thenBlock()->getTerminator());
      if (!holdsNothing(c))
        moveToFront(rewriter, loc, c, drop, keep);
      storeWord(rewriter, loc, keep, c.state, 0);
    }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::tessera::tgraph::lowering::addStateConversions(
    TypeConverter &types) {
  types.addConversion(
      [](KVCacheType t,
         SmallVectorImpl<Type> &results) -> std::optional<LogicalResult> {
        SmallVector<int64_t> shape;
        for (const ::tessera::shape::DimExpr &d : t.getShape().getDims()) {
          std::optional<int64_t> c = d.getConstant();
          shape.push_back(c ? *c : ShapedType::kDynamic);
        }
        auto buffer = MemRefType::get(shape, t.getElementType());
        results.append(
            {buffer, buffer,
             MemRefType::get({2}, IntegerType::get(t.getContext(), 64))});
        return success();
      });
}

void mlir::tessera::tgraph::lowering::populateStatePatterns(
    LoweringContext &ctx, RewritePatternSet &patterns) {
  MLIRContext *mlir = patterns.getContext();
  patterns.add<CreateLowering>(ctx, mlir);
  patterns.add<AppendLowering, ReadLowering, PruneLowering>(ctx.types, mlir);
}
