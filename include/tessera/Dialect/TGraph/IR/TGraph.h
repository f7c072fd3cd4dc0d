//===- TGraph.h - Tessera Graph IR dialect ----------------------*- C++ -*-===//
//
// Everything needed to build, inspect and transform `tgraph` IR.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TGRAPH_IR_TGRAPH_H
#define TESSERA_DIALECT_TGRAPH_IR_TGRAPH_H

#include "tessera/Shape/DimExpr.h"
#include "tessera/Shape/ShapeFunctions.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TensorEncoding.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tessera/Dialect/TGraph/IR/TGraphEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/TGraph/IR/TGraphAttrDefs.h.inc"

#include "tessera/Dialect/TGraph/IR/TGraphOpsDialect.h.inc"

namespace mlir::tessera::tgraph {
/// `[B, "2*S", 64, ?]`: the dimension list syntax of #tgraph.dims.
FailureOr<DimsAttr> parseDimExprList(AsmParser &parser);
void printDimExprList(AsmPrinter &printer, DimsAttr dims);
} // namespace mlir::tessera::tgraph

#define GET_TYPEDEF_CLASSES
#include "tessera/Dialect/TGraph/IR/TGraphOpsTypes.h.inc"

#include "tessera/Dialect/TGraph/IR/TypeInference.h"

namespace mlir::tessera::tgraph {
class ADBuilder;

/// See TGraph_NonDifferentiable.
template <typename ConcreteType>
class NonDifferentiable
    : public OpTrait::TraitBase<ConcreteType, NonDifferentiable> {};

/// `(d/dx op)(x) * t` for an elementwise unary op (null when `t` or the
/// derivative is zero); emits the derivative only for a nonzero `t`.
template <typename OpTy> Value timesDerivative(ADBuilder &ad, OpTy op, Value t);
} // namespace mlir::tessera::tgraph

#include "tessera/Dialect/TGraph/IR/TGraphInterfaces.h.inc"

#define GET_OP_CLASSES
#include "tessera/Dialect/TGraph/IR/TGraphOps.h.inc"

#include "tessera/Dialect/TGraph/IR/Autodiff.h"

namespace mlir::tessera::tgraph {
/// Checks the parts of a numeric `policy` that apply to an op computing in
/// `computeType` and storing `resultType`; `scalarResult` says the op
/// produces a scalar loss (so loss_scale is meaningful).
LogicalResult checkComputePolicy(TypeInference &ti, PolicyAttr policy,
                                 Type computeType, Type resultType,
                                 bool scalarResult);
/// Result types of a call to a function of type `callee` with arguments of
/// `args` types: the callee's shape symbols bind to the argument dims and
/// are substituted into its result types.
LogicalResult inferCallResults(TypeInference &ti, FunctionType callee,
                               TypeRange args);

/// The accumulation type alone of `policy` (null without one): what the
/// products a composite expands into take, whose results are in that type
/// (rounding and loss scaling apply to the composite's own result).
PolicyAttr accumulationPart(PolicyAttr policy);
/// The scale of an attention: `scale` if set, else 1/sqrt(D) of the query's
/// last dim (nothing when that dim is not static).
std::optional<double> attentionScale(Value query, std::optional<APFloat> scale);
/// Attention's probabilities `softmax(q k^T * scale)`, causal-masked so that
/// query i sees keys j <= i + (Sk - Sq), computed in `compute` with
/// `policy`'s accumulation type on the product: what the decompositions of
/// attention and attention_grad and attention's forward-mode rule build. Fails
/// with `why` set when the mask needs lengths that are not known.
FailureOr<Value> buildAttentionProbabilities(OpBuilder &b, Location loc,
                                             Value query, Value key,
                                             bool causal, double scale,
                                             Type compute, PolicyAttr policy,
                                             std::string &why);
} // namespace mlir::tessera::tgraph

#endif // TESSERA_DIALECT_TGRAPH_IR_TGRAPH_H
