// RUN: tessera-opt %s --tessera-gpu-pipeline="chip=sm_90a dims=B=8" | FileCheck %s
// RUN: not tessera-opt %s --tessera-gpu-pipeline="chip=sm_90a" 2>&1 | FileCheck %s --check-prefix=UNBOUND

// A function with a symbolic batch compiles for the GPU once its size is
// given: the host program is specialized for B = 8.
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%{{.*}}: memref<8x64xf32>, %{{.*}}: memref<64x32xf32>) -> memref<8x32xf32>
// CHECK: tsched.launch @kernels::@f_gemm0
// UNBOUND: argument 0 is 'tensor<?x64xf32, #tgraph.dims<[B, 64]>>'; the GPU host program takes tensors of static shape
!x = tensor<?x64xf32, #tgraph.dims<[B, 64]>>
!y = tensor<?x32xf32, #tgraph.dims<[B, 32]>>
func.func @f(%x: !x, %w: tensor<64x32xf32>) -> !y {
  %0 = tgraph.matmul %x, %w : (!x, tensor<64x32xf32>) -> !y
  %1 = tgraph.relu %0 : !y
  return %1 : !y
}
