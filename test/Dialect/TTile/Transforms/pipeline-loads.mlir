// RUN: tessera-opt %s --tessera-ttile-pipeline-loads --split-input-file | FileCheck %s

// The loads of a staged loop are issued one iteration ahead: the first
// before the loop, the next at the top of each iteration, carried along.
// CHECK-LABEL: func.func @staged
// CHECK: %[[A0:.*]] = ttile.load %{{.*}}[%{{.*}}, %[[C0:.*]]] : memref<?x?xbf16> -> tensor<64x32xbf16>
// CHECK: %[[R:.*]]:2 = ttile.range %[[K:.*]] = %[[C0]] to %{{.*}} step %[[STEP:.*]] stages 2 iter_args(%{{.*}} = %{{.*}}, %[[A:.*]] = %[[A0]])
// CHECK-NEXT: %[[K1:.*]] = arith.addi %[[K]], %[[STEP]] : index
// CHECK-NEXT: %[[NEXT:.*]] = ttile.load %{{.*}}[%{{.*}}, %[[K1]]]
// CHECK: arith.extf %[[A]]
// CHECK: ttile.yield %{{.*}}, %[[NEXT]]
func.func @staged(%A: memref<?x?xbf16>, %O: memref<?x?xf32>, %k: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %r = ttile.range %kk = %c0 to %k step %c32 stages 2
      iter_args(%acc = %zero) -> (tensor<64x32xf32>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xbf16> -> tensor<64x32xbf16>
    %f = arith.extf %a : tensor<64x32xbf16> to tensor<64x32xf32>
    %s = arith.addf %acc, %f : tensor<64x32xf32>
    ttile.yield %s : tensor<64x32xf32>
  }
  ttile.store %r, %O[%c0, %c0] : tensor<64x32xf32>, memref<?x?xf32>
  return
}

// -----

// An index computed in the body from the induction variable (a row offset)
// is computed again for the iteration loaded: before the loop for the
// first, at the top of each iteration for the next.
// CHECK-LABEL: func.func @computed_index
// CHECK: %[[ROW0:.*]] = arith.addi %[[BASE:.*]], %[[C0:.*]] : index
// CHECK: %[[T0:.*]] = ttile.load %{{.*}}[%[[ROW0]], %[[C0]]]
// CHECK: ttile.range %[[N:.*]] = %[[C0]] to %{{.*}} step %[[STEP:.*]] stages 2 iter_args(%{{.*}} = %{{.*}}, %[[T:.*]] = %[[T0]])
// CHECK-NEXT: %[[N1:.*]] = arith.addi %[[N]], %[[STEP]] : index
// CHECK-NEXT: %[[ROW1:.*]] = arith.addi %[[BASE]], %[[N1]] : index
// CHECK-NEXT: %[[NEXT:.*]] = ttile.load %{{.*}}[%[[ROW1]], %[[C0]]]
// CHECK: arith.extf %[[T]]
// CHECK: ttile.yield %{{.*}}, %[[NEXT]]
func.func @computed_index(%K: memref<?x?xbf16>, %O: memref<?x?xf32>,
                          %base: index, %len: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant dense<0.0> : tensor<32x64xf32>
  %r = ttile.range %n = %c0 to %len step %c32 stages 2
      iter_args(%acc = %zero) -> (tensor<32x64xf32>) {
    %row = arith.addi %base, %n : index
    %t = ttile.load %K[%row, %c0] : memref<?x?xbf16> -> tensor<32x64xbf16>
    %f = arith.extf %t : tensor<32x64xbf16> to tensor<32x64xf32>
    %s = arith.addf %acc, %f : tensor<32x64xf32>
    ttile.yield %s : tensor<32x64xf32>
  }
  ttile.store %r, %O[%c0, %c0] : tensor<32x64xf32>, memref<?x?xf32>
  return
}

// -----

// Not when the loop writes the memref it reads, nor without stages.
// CHECK-LABEL: func.func @writes_source
// CHECK: ttile.range
// CHECK-NEXT: ttile.load
// CHECK-LABEL: func.func @one_stage
// CHECK: ttile.range
// CHECK-NEXT: ttile.load
func.func @writes_source(%A: memref<?x?xf32>, %k: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  ttile.range %kk = %c0 to %k step %c32 stages 2 {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xf32> -> tensor<4x32xf32>
    %b = arith.addf %a, %a : tensor<4x32xf32>
    ttile.store %b, %A[%c0, %kk] : tensor<4x32xf32>, memref<?x?xf32>
  }
  return
}
func.func @one_stage(%A: memref<?x?xf32>, %O: memref<?x?xf32>, %k: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  ttile.range %kk = %c0 to %k step %c32 {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xf32> -> tensor<4x32xf32>
    ttile.store %a, %O[%c0, %kk] : tensor<4x32xf32>, memref<?x?xf32>
  }
  return
}

// -----

