// RUN: tessera-opt %s -split-input-file --tessera-tgraph-fold-empty | FileCheck %s

// Ops on tensors with a static dim of 0 become tgraph.full: an empty result
// is nothing to compute, and a reduction over nothing is its identity.

// CHECK-LABEL: func.func @empty_results
// CHECK-DAG: %[[A:.+]] = tgraph.full {value = 0.000000e+00 : f32} : tensor<0x4xf32>
// CHECK-DAG: %[[T:.+]] = tgraph.full {value = 0.000000e+00 : f32} : tensor<4x0xf32>
// CHECK-NOT: tgraph.exp
// CHECK-NOT: tgraph.transpose
// CHECK: return %[[A]], %[[T]]
func.func @empty_results(%x: tensor<0x4xf32>) -> (tensor<0x4xf32>, tensor<4x0xf32>) {
  %e = tgraph.exp %x : tensor<0x4xf32>
  %a = tgraph.add %e, %e : (tensor<0x4xf32>, tensor<0x4xf32>) -> tensor<0x4xf32>
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>} : tensor<0x4xf32> -> tensor<4x0xf32>
  return %a, %t : tensor<0x4xf32>, tensor<4x0xf32>
}

// -----

// Reductions over an empty dim: sum 0, product 1, mean NaN, max -inf, min
// +inf (the lowest and highest values for integers); logsumexp -inf.
// CHECK-LABEL: func.func @reductions_of_nothing
// CHECK-DAG: tgraph.full {value = 0.000000e+00 : f32} : tensor<4xf32>
// CHECK-DAG: tgraph.full {value = 1.000000e+00 : f32} : tensor<4xf32>
// CHECK-DAG: tgraph.full {value = 0x7FC00000 : f32} : tensor<4xf32>
// CHECK-DAG: tgraph.full {value = 0xFF800000 : f32} : tensor<4xf32>
// CHECK-DAG: tgraph.full {value = 0x7F800000 : f32} : tensor<1x4xf32>
// CHECK-DAG: tgraph.full {value = -2147483648 : i32} : tensor<4xi32>
// CHECK-DAG: tgraph.full {value = 0xFF800000 : f32} : tensor<4xf32>
// CHECK-NOT: tgraph.reduce
// CHECK-NOT: tgraph.logsumexp
func.func @reductions_of_nothing(%x: tensor<0x4xf32>, %n: tensor<0x4xi32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<1x4xf32>, tensor<4xi32>, tensor<4xf32>) {
  %s = tgraph.reduce_sum %x {dims = array<i64: 0>} : tensor<0x4xf32> -> tensor<4xf32>
  %p = tgraph.reduce_prod %x {dims = array<i64: 0>} : tensor<0x4xf32> -> tensor<4xf32>
  %m = tgraph.reduce_mean %x {dims = array<i64: 0>} : tensor<0x4xf32> -> tensor<4xf32>
  %mx = tgraph.reduce_max %x {dims = array<i64: 0>} : tensor<0x4xf32> -> tensor<4xf32>
  %mn = tgraph.reduce_min %x {dims = array<i64: 0>, keepdims} : tensor<0x4xf32> -> tensor<1x4xf32>
  %ni = tgraph.reduce_max %n {dims = array<i64: 0>} : tensor<0x4xi32> -> tensor<4xi32>
  %l = tgraph.logsumexp %x {dim = 0 : i64} : tensor<0x4xf32> -> tensor<4xf32>
  return %s, %p, %m, %mx, %mn, %ni, %l : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
      tensor<4xf32>, tensor<1x4xf32>, tensor<4xi32>, tensor<4xf32>
}

// -----

