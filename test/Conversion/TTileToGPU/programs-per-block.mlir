// Two programs a block (ttile.programs_per_block = 2, a ping-pong GEMM):
// each program is one consumer warpgroup with a window of shared memory of
// its own, program_id x is block * 2 + the program's index, and the
// programs take turns to run their K loops: a program waits on its turn's
// named barrier before its ring loop and hands the turn to the other once
// the loop's last product is issued, so the tensor cores run one program's
// products while the other runs its epilogue. The programs share the ring
// and the one producer warp that fills it: each round of the tiles loop,
// program 0's run of the K loop, then program 1's.
// RUN: tessera-opt %s --tessera-ttile-assign-layouts=wgmma=true --tessera-convert-ttile-to-gpu=tma=true --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=GPU
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_90a features=+ptx80" --split-input-file --verify-diagnostics -o %t.mlir
// RUN: %extract_ptx %t.mlir %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// REQUIRES: ptxas

// The launch record: 256 consumer threads (two programs of 128) and 128
// producer threads, 99328 + 2 x 32768 + 1024 bytes of shared memory (the
// shared ring: 3 stages of the A and B tiles and their barriers; then each
// program's window: its output tile's buffer).
// GPU-LABEL: gpu.module @tessera_kernels
// GPU: llvm.mlir.global external constant @tessera_launch_pingpong(dense<[3, 256, 128, 165888,
// GPU-LABEL: gpu.func @pingpong
// GPU-SAME: known_block_size = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32
// A thread's program: its consumer warp / 4, or its producer warp - 8 (at
// most 1); its window after the ring, 32768 bytes a program.
// GPU: %[[WARP:.+]] = arith.divui %{{.+}}, %c32{{.*}} : index
// GPU: %[[CONSUMER:.+]] = arith.cmpi ult, %[[WARP]], %c8 : index
// GPU: %[[PROG:.+]] = arith.select %[[CONSUMER]], %{{.+}}, %{{.+}} : index
// GPU: %[[RINGS:.+]] = arith.constant 99328 : index
// GPU: %[[STRIDE:.+]] = arith.constant 32768 : index
// GPU: arith.addi %{{.+}}, %[[RINGS]] : index
// GPU: arith.muli %[[PROG]], %[[STRIDE]] : index
// The first thread of program 0 initializes the ring's barriers; the
// `empty` ones count one program's 128 threads.
// GPU: %[[ZERO:.+]] = arith.cmpi eq, %[[PROG]], %c0{{.*}} : index
// GPU: arith.andi %{{.+}}, %[[ZERO]] : i1
// GPU: nvvm.mbarrier.init %{{.+}}, %c128_i32
// GPU: gpu.barrier
// The first producer warp (warp 4 of the producer's numbering) fills the
// ring. It walks program 0's tiles loop (tile block * 2 + 0, step grid *
// 2) and fills program 0's run of the K loop from the round's first slot,
// ...
// GPU: nvvm.setmaxregister  decrease 96
// GPU: arith.cmpi eq, %{{.+}}, %c4{{.*}} : index
// GPU: %[[BLK:.+]] = gpu.block_id  x
// GPU: %[[BLK2:.+]] = arith.muli %[[BLK]], %c2{{.*}} : index
// GPU: %[[FIRST:.+]] = arith.addi %[[BLK2]], %[[PROG]] : index
// GPU: %[[NP:.+]] = arith.muli %{{.+}}, %c2{{.*}} : index
// GPU: scf.for %[[T:.+]] = %[[FIRST]] to %{{.+}} step %[[NP]] {
// GPU: %[[ROUND:.+]] = memref.load %alloca
// GPU: scf.for
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global
// ... then program 1's after it: the same iteration j of its own tiles
// loop, tile block * 2 + 1 + j * grid * 2 ...
// GPU: %[[J:.+]] = arith.divui %{{.+}}, %[[NP]] : index
// GPU: %[[BLK:.+]] = gpu.block_id  x
// GPU: %[[BLK2:.+]] = arith.muli %[[BLK]], %c2{{.*}} : index
// GPU: %[[SECOND:.+]] = arith.addi %[[BLK2]], %c1{{.*}} : index
// GPU: %[[NP2:.+]] = arith.muli %{{.+}}, %c2{{.*}} : index
// GPU: %[[OFF:.+]] = arith.muli %[[J]], %[[NP2]] : index
// GPU: arith.addi %[[SECOND]], %[[OFF]] : index
// GPU: scf.for
// GPU: nvvm.cp.async.bulk.tensor.shared.cluster.global
// ... and the next round starts after both runs.
// GPU: %[[BOTH:.+]] = arith.muli %{{.+}}, %c2{{.*}} : index
// GPU: %[[NEXT:.+]] = arith.addi %[[ROUND]], %[[BOTH]] : index
// GPU: memref.store %[[NEXT]], %alloca
// GPU: } else {
// GPU: nvvm.setmaxregister  increase 200
// The last program hands the first its turn once, at the start (barrier
// 3: 1 and 2 are the programs' own).
// GPU: nvvm.barrier.arrive id = %c3_i32 number_of_threads = %c256_i32
// The tiles loop: each K loop waits for its program's turn (barrier 3 +
// program) and hands it on (barrier 3 + (program + 1) % 2) once its last
// product is issued, before the final wgmma wait. A program's run starts
// program * (its trip count) slots into the round.
// GPU: scf.for
// GPU: nvvm.barrier id = %{{.+}} number_of_threads = %c256_i32
// GPU: %[[CROUND:.+]] = memref.load %alloca
// GPU: %[[SKIP:.+]] = arith.muli %{{.+}}, %[[PROG]] : index
// GPU: arith.addi %[[CROUND]], %[[SKIP]] : index
// GPU: scf.for
// GPU: nvvm.wgmma.mma_async
// GPU: nvvm.barrier.arrive id = %{{.+}} number_of_threads = %c256_i32{{.*}}
// GPU-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;"
// An empty K loop hands the turn on too.
// GPU: } else {
// GPU: nvvm.barrier.arrive id = %{{.+}} number_of_threads = %c256_i32{{.*}}
// GPU: memref.store %{{.+}}, %alloca
// The first program takes the last turn back at the end.
// GPU: nvvm.barrier id = %c3_i32 number_of_threads = %c256_i32
// GPU: gpu.return

