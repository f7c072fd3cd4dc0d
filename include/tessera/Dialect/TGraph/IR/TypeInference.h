//===- TypeInference.h - Running shape functions on IR ----------*- C++ -*-===//
//
// The bridge between the IR-free shape functions (tessera/Shape) and `tgraph`
// ops: it reads shapes out of tensor types, collects the inferred result
// types, and turns a ShapeDiag error into one diagnostic at the op.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TGRAPH_IR_TYPEINFERENCE_H
#define TESSERA_DIALECT_TGRAPH_IR_TYPEINFERENCE_H

#include "tessera/Shape/ShapeDiag.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"

namespace mlir::tessera::tgraph {

namespace shape = ::tessera::shape;

/// The symbolic shape of a ranked tensor type (from its #tgraph.dims
/// encoding, or its static sizes with `?` for dynamic ones).
shape::TensorShape getShape(Type type);
/// The ranked tensor type of `shape`; the #tgraph.dims encoding is attached
/// only when some dim is symbolic.
RankedTensorType getTensorType(const shape::TensorShape &shape,
                               Type elementType);
/// Element type names as users write them ("f32", "f8E4M3FN").
std::string typeName(Type type);
/// "file.py:12:5" for the first file location inside `loc` (else the
/// location as printed).
std::string describeLocation(Location loc);
/// "'tgraph.add' op at file.py:12:5": how run-time errors name an op.
std::string describeOp(Operation *op);

/// One run of a shape function.
class TypeInference {
public:
  /// `declared` are the op's result types where the IR states them (verifier
  /// and passes); builders leave it empty.
  TypeInference(MLIRContext *context, std::optional<Location> loc,
                StringRef opName, TypeRange declared = {});

  MLIRContext *getContext() const { return context; }
  shape::ShapeDiag &diag() { return shapeDiag; }
  /// Names operands in messages ("lhs (operand 0)").
  void setOperandNames(std::vector<std::string> names);

  /// Declared result type i, or null when not given.
  Type declared(unsigned i) const;
  /// The declared result type i as a ranked tensor, or failure with an error.
  FailureOr<RankedTensorType> requireDeclaredTensor(unsigned i);

  void addResult(const shape::TensorShape &shape, Type elementType);
  /// Adds the result of a shape function, or fails if it failed.
  LogicalResult addResult(const std::optional<shape::TensorShape> &shape,
                          Type elementType);
  void addResult(Type type) { results.push_back(type); }
  ArrayRef<Type> getResults() const { return results; }

  /// Records an error (the first one wins) and returns failure.
  LogicalResult fail(const Twine &message);
  /// failure() if the diag has an error; for `return ti.check(shape)`.
  LogicalResult check(bool ok) { return success(ok && !shapeDiag.failed()); }

  /// Element-type rules shared by many ops.
  LogicalResult
  requireSameElementType(ArrayRef<std::pair<Value, unsigned>> vals);

  /// Finishes a builder-style inference: on failure emits the message at the
  /// location (when there is one); on success copies the result types.
  LogicalResult run(LogicalResult result, SmallVectorImpl<Type> &out);
  /// The message of the recorded error.
  std::string message() const;

private:
  MLIRContext *context;
  std::optional<Location> loc;
  std::string opName;
  SmallVector<Type> declaredTypes;
  SmallVector<Type> results;
  shape::ShapeDiag shapeDiag;
};

/// Verifier shared by all ops with a shape function: runs it against the
/// declared result types and reports the first mismatch.
LogicalResult verifyInferredTypes(Operation *op);
/// Compatibility used by InferTypeOpInterface: equal element types and
/// ranks, and no pair of dims that can never be equal.
bool areCompatibleTypes(TypeRange lhs, TypeRange rhs);
/// True if every value of `from`'s element type converts exactly to `to`'s.
bool isExactWidening(Type from, Type to);
/// True for the fp8 element types.
bool isFloat8(Type elementType);

} // namespace mlir::tessera::tgraph

#endif // TESSERA_DIALECT_TGRAPH_IR_TYPEINFERENCE_H
