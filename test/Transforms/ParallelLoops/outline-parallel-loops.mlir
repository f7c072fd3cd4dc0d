// RUN: tessera-opt %s --tessera-outline-parallel-loops | FileCheck %s

// Each outermost parallel loop moves into a function of its own, called
// in its place with the values it reads from outside; constants are copied
// in. The nested loop goes along with its parent.
// CHECK-LABEL: func.func @two_loops
// CHECK-SAME: (%[[A:.+]]: memref<4x8xf32>, %[[B:.+]]: memref<4x8xf32>, %[[S:.+]]: f32)
// CHECK-NEXT: call @two_loops.parallel0(%[[A]], %[[S]], %[[B]]) : (memref<4x8xf32>, f32, memref<4x8xf32>) -> ()
// CHECK-NEXT: call @two_loops.parallel1(%[[B]]) : (memref<4x8xf32>) -> ()
// CHECK-NEXT: return
// CHECK: func.func private @two_loops.parallel0(%[[PA:.+]]: memref<4x8xf32>, %[[PS:.+]]: f32, %[[PB:.+]]: memref<4x8xf32>)
// CHECK-SAME: attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-DAG: arith.constant 0 : index
// CHECK-DAG: arith.constant 4 : index
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.load %[[PA]]
// CHECK: arith.mulf %{{.+}}, %[[PS]]
// CHECK: memref.store %{{.+}}, %[[PB]]
// CHECK: return
// CHECK: func.func private @two_loops.parallel1(%{{.+}}: memref<4x8xf32>)
// CHECK: arith.constant 2.000000e+00 : f32
// CHECK: scf.parallel
func.func @two_loops(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.parallel (%j) = (%c0) to (%c8) step (%c1) {
      %v = memref.load %a[%i, %j] : memref<4x8xf32>
      %w = arith.mulf %v, %s : f32
      memref.store %w, %b[%i, %j] : memref<4x8xf32>
      scf.reduce
    }
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %v = memref.load %b[%i, %j] : memref<4x8xf32>
    %w = arith.mulf %v, %two : f32
    memref.store %w, %b[%i, %j] : memref<4x8xf32>
    scf.reduce
  }
  return
}

// A loop inside a sequential loop: the call stays in the sequential loop,
// its induction variable passed.
// CHECK-LABEL: func.func @in_loop
// CHECK: scf.for %[[K:.+]] =
// CHECK-NEXT: call @in_loop.parallel0(%{{.+}}, %[[K]])
func.func @in_loop(%a: memref<3x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0.0 : f32
  scf.for %k = %c0 to %c3 step %c1 {
    scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
      memref.store %z, %a[%k, %i] : memref<3x3xf32>
      scf.reduce
    }
  }
  return
}

// A function without parallel loops is left as it is.
// CHECK-LABEL: func.func @none
// CHECK-NEXT: return
func.func @none() {
  return
}

// A loop with a reduction: the function returns its value.
// CHECK-LABEL: func.func @reduction
// CHECK-NEXT: %[[S:.+]] = call @reduction.parallel0(%{{.+}}) : (memref<8xf32>) -> f32
// CHECK-NEXT: return %[[S]]
// CHECK: func.func private @reduction.parallel0(%{{.+}}: memref<8xf32>) -> f32
// CHECK: %[[R:.+]] = scf.parallel
// CHECK: return %[[R]] : f32
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
