//===- TTileToGPU.cpp - Tile IR kernels to GPU dialect kernels
//-------------===//
//
// Each tile becomes the scalars its layout gives a thread (Distribution.h);
// the kernel body is rewritten op by op into a gpu.func run by
// 32 * num_warps threads.
//
//===----------------------------------------------------------------------===//

#include "Distribution.h"

#include "tessera/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <map>

#include <cmath>

namespace mlir::tessera {
#define GEN_PASS_DEF_CONVERTTTILETOGPU
#include "tessera/Conversion/Passes.h.inc"
} // namespace mlir::tessera

using namespace mlir;
using namespace mlir::tessera;
using namespace mlir::tessera::ttile;

namespace {

using Regs = SmallVector<Value>;

bool isTile(Type t) { return isa<RankedTensorType>(t); }

class KernelLowering {
public:
  KernelLowering(func::FuncOp src, gpu::GPUFuncOp dst)
      : src(src), dst(dst), b(src.getContext()), numWarps(kernelNumWarps(src)) {
  }

  LogicalResult run() {
    Block &entry = dst.getBody().front();
    b.setInsertionPointToStart(&entry);
    for (auto [from, to] :
         llvm::zip(src.getArguments(),
                   entry.getArguments().take_front(src.getNumArguments())))
      map.map(from, to);
    Location loc = src.getLoc();
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    lane = arith::RemUIOp::create(b, loc, tid, index(32));
    warp = arith::DivUIOp::create(b, loc, tid, index(32));
    if (failed(lowerBlock(src.getBody().front())))
      return failure();
    gpu::ReturnOp::create(b, loc);
    return success();
  }

private:
  func::FuncOp src;
  gpu::GPUFuncOp dst;
  OpBuilder b;
  IRMapping map;
  DenseMap<Value, Regs> tiles;
  Value lane, warp;
  int64_t numWarps;

  //===--------------------------------------------------------------------===//
  // Helpers
  //===--------------------------------------------------------------------===//

  Value index(int64_t v) {
    return arith::ConstantIndexOp::create(b, src.getLoc(), v);
  }

  FailureOr<Distribution> dist(Operation *op, Type type) {
    std::string error;
    auto t = cast<RankedTensorType>(type);
    auto d = distributionOf(t, &error);
    if (failed(d)) {
      op->emitError() << "cannot lower tile " << type << ": " << error;
      return failure();
    }
    if (d->numWarps() != numWarps) {
      op->emitError() << "tile " << type << " is spread over " << d->numWarps()
                      << " warps but the kernel has ttile.num_warps = "
                      << numWarps;
      return failure();
    }
    return d;
  }

  /// The thread-dependent part of each dim's coordinate.
  SmallVector<Value> threadBases(Location loc, const Distribution &d) {
    SmallVector<Value> bases;
    for (unsigned i = 0; i < d.rank(); ++i) {
      Value sum = index(0);
      auto addBits = [&](Value id, ArrayRef<Basis> bits) {
        for (auto [j, basis] : llvm::enumerate(bits)) {
          if (basis[i] == 0)
            continue;
          Value bit = arith::AndIOp::create(
              b, loc, arith::ShRUIOp::create(b, loc, id, index(j)), index(1));
          sum = arith::AddIOp::create(
              b, loc, sum, arith::MulIOp::create(b, loc, bit, index(basis[i])));
        }
      };
      addBits(lane, d.laneBases);
      addBits(warp, d.warpBases);
      bases.push_back(sum);
    }
    return bases;
  }

  /// Coordinate along dim i of register r's element.
  Value coord(Location loc, const Distribution &d, ArrayRef<Value> bases,
              int64_t r, unsigned i, bool wrap = true) {
    Value c = arith::AddIOp::create(b, loc, bases[i], index(d.regCoord(r)[i]));
    if (wrap && d.wraps(i))
      c = arith::AndIOp::create(b, loc, c, index(d.shape[i] - 1));
    return c;
  }

  /// For each register of `to`, the register of `from` that holds the
  /// element `f` maps its element to, on the same thread; failure when
  /// elements would have to move between threads. `f` maps coordinates
  /// linearly (a permutation or projection of dims).
  FailureOr<SmallVector<int64_t>>
  registerMap(const Distribution &to, const Distribution &from,
              function_ref<Basis(const Basis &)> f) {
    auto norm = [&](Basis c) {
      for (unsigned d = 0; d < from.rank(); ++d)
        c[d] &= from.shape[d] - 1;
      return c;
    };
    for (auto [x, y] : llvm::zip_equal(to.laneBases, from.laneBases))
      if (norm(f(x)) != norm(y))
        return failure();
    if (to.warpBases.size() != from.warpBases.size())
      return failure();
    for (auto [x, y] : llvm::zip(to.warpBases, from.warpBases))
      if (norm(f(x)) != norm(y))
        return failure();
    std::map<Basis, int64_t> where;
    for (int64_t r = from.numRegs() - 1; r >= 0; --r)
      where[norm(from.regCoord(r))] = r;
    SmallVector<int64_t> map;
    for (int64_t r = 0, n = to.numRegs(); r < n; ++r) {
      auto it = where.find(norm(f(to.regCoord(r))));
      if (it == where.end())
        return failure();
      map.push_back(it->second);
    }
    return map;
  }

  Value allOf(Location loc, ArrayRef<Value> conds) {
    Value r;
    for (Value c : conds)
      r = r ? arith::AndIOp::create(b, loc, r, c).getResult() : c;
    return r ? r : arith::ConstantIntOp::create(b, loc, 1, 1).getResult();
  }

