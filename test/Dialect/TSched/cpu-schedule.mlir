// RUN: tessera-opt %s --tessera-tgraph-lower-to-linalg --canonicalize "--tessera-cpu-schedule=vector-bytes=64 print-scripts" | FileCheck %s

// A matmul: packed into 8x32 register tiles (two 16-lane vectors; K is
// not tiled, so a tile of A is 8 values and a row of B's panel 32), B's
// panels laid out along K and copied in vectors, cache blocks of C over
// scf.forall, a K loop of one-step micro-kernels whose accumulators are
// hoisted out of it. A's column is stretched across the 32 lanes with a
// broadcast, not a transpose.
// CHECK-LABEL: transform.named_sequence @__transform_main
// CHECK: // linalg.generic (id 0)
// CHECK: transform.structured.pack %{{.+}} packed_sizes = [8, 32, 0]
// CHECK: transform.structured.pack_transpose %{{.+}} outer_perm = [1, 0]
// CHECK: transform.structured.tile_using_forall %{{.+}} tile_sizes [16, 8, 0, 0, 0]
// CHECK: transform.structured.fuse_into_containing_op
// CHECK: transform.structured.tile_using_for %{{.+}} tile_sizes [0, 0, 256, 0, 0]
// CHECK: transform.structured.tile_using_for %{{.+}} tile_sizes [1, 1, 0, 0, 0] interchange = [1, 0, 2, 3, 4]
// CHECK: transform.structured.vectorize
// CHECK: transform.structured.lower_pack
// CHECK: transform.structured.lower_unpack
// CHECK: transform.loop.hoist_loop_invariant_subsets
// CHECK-LABEL: func.func @matmul
// CHECK: scf.forall
// CHECK: vector.transfer_read {{.+}} : tensor<1x1x32xf32>, vector<32xf32>
// CHECK: vector.transfer_write {{.+}} : vector<32xf32>, tensor<1x1x32xf32>
// CHECK: scf.forall
// CHECK: scf.for
// CHECK: %[[ACC:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %{{.+}}) -> (vector<8x32xf32>)
// CHECK: %[[A:.+]] = vector.transfer_read {{.+}} : tensor<1x1x8xf32>, vector<8xf32>
// CHECK: %[[COL:.+]] = vector.shape_cast %[[A]] : vector<8xf32> to vector<8x1xf32>
// CHECK: %[[AB:.+]] = vector.broadcast %[[COL]] : vector<8x1xf32> to vector<8x32xf32>
// CHECK: %[[B:.+]] = vector.transfer_read {{.+}} : tensor<1x1x32xf32>, vector<32xf32>
// CHECK: %[[BB:.+]] = vector.broadcast %[[B]] : vector<32xf32> to vector<8x32xf32>
// CHECK: math.fma %[[AB]], %[[BB]], %{{.+}} : vector<8x32xf32>
// CHECK-NOT: vector.transpose
func.func @matmul(%a: tensor<?x?xf32, #tgraph.dims<[M, K]>>, %b: tensor<?x?xf32, #tgraph.dims<[K, N]>>)
    -> tensor<?x?xf32, #tgraph.dims<[M, N]>> {
  %c = tgraph.matmul %a, %b : (tensor<?x?xf32, #tgraph.dims<[M, K]>>, tensor<?x?xf32, #tgraph.dims<[K, N]>>)
      -> tensor<?x?xf32, #tgraph.dims<[M, N]>>
  return %c : tensor<?x?xf32, #tgraph.dims<[M, N]>>
}
