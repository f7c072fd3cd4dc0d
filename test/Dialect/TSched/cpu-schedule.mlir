// RUN: tessera-opt %s --tessera-tgraph-lower-to-linalg --canonicalize "--tessera-cpu-schedule=vector-bytes=64 print-scripts" | FileCheck %s

// A matmul: packed into 8x32 register tiles (two 16-lane vectors), B's
// panels laid out along K, cache blocks of C over scf.forall, a K loop of
// one-step micro-kernels whose accumulators are hoisted out of it.
// CHECK-LABEL: transform.named_sequence @__transform_main
// CHECK: // linalg.generic (id 0)
// CHECK: transform.structured.pack %{{.+}} packed_sizes = [8, 32, 1]
// CHECK: transform.structured.pack_transpose %{{.+}} outer_perm = [1, 0]
// CHECK: transform.structured.tile_using_forall %{{.+}} tile_sizes [16, 8, 0, 0, 0, 0]
// CHECK: transform.structured.fuse_into_containing_op
// CHECK: transform.structured.tile_using_for %{{.+}} tile_sizes [0, 0, 256, 0, 0, 0]
// CHECK: transform.structured.tile_using_for %{{.+}} tile_sizes [1, 1, 0, 0, 0, 0] interchange = [1, 0, 2, 3, 4, 5]
// CHECK: transform.structured.vectorize
// CHECK: transform.structured.lower_pack
// CHECK: transform.structured.lower_unpack
// CHECK: transform.loop.hoist_loop_invariant_subsets
// CHECK-LABEL: func.func @matmul
// CHECK: scf.forall
// CHECK: scf.for
// CHECK: %[[ACC:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %{{.+}}) -> (vector<8x32xf32>)
// CHECK: math.fma %{{.+}}, %{{.+}}, %{{.+}} : vector<8x32xf32>
func.func @matmul(%a: tensor<?x?xf32, #tgraph.dims<[M, K]>>, %b: tensor<?x?xf32, #tgraph.dims<[K, N]>>)
    -> tensor<?x?xf32, #tgraph.dims<[M, N]>> {
  %c = tgraph.matmul %a, %b : (tensor<?x?xf32, #tgraph.dims<[M, K]>>, tensor<?x?xf32, #tgraph.dims<[K, N]>>)
      -> tensor<?x?xf32, #tgraph.dims<[M, N]>>
  return %c : tensor<?x?xf32, #tgraph.dims<[M, N]>>
}
