// RUN: tessera-opt %s -split-input-file --tessera-tgraph-lower-to-linalg --canonicalize --cse | FileCheck %s

// A cache argument is three buffers updated in place: keys, values and
// [length, window]. append checks the capacity (no window), moves the
// oldest positions out when a window is full, and writes the new keys
// after the valid ones; read copies.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[K:[^:]+]]: memref<?x8x128x64xf32>, %{{[^:]+}}: memref<?x8x128x64xf32>, %[[S:[^:]+]]: memref<2xi64>, %[[NK:[^:]+]]: tensor<?x8x?x64xf32>
// CHECK: memref.load %[[S]][%{{.+}}] : memref<2xi64>
// CHECK: llvm.call @tessera_shape_check_failed
// CHECK: scf.if
// CHECK: memref.copy
// CHECK: linalg.fill
// CHECK: %[[NEW:.+]] = tensor.extract_slice %[[NK]]
// CHECK: %[[DST:.+]] = memref.subview %[[K]]
// CHECK: bufferization.materialize_in_destination %[[NEW]] in restrict writable %[[DST]]
// CHECK: memref.store %{{.+}}, %[[S]][%{{.+}}] : memref<2xi64>
// CHECK: %[[COPY:.+]] = memref.alloc(%{{.+}}) : memref<?x8x128x64xf32>
// CHECK: memref.copy %[[K]], %[[COPY]]
// CHECK: bufferization.to_tensor %[[COPY]] restrict writable
!c = !tgraph.kv_cache<[B, 8, 128, 64], f32>
!t = tensor<?x8x?x64xf32, #tgraph.dims<[B, 8, T, 64]>>
!full = tensor<?x8x128x64xf32, #tgraph.dims<[B, 8, 128, 64]>>
func.func @step(%c: !c, %k: !t, %v: !t) -> (!full, tensor<i64>) {
  tgraph.kv_cache.append %c, %k, %v : !c, !t, !t
  %keys, %vals, %n = tgraph.kv_cache.read %c : !c -> !full, !full, tensor<i64>
  return %keys, %n : !full, tensor<i64>
}

// -----

// create: zeroed buffers of the batch size bound by an argument, length 0
// and the window.
// CHECK-LABEL: func.func @create
// CHECK-DAG: %[[W:.+]] = arith.constant 16 : i64
// CHECK: %[[K:.+]] = memref.alloc(%{{.+}}) : memref<?x2x32x4xbf16>
// CHECK: %[[V:.+]] = memref.alloc(%{{.+}}) : memref<?x2x32x4xbf16>
// CHECK: %[[S:.+]] = memref.alloc() : memref<2xi64>
// CHECK: linalg.fill ins(%{{.+}} : bf16) outs(%[[K]] : memref<?x2x32x4xbf16>)
// CHECK: memref.store %[[W]], %[[S]]
func.func @create(%x: tensor<?x2x1x4xbf16, #tgraph.dims<[B, 2, 1, 4]>>) -> tensor<i64> {
  %c = tgraph.kv_cache.create {window = 16 : i64} : !tgraph.kv_cache<[B, 2, 32, 4], bf16>
  tgraph.kv_cache.append %c, %x, %x : !tgraph.kv_cache<[B, 2, 32, 4], bf16>,
      tensor<?x2x1x4xbf16, #tgraph.dims<[B, 2, 1, 4]>>, tensor<?x2x1x4xbf16, #tgraph.dims<[B, 2, 1, 4]>>
  tgraph.kv_cache.prune %c {keep = 4 : i64} : !tgraph.kv_cache<[B, 2, 32, 4], bf16>
  %k, %v, %n = tgraph.kv_cache.read %c : !tgraph.kv_cache<[B, 2, 32, 4], bf16>
      -> tensor<?x2x32x4xbf16, #tgraph.dims<[B, 2, 32, 4]>>, tensor<?x2x32x4xbf16, #tgraph.dims<[B, 2, 32, 4]>>, tensor<i64>
  return %n : tensor<i64>
}
