//===- Npy.cpp - .npy files for host buffers ------------------------------===//
//
// Reading and writing go through xtensor's .npy support, which reports
// malformed files with exceptions (this file is built with them).
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Buffer.h"

#include <xtensor/xadapt.hpp>
#include <xtensor/xnpy.hpp>

#include <cstring>
#include <fstream>

using namespace tessera::runtime;

/// The .npy type string a dtype is stored as (little endian). 16- and 8-bit
/// floats travel as uint16/uint8 bit patterns: NumPy has no bfloat16 or
/// fp8 (ml_dtypes views the patterns as those types).
static const char *npyType(DType type) {
  switch (type) {
  case DType::f64:
    return "<f8";
  case DType::f32:
    return "<f4";
  case DType::f16:
  case DType::bf16:
    return "<u2";
  case DType::f8E4M3FN:
  case DType::f8E5M2:
    return "|u1";
  case DType::i64:
    return "<i8";
  case DType::i32:
    return "<i4";
  case DType::i16:
    return "<i2";
  case DType::i8:
    return "|i1";
  case DType::i4: // bytes with the value in the low nibble
    return "|u1";
  case DType::i1:
    return "|b1";
  }
  return "";
}

Result<HostBuffer> HostBuffer::loadNpy(const std::string &path,
                                       std::optional<DType> type) {
  std::ifstream stream(path, std::ifstream::binary);
  if (!stream)
    return Error{"cannot open " + path};
  std::optional<xt::detail::npy_file> loaded;
  try {
    loaded.emplace(xt::detail::load_npy_file(stream));
  } catch (const std::exception &e) {
    std::string why = e.what();
    if (why.find("typestring") != std::string::npos)
      why += " (expected a NumPy number dtype; bfloat16 and 8-bit floats "
             "are read as their bit patterns: save a.view(np.uint16) or "
             "a.view(np.uint8))";
    return Error{path + " is not a valid .npy file: " + why};
  }
  xt::detail::npy_file &file = *loaded;
  if (!stream)
    return Error{path + " is shorter than its header says (truncated?)"};
  if (file.m_fortran_order)
    return Error{path + " is in Fortran order; save it in C order"};
  // NumPy's own float16 holds f16 (the same bits as the uint16 patterns).
  std::string found = file.m_typestring;
  if (found == "<f2" && (!type || type == DType::f16)) {
    type = DType::f16;
    found = "<u2";
  }
  if (!type) {
    for (DType t : {DType::f64, DType::f32, DType::i64, DType::i32, DType::i16,
                    DType::i8, DType::i1})
      if (found == npyType(t))
        type = t;
    if (!type)
      return Error{path + " has dtype " + file.m_typestring +
                   ", which is not a Tessera dtype (uint16/uint8 bit "
                   "patterns need the float format they hold)"};
  }
  if (found != npyType(*type))
    return Error{path + " has dtype " + file.m_typestring + " but " +
                 name(*type) + " (stored as " + npyType(*type) +
                 ") was expected"};
  std::vector<int64_t> shape(file.m_shape.begin(), file.m_shape.end());
  auto buffer = allocate(*type, shape);
  if (!buffer)
    return buffer;
  if (file.n_bytes() != buffer->byteSize())
    return Error{path + " holds " + std::to_string(file.n_bytes()) +
                 " bytes of data but its shape needs " +
                 std::to_string(buffer->byteSize())};
  if (buffer->byteSize())
    std::memcpy(buffer->data(), file.ptr(), buffer->byteSize());
  return buffer;
}

template <typename T>
static void dump(const std::string &path, const void *data,
                 const std::vector<int64_t> &shape) {
  std::vector<size_t> s(shape.begin(), shape.end());
  size_t n = 1;
  for (size_t d : s)
    n *= d;
  auto view = xt::adapt(static_cast<const T *>(data), n, xt::no_ownership(), s);
  xt::dump_npy(path, view);
}

Status HostBuffer::saveNpy(const std::string &path) const {
  try {
    switch (type) {
    case DType::f64:
      dump<double>(path, pointer, dims);
      break;
    case DType::f32:
      dump<float>(path, pointer, dims);
      break;
    case DType::f16:
    case DType::bf16:
      dump<uint16_t>(path, pointer, dims);
      break;
    case DType::f8E4M3FN:
    case DType::f8E5M2:
      dump<uint8_t>(path, pointer, dims);
      break;
    case DType::i64:
      dump<int64_t>(path, pointer, dims);
      break;
    case DType::i32:
      dump<int32_t>(path, pointer, dims);
      break;
    case DType::i16:
      dump<int16_t>(path, pointer, dims);
      break;
    case DType::i8:
      dump<int8_t>(path, pointer, dims);
      break;
    case DType::i4:
      dump<uint8_t>(path, pointer, dims);
      break;
    case DType::i1:
      dump<bool>(path, pointer, dims);
      break;
    }
  } catch (const std::exception &e) {
    return Error{"cannot write " + path + ": " + e.what()};
  }
  return Status::ok();
}
