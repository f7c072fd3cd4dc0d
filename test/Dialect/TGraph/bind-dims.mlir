// RUN: tessera-opt %s --tessera-tgraph-infer-shapes --tessera-tgraph-bind-dims="dims=B=8,S=6" -split-input-file -verify-diagnostics | FileCheck %s
// RUN: tessera-opt %s --tessera-tgraph-bind-dims="dims=B=8" -split-input-file 2>&1 | FileCheck %s --check-prefix=PARTIAL
// RUN: not tessera-opt %s --tessera-tgraph-bind-dims="dims=B=8,T=2" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tessera-opt %s --tessera-tgraph-bind-dims="dims=B=x" 2>&1 | FileCheck %s --check-prefix=SPELLING
// RUN: not tessera-opt %s --tessera-tgraph-bind-dims="dims=B=8,S=0" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// UNKNOWN: no dim of the module is named 'T' (its symbols: B, S)
// SPELLING: expected NAME=SIZE with a size >= 0, found 'B=x'
// NEGATIVE: with B=8, S=0, the dim S-1 is -1; sizes cannot be negative

// Bound dims become static, expressions of them too, in the function
// type, the block arguments, the results and the attributes of ops.
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%{{.*}}: tensor<8x64xf32>, %{{.*}}: tensor<6x8xf32>) -> (tensor<16x64xf32>, tensor<5x8xf32>)
// CHECK: tgraph.concat {{.*}} -> tensor<16x64xf32>
// CHECK: tgraph.slice {{.*}}limit = #tgraph.dims<[6, 8]>, start = #tgraph.dims<[1, 0]>{{.*}} -> tensor<5x8xf32>
// CHECK-NOT: tgraph.dims<[{{.*}}[BS]
// PARTIAL-LABEL: func.func @f
// PARTIAL-SAME: (%{{.*}}: tensor<8x64xf32>, %{{.*}}: tensor<?x8xf32, #tgraph.dims<[S, 8]>>) -> (tensor<16x64xf32>, tensor<?x8xf32, #tgraph.dims<["S-1", 8]>>)
func.func @f(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
             %y: tensor<?x?xf32, #tgraph.dims<[S, B]>>)
    -> (tensor<?x64xf32, #tgraph.dims<["2*B", 64]>>,
        tensor<?x?xf32, #tgraph.dims<["S-1", B]>>) {
  %0 = tgraph.concat %x, %x {dim = 0 : i64}
      : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
         tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
      -> tensor<?x64xf32, #tgraph.dims<["2*B", 64]>>
  %1 = tgraph.slice %y {start = #tgraph.dims<[1, 0]>, limit = #tgraph.dims<[S, B]>, stride = array<i64: 1, 1>}
      : (tensor<?x?xf32, #tgraph.dims<[S, B]>>) -> tensor<?x?xf32, #tgraph.dims<["S-1", B]>>
  return %0, %1 : tensor<?x64xf32, #tgraph.dims<["2*B", 64]>>,
                  tensor<?x?xf32, #tgraph.dims<["S-1", B]>>
}

// -----

// A run-time check between two symbols is decided: it holds (B = 8 and
// the dim of a static 8) and goes, with the dim queries that fed it.
// CHECK-LABEL: func.func @holds
// CHECK-NOT: tgraph.assert_dim
// CHECK-NOT: tgraph.dim
// CHECK: tgraph.add {{.*}} : tensor<8xf32>
func.func @holds(%a: tensor<?xf32, #tgraph.dims<[B]>>, %b: tensor<8xf32>,
                  %s: tensor<?xf32, #tgraph.dims<[S]>>)
    -> tensor<?xf32, #tgraph.dims<[B]>> {
  %0 = tgraph.add %a, %b : (tensor<?xf32, #tgraph.dims<[B]>>, tensor<8xf32>) -> tensor<?xf32, #tgraph.dims<[B]>>
  return %0 : tensor<?xf32, #tgraph.dims<[B]>>
}

// -----

// It fails (S = 6 against a static 8): the check's own message says where.
func.func @fails(%a: tensor<?xf32, #tgraph.dims<[S]>>, %b: tensor<8xf32>,
                  %c: tensor<?xf32, #tgraph.dims<[B]>>)
    -> tensor<8xf32> {
  // expected-error @+1 {{fails for B=8, S=6: 'tgraph.add' op at}}
  %0 = tgraph.add %a, %b : (tensor<?xf32, #tgraph.dims<[S]>>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
