// RUN: tessera-opt %s | tessera-opt | FileCheck %s
// RUN: tessera-opt %s --mlir-print-op-generic | tessera-opt | FileCheck %s

// One program of flash attention (forward, causal), as spec 002 writes it
// with tile.*: a 128-row block of queries against 64-key blocks of K and V,
// in Hopper's layouts: Q and P in registers, K^T and V in shared memory.

#blocked = #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [8, 1], order = [1, 0]>
#mma = #ttile.mma<version = 3, warpsPerCTA = [8, 1], instrShape = [64, 64, 16]>
#a = #ttile.dot_operand<opIdx = 0, parent = #mma, kWidth = 8>
#kt = #ttile.shared<swizzle = 128, order = [0, 1]>
#v = #ttile.shared<swizzle = 128, order = [1, 0]>
#row = #ttile.slice<dim = 1, parent = #mma>

// CHECK-LABEL: func.func @flash_attention
// CHECK-SAME: attributes {ttile.kernel, ttile.num_warps = 8 : i32}
// CHECK: %[[PID:.*]] = ttile.program_id x
// CHECK: ttile.num_programs y
// CHECK: ttile.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x?xbf16> -> tensor<128x64xbf16, #[[A:dot_op[0-9]*]]>
// CHECK: ttile.range %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} stages 3 iter_args(
// CHECK: ttile.transpose
// CHECK: ttile.dot
// CHECK: ttile.mask_causal
// CHECK: ttile.mask_keys %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x64xf32, #
// CHECK: ttile.softmax_online
// CHECK: ttile.softmax_accumulate
// CHECK: ttile.yield
// CHECK: ttile.broadcast
// CHECK: ttile.cast
// CHECK: ttile.store
func.func @flash_attention(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                           %V: memref<?x?xbf16>, %O: memref<?x?xbf16>,
                           %len: index, %scale: f32)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %pid = ttile.program_id x
  %heads = ttile.num_programs y
  %row0 = arith.muli %pid, %c128 : index
  %q = ttile.load %Q[%row0, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16, #a>
  %zero = arith.constant dense<0.0> : tensor<128x64xf32, #mma>
  %minf = arith.constant dense<0xFF800000> : tensor<128xf32, #row>
  %lzero = arith.constant dense<0.0> : tensor<128xf32, #row>
  %r:3 = ttile.range %n = %c0 to %len step %c64 stages 3
      iter_args(%acc = %zero, %m = %minf, %l = %lzero)
      -> (tensor<128x64xf32, #mma>, tensor<128xf32, #row>, tensor<128xf32, #row>) {
    %k = ttile.load %K[%n, %c0] {padding = 0.0 : bf16} : memref<?x?xbf16> -> tensor<64x64xbf16, #blocked>
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<64x64xbf16, #blocked> -> tensor<64x64xbf16, #blocked>
    %kb = ttile.convert_layout %kt : tensor<64x64xbf16, #blocked> -> tensor<64x64xbf16, #kt>
    %s0 = ttile.dot %q, %kb, %zero : tensor<128x64xbf16, #a>, tensor<64x64xbf16, #kt> -> tensor<128x64xf32, #mma>
    %sc = tensor.splat %scale : tensor<128x64xf32, #mma>
    %s1 = arith.mulf %s0, %sc : tensor<128x64xf32, #mma>
    %sc1 = ttile.mask_causal %s1, %row0, %n : tensor<128x64xf32, #mma>
    %s = ttile.mask_keys %sc1, %n, %len : tensor<128x64xf32, #mma>
    %p, %mc, %lc = ttile.softmax_online %s : tensor<128x64xf32, #mma> -> tensor<128x64xf32, #mma>, tensor<128xf32, #row>, tensor<128xf32, #row>
    %v = ttile.load %V[%n, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16, #v>
    %acc2, %m2, %l2 = ttile.softmax_accumulate %acc, %m, %l, %p, %v, %mc, %lc
        : tensor<128x64xf32, #mma>, tensor<128xf32, #row>, tensor<128x64xf32, #mma>, tensor<64x64xbf16, #v>
    ttile.yield %acc2, %m2, %l2 : tensor<128x64xf32, #mma>, tensor<128xf32, #row>, tensor<128xf32, #row>
  }
  %lb = ttile.broadcast %r#2 {dims = array<i64: 0>} : tensor<128xf32, #row> -> tensor<128x64xf32, #mma>
  %o32 = arith.divf %r#0, %lb : tensor<128x64xf32, #mma>
  %o = ttile.cast %o32 : tensor<128x64xf32, #mma> -> tensor<128x64xbf16, #mma>
  ttile.store %o, %O[%row0, %c0] : tensor<128x64xbf16, #mma>, memref<?x?xbf16>
  return
}

// Shared memory, masks, reductions, iota and stochastic rounding.
// CHECK-LABEL: func.func @pieces
// CHECK: ttile.iota {dim = 0 : i32} : tensor<2x64xi32>
// CHECK: ttile.load %{{.*}}[%{{.*}}, %{{.*}}] mask %{{.*}} : memref<2x64xf32, #gpu.address_space<workgroup>>, tensor<2x64xi1> -> tensor<2x64xf32>
// CHECK: ttile.reduce sum %{{.*}} {dim = 1 : i32} : tensor<2x64xf32> -> tensor<2xf32>
// CHECK: ttile.cast %{{.*}} seed %{{.*}} {stochastic_round} : tensor<2x64xf32> -> tensor<2x64xbf16>
// CHECK: ttile.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] mask
func.func @pieces(%smem: memref<2x64xf32, #gpu.address_space<workgroup>>,
                  %out: memref<?x?xbf16>, %seed: i32)
    attributes {ttile.kernel} {
  %c0 = arith.constant 0 : index
  %i = ttile.iota {dim = 0 : i32} : tensor<2x64xi32>
  %one = arith.constant dense<1> : tensor<2x64xi32>
  %mask = arith.cmpi slt, %i, %one : tensor<2x64xi32>
  %x = ttile.load %smem[%c0, %c0] mask %mask : memref<2x64xf32, #gpu.address_space<workgroup>>, tensor<2x64xi1> -> tensor<2x64xf32>
  %s = ttile.reduce sum %x {dim = 1 : i32} : tensor<2x64xf32> -> tensor<2xf32>
  %y = ttile.cast %x seed %seed {stochastic_round} : tensor<2x64xf32> -> tensor<2x64xbf16>
  ttile.store %y, %out[%c0, %c0] mask %mask : tensor<2x64xbf16>, memref<?x?xbf16>, tensor<2x64xi1>
  return
}

// A loop without carried values or stages prints without them.
// CHECK-LABEL: func.func @plain_loop
// CHECK: ttile.range %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT: ttile.store
// CHECK-NEXT: }
func.func @plain_loop(%out: memref<?x?xf32>, %n: index) attributes {ttile.kernel} {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant dense<0.0> : tensor<8x8xf32>
  ttile.range %i = %c0 to %n step %c8 {
    ttile.store %z, %out[%i, %c0] : tensor<8x8xf32>, memref<?x?xf32>
  }
  return
}

// A tile shared by the programs of a cluster.
// CHECK-LABEL: func.func @shared_tile
// CHECK-SAME: ttile.cluster = 2 : i32
// CHECK: ttile.load %{{.*}}[%{{.*}}, %{{.*}}] {multicast} : memref<?x?xbf16> -> tensor<64x128xbf16>
func.func @shared_tile(%b: memref<?x?xbf16>, %out: memref<?x?xbf16>) attributes {ttile.kernel, ttile.num_warps = 4 : i32, ttile.cluster = 2 : i32} {
  %c0 = arith.constant 0 : index
  %t = ttile.load %b[%c0, %c0] {multicast} : memref<?x?xbf16> -> tensor<64x128xbf16>
  ttile.store %t, %out[%c0, %c0] : tensor<64x128xbf16>, memref<?x?xbf16>
  return
}
