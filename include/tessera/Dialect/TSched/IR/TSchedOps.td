//===- TSchedOps.td - Schedule IR ops ----------------------*- tablegen -*-===//
//
// Fusion groups: the unit a GPU kernel computes. The GPU pipeline groups
// the ops of a Graph IR function (after autodiff and decomposition) into
// `tsched.group` ops, each of which becomes one kernel launch.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TSCHED_OPS
#define TESSERA_TSCHED_OPS

include "tessera/Dialect/TSched/IR/TSchedBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def TSched_GroupKind : I32EnumAttr<"GroupKind", "what a fusion group computes", [
    I32EnumAttrCase<"Row", 0, "row">,
    I32EnumAttrCase<"Contraction", 1, "contraction">,
    I32EnumAttrCase<"Attention", 2, "attention">,
    I32EnumAttrCase<"Layout", 3, "layout">,
    I32EnumAttrCase<"Reduction", 4, "reduction">,
    I32EnumAttrCase<"Single", 5, "single">,
  ]> {
  let cppNamespace = "::mlir::tessera::tsched";
}

class TSched_Op<string mnemonic, list<Trait> traits = []>
    : Op<TSched_Dialect, mnemonic, traits>;

def TSched_GroupOp : TSched_Op<"group", [
    IsolatedFromAbove, RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Ops that one GPU kernel computes together";
  let description = [{
    The body holds Graph IR ops that run as one kernel: its block arguments
    are the group's inputs (read from memory), what it yields its outputs
    (written to memory). Values the body computes and does not yield stay
    in registers or shared memory.

    `kind` says which kernel family computes it:
    - `row`: elementwise ops, reductions along the last dim and broadcasts
      back along it, on one `[R, C]` layout (`layout = [R, C]`): each
      program holds whole rows, so row statistics (a layernorm's mean and
      variance, a softmax's maximum and sum) never leave it. Every value is
      a full `[R, C]` tile, a row (`[R]` or `[R, 1]`), a column (`[C]`) or
      a scalar of it.
    - `contraction`: a matrix product and its epilogue (elementwise ops of
      its `[M, N]` result with rows, columns and scalars: bias, activation,
      residual), `layout = [M, N]`.
    - `attention`: a fused attention forward or backward.
    - `layout`: a transpose, slice, concat, pad or a broadcast that must be
      written out.
    - `reduction`: a reduction over leading dims or over all of a tensor.
    - `single`: one op of its own kernel (a stdlib kernel).

    ```mlir
    %y = tsched.group row [32, 100] (%x, %s) : (tensor<32x100xf32>,
        tensor<100xf32>) -> tensor<32x100xf32> {
    ^bb0(%a: tensor<32x100xf32>, %b: tensor<100xf32>):
      %0 = tgraph.mul %a, %b : (tensor<32x100xf32>, tensor<100xf32>) -> tensor<32x100xf32>
      tsched.yield %0 : tensor<32x100xf32>
    }
    ```
  }];
  let arguments = (ins TSched_GroupKind:$kind,
                       OptionalAttr<DenseI64ArrayAttr>:$layout,
                       Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind custom<GroupLayout>($layout) `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "GroupKind":$kind, "::mlir::DenseI64ArrayAttr":$layout,
                   "::mlir::ValueRange":$inputs,
                   "::mlir::TypeRange":$resultTypes)>
  ];
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

def TSched_YieldOp : TSched_Op<"yield", [Pure, Terminator, ReturnLike,
                                         HasParent<"GroupOp">]> {
  let summary = "The outputs of a fusion group";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
}

#endif // TESSERA_TSCHED_OPS
