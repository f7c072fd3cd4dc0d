//===- Module.h - Tracing, transforms and compilation -----------*- C++ -*-===//
//
// Part of Tessera's C++ API: no MLIR or LLVM types in this header.
//
// A Module holds Graph IR functions traced from C++ callables, declares
// their derivatives (grad/vjp/jvp/hvp, expanded into new functions by the
// autodiff transformation as they are declared) and compiles them for the
// CPU into a runtime Executable:
//
//   tessera::Module m;
//   auto loss = m.trace("loss", specs, body);        // Result<Function>
//   auto grad = m.grad(*loss, {1, 2});               // d loss / d args 1, 2
//   auto exe = m.compile();                          // Result<Executable>
//   auto fn = (*exe)->function(grad->name);          // runtime::Function
//   auto out = fn->call(buffers);
//
// Errors are values (the project builds without exceptions): a failed op
// leaves an invalid Tensor and the first error in the Module, which
// trace() then returns.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_API_MODULE_H
#define TESSERA_API_MODULE_H

#include "tessera/API/Tensor.h"
#include "tessera/Runtime/Executable.h"
#include "tessera/Runtime/GpuProgram.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace tessera {

/// A function of a Module (traced, or created by a transform).
struct Function {
  std::string name;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  /// Values of enclosing traces the function reads (a closure): call()
  /// passes them at capturePosition() of the IR function's arguments.
  std::vector<Tensor> captures;
  std::optional<size_t> captureAt;

  size_t capturePosition() const { return captureAt.value_or(inputs.size()); }
};

/// Where Module::compile() makes a module's functions run.
struct Target {
  enum class Kind { CPU, CUDA };
  Kind kind = Kind::CPU;
  /// CUDA: the device's index.
  int device = 0;

  /// This machine's CPU (OpenMP threads).
  static Target cpu() { return {}; }
  /// NVIDIA GPU `device` (compute capability 8.0 or newer).
  static Target cuda(int device = 0) { return {Kind::CUDA, device}; }
  /// "cpu" or "cuda:0".
  std::string str() const;
};

struct CompileOptions {
  /// Where compiled libraries are kept across processes; empty: only in
  /// this process. Module::defaultCacheDirectory() is the usual choice.
  /// GPU programs are kept there too, one file per function and sizes.
  std::string cacheDirectory;
  Target target;
  /// On a CUDA target: tune the schedules of the generated products on
  /// the device at a function's first compile for its sizes (one program
  /// per candidate rank of their autotune spaces, timed there), keeping
  /// the choices in `<cacheDirectory>/gpu/tuning.txt` (read again by later
  /// compiles and processes, which then tune nothing more).
  bool autotune = false;
};

/// How Module::compileGPU() compiles.
struct GPUCompileOptions {
  /// The public function to compile (empty: the only one).
  std::string entry;
  /// The chip the PTX is generated for.
  std::string chip = "sm_90a";
  /// SMs of the target card (the GEMM tile choice).
  int64_t multiprocessors = 132;
  /// Sizes of the function's symbolic dims: a GPU program is compiled for
  /// static shapes (every symbol of the signature needs one).
  std::map<std::string, int64_t> dims;
  /// Also compile a cubin for `chip` with ptxas of the CUDA toolkit (a
  /// program shipped to machines that should not JIT its PTX at load).
  bool cubin = false;
  /// Where programs are kept across processes (`<key>.tgpu`; the key
  /// covers the IR, the entry, the sizes, the chip, the SM count and the
  /// compiler build); empty: nowhere. Module::compile's CUDA target keeps
  /// them in `<its cache directory>/gpu`.
  std::string cacheDirectory;
  /// Build each generated product with candidate `variant` of its autotune
  /// space (the IR's `tsched.space`; -1: the cost model's choice): the
  /// programs an autotuner times (runtime::cuda::tunePrograms).
  int64_t variant = -1;
  /// A file of tuned schedules (runtime::TuningTable) to build with.
  std::string tuningFile;
  /// >= 0: first tune the products missing from `tuningFile` (needed) on
  /// that CUDA device, as Module::compile's autotune does.
  int autotuneDevice = -1;
};

