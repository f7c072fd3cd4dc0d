// RUN: tessera-opt %s | tessera-opt | FileCheck %s
// RUN: tessera-opt %s --mlir-print-op-generic | tessera-opt | FileCheck %s

// Round trip of every Graph IR op: the custom syntax prints back as written,
// and the generic form parses back to the same IR.

!bd = tensor<?x64xf32, #tgraph.dims<[B, 64]>>
!s = tensor<?xf32, #tgraph.dims<[S]>>

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @generators
func.func @generators(%x: !bd) -> (tensor<2xf32>, !bd, !bd, !bd,
    tensor<?x?xi64, #tgraph.dims<[B, S]>>) {
  // CHECK: tgraph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %c = tgraph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: tgraph.full {value = 0.000000e+00 : f32} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %f = tgraph.full {value = 0.0 : f32} : !bd
  // CHECK: tgraph.zeros_like %{{.*}} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %z = tgraph.zeros_like %x : !bd
  // CHECK: tgraph.ones_like %{{.*}} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %o0 = tgraph.ones_like %x : !bd
  // CHECK: tgraph.stop_gradient %{{.*}} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %o = tgraph.stop_gradient %o0 : !bd
  // CHECK: tgraph.iota {dim = 1 : i64} : tensor<?x?xi64, #tgraph.dims<[B, S]>>
  %i = tgraph.iota {dim = 1 : i64} : tensor<?x?xi64, #tgraph.dims<[B, S]>>
  return %c, %f, %z, %o, %i : tensor<2xf32>, !bd, !bd, !bd,
      tensor<?x?xi64, #tgraph.dims<[B, S]>>
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unary
func.func @unary(%x: !bd, %i: tensor<4xi32>) {
  // CHECK: tgraph.neg %{{.*}} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %0 = tgraph.neg %x : !bd
  // CHECK: tgraph.abs %{{.*}} : tensor<4xi32>
  %1 = tgraph.abs %i : tensor<4xi32>
  // CHECK: tgraph.exp
  %2 = tgraph.exp %x : !bd
  // CHECK: tgraph.log
  %3 = tgraph.log %x : !bd
  // CHECK: tgraph.log1p
  %4 = tgraph.log1p %x : !bd
  // CHECK: tgraph.sin
  %5 = tgraph.sin %x : !bd
  // CHECK: tgraph.cos
  %6 = tgraph.cos %x : !bd
  // CHECK: tgraph.tanh
  %7 = tgraph.tanh %x : !bd
  // CHECK: tgraph.sigmoid
  %8 = tgraph.sigmoid %x : !bd
  // CHECK: tgraph.relu %{{.*}} : tensor<4xi32>
  %9 = tgraph.relu %i : tensor<4xi32>
  // CHECK: tgraph.gelu %{{.*}} : tensor<?x64xf32
  %10 = tgraph.gelu %x : !bd
  // CHECK: tgraph.gelu %{{.*}} {approximate} : tensor<?x64xf32
  %11 = tgraph.gelu %x {approximate} : !bd
  // CHECK: tgraph.silu
  %12 = tgraph.silu %x : !bd
  // CHECK: tgraph.sqrt
  %13 = tgraph.sqrt %x : !bd
  // CHECK: tgraph.rsqrt
  %14 = tgraph.rsqrt %x : !bd
  // CHECK: tgraph.reciprocal
  %15 = tgraph.reciprocal %x : !bd
  // CHECK: tgraph.square %{{.*}} : tensor<4xi32>
  %16 = tgraph.square %i : tensor<4xi32>
  // CHECK: tgraph.floor
  %17 = tgraph.floor %x : !bd
  // CHECK: tgraph.sign %{{.*}} : tensor<?x64xf32
  %18 = tgraph.sign %x : !bd
  // CHECK: tgraph.erf
  %19 = tgraph.erf %x : !bd
  return
}

// CHECK-LABEL: func.func @binary
func.func @binary(%x: !bd, %b: tensor<64xf32>, %i: tensor<4xi8>) {
  // CHECK: tgraph.add %{{.*}}, %{{.*}} : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %0 = tgraph.add %x, %b : (!bd, tensor<64xf32>) -> !bd
  // CHECK: tgraph.sub %{{.*}}, %{{.*}} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %1 = tgraph.sub %x, %x : !bd
  // CHECK: tgraph.mul %{{.*}}, %{{.*}} : tensor<4xi8>
  %2 = tgraph.mul %i, %i : tensor<4xi8>
  // CHECK: tgraph.div
  %3 = tgraph.div %x, %b : (!bd, tensor<64xf32>) -> !bd
  // CHECK: tgraph.pow
  %4 = tgraph.pow %x, %x : !bd
  // CHECK: tgraph.max
  %5 = tgraph.max %x, %x : !bd
  // CHECK: tgraph.min
  %6 = tgraph.min %i, %i : tensor<4xi8>
  // CHECK: tgraph.compare lt, %{{.*}}, %{{.*}} : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<64xf32>) -> tensor<?x64xi1, #tgraph.dims<[B, 64]>>
  %7 = tgraph.compare lt, %x, %b : (!bd, tensor<64xf32>) -> tensor<?x64xi1, #tgraph.dims<[B, 64]>>
  // CHECK: tgraph.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x64xi1, #tgraph.dims<[B, 64]>>, tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %8 = tgraph.select %7, %x, %b : (tensor<?x64xi1, #tgraph.dims<[B, 64]>>, !bd, tensor<64xf32>) -> !bd
  return
}

// CHECK-LABEL: func.func @casts
func.func @casts(%x: !bd, %m: tensor<4xi1>) {
  // CHECK: tgraph.cast %{{.*}} {policy = #tgraph.policy<saturate>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x64xf8E4M3FN, #tgraph.dims<[B, 64]>>
  %0 = tgraph.cast %x {policy = #tgraph.policy<saturate>} : !bd -> tensor<?x64xf8E4M3FN, #tgraph.dims<[B, 64]>>
  // CHECK: tgraph.cast %{{.*}} {policy = #tgraph.policy<stochastic_round>} : {{.*}} -> tensor<?x64xbf16
  %1 = tgraph.cast %x {policy = #tgraph.policy<stochastic_round>} : !bd -> tensor<?x64xbf16, #tgraph.dims<[B, 64]>>
  // CHECK: tgraph.cast %{{.*}} : tensor<4xi1> -> tensor<4xf32>
  %2 = tgraph.cast %m : tensor<4xi1> -> tensor<4xf32>
  // CHECK: tgraph.cast %{{.*}} : {{.*}} -> tensor<?x64xtf32
  %3 = tgraph.cast %x : !bd -> tensor<?x64xtf32, #tgraph.dims<[B, 64]>>
  // CHECK: tgraph.cast %{{.*}} : {{.*}} -> tensor<?x64xi4
  %4 = tgraph.cast %x : !bd -> tensor<?x64xi4, #tgraph.dims<[B, 64]>>
  return
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @contractions
func.func @contractions(%x: !bd, %w: tensor<64x32xf32>,
                        %a: tensor<8x16x64xf8E4M3FN>, %b: tensor<8x64x16xf8E5M2>,
                        %img: tensor<?x3x32x32xf32, #tgraph.dims<[N, 3, 32, 32]>>,
                        %k: tensor<16x3x3x3xf32>) {
  // CHECK: tgraph.matmul %{{.*}}, %{{.*}} : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<64x32xf32>) -> tensor<?x32xf32, #tgraph.dims<[B, 32]>>
  %0 = tgraph.matmul %x, %w : (!bd, tensor<64x32xf32>) -> tensor<?x32xf32, #tgraph.dims<[B, 32]>>
  // CHECK: tgraph.matmul %{{.*}}, %{{.*}} {transpose_lhs, transpose_rhs}
  %1 = tgraph.matmul %w, %x {transpose_lhs, transpose_rhs} : (tensor<64x32xf32>, !bd) -> tensor<32x?xf32, #tgraph.dims<[32, B]>>
  // CHECK: tgraph.batch_matmul %{{.*}}, %{{.*}} {policy = #tgraph.policy<accum = f32>} : (tensor<8x16x64xf8E4M3FN>, tensor<8x64x16xf8E5M2>) -> tensor<8x16x16xbf16>
  %2 = tgraph.batch_matmul %a, %b {policy = #tgraph.policy<accum = f32>} : (tensor<8x16x64xf8E4M3FN>, tensor<8x64x16xf8E5M2>) -> tensor<8x16x16xbf16>
  // CHECK: tgraph.dot_general %{{.*}}, %{{.*}} {lhs_batching_dims = array<i64: 0>, lhs_contracting_dims = array<i64: 2>, policy = #tgraph.policy<accum = f32>, rhs_batching_dims = array<i64: 0>, rhs_contracting_dims = array<i64: 1>}
  %3 = tgraph.dot_general %a, %b {lhs_batching_dims = array<i64: 0>, rhs_batching_dims = array<i64: 0>, lhs_contracting_dims = array<i64: 2>, rhs_contracting_dims = array<i64: 1>, policy = #tgraph.policy<accum = f32>} : (tensor<8x16x64xf8E4M3FN>, tensor<8x64x16xf8E5M2>) -> tensor<8x16x16xf32>
  // CHECK: tgraph.conv2d %{{.*}}, %{{.*}} {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x3x32x32xf32, #tgraph.dims<[N, 3, 32, 32]>>, tensor<16x3x3x3xf32>) -> tensor<?x16x16x16xf32, #tgraph.dims<[N, 16, 16, 16]>>
  %4 = tgraph.conv2d %img, %k {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<?x3x32x32xf32, #tgraph.dims<[N, 3, 32, 32]>>, tensor<16x3x3x3xf32>) -> tensor<?x16x16x16xf32, #tgraph.dims<[N, 16, 16, 16]>>
  return
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>,
                     %kv: tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>) {
  // CHECK: tgraph.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 1.250000e-01 : f64} : (tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>) -> tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>
  %0 = tgraph.attention %q, %kv, %kv {causal, scale = 0.125 : f64} : (tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>) -> tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>
  return
}

// CHECK-LABEL: func.func @attention_grad
func.func @attention_grad(%q: tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>,
                          %kv: tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>) {
  %o = tgraph.attention %q, %kv, %kv {causal} : (tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>) -> tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>
  // CHECK: tgraph.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal} : (tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>) -> (tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>)
  %g:3 = tgraph.attention_grad %q, %kv, %kv, %o, %o {causal} : (tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>) -> (tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, S, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>)
  return
}

//===----------------------------------------------------------------------===//
// Reductions, normalization, losses
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>, %i: tensor<4x5xi32>) {
  // CHECK: tgraph.reduce_sum %{{.*}} {dims = array<i64: 1>, stable} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, #tgraph.dims<[B]>>
  %0 = tgraph.reduce_sum %x {dims = array<i64: 1>, stable} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, #tgraph.dims<[B]>>
  // CHECK: tgraph.reduce_mean %{{.*}} {dims = array<i64: 0, 1>, keepdims} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<1x1xf32>
  %1 = tgraph.reduce_mean %x {dims = array<i64: 0, 1>, keepdims} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<1x1xf32>
  // CHECK: tgraph.reduce_prod %{{.*}} {dims = array<i64: 0>} : tensor<4x5xi32> -> tensor<5xi32>
  %2 = tgraph.reduce_prod %i {dims = array<i64: 0>} : tensor<4x5xi32> -> tensor<5xi32>
  // CHECK: tgraph.reduce_max
  %3 = tgraph.reduce_max %x {dims = array<i64: 1>} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, #tgraph.dims<[B]>>
  // CHECK: tgraph.reduce_min
  %4 = tgraph.reduce_min %i {dims = array<i64: 1>} : tensor<4x5xi32> -> tensor<4xi32>
  // CHECK: tgraph.argmax %{{.*}} {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xi64, #tgraph.dims<[B]>>
  %5 = tgraph.argmax %x {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xi64, #tgraph.dims<[B]>>
  // CHECK: tgraph.argmin %{{.*}} {dim = 0 : i64, keepdims} : tensor<4x5xi32> -> tensor<1x5xi32>
  %6 = tgraph.argmin %i {dim = 0 : i64, keepdims} : tensor<4x5xi32> -> tensor<1x5xi32>
  return
}

// CHECK-LABEL: func.func @softmax_family
func.func @softmax_family(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // CHECK: tgraph.softmax %{{.*}} {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  %0 = tgraph.softmax %x {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  // CHECK: tgraph.log_softmax
  %1 = tgraph.log_softmax %x {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  // CHECK: tgraph.softmax_safe
  %2 = tgraph.softmax_safe %x {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  // CHECK: tgraph.logsumexp %{{.*}} {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, #tgraph.dims<[B]>>
  %3 = tgraph.logsumexp %x {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, #tgraph.dims<[B]>>
  // CHECK: tgraph.logsumexp_safe %{{.*}} {dim = 0 : i64, keepdims} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<1x?xf32, #tgraph.dims<[1, S]>>
  %4 = tgraph.logsumexp_safe %x {dim = 0 : i64, keepdims} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<1x?xf32, #tgraph.dims<[1, S]>>
  return
}

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>, %g: tensor<64xbf16>) {
  // CHECK: tgraph.layernorm %{{.*}} scale %{{.*}} bias %{{.*}} {axis = 2 : i64, epsilon = 9.9999999999999995E-7 : f64} : (tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>
  %0 = tgraph.layernorm %x scale %g bias %g {axis = 2 : i64, epsilon = 1.0e-6 : f64} : (tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>
  // CHECK: tgraph.layernorm %{{.*}} {axis = 2 : i64} : (tensor<?x?x64xbf16
  %1 = tgraph.layernorm %x {axis = 2 : i64} : (tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>) -> tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>
  // CHECK: tgraph.rmsnorm %{{.*}} scale %{{.*}} {axis = 2 : i64}
  %2 = tgraph.rmsnorm %x scale %g {axis = 2 : i64} : (tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>, tensor<64xbf16>) -> tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>
  // CHECK: tgraph.layernorm_safe %{{.*}} bias %{{.*}} {axis = 2 : i64}
  %3 = tgraph.layernorm_safe %x bias %g {axis = 2 : i64} : (tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>, tensor<64xbf16>) -> tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>
  // CHECK: tgraph.rmsnorm_safe %{{.*}} {axis = 1 : i64, policy = #tgraph.policy<accum = f32>}
  %4 = tgraph.rmsnorm_safe %x {axis = 1 : i64, policy = #tgraph.policy<accum = f32>} : (tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>) -> tensor<?x?x64xbf16, #tgraph.dims<[B, S, 64]>>
  return
}

// CHECK-LABEL: func.func @losses
func.func @losses(%logits: tensor<?x10xf32, #tgraph.dims<[B, 10]>>,
                  %labels: tensor<?xi64, #tgraph.dims<[B]>>) {
  // CHECK: tgraph.cross_entropy %{{.*}}, %{{.*}} {policy = #tgraph.policy<loss_scale = 1.024000e+03>} : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>, tensor<?xi64, #tgraph.dims<[B]>>) -> tensor<f32>
  %0 = tgraph.cross_entropy %logits, %labels {policy = #tgraph.policy<loss_scale = 1024.0>} : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>, tensor<?xi64, #tgraph.dims<[B]>>) -> tensor<f32>
  // CHECK: tgraph.cross_entropy %{{.*}}, %{{.*}} {reduction = #tgraph<loss_reduction none>} : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>, tensor<?x10xf32, #tgraph.dims<[B, 10]>>) -> tensor<?xf32, #tgraph.dims<[B]>>
  %1 = tgraph.cross_entropy %logits, %logits {reduction = #tgraph<loss_reduction none>} : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>, tensor<?x10xf32, #tgraph.dims<[B, 10]>>) -> tensor<?xf32, #tgraph.dims<[B]>>
  return
}

//===----------------------------------------------------------------------===//
// Layout and indexing
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @layout
func.func @layout(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>, %v: tensor<64xf32>,
                  %i: tensor<i64>) {
  // CHECK: tgraph.transpose %{{.*}} {permutation = array<i64: 1, 0>} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[S, B]>>
  %0 = tgraph.transpose %x {permutation = array<i64: 1, 0>} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[S, B]>>
  // CHECK: tgraph.reshape %{{.*}} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, #tgraph.dims<["B*S"]>>
  %1 = tgraph.reshape %x : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, #tgraph.dims<["B*S"]>>
  // CHECK: tgraph.broadcast_in_dim %{{.*}} {broadcast_dimensions = array<i64: 1>} : tensor<64xf32> -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %2 = tgraph.broadcast_in_dim %v {broadcast_dimensions = array<i64: 1>} : tensor<64xf32> -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  // CHECK: tgraph.slice %{{.*}} {limit = #tgraph.dims<[B, S]>, start = #tgraph.dims<[0, 1]>, stride = array<i64: 1, 1>} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, "S-1"]>>
  %3 = tgraph.slice %x {start = #tgraph.dims<[0, 1]>, limit = #tgraph.dims<[B, S]>, stride = array<i64: 1, 1>} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, "S-1"]>>
  // CHECK: tgraph.dynamic_slice %{{.*}}[%{{.*}}, %{{.*}}] {sizes = #tgraph.dims<[1, S]>} : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<i64>, tensor<i64>) -> tensor<1x?xf32, #tgraph.dims<[1, S]>>
  %4 = tgraph.dynamic_slice %x[%i, %i] {sizes = #tgraph.dims<[1, S]>} : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<i64>, tensor<i64>) -> tensor<1x?xf32, #tgraph.dims<[1, S]>>
  // CHECK: tgraph.concat %{{.*}}, %{{.*}} {dim = 0 : i64} : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<1x?xf32, #tgraph.dims<[1, S]>>) -> tensor<?x?xf32, #tgraph.dims<["B+1", S]>>
  %5 = tgraph.concat %x, %4 {dim = 0 : i64} : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<1x?xf32, #tgraph.dims<[1, S]>>) -> tensor<?x?xf32, #tgraph.dims<["B+1", S]>>
  // CHECK: tgraph.pad %{{.*}} {high = array<i64: 0, 2>, interior = array<i64: 0, 0>, low = array<i64: 0, 1>, value = 0.000000e+00 : f32} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, "S+3"]>>
  %6 = tgraph.pad %x {low = array<i64: 0, 1>, high = array<i64: 0, 2>, interior = array<i64: 0, 0>, value = 0.0 : f32} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, "S+3"]>>
  return
}

// CHECK-LABEL: func.func @indexing
func.func @indexing(%t: tensor<1000x64xf32>, %ids: tensor<?x?xi32, #tgraph.dims<[B, S]>>,
                    %upd: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>) {
  // CHECK: tgraph.gather %{{.*}}, %{{.*}} {dim = 0 : i64} : (tensor<1000x64xf32>, tensor<?x?xi32, #tgraph.dims<[B, S]>>) -> tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
  %0 = tgraph.gather %t, %ids {dim = 0 : i64} : (tensor<1000x64xf32>, tensor<?x?xi32, #tgraph.dims<[B, S]>>) -> tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
  // CHECK: tgraph.scatter_add %{{.*}}, %{{.*}}, %{{.*}} {dim = 0 : i64} : (tensor<1000x64xf32>, tensor<?x?xi32, #tgraph.dims<[B, S]>>, tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>) -> tensor<1000x64xf32>
  %1 = tgraph.scatter_add %t, %ids, %upd {dim = 0 : i64} : (tensor<1000x64xf32>, tensor<?x?xi32, #tgraph.dims<[B, S]>>, tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>) -> tensor<1000x64xf32>
  // CHECK: tgraph.embedding %{{.*}}, %{{.*}} : (tensor<1000x64xf32>, tensor<?x?xi32, #tgraph.dims<[B, S]>>) -> tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
  %2 = tgraph.embedding %t, %ids : (tensor<1000x64xf32>, tensor<?x?xi32, #tgraph.dims<[B, S]>>) -> tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
  // CHECK: tgraph.one_hot %{{.*}} {num_classes = 10 : i64} : tensor<?x?xi32, #tgraph.dims<[B, S]>> -> tensor<?x?x10xbf16, #tgraph.dims<[B, S, 10]>>
  %3 = tgraph.one_hot %ids {num_classes = 10 : i64} : tensor<?x?xi32, #tgraph.dims<[B, S]>> -> tensor<?x?x10xbf16, #tgraph.dims<[B, S, 10]>>
  return
}

// CHECK-LABEL: func.func @dims
func.func @dims(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // CHECK: %[[B:.+]] = tgraph.dim %{{.*}}, 0 : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  %b = tgraph.dim %x, 0 : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  // CHECK: tgraph.dim_size %{{.*}} {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<f32>
  %s = tgraph.dim_size %x {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<f32>
  // CHECK: tgraph.assert_dim eq %[[B]], %[[B]], "B must equal B"
  tgraph.assert_dim eq %b, %b, "B must equal B"
  return
}

//===----------------------------------------------------------------------===//
// Control flow and calls
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @control_flow
func.func @control_flow(%p: tensor<i1>, %x: tensor<4xf32>, %xs: tensor<?x4xf32, #tgraph.dims<[T, 4]>>,
                        %n: tensor<i64>) {
  // CHECK: tgraph.cond %{{.*}} -> tensor<4xf32> {
  // CHECK:   tgraph.yield %{{.*}} : tensor<4xf32>
  // CHECK: } else {
  %0 = tgraph.cond %p -> tensor<4xf32> {
    tgraph.yield %x : tensor<4xf32>
  } else {
    %e = tgraph.neg %x : tensor<4xf32>
    tgraph.yield %e : tensor<4xf32>
  }
  // CHECK: tgraph.while(%{{.*}}) : tensor<i64> -> tensor<i64> attributes {trip_count = 10 : i64} cond {
  // CHECK: } do {
  %1 = tgraph.while (%n) : tensor<i64> -> tensor<i64> attributes {trip_count = 10 : i64} cond {
  ^bb0(%it: tensor<i64>):
    %c = tgraph.compare lt, %it, %it : (tensor<i64>, tensor<i64>) -> tensor<i1>
    tgraph.yield %c : tensor<i1>
  } do {
  ^bb0(%it: tensor<i64>):
    %next = tgraph.add %it, %it : tensor<i64>
    tgraph.yield %next : tensor<i64>
  }
  // CHECK: tgraph.scan init(%{{.*}} : tensor<4xf32>) over(%{{.*}} : tensor<?x4xf32, #tgraph.dims<[T, 4]>>) -> (tensor<4xf32>, tensor<?x4xf32, #tgraph.dims<[T, 4]>>) attributes {reverse} {
  %2:2 = tgraph.scan init(%x : tensor<4xf32>) over(%xs : tensor<?x4xf32, #tgraph.dims<[T, 4]>>) -> (tensor<4xf32>, tensor<?x4xf32, #tgraph.dims<[T, 4]>>) attributes {reverse} {
  ^bb0(%h: tensor<4xf32>, %xt: tensor<4xf32>):
    %s = tgraph.add %h, %xt : tensor<4xf32>
    tgraph.yield %s, %s : tensor<4xf32>, tensor<4xf32>
  }
  // CHECK: tgraph.scan init() over() -> (tensor<3x4xf32>) attributes {length = 3 : i64} {
  %3 = tgraph.scan init() over() -> (tensor<3x4xf32>) attributes {length = 3 : i64} {
    tgraph.yield %x : tensor<4xf32>
  }
  // CHECK: tgraph.fixed_point %{{.*}} params(%{{.*}} : tensor<4xf32>) {max_iter = 50 : i64, tol = 1.000000e-10 : f64} : tensor<4xf32> -> tensor<4xf32> {
  %4 = tgraph.fixed_point %x params(%x : tensor<4xf32>) {tol = 1.0e-10 : f64, max_iter = 50 : i64} : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%z: tensor<4xf32>, %theta: tensor<4xf32>):
    %t = tgraph.tanh %z : tensor<4xf32>
    %u = tgraph.add %t, %theta : tensor<4xf32>
    tgraph.yield %u : tensor<4xf32>
  }
  // CHECK: tgraph.solve %{{.*}} params(%{{.*}} : tensor<4xf32>) : tensor<4xf32> -> tensor<4xf32> {
  %5 = tgraph.solve %x params(%x : tensor<4xf32>) : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%z: tensor<4xf32>, %a: tensor<4xf32>):
    %sq = tgraph.mul %z, %z : tensor<4xf32>
    %r = tgraph.sub %sq, %a : tensor<4xf32>
    tgraph.yield %r : tensor<4xf32>
  }
  // CHECK: tgraph.checkpoint(%{{.*}} : tensor<4xf32>) -> tensor<4xf32> {
  %6 = tgraph.checkpoint (%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %g = tgraph.gelu %a : tensor<4xf32>
    tgraph.yield %g : tensor<4xf32>
  }
  return
}

func.func private @layer(%x: tensor<?x64xf32, #tgraph.dims<[N, 64]>>) -> tensor<?x64xf32, #tgraph.dims<[N, 64]>>
func.func private @clip(%x: tensor<4xf32>) -> tensor<4xf32>
func.func private @clip_fwd(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
func.func private @clip_bwd(%m: tensor<4xi1>, %g: tensor<4xf32>) -> tensor<4xf32>
func.func private @clip_jvp(%x: tensor<4xf32>, %t: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)

// CHECK-LABEL: func.func @calls
func.func @calls(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>, %y: tensor<4xf32>) {
  // CHECK: tgraph.call @layer(%{{.*}}) : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %0 = tgraph.call @layer(%x) : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  // CHECK: tgraph.custom_vjp @clip(%{{.*}}) fwd @clip_fwd bwd @clip_bwd : (tensor<4xf32>) -> tensor<4xf32>
  %1 = tgraph.custom_vjp @clip(%y) fwd @clip_fwd bwd @clip_bwd : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK: tgraph.custom_jvp @clip(%{{.*}}) jvp @clip_jvp : (tensor<4xf32>) -> tensor<4xf32>
  %2 = tgraph.custom_jvp @clip(%y) jvp @clip_jvp : (tensor<4xf32>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Randomness, collectives, state
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @rng
func.func @rng(%step: tensor<i64>) {
  // CHECK: %[[K:.+]] = tgraph.rng.key {seed = 42 : i64}
  %k = tgraph.rng.key {seed = 42 : i64}
  // CHECK: tgraph.rng.split %[[K]] : !tgraph.key, !tgraph.key
  %k1, %k2 = tgraph.rng.split %k : !tgraph.key, !tgraph.key
  // CHECK: tgraph.rng.fold_in %{{.*}}, %{{.*}} : tensor<i64>
  %k3 = tgraph.rng.fold_in %k1, %step : tensor<i64>
  // CHECK: tgraph.rng.uniform %{{.*}} {low = -1.000000e+00 : f64} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %u = tgraph.rng.uniform %k2 {low = -1.0 : f64} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  // CHECK: tgraph.rng.normal %{{.*}} {stddev = 2.000000e-02 : f64} : tensor<16x16xbf16>
  %n = tgraph.rng.normal %k3 {stddev = 0.02 : f64} : tensor<16x16xbf16>
  // CHECK: tgraph.rng.bernoulli %{{.*}} {p = 9.000000e-01 : f64} : tensor<16xi1>
  %b = tgraph.rng.bernoulli %k3 {p = 0.9 : f64} : tensor<16xi1>
  return
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%g: tensor<512x64xf32>) {
  // CHECK: tgraph.all_reduce %{{.*}} {axis_name = "data", group_size = 8 : i64, reduction = #tgraph<reduction sum>} : tensor<512x64xf32>
  %0 = tgraph.all_reduce %g {reduction = #tgraph<reduction sum>, axis_name = "data", group_size = 8 : i64} : tensor<512x64xf32>
  // CHECK: tgraph.all_gather %{{.*}} {axis_name = "model", dim = 1 : i64, group_size = 4 : i64} : tensor<512x64xf32> -> tensor<512x256xf32>
  %1 = tgraph.all_gather %g {dim = 1 : i64, axis_name = "model", group_size = 4 : i64} : tensor<512x64xf32> -> tensor<512x256xf32>
  // CHECK: tgraph.reduce_scatter %{{.*}} {axis_name = "data", dim = 0 : i64, group_size = 4 : i64, reduction = #tgraph<reduction mean>} : tensor<512x64xf32> -> tensor<128x64xf32>
  %2 = tgraph.reduce_scatter %g {reduction = #tgraph<reduction mean>, dim = 0 : i64, axis_name = "data", group_size = 4 : i64} : tensor<512x64xf32> -> tensor<128x64xf32>
  // CHECK: tgraph.all_to_all %{{.*}} {axis_name = "expert", concat_dim = 1 : i64, group_size = 4 : i64, split_dim = 0 : i64} : tensor<512x64xf32> -> tensor<128x256xf32>
  %3 = tgraph.all_to_all %g {split_dim = 0 : i64, concat_dim = 1 : i64, axis_name = "expert", group_size = 4 : i64} : tensor<512x64xf32> -> tensor<128x256xf32>
  // CHECK: tgraph.permute %{{.*}} {axis_name = "pipe", pairs = [array<i64: 0, 1>, array<i64: 1, 0>]} : tensor<512x64xf32>
  %4 = tgraph.permute %g {pairs = [array<i64: 0, 1>, array<i64: 1, 0>], axis_name = "pipe"} : tensor<512x64xf32>
  return
}

// CHECK-LABEL: func.func @kv_cache
func.func @kv_cache(%k: tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>) {
  // CHECK: %[[C:.+]] = tgraph.kv_cache.create {window = 1024 : i64} : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>
  %c = tgraph.kv_cache.create {window = 1024 : i64} : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>
  // CHECK: tgraph.kv_cache.append %[[C]], %{{.*}}, %{{.*}} : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>
  tgraph.kv_cache.append %c, %k, %k : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>
  // CHECK: tgraph.kv_cache.read %[[C]] : !tgraph.kv_cache<[B, 8, 4096, 64], bf16> -> tensor<?x8x4096x64xbf16, #tgraph.dims<[B, 8, 4096, 64]>>, tensor<?x8x4096x64xbf16, #tgraph.dims<[B, 8, 4096, 64]>>, tensor<i64>
  %keys, %vals, %len = tgraph.kv_cache.read %c : !tgraph.kv_cache<[B, 8, 4096, 64], bf16> -> tensor<?x8x4096x64xbf16, #tgraph.dims<[B, 8, 4096, 64]>>, tensor<?x8x4096x64xbf16, #tgraph.dims<[B, 8, 4096, 64]>>, tensor<i64>
  // CHECK: tgraph.kv_cache.prune %[[C]] {keep = 512 : i64} : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>
  tgraph.kv_cache.prune %c {keep = 512 : i64} : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>
  return
}
