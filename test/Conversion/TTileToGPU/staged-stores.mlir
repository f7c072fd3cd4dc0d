// REQUIRES: ptxas
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_90a features=+ptx80" -o %t.mlir
// RUN: %extract_ptx %t.mlir %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// A persistent GEMM with two 16-bit outputs a tile (a value and its
// double), each leaving through a shared buffer of its own and TMA. Before
// writing a buffer, the thread that issues the copies waits until TMA read
// the buffer's previous tile out, not for the other output's copies
// committed since: `wait_group.read 1` when both outputs go through TMA
// (their tensor maps usable), `wait_group.read 0` otherwise. Five stages
// of 32 KiB and two buffers of 32 KiB fit in the block's 227 KiB.
// CHECK-LABEL: .visible .entry two_outputs(
// CHECK-COUNT-10: mbarrier.init.shared.b64
// CHECK-NOT: mbarrier.init.shared
// CHECK-DAG: cp.async.bulk.wait_group.read 1;
// CHECK-DAG: cp.async.bulk.wait_group.read 1;
// CHECK-DAG: cp.async.bulk.wait_group.read 0;
// CHECK-DAG: cp.async.bulk.wait_group.read 0;
// CHECK-DAG: cp.async.bulk.commit_group;
// CHECK-DAG: cp.async.bulk.commit_group;
// CHECK: cp.async.bulk.wait_group 0;
// CHECK-NOT: cp.async.bulk.commit_group;
func.func @two_outputs(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                       %C: memref<?x?xbf16>, %D: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  %p = ttile.program_id x
  %np = ttile.num_programs x
  %tiles = arith.constant 64 : index
  ttile.range %t = %p to %tiles step %np {
    %ti = arith.divsi %t, %c1024 : index
    %tj = arith.remsi %t, %c1024 : index
    %r = arith.muli %ti, %c128 : index
    %c = arith.muli %tj, %c128 : index
    %zero = arith.constant dense<0.0> : tensor<128x128xf32>
    %acc = ttile.range %kk = %c0 to %c1024 step %c64 stages 5
        iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
      %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x128xbf16>
      %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
      ttile.yield %a1 : tensor<128x128xf32>
    }
    %two = arith.addf %acc, %acc : tensor<128x128xf32>
    %o1 = ttile.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
    ttile.store %o1, %C[%r, %c] : tensor<128x128xbf16>, memref<?x?xbf16>
    %o2 = ttile.cast %two : tensor<128x128xf32> -> tensor<128x128xbf16>
    ttile.store %o2, %D[%r, %c] : tensor<128x128xbf16>, memref<?x?xbf16>
  }
  return
}

// A ring whose depth the GEMM generator chose as the deepest that fits
// (`ttile.deepest_ring`) but that the block's shared memory does not hold
// beside the kernel's other tiles (8 stages of 32 KiB here) gives up
// stages until it fits (7: 224 KiB with its barriers) instead of giving up
// the producer warpgroup; its output then has no room for a shared buffer
// and is stored directly. (A ring of a kernel's own stages is kept as it
// is: test_kernel_dsl.py checks the error.)
// CHECK-LABEL: .visible .entry deep_ring(
// CHECK-COUNT-14: mbarrier.init.shared.b64
// CHECK-NOT: mbarrier.init.shared
// CHECK: setmaxnreg.dec
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global
// CHECK-NOT: cp.async.bulk.commit_group
// CHECK: st.global.v4.b32
func.func @deep_ring(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  %p = ttile.program_id x
  %np = ttile.num_programs x
  %tiles = arith.constant 64 : index
  ttile.range %t = %p to %tiles step %np {
    %ti = arith.divsi %t, %c1024 : index
    %tj = arith.remsi %t, %c1024 : index
    %r = arith.muli %ti, %c128 : index
    %c = arith.muli %tj, %c128 : index
    %zero = arith.constant dense<0.0> : tensor<128x128xf32>
    %acc = ttile.range %kk = %c0 to %c1024 step %c64 stages 8
        iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
      %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x128xbf16>
      %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
      ttile.yield %a1 : tensor<128x128xf32>
    } {ttile.deepest_ring}
    %o = ttile.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
    ttile.store %o, %C[%r, %c] : tensor<128x128xbf16>, memref<?x?xbf16>
  }
  return
}
