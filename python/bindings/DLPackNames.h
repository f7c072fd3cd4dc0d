//===- DLPackNames.h - Names of DLPack element types ------------*- C++ -*-===//
//
// Shared by tessera._core and tessera._cuda (which links no compiler).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PYTHON_DLPACKNAMES_H
#define TESSERA_PYTHON_DLPACKNAMES_H

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

} // namespace tessera::python

#endif // TESSERA_PYTHON_DLPACKNAMES_H
