//===- TGraphInterfaces.td - Graph IR op interfaces --------*- tablegen -*-===//

#ifndef TESSERA_TGRAPH_INTERFACES
#define TESSERA_TGRAPH_INTERFACES

include "mlir/IR/OpBase.td"

def TGraph_ShapeInferenceOpInterface
    : OpInterface<"ShapeInferenceOpInterface"> {
  let description = [{
    An op whose result types follow from a shape function of its operands,
    attributes, regions and (where the IR states them, as the target shape of
    a reshape) its declared result types. The op's verifier runs the shape
    function and reports the first mismatch; -tessera-tgraph-infer-shapes
    calls it to refine `?` dimensions and to insert run-time checks.
  }];
  let cppNamespace = "::mlir::tessera::tgraph";
  let methods = [
    InterfaceMethod<[{
        Runs the op's shape function. Declared result types known to `ti`
        take part in the inference; the inferred types are left in `ti`.
      }], "::llvm::LogicalResult", "inferResultTypes",
      (ins "::mlir::tessera::tgraph::TypeInference &":$ti), [{}], [{
        typename ConcreteOp::Adaptor adaptor(::llvm::cast<ConcreteOp>($_op));
        return ConcreteOp::inferTypes(ti, adaptor);
      }]>,
  ];
  let verify = [{
    return ::mlir::tessera::tgraph::verifyInferredTypes($_op);
  }];
}


def TGraph_DifferentiableOpInterface
    : OpInterface<"DifferentiableOpInterface"> {
  let description = [{
    An op with differentiation rules (TGraphAutodiff.cpp, in the order of
    the .td files). Both rules run in the function being built, with the op
    there (its operands and results are the primal values) and the builder
    after it; a null Value stands for a zero tangent or cotangent, and only
    floating-point values carry them. Elementwise unary ops only define
    `Value derivative(ADBuilder &)` (null for a zero derivative); the
    default rules multiply by it.
  }];
  let cppNamespace = "::mlir::tessera::tgraph";
  let methods = [
    InterfaceMethod<[{
        Forward mode: `tangents` has one entry per operand; fills
        `resultTangents` with one per result.
      }], "::llvm::LogicalResult", "jvp",
      (ins "::mlir::tessera::tgraph::ADBuilder &":$ad,
           "::llvm::ArrayRef<::mlir::Value>":$tangents,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$resultTangents), [{}], [{
        // Elementwise unary ops: the derivative times the tangent.
        resultTangents.push_back(::mlir::tessera::tgraph::timesDerivative(
            ad, $_op, tangents.front()));
        return ::mlir::success();
      }]>,
    InterfaceMethod<[{
        Reverse mode: `cotangents` has one entry per result; fills
        `operandCotangents` with one per operand, in the operand's type.
      }], "::llvm::LogicalResult", "vjp",
      (ins "::mlir::tessera::tgraph::ADBuilder &":$ad,
           "::llvm::ArrayRef<::mlir::Value>":$cotangents,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandCotangents),
      [{}], [{
        // Elementwise unary ops: the derivative times the cotangent.
        operandCotangents.push_back(::mlir::tessera::tgraph::timesDerivative(
            ad, $_op, cotangents.front()));
        return ::mlir::success();
      }]>,
  ];
}

/// Autodiff policy for ops whose results do not depend differentiably on
/// their operands (comparisons, arg-reductions, integer generators, random
/// numbers, floor and sign): their results are constants to autodiff, with
/// zero tangents, and no cotangent flows back through them.
def TGraph_NonDifferentiable : NativeOpTrait<"NonDifferentiable"> {
  let cppNamespace = "::mlir::tessera::tgraph";
}

#endif // TESSERA_TGRAPH_INTERFACES
