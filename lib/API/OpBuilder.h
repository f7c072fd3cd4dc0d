//===- OpBuilder.h - Shared steps of the op functions -----------*- C++ -*-===//
//
// Private to the C++ API.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LIB_API_OPBUILDER_H
#define TESSERA_LIB_API_OPBUILDER_H

#include "ModuleState.h"

#include "tessera/Dialect/TGraph/IR/TGraph.h"

namespace tessera::detail {

/// One op being added: the module, the location and the builder.
struct OpContext {
  ModuleState *state;
  mlir::Location loc;

  mlir::OpBuilder &b() const { return state->builder(); }
  mlir::MLIRContext *ctx() const { return state->getContext(); }
  mlir::Value use(const Tensor &t) const { return state->use(t); }
  Tensor result(mlir::Operation *op,
                llvm::ArrayRef<mlir::Type> declared = {}) const {
    return state->result(op, declared);
  }
  /// `axis` of `x` made non-negative, or an error naming it.
  std::optional<uint64_t> axis(const Tensor &x, int64_t axis,
                               const char *what = "axis") const;
  /// Each of `axes` made non-negative (in the given order), or an error
  /// naming an axis out of range or named twice.
  std::optional<std::vector<int64_t>>
  axisList(const Tensor &x, const std::vector<int64_t> &axes,
           const char *what = "axis") const;
  /// The axes of `x` that `axes` names, sorted (every axis for
  /// Axes()), or an error as axisList's.
  std::optional<std::vector<int64_t>> axes(const Tensor &x,
                                           const op::Axes &axes) const;
  /// For ops with no value over nothing (the maximum of an empty axis, the
  /// softmax of no classes): an error if one of `axes` of `x` has static
  /// size 0, else a run-time check (`tgraph.assert_dim le 1, count`) when
  /// any is symbolic. "<opName> over an empty axis: ... the <what> of
  /// nothing is undefined".
  bool requireElements(const Tensor &x, llvm::ArrayRef<int64_t> axes,
                       const char *opName, const char *what) const;
  /// The attribute of `value` for a tensor of `dtype`.
  mlir::TypedAttr scalarAttr(double value, DType dtype) const;
  mlir::tessera::tgraph::PolicyAttr policy(const op::Policy &p) const;
};

/// Starts an op on `operands` (null entries are absent optional operands):
/// nothing (and no new error) when an operand is invalid.
std::optional<OpContext> begin(std::initializer_list<const Tensor *> operands,
                               SourceLoc where);

} // namespace tessera::detail

#endif // TESSERA_LIB_API_OPBUILDER_H
