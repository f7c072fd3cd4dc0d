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
