// TMA producer warpgroups (-tessera-convert-ttile-to-gpu=tma=true, the
// default of -tessera-ttile-to-ptx for sm_90a): kernels whose shared-tile
// rings belong to top-level ranges get a producer warpgroup that fills them
// with cp.async.bulk.tensor copies on mbarriers; others keep their cp.async
// rings. The PTX is checked by ptxas.
// RUN: tessera-opt %s --tessera-ttile-assign-layouts=wgmma=true --tessera-convert-ttile-to-gpu=tma=true --canonicalize --cse --split-input-file | FileCheck %s --check-prefix=GPU
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_90a features=+ptx80" -o %t.mlir
// RUN: %extract_ptx %t.mlir %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// Without tma the same kernel keeps its cp.async ring and 256 threads.
// RUN: tessera-opt %s --tessera-ttile-assign-layouts=wgmma=true --tessera-convert-ttile-to-gpu --split-input-file | FileCheck %s --check-prefix=OFF

// The launch record: version 2, 128 extra threads, 256 consumer threads,
// 22 parameter slots (three 2-d memrefs of 7, then the maps' address), two
// maps, one program a cluster; the maps: A (slot 0, rank 2) in 64 x 128
// boxes of 2-byte elements with the 128-byte swizzle, B (slot 7) in 64 x
// 64 boxes.
// GPU-LABEL: gpu.module @tessera_kernels
// GPU: llvm.mlir.global external constant @tessera_launch_gemm_tma(dense<[3, 256, 128, 133120, 21, 1, 1, 2, 0, 2, 2, 64, 128, 128, 7, 2, 2, 64, 64, 128]> : tensor<20xi32>)
// GPU-LABEL: gpu.func @gemm_tma
// GPU-SAME: %{{.*}}: i64) kernel attributes {known_block_size = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32}
// One thread initializes the full (count 1) and empty (count 256)
// barriers of the 4 slots; everyone waits for it.
// GPU: nvvm.mbarrier.init
// GPU: nvvm.fence.mbarrier.init
// GPU: gpu.barrier
// The producer warpgroup gives registers away; one warp walks the loop.
// GPU: nvvm.setmaxregister decrease 96
// GPU: nvvm.prefetch tensormap
// GPU: scf.for
// GPU: nvvm.mbarrier.try_wait
// GPU: nvvm.mbarrier.arrive.expect_tx
// B's 64 x 128 tile is two boxes of 64 columns.
// GPU-COUNT-3: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}, box[%{{[^,]*}}, %{{[^,]*}}] :
// GPU: } else {
// The consumers: more registers, a wait on the slot's tiles, the wgmma
// group left in flight, the previous slot given back.
// GPU: nvvm.setmaxregister increase 200
// GPU: scf.for
// GPU: nvvm.mbarrier.try_wait
// GPU: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// GPU: wgmma.wait_group.sync.aligned 1;
// GPU: nvvm.mbarrier.arrive %{{[^,]*}} : !llvm.ptr<3>
// GPU: scf.yield
// GPU: gpu.return

// PTX: .visible .global .align 4 .b8 tessera_launch_gemm_tma[80]
// PTX-LABEL: .visible .entry gemm_tma(
// PTX: .maxntid 384, 1, 1
// PTX-DAG: setmaxnreg.dec.sync.aligned.u32 {{[[:space:]]*}}96
// PTX-DAG: setmaxnreg.inc.sync.aligned.u32 {{[[:space:]]*}}200
// PTX-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: mbarrier.try_wait.parity.shared.b64
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16

// OFF-LABEL: gpu.func @gemm_tma
// OFF-SAME: known_block_size = array<i32: 256, 1, 1>
// OFF-NOT: cp.async.bulk.tensor
// OFF: nvvm.cp.async.shared.global

func.func @gemm_tma(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                    %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %c128 : index
  %c = arith.muli %j, %c128 : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %c64 stages 4
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  ttile.store %acc, %C[%r, %c] : tensor<128x128xf32>, memref<?x?xf32>
  return
}

