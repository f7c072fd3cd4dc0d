// RUN: tessera-opt %s -split-input-file --tessera-tgraph-lower-to-linalg --canonicalize --cse -verify-diagnostics | FileCheck %s

// Broadcasting reads the statically-1 (or missing) dims at index 0; the
// symbolic batch size comes from tensor.dim of the operand that carries it.
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @broadcast_add
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x64xf32> {bufferization.writable = false}, %[[B:[^:]+]]: tensor<64xf32> {bufferization.writable = false}) -> tensor<?x64xf32>
// CHECK: %[[N:.+]] = tensor.dim %[[X]], %{{.*}} : tensor<?x64xf32>
// CHECK: %[[E:.+]] = tensor.empty(%[[N]]) : tensor<?x64xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]], %[[B]] : tensor<?x64xf32>, tensor<64xf32>) outs(%[[E]] : tensor<?x64xf32>)
// CHECK: arith.addf
func.func @broadcast_add(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>, %b: tensor<64xf32>)
    -> tensor<?x64xf32, #tgraph.dims<[B, 64]>> {
  %0 = tgraph.add %x, %b : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  return %0 : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
}

// -----

// A matmul is a contraction over (M, N, K) accumulating from zero.
// CHECK-DAG: #[[A:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[B:.+]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[C:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul
// CHECK: %[[Z:.+]] = linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[Z]] : tensor<?x32xf32>)
// CHECK: %[[P:.+]] = arith.mulf
// CHECK: arith.addf %{{.*}}, %[[P]]
func.func @matmul(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>, %w: tensor<64x32xf32>) -> tensor<?x32xf32, #tgraph.dims<[B, 32]>> {
  %0 = tgraph.matmul %x, %w : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<64x32xf32>) -> tensor<?x32xf32, #tgraph.dims<[B, 32]>>
  return %0 : tensor<?x32xf32, #tgraph.dims<[B, 32]>>
}

// -----

// Activations [B, S, K] times a weight [K, N]: B and S collapse into the
// rows of one matrix product, whose result expands back.
// CHECK-LABEL: func.func @matmul_tokens
// CHECK: %[[X:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1], [2]] : tensor<?x?x64xf32> into tensor<?x64xf32>
// CHECK: %[[P:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %{{.+}} : tensor<?x64xf32>, tensor<64x32xf32>) outs(%{{.+}} : tensor<?x32xf32>)
// CHECK: tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2]] output_shape [%{{.+}}, %{{.+}}, 32] : tensor<?x32xf32> into tensor<?x?x32xf32>
func.func @matmul_tokens(%x: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>, %w: tensor<64x32xf32>) -> tensor<?x?x32xf32, #tgraph.dims<[B, S, 32]>> {
  %0 = tgraph.matmul %x, %w : (tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>, tensor<64x32xf32>) -> tensor<?x?x32xf32, #tgraph.dims<[B, S, 32]>>
  return %0 : tensor<?x?x32xf32, #tgraph.dims<[B, S, 32]>>
}

// -----

// A bf16 product accumulated in f32 (the policy) is rounded once.
// CHECK-LABEL: func.func @bf16_accumulate_f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x16xbf16>, tensor<16x4xbf16>) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<8x4xf32>) outs(%{{.*}} : tensor<8x4xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @bf16_accumulate_f32(%a: tensor<8x16xbf16>, %b: tensor<16x4xbf16>) -> tensor<8x4xbf16> {
  %0 = tgraph.matmul %a, %b {policy = #tgraph.policy<accum = f32>} : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
  return %0 : tensor<8x4xbf16>
}

// -----

// A stable sum carries a Kahan compensation term; keepdims expands.
// CHECK-LABEL: func.func @stable_sum_keepdims
// CHECK: %[[R:.+]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: %[[Y:.+]] = arith.subf %{{.*}}, %{{.*}} : f32
// CHECK: %[[T:.+]] = arith.addf %{{.*}}, %[[Y]] : f32
// CHECK: linalg.yield %[[T]], %{{.*}} : f32, f32
// CHECK: tensor.expand_shape %[[R]]#0 {{\[\[}}0, 1]] output_shape [%{{.+}}, 1] : tensor<?xf32> into tensor<?x1xf32>
func.func @stable_sum_keepdims(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) -> tensor<?x1xf32, #tgraph.dims<[B, 1]>> {
  %0 = tgraph.reduce_sum %x {dims = array<i64: 1>, keepdims, stable} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x1xf32, #tgraph.dims<[B, 1]>>
  return %0 : tensor<?x1xf32, #tgraph.dims<[B, 1]>>
}

// -----

// A reshape's target extents come from the function's symbols.
// CHECK-LABEL: func.func @reshape_heads
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?xf32> {bufferization.writable = false}, %[[H:[^:]+]]: tensor<?xf32> {bufferization.writable = false})
// CHECK-DAG: %[[B:.+]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[D:.+]] = tensor.dim %[[X]], %c1
// CHECK-DAG: %[[NH:.+]] = tensor.dim %[[H]], %c0
// CHECK: %[[ZERO:.+]] = arith.cmpi eq, %[[NH]], %{{.+}} : index
// CHECK: %[[SAFE:.+]] = arith.select %[[ZERO]], %{{.+}}, %[[NH]] : index
// CHECK: %[[DH:.+]] = arith.floordivsi %[[D]], %[[SAFE]] : index
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %[[B]], %[[NH]], %[[DH]] : tensor<3xindex>
// CHECK: tensor.reshape %[[X]](%[[SHAPE]])
func.func @reshape_heads(%x: tensor<?x?xf32, #tgraph.dims<[B, D]>>, %h: tensor<?xf32, #tgraph.dims<[H]>>)
    -> tensor<?x?x?xf32, #tgraph.dims<[B, H, "D/H"]>> {
  %0 = tgraph.reshape %x : tensor<?x?xf32, #tgraph.dims<[B, D]>> -> tensor<?x?x?xf32, #tgraph.dims<[B, H, "D/H"]>>
  return %0 : tensor<?x?x?xf32, #tgraph.dims<[B, H, "D/H"]>>
}

