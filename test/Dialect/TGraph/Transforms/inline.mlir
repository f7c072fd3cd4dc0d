// RUN: tessera-opt %s --tessera-tgraph-inline --split-input-file | FileCheck %s

// A private callee is inlined and erased; a public one stays.
func.func private @sq(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tgraph.mul %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @pub(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tgraph.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
// CHECK-NOT: func.func private @sq
// CHECK-LABEL: func.func @pub
// CHECK-LABEL: func.func @caller
// CHECK-SAME: (%[[A:.+]]: tensor<4xf32>)
// CHECK: %[[M:.+]] = tgraph.mul %[[A]], %[[A]]
// CHECK: %[[N:.+]] = tgraph.mul %[[M]], %[[M]]
// CHECK: %[[E:.+]] = tgraph.call @pub(%[[N]])
// CHECK: return %[[E]]
func.func @caller(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tgraph.call @sq(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = tgraph.call @sq(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = tgraph.call @pub(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Calls that rely on compatible symbolic dims, and recomputations, stay.
func.func private @id(%x: tensor<?xf32, #tgraph.dims<[N]>>)
    -> tensor<?xf32, #tgraph.dims<[N]>> {
  return %x : tensor<?xf32, #tgraph.dims<[N]>>
}
func.func private @again(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {tgraph.recompute} {
  %y = tgraph.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
// CHECK-LABEL: func.func private @id
// CHECK-LABEL: func.func private @again
// CHECK-LABEL: func.func @kept
// CHECK: tgraph.call @id
// CHECK: tgraph.call @again
func.func @kept(%a: tensor<?xf32, #tgraph.dims<[B]>>, %b: tensor<4xf32>)
    -> (tensor<?xf32, #tgraph.dims<[B]>>, tensor<4xf32>) {
  %0 = tgraph.call @id(%a) : (tensor<?xf32, #tgraph.dims<[B]>>)
      -> tensor<?xf32, #tgraph.dims<[B]>>
  %1 = tgraph.call @again(%b) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<?xf32, #tgraph.dims<[B]>>, tensor<4xf32>
}