/// The stages Module::lower() can show.
enum class Stage {
  /// The traced Graph IR.
  Graph,
  /// After shape inference, autodiff and decomposition (still `tgraph`).
  GraphOptimized,
  /// linalg/tensor after lowering, before the CPU schedule.
  Linalg,
  /// After the CPU schedule (tiles, packing, vectors), before bufferization.
  Scheduled,
  /// The LLVM dialect handed to code generation.
  LLVM,
  /// The GPU's fusion groups: Graph IR optimized for the GPU (attention
  /// kept whole where it runs as flash attention), its ops grouped into
  /// `tsched.group` kernels.
  GPUGroups,
  /// GPUGroups with a generated Tile IR kernel (`ttile.kernel` function)
  /// for each row and contraction group, which the group names.
  GPUKernels,
  /// GPUKernels with each function turned into its host program: launches
  /// of the kernels on buffers of one planned workspace (`tsched.launch`,
  /// `tsched.buffer`, `tsched.view`).
  GPUHost,
  /// The whole GPU pipeline (`--tessera-gpu-pipeline`): the host program
  /// beside its device module `@kernels`, its kernels compiled to PTX in a
  /// gpu.binary for sm_90a.
  GPUBinary,
};

/// One attribute of a GraphOp, converted to plain values.
struct GraphAttr {
  enum class Kind { Int, Float, Bool, String, Ints, Floats, Dense, Other };
  std::string name;
  Kind kind = Kind::Other;
  int64_t i = 0;
  double f = 0;
  /// String: the text; Dense: the raw little-endian elements (one element
  /// when `splat`); Other: the attribute as MLIR prints it.
  std::string s;
  /// Ints: the integers (symbolic entries of #tgraph.dims are not Ints).
  std::vector<int64_t> ints;
  std::vector<double> floats;
  /// Dense: the element type and shape.
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  bool splat = false;
};

/// One op of a function's optimized Graph IR, its operands and results
/// named by value ids (see GraphListing).
struct GraphOp {
  std::string name;
  std::vector<int64_t> operands;
  std::vector<int64_t> results;
  std::vector<GraphAttr> attrs;
  /// "file:line:col" of the op, or empty.
  std::string location;
  /// Ops with regions (control flow) are listed without their bodies.
  unsigned regions = 0;
};

/// A public function after the graph-level pipeline (shape inference,
/// autodiff, inlining, decomposition), as plain data: what back ends
/// written outside the compiler (the GPU executor of the Python package)
/// consume. Value ids index `shapes`/`dtypes`; a symbolic dim is -1.
struct GraphListing {
  std::string name;
  std::vector<int64_t> arguments;
  std::vector<GraphOp> ops;
  std::vector<int64_t> results;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DType> dtypes;
  /// Values that are random keys (their dtype/shape say i32[2]).
  std::vector<bool> isKey;
};

class Module {
public:
  using Body = std::function<std::vector<Tensor>(std::vector<Tensor>)>;

  Module();
  ~Module();
  Module(Module &&) noexcept;
  Module &operator=(Module &&) noexcept;

  /// Traces `body` into a function `name` with arguments `inputs`. Inside
  /// another trace the new function is private to the module (a callee);
  /// at top level it is public (compiled as an entry point) unless
  /// `isPublic` is false. A name already taken gets a numbered suffix.
  Result<Function> trace(const std::string &name,
                         const std::vector<TensorSpec> &inputs,
                         const Body &body, bool isPublic = true);
  /// trace() in steps, for front ends that run the body themselves:
  /// beginTrace() returns the arguments, endTrace() takes the results.
  /// abortTrace() drops the innermost running trace (after an error).
  Result<std::vector<Tensor>> beginTrace(const std::string &name,
                                         const std::vector<TensorSpec> &inputs,
                                         bool isPublic = true);
  Result<Function> endTrace(const std::vector<Tensor> &results);
  void abortTrace();

