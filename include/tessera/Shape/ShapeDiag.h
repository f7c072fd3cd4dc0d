//===- ShapeDiag.h - Shape checking results and messages --------*- C++ -*-===//
//
// Shape functions report through a ShapeDiag: the first error (a dimension
// pair that can never be equal, a bad attribute) and the run-time checks that
// remain when equality depends on symbol values (S vs T). The texts are the
// ones users see, from the compiler and from the Python tracer alike, so they
// name operand positions, dimensions and symbols.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_SHAPE_SHAPEDIAG_H
#define TESSERA_SHAPE_SHAPEDIAG_H

#include "tessera/Shape/DimExpr.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <string>
#include <vector>

namespace tessera::shape {

/// A ranked tensor shape: one DimExpr per dimension.
struct TensorShape {
  std::vector<DimExpr> dims;

  TensorShape() = default;
  explicit TensorShape(std::vector<DimExpr> dims) : dims(std::move(dims)) {}
  static TensorShape ofConstants(llvm::ArrayRef<int64_t> sizes);

  size_t rank() const { return dims.size(); }
  /// `[B, 2*S, 64]`.
  std::string str() const;
  /// Product of all dims (1 for rank 0).
  DimExpr numElements() const;
};

/// A dimension of an operand (`operand` >= 0) or of the result being
/// inferred (`operand` == -1), for messages and run-time guards.
struct DimRef {
  int operand = -1;
  int dim = -1;
};

/// What a run-time dimension check requires of its two sides.
enum class DimRelation {
  /// lhs == rhs
  Equal,
  /// lhs == rhs or lhs == 1 (lhs is broadcast)
  EqualOrOne,
  /// lhs is a multiple of rhs
  Divisible,
  /// lhs <= rhs (a slice bound inside its dim, a non-empty reduction)
  LessEqual,
};

/// One side of a run-time check: `factor` times the product of the operand
/// dims in `refs`, or, without refs, the expression over the function's
/// symbols.
struct DimSide {
  DimExpr expr;
  std::string label;
  std::vector<DimRef> refs;
  int64_t factor = 1;
};

/// A relation between two dims that must hold at run time.
struct DimConstraint {
  DimRelation relation = DimRelation::Equal;
  DimExpr lhs, rhs;
  std::vector<DimRef> lhsRefs, rhsRefs;
  int64_t lhsFactor = 1, rhsFactor = 1;
  std::string message;
};

/// Collects the outcome of one shape function.
class ShapeDiag {
public:
  /// `operandNames[i]` names operand i in messages ("lhs", "input").
  explicit ShapeDiag(std::vector<std::string> operandNames = {})
      : operandNames(std::move(operandNames)) {}

  /// "lhs (operand 0)" or "operand 0".
  std::string operandLabel(unsigned operand) const;
  /// "lhs (operand 0) dim 1".
  std::string dimLabel(unsigned operand, unsigned dim) const;

  /// Records an error (only the first is kept). Returns std::nullopt so shape
  /// functions can `return diag.error(...)`.
  std::nullopt_t error(std::string message);
  bool failed() const { return firstError.has_value(); }
  const std::string &message() const { return *firstError; }

  /// Requires dims `a` and `b` to be equal. Returns the unified dimension
  /// (the more specific one), records an error if they can never be equal,
  /// and a run-time constraint if that depends on symbol values. `what`
  /// opens the message ("contracting dimensions differ").
  std::optional<DimExpr> unify(const DimExpr &a, const std::string &aLabel,
                               std::vector<DimRef> aRefs, const DimExpr &b,
                               const std::string &bLabel,
                               std::vector<DimRef> bRefs,
                               const std::string &what);
  /// unify() with sides that may be scaled operand dims.
  std::optional<DimExpr> unify(DimSide a, DimSide b, const std::string &what);
  /// Requires `a` to be `b` or 1 (broadcast_in_dim's rule); returns b.
  std::optional<DimExpr> requireEqualOrOne(DimSide a, DimSide b,
                                           const std::string &what);
  /// Requires `a` to be a multiple of the positive constant `n`.
  bool requireDivisible(DimSide a, int64_t n, const std::string &what);
  /// Requires `a <= b`: an error if that fails for every value of the
  /// symbols, a run-time constraint if it depends on them. `what` opens the
  /// message ("slice of dim 1").
  bool requireLessEqual(DimSide a, DimSide b, const std::string &what);

  /// unify() of dimension `ad` of operand `ao` with dimension `bd` of `bo`.
  std::optional<DimExpr> unifyOperandDims(const TensorShape &a, unsigned ao,
                                          unsigned ad, const TensorShape &b,
                                          unsigned bo, unsigned bd,
                                          const std::string &what);

  /// Records `lhs == rhs` as a run-time constraint.
  void addConstraint(DimConstraint c) { runtime.push_back(std::move(c)); }
  const std::vector<DimConstraint> &constraints() const { return runtime; }

private:
  std::nullopt_t neverEqual(const DimSide &a, const DimSide &b,
                            const std::string &what);

  std::vector<std::string> operandNames;
  std::optional<std::string> firstError;
  std::vector<DimConstraint> runtime;
};

/// "D" / "D and H" / "B, S and T": the symbols of the expressions.
std::string describeSymbols(llvm::ArrayRef<DimExpr> exprs);

/// "1 entry", "3 entries".
std::string countOf(size_t n, const char *singular, const char *plural);

/// A double as users write it: "1e-05", "-0.5", "inf".
std::string formatNumber(double value);

} // namespace tessera::shape

#endif // TESSERA_SHAPE_SHAPEDIAG_H
