// RUN: tessera-opt %s --tessera-expand-shape-views --split-input-file | FileCheck %s

// Rows split into two dynamic dims: a view of the base buffer with the
// strides multiplied out (the innermost keeps the source's).
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[SRC:.+]]: memref<?x32xf32>, %[[B:.+]]: index, %[[S:.+]]: index)
// CHECK: %[[BASE:.+]], %[[OFF:.+]], %{{.+}}:2, %[[STR:.+]]:2 = memref.extract_strided_metadata %[[SRC]]
// CHECK: %[[RS:.+]] = arith.muli %[[S]], %{{.+}} : index
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[B]], %[[S]], 32], strides: [%[[RS]], 32, 1] : memref<f32> to memref<?x?x32xf32>
// CHECK-NOT: memref.expand_shape
func.func @rows(%src: memref<?x32xf32>, %b: index, %s: index) -> memref<?x?x32xf32> {
  %e = memref.expand_shape %src [[0, 1], [2]] output_shape [%b, %s, 32] : memref<?x32xf32> into memref<?x?x32xf32>
  return %e : memref<?x?x32xf32>
}

// -----

// A strided source: offsets and strides come from it.
// CHECK-LABEL: func.func @strided
// CHECK: %[[BASE:.+]], %[[OFF:.+]], %{{.+}}:2, %[[STR:.+]]:2 = memref.extract_strided_metadata
// CHECK: %[[RS:.+]] = arith.muli %[[STR]]#0, %{{.+}} : index
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%{{.+}}, %{{.+}}, 8], strides: [%[[RS]], %[[STR]]#0, 1]
func.func @strided(%src: memref<?x8xf32, strided<[?, 1], offset: ?>>, %a: index, %b: index) -> memref<?x?x8xf32, strided<[?, ?, 1], offset: ?>> {
  %e = memref.expand_shape %src [[0, 1], [2]] output_shape [%a, %b, 8] : memref<?x8xf32, strided<[?, 1], offset: ?>> into memref<?x?x8xf32, strided<[?, ?, 1], offset: ?>>
  return %e : memref<?x?x8xf32, strided<[?, ?, 1], offset: ?>>
}

// -----

// One dynamic dim per group: left to expand-strided-metadata.
// CHECK-LABEL: func.func @one_dynamic
// CHECK: memref.expand_shape
func.func @one_dynamic(%src: memref<?x32xf32>, %b: index) -> memref<?x4x32xf32> {
  %e = memref.expand_shape %src [[0, 1], [2]] output_shape [%b, 4, 32] : memref<?x32xf32> into memref<?x4x32xf32>
  return %e : memref<?x4x32xf32>
}
