// RUN: tessera-opt %s -split-input-file --tessera-tgraph-lower-to-linalg -verify-diagnostics

// On the CPU a cache's heads, max_length and head_dim are numbers.
// expected-error @+1 {{'func.func' op argument 0 is a kv_cache whose dim 2 is S; on the CPU only the batch (dim 0) may be a symbol: heads, max_length and head_dim are numbers}}
func.func @symbolic_capacity(%c: !tgraph.kv_cache<[B, 8, S, 64], f32>) {
  return
}

// -----

// Regions cannot carry a cache.
func.func @solve_with_cache(%x0: tensor<4xf32>, %c: !tgraph.kv_cache<[1, 2, 8, 4], f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tgraph.solve' op takes a kv_cache, but on the CPU caches are state that regions cannot carry: call a function that takes the cache instead}}
  %x = tgraph.solve %x0 params(%c : !tgraph.kv_cache<[1, 2, 8, 4], f32>) : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>, %cc: !tgraph.kv_cache<[1, 2, 8, 4], f32>):
    tgraph.yield %x : tensor<4xf32>
  }
  return %x : tensor<4xf32>
}
