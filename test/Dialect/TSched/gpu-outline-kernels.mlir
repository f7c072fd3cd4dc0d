// RUN: tessera-opt %s --tessera-gpu-outline-kernels --split-input-file --verify-diagnostics | FileCheck %s

// The kernels move into the device module; launches name them in it.
// CHECK-LABEL: func.func @host
// CHECK: tsched.launch @kernels::@k grid [4] (%arg0) : memref<64xf32>
// CHECK: tsched.launch @kernels::@k grid [2] (%arg0) : memref<64xf32>
// CHECK: module @kernels {
// CHECK: func.func @k(%arg0: memref<?xf32>) attributes {ttile.kernel}
func.func @host(%x: memref<64xf32>) {
  tsched.launch @k grid [4] (%x) : memref<64xf32>
  tsched.launch @k grid [2] (%x) : memref<64xf32>
  return
}
func.func @k(%a: memref<?xf32>) attributes {ttile.kernel} {
  return
}

// -----

// expected-error @+1 {{has a symbol @kernels that is not a module; the kernels' device module takes that name}}
module {
  func.func @kernels() {
    return
  }
  func.func @k(%a: memref<?xf32>) attributes {ttile.kernel} {
    return
  }
}
