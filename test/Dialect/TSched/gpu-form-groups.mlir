// RUN: tessera-opt %s --tessera-gpu-form-groups --split-input-file | FileCheck %s
// RUN: tessera-opt %s --tessera-gpu-form-groups=max-row=64 --split-input-file | FileCheck %s --check-prefix=SHORT

// A layernorm and a softmax of its rows (as decomposition leaves them) are
// one row kernel: the row statistics never leave it. The product and its
// gelu epilogue are one contraction kernel; one-element constants are
// copied in (before their first reader), the normalized rows are the only
// value in memory between them.
// CHECK-LABEL: func.func @norm_softmax_matmul_gelu
// CHECK: %[[ROWS:.+]] = tsched.group row [32, 100] (%arg0, %arg1, %arg2) : (tensor<32x100xf32>, tensor<100xf32>, tensor<100xf32>) -> tensor<32x100xf32> {
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<32x100xf32>, %[[S:.+]]: tensor<100xf32>, %[[B:.+]]: tensor<100xf32>):
// CHECK: %[[SUM:.+]] = tgraph.reduce_sum %[[X]] {dims = array<i64: 1>, keepdims}
// CHECK-NEXT: %[[N:.+]] = tgraph.constant dense<1.000000e+02> : tensor<f32>
// CHECK-NEXT: tgraph.div %[[SUM]], %[[N]]
// CHECK: tgraph.rsqrt
// CHECK: tgraph.mul %{{.+}}, %[[S]]
// CHECK: tgraph.add %{{.+}}, %[[B]]
// CHECK: tgraph.reduce_max
// CHECK: tgraph.exp
// CHECK: tgraph.reduce_sum
// CHECK: %[[P:.+]] = tgraph.mul
// CHECK-NEXT: tsched.yield %[[P]] : tensor<32x100xf32>
// CHECK: %[[OUT:.+]] = tsched.group contraction [32, 64] (%[[ROWS]], %arg3)
// CHECK: tgraph.matmul
// CHECK: tgraph.erf
// CHECK: tsched.yield
// CHECK-NOT: tsched.group
// CHECK: return %[[OUT]]
func.func @norm_softmax_matmul_gelu(%x: tensor<32x100xf32>, %s: tensor<100xf32>,
    %b: tensor<100xf32>, %w: tensor<100x64xf32>) -> tensor<32x64xf32> {
  %half = tgraph.constant dense<5.000000e-01> : tensor<f32>
  %rsqrt2 = tgraph.constant dense<0.707106769> : tensor<f32>
  %one = tgraph.constant dense<1.000000e+00> : tensor<f32>
  %eps = tgraph.constant dense<9.99999974E-6> : tensor<f32>
  %n = tgraph.constant dense<1.000000e+02> : tensor<f32>
  %0 = tgraph.reduce_sum %x {dims = array<i64: 1>, keepdims} : tensor<32x100xf32> -> tensor<32x1xf32>
  %1 = tgraph.div %0, %n : (tensor<32x1xf32>, tensor<f32>) -> tensor<32x1xf32>
  %2 = tgraph.sub %x, %1 : (tensor<32x100xf32>, tensor<32x1xf32>) -> tensor<32x100xf32>
  %3 = tgraph.square %2 : tensor<32x100xf32>
  %4 = tgraph.reduce_sum %3 {dims = array<i64: 1>, keepdims} : tensor<32x100xf32> -> tensor<32x1xf32>
  %5 = tgraph.div %4, %n : (tensor<32x1xf32>, tensor<f32>) -> tensor<32x1xf32>
  %6 = tgraph.add %5, %eps : (tensor<32x1xf32>, tensor<f32>) -> tensor<32x1xf32>
  %7 = tgraph.rsqrt %6 : tensor<32x1xf32>
  %8 = tgraph.mul %2, %7 : (tensor<32x100xf32>, tensor<32x1xf32>) -> tensor<32x100xf32>
  %9 = tgraph.mul %8, %s : (tensor<32x100xf32>, tensor<100xf32>) -> tensor<32x100xf32>
  %10 = tgraph.add %9, %b : (tensor<32x100xf32>, tensor<100xf32>) -> tensor<32x100xf32>
  %11 = tgraph.reduce_max %10 {dims = array<i64: 1>, keepdims} : tensor<32x100xf32> -> tensor<32x1xf32>
  %12 = tgraph.sub %10, %11 : (tensor<32x100xf32>, tensor<32x1xf32>) -> tensor<32x100xf32>
  %13 = tgraph.exp %12 : tensor<32x100xf32>
  %14 = tgraph.reduce_sum %13 {dims = array<i64: 1>, keepdims} : tensor<32x100xf32> -> tensor<32x1xf32>
  %15 = tgraph.div %one, %14 : (tensor<f32>, tensor<32x1xf32>) -> tensor<32x1xf32>
  %16 = tgraph.mul %13, %15 : (tensor<32x100xf32>, tensor<32x1xf32>) -> tensor<32x100xf32>
  %17 = tgraph.matmul %16, %w : (tensor<32x100xf32>, tensor<100x64xf32>) -> tensor<32x64xf32>
  %18 = tgraph.mul %17, %rsqrt2 : (tensor<32x64xf32>, tensor<f32>) -> tensor<32x64xf32>
  %19 = tgraph.erf %18 : tensor<32x64xf32>
  %20 = tgraph.mul %17, %half : (tensor<32x64xf32>, tensor<f32>) -> tensor<32x64xf32>
  %21 = tgraph.add %19, %one : (tensor<32x64xf32>, tensor<f32>) -> tensor<32x64xf32>
  %22 = tgraph.mul %20, %21 : tensor<32x64xf32>
  return %22 : tensor<32x64xf32>
}

