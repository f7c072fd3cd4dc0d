// RUN: tessera-opt %s --tessera-ttile-assign-layouts --split-input-file | FileCheck %s

// Rows of f32 on 4 warps: 16 bytes per thread along the row, a warp per
// row; the row statistics are slices and broadcast back without moving.
// CHECK-DAG: #[[B:.*]] = #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]>
// CHECK-DAG: #[[S:.*]] = #ttile.slice<dim = 1, parent = #[[B]]>
// CHECK-LABEL: func.func @rows
// CHECK: ttile.load {{.*}} -> tensor<4x256xf32, #[[B]]>
// CHECK: ttile.reduce max {{.*}} -> tensor<4xf32, #[[S]]>
// CHECK: ttile.broadcast {{.*}} : tensor<4xf32, #[[S]]> -> tensor<4x256xf32, #[[B]]>
// CHECK: arith.subf {{.*}} : tensor<4x256xf32, #[[B]]>
// CHECK-NOT: convert_layout
func.func @rows(%X: memref<?x?xf32>, %Y: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<4x256xf32>
  %m = ttile.reduce max %x {dim = 1 : i32} : tensor<4x256xf32> -> tensor<4xf32>
  %mb = ttile.broadcast %m {dims = array<i64: 0>} : tensor<4xf32> -> tensor<4x256xf32>
  %d = arith.subf %x, %mb : tensor<4x256xf32>
  ttile.store %d, %Y[%c0, %c0] : tensor<4x256xf32>, memref<?x?xf32>
  return
}

// -----

// bf16 takes 8 elements per thread; a column mask built from iota and a
// splat is computed again in the layout of the data it selects, not moved;
// a 1-D weight is loaded directly as the slice its broadcast needs.
// CHECK-DAG: #[[B:.*]] = #ttile.blocked<sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [4, 2], order = [1, 0]>
// CHECK-DAG: #[[S0:.*]] = #ttile.slice<dim = 0, parent = #[[B]]>
// CHECK-LABEL: func.func @mask_and_weight
// CHECK-NOT: convert_layout
// CHECK: ttile.load {{.*}} -> tensor<2x512xbf16, #[[B]]>
// CHECK: ttile.iota {dim = 1 : i32} : tensor<2x512xi32, #[[B]]>
// CHECK: arith.cmpi slt, {{.*}} : tensor<2x512xi32, #[[B]]>
// CHECK: ttile.load {{.*}} : memref<?xf32> -> tensor<512xf32, #[[S0]]>
// CHECK: ttile.broadcast {{.*}} : tensor<512xf32, #[[S0]]> -> tensor<2x512xf32, #[[B]]>
// CHECK-NOT: convert_layout
func.func @mask_and_weight(%X: memref<?x?xbf16>, %W: memref<?xf32>,
                           %Y: memref<?x?xf32>, %n: i32)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %xb = ttile.load %X[%c0, %c0] : memref<?x?xbf16> -> tensor<2x512xbf16>
  %x = ttile.cast %xb : tensor<2x512xbf16> -> tensor<2x512xf32>
  %cols = ttile.iota {dim = 1 : i32} : tensor<2x512xi32>
  %nt = tensor.splat %n : tensor<2x512xi32>
  %valid = arith.cmpi slt, %cols, %nt : tensor<2x512xi32>
  %zero = arith.constant dense<0.0> : tensor<2x512xf32>
  %xm = arith.select %valid, %x, %zero : tensor<2x512xi1>, tensor<2x512xf32>
  %w1 = ttile.load %W[%c0] : memref<?xf32> -> tensor<512xf32>
  %w = ttile.broadcast %w1 {dims = array<i64: 1>} : tensor<512xf32> -> tensor<2x512xf32>
  %y = arith.mulf %xm, %w : tensor<2x512xf32>
  ttile.store %y, %Y[%c0, %c0] : tensor<2x512xf32>, memref<?x?xf32>
  return
}

