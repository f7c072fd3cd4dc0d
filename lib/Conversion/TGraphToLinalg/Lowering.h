//===- Lowering.h - Shared pieces of the tgraph-to-linalg lowering -*- C++
//-*-===//
//
// Internal to lib/Conversion/TGraphToLinalg: the type converter, the symbol
// environment (run-time values of each function's shape symbols), and the
// helpers the per-family pattern files share.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LIB_CONVERSION_TGRAPHTOLINALG_LOWERING_H
#define TESSERA_LIB_CONVERSION_TGRAPHTOLINALG_LOWERING_H

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tessera::tgraph::lowering {

/// Tensor types lose their #tgraph.dims encoding; everything else stays.
class TGraphTypeConverter : public TypeConverter {
public:
  TGraphTypeConverter();
};

/// The run-time value of every shape symbol, per function: a `tgraph.dim`
/// of the first argument dim that is exactly that symbol, created at the
/// function's entry before the conversion starts.
class SymbolEnv {
public:
  void build(func::FuncOp fn);
  /// The value of `name` in the function enclosing `op`, or failure with a
  /// diagnostic at `op`.
  FailureOr<Value> lookup(Operation *op, StringRef name) const;

private:
  DenseMap<Operation *, llvm::StringMap<Value>> perFunction;
};

/// Everything a pattern needs besides its op.
struct LoweringContext {
  const TypeConverter &types;
  const SymbolEnv &symbols;
};

/// The sizes of the dynamic dims of `type`, whose symbolic shape is
/// `shape` (from the original, encoded type), computed from the symbols.
FailureOr<SmallVector<Value>>
dynamicSizes(OpBuilder &b, Operation *op,
             const ::tessera::shape::TensorShape &shape, RankedTensorType type,
             const SymbolEnv &symbols);

/// `tensor.empty` of `type` with the given dynamic sizes.
Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                  ValueRange dynamicSizes);

/// `linalg.fill` of a new tensor of `type` with the scalar `value`.
Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   ValueRange dynamicSizes, Value value);

/// A scalar constant of `type` (float or integer).
Value scalarConstant(OpBuilder &b, Location loc, Type type, double value);

/// Converts a scalar between element types with tgraph.cast's rules (float
/// rounding to nearest even, float to integer toward zero, i1 as 0/1).
Value convertScalar(OpBuilder &b, Location loc, Value v, Type to);

/// `tensor.dim %v, i`.
Value dimOf(OpBuilder &b, Location loc, Value v, int64_t i);

void populateElementwisePatterns(LoweringContext &ctx,
                                 RewritePatternSet &patterns);
void populateContractionPatterns(LoweringContext &ctx,
                                 RewritePatternSet &patterns);
void populateReductionPatterns(LoweringContext &ctx,
                               RewritePatternSet &patterns);
void populateLayoutPatterns(LoweringContext &ctx, RewritePatternSet &patterns);

} // namespace mlir::tessera::tgraph::lowering

#endif // TESSERA_LIB_CONVERSION_TGRAPHTOLINALG_LOWERING_H
