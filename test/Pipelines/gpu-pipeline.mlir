// RUN: tessera-opt %s --tessera-gpu-pipeline="chip=sm_90a" -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: %extract_ptx %t.mlir %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// REQUIRES: ptxas

// The whole GPU path from Graph IR: a layernorm (a row kernel), a product
// with its bias and tanh GELU (a GEMM with its epilogue) and a column sum
// (a reduction kernel). What is left is the host program, launching the
// kernels of the device module @kernels, compiled into one gpu.binary.
// The normalized rows are the only temporary.
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.+]]: memref<8x64xf32>, %[[W:.+]]: memref<64x32xf32>, %[[B:.+]]: memref<32xf32>) -> (memref<8x32xf32>, memref<64xf32>)
// CHECK-SAME: attributes {tsched.workspace = 2048 : i64}
// CHECK: %[[H:.+]] = tsched.buffer offset 0 : memref<8x64xf32>
// CHECK: tsched.launch @kernels::@f_row0 grid [1] (%[[X]], %[[H]])
// CHECK: %[[Y:.+]] = memref.alloc() : memref<8x32xf32>
// CHECK: tsched.launch @kernels::@f_gemm0 grid [1] (%[[H]], %[[W]], %[[B]], %[[Y]])
// CHECK: %[[S:.+]] = memref.alloc() : memref<64xf32>
// CHECK: tsched.launch @kernels::@f_reduce0 grid [8] (%[[X]], %[[S]])
// CHECK: return %[[Y]], %[[S]]
// CHECK: module @kernels attributes {gpu.container_module}
// CHECK-NEXT: gpu.binary @tessera_kernels
// CHECK-NOT: tgraph.
// CHECK-NOT: ttile.
// PTX-DAG: .entry f_row0(
// PTX-DAG: .entry f_gemm0(
// PTX-DAG: .entry f_reduce0(
func.func @f(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<64xf32>) {
  %0 = tgraph.layernorm %x {axis = 1 : i64} : (tensor<8x64xf32>) -> tensor<8x64xf32>
  %1 = tgraph.matmul %0, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %2 = tgraph.add %1, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %3 = tgraph.gelu %2 {approximate} : tensor<8x32xf32>
  %4 = tgraph.reduce_sum %x {dims = array<i64: 0>} : tensor<8x64xf32> -> tensor<64xf32>
  return %3, %4 : tensor<8x32xf32>, tensor<64xf32>
}
