// RUN: tessera-opt %s --tessera-gpu-generate-kernels --split-input-file --verify-diagnostics | FileCheck %s

// A layernorm-like row group of bf16 rows of 100 (blocks of 16 x 128): the
// row, scale and output views, f32 arithmetic, reductions that mask the
// columns past 100, a row statistic broadcast back, bf16 stores.
// CHECK-LABEL: func.func @norm
// The views: x and y as [R, C], the scale a column, the mean a row.
// CHECK: tsched.group row [32, 100] (%arg0, %arg1) {tsched.grid = array<i64: 2>, tsched.kernel = @norm_row0, tsched.schedule = #tsched.schedule<"block(16, 128).warps(4)">, tsched.views = [array<i64: 32, 100>, array<i64: 100>, array<i64: 32, 100>, array<i64: 32>]}
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
// CHECK: tsched.grid = array<i64: 8>, tsched.kernel = @masked_row0, tsched.schedule = #tsched.schedule<"block(1, 4096).warps(8)">
// CHECK: tsched.grid = array<i64: 2>, tsched.kernel = @masked_row1, tsched.schedule = #tsched.schedule<"block(64, 64).warps(8)">
// CHECK-LABEL: func.func @masked_row0
// CHECK-SAME: ttile.num_warps = 8
// CHECK-NOT: arith.cmpi slt
// CHECK: math.exp
// CHECK-LABEL: func.func @masked_row1
// CHECK: %[[ROWS:.+]] = ttile.iota {dim = 0 : i32} : tensor<64x64xi32>
// CHECK: tensor.splat
// CHECK: arith.addi %[[ROWS]]
// CHECK: arith.divsi
// CHECK: arith.remsi
// CHECK: arith.extsi
// CHECK: ttile.iota {dim = 1 : i32} : tensor<64x64xi32>
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

// -----

