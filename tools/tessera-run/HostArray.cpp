//===- HostArray.cpp - Host arrays for tessera-run ------------------------===//

#include "HostArray.h"

#include "tessera/Runtime/Allocator.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <xtensor/xadapt.hpp>
#include <xtensor/xnpy.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

using namespace mlir;
using namespace mlir::tessera::run;
namespace shape = ::tessera::shape;
using mlir::tessera::tgraph::getShape;
using mlir::tessera::tgraph::typeName;

static LogicalResult fail(const llvm::Twine &message) {
  llvm::errs() << "tessera-run: " << message << "\n";
  return failure();
}

/// The .npy type string and element size of a supported element type.
/// 16- and 8-bit floats (bf16, f16, the fp8 formats) travel as their bit
/// patterns: uint16 and uint8 arrays (ml_dtypes views them as floats).
static std::optional<std::pair<std::string, size_t>> npyType(Type t) {
  if (auto f = dyn_cast<FloatType>(t); f && f.getWidth() == 16)
    return std::make_pair(std::string("<u2"), size_t(2));
  if (auto f = dyn_cast<FloatType>(t); f && f.getWidth() == 8)
    return std::make_pair(std::string("|u1"), size_t(1));
  if (t.isF64())
    return std::make_pair(std::string("<f8"), size_t(8));
  if (t.isF32())
    return std::make_pair(std::string("<f4"), size_t(4));
  if (t.isInteger(64))
    return std::make_pair(std::string("<i8"), size_t(8));
  if (t.isInteger(32))
    return std::make_pair(std::string("<i4"), size_t(4));
  if (t.isInteger(8))
    return std::make_pair(std::string("|i1"), size_t(1));
  if (t.isInteger(1))
    return std::make_pair(std::string("|b1"), size_t(1));
  return std::nullopt;
}

static size_t elementSize(Type t) { return npyType(t)->second; }

static int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Descriptor::Descriptor(void *data, llvm::ArrayRef<int64_t> shape) {
  words.push_back(reinterpret_cast<int64_t>(data));
  words.push_back(reinterpret_cast<int64_t>(data));
  words.push_back(0);
  words.insert(words.end(), shape.begin(), shape.end());
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  words.insert(words.end(), strides.begin(), strides.end());
}

FunctionType mlir::tessera::run::runtimeSignature(FunctionType type) {
  auto convert = [](Type t) -> Type {
    if (isa<tgraph::KeyType>(t))
      return RankedTensorType::get({2}, IntegerType::get(t.getContext(), 32));
    return t;
  };
  SmallVector<Type> inputs, results;
  for (Type t : type.getInputs())
    inputs.push_back(convert(t));
  for (Type t : type.getResults())
    results.push_back(convert(t));
  return FunctionType::get(type.getContext(), inputs, results);
}

LogicalResult mlir::tessera::run::checkSignature(FunctionType type) {
  auto check = [](Type t, const llvm::Twine &what) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor)
      return fail(what + " has type " + typeName(t) +
                  "; tessera-run passes ranked tensors only");
    if (!npyType(tensor.getElementType()))
      return fail(what + " has element type " +
                  typeName(tensor.getElementType()) +
                  "; tessera-run supports f64, f32, bf16, f16, the fp8 "
                  "formats (as uint16/uint8 bit patterns), i64, i32, i8 and "
                  "i1");
    return success();
  };
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    if (failed(check(t, "argument " + llvm::Twine(i))))
      return failure();
  for (auto [i, t] : llvm::enumerate(type.getResults()))
    if (failed(check(t, "result " + llvm::Twine(i))))
      return failure();
  return success();
}

FailureOr<HostArray> HostArray::load(const std::string &path, Type type,
                                     size_t index) {
  auto tensor = cast<RankedTensorType>(type);
  Type element = tensor.getElementType();
  std::ifstream stream(path, std::ifstream::binary);
  if (!stream)
    return fail("cannot open " + path);
  std::optional<xt::detail::npy_file> loaded;
  try {
    loaded.emplace(xt::detail::load_npy_file(stream));
  } catch (const std::exception &e) {
    return fail(path + " is not a valid .npy file: " + e.what());
  }
  xt::detail::npy_file &file = *loaded;
  if (!stream)
    return fail(path + " is shorter than its header says (truncated?)");
  if (file.m_fortran_order)
    return fail(path + " is in Fortran order; save it in C order");
  std::string expected = npyType(element)->first;
  if (file.m_typestring != expected)
    return fail("argument " + llvm::Twine(index) + " (" + path +
                ") has dtype " + file.m_typestring +
                " but the function takes " + typeName(element) + " (" +
                expected + ")");
  HostArray a;
  a.element = element;
  a.shape.assign(file.m_shape.begin(), file.m_shape.end());
  if (int64_t(a.shape.size()) != tensor.getRank())
    return fail("argument " + llvm::Twine(index) + " (" + path + ") has rank " +
                llvm::Twine(a.shape.size()) + " but the function takes rank " +
                llvm::Twine(tensor.getRank()));
  a.bytes.assign(file.ptr(), file.ptr() + file.n_bytes());
  return a;
}

