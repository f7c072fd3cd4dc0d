// RUN: tessera-opt %s --pass-pipeline="builtin.module(gpu.module(tessera-gpu-sink-to-uses))" | FileCheck %s

// Each pure op moves down to just before its first user in its block, so
// the chains of two elements end up one after the other, each next to its
// store; the stores keep their order, constants stay where they are.
// CHECK-LABEL: gpu.func @chains
// CHECK: arith.constant 2.0
// CHECK-NEXT: %[[A0:.+]] = arith.addf %arg1, %arg2
// CHECK-NEXT: %[[M0:.+]] = arith.mulf %[[A0]], %{{.+}}
// CHECK-NEXT: memref.store %[[M0]], %arg0[%c0]
// CHECK-NEXT: %[[A1:.+]] = arith.addf %arg2, %arg1
// CHECK-NEXT: %[[M1:.+]] = arith.mulf %[[A1]], %{{.+}}
// CHECK-NEXT: memref.store %[[M1]], %arg0[%c1]
// CHECK-NEXT: gpu.return
//
// A load does not move (it reads memory a store may have written), nor do
// the stores; an op used in another block (inside scf.if) moves down to
// the op holding the use.
// CHECK-LABEL: gpu.func @effects
// CHECK: %[[L:.+]] = memref.load %arg0[%c0]
// CHECK-NEXT: memref.store %arg1, %arg0[%c0]
// CHECK-NEXT: %[[N:.+]] = arith.negf %[[L]]
// CHECK-NEXT: scf.if %arg2 {
// CHECK-NEXT: memref.store %[[N]], %arg0[%c1]
// CHECK: %[[S:.+]] = arith.subf %[[L]], %arg1
// CHECK-NEXT: memref.store %[[S]], %arg0[%c0]
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @chains(%out: memref<2xf32>, %x: f32, %y: f32) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %two = arith.constant 2.0 : f32
      %a0 = arith.addf %x, %y : f32
      %a1 = arith.addf %y, %x : f32
      %m0 = arith.mulf %a0, %two : f32
      %m1 = arith.mulf %a1, %two : f32
      memref.store %m0, %out[%c0] : memref<2xf32>
      memref.store %m1, %out[%c1] : memref<2xf32>
      gpu.return
    }
    gpu.func @effects(%buf: memref<2xf32>, %x: f32, %p: i1) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %l = memref.load %buf[%c0] : memref<2xf32>
      %n = arith.negf %l : f32
      %s = arith.subf %l, %x : f32
      memref.store %x, %buf[%c0] : memref<2xf32>
      scf.if %p {
        memref.store %n, %buf[%c1] : memref<2xf32>
      }
      memref.store %s, %buf[%c0] : memref<2xf32>
      gpu.return
    }
  }
}
