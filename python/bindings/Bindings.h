//===- Bindings.h - The tessera._core extension module ----------*- C++ -*-===//
//
// nanobind bindings over the C++ API, one file per area. Python exceptions
// never cross the C++ API (built without exceptions): the API reports
// errors as values, and these files turn them into Python exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_PYTHON_BINDINGS_H
#define TESSERA_PYTHON_BINDINGS_H

#include "tessera/Tessera.h"

#include <nanobind/nanobind.h>

namespace tessera::python {

namespace nb = nanobind;

void bindRuntime(nb::module_ &m);
void bindGraph(nb::module_ &m);
void bindOps(nb::module_ &m);
void bindTile(nb::module_ &m);

/// Raises tessera.TesseraError with `error`'s message.
[[noreturn]] void raise(const Error &error);

/// The value of `result`, or raises its error.
template <typename T> T take(Result<T> result) {
  if (!result)
    raise(result.error());
  return std::move(*result);
}

/// DType names as Python sees them ("f32", "bf16").
DType parseDType(const std::string &name);

} // namespace tessera::python

#endif // TESSERA_PYTHON_BINDINGS_H
