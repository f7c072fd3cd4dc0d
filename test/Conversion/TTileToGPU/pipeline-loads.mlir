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
