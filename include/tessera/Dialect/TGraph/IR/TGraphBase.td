//===- TGraphBase.td - Graph IR dialect and base classes ---*- tablegen -*-===//

#ifndef TESSERA_TGRAPH_BASE
#define TESSERA_TGRAPH_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def TGraph_Dialect : Dialect {
  let name = "tgraph";
  let summary = "Tessera's Graph IR: tensor programs with symbolic shapes";
  let description = [{
    The Graph IR is the contract between Tessera's front ends and back ends.
    Values are ranked tensors whose dimensions are constants, named symbols
    or expressions of symbols, written as a tensor encoding:

    ```mlir
    func.func @mlp(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
                   %w: tensor<64x?xf32, #tgraph.dims<[64, H]>>)
        -> tensor<?x?xf32, #tgraph.dims<[B, H]>> {
      %y = tgraph.matmul %x, %w : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
          tensor<64x?xf32, #tgraph.dims<[64, H]>>)
          -> tensor<?x?xf32, #tgraph.dims<[B, H]>>
      func.return %y : tensor<?x?xf32, #tgraph.dims<[B, H]>>
    }
    ```

    Every op carries its shape rule (a plain C++ shape function), so
    mismatched dimensions are reported where the op is written, naming the
    operands, the dimensions and the symbols.
  }];
  let cppNamespace = "::mlir::tessera::tgraph";
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasCanonicalizer = 0;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

//===----------------------------------------------------------------------===//
// Element types and tensor constraints
//===----------------------------------------------------------------------===//

def TGraph_FloatElement : AnyTypeOf<[F64, F32, TF32, BF16, F16, F8E4M3FN,
                                     F8E5M2], "floating-point element type">;
def TGraph_IntElement : AnyTypeOf<[I<4>, I8, I16, I32, I64],
                                  "integer element type">;
def TGraph_NumericElement : AnyTypeOf<[TGraph_FloatElement, TGraph_IntElement],
                                      "numeric element type">;
def TGraph_ElementType : AnyTypeOf<[TGraph_NumericElement, I1],
                                   "Tessera element type">;

def TGraph_Tensor : RankedTensorOf<[TGraph_ElementType]>;
def TGraph_FloatTensor : RankedTensorOf<[TGraph_FloatElement]>;
def TGraph_NumericTensor : RankedTensorOf<[TGraph_NumericElement]>;
def TGraph_IntTensor : RankedTensorOf<[TGraph_IntElement]>;
def TGraph_IndexTensor : RankedTensorOf<[I32, I64]>;
def TGraph_PredTensor : RankedTensorOf<[I1]>;
def TGraph_ScalarPred : 0DTensorOf<[I1]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getI1Type())";
}
def TGraph_ScalarIndex : 0DTensorOf<[I32, I64]>;

#endif // TESSERA_TGRAPH_BASE
