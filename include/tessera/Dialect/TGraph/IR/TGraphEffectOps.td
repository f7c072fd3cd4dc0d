//===- TGraphEffectOps.td - randomness, collectives, state -*- tablegen -*-===//

//===----------------------------------------------------------------------===//
// Random numbers: stateless, explicit keys
//===----------------------------------------------------------------------===//

def TGraph_RngKeyOp : TGraph_Op<"rng.key", [Pure, TGraph_NonDifferentiable]> {
  let summary = "a random key from an integer seed";
  let description = [{
    ```mlir
    %k = tgraph.rng.key {seed = 42 : i64}
    ```
  }];
  let arguments = (ins I64Attr:$seed);
  let results = (outs TGraph_Key:$result);
  let assemblyFormat = "attr-dict";
}

def TGraph_RngSplitOp : TGraph_Op<"rng.split",
    [Pure, TGraph_NonDifferentiable]> {
  let summary = "derives independent keys from a key";
  let description = [{
    ```mlir
    %k1, %k2 = tgraph.rng.split %k : !tgraph.key, !tgraph.key
    ```
  }];
  let arguments = (ins TGraph_Key:$key);
  let results = (outs Variadic<TGraph_Key>:$keys);
  let assemblyFormat = "$key attr-dict `:` type($keys)";
  let hasVerifier = 1;
}

def TGraph_RngFoldInOp : TGraph_Op<"rng.fold_in",
    [Pure, TGraph_NonDifferentiable]> {
  let summary = "derives a key from a key and an integer (a step, a rank)";
  let description = [{
    ```mlir
    %ks = tgraph.rng.fold_in %k, %step : tensor<i64>
    ```
  }];
  let arguments = (ins TGraph_Key:$key, TGraph_ScalarIndex:$data);
  let results = (outs TGraph_Key:$result);
  let assemblyFormat = "$key `,` $data attr-dict `:` type($data)";
}

class TGraph_RngSampleOp<string mnemonic, string what, dag attrs, Type resultType,
                         string example>
    : TGraph_Op<"rng." # mnemonic, [Pure, TGraph_NonDifferentiable]> {
  let summary = what;
  let description = "Draws a tensor of the result's (possibly symbolic) shape "
      # "from the Philox 4x32-10 stream of `key`; the same key gives the same "
      # "values on every device and thread count.\n\n```mlir\n" # example
      # "\n```";
  let arguments = !con((ins TGraph_Key:$key), attrs);
  let results = (outs resultType:$result);
  let assemblyFormat = "$key attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TGraph_RngUniformOp : TGraph_RngSampleOp<"uniform",
    "uniform samples in [low, high)",
    (ins DefaultValuedAttr<F64Attr, "0.0">:$low,
         DefaultValuedAttr<F64Attr, "1.0">:$high),
    TGraph_FloatTensor,
    "%u = tgraph.rng.uniform %k {low = -1.0 : f64} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>">;
def TGraph_RngNormalOp : TGraph_RngSampleOp<"normal",
    "normal samples with a mean and standard deviation",
    (ins DefaultValuedAttr<F64Attr, "0.0">:$mean,
         DefaultValuedAttr<F64Attr, "1.0">:$stddev),
    TGraph_FloatTensor,
    "%n = tgraph.rng.normal %k {stddev = 0.02 : f64} : tensor<512x512xf32>">;
def TGraph_RngBernoulliOp : TGraph_RngSampleOp<"bernoulli",
    "booleans that are true with probability p",
    (ins F64Attr:$p), TGraph_PredTensor,
    "%keep = tgraph.rng.bernoulli %k {p = 0.9 : f64} : tensor<?x512xi1, #tgraph.dims<[B, 512]>>">;

//===----------------------------------------------------------------------===//
// Collectives: effects on the communicator
//===----------------------------------------------------------------------===//

class TGraph_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : TGraph_InferOp<mnemonic,
                     traits # [MemoryEffects<[MemRead, MemWrite]>, TGraph_Differentiable]> {
  let results = (outs TGraph_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` " # "custom<OpTypes>(type($x), type($result))";
}

def TGraph_AllReduceOp : TGraph_CollectiveOp<"all_reduce"> {
  let summary = "reduces a tensor across the devices of a mesh axis";
  let description = [{
    Every device of mesh axis `axis_name` (`group_size` devices) gets the
    reduction of all of their inputs, combined in a fixed order.

    ```mlir
    %g = tgraph.all_reduce %grad {reduction = #tgraph<reduction sum>, axis_name = "data",
        group_size = 8 : i64} : tensor<512x512xf32>
    ```
  }];
  let arguments = (ins TGraph_NumericTensor:$x,
                       TGraph_ReductionKindAttr:$reduction, StrAttr:$axis_name,
                       I64Attr:$group_size);
}

def TGraph_AllGatherOp : TGraph_CollectiveOp<"all_gather"> {
  let summary = "concatenates the tensors of a mesh axis along one dim";
  let description = [{
    ```mlir
    %w = tgraph.all_gather %shard {dim = 0 : i64, axis_name = "model", group_size = 4 : i64}
        : tensor<128x512xbf16> -> tensor<512x512xbf16>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x, I64Attr:$dim, StrAttr:$axis_name,
                       I64Attr:$group_size);
}