// -----

// A dot on FMAs: the operands are loaded directly in the accumulator's
// dot-operand layouts; the loop-carried accumulator keeps its layout.
// CHECK-DAG: #[[ACC:.*]] = #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
// CHECK-DAG: #[[A:.*]] = #ttile.dot_operand<opIdx = 0, parent = #[[ACC]], kWidth = 1>
// CHECK-DAG: #[[B:.*]] = #ttile.dot_operand<opIdx = 1, parent = #[[ACC]], kWidth = 1>
// CHECK-LABEL: func.func @matmul
// CHECK: ttile.range {{.*}} -> (tensor<32x32xf32, #[[ACC]]>)
// CHECK: ttile.load {{.*}} -> tensor<32x16xf32, #[[A]]>
// CHECK: ttile.load {{.*}} -> tensor<16x32xf32, #[[B]]>
// CHECK: ttile.dot {{.*}} -> tensor<32x32xf32, #[[ACC]]>
// CHECK-NOT: convert_layout
func.func @matmul(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>,
                  %k: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %acc = ttile.range %kk = %c0 to %k step %c16
      iter_args(%a0 = %zero) -> (tensor<32x32xf32>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xf32> -> tensor<32x16xf32>
    %b = ttile.load %B[%kk, %c0] : memref<?x?xf32> -> tensor<16x32xf32>
    %a1 = ttile.dot %a, %b, %a0 : tensor<32x16xf32>, tensor<16x32xf32> -> tensor<32x32xf32>
    ttile.yield %a1 : tensor<32x32xf32>
  }
  ttile.store %acc, %C[%c0, %c0] : tensor<32x32xf32>, memref<?x?xf32>
  return
}

// -----

// The online softmax expands into tile ops; the running row maximum and
// sum (initialized by constants) take the layout the loop computes them in.
// CHECK-DAG: #[[P:.*]] = #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
// CHECK-DAG: #[[ROW:.*]] = #ttile.slice<dim = 1, parent = #[[P]]>
// CHECK-LABEL: func.func @online_softmax
// CHECK: ttile.range {{.*}} -> (tensor<32xf32, #[[ROW]]>, tensor<32xf32, #[[ROW]]>)
// CHECK: ttile.reduce max {{.*}} -> tensor<32xf32, #[[ROW]]>
// CHECK: math.exp {{.*}} : tensor<32x32xf32, #[[P]]>
// CHECK: ttile.reduce sum {{.*}} -> tensor<32xf32, #[[ROW]]>
// CHECK: arith.maximumf {{.*}} : tensor<32xf32, #[[ROW]]>
// CHECK-NOT: softmax_online
// CHECK-NOT: convert_layout
func.func @online_softmax(%S: memref<?x?xf32>, %O: memref<?xf32>, %n: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %minf = arith.constant dense<0xFF800000> : tensor<32xf32>
  %zero = arith.constant dense<0.0> : tensor<32xf32>
  %r:2 = ttile.range %j = %c0 to %n step %c32
      iter_args(%m = %minf, %l = %zero) -> (tensor<32xf32>, tensor<32xf32>) {
    %s = ttile.load %S[%c0, %j] {padding = 0xFF800000 : f32} : memref<?x?xf32> -> tensor<32x32xf32>
    %p, %mc, %lc = ttile.softmax_online %s : tensor<32x32xf32> -> tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32>
    %m2 = arith.maximumf %m, %mc : tensor<32xf32>
    %a = arith.subf %m, %m2 : tensor<32xf32>
    %ea = math.exp %a : tensor<32xf32>
    %b = arith.subf %mc, %m2 : tensor<32xf32>
    %eb = math.exp %b : tensor<32xf32>
    %la = arith.mulf %l, %ea : tensor<32xf32>
    %lb = arith.mulf %lc, %eb : tensor<32xf32>
    %l2 = arith.addf %la, %lb : tensor<32xf32>
    ttile.yield %m2, %l2 : tensor<32xf32>, tensor<32xf32>
  }
  %lse0 = math.log %r#1 : tensor<32xf32>
  %lse = arith.addf %lse0, %r#0 : tensor<32xf32>
  ttile.store %lse, %O[%c0] : tensor<32xf32>, memref<?xf32>
  return
}