  Value lessThan(Location loc, Value a, Value bound) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a, bound);
  }

  /// A scalar constant of `type` from an attribute (or zero).
  Value scalarConstant(Location loc, Type type, Attribute value = {}) {
    if (auto typed = dyn_cast_or_null<TypedAttr>(value))
      return arith::ConstantOp::create(b, loc, typed);
    return arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
  }

  /// A workgroup (shared memory) buffer of `count` elements, one per use
  /// site.
  Value sharedBuffer(Type element, int64_t count) {
    auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                            gpu::AddressSpace::Workgroup);
    auto type =
        MemRefType::get({count}, element, MemRefLayoutAttrInterface{}, space);
    return dst.addWorkgroupAttribution(type, src.getLoc());
  }

  /// Element type used in shared memory for `t` (i1 as i8).
  Type storageType(Type t) { return t.isInteger(1) ? b.getI8Type() : t; }
  Value toStorage(Location loc, Value v) {
    return v.getType().isInteger(1)
               ? arith::ExtUIOp::create(b, loc, b.getI8Type(), v).getResult()
               : v;
  }
  Value fromStorage(Location loc, Value v, Type t) {
    return t.isInteger(1) ? arith::TruncIOp::create(b, loc, t, v).getResult()
                          : v;
  }

  //===--------------------------------------------------------------------===//
  // Blocks and ops
  //===--------------------------------------------------------------------===//

  LogicalResult lowerBlock(Block &block) {
    for (auto it = block.begin(), end = std::prev(block.end()); it != end;) {
      // Adjacent conversions through shared memory share their barriers.
      SmallVector<ConvertLayoutOp> group;
      for (auto next = it; next != end; ++next) {
        auto cvt = dyn_cast<ConvertLayoutOp>(&*next);
        if (!cvt || !movesData(cvt) ||
            llvm::any_of(group, [&](ConvertLayoutOp g) {
              return g.getResult() == cvt.getSource();
            }))
          break;
        group.push_back(cvt);
      }
      if (group.size() > 1) {
        if (failed(lowerConvertGroup(group)))
          return failure();
        std::advance(it, group.size());
        continue;
      }
      if (failed(lowerOp(&*it)))
        return failure();
      ++it;
    }
    return success();
  }

  /// The lowered values of `values`, tiles flattened into their registers.
  SmallVector<Value> flatten(ValueRange values) {
    SmallVector<Value> flat;
    for (Value v : values) {
      if (isTile(v.getType()))
        llvm::append_range(flat, tiles.lookup(v));
      else
        flat.push_back(map.lookup(v));
    }
    return flat;
  }

  /// Binds `values` to consecutive entries of `flat` (the inverse of
  /// flatten).
  LogicalResult bind(Operation *op, ValueRange values, ValueRange flat) {
    unsigned pos = 0;
    for (Value v : values) {
      if (isTile(v.getType())) {
        auto d = dist(op, v.getType());
        if (failed(d))
          return failure();
        int64_t n = d->numRegs();
        tiles[v] = Regs(flat.slice(pos, n));
        pos += n;
      } else {
        map.map(v, flat[pos++]);
      }
    }
    return success();
  }

  FailureOr<SmallVector<Type>> flatTypes(Operation *op, TypeRange types) {
    SmallVector<Type> flat;
    for (Type t : types) {
      if (isTile(t)) {
        auto d = dist(op, t);
        if (failed(d))
          return failure();
        flat.append(d->numRegs(), cast<RankedTensorType>(t).getElementType());
      } else {
        flat.push_back(t);
      }
    }
    return flat;
  }

  LogicalResult lowerOp(Operation *op) {
    if (isa<scf::ForOp, RangeOp>(op))
      return lowerLoop(op);
    if (auto ifOp = dyn_cast<scf::IfOp>(op))
      return lowerIf(ifOp);
    if (auto load = dyn_cast<LoadOp>(op))
      return lowerLoad(load);
    if (auto store = dyn_cast<StoreOp>(op))
      return lowerStore(store);
    if (auto pid = dyn_cast<ProgramIdOp>(op)) {
      map.map(pid.getResult(),
              gpu::BlockIdOp::create(b, op->getLoc(),
                                     gpu::Dimension(pid.getDim())));
      return success();
    }
    if (auto n = dyn_cast<NumProgramsOp>(op)) {
      map.map(n.getResult(), gpu::GridDimOp::create(
                                 b, op->getLoc(), gpu::Dimension(n.getDim())));
      return success();
    }
    if (auto reduce = dyn_cast<ReduceOp>(op))
      return lowerReduce(reduce);
    if (auto bcast = dyn_cast<BroadcastOp>(op))
      return lowerBroadcast(bcast);
    if (auto tr = dyn_cast<TransposeOp>(op))
      return lowerTranspose(tr);
    if (auto cvt = dyn_cast<ConvertLayoutOp>(op))
      return lowerConvert(cvt);
    if (auto iota = dyn_cast<IotaOp>(op))
      return lowerIota(iota);
    if (auto cast = dyn_cast<CastOp>(op))
      return lowerCast(cast);
    if (auto mask = dyn_cast<MaskCausalOp>(op))
      return lowerMaskCausal(mask);
    if (auto dot = dyn_cast<DotOp>(op))
      return lowerDot(dot);
    if (isa<SoftmaxOnlineOp, SoftmaxAccumulateOp>(op))
      return op->emitError("run -tessera-ttile-assign-layouts first: it "
                           "expands the online-softmax ops");

    bool tileResults =
        llvm::any_of(op->getResultTypes(), [](Type t) { return isTile(t); });
    bool tileOperands =
        llvm::any_of(op->getOperandTypes(), [](Type t) { return isTile(t); });
    if (auto cst = dyn_cast<arith::ConstantOp>(op); cst && tileResults)
      return lowerConstant(cst);
    if (auto splat = dyn_cast<tensor::SplatOp>(op)) {
      auto d = dist(op, splat.getType());
      if (failed(d))
        return failure();
      tiles[splat.getResult()] =
          Regs(d->numRegs(), map.lookup(splat.getInput()));
      return success();
    }
    if (tileResults || tileOperands) {
      if (OpTrait::hasElementwiseMappableTraits(op) &&
          isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
        return lowerElementwise(op);
      return op->emitError() << "the Tile IR GPU lowering has no rule for '"
                             << op->getName() << "' on tiles";
    }
    if (op->getNumRegions())
      return op->emitError() << "the Tile IR GPU lowering has no rule for '"
                             << op->getName() << "' (an op with regions)";
    if (isa<func::ReturnOp>(op))
      return success();
    b.clone(*op, map);
    return success();
  }

  LogicalResult lowerElementwise(Operation *op) {
    auto d = dist(op, op->getResult(0).getType());
    if (failed(d))
      return failure();
    SmallVector<Type> scalarTypes;
    for (Type t : op->getResultTypes())
      scalarTypes.push_back(cast<RankedTensorType>(t).getElementType());
    SmallVector<Regs> results(op->getNumResults());
    for (int64_t r = 0, n = d->numRegs(); r < n; ++r) {
      OperationState state(op->getLoc(), op->getName());
      for (Value v : op->getOperands())
        state.addOperands(isTile(v.getType()) ? tiles.lookup(v)[r]
                                              : map.lookup(v));
      state.addTypes(scalarTypes);
      state.addAttributes(op->getAttrs());
      Operation *scalar = b.create(state);
      for (auto [i, res] : llvm::enumerate(scalar->getResults()))
        results[i].push_back(res);
    }
    for (auto [res, regs] : llvm::zip(op->getResults(), results))
      tiles[res] = std::move(regs);
    return success();
  }

  LogicalResult lowerConstant(arith::ConstantOp op) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!dense || !dense.isSplat())
      return op.emitError("the Tile IR GPU lowering takes splat tile "
                          "constants only (use ttile.iota and arith for "
                          "others)");
    auto d = dist(op, op.getType());
    if (failed(d))
      return failure();
    Value v = arith::ConstantOp::create(
        b, op.getLoc(), cast<TypedAttr>(dense.getSplatValue<Attribute>()));
    tiles[op.getResult()] = Regs(d->numRegs(), v);
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Control flow
  //===--------------------------------------------------------------------===//

  LogicalResult lowerLoop(Operation *op) {
    Location loc = op->getLoc();
    Value lb, ub, step;
    if (auto f = dyn_cast<scf::ForOp>(op)) {
      lb = f.getLowerBound();
      ub = f.getUpperBound();
      step = f.getStep();
    } else {
      auto r = cast<RangeOp>(op);
      lb = r.getLowerBound();
      ub = r.getUpperBound();
      step = r.getStep();
    }
    Block &body = op->getRegion(0).front();
    unsigned numInits = op->getNumResults();
    SmallVector<Value> inits = flatten(op->getOperands().take_back(numInits));
    LogicalResult status = success();
    auto loop = scf::ForOp::create(
        b, loc, map.lookup(lb), map.lookup(ub), map.lookup(step), inits,
        [&](OpBuilder &nested, Location, Value iv, ValueRange args) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(nested.getInsertionBlock());
          map.map(body.getArgument(0), iv);
          if (failed(bind(op, body.getArguments().drop_front(), args)) ||
              failed(lowerBlock(body))) {
            status = failure();
            scf::YieldOp::create(b, loc, args);
            return;
          }
          scf::YieldOp::create(b, loc,
                               flatten(body.getTerminator()->getOperands()));
        });
    if (failed(status))
      return failure();
    return bind(op, op->getResults(), loop.getResults());
  }

  LogicalResult lowerIf(scf::IfOp op) {
    auto types = flatTypes(op, op.getResultTypes());
    if (failed(types))
      return failure();
    bool hasElse = !op.getElseRegion().empty();
    auto lowered = scf::IfOp::create(b, op.getLoc(), *types,
                                     map.lookup(op.getCondition()), hasElse);
    auto lowerRegion = [&](Region &from, Region &to) -> LogicalResult {
      OpBuilder::InsertionGuard guard(b);
      Block &block = to.front();
      if (!block.empty() && block.back().hasTrait<OpTrait::IsTerminator>())
        block.back().erase();
      b.setInsertionPointToEnd(&block);
      if (failed(lowerBlock(from.front())))
        return failure();
      scf::YieldOp::create(
          b, op.getLoc(), flatten(from.front().getTerminator()->getOperands()));
      return success();
    };
    if (failed(lowerRegion(op.getThenRegion(), lowered.getThenRegion())))
      return failure();
    if (hasElse &&
        failed(lowerRegion(op.getElseRegion(), lowered.getElseRegion())))
      return failure();
    return bind(op, op.getResults(), lowered.getResults());
  }

  //===--------------------------------------------------------------------===//
  // Memory
  //===--------------------------------------------------------------------===//

  /// Elements per vector access: a thread's elements along the memref's
  /// last dim, when that dim has unit stride and its registers are adjacent,
  /// up to 16 bytes.
  int64_t vectorWidth(const Distribution &d, MemRefType type) {
    unsigned bits = type.getElementType().getIntOrFloatBitWidth();
    if (bits < 8 || bits % 8)
      return 1;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return 1;
    return std::min<int64_t>(runAlong(d, d.rank() - 1), 128 / bits);
  }

  struct Access {
    SmallVector<Value> sizes;
    Value alignedBase, offset; // for vector accesses
    SmallVector<Value> strides;
  };

  Access describeMemref(Location loc, Value mem, MemRefType type, bool vec) {
    Access a;
    for (int64_t i = 0; i < type.getRank(); ++i)
      a.sizes.push_back(memref::DimOp::create(b, loc, mem, i));
    if (vec) {
      auto meta = memref::ExtractStridedMetadataOp::create(b, loc, mem);
      a.offset = meta.getOffset();
      a.strides.assign(meta.getStrides().begin(), meta.getStrides().end());
      a.alignedBase =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, mem);
    }
    return a;
  }

  /// Whether every vector access of a tile at `start` is aligned: a
  /// thread's runs of `v` elements start at coordinates that are multiples
  /// of `v` along the last dim (runAlong), so it suffices that the first
  /// element's address and the other dims' strides are multiples of `v`
  /// elements. Checked once per access op.
  Value allAligned(Location loc, const Access &a, ValueRange start, int64_t v,
                   int64_t elementBytes) {
    Value first =
        arith::AddIOp::create(b, loc, a.offset, map.lookup(start.back()));
    Value addr = arith::AddIOp::create(
        b, loc, a.alignedBase,
        arith::MulIOp::create(b, loc, first, index(elementBytes)));
    auto multiple = [&](Value x, int64_t m) -> Value {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                   arith::RemUIOp::create(b, loc, x, index(m)),
                                   index(0));
    };
    SmallVector<Value> conds = {multiple(addr, v * elementBytes)};
    for (Value stride : ArrayRef<Value>(a.strides).drop_back())
      conds.push_back(multiple(stride, v));
    return allOf(loc, conds);
  }

  /// Memory coordinates of register `r`'s element: start + coordinate.
  SmallVector<Value> memCoords(Location loc, const Distribution &d,
                               ArrayRef<Value> bases, ValueRange start,
                               int64_t r) {
    SmallVector<Value> coords;
    for (unsigned i = 0; i < d.rank(); ++i)
      coords.push_back(arith::AddIOp::create(b, loc, map.lookup(start[i]),
                                             coord(loc, d, bases, r, i)));
    return coords;
  }

  /// Conditions for the element at `coords` + `extra` along the last dim.
  Value inBounds(Location loc, const Access &a, ArrayRef<Value> coords,
                 int64_t extra) {
    SmallVector<Value> conds;
    for (auto [i, c] : llvm::enumerate(coords)) {
      Value x = c;
      if (extra && i + 1 == coords.size())
        x = arith::AddIOp::create(b, loc, c, index(extra));
      conds.push_back(lessThan(loc, x, a.sizes[i]));
    }
    return allOf(loc, conds);
  }

  LogicalResult lowerLoad(LoadOp op) {
    Location loc = op.getLoc();
    auto d = dist(op, op.getType());
    if (failed(d))
      return failure();
    if (op.getMask() &&
        op.getMask().getType() != op.getType().clone(b.getI1Type()))
      return op.emitError("the mask's layout differs from the tile's (run "
                          "-tessera-ttile-assign-layouts)");
    Value mem = map.lookup(op.getSource());
    auto type = cast<MemRefType>(mem.getType());
    Type elt = type.getElementType();
    int64_t v = vectorWidth(*d, type);
    int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
    Access acc = describeMemref(loc, mem, type, v > 1);
    Value alignedAll =
        v > 1 ? allAligned(loc, acc, op.getIndices(), v, bytes) : Value();
    SmallVector<Value> bases = threadBases(loc, *d);
    Value pad = scalarConstant(loc, elt, op.getPaddingAttr());
    Regs mask = op.getMask() ? tiles.lookup(op.getMask()) : Regs();
    Regs out(d->numRegs());
    auto scalarLoad = [&](ArrayRef<Value> coords, Value cond) -> Value {
      auto ifOp = scf::IfOp::create(b, loc, TypeRange{elt}, cond, true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      scf::YieldOp::create(
          b, loc, ValueRange{memref::LoadOp::create(b, loc, mem, coords)});
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      scf::YieldOp::create(b, loc, ValueRange{pad});
      return ifOp.getResult(0);
    };
    for (int64_t r = 0, n = d->numRegs(); r < n; r += v) {
      SmallVector<Value> coords = memCoords(loc, *d, bases, op.getIndices(), r);
      SmallVector<Value> conds = {inBounds(loc, acc, coords, v - 1)};
      for (int64_t e = 0; e < v && !mask.empty(); ++e)
        conds.push_back(mask[r + e]);
      if (v == 1) {
        out[r] = scalarLoad(coords, allOf(loc, conds));
        continue;
      }
      conds.push_back(alignedAll);
      auto vecType = VectorType::get({v}, elt);
      auto ifOp = scf::IfOp::create(b, loc, TypeRange{vecType},
                                    allOf(loc, conds), true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        Value fast = vector::LoadOp::create(b, loc, vecType, mem, coords, false,
                                            llvm::Align(v * bytes));
        scf::YieldOp::create(b, loc, fast);
        b.setInsertionPointToStart(&ifOp.getElseRegion().front());
        SmallVector<Value> elems;
        for (int64_t e = 0; e < v; ++e) {
          SmallVector<Value> c = coords;
          c.back() = arith::AddIOp::create(b, loc, c.back(), index(e));
          SmallVector<Value> ec = {inBounds(loc, acc, c, 0)};
          if (!mask.empty())
            ec.push_back(mask[r + e]);
          elems.push_back(scalarLoad(c, allOf(loc, ec)));
        }
        scf::YieldOp::create(
            b, loc,
            ValueRange{vector::FromElementsOp::create(b, loc, vecType, elems)});
      }
      for (int64_t e = 0; e < v; ++e)
        out[r + e] =
            vector::ExtractOp::create(b, loc, ifOp.getResult(0), int64_t(e));
    }
    tiles[op.getResult()] = std::move(out);
    return success();
  }

  LogicalResult lowerStore(StoreOp op) {
    Location loc = op.getLoc();
    auto valueType = cast<RankedTensorType>(op.getValue().getType());
    auto d = dist(op, valueType);
    if (failed(d))
      return failure();
    if (op.getMask() &&
        op.getMask().getType() != valueType.clone(b.getI1Type()))
      return op.emitError("the mask's layout differs from the tile's (run "
                          "-tessera-ttile-assign-layouts)");
    Value mem = map.lookup(op.getDest());
    auto type = cast<MemRefType>(mem.getType());
    Type elt = type.getElementType();
    int64_t v = vectorWidth(*d, type);
    int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
    Access acc = describeMemref(loc, mem, type, v > 1);
    Value alignedAll =
        v > 1 ? allAligned(loc, acc, op.getIndices(), v, bytes) : Value();
    SmallVector<Value> bases = threadBases(loc, *d);
    Regs vals = tiles.lookup(op.getValue());
    Regs mask = op.getMask() ? tiles.lookup(op.getMask()) : Regs();
    auto scalarStore = [&](Value val, ArrayRef<Value> coords, Value cond) {
      auto ifOp = scf::IfOp::create(b, loc, TypeRange{}, cond, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      memref::StoreOp::create(b, loc, val, mem, coords);
    };
    for (int64_t r = 0, n = d->numRegs(); r < n; r += v) {
      SmallVector<Value> coords = memCoords(loc, *d, bases, op.getIndices(), r);
      SmallVector<Value> conds = {inBounds(loc, acc, coords, v - 1)};
      for (int64_t e = 0; e < v && !mask.empty(); ++e)
        conds.push_back(mask[r + e]);
      if (v == 1) {
        scalarStore(vals[r], coords, allOf(loc, conds));
        continue;
      }
      conds.push_back(alignedAll);
      auto ifOp =
          scf::IfOp::create(b, loc, TypeRange{}, allOf(loc, conds), true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      auto vecType = VectorType::get({v}, elt);
      Value vec = vector::FromElementsOp::create(
          b, loc, vecType, ArrayRef<Value>(vals).slice(r, v));
      vector::StoreOp::create(b, loc, vec, mem, coords, false,
                              llvm::Align(v * bytes));
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      for (int64_t e = 0; e < v; ++e) {
        SmallVector<Value> c = coords;
        c.back() = arith::AddIOp::create(b, loc, c.back(), index(e));
        SmallVector<Value> ec = {inBounds(loc, acc, c, 0)};
        if (!mask.empty())
          ec.push_back(mask[r + e]);
        scalarStore(vals[r + e], c, allOf(loc, ec));
      }
    }
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Data movement between threads
  //===--------------------------------------------------------------------===//

  /// How many registers from register 0 on hold consecutive elements along
  /// `dim`, with every run starting at a multiple of its length.
  static int64_t runAlong(const Distribution &d, unsigned dim) {
    if (d.wraps(dim))
      return 1;
    int64_t n = 1;
    size_t i = 0;
    for (; i < d.regBases.size(); ++i) {
      bool unit = true;
      for (unsigned k = 0; k < d.rank(); ++k)
        unit &= d.regBases[i][k] == (k == dim ? n : 0);
      if (!unit)
        break;
      n *= 2;
    }
    auto aligned = [&](int64_t len) {
      auto ok = [&](ArrayRef<Basis> bases) {
        return llvm::all_of(bases,
                            [&](const Basis &x) { return x[dim] % len == 0; });
      };
      return ok(ArrayRef<Basis>(d.regBases).drop_front(llvm::Log2_64(len))) &&
             ok(d.laneBases) && ok(d.warpBases);
    };
    while (n > 1 && !aligned(n))
      n /= 2;
    return n;
  }

  /// The warp-dependent part of each dim's coordinate.
  SmallVector<Value> warpBasesOf(Location loc, const Distribution &d) {
    SmallVector<Value> bases;
    for (unsigned i = 0; i < d.rank(); ++i) {
      Value sum = index(0);
      for (auto [j, basis] : llvm::enumerate(d.warpBases)) {
        if (basis[i] == 0)
          continue;
        Value bit = arith::AndIOp::create(
            b, loc, arith::ShRUIOp::create(b, loc, warp, index(j)), index(1));
        sum = arith::AddIOp::create(
            b, loc, sum, arith::MulIOp::create(b, loc, bit, index(basis[i])));
      }
      bases.push_back(sum);
    }
    return bases;
  }

  /// The mma.sync A (opIdx 0) or B (opIdx 1) fragments of `type` read from
  /// the shared buffer `buf` (contiguous along dim `fast`, 16-byte chunks
  /// at `address`) with ldmatrix: each lane gives the address of one
  /// 8-element buffer row of an 8x8 matrix.
  Regs ldmatrix(Location loc, Value buf, const Distribution &d,
                RankedTensorType type, unsigned opIdx, MmaAttr mma,
                unsigned fast, function_ref<Value(ArrayRef<Value>)> address,
                Type elt) {
    // Buffer rows run along the fragment pairs' dim (K) for A with fast 1
    // and B with fast 0: plain ldmatrix; otherwise transposed. A lane gives
    // the start of one 8-element buffer row: its row coordinate takes the
    // lane's row within the 8x8 matrix.
    bool trans = (opIdx == 0) != (fast == 1);
    auto laneRow = [&](unsigned dim) { return dim != fast; };
    MLIRContext *ctx = b.getContext();
    int64_t wm = mma.getWarpsPerCTA()[0], wn = mma.getWarpsPerCTA()[1];
    int64_t nK = type.getShape()[opIdx == 0 ? 1 : 0] / 16;
    int64_t nOuter = opIdx == 0 ? type.getShape()[0] / (16 * wm)
                                : type.getShape()[1] / (8 * wn);
    SmallVector<Value> wbase = warpBasesOf(loc, d);
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buf);
    Value l8 = arith::RemUIOp::create(b, loc, lane, index(8));
    Value j = arith::DivUIOp::create(b, loc, lane, index(8));
    Value jLow = arith::RemUIOp::create(b, loc, j, index(2));
    Value jHigh = arith::DivUIOp::create(b, loc, j, index(2));
    Type i32 = b.getI32Type();
    auto pairType = VectorType::get({2}, elt);
    auto i32Vec = VectorType::get({1}, i32);
    auto load = [&](Value row, Value col, int64_t num) -> SmallVector<Value> {
      Value byteAddr = arith::AddIOp::create(
          b, loc, base,
          arith::MulIOp::create(b, loc, address({row, col}), index(2)));
      Value ptr =
          LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(ctx, 3),
                                   ValueRange{arith::IndexCastOp::create(
                                       b, loc, b.getI64Type(), byteAddr)});
      Type res = num == 1 ? i32
                          : Type(LLVM::LLVMStructType::getLiteral(
                                ctx, SmallVector<Type>(num, i32)));
      Value m = NVVM::LdMatrixOp::create(
          b, loc, res, ptr, b.getI32IntegerAttr(num),
          NVVM::MMALayoutAttr::get(ctx, trans ? NVVM::MMALayout::col
                                              : NVVM::MMALayout::row),
          NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
          NVVM::LdStMatrixEltTypeAttr::get(ctx, NVVM::LdStMatrixEltType::B16));
      SmallVector<Value> words;
      for (int64_t i = 0; i < num; ++i)
        words.push_back(num == 1 ? m
                                 : LLVM::ExtractValueOp::create(
                                       b, loc, m, ArrayRef<int64_t>{i})
                                       .getResult());
      return words;
    };
    Regs out(d.numRegs());
    auto unpack = [&](Value word, int64_t r) {
      Value v = vector::BitCastOp::create(
          b, loc, pairType,
          vector::FromElementsOp::create(b, loc, i32Vec, ValueRange{word}));
      out[r] = vector::ExtractOp::create(b, loc, v, int64_t(0));
      out[r + 1] = vector::ExtractOp::create(b, loc, v, int64_t(1));
    };
    for (int64_t o = 0; o < nOuter; ++o)
      for (int64_t kt = 0; kt < nK; ++kt) {
        if (opIdx == 0) {
          // Matrices: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7,
          // k 8-15), (rows 8-15, k 8-15) = the pairs a0a1 .. a6a7.
          int64_t r0 = 8 * (kt + nK * o);
          Basis c = d.regCoord(r0);
          Value row = arith::AddIOp::create(
              b, loc, arith::AddIOp::create(b, loc, wbase[0], index(c[0])),
              arith::MulIOp::create(b, loc, jLow, index(8)));
          Value col = arith::AddIOp::create(
              b, loc, arith::AddIOp::create(b, loc, wbase[1], index(c[1])),
              arith::MulIOp::create(b, loc, jHigh, index(8)));
          if (laneRow(0))
            row = arith::AddIOp::create(b, loc, row, l8);
          else
            col = arith::AddIOp::create(b, loc, col, l8);
          auto words = load(row, col, 4);
          for (int64_t i = 0; i < 4; ++i)
            unpack(words[i], r0 + 2 * i);
          continue;
        }
        // B, two N fragments at a time where there are two: matrices (k
        // 0-7, n), (k 8-15, n), (k 0-7, n'), (k 8-15, n').
        if (o % 2)
          continue;
        bool pair = o + 1 < nOuter;
        int64_t r0 = 4 * (kt + nK * o), r1 = 4 * (kt + nK * (o + 1));
        Basis c = d.regCoord(r0);
        int64_t delta = pair ? d.regCoord(r1)[1] - c[1] : 0;
        Value row = arith::AddIOp::create(
            b, loc, arith::AddIOp::create(b, loc, wbase[0], index(c[0])),
            arith::MulIOp::create(b, loc, jLow, index(8)));
        Value col = arith::AddIOp::create(
            b, loc, arith::AddIOp::create(b, loc, wbase[1], index(c[1])),
            arith::MulIOp::create(b, loc, jHigh, index(delta)));
        if (laneRow(0))
          row = arith::AddIOp::create(b, loc, row, l8);
        else
          col = arith::AddIOp::create(b, loc, col, l8);
        auto words = load(row, col, pair ? 4 : 2);
        unpack(words[0], r0);
        unpack(words[1], r0 + 2);
        if (pair) {
          unpack(words[2], r1);
          unpack(words[3], r1 + 2);
        }
      }
    return out;
  }

  /// A shared-memory buffer for moving one tile between layouts: its
  /// contiguous dim is the one that needs the fewest accesses on both sides
  /// (for a plain conversion; a thread moves up to 16 bytes per access
  /// along it) and its 16-byte chunks are XOR-swizzled by row against bank
  /// conflicts.
  struct SharedTransfer {
    Value buf;
    SmallVector<int64_t> shape;
    unsigned fast;
    int64_t rowLength, chunk, swizzle, bytes;
    Type storage;
  };

  SharedTransfer planShared(const Distribution &from, const Distribution &to,
                            Type elt, bool plain) {
    SharedTransfer t;
    t.shape = from.shape;
    unsigned rank = from.rank();
    int64_t count = 1;
    for (int64_t s : from.shape)
      count *= s;
    t.storage = storageType(elt);
    t.bytes = std::max<int64_t>(1, t.storage.getIntOrFloatBitWidth() / 8);
    t.chunk = std::max<int64_t>(1, 16 / t.bytes);
    t.fast = rank - 1;
    if (plain) {
      auto accesses = [&](unsigned d) {
        return 1.0 / double(std::min(runAlong(from, d), t.chunk)) +
               1.0 / double(std::min(runAlong(to, d), t.chunk));
      };
      for (unsigned d = 0; d < rank; ++d)
        if (accesses(d) < accesses(t.fast))
          t.fast = d;
    }
    t.rowLength = from.shape[t.fast];
    t.swizzle = t.rowLength % t.chunk == 0
                    ? std::min<int64_t>(t.rowLength / t.chunk, 8)
                    : 1;
    t.buf = sharedBuffer(t.storage, count);
    return t;
  }

  /// The element index of `coords` in the buffer.
  Value sharedAddress(Location loc, const SharedTransfer &t,
                      ArrayRef<Value> coords) {
    Value row = index(0);
    for (unsigned i = 0; i < t.shape.size(); ++i)
      if (i != t.fast)
        row = arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, row, index(t.shape[i])),
            coords[i]);
    Value col = coords[t.fast];
    if (t.swizzle > 1) {
      Value c = arith::DivUIOp::create(b, loc, col, index(t.chunk));
      Value x = arith::XOrIOp::create(
          b, loc, c, arith::RemUIOp::create(b, loc, row, index(t.swizzle)));
      col = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, x, index(t.chunk)),
          arith::RemUIOp::create(b, loc, col, index(t.chunk)));
    }
    return arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, row, index(t.rowLength)), col);
  }

  SmallVector<Value> coordsOf(Location loc, const Distribution &d,
                              ArrayRef<Value> bases, int64_t r) {
    SmallVector<Value> c;
    for (unsigned i = 0; i < d.rank(); ++i)
      c.push_back(coord(loc, d, bases, r, i));
    return c;
  }

  void writeShared(Location loc, const SharedTransfer &t, const Regs &vals,
                   const Distribution &from) {
    SmallVector<Value> bases = threadBases(loc, from);
    int64_t vw = std::min(runAlong(from, t.fast), t.chunk);
    for (int64_t r = 0, n = from.numRegs(); r < n; r += vw) {
      Value addr = sharedAddress(loc, t, coordsOf(loc, from, bases, r));
      if (vw == 1) {
        memref::StoreOp::create(b, loc, toStorage(loc, vals[r]), t.buf,
                                ValueRange{addr});
        continue;
      }
      SmallVector<Value> elems;
      for (int64_t e = 0; e < vw; ++e)
        elems.push_back(toStorage(loc, vals[r + e]));
      Value vec = vector::FromElementsOp::create(
          b, loc, VectorType::get({vw}, t.storage), elems);
      vector::StoreOp::create(b, loc, vec, t.buf, ValueRange{addr}, false,
                              llvm::Align(vw * t.bytes));
    }
  }

  /// The registers of a tile with distribution `to`, element `c` of which
  /// is element `srcCoords(c)` of the buffer's tile.
  Regs readShared(Location loc, const SharedTransfer &t, const Distribution &to,
                  Type elt,
                  function_ref<SmallVector<Value>(ArrayRef<Value>)> srcCoords,
                  RankedTensorType plainTo) {
    bool plain = bool(plainTo);
    auto address = [&](ArrayRef<Value> c) { return sharedAddress(loc, t, c); };
    // Tensor-core fragments of 16-bit values from a buffer with 16-byte
    // rows along the fragment's K (A) or N (B): ldmatrix.
    if (plain && t.bytes == 2 && t.shape.size() == 2 && t.chunk == 8 &&
        t.rowLength % 8 == 0)
      if (auto operand = dyn_cast<DotOperandAttr>(plainTo.getEncoding()))
        if (auto mma = dyn_cast<MmaAttr>(operand.getParent());
            mma && mma.getVersion() == 2)
          return ldmatrix(loc, t.buf, to, plainTo, operand.getOpIdx(), mma,
                          t.fast, address, elt);
    SmallVector<Value> bases = threadBases(loc, to);
    int64_t vr = plain ? std::min(runAlong(to, t.fast), t.chunk) : 1;
    Regs out;
    for (int64_t r = 0, n = to.numRegs(); r < n; r += vr) {
      Value addr = address(srcCoords(coordsOf(loc, to, bases, r)));
      if (vr == 1) {
        Value x = memref::LoadOp::create(b, loc, t.buf, ValueRange{addr});
        out.push_back(fromStorage(loc, x, elt));
        continue;
      }
      Value vec = vector::LoadOp::create(
          b, loc, VectorType::get({vr}, t.storage), t.buf, ValueRange{addr},
          false, llvm::Align(vr * t.bytes));
      for (int64_t e = 0; e < vr; ++e)
        out.push_back(
            fromStorage(loc, vector::ExtractOp::create(b, loc, vec, e), elt));
    }
    return out;
  }

  /// The registers of a tile with distribution `to`, element `c` of which
  /// is element `srcCoords(c)` of the tile `vals` with distribution `from`:
  /// every thread writes its elements to shared memory, then reads
  /// (`plainTo` is the result type of a plain layout conversion).
  Regs
  throughShared(Location loc, const Regs &vals, const Distribution &from,
                const Distribution &to, Type elt,
                function_ref<SmallVector<Value>(ArrayRef<Value>)> srcCoords,
                RankedTensorType plainTo = {}) {
    SharedTransfer t = planShared(from, to, elt, bool(plainTo));
    gpu::BarrierOp::create(b, loc);
    writeShared(loc, t, vals, from);
    gpu::BarrierOp::create(b, loc);
    return readShared(loc, t, to, elt, srcCoords, plainTo);
  }

  /// Lowers `ops`, consecutive layout conversions that move data between
  /// threads and do not feed each other, with two barriers in all: every
  /// tile is written, then every tile read.
  LogicalResult lowerConvertGroup(MutableArrayRef<ConvertLayoutOp> ops) {
    Location loc = ops.front().getLoc();
    SmallVector<SharedTransfer> transfers;
    SmallVector<Distribution> tos;
    for (ConvertLayoutOp op : ops) {
      auto from = dist(op, op.getSource().getType());
      auto to = dist(op, op.getType());
      if (failed(from) || failed(to))
        return failure();
      transfers.push_back(
          planShared(*from, *to, op.getType().getElementType(), true));
      tos.push_back(*to);
      if (transfers.size() == 1)
        gpu::BarrierOp::create(b, loc);
      writeShared(op.getLoc(), transfers.back(), tiles.lookup(op.getSource()),
                  *from);
    }
    gpu::BarrierOp::create(b, loc);
    for (auto [op, t, to] : llvm::zip(ops, transfers, tos))
      tiles[op.getResult()] = readShared(
          op.getLoc(), t, to, op.getType().getElementType(),
          [](ArrayRef<Value> c) { return SmallVector<Value>(c); },
          op.getType());
    return success();
  }

  /// Whether a conversion moves data between threads.
  bool movesData(ConvertLayoutOp op) {
    std::string error;
    auto from = distributionOf(op.getSource().getType(), &error);
    auto to = distributionOf(op.getType(), &error);
    return succeeded(from) && succeeded(to) &&
           failed(registerMap(*to, *from, [](const Basis &c) { return c; }));
  }

  LogicalResult lowerConvert(ConvertLayoutOp op) {
    auto from = dist(op, op.getSource().getType());
    auto to = dist(op, op.getType());
    if (failed(from) || failed(to))
      return failure();
    Regs vals = tiles.lookup(op.getSource());
    auto same = registerMap(*to, *from, [](const Basis &c) { return c; });
    if (succeeded(same)) {
      Regs out;
      for (int64_t r : *same)
        out.push_back(vals[r]);
      tiles[op.getResult()] = std::move(out);
      return success();
    }
    tiles[op.getResult()] = throughShared(
        op.getLoc(), vals, *from, *to, op.getType().getElementType(),
        [](ArrayRef<Value> c) { return SmallVector<Value>(c); }, op.getType());
    return success();
  }

  LogicalResult lowerTranspose(TransposeOp op) {
    auto from = dist(op, op.getSource().getType());
    auto to = dist(op, op.getType());
    if (failed(from) || failed(to))
      return failure();
    ArrayRef<int64_t> perm = op.getPermutation();
    Regs vals = tiles.lookup(op.getSource());
    auto same = registerMap(*to, *from, [&](const Basis &c) {
      Basis s(c.size());
      for (auto [i, p] : llvm::enumerate(perm))
        s[p] = c[i];
      return s;
    });
    if (succeeded(same)) {
      Regs out;
      for (int64_t r : *same)
        out.push_back(vals[r]);
      tiles[op.getResult()] = std::move(out);
      return success();
    }
    tiles[op.getResult()] =
        throughShared(op.getLoc(), vals, *from, *to,
                      op.getType().getElementType(), [&](ArrayRef<Value> c) {
                        SmallVector<Value> s(c.size());
                        for (auto [i, p] : llvm::enumerate(perm))
                          s[p] = c[i];
                        return s;
                      });
    return success();
  }

  LogicalResult lowerBroadcast(BroadcastOp op) {
    auto from = dist(op, op.getSource().getType());
    auto to = dist(op, op.getType());
    if (failed(from) || failed(to))
      return failure();
    ArrayRef<int64_t> dims = op.getDims();
    Regs vals = tiles.lookup(op.getSource());
    auto expanded = [&](unsigned i) {
      return from->shape[i] == 1 && to->shape[dims[i]] != 1;
    };
    auto same = registerMap(*to, *from, [&](const Basis &c) {
      Basis s;
      for (unsigned i = 0; i < from->rank(); ++i)
        s.push_back(expanded(i) ? 0 : c[dims[i]]);
      return s;
    });
    if (succeeded(same)) {
      Regs out;
      for (int64_t r : *same)
        out.push_back(vals[r]);
      tiles[op.getResult()] = std::move(out);
      return success();
    }
    tiles[op.getResult()] =
        throughShared(op.getLoc(), vals, *from, *to,
                      op.getType().getElementType(), [&](ArrayRef<Value> c) {
                        SmallVector<Value> s;
                        for (unsigned i = 0; i < from->rank(); ++i)
                          s.push_back(expanded(i) ? index(0) : c[dims[i]]);
                        return s;
                      });
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Reductions
  //===--------------------------------------------------------------------===//

  Value combine(Location loc, ReduceKind kind, Value x, Value y) {
    bool f = isa<FloatType>(x.getType());
    switch (kind) {
    case ReduceKind::sum:
      return f ? arith::AddFOp::create(b, loc, x, y).getResult()
               : arith::AddIOp::create(b, loc, x, y).getResult();
    case ReduceKind::prod:
      return f ? arith::MulFOp::create(b, loc, x, y).getResult()
               : arith::MulIOp::create(b, loc, x, y).getResult();
    case ReduceKind::max:
      return f ? arith::MaximumFOp::create(b, loc, x, y).getResult()
               : arith::MaxSIOp::create(b, loc, x, y).getResult();
    case ReduceKind::min:
      return f ? arith::MinimumFOp::create(b, loc, x, y).getResult()
               : arith::MinSIOp::create(b, loc, x, y).getResult();
    }
    llvm_unreachable("reduce kind");
  }

  Value identity(Location loc, ReduceKind kind, Type t) {
    if (auto ft = dyn_cast<FloatType>(t)) {
      double v = kind == ReduceKind::sum    ? 0.0
                 : kind == ReduceKind::prod ? 1.0
                 : kind == ReduceKind::max  ? -INFINITY
                                            : INFINITY;
      return arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, v));
    }
    unsigned w = t.getIntOrFloatBitWidth();
    APInt v = kind == ReduceKind::sum    ? APInt(w, 0)
              : kind == ReduceKind::prod ? APInt(w, 1)
              : kind == ReduceKind::max  ? APInt::getSignedMinValue(w)
                                         : APInt::getSignedMaxValue(w);
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, v));
  }

  /// `v` from the lane `lane ^ offset` (32- and 64-bit values).
  Value shuffleXor(Location loc, Value v, int64_t offset) {
    Type t = v.getType();
    unsigned bits = t.getIntOrFloatBitWidth();
    auto shuffle32 = [&](Value x) -> Value {
      return gpu::ShuffleOp::create(b, loc, x, int32_t(offset), 32,
                                    gpu::ShuffleMode::XOR)
          .getShuffleResult();
    };
    if (bits == 32)
      return shuffle32(v);
    Type i64 = b.getI64Type(), i32 = b.getI32Type();
    Value x = t.isInteger(64) ? v : arith::BitcastOp::create(b, loc, i64, v);
    Value lo = arith::TruncIOp::create(b, loc, i32, x);
    Value hi = arith::TruncIOp::create(
        b, loc, i32,
        arith::ShRUIOp::create(b, loc, x,
                               arith::ConstantIntOp::create(b, loc, i64, 32)));
    lo = arith::ExtUIOp::create(b, loc, i64, shuffle32(lo));
    hi = arith::ExtUIOp::create(b, loc, i64, shuffle32(hi));
    Value y = arith::OrIOp::create(
        b, loc, lo,
        arith::ShLIOp::create(b, loc, hi,
                              arith::ConstantIntOp::create(b, loc, i64, 32)));
    return t.isInteger(64) ? y : arith::BitcastOp::create(b, loc, t, y);
  }

  LogicalResult lowerReduce(ReduceOp op) {
    Location loc = op.getLoc();
    auto from = dist(op, op.getSource().getType());
    auto to = dist(op, op.getType());
    if (failed(from) || failed(to))
      return failure();
    unsigned dim = op.getDim();
    // Which register, lane and warp bits move along the reduced dim; each
    // must move along it alone.
    auto alongDim = [&](ArrayRef<Basis> bases, SmallVector<unsigned> &bits,
                        SmallVector<unsigned> &others) -> bool {
      for (auto [i, basis] : llvm::enumerate(bases)) {
        bool other = false;
        for (unsigned d = 0; d < basis.size(); ++d)
          other |= d != dim && basis[d] != 0;
        if (basis[dim] == 0)
          others.push_back(i);
        else if (other)
          return false;
        else
          bits.push_back(i);
      }
      return true;
    };
    SmallVector<unsigned> regBits, keptRegBits, laneBits, warpBits, unused;
    if (!alongDim(from->regBases, regBits, keptRegBits) ||
        !alongDim(from->laneBases, laneBits, unused) ||
        !alongDim(from->warpBases, warpBits, unused))
      return op.emitError("the operand's layout moves along the reduced dim "
                          "and another at once");
    // The operand's distribution less the reduced dim, and how the
    // result's registers map onto it.
    Distribution kept;
    kept.shape = to->shape;
    auto drop = [&](const Basis &b) {
      Basis r(b);
      r.erase(r.begin() + dim);
      return r;
    };
    for (unsigned i : keptRegBits)
      kept.regBases.push_back(drop(from->regBases[i]));
    for (const Basis &b : from->laneBases)
      kept.laneBases.push_back(drop(b));
    for (const Basis &b : from->warpBases)
      kept.warpBases.push_back(drop(b));
    auto resultMap = registerMap(*to, kept, [](const Basis &c) { return c; });
    if (failed(resultMap))
      return op.emitError("the result's layout is not the slice of the "
                          "operand's along the reduced dim");

    ReduceKind kind = op.getKind();
    Type elt = op.getType().getElementType();
    unsigned width = elt.getIntOrFloatBitWidth();
    // Narrow values are combined in 32 bits.
    Type work = elt;
    if (width < 32)
      work = isa<FloatType>(elt) ? Type(b.getF32Type()) : Type(b.getI32Type());
    auto widen = [&](Value x) -> Value {
      if (work == elt)
        return x;
      if (isa<FloatType>(elt))
        return arith::ExtFOp::create(b, loc, work, x);
      return arith::ExtSIOp::create(b, loc, work, x);
    };
    Regs vals = tiles.lookup(op.getSource());
    SmallVector<Value> bases = threadBases(loc, *from);
    Value ident = identity(loc, kind, work);
    // Within the thread: for each kept register, its registers along dim.
    Regs partial;
    for (int64_t k = 0, nk = kept.numRegs(); k < nk; ++k) {
      int64_t base = 0;
      for (auto [bit, i] : llvm::enumerate(keptRegBits))
        if (k >> bit & 1)
          base |= int64_t(1) << i;
      Value acc;
      for (int64_t c = 0, nc = int64_t(1) << regBits.size(); c < nc; ++c) {
        int64_t r = base;
        for (auto [bit, i] : llvm::enumerate(regBits))
          if (c >> bit & 1)
            r |= int64_t(1) << i;
        Value x = widen(vals[r]);
        if (from->wraps(dim)) {
          // Replicated elements count once.
          Value cd = coord(loc, *from, bases, r, dim, /*wrap=*/false);
          x = arith::SelectOp::create(
              b, loc, lessThan(loc, cd, index(from->shape[dim])), x, ident);
        }
        acc = acc ? combine(loc, kind, acc, x) : x;
      }
      partial.push_back(acc);
    }
    // Across the lanes of a warp: a butterfly leaves every lane the same
    // value (each step combines two values in either order, which IEEE
    // sums, products, maxima and minima give bit for bit).
    for (unsigned bit : laneBits)
      for (Value &p : partial)
        p = combine(loc, kind, p, shuffleXor(loc, p, int64_t(1) << bit));
    // Across warps: through shared memory, in warp order.
    if (!warpBits.empty()) {
      int64_t n = partial.size();
      Value buf = sharedBuffer(work, numWarps * 32 * n);
      Value tid = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, warp, index(32)), lane);
      auto slot = [&](Value thread, int64_t r) -> Value {
        return arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, thread, index(n)), index(r));
      };
      gpu::BarrierOp::create(b, loc);
      for (int64_t r = 0; r < n; ++r)
        memref::StoreOp::create(b, loc, partial[r], buf,
                                ValueRange{slot(tid, r)});
      gpu::BarrierOp::create(b, loc);
      int64_t mask = 0;
      for (unsigned bit : warpBits)
        mask |= int64_t(1) << bit;
      Value warp0 = arith::AndIOp::create(b, loc, warp, index(~mask));
      for (int64_t c = 0, nc = int64_t(1) << warpBits.size(); c < nc; ++c) {
        int64_t offset = 0;
        for (auto [k, bit] : llvm::enumerate(warpBits))
          if (c >> k & 1)
            offset |= int64_t(1) << bit;
        Value srcWarp = arith::OrIOp::create(b, loc, warp0, index(offset));
        Value srcTid = arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, srcWarp, index(32)), lane);
        for (int64_t r = 0; r < n; ++r) {
          Value x =
              memref::LoadOp::create(b, loc, buf, ValueRange{slot(srcTid, r)});
          partial[r] = c == 0 ? x : combine(loc, kind, partial[r], x);
        }
      }
    }
    if (work != elt)
      for (Value &p : partial)
        p = isa<FloatType>(elt)
                ? arith::TruncFOp::create(b, loc, elt, p).getResult()
                : arith::TruncIOp::create(b, loc, elt, p).getResult();
    Regs out;
    for (int64_t r : *resultMap)
      out.push_back(partial[r]);
    tiles[op.getResult()] = std::move(out);
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Indices, casts, masks
  //===--------------------------------------------------------------------===//

  LogicalResult lowerIota(IotaOp op) {
    Location loc = op.getLoc();
    auto d = dist(op, op.getType());
    if (failed(d))
      return failure();
    Type elt = op.getType().getElementType();
    SmallVector<Value> bases = threadBases(loc, *d);
    Regs out;
    for (int64_t r = 0, n = d->numRegs(); r < n; ++r)
      out.push_back(arith::IndexCastOp::create(
          b, loc, elt, coord(loc, *d, bases, r, op.getDim())));
    tiles[op.getResult()] = std::move(out);
    return success();
  }

  LogicalResult lowerCast(CastOp op) {
    Location loc = op.getLoc();
    if (op.getSaturate() || op.getStochasticRound())
      return op.emitError("the Tile IR GPU lowering does not handle "
                          "saturating or stochastically rounded casts yet");
    Type from = op.getSource().getType().getElementType();
    Type to = op.getType().getElementType();
    auto isFp8 = [](Type t) {
      return t.getIntOrFloatBitWidth() == 8 && isa<FloatType>(t);
    };
    if (isFp8(from) || isFp8(to))
      return op.emitError("fp8 casts are lowered with the tensor-core (mma) "
                          "kernels, not by the blocked-layout lowering");
    Regs out;
    for (Value x : tiles.lookup(op.getSource())) {
      Value y = x;
      if (from == to)
        y = x;
      else if (isa<FloatType>(from) && isa<FloatType>(to))
        y = from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
                ? arith::ExtFOp::create(b, loc, to, x).getResult()
                : arith::TruncFOp::create(b, loc, to, x).getResult();
      else if (isa<FloatType>(to))
        y = from.isInteger(1)
                ? arith::UIToFPOp::create(b, loc, to, x).getResult()
                : arith::SIToFPOp::create(b, loc, to, x).getResult();
      else if (isa<FloatType>(from))
        y = arith::FPToSIOp::create(b, loc, to, x);
      else if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
        y = from.isInteger(1)
                ? arith::ExtUIOp::create(b, loc, to, x).getResult()
                : arith::ExtSIOp::create(b, loc, to, x).getResult();
      else
        y = arith::TruncIOp::create(b, loc, to, x);
      out.push_back(y);
    }
    tiles[op.getResult()] = std::move(out);
    return success();
  }

  LogicalResult lowerMaskCausal(MaskCausalOp op) {
    Location loc = op.getLoc();
    auto d = dist(op, op.getType());
    if (failed(d))
      return failure();
    SmallVector<Value> bases = threadBases(loc, *d);
    Type elt = op.getType().getElementType();
    Value ninf =
        arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, -INFINITY));
    Value row0 = map.lookup(op.getRowOffset());
    Value col0 = map.lookup(op.getColOffset());
    Regs vals = tiles.lookup(op.getScores()), out;
    for (int64_t r = 0, n = d->numRegs(); r < n; ++r) {
      Value row =
          arith::AddIOp::create(b, loc, row0, coord(loc, *d, bases, r, 0));
      Value col =
          arith::AddIOp::create(b, loc, col0, coord(loc, *d, bases, r, 1));
      Value future =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, col, row);
      out.push_back(arith::SelectOp::create(b, loc, future, ninf, vals[r]));
    }
    tiles[op.getResult()] = std::move(out);
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Dot on blocked layouts (FMA)
  //===--------------------------------------------------------------------===//

  LogicalResult lowerDot(DotOp op) {
    auto accType = cast<RankedTensorType>(op.getAcc().getType());
    if (auto mma = dyn_cast<MmaAttr>(accType.getEncoding()))
      return lowerMmaSync(op, mma);
    if (!isa<BlockedAttr>(accType.getEncoding()))
      return op.emitError("a dot's accumulator must have a blocked or "
                          "#ttile.mma layout");
    Location loc = op.getLoc();
    auto acc = dist(op, accType);
    auto da = dist(op, op.getA().getType());
    auto db = dist(op, op.getB().getType());
    if (failed(acc) || failed(da) || failed(db))
      return failure();
    // A's rows sit on the threads of the accumulator's rows, B's columns
    // on those of its columns.
    auto only = [](const Basis &c, unsigned d) {
      Basis r(2, 0);
      r[d] = c[d];
      return r;
    };
    auto threadsMatch = [&](ArrayRef<Basis> x, ArrayRef<Basis> ya,
                            ArrayRef<Basis> yb) {
      if (x.size() != ya.size() || x.size() != yb.size())
        return false;
      for (auto [c, ca, cb] : llvm::zip(x, ya, yb))
        if (only(c, 0) != ca || only(c, 1) != cb)
          return false;
      return true;
    };
    if (!threadsMatch(acc->laneBases, da->laneBases, db->laneBases) ||
        !threadsMatch(acc->warpBases, da->warpBases, db->warpBases))
      return op.emitError("the operands' layouts are not the accumulator's "
                          "dot operands");
    int64_t m = accType.getShape()[0], n = accType.getShape()[1];
    int64_t k = da->shape[1];
    std::map<std::pair<int64_t, int64_t>, int64_t> aReg, bReg;
    for (int64_t r = da->numRegs() - 1; r >= 0; --r) {
      Basis c = da->regCoord(r);
      aReg[{c[0] & (m - 1), c[1] & (k - 1)}] = r;
    }
    for (int64_t r = db->numRegs() - 1; r >= 0; --r) {
      Basis c = db->regCoord(r);
      bReg[{c[0] & (k - 1), c[1] & (n - 1)}] = r;
    }
    Type accElt = accType.getElementType();
    bool isFloat = isa<FloatType>(accElt);
    auto toAcc = [&](Value x) -> Value {
      if (x.getType() == accElt)
        return x;
      if (isFloat)
        return arith::ExtFOp::create(b, loc, accElt, x);
      return arith::ExtSIOp::create(b, loc, accElt, x);
    };
    // Operand registers in the accumulator's type, converted once.
    Regs wa, wb;
    for (Value x : tiles.lookup(op.getA()))
      wa.push_back(toAcc(x));
    for (Value x : tiles.lookup(op.getB()))
      wb.push_back(toAcc(x));
    Regs out = tiles.lookup(op.getAcc());
    for (int64_t r = 0, nr = acc->numRegs(); r < nr; ++r) {
      Basis c = acc->regCoord(r);
      int64_t row = c[0] & (m - 1), col = c[1] & (n - 1);
      Value sum = out[r];
      for (int64_t kk = 0; kk < k; ++kk) {
        auto ia = aReg.find({row, kk});
        auto ib = bReg.find({kk, col});
        if (ia == aReg.end() || ib == bReg.end())
          return op.emitError("the operands' layouts are not the "
                              "accumulator's dot operands");
        Value x = wa[ia->second], y = wb[ib->second];
        sum = isFloat ? math::FmaOp::create(b, loc, x, y, sum).getResult()
                      : arith::AddIOp::create(
                            b, loc, sum, arith::MulIOp::create(b, loc, x, y))
                            .getResult();
      }
      out[r] = sum;
    }
    tiles[op.getResult()] = std::move(out);
    return success();
  }

  /// mma.sync m16n8k16 (bf16 or f16 into f32, nvvm.mma.sync: the nvgpu
  /// dialect's op takes f16 only): each warp multiplies its
  /// 16 x 8 fragments, K in steps of 16. The register numbering is the
  /// one Distribution.cpp gives the fragments.
  LogicalResult lowerMmaSync(DotOp op, MmaAttr mma) {
    Location loc = op.getLoc();
    auto accType = cast<RankedTensorType>(op.getAcc().getType());
    auto aType = cast<RankedTensorType>(op.getA().getType());
    auto bType = cast<RankedTensorType>(op.getB().getType());
    Type in = aType.getElementType();
    if (mma.getVersion() != 2 || !accType.getElementType().isF32() ||
        !(in.isBF16() || in.isF16()) || bType.getElementType() != in)
      return op.emitError("the tensor-core lowering takes mma.sync (version "
                          "2) dots of bf16 or f16 into f32");
    auto acc = dist(op, accType);
    auto da = dist(op, aType);
    auto db = dist(op, bType);
    if (failed(acc) || failed(da) || failed(db))
      return failure();
    int64_t wm = mma.getWarpsPerCTA()[0], wn = mma.getWarpsPerCTA()[1];
    int64_t nM = accType.getShape()[0] / (16 * wm);
    int64_t nN = accType.getShape()[1] / (8 * wn);
    int64_t nK = aType.getShape()[1] / 16;
    Regs a = tiles.lookup(op.getA()), bv = tiles.lookup(op.getB());
    Regs out = tiles.lookup(op.getAcc());
    // Two 16-bit values in one 32-bit register, the first in the low half.
    auto pairVec = VectorType::get({2}, in);
    auto i32Vec = VectorType::get({1}, b.getI32Type());
    auto pack = [&](Value lo, Value hi) -> Value {
      Value v =
          vector::FromElementsOp::create(b, loc, pairVec, ValueRange{lo, hi});
      return vector::ExtractOp::create(
          b, loc, vector::BitCastOp::create(b, loc, i32Vec, v), int64_t(0));
    };
    Type f32 = b.getF32Type();
    auto resultType =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
    NVVM::MMATypes ptxType =
        in.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    for (int64_t mt = 0; mt < nM; ++mt)
      for (int64_t nt = 0; nt < nN; ++nt) {
        int64_t c0 = 4 * (nt + nN * mt);
        SmallVector<Value> c(ArrayRef<Value>(out).slice(c0, 4));
        for (int64_t kt = 0; kt < nK; ++kt) {
          int64_t a0 = 8 * (kt + nK * mt), b0 = 4 * (kt + nK * nt);
          SmallVector<Value> av, bvv;
          for (int64_t i = 0; i < 4; ++i)
            av.push_back(pack(a[a0 + 2 * i], a[a0 + 2 * i + 1]));
          for (int64_t i = 0; i < 2; ++i)
            bvv.push_back(pack(bv[b0 + 2 * i], bv[b0 + 2 * i + 1]));
          Value d = NVVM::MmaOp::create(
              b, loc, resultType, av, bvv, c, ArrayRef<int64_t>{16, 8, 16},
              std::nullopt, std::nullopt,
              std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
              std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                             NVVM::MMALayout::col});
          for (int64_t i = 0; i < 4; ++i)
            c[i] =
                LLVM::ExtractValueOp::create(b, loc, d, ArrayRef<int64_t>{i});
        }
        for (int64_t i = 0; i < 4; ++i)
          out[c0 + i] = c[i];
      }
    tiles[op.getResult()] = std::move(out);
    return success();
  }
};

