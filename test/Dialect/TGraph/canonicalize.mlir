// RUN: tessera-opt %s -split-input-file --canonicalize | FileCheck %s

// Folders and canonicalization patterns of the Graph IR. Every rewrite is
// exact in IEEE arithmetic; the cases that look foldable but are not
// (x + 0.0, f32 -> f16 -> f32, broadcasting identities) are pinned too.

// CHECK-LABEL: func.func @fold_constants
// CHECK-DAG: %[[A:.+]] = tgraph.constant dense<[4.000000e+00, -1.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[M:.+]] = tgraph.constant dense<[3.000000e+00, -6.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[I:.+]] = tgraph.constant dense<[2, -3]> : tensor<2xi32>
// CHECK: return %[[A]], %[[M]], %[[I]]
func.func @fold_constants() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xi32>) {
  %a = tgraph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = tgraph.constant dense<[3.0, -3.0]> : tensor<2xf32>
  %sum = tgraph.add %a, %b : tensor<2xf32>
  %prod = tgraph.mul %b, %a : tensor<2xf32>
  %p = tgraph.constant dense<[7, -7]> : tensor<2xi32>
  %q = tgraph.constant dense<[3, 2]> : tensor<2xi32>
  // Integer division rounds toward zero: 7/3 = 2, -7/2 = -3.
  %div = tgraph.div %p, %q : tensor<2xi32>
  return %sum, %prod, %div : tensor<2xf32>, tensor<2xf32>, tensor<2xi32>
}

// -----

// Integer division by zero is left for run time.
// CHECK-LABEL: func.func @no_fold_int_div_by_zero
// CHECK: tgraph.div
func.func @no_fold_int_div_by_zero() -> tensor<2xi32> {
  %p = tgraph.constant dense<[7, 1]> : tensor<2xi32>
  %q = tgraph.constant dense<[0, 1]> : tensor<2xi32>
  %div = tgraph.div %p, %q : tensor<2xi32>
  return %div : tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @fold_unary_constants
// CHECK-DAG: tgraph.constant dense<[-2.000000e+00, 5.000000e-01]> : tensor<2xf32>
// CHECK-DAG: tgraph.constant dense<[2.000000e+00, 5.000000e-01]> : tensor<2xf32>
// CHECK-DAG: tgraph.constant dense<[1.000000e+00, 2.71828175]> : tensor<2xf32>
// CHECK-DAG: tgraph.constant dense<[1.41421354, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: tgraph.constant dense<[-3.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: tgraph.constant dense<[0.000000e+00, 5.000000e-01]> : tensor<2xf32>
// CHECK-DAG: tgraph.constant dense<[-1.000000e+00, 1.000000e+00]> : tensor<2xf32>
// CHECK-DAG: tgraph.constant dense<[3, 0]> : tensor<2xi8>
// CHECK-NOT: tgraph.neg
// CHECK-NOT: tgraph.exp
func.func @fold_unary_constants() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>,
    tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi8>) {
  %x = tgraph.constant dense<[2.0, -0.5]> : tensor<2xf32>
  %n = tgraph.neg %x : tensor<2xf32>
  %a = tgraph.abs %x : tensor<2xf32>
  %e0 = tgraph.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %e = tgraph.exp %e0 : tensor<2xf32>
  %s0 = tgraph.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %s = tgraph.sqrt %s0 : tensor<2xf32>
  %f0 = tgraph.constant dense<[-2.5, 2.5]> : tensor<2xf32>
  %f = tgraph.floor %f0 : tensor<2xf32>
  %r0 = tgraph.constant dense<[-3.0, 0.5]> : tensor<2xf32>
  %r = tgraph.relu %r0 : tensor<2xf32>
  %g = tgraph.sign %f0 : tensor<2xf32>
  %i0 = tgraph.constant dense<[-3, 0]> : tensor<2xi8>
  %i = tgraph.abs %i0 : tensor<2xi8>
  return %n, %a, %e, %s, %f, %r, %g, %i : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>,
      tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi8>
}

// -----

