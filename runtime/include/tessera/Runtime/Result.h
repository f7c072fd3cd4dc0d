//===- Result.h - Errors as values ------------------------------*- C++ -*-===//
//
// Part of the Tessera runtime: no MLIR or LLVM types in this header.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_RESULT_H
#define TESSERA_RUNTIME_RESULT_H

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace tessera::runtime {

/// What went wrong, in words a user can act on.
struct Error {
  std::string message;
};

/// A value or the Error that prevented it.
template <typename T> class Result {
public:
  Result(T value) : state(std::move(value)) {}
  Result(Error error) : state(std::move(error)) {}

  explicit operator bool() const { return state.index() == 0; }
  T &operator*() { return std::get<0>(state); }
  const T &operator*() const { return std::get<0>(state); }
  T *operator->() { return &std::get<0>(state); }
  const T *operator->() const { return &std::get<0>(state); }
  const Error &error() const { return std::get<1>(state); }

private:
  std::variant<T, Error> state;
};

/// Success, or the Error that prevented it.
class Status {
public:
  Status() = default;
  Status(Error error) : failure(std::move(error)) {}
  static Status ok() { return Status(); }

  explicit operator bool() const { return !failure; }
  const Error &error() const { return *failure; }

private:
  std::optional<Error> failure;
};

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_RESULT_H
