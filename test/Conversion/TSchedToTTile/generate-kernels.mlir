// RUN: tessera-opt %s --tessera-gpu-generate-kernels --split-input-file --verify-diagnostics | FileCheck %s

// A layernorm-like row group of bf16 rows of 100 (blocks of 16 x 128): the
// row, scale and output views, f32 arithmetic, reductions that mask the
// columns past 100, a row statistic broadcast back, bf16 stores.
// CHECK-LABEL: func.func @norm
// The views: x and y as [R, C], the scale a column, the mean a row.
// CHECK: tsched.group row [32, 100] (%arg0, %arg1) {tsched.block = array<i64: 16, 128>, tsched.grid = array<i64: 2>, tsched.kernel = @norm_row0, tsched.views = [array<i64: 32, 100>, array<i64: 100>, array<i64: 32, 100>, array<i64: 32>]}
// CHECK-LABEL: func.func @norm_row0
// CHECK-SAME: (%[[X:.+]]: memref<?x?xbf16>, %[[W:.+]]: memref<?xf32>, %[[Y:.+]]: memref<?x?xbf16>, %[[M:.+]]: memref<?xf32>)
// CHECK-SAME: attributes {ttile.kernel, ttile.num_warps = 4 : i32}
// CHECK: %[[P:.+]] = ttile.program_id x
// CHECK: %[[R:.+]] = arith.muli %[[P]], %c16
// CHECK: %[[COL:.+]] = ttile.iota {dim = 1 : i32} : tensor<16x128xi32>
// CHECK: %[[MASK:.+]] = arith.cmpi slt, %[[COL]], %{{.+}} : tensor<16x128xi32>
// CHECK: %[[XB:.+]] = ttile.load %[[X]][%[[R]], %{{.+}}] : memref<?x?xbf16> -> tensor<16x128xbf16>
// CHECK: %[[XF:.+]] = ttile.cast %[[XB]] : tensor<16x128xbf16> -> tensor<16x128xf32>
// CHECK: %[[WT:.+]] = ttile.load %[[W]][%{{.+}}] : memref<?xf32> -> tensor<128xf32>
// CHECK: %[[SEL:.+]] = arith.select %[[MASK]], %[[XF]], %{{.+}} : tensor<16x128xi1>, tensor<16x128xf32>
// CHECK: %[[SUM:.+]] = ttile.reduce sum %[[SEL]] {dim = 1 : i32} : tensor<16x128xf32> -> tensor<16xf32>
// CHECK: %[[MEAN:.+]] = arith.divf %[[SUM]], %{{.+}} : tensor<16xf32>
// CHECK: %[[MB:.+]] = ttile.broadcast %[[MEAN]] {dims = array<i64: 0>} : tensor<16xf32> -> tensor<16x128xf32>
// CHECK: %[[D:.+]] = arith.subf %[[XF]], %[[MB]]
// CHECK: %[[WB:.+]] = ttile.broadcast %[[WT]] {dims = array<i64: 1>} : tensor<128xf32> -> tensor<16x128xf32>
// CHECK: %[[O:.+]] = arith.mulf %[[D]], %[[WB]]
// The cast rounds to bf16 (computed on in f32), the store writes bf16.
// CHECK: ttile.cast %[[O]] : tensor<16x128xf32> -> tensor<16x128xbf16>
// CHECK: %[[OB:.+]] = ttile.cast %{{.+}} : tensor<16x128xf32> -> tensor<16x128xbf16>
// CHECK: ttile.store %[[OB]], %[[Y]][%[[R]], %{{.+}}] : tensor<16x128xbf16>, memref<?x?xbf16>
// CHECK: ttile.store %[[MEAN]], %[[M]][%[[R]]] : tensor<16xf32>, memref<?xf32>
// CHECK: return
func.func @norm(%x: tensor<32x100xbf16>, %w: tensor<100xf32>) -> (tensor<32x100xbf16>, tensor<32xf32>) {
  %0:2 = tsched.group row [32, 100] (%x, %w) : (tensor<32x100xbf16>, tensor<100xf32>) -> (tensor<32x100xbf16>, tensor<32xf32>) {
  ^bb0(%a: tensor<32x100xbf16>, %s: tensor<100xf32>):
    %xf = tgraph.cast %a : tensor<32x100xbf16> -> tensor<32x100xf32>
    %sum = tgraph.reduce_sum %xf {dims = array<i64: 1>} : tensor<32x100xf32> -> tensor<32xf32>
    %n = tgraph.constant dense<1.000000e+02> : tensor<f32>
    %mean = tgraph.div %sum, %n : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
    %mb = tgraph.broadcast_in_dim %mean {broadcast_dimensions = array<i64: 0>} : tensor<32xf32> -> tensor<32x100xf32>
    %d = tgraph.sub %xf, %mb : tensor<32x100xf32>
    %o = tgraph.mul %d, %s : (tensor<32x100xf32>, tensor<100xf32>) -> tensor<32x100xf32>
    %ob = tgraph.cast %o : tensor<32x100xf32> -> tensor<32x100xbf16>
    tsched.yield %ob, %mean : tensor<32x100xbf16>, tensor<32xf32>
  }
  return %0#0, %0#1 : tensor<32x100xbf16>, tensor<32xf32>
}

