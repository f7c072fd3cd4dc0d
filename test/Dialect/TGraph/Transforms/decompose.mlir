// RUN: tessera-opt %s -split-input-file --tessera-tgraph-decompose | FileCheck %s
// RUN: tessera-opt %s -split-input-file --tessera-tgraph-decompose=ops=silu | FileCheck %s --check-prefix=ONLY
// RUN: not tessera-opt %s --tessera-tgraph-decompose=ops=conv 2>&1 | FileCheck %s --check-prefix=BADOPT

// Each composite op expands into the textbook formula over primitives, with
// symbolic shapes carried through.

// BADOPT: error: -tessera-tgraph-decompose: unknown composite op 'conv'; expected one of gelu, silu,

// silu(x) = x * sigmoid(x); with ops=silu only silu expands. (The greedy
// driver moves constants to the right of commutative ops.)
// CHECK-LABEL: func.func @silu_and_gelu
// CHECK-SAME: (%[[X:.+]]: tensor<?x?xf32, #tgraph.dims<[B, S]>>)
// CHECK-DAG: %[[HALF:.+]] = tgraph.constant dense<5.000000e-01> : tensor<f32>
// CHECK-DAG: %[[ONE:.+]] = tgraph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[RSQRT2:.+]] = tgraph.constant dense<0.707106769> : tensor<f32>
// CHECK: %[[SIG:.+]] = tgraph.sigmoid %[[X]]
// CHECK: %[[SILU:.+]] = tgraph.mul %[[X]], %[[SIG]]
// CHECK: %[[SCALED:.+]] = tgraph.mul %[[X]], %[[RSQRT2]]
// CHECK: %[[ERF:.+]] = tgraph.erf %[[SCALED]]
// CHECK: %[[HX:.+]] = tgraph.mul %[[X]], %[[HALF]]
// CHECK: %[[ONEPLUS:.+]] = tgraph.add %[[ERF]], %[[ONE]]
// CHECK: %[[GELU:.+]] = tgraph.mul %[[HX]], %[[ONEPLUS]]
// CHECK: return %[[SILU]], %[[GELU]]
// ONLY-LABEL: func.func @silu_and_gelu
// ONLY: tgraph.sigmoid
// ONLY: tgraph.gelu
func.func @silu_and_gelu(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) -> (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  %s = tgraph.silu %x : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  %g = tgraph.gelu %x : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return %s, %g : tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?x?xf32, #tgraph.dims<[B, S]>>
}

// -----

// gelu with tanh: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
// as x sigmoid(2u) with 2u = x (2 sqrt(2/pi) + 2 sqrt(2/pi) 0.044715 x^2),
// the sigmoid in its stable form (2u >= 0 ? 1 : e) / (1 + e), e = exp(-|2u|)
// CHECK-LABEL: func.func @gelu_tanh
// CHECK-SAME: (%[[X:.+]]: tensor<8xf32>)
// CHECK-DAG: %[[ONE:.+]] = tgraph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[ZERO:.+]] = tgraph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[K0:.+]] = tgraph.constant dense<1.59576917> : tensor<f32>
// CHECK-DAG: %[[K1:.+]] = tgraph.constant dense<0.0713548139> : tensor<f32>
// CHECK: %[[SQ:.+]] = tgraph.square %[[X]]
// CHECK: %[[T:.+]] = tgraph.mul %[[SQ]], %[[K1]]
// CHECK: %[[P:.+]] = tgraph.add %[[T]], %[[K0]]
// CHECK: %[[U2:.+]] = tgraph.mul %[[X]], %[[P]]
// CHECK: %[[A:.+]] = tgraph.abs %[[U2]]
// CHECK: %[[N:.+]] = tgraph.neg %[[A]]
// CHECK: %[[E:.+]] = tgraph.exp %[[N]]
// CHECK: %[[GE:.+]] = tgraph.compare ge, %[[U2]], %[[ZERO]]
// CHECK: %[[TOP:.+]] = tgraph.select %[[GE]], %[[ONE]], %[[E]]
// CHECK: %[[D:.+]] = tgraph.add %[[E]], %[[ONE]]
// CHECK: %[[S:.+]] = tgraph.div %[[TOP]], %[[D]]
// CHECK: tgraph.mul %[[X]], %[[S]]
func.func @gelu_tanh(%x: tensor<8xf32>) -> tensor<8xf32> {
  %g = tgraph.gelu %x {approximate} : tensor<8xf32>
  return %g : tensor<8xf32>
}

