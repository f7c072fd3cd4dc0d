// RUN: tessera-opt %s --tessera-tgraph-decompose --tessera-tgraph-lower-to-linalg --canonicalize --tessera-fuse-elementwise "--tessera-cpu-schedule=vector-bytes=64 print-scripts" | FileCheck %s

// A static innermost dim wider than a vector (d_model 512): each row of the
// rmsnorm group steps over S one element at a time and reduces 512 in
// partials of four 16-lane vectors; the scaling is 16 lanes at a time;
// nothing stays scalar.
// CHECK-LABEL: transform.named_sequence @__transform_main
// CHECK: // row loop of linalg.generic: 4 ops, 0 materialized, 0 operations recomputed
// CHECK: // row of linalg.generic (id 1)
// CHECK: transform.structured.tile_using_for %{{.+}} tile_sizes [0, 1, 0]
// CHECK: transform.structured.tile_reduction_using_for %{{.+}} by tile_sizes = [0, 0, 64]
// CHECK: transform.structured.vectorize %{{.+}} vector_sizes [1, 1, 64]
// CHECK: transform.structured.vectorize %{{.+}} vector_sizes [1, 1, 16]
// CHECK-LABEL: func.func @rmsnorm_static_width
// CHECK: vector.transfer_read {{.+}} vector<16xf32>
func.func @rmsnorm_static_width(%x: tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>, %g: tensor<512xf32>)
    -> tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>> {
  %h = tgraph.rmsnorm %x scale %g {axis = 2 : i64}
      : (tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>, tensor<512xf32>) -> tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>
  return %h : tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>
}