// -----

// softmax_online feeding softmax_accumulate (a FlashAttention step) fuse:
// the probabilities are powers of two against the new running max, and the
// product accumulates into the rescaled output (one dot, no second factor).
// CHECK-LABEL: func.func @flash_step
// CHECK: ttile.range
// CHECK: ttile.reduce max
// CHECK: arith.maximumf
// CHECK: math.exp2 {{.*}} : tensor<32x32xf32
// CHECK: math.exp2 {{.*}} : tensor<32xf32
// CHECK: ttile.reduce sum
// CHECK: %[[SCALED:.*]] = arith.mulf {{.*}} : tensor<32x64xf32
// CHECK: ttile.dot {{.*}}, %[[SCALED]] :
// CHECK-NOT: ttile.dot
// CHECK-NOT: math.exp 
// CHECK: ttile.yield
func.func @flash_step(%S: memref<?x?xf32>, %V: memref<?x?xf32>,
                      %O: memref<?x?xf32>, %n: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %minf = arith.constant dense<0xFF800000> : tensor<32xf32>
  %zero = arith.constant dense<0.0> : tensor<32xf32>
  %zacc = arith.constant dense<0.0> : tensor<32x64xf32>
  %r:3 = ttile.range %j = %c0 to %n step %c32
      iter_args(%acc = %zacc, %m = %minf, %l = %zero)
      -> (tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>) {
    %s = ttile.load %S[%c0, %j] : memref<?x?xf32> -> tensor<32x32xf32>
    %v = ttile.load %V[%j, %c0] : memref<?x?xf32> -> tensor<32x64xf32>
    %p, %mc, %lc = ttile.softmax_online %s : tensor<32x32xf32> -> tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32>
    %acc2, %m2, %l2 = ttile.softmax_accumulate %acc, %m, %l, %p, %v, %mc, %lc
        : tensor<32x64xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x64xf32>
    ttile.yield %acc2, %m2, %l2 : tensor<32x64xf32>, tensor<32xf32>, tensor<32xf32>
  }
  ttile.store %r#0, %O[%c0, %c0] : tensor<32x64xf32>, memref<?x?xf32>
  return
}

// -----

// 16-bit scores keep the unfused expansion (log2(e) and a multiply-add in
// f16 would lose the exponent's accuracy).
// CHECK-LABEL: func.func @flash_step_f16
// CHECK-NOT: math.exp2
// CHECK: math.exp {{.*}} : tensor<32x32xf16
// CHECK: ttile.yield
func.func @flash_step_f16(%S: memref<?x?xf16>, %V: memref<?x?xf16>,
                           %O: memref<?x?xf16>, %n: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %minf = arith.constant dense<0xFC00> : tensor<32xf16>
  %zero = arith.constant dense<0.0> : tensor<32xf16>
  %zacc = arith.constant dense<0.0> : tensor<32x64xf16>
  %r:3 = ttile.range %j = %c0 to %n step %c32
      iter_args(%acc = %zacc, %m = %minf, %l = %zero)
      -> (tensor<32x64xf16>, tensor<32xf16>, tensor<32xf16>) {
    %s = ttile.load %S[%c0, %j] : memref<?x?xf16> -> tensor<32x32xf16>
    %v = ttile.load %V[%j, %c0] : memref<?x?xf16> -> tensor<32x64xf16>
    %p, %mc, %lc = ttile.softmax_online %s : tensor<32x32xf16> -> tensor<32x32xf16>, tensor<32xf16>, tensor<32xf16>
    %acc2, %m2, %l2 = ttile.softmax_accumulate %acc, %m, %l, %p, %v, %mc, %lc
        : tensor<32x64xf16>, tensor<32xf16>, tensor<32x32xf16>, tensor<32x64xf16>
    ttile.yield %acc2, %m2, %l2 : tensor<32x64xf16>, tensor<32xf16>, tensor<32xf16>
  }
  ttile.store %r#0, %O[%c0, %c0] : tensor<32x64xf16>, memref<?x?xf16>
  return
}

