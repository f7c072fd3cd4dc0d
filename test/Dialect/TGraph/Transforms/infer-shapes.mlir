// RUN: tessera-opt %s -split-input-file --tessera-tgraph-infer-shapes -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s -split-input-file --tessera-tgraph-infer-shapes --tessera-tgraph-infer-shapes -verify-diagnostics | FileCheck %s
// RUN: not tessera-opt %s -split-input-file --tessera-tgraph-infer-shapes=allow-runtime-checks=false 2>&1 | FileCheck %s --check-prefix=STATIC

// The pass itself: run-time checks and their messages, how symbols are
// materialized for them, function signatures, calls and region arguments.
// Running it twice gives the same IR (no duplicated checks). Per-op result
// shapes are tested in ../infer.mlir.

// A broadcast of S against T cannot be decided at compile time: a run-time
// check whose message names the op, its location, the operand dims and both
// symbols.
// CHECK-LABEL: func.func @broadcast_s_vs_t
// CHECK-SAME: -> tensor<4x?xf32, #tgraph.dims<[4, S]>>
// CHECK: %[[S:.+]] = tgraph.dim %arg0, 1
// CHECK: %[[T:.+]] = tgraph.dim %arg1, 1
// CHECK: tgraph.assert_dim eq %[[S]], %[[T]], "'tgraph.add' op at {{.*}}infer-shapes.mlir:[[@LINE+7]]:8: broadcast mismatch: lhs (operand 0) dim 1 (S) must equal rhs (operand 1) dim 1 (T)"
// CHECK-NOT: tgraph.assert_dim
// CHECK: tgraph.add %arg0, %arg1 {{.*}} -> tensor<4x?xf32, #tgraph.dims<[4, S]>>
// STATIC: infer-shapes.mlir:[[@LINE+4]]:8: error: 'tgraph.add' op cannot prove at compile time that broadcast mismatch: lhs (operand 0) dim 1 (S) must equal rhs (operand 1) dim 1 (T) (run-time checks are disabled)
func.func @broadcast_s_vs_t(%a: tensor<4x?xf32, #tgraph.dims<[4, S]>>,
                            %b: tensor<4x?xf32, #tgraph.dims<[4, T]>>)
    -> tensor<?x?xf32> {
  %0 = tgraph.add %a, %b : (tensor<4x?xf32, #tgraph.dims<[4, S]>>,
      tensor<4x?xf32, #tgraph.dims<[4, T]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// An unknown dim against a constant: the result takes the constant, the
// check compares the run-time size with it.
// CHECK-LABEL: func.func @unknown_vs_constant
// CHECK-SAME: -> tensor<4xf32>
// CHECK-DAG: %[[N:.+]] = tgraph.dim %arg0, 0 : tensor<?xf32>
// CHECK-DAG: %[[FOUR:.+]] = arith.constant 4 : index
// CHECK: tgraph.assert_dim eq %[[N]], %[[FOUR]], "'tgraph.mul' op at {{.*}}: broadcast mismatch: lhs (operand 0) dim 0 (?) must equal rhs (operand 1) dim 0 (4)"
// CHECK: tgraph.mul %arg0, %arg1 : (tensor<?xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @unknown_vs_constant(%a: tensor<?xf32>, %b: tensor<4xf32>) -> tensor<?xf32> {
  %0 = tgraph.mul %a, %b : (tensor<?xf32>, tensor<4xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// Splitting D into H heads of D/H needs H to divide D: the check compares
// the element counts, with D/H computed by floor division at run time (by 1
// when H is 0, so the division cannot trap: the check then fails).
// CHECK-LABEL: func.func @reshape_into_heads
// CHECK-DAG: %[[B:.+]] = tgraph.dim %arg0, 0
// CHECK-DAG: %[[D:.+]] = tgraph.dim %arg0, 1
// CHECK: %[[IN:.+]] = arith.muli %[[B]], %[[D]] : index
// CHECK: %[[H:.+]] = tgraph.dim %arg1, 0
// CHECK: %[[ZERO:.+]] = arith.cmpi eq, %[[H]], %{{.+}} : index
// CHECK: %[[SAFE:.+]] = arith.select %[[ZERO]], %{{.+}}, %[[H]] : index
// CHECK: %[[DH:.+]] = arith.floordivsi %[[D]], %[[SAFE]] : index
// CHECK: %[[T:.+]] = arith.muli %[[B]], %[[DH]] : index
// CHECK: %[[OUT:.+]] = arith.muli %[[T]], %[[H]] : index
// CHECK: tgraph.assert_dim eq %[[IN]], %[[OUT]], "'tgraph.reshape' op at {{.*}}: reshape must preserve the element count: operand 0 element count (B*D) must equal result element count (B*(D/H)*H)"
func.func @reshape_into_heads(%x: tensor<?x?xf32, #tgraph.dims<[B, D]>>,
                              %heads: tensor<?xf32, #tgraph.dims<[H]>>)
    -> tensor<?x?x?xf32, #tgraph.dims<[B, H, "D/H"]>> {
  %0 = tgraph.reshape %x : tensor<?x?xf32, #tgraph.dims<[B, D]>>
      -> tensor<?x?x?xf32, #tgraph.dims<[B, H, "D/H"]>>
  return %0 : tensor<?x?x?xf32, #tgraph.dims<[B, H, "D/H"]>>
}

// -----

// An exact split (512 = 8 * 64) needs no check.
// CHECK-LABEL: func.func @reshape_exact
// CHECK-NOT: tgraph.assert_dim
// CHECK: tgraph.reshape
func.func @reshape_exact(%x: tensor<?x512xf32, #tgraph.dims<[B, 512]>>)
    -> tensor<?x8x64xf32, #tgraph.dims<[B, 8, 64]>> {
  %0 = tgraph.reshape %x : tensor<?x512xf32, #tgraph.dims<[B, 512]>>
      -> tensor<?x8x64xf32, #tgraph.dims<[B, 8, 64]>>
  return %0 : tensor<?x8x64xf32, #tgraph.dims<[B, 8, 64]>>
}

// -----

// A check needs every symbol to have a value at run time: Q is bound by no
// argument.
func.func @unbound_symbol(%x: tensor<?x?xf32, #tgraph.dims<[B, D]>>)
    -> tensor<?x?x?xf32, #tgraph.dims<[B, Q, "D/Q"]>> {
  // expected-error @+1 {{'tgraph.reshape' op cannot check a shape at run time: symbol Q is not a dim of any operand or function argument}}
  %0 = tgraph.reshape %x : tensor<?x?xf32, #tgraph.dims<[B, D]>>
      -> tensor<?x?x?xf32, #tgraph.dims<[B, Q, "D/Q"]>>
  return %0 : tensor<?x?x?xf32, #tgraph.dims<[B, Q, "D/Q"]>>
}

// -----

// A declared result dim (T) that may differ from the produced one (H) stays
// as declared, with a check.
// CHECK-LABEL: func.func @declared_vs_inferred
// CHECK-DAG: %[[H:.+]] = tgraph.dim %arg1, 1
// CHECK-DAG: %[[T:.+]] = tgraph.dim %arg2, 0
// CHECK: tgraph.assert_dim eq %[[T]], %[[H]], "'tgraph.matmul' op at {{.*}}: result 0 dim 1 is declared as T but the op produces H"
// CHECK: tgraph.matmul {{.*}} -> tensor<?x?xf32, #tgraph.dims<[B, T]>>
func.func @declared_vs_inferred(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>,
                                %w: tensor<8x?xf32, #tgraph.dims<[8, H]>>,
                                %t: tensor<?xf32, #tgraph.dims<[T]>>)
    -> tensor<?x?xf32, #tgraph.dims<[B, T]>> {
  %0 = tgraph.matmul %x, %w : (tensor<?x8xf32, #tgraph.dims<[B, 8]>>,
      tensor<8x?xf32, #tgraph.dims<[8, H]>>) -> tensor<?x?xf32, #tgraph.dims<[B, T]>>
  return %0 : tensor<?x?xf32, #tgraph.dims<[B, T]>>
}

// -----

// Refinements flow through a chain of ops into the function's result type.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: -> tensor<?x32xf32, #tgraph.dims<[B, 32]>>
// CHECK: tgraph.matmul {{.*}} -> tensor<?x16xf32, #tgraph.dims<[B, 16]>>
// CHECK: tgraph.tanh %{{.*}} : tensor<?x16xf32, #tgraph.dims<[B, 16]>>
// CHECK: tgraph.matmul {{.*}} -> tensor<?x32xf32, #tgraph.dims<[B, 32]>>
// CHECK: return %{{.*}} : tensor<?x32xf32, #tgraph.dims<[B, 32]>>
func.func @chain(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>, %w1: tensor<8x16xf32>,
                 %w2: tensor<16x32xf32>) -> tensor<?x?xf32> {
  %h = tgraph.matmul %x, %w1 : (tensor<?x8xf32, #tgraph.dims<[B, 8]>>, tensor<8x16xf32>) -> tensor<?x?xf32>
  %a = tgraph.tanh %h : tensor<?x?xf32>
  %y = tgraph.matmul %a, %w2 : (tensor<?x?xf32>, tensor<16x32xf32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Calls bind the callee's symbols (N -> B, D -> 64), so the result is
// [B, 2*64]; the callee's own signature is refined too.
// CHECK-LABEL: func.func @widen
// CHECK-SAME: -> tensor<?x?xf32, #tgraph.dims<[N, "2*D"]>>
// CHECK-LABEL: func.func @caller
// CHECK-SAME: -> tensor<?x128xf32, #tgraph.dims<[B, 128]>>
// CHECK: tgraph.call @widen(%arg0) : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x128xf32, #tgraph.dims<[B, 128]>>
func.func @widen(%x: tensor<?x?xf32, #tgraph.dims<[N, D]>>) -> tensor<?x?xf32> {
  %y = tgraph.concat %x, %x {dim = 1 : i64} : (tensor<?x?xf32, #tgraph.dims<[N, D]>>,
      tensor<?x?xf32, #tgraph.dims<[N, D]>>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
func.func @caller(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %y = tgraph.call @widen(%x) : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Two arguments that the callee says are both N, passed S and T: checked at
// run time at the call.
// CHECK-LABEL: func.func @call_binding_check
// CHECK-DAG: %[[T:.+]] = tgraph.dim %arg1, 0
// CHECK-DAG: %[[S:.+]] = tgraph.dim %arg0, 0
// CHECK: tgraph.assert_dim eq %[[T]], %[[S]], "'tgraph.call' op at {{.*}}: argument shape mismatch: operand 1 dim 0 (T) must equal the callee's parameter 1 dim 0 (N) (S)"
func.func private @pair(tensor<?xf32, #tgraph.dims<[N]>>, tensor<?xf32, #tgraph.dims<[N]>>)
    -> tensor<?xf32, #tgraph.dims<[N]>>
func.func @call_binding_check(%a: tensor<?xf32, #tgraph.dims<[S]>>,
                              %b: tensor<?xf32, #tgraph.dims<[T]>>) -> tensor<?xf32> {
  %y = tgraph.call @pair(%a, %b) : (tensor<?xf32, #tgraph.dims<[S]>>,
      tensor<?xf32, #tgraph.dims<[T]>>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Region arguments take the refined types of what they receive: the scan
// body sees slices [64] of xs [L, 64] and its output stacks to [L, 64].
// CHECK-LABEL: func.func @scan_body
// CHECK-SAME: -> (tensor<64xf32>, tensor<?x64xf32, #tgraph.dims<[L, 64]>>)
// CHECK: tgraph.scan init(%arg0 : tensor<64xf32>) over(%arg1 : tensor<?x64xf32, #tgraph.dims<[L, 64]>>) -> (tensor<64xf32>, tensor<?x64xf32, #tgraph.dims<[L, 64]>>)
// CHECK: ^bb0(%{{.*}}: tensor<64xf32>, %[[XT:.+]]: tensor<64xf32>):
// CHECK: tgraph.add %{{.*}}, %[[XT]] : tensor<64xf32>
func.func @scan_body(%h0: tensor<64xf32>, %xs: tensor<?x64xf32, #tgraph.dims<[L, 64]>>)
    -> (tensor<64xf32>, tensor<?x?xf32>) {
  %h, %ys = tgraph.scan init(%h0 : tensor<64xf32>) over(%xs : tensor<?x64xf32, #tgraph.dims<[L, 64]>>)
      -> (tensor<64xf32>, tensor<?x?xf32>) {
  ^bb0(%c: tensor<64xf32>, %x: tensor<?xf32>):
    %n = tgraph.add %c, %x : (tensor<64xf32>, tensor<?xf32>) -> tensor<?xf32>
    %m = tgraph.reshape %n : tensor<?xf32> -> tensor<64xf32>
    tgraph.yield %m, %m : tensor<64xf32>, tensor<64xf32>
  }
  return %h, %ys : tensor<64xf32>, tensor<?x?xf32>
}

// -----

// The body of a fixed point sees the types of its init and params.
// CHECK-LABEL: func.func @fixed_point_body
// CHECK: ^bb0(%{{.*}}: tensor<?xf64, #tgraph.dims<[N]>>, %{{.*}}: tensor<?x?xf64, #tgraph.dims<[N, N]>>):
func.func @fixed_point_body(%x0: tensor<?xf64, #tgraph.dims<[N]>>,
                            %w: tensor<?x?xf64, #tgraph.dims<[N, N]>>) -> tensor<?xf64, #tgraph.dims<[N]>> {
  %x = tgraph.fixed_point %x0 params(%w : tensor<?x?xf64, #tgraph.dims<[N, N]>>)
      : tensor<?xf64, #tgraph.dims<[N]>> -> tensor<?xf64, #tgraph.dims<[N]>> {
  ^bb0(%z: tensor<?xf64>, %m: tensor<?x?xf64>):
    %t = tgraph.tanh %z : tensor<?xf64>
    tgraph.yield %t : tensor<?xf64>
  }
  return %x : tensor<?xf64, #tgraph.dims<[N]>>
}

// -----

// A branch of length T under a result declared [S]: checked before the cond.
// CHECK-LABEL: func.func @cond_branch_check
// CHECK-DAG: %[[S:.+]] = tgraph.dim %arg1, 0
// CHECK-DAG: %[[T:.+]] = tgraph.dim %arg2, 0
// CHECK: tgraph.assert_dim eq %[[T]], %[[S]], "'tgraph.cond' op at {{.*}}: branch/result mismatch: the else branch's result 0 dim 0 (T) must equal result 0 dim 0 (S)"
// CHECK: tgraph.cond
func.func @cond_branch_check(%p: tensor<i1>, %a: tensor<?xf32, #tgraph.dims<[S]>>,
                             %b: tensor<?xf32, #tgraph.dims<[T]>>) -> tensor<?xf32, #tgraph.dims<[S]>> {
  %r = tgraph.cond %p -> tensor<?xf32, #tgraph.dims<[S]>> {
    tgraph.yield %a : tensor<?xf32, #tgraph.dims<[S]>>
  } else {
    tgraph.yield %b : tensor<?xf32, #tgraph.dims<[T]>>
  }
  return %r : tensor<?xf32, #tgraph.dims<[S]>>
}

// -----

// Inside an isolated region (a checkpoint body) a check reads its symbols
// from the region's arguments, not from the function's.
// CHECK-LABEL: func.func @check_inside_isolated_region
// CHECK: tgraph.checkpoint
// CHECK: ^bb0(%[[A:.+]]: tensor<?xf32, #tgraph.dims<[N]>>, %[[M:.+]]: tensor<?xf32, #tgraph.dims<[M]>>):
// CHECK: %[[N:.+]] = tgraph.dim %[[A]], 0
// CHECK: %[[MV:.+]] = tgraph.dim %[[M]], 0
// CHECK: tgraph.assert_dim eq %[[N]], %[[MV]]
func.func @check_inside_isolated_region(%x: tensor<?xf32, #tgraph.dims<[N]>>, %m: tensor<?xf32, #tgraph.dims<[M]>>)
    -> tensor<?xf32, #tgraph.dims<[M]>> {
  %r = tgraph.checkpoint (%x, %m : tensor<?xf32, #tgraph.dims<[N]>>, tensor<?xf32, #tgraph.dims<[M]>>)
      -> tensor<?xf32, #tgraph.dims<[M]>> {
  ^bb0(%a: tensor<?xf32, #tgraph.dims<[N]>>, %b: tensor<?xf32, #tgraph.dims<[M]>>):
    %y = tgraph.reshape %a : tensor<?xf32, #tgraph.dims<[N]>> -> tensor<?xf32, #tgraph.dims<[M]>>
    tgraph.yield %y : tensor<?xf32, #tgraph.dims<[M]>>
  }
  return %r : tensor<?xf32, #tgraph.dims<[M]>>
}

// -----

// func.call sites follow a refined callee signature.
// CHECK-LABEL: func.func @callee_refined
// CHECK-SAME: -> tensor<4xf32>
// CHECK-LABEL: func.func @func_call_site
// CHECK: call @callee_refined(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
func.func @callee_refined(%x: tensor<4xf32>) -> tensor<?xf32> {
  %y = tgraph.neg %x : tensor<4xf32>
  %z = tgraph.reshape %y : tensor<4xf32> -> tensor<?xf32>
  return %z : tensor<?xf32>
}
func.func @func_call_site(%x: tensor<4xf32>) -> tensor<?xf32> {
  %y = func.call @callee_refined(%x) : (tensor<4xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// A chain of six calls refines all the way down in one run.
// CHECK-LABEL: func.func @f0
// CHECK-SAME: -> tensor<?x3xf32, #tgraph.dims<[B, 3]>>
func.func @f0(%x: tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32> {
  %y = tgraph.call @f1(%x) : (tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
func.func @f1(%x: tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32> {
  %y = tgraph.call @f2(%x) : (tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
func.func @f2(%x: tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32> {
  %y = tgraph.call @f3(%x) : (tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
func.func @f3(%x: tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32> {
  %y = tgraph.call @f4(%x) : (tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
func.func @f4(%x: tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32> {
  %y = tgraph.call @f5(%x) : (tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
func.func @f5(%x: tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32> {
  %y = tgraph.add %x, %x : (tensor<?x3xf32, #tgraph.dims<[B, 3]>>, tensor<?x3xf32, #tgraph.dims<[B, 3]>>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// broadcast_in_dim allows an operand dim that is 1 at run time: S must be 1
// or T. The result keeps the declared T (no second check).
// CHECK-LABEL: func.func @broadcast_in_dim_runtime_one
// CHECK-DAG: %[[S:.+]] = tgraph.dim %arg0, 0
// CHECK-DAG: %[[T:.+]] = tgraph.dim %arg1, 0
// CHECK: tgraph.assert_dim eq_or_one %[[S]], %[[T]], "'tgraph.broadcast_in_dim' op at {{.*}}: broadcast_in_dim needs each operand dim to be 1 or equal to its result dim: operand 0 dim 0 (S) must be 1 or equal result dim 1 (T)"
// CHECK-NOT: tgraph.assert_dim
// CHECK: tgraph.broadcast_in_dim {{.*}} -> tensor<4x?xf32, #tgraph.dims<[4, T]>>
func.func @broadcast_in_dim_runtime_one(%x: tensor<?xf32, #tgraph.dims<[S]>>, %t: tensor<?xf32, #tgraph.dims<[T]>>)
    -> tensor<4x?xf32, #tgraph.dims<[4, T]>> {
  %0 = tgraph.broadcast_in_dim %x {broadcast_dimensions = array<i64: 1>}
      : tensor<?xf32, #tgraph.dims<[S]>> -> tensor<4x?xf32, #tgraph.dims<[4, T]>>
  return %0 : tensor<4x?xf32, #tgraph.dims<[4, T]>>
}

// -----

// Grouped conv with a '?' filter channel dim: C == 2 * filter channels is
// checked at run time.
// CHECK-LABEL: func.func @conv_unknown_filter_channels
// CHECK-DAG: %[[C:.+]] = tgraph.dim %arg0, 1
// CHECK-DAG: %[[TWO:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[I:.+]] = tgraph.dim %arg1, 1
// CHECK: %[[G:.+]] = arith.muli %[[TWO]], %[[I]] : index
// CHECK: tgraph.assert_dim eq %[[C]], %[[G]], "'tgraph.conv2d' op at {{.*}}: input channel mismatch: input (operand 0) dim 1 (C) must equal filter (operand 1) dim 1 times groups (2) (?)"
func.func @conv_unknown_filter_channels(%x: tensor<2x?x5x5xf32, #tgraph.dims<[2, C, 5, 5]>>,
                                        %w: tensor<4x?x3x3xf32>) -> tensor<2x4x3x3xf32> {
  %0 = tgraph.conv2d %x, %w {groups = 2 : i64}
      : (tensor<2x?x5x5xf32, #tgraph.dims<[2, C, 5, 5]>>, tensor<4x?x3x3xf32>) -> tensor<2x4x3x3xf32>
  return %0 : tensor<2x4x3x3xf32>
}
