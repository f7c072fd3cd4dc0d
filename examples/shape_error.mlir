// A classic mistake: the second MLP layer was built for 2*D inputs, but the
// first layer produces D features. The compiler names the op, the operands,
// the dims, the symbol and the line.
func.func @mlp(%x: tensor<?x?xf32, #tgraph.dims<[B, D]>>,
               %w1: tensor<?x?xf32, #tgraph.dims<[D, D]>>,
               %w2: tensor<?x?xf32, #tgraph.dims<["2*D", C]>>)
    -> tensor<?x?xf32, #tgraph.dims<[B, C]>> {
  %h = tgraph.matmul %x, %w1 : (tensor<?x?xf32, #tgraph.dims<[B, D]>>,
      tensor<?x?xf32, #tgraph.dims<[D, D]>>) -> tensor<?x?xf32, #tgraph.dims<[B, D]>>
  %a = tgraph.relu %h : tensor<?x?xf32, #tgraph.dims<[B, D]>>
  %y = tgraph.matmul %a, %w2 : (tensor<?x?xf32, #tgraph.dims<[B, D]>>,
      tensor<?x?xf32, #tgraph.dims<["2*D", C]>>) -> tensor<?x?xf32, #tgraph.dims<[B, C]>>
  return %y : tensor<?x?xf32, #tgraph.dims<[B, C]>>
}
