// RUN: tessera-opt %s --tessera-gpu-form-groups --split-input-file | FileCheck %s
// RUN: tessera-opt %s --tessera-gpu-form-groups --split-input-file --tessera-gpu-generate-kernels | FileCheck %s --check-prefix=KERNEL

// A rotary embedding on the halves of the last dim: the two slices are
// windows of the input's columns that the row kernel reads in place, and
// the concat of its two results is written into the windows of one
// output. One kernel, nothing copied.
// CHECK-LABEL: func.func @rope
// CHECK: %[[G:.+]] = tsched.group row [768, 32] (%arg0, %arg1, %arg2) : (tensor<2x3x128x64xbf16>, tensor<128x32xbf16>, tensor<128x32xbf16>) -> tensor<2x3x128x64xbf16> {
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<2x3x128x64xbf16>, %[[C:.+]]: tensor<128x32xbf16>, %[[S:.+]]: tensor<128x32xbf16>):
// CHECK-DAG: %[[X1:.+]] = tgraph.slice %[[X]] {{.*}}start = #tgraph.dims<[0, 0, 0, 0]>
// CHECK-DAG: %[[X2:.+]] = tgraph.slice %[[X]] {{.*}}start = #tgraph.dims<[0, 0, 0, 32]>
// CHECK: %[[CAT:.+]] = tgraph.concat %{{.+}}, %{{.+}} {dim = 3 : i64}
// CHECK-NEXT: tsched.yield %[[CAT]] : tensor<2x3x128x64xbf16>
// CHECK-NOT: tsched.group
// CHECK: return %[[G]]
// The kernel: the input and the output are [768, 64], each half a strided
// window of 32 columns; blocks of 128 rows (no reduction: up to 128 rows
// of narrow columns, a divisor of the tables' period).
// KERNEL-LABEL: func.func @rope
// KERNEL: tsched.group row [768, 32] {{.*}}tsched.schedule = #tsched.schedule<"block(128, 32).warps(8)">, tsched.views = [array<i64: 768, 64>, array<i64: 128, 32>, array<i64: 128, 32>, array<i64: 768, 64>]
// KERNEL-LABEL: func.func @rope_row0(
// KERNEL-SAME: %[[XM:[^:]+]]: memref<?x?xbf16>, %{{[^:]+}}: memref<?x?xbf16>, %{{[^:]+}}: memref<?x?xbf16>, %[[OUT:[^:]+]]: memref<?x?xbf16>)
// KERNEL-DAG: memref.subview %[[XM]][0, 0] [768, 32] [1, 1] : memref<?x?xbf16> to memref<768x32xbf16, strided<[?, 1]>>
// KERNEL-DAG: memref.subview %[[XM]][0, 32] [768, 32] [1, 1] : memref<?x?xbf16> to memref<768x32xbf16, strided<[?, 1], offset: 32>>
// KERNEL: %[[LO:.+]] = memref.subview %[[OUT]][0, 0] [768, 32] [1, 1]
// KERNEL: ttile.store %{{.+}}, %[[LO]]
// KERNEL: %[[HI:.+]] = memref.subview %[[OUT]][0, 32] [768, 32] [1, 1]
// KERNEL: ttile.store %{{.+}}, %[[HI]]
func.func @rope(%x: tensor<2x3x128x64xbf16>, %c: tensor<128x32xbf16>,
                %s: tensor<128x32xbf16>) -> tensor<2x3x128x64xbf16> {
  %x1 = tgraph.slice %x {limit = #tgraph.dims<[2, 3, 128, 32]>, start = #tgraph.dims<[0, 0, 0, 0]>, stride = array<i64: 1, 1, 1, 1>} : tensor<2x3x128x64xbf16> -> tensor<2x3x128x32xbf16>
  %x2 = tgraph.slice %x {limit = #tgraph.dims<[2, 3, 128, 64]>, start = #tgraph.dims<[0, 0, 0, 32]>, stride = array<i64: 1, 1, 1, 1>} : tensor<2x3x128x64xbf16> -> tensor<2x3x128x32xbf16>
  %0 = tgraph.mul %x1, %c : (tensor<2x3x128x32xbf16>, tensor<128x32xbf16>) -> tensor<2x3x128x32xbf16>
  %1 = tgraph.mul %x2, %s : (tensor<2x3x128x32xbf16>, tensor<128x32xbf16>) -> tensor<2x3x128x32xbf16>
  %2 = tgraph.sub %0, %1 : tensor<2x3x128x32xbf16>
  %3 = tgraph.mul %x1, %s : (tensor<2x3x128x32xbf16>, tensor<128x32xbf16>) -> tensor<2x3x128x32xbf16>
  %4 = tgraph.mul %x2, %c : (tensor<2x3x128x32xbf16>, tensor<128x32xbf16>) -> tensor<2x3x128x32xbf16>
  %5 = tgraph.add %3, %4 : tensor<2x3x128x32xbf16>
  %6 = tgraph.concat %2, %5 {dim = 3 : i64} : (tensor<2x3x128x32xbf16>, tensor<2x3x128x32xbf16>) -> tensor<2x3x128x64xbf16>
  return %6 : tensor<2x3x128x64xbf16>
}

// -----

// The gradient's form: two zero pads that put the halves side by side,
// summed, are their concat (written by the row kernel that computes them).
// CHECK-LABEL: func.func @pad_sum
// CHECK: %[[G:.+]] = tsched.group row [40, 24] (%arg0, %arg1) : (tensor<5x8x48xf32>, tensor<5x8x24xf32>) -> tensor<5x8x48xf32> {
// CHECK: %[[W:.+]] = tgraph.slice
// CHECK: %[[A:.+]] = tgraph.mul %[[W]]
// CHECK: %[[B:.+]] = tgraph.neg
// CHECK: %[[CAT:.+]] = tgraph.concat %[[B]], %[[A]] {dim = 2 : i64}
// CHECK-NEXT: tsched.yield %[[CAT]]
// CHECK-NOT: tgraph.pad
// CHECK-NOT: tsched.group
// CHECK: return %[[G]]
func.func @pad_sum(%x: tensor<5x8x48xf32>, %y: tensor<5x8x24xf32>) -> tensor<5x8x48xf32> {
  %w = tgraph.slice %x {limit = #tgraph.dims<[5, 8, 48]>, start = #tgraph.dims<[0, 0, 24]>, stride = array<i64: 1, 1, 1>} : tensor<5x8x48xf32> -> tensor<5x8x24xf32>
  %a = tgraph.mul %w, %y : tensor<5x8x24xf32>
  %b = tgraph.neg %y : tensor<5x8x24xf32>
  %pa = tgraph.pad %a {high = array<i64: 0, 0, 0>, interior = array<i64: 0, 0, 0>, low = array<i64: 0, 0, 24>, value = 0.000000e+00 : f32} : tensor<5x8x24xf32> -> tensor<5x8x48xf32>
  %pb = tgraph.pad %b {high = array<i64: 0, 0, 24>, interior = array<i64: 0, 0, 0>, low = array<i64: 0, 0, 0>, value = 0.000000e+00 : f32} : tensor<5x8x24xf32> -> tensor<5x8x48xf32>
  %s = tgraph.add %pa, %pb : tensor<5x8x48xf32>
  return %s : tensor<5x8x48xf32>
}

// -----

// Not a concat: the pads overlap (or leave a gap, or pad another dim, or
// with a value other than zero); the sum stays, each pad a layout kernel.
// CHECK-LABEL: func.func @pads_not_side_by_side
// CHECK-COUNT-2: tsched.group layout
// CHECK: tsched.group row [40, 48]
// CHECK: tgraph.add
// CHECK-LABEL: func.func @pads_of_ones
// CHECK-COUNT-2: tsched.group layout
// CHECK: tgraph.add
func.func @pads_not_side_by_side(%a: tensor<5x8x24xf32>, %b: tensor<5x8x30xf32>) -> tensor<5x8x48xf32> {
  %pa = tgraph.pad %a {high = array<i64: 0, 0, 0>, interior = array<i64: 0, 0, 0>, low = array<i64: 0, 0, 24>, value = 0.000000e+00 : f32} : tensor<5x8x24xf32> -> tensor<5x8x48xf32>
  %pb = tgraph.pad %b {high = array<i64: 0, 0, 18>, interior = array<i64: 0, 0, 0>, low = array<i64: 0, 0, 0>, value = 0.000000e+00 : f32} : tensor<5x8x30xf32> -> tensor<5x8x48xf32>
  %s = tgraph.add %pa, %pb : tensor<5x8x48xf32>
  return %s : tensor<5x8x48xf32>
}
func.func @pads_of_ones(%a: tensor<5x8x24xf32>, %b: tensor<5x8x24xf32>) -> tensor<5x8x48xf32> {
  %pa = tgraph.pad %a {high = array<i64: 0, 0, 0>, interior = array<i64: 0, 0, 0>, low = array<i64: 0, 0, 24>, value = 1.000000e+00 : f32} : tensor<5x8x24xf32> -> tensor<5x8x48xf32>
  %pb = tgraph.pad %b {high = array<i64: 0, 0, 24>, interior = array<i64: 0, 0, 0>, low = array<i64: 0, 0, 0>, value = 1.000000e+00 : f32} : tensor<5x8x24xf32> -> tensor<5x8x48xf32>
  %s = tgraph.add %pa, %pb : tensor<5x8x48xf32>
  return %s : tensor<5x8x48xf32>
}

// -----

// A window that a product reads (a GEMM reads its operands from memory) is
// written out by a row kernel of its own; a slice of a leading dim stays a
// layout kernel.
// CHECK-LABEL: func.func @window_into_matmul
// CHECK: %[[W:.+]] = tsched.group row [8, 16] (%arg0) : (tensor<8x48xf32>) -> tensor<8x16xf32> {
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<8x48xf32>):
// CHECK-NEXT: %[[S:.+]] = tgraph.slice %[[X]]
// CHECK-NEXT: tsched.yield %[[S]]
// CHECK: tsched.group contraction [8, 4] (%[[W]], %arg1)
// CHECK: tsched.group layout (%arg0)
// KERNEL-LABEL: func.func @window_into_matmul
// KERNEL: tsched.views = [array<i64: 8, 48>, array<i64: 8, 16>]
// KERNEL: memref.subview %{{.+}}[0, 16] [8, 16] [1, 1]
func.func @window_into_matmul(%x: tensor<8x48xf32>, %w: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<4x48xf32>) {
  %s = tgraph.slice %x {limit = #tgraph.dims<[8, 32]>, start = #tgraph.dims<[0, 16]>, stride = array<i64: 1, 1>} : tensor<8x48xf32> -> tensor<8x16xf32>
  %p = tgraph.matmul %s, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %r = tgraph.slice %x {limit = #tgraph.dims<[6, 48]>, start = #tgraph.dims<[2, 0]>, stride = array<i64: 1, 1>} : tensor<8x48xf32> -> tensor<4x48xf32>
  return %p, %r : tensor<8x4xf32>, tensor<4x48xf32>
}

// -----

// Heads split off a [B, S, H * D] product and rotated: the transpose of
// leading dims that only the windows read is read in place too (each tile
// of 16 rows a strided run of the input's rows, H * D = 192 elements
// apart), and the concat's transpose back is written in place: one row
// kernel, no copy.
// CHECK-LABEL: func.func @rope_of_heads
// CHECK: %[[G:.+]] = tsched.group row [96, 32] (%arg0, %arg1, %arg2) : (tensor<2x16x3x64xbf16>, tensor<16x32xbf16>, tensor<16x32xbf16>) -> tensor<2x16x3x64xbf16> {
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<2x16x3x64xbf16>, %{{.+}}: tensor<16x32xbf16>, %{{.+}}: tensor<16x32xbf16>):
// CHECK-NEXT: %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-DAG: tgraph.slice %[[T]] {{.*}}start = #tgraph.dims<[0, 0, 0, 0]>
// CHECK-DAG: tgraph.slice %[[T]] {{.*}}start = #tgraph.dims<[0, 0, 0, 32]>
// CHECK: %[[CAT:.+]] = tgraph.concat
// CHECK-NEXT: %[[OUT:.+]] = tgraph.transpose %[[CAT]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: tsched.yield %[[OUT]] : tensor<2x16x3x64xbf16>
// CHECK-NOT: tsched.group
// CHECK: return %[[G]]
// KERNEL-LABEL: func.func @rope_of_heads
// KERNEL: tsched.schedule = #tsched.schedule<"block(16, 32).warps(4)">, tsched.views = [array<i64: 96, 64>, array<i64: 16, 32>, array<i64: 16, 32>, array<i64: 96, 64>]
// KERNEL-LABEL: func.func @rope_of_heads_row0(
// KERNEL-SAME: %[[XM:[^:]+]]: memref<?x?xbf16>, %{{[^:]+}}: memref<?x?xbf16>, %{{[^:]+}}: memref<?x?xbf16>, %[[OM:[^:]+]]: memref<?x?xbf16>)
// KERNEL: memref.reinterpret_cast %[[XM]] to offset: [%{{.+}}], sizes: [16, 32], strides: [192, 1] : memref<?x?xbf16> to memref<16x32xbf16, strided<[192, 1], offset: ?>>
// KERNEL: memref.reinterpret_cast %[[XM]] to offset: [%{{.+}}], sizes: [16, 32], strides: [192, 1]
// KERNEL: %[[O1:.+]] = memref.reinterpret_cast %[[OM]] to offset: [%{{.+}}], sizes: [16, 32], strides: [192, 1]
// KERNEL: ttile.store %{{.+}}, %[[O1]][%c0{{.*}}, %c0{{.*}}]
// KERNEL: %[[O2:.+]] = memref.reinterpret_cast %[[OM]] to offset: [%{{.+}}], sizes: [16, 32], strides: [192, 1]
// KERNEL: ttile.store %{{.+}}, %[[O2]]
func.func @rope_of_heads(%x: tensor<2x16x3x64xbf16>, %c: tensor<16x32xbf16>,
                         %s: tensor<16x32xbf16>) -> tensor<2x16x3x64xbf16> {
  %t = tgraph.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x16x3x64xbf16> -> tensor<2x3x16x64xbf16>
  %x1 = tgraph.slice %t {limit = #tgraph.dims<[2, 3, 16, 32]>, start = #tgraph.dims<[0, 0, 0, 0]>, stride = array<i64: 1, 1, 1, 1>} : tensor<2x3x16x64xbf16> -> tensor<2x3x16x32xbf16>
  %x2 = tgraph.slice %t {limit = #tgraph.dims<[2, 3, 16, 64]>, start = #tgraph.dims<[0, 0, 0, 32]>, stride = array<i64: 1, 1, 1, 1>} : tensor<2x3x16x64xbf16> -> tensor<2x3x16x32xbf16>
  %0 = tgraph.mul %x1, %c : (tensor<2x3x16x32xbf16>, tensor<16x32xbf16>) -> tensor<2x3x16x32xbf16>
  %1 = tgraph.mul %x2, %s : (tensor<2x3x16x32xbf16>, tensor<16x32xbf16>) -> tensor<2x3x16x32xbf16>
  %2 = tgraph.sub %0, %1 : tensor<2x3x16x32xbf16>
  %3 = tgraph.mul %x1, %s : (tensor<2x3x16x32xbf16>, tensor<16x32xbf16>) -> tensor<2x3x16x32xbf16>
  %4 = tgraph.mul %x2, %c : (tensor<2x3x16x32xbf16>, tensor<16x32xbf16>) -> tensor<2x3x16x32xbf16>
  %5 = tgraph.add %3, %4 : tensor<2x3x16x32xbf16>
  %6 = tgraph.concat %2, %5 {dim = 3 : i64} : (tensor<2x3x16x32xbf16>, tensor<2x3x16x32xbf16>) -> tensor<2x3x16x64xbf16>
  %7 = tgraph.transpose %6 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x16x64xbf16> -> tensor<2x16x3x64xbf16>
  return %7 : tensor<2x16x3x64xbf16>
}

// -----

// A transpose that something other than a window reads stays a copy (a
// layout kernel), and so does the transpose of a concat that has another
// reader.
// CHECK-LABEL: func.func @transposes_kept
// CHECK: tsched.group layout (%arg0)
// CHECK: tgraph.transpose
// CHECK: tsched.group row [6, 8]
// CHECK: tgraph.concat
// CHECK: tsched.group layout
// CHECK: tgraph.transpose
func.func @transposes_kept(%x: tensor<2x3x8xf32>) -> (tensor<3x2x8xf32>, tensor<3x2x8xf32>, tensor<3x2x16xf32>, tensor<2x3x16xf32>) {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x8xf32> -> tensor<3x2x8xf32>
  %e = tgraph.exp %t : tensor<3x2x8xf32>
  %a = tgraph.exp %x : tensor<2x3x8xf32>
  %c = tgraph.concat %a, %x {dim = 2 : i64} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x16xf32>
  %ct = tgraph.transpose %c {permutation = array<i64: 1, 0, 2>} : tensor<2x3x16xf32> -> tensor<3x2x16xf32>
  return %t, %e, %ct, %c : tensor<3x2x8xf32>, tensor<3x2x8xf32>, tensor<3x2x16xf32>, tensor<2x3x16xf32>
}
