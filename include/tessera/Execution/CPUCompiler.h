//===- CPUCompiler.h - Graph IR to loaded native code -----------*- C++ -*-===//
//
// Compiles a module with the CPU pipeline into a shared library for the
// host CPU and loads it through the runtime. Compiled libraries are kept in
// memory (per process) and on disk (the compile cache), keyed by a digest
// of the IR, the pipeline, the target CPU and the compiler version.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_EXECUTION_CPUCOMPILER_H
#define TESSERA_EXECUTION_CPUCOMPILER_H

#include "tessera/Runtime/Executable.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <memory>
#include <string>

namespace mlir::tessera {

struct CPUCompileOptions {
  /// A textual pass pipeline replacing the CPU pipeline (empty: the CPU
  /// pipeline). It must end in the LLVM dialect.
  std::string passPipeline;
  /// Where compiled libraries are kept across processes; empty: nowhere.
  std::string cacheDirectory;
  /// Compile in process with mlir::ExecutionEngine (ORC JIT) instead of
  /// linking a shared library; nothing is written to disk.
  bool jit = false;
};

struct CPUCompileResult {
  std::shared_ptr<::tessera::runtime::Executable> executable;
  /// Found compiled (in this process or in the compile cache).
  bool cached = false;
};

/// Compiles every public function of `module` (left unchanged). Errors are
/// reported as diagnostics on the module.
FailureOr<CPUCompileResult> compileForCPU(ModuleOp module,
                                          const CPUCompileOptions &options);

/// Ahead of time: compiles every public function of `module` into a shared
/// library at `path` that the runtime loads without the compiler (it finds
/// libTesseraRuntime.so beside itself or where this build put it).
LogicalResult compileToLibrary(ModuleOp module,
                               const CPUCompileOptions &options,
                               StringRef path);

/// The compiler build this code is part of (its library's path, size and
/// modification time), for the keys of compiled code kept on disk.
std::string compilerBuild();

/// Expands the autodiff declarations (`tgraph.adjoint`, `jvp`, `hvp`) of
/// `module` into the functions they declare, which are public.
LogicalResult expandAutodiff(ModuleOp module);

/// The signatures of the public functions of `module` (left unchanged), as
/// the runtime checks calls against them: dtypes and symbolic dims of
/// their arguments and results, with autodiff declarations expanded.
FailureOr<std::vector<::tessera::runtime::FunctionSignature>>
publicSignatures(ModuleOp module);

} // namespace mlir::tessera

#endif // TESSERA_EXECUTION_CPUCOMPILER_H