// -----

// softmax = exp(x - max) / sum(exp(x - max)), reductions keep the dim
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.+]]: tensor<?x?xf32, #tgraph.dims<[B, S]>>)
// CHECK: %[[M:.+]] = tgraph.reduce_max %[[X]] {dims = array<i64: 1>, keepdims} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x1xf32, #tgraph.dims<[B, 1]>>
// CHECK: %[[D:.+]] = tgraph.sub %[[X]], %[[M]]
// CHECK: %[[E:.+]] = tgraph.exp %[[D]]
// CHECK: %[[S:.+]] = tgraph.reduce_sum %[[E]] {dims = array<i64: 1>, keepdims}
// CHECK: %[[I:.+]] = tgraph.div %{{.+}}, %[[S]] : (tensor<f32>, tensor<?x1xf32, #tgraph.dims<[B, 1]>>) -> tensor<?x1xf32, #tgraph.dims<[B, 1]>>
// CHECK: %[[P:.+]] = tgraph.mul %[[E]], %[[I]] : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?x1xf32, #tgraph.dims<[B, 1]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK: return %[[P]]
func.func @softmax(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>> {
  %p = tgraph.softmax %x {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return %p : tensor<?x?xf32, #tgraph.dims<[B, S]>>
}

// -----

// log_softmax = (x - max) - log(sum(exp(x - max)))
// CHECK-LABEL: func.func @log_softmax
// CHECK: %[[M:.+]] = tgraph.reduce_max %{{.*}} {dims = array<i64: 0>, keepdims}
// CHECK: %[[D:.+]] = tgraph.sub %{{.*}}, %[[M]]
// CHECK: %[[E:.+]] = tgraph.exp %[[D]]
// CHECK: %[[S:.+]] = tgraph.reduce_sum %[[E]] {dims = array<i64: 0>, keepdims}
// CHECK: %[[L:.+]] = tgraph.log %[[S]]
// CHECK: %[[R:.+]] = tgraph.sub %[[D]], %[[L]]
// CHECK: return %[[R]]
func.func @log_softmax(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>> {
  %p = tgraph.log_softmax %x {dim = 0 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return %p : tensor<?x?xf32, #tgraph.dims<[B, S]>>
}

// -----

// softmax_safe: a fully masked row shifts by 0 and gives 0, not NaN.
// CHECK-LABEL: func.func @softmax_safe
// CHECK-DAG: %[[ZERO:.+]] = tgraph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[NINF:.+]] = tgraph.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[M:.+]] = tgraph.reduce_max
// CHECK: %[[MASKED:.+]] = tgraph.compare eq, %[[M]], %[[NINF]]
// CHECK: %[[SHIFT:.+]] = tgraph.select %[[MASKED]], %[[ZERO]], %[[M]]
// CHECK: %[[E:.+]] = tgraph.exp
// CHECK: %[[S:.+]] = tgraph.reduce_sum %[[E]]
// CHECK: %[[EMPTY:.+]] = tgraph.compare eq, %[[S]], %[[ZERO]]
// CHECK: %[[P:.+]] = tgraph.div %[[E]], %[[S]]
// CHECK: %[[R:.+]] = tgraph.select %[[EMPTY]], %[[ZERO]], %[[P]]
// CHECK: return %[[R]]
func.func @softmax_safe(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>> {
  %p = tgraph.softmax_safe %x {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return %p : tensor<?x?xf32, #tgraph.dims<[B, S]>>
}

// -----

// logsumexp without keepdims: the shift is subtracted with the dim kept and
// added back without it (no reshape, which '?' dims could not express).
// CHECK-LABEL: func.func @logsumexp
// CHECK: %[[MK:.+]] = tgraph.reduce_max %{{.*}} {dims = array<i64: 1>, keepdims}
// CHECK: %[[D:.+]] = tgraph.sub %{{.*}}, %[[MK]]
// CHECK: %[[E:.+]] = tgraph.exp %[[D]]
// CHECK: %[[S:.+]] = tgraph.reduce_sum %[[E]] {dims = array<i64: 1>} : {{.*}} -> tensor<?xf32, #tgraph.dims<[B]>>
// CHECK: %[[M:.+]] = tgraph.reduce_max %{{.*}} {dims = array<i64: 1>} : {{.*}} -> tensor<?xf32, #tgraph.dims<[B]>>
// CHECK: %[[L:.+]] = tgraph.log %[[S]]
// CHECK: %[[R:.+]] = tgraph.add %[[M]], %[[L]] : tensor<?xf32, #tgraph.dims<[B]>>
// CHECK-NOT: tgraph.reshape
// CHECK: return %[[R]]
func.func @logsumexp(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) -> tensor<?xf32, #tgraph.dims<[B]>> {
  %l = tgraph.logsumexp %x {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, #tgraph.dims<[B]>>
  return %l : tensor<?xf32, #tgraph.dims<[B]>>
}

// -----

// logsumexp_safe keeps the dim here and shifts by 0 on masked rows.
// CHECK-LABEL: func.func @logsumexp_safe
// CHECK: tgraph.compare eq
// CHECK: tgraph.select
// CHECK-NOT: tgraph.reshape
// CHECK: return
func.func @logsumexp_safe(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) -> tensor<?x1xf32, #tgraph.dims<[B, 1]>> {
  %l = tgraph.logsumexp_safe %x {dim = 1 : i64, keepdims} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x1xf32, #tgraph.dims<[B, 1]>>
  return %l : tensor<?x1xf32, #tgraph.dims<[B, 1]>>
}

// -----

// reduce_mean = reduce_sum / (product of the reduced dim sizes); the static
// size folds to a constant and 1 * B to B.
// CHECK-LABEL: func.func @mean
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x4xf32, #tgraph.dims<[B, S, 4]>>)
// CHECK-DAG: %[[FOUR:.+]] = tgraph.constant dense<4.000000e+00> : tensor<f32>
// CHECK: %[[N0:.+]] = tgraph.dim_size %[[X]] {dim = 0 : i64}
// CHECK: %[[C2:.+]] = tgraph.mul %[[N0]], %[[FOUR]] : tensor<f32>
// CHECK: %[[S:.+]] = tgraph.reduce_sum %[[X]] {dims = array<i64: 0, 2>, stable} : tensor<?x?x4xf32, #tgraph.dims<[B, S, 4]>> -> tensor<?xf32, #tgraph.dims<[S]>>
// CHECK: %[[M:.+]] = tgraph.div %[[S]], %[[C2]]
// CHECK: return %[[M]]
func.func @mean(%x: tensor<?x?x4xf32, #tgraph.dims<[B, S, 4]>>) -> tensor<?xf32, #tgraph.dims<[S]>> {
  %m = tgraph.reduce_mean %x {dims = array<i64: 0, 2>, stable} : tensor<?x?x4xf32, #tgraph.dims<[B, S, 4]>> -> tensor<?xf32, #tgraph.dims<[S]>>
  return %m : tensor<?xf32, #tgraph.dims<[S]>>
}

// -----

// layernorm = (x - mean) * rsqrt(var + eps) * scale + bias
// CHECK-LABEL: func.func @layernorm
// CHECK-SAME: (%[[X:.+]]: tensor<?x?xf32, #tgraph.dims<[B, S]>>, %[[G:.+]]: tensor<?xf32, #tgraph.dims<[S]>>, %[[BI:.+]]: tensor<?xf32, #tgraph.dims<[S]>>)
// CHECK-DAG: %[[EPS:.+]] = tgraph.constant dense<1.000000e-03> : tensor<f32>
// CHECK: %[[MEAN:.+]] = tgraph.div
// CHECK: %[[XC:.+]] = tgraph.sub %[[X]], %[[MEAN]]
// CHECK: %[[SQ:.+]] = tgraph.square %[[XC]]
// CHECK: %[[VAR:.+]] = tgraph.div
// CHECK: %[[VE:.+]] = tgraph.add %[[VAR]], %[[EPS]]
// CHECK: %[[INV:.+]] = tgraph.rsqrt %[[VE]]
// CHECK: %[[Y:.+]] = tgraph.mul %[[XC]], %[[INV]]
// CHECK: %[[YS:.+]] = tgraph.mul %[[Y]], %[[G]]
// CHECK: %[[YB:.+]] = tgraph.add %[[YS]], %[[BI]]
// CHECK: return %[[YB]]
func.func @layernorm(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>, %g: tensor<?xf32, #tgraph.dims<[S]>>,
                     %b: tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>> {
  %y = tgraph.layernorm %x scale %g bias %b {axis = 1 : i64, epsilon = 1.0e-3 : f64}
      : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?xf32, #tgraph.dims<[S]>>, tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return %y : tensor<?x?xf32, #tgraph.dims<[B, S]>>
}

// -----

// layernorm_safe on bf16: statistics in f32, variance clamped at 0, cast back.
// CHECK-LABEL: func.func @layernorm_safe
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xbf16, #tgraph.dims<[B, 64]>>)
// CHECK-DAG: %[[ZERO:.+]] = tgraph.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[XF:.+]] = tgraph.cast %[[X]] : tensor<?x64xbf16, #tgraph.dims<[B, 64]>> -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK: %[[MEAN:.+]] = tgraph.div
// CHECK: %[[VAR:.+]] = tgraph.div
// CHECK: %[[CLAMPED:.+]] = tgraph.max %[[VAR]], %[[ZERO]]
// CHECK: %[[Y:.+]] = tgraph.cast %{{.*}} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x64xbf16, #tgraph.dims<[B, 64]>>
// CHECK: return %[[Y]]
func.func @layernorm_safe(%x: tensor<?x64xbf16, #tgraph.dims<[B, 64]>>) -> tensor<?x64xbf16, #tgraph.dims<[B, 64]>> {
  %y = tgraph.layernorm_safe %x {axis = 1 : i64} : (tensor<?x64xbf16, #tgraph.dims<[B, 64]>>) -> tensor<?x64xbf16, #tgraph.dims<[B, 64]>>
  return %y : tensor<?x64xbf16, #tgraph.dims<[B, 64]>>
}

// -----

// rmsnorm = x * rsqrt(mean(x^2) + eps) * scale; no cast for f32 storage.
// CHECK-LABEL: func.func @rmsnorm
// CHECK-SAME: (%[[X:.+]]: tensor<?x?xf32, #tgraph.dims<[B, S]>>, %[[G:.+]]: tensor<?xf32, #tgraph.dims<[S]>>)
// CHECK-NOT: tgraph.cast
// CHECK: %[[SQ:.+]] = tgraph.square %[[X]]
// CHECK: %[[MS:.+]] = tgraph.div
// CHECK: %[[INV:.+]] = tgraph.rsqrt
// CHECK: %[[Y:.+]] = tgraph.mul %[[X]], %[[INV]]
// CHECK: %[[YS:.+]] = tgraph.mul %[[Y]], %[[G]]
// CHECK: return %[[YS]]
func.func @rmsnorm(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>, %g: tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>> {
  %y = tgraph.rmsnorm %x scale %g {axis = 1 : i64} : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return %y : tensor<?x?xf32, #tgraph.dims<[B, S]>>
}

// -----

// rmsnorm_safe on bf16 computes in f32 (the scale is widened too).
// CHECK-LABEL: func.func @rmsnorm_safe
// CHECK: tgraph.cast %{{.*}} : tensor<?x?xbf16, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK: tgraph.cast %{{.*}} : tensor<?xbf16, #tgraph.dims<[S]>> -> tensor<?xf32, #tgraph.dims<[S]>>
// CHECK: tgraph.cast %{{.*}} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xbf16, #tgraph.dims<[B, S]>>
func.func @rmsnorm_safe(%x: tensor<?x?xbf16, #tgraph.dims<[B, S]>>, %g: tensor<?xbf16, #tgraph.dims<[S]>>) -> tensor<?x?xbf16, #tgraph.dims<[B, S]>> {
  %y = tgraph.rmsnorm_safe %x scale %g {axis = 1 : i64} : (tensor<?x?xbf16, #tgraph.dims<[B, S]>>, tensor<?xbf16, #tgraph.dims<[S]>>) -> tensor<?x?xbf16, #tgraph.dims<[B, S]>>
  return %y : tensor<?x?xbf16, #tgraph.dims<[B, S]>>
}

// -----

// attention = softmax(q k^T / sqrt(D) [masked]) v; the causal mask keeps
// key j for query i when j <= i + (Sk - Sq).
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.+]]: tensor<2x?x16xf32, #tgraph.dims<[2, S, 16]>>, %[[K:.+]]: tensor<2x?x16xf32, #tgraph.dims<[2, T, 16]>>, %[[V:.+]]: tensor<2x?x8xf32, #tgraph.dims<[2, T, 8]>>)
// CHECK-DAG: %[[NINF:.+]] = tgraph.constant dense<0xFF800000> : tensor<f32>
// CHECK-DAG: %[[SCALE:.+]] = tgraph.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[S:.+]] = tgraph.matmul %[[Q]], %[[K]] {transpose_rhs} : (tensor<2x?x16xf32, #tgraph.dims<[2, S, 16]>>, tensor<2x?x16xf32, #tgraph.dims<[2, T, 16]>>) -> tensor<2x?x?xf32, #tgraph.dims<[2, S, T]>>
// CHECK: %[[SS:.+]] = tgraph.mul %[[S]], %[[SCALE]]
// CHECK: %[[ROW:.+]] = tgraph.iota {dim = 0 : i64} : tensor<?x?xi64, #tgraph.dims<[S, T]>>
// CHECK: %[[COL:.+]] = tgraph.iota {dim = 1 : i64} : tensor<?x?xi64, #tgraph.dims<[S, T]>>
// CHECK: %[[SK:.+]] = tgraph.dim_size %[[K]] {dim = 1 : i64} : tensor<2x?x16xf32, #tgraph.dims<[2, T, 16]>> -> tensor<i64>
// CHECK: %[[SQ:.+]] = tgraph.dim_size %[[Q]] {dim = 1 : i64} : tensor<2x?x16xf32, #tgraph.dims<[2, S, 16]>> -> tensor<i64>
// CHECK: %[[OFF:.+]] = tgraph.sub %[[SK]], %[[SQ]]
// CHECK: %[[LAST:.+]] = tgraph.add %[[ROW]], %[[OFF]]
// CHECK: %[[VIS:.+]] = tgraph.compare le, %[[COL]], %[[LAST]]
// CHECK: %[[MASKED:.+]] = tgraph.select %[[VIS]], %[[SS]], %[[NINF]]
// CHECK: tgraph.div
// CHECK: %[[P:.+]] = tgraph.mul
// CHECK: %[[O:.+]] = tgraph.matmul %[[P]], %[[V]] : (tensor<2x?x?xf32, #tgraph.dims<[2, S, T]>>, tensor<2x?x8xf32, #tgraph.dims<[2, T, 8]>>) -> tensor<2x?x8xf32, #tgraph.dims<[2, S, 8]>>
// CHECK: return %[[O]]
func.func @attention(%q: tensor<2x?x16xf32, #tgraph.dims<[2, S, 16]>>,
                     %k: tensor<2x?x16xf32, #tgraph.dims<[2, T, 16]>>,
                     %v: tensor<2x?x8xf32, #tgraph.dims<[2, T, 8]>>) -> tensor<2x?x8xf32, #tgraph.dims<[2, S, 8]>> {
  %o = tgraph.attention %q, %k, %v {causal} : (tensor<2x?x16xf32, #tgraph.dims<[2, S, 16]>>,
      tensor<2x?x16xf32, #tgraph.dims<[2, T, 16]>>, tensor<2x?x8xf32, #tgraph.dims<[2, T, 8]>>)
      -> tensor<2x?x8xf32, #tgraph.dims<[2, S, 8]>>
  return %o : tensor<2x?x8xf32, #tgraph.dims<[2, S, 8]>>
}

// -----

// attention_grad: the probabilities again, dv = P^T g, dP = g v^T,
// dS = P (dP - rowsum(P dP)) scale, dq = dS k, dk = dS^T q.
// CHECK-LABEL: func.func @attention_grad
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8xf32>, %[[K:.+]]: tensor<2x6x8xf32>, %[[V:.+]]: tensor<2x6x3xf32>, %[[O:.+]]: tensor<2x4x3xf32>, %[[G:.+]]: tensor<2x4x3xf32>)
// CHECK: tgraph.matmul %[[Q]], %[[K]] {transpose_rhs}
// CHECK: tgraph.select
// CHECK: tgraph.exp
// CHECK: %[[P:.+]] = tgraph.mul
// CHECK: %[[DV:.+]] = tgraph.matmul %[[P]], %[[G]] {transpose_lhs} : (tensor<2x4x6xf32>, tensor<2x4x3xf32>) -> tensor<2x6x3xf32>
// CHECK: %[[DP:.+]] = tgraph.matmul %[[G]], %[[V]] {transpose_rhs} : (tensor<2x4x3xf32>, tensor<2x6x3xf32>) -> tensor<2x4x6xf32>
// CHECK: %[[PDP:.+]] = tgraph.mul %[[P]], %[[DP]]
// CHECK: %[[ROWS:.+]] = tgraph.reduce_sum %[[PDP]] {dims = array<i64: 2>, keepdims}
// CHECK: %[[C:.+]] = tgraph.sub %[[DP]], %[[ROWS]]
// CHECK: %[[PC:.+]] = tgraph.mul %[[P]], %[[C]]
// CHECK: %[[DS:.+]] = tgraph.mul %[[PC]], %{{.+}} : (tensor<2x4x6xf32>, tensor<f32>)
// CHECK: %[[DQ:.+]] = tgraph.matmul %[[DS]], %[[K]] : (tensor<2x4x6xf32>, tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[DK:.+]] = tgraph.matmul %[[DS]], %[[Q]] {transpose_lhs} : (tensor<2x4x6xf32>, tensor<2x4x8xf32>) -> tensor<2x6x8xf32>
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @attention_grad(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>,
                          %v: tensor<2x6x3xf32>, %o: tensor<2x4x3xf32>,
                          %g: tensor<2x4x3xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x3xf32>) {
  %dq, %dk, %dv = tgraph.attention_grad %q, %k, %v, %o, %g {causal}
      : (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x3xf32>,
         tensor<2x4x3xf32>, tensor<2x4x3xf32>)
      -> (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x3xf32>)
  return %dq, %dk, %dv : tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x3xf32>
}

// -----

// An attention policy with a rounding flag: the expansions' products take
// the accumulation type alone (their results are f32) and the final casts
// round (a matmul into f32 cannot round stochastically).
// CHECK-LABEL: func.func @attention_rounded
// CHECK: tgraph.matmul %{{.*}} {policy = #tgraph.policy<accum = f32>, transpose_rhs}
// CHECK: tgraph.cast %{{.*}} {policy = #tgraph.policy<stochastic_round>} : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
// CHECK-NOT: stochastic_round>, transpose
// CHECK: tgraph.cast %{{.*}} {policy = #tgraph.policy<stochastic_round>} : tensor<2x4x8xf32> -> tensor<2x4x8xbf16>
func.func @attention_rounded(%q: tensor<2x4x8xbf16>, %g: tensor<2x4x8xbf16>)
    -> (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) {
  %o = tgraph.attention %q, %q, %q {causal, policy = #tgraph.policy<accum = f32, stochastic_round>} : tensor<2x4x8xbf16>
  %dq, %dk, %dv = tgraph.attention_grad %q, %q, %q, %o, %g {causal, policy = #tgraph.policy<accum = f32, stochastic_round>}
      : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>,
         tensor<2x4x8xbf16>, tensor<2x4x8xbf16>)
      -> (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>)
  return %o, %dq : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>
}

// -----

// A causal mask over unknown ('?') lengths cannot be built: the op stays.
// CHECK-LABEL: func.func @attention_unknown_lengths
// CHECK: tgraph.attention
func.func @attention_unknown_lengths(%q: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %o = tgraph.attention %q, %q, %q {causal} : tensor<?x16xf32>
  return %o : tensor<?x16xf32>
}

// -----

// cross_entropy with class indices selects log p[label] (a product with a
// one-hot vector would make 0 * -inf = NaN for a -inf logit of another
// class), then takes the mean of the NLL.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[L:.+]]: tensor<?x10xf32, #tgraph.dims<[B, 10]>>, %[[Y:.+]]: tensor<?xi64, #tgraph.dims<[B]>>)
// CHECK-DAG: %[[ZERO:.+]] = tgraph.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[SHIFTED:.+]] = tgraph.sub
// CHECK: %[[LP:.+]] = tgraph.sub %[[SHIFTED]]
// CHECK: %[[CLS:.+]] = tgraph.iota {dim = 0 : i64} : tensor<10xi64>
// CHECK: %[[COL:.+]] = tgraph.broadcast_in_dim %[[Y]] {broadcast_dimensions = array<i64: 0>} : tensor<?xi64, #tgraph.dims<[B]>> -> tensor<?x1xi64, #tgraph.dims<[B, 1]>>
// CHECK: %[[HIT:.+]] = tgraph.compare eq, %[[COL]], %[[CLS]] : (tensor<?x1xi64, #tgraph.dims<[B, 1]>>, tensor<10xi64>) -> tensor<?x10xi1, #tgraph.dims<[B, 10]>>
// CHECK: %[[PICK:.+]] = tgraph.select %[[HIT]], %[[LP]], %[[ZERO]]
// CHECK: %[[S:.+]] = tgraph.reduce_sum %[[PICK]] {dims = array<i64: 1>}
// CHECK: %[[NLL:.+]] = tgraph.neg %[[S]] : tensor<?xf32, #tgraph.dims<[B]>>
// CHECK: %[[TOT:.+]] = tgraph.reduce_sum %[[NLL]] {dims = array<i64: 0>} : tensor<?xf32, #tgraph.dims<[B]>> -> tensor<f32>
// CHECK: %[[MEAN:.+]] = tgraph.div %[[TOT]]
// CHECK: return %[[MEAN]]
func.func @cross_entropy(%logits: tensor<?x10xf32, #tgraph.dims<[B, 10]>>,
                         %labels: tensor<?xi64, #tgraph.dims<[B]>>) -> tensor<f32> {
  %l = tgraph.cross_entropy %logits, %labels : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>,
      tensor<?xi64, #tgraph.dims<[B]>>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Soft labels: sum of p * log q, with 0 * log 0 taken as 0; reduction none.
// CHECK-LABEL: func.func @cross_entropy_soft
// CHECK-SAME: (%{{.*}}: tensor<?x10xf32, #tgraph.dims<[B, 10]>>, %[[P:.+]]: tensor<?x10xf32, #tgraph.dims<[B, 10]>>)
// CHECK-DAG: %[[ZERO:.+]] = tgraph.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[ABSENT:.+]] = tgraph.compare eq, %[[P]], %[[ZERO]]
// CHECK: %[[T:.+]] = tgraph.mul %[[P]], %{{.*}}
// CHECK: %[[TERMS:.+]] = tgraph.select %[[ABSENT]], %[[ZERO]], %[[T]]
// CHECK: %[[S:.+]] = tgraph.reduce_sum %[[TERMS]] {dims = array<i64: 1>}
// CHECK: %[[NLL:.+]] = tgraph.neg %[[S]]
// CHECK: return %[[NLL]]
func.func @cross_entropy_soft(%logits: tensor<?x10xf32, #tgraph.dims<[B, 10]>>,
                              %p: tensor<?x10xf32, #tgraph.dims<[B, 10]>>) -> tensor<?xf32, #tgraph.dims<[B]>> {
  %l = tgraph.cross_entropy %logits, %p {reduction = #tgraph<loss_reduction none>}
      : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>, tensor<?x10xf32, #tgraph.dims<[B, 10]>>) -> tensor<?xf32, #tgraph.dims<[B]>>
  return %l : tensor<?xf32, #tgraph.dims<[B]>>
}

// -----

// loss_scale moves to the final reduction, and a bf16 loss with accum f32
// computes in f32 and casts once.
// CHECK-LABEL: func.func @cross_entropy_policy
// CHECK: tgraph.cast %arg0 : tensor<8x10xbf16> -> tensor<8x10xf32>
// CHECK: tgraph.reduce_sum %{{.*}} {dims = array<i64: 0>, policy = #tgraph.policy<loss_scale = 1.024000e+03>} : tensor<8xf32> -> tensor<f32>
// CHECK: tgraph.cast %{{.*}} : tensor<f32> -> tensor<bf16>
func.func @cross_entropy_policy(%logits: tensor<8x10xbf16>, %labels: tensor<8xi32>) -> tensor<bf16> {
  %l = tgraph.cross_entropy %logits, %labels {reduction = #tgraph<loss_reduction sum>,
      policy = #tgraph.policy<accum = f32, loss_scale = 1024.0>} : (tensor<8x10xbf16>, tensor<8xi32>) -> tensor<bf16>
  return %l : tensor<bf16>
}

// -----

// embedding(table, ids) = gather(table, ids, dim 0)
// CHECK-LABEL: func.func @embedding
// CHECK: %[[G:.+]] = tgraph.gather %arg0, %arg1 {dim = 0 : i64} : (tensor<100x16xf32>, tensor<?xi32, #tgraph.dims<[B]>>) -> tensor<?x16xf32, #tgraph.dims<[B, 16]>>
// CHECK: return %[[G]]
func.func @embedding(%t: tensor<100x16xf32>, %ids: tensor<?xi32, #tgraph.dims<[B]>>) -> tensor<?x16xf32, #tgraph.dims<[B, 16]>> {
  %e = tgraph.embedding %t, %ids : (tensor<100x16xf32>, tensor<?xi32, #tgraph.dims<[B]>>) -> tensor<?x16xf32, #tgraph.dims<[B, 16]>>
  return %e : tensor<?x16xf32, #tgraph.dims<[B, 16]>>
}

// -----

// fp8 attention with an f32 accumulation policy: scores, the mask (-inf is
// available in f32) and softmax in f32, v widened, one cast at the end.
// CHECK-LABEL: func.func @attention_fp8
// CHECK: %[[S:.+]] = tgraph.matmul %arg0, %arg1 {policy = #tgraph.policy<accum = f32>, transpose_rhs} : (tensor<4x16xf8E4M3FN>, tensor<4x16xf8E4M3FN>) -> tensor<4x4xf32>
// CHECK: tgraph.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
// CHECK: %[[V:.+]] = tgraph.cast %arg2 : tensor<4x16xf8E4M3FN> -> tensor<4x16xf32>
// CHECK: %[[O:.+]] = tgraph.matmul %{{.*}}, %[[V]] : (tensor<4x4xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK: tgraph.cast %[[O]] : tensor<4x16xf32> -> tensor<4x16xf8E4M3FN>
func.func @attention_fp8(%q: tensor<4x16xf8E4M3FN>, %k: tensor<4x16xf8E4M3FN>, %v: tensor<4x16xf8E4M3FN>) -> tensor<4x16xf8E4M3FN> {
  %o = tgraph.attention %q, %k, %v {causal, policy = #tgraph.policy<accum = f32>} : tensor<4x16xf8E4M3FN>
  return %o : tensor<4x16xf8E4M3FN>
}

// -----

// A mean over 65536 f16 values: the count (inf in f16) and the division are
// in f32, with one cast back.
// CHECK-LABEL: func.func @mean_f16
// CHECK-DAG: %[[N:.+]] = tgraph.constant dense<6.553600e+04> : tensor<f32>
// CHECK-DAG: %[[X:.+]] = tgraph.cast %arg0 : tensor<256x256xf16> -> tensor<256x256xf32>
// CHECK: %[[S:.+]] = tgraph.reduce_sum %[[X]] {dims = array<i64: 0, 1>} : tensor<256x256xf32> -> tensor<f32>
// CHECK: %[[M:.+]] = tgraph.div %[[S]], %[[N]] : tensor<f32>
// CHECK: tgraph.cast %[[M]] : tensor<f32> -> tensor<f16>
func.func @mean_f16(%x: tensor<256x256xf16>) -> tensor<f16> {
  %m = tgraph.reduce_mean %x {dims = array<i64: 0, 1>} : tensor<256x256xf16> -> tensor<f16>
  return %m : tensor<f16>
}

// -----

// A composite whose declared result is less refined than inferred is left
// alone: its expansion would change the types its users see.
// CHECK-LABEL: func.func @less_refined_stays
// CHECK: tgraph.reduce_mean
func.func @less_refined_stays(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>) -> tensor<?xf32> {
  %m = tgraph.reduce_mean %x {dims = array<i64: 1>} : tensor<?x8xf32, #tgraph.dims<[B, 8]>> -> tensor<?xf32>
  return %m : tensor<?xf32>
}

// -----

// logsumexp and one_hot over several '?' dims need no reshape.
// CHECK-LABEL: func.func @unknown_dims
// CHECK-NOT: tgraph.reshape
// CHECK-NOT: tgraph.logsumexp
// CHECK-NOT: tgraph.one_hot
func.func @unknown_dims(%x: tensor<?x?x?xf32>, %ids: tensor<?x?xi64>) -> (tensor<?x?xf32>, tensor<?x?x5xf32>) {
  %l = tgraph.logsumexp %x {dim = 2 : i64} : tensor<?x?x?xf32> -> tensor<?x?xf32>
  %o = tgraph.one_hot %ids {num_classes = 5 : i64} : tensor<?x?xi64> -> tensor<?x?x5xf32>
  return %l, %o : tensor<?x?xf32>, tensor<?x?x5xf32>
}

// -----

// layernorm with accum = f32 on bf16 storage computes its statistics in f32.
// CHECK-LABEL: func.func @layernorm_accum
// CHECK: tgraph.cast %arg0 : tensor<4x64xbf16> -> tensor<4x64xf32>
// CHECK: tgraph.reduce_sum %{{.*}} : tensor<4x64xf32> -> tensor<4x1xf32>
// CHECK: tgraph.cast %{{.*}} : tensor<4x64xf32> -> tensor<4x64xbf16>
func.func @layernorm_accum(%x: tensor<4x64xbf16>) -> tensor<4x64xbf16> {
  %y = tgraph.layernorm %x {axis = 1 : i64, policy = #tgraph.policy<accum = f32>} : (tensor<4x64xbf16>) -> tensor<4x64xbf16>
  return %y : tensor<4x64xbf16>
}
