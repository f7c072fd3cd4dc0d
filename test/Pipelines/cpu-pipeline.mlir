// RUN: tessera-opt %s --tessera-cpu-pipeline | FileCheck %s
// RUN: tessera-opt %S/../../examples/transformer_block.mlir --tessera-cpu-pipeline | FileCheck %s --check-prefix=BLOCK

// The CPU pipeline takes Graph IR (composites included) to the LLVM dialect
// only: no tgraph, tensor, linalg, vector or memref op is left. Buffers come
// from the runtime's allocator, the contraction runs on OpenMP threads with
// a vectorized fused multiply-add micro-kernel.

// CHECK-NOT: tgraph.
// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
// CHECK-LABEL: llvm.func @mlp
// CHECK-NOT: linalg.
// CHECK-NOT: memref.
// CHECK-NOT: vector.
// CHECK: llvm.call @_mlir_memref_to_llvm_alloc
// CHECK: omp.parallel
// CHECK: llvm.intr.fma{{.*}}vector<
// CHECK: llvm.return
func.func @mlp(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>, %w: tensor<8x4xf32>,
               %labels: tensor<?xi64, #tgraph.dims<[B]>>) -> tensor<f32> {
  %h = tgraph.matmul %x, %w : (tensor<?x8xf32, #tgraph.dims<[B, 8]>>, tensor<8x4xf32>) -> tensor<?x4xf32, #tgraph.dims<[B, 4]>>
  %a = tgraph.gelu %h : tensor<?x4xf32, #tgraph.dims<[B, 4]>>
  %l = tgraph.cross_entropy %a, %labels : (tensor<?x4xf32, #tgraph.dims<[B, 4]>>, tensor<?xi64, #tgraph.dims<[B]>>) -> tensor<f32>
  return %l : tensor<f32>
}

// BLOCK-NOT: tgraph.
// BLOCK: llvm.func @block
// BLOCK-NOT: linalg.
// BLOCK: llvm.return
