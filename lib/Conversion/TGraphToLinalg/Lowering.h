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

/// Tensor types lose their #tgraph.dims encoding; a random key becomes its
/// two 32-bit words (tensor<2xi32>); everything else stays.
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

/// convertScalar, but values beyond the target's finite range become its
/// largest (or lowest) finite value, infinities included; NaN stays NaN
/// between floats and becomes 0 as an integer.
Value convertScalarSaturating(OpBuilder &b, Location loc, Value v, Type to);

/// `tensor.dim %v, i`.
Value dimOf(OpBuilder &b, Location loc, Value v, int64_t i);

/// The functions compiled code calls to report an error of the call. Each
/// takes the op's message (a C string) and the values found:
///   tessera_shape_check_failed(const char *, int64_t lhs, int64_t rhs)
///   tessera_not_converged(const char *, int64_t iterations, double change)
///   tessera_failed(const char *) (no values: the message says it all)
/// The runtime turns them into an error of the call; they do not return.
enum class RuntimeHook { ShapeCheckFailed, NotConverged, Failed };

/// Emits, at the insertion point, a call of `hook` taken when `failed` (an
/// i1) holds, with `message` (stored as a global string) and `values`
/// (index values are passed as i64); declares the hook in the module once.
void callHook(OpBuilder &b, Operation *op, Value failed, RuntimeHook hook,
              StringRef message, ValueRange values);

void populateElementwisePatterns(LoweringContext &ctx,
                                 RewritePatternSet &patterns);
void populateContractionPatterns(LoweringContext &ctx,
                                 RewritePatternSet &patterns);
void populateReductionPatterns(LoweringContext &ctx,
                               RewritePatternSet &patterns);
void populateLayoutPatterns(LoweringContext &ctx, RewritePatternSet &patterns);
void populateIndexingPatterns(LoweringContext &ctx,
                              RewritePatternSet &patterns);
void populateRandomPatterns(LoweringContext &ctx, RewritePatternSet &patterns);
/// Gives each stochastic-rounding cast its random key as an attribute
/// (before the conversion copies any bodies).
void stampStochasticKeys(ModuleOp module);
/// KV caches (LowerState.cpp): three buffers per cache.
void populateStatePatterns(LoweringContext &ctx, RewritePatternSet &patterns);
void addStateConversions(TypeConverter &types);
void populateControlFlowPatterns(LoweringContext &ctx,
                                 RewritePatternSet &patterns);

} // namespace mlir::tessera::tgraph::lowering

#endif // TESSERA_LIB_CONVERSION_TGRAPHTOLINALG_LOWERING_H
