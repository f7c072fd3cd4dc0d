// Autodiff as IR transformations (spec 004): the gradient, a JVP and a
// Hessian-vector product of a two-layer MLP's cross-entropy loss, declared
// next to it and expanded into functions by -tessera-tgraph-autodiff.
//
//   tessera-run examples/mlp_grad.mlir --fn loss_grad --dims B=8
//   tessera-run examples/mlp_grad.mlir --fn loss --check-grads --check-order 2 --dims B=8
!x = tensor<?x16xf64, #tgraph.dims<[B, 16]>>
!h = tensor<?x32xf64, #tgraph.dims<[B, 32]>>
!o = tensor<?x10xf64, #tgraph.dims<[B, 10]>>

func.func @loss(%x: !x {tgraph.name = "x"}, %labels: !o {tgraph.name = "labels"},
                %w1: tensor<16x32xf64> {tgraph.name = "w1"},
                %b1: tensor<32xf64> {tgraph.name = "b1"},
                %w2: tensor<32x10xf64> {tgraph.name = "w2"}) -> tensor<f64> {
  %h = tgraph.matmul %x, %w1 : (!x, tensor<16x32xf64>) -> !h
  %a = tgraph.add %h, %b1 : (!h, tensor<32xf64>) -> !h
  %g = tgraph.gelu %a : !h
  %o = tgraph.matmul %g, %w2 : (!h, tensor<32x10xf64>) -> !o
  %l = tgraph.cross_entropy %o, %labels : (!o, !o) -> tensor<f64>
  return %l : tensor<f64>
}

tgraph.adjoint @loss wrt(%w1, %b1, %w2) -> @loss_grad
tgraph.jvp @loss wrt(%w1) -> @loss_jvp
tgraph.hvp @loss wrt(%w1, %b1, %w2) dir(%v1, %vb, %v2) -> @loss_hvp