// PTX-LABEL: .visible .entry pingpong(
// PTX: .maxntid 384, 1, 1
// PTX-DAG: bar.sync {{[[:space:]]*}}3, 256;
// PTX-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// PTX-DAG: setmaxnreg.inc.sync.aligned.u32 {{[[:space:]]*}}200
func.func @pingpong(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                    %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32,
                ttile.programs_per_block = 2 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid = ttile.program_id x
  %np = ttile.num_programs x
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  ttile.range %t = %pid to %c8 step %np {
    %r = arith.muli %t, %c128 : index
    %zero = arith.constant dense<0.0> : tensor<128x128xf32>
    %acc = ttile.range %kk = %c0 to %k step %c64 stages 3
        iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
      %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = ttile.load %B[%kk, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
      %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
      ttile.yield %a1 : tensor<128x128xf32>
    }
    %o = ttile.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
    ttile.store %o, %C[%r, %c0] : tensor<128x128xbf16>, memref<?x?xbf16>
    ttile.yield
  }
  return
}

// -----

// Several programs a block need the producer's rings (TMA copies of
// top-level ranges); a kernel without them is refused, not run with its
// programs' barriers mixed.
// expected-error @+1 {{ttile.programs_per_block = 2 needs a warp-specialized kernel}}
func.func @no_rings(%X: memref<?x?xf32>, %Y: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32,
                ttile.programs_per_block = 2 : i32} {
  %c0 = arith.constant 0 : index
  %pid = ttile.program_id x
  %x = ttile.load %X[%pid, %c0] : memref<?x?xf32> -> tensor<16x64xf32>
  ttile.store %x, %Y[%pid, %c0] : tensor<16x64xf32>, memref<?x?xf32>
  return
}

// -----

// The programs' runs of a shared ring follow each other in the ring, so a
// ring loop whose bounds differ between programs (here its trip count
// follows the program's tile) is refused, not run on slots the other
// program fills.
func.func @uneven(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                  %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32,
                ttile.programs_per_block = 2 : i32} {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid = ttile.program_id x
  %np = ttile.num_programs x
  ttile.range %t = %pid to %c8 step %np {
    %r = arith.muli %t, %c128 : index
    %kend = arith.muli %t, %c64 : index
    %zero = arith.constant dense<0.0> : tensor<128x128xf32>
    // expected-error @+1 {{ttile.programs_per_block = 2: the programs of a block share this loop's ring, so its bounds must be the same in every program}}
    %acc = ttile.range %kk = %c0 to %kend step %c64 stages 3
        iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
      %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = ttile.load %B[%kk, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
      %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
      ttile.yield %a1 : tensor<128x128xf32>
    }
    %o = ttile.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
    ttile.store %o, %C[%r, %c0] : tensor<128x128xbf16>, memref<?x?xbf16>
    ttile.yield
  }
  return
}
