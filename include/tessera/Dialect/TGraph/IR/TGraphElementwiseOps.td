//===- TGraphElementwiseOps.td - constants and elementwise -*- tablegen -*-===//

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

def TGraph_ConstantOp : TGraph_Op<"constant",
    [ConstantLike, Pure, TGraph_NonDifferentiable, AllTypesMatch<["value", "result"]>]> {
  let summary = "a tensor of statically known values";
  let description = [{
    ```mlir
    %c = tgraph.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def TGraph_FullOp : TGraph_Op<"full", [Pure, TGraph_NonDifferentiable]> {
  let summary = "a tensor filled with one value";
  let description = [{
    The shape may be symbolic; its symbols take their values from the
    enclosing function's arguments.

    ```mlir
    %z = tgraph.full {value = 0.0 : f32} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
    ```
  }];
  let arguments = (ins TypedAttrInterface:$value);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TGraph_ZerosLikeOp : TGraph_SameTypeOp<"zeros_like",
    [Pure, TGraph_NonDifferentiable]> {
  let summary = "zeros with the shape and type of the operand";
  let description = [{
    ```mlir
    %z = tgraph.zeros_like %x : tensor<?xf32, #tgraph.dims<[N]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasCanonicalizer = 1;
}

def TGraph_OnesLikeOp : TGraph_SameTypeOp<"ones_like",
    [Pure, TGraph_NonDifferentiable]> {
  let summary = "ones with the shape and type of the operand";
  let description = [{
    ```mlir
    %one = tgraph.ones_like %x : tensor<?xf32, #tgraph.dims<[N]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasCanonicalizer = 1;
}

def TGraph_StopGradientOp : TGraph_SameTypeOp<"stop_gradient",
    [Pure, TGraph_NonDifferentiable]> {
  let summary = "the operand, seen by autodiff as a constant";
  let description = [{
    The value of `%x`; no tangent or cotangent flows through it (JAX's
    `stop_gradient`). It lowers to nothing.

    ```mlir
    %c = tgraph.stop_gradient %x : tensor<?xf32, #tgraph.dims<[N]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def TGraph_IotaOp : TGraph_Op<"iota", [Pure, TGraph_NonDifferentiable]> {
  let summary = "indices 0, 1, 2, ... along one dimension";
  let description = [{
    Element `[i0, ..., in]` of the result is `i_dim`.

    ```mlir
    %pos = tgraph.iota {dim = 1 : i64} : tensor<?x?xi64, #tgraph.dims<[B, S]>>
    ```
  }];
  let arguments = (ins I64Attr:$dim);
  let results = (outs TGraph_NumericTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

class TGraph_UnaryOp<string mnemonic, string formula, Type tensorType,
                     list<Trait> traits = []>
    : TGraph_SameTypeOp<mnemonic,
          traits # [Pure, TGraph_DifferentiableOpInterface]> {
  let extraClassDeclaration = shapeDecl # [{
    /// d result / d x at the op's operand (null: zero), for autodiff.
    ::mlir::Value derivative(::mlir::tessera::tgraph::ADBuilder &ad);
  }];
  let summary = "elementwise `" # formula # "`";
  let description = "Computes `" # formula # "` for every element; the "
      # "result has the type of the operand.\n\n```mlir\n%y = tgraph."
      # mnemonic # " %x : tensor<?x128xf32, #tgraph.dims<[B, 128]>>\n```";
  let arguments = (ins tensorType:$x);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def TGraph_NegOp : TGraph_UnaryOp<"neg", "-x", TGraph_NumericTensor> {
  let hasFolder = 1;
}
def TGraph_AbsOp : TGraph_UnaryOp<"abs", "|x|", TGraph_NumericTensor> {
  let hasFolder = 1;
}
def TGraph_ExpOp : TGraph_UnaryOp<"exp", "e^x", TGraph_FloatTensor> {
  let hasFolder = 1;
}
def TGraph_LogOp : TGraph_UnaryOp<"log", "ln(x)", TGraph_FloatTensor> {
  let hasFolder = 1;
}
def TGraph_Log1pOp : TGraph_UnaryOp<"log1p", "ln(1 + x)", TGraph_FloatTensor>;
def TGraph_SinOp : TGraph_UnaryOp<"sin", "sin(x)", TGraph_FloatTensor> {
  let hasFolder = 1;
}
def TGraph_CosOp : TGraph_UnaryOp<"cos", "cos(x)", TGraph_FloatTensor> {
  let hasFolder = 1;
}
def TGraph_TanhOp : TGraph_UnaryOp<"tanh", "tanh(x)", TGraph_FloatTensor> {
  let hasFolder = 1;
}
def TGraph_ErfOp : TGraph_UnaryOp<"erf", "erf(x)", TGraph_FloatTensor>;
def TGraph_SigmoidOp
    : TGraph_UnaryOp<"sigmoid", "1 / (1 + e^-x)", TGraph_FloatTensor>;
def TGraph_ReluOp : TGraph_UnaryOp<"relu", "max(x, 0)", TGraph_NumericTensor> {
  let hasFolder = 1;
}
def TGraph_GeluOp : TGraph_SameTypeOp<"gelu",
    [Pure, TGraph_DifferentiableOpInterface]> {
  let extraClassDeclaration = shapeDecl # [{
    /// d result / d x at the op's operand, for autodiff.
    ::mlir::Value derivative(::mlir::tessera::tgraph::ADBuilder &ad);
  }];
  let summary = "elementwise GELU";
  let description = [{
    `x * Phi(x)` with the normal CDF `Phi(x) = (1 + erf(x / sqrt(2))) / 2`;
    with `approximate`, the tanh form
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.

    ```mlir
    %y = tgraph.gelu %x {approximate} : tensor<?x512xbf16, #tgraph.dims<[B, 512]>>
    ```
  }];
  let arguments = (ins TGraph_FloatTensor:$x, UnitAttr:$approximate);
  let results = (outs TGraph_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}
def TGraph_SiluOp : TGraph_UnaryOp<"silu", "x * sigmoid(x)", TGraph_FloatTensor>;
def TGraph_SqrtOp : TGraph_UnaryOp<"sqrt", "sqrt(x)", TGraph_FloatTensor> {
  let hasFolder = 1;
}
def TGraph_RsqrtOp : TGraph_UnaryOp<"rsqrt", "1 / sqrt(x)", TGraph_FloatTensor>;
def TGraph_ReciprocalOp
    : TGraph_UnaryOp<"reciprocal", "1 / x", TGraph_FloatTensor>;
def TGraph_SquareOp : TGraph_UnaryOp<"square", "x * x", TGraph_NumericTensor>;
def TGraph_FloorOp : TGraph_UnaryOp<"floor", "floor(x)", TGraph_FloatTensor> {
  let hasFolder = 1;
}
def TGraph_SignOp : TGraph_UnaryOp<"sign", "sign(x) (-1, 0 or 1)",
                                   TGraph_NumericTensor> {
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary (broadcasting)
//===----------------------------------------------------------------------===//

class TGraph_BinaryOp<string mnemonic, string formula, Type tensorType,
                      list<Trait> traits = []>
    : TGraph_InferOp<mnemonic, traits # [Pure, TGraph_Differentiable]> {
  let summary = "elementwise `" # formula # "` with broadcasting";
  let description = "Computes `" # formula # "` for every element. Operands "
      # "have one element type and broadcast NumPy-style (right-aligned); a "
      # "dimension expands only when it is statically 1, and symbolic "
      # "dimensions that may differ get a run-time check.\n\n```mlir\n"
      # "%y = tgraph." # mnemonic # " %a, %b : (tensor<?x64xf32, "
      # "#tgraph.dims<[B, 64]>>, tensor<64xf32>) -> tensor<?x64xf32, "
      # "#tgraph.dims<[B, 64]>>\n```";
  let arguments = (ins tensorType:$lhs, tensorType:$rhs);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` " # "custom<OpTypes>(type($lhs), type($rhs), type($result))";
  let hasFolder = 1;
}

def TGraph_AddOp : TGraph_BinaryOp<"add", "lhs + rhs", TGraph_NumericTensor,
                                   [Commutative]> {
  let hasCanonicalizer = 1;
}
def TGraph_SubOp : TGraph_BinaryOp<"sub", "lhs - rhs", TGraph_NumericTensor>;
def TGraph_MulOp : TGraph_BinaryOp<"mul", "lhs * rhs", TGraph_NumericTensor,
                                   [Commutative]> {
  let hasCanonicalizer = 1;
}
def TGraph_DivOp : TGraph_BinaryOp<"div",
    "lhs / rhs (integers round toward zero)", TGraph_NumericTensor>;
def TGraph_PowOp : TGraph_BinaryOp<"pow", "lhs ^ rhs", TGraph_FloatTensor>;
def TGraph_MaxOp : TGraph_BinaryOp<"max", "max(lhs, rhs)", TGraph_NumericTensor,
                                   [Commutative]>;
def TGraph_MinOp : TGraph_BinaryOp<"min", "min(lhs, rhs)", TGraph_NumericTensor,
                                   [Commutative]>;

def TGraph_CompareOp : TGraph_InferOp<"compare",
    [Pure, TGraph_NonDifferentiable]> {
  let summary = "elementwise comparison with broadcasting";
  let description = [{
    Compares the operands (one element type, broadcast like `tgraph.add`) and
    returns `i1` elements. Floats compare ordered: any comparison with NaN
    is false except `ne`.

    ```mlir
    %m = tgraph.compare lt, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins TGraph_CompareDirectionAttr:$direction,
                       TGraph_Tensor:$lhs, TGraph_Tensor:$rhs);
  let results = (outs TGraph_PredTensor:$result);
  let assemblyFormat = "custom<CompareDirection>($direction) `,` $lhs `,` $rhs "
                       "attr-dict `:` "
                       # "custom<OpTypes>(type($lhs), type($rhs), type($result))";
  let hasFolder = 1;
}

def TGraph_SelectOp : TGraph_InferOp<"select",
    [Pure, TGraph_Differentiable]> {
  let summary = "elementwise choice between two tensors (where)";
  let description = [{
    `cond ? on_true : on_false` per element; all three operands broadcast
    together.

    ```mlir
    %y = tgraph.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins TGraph_PredTensor:$cond, TGraph_Tensor:$on_true,
                       TGraph_Tensor:$on_false);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$cond `,` $on_true `,` $on_false attr-dict `:` "
                       # "custom<OpTypes>(type($cond), type($on_true), type($on_false), type($result))";
  let hasFolder = 1;
}

def TGraph_CastOp : TGraph_ShapedOp<"cast", [Pure, TGraph_Differentiable]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Float to float rounds to nearest even (or stochastically with the
    `stochastic_round` policy); to fp8 and to integers, values out of range
    become inf/NaN (floats) or wrap (integers) unless the policy says
    `saturate`. Float to integer truncates toward zero; `i1` converts to 0 or
    1. Floats do not cast to `i1` (compare instead).

    ```mlir
    %y = tgraph.cast %x {policy = #tgraph.policy<saturate>}
        : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x64xf8E4M3FN, #tgraph.dims<[B, 64]>>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x, OptionalAttr<TGraph_PolicyAttr>:$policy);
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` " # "custom<OpTypes>(type($x), type($result))";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}
