//===- Passes.td - Tessera conversion passes ---------------*- tablegen -*-===//

#ifndef TESSERA_CONVERSION_PASSES
#define TESSERA_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def TGraphLowerToLinalg : Pass<"tessera-tgraph-lower-to-linalg", "ModuleOp"> {
  let summary = "Lower Graph IR to linalg, tensor, arith, math and scf";
  let description = [{
    Rewrites `tgraph` ops on tensors into structured linalg ops (elementwise
    ops with NumPy broadcasting become `linalg.generic` with broadcasting
    indexing maps; contractions and reductions become `linalg.generic` with
    reduction iterators), and tensor ops for layout changes. Symbolic dims
    stay dynamic: their sizes come
    from `tensor.dim` of the operands or of the function arguments that bind
    the symbols. Tensor types lose their `#tgraph.dims` encodings. A failed
    run-time shape check calls the runtime hook
    `tessera_shape_check_failed(const char *message)`.

    Composite ops (softmax, layernorm, attention, ...) are expected to have
    been expanded by -tessera-tgraph-decompose first.

    Before:
    ```mlir
    %y = tgraph.add %x, %b : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
        tensor<64xf32>) -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
    ```
    After:
    ```mlir
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?x64xf32>
    %e = tensor.empty(%n) : tensor<?x64xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
        affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
        iterator_types = ["parallel", "parallel"]} ins(%x, %b : ...) outs(%e : ...) {...}
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::cf::ControlFlowDialect", "::mlir::func::FuncDialect",
    "::mlir::scf::SCFDialect", "::mlir::LLVM::LLVMDialect"
  ];
}

#endif // TESSERA_CONVERSION_PASSES