FailureOr<HostArray> HostArray::random(Type type,
                                       const llvm::StringMap<int64_t> &dims,
                                       std::mt19937_64 &rng, size_t index) {
  auto tensor = cast<RankedTensorType>(type);
  HostArray a;
  a.element = tensor.getElementType();
  for (auto [d, e] :
       llvm::enumerate(mlir::tessera::tgraph::getShape(tensor).dims)) {
    auto v = e.evaluate(dims);
    if (!v || *v < 0) {
      std::set<std::string> syms;
      e.collectSymbols(syms);
      std::string names;
      for (const std::string &s : syms)
        names += (names.empty() ? "" : ", ") + s;
      return fail("argument " + llvm::Twine(index) + " dim " + llvm::Twine(d) +
                  " is " + e.str() +
                  (e.isUnknown()
                       ? "; pass the argument as an .npy file with --input"
                       : "; give its size with --dims (" + names + ")"));
    }
    a.shape.push_back(*v);
  }
  int64_t n = product(a.shape);
  a.bytes.resize(n * elementSize(a.element));
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> small(0, 7), coin(0, 1);
  for (int64_t i = 0; i < n; ++i) {
    char *p = a.bytes.data() + i * elementSize(a.element);
    if (a.element.isF64()) {
      double v = unit(rng);
      std::memcpy(p, &v, 8);
    } else if (a.element.isF32()) {
      float v = float(unit(rng));
      std::memcpy(p, &v, 4);
    } else if (auto f = dyn_cast<FloatType>(a.element)) {
      // Round the double to the narrow format and store its bits.
      APFloat v(unit(rng));
      bool lost;
      v.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      uint64_t bits = v.bitcastToAPInt().getZExtValue();
      std::memcpy(p, &bits, elementSize(a.element)); // little endian
    } else {
      int64_t v = a.element.isInteger(1) ? coin(rng) : small(rng);
      std::memcpy(p, &v, elementSize(a.element)); // little endian
    }
  }
  return a;
}

HostArray HostArray::fromDescriptor(Type element, const int64_t *words,
                                    unsigned rank) {
  HostArray a;
  a.element = element;
  const char *base = reinterpret_cast<const char *>(words[1]);
  int64_t offset = words[2];
  a.shape.assign(words + 3, words + 3 + rank);
  const int64_t *strides = words + 3 + rank;
  size_t size = elementSize(element);
  int64_t n = product(a.shape);
  a.bytes.resize(n * size);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = offset;
    for (unsigned d = 0; d < rank; ++d)
      at += idx[d] * strides[d];
    std::memcpy(a.bytes.data() + i * size, base + at * size, size);
    for (unsigned d = rank; d-- > 0;) {
      if (++idx[d] < a.shape[d])
        break;
      idx[d] = 0;
    }
  }
  return a;
}

/// Writes the array with xtensor's .npy writer.
template <typename T>
static void dump(const std::string &path, const char *data,
                 const std::vector<int64_t> &shape) {
  std::vector<size_t> s(shape.begin(), shape.end());
  size_t n = 1;
  for (size_t d : s)
    n *= d;
  auto view =
      xt::adapt(reinterpret_cast<const T *>(data), n, xt::no_ownership(), s);
  xt::dump_npy(path, view);
}

LogicalResult HostArray::save(const std::string &path) const {
  try {
    if (element.isF64())
      dump<double>(path, bytes.data(), shape);
    else if (element.isF32())
      dump<float>(path, bytes.data(), shape);
    else if (isa<FloatType>(element) && elementSize(element) == 2)
      dump<uint16_t>(path, bytes.data(), shape);
    else if (isa<FloatType>(element))
      dump<uint8_t>(path, bytes.data(), shape);
    else if (element.isInteger(64))
      dump<int64_t>(path, bytes.data(), shape);
    else if (element.isInteger(32))
      dump<int32_t>(path, bytes.data(), shape);
    else if (element.isInteger(8))
      dump<int8_t>(path, bytes.data(), shape);
    else
      dump<bool>(path, bytes.data(), shape);
  } catch (const std::exception &e) {
    return fail("cannot write " + path + ": " + e.what());
  }
  return success();
}

