// RUN: tessera-opt %s --split-input-file --tessera-tgraph-autodiff | FileCheck %s

// Spec 004 §3: the adjoint of sum(sin(x)) is cos(x) (times the seed 1
// spread over x).
!v = tensor<?xf32, #tgraph.dims<[N]>>
func.func @m(%x: !v {tgraph.name = "x"}) -> tensor<f32> {
  %y = tgraph.sin %x : !v
  %z = tgraph.reduce_sum %y {dims = array<i64: 0>} : !v -> tensor<f32>
  return %z : tensor<f32>
}
tgraph.adjoint @m wrt(%x) -> @m_grad

// CHECK-LABEL: func.func @m_grad
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<?xf32, #tgraph.dims<[N]>> {tgraph.name = "x"}) -> tensor<?xf32, #tgraph.dims<[N]>>
// CHECK: %[[ONE:.*]] = tgraph.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DY:.*]] = tgraph.broadcast_in_dim %[[ONE]] {broadcast_dimensions = array<i64>}
// CHECK: %[[COS:.*]] = tgraph.cos %[[X]]
// CHECK: %[[DX:.*]] = tgraph.mul %[[COS]], %[[DY]]
// CHECK: return %[[DX]]
// CHECK-NOT: tgraph.adjoint

// -----

// Spec 004 §4: the JVP of exp(x) is exp(x) * dx; the result comes first.
!v = tensor<?xf32, #tgraph.dims<[N]>>
func.func @m(%x: !v {tgraph.name = "x"}) -> !v {
  %y = tgraph.exp %x : !v
  return %y : !v
}
tgraph.jvp @m wrt(%x) -> @m_jvp

// CHECK-LABEL: func.func @m_jvp
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.*}} {tgraph.name = "x"}, %[[DX:[a-z0-9]+]]: {{.*}} {tgraph.name = "dx"})
// CHECK: %[[Y:.*]] = tgraph.exp %[[X]]
// CHECK: %[[DY:.*]] = tgraph.mul %[[Y]], %[[DX]]
// CHECK: return %[[Y]], %[[DY]]

// -----

// Spec 004 §9.3: Hessian-vector product of sum(sin(x)): -sin(x) * v.
!v = tensor<?xf32, #tgraph.dims<[N]>>
func.func @m(%x: !v {tgraph.name = "x"}) -> tensor<f32> {
  %y = tgraph.sin %x : !v
  %z = tgraph.reduce_sum %y {dims = array<i64: 0>} : !v -> tensor<f32>
  return %z : tensor<f32>
}
tgraph.hvp @m wrt(%x) dir(%v) -> @m_hvp

// CHECK-LABEL: func.func @m_hvp
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.*}} {tgraph.name = "x"}, %[[V:[a-z0-9]+]]: {{.*}} {tgraph.name = "v"})
// CHECK: %[[SIN:.*]] = tgraph.sin %[[X]]
// CHECK: %[[NEG:.*]] = tgraph.neg %[[SIN]]
// CHECK: %[[T:.*]] = tgraph.mul %[[NEG]], %[[V]]
// CHECK: %[[H:.*]] = tgraph.mul %[[T]], %{{.*}}
// CHECK: return %[[H]]

// -----

