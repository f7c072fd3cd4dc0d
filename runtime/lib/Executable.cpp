//===- Executable.cpp - Compiled code loaded into the process -------------===//

#include "tessera/Runtime/Executable.h"

#include <dlfcn.h>

using namespace tessera::runtime;

Result<std::shared_ptr<Executable>> Executable::load(const std::string &path) {
  // RTLD_LOCAL: two executables may define functions of the same name.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return Error{"cannot load compiled code from " + path + ": " +
                 (why ? why : "unknown error")};
  }
  return std::shared_ptr<Executable>(new Executable(handle, path));
}

Executable::~Executable() { dlclose(handle); }

Result<Executable::PackedFunction>
Executable::lookup(const std::string &name) const {
  // The compiler emits a packed wrapper `_mlir__mlir_ciface_<name>` for
  // the C interface of every public function.
  std::string symbol = "_mlir__mlir_ciface_" + name;
  dlerror();
  void *address = dlsym(handle, symbol.c_str());
  if (!address)
    return Error{libraryPath + " has no compiled function @" + name};
  return reinterpret_cast<PackedFunction>(address);
}
