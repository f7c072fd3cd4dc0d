// RUN: tessera-opt %s --tessera-convert-ttile-to-gpu --split-input-file --verify-diagnostics

func.func @no_layout(%X: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{cannot lower tile 'tensor<4x64xf32>': the tile has no layout (run -tessera-ttile-assign-layouts first)}}
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<4x64xf32>
  return
}

// -----

#b8 = #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [8, 1], order = [1, 0]>
func.func @warps_differ(%X: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{is spread over 8 warps but the kernel has ttile.num_warps = 4}}
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<8x128xf32, #b8>
  return
}

// -----

#b = #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]>
func.func @saturate_to_int(%X: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<4x128xf32, #b>
  // expected-error @below {{saturate clamps a float to a float type's finite range; got 'f32' -> 'i8'}}
  %y = ttile.cast %x {saturate} : tensor<4x128xf32, #b> -> tensor<4x128xi8, #b>
  return
}

// -----

#b = #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]>
func.func @no_rule(%X: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<4x128xf32, #b>
  // expected-error @below {{the Tile IR GPU lowering has no rule for 'tensor.extract' on tiles}}
  %e = tensor.extract %x[%c0, %c0] : tensor<4x128xf32, #b>
  return
}

// -----

#mma = #ttile.mma<version = 3, warpsPerCTA = [4, 1], instrShape = [64, 64, 16]>
func.func @mma_tiles(%X: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  // expected-error @below {{a wgmma tile must be whole 64 x N instruction tiles per warpgroup}}
  %z = arith.constant dense<0.0> : tensor<32x64xf32, #mma>
  return
}

// -----

#sh = #ttile.shared<swizzle = 128, order = [1, 0]>
func.func @shared_in_registers(%X: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16, #sh>
  // expected-error @below {{the tile lives in shared memory: only ttile.load (from global memory) and wgmma dots take it}}
  %y = arith.addf %x, %x : tensor<64x64xbf16, #sh>
  return
}

// -----

#sh = #ttile.shared<swizzle = 128, order = [1, 0]>
func.func @shared_of_f64(%X: memref<?x?xf64>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{a #ttile.shared tile is loaded from a 2-d global memref of 8-, 16- or 32-bit elements}}
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf64> -> tensor<64x64xf64, #sh>
  return
}

// -----

// 4 stages of 256 x 128 and 128 x 256 bf16 tiles: 512 KiB.
#sh = #ttile.shared<swizzle = 128, order = [1, 0]>
#mma = #ttile.mma<version = 3, warpsPerCTA = [8, 1], instrShape = [64, 256, 16]>
// expected-error @below {{kernel 'too_much_shared' needs 525312 bytes of shared memory (524288 for its shared tiles and their stages, 0 for its layout conversions and reductions, 1024 for alignment); a block has at most 232448}}
func.func @too_much_shared(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                           %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<256x256xf32, #mma>
  %acc = ttile.range %kk = %c0 to %k step %c128 stages 4
      iter_args(%a0 = %zero) -> (tensor<256x256xf32, #mma>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xbf16> -> tensor<256x128xbf16, #sh>
    %b = ttile.load %B[%kk, %c0] : memref<?x?xbf16> -> tensor<128x256xbf16, #sh>
    %a1 = ttile.dot %a, %b, %a0 : tensor<256x128xbf16, #sh>, tensor<128x256xbf16, #sh> -> tensor<256x256xf32, #mma>
    ttile.yield %a1 : tensor<256x256xf32, #mma>
  }
  return
}

// -----

#b = #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]>
func.func @odd_tile(%X: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @below {{the GPU lowering needs power-of-two tile dims}}
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<4x96xf32, #b>
  return
}

// -----

// Layout conversions of big tiles need more shared memory than a block
// has.
#row = #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]>
#col = #ttile.blocked<sizePerThread = [4, 1], threadsPerWarp = [32, 1], warpsPerCTA = [1, 4], order = [0, 1]>
// expected-error @below {{kernel 'big_convert' needs 263168 bytes of shared memory (0 for its shared tiles and their stages, 262144 for its layout conversions and reductions, 1024 for alignment); a block has at most 232448}}
func.func @big_convert(%X: memref<?x?xf32>, %Y: memref<?x?xf32>, %Z: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<256x256xf32, #row>
  %y = ttile.convert_layout %x : tensor<256x256xf32, #row> -> tensor<256x256xf32, #col>
  ttile.store %y, %Y[%c0, %c0] : tensor<256x256xf32, #col>, memref<?x?xf32>
  ttile.store %x, %Z[%c0, %c0] : tensor<256x256xf32, #row>, memref<?x?xf32>
  return
}
