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

// A diamond: %e is read by both branches and by the join, each read
// elementwise, so the whole cluster becomes one generic that computes the
// exponential once per element.
// CHECK-LABEL: func.func @diamond_cluster
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<4x8xf32>)
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: arith.mulf
// CHECK: math.sin
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @diamond_cluster(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = arith.constant 2.0 : f32
  %e0 = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %l = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %two : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.sin %a : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %j = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l, %r, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %c : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %j : tensor<4x8xf32>
}

// A value also returned is computed once, in its own loop; the rest of
// its readers still fuse into one.
// CHECK-LABEL: func.func @returned_value_stays
// CHECK: %[[E:.+]] = linalg.generic
// CHECK: math.exp
// CHECK: } -> tensor<4x8xf32>
// CHECK: %[[J:.+]] = linalg.generic {{.*}} ins(%[[E]] : tensor<4x8xf32>)
// CHECK-NOT: math.exp
// CHECK: math.sin
// CHECK: arith.addf
// CHECK: return %[[J]], %[[E]]
func.func @returned_value_stays(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e0 = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.sin %a : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %j = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %e : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %j, %e : tensor<4x8xf32>, tensor<4x8xf32>
}

// A producer read transposed is not part of a cluster; it still fuses
// (through the rounds of pairwise fusion).
// CHECK-LABEL: func.func @transposed_read
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func @transposed_read(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
  %e0 = tensor.empty() : tensor<8x4xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%e0 : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<8x4xf32>
  %j = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e : tensor<8x4xf32>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %j : tensor<4x8xf32>
}

// A long chain (each link read once, by the next) becomes one generic.
// CHECK-LABEL: func.func @long_chain
// CHECK: linalg.generic
// CHECK-COUNT-6: math.sin
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @long_chain(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e0 = tensor.empty() : tensor<16xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e0 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.sin %a : f32
    linalg.yield %v : f32
  } -> tensor<16xf32>
  %2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%1 : tensor<16xf32>) outs(%e0 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.sin %a : f32
    linalg.yield %v : f32
  } -> tensor<16xf32>
  %3 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%2 : tensor<16xf32>) outs(%e0 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.sin %a : f32
    linalg.yield %v : f32
  } -> tensor<16xf32>
  %4 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%3 : tensor<16xf32>) outs(%e0 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.sin %a : f32
    linalg.yield %v : f32
  } -> tensor<16xf32>
  %5 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%4 : tensor<16xf32>) outs(%e0 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.sin %a : f32
    linalg.yield %v : f32
  } -> tensor<16xf32>
  %6 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%5 : tensor<16xf32>) outs(%e0 : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.sin %a : f32
    linalg.yield %v : f32
  } -> tensor<16xf32>
  return %6 : tensor<16xf32>
}