// -----

// A run-time shape check calls the runtime hook with its message.
// CHECK: llvm.mlir.global internal constant @__tessera_message_0("broadcast mismatch: S vs T\00")
// CHECK: llvm.func @tessera_shape_check_failed(!llvm.ptr, i64, i64)
// CHECK-LABEL: func.func @check
// CHECK: %[[BAD:.+]] = arith.cmpi ne, %arg0, %arg1 : index
// CHECK: scf.if %[[BAD]] {
// CHECK: llvm.call @tessera_shape_check_failed
func.func @check(%a: index, %b: index) {
  tgraph.assert_dim eq %a, %b, "broadcast mismatch: S vs T"
  return
}

// -----

// `le` fails when lhs > rhs.
// CHECK-LABEL: func.func @check_le
// CHECK: %[[BAD:.+]] = arith.cmpi sgt, %arg0, %arg1 : index
// CHECK: scf.if %[[BAD]] {
// CHECK: llvm.call @tessera_shape_check_failed
func.func @check_le(%a: index, %b: index) {
  tgraph.assert_dim le %a, %b, "slice of dim 0: its start (1) must be at most its limit (S)"
  return
}

// -----

// argmax over a dim that may be empty stops the call when it is: there is
// no index to give.
// CHECK: llvm.func @tessera_failed(!llvm.ptr)
// CHECK-LABEL: func.func @argmax_of_nothing
// CHECK: %[[N:.+]] = tensor.dim %arg0, %{{.+}} : tensor<?xf32>
// CHECK: %[[EMPTY:.+]] = arith.cmpi eq, %[[N]], %{{.+}} : index
// CHECK: scf.if %[[EMPTY]] {
// CHECK: llvm.call @tessera_failed
func.func @argmax_of_nothing(%x: tensor<?xf32, #tgraph.dims<[N]>>) -> tensor<i64> {
  %0 = tgraph.argmax %x {dim = 0 : i64} : tensor<?xf32, #tgraph.dims<[N]>> -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

// A gather from a dim that may be empty stops the call when it is and
// there are indices: they have nothing to select.
// CHECK-LABEL: func.func @gather_from_nothing
// CHECK: %[[EMPTY:.+]] = arith.cmpi eq, %{{.+}}, %{{.+}} : index
// CHECK: %[[SOME:.+]] = arith.cmpi ne, %{{.+}}, %{{.+}} : index
// CHECK: %[[BAD:.+]] = arith.andi %[[EMPTY]], %[[SOME]] : i1
// CHECK: scf.if %[[BAD]] {
// CHECK: llvm.call @tessera_failed
func.func @gather_from_nothing(%x: tensor<?x4xf32, #tgraph.dims<[V, 4]>>, %i: tensor<?xi64, #tgraph.dims<[N]>>) -> tensor<?x4xf32, #tgraph.dims<[N, 4]>> {
  %0 = tgraph.gather %x, %i {dim = 0 : i64} : (tensor<?x4xf32, #tgraph.dims<[V, 4]>>, tensor<?xi64, #tgraph.dims<[N]>>) -> tensor<?x4xf32, #tgraph.dims<[N, 4]>>
  return %0 : tensor<?x4xf32, #tgraph.dims<[N, 4]>>
}

// -----

// Stochastic rounding: a Philox block per element (from its index),
// rounding up when the fraction is below the distance to the lower
// neighbour over the gap.
// CHECK-LABEL: func.func @stochastic_cast
// CHECK: linalg.generic
// CHECK: linalg.index 0
// CHECK: %[[P:.+]] = arith.divf %{{.+}}, %{{.+}} : f64
// CHECK: %[[UP:.+]] = arith.cmpf olt, %{{.+}}, %[[P]] : f64
// CHECK: arith.select %[[UP]], %{{.+}}, %{{.+}} : bf16
func.func @stochastic_cast(%x: tensor<4xf32>) -> tensor<4xbf16> {
  %0 = tgraph.cast %x {policy = #tgraph.policy<stochastic_round>} : tensor<4xf32> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// A saturating cast clamps to the target's finite range before rounding.
// CHECK-LABEL: func.func @saturating_cast
// CHECK: linalg.generic
// CHECK: %[[LO:.+]] = arith.minimumf %{{.+}}, %{{.+}} : f32
// CHECK: %[[HI:.+]] = arith.maximumf %[[LO]], %{{.+}} : f32
// CHECK: arith.truncf %[[HI]] : f32 to f8E4M3FN
func.func @saturating_cast(%x: tensor<4xf32>) -> tensor<4xf8E4M3FN> {
  %0 = tgraph.cast %x {policy = #tgraph.policy<saturate>} : tensor<4xf32> -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}