// -----

// Rows of 4096 f32: one row a program, 8 warps, no column mask. A causal
// mask from indices (iota of rows and columns of [2, 64, 64] scores) is
// computed from the program's rows; the comparison of integers is signed.
// CHECK-LABEL: func.func @masked
// CHECK: tsched.block = array<i64: 1, 4096>, tsched.grid = array<i64: 8>
// CHECK: tsched.block = array<i64: 16, 64>, tsched.grid = array<i64: 8>
// CHECK-LABEL: func.func @masked_row0
// CHECK-SAME: ttile.num_warps = 8
// CHECK-NOT: arith.cmpi slt
// CHECK: math.exp
// CHECK-LABEL: func.func @masked_row1
// CHECK: %[[ROWS:.+]] = ttile.iota {dim = 0 : i32} : tensor<16x64xi32>
// CHECK: tensor.splat
// CHECK: arith.addi %[[ROWS]]
// CHECK: arith.divsi
// CHECK: arith.remsi
// CHECK: arith.extsi
// CHECK: ttile.iota {dim = 1 : i32} : tensor<16x64xi32>
// CHECK: arith.cmpi sle
// CHECK: arith.select
func.func @masked(%x: tensor<8x4096xf32>, %s: tensor<2x64x64xf32>) -> (tensor<8x4096xf32>, tensor<2x64x64xf32>) {
  %0 = tsched.group row [8, 4096] (%x) : (tensor<8x4096xf32>) -> tensor<8x4096xf32> {
  ^bb0(%a: tensor<8x4096xf32>):
    %e = tgraph.exp %a : tensor<8x4096xf32>
    tsched.yield %e : tensor<8x4096xf32>
  }
  %1 = tsched.group row [128, 64] (%s) : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32> {
  ^bb0(%a: tensor<2x64x64xf32>):
    %r = tgraph.iota {dim = 1 : i64} : tensor<2x64x64xi64>
    %c = tgraph.iota {dim = 2 : i64} : tensor<2x64x64xi64>
    %ok = tgraph.compare le, %c, %r : (tensor<2x64x64xi64>, tensor<2x64x64xi64>) -> tensor<2x64x64xi1>
    %ninf = tgraph.constant dense<0xFF800000> : tensor<f32>
    %m = tgraph.select %ok, %a, %ninf : (tensor<2x64x64xi1>, tensor<2x64x64xf32>, tensor<f32>) -> tensor<2x64x64xf32>
    tsched.yield %m : tensor<2x64x64xf32>
  }
  return %0, %1 : tensor<8x4096xf32>, tensor<2x64x64xf32>
}

// -----

func.func @integer_division(%x: tensor<4x8xi32>) -> tensor<4x8xi32> {
  %0 = tsched.group row [4, 8] (%x) : (tensor<4x8xi32>) -> tensor<4x8xi32> {
  ^bb0(%a: tensor<4x8xi32>):
    // expected-error @+1 {{'tgraph.div' in a row fusion group has no generated GPU kernel}}
    %d = tgraph.div %a, %a : tensor<4x8xi32>
    tsched.yield %d : tensor<4x8xi32>
  }
  return %0 : tensor<4x8xi32>
}

// -----

func.func @column_output(%x: tensor<4x8xf32>, %c: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tsched.group' op yields a column of its layout; a row kernel writes full tiles and rows}}
  %0 = tsched.group row [4, 8] (%x, %c) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8xf32>):
    %e = tgraph.exp %b : tensor<8xf32>
    tsched.yield %e : tensor<8xf32>
  }
  return %0 : tensor<8xf32>
}
