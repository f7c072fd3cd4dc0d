// RUN: tessera-opt %s --split-input-file --tessera-tgraph-autodiff --verify-diagnostics

func.func @f(%x: tensor<4xf32> {tgraph.name = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// expected-error @+1 {{@f has no argument %y (its arguments: %x)}}
tgraph.adjoint @f wrt(%y) -> @g

// -----

func.func @f(%i: tensor<4xi32>) -> tensor<4xi32> {
  return %i : tensor<4xi32>
}
// expected-error @+1 {{can differentiate only with respect to tensors of the Graph IR's float types (f64, f32, tf32, bf16, f16, f8E4M3FN, f8E5M2), but %arg0 is 'tensor<4xi32>'}}
tgraph.jvp @f wrt(%arg0) -> @g

// -----

// A float type the Graph IR has no ops for (found by the fuzzer: the
// gradient was a tgraph.zeros_like of f80 that did not verify).
func.func @f(%x: tensor<?xf80>) {
  return
}
// expected-error @+1 {{but %arg0 is 'tensor<?xf80>'}}
tgraph.adjoint @f wrt(%arg0) -> @g

// -----

// expected-error @+1 {{differentiates @nowhere, which is not a function of this module}}
tgraph.adjoint @nowhere wrt(%x) -> @g

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// expected-error @+1 {{cannot create @f: the module already has a symbol of that name}}
tgraph.adjoint @f wrt(%arg0) -> @f

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// expected-error @+1 {{needs one direction per wrt argument (1), got 2}}
tgraph.hvp @f wrt(%arg0) dir(%a, %b) -> @h

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// expected-error @+1 {{needs @f to return one scalar float (a rank-0 tensor)}}
tgraph.hvp @f wrt(%arg0) dir(%v) -> @h

// -----

// An op on the path without a rule names itself; the declaration is noted.
// Derivatives do not flow through state: a differentiated value stored into
// a KV cache stops the transformation (instead of a silently zero
// gradient for what is read back), in both modes.
func.func @f(%k: tensor<1x1x2x4xf32>) -> tensor<f32> {
  %c = tgraph.kv_cache.create : !tgraph.kv_cache<[1, 1, 8, 4], f32>
  // expected-error @+1 {{'tgraph.kv_cache.append' has no differentiation rule: a value that depends on the differentiated arguments reaches state it writes}}
  tgraph.kv_cache.append %c, %k, %k : !tgraph.kv_cache<[1, 1, 8, 4], f32>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>
  %keys, %vals, %len = tgraph.kv_cache.read %c : !tgraph.kv_cache<[1, 1, 8, 4], f32> -> tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<i64>
  %s = tgraph.reduce_sum %keys {dims = array<i64: 0, 1, 2, 3>} : tensor<1x1x8x4xf32> -> tensor<f32>
  return %s : tensor<f32>
}
// expected-note @+1 {{needed to differentiate @f here}}
tgraph.adjoint @f wrt(%arg0) -> @g

// -----

func.func @f(%k: tensor<1x1x2x4xf32>) -> tensor<1x1x8x4xf32> {
  %c = tgraph.kv_cache.create : !tgraph.kv_cache<[1, 1, 8, 4], f32>
  // expected-error @+1 {{'tgraph.kv_cache.append' has no differentiation rule}}
  tgraph.kv_cache.append %c, %k, %k : !tgraph.kv_cache<[1, 1, 8, 4], f32>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>
  %keys, %vals, %len = tgraph.kv_cache.read %c : !tgraph.kv_cache<[1, 1, 8, 4], f32> -> tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<i64>
  return %keys : tensor<1x1x8x4xf32>
}
// expected-note @+1 {{needed to differentiate @f here}}
tgraph.jvp @f wrt(%arg0) -> @g

// -----

// A conv2d whose channels are symbolic cannot be laid out as im2col.
func.func @f(%x: tensor<1x?x4x4xf32>, %w: tensor<2x1x3x3xf32>) -> tensor<1x2x2x2xf32> {
  // expected-error @+1 {{'tgraph.conv2d' op has no differentiation rule here: dims other than the batch must be numbers}}
  %y = tgraph.conv2d %x, %w : (tensor<1x?x4x4xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}
tgraph.adjoint @f wrt(%arg1) -> @g

// -----

// Off the path, ops without rules are fine: argmax only sees %i.
func.func @f(%x: tensor<4xf32>, %i: tensor<4xf32>) -> (tensor<4xf32>, tensor<i64>) {
  %e = tgraph.exp %x : tensor<4xf32>
  %a = tgraph.argmax %i {dim = 0 : i64} : tensor<4xf32> -> tensor<i64>
  return %e, %a : tensor<4xf32>, tensor<i64>
}
tgraph.jvp @f wrt(%arg0) -> @g

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// expected-error @+1 {{creates @g, which another declaration creates too}}
tgraph.jvp @f wrt(%arg0) -> @g
tgraph.adjoint @f wrt(%arg0) -> @g
