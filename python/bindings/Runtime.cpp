//===- Runtime.cpp - Compiled functions called with NumPy arrays ----------===//
//
// The hot path of every jit call: arrays in, arrays out, no copies. Inputs
// are read in place (compiled code never writes into its arguments);
// results are returned as NumPy arrays that own the runtime's buffers.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "DLPackNames.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace tessera::python {

namespace rt = tessera::runtime;
using Array = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

/// The DType an array's elements are stored as, given the one expected:
/// 16- and 8-bit floats NumPy lacks arrive as uint16/uint8 bit patterns.
static std::optional<DType> storedAs(const nb::dlpack::dtype &t,
                                     DType expected) {
  using Code = nb::dlpack::dtype_code;
  auto code = Code(t.code);
  if (t.lanes != 1)
    return std::nullopt;
  if (code == Code::Float) {
    if (t.bits == 64)
      return DType::f64;
    if (t.bits == 32)
      return DType::f32;
    if (t.bits == 16)
      return DType::f16;
  }
  if (code == Code::Bfloat && t.bits == 16)
    return DType::bf16;
  if (code == Code::Int) {
    switch (t.bits) {
    case 64:
      return DType::i64;
    case 32:
      return DType::i32;
    case 16:
      return DType::i16;
    case 8:
      return DType::i8;
    }
  }
  if (code == Code::Bool)
    return DType::i1;
  if (code == Code::UInt && t.bits == 16 && expected == DType::bf16)
    return DType::bf16;
  if (code == Code::UInt && t.bits == 8 &&
      (expected == DType::f8E4M3FN || expected == DType::f8E5M2 ||
       expected == DType::i4))
    return expected;
  return std::nullopt;
}

/// A result buffer as a NumPy array that keeps the buffer alive.
static nb::object toNumpy(rt::HostBuffer buffer) {
  auto *owned = new rt::HostBuffer(std::move(buffer));
  nb::capsule owner(
      owned, [](void *p) noexcept { delete static_cast<rt::HostBuffer *>(p); });
  std::vector<size_t> shape(owned->shape().begin(), owned->shape().end());
  return nb::cast(nb::ndarray<nb::numpy>(
      owned->data(), shape.size(), shape.data(), owner, nullptr,
      dlpackDType(owned->dtype(), /*bf16AsBits=*/true)));
}

/// Calls `fn` with `args` (C-contiguous CPU arrays).
static nb::list call(const rt::Function &fn, const std::vector<Array> &args) {
  const auto &signature = fn.signature();
  if (args.size() != signature.arguments.size())
    raise(Error{"@" + signature.name + " takes " +
                std::to_string(signature.arguments.size()) +
                " arguments, got " + std::to_string(args.size())});
  std::vector<rt::HostBuffer> buffers;
  buffers.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const Array &a = args[i];
    DType expected = signature.arguments[i].dtype;
    auto stored = storedAs(a.dtype(), expected);
    if (!stored)
      raise(Error{"argument " + std::to_string(i) + " of @" + signature.name +
                  " must be " + signature.arguments[i].describe() +
                  ", got an array of " + dlpackName(a.dtype())});
    std::vector<int64_t> shape(a.shape_ptr(), a.shape_ptr() + a.ndim());
    buffers.push_back(take(rt::HostBuffer::wrap(*stored, std::move(shape),
                                                const_cast<void *>(a.data()))));
  }
  Result<std::vector<rt::HostBuffer>> results = [&] {
    nb::gil_scoped_release release;
    return fn.call(buffers);
  }();
  std::vector<rt::HostBuffer> out = take(std::move(results));
  nb::list list;
  for (rt::HostBuffer &r : out)
    list.append(toNumpy(std::move(r)));
  return list;
}

void bindRuntime(nb::module_ &m) {
  nb::class_<rt::Function>(m, "CompiledFunction",
                           "A compiled function, called with NumPy arrays.")
      .def("__call__", &call, nb::arg("args"),
           "Runs the function on C-contiguous arrays (bf16 and fp8 as "
           "uint16/uint8 bit patterns); returns the results as arrays.")
      .def_prop_ro("name",
                   [](const rt::Function &f) { return f.signature().name; })
      .def_prop_ro(
          "signature",
          [](const rt::Function &f) { return f.signature().describe(); })
      .def_prop_ro("result_is_key",
                   [](const rt::Function &f) {
                     std::vector<bool> keys;
                     for (const auto &r : f.signature().results)
                       keys.push_back(r.isKey);
                     return keys;
                   })
      .def_prop_ro("result_dtypes", [](const rt::Function &f) {
        std::vector<std::string> names;
        for (const auto &r : f.signature().results)
          names.push_back(rt::name(r.dtype));
        return names;
      });

  nb::class_<rt::Executable>(m, "Executable",
                             "Compiled functions loaded into the process.")
      .def("function",
           [](const rt::Executable &e, const std::string &name) {
             return take(e.function(name));
           })
      .def_prop_ro("functions",
                   [](const rt::Executable &e) {
                     std::vector<std::string> out;
                     for (const auto &f : e.functions())
                       out.push_back(f.describe());
                     return out;
                   })
      .def_prop_ro("path", &rt::Executable::path);

  m.def(
      "set_num_threads",
      [](int n) {
        if (Status s = rt::Device::host().setThreadCount(n); !s)
          raise(s.error());
      },
      nb::arg("n"), "Threads of the parallel loops of compiled code.");
  m.def("num_threads", [] { return rt::Device::host().threadCount(); });
  m.def("device", [] { return rt::Device::host().describe(); });
}

} // namespace tessera::python
