//===- Executable.h - Compiled code loaded into the process -----*- C++ -*-===//
//
// Compiled functions live in a shared library (written by the compiler,
// kept in the compile cache or shipped ahead of time); an Executable loads
// one and finds its functions. Loading needs no compiler.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_EXECUTABLE_H
#define TESSERA_RUNTIME_EXECUTABLE_H

#include "tessera/Runtime/Result.h"

#include <memory>
#include <string>

namespace tessera::runtime {

class Executable {
public:
  /// A compiled function in its packed calling convention: one pointer per
  /// argument descriptor, the result descriptor first.
  using PackedFunction = void (*)(void **);

  /// Loads the shared library at `path`.
  static Result<std::shared_ptr<Executable>> load(const std::string &path);
  ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  /// The packed entry of function `name` (as written in the IR).
  Result<PackedFunction> lookup(const std::string &name) const;

  const std::string &path() const { return libraryPath; }

private:
  Executable(void *handle, std::string path)
      : handle(handle), libraryPath(std::move(path)) {}
  void *handle;
  std::string libraryPath;
};

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_EXECUTABLE_H