def TGraph_ReduceScatterOp : TGraph_CollectiveOp<"reduce_scatter"> {
  let summary = "reduces across a mesh axis and keeps one shard per device";
  let description = [{
    `dim` must divide evenly by `group_size`.

    ```mlir
    %s = tgraph.reduce_scatter %g {reduction = #tgraph<reduction sum>, dim = 0 : i64,
        axis_name = "data", group_size = 4 : i64} : tensor<512x64xf32> -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins TGraph_NumericTensor:$x,
                       TGraph_ReductionKindAttr:$reduction, I64Attr:$dim,
                       StrAttr:$axis_name, I64Attr:$group_size);
}

def TGraph_AllToAllOp : TGraph_CollectiveOp<"all_to_all"> {
  let summary = "splits one dim over a mesh axis and concatenates another";
  let description = [{
    ```mlir
    %y = tgraph.all_to_all %x {split_dim = 0 : i64, concat_dim = 1 : i64,
        axis_name = "expert", group_size = 4 : i64} : tensor<64x16xf32> -> tensor<16x64xf32>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x, I64Attr:$split_dim,
                       I64Attr:$concat_dim, StrAttr:$axis_name, I64Attr:$group_size);
}

def TGraph_PermuteOp : TGraph_CollectiveOp<"permute"> {
  let summary = "sends a tensor from each device to another (collective permute)";
  let description = [{
    `pairs` lists `[source, target]` device pairs of mesh axis `axis_name`; a
    device that is no target receives zeros.

    ```mlir
    %n = tgraph.permute %x {pairs = [array<i64: 0, 1>, array<i64: 1, 0>], axis_name = "pipe"}
        : tensor<16x64xf32>
    ```
  }];
  let arguments = (ins TGraph_Tensor:$x,
                       TypedArrayAttrBase<DenseI64ArrayAttr, "device pairs">:$pairs,
                       StrAttr:$axis_name);
}

//===----------------------------------------------------------------------===//
// KV cache: state ops
//===----------------------------------------------------------------------===//

def TGraph_KVCacheCreateOp : TGraph_Op<"kv_cache.create",
    [MemoryEffects<[MemAlloc]>]> {
  let summary = "allocates an empty key/value cache";
  let description = [{
    With `window = w` the cache keeps only the last w positions (a rolling
    window); otherwise it holds up to `max_length` positions.

    ```mlir
    %c = tgraph.kv_cache.create : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>
    ```
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$window);
  let results = (outs TGraph_KVCache:$cache);
  let assemblyFormat = "attr-dict `:` qualified(type($cache))";
  let hasVerifier = 1;
}

def TGraph_KVCacheAppendOp : TGraph_Op<"kv_cache.append",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "appends keys and values for new positions";
  let description = [{
    `keys` and `values` are `[batch, heads, T, head_dim]`; running past the
    capacity (without a window) is a run-time error.

    ```mlir
    tgraph.kv_cache.append %c, %k, %v : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>,
        tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>,
        tensor<?x8x?x64xbf16, #tgraph.dims<[B, 8, T, 64]>>
    ```
  }];
  let arguments = (ins TGraph_KVCache:$cache, TGraph_FloatTensor:$keys,
                       TGraph_FloatTensor:$values);
  let assemblyFormat = [{
    $cache `,` $keys `,` $values attr-dict `:` qualified(type($cache)) `,` type($keys) `,`
    type($values)
  }];
  let hasVerifier = 1;
}

def TGraph_KVCacheReadOp : TGraph_Op<"kv_cache.read",
    [MemoryEffects<[MemRead]>]> {
  let summary = "reads the cached keys, values and the number of valid positions";
  let description = [{
    Keys and values come back at full capacity `[batch, heads, max_length,
    head_dim]`; positions at or past `length` are zero.

    ```mlir
    %k, %v, %n = tgraph.kv_cache.read %c : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>
        -> tensor<?x8x4096x64xbf16, #tgraph.dims<[B, 8, 4096, 64]>>,
           tensor<?x8x4096x64xbf16, #tgraph.dims<[B, 8, 4096, 64]>>, tensor<i64>
    ```
  }];
  let arguments = (ins TGraph_KVCache:$cache);
  let results = (outs TGraph_FloatTensor:$keys, TGraph_FloatTensor:$values,
                      0DTensorOf<[I64]>:$length);
  let assemblyFormat = [{
    $cache attr-dict `:` qualified(type($cache)) `->` type($keys) `,` type($values) `,`
    type($length)
  }];
  let hasVerifier = 1;
}

def TGraph_KVCachePruneOp : TGraph_Op<"kv_cache.prune",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "drops all but the most recent positions";
  let description = [{
    ```mlir
    tgraph.kv_cache.prune %c {keep = 1024 : i64} : !tgraph.kv_cache<[B, 8, 4096, 64], bf16>
    ```
  }];
  let arguments = (ins TGraph_KVCache:$cache, I64Attr:$keep);
  let assemblyFormat = "$cache attr-dict `:` qualified(type($cache))";
  let hasVerifier = 1;
}
