// RUN: tessera-opt %s --split-input-file --verify-diagnostics --tessera-inline-recompute | FileCheck %s

// Calls of functions marked tgraph.recompute are replaced by their bodies
// (nested recomputations too) and the functions disappear; other calls and
// functions stay.
func.func private @g_recompute1(%a: tensor<4xf32>) -> tensor<4xf32> attributes {tgraph.recompute} {
  %e = math.exp %a : tensor<4xf32>
  return %e : tensor<4xf32>
}
func.func private @g_recompute(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) attributes {tgraph.recompute} {
  %s = arith.addf %a, %b : tensor<4xf32>
  %t = call @g_recompute1(%s) : (tensor<4xf32>) -> tensor<4xf32>
  return %t, %a : tensor<4xf32>, tensor<4xf32>
}
func.func private @other(%a: tensor<4xf32>) -> tensor<4xf32>
func.func @g(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %r:2 = call @g_recompute(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %o = call @other(%r#0) : (tensor<4xf32>) -> tensor<4xf32>
  return %r#0, %r#1, %o : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-NOT: @g_recompute
// CHECK: func.func private @other
// CHECK-LABEL: func.func @g
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>, %[[Y:.+]]: tensor<4xf32>)
// CHECK: %[[S:.+]] = arith.addf %[[X]], %[[Y]]
// CHECK: %[[E:.+]] = math.exp %[[S]]
// CHECK: %[[O:.+]] = call @other(%[[E]])
// CHECK: return %[[E]], %[[X]], %[[O]]

// -----

// A recomputation with more than one block is reported at the call.
func.func private @h_recompute(%a: tensor<4xf32>) -> tensor<4xf32> attributes {tgraph.recompute} {
  cf.br ^bb1
^bb1:
  return %a : tensor<4xf32>
}
func.func @h(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{calls recomputation @h_recompute, which has more than one block}}
  %r = call @h_recompute(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
