//===- Passes.td - Graph IR passes -------------------------*- tablegen -*-===//

#ifndef TESSERA_TGRAPH_PASSES
#define TESSERA_TGRAPH_PASSES

include "mlir/Pass/PassBase.td"

def TGraphInferShapes : Pass<"tessera-tgraph-infer-shapes", "ModuleOp"> {
  let summary = "Infer and refine symbolic shapes; insert run-time shape checks";
  let description = [{
    Runs every op's shape function in program order, replacing `?` dims of
    results (and of function results, region arguments and call results)
    by what the operands determine, and inserting a `tgraph.assert_dim`
    before an op wherever two dims must be equal but that depends on symbol
    values. Dims that can never be equal are errors.

    Before:
    ```mlir
    %0 = tgraph.add %a, %b : (tensor<4x?xf32, #tgraph.dims<[4, S]>>,
        tensor<4x?xf32, #tgraph.dims<[4, T]>>) -> tensor<?x?xf32>
    ```
    After:
    ```mlir
    %s = tgraph.dim %a, 1 : tensor<4x?xf32, #tgraph.dims<[4, S]>>
    %t = tgraph.dim %b, 1 : tensor<4x?xf32, #tgraph.dims<[4, T]>>
    tgraph.assert_dim eq %s, %t, "'tgraph.add' op at f.mlir:3:8: broadcast mismatch: ..."
    %0 = tgraph.add %a, %b : (...) -> tensor<4x?xf32, #tgraph.dims<[4, S]>>
    ```
  }];
  let options = [
    Option<"allowRuntimeChecks", "allow-runtime-checks", "bool", "true",
           "Insert run-time checks for dims that cannot be decided statically; "
           "when false, such dims are compile-time errors">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TGraphDecompose : Pass<"tessera-tgraph-decompose"> {
  let summary = "Expand composite Graph IR ops into primitive ones";
  let description = [{
    Rewrites composite ops (softmax, layernorm, attention, cross_entropy,
    gelu, ...) into primitives (exp, reduce_max, reduce_sum, matmul, ...).
    Back ends that fuse composites keep them; `ops=softmax,gelu` limits the
    expansion to the named ops.

    Before:
    ```mlir
    %y = tgraph.silu %x : tensor<8xf32>
    ```
    After:
    ```mlir
    %s = tgraph.sigmoid %x : tensor<8xf32>
    %y = tgraph.mul %x, %s : tensor<8xf32>
    ```
  }];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "Only expand these ops (names without the tgraph. prefix)">,
    Option<"gpuAttention", "gpu-attention", "bool", "false",
           "Keep the attention and attention_grad ops that the GPU's "
           "flash-attention kernels run: bf16 or f16 q, k, v (and output "
           "and its gradient) of one static shape [..., S, 64 or 128] with "
           "at most 65535 heads in all, no policy but accum = f32">,
  ];
}


def TGraphAutodiff : Pass<"tessera-tgraph-autodiff", "ModuleOp"> {
  let summary = "Expand tgraph.adjoint, tgraph.jvp and tgraph.hvp into functions";
  let description = [{
    Each declaration becomes a new function built from the differentiated
    function's body and the differentiation rules of its ops (spec 004):

    ```mlir
    tgraph.adjoint @m wrt(%x) -> @m_grad   // reverse mode (gradient, VJP)
    tgraph.jvp @m wrt(%x) -> @m_jvp        // forward mode (JVP)
    tgraph.hvp @m wrt(%x) dir(%v) -> @m_hvp  // forward over reverse
    ```

    Declarations may differentiate functions that other declarations
    create (higher orders by composition). Composite ops without rules of
    their own (the norms, attention, cross_entropy, embedding) are expanded
    into primitives first; an op without a rule on the path from the `wrt`
    arguments to the results is an error naming the op and its location.
    Results that do not depend on the `wrt` arguments get zero derivatives;
    comparisons, arg-reductions, random numbers and integer values carry
    none.
  }];
}


def TGraphRemat : Pass<"tessera-tgraph-remat", "ModuleOp"> {
  let summary = "Recompute values instead of keeping them, within a memory budget";
  let description = [{
    Estimates the peak bytes of the tensors a function keeps live (in
    program order, each value from its definition to its last use) and,
    while that exceeds `budget-bytes`, takes the largest value live across
    the peak whose later uses can recompute it: its defining op (and up to
    `max-depth` ops feeding it) is pure, has no regions, and reads only
    arguments or values live at those uses anyway. Those uses then read a
    copy of the ops placed before the first of them, so the original dies
    after its earlier uses. Gradient functions are the typical client: the
    forward pass's activations wait for the backward pass.

    The budget is the option, else a function's `tgraph.remat_budget`
    attribute (which `tgraph.adjoint ... {remat_budget = N}` puts on the
    gradient it creates). Dims that are symbols count as `dim-estimate`
    elements. The pass reports (as a remark) the estimated peak before and
    after, and warns when the budget cannot be met.
  }];
  let options = [
    Option<"budgetBytes", "budget-bytes", "int64_t", "0",
           "Memory budget for live tensors (0: no rematerialization)">,
    Option<"maxDepth", "max-depth", "unsigned", "4",
           "Most ops recomputed for one value">,
    Option<"dimEstimate", "dim-estimate", "int64_t", "128",
           "Size assumed for a dim that is not a number">,
  ];
}

def TGraphInline : Pass<"tessera-tgraph-inline", "ModuleOp"> {
  let summary = "Inline calls of private functions and drop the unused ones";
  let description = [{
    Front ends trace a function called from another one (a loss inside a
    training step, its gradient) as a private function and a `tgraph.call`.
    Inlining them lets the passes that follow see one function: common
    subexpression elimination merges the forward pass of a gradient with the
    value computed beside it, and fusion crosses the call boundary.

    ```mlir
    func.func private @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = tgraph.exp %x : tensor<4xf32>
      return %y : tensor<4xf32>
    }
    %r = tgraph.call @f(%a) : (tensor<4xf32>) -> tensor<4xf32>
    // becomes
    %r = tgraph.exp %a : tensor<4xf32>
    ```

    A call is inlined when its callee is private, has one block, and takes
    and returns exactly the types at the call (a call that relies on
    compatible symbolic dims keeps its run-time check). Recomputations
    (`tgraph.recompute` functions of checkpoints and remat) are left to
    -tessera-inline-recompute, after the last CSE. Private functions left
    without uses are erased.
  }];
}

def TGraphFoldEmpty : Pass<"tessera-tgraph-fold-empty", "func::FuncOp"> {
  let summary = "Replace ops on tensors with no elements by constants";
  let description = [{
    A tensor whose static shape has a 0 holds no elements. An op producing
    one computes nothing; an op that reduces over empty dims (a sum, a
    contraction with an empty contracted dim, the mean, max or logsumexp of
    nothing, a cross-entropy over no examples) produces its identity
    everywhere: 0, 1, NaN for a mean, -inf (the lowest value for integers)
    for a maximum or logsumexp, +inf for a minimum. A pad of nothing is its
    padding value, a scatter of no updates its operand, and a concatenation
    drops its empty inputs. Each becomes a `tgraph.full`, so back ends never
    tile or slice a static dim of size 0. Ops with effects and region ops
    are left alone, as are dims that are symbols (their loops run zero
    times at run time).

    ```mlir
    %s = tgraph.reduce_sum %x {dims = array<i64: 0>}
        : tensor<0x4xf32> -> tensor<4xf32>
    // becomes
    %s = tgraph.full {value = 0.0 : f32} : tensor<4xf32>
    ```
  }];
}

def TGraphWidenI4 : Pass<"tessera-tgraph-widen-i4", "ModuleOp"> {
  let summary = "Compute i4 tensors as i8 ones holding the 4-bit values";
  let description = [{
    For back ends whose memory has no sub-byte elements (the CPU back end:
    vector loads would pack i4 elements while scalar ones take a byte each).
    Every i4 tensor becomes an i8 tensor holding the sign-extended i4 value.
    Ops that may leave [-8, 7] (addition, multiplication, contractions,
    sums, negation, iota, ...) are followed by a wrap to 4 bits, which gives
    exactly the i4 result since i8 arithmetic wraps modulo 256 and 16
    divides 256; casts to i4 saturate to [-8, 7], as every narrowing
    integer cast does. Public functions keep one byte per i4 element with
    the value in the low 4 bits (as ml_dtypes.int4 stores it): arguments are
    sign-extended from the low nibble, results leave with the high bits
    zero.

    ```mlir
    %s = tgraph.add %a, %b : tensor<4xi4>
    // becomes
    %s0 = tgraph.add %a, %b : tensor<4xi8>
    %s = ... wrap %s0 to 4 bits ... : tensor<4xi8>
    ```

    KV caches of i4 are an error.
  }];
}

def TGraphBindDims : Pass<"tessera-tgraph-bind-dims", "ModuleOp"> {
  let summary = "Give symbolic dims fixed sizes";
  let description = [{
    Specializes a module for given sizes of its symbolic dims, as back ends
    that need static shapes (the GPU host program) take it: every type and
    `#tgraph.dims` attribute in the module has the bound symbols replaced
    by their sizes, so a dim whose expression is then a number becomes a
    static dim and a tensor with no symbolic dim left loses its
    `#tgraph.dims` encoding. `tgraph.dim` and `tgraph.dim_size` of the
    now-static dims fold to constants, and the run-time shape checks they
    fed are decided: a check that holds is dropped, one that fails is an
    error carrying the check's message. A symbol means the same in every
    function of the module (front ends trace a loss, its gradient and the
    step that calls both with the same names).

    ```mlir
    // -tessera-tgraph-bind-dims="dims=B=8"
    func.func @f(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
        -> tensor<?xf32, #tgraph.dims<["2*B"]>>
    // becomes
    func.func @f(%x: tensor<8x64xf32>) -> tensor<16xf32>
    ```

    Errors: a binding not written `NAME=SIZE` with a size >= 0, a name that
    no dim of the module uses, a dim expression that becomes negative.
  }];
  let options = [
    ListOption<"dims", "dims", "std::string",
               "Sizes of symbolic dims, NAME=SIZE (e.g. B=32,S=128)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // TESSERA_TGRAPH_PASSES