// CHECK-LABEL: func.func @involutions_and_idempotence
// CHECK-SAME: (%[[X:.+]]: tensor<?xf32, #tgraph.dims<[N]>>)
// CHECK: %[[ABS:.+]] = tgraph.abs %[[X]]
// CHECK: %[[RELU:.+]] = tgraph.relu %[[X]]
// CHECK: %[[FLOOR:.+]] = tgraph.floor %[[X]]
// CHECK: %[[SIGN:.+]] = tgraph.sign %[[X]]
// CHECK: return %[[X]], %[[ABS]], %[[RELU]], %[[FLOOR]], %[[SIGN]]
!n = tensor<?xf32, #tgraph.dims<[N]>>
func.func @involutions_and_idempotence(%x: !n) -> (!n, !n, !n, !n, !n) {
  %n1 = tgraph.neg %x : !n
  %n2 = tgraph.neg %n1 : !n
  %a1 = tgraph.abs %x : !n
  %a2 = tgraph.abs %a1 : !n
  %r1 = tgraph.relu %x : !n
  %r2 = tgraph.relu %r1 : !n
  %f1 = tgraph.floor %x : !n
  %f2 = tgraph.floor %f1 : !n
  %s1 = tgraph.sign %x : !n
  %s2 = tgraph.sign %s1 : !n
  return %n2, %a2, %r2, %f2, %s2 : !n, !n, !n, !n, !n
}

// -----

// x + (-0.0), x - (+0.0), x * 1, x / 1, x ^ 1, max(x, x) are x; x + (+0.0) is
// not (it turns -0.0 into +0.0), nor is an identity that broadcasts.
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK-DAG: %[[PZ:.+]] = tgraph.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-DAG: %[[ONES:.+]] = tgraph.constant dense<1.000000e+00> : tensor<3x4xf32>
// CHECK: %[[KEEP:.+]] = tgraph.add %[[X]], %[[PZ]] : tensor<4xf32>
// CHECK: %[[BCAST:.+]] = tgraph.mul %[[X]], %[[ONES]] : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[KEEP]], %[[BCAST]]
func.func @identities(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
    tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>) {
  %nz = tgraph.constant dense<-0.0> : tensor<4xf32>
  %pz = tgraph.constant dense<0.0> : tensor<4xf32>
  %one = tgraph.constant dense<1.0> : tensor<4xf32>
  %ones = tgraph.constant dense<1.0> : tensor<3x4xf32>
  %0 = tgraph.add %x, %nz : tensor<4xf32>
  %1 = tgraph.sub %x, %pz : tensor<4xf32>
  %2 = tgraph.mul %x, %one : tensor<4xf32>
  %3 = tgraph.div %x, %one : tensor<4xf32>
  %4 = tgraph.pow %x, %one : tensor<4xf32>
  %5 = tgraph.max %x, %x : tensor<4xf32>
  %6 = tgraph.add %x, %pz : tensor<4xf32>
  %7 = tgraph.mul %x, %ones : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
      tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>
}

// -----

// Integer identities: x + 0 and x * 1.
// CHECK-LABEL: func.func @int_identities
// CHECK-SAME: (%[[X:.+]]: tensor<4xi32>)
// CHECK: return %[[X]], %[[X]]
func.func @int_identities(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %zero = tgraph.constant dense<0> : tensor<4xi32>
  %one = tgraph.constant dense<1> : tensor<4xi32>
  %0 = tgraph.add %x, %zero : tensor<4xi32>
  %1 = tgraph.mul %x, %one : tensor<4xi32>
  return %0, %1 : tensor<4xi32>, tensor<4xi32>
}

// -----

// add(x, neg(y)) -> sub(x, y); mul(x, x) -> square(x)
// CHECK-LABEL: func.func @algebra
// CHECK-SAME: (%[[X:.+]]: tensor<?xf32, #tgraph.dims<[N]>>, %[[Y:.+]]: tensor<?xf32, #tgraph.dims<[N]>>)
// CHECK: %[[D:.+]] = tgraph.sub %[[X]], %[[Y]]
// CHECK: %[[S:.+]] = tgraph.square %[[X]]
// CHECK: return %[[D]], %[[S]]
!n = tensor<?xf32, #tgraph.dims<[N]>>
func.func @algebra(%x: !n, %y: !n) -> (!n, !n) {
  %ny = tgraph.neg %y : !n
  %d = tgraph.add %x, %ny : !n
  %s = tgraph.mul %x, %x : !n
  return %d, %s : !n, !n
}

// -----

