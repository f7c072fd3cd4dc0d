// Two sequences of lengths S and T are added: they may or may not match, so
// shape inference leaves a run-time check carrying the full message.
func.func @add(%a: tensor<?x?xf32, #tgraph.dims<[B, S]>>,
               %b: tensor<?x?xf32, #tgraph.dims<[B, T]>>) -> tensor<?x?xf32> {
  %c = tgraph.add %a, %b : (tensor<?x?xf32, #tgraph.dims<[B, S]>>,
      tensor<?x?xf32, #tgraph.dims<[B, T]>>) -> tensor<?x?xf32>
  return %c : tensor<?x?xf32>
}
