// RUN: tessera-opt %s --tessera-math-approximations=isa=avx512 | FileCheck %s --check-prefix=AVX512
// RUN: tessera-opt %s --tessera-math-approximations=isa=generic | FileCheck %s --check-prefix=GENERIC
// RUN: not tessera-opt %s --tessera-math-approximations=isa=sse9 2>&1 | FileCheck %s --check-prefix=BAD

// 16 lanes of f32 on AVX-512: clamp to [-104, 89], k = roundeven(x log2 e),
// two-FMA reduction, seven FMAs of polynomial, and vscalefps for 2^k.
// AVX512-LABEL: func.func @vector16
// AVX512: %[[LO:.*]] = arith.constant dense<-1.040000e+02>
// AVX512: %[[HI:.*]] = arith.constant dense<8.900000e+01>
// AVX512: %[[BELOW:.*]] = arith.cmpf ogt, %[[LO]], %arg0
// AVX512: arith.select %[[BELOW]], %[[LO]], %arg0
// AVX512: math.roundeven
// AVX512-COUNT-8: math.fma
// AVX512: %[[P:.*]] = math.fma
// AVX512: x86vector.avx512.mask.scalef %[[P]], %{{.*}}, %[[P]]
// AVX512-NOT: math.exp
// GENERIC-LABEL: func.func @vector16
// GENERIC-NOT: x86vector
// GENERIC: arith.fptosi {{.*}} : vector<16xf32> to vector<16xi32>
// GENERIC: arith.shrsi
// GENERIC-COUNT-2: arith.bitcast {{.*}} : vector<16xi32> to vector<16xf32>
// GENERIC-NOT: math.exp
// GENERIC-LABEL: func.func @scalar
func.func @vector16(%x: vector<16xf32>) -> vector<16xf32> {
  %y = math.exp %x : vector<16xf32>
  return %y : vector<16xf32>
}

// Scalars and other widths: 2^k as two powers of two from exponent bits,
// which give the same values without the AVX-512 instruction.
// AVX512-LABEL: func.func @scalar
// AVX512-NOT: x86vector
// AVX512: arith.shrsi
// AVX512-COUNT-2: arith.bitcast
// AVX512-NOT: math.exp
func.func @scalar(%x: f32) -> f32 {
  %y = math.exp %x : f32
  return %y : f32
}

// AVX512-LABEL: func.func @vector8
// AVX512-NOT: x86vector
// AVX512: arith.bitcast {{.*}} : vector<8xi32> to vector<8xf32>
func.func @vector8(%x: vector<8xf32>) -> vector<8xf32> {
  %y = math.exp %x : vector<8xf32>
  return %y : vector<8xf32>
}

// f64 keeps libm.
// AVX512-LABEL: func.func @double
// AVX512: math.exp
func.func @double(%x: f64) -> f64 {
  %y = math.exp %x : f64
  return %y : f64
}

// BAD: isa must be host, avx512 or generic, not 'sse9'
