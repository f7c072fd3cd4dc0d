// RUN: tessera-opt %s --tessera-tgraph-lower-to-linalg | FileCheck %s

// A reshape to a 0-d tensor has an empty shape operand (its type cannot be
// inferred from its elements; this crashed).
// CHECK-LABEL: func.func @element
// CHECK: %[[S:.*]] = arith.constant dense<> : tensor<0xindex>
// CHECK: tensor.reshape %{{.*}}(%[[S]]) : (tensor<1x1xf32>, tensor<0xindex>) -> tensor<f32>
func.func @element(%x: tensor<1x1xf32>) -> tensor<f32> {
  %r = tgraph.reshape %x : tensor<1x1xf32> -> tensor<f32>
  return %r : tensor<f32>
}