  /// Calls `fn` from the function being traced.
  std::vector<Tensor> call(const Function &fn, const std::vector<Tensor> &args,
                           SourceLoc loc = SourceLoc::current());

  /// Calls `fn` inside a tgraph.checkpoint: reverse mode keeps only its
  /// arguments and recomputes its intermediates when it needs them.
  std::vector<Tensor> checkpoint(const Function &fn,
                                 const std::vector<Tensor> &args,
                                 SourceLoc loc = SourceLoc::current());
  /// Calls `fn` with a user-defined reverse-mode rule: `fwd` takes `fn`'s
  /// arguments and returns its results then residuals; `bwd` takes the
  /// residuals then one cotangent per result and returns one cotangent per
  /// argument. The three must not read values of enclosing traces.
  std::vector<Tensor> customVjp(const Function &fn, const Function &fwd,
                                const Function &bwd,
                                const std::vector<Tensor> &args,
                                SourceLoc loc = SourceLoc::current());
  /// Calls `fn` with a user-defined forward-mode rule: `jvp` takes the
  /// arguments then one tangent per argument and returns the results then
  /// one tangent per result.
  std::vector<Tensor> customJvp(const Function &fn, const Function &jvp,
                                const std::vector<Tensor> &args,
                                SourceLoc loc = SourceLoc::current());

  /// As jax.lax.scan: `body` takes the carries then one slice of each of
  /// `xs` (along their leading dim) and returns the next carries then one
  /// slice of each output; the results are the final carries then the
  /// outputs stacked along a new leading dim. `length` is needed without
  /// xs. The body may read values of the enclosing trace.
  std::vector<Tensor> scan(const Function &body,
                           const std::vector<Tensor> &inits,
                           const std::vector<Tensor> &xs,
                           std::optional<int64_t> length = std::nullopt,
                           bool reverse = false,
                           SourceLoc loc = SourceLoc::current());

  /// `fn` mapped over the leading dim of the arguments flagged in `mapped`
  /// (the others are shared by every element); the results are stacked
  /// along a new leading dim. The ops of `fn` are rewritten to work on the
  /// whole batch at once (batching rules: broadcasting elementwise ops,
  /// shifted axes, batched contractions, calls through their callee); a
  /// function with an op that has no rule (control flow or random numbers
  /// that depend on the batch, collectives, ...) runs as a tgraph.scan over
  /// the batch instead. `fn` may read values of the enclosing trace.
  std::vector<Tensor> vmap(const Function &fn, const std::vector<Tensor> &args,
                           const std::vector<bool> &mapped,
                           SourceLoc loc = SourceLoc::current());

  /// if pred then thenFn() else elseFn() (tgraph.cond): the branches take no
  /// arguments and read what they need from the enclosing trace.
  std::vector<Tensor> cond(const Tensor &pred, const Function &thenFn,
                           const Function &elseFn,
                           SourceLoc loc = SourceLoc::current());
  /// while condFn(carry): carry = bodyFn(carry) (tgraph.while). A known
  /// `tripCount` lets reverse mode store the iterations.
  std::vector<Tensor> whileLoop(const Function &condFn, const Function &bodyFn,
                                const std::vector<Tensor> &inits,
                                std::optional<int64_t> tripCount = std::nullopt,
                                SourceLoc loc = SourceLoc::current());