// With stages 3 each load runs two iterations ahead: the first two tiles
// are loaded before the loop, the loop carries both (oldest first), uses
// the oldest, moves the other up and loads the tile of iteration k + 2.
// CHECK-LABEL: func.func @three_stages
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[A0:.*]] = ttile.load %{{.*}}[%{{.*}}, %[[C0]]]
// CHECK: %[[K1:.*]] = arith.addi %[[C0]], %[[C32]] : index
// CHECK: %[[A1:.*]] = ttile.load %{{.*}}[%{{.*}}, %[[K1]]]
// CHECK: ttile.range %[[K:.*]] = %[[C0]] to %{{.*}} step %[[C32]] stages 3 iter_args(%{{.*}} = %{{.*}}, %[[A:.*]] = %[[A0]], %[[B:.*]] = %[[A1]])
// CHECK-NEXT: %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[AHEAD:.*]] = arith.muli %[[C32]], %[[C2]] : index
// CHECK-NEXT: %[[K2:.*]] = arith.addi %[[K]], %[[AHEAD]] : index
// CHECK-NEXT: %[[NEXT:.*]] = ttile.load %{{.*}}[%{{.*}}, %[[K2]]]
// CHECK: arith.extf %[[A]]
// CHECK: ttile.yield %{{.*}}, %[[B]], %[[NEXT]]
func.func @three_stages(%A: memref<?x?xbf16>, %O: memref<?x?xf32>, %k: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %r = ttile.range %kk = %c0 to %k step %c32 stages 3
      iter_args(%acc = %zero) -> (tensor<64x32xf32>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xbf16> -> tensor<64x32xbf16>
    %f = arith.extf %a : tensor<64x32xbf16> to tensor<64x32xf32>
    %s = arith.addf %acc, %f : tensor<64x32xf32>
    ttile.yield %s : tensor<64x32xf32>
  }
  ttile.store %r, %O[%c0, %c0] : tensor<64x32xf32>, memref<?x?xf32>
  return
}

// -----

// A load that does not depend on the induction variable reads the same
// tile each iteration: it stays where it is (carrying it would hold
// registers for nothing); the loop's other load is pipelined.
// CHECK-LABEL: func.func @invariant
// CHECK: ttile.range {{.*}} stages 2 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<4x32xf32>, tensor<4x32xf32>)
// CHECK: ttile.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<?x?xf32> -> tensor<4x32xf32>
// CHECK: %[[W:.*]] = ttile.load %[[WMEM:.*]][%[[Z:.*]], %[[Z]]] : memref<?x?xf32> -> tensor<4x32xf32>
// CHECK: arith.mulf %{{.*}}, %[[W]]
func.func @invariant(%A: memref<?x?xf32>, %W: memref<?x?xf32>,
                     %O: memref<?x?xf32>, %k: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant dense<0.0> : tensor<4x32xf32>
  %r = ttile.range %kk = %c0 to %k step %c32 stages 2
      iter_args(%acc = %zero) -> (tensor<4x32xf32>) {
    %a = ttile.load %A[%c0, %kk] : memref<?x?xf32> -> tensor<4x32xf32>
    %w = ttile.load %W[%c0, %c0] : memref<?x?xf32> -> tensor<4x32xf32>
    %p = arith.mulf %a, %w : tensor<4x32xf32>
    %s = arith.addf %acc, %p : tensor<4x32xf32>
    ttile.yield %s : tensor<4x32xf32>
  }
  ttile.store %r, %O[%c0, %c0] : tensor<4x32xf32>, memref<?x?xf32>
  return
}

// -----

// In a loop whose tiles stream through a shared-memory ring, `stages`
// sizes the ring: the loads into registers beside them run one iteration
// ahead whatever the stages.
// CHECK-LABEL: func.func @beside_ring
// CHECK: ttile.range {{.*}} stages 3 iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<64xf32>, tensor<64xf32>)
// CHECK-NEXT: arith.addi
// CHECK-NEXT: ttile.load %{{.*}} : memref<?xf32> -> tensor<64xf32>
// CHECK: ttile.load %{{.*}} -> tensor<64x64xbf16, #ttile.shared
#sh = #ttile.shared<swizzle = 128, order = [1, 0]>
func.func @beside_ring(%K: memref<?x?xbf16>, %L: memref<?xf32>,
                       %O: memref<?xf32>, %len: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant dense<0.0> : tensor<64xf32>
  %r = ttile.range %n = %c0 to %len step %c64 stages 3
      iter_args(%acc = %zero) -> (tensor<64xf32>) {
    %t = ttile.load %K[%n, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16, #sh>
    %l = ttile.load %L[%n] : memref<?xf32> -> tensor<64xf32>
    %s = arith.addf %acc, %l : tensor<64xf32>
    ttile.yield %s : tensor<64xf32>
  }
  ttile.store %r, %O[%c0] : tensor<64xf32>, memref<?xf32>
  return
}
