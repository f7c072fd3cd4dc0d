// RUN: tessera-opt %s --tessera-tgraph-lower-to-linalg --canonicalize "--tessera-cpu-schedule=vector-bytes=64" | FileCheck %s

// Around a packed GEMM with a run-time row count M:
// - A's rows are padded to the 8-row register tile only when M is not a
//   multiple of 8 (scf.if): otherwise A is packed as it is;
// - the accumulator is zeroed tile by tile inside the parallel GEMM loop,
//   not as a whole output before it;
// - the unpacked result is returned as it is, without a copy into the
//   matmul's (zero-filled) output.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.+]]: tensor<?x64xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.if %{{.+}} -> (tensor<?x64xf32>) {
// CHECK-NEXT: scf.yield %[[A]] : tensor<?x64xf32>
// CHECK-NEXT: } else {
// CHECK: tensor.pad
// CHECK: scf.forall {{.+}} -> (tensor<?x3x8x32xf32>) {
// CHECK-NOT: scf.for
// CHECK: linalg.fill {{.+}} -> tensor<?x3x8x32xf32>
// CHECK: math.fma
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