  /// x* = body(x*, params...) by iteration from `init` (tgraph.fixed_point),
  /// differentiated implicitly. Values the body captured are params too.
  Tensor fixedPoint(const Function &body, const Tensor &init,
                    const std::vector<Tensor> &params, double tol = 1e-6,
                    int64_t maxIter = 100,
                    SourceLoc loc = SourceLoc::current());
  /// A root of body(x, params...) = 0 by Newton's method (tgraph.solve).
  Tensor solve(const Function &body, const Tensor &init,
               const std::vector<Tensor> &params, double tol = 1e-6,
               int64_t maxIter = 100, SourceLoc loc = SourceLoc::current());

  /// Reverse mode: a function taking `fn`'s arguments and returning the
  /// gradients of its scalar result with respect to arguments `wrt`.
  Result<Function> grad(const Function &fn, const std::vector<int> &wrt,
                        bool isPublic = false);
  /// Reverse mode for any float results: takes `fn`'s arguments, then one
  /// cotangent per float result, and returns the vector-Jacobian products.
  Result<Function> vjp(const Function &fn, const std::vector<int> &wrt,
                       bool isPublic = false);
  /// Forward mode: takes `fn`'s arguments, then one tangent per `wrt`
  /// argument, and returns `fn`'s results followed by their tangents.
  Result<Function> jvp(const Function &fn, const std::vector<int> &wrt,
                       bool isPublic = false);
  /// Hessian-vector product of a scalar function: takes `fn`'s arguments,
  /// then one direction per `wrt` argument.
  Result<Function> hvp(const Function &fn, const std::vector<int> &wrt,
                       bool isPublic = false);

  /// A private function computing `results` (tensors of the running
  /// trace) from `inputs` (tensors of the same trace): the ops between them
  /// are copied, and the other values they read become the function's
  /// captures. How a value already computed is differentiated with respect
  /// to others (graph.backward): outline, then grad.
  Result<Function> outline(const std::vector<Tensor> &results,
                           const std::vector<Tensor> &inputs,
                           const std::string &name = "slice");
  /// Adds an argument to the outermost running trace (a parameter found
  /// while tracing) and returns it.
  Result<Tensor> addArgument(const TensorSpec &spec);

  /// Marks `fn` as an entry point (compiled and callable).
  Status makePublic(const std::string &name);

  /// Where the next ops without a SourceLoc of their own (operators) say
  /// they were written.
  void setLocation(const SourceLoc &loc);
  void setLocation(const std::string &file, int line, int column = 0);

  /// The first error since the last takeError(), if any.
  const std::optional<Error> &error() const;
  std::optional<Error> takeError();
  /// True while a trace is running.
  bool tracing() const;

  /// The module as Graph IR text.
  std::string str() const;
  /// The module's IR after the CPU pipeline has run up to `stage`.
  Result<std::string> lower(Stage stage) const;
  /// The public function `name` after the graph-level pipeline, as data.
  /// `gpuAttention` keeps the attention ops the GPU runs as flash attention
  /// (tgraph::isGpuFlashAttention) instead of expanding them.
  Result<GraphListing> listGraph(const std::string &name,
                                 bool gpuAttention = false) const;
  /// Compiles every public function for `options.target`. On the CPU they
  /// take any sizes of their symbolic dims; on a GPU, each function is
  /// compiled for the sizes of its first call with them (and kept in the
  /// cache directory), as the GPU's host program takes static shapes.
  Result<std::shared_ptr<runtime::Executable>>
  compile(const CompileOptions &options = {}) const;
  /// Compiles one public function for NVIDIA GPUs (--tessera-gpu-pipeline)
  /// into a program the runtime runs without the compiler
  /// (runtime::cuda::HostProgram), which saves as one file.
  Result<runtime::GpuProgramImage>
  compileGPU(const GPUCompileOptions &options = {}) const;
  /// $XDG_CACHE_HOME/tessera, else $HOME/.cache/tessera.
  static std::string defaultCacheDirectory();

  /// For the implementation.
  detail::ModuleState *getState() const { return state.get(); }

private:
  std::unique_ptr<detail::ModuleState> state;
};

} // namespace tessera

#endif // TESSERA_API_MODULE_H
