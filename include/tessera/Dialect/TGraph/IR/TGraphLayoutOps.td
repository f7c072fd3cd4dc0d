//===- TGraphLayoutOps.td - data movement and indexing -----*- tablegen -*-===//

def TGraph_TransposeOp : TGraph_InferOp<"transpose",
    [Pure, TGraph_Differentiable]> {
  let summary = "permutes dimensions";
  let description = [{
    Result dim i is operand dim `permutation[i]`.

    ```mlir
    %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
        : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x, DenseI64ArrayAttr:$permutation);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` " # "custom<OpTypes>(type($x), type($result))";
  let hasFolder = 1;
}

def TGraph_ReshapeOp : TGraph_ShapedOp<"reshape",
    [Pure, TGraph_Differentiable]> {
  let summary = "reinterprets the elements under a new shape";
  let description = [{
    The result type gives the new shape (row-major order is kept); it may be
    symbolic, and one dim may be `?`, solved from the element count. Element
    counts that cannot be proven equal get a run-time check.

    ```mlir
    %h = tgraph.reshape %x : tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>
        -> tensor<?x?x8x64xf32, #tgraph.dims<[B, S, 8, 64]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` " # "custom<OpTypes>(type($x), type($result))";
  let hasFolder = 1;
}

def TGraph_BroadcastInDimOp : TGraph_ShapedOp<"broadcast_in_dim",
    [Pure, TGraph_Differentiable]> {
  let summary = "broadcasts to a larger shape with an explicit dim mapping";
  let description = [{
    Operand dim i becomes result dim `broadcast_dimensions[i]` and must be 1
    (expanded) or equal to it; the other result dims are new.

    ```mlir
    %b = tgraph.broadcast_in_dim %bias {broadcast_dimensions = array<i64: 1>}
        : tensor<64xf32> -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x, DenseI64ArrayAttr:$broadcast_dimensions);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` " # "custom<OpTypes>(type($x), type($result))";
  let hasFolder = 1;
}

def TGraph_SliceOp : TGraph_InferOp<"slice", [Pure, TGraph_Differentiable]> {
  let summary = "a strided box of a tensor";
  let description = [{
    Per dim, elements `start, start + stride, ...` below `limit`. `start` and
    `limit` are dimension expressions, so a slice can run to a symbolic end.

    ```mlir
    %tail = tgraph.slice %x {start = #tgraph.dims<[0, 1]>, limit = #tgraph.dims<[B, S]>,
        stride = array<i64: 1, 1>}
        : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, "S-1"]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x, TGraph_DimsAttr:$start,
                       TGraph_DimsAttr:$limit, DenseI64ArrayAttr:$stride);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` " # "custom<OpTypes>(type($x), type($result))";
  let hasFolder = 1;
}

def TGraph_DynamicSliceOp : TGraph_InferOp<"dynamic_slice",
    [Pure, TGraph_Differentiable]> {
  let summary = "a box of fixed size at run-time offsets";
  let description = [{
    One start index per dim (0-d integer tensors); each start is clamped to
    `[0, dim - size]`, as in StableHLO, so the box always lies inside.

    ```mlir
    %row = tgraph.dynamic_slice %x[%i, %j] {sizes = #tgraph.dims<[1, D]>}
        : (tensor<?x?xf32, #tgraph.dims<[N, D]>>, tensor<i64>, tensor<i64>)
        -> tensor<1x?xf32, #tgraph.dims<[1, D]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x, Variadic<TGraph_ScalarIndex>:$starts,
                       TGraph_DimsAttr:$sizes);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x `[` $starts `]` attr-dict `:` " # "functional-type(operands, results)";
}

def TGraph_ConcatOp : TGraph_InferOp<"concat",
    [Pure, SameOperandsElementType, TGraph_Differentiable]> {
  let summary = "joins tensors along one dimension";
  let description = [{
    ```mlir
    %c = tgraph.concat %a, %b {dim = 0 : i64}
        : (tensor<?x4xf32, #tgraph.dims<[N, 4]>>, tensor<?x4xf32, #tgraph.dims<[M, 4]>>)
        -> tensor<?x4xf32, #tgraph.dims<["M+N", 4]>>
    ```
  }];
  let arguments = (ins Variadic<TGraph_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` " # "functional-type(operands, results)";
  let hasFolder = 1;
}

def TGraph_PadOp : TGraph_InferOp<"pad", [Pure, TGraph_Differentiable]> {
  let summary = "pads with a constant value";
  let description = [{
    Per dim, `low` elements before, `high` after and `interior` between
    neighbours; negative `low`/`high` crop.

    ```mlir
    %p = tgraph.pad %x {low = array<i64: 0, 1>, high = array<i64: 0, 1>,
        interior = array<i64: 0, 0>, value = 0.0 : f32}
        : tensor<?x8xf32, #tgraph.dims<[B, 8]>> -> tensor<?x10xf32, #tgraph.dims<[B, 10]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high, DenseI64ArrayAttr:$interior,
                       TypedAttrInterface:$value);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` " # "custom<OpTypes>(type($x), type($result))";
  let hasFolder = 1;
}

def TGraph_GatherOp : TGraph_InferOp<"gather", [Pure, TGraph_Differentiable]> {
  let summary = "takes slices along one dimension at given indices";
  let description = [{
    `result[a..., i..., b...] = x[a..., indices[i...], b...]` where `a` are
    the dims before `dim` (NumPy's `take(x, indices, axis=dim)`). Indices out
    of range are clamped.

    ```mlir
    %rows = tgraph.gather %x, %idx {dim = 0 : i64}
        : (tensor<?x64xf32, #tgraph.dims<[V, 64]>>, tensor<?xi32, #tgraph.dims<[N]>>)
        -> tensor<?x64xf32, #tgraph.dims<[N, 64]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x, TGraph_IndexTensor:$indices,
                       I64Attr:$dim);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x `,` $indices attr-dict `:` " # "custom<OpTypes>(type($x), type($indices), type($result))";
}

def TGraph_ScatterAddOp : TGraph_InferOp<"scatter_add",
    [Pure, TGraph_Differentiable]> {
  let summary = "adds slices into a tensor at given indices";
  let description = [{
    The adjoint of `tgraph.gather`: `updates` has the gather result's shape
    and is added at `indices` along `dim`. Repeated indices accumulate in a
    fixed order (deterministic); out-of-range indices are dropped.

    ```mlir
    %g = tgraph.scatter_add %table, %ids, %upd {dim = 0 : i64}
        : (tensor<1000x64xf32>, tensor<?xi32, #tgraph.dims<[N]>>,
           tensor<?x64xf32, #tgraph.dims<[N, 64]>>) -> tensor<1000x64xf32>
    ```
  }];
  let arguments = (ins TGraph_NumericTensor:$x, TGraph_IndexTensor:$indices,
                       TGraph_NumericTensor:$updates, I64Attr:$dim);
  let results = (outs TGraph_NumericTensor:$result);
  let assemblyFormat = "$x `,` $indices `,` $updates attr-dict `:` "
                       # "custom<OpTypes>(type($x), type($indices), type($updates), type($result))";
}

def TGraph_EmbeddingOp : TGraph_InferOp<"embedding", [Pure]> {
  let summary = "looks up rows of an embedding table";
  let description = [{
    `table [V, D]`, `ids [...]` -> `[..., D]`; ids out of range are clamped.

    ```mlir
    %e = tgraph.embedding %table, %tokens
        : (tensor<32000x512xbf16>, tensor<?x?xi32, #tgraph.dims<[B, S]>>)
        -> tensor<?x?x512xbf16, #tgraph.dims<[B, S, 512]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$table, TGraph_IndexTensor:$ids);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$table `,` $ids attr-dict `:` " # "custom<OpTypes>(type($table), type($ids), type($result))";
}

def TGraph_OneHotOp : TGraph_ShapedOp<"one_hot",
    [Pure, TGraph_NonDifferentiable]> {
  let summary = "one-hot encoding of integer ids";
  let description = [{
    `ids [...]` -> `[..., num_classes]` with 1 at each id and 0 elsewhere
    (all zeros for ids out of range).

    ```mlir
    %oh = tgraph.one_hot %y {num_classes = 10 : i64}
        : tensor<?xi64, #tgraph.dims<[B]>> -> tensor<?x10xf32, #tgraph.dims<[B, 10]>>
    ```
  }];
  let arguments = (ins TGraph_IndexTensor:$ids, I64Attr:$num_classes);
  let results = (outs TGraph_NumericTensor:$result);
  let assemblyFormat = "$ids attr-dict `:` " # "custom<OpTypes>(type($ids), type($result))";
}

//===----------------------------------------------------------------------===//
// Dimension values and run-time shape checks
//===----------------------------------------------------------------------===//

def TGraph_DimOp : TGraph_Op<"dim", [Pure, TGraph_NonDifferentiable]> {
  let summary = "the run-time size of one dimension, as an index";
  let description = [{
    ```mlir
    %b = tgraph.dim %x, 0 : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x, I64Attr:$index);
  let results = (outs Index:$result);
  let assemblyFormat = "$x `,` $index attr-dict `:` type($x)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TGraph_DimSizeOp : TGraph_Op<"dim_size", [Pure, TGraph_NonDifferentiable]> {
  let summary = "the size of one dimension as a 0-d tensor";
  let description = [{
    Useful where a size enters arithmetic, as the count of a mean.

    ```mlir
    %n = tgraph.dim_size %x {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<f32>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x, I64Attr:$dim);
  let results = (outs 0DTensorOf<[TGraph_NumericElement]>:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TGraph_AssertDimOp : TGraph_Op<"assert_dim",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "run-time check of a relation between two dimension sizes";
  let description = [{
    Inserted by shape inference where a shape rule depends on symbol values.
    `eq` requires `lhs == rhs`, `eq_or_one` allows `lhs == 1` as well (a
    broadcast), `divisible` requires `lhs` to be a multiple of `rhs`, and
    `le` requires `lhs <= rhs` (a slice bound inside its dim, a reduction
    without identity over at least one element).
    Execution stops with `message` (which names the op, its location, the
    operands and the symbols) when the relation does not hold.

    ```mlir
    %s = tgraph.dim %a, 1 : tensor<4x?xf32, #tgraph.dims<[4, S]>>
    %t = tgraph.dim %b, 1 : tensor<4x?xf32, #tgraph.dims<[4, T]>>
    tgraph.assert_dim eq %s, %t, "'tgraph.add' op at model.py:3:8: broadcast mismatch: ..."
    ```
  }];
  let arguments = (ins TGraph_DimRelationAttr:$relation, Index:$lhs,
                       Index:$rhs, StrAttr:$message);
  let assemblyFormat = [{
    custom<DimRelation>($relation) $lhs `,` $rhs `,` $message attr-dict
  }];
  let hasCanonicalizer = 1;
}
