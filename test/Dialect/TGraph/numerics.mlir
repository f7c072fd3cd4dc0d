// RUN: tessera-opt %s -split-input-file --canonicalize | FileCheck %s

// Typed numerics that verify: widening products, fp8 with an accumulation
// policy, and the exact widenings cast chains may fold through.

// bf16 -> f32 is an exact widening (same exponent range, more precision),
// so a bf16 matmul may produce f32; so may tf32 and f16.
// CHECK-LABEL: func.func @widening_products
// CHECK: tgraph.matmul {{.*}} -> tensor<4x4xf32>
// CHECK: tgraph.matmul {{.*}} -> tensor<4x4xf32>
// CHECK: tgraph.matmul {{.*}} -> tensor<4x4xf32>
// CHECK: tgraph.matmul {{.*}} -> tensor<4x4xi32>
func.func @widening_products(%a: tensor<4x4xbf16>, %t: tensor<4x4xtf32>, %h: tensor<4x4xf16>,
                             %i: tensor<4x4xi8>)
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xi32>) {
  %0 = tgraph.matmul %a, %a : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xf32>
  %1 = tgraph.matmul %t, %t : (tensor<4x4xtf32>, tensor<4x4xtf32>) -> tensor<4x4xf32>
  %2 = tgraph.matmul %h, %h : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf32>
  %3 = tgraph.matmul %i, %i : (tensor<4x4xi8>, tensor<4x4xi8>) -> tensor<4x4xi32>
  return %0, %1, %2, %3 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xi32>
}

// -----

// fp8 in, f32 accumulation, any float out (e4m3 x e5m2 may mix).
// CHECK-LABEL: func.func @fp8
// CHECK: tgraph.matmul {{.*}} {policy = #tgraph.policy<accum = f32>} {{.*}} -> tensor<16x16xf8E4M3FN>
// CHECK: tgraph.matmul {{.*}} {policy = #tgraph.policy<accum = bf16, saturate>} {{.*}} -> tensor<16x16xf8E5M2>
func.func @fp8(%a: tensor<16x16xf8E4M3FN>, %b: tensor<16x16xf8E5M2>)
    -> (tensor<16x16xf8E4M3FN>, tensor<16x16xf8E5M2>) {
  %0 = tgraph.matmul %a, %b {policy = #tgraph.policy<accum = f32>} : (tensor<16x16xf8E4M3FN>, tensor<16x16xf8E5M2>) -> tensor<16x16xf8E4M3FN>
  %1 = tgraph.matmul %a, %a {policy = #tgraph.policy<accum = bf16, saturate>} : (tensor<16x16xf8E4M3FN>, tensor<16x16xf8E4M3FN>) -> tensor<16x16xf8E5M2>
  return %0, %1 : tensor<16x16xf8E4M3FN>, tensor<16x16xf8E5M2>
}

// -----

// Exact widenings fold in cast chains: bf16 -> f32 -> f64, i1 -> i8 -> i32,
// i8 -> f16 -> f32. Not exact: i32 -> f32 (24-bit precision) keeps both.
// CHECK-LABEL: func.func @cast_chains
// CHECK-DAG: tgraph.cast %arg0 : tensor<4xbf16> -> tensor<4xf64>
// CHECK-DAG: tgraph.cast %arg1 : tensor<4xi1> -> tensor<4xi32>
// CHECK-DAG: tgraph.cast %arg2 : tensor<4xi8> -> tensor<4xf32>
// CHECK-DAG: %[[F:.+]] = tgraph.cast %arg3 : tensor<4xi32> -> tensor<4xf32>
// CHECK-DAG: tgraph.cast %[[F]] : tensor<4xf32> -> tensor<4xf64>
func.func @cast_chains(%a: tensor<4xbf16>, %m: tensor<4xi1>, %i: tensor<4xi8>, %j: tensor<4xi32>)
    -> (tensor<4xf64>, tensor<4xi32>, tensor<4xf32>, tensor<4xf64>) {
  %a1 = tgraph.cast %a : tensor<4xbf16> -> tensor<4xf32>
  %a2 = tgraph.cast %a1 : tensor<4xf32> -> tensor<4xf64>
  %m1 = tgraph.cast %m : tensor<4xi1> -> tensor<4xi8>
  %m2 = tgraph.cast %m1 : tensor<4xi8> -> tensor<4xi32>
  %i1 = tgraph.cast %i : tensor<4xi8> -> tensor<4xf16>
  %i2 = tgraph.cast %i1 : tensor<4xf16> -> tensor<4xf32>
  %j1 = tgraph.cast %j : tensor<4xi32> -> tensor<4xf32>
  %j2 = tgraph.cast %j1 : tensor<4xf32> -> tensor<4xf64>
  return %a2, %m2, %i2, %j2 : tensor<4xf64>, tensor<4xi32>, tensor<4xf32>, tensor<4xf64>
}
