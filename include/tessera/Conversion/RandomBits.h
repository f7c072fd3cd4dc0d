//===- RandomBits.h - Philox blocks and stochastic rounding -----*- C++ -*-===//
//
// Builders shared by the CPU lowering of the Graph IR (random ops and
// stochastically rounded casts) and the GPU lowering of the Tile IR
// (stochastically rounded tile casts).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_CONVERSION_RANDOMBITS_H
#define TESSERA_CONVERSION_RANDOMBITS_H

#include "mlir/IR/Builders.h"

#include <array>

namespace mlir::tessera {

/// Four i32 words: a Philox counter or block.
using PhiloxWords = std::array<Value, 4>;

/// An i32 constant.
Value i32Constant(OpBuilder &b, Location loc, uint32_t v);

/// Philox 4x32-10 of `counter` under the key (k0, k1), all i32 values.
PhiloxWords philox(OpBuilder &b, Location loc, Value k0, Value k1,
                   PhiloxWords counter);

/// A fraction in [0, 1) of `type` from Philox words: for f64 the 53 bits
/// ((hiWord << 21) | (loWord >> 11)) * 2^-53, for f32 the 24 bits
/// (hiWord >> 8) * 2^-24 (loWord unused).
Value uniformFraction(OpBuilder &b, Location loc, FloatType type, Value hiWord,
                      Value loWord);

/// `x` (a float of type `work`) rounded to `t` by a draw `u` in [0, 1)
/// (also of type `work`): to its neighbour away from zero, hi, when
/// u < (|x| - |lo|) / (|hi| - |lo|), else to its neighbour toward zero, lo,
/// so that E[result] = x. `work` must hold x and every value of `t`
/// exactly (f32 for sources up to f32 and targets narrower than f32, f64
/// otherwise); the ratio is then exact too, since the gap is a power of
/// two. Finite x past t's largest finite value rounds between that value
/// and the encoding after it (infinity, or NaN for formats without one),
/// as a plain cast would overflow; with `saturate` it stays finite. NaN
/// stays NaN.
Value roundStochastically(OpBuilder &b, Location loc, Value x, FloatType t,
                          Value u, bool saturate);

} // namespace mlir::tessera

#endif // TESSERA_CONVERSION_RANDOMBITS_H
