//===- Autodiff.h - Building derivative code for Graph IR -------*- C++ -*-===//
//
// ADBuilder is what differentiation rules (TGraphAutodiff.cpp) build with:
// Graph IR ops at one location, with result types from the ops' shape
// functions, plus the shape plumbing every rule needs (summing a cotangent
// over broadcast dims, broadcasting a reduced value back). A null Value is
// a zero tangent or cotangent throughout.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TGRAPH_IR_AUTODIFF_H
#define TESSERA_DIALECT_TGRAPH_IR_AUTODIFF_H

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::tessera::tgraph {

/// The argument attribute naming a function argument for `wrt(%name)`.
constexpr llvm::StringLiteral kArgNameAttr = "tgraph.name";
/// An argument's name for wrt(...): its `tgraph.name`, else `argN`.
std::string argumentName(FunctionOpInterface fn, unsigned i);
/// The positions of the arguments `names` of `fn` (floating-point tensors,
/// each named once); errors are reported at `op`.
FailureOr<SmallVector<unsigned>>
resolveArguments(Operation *op, FunctionOpInterface fn, ArrayAttr names);

class ADBuilder {
public:
  ADBuilder(OpBuilder &builder, Location loc) : b(builder), loc(loc) {}

  OpBuilder &builder() { return b; }
  Location getLoc() const { return loc; }
  void setLoc(Location l) { loc = l; }

  static Type elementOf(Value v) { return getElementTypeOrSelf(v.getType()); }
  static RankedTensorType typeOf(Value v) {
    return llvm::cast<RankedTensorType>(v.getType());
  }
  /// Whether `v` carries derivatives (a floating-point tensor).
  static bool isDifferentiable(Value v);
  /// Whether values of element type `t` carry (co)tangents: the Graph IR's
  /// float types.
  static bool isDifferentiableElement(Type t);

  /// A 0-d constant of `element` (broadcasts against anything).
  Value scalar(Type element, double v);
  Value scalarLike(Value x, double v) { return scalar(elementOf(x), v); }
  Value zerosLike(Value x);

  Value add(Value x, Value y);
  Value sub(Value x, Value y);
  Value mul(Value x, Value y);
  Value div(Value x, Value y);
  Value neg(Value x);
  Value exp(Value x);
  Value log(Value x);
  Value sin(Value x);
  Value cos(Value x);
  Value tanh(Value x);
  Value sigmoid(Value x);
  Value sqrt(Value x);
  Value square(Value x);
  Value sign(Value x);
  Value pow(Value x, Value y);
  Value compare(CompareDirection d, Value x, Value y);
  Value select(Value c, Value x, Value y);
  /// `x` converted to `element` (itself if it has that type).
  Value convert(Value x, Type element);
  /// A 0/1 tensor of `like`'s element type from a predicate.
  Value indicator(Value predicate, Value like);

  Value reduceSum(Value x, ArrayRef<int64_t> dims, bool keep);
  Value softmax(Value x, int64_t dim);
  Value softmaxSafe(Value x, int64_t dim);
  Value transpose(Value x, ArrayRef<int64_t> permutation);
  Value reshape(Value x, RankedTensorType type);
  Value matmul(Value lhs, Value rhs, bool transposeLhs, bool transposeRhs,
               PolicyAttr policy);

  /// x + y where either may be null (zero).
  Value accumulate(Value x, Value y);
  /// A tangent of a broadcasting operand, broadcast NumPy-style (aligned on
  /// the right) to the shape of `like` (the op's result).
  Value broadcastLike(Value t, Value like);
  /// A cotangent of a broadcast result summed back to `target`'s shape: over
  /// the leading dims `target` lacks and the dims where it has size 1.
  Value unbroadcast(Value ct, Type target);
  /// The result of a reduction over `dims` of `x` (kept as size 1 or not),
  /// broadcast back to `x`'s shape.
  Value expandReduced(Value reduced, Value x, ArrayRef<int64_t> dims,
                      bool keep);
  /// The number of elements of `x` over `dims` (a 0-d tensor of `x`'s
  /// element type; symbolic dims are read at run time).
  Value count(Value x, ArrayRef<int64_t> dims);

  /// Creates an op whose builder needs result types, with the types its
  /// shape function infers from the operands.
  template <typename OpTy, typename... Args>
  Value inferred(Type placeholder, Args &&...args) {
    auto op = OpTy::create(b, loc, placeholder, std::forward<Args>(args)...);
    return finishInferred(op.getOperation());
  }

private:
  Value finishInferred(Operation *op);

  OpBuilder &b;
  Location loc;
};

template <typename OpTy>
Value timesDerivative(ADBuilder &ad, OpTy op, Value t) {
  if (!t)
    return {};
  Value d = op.derivative(ad);
  return d ? ad.mul(d, t) : Value();
}

} // namespace mlir::tessera::tgraph

#endif // TESSERA_DIALECT_TGRAPH_IR_AUTODIFF_H
