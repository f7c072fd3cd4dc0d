//===- DType.h - Element types the runtime exchanges ------------*- C++ -*-===//
//
// Part of the Tessera runtime: no MLIR or LLVM types in this header.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_DTYPE_H
#define TESSERA_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace tessera::runtime {

/// The element types of buffers passed to and returned by compiled code.
/// 16- and 8-bit floats are stored as their IEEE-style bit patterns; i1 is
/// one byte per element (0 or 1).
enum class DType {
  f64,
  f32,
  f16,
  bf16,
  f8E4M3FN,
  f8E5M2,
  i64,
  i32,
  i16,
  i8,
  i1,
  /// One byte per element, the value in the low 4 bits (two's complement;
  /// the high bits are ignored on input and zero on output), as
  /// ml_dtypes.int4 stores it.
  i4,
};

/// The name used in the IR and in messages ("f32", "bf16", "f8E4M3FN").
const char *name(DType type);
/// Bytes per element.
std::size_t byteSize(DType type);
bool isFloat(DType type);

/// The kind of a weakly typed scalar operand: a Python or C++ bool, integer
/// or floating-point number (a NumPy scalar counts as a Python number).
enum class ScalarKind { Bool, Int, Float };

/// The dtype of an elementwise op between a tensor of dtype `tensor` and a
/// weak scalar of `kind` (NumPy 2 and JAX): the scalar takes the tensor's
/// dtype when its kind fits (a bool anywhere, an int in an integer or float
/// tensor, a float in a float tensor); a float with an integer or boolean
/// tensor gives f32, and an int with a boolean tensor gives i64.
DType weakResultType(DType tensor, ScalarKind kind);
/// The range of an integer dtype ({0, 1} for i1); nullopt for floats.
std::optional<std::pair<int64_t, int64_t>> integerRange(DType type);
/// The DType named `text` (as name() spells it).
std::optional<DType> parseDType(std::string_view text);
/// The element as a double (for summaries and tests).
double toDouble(DType type, const void *element);

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_DTYPE_H
