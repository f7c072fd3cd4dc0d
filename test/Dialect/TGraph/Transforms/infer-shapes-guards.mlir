// RUN: tessera-opt %s -split-input-file --tessera-tgraph-infer-shapes | FileCheck %s
// RUN: tessera-opt %s -split-input-file --tessera-tgraph-infer-shapes=allow-runtime-checks=false -verify-diagnostics

// A broadcast of S against T cannot be decided at compile time: the pass
// inserts a run-time check whose message names the op, its location, the
// operand dims and both symbols.

// CHECK-LABEL: func.func @broadcast_s_vs_t
// CHECK-SAME: -> tensor<4x?xf32, #tgraph.dims<[4, S]>>
// CHECK: %[[S:.+]] = tgraph.dim %arg0, 1
// CHECK: %[[T:.+]] = tgraph.dim %arg1, 1
// CHECK: tgraph.assert_dim_eq %[[S]], %[[T]], "'tgraph.add' op at {{.*}}infer-shapes-guards.mlir:[[@LINE+6]]:8: broadcast mismatch: lhs (operand 0) dim 1 (S) must equal rhs (operand 1) dim 1 (T)"
// CHECK: tgraph.add %arg0, %arg1 {{.*}} -> tensor<4x?xf32, #tgraph.dims<[4, S]>>
func.func @broadcast_s_vs_t(%a: tensor<4x?xf32, #tgraph.dims<[4, S]>>,
                            %b: tensor<4x?xf32, #tgraph.dims<[4, T]>>)
    -> tensor<?x?xf32> {
  // expected-error @+1 {{'tgraph.add' op cannot prove at compile time that broadcast mismatch: lhs (operand 0) dim 1 (S) must equal rhs (operand 1) dim 1 (T) (run-time checks are disabled)}}
  %0 = tgraph.add %a, %b : (tensor<4x?xf32, #tgraph.dims<[4, S]>>,
      tensor<4x?xf32, #tgraph.dims<[4, T]>>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
