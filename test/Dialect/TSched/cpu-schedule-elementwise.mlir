// RUN: tessera-opt %s --tessera-tgraph-lower-to-linalg --canonicalize "--tessera-cpu-schedule=vector-bytes=32 print-scripts" | FileCheck %s

// Elementwise: rows over scf.forall, 8-lane (AVX2, f32) chunks along the
// row, peeled so only the last chunk is masked.
// CHECK: // linalg.generic (id 0)
// CHECK: transform.structured.tile_using_forall %{{.+}} tile_sizes [1, 0]
// CHECK: transform.structured.tile_using_for %{{.+}} tile_sizes [0, 8]
// CHECK: transform.loop.peel
// CHECK-COUNT-2: transform.structured.vectorize %{{.+}} vector_sizes [1, 8]
// Row sums: one partial sum per lane, combined at the end.
// CHECK: // linalg.generic (id 2)
// CHECK: transform.structured.tile_reduction_using_for %{{.+}} by tile_sizes = [0, 8]
// CHECK-LABEL: func.func @f
// CHECK: scf.forall
// CHECK: vector.transfer_read {{.+}} {in_bounds = [true]} : tensor<1x8xf32>, vector<8xf32>
// CHECK: math.exp %{{.+}} : vector<8xf32>
// CHECK: vector.reduction <add>
func.func @f(%x: tensor<?x?xf32, #tgraph.dims<[R, C]>>) -> (tensor<?x?xf32, #tgraph.dims<[R, C]>>, tensor<?xf32, #tgraph.dims<[R]>>) {
  %e = tgraph.exp %x : tensor<?x?xf32, #tgraph.dims<[R, C]>>
  %s = tgraph.reduce_sum %x {dims = array<i64: 1>} : tensor<?x?xf32, #tgraph.dims<[R, C]>> -> tensor<?xf32, #tgraph.dims<[R]>>
  return %e, %s : tensor<?x?xf32, #tgraph.dims<[R, C]>>, tensor<?xf32, #tgraph.dims<[R]>>
}
