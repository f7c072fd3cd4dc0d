// RUN: tessera-opt %s --split-input-file --tessera-tgraph-decompose --tessera-tgraph-lower-to-linalg --canonicalize --cse --tessera-fuse-elementwise "--tessera-cpu-schedule=vector-bytes=32 print-scripts" | FileCheck %s

// Row fusion computes each op of a group once per row. Three softmaxes
// with residual connections: every residual input is read by the next
// softmax's maximum, by its exponentials and by the residual add, so
// fusing once per read would copy the chain threefold per softmax (27
// copies of the first one). One loop over rows, one exp per softmax.
// CHECK-LABEL: transform.named_sequence @__transform_main
// CHECK: // row loop of linalg.generic: 21 ops, 0 materialized, 0 operations recomputed
// CHECK-LABEL: func.func @softmax_residuals
// CHECK: scf.forall
// CHECK-COUNT-3: math.exp
// CHECK-NOT: math.exp
// CHECK: scf.forall.in_parallel
func.func @softmax_residuals(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %two = tgraph.full {value = 2.0 : f32} : tensor<f32>
  %s1 = tgraph.softmax %x {dim = 1 : i64} : tensor<4x64xf32>
  %m1 = tgraph.mul %s1, %two : (tensor<4x64xf32>, tensor<f32>) -> tensor<4x64xf32>
  %h1 = tgraph.add %m1, %x : tensor<4x64xf32>
  %s2 = tgraph.softmax %h1 {dim = 1 : i64} : tensor<4x64xf32>
  %m2 = tgraph.mul %s2, %two : (tensor<4x64xf32>, tensor<f32>) -> tensor<4x64xf32>
  %h2 = tgraph.add %m2, %h1 : tensor<4x64xf32>
  %s3 = tgraph.softmax %h2 {dim = 1 : i64} : tensor<4x64xf32>
  %m3 = tgraph.mul %s3, %two : (tensor<4x64xf32>, tensor<f32>) -> tensor<4x64xf32>
  %h3 = tgraph.add %m3, %h2 : tensor<4x64xf32>
  return %h3 : tensor<4x64xf32>
}

// -----

// A diamond: the exponentials feed both the row sums and the scaling;
// they are computed once, inside the loop.
// CHECK-LABEL: transform.named_sequence @__transform_main
// CHECK: // row loop of linalg.generic: 4 ops, 0 materialized, 0 operations recomputed
// CHECK-LABEL: func.func @diamond
// CHECK: scf.forall
// CHECK-COUNT-1: math.exp
// CHECK-NOT: math.exp
// CHECK: scf.forall.in_parallel
func.func @diamond(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %e = tgraph.exp %x : tensor<4x64xf32>
  %s = tgraph.reduce_sum %e {dims = array<i64: 1>, keepdims} : tensor<4x64xf32> -> tensor<4x1xf32>
  %y = tgraph.div %e, %s : (tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// Reading a row's first element and reading the whole row take the same
// slice of it (the first loop is the only one tiled): one exp.
// CHECK-LABEL: transform.named_sequence @__transform_main
// CHECK: // row loop of linalg.generic: 2 ops, 0 materialized, 0 operations recomputed
// CHECK-LABEL: func.func @element_and_row
// CHECK: scf.forall
// CHECK-COUNT-1: math.exp
// CHECK-NOT: math.exp
// CHECK: scf.forall.in_parallel
#id = affine_map<(d0, d1) -> (d0, d1)>
#first = affine_map<(d0, d1) -> (d0, 0)>
func.func @element_and_row(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %e0 = tensor.empty() : tensor<4x64xf32>
  %p = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x64xf32>) outs(%e0 : tensor<4x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<4x64xf32>
  %e1 = tensor.empty() : tensor<4x64xf32>
  %c = linalg.generic {indexing_maps = [#id, #first, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %p : tensor<4x64xf32>, tensor<4x64xf32>) outs(%e1 : tensor<4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x64xf32>
  return %c : tensor<4x64xf32>
}

// -----

// A producer with two results, both read by the group (one of them
// broadcast along the row, so elementwise fusion leaves them apart): one
// tiled copy computes both rows (not one copy per result).
// CHECK-LABEL: transform.named_sequence @__transform_main
// CHECK: // row loop of linalg.generic: 2 ops, 0 materialized, 0 operations recomputed
// CHECK-LABEL: func.func @two_results
// CHECK: scf.forall
// CHECK-COUNT-1: math.exp
// CHECK-NOT: math.exp
// CHECK: scf.forall.in_parallel
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#first2 = affine_map<(d0, d1) -> (d0, 0)>
func.func @two_results(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %e0 = tensor.empty() : tensor<4x64xf32>
  %e1 = tensor.empty() : tensor<4x64xf32>
  %p:2 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x64xf32>) outs(%e0, %e1 : tensor<4x64xf32>, tensor<4x64xf32>) {
  ^bb0(%a: f32, %o: f32, %o1: f32):
    %v = math.exp %a : f32
    %w = arith.mulf %a, %a : f32
    linalg.yield %v, %w : f32, f32
  } -> (tensor<4x64xf32>, tensor<4x64xf32>)
  %e2 = tensor.empty() : tensor<4x64xf32>
  %c = linalg.generic {indexing_maps = [#id2, #first2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%p#0, %p#1 : tensor<4x64xf32>, tensor<4x64xf32>) outs(%e2 : tensor<4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x64xf32>
  return %c : tensor<4x64xf32>
}
