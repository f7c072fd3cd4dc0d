//===- ModuleState.h - What a tessera::Module holds -------------*- C++ -*-===//
//
// Private to the C++ API. The module under construction, the stack of
// functions being traced, the values Tensors refer to, and the first error.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LIB_API_MODULESTATE_H
#define TESSERA_LIB_API_MODULESTATE_H

#include "tessera/API/Module.h"
#include "tessera/API/Ops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <set>

namespace tessera::detail {

/// The MLIR type of a dtype and back.
mlir::Type elementType(mlir::MLIRContext *context, DType dtype);
std::optional<DType> dtypeOf(mlir::Type element);

class ModuleState {
public:
  ModuleState();
  ~ModuleState();

  mlir::MLIRContext *getContext() { return &context; }
  /// Replaces the module by the one `text` holds (a snapshot of another
  /// module's IR, with its locations): false when it does not parse.
  bool loadModule(llvm::StringRef text);
  mlir::ModuleOp getModule() { return *module; }
  mlir::OpBuilder &builder() { return b; }

  //===-- Values ----------------------------------------------------------===//

  Tensor wrap(mlir::Value value);
  /// The value of `t` in the function being traced: values of enclosing
  /// traces become extra arguments of the inner functions (captures).
  mlir::Value use(const Tensor &t);
  mlir::Value raw(const Tensor &t) const { return values[t.getId()]; }
  bool isLive(int id) const {
    return id >= 0 && size_t(id) < values.size() && values[id];
  }
  mlir::RankedTensorType typeOf(const Tensor &t) const;
  bool isKey(const Tensor &t) const;
  bool isKVCache(const Tensor &t) const;
  /// The IR type of an argument spec (a tensor or a key).
  mlir::Type argumentType(const TensorSpec &spec);
  /// The tensor type of `shape` and `dtype` (an error for a bad dim).
  mlir::RankedTensorType tensorType(const Shape &shape, DType dtype);
  Shape shapeOf(mlir::Type type) const;

  //===-- Ops -------------------------------------------------------------===//

  /// Sets the location of the ops that follow (a null file keeps the one
  /// set by setLocation()).
  mlir::Location location(SourceLoc loc);
  void setLocation(mlir::Location loc) { current = loc; }
  /// Checks that an op can be added: a trace is running and every operand
  /// is a valid tensor of this module.
  bool ready(std::initializer_list<const Tensor *> operands);
  /// Finishes a new op: runs its shape function (with `declared` result
  /// types where the op's types carry information of their own), sets the
  /// inferred result types and verifies it. On an error the op is erased
  /// and the error recorded.
  bool finish(mlir::Operation *op, llvm::ArrayRef<mlir::Type> declared = {});
  /// finish() and the op's first result.
  Tensor result(mlir::Operation *op, llvm::ArrayRef<mlir::Type> declared = {});

  //===-- Functions -------------------------------------------------------===//