// -----

// A bf16 dot into f32 goes to the tensor cores: an mma.sync accumulator
// whose 8 warps split 128 x 128 as 4 x 2 (the least operand traffic per
// warp), operands in its fragment layouts.
// CHECK-DAG: #[[MMA:.*]] = #ttile.mma<version = 2, warpsPerCTA = [4, 2], instrShape = [16, 8, 16]>
// CHECK-DAG: #[[A:.*]] = #ttile.dot_operand<opIdx = 0, parent = #[[MMA]], kWidth = 2>
// CHECK-DAG: #[[B:.*]] = #ttile.dot_operand<opIdx = 1, parent = #[[MMA]], kWidth = 2>
// CHECK-LABEL: func.func @gemm_bf16
// CHECK: ttile.range {{.*}} -> (tensor<128x128xf32, #[[MMA]]>)
// CHECK: ttile.dot {{.*}} : tensor<128x32xbf16, #[[A]]>, tensor<32x128xbf16, #[[B]]> -> tensor<128x128xf32, #[[MMA]]>
func.func @gemm_bf16(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xf32>, %k: index)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %c32
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xbf16> -> tensor<128x32xbf16>
    %b = ttile.load %B[%kk, %c0] : memref<?x?xbf16> -> tensor<32x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x32xbf16>, tensor<32x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  ttile.store %acc, %C[%c0, %c0] : tensor<128x128xf32>, memref<?x?xf32>
  return
}

// -----

