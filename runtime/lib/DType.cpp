//===- DType.cpp - Element types the runtime exchanges --------------------===//

#include "tessera/Runtime/DType.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

using namespace tessera::runtime;

namespace {
struct DTypeInfo {
  DType type;
  const char *name;
  std::size_t bytes;
  bool isFloat;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::f64, "f64", 8, true},
    {DType::f32, "f32", 4, true},
    {DType::f16, "f16", 2, true},
    {DType::bf16, "bf16", 2, true},
    {DType::f8E4M3FN, "f8E4M3FN", 1, true},
    {DType::f8E5M2, "f8E5M2", 1, true},
    {DType::i64, "i64", 8, false},
    {DType::i32, "i32", 4, false},
    {DType::i16, "i16", 2, false},
    {DType::i8, "i8", 1, false},
    {DType::i1, "i1", 1, false},
    {DType::i4, "i4", 1, false},
};
const DTypeInfo &info(DType type) { return kDTypes[static_cast<int>(type)]; }

/// A binary float with `expBits` exponent and `mantBits` mantissa bits.
/// `ieee`: the top exponent means inf/NaN; otherwise (E4M3FN) only the
/// all-ones pattern is NaN and there is no infinity.
double decodeFloat(uint32_t bits, int expBits, int mantBits, bool ieee) {
  uint32_t mant = bits & ((1u << mantBits) - 1);
  uint32_t exp = (bits >> mantBits) & ((1u << expBits) - 1);
  bool negative = (bits >> (expBits + mantBits)) & 1;
  int bias = (1 << (expBits - 1)) - 1;
  uint32_t top = (1u << expBits) - 1;
  double value;
  if (ieee && exp == top)
    value = mant ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
  else if (!ieee && exp == top && mant == (1u << mantBits) - 1)
    value = std::numeric_limits<double>::quiet_NaN();
  else if (exp == 0)
    value = std::ldexp(double(mant), 1 - bias - mantBits);
  else
    value =
        std::ldexp(double(mant | (1u << mantBits)), int(exp) - bias - mantBits);
  return negative ? -value : value;
}
} // namespace

const char *tessera::runtime::name(DType type) { return info(type).name; }
std::size_t tessera::runtime::byteSize(DType type) { return info(type).bytes; }
bool tessera::runtime::isFloat(DType type) { return info(type).isFloat; }

DType tessera::runtime::weakResultType(DType tensor, ScalarKind kind) {
  if (kind == ScalarKind::Float && !isFloat(tensor))
    return DType::f32;
  if (kind == ScalarKind::Int && tensor == DType::i1)
    return DType::i64;
  return tensor;
}

std::optional<std::pair<int64_t, int64_t>>
tessera::runtime::integerRange(DType type) {
  switch (type) {
  case DType::i64:
    return std::pair{std::numeric_limits<int64_t>::min(),
                     std::numeric_limits<int64_t>::max()};
  case DType::i32:
    return std::pair<int64_t, int64_t>{INT32_MIN, INT32_MAX};
  case DType::i16:
    return std::pair<int64_t, int64_t>{INT16_MIN, INT16_MAX};
  case DType::i8:
    return std::pair<int64_t, int64_t>{INT8_MIN, INT8_MAX};
  case DType::i4:
    return std::pair<int64_t, int64_t>{-8, 7};
  case DType::i1:
    return std::pair<int64_t, int64_t>{0, 1};
  default:
    return std::nullopt;
  }
}

std::optional<DType> tessera::runtime::parseDType(std::string_view text) {
  for (const DTypeInfo &i : kDTypes)
    if (text == i.name)
      return i.type;
  return std::nullopt;
}

double tessera::runtime::toDouble(DType type, const void *element) {
  auto load = [&](auto value) {
    std::memcpy(&value, element, sizeof(value));
    return value;
  };
  switch (type) {
  case DType::f64:
    return load(double());
  case DType::f32:
    return load(float());
  case DType::f16:
    return decodeFloat(load(uint16_t()), 5, 10, true);
  case DType::bf16:
    return decodeFloat(load(uint16_t()), 8, 7, true);
  case DType::f8E4M3FN:
    return decodeFloat(load(uint8_t()), 4, 3, false);
  case DType::f8E5M2:
    return decodeFloat(load(uint8_t()), 5, 2, true);
  case DType::i64:
    return double(load(int64_t()));
  case DType::i32:
    return load(int32_t());
  case DType::i16:
    return load(int16_t());
  case DType::i8:
    return load(int8_t());
  case DType::i1:
    return load(uint8_t()) != 0;
  case DType::i4:
    return int8_t(uint8_t(load(uint8_t()) << 4)) >> 4;
  }
  return 0;
}
