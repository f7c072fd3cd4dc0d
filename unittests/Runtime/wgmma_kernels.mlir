// Tile IR GEMMs that run on Hopper's warpgroup MMAs (compiled for sm_90a):
// both operands go through shared memory (cp.async into the swizzled
// layouts wgmma reads), f32 results. Used by TileKernelsTest.cpp.

// 128 x 128 blocks on two warpgroups along M, K in steps of 64 through a
// ring of three shared buffers per operand.
func.func @wgmma_128x128x64_s3(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
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
  %acc = ttile.range %kk = %c0 to %k step %c64 stages 3
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  ttile.store %acc, %C[%r, %c] : tensor<128x128xf32>, memref<?x?xf32>
  return
}

// 64 x 256 blocks on one warpgroup (one m64n256 instruction per K step of
// 16), K steps of 32 (64-byte swizzled A rows), double-buffered.
func.func @wgmma_64x256x32_s2(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                              %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %c64 : index
  %c = arith.muli %j, %c256 : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x256xf32>
  %acc = ttile.range %kk = %c0 to %k step %c32 stages 2
      iter_args(%a0 = %zero) -> (tensor<64x256xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<64x32xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<32x256xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<64x32xbf16>, tensor<32x256xbf16> -> tensor<64x256xf32>
    ttile.yield %a1 : tensor<64x256xf32>
  }
  ttile.store %acc, %C[%r, %c] : tensor<64x256xf32>, memref<?x?xf32>
  return
}

// 64 x 128 blocks on two warpgroups side by side along N (64 columns
// each), K steps of 16 (32-byte swizzled A rows), no stages: every step
// copies, waits, then multiplies.
func.func @wgmma_64x128x16_n2(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                              %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %c64 : index
  %c = arith.muli %j, %c128 : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %c16
      iter_args(%a0 = %zero) -> (tensor<64x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<64x16xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<16x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<64x16xbf16>, tensor<16x128xbf16> -> tensor<64x128xf32>
    ttile.yield %a1 : tensor<64x128xf32>
  }
  ttile.store %acc, %C[%r, %c] : tensor<64x128xf32>, memref<?x?xf32>
  return
}

// B given transposed (Bt is N x K, K contiguous: wgmma's K-major B), three
// stages.
func.func @wgmma_nt_128x128x64_s3(%A: memref<?x?xbf16>, %Bt: memref<?x?xbf16>,
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
  %acc = ttile.range %kk = %c0 to %k step %c64 stages 3
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %bt = ttile.load %Bt[%c, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.transpose %bt {permutation = array<i64: 1, 0>} : tensor<128x64xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  ttile.store %acc, %C[%r, %c] : tensor<128x128xf32>, memref<?x?xf32>
  return
}

// fp8 (e4m3) operands, f32 accumulation: A is M x K, Bt is N x K (wgmma
// takes fp8 B K-contiguous only); K in steps of 128 (128-byte rows), two
// warpgroups along N.
func.func @wgmma_fp8_64x256x128_s3(%A: memref<?x?xf8E4M3FN>,
                                   %Bt: memref<?x?xf8E4M3FN>,
                                   %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %c64 : index
  %c = arith.muli %j, %c256 : index
  %k = memref.dim %A, %c1 : memref<?x?xf8E4M3FN>
  %zero = arith.constant dense<0.0> : tensor<64x256xf32>
  %acc = ttile.range %kk = %c0 to %k step %c128 stages 3
      iter_args(%a0 = %zero) -> (tensor<64x256xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xf8E4M3FN> -> tensor<64x128xf8E4M3FN>
    %bt = ttile.load %Bt[%c, %kk] : memref<?x?xf8E4M3FN> -> tensor<256x128xf8E4M3FN>
    %b = ttile.transpose %bt {permutation = array<i64: 1, 0>} : tensor<256x128xf8E4M3FN> -> tensor<128x256xf8E4M3FN>
    %a1 = ttile.dot %a, %b, %a0 : tensor<64x128xf8E4M3FN>, tensor<128x256xf8E4M3FN> -> tensor<64x256xf32>
    ttile.yield %a1 : tensor<64x256xf32>
  }
  ttile.store %acc, %C[%r, %c] : tensor<64x256xf32>, memref<?x?xf32>
  return
}
