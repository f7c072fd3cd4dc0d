// Hopper warpgroup MMAs: layouts (-tessera-ttile-assign-layouts=wgmma=true),
// the lowering (cp.async into swizzled shared buffers, a ring of `stages`
// buffers, wgmma with matrix descriptors, groups left in flight across
// iterations) and the PTX for sm_90a, checked by ptxas.
// RUN: tessera-opt %s --tessera-ttile-assign-layouts=wgmma=true --split-input-file | FileCheck %s --check-prefix=LAYOUT
// RUN: tessera-opt %s --tessera-ttile-assign-layouts --split-input-file | FileCheck %s --check-prefix=SYNC
// RUN: tessera-opt %s --tessera-ttile-assign-layouts=wgmma=true --tessera-convert-ttile-to-gpu --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=GPU
// REQUIRES: ptxas
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_90a features=+ptx80 tma=false" -o %t.mlir
// RUN: %extract_ptx %t.mlir %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// LAYOUT: #mma = #ttile.mma<version = 3, warpsPerCTA = [8, 1], instrShape = [64, 128, 16]>
// LAYOUT-LABEL: func.func @gemm_ring
// LAYOUT: ttile.range {{.*}} stages 4
// LAYOUT: ttile.load {{.*}} -> tensor<128x64xbf16, #ttile.shared<swizzle = 128, order = [1, 0]>>
// LAYOUT: ttile.load {{.*}} -> tensor<64x128xbf16, #ttile.shared<swizzle = 128, order = [1, 0]>>
// LAYOUT: ttile.dot {{.*}} -> tensor<128x128xf32, #mma>
// Without wgmma the same dot runs on mma.sync.
// SYNC: #mma = #ttile.mma<version = 2
// SYNC-LABEL: func.func @gemm_ring
// SYNC-NOT: #ttile.shared
// SYNC: ttile.dot

// GPU-LABEL: gpu.module @tessera_kernels
// All shared memory is one extern array: the tiles, then the scratch area.
// GPU: llvm.mlir.global external @tessera_dynamic_shared() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// GPU: llvm.mlir.global external constant @tessera_launch_gemm_ring(dense<[3, 256, 0, 132096, 21, 1, 0, 0]> : tensor<8xi32>) {addr_space = 1 : i32
// GPU-LABEL: gpu.func @gemm_ring
// GPU: llvm.mlir.addressof @tessera_dynamic_shared
// The dot only accumulates: each iteration leaves its wgmma group running
// (wait_group 1) and the copies run stages - 2 = 2 iterations ahead; the
// first two iterations' tiles before the loop, one copy group each; the
// loop sits in an `if` of its first test and the last groups are waited
// for inside it.
// A barrier first: a previous run of the loop may still read the buffers.
// GPU: gpu.barrier
// GPU: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
// GPU: nvvm.cp.async.commit.group
// GPU: nvvm.cp.async.commit.group
// GPU: scf.if
// GPU: scf.for
// GPU: nvvm.cp.async.wait.group 1
// GPU: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// GPU: gpu.barrier
// GPU: nvvm.cp.async.shared.global
// GPU: nvvm.cp.async.commit.group
// GPU: nvvm.wgmma.fence.aligned
// GPU: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <{{one|zero}}>], A[<bf16>
// GPU: nvvm.wgmma.commit.group.sync.aligned
// GPU: wgmma.wait_group.sync.aligned 1;
// GPU: scf.yield
// GPU: wgmma.wait_group.sync.aligned 0;
// GPU: nvvm.cp.async.wait.group 0
// GPU: scf.yield
// GPU: } else {
// GPU: nvvm.cp.async.wait.group 0

// PTX-LABEL: .visible .global .align 4 .b8 tessera_launch_gemm_ring[32]
// PTX-LABEL: .visible .entry gemm_ring(
// PTX-DAG: cp.async.cg.shared.global
// PTX-DAG: cp.async.commit_group
// PTX-DAG: cp.async.wait_group 1
// PTX-DAG: fence.proxy.async.shared::cta
// PTX-DAG: bar.sync
// PTX-DAG: wgmma.fence.sync.aligned
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX-DAG: wgmma.commit_group.sync.aligned
// PTX-DAG: wgmma.wait_group.sync.aligned 1
// PTX-DAG: wgmma.wait_group.sync.aligned 0

