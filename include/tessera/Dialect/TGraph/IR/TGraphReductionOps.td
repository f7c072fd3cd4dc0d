//===- TGraphReductionOps.td - reductions, norms, losses ---*- tablegen -*-===//

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class TGraph_ReduceOp<string mnemonic, string what, Type tensorType,
                      bit hasStable>
    : TGraph_InferOp<mnemonic, [Pure, TGraph_Differentiable]> {
  let summary = what # " over the given dimensions";
  let description = "Reduces `dims` (each at most once); with `keepdims` they "
      # "stay as size-1 dims. The order of accumulation is fixed (pairwise), "
      # "so results are bitwise reproducible for any thread count"
      # !if(hasStable, "; `stable` asks for compensated (Kahan) summation.",
            ".")
      # "\n\n```mlir\n%s = tgraph." # mnemonic # " %x {dims = array<i64: 1>}"
      # " : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, "
      # "#tgraph.dims<[B]>>\n```";
  let arguments = !con((ins tensorType:$x, DenseI64ArrayAttr:$dims,
                            UnitAttr:$keepdims),
                       !if(hasStable, (ins UnitAttr:$stable,
                                OptionalAttr<TGraph_PolicyAttr>:$policy),
                           (ins)));
  let results = (outs tensorType:$result);
  let assemblyFormat = "$x attr-dict `:` " # "custom<OpTypes>(type($x), type($result))";
  let hasFolder = 1;
}

def TGraph_ReduceSumOp
    : TGraph_ReduceOp<"reduce_sum", "sum", TGraph_NumericTensor, 1>;
def TGraph_ReduceMeanOp
    : TGraph_ReduceOp<"reduce_mean", "mean", TGraph_FloatTensor, 1>;
def TGraph_ReduceProdOp
    : TGraph_ReduceOp<"reduce_prod", "product", TGraph_NumericTensor, 1>;
def TGraph_ReduceMaxOp
    : TGraph_ReduceOp<"reduce_max", "maximum", TGraph_NumericTensor, 0>;
def TGraph_ReduceMinOp
    : TGraph_ReduceOp<"reduce_min", "minimum", TGraph_NumericTensor, 0>;

class TGraph_ArgReduceOp<string mnemonic, string what>
    : TGraph_ShapedOp<mnemonic, [Pure, TGraph_NonDifferentiable]> {
  let summary = "index of the " # what # " along one dimension";
  let description = "Returns the index of the " # what # " along `dim` "
      # "(the first one on ties, so results are deterministic) as i32 or i64."
      # "\n\n```mlir\n%i = tgraph." # mnemonic # " %logits {dim = 1 : i64} : "
      # "tensor<?x10xf32, #tgraph.dims<[B, 10]>> -> tensor<?xi64, "
      # "#tgraph.dims<[B]>>\n```";
  let arguments = (ins TGraph_NumericTensor:$x, I64Attr:$dim,
                       UnitAttr:$keepdims);
  let results = (outs TGraph_IndexTensor:$result);
  let assemblyFormat = "$x attr-dict `:` " # "custom<OpTypes>(type($x), type($result))";
}

def TGraph_ArgmaxOp : TGraph_ArgReduceOp<"argmax", "maximum">;
def TGraph_ArgminOp : TGraph_ArgReduceOp<"argmin", "minimum">;

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

