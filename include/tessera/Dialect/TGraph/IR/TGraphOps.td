//===- TGraphOps.td - Graph IR operations ------------------*- tablegen -*-===//
//
// The ops are grouped by family, one file each, in the order the autodiff
// rules and shape functions follow.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TGRAPH_OPS
#define TESSERA_TGRAPH_OPS

include "tessera/Dialect/TGraph/IR/TGraphTypeDefs.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "tessera/Dialect/TGraph/IR/TGraphInterfaces.td"

/// Ops with their own jvp and vjp rules (TGraphAutodiff.cpp).
defvar TGraph_Differentiable =
    DeclareOpInterfaceMethods<TGraph_DifferentiableOpInterface, ["jvp", "vjp"]>;

class TGraph_Op<string mnemonic, list<Trait> traits = []>
    : Op<TGraph_Dialect, mnemonic, traits>;

/// An op with a shape function (see ShapeInferenceOpInterface). Its result
/// types may carry information the operands do not (the target shape of a
/// reshape, the element type of a matmul), so they are always written out.
class TGraph_ShapedOp<string mnemonic, list<Trait> traits = []>
    : TGraph_Op<mnemonic, traits # [TGraph_ShapeInferenceOpInterface]> {
  code shapeDecl = [{
    /// The shape function (see ShapeInferenceOpInterface).
    static ::llvm::LogicalResult inferTypes(
        ::mlir::tessera::tgraph::TypeInference &ti, Adaptor adaptor);
  }];
  let extraClassDeclaration = shapeDecl;
}

/// A shaped op whose result has the type of its operands; ODS generates the
/// InferTypeOpInterface hook.
class TGraph_SameTypeOp<string mnemonic, list<Trait> traits = []>
    : TGraph_ShapedOp<mnemonic,
          traits # [SameOperandsAndResultType, InferTypeOpInterface]>;

/// A shaped op whose result types follow from operands, attributes and
/// regions alone, so builders (and the C++ and Python front ends) can create
/// it without stating result types.
class TGraph_InferOp<string mnemonic, list<Trait> traits = []>
    : TGraph_ShapedOp<mnemonic, traits # [InferTypeOpInterface]> {
  let extraClassDeclaration = shapeDecl # [{
    static ::llvm::LogicalResult inferReturnTypes(::mlir::MLIRContext *context,
        ::std::optional<::mlir::Location> location, ::mlir::ValueRange operands,
        ::mlir::DictionaryAttr attributes, ::mlir::OpaqueProperties properties,
        ::mlir::RegionRange regions,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
      Adaptor adaptor(operands, attributes, properties, regions);
      ::mlir::tessera::tgraph::TypeInference ti(context, location,
                                                getOperationName());
      return ti.run(inferTypes(ti, adaptor), inferredReturnTypes);
    }
    /// Shapes are checked by the verifier with precise messages; here `?`
    /// and symbolic dims that may be equal count as compatible.
    static bool isCompatibleReturnTypes(::mlir::TypeRange lhs,
                                        ::mlir::TypeRange rhs) {
      return ::mlir::tessera::tgraph::areCompatibleTypes(lhs, rhs);
    }
  }];
}

/// The common type syntax, `custom<OpTypes>(type($a), type($b), type($r))`:
/// `: T` when every operand and the result have type T, else
/// `: (T0, T1) -> R` (or `: T0 -> R` for one operand).

include "tessera/Dialect/TGraph/IR/TGraphElementwiseOps.td"
include "tessera/Dialect/TGraph/IR/TGraphContractionOps.td"
include "tessera/Dialect/TGraph/IR/TGraphReductionOps.td"
include "tessera/Dialect/TGraph/IR/TGraphLayoutOps.td"
include "tessera/Dialect/TGraph/IR/TGraphControlFlowOps.td"
include "tessera/Dialect/TGraph/IR/TGraphEffectOps.td"
include "tessera/Dialect/TGraph/IR/TGraphAutodiffOps.td"

#endif // TESSERA_TGRAPH_OPS