// CHECK-LABEL: func.func @compare_and_select
// CHECK-SAME: (%[[A:.+]]: tensor<2xf32>, %[[B:.+]]: tensor<2xf32>, %[[C:.+]]: tensor<2xi1>)
// CHECK-DAG: %[[LT:.+]] = tgraph.constant dense<[true, false]> : tensor<2xi1>
// CHECK-DAG: %[[NE:.+]] = tgraph.constant dense<true> : tensor<2xi1>
// CHECK: return %[[LT]], %[[NE]], %[[A]], %[[B]], %[[A]]
func.func @compare_and_select(%a: tensor<2xf32>, %b: tensor<2xf32>, %c: tensor<2xi1>)
    -> (tensor<2xi1>, tensor<2xi1>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %x = tgraph.constant dense<[1.0, 0x7FC00000]> : tensor<2xf32>
  %y = tgraph.constant dense<[2.0, 1.0]> : tensor<2xf32>
  // NaN compares false under lt and true under ne.
  %lt = tgraph.compare lt, %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  %z = tgraph.constant dense<[3.0, 0x7FC00000]> : tensor<2xf32>
  %ne = tgraph.compare ne, %x, %z : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  %t = tgraph.constant dense<true> : tensor<2xi1>
  %f = tgraph.constant dense<false> : tensor<2xi1>
  %s1 = tgraph.select %t, %a, %b : (tensor<2xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %s2 = tgraph.select %f, %a, %b : (tensor<2xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %s3 = tgraph.select %c, %a, %a : (tensor<2xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %lt, %ne, %s1, %s2, %s3 : tensor<2xi1>, tensor<2xi1>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @casts
// CHECK-SAME: (%[[X:.+]]: tensor<4xf16>, %[[Y:.+]]: tensor<4xf32>)
// CHECK-DAG: %[[C:.+]] = tgraph.constant dense<[1.000000e+00, 1.015630e+00]> : tensor<2xbf16>
// CHECK-DAG: %[[W:.+]] = tgraph.cast %[[X]] : tensor<4xf16> -> tensor<4xf64>
// CHECK-DAG: %[[N:.+]] = tgraph.cast %[[Y]] : tensor<4xf32> -> tensor<4xf16>
// CHECK-DAG: %[[B:.+]] = tgraph.cast %[[N]] : tensor<4xf16> -> tensor<4xf32>
// CHECK: return %[[Y]], %[[C]], %[[W]], %[[B]]
func.func @casts(%x: tensor<4xf16>, %y: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<2xbf16>, tensor<4xf64>, tensor<4xf32>) {
  %same = tgraph.cast %y : tensor<4xf32> -> tensor<4xf32>
  // bf16 keeps 7 fraction bits (ulp 2^-7 at 1.0). 1 + 2^-8 and 1 + 3*2^-8
  // are ties: to nearest even they go to 1.0 and 1 + 2^-6 = 1.015625.
  %c0 = tgraph.constant dense<[1.00390625, 1.01171875]> : tensor<2xf32>
  %c = tgraph.cast %c0 : tensor<2xf32> -> tensor<2xbf16>
  // f16 -> f32 -> f64 widens exactly: one cast.
  %w1 = tgraph.cast %x : tensor<4xf16> -> tensor<4xf32>
  %w2 = tgraph.cast %w1 : tensor<4xf32> -> tensor<4xf64>
  // f32 -> f16 -> f32 rounds: both casts stay.
  %n1 = tgraph.cast %y : tensor<4xf32> -> tensor<4xf16>
  %n2 = tgraph.cast %n1 : tensor<4xf16> -> tensor<4xf32>
  return %same, %c, %w2, %n2 : tensor<4xf32>, tensor<2xbf16>, tensor<4xf64>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_absorbs_transposes
// CHECK-SAME: (%[[A:.+]]: tensor<?x64xf32, #tgraph.dims<[K, 64]>>, %[[B:.+]]: tensor<32x?xf32, #tgraph.dims<[32, K]>>)
// CHECK: %[[M:.+]] = tgraph.matmul %[[A]], %[[B]] {transpose_lhs, transpose_rhs} : (tensor<?x64xf32, #tgraph.dims<[K, 64]>>, tensor<32x?xf32, #tgraph.dims<[32, K]>>) -> tensor<64x32xf32>
// CHECK-NOT: tgraph.transpose
// CHECK: return %[[M]]
func.func @matmul_absorbs_transposes(%a: tensor<?x64xf32, #tgraph.dims<[K, 64]>>,
                                     %b: tensor<32x?xf32, #tgraph.dims<[32, K]>>) -> tensor<64x32xf32> {
  %at = tgraph.transpose %a {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[K, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, K]>>
  %bt = tgraph.transpose %b {permutation = array<i64: 1, 0>} : tensor<32x?xf32, #tgraph.dims<[32, K]>> -> tensor<?x32xf32, #tgraph.dims<[K, 32]>>
  %m = tgraph.matmul %at, %bt : (tensor<64x?xf32, #tgraph.dims<[64, K]>>, tensor<?x32xf32, #tgraph.dims<[K, 32]>>) -> tensor<64x32xf32>
  return %m : tensor<64x32xf32>
}

// -----

// CHECK-LABEL: func.func @layout_folds
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x4xf32, #tgraph.dims<[A, B, 4]>>)
// CHECK: %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 2, 0, 1>}
// CHECK: %[[R:.+]] = tgraph.reshape %[[X]] : tensor<?x?x4xf32, #tgraph.dims<[A, B, 4]>> -> tensor<?xf32, #tgraph.dims<["4*A*B"]>>
// CHECK: return %[[X]], %[[T]], %[[R]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
!t = tensor<?x?x4xf32, #tgraph.dims<[A, B, 4]>>
func.func @layout_folds(%x: !t) -> (!t, tensor<4x?x?xf32, #tgraph.dims<[4, A, B]>>,
    tensor<?xf32, #tgraph.dims<["4*A*B"]>>, !t, !t, !t, !t, !t) {
  %id = tgraph.transpose %x {permutation = array<i64: 0, 1, 2>} : !t -> !t
  // (1,2,0) then (1,2,0): result dim i is x dim p[q[i]] = (2,0,1)
  %t1 = tgraph.transpose %x {permutation = array<i64: 1, 2, 0>} : !t -> tensor<?x4x?xf32, #tgraph.dims<[B, 4, A]>>
  %t2 = tgraph.transpose %t1 {permutation = array<i64: 1, 2, 0>} : tensor<?x4x?xf32, #tgraph.dims<[B, 4, A]>> -> tensor<4x?x?xf32, #tgraph.dims<[4, A, B]>>
  %r1 = tgraph.reshape %x : !t -> tensor<?x4xf32, #tgraph.dims<["A*B", 4]>>
  %r2 = tgraph.reshape %r1 : tensor<?x4xf32, #tgraph.dims<["A*B", 4]>> -> tensor<?xf32, #tgraph.dims<["4*A*B"]>>
  %same = tgraph.reshape %x : !t -> !t
  %b = tgraph.broadcast_in_dim %x {broadcast_dimensions = array<i64: 0, 1, 2>} : !t -> !t
  %s = tgraph.slice %x {start = #tgraph.dims<[0, 0, 0]>, limit = #tgraph.dims<[A, B, 4]>, stride = array<i64: 1, 1, 1>} : !t -> !t
  %c = tgraph.concat %x {dim = 0 : i64} : (!t) -> !t
  %p = tgraph.pad %x {low = array<i64: 0, 0, 0>, high = array<i64: 0, 0, 0>, interior = array<i64: 0, 0, 0>, value = 0.0 : f32} : !t -> !t
  return %id, %t2, %r2, %same, %b, %s, %c, %p : !t, tensor<4x?x?xf32, #tgraph.dims<[4, A, B]>>,
      tensor<?xf32, #tgraph.dims<["4*A*B"]>>, !t, !t, !t, !t, !t
}

// -----

// A partial slice and a strided one stay.
// CHECK-LABEL: func.func @slices_that_stay
// CHECK-COUNT-2: tgraph.slice
func.func @slices_that_stay(%x: tensor<?xf32, #tgraph.dims<[S]>>)
    -> (tensor<?xf32, #tgraph.dims<["S-1"]>>, tensor<?xf32, #tgraph.dims<["(S+1)/2"]>>) {
  %a = tgraph.slice %x {start = #tgraph.dims<[1]>, limit = #tgraph.dims<[S]>, stride = array<i64: 1>} : tensor<?xf32, #tgraph.dims<[S]>> -> tensor<?xf32, #tgraph.dims<["S-1"]>>
  %b = tgraph.slice %x {start = #tgraph.dims<[0]>, limit = #tgraph.dims<[S]>, stride = array<i64: 2>} : tensor<?xf32, #tgraph.dims<[S]>> -> tensor<?xf32, #tgraph.dims<["(S+1)/2"]>>
  return %a, %b : tensor<?xf32, #tgraph.dims<["S-1"]>>, tensor<?xf32, #tgraph.dims<["(S+1)/2"]>>
}

// -----

// CHECK-LABEL: func.func @constant_layout
// CHECK-DAG: tgraph.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: tgraph.constant dense<7.000000e+00> : tensor<3x2xf32>
// CHECK-NOT: tgraph.reshape
// CHECK-NOT: tgraph.broadcast_in_dim
func.func @constant_layout() -> (tensor<2x2xf32>, tensor<3x2xf32>) {
  %c = tgraph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %r = tgraph.reshape %c : tensor<4xf32> -> tensor<2x2xf32>
  %s = tgraph.constant dense<7.0> : tensor<2xf32>
  %b = tgraph.broadcast_in_dim %s {broadcast_dimensions = array<i64: 1>} : tensor<2xf32> -> tensor<3x2xf32>
  return %r, %b : tensor<2x2xf32>, tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @empty_reductions
// CHECK-SAME: (%[[X:.+]]: tensor<?x?xf32, #tgraph.dims<[B, S]>>)
// CHECK: return %[[X]], %[[X]]
func.func @empty_reductions(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>)
    -> (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  %s = tgraph.reduce_sum %x {dims = array<i64>} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
  %m = tgraph.reduce_max %x {dims = array<i64>} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return %s, %m : tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?x?xf32, #tgraph.dims<[B, S]>>
}

// -----

// zeros_like/ones_like become tgraph.full; a static full folds to a constant.
// CHECK-LABEL: func.func @generators
// CHECK-DAG: %[[Z:.+]] = tgraph.full {value = 0.000000e+00 : f32} : tensor<?x8xf32, #tgraph.dims<[B, 8]>>
// CHECK-DAG: %[[O:.+]] = tgraph.full {value = 1 : i32} : tensor<?xi32, #tgraph.dims<[N]>>
// CHECK-DAG: %[[C:.+]] = tgraph.constant dense<2.500000e+00> : tensor<3xf32>
// CHECK: return %[[Z]], %[[O]], %[[C]]
func.func @generators(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>, %i: tensor<?xi32, #tgraph.dims<[N]>>)
    -> (tensor<?x8xf32, #tgraph.dims<[B, 8]>>, tensor<?xi32, #tgraph.dims<[N]>>, tensor<3xf32>) {
  %z = tgraph.zeros_like %x : tensor<?x8xf32, #tgraph.dims<[B, 8]>>
  %o = tgraph.ones_like %i : tensor<?xi32, #tgraph.dims<[N]>>
  %f = tgraph.full {value = 2.5 : f32} : tensor<3xf32>
  return %z, %o, %f : tensor<?x8xf32, #tgraph.dims<[B, 8]>>, tensor<?xi32, #tgraph.dims<[N]>>, tensor<3xf32>
}

// -----

// Static dims fold; symbolic ones stay. A check between one value and itself
// (or two equal constants) is dropped; one between different constants
// stays and fails at run time.
// CHECK-LABEL: func.func @dims
// CHECK-SAME: (%[[X:.+]]: tensor<?x8xf32, #tgraph.dims<[B, 8]>>)
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[N:.+]] = tgraph.constant dense<8.000000e+00> : tensor<f32>
// CHECK-DAG: %[[B:.+]] = tgraph.dim %[[X]], 0
// CHECK: tgraph.assert_dim eq %[[C8]], %[[C4]], "never"
// CHECK-NOT: assert_dim
// CHECK: return %[[C8]], %[[B]], %[[N]]
func.func @dims(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>) -> (index, index, tensor<f32>) {
  %d = tgraph.dim %x, 1 : tensor<?x8xf32, #tgraph.dims<[B, 8]>>
  %b = tgraph.dim %x, 0 : tensor<?x8xf32, #tgraph.dims<[B, 8]>>
  %n = tgraph.dim_size %x {dim = 1 : i64} : tensor<?x8xf32, #tgraph.dims<[B, 8]>> -> tensor<f32>
  %c8 = arith.constant 8 : index
  %c4 = arith.constant 4 : index
  tgraph.assert_dim eq %b, %b, "same value"
  tgraph.assert_dim eq %d, %c8, "equal constants"
  tgraph.assert_dim eq %c8, %c4, "never"
  return %d, %b, %n : index, index, tensor<f32>
}

// -----

// `le` between constants folds when it holds (and between a value and
// itself); a symbolic side stays.
// CHECK-LABEL: func.func @le_checks
// CHECK-NOT: "holds"
// CHECK-NOT: "itself"
// CHECK: tgraph.assert_dim le %{{.+}}, %{{.+}}, "fails"
// CHECK: tgraph.assert_dim le %{{.+}}, %{{.+}}, "depends"
// CHECK-NOT: assert_dim
func.func @le_checks(%x: tensor<?xf32, #tgraph.dims<[B]>>) {
  %b = tgraph.dim %x, 0 : tensor<?xf32, #tgraph.dims<[B]>>
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tgraph.assert_dim le %c1, %c4, "holds"
  tgraph.assert_dim le %b, %b, "itself"
  tgraph.assert_dim le %c4, %c1, "fails"
  tgraph.assert_dim le %c1, %b, "depends"
  return
}

// -----

// A cond on a constant is its taken branch.
// CHECK-LABEL: func.func @constant_cond
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK-NOT: tgraph.cond
// CHECK: %[[N:.+]] = tgraph.neg %[[X]]
// CHECK: return %[[N]]
func.func @constant_cond(%x: tensor<4xf32>) -> tensor<4xf32> {
  %f = tgraph.constant dense<false> : tensor<i1>
  %r = tgraph.cond %f -> tensor<4xf32> {
    tgraph.yield %x : tensor<4xf32>
  } else {
    %n = tgraph.neg %x : tensor<4xf32>
    tgraph.yield %n : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

// i1 compares as 0/1 (true > false); relu(-0.0) is +0.0 like max(-0.0, +0.0).
// CHECK-LABEL: func.func @bool_compare_and_relu_zero
// CHECK-DAG: %[[GT:.+]] = tgraph.constant dense<true> : tensor<1xi1>
// CHECK-DAG: %[[LT:.+]] = tgraph.constant dense<false> : tensor<1xi1>
// CHECK-DAG: %[[Z:.+]] = tgraph.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK: return %[[GT]], %[[LT]], %[[Z]], %[[Z]]
func.func @bool_compare_and_relu_zero() -> (tensor<1xi1>, tensor<1xi1>, tensor<1xf32>, tensor<1xf32>) {
  %t = tgraph.constant dense<true> : tensor<1xi1>
  %f = tgraph.constant dense<false> : tensor<1xi1>
  %gt = tgraph.compare gt, %t, %f : (tensor<1xi1>, tensor<1xi1>) -> tensor<1xi1>
  %lt = tgraph.compare lt, %t, %f : (tensor<1xi1>, tensor<1xi1>) -> tensor<1xi1>
  %nz = tgraph.constant dense<-0.0> : tensor<1xf32>
  %pz = tgraph.constant dense<0.0> : tensor<1xf32>
  %r = tgraph.relu %nz : tensor<1xf32>
  %m = tgraph.max %nz, %pz : tensor<1xf32>
  return %gt, %lt, %r, %m : tensor<1xi1>, tensor<1xi1>, tensor<1xf32>, tensor<1xf32>
}

// -----

// A cast chain keeps both casts when the outer one has a policy: the policy
// may not apply to the combined cast (f8 -> bf16 is exact, i8 -> i8 cannot
// overflow).
// CHECK-LABEL: func.func @cast_chain_with_policy
// CHECK-COUNT-4: tgraph.cast
func.func @cast_chain_with_policy(%a: tensor<4xf8E4M3FN>, %i: tensor<4xi8>) -> (tensor<4xbf16>, tensor<4xi8>) {
  %a1 = tgraph.cast %a : tensor<4xf8E4M3FN> -> tensor<4xf16>
  %a2 = tgraph.cast %a1 {policy = #tgraph.policy<stochastic_round>} : tensor<4xf16> -> tensor<4xbf16>
  %i1 = tgraph.cast %i : tensor<4xi8> -> tensor<4xi32>
  %i2 = tgraph.cast %i1 {policy = #tgraph.policy<saturate>} : tensor<4xi32> -> tensor<4xi8>
  return %a2, %i2 : tensor<4xbf16>, tensor<4xi8>
}