// -----

// A contraction's epilogue takes a bias (a column), a residual (a full
// tile from memory) and an activation; the value that two products read
// closes its group, so the op after them starts another that reads it
// from memory, and the epilogue may read it too (no cycle).
// CHECK-LABEL: func.func @epilogue_and_fan_out
// CHECK: %[[E:.+]] = tsched.group row [4, 4] (%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: tgraph.exp
// CHECK: %[[C:.+]] = tsched.group contraction [4, 4] (%[[E]], %arg1, %arg2, %arg3)
// CHECK: tgraph.matmul
// CHECK: tgraph.add
// CHECK: tgraph.add
// CHECK: tgraph.tanh
// CHECK: tsched.yield
// CHECK: %[[D:.+]] = tsched.group contraction [4, 4] (%[[E]], %arg1, %[[C]])
// CHECK: tgraph.matmul
// CHECK: tgraph.add
// CHECK: tsched.yield
// CHECK: %[[L:.+]] = tsched.group row [4, 4] (%[[E]]) : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: tgraph.neg
// CHECK: return %[[D]], %[[L]]
func.func @epilogue_and_fan_out(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>,
    %b: tensor<4xf32>, %r: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %e = tgraph.exp %x : tensor<4x4xf32>
  %m = tgraph.matmul %e, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %mb = tgraph.add %m, %b : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %mr = tgraph.add %mb, %r : tensor<4x4xf32>
  %a = tgraph.tanh %mr : tensor<4x4xf32>
  %m2 = tgraph.matmul %e, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %d = tgraph.add %m2, %a : tensor<4x4xf32>
  %l = tgraph.neg %e : tensor<4x4xf32>
  return %d, %l : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A value read both inside its group and outside it is an output; one read
// only inside is not.
// CHECK-LABEL: func.func @outputs
// CHECK: %[[G:.+]]:2 = tsched.group row [8, 16] (%arg0) : (tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x1xf32>)
// CHECK: %[[T:.+]] = tgraph.tanh
// CHECK: %[[S:.+]] = tgraph.reduce_sum %[[T]]
// CHECK-NOT: tgraph.
// CHECK: tsched.yield %[[T]], %[[S]]
// CHECK: tgraph.reshape %[[G]]#1
// CHECK: return %[[G]]#0
func.func @outputs(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>) {
  %t = tgraph.tanh %x : tensor<8x16xf32>
  %s = tgraph.reduce_sum %t {dims = array<i64: 1>, keepdims} : tensor<8x16xf32> -> tensor<8x1xf32>
  %v = tgraph.reshape %s : tensor<8x1xf32> -> tensor<8xf32>
  return %t, %v : tensor<8x16xf32>, tensor<8xf32>
}

// -----

// Layout changes, reductions over leading dims and attention are kernels
// of their own; a row broadcast back along the rows joins its row group.
// With max-row=64, rows of 100 are too long for one program: the
// reduction becomes a reduction kernel, and a row kernel reads its result
// as the rows of the broadcast.
// CHECK-LABEL: func.func @kinds
// CHECK: tsched.group layout (%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.transpose
// CHECK: tsched.group reduction
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.reduce_sum {{.+}} {dims = array<i64: 0>}
// CHECK: tsched.group row [4, 100]
// CHECK: tgraph.reduce_max
// CHECK: tgraph.broadcast_in_dim
// CHECK: tgraph.sub
// CHECK: tsched.group attention
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.attention
// SHORT-LABEL: func.func @kinds
// SHORT: tsched.group layout
// SHORT: tsched.group reduction
// SHORT: tsched.group reduction
// SHORT-NEXT: ^bb0
// SHORT-NEXT: tgraph.reduce_max
// SHORT: tsched.group row [4, 100] (%{{.+}}, %{{.+}}) : (tensor<4x100xf32>, tensor<4xf32>)
// SHORT-NEXT: ^bb0
// SHORT-NEXT: tgraph.broadcast_in_dim
// SHORT-NEXT: tgraph.sub
func.func @kinds(%x: tensor<100x4xf32>, %q: tensor<2x128x64xbf16>)
    -> (tensor<4xf32>, tensor<4x100xf32>, tensor<2x128x64xbf16>) {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>} : tensor<100x4xf32> -> tensor<4x100xf32>
  %c = tgraph.reduce_sum %x {dims = array<i64: 0>} : tensor<100x4xf32> -> tensor<4xf32>
  %m = tgraph.reduce_max %t {dims = array<i64: 1>} : tensor<4x100xf32> -> tensor<4xf32>
  %mb = tgraph.broadcast_in_dim %m {broadcast_dimensions = array<i64: 0>} : tensor<4xf32> -> tensor<4x100xf32>
  %d = tgraph.sub %t, %mb : tensor<4x100xf32>
  %o = tgraph.attention %q, %q, %q {causal} : tensor<2x128x64xbf16>
  return %c, %d, %o : tensor<4xf32>, tensor<4x100xf32>, tensor<2x128x64xbf16>
}

