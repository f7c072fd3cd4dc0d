// RUN: tessera-opt %s --tessera-fuse-elementwise | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// The collapsed matrix product stays two-dimensional: neither reshape
// moves into it (upstream -linalg-fuse-elementwise-ops gives it three
// loops again).
// CHECK-LABEL: func.func @gemm_stays_flat
// CHECK: tensor.collapse_shape
// CHECK: %[[P:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<?x64xf32>, tensor<64x32xf32>)
// CHECK: %[[Y:.+]] = tensor.expand_shape %[[P]]
// CHECK: linalg.generic {{.*}} ins(%[[Y]] : tensor<?x?x32xf32>)
func.func @gemm_stays_flat(%x: tensor<?x?x64xf32>, %w: tensor<64x32xf32>, %b: index, %s: index) -> tensor<?x?x32xf32> {
  %zero = arith.constant 0.0 : f32
  %flat = tensor.collapse_shape %x [[0, 1], [2]] : tensor<?x?x64xf32> into tensor<?x64xf32>
  %c0 = arith.constant 0 : index
  %m = tensor.dim %flat, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %p = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%flat, %w : tensor<?x64xf32>, tensor<64x32xf32>) outs(%z : tensor<?x32xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %t = arith.mulf %u, %v : f32
    %r = arith.addf %acc, %t : f32
    linalg.yield %r : f32
  } -> tensor<?x32xf32>
  %y = tensor.expand_shape %p [[0, 1], [2]] output_shape [%b, %s, 32] : tensor<?x32xf32> into tensor<?x?x32xf32>
  %e3 = tensor.empty(%b, %s) : tensor<?x?x32xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y : tensor<?x?x32xf32>) outs(%e3 : tensor<?x?x32xf32>) {
  ^bb0(%u: f32, %o: f32):
    %t = math.exp %u : f32
    linalg.yield %t : f32
  } -> tensor<?x?x32xf32>
  return %g : tensor<?x?x32xf32>
}

// Elementwise producers still fuse into their consumers.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
func.func @chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%u: f32, %o: f32):
    %t = math.exp %u : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %x : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %t = arith.addf %u, %v : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// A per-row value (1 / sum) read by every element of the row is not fused
// into the elementwise consumer: it would be divided once per element.
// CHECK-LABEL: func.func @row_value_not_recomputed
// CHECK: %[[R:.+]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%{{.+}} : tensor<?xf32>)
// CHECK: arith.divf
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[R]] : tensor<?x?xf32>, tensor<?xf32>)
// CHECK-NOT: arith.divf
// CHECK: arith.mulf
#row = affine_map<(d0, d1) -> (d0)>
#id1 = affine_map<(d0) -> (d0)>
func.func @row_value_not_recomputed(%x: tensor<?x?xf32>, %s: tensor<?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %r = tensor.dim %x, %c0 : tensor<?x?xf32>
  %c = tensor.dim %x, %c1 : tensor<?x?xf32>
  %e1 = tensor.empty(%r) : tensor<?xf32>
  %inv = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%s : tensor<?xf32>) outs(%e1 : tensor<?xf32>) {
  ^bb0(%u: f32, %o: f32):
    %t = arith.divf %one, %u : f32
    linalg.yield %t : f32
  } -> tensor<?xf32>
  %e2 = tensor.empty(%r, %c) : tensor<?x?xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %inv : tensor<?x?xf32>, tensor<?xf32>) outs(%e2 : tensor<?x?xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %t = arith.mulf %u, %v : f32
    linalg.yield %t : f32
  } -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
