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

#endif // TESSERA_TGRAPH_INTERFACES