class TGraph_SoftmaxLikeOp<string mnemonic, string what, string formula>
    : TGraph_SameTypeOp<mnemonic, [Pure, TGraph_Differentiable]> {
  let summary = what # " along one dimension";
  let description = "Computes `" # formula # "` along `dim`, subtracting the "
      # "maximum first so large inputs do not overflow."
      # "\n\n```mlir\n%p = tgraph." # mnemonic # " %x {dim = 1 : i64} : "
      # "tensor<?x?xf32, #tgraph.dims<[B, S]>>\n```";
  let arguments = (ins TGraph_FloatTensor:$x, I64Attr:$dim);
  let results = (outs TGraph_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def TGraph_SoftmaxOp
    : TGraph_SoftmaxLikeOp<"softmax", "softmax", "exp(x) / sum(exp(x))">;
def TGraph_LogSoftmaxOp : TGraph_SoftmaxLikeOp<"log_softmax", "log-softmax",
                                               "x - log(sum(exp(x)))">;
def TGraph_SoftmaxSafeOp : TGraph_SoftmaxLikeOp<"softmax_safe",
    "softmax that stays finite on fully masked rows",
    "exp(x) / sum(exp(x)), with rows that are all -inf giving 0 instead of NaN">;

class TGraph_LogsumexpLikeOp<string mnemonic, string what>
    : TGraph_InferOp<mnemonic, [Pure, TGraph_Differentiable]> {
  let summary = what;
  let description = "`max + log(sum(exp(x - max)))` along `dim`; with "
      # "`keepdims` the dim stays with size 1."
      # !if(!eq(mnemonic, "logsumexp_safe"),
            " Rows that are all -inf give -inf (not NaN).", "")
      # "\n\n```mlir\n%l = tgraph." # mnemonic # " %x {dim = 1 : i64} : "
      # "tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, "
      # "#tgraph.dims<[B]>>\n```";
  let arguments = (ins TGraph_FloatTensor:$x, I64Attr:$dim, UnitAttr:$keepdims);
  let results = (outs TGraph_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` " # "custom<OpTypes>(type($x), type($result))";
}

def TGraph_LogsumexpOp : TGraph_LogsumexpLikeOp<"logsumexp", "log-sum-exp">;
def TGraph_LogsumexpSafeOp : TGraph_LogsumexpLikeOp<"logsumexp_safe",
    "log-sum-exp that stays finite-or-(-inf) on fully masked rows">;

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

class TGraph_NormOp<string mnemonic, string what, string formula,
                    bit hasBias, string extra>
    : TGraph_InferOp<mnemonic,
          !if(hasBias, [Pure, AttrSizedOperandSegments], [Pure])> {
  let summary = what;
  let description = "Normalizes over the dims `[axis, rank)`: `" # formula
      # "`. The optional `scale`" # !if(hasBias, " and `bias` have", " has")
      # " the shape of those dims. " # extra
      # "\n\n```mlir\n%y = tgraph." # mnemonic # " %x scale %g"
      # " {axis = 1 : i64, epsilon = 1.0e-05 : f64}"
      # " : (tensor<?x512xf32, #tgraph.dims<[B, 512]>>, tensor<512xf32>) -> "
      # "tensor<?x512xf32, #tgraph.dims<[B, 512]>>\n```";
  let arguments = !con((ins TGraph_FloatTensor:$x,
                            Optional<TGraph_FloatTensor>:$scale),
                       !if(hasBias, (ins Optional<TGraph_FloatTensor>:$bias),
                           (ins)),
                       (ins I64Attr:$axis,
                            DefaultValuedAttr<F64Attr, "1e-5">:$epsilon,
                            OptionalAttr<TGraph_PolicyAttr>:$policy));
  let results = (outs TGraph_FloatTensor:$result);
  let assemblyFormat = !if(hasBias,
      "$x (`scale` $scale^)? (`bias` $bias^)? attr-dict `:` " # "functional-type(operands, results)",
      "$x (`scale` $scale^)? attr-dict `:` " # "functional-type(operands, results)");
}

def TGraph_LayerNormOp : TGraph_NormOp<"layernorm", "layer normalization",
    "(x - mean) / sqrt(var + epsilon) * scale + bias", 1, "">;
def TGraph_RMSNormOp : TGraph_NormOp<"rmsnorm", "RMS normalization",
    "x / sqrt(mean(x^2) + epsilon) * scale", 0, "">;
def TGraph_LayerNormSafeOp : TGraph_NormOp<"layernorm_safe",
    "layer normalization computed in f32 with a non-negative variance",
    "(x - mean) / sqrt(max(var, 0) + epsilon) * scale + bias", 1,
    "Statistics are computed in f32 whatever the storage type.">;
def TGraph_RMSNormSafeOp : TGraph_NormOp<"rmsnorm_safe",
    "RMS normalization computed in f32",
    "x / sqrt(mean(x^2) + epsilon) * scale", 0,
    "Statistics are computed in f32 whatever the storage type.">;

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def TGraph_CrossEntropyOp : TGraph_InferOp<"cross_entropy", [Pure]> {
  let summary = "softmax cross-entropy between logits and labels";
  let description = [{
    `-sum_c labels_c * log_softmax(logits)_c` over the last dim of the
    logits. `labels` are either class indices (integers, the logits' shape
    without the class dim) or a distribution (floats, the logits' shape).
    `reduction` is `mean` (default), `sum` or `none` (per-example losses).

    ```mlir
    %loss = tgraph.cross_entropy %logits, %labels
        : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>, tensor<?xi64, #tgraph.dims<[B]>>)
        -> tensor<f32>
    ```
  }];
  let arguments = (ins TGraph_FloatTensor:$logits, TGraph_NumericTensor:$labels,
      DefaultValuedAttr<TGraph_LossReductionAttr, "LossReduction::mean">:$reduction,
      OptionalAttr<TGraph_PolicyAttr>:$policy);
  let results = (outs TGraph_FloatTensor:$result);
  let assemblyFormat = "$logits `,` $labels attr-dict `:` " # "custom<OpTypes>(type($logits), type($labels), type($result))";
}
