// Casts to and from fp8 in a blocked layout: a saturating cast clamps in
// f32 to the target's largest finite value (448 for e4m3, 57344 for e5m2)
// before it rounds; the GPU pipeline expands fp8 conversions into integer
// code on the bit patterns (LLVM has no fp8 types), for sm_80 and sm_90a,
// and leaves bf16 conversions to cvt.
// RUN: tessera-opt %s --tessera-ttile-assign-layouts --tessera-convert-ttile-to-gpu --canonicalize --cse | FileCheck %s --check-prefix=GPU
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_80 features=+ptx80" -o %t.80.mlir
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_90a features=+ptx80" -o %t.90.mlir
// RUN: %extract_ptx %t.80.mlir %t.80.ptx && %extract_ptx %t.90.mlir %t.90.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.90.ptx
// RUN: %ptxas -arch=sm_80 %t.80.ptx -o %t.80.cubin
// RUN: %ptxas -arch=sm_90a %t.90.ptx -o %t.90.cubin

// An explicit rounding through a narrower type stays (the kernel's float
// arithmetic may contract into fmas; conversions take no contract flag,
// with which the folder would drop the pair): bf16, then e4m3 of the
// bf16 value (its exact widening to f32 folds away), then back to f32.
// GPU-LABEL: gpu.func @rounds
// GPU: %[[T:.*]] = arith.truncf %{{.*}} : f32 to bf16
// GPU: %[[Q:.*]] = arith.truncf %[[T]] : bf16 to f8E4M3FN
// GPU: arith.extf %[[Q]] : f8E4M3FN to f32
// PTX-LABEL: .visible .entry rounds(
// PTX: cvt.rn.bf16.f32
func.func @rounds(%X: memref<?x?xf32>, %Y: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<4x128xf32>
  %b = ttile.cast %x : tensor<4x128xf32> -> tensor<4x128xbf16>
  %y = ttile.cast %b : tensor<4x128xbf16> -> tensor<4x128xf32>
  %q = ttile.cast %y : tensor<4x128xf32> -> tensor<4x128xf8E4M3FN>
  %z = ttile.cast %q : tensor<4x128xf8E4M3FN> -> tensor<4x128xf32>
  ttile.store %z, %Y[%c0, %c0] : tensor<4x128xf32>, memref<?x?xf32>
  return
}

// GPU-LABEL: gpu.func @quantize
// GPU-DAG: %[[HI:.*]] = arith.constant 4.480000e+02 : f32
// GPU-DAG: %[[LO:.*]] = arith.constant -4.480000e+02 : f32
// GPU: %[[C:.*]] = arith.minimumf %{{.*}}, %[[HI]] {{.*}}: f32
// GPU: %[[S:.*]] = arith.maximumf %[[C]], %[[LO]] {{.*}}: f32
// GPU: arith.truncf %[[S]] : f32 to f8E4M3FN
// GPU: arith.truncf %{{.*}} : f32 to f8E5M2
// GPU: arith.truncf %{{.*}} : f32 to bf16
// PTX-LABEL: .visible .entry quantize(
// PTX: cvt.rn.bf16.f32
// PTX-NOT: cvt.rn.satfinite
// PTX: st.global.b8
func.func @quantize(%X: memref<?x?xf32>, %Q: memref<?x?xf8E4M3FN>,
                    %R: memref<?x?xf8E5M2>, %B: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<4x128xf32>
  %q = ttile.cast %x {saturate} : tensor<4x128xf32> -> tensor<4x128xf8E4M3FN>
  ttile.store %q, %Q[%c0, %c0] : tensor<4x128xf8E4M3FN>, memref<?x?xf8E4M3FN>
  %r = ttile.cast %x : tensor<4x128xf32> -> tensor<4x128xf8E5M2>
  ttile.store %r, %R[%c0, %c0] : tensor<4x128xf8E5M2>, memref<?x?xf8E5M2>
  %b = ttile.cast %x : tensor<4x128xf32> -> tensor<4x128xbf16>
  ttile.store %b, %B[%c0, %c0] : tensor<4x128xbf16>, memref<?x?xbf16>
  return
}

// From fp8 in memory: extf expands to the exponent's re-bias and the
// subnormals' scaling.
// GPU-LABEL: gpu.func @dequantize
// GPU: arith.extf %{{.*}} : f8E4M3FN to f32
// PTX-LABEL: .visible .entry dequantize(
// PTX: ld.global
func.func @dequantize(%Q: memref<?x?xf8E4M3FN>, %Y: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %q = ttile.load %Q[%c0, %c0] : memref<?x?xf8E4M3FN> -> tensor<4x128xf8E4M3FN>
  %y = ttile.cast %q : tensor<4x128xf8E4M3FN> -> tensor<4x128xf32>
  ttile.store %y, %Y[%c0, %c0] : tensor<4x128xf32>, memref<?x?xf32>
  return
}

// f16 to bf16 (one width): through f32, which holds both.
// GPU-LABEL: gpu.func @half_to_bfloat
// GPU: %[[W:.*]] = arith.extf %{{.*}} : f16 to f32
// GPU: arith.truncf %[[W]] : f32 to bf16
func.func @half_to_bfloat(%X: memref<?x?xf16>, %Y: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf16> -> tensor<4x128xf16>
  %y = ttile.cast %x : tensor<4x128xf16> -> tensor<4x128xbf16>
  ttile.store %y, %Y[%c0, %c0] : tensor<4x128xbf16>, memref<?x?xbf16>
  return
}

// Stochastic rounding: each element's Philox 4x32-10 block (ten rounds of
// two 32x32->64 products, one mul.wide.u32 each) under the key (seed, 0),
// its counter (place in the tile, program, 3, 0); a 24-bit draw in f32
// against the distance to the neighbour toward zero over the gap. To
// e4m3 with saturation, and from bf16 to e5m2.
// GPU-LABEL: gpu.func @stochastic
// GPU-DAG: arith.constant 3528531795 : i64
// GPU-DAG: arith.constant 5.96046448E-8 : f32
// GPU: gpu.block_id  x
// GPU: arith.muli %{{.*}} : i64
// GPU: arith.uitofp %{{.*}} : i32 to f32
// GPU: arith.truncf %{{.*}} : f32 to f8E4M3FN
// GPU: arith.cmpf olt
// GPU: arith.extf %{{.*}} : bf16 to f32
// GPU: arith.truncf %{{.*}} : f32 to f8E5M2
// PTX-LABEL: .visible .entry stochastic(
// PTX: mul.wide.u32
// PTX: st.global.b8
func.func @stochastic(%X: memref<?x?xf32>, %B: memref<?x?xbf16>,
                      %Q: memref<?x?xf8E4M3FN>, %R: memref<?x?xf8E5M2>,
                      %seed: i32)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<4x128xf32>
  %q = ttile.cast %x seed %seed {stochastic_round, saturate} : tensor<4x128xf32> -> tensor<4x128xf8E4M3FN>
  ttile.store %q, %Q[%c0, %c0] : tensor<4x128xf8E4M3FN>, memref<?x?xf8E4M3FN>
  %b = ttile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<4x128xbf16>
  %r = ttile.cast %b seed %seed {stochastic_round} : tensor<4x128xbf16> -> tensor<4x128xf8E5M2>
  ttile.store %r, %R[%c0, %c0] : tensor<4x128xf8E5M2>, memref<?x?xf8E5M2>
  return
}