// A bf16 product with a bias column, a tanh and a residual as epilogue:
// the batch [4, 512] folds into 2048 rows of A; 2048 x 1024 makes 128
// tiles of 128 x 128 (one wave on 132 SMs, sooner than 64 tiles of
// 128 x 256). Each program loops over tiles; the K loop pipelines its
// loads 3 steps ahead (K is 4 steps: no deeper ring); the epilogue reads
// the bias at the tile's columns and the residual at its rows and
// columns, its loads issued before the K loop (their latency passes under
// the products). The group records
// its autotune space (the schedules the estimate weighed, fastest first;
// no 128 x 256 tile, whose accumulators would spill beside an epilogue;
// a ping-pong GEMM of 128 x 128 tiles a warpgroup after the 128 x 128
// one, its ring as deep as K, four stages) and the key
// a tuned schedule of it is kept under.
// CHECK-LABEL: func.func @dense
// CHECK: tsched.group contraction [2048, 1024]
// CHECK-SAME: tsched.grid = array<i64: 128>, tsched.kernel = @dense_gemm0, tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(8).stages(4)">, tsched.space = ["block(128, 128).k(64).warps(8).stages(4)", "block(128, 128).k(64).warps(4).stages(4).pingpong", "block(64, 128).k(64).warps(4).stages(4)"], tsched.tuning_key = "gemm-{{[0-9a-f]+}}", tsched.views = [array<i64: 2048, 256>, array<i64: 256, 1024>, array<i64: 1024>, array<i64: 2048, 1024>, array<i64: 2048, 1024>]
// CHECK-LABEL: func.func @dense_gemm0
// CHECK-SAME: (%[[A:.+]]: memref<?x?xbf16>, %[[B:.+]]: memref<?x?xbf16>, %[[BIAS:.+]]: memref<?xbf16>, %[[RES:.+]]: memref<?x?xbf16>, %[[C:.+]]: memref<?x?xbf16>)
// CHECK-SAME: attributes {ttile.kernel, ttile.num_warps = 8 : i32}
// CHECK: %[[P:.+]] = ttile.program_id x
// CHECK: %[[NP:.+]] = ttile.num_programs x
// CHECK: ttile.range %[[T:.+]] = %[[P]] to %c128 step %[[NP]] {
// CHECK: %[[I:.+]] = arith.muli %{{.+}}, %c128
// CHECK: %[[J:.+]] = arith.muli %{{.+}}, %c128
// CHECK: ttile.load %[[BIAS]][%[[J]]] : memref<?xbf16> -> tensor<128xbf16>
// CHECK: ttile.load %[[RES]][%[[I]], %[[J]]] : memref<?x?xbf16> -> tensor<128x128xbf16>
// CHECK: %[[ACC:.+]] = ttile.range %[[K:[^ ]+]] = %c0{{[_0-9]*}} to %c256{{[_0-9]*}} step %c64{{[_0-9]*}} stages 4 iter_args(%[[IN:[^ ]+]] = %{{.+}}) -> (tensor<128x128xf32>) {
// CHECK: %[[AT:.+]] = ttile.load %[[A]][%[[I]], %[[K]]] : memref<?x?xbf16> -> tensor<128x64xbf16>
// CHECK: %[[BT:.+]] = ttile.load %[[B]][%[[K]], %[[J]]] : memref<?x?xbf16> -> tensor<64x128xbf16>
// CHECK: %[[D:.+]] = ttile.dot %[[AT]], %[[BT]], %[[IN]]
// CHECK: ttile.yield %[[D]]
// CHECK-NOT: ttile.load
// CHECK: arith.addf %[[ACC]]
// CHECK: math.tanh
// CHECK: ttile.store %{{.+}}, %[[C]][%[[I]], %[[J]]] : tensor<128x128xbf16>, memref<?x?xbf16>
// CHECK: return
func.func @dense(%x: tensor<4x512x256xbf16>, %w: tensor<256x1024xbf16>, %b: tensor<1024xbf16>, %r: tensor<4x512x1024xbf16>) -> tensor<4x512x1024xbf16> {
  %0 = tsched.group contraction [2048, 1024] (%x, %w, %b, %r) : (tensor<4x512x256xbf16>, tensor<256x1024xbf16>, tensor<1024xbf16>, tensor<4x512x1024xbf16>) -> tensor<4x512x1024xbf16> {
  ^bb0(%a: tensor<4x512x256xbf16>, %m: tensor<256x1024xbf16>, %c: tensor<1024xbf16>, %s: tensor<4x512x1024xbf16>):
    %p = tgraph.matmul %a, %m : (tensor<4x512x256xbf16>, tensor<256x1024xbf16>) -> tensor<4x512x1024xbf16>
    %q = tgraph.add %p, %c : (tensor<4x512x1024xbf16>, tensor<1024xbf16>) -> tensor<4x512x1024xbf16>
    %t = tgraph.tanh %q : tensor<4x512x1024xbf16>
    %o = tgraph.add %t, %s : tensor<4x512x1024xbf16>
    tsched.yield %o : tensor<4x512x1024xbf16>
  }
  return %0 : tensor<4x512x1024xbf16>
}

// -----