// -----

// Attention's first product: Q copied once by the consumers (a
// synchronous shared tile: its barriers become a named barrier of the 128
// consumer threads), K blocks from the producer, their row computed from
// the induction variable and a scalar argument. One consumer warpgroup:
// no register moves.
// GPU-LABEL: gpu.func @scores_tma
// GPU-SAME: known_block_size = array<i32: 256, 1, 1>
// GPU-NOT: nvvm.setmaxregister
// GPU: scf.for
// GPU: arith.addi %arg3, %{{.*}} : index
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global
// GPU: } else {
// GPU: nvvm.cp.async.shared.global
// GPU: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// GPU: scf.for
// GPU: nvvm.mbarrier.try_wait
// GPU: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 32, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// GPU: wgmma.wait_group.sync.aligned 0;
// GPU: nvvm.mbarrier.arrive %{{[^,]*}} : !llvm.ptr<3>
// PTX-LABEL: .visible .entry scores_tma(
// PTX: .maxntid 256, 1, 1
// PTX-DAG: bar.sync 1, 128
// PTX-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
func.func @scores_tma(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
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

// K blocks of one head of a [heads, seq, d] argument (k[bh], a subview
// that selects a leading index): a 3-d map (slot 7, rank 3), the head's
// index the third coordinate (24 parameter slots: 7 + 9 + 7 + 1).
// GPU-LABEL: llvm.mlir.global external constant @tessera_launch_head_blocks(dense<[3, 128, 128, 18432, 23, 1, 1, 1, 7, 3, 2, 64, 32, 128]>
// GPU-LABEL: gpu.func @head_blocks
// GPU: gpu.block_id  y
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}, box[%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}] :
// PTX-LABEL: .visible .entry head_blocks(
// PTX: cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
func.func @head_blocks(%Q: memref<?x?xbf16>, %K: memref<?x?x?xbf16>,
                       %S: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %h = ttile.program_id y
  %seq = memref.dim %K, %c1 : memref<?x?x?xbf16>
  %d = memref.dim %K, %c2 : memref<?x?x?xbf16>
  %kh = memref.subview %K[%h, 0, 0] [1, %seq, %d] [1, 1, 1] : memref<?x?x?xbf16> to memref<?x?xbf16, strided<[?, 1], offset: ?>>
  %q = ttile.load %Q[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %r = ttile.range %n = %c0 to %seq step %c32 stages 2
      iter_args(%acc = %zero) -> (tensor<64x32xf32>) {
    %k = ttile.load %kh[%n, %c0] : memref<?x?xbf16, strided<[?, 1], offset: ?>> -> tensor<32x64xbf16>
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<32x64xbf16> -> tensor<64x32xbf16>
    %s = ttile.dot %q, %kt, %zero : tensor<64x64xbf16>, tensor<64x32xbf16> -> tensor<64x32xf32>
    %a = arith.addf %acc, %s : tensor<64x32xf32>
    ttile.yield %a : tensor<64x32xf32>
  }
  ttile.store %r, %S[%c0, %c0] : tensor<64x32xf32>, memref<?x?xf32>
  return
}

// -----

// A ring inside another loop (a persistent kernel's loop over output
// tiles): the producer runs the same outer loop, and each ring iteration's
// slot and phase come from a counter of all its iterations so far (private
// memory, a register once promoted); the consumers give the last slot of
// each run back after its final wgmma wait.
// GPU-LABEL: gpu.func @nested_ring
// GPU-SAME: known_block_size = array<i32: 384, 1, 1>
// GPU: memref.alloca() : memref<1xindex>
// GPU: nvvm.setmaxregister decrease 96
// GPU: scf.for
// GPU: memref.load
// GPU: scf.for
// GPU: nvvm.mbarrier.try_wait
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global
// GPU: memref.store
// GPU: } else {
// GPU: scf.for
// GPU: memref.load
// GPU: scf.for
// GPU: wgmma.wait_group.sync.aligned 1;
// GPU: wgmma.wait_group.sync.aligned 0;
// GPU: nvvm.mbarrier.arrive %{{[^,]*}} : !llvm.ptr<3>
// GPU: memref.store
// PTX-LABEL: .visible .entry nested_ring(
// PTX: cp.async.bulk.tensor.2d

func.func @nested_ring(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                       %C: memref<?x?xf32>, %tiles: index)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid = ttile.program_id x
  %np = ttile.num_programs x
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  scf.for %t = %pid to %tiles step %np {
    %r = arith.muli %t, %c128 : index
    %zero = arith.constant dense<0.0> : tensor<128x128xf32>
    %acc = ttile.range %kk = %c0 to %k step %c64 stages 3
        iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
      %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = ttile.load %B[%kk, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
      %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
      ttile.yield %a1 : tensor<128x128xf32>
    }
    ttile.store %acc, %C[%r, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  }
  return
}

// -----

// A ring under an `if` (the producer would need the condition): cp.async
// rings, no producer.
// GPU-LABEL: gpu.func @ring_under_if
// GPU-SAME: known_block_size = array<i32: 256, 1, 1>
// GPU-NOT: cp.async.bulk.tensor
// GPU: nvvm.cp.async.shared.global
// PTX-LABEL: .visible .entry ring_under_if(
// PTX-NOT: cp.async.bulk.tensor
// PTX: cp.async.cg.shared.global

func.func @ring_under_if(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                         %C: memref<?x?xf32>, %go: i1)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  scf.if %go {
    %zero = arith.constant dense<0.0> : tensor<128x128xf32>
    %acc = ttile.range %kk = %c0 to %k step %c64 stages 3
        iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
      %a = ttile.load %A[%c0, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = ttile.load %B[%kk, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
      %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
      ttile.yield %a1 : tensor<128x128xf32>
    }
    ttile.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  }
  return
}

// -----

// Clusters of two programs (ttile.cluster = 2) sharing B's tile
// (multicast): the record asks for clusters of 2; the empty barriers
// count the 8 consumer warps of both programs; the cluster meets after
// the barriers are made and before it exits; each producer issues one of
// B's two boxes to both programs (mask 3) and A's alone; each consumer
// warp gives a slot back in both programs.
// GPU-LABEL: llvm.mlir.global external constant @tessera_launch_gemm_pair(dense<[3, 256, 128, 133120, 21, 2, 1, 2,
// GPU-LABEL: gpu.func @gemm_pair
// GPU: %[[WARPS:.*]] = arith.constant 16 : i32
// GPU: nvvm.mbarrier.init %{{.*}}, %[[WARPS]]
// GPU: nvvm.cluster.arrive
// GPU-NEXT: nvvm.cluster.wait
// GPU: nvvm.read.ptx.sreg.cluster.ctarank
// GPU: scf.for
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global {{[^=]*}} : !llvm.ptr<7>, !llvm.ptr
// GPU: scf.if
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} multicast_mask = %{{.*}} : !llvm.ptr<7>, !llvm.ptr
// GPU: scf.if
// GPU: multicast_mask
// GPU: } else {
// GPU: nvvm.mapa %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// GPU: nvvm.mbarrier.arrive %{{.*}} {scope = #nvvm.mem_scope<cluster>} : !llvm.ptr<7>
// GPU: nvvm.cluster.arrive
// GPU-NEXT: nvvm.cluster.wait
// GPU-NEXT: gpu.return
// PTX-LABEL: .visible .entry gemm_pair(
// PTX-DAG: barrier.cluster.wait;
// PTX-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
// PTX-DAG: mapa.shared::cluster.u64
// PTX-DAG: mbarrier.arrive.release.cluster.shared::cluster.b64
func.func @gemm_pair(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32, ttile.cluster = 2 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %c128 : index
  %c = arith.muli %j, %c128 : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %c64 stages 4
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.load %B[%kk, %c] {multicast} : memref<?x?xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  ttile.store %acc, %C[%r, %c] : tensor<128x128xf32>, memref<?x?xf32>
  return
}
