// RUN: tessera-opt %s --tessera-expand-small-floats --canonicalize | FileCheck %s

// Arithmetic on fp8 runs in f32 and rounds back after every op.
// CHECK-LABEL: func.func @chain
// CHECK-NOT: arith.addf {{.*}} : f8E4M3FN
// CHECK: %[[M:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK: arith.bitcast %[[M]] : f32 to i32
// CHECK: arith.addf %{{.+}}, %{{.+}} : f32
// CHECK-NOT: arith.truncf
// CHECK-NOT: arith.extf
// CHECK: return %{{.+}} : f8E4M3FN
func.func @chain(%a: f8E4M3FN, %b: f8E4M3FN) -> f8E4M3FN {
  %m = arith.mulf %a, %b : f8E4M3FN
  %s = arith.addf %m, %a : f8E4M3FN
  return %s : f8E4M3FN
}

// Vectors expand element-wise with splat constants.
// CHECK-LABEL: func.func @vector_trunc
// CHECK: arith.bitcast %{{.+}} : vector<8xf32> to vector<8xi32>
// CHECK: math.roundeven %{{.+}} : vector<8xf32>
// CHECK: arith.trunci %{{.+}} : vector<8xi32> to vector<8xi8>
// CHECK: arith.bitcast %{{.+}} : vector<8xi8> to vector<8xf8E5M2>
func.func @vector_trunc(%x: vector<8xf32>) -> vector<8xf8E5M2> {
  %y = arith.truncf %x : vector<8xf32> to vector<8xf8E5M2>
  return %y : vector<8xf8E5M2>
}

// Widening reads the bit fields; f64 results widen the f32 value.
// CHECK-LABEL: func.func @ext
// CHECK: arith.bitcast %{{.+}} : f8E4M3FN to i8
// CHECK: arith.extui %{{.+}} : i8 to i32
// CHECK: %[[F:.+]] = arith.bitcast %{{.+}} : i32 to f32
// CHECK: arith.extf %[[F]] : f32 to f64
func.func @ext(%x: f8E4M3FN) -> f64 {
  %y = arith.extf %x : f8E4M3FN to f64
  return %y : f64
}

// f64 -> bf16 (and f16) goes through f32 with round-to-odd: an inexact f32
// result with an even last bit moves one step toward x.
// CHECK-LABEL: func.func @f64_to_bf16
// CHECK: %[[F:.+]] = arith.truncf %{{.+}} : f64 to f32
// CHECK: %[[BACK:.+]] = arith.extf %[[F]] : f32 to f64
// CHECK: arith.cmpf one, %[[BACK]], %{{.+}} : f64
// CHECK: arith.bitcast %[[F]] : f32 to i32
// CHECK: %[[ODD:.+]] = arith.bitcast %{{.+}} : i32 to f32
// CHECK-NOT: arith.truncf %{{.+}} : f64 to bf16
func.func @f64_to_bf16(%x: f64) -> bf16 {
  %y = arith.truncf %x : f64 to bf16
  return %y : bf16
}

// A rounding mode other than to-nearest-even is left to LLVM.
// CHECK-LABEL: func.func @f64_to_bf16_toward_zero
// CHECK: arith.truncf %{{.+}} toward_zero : f64 to bf16
func.func @f64_to_bf16_toward_zero(%x: f64) -> bf16 {
  %y = arith.truncf %x toward_zero : f64 to bf16
  return %y : bf16
}