// Non-scalar results take a seed per float result; broadcasting operands
// get their cotangent summed back; wrt by position (%argN).
func.func @f(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %y = tgraph.mul %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
tgraph.adjoint @f wrt(%arg1) -> @f_vjp

// CHECK-LABEL: func.func @f_vjp
// CHECK-SAME: (%[[A:[a-z0-9]+]]: tensor<3x4xf32>, %{{[a-z0-9]+}}: tensor<4xf32>, %[[SEED:[a-z0-9]+]]: tensor<3x4xf32> {tgraph.name = "d0"}) -> tensor<4xf32>
// CHECK: %[[P:.*]] = tgraph.mul %[[A]], %[[SEED]]
// CHECK: %[[S:.*]] = tgraph.reduce_sum %[[P]] {dims = array<i64: 0>} : tensor<3x4xf32> -> tensor<4xf32>
// CHECK: return %[[S]]

// -----

// Higher order by composition: the JVP of a generated gradient.
func.func @f(%x: tensor<f64> {tgraph.name = "x"}) -> tensor<f64> {
  %y = tgraph.exp %x : tensor<f64>
  return %y : tensor<f64>
}
tgraph.jvp @f_grad wrt(%x) -> @f_grad_jvp
tgraph.adjoint @f wrt(%x) -> @f_grad

// CHECK-LABEL: func.func @f_grad(
// CHECK-LABEL: func.func @f_grad_jvp
// CHECK-SAME: {tgraph.name = "x"}, %[[DX:[a-z0-9]+]]: tensor<f64> {tgraph.name = "dx"}
// CHECK: %[[E:.*]] = tgraph.exp
// CHECK: %[[DE:.*]] = tgraph.mul %[[E]], %[[DX]]
// CHECK: return %[[E]], %[[DE]]

// -----

// Implicit differentiation: the adjoint of a fixed point is a fixed point
// (lambda = xbar + J_x^T lambda), not an unrolled loop.
func.func @f(%x0: tensor<4xf64>, %p: tensor<4xf64> {tgraph.name = "p"}) -> tensor<4xf64> {
  %x = tgraph.fixed_point %x0 params(%p : tensor<4xf64>) : tensor<4xf64> -> tensor<4xf64> {
  ^bb0(%x: tensor<4xf64>, %q: tensor<4xf64>):
    %s = tgraph.add %x, %q : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
    %t = tgraph.tanh %s : tensor<4xf64>
    tgraph.yield %t : tensor<4xf64>
  }
  return %x : tensor<4xf64>
}
tgraph.adjoint @f wrt(%p) -> @f_vjp

// CHECK-LABEL: func.func @f_vjp
// CHECK-SAME: %[[SEED:[a-z0-9]+]]: tensor<4xf64> {tgraph.name = "d0"}
// CHECK: %[[X:.*]] = tgraph.fixed_point
// CHECK: %[[L:.*]] = tgraph.fixed_point %[[SEED]] params(%[[X]], %{{.*}}, %[[SEED]] :
// CHECK: ^bb0(%[[LAMBDA:.*]]: tensor<4xf64>, %{{.*}}: tensor<4xf64>, %{{.*}}: tensor<4xf64>, %[[XBAR:.*]]: tensor<4xf64>):
// CHECK: tgraph.tanh
// CHECK: %[[JT:.*]] = tgraph.mul %{{.*}}, %[[LAMBDA]]
// CHECK: %[[NEXT:.*]] = tgraph.add %[[XBAR]], %[[JT]]
// CHECK: tgraph.yield %[[NEXT]]
// CHECK: tgraph.tanh
// CHECK: tgraph.mul %{{.*}}, %[[L]]
// CHECK: return

// -----

// A memory budget on the gradient: forward values needed late are
// recomputed (in an outlined function) instead of kept.
func.func @f(%x: tensor<64x64xf32>, %w: tensor<64x64xf32> {tgraph.name = "w"}) -> tensor<f32> {
  %a = tgraph.matmul %x, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %t = tgraph.tanh %a : tensor<64x64xf32>
  %b = tgraph.matmul %t, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %u = tgraph.tanh %b : tensor<64x64xf32>
  %s = tgraph.reduce_sum %u {dims = array<i64: 0, 1>} : (tensor<64x64xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
tgraph.adjoint @f wrt(%w) -> @f_grad {remat_budget = 16384}

// CHECK-LABEL: func.func @f_grad
// CHECK-SAME: tgraph.remat_budget = 16384 : i64

// -----

// fp8 operands accumulating in f32: the backward products run in f32 and
// the cotangents go back to fp8 (found by the fuzzer: mixed f32 x fp8
// products do not verify).
func.func @f(%a: tensor<4x16xf8E4M3FN>, %b: tensor<16x4xf8E4M3FN>) -> tensor<4x4xf32> {
  %c = tgraph.matmul %a, %b {policy = #tgraph.policy<accum = f32>}
      : (tensor<4x16xf8E4M3FN>, tensor<16x4xf8E4M3FN>) -> tensor<4x4xf32>
  return %c : tensor<4x4xf32>
}
tgraph.adjoint @f wrt(%arg0) -> @f_vjp

// CHECK-LABEL: func.func @f_vjp
// CHECK: %[[B:.*]] = tgraph.cast %arg1 : tensor<16x4xf8E4M3FN> -> tensor<16x4xf32>
// CHECK: %[[DA:.*]] = tgraph.matmul %arg2, %[[B]] {policy = #tgraph.policy<accum = f32>, transpose_rhs} : (tensor<4x4xf32>, tensor<16x4xf32>) -> tensor<4x16xf32>
// CHECK: %[[R:.*]] = tgraph.cast %[[DA]] : tensor<4x16xf32> -> tensor<4x16xf8E4M3FN>
// CHECK: return %[[R]]

// -----

// Collectives (SPMD: each device's loss is summed): all_reduce(sum) is its
// own transpose, all_gather and reduce_scatter(sum) are each other's,
// all_to_all swaps its split and concat dims, permute reverses its pairs.
func.func @m(%x: tensor<8x4xf32> {tgraph.name = "x"}) -> tensor<16x4xf32> {
  %a = tgraph.all_reduce %x {reduction = #tgraph<reduction sum>, axis_name = "data", group_size = 2 : i64} : tensor<8x4xf32>
  %t = tgraph.all_to_all %a {split_dim = 0 : i64, concat_dim = 1 : i64, axis_name = "data", group_size = 2 : i64} : tensor<8x4xf32> -> tensor<4x8xf32>
  %p = tgraph.permute %t {pairs = [array<i64: 0, 1>, array<i64: 1, 0>], axis_name = "pipe"} : tensor<4x8xf32>
  %r = tgraph.reduce_scatter %p {reduction = #tgraph<reduction sum>, dim = 1 : i64, axis_name = "model", group_size = 2 : i64} : tensor<4x8xf32> -> tensor<4x4xf32>
  %g = tgraph.all_gather %r {dim = 0 : i64, axis_name = "model", group_size = 4 : i64} : tensor<4x4xf32> -> tensor<16x4xf32>
  return %g : tensor<16x4xf32>
}
tgraph.adjoint @m wrt(%x) -> @m_vjp

// CHECK-LABEL: func.func @m_vjp
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<16x4xf32>
// CHECK-NOT: tgraph.all_reduce %arg0
// CHECK: %[[R:.*]] = tgraph.reduce_scatter %[[G]] {axis_name = "model", dim = 0 : i64, group_size = 4 : i64, reduction = #tgraph<reduction sum>} : tensor<16x4xf32> -> tensor<4x4xf32>
// CHECK: %[[P:.*]] = tgraph.all_gather %[[R]] {axis_name = "model", dim = 1 : i64, group_size = 2 : i64} : tensor<4x4xf32> -> tensor<4x8xf32>
// CHECK: %[[T:.*]] = tgraph.permute %[[P]] {axis_name = "pipe", pairs = [array<i64: 1, 0>, array<i64: 0, 1>]} : tensor<4x8xf32>
// CHECK: %[[A:.*]] = tgraph.all_to_all %[[T]] {axis_name = "data", concat_dim = 0 : i64, group_size = 2 : i64, split_dim = 1 : i64} : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK: %[[X:.*]] = tgraph.all_reduce %[[A]] {axis_name = "data", group_size = 2 : i64, reduction = #tgraph<reduction sum>} : tensor<8x4xf32>
// CHECK: return %[[X]]

// -----

// all_reduce(max): the derivative goes to the devices holding the maximum,
// shared among ties (counted across the group), in both modes.
func.func @m(%x: tensor<8xf32> {tgraph.name = "x"}) -> tensor<8xf32> {
  %a = tgraph.all_reduce %x {reduction = #tgraph<reduction max>, axis_name = "data", group_size = 4 : i64} : tensor<8xf32>
  return %a : tensor<8xf32>
}
tgraph.jvp @m wrt(%x) -> @m_jvp

// CHECK-LABEL: func.func @m_jvp
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<8xf32> {tgraph.name = "x"}, %[[T:[a-z0-9]+]]: tensor<8xf32>
// CHECK: %[[Y:.*]] = tgraph.all_reduce %[[X]] {{.*}}reduction = #tgraph<reduction max>
// CHECK: %[[EQ:.*]] = tgraph.compare eq, %[[X]], %[[Y]]
// CHECK: %[[AT:.*]] = tgraph.select %[[EQ]]
// CHECK: %[[N:.*]] = tgraph.all_reduce %[[AT]] {{.*}}reduction = #tgraph<reduction sum>
// CHECK: %[[W:.*]] = tgraph.div %[[AT]], %[[N]]
// CHECK: %[[WT:.*]] = tgraph.mul %[[W]], %[[T]]
// CHECK: %[[DY:.*]] = tgraph.all_reduce %[[WT]] {{.*}}reduction = #tgraph<reduction sum>
// CHECK: return %[[Y]], %[[DY]]

// -----

// stop_gradient: x * stop_gradient(x) has gradient stop_gradient(x) (the
// factor behind the stop is a constant); its JVP is stop_gradient(x) * dx.
!v = tensor<4xf32>
func.func @sg(%x: !v {tgraph.name = "x"}) -> tensor<f32> {
  %c = tgraph.stop_gradient %x : !v
  %p = tgraph.mul %x, %c : !v
  %s = tgraph.reduce_sum %p {dims = array<i64: 0>} : !v -> tensor<f32>
  return %s : tensor<f32>
}
tgraph.adjoint @sg wrt(%x) -> @sg_grad
tgraph.jvp @sg wrt(%x) -> @sg_jvp

// (Each generated function lands right after its source.)
// CHECK-LABEL: func.func @sg_jvp
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<4xf32> {tgraph.name = "x"}, %[[DX:[a-z0-9]+]]: tensor<4xf32>
// CHECK: %[[C:.*]] = tgraph.stop_gradient %[[X]]
// CHECK: tgraph.mul %[[DX]], %[[C]]
// CHECK-LABEL: func.func @sg_grad
// CHECK-SAME: (%[[X2:[a-z0-9]+]]: tensor<4xf32>
// CHECK: %[[C2:.*]] = tgraph.stop_gradient %[[X2]]
// CHECK-NOT: tgraph.add
// CHECK: tgraph.mul %{{.*}}, %[[C2]]
// CHECK-NOT: tgraph.add
// CHECK: return

// -----

// attention has its own reverse rule: one tgraph.attention_grad of q, k, v,
// the forward result and its cotangent, with the attention's attributes (a
// back end runs it as a fused kernel or expands it).
!t = tensor<2x16x8xf32>
func.func @att(%q: !t {tgraph.name = "q"}, %k: !t {tgraph.name = "k"},
               %v: !t {tgraph.name = "v"}, %w: !t) -> tensor<f32> {
  %o = tgraph.attention %q, %k, %v {causal, scale = 0.5 : f64} : !t
  %p = tgraph.mul %o, %w : !t
  %s = tgraph.reduce_sum %p {dims = array<i64: 0, 1, 2>} : !t -> tensor<f32>
  return %s : tensor<f32>
}
tgraph.adjoint @att wrt(%q, %k, %v) -> @att_grad

// CHECK-LABEL: func.func @att_grad
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<2x16x8xf32> {tgraph.name = "q"}, %[[K:[a-z0-9]+]]: tensor<2x16x8xf32> {tgraph.name = "k"}, %[[V:[a-z0-9]+]]: tensor<2x16x8xf32> {tgraph.name = "v"}, %[[W:[a-z0-9]+]]: tensor<2x16x8xf32>)
// CHECK: %[[O:.*]] = tgraph.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 5.000000e-01 : f64}
// CHECK: %[[G:.*]] = tgraph.mul %{{.*}}, %[[W]]
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tgraph.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[G]] {causal, scale = 5.000000e-01 : f64}
// CHECK-NOT: tgraph.softmax
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]

// -----

// The JVP of a bf16 product accumulated into an f32 result is computed in
// f32 (a bf16 tangent would not combine with the f32 ops that follow).
func.func @mixed(%q: tensor<2x4x8xbf16> {tgraph.name = "q"}) -> tensor<2x4x4xf32> {
  %s = tgraph.matmul %q, %q {policy = #tgraph.policy<accum = f32>, transpose_rhs} : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x4xf32>
  %c = tgraph.constant dense<0.5> : tensor<f32>
  %m = tgraph.mul %s, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  return %m : tensor<2x4x4xf32>
}
tgraph.jvp @mixed wrt(%q) -> @mixed_jvp

// CHECK-LABEL: func.func @mixed_jvp
// CHECK: %[[DQ:.*]] = tgraph.cast %{{.*}} : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK: tgraph.matmul %[[DQ]], %{{.*}} {policy = #tgraph.policy<accum = f32>, transpose_rhs} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
// CHECK: tgraph.mul %{{.*}}, %{{.*}} : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