// A contraction over an empty dim is 0; a cross-entropy over no examples is
// NaN (the mean of nothing) or 0 (the sum); a pad of nothing is the padding
// value; a scatter of no updates is its operand; a concatenation drops its
// empty inputs. Symbolic dims stay as they are.
// CHECK-LABEL: func.func @contractions_and_friends
// CHECK-SAME: (%[[A:[^:]+]]: tensor<?x0xf32, #tgraph.dims<[M, 0]>>, %[[B:[^:]+]]: tensor<0x5xf32>,
// CHECK-SAME:  %[[LG:[^:]+]]: tensor<0x3xf32>, %[[Y:[^:]+]]: tensor<0xi64>, %[[X:[^:]+]]: tensor<?x5xf32, #tgraph.dims<[M, 5]>>,
// CHECK-SAME:  %[[I:[^:]+]]: tensor<0xi64>)
// CHECK-DAG: %[[MM:.+]] = tgraph.full {value = 0.000000e+00 : f32} : tensor<?x5xf32, #tgraph.dims<[M, 5]>>
// CHECK-DAG: %[[NAN:.+]] = tgraph.full {value = 0x7FC00000 : f32} : tensor<f32>
// CHECK-DAG: %[[PAD:.+]] = tgraph.full {value = 7.000000e+00 : f32} : tensor<2x5xf32>
// CHECK-DAG: %[[CAT:.+]] = tgraph.concat %[[X]] {dim = 0 : i64}
// CHECK: return %[[MM]], %[[NAN]], %[[PAD]], %[[X]], %[[CAT]]
func.func @contractions_and_friends(%a: tensor<?x0xf32, #tgraph.dims<[M, 0]>>,
    %b: tensor<0x5xf32>, %lg: tensor<0x3xf32>, %y: tensor<0xi64>,
    %x: tensor<?x5xf32, #tgraph.dims<[M, 5]>>, %i: tensor<0xi64>)
    -> (tensor<?x5xf32, #tgraph.dims<[M, 5]>>, tensor<f32>, tensor<2x5xf32>,
        tensor<?x5xf32, #tgraph.dims<[M, 5]>>, tensor<?x5xf32, #tgraph.dims<[M, 5]>>) {
  %mm = tgraph.matmul %a, %b : (tensor<?x0xf32, #tgraph.dims<[M, 0]>>, tensor<0x5xf32>)
      -> tensor<?x5xf32, #tgraph.dims<[M, 5]>>
  %ce = tgraph.cross_entropy %lg, %y : (tensor<0x3xf32>, tensor<0xi64>) -> tensor<f32>
  %pad = tgraph.pad %b {low = array<i64: 1, 0>, high = array<i64: 1, 0>, interior = array<i64: 0, 0>, value = 7.0 : f32}
      : tensor<0x5xf32> -> tensor<2x5xf32>
  %sc = tgraph.scatter_add %x, %i, %b {dim = 0 : i64}
      : (tensor<?x5xf32, #tgraph.dims<[M, 5]>>, tensor<0xi64>, tensor<0x5xf32>)
      -> tensor<?x5xf32, #tgraph.dims<[M, 5]>>
  %cat = tgraph.concat %x, %b {dim = 0 : i64}
      : (tensor<?x5xf32, #tgraph.dims<[M, 5]>>, tensor<0x5xf32>) -> tensor<?x5xf32, #tgraph.dims<[M, 5]>>
  return %mm, %ce, %pad, %sc, %cat : tensor<?x5xf32, #tgraph.dims<[M, 5]>>, tensor<f32>,
      tensor<2x5xf32>, tensor<?x5xf32, #tgraph.dims<[M, 5]>>, tensor<?x5xf32, #tgraph.dims<[M, 5]>>
}

// -----

// Ops with effects (collectives: every device must take part) and region
// ops are left alone, and so are ops whose empty dims are symbols.
// CHECK-LABEL: func.func @left_alone
// CHECK: tgraph.all_reduce
// CHECK: tgraph.reduce_sum
func.func @left_alone(%x: tensor<0x4xf32>, %y: tensor<?x4xf32, #tgraph.dims<[B, 4]>>)
    -> (tensor<0x4xf32>, tensor<4xf32>) {
  %a = tgraph.all_reduce %x {reduction = #tgraph<reduction sum>, axis_name = "d", group_size = 1 : i64} : tensor<0x4xf32>
  %s = tgraph.reduce_sum %y {dims = array<i64: 0>} : tensor<?x4xf32, #tgraph.dims<[B, 4]>> -> tensor<4xf32>
  return %a, %s : tensor<0x4xf32>, tensor<4xf32>
}
