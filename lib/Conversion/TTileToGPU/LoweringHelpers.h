//===- LoweringHelpers.h - Builders the kernel lowering shares -*- C++ -*-===//
//
// Free functions and constants that the thread-level lowering
// (KernelLowering.h and its files) and the producer's planning share:
// constants, pointers, inline PTX, TMA map addresses and coordinates, loop
// bounds, named barriers and shared-tile sizes. The functions are defined
// in LowerProducer.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_CONVERSION_TTILETOGPU_LOWERINGHELPERS_H
#define TESSERA_CONVERSION_TTILETOGPU_LOWERINGHELPERS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/MathExtras.h"

#include <array>

namespace mlir::tessera::ttile::detail {

using Regs = SmallVector<Value>;

inline bool isTile(Type t) { return isa<RankedTensorType>(t); }

/// An i32 constant.
Value i32Constant(OpBuilder &b, Location loc, int64_t v);

/// Runs `body` under `cond` (an scf.if without results).
void under(OpBuilder &b, Location loc, Value cond, function_ref<void()> body);

/// Inline PTX with side effects; its results, if any. Only for what the
/// NVVM dialect has no op for (wgmma with A in registers, and a wgmma wait
/// that the accumulators pass through).
Operation *ptx(OpBuilder &b, Location loc, TypeRange results,
               ValueRange operands, StringRef text, StringRef constraints);

/// The shared-memory (address space 3) pointer of the address `addr`.
Value sharedPointer(OpBuilder &b, Location loc, Value addr);

/// The generic pointer of the i64 device address `addr`.
Value genericPointer(OpBuilder &b, Location loc, Value addr);

/// An index as i32.
Value i32Of(OpBuilder &b, Location loc, Value v);

/// The device address of tensor map `i` in the table at `table`.
Value mapAddress(OpBuilder &b, Location loc, Value table, unsigned i);

/// A TMA box's coordinates as i32 operands, innermost first: the column,
/// the row, then the leading dims' indices (given outermost first).
SmallVector<Value> tmaCoordinates(OpBuilder &b, Location loc, Value col,
                                  Value row, ArrayRef<Value> leading);

/// Whether map `i` of the `count` in the table could be made (the i32
/// flags after the maps).
Value mapUsable(OpBuilder &b, Location loc, Value table, unsigned i,
                unsigned count);

/// The induction variable of a ttile.range or scf.for.
Value inductionVar(Operation *loop);
/// Lower bound, upper bound and step of a ttile.range or scf.for.
std::array<Value, 3> loopBounds(Operation *loop);

/// Named barriers: 0 is every thread's, 1 the consumer warpgroups' of a
/// kernel with a producer (1 + p those of program p, with several
/// programs a block), then the ping-pong turns; warpgroup g of the block
/// alone meets at kFirstGroupBarrier + g.
constexpr int32_t kFirstGroupBarrier = 8;

/// Bytes of one shared tile, a multiple of 1024 (every buffer starts on a
/// swizzle pattern's period).
inline int64_t sharedTileBytes(RankedTensorType t) {
  int64_t bytes = t.getNumElements() * t.getElementTypeBitWidth() / 8;
  return llvm::alignTo(bytes, 1024);
}

} // namespace mlir::tessera::ttile::detail

#endif // TESSERA_CONVERSION_TTILETOGPU_LOWERINGHELPERS_H