/// Static shared memory a block may use (more needs dynamic shared memory
/// and an opt-in at launch).
constexpr int64_t kStaticSharedLimit = 48 * 1024;

struct ConvertTTileToGPUPass
    : tessera::impl::ConvertTTileToGPUBase<ConvertTTileToGPUPass> {
  using ConvertTTileToGPUBase::ConvertTTileToGPUBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("ttile.kernel") && !fn.isExternal())
        kernels.push_back(fn);
    if (kernels.empty())
      return;
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    gpu::GPUModuleOp gpuModule;
    for (auto m : module.getOps<gpu::GPUModuleOp>())
      if (m.getName() == moduleName)
        gpuModule = m;
    if (!gpuModule)
      gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), moduleName);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    for (func::FuncOp fn : kernels) {
      b.setInsertionPointToEnd(gpuModule.getBody());
      auto kernel = gpu::GPUFuncOp::create(b, fn.getLoc(), fn.getName(),
                                           fn.getFunctionType());
      kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                      b.getUnitAttr());
      int32_t threads = int32_t(32 * kernelNumWarps(fn));
      kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({threads, 1, 1}));
      if (failed(KernelLowering(fn, kernel).run()))
        return signalPassFailure();
      // Workgroup buffers are static shared memory, at most 48 KiB a block.
      int64_t sharedBytes = 0;
      for (BlockArgument buf : kernel.getWorkgroupAttributions()) {
        auto type = cast<MemRefType>(buf.getType());
        sharedBytes +=
            type.getNumElements() *
            std::max<int64_t>(1, type.getElementType().getIntOrFloatBitWidth() /
                                     8);
      }
      if (sharedBytes > kStaticSharedLimit) {
        fn.emitError() << "kernel '" << fn.getName() << "' needs "
                       << sharedBytes
                       << " bytes of shared memory for its layout "
                          "conversions and reductions; static shared memory "
                          "holds "
                       << kStaticSharedLimit
                       << " (use smaller tiles or fewer conversions)";
        return signalPassFailure();
      }
      fn.erase();
    }
  }
};

} // namespace
