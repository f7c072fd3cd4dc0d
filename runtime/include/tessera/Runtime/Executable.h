//===- Executable.h - Compiled code loaded into the process -----*- C++ -*-===//
//
// Part of the Tessera runtime: no MLIR or LLVM types in this header.
//
// Compiled functions live in a shared library (written by the compiler,
// kept in the compile cache or shipped ahead of time) or in the compiler's
// in-process JIT; an Executable finds them and their signatures, and a
// Function calls one with checked arguments. Loading a library needs no
// compiler.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_EXECUTABLE_H
#define TESSERA_RUNTIME_EXECUTABLE_H

#include "tessera/Runtime/Buffer.h"
#include "tessera/Runtime/Cuda.h"
#include "tessera/Runtime/GpuProgram.h"
#include "tessera/Runtime/Result.h"
#include "tessera/Runtime/Signature.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera::runtime {

class Function;
namespace detail {
struct CallPlan;
struct GpuFunctions;
} // namespace detail

class Executable : public std::enable_shared_from_this<Executable> {
public:
  /// A compiled function in its packed calling convention: one pointer per
  /// argument descriptor, the result descriptors first.
  using PackedFunction = void (*)(void **);
  /// Finds the address of a symbol of compiled code (null if absent).
  using SymbolResolver = std::function<void *(const std::string &)>;

  /// Loads the shared library at `path`. A bare file name is the file in
  /// the current directory if there is one, else a name for the library
  /// search path (as dlopen takes it).
  static Result<std::shared_ptr<Executable>> load(const std::string &path);
  /// Compiled code already in the process (an in-process JIT): symbols come
  /// from `resolve`; `owner` (the JIT) lives as long as the executable.
  static Result<std::shared_ptr<Executable>>
  fromResolver(SymbolResolver resolve, std::shared_ptr<void> owner,
               std::string description);
  /// Compiles function `name` into a GPU program for the sizes `dims`
  /// gives its symbolic dims.
  using GpuCompiler = std::function<Result<GpuProgramImage>(
      const std::string &name, const std::map<std::string, int64_t> &dims)>;
  /// Functions that run on CUDA device `device` as GPU programs
  /// (GpuProgram.h): those of `signatures`, run by the programs of
  /// `programs` for the sizes each was compiled for and, for other sizes,
  /// by what `compile` (which may be empty) gives on first use. `owner`
  /// lives as long as the executable.
  static Result<std::shared_ptr<Executable>>
  forCuda(int device, std::vector<FunctionSignature> signatures,
          std::vector<GpuProgramImage> programs, GpuCompiler compile,
          std::shared_ptr<void> owner, std::string description);
  /// GPU program files compiled ahead of time (Module::compileGPU, saved):
  /// each is one function for one set of sizes; files of one function
  /// cover the sizes they were compiled for. Needs no compiler.
  static Result<std::shared_ptr<Executable>>
  loadGpuPrograms(const std::vector<std::string> &paths, int device = 0);
  ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  /// The signatures of the compiled functions, in the order of the IR.
  const std::vector<FunctionSignature> &functions() const { return manifest; }
  /// Function `name` (as written in the IR, without '@').
  Result<Function> function(const std::string &name) const;
  /// The raw packed entry of function `name`.
  Result<PackedFunction> lookup(const std::string &name) const;

  /// The library path, or the description given to fromResolver().
  const std::string &path() const { return description; }
  /// The CUDA device the functions run on; -1 when they run on the CPU.
  int cudaDevice() const;
  /// The stream GPU functions are queued on, in call order (null for the
  /// CPU): results of a call on device buffers are ready on it.
  cuda::Stream *stream() const;

private:
  Executable(void *handle, SymbolResolver resolve, std::shared_ptr<void> owner,
             std::string description)
      : handle(handle), resolve(std::move(resolve)), owner(std::move(owner)),
        description(std::move(description)) {}
  static Result<std::shared_ptr<Executable>>
  finish(std::shared_ptr<Executable> executable);

  void *handle; // dlopen handle, or null
  SymbolResolver resolve;
  std::shared_ptr<void> owner;
  std::string description;
  std::vector<FunctionSignature> manifest;
  std::shared_ptr<detail::GpuFunctions> gpu;
};

/// One compiled function, callable with host buffers (and, on a GPU, with
/// device buffers). Arguments are checked
/// against the signature (count, dtype, rank, static dims, and one size per
/// symbol across all arguments) before any compiled code runs; errors name
/// the argument, what was expected and what was found. Compiled code never
/// writes into its arguments. Thread safe; calls from several threads run
/// concurrently.
class Function {
public:
  const FunctionSignature &signature() const;
  /// Runs the function. Results own their memory. A GPU function copies
  /// the arguments to its device and the results back, and waits for them.
  Result<std::vector<HostBuffer>>
  call(const std::vector<HostBuffer> &arguments) const;
  /// Runs a GPU function on device buffers (of its executable's device):
  /// queued on the executable's stream(), in call order, so results can be
  /// passed to the next call at once; DeviceBuffer::toHost(stream()) waits
  /// for them. The first call for new sizes of the symbolic dims compiles
  /// (or fails when the executable cannot compile).
  Result<std::vector<cuda::DeviceBuffer>>
  call(const std::vector<cuda::DeviceBuffer> &arguments) const;
  /// The sizes of the symbolic dims `arguments` bind, or why they cannot
  /// be passed.
  Result<std::map<std::string, int64_t>>
  bind(const std::vector<HostBuffer> &arguments) const;

private:
  friend class Executable;
  Function(std::shared_ptr<const Executable> executable,
           std::shared_ptr<const detail::CallPlan> plan)
      : executable(std::move(executable)), plan(std::move(plan)) {}
  std::shared_ptr<const Executable> executable;
  std::shared_ptr<const detail::CallPlan> plan;
};

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_EXECUTABLE_H
