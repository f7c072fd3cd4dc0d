//===- Result.h - Errors as values ------------------------------*- C++ -*-===//

#ifndef TESSERA_RUNTIME_RESULT_H
#define TESSERA_RUNTIME_RESULT_H

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
  T *operator->() { return &std::get<0>(state); }
  const Error &error() const { return std::get<1>(state); }

private:
  std::variant<T, Error> state;
};

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_RESULT_H
