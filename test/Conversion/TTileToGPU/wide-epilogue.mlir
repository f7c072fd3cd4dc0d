// REQUIRES: ptxas
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_90a features=+ptx80" -o %t.mlir
// RUN: %extract_ptx %t.mlir %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s

// A 128x256 GEMM tile (128 f32 accumulators a consumer thread) whose
// epilogue adds a bias and takes a GELU (the generator's kernel for
// gelu(x @ w + b), bf16). The thread-level lowering writes each tile op as
// one op per element; with every element's chain moved next to its store
// (-tessera-gpu-sink-to-uses) and each 16-byte store taken on its own
// uniform branch, a chain's values die at their store and the consumers'
// 200 registers hold the accumulator and the epilogue without spilling
// (before: 18 bytes of spill stores; with a second output, 346).
// CHECK: Compiling entry function 'bias_gelu_128x256' for 'sm_90a'
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
module {
  func.func @bias_gelu_128x256(%arg0: memref<?x?xbf16>, %arg1: memref<?x?xbf16>, %arg2: memref<?xbf16>, %arg3: memref<?x?xbf16>) attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
    %0 = ttile.program_id x
    %1 = ttile.num_programs x
    %c2048 = arith.constant 2048 : index
    ttile.range %arg4 = %0 to %c2048 step %1 {
      %c0 = arith.constant 0 : index
      %c128 = arith.constant 128 : index
      %2 = arith.divsi %arg4, %c128 : index
      %c8 = arith.constant 8 : index
      %3 = arith.muli %2, %c8 : index
      %c128_0 = arith.constant 128 : index
      %4 = arith.subi %c128_0, %3 : index
      %c8_1 = arith.constant 8 : index
      %5 = arith.minsi %4, %c8_1 : index
      %c128_2 = arith.constant 128 : index
      %6 = arith.remsi %arg4, %c128_2 : index
      %7 = arith.remsi %6, %5 : index
      %8 = arith.addi %3, %7 : index
      %9 = arith.divsi %6, %5 : index
      %c128_3 = arith.constant 128 : index
      %10 = arith.muli %8, %c128_3 : index
      %c256 = arith.constant 256 : index
      %11 = arith.muli %9, %c256 : index
      %cst = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
      %c1024 = arith.constant 1024 : index
      %c0_4 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %12 = ttile.load %arg2[%11] : memref<?xbf16> -> tensor<256xbf16>
      %13 = ttile.range %arg5 = %c0_4 to %c1024 step %c64 stages 4 iter_args(%arg6 = %cst) -> (tensor<128x256xf32>) {
        %30 = ttile.load %arg0[%10, %arg5] : memref<?x?xbf16> -> tensor<128x64xbf16>
        %31 = ttile.load %arg1[%arg5, %11] : memref<?x?xbf16> -> tensor<64x256xbf16>
        %32 = ttile.dot %30, %31, %arg6 : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
        ttile.yield %32 : tensor<128x256xf32>
      } {ttile.deepest_ring}
      %14 = ttile.cast %12 : tensor<256xbf16> -> tensor<256xf32>
      %15 = ttile.broadcast %14 {dims = array<i64: 1>} : tensor<256xf32> -> tensor<128x256xf32>
      %16 = arith.addf %13, %15 : tensor<128x256xf32>
      %17 = arith.mulf %16, %16 : tensor<128x256xf32>
      %cst_6 = arith.constant dense<0.0712890625> : tensor<128x256xf32>
      %18 = arith.mulf %17, %cst_6 : tensor<128x256xf32>
      %cst_8 = arith.constant dense<1.593750e+00> : tensor<128x256xf32>
      %19 = arith.addf %18, %cst_8 : tensor<128x256xf32>
      %20 = arith.mulf %16, %19 : tensor<128x256xf32>
      %21 = math.absf %20 : tensor<128x256xf32>
      %22 = arith.negf %21 : tensor<128x256xf32>
      %23 = math.exp %22 : tensor<128x256xf32>
      %cst_10 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
      %24 = arith.cmpf oge, %20, %cst_10 : tensor<128x256xf32>
      %cst_12 = arith.constant dense<1.000000e+00> : tensor<128x256xf32>
      %25 = arith.select %24, %cst_12, %23 : tensor<128x256xi1>, tensor<128x256xf32>
      %cst_13 = arith.constant dense<1.000000e+00> : tensor<128x256xf32>
      %26 = arith.addf %23, %cst_13 : tensor<128x256xf32>
      %27 = arith.divf %25, %26 fastmath<afn> : tensor<128x256xf32>
      %28 = arith.mulf %16, %27 : tensor<128x256xf32>
      %29 = ttile.cast %28 : tensor<128x256xf32> -> tensor<128x256xbf16>
      ttile.store %29, %arg3[%10, %11] : tensor<128x256xbf16>, memref<?x?xbf16>
    }
    return
  }
}
