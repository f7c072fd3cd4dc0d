//===- DLPackNames.h - Names of DLPack element types ------------*- C++ -*-===//
//
// DLPack element types: shared by tessera._core and tessera._cuda (which
// links no compiler).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PYTHON_DLPACKNAMES_H
#define TESSERA_PYTHON_DLPACKNAMES_H

#include "tessera/Runtime/DType.h"

#include <nanobind/ndarray.h>

#include <string>

namespace tessera::python {

/// "float32", "bfloat16", "uint8", "float32x4"... of a DLPack dtype.
inline std::string dlpackName(const nanobind::dlpack::dtype &t) {
  static const char *codes[] = {"int",    "uint",    "float", "opaque",
                                "bfloat", "complex", "bool"};
  std::string code =
      t.code < 7 ? codes[t.code] : "code" + std::to_string(t.code);
  return code + std::to_string(t.bits) +
         (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "");
}

/// The DLPack element type a DType is exchanged as: 8-bit floats and i4 as
/// uint8 bit patterns; bf16 as DLPack's bfloat16, or as uint16 bit
/// patterns for NumPy (`bf16AsBits`), which has no bfloat16.
inline nanobind::dlpack::dtype dlpackDType(runtime::DType t, bool bf16AsBits) {
  namespace nb = nanobind;
  using Code = nb::dlpack::dtype_code;
  using runtime::DType;
  switch (t) {
  case DType::f64:
    return nb::dtype<double>();
  case DType::f32:
    return nb::dtype<float>();
  case DType::f16:
    return {uint8_t(Code::Float), 16, 1};
  case DType::bf16:
    return bf16AsBits ? nb::dtype<uint16_t>()
                      : nb::dlpack::dtype{uint8_t(Code::Bfloat), 16, 1};
  case DType::f8E4M3FN:
  case DType::f8E5M2:
  case DType::i4:
    return nb::dtype<uint8_t>();
  case DType::i64:
    return nb::dtype<int64_t>();
  case DType::i32:
    return nb::dtype<int32_t>();
  case DType::i16:
    return nb::dtype<int16_t>();
  case DType::i8:
    return nb::dtype<int8_t>();
  case DType::i1:
    return nb::dtype<bool>();
  }
  return nb::dtype<float>();
}

} // namespace tessera::python

#endif // TESSERA_PYTHON_DLPACKNAMES_H
