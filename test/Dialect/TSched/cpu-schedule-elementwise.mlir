// RUN: tessera-opt %s --tessera-tgraph-lower-to-linalg --canonicalize "--tessera-cpu-schedule=vector-bytes=32 print-scripts" | FileCheck %s

// The row sums and the fill of their result form one loop over rows,
// before the script (which lists the loops it found first).
// CHECK: // row loop of linalg.generic: 2 ops, 0 materialized, 0 operations recomputed
// Elementwise: rows over scf.forall, 8-lane (AVX2, f32) chunks along the
// row; the last partial chunk is peeled off and stays scalar.
// CHECK: // linalg.generic (id 0)
// CHECK: transform.structured.tile_using_forall %{{.+}} tile_sizes [1, 0]
// CHECK: transform.structured.tile_using_for %{{.+}} tile_sizes [0, 8]
// CHECK: transform.loop.peel
// CHECK: transform.structured.vectorize %{{.+}} vector_sizes [1, 8]
// Row sums: the fill of the result joins the reduction's row loop; one
// partial sum per lane of four vectors (four independent chains), combined
// at the end of the row.
// CHECK: // row of linalg.generic (id 2)
// CHECK: transform.structured.tile_reduction_using_for %{{.+}} by tile_sizes = [0, 32]
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

