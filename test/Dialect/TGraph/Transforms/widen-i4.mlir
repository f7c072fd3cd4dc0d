// RUN: tessera-opt %s -split-input-file --tessera-tgraph-widen-i4 | FileCheck %s

// A public function: arguments are sign-extended from their low nibble,
// the sum is wrapped to 4 bits, the result leaves as a low nibble.
// CHECK-LABEL: func.func @add
// CHECK-SAME: (%[[A:.*]]: tensor<8xi8>, %[[B:.*]]: tensor<8xi8>) -> tensor<8xi8>
// CHECK-DAG: %[[C16:.*]] = tgraph.constant dense<16> : tensor<i8>
// CHECK: %[[Q:.*]] = tgraph.div %[[A]], %[[C16]]
// CHECK: %[[S:.*]] = tgraph.add %[[AW:.*]], %[[BW:.*]] : tensor<8xi8>
// CHECK: tgraph.div %[[S]]
// CHECK: %[[Z:.*]] = tgraph.constant dense<0> : tensor<i8>
// CHECK: %[[NEG:.*]] = tgraph.compare lt, %{{.*}}, %[[Z]]
// CHECK: %[[OUT:.*]] = tgraph.select %[[NEG]]
// CHECK: return %[[OUT]] : tensor<8xi8>
func.func @add(%a: tensor<8xi4>, %b: tensor<8xi4>) -> tensor<8xi4> {
  %s = tgraph.add %a, %b : tensor<8xi4>
  return %s : tensor<8xi4>
}

// -----

// Layout ops and max keep the range: no wrap. Constants widen with their
// values; casts to i4 saturate to [-8, 7].
// CHECK-LABEL: func.func private @keep
// CHECK-NOT: tgraph.div
// CHECK: tgraph.constant dense<[-8, 7, -1, 0]> : tensor<4xi8>
// CHECK: tgraph.max %{{.*}}, %{{.*}} : tensor<4xi8>
// CHECK: tgraph.transpose
// CHECK: %[[C:.*]] = tgraph.cast %{{.*}} : tensor<4xf32> -> tensor<4xi8>
// CHECK: tgraph.min %[[C]]
// CHECK: tgraph.max
// CHECK: return %{{.*}} : tensor<4xi8>, tensor<4xi8>
func.func private @keep(%a: tensor<4xi4>, %f: tensor<4xf32>) -> (tensor<4xi4>, tensor<4xi4>) {
  %c = tgraph.constant dense<[-8, 7, -1, 0]> : tensor<4xi4>
  %m = tgraph.max %a, %c : tensor<4xi4>
  %t = tgraph.transpose %m {permutation = array<i64: 0>} : tensor<4xi4> -> tensor<4xi4>
  %k = tgraph.cast %f : tensor<4xf32> -> tensor<4xi4>
  return %t, %k : tensor<4xi4>, tensor<4xi4>
}

