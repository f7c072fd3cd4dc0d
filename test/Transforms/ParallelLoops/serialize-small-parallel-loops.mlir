// RUN: tessera-opt %s --tessera-serialize-small-parallel-loops --split-input-file | FileCheck %s
// RUN: tessera-opt %s --tessera-serialize-small-parallel-loops=min-work=0 --split-input-file | FileCheck %s --check-prefix=NONE
// RUN: not tessera-opt %s --tessera-serialize-small-parallel-loops=min-work=-1 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: min-work must be at least 0, but is -1

// Three rows of six elements: far less work than a parallel region costs.
// The loop becomes scf.for; its stack buffer moves before the loop.
// CHECK-LABEL: func.func @rows
// CHECK: %[[BUF:.+]] = memref.alloca() : memref<6xf32>
// CHECK-NEXT: scf.for %[[I:.+]] = %c0 to %c3 step %c1 {
// CHECK: memref.load %{{.+}}[%[[I]], %{{.+}}]
// CHECK: memref.store %{{.+}}, %[[BUF]]
// CHECK-NOT: scf.reduce
// CHECK-NOT: scf.parallel
// NONE-LABEL: func.func @rows
// NONE: scf.parallel
func.func @rows(%a: memref<3x6xf32>, %b: memref<3x6xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
    %buf = memref.alloca() : memref<6xf32>
    scf.for %j = %c0 to %c6 step %c1 {
      %v = memref.load %a[%i, %j] : memref<3x6xf32>
      %e = math.exp %v : f32
      memref.store %e, %buf[%j] : memref<6xf32>
    }
    scf.for %j = %c0 to %c6 step %c1 {
      %v = memref.load %buf[%j] : memref<6xf32>
      memref.store %v, %b[%i, %j] : memref<3x6xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Two dimensions become two loops.
// CHECK-LABEL: func.func @two_dims
// CHECK: scf.for %[[I:.+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: scf.for %[[J:.+]] = %c0 to %c5 step %c1 {
// CHECK-NEXT: memref.load %{{.+}}[%[[I]], %[[J]]]
func.func @two_dims(%a: memref<4x5xf32>, %b: memref<4x5xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c5) step (%c1, %c1) {
    %v = memref.load %a[%i, %j] : memref<4x5xf32>
    memref.store %v, %b[%i, %j] : memref<4x5xf32>
    scf.reduce
  }
  return
}

// -----

// 256 rows of a 256x256 matmul row: millions of operations, stays parallel.
// CHECK-LABEL: func.func @large
// CHECK: scf.parallel
#mm0 = affine_map<(d0, d1, d2) -> (d0, d2)>
#mm1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#mm2 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @large(%a: memref<256x256xf32>, %b: memref<256x256xf32>,
                 %c: memref<256x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.parallel (%i) = (%c0) to (%c256) step (%c1) {
    %ra = memref.subview %a[%i, 0] [1, 256] [1, 1] : memref<256x256xf32> to memref<1x256xf32, strided<[256, 1], offset: ?>>
    %rc = memref.subview %c[%i, 0] [1, 256] [1, 1] : memref<256x256xf32> to memref<1x256xf32, strided<[256, 1], offset: ?>>
    linalg.matmul ins(%ra, %b : memref<1x256xf32, strided<[256, 1], offset: ?>>, memref<256x256xf32>) outs(%rc : memref<1x256xf32, strided<[256, 1], offset: ?>>)
    scf.reduce
  }
  return
}

// -----

// A trip count known only at run time: unbounded work, stays parallel.
// CHECK-LABEL: func.func @dynamic
// CHECK: scf.parallel
func.func @dynamic(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %z, %a[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// A call's work is unknown: stays parallel.
// CHECK-LABEL: func.func @calls
// CHECK: scf.parallel
func.func private @callee(index)
func.func @calls() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
    func.call @callee(%i) : (index) -> ()
    scf.reduce
  }
  return
}

// -----

// A reduction stays parallel (the OpenMP lowering combines it).
// CHECK-LABEL: func.func @reduction
// CHECK: scf.parallel
func.func @reduction(%a: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0.0 : f32
  %s = scf.parallel (%i) = (%c0) to (%c8) step (%c1) init (%z) -> f32 {
    %v = memref.load %a[%i] : memref<8xf32>
    scf.reduce(%v : f32) {
    ^bb0(%x: f32, %y: f32):
      %r = arith.addf %x, %y : f32
      scf.reduce.return %r : f32
    }
  }
  return %s : f32
}

// -----

// Inside a sequential loop, a stack buffer would grow the stack at every
// outer iteration once hoisted: stays parallel (its OpenMP region is a
// stack scope of its own).
// CHECK-LABEL: func.func @alloca_in_sequential_loop
// CHECK: scf.for
// CHECK: scf.parallel
func.func @alloca_in_sequential_loop(%a: memref<3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.for %k = %c0 to %c3 step %c1 {
    scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
      %buf = memref.alloca() : memref<1xf32>
      %v = memref.load %a[%i] : memref<3xf32>
      memref.store %v, %buf[%c0] : memref<1xf32>
      scf.reduce
    }
  }
  return
}

// -----

// A stack buffer of dynamic size cannot move before the loop: stays
// parallel.
// CHECK-LABEL: func.func @dynamic_alloca
// CHECK: scf.parallel
func.func @dynamic_alloca(%a: memref<3xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
    %buf = memref.alloca(%n) : memref<?xf32>
    %v = memref.load %a[%i] : memref<3xf32>
    memref.store %v, %buf[%c0] : memref<?xf32>
    scf.reduce
  }
  return
}
