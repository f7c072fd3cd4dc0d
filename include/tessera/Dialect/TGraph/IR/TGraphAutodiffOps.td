//===- TGraphAutodiffOps.td - autodiff transformations -----*- tablegen -*-===//
//
// Declarations at module level that -tessera-tgraph-autodiff expands into
// new functions (spec 004). `wrt(%x)` names arguments of the function: by
// their `tgraph.name` argument attribute, or as `%argN` by position.
//
//===----------------------------------------------------------------------===//

class TGraph_AutodiffOp<string mnemonic>
    : TGraph_Op<mnemonic, [HasParent<"::mlir::ModuleOp">,
                           DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def TGraph_AdjointOp : TGraph_AutodiffOp<"adjoint"> {
  let summary = "declares the reverse-mode gradient of a function";
  let description = [{
    ```mlir
    tgraph.adjoint @m wrt(%x, %w) -> @m_grad
    ```
    `@m_grad` takes `@m`'s arguments and returns the gradients with respect
    to the `wrt` arguments, in that order. A function with one scalar float
    result is differentiated with seed 1; otherwise `@m_grad` takes one
    cotangent seed per float result after the arguments (named `d<result
    index>`) and returns the vector-Jacobian product. With
    `{remat_budget = N}` (bytes), -tessera-tgraph-remat recomputes forward
    values in the gradient instead of keeping them where the estimated peak
    of live tensors exceeds N.
  }];
  let arguments = (ins FlatSymbolRefAttr:$fn, StrArrayAttr:$wrt,
                       StrAttr:$result);
}

def TGraph_JvpOp : TGraph_AutodiffOp<"jvp"> {
  let summary = "declares the forward-mode derivative of a function";
  let description = [{
    ```mlir
    tgraph.jvp @m wrt(%x) -> @m_jvp
    ```
    `@m_jvp` takes `@m`'s arguments, then one tangent per `wrt` argument
    (named `d<name>`, or `d<name>_2`, `_3`, ... where that name is taken),
    and returns `@m`'s results followed by the tangents of its float
    results (the Jacobian-vector product).
  }];
  let arguments = (ins FlatSymbolRefAttr:$fn, StrArrayAttr:$wrt,
                       StrAttr:$result);
}

def TGraph_HvpOp : TGraph_AutodiffOp<"hvp"> {
  let summary = "declares a Hessian-vector product of a scalar function";
  let description = [{
    ```mlir
    tgraph.hvp @m wrt(%x) dir(%v) -> @m_hvp
    ```
    `@m_hvp` takes `@m`'s arguments, then one direction per `wrt` argument
    (named as in `dir`), and returns the Hessian of `@m`'s scalar result
    with respect to the `wrt` arguments applied to the directions: forward
    mode over the reverse-mode gradient.
  }];
  let arguments = (ins FlatSymbolRefAttr:$fn, StrArrayAttr:$wrt,
                       StrArrayAttr:$dir, StrAttr:$result);
}
