//===- Tensor.h - Traced tensors of the C++ modeling API --------*- C++ -*-===//
//
// Part of Tessera's C++ API: no MLIR or LLVM types in this header.
//
// A Tensor is a value of the Graph IR function being traced: ops on it add
// `tgraph` ops to that function (see Ops.h and Module.h). Its shape holds
// constants and named symbols ("B", "2*S"); its dtype is a storage type.
//
//   tessera::Module m;
//   auto f = m.trace("mlp", {{{"B", 784}, tessera::DType::f32, "x"},
//                            {{784, 10}, tessera::DType::f32, "w"}},
//                    [](std::vector<tessera::Tensor> a) {
//                      return std::vector{tessera::op::relu(
//                          tessera::op::matmul(a[0], a[1]))};
//                    });
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_API_TENSOR_H
#define TESSERA_API_TENSOR_H

#include "tessera/Runtime/DType.h"
#include "tessera/Runtime/Result.h"

#include <cstdint>
#include <type_traits>
#include <string>
#include <vector>

namespace tessera {

using runtime::DType;
using runtime::Error;
using runtime::Result;
using runtime::ScalarKind;
using runtime::Status;

/// Where an op was written. The op functions of Ops.h default it to their
/// caller's file and line, so shape errors point at user code.
struct SourceLoc {
  const char *file = nullptr;
  int line = 0;
  int column = 0;

  static SourceLoc current(const char *file = __builtin_FILE(),
                           int line = __builtin_LINE()) {
    return {file, line, 0};
  }
};

/// One dimension: a size, or a symbol expression such as "B" or "2*S".
class Dim {
public:
  Dim(int64_t size) : value(size) {}
  Dim(int size) : value(size) {}
  Dim(const char *expr) : value(-1), expression(expr) {}
  Dim(std::string expr) : value(-1), expression(std::move(expr)) {}

  bool isStatic() const { return expression.empty(); }
  /// The size of a static dim (-1 for a symbolic one).
  int64_t size() const { return value; }
  /// The expression of a symbolic dim (empty for a static one).
  const std::string &symbol() const { return expression; }
  /// "784" or "B".
  std::string str() const;
  bool operator==(const Dim &other) const {
    return value == other.value && expression == other.expression;
  }

private:
  int64_t value;
  std::string expression;
};

using Shape = std::vector<Dim>;

/// "[B, 784]".
std::string describe(const Shape &shape);

/// An argument of a traced function.
struct TensorSpec {
  Shape shape;
  DType dtype = DType::f32;
  /// Names the argument in the IR and in messages (`tgraph.name`).
  std::string name;
  /// A random key (`!tgraph.key`; at run time an i32[2] buffer of its two
  /// Philox words); `shape` and `dtype` are ignored.
  bool isKey = false;
  /// A key/value cache (`!tgraph.kv_cache<shape, dtype>`, shape [batch,
  /// heads, max_length, head_dim]): state the call updates in place (at run
  /// time three buffers: keys, values, and i64[2] length and window).
  bool isKVCache = false;
};

namespace detail {
class ModuleState;
} // namespace detail

/// A value of the function being traced. Cheap to copy; valid while its
/// Module lives. An op that fails (a shape error) returns an invalid Tensor
/// and records the error in the Module (Module::error()); ops on invalid
/// tensors return invalid tensors without adding errors.
class Tensor {
public:
  Tensor() = default;

  /// False for the result of a failed op and for tensors of a trace that
  /// was aborted.
  bool valid() const;
  explicit operator bool() const { return valid(); }
  Shape shape() const;
  int64_t rank() const;
  DType dtype() const;
  /// True for a random key (see op::rng_key).
  bool isKey() const;
  /// True for a key/value cache (see op::kv_cache_create).
  bool isKVCache() const;
  /// "f32[B, 784]" (or "key").
  std::string str() const;

  /// For the implementation: the module and the value's index in it.
  detail::ModuleState *getState() const { return state; }
  int getId() const { return id; }
  Tensor(detail::ModuleState *state, int id) : state(state), id(id) {}

private:
  detail::ModuleState *state = nullptr;
  int id = -1;
};

/// A number used as an operand of a tensor op. Like a Python number in
/// NumPy 2 and JAX it is weakly typed: it takes the dtype of the tensor it
/// meets when its kind fits (`x_bf16 * 0.5` stays bf16); a floating-point
/// number with an integer tensor gives f32 (`x_i32 * 0.5` is f32), an
/// integer with a boolean tensor gives i64 (runtime::weakResultType).
class Scalar {
public:
  Scalar(bool value) : k(ScalarKind::Bool), i(value), d(value) {}
  template <typename T, std::enable_if_t<std::is_integral_v<T> &&
                                             !std::is_same_v<T, bool>,
                                         int> = 0>
  Scalar(T value) : k(ScalarKind::Int), i(int64_t(value)), d(double(value)) {}
  template <typename T,
            std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T value) : k(ScalarKind::Float), d(double(value)) {}

  ScalarKind kind() const { return k; }
  /// The value of a bool or integer scalar.
  int64_t intValue() const { return i; }
  double doubleValue() const { return d; }
  /// "3", "0.5", "true".
  std::string str() const;

private:
  ScalarKind k;
  int64_t i = 0;
  double d = 0;
};

// Elementwise arithmetic with NumPy broadcasting; a Scalar operand is
// promoted as Scalar says. `/` divides as op::div does (integers round toward
// zero, as in C++). (Matrix products: op::matmul.)
Tensor operator+(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a, const Tensor &b);
Tensor operator*(const Tensor &a, const Tensor &b);
Tensor operator/(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a);
Tensor operator+(const Tensor &a, Scalar b);
Tensor operator-(const Tensor &a, Scalar b);
Tensor operator*(const Tensor &a, Scalar b);
Tensor operator/(const Tensor &a, Scalar b);
Tensor operator+(Scalar a, const Tensor &b);
Tensor operator-(Scalar a, const Tensor &b);
Tensor operator*(Scalar a, const Tensor &b);
Tensor operator/(Scalar a, const Tensor &b);

} // namespace tessera

#endif // TESSERA_API_TENSOR_H
