// One step of autoregressive decoding with a KV cache: the new token's
// keys and values are appended to the cache (a state argument the call
// updates in place), and its query attends to every cached position.
// Positions past the cache's length are masked out.
//
//   tessera-run examples/kv_decode.mlir --dims B=2 --calls 5
//
// runs five steps (random inputs, the same each step) on an empty cache.
!cache = !tgraph.kv_cache<[B, 8, 128, 64], f32>
!token = tensor<?x8x1x64xf32, #tgraph.dims<[B, 8, 1, 64]>>
!keys = tensor<?x8x128x64xf32, #tgraph.dims<[B, 8, 128, 64]>>
!scores = tensor<?x8x1x128xf32, #tgraph.dims<[B, 8, 1, 128]>>

func.func @decode(%cache: !cache, %q: !token, %k: !token, %v: !token) -> !token {
  tgraph.kv_cache.append %cache, %k, %v : !cache, !token, !token
  %keys, %values, %length = tgraph.kv_cache.read %cache
      : !cache -> !keys, !keys, tensor<i64>
  %s = tgraph.matmul %q, %keys {transpose_rhs} : (!token, !keys) -> !scores
  %scale = tgraph.constant dense<0.125> : tensor<f32>
  %scaled = tgraph.mul %s, %scale : (!scores, tensor<f32>) -> !scores
  %position = tgraph.iota {dim = 0 : i64} : tensor<128xi64>
  %valid = tgraph.compare lt, %position, %length
      : (tensor<128xi64>, tensor<i64>) -> tensor<128xi1>
  %lowest = tgraph.constant dense<-3.0e38> : tensor<f32>
  %masked = tgraph.select %valid, %scaled, %lowest
      : (tensor<128xi1>, !scores, tensor<f32>) -> !scores
  %p = tgraph.softmax %masked {dim = 3 : i64} : !scores
  %o = tgraph.matmul %p, %values : (!scores, !keys) -> !token
  return %o : !token
}
