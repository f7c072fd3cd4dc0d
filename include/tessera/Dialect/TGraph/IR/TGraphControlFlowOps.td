//===- TGraphControlFlowOps.td - structured control flow ---*- tablegen -*-===//

def TGraph_YieldOp : TGraph_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["CondOp", "WhileOp", "ScanOp", "FixedPointOp", "SolveOp",
                 "CheckpointOp"]>]> {
  let summary = "returns values from a Graph IR region";
  let description = [{
    ```mlir
    tgraph.yield %carry, %y : tensor<4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
}

def TGraph_CondOp : TGraph_InferOp<"cond", [RecursiveMemoryEffects,
    NoRegionArguments]> {
  let summary = "if-then-else on a boolean scalar";
  let description = [{
    Runs one region and returns what it yields. Where the branches yield
    different sizes, the result dim is `?`.

    ```mlir
    %r = tgraph.cond %p -> tensor<4xf32> {
      tgraph.yield %a : tensor<4xf32>
    } else {
      tgraph.yield %b : tensor<4xf32>
    }
    ```
  }];
  let arguments = (ins TGraph_ScalarPred:$pred);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$then_region,
                        SizedRegion<1>:$else_region);
  let assemblyFormat = [{
    $pred (`->` type($results)^)? $then_region `else` $else_region attr-dict
  }];
  let hasCanonicalizer = 1;
}

def TGraph_WhileOp : TGraph_InferOp<"while", [RecursiveMemoryEffects]> {
  let summary = "loop while a condition holds";
  let description = [{
    The carried values start as `inits`; `cond` maps them to a boolean
    scalar, and `body` maps them to the next values. Both regions take the
    carried values as arguments; the results are the final values. A static
    `trip_count` tells autodiff how many iterations to expect (so it can
    store them); otherwise the carry is checkpointed.

    ```mlir
    %r = tgraph.while (%zero) : tensor<i64> -> tensor<i64> attributes {trip_count = 10 : i64} cond {
    ^bb0(%it: tensor<i64>):
      %c = tgraph.compare lt, %it, %ten : (tensor<i64>, tensor<i64>) -> tensor<i1>
      tgraph.yield %c : tensor<i1>
    } do {
    ^bb0(%it: tensor<i64>):
      %n = tgraph.add %it, %one : tensor<i64>
      tgraph.yield %n : tensor<i64>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inits,
                       OptionalAttr<I64Attr>:$trip_count);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$cond_region,
                        SizedRegion<1>:$body_region);
  let assemblyFormat = [{
    `(` $inits `)` `:` type($inits) `->` type($results) attr-dict-with-keyword
    `cond` $cond_region `do` $body_region
  }];
}

def TGraph_ScanOp : TGraph_InferOp<"scan", [RecursiveMemoryEffects,
    AttrSizedOperandSegments]> {
  let summary = "loop over the leading dimension with a carried state";
  let description = [{
    As `jax.lax.scan`: the body gets the carry and one slice of each of `xs`
    (their leading dim is the length L, or `length` when there are no xs) and
    yields the next carry and one slice of each output. Results are the
    final carry followed by the outputs stacked along a new leading dim of
    size L. With `reverse`, slices are visited from the end.

    ```mlir
    %h, %ys = tgraph.scan init(%h0 : tensor<64xf32>)
        over(%xs : tensor<?x64xf32, #tgraph.dims<[T, 64]>>)
        -> (tensor<64xf32>, tensor<?x64xf32, #tgraph.dims<[T, 64]>>) {
    ^bb0(%h: tensor<64xf32>, %x: tensor<64xf32>):
      %n = tgraph.add %h, %x : tensor<64xf32>
      tgraph.yield %n, %n : tensor<64xf32>, tensor<64xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inits, Variadic<TGraph_Tensor>:$xs,
                       OptionalAttr<I64Attr>:$length, UnitAttr:$reverse);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `init` `(` ($inits^ `:` type($inits))? `)`
    `over` `(` ($xs^ `:` type($xs))? `)`
    (`->` `(` type($results)^ `)`)? attr-dict-with-keyword $body
  }];
}

class TGraph_IterativeSolveOp<string mnemonic>
    : TGraph_InferOp<mnemonic, [RecursiveMemoryEffects, IsolatedFromAbove]> {
  let arguments = (ins TGraph_FloatTensor:$init, Variadic<AnyType>:$params,
                       DefaultValuedAttr<F64Attr, "1e-6">:$tol,
                       DefaultValuedAttr<I64Attr, "100">:$max_iter);
  let results = (outs TGraph_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $init (`params` `(` $params^ `:` type($params) `)`)? attr-dict `:`
    type($init)
    `->` type($result) $body
  }];
}

def TGraph_FixedPointOp : TGraph_IterativeSolveOp<"fixed_point"> {
  let summary = "fixed point x* = F(x*, params) by iteration";
  let description = [{
    Iterates `x <- F(x, params)` from `init` until the largest change is at
    most `tol` or `max_iter` iterations ran. The body takes `x` then the
    params and yields F. Autodiff differentiates it implicitly (through the
    adjoint equation), not by unrolling, so the params are explicit operands.

    ```mlir
    %x = tgraph.fixed_point %x0 params(%w, %theta : tensor<8x8xf64>, tensor<8xf64>)
        {tol = 1.0e-10 : f64} : tensor<8xf64> -> tensor<8xf64> {
    ^bb0(%x: tensor<8xf64>, %W: tensor<8x8xf64>, %t: tensor<8xf64>):
      ...
      tgraph.yield %next : tensor<8xf64>
    }
    ```
  }];
}

def TGraph_SolveOp : TGraph_IterativeSolveOp<"solve"> {
  let summary = "root x* of F(x*, params) = 0";
  let description = [{
    Finds `x` with `F(x, params) = 0` by Newton's method from `init`, until
    `max |F(x)| <= tol`, in at most `max_iter` steps (otherwise the call
    fails with an error). The body takes `x` then the params and yields the
    residual F, which has the shape of `x`. The CPU back end treats x as a
    vector of its N elements and forms the Jacobian by forward differences
    (N + 1 evaluations of the body and a dense O(N^3) solve per step), which
    suits small systems. Gradients come from the implicit function theorem.

    ```mlir
    %x = tgraph.solve %x0 params(%a : tensor<4xf64>) : tensor<4xf64> -> tensor<4xf64> {
    ^bb0(%x: tensor<4xf64>, %p: tensor<4xf64>):
      %sq = tgraph.mul %x, %x : tensor<4xf64>
      %r = tgraph.sub %sq, %p : tensor<4xf64>
      tgraph.yield %r : tensor<4xf64>
    }
    ```
  }];
}

def TGraph_CheckpointOp : TGraph_InferOp<"checkpoint",
    [RecursiveMemoryEffects, IsolatedFromAbove]> {
  let summary = "a region whose activations are recomputed in the backward pass";
  let description = [{
    Runs the body on the operands. Reverse-mode autodiff keeps only the
    operands and recomputes the body's intermediates when it needs them,
    trading compute for memory.

    ```mlir
    %y = tgraph.checkpoint (%x : tensor<?x512xf32, #tgraph.dims<[B, 512]>>)
        -> tensor<?x512xf32, #tgraph.dims<[B, 512]>> {
    ^bb0(%a: tensor<?x512xf32, #tgraph.dims<[B, 512]>>):
      %h = tgraph.gelu %a : tensor<?x512xf32, #tgraph.dims<[B, 512]>>
      tgraph.yield %h : tensor<?x512xf32, #tgraph.dims<[B, 512]>>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` ($args^ `:` type($args))? `)` (`->` type($results)^)? attr-dict-with-keyword $body
  }];
}

def TGraph_CallOp : TGraph_Op<"call", [CallOpInterface,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "calls a function, binding its shape symbols";
  let description = [{
    The callee's symbolic dims bind to the argument dims (`B` in the callee
    becomes `32` or `N` here), so result types follow from the call site.

    ```mlir
    %y = tgraph.call @layer(%x) : (tensor<?x64xf32, #tgraph.dims<[N, 64]>>)
        -> tensor<?x64xf32, #tgraph.dims<[N, 64]>>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$args,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $callee `(` $args `)` attr-dict `:` functional-type($args, $results)
  }];
  let extraClassDeclaration = [{
    ::mlir::CallInterfaceCallable getCallableForCallee() { return getCalleeAttr(); }
    void setCalleeFromCallable(::mlir::CallInterfaceCallable callee) {
      setCalleeAttr(::llvm::cast<::mlir::FlatSymbolRefAttr>(
          ::llvm::cast<::mlir::SymbolRefAttr>(callee)));
    }
    ::mlir::Operation::operand_range getArgOperands() { return getArgs(); }
    ::mlir::MutableOperandRange getArgOperandsMutable() { return getArgsMutable(); }
  }];
}

def TGraph_CustomVjpOp : TGraph_Op<"custom_vjp",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "calls a function whose reverse-mode rule is user-defined";
  let description = [{
    Evaluates `@callee`. Reverse-mode autodiff does not look inside it: it
    calls `fwd` (same arguments; returns the callee's results followed by
    residuals) and `bwd` (takes the residuals then one cotangent per result;
    returns one cotangent per argument).

    ```mlir
    %y = tgraph.custom_vjp @clip(%x) fwd @clip_fwd bwd @clip_bwd
        : (tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$args,
                       FlatSymbolRefAttr:$fwd, FlatSymbolRefAttr:$bwd);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $callee `(` $args `)` `fwd` $fwd `bwd` $bwd attr-dict `:`
    functional-type($args, $results)
  }];
}

def TGraph_CustomJvpOp : TGraph_Op<"custom_jvp",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "calls a function whose forward-mode rule is user-defined";
  let description = [{
    Evaluates `@callee`. Forward-mode autodiff calls `jvp` instead: it takes
    the arguments then one tangent per argument and returns the results then
    one tangent per result.

    ```mlir
    %y = tgraph.custom_jvp @softplus(%x) jvp @softplus_jvp
        : (tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<AnyType>:$args,
                       FlatSymbolRefAttr:$jvp);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $callee `(` $args `)` `jvp` $jvp attr-dict `:`
    functional-type($args, $results)
  }];
}