  Result<std::vector<Tensor>> beginTrace(const std::string &name,
                                         const std::vector<TensorSpec> &inputs,
                                         bool isPublic);
  Result<Function> endTrace(const std::vector<Tensor> &results);
  void abortTrace();
  Result<Function> trace(const std::string &name,
                         const std::vector<TensorSpec> &inputs,
                         const Module::Body &body, bool isPublic);
  std::vector<Tensor> call(const Function &fn, const std::vector<Tensor> &args,
                           SourceLoc loc);
  std::vector<Tensor> checkpoint(const Function &fn,
                                 const std::vector<Tensor> &args,
                                 SourceLoc loc);
  std::vector<Tensor> customVjp(const Function &fn, const Function &fwd,
                                const Function &bwd,
                                const std::vector<Tensor> &args, SourceLoc loc);
  std::vector<Tensor> customJvp(const Function &fn, const Function &jvp,
                                const std::vector<Tensor> &args, SourceLoc loc);
  std::vector<Tensor> cond(const Tensor &pred, const Function &thenFn,
                           const Function &elseFn, SourceLoc loc);
  std::vector<Tensor> whileLoop(const Function &condFn, const Function &bodyFn,
                                const std::vector<Tensor> &inits,
                                std::optional<int64_t> tripCount,
                                SourceLoc loc);
  /// Copies `fn`'s body into a new block of `region`: its last
  /// captured.size() arguments become the values `captured` (regions that
  /// see the enclosing function), the others block arguments.
  void copyBody(mlir::Region &region, const Function &fn,
                llvm::ArrayRef<mlir::Value> captured, mlir::Location loc);
  std::optional<llvm::SmallVector<mlir::Value>> capturesOf(const Function &fn,
                                                           mlir::Location loc);
  /// Tensors for the results of `op`.
  std::vector<Tensor> wrapResults(mlir::Operation *op);
  std::vector<Tensor> scan(const Function &fn, const std::vector<Tensor> &inits,
                           const std::vector<Tensor> &xs,
                           std::optional<int64_t> length, bool reverse,
                           SourceLoc loc);
  std::vector<Tensor> vmap(const Function &fn, const std::vector<Tensor> &args,
                           const std::vector<bool> &mapped, SourceLoc loc);
  Tensor solveLike(llvm::StringRef kind, const Function &fn, const Tensor &init,
                   const std::vector<Tensor> &params, double tol,
                   int64_t maxIter, SourceLoc loc);
  Result<Function> derive(const Function &fn, const std::vector<int> &wrt,
                          llvm::StringRef kind, bool isPublic);
  Result<Function> outline(const std::vector<Tensor> &results,
                           const std::vector<Tensor> &inputs,
                           const std::string &name);
  Result<Tensor> addArgument(const TensorSpec &spec);
  Function describeFunction(mlir::func::FuncOp fn) const;
  bool tracing() const { return !frames.empty(); }

  //===-- Errors ----------------------------------------------------------===//

  /// Records `message` (the first error wins) and returns false.
  bool fail(const std::string &message);
  /// fail() with "file:line:col: error: " of `loc` in front.
  bool failAt(mlir::Location loc, const std::string &message);
  std::optional<Error> firstError;
  /// Error diagnostics emitted since clearDiagnostics() (passes, the
  /// compiler), or `fallback` when there were none.
  void clearDiagnostics() { pendingDiagnostic.clear(); }
  std::string takeDiagnostics(const std::string &fallback) {
    std::string text = pendingDiagnostic.empty() ? fallback : pendingDiagnostic;
    pendingDiagnostic.clear();
    return text;
  }

private:
  struct Frame {
    mlir::func::FuncOp fn;
    mlir::OpBuilder::InsertPoint saved;
    ModuleState *outer = nullptr;
    size_t numInputs = 0;
    /// The first entry of `values` made while this frame ran.
    size_t firstValue = 0;
    /// Values of the enclosing frame passed in as extra arguments.
    llvm::SmallVector<mlir::Value> captureSources;
    llvm::DenseMap<mlir::Value, mlir::Value> captured;
  };
  mlir::Value lift(mlir::Value v, size_t frame);
  std::optional<llvm::SmallVector<mlir::Value>>
  callOperands(const Function &fn, const std::vector<Tensor> &args,
               mlir::Location loc);
  bool requireNoCaptures(const Function &fn, mlir::Location loc,
                         const char *role);
  bool verifyRule(mlir::Operation *op);
  std::string uniqueName(const std::string &base);

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::OpBuilder b;
  mlir::Location current;
  std::vector<mlir::Value> values;
  std::vector<Frame> frames;
  /// Diagnostics of ops being finished land here.
  std::string pendingDiagnostic;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
};

/// The Module whose trace runs on this thread (null outside traces).
extern thread_local ModuleState *activeState;

/// The state shared by operands (null, with an error recorded, when they
/// come from different modules).
ModuleState *stateOf(std::initializer_list<const Tensor *> operands);

/// An axis counted from the end when negative.
int64_t normalizeAxis(int64_t axis, int64_t rank);

} // namespace tessera::detail

#endif // TESSERA_LIB_API_MODULESTATE_H
