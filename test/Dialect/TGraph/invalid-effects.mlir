// RUN: tessera-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the randomness, collective and kv_cache ops: one case per
// message.

// rng.split: at least one key.
func.func @split_no_keys() {
  %k = tgraph.rng.key {seed = 0 : i64}
  // expected-error @+1 {{'tgraph.rng.split' op must produce at least one key}}
  "tgraph.rng.split"(%k) : (!tgraph.key) -> ()
  return
}

// -----

// rng.uniform: finite low < high.
func.func @uniform_range() {
  %k = tgraph.rng.key {seed = 0 : i64}
  // expected-error @+1 {{'tgraph.rng.uniform' op needs finite low < high, but got [1.000000e+00, 0.000000e+00)}}
  %u = tgraph.rng.uniform %k {low = 1.0 : f64, high = 0.0 : f64} : tensor<4xf32>
  return
}

// -----

// rng.normal: finite mean, stddev >= 0.
func.func @normal_stddev() {
  %k = tgraph.rng.key {seed = 0 : i64}
  // expected-error @+1 {{'tgraph.rng.normal' op needs a finite mean and a finite stddev >= 0, but got mean 0.000000e+00 and stddev -1.000000e+00}}
  %n = tgraph.rng.normal %k {stddev = -1.0 : f64} : tensor<4xf32>
  return
}

// -----

// rng.bernoulli: p is a probability.
func.func @bernoulli_p() {
  %k = tgraph.rng.key {seed = 0 : i64}
  // expected-error @+1 {{'tgraph.rng.bernoulli' op p must be in [0, 1], but is 1.500000e+00}}
  %b = tgraph.rng.bernoulli %k {p = 1.5 : f64} : tensor<4xi1>
  return
}

// -----

// rng samples: a created tensor has no '?' dim.
func.func @sample_unknown_dim() {
  %k = tgraph.rng.key {seed = 0 : i64}
  // expected-error @+1 {{'tgraph.rng.uniform' op result dim 0 is '?'; random tensors need every dim to be a constant or a symbol expression}}
  %u = tgraph.rng.uniform %k : tensor<?x64xf32>
  return
}

// -----