func.func @gemm_ring(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %c64 stages 4
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.load %B[%kk, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  ttile.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  return
}

// -----

// Two warpgroups side by side along N; K of 16 (32-byte rows of A); one
// buffer per operand, filled and waited for in each iteration.
// LAYOUT: #mma = #ttile.mma<version = 3, warpsPerCTA = [4, 2], instrShape = [64, 64, 16]>
// LAYOUT-LABEL: func.func @gemm_sync_n2
// LAYOUT: tensor<64x16xf16, #ttile.shared<swizzle = 32, order = [1, 0]>>
// LAYOUT: tensor<16x128xf16, #ttile.shared<swizzle = 128, order = [1, 0]>>
// GPU-LABEL: gpu.func @gemm_sync_n2
// GPU: scf.for
// GPU: gpu.barrier
// GPU: nvvm.cp.async.shared.global
// GPU: nvvm.cp.async.commit.group
// GPU: nvvm.cp.async.wait.group 0
// GPU: gpu.barrier
// GPU: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <{{one|zero}}>], A[<f16>
// PTX-LABEL: .visible .entry gemm_sync_n2(
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
func.func @gemm_sync_n2(%A: memref<?x?xf16>, %B: memref<?x?xf16>,
                        %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %k = memref.dim %A, %c1 : memref<?x?xf16>
  %zero = arith.constant dense<0.0> : tensor<64x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %c16
      iter_args(%a0 = %zero) -> (tensor<64x128xf32>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xf16> -> tensor<64x16xf16>
    %b = ttile.load %B[%kk, %c0] : memref<?x?xf16> -> tensor<16x128xf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<64x16xf16>, tensor<16x128xf16> -> tensor<64x128xf32>
    ttile.yield %a1 : tensor<64x128xf32>
  }
  ttile.store %acc, %C[%c0, %c0] : tensor<64x128xf32>, memref<?x?xf32>
  return
}

// -----

// fp8 with B given transposed (Bt is N x K): B's shared tile is the
// transpose of the loaded one, K contiguous (order [0, 1]); 32-deep steps.
// LAYOUT: #mma = #ttile.mma<version = 3, warpsPerCTA = [8, 1], instrShape = [64, 128, 32]>
// LAYOUT-LABEL: func.func @gemm_fp8_nt
// LAYOUT: ttile.load {{.*}} -> tensor<128x128xf8E4M3FN, #ttile.shared<swizzle = 128, order = [1, 0]>>
// LAYOUT: ttile.load {{.*}} -> tensor<128x128xf8E4M3FN, #ttile.shared<swizzle = 128, order = [1, 0]>>
// LAYOUT: ttile.transpose {{.*}} -> tensor<128x128xf8E4M3FN, #ttile.shared<swizzle = 128, order = [0, 1]>>
// LAYOUT: ttile.dot {{.*}} -> tensor<128x128xf32, #mma>
// GPU-LABEL: gpu.func @gemm_fp8_nt
// GPU: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <{{one|zero}}>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// PTX-LABEL: .visible .entry gemm_fp8_nt(
// PTX: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3
func.func @gemm_fp8_nt(%A: memref<?x?xf8E4M3FN>, %Bt: memref<?x?xf8E4M3FN>,
                       %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %k = memref.dim %A, %c1 : memref<?x?xf8E4M3FN>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %c128 stages 2
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %bt = ttile.load %Bt[%c0, %kk] : memref<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %b = ttile.transpose %bt {permutation = array<i64: 1, 0>} : tensor<128x128xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x128xf8E4M3FN>, tensor<128x128xf8E4M3FN> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  ttile.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  return
}

// -----

// f32 operands the dot allows to read as tf32 take wgmma's tf32 form, K
// contiguous in both (B given transposed), 8-deep steps; without `tf32` the
// same product stays exact (FMAs, blocked layouts).
// LAYOUT: #mma = #ttile.mma<version = 3, warpsPerCTA = [8, 1], instrShape = [64, 128, 8]>
// LAYOUT-LABEL: func.func @gemm_tf32_nt
// LAYOUT: ttile.load {{.*}} -> tensor<128x32xf32, #ttile.shared<swizzle = 128, order = [1, 0]>>
// LAYOUT: ttile.transpose {{.*}} -> tensor<32x128xf32, #ttile.shared<swizzle = 128, order = [0, 1]>>
// LAYOUT: ttile.dot {{.*}} {tf32} : {{.*}} -> tensor<128x128xf32, #mma>
// LAYOUT-LABEL: func.func @gemm_f32_exact
// LAYOUT-NOT: #ttile.shared
// LAYOUT: ttile.dot {{.*}} -> tensor<128x128xf32, #blocked
// GPU-LABEL: gpu.func @gemm_tf32_nt
// GPU: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 8>, D[<f32>, <{{one|zero}}>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// PTX-LABEL: .visible .entry gemm_tf32_nt(
// PTX: wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32
func.func @gemm_tf32_nt(%A: memref<?x?xf32>, %Bt: memref<?x?xf32>,
                        %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %k = memref.dim %A, %c1 : memref<?x?xf32>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %c32 stages 3
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xf32> -> tensor<128x32xf32>
    %bt = ttile.load %Bt[%c0, %kk] : memref<?x?xf32> -> tensor<128x32xf32>
    %b = ttile.transpose %bt {permutation = array<i64: 1, 0>} : tensor<128x32xf32> -> tensor<32x128xf32>
    %a1 = ttile.dot %a, %b, %a0 {tf32} : tensor<128x32xf32>, tensor<32x128xf32> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  ttile.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  return
}

func.func @gemm_f32_exact(%A: memref<?x?xf32>, %Bt: memref<?x?xf32>,
                          %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %a = ttile.load %A[%c0, %c0] : memref<?x?xf32> -> tensor<128x32xf32>
  %bt = ttile.load %Bt[%c0, %c0] : memref<?x?xf32> -> tensor<128x32xf32>
  %b = ttile.transpose %bt {permutation = array<i64: 1, 0>} : tensor<128x32xf32> -> tensor<32x128xf32>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %c = ttile.dot %a, %b, %zero : tensor<128x32xf32>, tensor<32x128xf32> -> tensor<128x128xf32>
  ttile.store %c, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  return
}

// -----

// Attention's first product: Q loaded once before the loop (a shared tile
// copied once), K^T the transposed view of a K block whose row the body
// computes from the induction variable (the ring computes it again for the
// block it copies ahead).
// LAYOUT: #mma = #ttile.mma<version = 3, warpsPerCTA = [4, 1], instrShape = [64, 32, 16]>
// LAYOUT-LABEL: func.func @scores
// LAYOUT: ttile.load {{.*}} -> tensor<64x64xbf16, #ttile.shared<swizzle = 128, order = [1, 0]>>
// LAYOUT: ttile.range
// LAYOUT: ttile.load {{.*}} -> tensor<32x64xbf16, #ttile.shared<swizzle = 128, order = [1, 0]>>
// LAYOUT: ttile.transpose {{.*}} -> tensor<64x32xbf16, #ttile.shared<swizzle = 128, order = [0, 1]>>
// GPU-LABEL: gpu.func @scores
// GPU: nvvm.cp.async.wait.group 0
// GPU: gpu.barrier
// GPU: scf.for %[[N:[a-z0-9]+]] =
// GPU: %[[AHEAD:.*]] = arith.addi %[[N]], %{{.*}} : index
// GPU: arith.addi %{{.*}}, %[[AHEAD]] : index
// GPU: nvvm.cp.async.shared.global
// GPU: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 32, k = 16>, D[<f32>, <{{one|zero}}>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// PTX-LABEL: .visible .entry scores(
// PTX: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
func.func @scores(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                  %S: memref<?x?xf32>, %base: index, %len: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %q = ttile.load %Q[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %r = ttile.range %n = %c0 to %len step %c32 stages 2
      iter_args(%acc = %zero) -> (tensor<64x32xf32>) {
    %row = arith.addi %base, %n : index
    %k = ttile.load %K[%row, %c0] : memref<?x?xbf16> -> tensor<32x64xbf16>
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<32x64xbf16> -> tensor<64x32xbf16>
    %s = ttile.dot %q, %kt, %zero : tensor<64x64xbf16>, tensor<64x32xbf16> -> tensor<64x32xf32>
    %a = arith.addf %acc, %s : tensor<64x32xf32>
    ttile.yield %a : tensor<64x32xf32>
  }
  ttile.store %r, %S[%c0, %c0] : tensor<64x32xf32>, memref<?x?xf32>
  return
}

// -----

// An A operand that is not a load used by the dot alone (here: also
// stored) stays in
// registers: wgmma reads it from there (mma.sync's A fragments), B from
// shared memory.
// LAYOUT: #mma = #ttile.mma<version = 3, warpsPerCTA = [4, 1], instrShape = [64, 64, 16]>
// LAYOUT: #dot_op = #ttile.dot_operand<opIdx = 0, parent = #mma, kWidth = 2>
// LAYOUT-LABEL: func.func @a_in_registers
// LAYOUT: ttile.load %arg1{{.*}} -> tensor<32x64xbf16, #ttile.shared<swizzle = 128, order = [1, 0]>>
// LAYOUT: ttile.dot {{.*}} : tensor<64x32xbf16, #dot_op>, tensor<32x64xbf16, #ttile.shared<swizzle = 128, order = [1, 0]>> -> tensor<64x64xf32, #mma>
// GPU-LABEL: gpu.func @a_in_registers
// GPU: nvvm.wgmma.fence.aligned
// GPU: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$32, $33, $34, $35}, $36, p, 1, 1, 1;
// PTX-LABEL: .visible .entry a_in_registers(
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd
func.func @a_in_registers(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                         %C: memref<?x?xf32>, %D: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %a = ttile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<64x32xbf16>
  %b = ttile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<32x64xbf16>
  %d = ttile.dot %a, %b, %zero : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
  ttile.store %d, %C[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  ttile.store %a, %D[%c0, %c0] : tensor<64x32xbf16>, memref<?x?xbf16>
  return
}

// -----

// Attention's backward products: the probabilities P of one product feed
// another transposed (dV = P^T dO). P is stored once into shared memory,
// where wgmma reads it M contiguous (the transpose is a view); a tile two
// products read (Q here, loaded twice) is copied once. The two independent
// products of scores share one wait.
// LAYOUT-LABEL: func.func @stored_transposed_a
// LAYOUT: ttile.load %arg0{{.*}} -> tensor<64x128xbf16, #ttile.shared<swizzle = 128, order = [1, 0]>>
// LAYOUT-NOT: ttile.load %arg0
// LAYOUT: ttile.convert_layout {{.*}} -> tensor<64x64xbf16, #ttile.shared<swizzle = 128, order = [1, 0]>>
// LAYOUT: ttile.transpose {{.*}} -> tensor<64x64xbf16, #ttile.shared<swizzle = 128, order = [0, 1]>>
// LAYOUT: ttile.dot
// GPU-LABEL: gpu.func @stored_transposed_a
// GPU-COUNT-8: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <{{one|zero}}>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// GPU: wgmma.wait_group.sync.aligned 0;
// GPU-NOT: wgmma.mma_async
// GPU: gpu.barrier
// GPU-COUNT-2: nvvm.stmatrix {{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// GPU: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// GPU: gpu.barrier
// GPU: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <{{one|zero}}>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// PTX-LABEL: .visible .entry stored_transposed_a(
// PTX: stmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: fence.proxy.async.shared::cta
// PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1, 1;
func.func @stored_transposed_a(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                               %V: memref<?x?xbf16>, %O: memref<?x?xf32>,
                               %S: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %zs = arith.constant dense<0.0> : tensor<64x64xf32>
  %zo = arith.constant dense<0.0> : tensor<64x128xf32>
  %q = ttile.load %Q[%c0, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
  %q2 = ttile.load %Q[%c0, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
  %k = ttile.load %K[%c0, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
  %v = ttile.load %V[%c0, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
  %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<64x128xbf16> -> tensor<128x64xbf16>
  %vt = ttile.transpose %v {permutation = array<i64: 1, 0>} : tensor<64x128xbf16> -> tensor<128x64xbf16>
  %s = ttile.dot %q, %kt, %zs : tensor<64x128xbf16>, tensor<128x64xbf16> -> tensor<64x64xf32>
  %s2 = ttile.dot %q, %vt, %zs : tensor<64x128xbf16>, tensor<128x64xbf16> -> tensor<64x64xf32>
  %sum = arith.addf %s, %s2 : tensor<64x64xf32>
  ttile.store %sum, %S[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  %p = ttile.cast %s : tensor<64x64xf32> -> tensor<64x64xbf16>
  %pt = ttile.transpose %p {permutation = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
  %o = ttile.dot %pt, %q2, %zo : tensor<64x64xbf16>, tensor<64x128xbf16> -> tensor<64x128xf32>
  ttile.store %o, %O[%c0, %c0] : tensor<64x128xf32>, memref<?x?xf32>
  return
}

// -----

// With two warpgroups: the scores of 64 queries x 128 keys split their
// keys over the warpgroups, and dV = P^T dO splits its 128 key rows the
// same way, so each warpgroup reads back only the part of P it stored and
// meets only its own threads around the store (named barrier 8 + group,
// 128 threads).
// GPU-LABEL: gpu.func @stored_for_own_group
// GPU-COUNT-8: wgmma.mma_async{{.*}}{{m64n64k16|<m = 64, n = 64, k = 16>}}
// GPU: %[[GROUP:.*]] = arith.index_cast %{{.*}} : index to i32
// GPU: %[[BAR:.*]] = arith.addi %[[GROUP]], %c8_i32 : i32
// GPU: nvvm.barrier id = %[[BAR]] number_of_threads = %c128_i32
// GPU-COUNT-4: nvvm.stmatrix {{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// GPU: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// GPU: nvvm.barrier id = %[[BAR]] number_of_threads = %c128_i32
// GPU-COUNT-4: wgmma.mma_async{{.*}}{{m64n128k16|<m = 64, n = 128, k = 16>}}
// PTX-LABEL: .visible .entry stored_for_own_group(
// PTX: bar.sync {{%r[0-9]+}}, 128;
func.func @stored_for_own_group(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                                %DO: memref<?x?xbf16>, %DV: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %zs = arith.constant dense<0.0> : tensor<64x128xf32>
  %zv = arith.constant dense<0.0> : tensor<128x128xf32>
  %q = ttile.load %Q[%c0, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
  %k = ttile.load %K[%c0, %c0] : memref<?x?xbf16> -> tensor<128x128xbf16>
  %do = ttile.load %DO[%c0, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
  %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<128x128xbf16> -> tensor<128x128xbf16>
  %s = ttile.dot %q, %kt, %zs : tensor<64x128xbf16>, tensor<128x128xbf16> -> tensor<64x128xf32>
  %p = ttile.cast %s : tensor<64x128xf32> -> tensor<64x128xbf16>
  %pt = ttile.transpose %p {permutation = array<i64: 1, 0>} : tensor<64x128xbf16> -> tensor<128x64xbf16>
  %dv = ttile.dot %pt, %do, %zv : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
  ttile.store %dv, %DV[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  return
}

// -----

// The same with 128 queries x 64 keys: the warpgroups split the scores'
// queries, and each takes half of dV's columns from all of P^T, which both
// stored: the store meets all threads.
// GPU-LABEL: gpu.func @stored_across_groups
// GPU: gpu.barrier
// GPU-COUNT-4: nvvm.stmatrix {{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// GPU: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// GPU: gpu.barrier
// GPU-NOT: nvvm.barrier id
// GPU: wgmma.mma_async{{.*}}{{m64n64k16|<m = 64, n = 64, k = 16>}}
func.func @stored_across_groups(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                                %DO: memref<?x?xbf16>, %DV: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %zs = arith.constant dense<0.0> : tensor<128x64xf32>
  %zv = arith.constant dense<0.0> : tensor<64x128xf32>
  %q = ttile.load %Q[%c0, %c0] : memref<?x?xbf16> -> tensor<128x128xbf16>
  %k = ttile.load %K[%c0, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
  %do = ttile.load %DO[%c0, %c0] : memref<?x?xbf16> -> tensor<128x128xbf16>
  %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<64x128xbf16> -> tensor<128x64xbf16>
  %s = ttile.dot %q, %kt, %zs : tensor<128x128xbf16>, tensor<128x64xbf16> -> tensor<128x64xf32>
  %p = ttile.cast %s : tensor<128x64xf32> -> tensor<128x64xbf16>
  %pt = ttile.transpose %p {permutation = array<i64: 1, 0>} : tensor<128x64xbf16> -> tensor<64x128xbf16>
  %dv = ttile.dot %pt, %do, %zv : tensor<64x128xbf16>, tensor<128x128xbf16> -> tensor<64x128xf32>
  ttile.store %dv, %DV[%c0, %c0] : tensor<64x128xf32>, memref<?x?xf32>
  return
}

// -----

// A product runs until an op reads it: the third product (which
// accumulates into the first's result) waits for the first group only
// (wait_group 1: the second keeps running); the store of the second
// waits for it with the third still running, the store of the third for
// the rest.
// GPU-LABEL: gpu.func @dot_chain
// GPU-COUNT-8: wgmma.mma_async{{.*}}{{m64n64k16|<m = 64, n = 64, k = 16>}}
// GPU-NOT: wgmma.mma_async
// GPU: wgmma.wait_group.sync.aligned 1;
// GPU-COUNT-4: wgmma.mma_async{{.*}}{{m64n64k16|<m = 64, n = 64, k = 16>}}
// GPU-NOT: wgmma.mma_async
// GPU: wgmma.wait_group.sync.aligned 1;
// GPU: vector.store
// GPU: wgmma.wait_group.sync.aligned 0;
// GPU: vector.store
func.func @dot_chain(%X: memref<?x?xbf16>, %Y: memref<?x?xbf16>,
                     %Z: memref<?x?xbf16>, %W: memref<?x?xbf16>,
                     %O: memref<?x?xf32>, %P: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %x = ttile.load %X[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %y = ttile.load %Y[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %z = ttile.load %Z[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %w = ttile.load %W[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %u = ttile.load %X[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %v = ttile.load %W[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %a = ttile.dot %x, %y, %zero : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  %b = ttile.dot %z, %w, %zero : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  %c = ttile.dot %u, %v, %a : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  ttile.store %b, %O[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  ttile.store %c, %P[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  return
}

// -----

// Stores of computed A operands one after the other share their barriers;
// a constant between them (the second one's A) is lowered before them.
// GPU-LABEL: gpu.func @stored_constant_a
// GPU: gpu.barrier
// GPU-NOT: gpu.barrier
// GPU: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// GPU-NEXT: gpu.barrier
// GPU: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <{{one|zero}}>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
func.func @stored_constant_a(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                             %O: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %a = ttile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %a2 = arith.addf %a, %a : tensor<64x64xbf16>
  %at = ttile.transpose %a2 {permutation = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
  %ones = arith.constant dense<1.0> : tensor<64x64xbf16>
  %ot = ttile.transpose %ones {permutation = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
  %b = ttile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %b2 = ttile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %d = ttile.dot %at, %b, %zero : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  %e = ttile.dot %ot, %b2, %d : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  ttile.store %e, %O[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  return
}

// -----

// Software-pipelined attention: the probabilities of the previous block,
// carried from a zero start, are the A operand of this iteration's second
// product. The carried tile takes that product's register layout (no
// conversion at the top of the body), and the softmax reads the scores
// with the second product still running (wait_group 1).
// LAYOUT-LABEL: func.func @pipelined_step
// LAYOUT: ttile.range {{.*}} iter_args({{.*}}, %[[P:arg[0-9]+]] = %{{.*}}) -> ({{.*}}, tensor<64x64xbf16, #[[DOTA:dot_op[0-9]*]]>)
// LAYOUT-NOT: ttile.convert_layout %[[P]]
// LAYOUT: ttile.dot %[[P]], {{.*}} : tensor<64x64xbf16, #[[DOTA]]>
// LAYOUT: ttile.convert_layout {{.*}} -> tensor<64x64xf32, #[[DOTA]]>
// GPU-LABEL: gpu.func @pipelined_step
// GPU: scf.for
// GPU-COUNT-8: wgmma.mma_async{{.*}}{{m64n64k16|<m = 64, n = 64, k = 16>}}
// GPU: wgmma.wait_group.sync.aligned 1;
// GPU: ex2.approx.ftz.f32
// GPU: wgmma.wait_group.sync.aligned 0;
// GPU: scf.yield
func.func @pipelined_step(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                          %V: memref<?x?xbf16>, %O: memref<?x?xf32>,
                          %n: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zs = arith.constant dense<0.0> : tensor<64x64xf32>
  %zo = arith.constant dense<0.0> : tensor<64x64xf32>
  %zp = arith.constant dense<0.0> : tensor<64x64xbf16>
  %r:2 = ttile.range %j = %c0 to %n step %c64
      iter_args(%acc = %zo, %p = %zp)
      -> (tensor<64x64xf32>, tensor<64x64xbf16>) {
    %q = ttile.load %Q[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %k = ttile.load %K[%j, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %v = ttile.load %V[%j, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s = ttile.dot %q, %kt, %zs : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    %acc2 = ttile.dot %p, %v, %acc : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    %e = math.exp2 %s : tensor<64x64xf32>
    %h = arith.mulf %acc2, %e : tensor<64x64xf32>
    %pn = ttile.cast %e : tensor<64x64xf32> -> tensor<64x64xbf16>
    ttile.yield %h, %pn : tensor<64x64xf32>, tensor<64x64xbf16>
  }
  ttile.store %r#0, %O[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  return
}

// -----

// Ping-pong: the two warpgroups take turns to issue their products. At the
// kernel's start the second hands the first its turn (named barrier 2),
// once for both loops; each run of products waits for this warpgroup's
// turn and hands it on before the wait for the products; at the end the
// first takes back the last turn.
// GPU-LABEL: gpu.func @pingpong_step
// GPU-DAG: %[[C2:.*]] = arith.constant 2 : i32
// GPU-DAG: %[[C256:.*]] = arith.constant 256 : i32
// GPU: nvvm.barrier.arrive id = %[[C2]] number_of_threads = %[[C256]]
// GPU-NOT: nvvm.barrier.arrive id = %[[C2]]
// GPU: scf.for
// GPU: nvvm.barrier id = %[[MINE:.*]] number_of_threads = %[[C256]]
// GPU-NEXT: nvvm.wgmma.fence.aligned
// GPU-COUNT-4: wgmma.mma_async{{.*}}{{m64n64k16|<m = 64, n = 64, k = 16>}}
// GPU-NOT: wgmma.mma_async
// GPU: nvvm.wgmma.commit.group.sync.aligned
// GPU: nvvm.barrier.arrive id = %[[NEXT:.*]] number_of_threads = %[[C256]]
// GPU-NEXT: llvm.inline_asm {{.*}}wgmma.wait_group.sync.aligned 0;
// GPU: ex2.approx
// GPU: nvvm.barrier id = %[[MINE]] number_of_threads = %[[C256]]
// GPU-NEXT: nvvm.wgmma.fence.aligned
// GPU-COUNT-4: wgmma.mma_async{{.*}}{{m64n64k16|<m = 64, n = 64, k = 16>}}
// GPU: nvvm.barrier.arrive id = %[[NEXT]] number_of_threads = %[[C256]]
// GPU-NEXT: llvm.inline_asm {{.*}}wgmma.wait_group.sync.aligned 0;
// GPU-NOT: nvvm.barrier id = %[[C2]]
// GPU: scf.for
// GPU: nvvm.barrier id = %{{.*}} number_of_threads = %[[C256]]
// GPU: nvvm.barrier.arrive id = %{{.*}} number_of_threads = %[[C256]]
// GPU: nvvm.barrier id = %[[C2]] number_of_threads = %[[C256]]
// GPU-NOT: nvvm.barrier
// GPU: gpu.return
// PTX-LABEL: .visible .entry pingpong_step(
// PTX: bar.arrive
// PTX: bar.sync {{.*}}, 256;
// PTX: wgmma.mma_async
// PTX: bar.arrive
// PTX: wgmma.wait_group.sync.aligned 0;
// PTX: bar.sync 2, 256;
func.func @pingpong_step(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                         %V: memref<?x?xbf16>, %O: memref<?x?xf32>,
                         %n: index)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32, ttile.pingpong} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zs = arith.constant dense<0.0> : tensor<128x64xf32>
  %zo = arith.constant dense<0.0> : tensor<128x64xf32>
  %q = ttile.load %Q[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %r = ttile.range %j = %c0 to %n step %c64
      iter_args(%acc = %zo) -> (tensor<128x64xf32>) {
    %k = ttile.load %K[%j, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %v = ttile.load %V[%j, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %s = ttile.dot %q, %kt, %zs : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
    %e = math.exp2 %s : tensor<128x64xf32>
    %p = ttile.cast %e : tensor<128x64xf32> -> tensor<128x64xbf16>
    %acc2 = ttile.dot %p, %v, %acc : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
    ttile.yield %acc2 : tensor<128x64xf32>
  }
  %q2 = ttile.load %Q[%c0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
  %r2 = ttile.range %j = %c0 to %n step %c64
      iter_args(%acc = %r) -> (tensor<128x64xf32>) {
    %v = ttile.load %V[%j, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %vt = ttile.transpose %v {permutation = array<i64: 1, 0>} : tensor<64x64xbf16> -> tensor<64x64xbf16>
    %acc2 = ttile.dot %q2, %vt, %acc : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
    ttile.yield %acc2 : tensor<128x64xf32>
  }
  ttile.store %r2, %O[%c0, %c0] : tensor<128x64xf32>, memref<?x?xf32>
  return
}