// Batched f32 products, B transposed and broadcast over the first batch
// dim ([1, 3, N, K] against [2, 3, M, K]): per-batch views; the tile loop
// splits its index into the batch and the tile; B's batch is z mod 3.
// The product's own schedule sets the tile and the K step.
// CHECK-LABEL: func.func @batched
// CHECK: tsched.group contraction [120, 24]
// CHECK-SAME: tsched.grid = array<i64: 6>, tsched.kernel = @batched_gemm0, tsched.schedule = #tsched.schedule<"block(32, 32).k(8).warps(4).stages(2)">, tsched.views = [array<i64: 6, 20, 16>, array<i64: 3, 24, 16>, array<i64: 6, 20, 24>]
// CHECK-LABEL: func.func @batched_gemm0
// CHECK-SAME: (%[[A:.+]]: memref<?x?x?xf32>, %[[B:.+]]: memref<?x?x?xf32>, %[[C:.+]]: memref<?x?x?xf32>)
// CHECK: ttile.range %[[T:.+]] = %{{.+}} to %c6 step
// CHECK: %[[Z:.+]] = arith.divsi %[[T]], %c1
// CHECK: %[[AV:.+]] = memref.subview %[[A]][%[[Z]], 0, 0]
// CHECK: %[[ZB:.+]] = arith.remsi %{{.+}}, %c3
// CHECK: %[[BV:.+]] = memref.subview %[[B]]
// CHECK: ttile.range %[[K:[^ ]+]] = %c0{{[_0-9]*}} to %c16{{[_0-9]*}} step %c8{{[_0-9]*}} stages 2
// CHECK: ttile.load %[[AV]]
// CHECK: %[[BT:.+]] = ttile.load %[[BV]][%{{.+}}, %[[K]]] : memref<?x?xf32, strided<[?, 1], offset: ?>> -> tensor<32x8xf32>
// CHECK: ttile.transpose %[[BT]] {permutation = array<i64: 1, 0>} : tensor<32x8xf32> -> tensor<8x32xf32>
// CHECK: ttile.dot
// CHECK: %[[CV:.+]] = memref.subview %[[C]][%[[Z]], 0, 0]
// CHECK: ttile.store %{{.+}}, %[[CV]]
func.func @batched(%x: tensor<2x3x20x16xf32>, %y: tensor<1x3x24x16xf32>) -> tensor<2x3x20x24xf32> {
  %0 = tsched.group contraction [120, 24] (%x, %y) : (tensor<2x3x20x16xf32>, tensor<1x3x24x16xf32>) -> tensor<2x3x20x24xf32> {
  ^bb0(%a: tensor<2x3x20x16xf32>, %b: tensor<1x3x24x16xf32>):
    %p = tgraph.matmul %a, %b {transpose_rhs, tsched.schedule = #tsched.schedule<"block(32, 32).k(8)">} : (tensor<2x3x20x16xf32>, tensor<1x3x24x16xf32>) -> tensor<2x3x20x24xf32>
    tsched.yield %p : tensor<2x3x20x24xf32>
  }
  return %0 : tensor<2x3x20x24xf32>
}

// -----

func.func @not_a_gemm(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tsched.group' op is a contraction group whose first op is not a GEMM the GPU generates}}
  %0 = tsched.group contraction [4, 8] (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %e = tgraph.exp %a : tensor<4x8xf32>
    tsched.yield %e : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// A periodic input (a [32, 8] table of the [256, 8] layout) is read as
// [32, 8] at the block's row modulo 32, then used as a full tile. The
// elementwise kernel's blocks of narrow rows (up to 128) divide the period:
// 32 rows.
// CHECK-LABEL: func.func @periodic
// CHECK: tsched.schedule = #tsched.schedule<"block(32, 8).warps(4)">, tsched.views = [array<i64: 256, 8>, array<i64: 32, 8>, array<i64: 256, 8>]
// CHECK-LABEL: func.func @periodic_row0
// CHECK-SAME: (%[[X:.+]]: memref<?x?xf32>, %[[T:.+]]: memref<?x?xf32>, %[[Y:.+]]: memref<?x?xf32>)
// CHECK: %[[R:.+]] = arith.muli
// CHECK: ttile.load %[[X]][%[[R]], %{{.+}}] : memref<?x?xf32> -> tensor<32x8xf32>
// CHECK: %[[M:.+]] = arith.remsi %[[R]], %c32
// CHECK: %[[TT:.+]] = ttile.load %[[T]][%[[M]], %{{.+}}] : memref<?x?xf32> -> tensor<32x8xf32>
// CHECK: arith.mulf %{{.+}}, %[[TT]]
func.func @periodic(%x: tensor<2x4x32x8xf32>, %t: tensor<32x8xf32>) -> tensor<2x4x32x8xf32> {
  %0 = tsched.group row [256, 8] (%x, %t) : (tensor<2x4x32x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32x8xf32> {
  ^bb0(%a: tensor<2x4x32x8xf32>, %b: tensor<32x8xf32>):
    %y = tgraph.mul %a, %b : (tensor<2x4x32x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32x8xf32>
    tsched.yield %y : tensor<2x4x32x8xf32>
  }
  return %0 : tensor<2x4x32x8xf32>
}

// -----

func.func @bad_schedule(%a: tensor<64x64xbf16>, %b: tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  %0 = tsched.group contraction [64, 64] (%a, %b) : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16> {
  ^bb0(%x: tensor<64x64xbf16>, %y: tensor<64x64xbf16>):
    // expected-error @+1 {{'tgraph.matmul' op has the GPU schedule block(100, 96).k(64).warps(4).stages(4), which no GEMM kernel is built with: the tile's rows and columns must be powers of two from 16, k a power of two of at least 16 bytes of 'bf16' (8 elements), stages at least 1}}
    %p = tgraph.matmul %x, %y {tsched.schedule = #tsched.schedule<"block(100, 96)">} : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xbf16>
    tsched.yield %p : tensor<64x64xbf16>
  }
  return %0 : tensor<64x64xbf16>
}

// -----

// An input that only a broadcast reads, placed at dim 0 of [16, 16]: it is
// a row of the layout (one value a row), although its shape right-aligned
// would read as a column. An iota along the columns of a [16] column is the
// column index.
// CHECK-LABEL: func.func @placed_row
// CHECK: tsched.views = [array<i64: 16>, array<i64: 16, 16>]
// CHECK-LABEL: func.func @placed_row_row0
// CHECK: %[[R:.+]] = ttile.load %arg0[%{{.+}}] : memref<?xf32> -> tensor<16xf32>
// CHECK: ttile.broadcast %[[R]] {dims = array<i64: 0>} : tensor<16xf32> -> tensor<16x16xf32>
// CHECK: ttile.iota {dim = 1 : i32} : tensor<16x16xi32>
func.func @placed_row(%x: tensor<16xf32>) -> tensor<16x16xf32> {
  %0 = tsched.group row [16, 16] (%x) : (tensor<16xf32>) -> tensor<16x16xf32> {
  ^bb0(%a: tensor<16xf32>):
    %b = tgraph.broadcast_in_dim %a {broadcast_dimensions = array<i64: 0>} : tensor<16xf32> -> tensor<16x16xf32>
    %i = tgraph.iota {dim = 0 : i64} : tensor<16xf32>
    %s = tgraph.add %b, %i : (tensor<16x16xf32>, tensor<16xf32>) -> tensor<16x16xf32>
    tsched.yield %s : tensor<16x16xf32>
  }
  return %0 : tensor<16x16xf32>
}

// -----

// A column sum of bf16 [1000, 300]: programs of 16 columns (until the
// programs fill 132 SMs, down to 32 bytes a row), each summing all 1000
// rows in f32 tiles of 256 x 16 with the next load issued ahead, padding
// past the last row with 0, then reducing the tile and rounding to bf16.
// CHECK-LABEL: func.func @bias_grad
// CHECK: tsched.group reduction (%arg0) {tsched.grid = array<i64: 19>, tsched.kernel = @bias_grad_reduce0, tsched.schedule = #tsched.schedule<"block(256, 16).warps(8)">, tsched.views = [array<i64: 1000, 300>, array<i64: 300>]}
// CHECK-LABEL: func.func @bias_grad_reduce0
// CHECK-SAME: (%[[IN:.+]]: memref<?x?xbf16>, %[[OUT:.+]]: memref<?xbf16>) attributes {ttile.kernel, ttile.num_warps = 8 : i32}
// CHECK: %[[ACC:.+]] = ttile.range %[[K:.+]] = %{{.+}} to %c1000 step %c256 stages 2 iter_args(%[[A:.+]] = %{{.+}}) -> (tensor<256x16xf32>)
// CHECK: %[[T:.+]] = ttile.load %[[IN]][%{{.+}}, %{{.+}}] {padding = 0.000000e+00 : bf16} : memref<?x?xbf16> -> tensor<256x16xbf16>
// CHECK: %[[F:.+]] = ttile.cast %[[T]] : tensor<256x16xbf16> -> tensor<256x16xf32>
// CHECK: arith.addf %[[A]], %[[F]] : tensor<256x16xf32>
// CHECK: %[[S:.+]] = ttile.reduce sum %[[ACC]] {dim = 0 : i32} : tensor<256x16xf32> -> tensor<16xf32>
// CHECK: %[[SB:.+]] = ttile.cast %[[S]] : tensor<16xf32> -> tensor<16xbf16>
// CHECK: ttile.store %[[SB]], %[[OUT]][%{{.+}}] : tensor<16xbf16>, memref<?xbf16>
func.func @bias_grad(%x: tensor<1000x300xbf16>) -> tensor<300xbf16> {
  %0 = tsched.group reduction (%x) : (tensor<1000x300xbf16>) -> tensor<300xbf16> {
  ^bb0(%a: tensor<1000x300xbf16>):
    %s = tgraph.reduce_sum %a {dims = array<i64: 0>} : tensor<1000x300xbf16> -> tensor<300xbf16>
    tsched.yield %s : tensor<300xbf16>
  }
  return %0 : tensor<300xbf16>
}

// -----

// A max over the middle dim of [3, 77, 50]: batches of 77 rows that no
// 128-row tile divides are masked (padding -inf), and the output's columns
// past 50 of a batch are not stored.
// CHECK-LABEL: func.func @middle_max_reduce0
// CHECK: %[[ROWS:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : tensor<128x8xi32>
// CHECK: ttile.load %arg0[%{{.+}}, %{{.+}}] mask %[[ROWS]] {padding = 0xFF800000 : f32}
// CHECK: arith.maximumf
// CHECK: ttile.reduce max %{{.+}} {dim = 0 : i32} : tensor<128x8xf32> -> tensor<8xf32>
// CHECK: %[[COLS:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : tensor<8xi32>
// CHECK: ttile.store %{{.+}}, %arg1[%{{.+}}] mask %[[COLS]]
func.func @middle_max(%x: tensor<3x77x50xf32>) -> tensor<3x50xf32> {
  %0 = tsched.group reduction (%x) : (tensor<3x77x50xf32>) -> tensor<3x50xf32> {
  ^bb0(%a: tensor<3x77x50xf32>):
    %s = tgraph.reduce_max %a {dims = array<i64: 1>} : tensor<3x77x50xf32> -> tensor<3x50xf32>
    tsched.yield %s : tensor<3x50xf32>
  }
  return %0 : tensor<3x50xf32>
}

// -----

// A sum over the trailing dims [7, 33, 300] -> [7]: long rows of 9900,
// each program summing one (7 programs) along 1024-column tiles.
// CHECK-LABEL: func.func @rows
// CHECK: tsched.views = [array<i64: 7, 9900>, array<i64: 7>]
// CHECK-LABEL: func.func @rows_reduce0
// CHECK: ttile.range %{{.+}} = %{{.+}} to %c9900 step %c1024 stages 2
// CHECK: ttile.reduce sum %{{.+}} {dim = 1 : i32} : tensor<1x1024xf32> -> tensor<1xf32>
func.func @rows(%x: tensor<7x33x300xf32>) -> tensor<7xf32> {
  %0 = tsched.group reduction (%x) : (tensor<7x33x300xf32>) -> tensor<7xf32> {
  ^bb0(%a: tensor<7x33x300xf32>):
    %s = tgraph.reduce_sum %a {dims = array<i64: 1, 2>} : tensor<7x33x300xf32> -> tensor<7xf32>
    tsched.yield %s : tensor<7xf32>
  }
  return %0 : tensor<7xf32>
}

// -----

// A weight whose shape reads as periodic in the product's layout ([16, 5]
// of [3, 16, 5]: K equals the input's middle dim) is still the GEMM's B
// operand, read through the GEMM's view.
// CHECK-LABEL: func.func @weight_like_a_table
// CHECK: tsched.kernel = @weight_like_a_table_gemm0
// CHECK-SAME: tsched.views = [array<i64: 48, 16>, array<i64: 16, 5>, array<i64: 48, 5>]
func.func @weight_like_a_table(%x: tensor<3x16x16xf32>, %w: tensor<16x5xf32>) -> tensor<3x16x5xf32> {
  %0 = tsched.group contraction [48, 5] (%x, %w) : (tensor<3x16x16xf32>, tensor<16x5xf32>) -> tensor<3x16x5xf32> {
  ^bb0(%a: tensor<3x16x16xf32>, %b: tensor<16x5xf32>):
    %1 = tgraph.matmul %a, %b : (tensor<3x16x16xf32>, tensor<16x5xf32>) -> tensor<3x16x5xf32>
    tsched.yield %1 : tensor<3x16x5xf32>
  }
  return %0 : tensor<3x16x5xf32>
}
