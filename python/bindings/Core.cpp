//===- Core.cpp - tessera._core -------------------------------------------===//

#include "Bindings.h"

#include <nanobind/stl/string.h>

namespace tessera::python {

static nb::object errorType;

void raise(const Error &error) {
  PyErr_SetString(errorType.ptr(), error.message.c_str());
  throw nb::python_error();
}

DType parseDType(const std::string &name) {
  auto t = runtime::parseDType(name);
  if (!t)
    raise(Error{"unknown dtype '" + name +
                "' (expected f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, "
                "i32, i16, i8, i4 or i1)"});
  return *t;
}

} // namespace tessera::python

using namespace tessera::python;

NB_MODULE(_core, m) {
  m.doc() = "Tessera's C++ API: Graph IR tracing, transforms, compilation "
            "and the runtime.";
  errorType = nb::module_::import_("tessera._errors").attr("TesseraError");
  m.attr("TesseraError") = errorType;
  bindRuntime(m);
  bindGraph(m);
  bindTile(m);
  m.def(
      "weak_result_type",
      [](const std::string &dtype, const std::string &kind) {
        using tessera::ScalarKind;
        namespace runtime = tessera::runtime;
        ScalarKind k = kind == "bool"  ? ScalarKind::Bool
                       : kind == "int" ? ScalarKind::Int
                                       : ScalarKind::Float;
        return std::string(runtime::name(
            runtime::weakResultType(parseDType(dtype), k)));
      },
      nb::arg("dtype"), nb::arg("kind"),
      "The dtype of an op between a tensor of `dtype` and a Python number of "
      "`kind` (bool, int or float).");
  nb::module_ op = m.def_submodule("op", "One function per Graph IR op.");
  bindOps(op);
}
