//===- TGraphAttrDefs.td - Graph IR attributes and enums ---*- tablegen -*-===//

#ifndef TESSERA_TGRAPH_ATTRDEFS
#define TESSERA_TGRAPH_ATTRDEFS

include "tessera/Dialect/TGraph/IR/TGraphBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/TensorEncoding.td"

class TGraph_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<TGraph_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def TGraph_DimsAttr : TGraph_Attr<"Dims", "dims",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "symbolic dimensions of a tensor";
  let description = [{
    A list of dimension expressions: integers, symbols (`B`, `S_max`), `?`, or
    quoted expressions of symbols (`"2*S"`, `"B*H"`, `"D/H"`, `"S-1"`; `/` is
    floor division). As a tensor encoding it names the dims that the builtin
    shape writes as `?`; constant entries must match the static sizes:

    ```mlir
    tensor<?x?x64xf32, #tgraph.dims<[B, "2*S", 64]>>
    ```

    The same attribute gives symbolic operands to ops such as `tgraph.slice`.
    Expressions are stored in canonical form, so equal dimensions print the
    same.
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::StringAttr", "">:$exprs);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::llvm::ArrayRef<::tessera::shape::DimExpr>":$dims)>
  ];
  let extraClassDeclaration = [{
    /// The dimensions, parsed from their canonical text.
    std::vector<::tessera::shape::DimExpr> getDims() const;
    size_t size() const { return getExprs().size(); }
  }];
}

def TGraph_PolicyAttr : TGraph_Attr<"Policy", "policy"> {
  let summary = "numeric policy of an op";
  let description = [{
    How an op computes, beyond its storage dtypes: `accum = f32|bf16` (the
    accumulation type of contractions and reductions), `stochastic_round`
    (round to the narrower result type stochastically), `loss_scale = k` (the
    op produces a loss whose gradient is scaled by k), `saturate` (clamp to
    the finite range of the result type instead of producing inf/wrap):

    ```mlir
    %c = tgraph.matmul %a, %b {policy = #tgraph.policy<accum = f32>}
        : (tensor<64x64xf8E4M3FN>, tensor<64x64xf8E4M3FN>) -> tensor<64x64xbf16>
    ```
  }];
  let parameters = (ins OptionalParameter<"::mlir::Type">:$accum,
                        "bool":$stochasticRound,
                        OptionalParameter<"::mlir::FloatAttr">:$lossScale,
                        "bool":$saturate);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def TGraph_CompareDirection : I32EnumAttr<"CompareDirection",
    "elementwise comparison", [
      I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::mlir::tessera::tgraph";
  let genSpecializedAttr = 0;
}
def TGraph_CompareDirectionAttr
    : EnumAttr<TGraph_Dialect, TGraph_CompareDirection, "compare">;

def TGraph_ReductionKind : I32EnumAttr<"ReductionKind",
    "reduction applied by a collective", [
      I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"prod", 1>,
      I32EnumAttrCase<"min", 2>, I32EnumAttrCase<"max", 3>,
      I32EnumAttrCase<"mean", 4>]> {
  let cppNamespace = "::mlir::tessera::tgraph";
  let genSpecializedAttr = 0;
}
def TGraph_ReductionKindAttr
    : EnumAttr<TGraph_Dialect, TGraph_ReductionKind, "reduction">;

def TGraph_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss combines its per-example values", [
      I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"sum", 1>,
      I32EnumAttrCase<"mean", 2>]> {
  let cppNamespace = "::mlir::tessera::tgraph";
  let genSpecializedAttr = 0;
}
def TGraph_LossReductionAttr
    : EnumAttr<TGraph_Dialect, TGraph_LossReduction, "loss_reduction">;

def TGraph_DimRelation : I32EnumAttr<"DimRelation",
    "relation a run-time dimension check requires", [
      I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"eq_or_one", 1>,
      I32EnumAttrCase<"divisible", 2>, I32EnumAttrCase<"le", 3>]> {
  let cppNamespace = "::mlir::tessera::tgraph";
  let genSpecializedAttr = 0;
}
def TGraph_DimRelationAttr
    : EnumAttr<TGraph_Dialect, TGraph_DimRelation, "dim_relation">;

def TGraph_ConvLayout : I32EnumAttr<"ConvLayout",
    "data layout of a convolution", [
      I32EnumAttrCase<"nchw", 0>, I32EnumAttrCase<"nhwc", 1>]> {
  let cppNamespace = "::mlir::tessera::tgraph";
  let genSpecializedAttr = 0;
}
def TGraph_ConvLayoutAttr
    : EnumAttr<TGraph_Dialect, TGraph_ConvLayout, "conv_layout">;

#endif // TESSERA_TGRAPH_ATTRDEFS