// -----

// Symbolic shapes have no static [R, C] layout: each op is its own kernel;
// ops with regions stay where they are.
// CHECK-LABEL: func.func @symbolic
// CHECK: tsched.group single (%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.exp
// CHECK-NEXT: tsched.yield
// CHECK: tsched.group single
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.neg
// CHECK-NEXT: tsched.yield
func.func @symbolic(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>) -> tensor<?x8xf32, #tgraph.dims<[B, 8]>> {
  %e = tgraph.exp %x : tensor<?x8xf32, #tgraph.dims<[B, 8]>>
  %n = tgraph.neg %e : tensor<?x8xf32, #tgraph.dims<[B, 8]>>
  return %n : tensor<?x8xf32, #tgraph.dims<[B, 8]>>
}

// -----

// A tensor of indices is computed inside the group that reads it. A row
// reduction of a product's epilogue cannot run in the product's kernel: it
// joins the open row group of that layout instead of starting a kernel of
// its own, and so does the op that reads the broadcast of a column of
// rows, which that group computes from the [4, 1] source itself.
// CHECK-LABEL: func.func @siblings
// CHECK: %[[H:.+]] = tsched.group contraction [4, 8] (%arg0, %arg2)
// CHECK: tgraph.matmul
// CHECK-NEXT: tgraph.tanh
// CHECK: %[[G:.+]]:2 = tsched.group row [4, 8] (%arg0, %[[H]], %arg1) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%[[X:.+]]: tensor<4x8xf32>, %[[T:.+]]: tensor<4x8xf32>, %[[C:.+]]: tensor<4x1xf32>):
// CHECK-NEXT: %[[I:.+]] = tgraph.iota
// CHECK-NEXT: %[[A:.+]] = tgraph.add %[[X]], %[[I]]
// CHECK-NEXT: %[[S:.+]] = tgraph.reduce_sum %[[T]]
// CHECK-NEXT: %[[B:.+]] = tgraph.broadcast_in_dim %[[C]]
// CHECK-NEXT: %[[D:.+]] = tgraph.mul %[[A]], %[[B]]
// CHECK-NEXT: tsched.yield %[[S]], %[[D]]
// CHECK-NOT: tgraph.broadcast_in_dim
// CHECK: return %[[G]]#1, %[[G]]#0
func.func @siblings(%x: tensor<4x8xf32>, %c: tensor<4x1xf32>, %w: tensor<8x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %i = tgraph.iota {dim = 1 : i64} : tensor<4x8xf32>
  %a = tgraph.add %x, %i : tensor<4x8xf32>
  %m = tgraph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %b = tgraph.broadcast_in_dim %c {broadcast_dimensions = array<i64: 0, 1>} : tensor<4x1xf32> -> tensor<4x8xf32>
  %t = tgraph.tanh %m : tensor<4x8xf32>
  %s = tgraph.reduce_sum %t {dims = array<i64: 1>, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tgraph.mul %a, %b : tensor<4x8xf32>
  return %d, %s : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// A broadcast that an op outside every group reads (here the return) is
// written out by a row kernel of its own; the group that reads it still
// computes it from its source.
// CHECK-LABEL: func.func @broadcast_returned
// CHECK: %[[B:.+]] = tsched.group row [3, 5] (%arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.broadcast_in_dim
// CHECK-NEXT: tsched.yield
// CHECK: %[[Y:.+]] = tsched.group row [3, 5] (%arg0, %arg1)
// CHECK: tgraph.broadcast_in_dim
// CHECK: tgraph.add
// CHECK: return %[[Y]], %[[B]]
func.func @broadcast_returned(%x: tensor<3x5xf32>, %r: tensor<5xf32>)
    -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %b = tgraph.broadcast_in_dim %r {broadcast_dimensions = array<i64: 1>} : tensor<5xf32> -> tensor<3x5xf32>
  %y = tgraph.add %x, %b : tensor<3x5xf32>
  return %y, %b : tensor<3x5xf32>, tensor<3x5xf32>
}

// -----

// A GEMM reads its operands from memory: a broadcast of a row that the
// product multiplies is written out by a row kernel, and the epilogue
// reads the written value too. An epilogue op that reads the product's
// operand as anything but a full tile (here B [1, 8], a column of the
// [8, 8] result) starts a row group of its own. A dot_general that is no
// batched matrix product (it contracts every dim) is a library `single`
// group.
// CHECK-LABEL: func.func @gemm_operands
// CHECK: %[[BC:.+]] = tsched.group row [8, 8] (%arg0) : (tensor<8x1xf32>) -> tensor<8x8xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.broadcast_in_dim
// CHECK: %[[P:.+]] = tsched.group contraction [8, 8] (%[[BC]], %arg1) :
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<8x8xf32>, %[[W:.+]]: tensor<8x8xf32>):
// CHECK-NEXT: %[[M:.+]] = tgraph.matmul %[[A]], %[[W]]
// CHECK-NEXT: tgraph.add %[[M]], %[[A]]
// CHECK: tsched.group contraction [8, 8] (%arg0, %arg3) :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.matmul
// CHECK-NEXT: tsched.yield
// CHECK: tsched.group row [8, 8] (%{{.+}}, %arg3)
// CHECK: tsched.group single (%arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.dot_general
func.func @gemm_operands(%r: tensor<8x1xf32>, %w: tensor<8x8xf32>, %t: tensor<2x3x4xf32>, %c: tensor<1x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>) {
  %b = tgraph.broadcast_in_dim %r {broadcast_dimensions = array<i64: 0, 1>} : tensor<8x1xf32> -> tensor<8x8xf32>
  %p = tgraph.matmul %b, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %q = tgraph.add %p, %b : tensor<8x8xf32>
  %o = tgraph.matmul %r, %c : (tensor<8x1xf32>, tensor<1x8xf32>) -> tensor<8x8xf32>
  %s = tgraph.sub %o, %c : (tensor<8x8xf32>, tensor<1x8xf32>) -> tensor<8x8xf32>
  %d = tgraph.dot_general %t, %t {lhs_batching_dims = array<i64>, rhs_batching_dims = array<i64>, lhs_contracting_dims = array<i64: 0, 1, 2>, rhs_contracting_dims = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<f32>
  return %q, %s, %d : tensor<8x8xf32>, tensor<8x8xf32>, tensor<f32>
}

// -----

// A table repeated over leading dims (rotary cos/sin [S, D] of [B, H, S,
// D]) whose rows are a multiple of 16 is read by the row kernel at its row
// modulo S: broadcast or not, nothing is written out. With 12 rows it
// would wrap inside a block of rows, and the broadcast is written out by
// a layout kernel.
// CHECK-LABEL: func.func @periodic
// CHECK: %[[Y:.+]] = tsched.group row [256, 8] (%arg0, %arg1, %arg2) :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.broadcast_in_dim
// CHECK-NEXT: tgraph.mul
// CHECK-NEXT: tgraph.add
// CHECK-NEXT: tsched.yield
// CHECK: tsched.group layout (%arg3)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.broadcast_in_dim
// CHECK: tsched.group row [96, 8]
func.func @periodic(%x: tensor<2x4x32x8xf32>, %t: tensor<32x8xf32>, %u: tensor<4x32x8xf32>, %v: tensor<12x8xf32>, %w: tensor<2x4x12x8xf32>) -> (tensor<2x4x32x8xf32>, tensor<2x4x12x8xf32>) {
  %b = tgraph.broadcast_in_dim %t {broadcast_dimensions = array<i64: 2, 3>} : tensor<32x8xf32> -> tensor<2x4x32x8xf32>
  %y = tgraph.mul %x, %b : tensor<2x4x32x8xf32>
  %z = tgraph.add %y, %u : (tensor<2x4x32x8xf32>, tensor<4x32x8xf32>) -> tensor<2x4x32x8xf32>
  %c = tgraph.broadcast_in_dim %v {broadcast_dimensions = array<i64: 2, 3>} : tensor<12x8xf32> -> tensor<2x4x12x8xf32>
  %s = tgraph.mul %w, %c : tensor<2x4x12x8xf32>
  return %z, %s : tensor<2x4x32x8xf32>, tensor<2x4x12x8xf32>
}

// -----

// A cheap unary op is computed again by each group that reads it instead
// of being written out: the square of u, which the epilogue uses and the
// later group reads, leaves the first group as u (which the later group
// reads anyway), not as u^2.
// CHECK-LABEL: func.func @recomputed_square
// CHECK: %[[G:.+]]:2 = tsched.group contraction [8, 16] (%arg0, %arg1) : (tensor<8x32xbf16>, tensor<32x16xbf16>) -> (tensor<8x16xbf16>, tensor<8x16xbf16>)
// CHECK: %[[U:.+]] = tgraph.matmul
// CHECK: %[[SQ:.+]] = tgraph.square %[[U]]
// CHECK: tgraph.mul %[[SQ]], %[[U]]
// CHECK: tsched.yield %[[U]], %{{.+}} : tensor<8x16xbf16>, tensor<8x16xbf16>
// CHECK: tsched.group contraction [8, 16] (%[[G]]#1, %arg2, %[[G]]#0) : (tensor<8x16xbf16>, tensor<16x16xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
// CHECK: ^bb0(%{{.+}}: tensor<8x16xbf16>, %{{.+}}: tensor<16x16xbf16>, %[[U2:.+]]: tensor<8x16xbf16>):
// CHECK: %[[P:.+]] = tgraph.matmul
// CHECK: %[[SQ2:.+]] = tgraph.square %[[U2]]
// CHECK: %[[M:.+]] = tgraph.mul %[[SQ2]], %[[P]]
// CHECK: tgraph.cast %[[M]] : tensor<8x16xbf16> -> tensor<8x16xf32>
func.func @recomputed_square(%x: tensor<8x32xbf16>, %w: tensor<32x16xbf16>,
    %w2: tensor<16x16xbf16>) -> tensor<8x16xf32> {
  %u = tgraph.matmul %x, %w : (tensor<8x32xbf16>, tensor<32x16xbf16>) -> tensor<8x16xbf16>
  %sq = tgraph.square %u : tensor<8x16xbf16>
  %t = tgraph.mul %sq, %u : tensor<8x16xbf16>
  %y = tgraph.tanh %t : tensor<8x16xbf16>
  %p = tgraph.matmul %y, %w2 : (tensor<8x16xbf16>, tensor<16x16xbf16>) -> tensor<8x16xbf16>
  %b = tgraph.mul %sq, %p : tensor<8x16xbf16>
  %f = tgraph.cast %b : tensor<8x16xbf16> -> tensor<8x16xf32>
  return %f : tensor<8x16xf32>
}

// -----

// Read only inside its operand's group, a recomputed op adds no output;
// a cast that narrows is not recomputed (its reader would read more
// bytes), so the group writes it.
// CHECK-LABEL: func.func @recomputed_inside
// CHECK: %[[G:.+]]:2 = tsched.group row [4, 8] (%arg0) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>)
// CHECK: tgraph.neg
// CHECK: tgraph.add
// CHECK: tgraph.cast
// CHECK: tsched.yield
// CHECK: tsched.group contraction [4, 4] (%[[G]]#1, %arg1)
// CHECK: return
func.func @recomputed_inside(%x: tensor<4x8xf32>, %w: tensor<8x4xbf16>)
    -> (tensor<4x8xf32>, tensor<4x4xbf16>) {
  %e = tgraph.exp %x : tensor<4x8xf32>
  %n = tgraph.neg %e : tensor<4x8xf32>
  %s = tgraph.add %n, %e : tensor<4x8xf32>
  %c = tgraph.cast %s : tensor<4x8xf32> -> tensor<4x8xbf16>
  %m = tgraph.matmul %c, %w : (tensor<4x8xbf16>, tensor<8x4xbf16>) -> tensor<4x4xbf16>
  return %s, %m : tensor<4x8xf32>, tensor<4x4xbf16>
}

// -----

// A widening cast that a reduction along the last dim reads is computed
// again by the row group the reduction is in: a residual sum's f32 copy,
// which a layernorm's mean sums beside the bf16 value it also reads,
// does not leave the product's group (one bf16 output, not two). Rows
// longer than max-row put the reduction in a reduction group, which
// computes nothing but its reduction: the product then writes the cast.
// CHECK-LABEL: func.func @recomputed_for_mean
// CHECK: %[[G:.+]] = tsched.group contraction [8, 128] (%arg0, %arg1, %arg2) : (tensor<8x32xbf16>, tensor<32x128xbf16>, tensor<8x128xbf16>) -> tensor<8x128xbf16>
// CHECK: tsched.group row [8, 128] (%[[G]]) : (tensor<8x128xbf16>)
// CHECK-NEXT: ^bb0(%[[H:.+]]: tensor<8x128xbf16>):
// CHECK: %[[F:.+]] = tgraph.cast %[[H]] : tensor<8x128xbf16> -> tensor<8x128xf32>
// CHECK: tgraph.reduce_sum %[[F]]
// CHECK: tgraph.sub %[[H]]
// SHORT-LABEL: func.func @recomputed_for_mean
// SHORT: tsched.group contraction [8, 128] (%arg0, %arg1, %arg2) : (tensor<8x32xbf16>, tensor<32x128xbf16>, tensor<8x128xbf16>) -> (tensor<8x128xbf16>, tensor<8x128xf32>)
// SHORT: tsched.group reduction
// A reduction over more than the last dim (a loss) is in a reduction group
// too: the cast stays in the product's epilogue.
// CHECK-LABEL: func.func @cast_for_loss
// CHECK: tsched.group contraction [8, 128] (%arg0, %arg1) : (tensor<8x32xbf16>, tensor<32x128xbf16>) -> tensor<8x128xf32>
// CHECK: tgraph.cast
// CHECK: tsched.group reduction
func.func @recomputed_for_mean(%x: tensor<8x32xbf16>, %w: tensor<32x128xbf16>,
    %r: tensor<8x128xbf16>) -> tensor<8x128xbf16> {
  %p = tgraph.matmul %x, %w : (tensor<8x32xbf16>, tensor<32x128xbf16>) -> tensor<8x128xbf16>
  %h = tgraph.add %r, %p : tensor<8x128xbf16>
  %f = tgraph.cast %h : tensor<8x128xbf16> -> tensor<8x128xf32>
  %s = tgraph.reduce_sum %f {dims = array<i64: 1>, keepdims} : tensor<8x128xf32> -> tensor<8x1xf32>
  %n = tgraph.constant dense<1.280000e+02> : tensor<f32>
  %m = tgraph.div %s, %n : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %mb = tgraph.cast %m : tensor<8x1xf32> -> tensor<8x1xbf16>
  %c = tgraph.sub %h, %mb : (tensor<8x128xbf16>, tensor<8x1xbf16>) -> tensor<8x128xbf16>
  return %c : tensor<8x128xbf16>
}

func.func @cast_for_loss(%x: tensor<8x32xbf16>, %w: tensor<32x128xbf16>) -> tensor<f32> {
  %p = tgraph.matmul %x, %w : (tensor<8x32xbf16>, tensor<32x128xbf16>) -> tensor<8x128xbf16>
  %f = tgraph.cast %p : tensor<8x128xbf16> -> tensor<8x128xf32>
  %s = tgraph.reduce_sum %f {dims = array<i64: 0, 1>} : tensor<8x128xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Head transposes around flash attention are not copied: the attention
// groups read q, k, v and dO ([2, 200, 4, 64] views of the products) in
// place, through transposes of their own, and take in the transposes of
// the forward's output and of dV, whose results they yield. The backward
// reads the forward's output back through a transpose of the transposed
// result.
// CHECK-LABEL: func.func @head_transposes
// CHECK-NOT: tsched.group layout
// CHECK: %[[Q:.+]] = tgraph.reshape %arg0
// CHECK: %[[K:.+]] = tgraph.reshape %arg1
// CHECK: %[[V:.+]] = tgraph.reshape %arg2
// CHECK: %[[O:.+]] = tsched.group attention (%[[Q]], %[[K]], %[[V]]) : (tensor<2x200x4x64xbf16>, tensor<2x200x4x64xbf16>, tensor<2x200x4x64xbf16>) -> tensor<2x200x4x64xbf16> {
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<2x200x4x64xbf16>, %[[B:.+]]: tensor<2x200x4x64xbf16>, %[[C:.+]]: tensor<2x200x4x64xbf16>):
// CHECK-NEXT: %[[AT:.+]] = tgraph.transpose %[[A]] {permutation = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[BT:.+]] = tgraph.transpose %[[B]]
// CHECK-NEXT: %[[CT:.+]] = tgraph.transpose %[[C]]
// CHECK-NEXT: %[[R:.+]] = tgraph.attention %[[AT]], %[[BT]], %[[CT]] {causal}
// CHECK-NEXT: %[[RT:.+]] = tgraph.transpose %[[R]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x200x64xbf16> -> tensor<2x200x4x64xbf16>
// CHECK-NEXT: tsched.yield %[[RT]]
// CHECK: %[[DO:.+]] = tgraph.reshape %arg3
// CHECK: %[[G:.+]]:3 = tsched.group attention (%[[Q]], %[[K]], %[[V]], %[[O]], %[[DO]]) : {{.+}} -> (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x200x4x64xbf16>) {
// CHECK-COUNT-5: tgraph.transpose
// CHECK-NEXT: %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]] = tgraph.attention_grad
// CHECK-NEXT: %[[DVT:.+]] = tgraph.transpose %[[DV]]
// CHECK-NEXT: tsched.yield %[[DQ]], %[[DK]], %[[DVT]]
// CHECK-NOT: tsched.group layout
func.func @head_transposes(%qp: tensor<2x200x256xbf16>, %kp: tensor<2x200x256xbf16>, %vp: tensor<2x200x256xbf16>, %dy: tensor<2x200x256xbf16>) -> (tensor<2x200x256xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x200x4x64xbf16>) {
  %q4 = tgraph.reshape %qp : tensor<2x200x256xbf16> -> tensor<2x200x4x64xbf16>
  %k4 = tgraph.reshape %kp : tensor<2x200x256xbf16> -> tensor<2x200x4x64xbf16>
  %v4 = tgraph.reshape %vp : tensor<2x200x256xbf16> -> tensor<2x200x4x64xbf16>
  %q = tgraph.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
  %k = tgraph.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
  %v = tgraph.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
  %o = tgraph.attention %q, %k, %v {causal} : tensor<2x4x200x64xbf16>
  %ot = tgraph.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x200x64xbf16> -> tensor<2x200x4x64xbf16>
  %y = tgraph.reshape %ot : tensor<2x200x4x64xbf16> -> tensor<2x200x256xbf16>
  %dy4 = tgraph.reshape %dy : tensor<2x200x256xbf16> -> tensor<2x200x4x64xbf16>
  %do = tgraph.transpose %dy4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
  %dq, %dk, %dv = tgraph.attention_grad %q, %k, %v, %o, %do {causal} : (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>) -> (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>)
  %dvt = tgraph.transpose %dv {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x200x64xbf16> -> tensor<2x200x4x64xbf16>
  return %y, %dq, %dk, %dvt : tensor<2x200x256xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x200x4x64xbf16>
}

// -----

// A head transpose that something besides attention reads, and one of an
// attention result that is read elsewhere too, stay copies.
// CHECK-LABEL: func.func @copied
// CHECK: tsched.group layout
// CHECK: tsched.group attention
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.attention
// CHECK-NEXT: tsched.yield
// CHECK: tsched.group layout

func.func @copied(%qp: tensor<2x200x256xbf16>) -> (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x200x4x64xbf16>) {
  %q4 = tgraph.reshape %qp : tensor<2x200x256xbf16> -> tensor<2x200x4x64xbf16>
  %q = tgraph.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
  %o = tgraph.attention %q, %q, %q : tensor<2x4x200x64xbf16>
  %ot = tgraph.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x200x64xbf16> -> tensor<2x200x4x64xbf16>
  return %q, %o, %ot : tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x200x4x64xbf16>
}

// -----

// A head transpose of a column window (q of a fused q/k/v product with its
// heads interleaved) stays a copy: the window is read lazily, and only a
// row kernel computes one, so that kernel writes the window out and the
// copy transposes it.
// CHECK-LABEL: func.func @window_heads
// CHECK: %[[W:.+]] = tsched.group row [1600, 64] (%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.slice
// CHECK: %[[T:.+]] = tsched.group layout (%[[W]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.transpose
// CHECK: tsched.group attention (%[[T]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tgraph.attention
func.func @window_heads(%qkv: tensor<2x200x4x192xbf16>) -> tensor<2x4x200x64xbf16> {
  %q4 = tgraph.slice %qkv {start = #tgraph.dims<[0, 0, 0, 0]>, limit = #tgraph.dims<[2, 200, 4, 64]>, stride = array<i64: 1, 1, 1, 1>} : tensor<2x200x4x192xbf16> -> tensor<2x200x4x64xbf16>
  %q = tgraph.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
  %o = tgraph.attention %q, %q, %q {causal} : tensor<2x4x200x64xbf16>
  return %o : tensor<2x4x200x64xbf16>
}
