// RUN: tessera-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// The host program's ops print and parse back.
// CHECK-LABEL: func.func @host
// CHECK: %[[B:.+]] = tsched.buffer offset 256 : memref<8x4xf32>
// CHECK: %[[V:.+]] = tsched.view %[[B]] : memref<8x4xf32> to memref<32xf32>
// CHECK: tsched.launch @k grid [2] (%arg0, %[[V]]) : memref<32xf32>, memref<32xf32>
func.func @k(%a: memref<?xf32>, %b: memref<?xf32>) attributes {ttile.kernel} {
  return
}
func.func @host(%x: memref<32xf32>) attributes {tsched.workspace = 384 : i64} {
  %b = tsched.buffer offset 256 : memref<8x4xf32>
  %v = tsched.view %b : memref<8x4xf32> to memref<32xf32>
  tsched.launch @k grid [2] (%x, %v) : memref<32xf32>, memref<32xf32>
  return
}
// Scalars follow the buffers; grids take up to three counts.
// CHECK-LABEL: func.func @with_scalars
// CHECK: tsched.launch @sk grid [2, 3] (%arg0) scalars [1.250000e-01 : f32, 7 : i32] : memref<32xf32>
func.func @sk(%a: memref<?xf32>, %x: f32, %n: i32) attributes {ttile.kernel} {
  return
}
func.func @with_scalars(%x: memref<32xf32>) {
  tsched.launch @sk grid [2, 3] (%x) scalars [0.125 : f32, 7 : i32] : memref<32xf32>
  return
}

// -----

func.func @bad_view(%x: memref<32xf32>) {
  // expected-error @+1 {{'tsched.view' op keeps the element count: 'memref<32xf32>' has 32, 'memref<4x4xf32>' has 16}}
  %v = tsched.view %x : memref<32xf32> to memref<4x4xf32>
  return
}

// -----

func.func @bad_view_type(%x: memref<32xf32>) {
  // expected-error @+1 {{'tsched.view' op keeps the element type: 'memref<32xf32>' to 'memref<32xi32>'}}
  %v = tsched.view %x : memref<32xf32> to memref<32xi32>
  return
}

// -----

func.func @bad_grid(%x: memref<32xf32>) {
  // expected-error @+1 {{'tsched.launch' op grid must be 1 to 3 counts of programs from 1 to 2^31 - 1, got [0]}}
  tsched.launch @k grid [0] (%x) : memref<32xf32>
  return
}

// -----

func.func @missing(%x: memref<32xf32>) {
  // expected-error @+1 {{'tsched.launch' op names the kernel @nowhere, which is not in the module}}
  tsched.launch @nowhere grid [1] (%x) : memref<32xf32>
  return
}

// -----

func.func @k(%a: memref<?x?xf32>) attributes {ttile.kernel} {
  return
}
func.func @wrong_rank(%x: memref<32xf32>) {
  // expected-error @+1 {{'tsched.launch' op passes 'memref<32xf32>' as argument 0 of @k, which takes 'memref<?x?xf32>'}}
  tsched.launch @k grid [1] (%x) : memref<32xf32>
  return
}

// -----

func.func @k(%a: memref<?xf32>, %b: memref<?xf32>) attributes {ttile.kernel} {
  return
}
func.func @wrong_count(%x: memref<32xf32>) {
  // expected-error @+1 {{'tsched.launch' op passes 1 buffers and 0 scalars to @k, which takes 2 parameters}}
  tsched.launch @k grid [1] (%x) : memref<32xf32>
  return
}

// -----

func.func @s(%a: memref<?xf32>, %x: f32, %n: i32) attributes {ttile.kernel} {
  return
}
func.func @wrong_scalar_type(%x: memref<32xf32>) {
  // expected-error @+1 {{'tsched.launch' op passes 2 : i32 as parameter 1 of @s, which takes 'f32'}}
  tsched.launch @s grid [1] (%x) scalars [2 : i32, 3 : i32] : memref<32xf32>
  return
}

// -----

func.func @bad_scalar(%x: memref<32xf32>) {
  // expected-error @+1 {{'tsched.launch' op scalar 0 is 1.000000e+00 : f16; a kernel takes f32, i32 or i64 numbers}}
  tsched.launch @s grid [1] (%x) scalars [1.0 : f16] : memref<32xf32>
  return
}

// -----

func.func @layout() {
  // expected-error @+1 {{'tsched.buffer' op is a contiguous block of the workspace; 'memref<4x4xf32, strided<[8, 1]>>' has a layout}}
  %b = tsched.buffer offset 0 : memref<4x4xf32, strided<[8, 1]>>
  return
}
