// RUN: tessera-opt %s --tessera-early-deallocs | FileCheck %s

// Each buffer is allocated right before its first use and freed right after
// the last use of it or of a view of it; a use inside a loop counts at the
// loop.
// CHECK-LABEL: func.func @f
func.func @f(%arg: memref<4xf32>, %n: index) -> memref<4xf32> {
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<8xf32>
  %out = memref.alloc() : memref<4xf32>
  // CHECK: %[[A:.*]] = memref.alloc() : memref<4xf32>
  // CHECK-NEXT: memref.copy %{{.*}}, %[[A]]
  memref.copy %arg, %a : memref<4xf32> to memref<4xf32>
  // CHECK-NEXT: %[[B:.*]] = memref.alloc() : memref<8xf32>
  // CHECK-NEXT: %[[V:.*]] = memref.subview %[[B]]
  %v = memref.subview %b[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  // CHECK-NEXT: memref.copy %[[A]], %[[V]]
  memref.copy %a, %v : memref<4xf32> to memref<4xf32, strided<[1]>>
  // CHECK-NEXT: memref.dealloc %[[A]]
  // CHECK-NEXT: %[[OUT:.*]] = memref.alloc() : memref<4xf32>
  // CHECK-NEXT: scf.for
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %v[%c0] : memref<4xf32, strided<[1]>>
    memref.store %x, %out[%i] : memref<4xf32>
  }
  // CHECK: }
  // CHECK-NEXT: memref.dealloc %[[B]]
  // CHECK-NEXT: return %[[OUT]]
  scf.if %true {
    memref.dealloc %a : memref<4xf32>
  }
  scf.if %true {
    memref.dealloc %b : memref<8xf32>
  }
  return %out : memref<4xf32>
}