// collectives: axis_name names a mesh axis.
func.func @collective_empty_axis(%g: tensor<512x64xf32>) {
  // expected-error @+1 {{'tgraph.all_reduce' op axis_name must name a mesh axis, but is empty}}
  %0 = tgraph.all_reduce %g {reduction = #tgraph<reduction sum>, axis_name = "", group_size = 8 : i64} : tensor<512x64xf32>
  return
}

// -----

// all_reduce: at least one device in the group.
func.func @all_reduce_group(%g: tensor<512x64xf32>) {
  // expected-error @+1 {{'tgraph.all_reduce' op group_size must be >= 1, but is 0}}
  %0 = tgraph.all_reduce %g {reduction = #tgraph<reduction sum>, axis_name = "data", group_size = 0 : i64} : tensor<512x64xf32>
  return
}

// -----

// all_reduce: a mean needs floats.
func.func @all_reduce_mean_int(%g: tensor<512x64xi32>) {
  // expected-error @+1 {{'tgraph.all_reduce' op a mean all_reduce needs a float tensor, but the element type is i32}}
  %0 = tgraph.all_reduce %g {reduction = #tgraph<reduction mean>, axis_name = "data", group_size = 8 : i64} : tensor<512x64xi32>
  return
}

// -----

// all_gather: the gathered dim is an operand dim.
func.func @all_gather_dim(%g: tensor<512x64xf32>) {
  // expected-error @+1 {{'tgraph.all_gather' op dim 2 is out of range for an operand of rank 2 (expected 0..1)}}
  %0 = tgraph.all_gather %g {dim = 2 : i64, axis_name = "model", group_size = 4 : i64} : tensor<512x64xf32> -> tensor<512x256xf32>
  return
}

// -----

// all_gather: group size rule of the shape functions.
func.func @all_gather_group(%g: tensor<512x64xf32>) {
  // expected-error @+1 {{'tgraph.all_gather' op group_size must be >= 1, but is -2}}
  %0 = tgraph.all_gather %g {dim = 1 : i64, axis_name = "model", group_size = -2 : i64} : tensor<512x64xf32> -> tensor<512x64xf32>
  return
}

// -----

// reduce_scatter: the scattered dim divides evenly over the group.
func.func @reduce_scatter_divisible(%g: tensor<10x64xf32>) {
  // expected-error @+1 {{'tgraph.reduce_scatter' op the split dimension must divide evenly over group_size: operand 0 dim 0 is 10, which is not a multiple of 4}}
  %0 = tgraph.reduce_scatter %g {reduction = #tgraph<reduction sum>, dim = 0 : i64, axis_name = "data", group_size = 4 : i64} : tensor<10x64xf32> -> tensor<2x64xf32>
  return
}

// -----

// all_to_all: split_dim is an operand dim.
func.func @all_to_all_split_dim(%x: tensor<64x16xf32>) {
  // expected-error @+1 {{'tgraph.all_to_all' op split_dim 2 is out of range for an operand of rank 2 (expected 0..1)}}
  %0 = tgraph.all_to_all %x {split_dim = 2 : i64, concat_dim = 1 : i64, axis_name = "expert", group_size = 4 : i64} : tensor<64x16xf32> -> tensor<16x64xf32>
  return
}

// -----

// all_to_all: concat_dim is an operand dim.
func.func @all_to_all_concat_dim(%x: tensor<64x16xf32>) {
  // expected-error @+1 {{'tgraph.all_to_all' op concat_dim -1 is out of range for an operand of rank 2 (expected 0..1)}}
  %0 = tgraph.all_to_all %x {split_dim = 0 : i64, concat_dim = -1 : i64, axis_name = "expert", group_size = 4 : i64} : tensor<64x16xf32> -> tensor<16x64xf32>
  return
}

// -----

// permute: pairs are [source, target] with non-negative devices.
func.func @permute_pair_shape(%x: tensor<16x64xf32>) {
  // expected-error @+1 {{'tgraph.permute' op each entry of pairs must be [source, target] with non-negative device indices}}
  %0 = tgraph.permute %x {pairs = [array<i64: 0, 1, 2>], axis_name = "pipe"} : tensor<16x64xf32>
  return
}

// -----

// permute: each device sends at most once.
func.func @permute_source_twice(%x: tensor<16x64xf32>) {
  // expected-error @+1 {{'tgraph.permute' op device 0 is the source of two pairs}}
  %0 = tgraph.permute %x {pairs = [array<i64: 0, 1>, array<i64: 0, 2>], axis_name = "pipe"} : tensor<16x64xf32>
  return
}

// -----

// permute: each device receives at most once.
func.func @permute_target_twice(%x: tensor<16x64xf32>) {
  // expected-error @+1 {{'tgraph.permute' op device 1 is the target of two pairs}}
  %0 = tgraph.permute %x {pairs = [array<i64: 0, 1>, array<i64: 2, 1>], axis_name = "pipe"} : tensor<16x64xf32>
  return
}

// -----

// kv_cache.create: the window fits the capacity.
func.func @kv_window() {
  // expected-error @+1 {{'tgraph.kv_cache.create' op window must be in [1, max_length], but is 8192}}
  %c = tgraph.kv_cache.create {window = 8192 : i64} : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>
  return
}

// -----

// kv_cache.append: keys have the cache's element type.
func.func @kv_append_dtype(%c: !tgraph.kv_cache<[B, 8, 4096, 64], bf16>,
                           %k: tensor<?x8x?x64xf32, #tgraph.dims<[B, 8, T, 64]>>,
                           %v: tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>) {
  // expected-error @+1 {{'tgraph.kv_cache.append' op keys (operand 1) has element type f32 but the cache stores bf16}}
  tgraph.kv_cache.append %c, %k, %v : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>,
      tensor<?x8x?x64xf32, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>
  return
}

// -----

// kv_cache.append: keys and values are [batch, heads, T, head_dim].
func.func @kv_append_rank(%c: !tgraph.kv_cache<[B, 8, 4096, 64], bf16>,
                          %k: tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>,
                          %v: tensor<?x?x64xbf16, #tgraph.dims<[B, T, 64]>>) {
  // expected-error @+1 {{'tgraph.kv_cache.append' op values (operand 2) must be [batch, heads, T, head_dim], but has shape [B, T, 64]}}
  tgraph.kv_cache.append %c, %k, %v : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>,
      tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x?x64xbf16, #tgraph.dims<[B, T, 64]>>
  return
}

// -----

// kv_cache.append: batch, heads and head_dim match the cache.
func.func @kv_append_shape(%c: !tgraph.kv_cache<[B, 8, 4096, 64], bf16>,
                           %k: tensor<?x4x?x64xbf16, #tgraph.dims<[B, 4, T, 64]>>) {
  // expected-error @+1 {{'tgraph.kv_cache.append' op cache shape mismatch: keys (operand 1) dim 1 is 4 but cache dim 1 is 8}}
  tgraph.kv_cache.append %c, %k, %k : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>,
      tensor<?x4x?x64xbf16, #tgraph.dims<[B, 4, T, 64]>>, tensor<?x4x?x64xbf16, #tgraph.dims<[B, 4, T, 64]>>
  return
}

// -----

// kv_cache.append: keys and values cover the same positions.
func.func @kv_append_positions(%c: !tgraph.kv_cache<[B, 8, 4096, 64], bf16>,
                               %k: tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>,
                               %v: tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, "T+1", 64]>>) {
  // expected-error @+1 {{'tgraph.kv_cache.append' op keys and values cover different numbers of positions: keys (operand 1) dim 2 is T but values (operand 2) dim 2 is T+1, which differ for every value of T}}
  tgraph.kv_cache.append %c, %k, %v : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>,
      tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>, tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, "T+1", 64]>>
  return
}

// -----

// kv_cache.read: keys and values come back at full capacity.
func.func @kv_read_type(%c: !tgraph.kv_cache<[B, 8, 4096, 64], bf16>) {
  // expected-error @+1 {{'tgraph.kv_cache.read' op reads the cache as 'tensor<?x8x1024x64xbf16, #tgraph.dims<[B, 8, 1024, 64]>>' but its full contents have type 'tensor<?x8x4096x64xbf16, #tgraph.dims<[B, 8, 4096, 64]>>'}}
  %k, %v, %n = tgraph.kv_cache.read %c : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>
      -> tensor<?x8x1024x64xbf16, #tgraph.dims<[B, 8, 1024, 64]>>,
         tensor<?x8x4096x64xbf16, #tgraph.dims<[B, 8, 4096, 64]>>, tensor<i64>
  return
}

// -----

// kv_cache.prune: keep is not negative.
func.func @kv_prune_keep(%c: !tgraph.kv_cache<[B, 8, 4096, 64], bf16>) {
  // expected-error @+1 {{'tgraph.kv_cache.prune' op keep must be >= 0, but is -1}}
  tgraph.kv_cache.prune %c {keep = -1 : i64} : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>
  return
}
