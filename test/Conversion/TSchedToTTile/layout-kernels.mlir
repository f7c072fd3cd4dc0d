// RUN: tessera-opt %s --tessera-gpu-generate-kernels | FileCheck %s

// A transpose of leading dims ([B, S, H, D] -> [B, H, S, D], the heads of
// attention) is one copy kernel: a program per (b, h) slab copies its
// [S, D] rows, read through a strided subview of the input (rows 128
// elements apart) and written to a contiguous one.
// CHECK-LABEL: func.func @heads
// CHECK: tsched.launches = [{args = [array<i64: 0, 0, 2, 6, 4, 32>, array<i64: 1, 0, 2, 4, 6, 32>], grid = array<i64: 8>, kernel = @heads_layout0, schedule = "block(8, 32).warps(4)"}]
// A pad of a rank-1 tensor (read as [1, N]) is three pieces: the input
// at column 3, the pad value in columns [0, 3) and [14, 19).
// CHECK-LABEL: func.func @pad
// CHECK: tsched.launches = [{args = [array<i64: 0, 0, 1, 11>, array<i64: 1, 0, 1, 19>], grid = array<i64: 1>, kernel = @pad_layout1, schedule = "block(1, 16).warps(4)"}, {args = [array<i64: 1, 0, 1, 19>], grid = array<i64: 1>, kernel = @pad_layout2, schedule = "block(1, 16).warps(4)"}, {args = [array<i64: 1, 0, 1, 19>], grid = array<i64: 1>, kernel = @pad_layout3, schedule = "block(1, 16).warps(4)"}]
// A concat along the middle dim: one piece an input, at its offset.
// CHECK-LABEL: func.func @concat
// CHECK: kernel = @concat_layout4
// CHECK-SAME: kernel = @concat_layout5
// A broadcast that must be written out (a table to every batch and head).
// CHECK-LABEL: func.func @table
// CHECK: grid = array<i64: 6>, kernel = @table_layout6
// A transpose that moves the last dim has no copy kernel yet.
// CHECK-LABEL: func.func @swap_last
// CHECK: tsched.no_kernel = "a layout change that moves the last dim or steps along it"
// A broadcast along the rows of the last two dims ([37, 1, 24] to
// [37, 5, 24]): a program per slab reads the slab's one input row and
// repeats it down its tile.
// CHECK-LABEL: func.func @rows
// CHECK: tsched.launches = [{args = [array<i64: 0, 0, 37, 1, 24>, array<i64: 1, 0, 37, 5, 24>], grid = array<i64: 37>, kernel = @rows_layout7, schedule = "block(8, 32).warps(4)"}]
// CHECK-LABEL: func.func @heads_layout0(%arg0: memref<2x6x4x32xbf16>, %arg1: memref<2x4x6x32xbf16>) attributes {ttile.kernel, ttile.num_warps = 4 : i32}
// CHECK: %[[OUT:.+]] = memref.subview %arg1[%{{.+}}, %{{.+}}, 0, 0] [1, 1, 6, 32] [1, 1, 1, 1] : memref<2x4x6x32xbf16> to memref<6x32xbf16, strided<[32, 1], offset: ?>>
// CHECK: %[[IN:.+]] = memref.subview %arg0[%{{.+}}, 0, %{{.+}}, 0] [1, 6, 1, 32] [1, 1, 1, 1] : memref<2x6x4x32xbf16> to memref<6x32xbf16, strided<[128, 1], offset: ?>>
// CHECK: %[[T:.+]] = ttile.load %[[IN]][%{{.+}}, %{{.+}}] : memref<6x32xbf16, strided<[128, 1], offset: ?>> -> tensor<8x32xbf16>
// CHECK: ttile.store %[[T]], %[[OUT]]
// CHECK-LABEL: func.func @pad_layout2(%arg0: memref<1x19xf32>)
// CHECK: memref.subview %arg0[0, 0] [1, 3] [1, 1]
// CHECK: arith.constant dense<-1.500000e+00> : tensor<1x16xf32>
// CHECK-LABEL: func.func @rows_layout7(%arg0: memref<37x1x24xf32>, %arg1: memref<37x5x24xf32>)
// CHECK: %[[OUT:.+]] = memref.subview %arg1[%{{.+}}, 0, 0] [1, 5, 24] [1, 1, 1] : memref<37x5x24xf32> to memref<5x24xf32, strided<[24, 1], offset: ?>>
// CHECK: %[[IN:.+]] = memref.subview %arg0[%{{.+}}, 0, 0] [1, 1, 24] [1, 1, 1] : memref<37x1x24xf32> to memref<24xf32, strided<[1], offset: ?>>
// CHECK: %[[ROW:.+]] = ttile.load %[[IN]][%{{.+}}] : memref<24xf32, strided<[1], offset: ?>> -> tensor<32xf32>
// CHECK: %[[T:.+]] = ttile.broadcast %[[ROW]] {dims = array<i64: 1>} : tensor<32xf32> -> tensor<8x32xf32>
// CHECK: ttile.store %[[T]], %[[OUT]]
func.func @heads(%x: tensor<2x6x4x32xbf16>) -> tensor<2x4x6x32xbf16> {
  %t = tsched.group layout (%x) : (tensor<2x6x4x32xbf16>) -> tensor<2x4x6x32xbf16> {
  ^bb0(%a: tensor<2x6x4x32xbf16>):
    %0 = tgraph.transpose %a {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x6x4x32xbf16> -> tensor<2x4x6x32xbf16>
    tsched.yield %0 : tensor<2x4x6x32xbf16>
  }
  return %t : tensor<2x4x6x32xbf16>
}
func.func @pad(%x: tensor<11xf32>) -> tensor<19xf32> {
  %t = tsched.group layout (%x) : (tensor<11xf32>) -> tensor<19xf32> {
  ^bb0(%a: tensor<11xf32>):
    %0 = tgraph.pad %a {low = array<i64: 3>, high = array<i64: 5>, interior = array<i64: 0>, value = -1.5 : f32} : tensor<11xf32> -> tensor<19xf32>
    tsched.yield %0 : tensor<19xf32>
  }
  return %t : tensor<19xf32>
}
func.func @concat(%x: tensor<3x5x7xf32>, %y: tensor<3x2x7xf32>) -> tensor<3x7x7xf32> {
  %t = tsched.group layout (%x, %y) : (tensor<3x5x7xf32>, tensor<3x2x7xf32>) -> tensor<3x7x7xf32> {
  ^bb0(%a: tensor<3x5x7xf32>, %b: tensor<3x2x7xf32>):
    %0 = tgraph.concat %a, %b {dim = 1 : i64} : (tensor<3x5x7xf32>, tensor<3x2x7xf32>) -> tensor<3x7x7xf32>
    tsched.yield %0 : tensor<3x7x7xf32>
  }
  return %t : tensor<3x7x7xf32>
}
func.func @table(%x: tensor<24x8xf32>) -> tensor<2x3x24x8xf32> {
  %t = tsched.group layout (%x) : (tensor<24x8xf32>) -> tensor<2x3x24x8xf32> {
  ^bb0(%a: tensor<24x8xf32>):
    %0 = tgraph.broadcast_in_dim %a {broadcast_dimensions = array<i64: 2, 3>} : (tensor<24x8xf32>) -> tensor<2x3x24x8xf32>
    tsched.yield %0 : tensor<2x3x24x8xf32>
  }
  return %t : tensor<2x3x24x8xf32>
}
func.func @swap_last(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %a = tsched.group layout (%x) : (tensor<4x8xf32>) -> tensor<8x4xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %0 = tgraph.transpose %p {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
    tsched.yield %0 : tensor<8x4xf32>
  }
  return %a : tensor<8x4xf32>
}
func.func @rows(%x: tensor<37x1x24xf32>) -> tensor<37x5x24xf32> {
  %t = tsched.group layout (%x) : (tensor<37x1x24xf32>) -> tensor<37x5x24xf32> {
  ^bb0(%a: tensor<37x1x24xf32>):
    %0 = tgraph.broadcast_in_dim %a {broadcast_dimensions = array<i64: 0, 1, 2>} : (tensor<37x1x24xf32>) -> tensor<37x5x24xf32>
    tsched.yield %0 : tensor<37x5x24xf32>
  }
  return %t : tensor<37x5x24xf32>
}
