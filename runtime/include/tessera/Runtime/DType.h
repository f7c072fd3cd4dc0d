//===- DType.h - Element types the runtime exchanges ------------*- C++ -*-===//
//
// Part of the Tessera runtime: no MLIR or LLVM types in this header.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_DTYPE_H
#define TESSERA_RUNTIME_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

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
/// The DType named `text` (as name() spells it).
std::optional<DType> parseDType(std::string_view text);
/// The element as a double (for summaries and tests).
double toDouble(DType type, const void *element);

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_DTYPE_H
