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
include "mlir/IR/SymbolInterfaces.td"
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

//===----------------------------------------------------------------------===//
// The host program
//===----------------------------------------------------------------------===//
//
// -tessera-gpu-host-program turns a function of fusion groups into the
// program the host runs: a function on memrefs whose body takes its
// temporaries from one workspace (`tsched.buffer`), reads buffers under
// other shapes (`tsched.view`) and launches each group's kernel
// (`tsched.launch`) in order on one stream. The buffers it returns are
// `memref.alloc`s, since the caller keeps them.

def TSched_BufferOp : TSched_Op<"buffer", [Pure]> {
  let summary = "A temporary at a byte offset of the host program's workspace";
  let description = [{
    The function's `tsched.workspace` attribute is the size in bytes of one
    block of device memory that its temporaries share; a buffer is the
    contiguous memref at `offset` bytes into it. Two buffers overlap only if
    their values are never live at once: the offsets are planned from the
    launches that write and read them.

    ```mlir
    %t = tsched.buffer offset 4096 : memref<128x256xf32>
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$offset);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "`offset` $offset attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TSched_ViewOp : TSched_Op<"view", [Pure]> {
  let summary = "The same contiguous memory under another static shape";
  let description = [{
    The elements, in order, of a contiguous buffer read as another shape
    with the same element type and count: a kernel's `[R]` view of a
    `[R, 1]` row, its `[B * S, D]` view of `[B, S, D]`, or a reshape that
    needs no copy.

    ```mlir
    %v = tsched.view %t : memref<128x1xi32> to memref<128xi32>
    ```
  }];
  let arguments = (ins AnyStaticShapeMemRef:$source);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let hasVerifier = 1;
}

def TSched_LaunchOp : TSched_Op<"launch", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "One launch of a generated kernel on the host program's stream";
  let description = [{
    Runs `kernel` with `grid` programs (x, y, z) on the buffers `args`, in
    the order of its parameters (a generated kernel's: the group's inputs,
    then its outputs), then the numbers `scalars` (f32, i32 or i64
    attributes), its remaining parameters. Launches run one after another
    on the stream of the call: a launch sees everything earlier ones
    wrote. `kernel` names a Tile IR kernel (`func.func` with
    `ttile.kernel`), a `gpu.func` of a `gpu.module`, or a kernel of a
    `gpu.binary` once compiled. A kernel's memref parameters may leave
    dims dynamic; the buffers' ranks and element types must match.

    ```mlir
    tsched.launch @f_row0 grid [8] (%x, %y) : memref<128x10xf32>, memref<128x10xf32>
    tsched.launch @flash_attention_fwd grid [16, 8] (%q, %k, %v, %o, %lse)
        scalars [1.250000e-01 : f32] : memref<8x2048x64xbf16>, ...
    ```
  }];
  let arguments = (ins SymbolRefAttr:$kernel, DenseI64ArrayAttr:$grid,
                       Variadic<AnyStaticShapeMemRef>:$args,
                       OptionalAttr<ArrayAttr>:$scalars);
  let assemblyFormat = [{
    $kernel `grid` $grid ` ` `(` $args `)` (`scalars` $scalars^)? attr-dict
    (`:` type($args)^)?
  }];
  let hasVerifier = 1;
}

#endif // TESSERA_TSCHED_OPS
