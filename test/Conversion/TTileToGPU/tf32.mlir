// f32 dots marked tf32 before Hopper: mma.sync m16n8k8 on operands
// rounded to tf32 (cvt.rna), two steps per 16 of K from the 16-bit
// fragments' registers; an f32 dot without the mark stays exact (FMAs).
// REQUIRES: ptxas
// RUN: tessera-opt %s --tessera-ttile-assign-layouts --tessera-convert-ttile-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=GPU
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_80 features=+ptx80" -o %t.80.mlir
// RUN: %extract_ptx %t.80.mlir %t.80.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.80.ptx
// RUN: %ptxas -arch=sm_80 %t.80.ptx -o %t.80.cubin

// GPU-LABEL: gpu.func @gemm_tf32
// GPU: nvvm.convert.float.to.tf32 {{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// GPU: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>}
// GPU-LABEL: gpu.func @gemm_exact
// GPU-NOT: nvvm.mma.sync
// GPU: gpu.return
// PTX-LABEL: .visible .entry gemm_tf32(
// PTX: cvt.rna.tf32.f32
// PTX: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// PTX-LABEL: .visible .entry gemm_exact(
// PTX-NOT: mma.sync
// PTX: fma.rn.f32
func.func @gemm_tf32(%A: memref<?x?xf32>, %B: memref<?x?xf32>,
                     %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %k = memref.dim %A, %c1 : memref<?x?xf32>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %acc = ttile.range %kk = %c0 to %k step %c32
      iter_args(%a0 = %zero) -> (tensor<64x64xf32>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xf32> -> tensor<64x32xf32>
    %b = ttile.load %B[%kk, %c0] : memref<?x?xf32> -> tensor<32x64xf32>
    %a1 = ttile.dot %a, %b, %a0 {tf32} : tensor<64x32xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
    ttile.yield %a1 : tensor<64x64xf32>
  }
  ttile.store %acc, %C[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  return
}

func.func @gemm_exact(%A: memref<?x?xf32>, %B: memref<?x?xf32>,
                      %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %a = ttile.load %A[%c0, %c0] : memref<?x?xf32> -> tensor<64x32xf32>
  %b = ttile.load %B[%c0, %c0] : memref<?x?xf32> -> tensor<32x64xf32>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %d = ttile.dot %a, %b, %zero : tensor<64x32xf32>, tensor<32x64xf32> -> tensor<64x64xf32>
  ttile.store %d, %C[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  return
}
