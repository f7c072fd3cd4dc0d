// RUN: tessera-opt %s --tessera-tgraph-lower-to-linalg --canonicalize "--tessera-cpu-schedule=vector-bytes=64" | FileCheck %s

// Around a packed GEMM with a run-time row count M:
// - A's rows are padded to the 8-row register tile only when M is not a
//   multiple of 8 (scf.if): otherwise A is packed as it is;
// - the accumulator is a private tile of the parallel GEMM loop, zeroed
//   there (not the whole output zeroed before the loop);
// - each finished tile is transposed from the packed [Mt, Nt, 8, 32]
//   layout into the result's rows right there, in 32-float vectors (no
//   separate parallel unpacking pass), and the result is returned without
//   a copy into the matmul's output.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.+]]: tensor<?x64xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.if %{{.+}} -> (tensor<?x64xf32>) {
// CHECK-NEXT: scf.yield %[[A]] : tensor<?x64xf32>
// CHECK-NEXT: } else {
// CHECK: tensor.pad
// CHECK: scf.forall {{.+}} -> (tensor<?x8x3x32xf32>) {
// CHECK: %[[TILE:.+]] = tensor.empty(%{{.+}}) : tensor<?x3x8x32xf32>
// CHECK-NEXT: linalg.fill {{.+}} outs(%[[TILE]] : tensor<?x3x8x32xf32>)
// CHECK: math.fma
// CHECK: vector.transfer_read {{.+}} : tensor<1x1x1x32xf32>, vector<32xf32>
// CHECK: tensor.parallel_insert_slice {{.+}} : tensor<?x8x3x32xf32> into tensor<?x8x3x32xf32>
// CHECK-NOT: scf.forall
// CHECK-NOT: linalg.copy
// CHECK: %[[C:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2, 3]] : tensor<?x8x3x32xf32> into tensor<?x96xf32>
// CHECK-NEXT: %[[R:.+]] = tensor.extract_slice %[[C]][0, 0] [%{{.+}}, 96] [1, 1]
// CHECK-NEXT: return %[[R]]
func.func @matmul(%a: tensor<?x64xf32, #tgraph.dims<[M, 64]>>, %b: tensor<64x96xf32>)
    -> tensor<?x96xf32, #tgraph.dims<[M, 96]>> {
  %c = tgraph.matmul %a, %b : (tensor<?x64xf32, #tgraph.dims<[M, 64]>>, tensor<64x96xf32>)
      -> tensor<?x96xf32, #tgraph.dims<[M, 96]>>
  return %c : tensor<?x96xf32, #tgraph.dims<[M, 96]>>
}