/// The values of the array as doubles (for summaries).
template <typename T>
static std::vector<double> widen(const char *data, size_t n) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    T x;
    std::memcpy(&x, data + i * sizeof(T), sizeof(T));
    v[i] = static_cast<double>(x);
  }
  return v;
}

std::string HostArray::summary() const {
  size_t n = bytes.size() / elementSize(element);
  std::vector<double> v;
  if (element.isF64())
    v = widen<double>(bytes.data(), n);
  else if (element.isF32())
    v = widen<float>(bytes.data(), n);
  else if (auto f = dyn_cast<FloatType>(element)) {
    size_t size = elementSize(element);
    v.resize(n);
    for (size_t i = 0; i < n; ++i) {
      uint64_t bits = 0;
      std::memcpy(&bits, bytes.data() + i * size, size);
      APFloat x(f.getFloatSemantics(), APInt(f.getWidth(), bits));
      bool lost;
      x.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      v[i] = x.convertToDouble();
    }
  } else if (element.isInteger(64))
    v = widen<int64_t>(bytes.data(), n);
  else if (element.isInteger(32))
    v = widen<int32_t>(bytes.data(), n);
  else if (element.isInteger(8))
    v = widen<int8_t>(bytes.data(), n);
  else
    v = widen<bool>(bytes.data(), n);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << typeName(element) << "[";
  llvm::interleave(shape, os, "x");
  os << "]";
  size_t nonFinite = 0;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (double x : v) {
    if (!std::isfinite(x)) {
      ++nonFinite;
      continue;
    }
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  size_t finite = n - nonFinite;
  if (finite)
    os << llvm::format(" min %.6g max %.6g mean %.6g", lo, hi, sum / finite);
  if (nonFinite)
    os << " (" << nonFinite << " not finite)";
  os << " first [";
  for (size_t i = 0; i < std::min<size_t>(n, 4); ++i)
    os << (i ? ", " : "") << llvm::format("%.6g", v[i]);
  os << (n > 4 ? ", ...]" : "]");
  return text;
}

ResultBuffer::ResultBuffer(TypeRange resultTypes) {
  size_t n = 0;
  for (Type t : resultTypes) {
    types.push_back(cast<RankedTensorType>(t));
    n += 3 + 2 * types.back().getRank();
  }
  words.assign(n, 0);
}

std::vector<HostArray> ResultBuffer::take(llvm::ArrayRef<HostArray> inputs,
                                          bool copy) {
  std::vector<HostArray> out;
  std::set<int64_t> freed;
  const int64_t *w = words.data();
  for (RankedTensorType t : types) {
    unsigned rank = t.getRank();
    if (copy)
      out.push_back(HostArray::fromDescriptor(t.getElementType(), w, rank));
    // Compiled code allocates through the runtime; anything else (an
    // argument, a constant) is not ours to free.
    void *allocated = reinterpret_cast<void *>(w[0]);
    auto &allocator = ::tessera::runtime::CachingAllocator::global();
    if (allocated && allocator.owns(allocated) && freed.insert(w[0]).second)
      allocator.deallocate(allocated);
    w += 3 + 2 * rank;
  }
  return out;
}

LogicalResult mlir::tessera::run::checkBindings(llvm::ArrayRef<HostArray> args,
                                                FunctionType type) {
  llvm::StringMap<std::pair<int64_t, std::string>> bound;
  for (auto [i, a] : llvm::enumerate(args)) {
    shape::TensorShape s = getShape(type.getInput(i));
    for (auto [d, e] : llvm::enumerate(s.dims)) {
      int64_t actual = a.getShape()[d];
      std::string where =
          "argument " + std::to_string(i) + " dim " + std::to_string(d);
      if (auto c = e.getConstant(); c && *c != actual)
        return fail(where + " must be " + std::to_string(*c) + " but is " +
                    std::to_string(actual));
      auto name = e.getSymbolName();
      if (!name)
        continue;
      auto [it, inserted] = bound.try_emplace(*name, actual, where);
      if (!inserted && it->second.first != actual)
        return fail(where + " is " + *name + " = " + std::to_string(actual) +
                    ", but " + it->second.second + " bound " + *name + " = " +
                    std::to_string(it->second.first));
    }
  }
  return success();
}