// A product whose rows meet a softmax puts the warps along M only (each
// warp owns whole rows, statistics stay in the warp), and a loop-invariant
// operand is converted once, before the loop.
// CHECK-DAG: #[[MMA:.*]] = #ttile.mma<version = 2, warpsPerCTA = [4, 1], instrShape = [16, 8, 16]>
// CHECK-DAG: #[[ROW:.*]] = #ttile.slice<dim = 1, parent = #[[MMA]]>
// CHECK-LABEL: func.func @scores
// CHECK: %[[Q:.*]] = ttile.convert_layout
// CHECK: ttile.range
// CHECK: ttile.dot %[[Q]], {{.*}} -> tensor<64x64xf32, #[[MMA]]>
// CHECK: ttile.reduce max {{.*}} -> tensor<64xf32, #[[ROW]]>
func.func @scores(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                  %O: memref<?xf32>, %n: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %minf = arith.constant dense<0xFF800000> : tensor<64xf32>
  %q = ttile.load %Q[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %r = ttile.range %j = %c0 to %n step %c64 iter_args(%m = %minf) -> (tensor<64xf32>) {
    %k = ttile.load %K[%c0, %j] : memref<?x?xbf16> -> tensor<64x64xbf16>
    %s = ttile.dot %q, %k, %zero : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    %mx = ttile.reduce max %s {dim = 1 : i32} : tensor<64x64xf32> -> tensor<64xf32>
    %m2 = arith.maximumf %m, %mx : tensor<64xf32>
    ttile.yield %m2 : tensor<64xf32>
  }
  ttile.store %r, %O[%c0] : tensor<64xf32>, memref<?xf32>
  return
}

// -----

// A select in a loop between loaded data and a mask built from a loop
// invariant (a row's label spread over the block) takes the loaded data's
// layout: the invariant is converted once, before the loop, and the
// carried tile stays in the load layout (no shared-memory move per block).
// CHECK-DAG: #[[B:.*]] = #ttile.blocked<sizePerThread = [1, 8], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4], order = [1, 0]>
// CHECK-LABEL: func.func @select_loaded_in_loop
// CHECK: ttile.range {{.*}} -> (tensor<1x1024xf32, #[[B]]>)
// CHECK-NOT: ttile.convert_layout
// CHECK: arith.select {{.*}} : tensor<1x1024xi1, #[[B]]>, tensor<1x1024xf32, #[[B]]>
// CHECK-NOT: ttile.convert_layout
// CHECK: ttile.yield
func.func @select_loaded_in_loop(%X: memref<?x?xbf16>, %L: memref<?xi32>,
                                 %O: memref<?x?xf32>, %n: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant dense<0.0> : tensor<1x1024xf32>
  %lab = ttile.load %L[%c0] : memref<?xi32> -> tensor<1xi32>
  %labb = ttile.broadcast %lab {dims = array<i64: 0>} : tensor<1xi32> -> tensor<1x1024xi32>
  %cols = ttile.iota {dim = 1 : i32} : tensor<1x1024xi32>
  %target = arith.subi %labb, %cols : tensor<1x1024xi32>
  %r = ttile.range %c = %c0 to %n step %c1024
      iter_args(%picked = %zero) -> (tensor<1x1024xf32>) {
    %x16 = ttile.load %X[%c0, %c] : memref<?x?xbf16> -> tensor<1x1024xbf16>
    %x = ttile.cast %x16 : tensor<1x1024xbf16> -> tensor<1x1024xf32>
    %ci = arith.index_cast %c : index to i32
    %cs = tensor.splat %ci : tensor<1x1024xi32>
    %hit = arith.cmpi eq, %target, %cs : tensor<1x1024xi32>
    %p = arith.select %hit, %x, %picked : tensor<1x1024xi1>, tensor<1x1024xf32>
    ttile.yield %p : tensor<1x1024xf32>
  }
  ttile.store %r, %O[%c0, %c0] : tensor<1x1024xf32>, memref<?x?xf32>
  return
}

// -----

// A row statistic loaded once and broadcast twice in a loop is loaded in
// the slice layout both broadcasts need: no conversion at all.
// CHECK-DAG: #[[B:.*]] = #ttile.blocked<sizePerThread = [1, 8], {{.*}}>
// CHECK-DAG: #[[S:.*]] = #ttile.slice<dim = 1, parent = #[[B]]>
// CHECK-LABEL: func.func @statistic_broadcast_twice
// CHECK-NOT: ttile.convert_layout
// CHECK: ttile.load %{{.*}} : memref<?xf32> -> tensor<1xf32, #[[S]]>
// CHECK-NOT: ttile.convert_layout
func.func @statistic_broadcast_twice(%X: memref<?x?xbf16>, %R: memref<?xf32>,
                                     %Y: memref<?x?xf32>, %n: index)
    attributes {ttile.kernel, ttile.num_warps = 16 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  ttile.range %r = %c0 to %n step %c1 {
    %x16 = ttile.load %X[%r, %c0] : memref<?x?xbf16> -> tensor<1x4096xbf16>
    %x = ttile.cast %x16 : tensor<1x4096xbf16> -> tensor<1x4096xf32>
    %s = ttile.load %R[%r] : memref<?xf32> -> tensor<1xf32>
    %sb = ttile.broadcast %s {dims = array<i64: 0>} : tensor<1xf32> -> tensor<1x4096xf32>
    %a = arith.mulf %x, %sb : tensor<1x4096xf32>
    %sb2 = ttile.broadcast %s {dims = array<i64: 0>} : tensor<1xf32> -> tensor<1x4096xf32>
    %b = arith.mulf %a, %sb2 : tensor<1x4096xf32>
    ttile.store %b, %Y[%r, %c0] : tensor<1x4096xf32>, memref<?x?xf32>
    ttile.yield
  }
  return
}
