// A pre-norm transformer block over symbolic batch B and sequence S
// (d_model 512, 8 heads of 64). Intermediate results are written with `?`
// dims; `tessera-opt --tessera-tgraph-infer-shapes` names every one of them.
!x = tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>
!heads = tensor<?x8x?x64xf32, #tgraph.dims<[B, 8, S, 64]>>

func.func @block(%x: !x, %ln1: tensor<512xf32>, %wq: tensor<512x512xf32>,
                 %wk: tensor<512x512xf32>, %wv: tensor<512x512xf32>,
                 %wo: tensor<512x512xf32>, %ln2: tensor<512xf32>,
                 %w1: tensor<512x2048xf32>, %w2: tensor<2048x512xf32>)
    -> tensor<?x?x?xf32> {
  %h = tgraph.rmsnorm %x scale %ln1 {axis = 2 : i64}
      : (!x, tensor<512xf32>) -> tensor<?x?x?xf32>
  %q = tgraph.matmul %h, %wq : (tensor<?x?x?xf32>, tensor<512x512xf32>) -> tensor<?x?x?xf32>
  %k = tgraph.matmul %h, %wk : (tensor<?x?x?xf32>, tensor<512x512xf32>) -> tensor<?x?x?xf32>
  %v = tgraph.matmul %h, %wv : (tensor<?x?x?xf32>, tensor<512x512xf32>) -> tensor<?x?x?xf32>
  %q4 = tgraph.reshape %q : tensor<?x?x?xf32>
      -> tensor<?x?x8x64xf32, #tgraph.dims<[B, S, 8, 64]>>
  %k4 = tgraph.reshape %k : tensor<?x?x?xf32>
      -> tensor<?x?x8x64xf32, #tgraph.dims<[B, S, 8, 64]>>
  %v4 = tgraph.reshape %v : tensor<?x?x?xf32>
      -> tensor<?x?x8x64xf32, #tgraph.dims<[B, S, 8, 64]>>
  %qh = tgraph.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>}
      : tensor<?x?x8x64xf32, #tgraph.dims<[B, S, 8, 64]>> -> tensor<?x?x?x?xf32>
  %kh = tgraph.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>}
      : tensor<?x?x8x64xf32, #tgraph.dims<[B, S, 8, 64]>> -> tensor<?x?x?x?xf32>
  %vh = tgraph.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>}
      : tensor<?x?x8x64xf32, #tgraph.dims<[B, S, 8, 64]>> -> tensor<?x?x?x?xf32>
  %o = tgraph.attention %qh, %kh, %vh {causal}
      : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %ot = tgraph.transpose %o {permutation = array<i64: 0, 2, 1, 3>}
      : tensor<?x?x?x?xf32> -> tensor<?x?x?x?xf32>
  %o3 = tgraph.reshape %ot : tensor<?x?x?x?xf32> -> !x
  %proj = tgraph.matmul %o3, %wo : (!x, tensor<512x512xf32>) -> tensor<?x?x?xf32>
  %r1 = tgraph.add %x, %proj : (!x, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %h2 = tgraph.rmsnorm %r1 scale %ln2 {axis = 2 : i64}
      : (tensor<?x?x?xf32>, tensor<512xf32>) -> tensor<?x?x?xf32>
  %up = tgraph.matmul %h2, %w1 : (tensor<?x?x?xf32>, tensor<512x2048xf32>) -> tensor<?x?x?xf32>
  %act = tgraph.gelu %up {approximate} : tensor<?x?x?xf32>
  %down = tgraph.matmul %act, %w2 : (tensor<?x?x?xf32>, tensor<2048x512xf32>) -> tensor<?x?x?xf32>
  %y = tgraph.add %r1, %down : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %y : tensor<?x?x?xf32>
}
