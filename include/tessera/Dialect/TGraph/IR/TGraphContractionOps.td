//===- TGraphContractionOps.td - matmul, conv, attention ---*- tablegen -*-===//

def TGraph_MatmulOp : TGraph_ShapedOp<"matmul", [Pure, TGraph_Differentiable]> {
  let summary = "matrix product with broadcast batch dimensions";
  let description = [{
    `[..., M, K] x [..., K, N] -> [..., M, N]`; the leading (batch) dims
    broadcast like `tgraph.add`. `transpose_lhs`/`transpose_rhs` swap the last
    two dims of that operand first. Operands share an element type (two fp8
    formats may mix); fp8 operands need an accumulation policy.

    ```mlir
    %y = tgraph.matmul %x, %w : (tensor<?x512xbf16, #tgraph.dims<[B, 512]>>,
        tensor<512x2048xbf16>) -> tensor<?x2048xbf16, #tgraph.dims<[B, 2048]>>
    ```
  }];
  let arguments = (ins TGraph_NumericTensor:$lhs, TGraph_NumericTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       OptionalAttr<TGraph_PolicyAttr>:$policy);
  let results = (outs TGraph_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` " # "custom<OpTypes>(type($lhs), type($rhs), type($result))";
  let hasCanonicalizer = 1;
}

def TGraph_BatchMatmulOp : TGraph_ShapedOp<"batch_matmul",
    [Pure, TGraph_Differentiable]> {
  let summary = "batched matrix product";
  let description = [{
    `[B, M, K] x [B, K, N] -> [B, M, N]` with no broadcasting.

    ```mlir
    %y = tgraph.batch_matmul %a, %b : (tensor<?x64x32xf32, #tgraph.dims<[B, 64, 32]>>,
        tensor<?x32x16xf32, #tgraph.dims<[B, 32, 16]>>) -> tensor<?x64x16xf32, #tgraph.dims<[B, 64, 16]>>
    ```
  }];
  let arguments = (ins TGraph_NumericTensor:$lhs, TGraph_NumericTensor:$rhs,
                       OptionalAttr<TGraph_PolicyAttr>:$policy);
  let results = (outs TGraph_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` " # "custom<OpTypes>(type($lhs), type($rhs), type($result))";
}

def TGraph_DotGeneralOp : TGraph_ShapedOp<"dot_general",
    [Pure, TGraph_Differentiable]> {
  let summary = "general tensor contraction";
  let description = [{
    Contracts `lhs_contracting_dims` against `rhs_contracting_dims` and pairs
    `lhs_batching_dims` with `rhs_batching_dims` (StableHLO semantics). The
    result dims are the batch dims, then the remaining lhs dims, then the
    remaining rhs dims, each in order.

    ```mlir
    %s = tgraph.dot_general %q, %k {lhs_batching_dims = array<i64: 0>,
        rhs_batching_dims = array<i64: 0>, lhs_contracting_dims = array<i64: 2>,
        rhs_contracting_dims = array<i64: 2>}
        : (tensor<8x128x64xf32>, tensor<8x256x64xf32>) -> tensor<8x128x256xf32>
    ```
  }];
  let arguments = (ins TGraph_NumericTensor:$lhs, TGraph_NumericTensor:$rhs,
                       DenseI64ArrayAttr:$lhs_batching_dims,
                       DenseI64ArrayAttr:$rhs_batching_dims,
                       DenseI64ArrayAttr:$lhs_contracting_dims,
                       DenseI64ArrayAttr:$rhs_contracting_dims,
                       OptionalAttr<TGraph_PolicyAttr>:$policy);
  let results = (outs TGraph_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` " # "custom<OpTypes>(type($lhs), type($rhs), type($result))";
}

def TGraph_Conv2dOp : TGraph_ShapedOp<"conv2d", [Pure]> {
  let summary = "2-D convolution (cross-correlation)";
  let description = [{
    `layout = nchw` (default) takes input NCHW and filter OIHW, as PyTorch;
    `layout = nhwc` takes input NHWC and filter HWIO. `padding` is
    `[top, bottom, left, right]`. With `groups = g` the input channels are
    `g` times the filter's input channels. Output spatial size:
    `(in + pad_lo + pad_hi - dilation * (k - 1) - 1) / stride + 1`.

    ```mlir
    %y = tgraph.conv2d %x, %w {strides = array<i64: 2, 2>,
        padding = array<i64: 1, 1, 1, 1>}
        : (tensor<?x3x32x32xf32, #tgraph.dims<[N, 3, 32, 32]>>, tensor<16x3x3x3xf32>)
        -> tensor<?x16x16x16xf32, #tgraph.dims<[N, 16, 16, 16]>>
    ```
  }];
  let arguments = (ins TGraph_NumericTensor:$input, TGraph_NumericTensor:$filter,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
      DefaultValuedAttr<I64Attr, "1">:$groups,
      DefaultValuedAttr<TGraph_ConvLayoutAttr, "ConvLayout::nchw">:$layout,
      OptionalAttr<TGraph_PolicyAttr>:$policy);
  let results = (outs TGraph_NumericTensor:$result);
  let assemblyFormat = "$input `,` $filter attr-dict `:` " # "custom<OpTypes>(type($input), type($filter), type($result))";
}

def TGraph_AttentionOp : TGraph_InferOp<"attention",
    [Pure, TGraph_Differentiable]> {
  let summary = "scaled dot-product attention";
  let description = [{
    `softmax(q k^T * scale) v` over the last two dims, with
    q `[..., Sq, D]`, k `[..., Sk, D]`, v `[..., Sk, Dv]` and result
    `[..., Sq, Dv]`. `scale` defaults to `1/sqrt(D)`. With `causal`, query i
    attends to keys `j <= i + (Sk - Sq)` (the queries are the last Sq
    positions).

    ```mlir
    %o = tgraph.attention %q, %k, %v {causal}
        : (tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>,
           tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>,
           tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>)
        -> tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>
    ```
  }];
  let arguments = (ins TGraph_FloatTensor:$query, TGraph_FloatTensor:$key,
                       TGraph_FloatTensor:$value, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<TGraph_PolicyAttr>:$policy);
  let results = (outs TGraph_FloatTensor:$result);
  let assemblyFormat = "$query `,` $key `,` $value attr-dict `:` "
                       # "custom<OpTypes>(type($query), type($key), type($value), type($result))";
}

def TGraph_AttentionGradOp : TGraph_InferOp<"attention_grad", [Pure]> {
  let summary = "gradients of scaled dot-product attention";
  let description = [{
    The cotangents of `tgraph.attention`'s query, key and value for the
    cotangent `output_grad` of its result `output` (reverse-mode autodiff
    emits it; `causal`, `scale` and `policy` are the attention's). With
    `P = softmax(q k^T * scale [+ mask])` and `dP = output_grad v^T`:
    `dv = P^T output_grad`, `dS = P * (dP - rowsum(P * dP)) * scale`,
    `dq = dS k`, `dk = dS^T q`. `rowsum(P * dP)` equals
    `rowsum(output_grad * output)`, which GPU kernels read instead of
    recomputing `dP`; the decomposition does not read `output`.

    ```mlir
    %dq, %dk, %dv = tgraph.attention_grad %q, %k, %v, %o, %do {causal}
        : (tensor<2x8x128x64xbf16>, tensor<2x8x128x64xbf16>,
           tensor<2x8x128x64xbf16>, tensor<2x8x128x64xbf16>,
           tensor<2x8x128x64xbf16>)
        -> (tensor<2x8x128x64xbf16>, tensor<2x8x128x64xbf16>,
            tensor<2x8x128x64xbf16>)
    ```
  }];
  let arguments = (ins TGraph_FloatTensor:$query, TGraph_FloatTensor:$key,
                       TGraph_FloatTensor:$value, TGraph_FloatTensor:$output,
                       TGraph_FloatTensor:$output_grad, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<TGraph_PolicyAttr>:$policy);
  let results = (outs TGraph_FloatTensor:$query_grad,
                      TGraph_FloatTensor:$key_grad,
                      TGraph_FloatTensor:$value_grad);
  let assemblyFormat = "$query `,` $key `,` $value `,` $output `,` "
                       # "$output_grad attr-dict `:` functional-type(operands, results)";
}
