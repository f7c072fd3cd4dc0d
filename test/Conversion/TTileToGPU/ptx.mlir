// Tile IR to PTX: layouts, the thread-level lowering and the NVVM pipeline
// (spelled out, and as the tessera-ttile-to-ptx pipeline), then ptxas for
// Hopper (sm_90a) and Ampere (sm_80).
// REQUIRES: ptxas
// RUN: tessera-opt %s --tessera-ttile-assign-layouts --tessera-convert-ttile-to-gpu --canonicalize --cse --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 opt-level=3 cubin-format=isa" -o %t.90.mlir
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_80 features=+ptx80" -o %t.80.mlir
// RUN: %extract_ptx %t.90.mlir %t.90.ptx && %extract_ptx %t.80.mlir %t.80.ptx
// RUN: FileCheck %s < %t.90.ptx
// RUN: %ptxas -arch=sm_90a %t.90.ptx -o %t.90.cubin
// RUN: %ptxas -arch=sm_80 %t.80.ptx -o %t.80.cubin

// CHECK: .target sm_90a
// CHECK: .visible .entry rmsnorm(
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.v4.b32
// CHECK: shfl.sync.bfly.b32
// CHECK: bar.sync
// CHECK: st.global.v4.b32
// CHECK: .visible .entry gemm_bf16(
// CHECK: st.shared.v4.b32
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

// RMSNorm of bf16 rows of up to 1024 elements, one row per program.
func.func @rmsnorm(%X: memref<?x?xbf16>, %W: memref<?xbf16>,
                   %Y: memref<?x?xbf16>, %eps: f32)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %row = ttile.program_id x
  %n = memref.dim %X, %c1 : memref<?x?xbf16>
  %ni = arith.index_cast %n : index to i32
  %nf = arith.sitofp %ni : i32 to f32
  %xb = ttile.load %X[%row, %c0] : memref<?x?xbf16> -> tensor<1x1024xbf16>
  %x = ttile.cast %xb : tensor<1x1024xbf16> -> tensor<1x1024xf32>
  %sq = arith.mulf %x, %x : tensor<1x1024xf32>
  %ss = ttile.reduce sum %sq {dim = 1 : i32} : tensor<1x1024xf32> -> tensor<1xf32>
  %nv = tensor.splat %nf : tensor<1xf32>
  %ms = arith.divf %ss, %nv : tensor<1xf32>
  %ev = tensor.splat %eps : tensor<1xf32>
  %r = arith.addf %ms, %ev : tensor<1xf32>
  %rs = math.rsqrt %r : tensor<1xf32>
  %rb = ttile.broadcast %rs {dims = array<i64: 0>} : tensor<1xf32> -> tensor<1x1024xf32>
  %wb = ttile.load %W[%c0] : memref<?xbf16> -> tensor<1024xbf16>
  %w1 = ttile.cast %wb : tensor<1024xbf16> -> tensor<1024xf32>
  %w = ttile.broadcast %w1 {dims = array<i64: 1>} : tensor<1024xf32> -> tensor<1x1024xf32>
  %xn = arith.mulf %x, %rb : tensor<1x1024xf32>
  %y = arith.mulf %xn, %w : tensor<1x1024xf32>
  %yb = ttile.cast %y : tensor<1x1024xf32> -> tensor<1x1024xbf16>
  ttile.store %yb, %Y[%row, %c0] : tensor<1x1024xbf16>, memref<?x?xbf16>
  return
}

// bf16 GEMM blocks on the tensor cores.
func.func @gemm_bf16(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %acc = ttile.range %kk = %c0 to %k step %c32
      iter_args(%a0 = %zero) -> (tensor<64x64xf32>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xbf16> -> tensor<64x32xbf16>
    %b = ttile.load %B[%kk, %c0] : memref<?x?xbf16> -> tensor<32x64xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
    ttile.yield %a1 : tensor<64x64xf32>
  }
  ttile.store %acc, %C[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  return
}
