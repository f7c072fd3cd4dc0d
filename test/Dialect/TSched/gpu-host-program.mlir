// RUN: tessera-opt %s --tessera-gpu-generate-kernels --tessera-gpu-host-program --split-input-file --verify-diagnostics | FileCheck %s

// Three row groups in a chain, a column sum, a reshape and a constant:
// - %a and %b are temporaries of the workspace (%b, read by the third
//   launch, is live while %a is);
// - the row kernels read %b's row [32, 1] through its [32] view, made
//   once;
// - the constant is a private global;
// - the results: %d's buffer is the caller's (memref.alloc), and so is %c's,
//   returned through its reshape (a view); the argument and the value
//   returned twice are copied.
// CHECK: memref.global "private" constant @chain_constant0 : memref<64xf32> = dense<2.000000e+00> {alignment = 256 : i64}
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.+]]: memref<32x64xf32>) -> (memref<64xf32>, memref<32x64xf32>, memref<64xf32>, memref<2048xf32>)
// CHECK-SAME: attributes {tsched.workspace = 8448 : i64}
// CHECK: %[[K:.+]] = memref.get_global @chain_constant0 : memref<64xf32>
// CHECK: %[[A:.+]] = tsched.buffer offset 0 : memref<32x64xf32>
// CHECK: tsched.launch @chain_row0 grid [1] (%[[X]], %[[K]], %[[A]])
// CHECK-SAME: {tsched.schedule = #tsched.schedule<"block(32, 64).warps(4)">} : memref<32x64xf32>, memref<64xf32>, memref<32x64xf32>
// CHECK: %[[B:.+]] = tsched.buffer offset 8192 : memref<32x1xf32>
// CHECK: %[[BV:.+]] = tsched.view %[[B]] : memref<32x1xf32> to memref<32xf32>
// CHECK: tsched.launch @chain_row1 grid [2] (%[[A]], %[[BV]]){{.*}} : memref<32x64xf32>, memref<32xf32>
// CHECK-NOT: tsched.view
// CHECK: %[[C:.+]] = memref.alloc() : memref<32x64xf32>
// CHECK: tsched.launch @chain_row2 grid [1] (%[[X]], %[[BV]], %[[C]]){{.*}} : memref<32x64xf32>, memref<32xf32>, memref<32x64xf32>
// CHECK: %[[D:.+]] = memref.alloc() : memref<64xf32>
// CHECK: tsched.launch @chain_reduce0 grid [8] (%[[C]], %[[D]]){{.*}} : memref<32x64xf32>, memref<64xf32>
// CHECK: %[[CV:.+]] = tsched.view %[[C]] : memref<32x64xf32> to memref<2048xf32>
// CHECK: %[[XC:.+]] = memref.alloc() : memref<32x64xf32>
// CHECK: memref.copy %[[X]], %[[XC]]
// CHECK: %[[D2:.+]] = memref.alloc() : memref<64xf32>
// CHECK: memref.copy %[[D]], %[[D2]]
// CHECK: return %[[D]], %[[XC]], %[[D2]], %[[CV]]
func.func @chain(%x: tensor<32x64xf32>) -> (tensor<64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<2048xf32>) {
  %k = tgraph.constant dense<2.0> : tensor<64xf32>
  %a = tsched.group row [32, 64] (%x, %k) : (tensor<32x64xf32>, tensor<64xf32>) -> tensor<32x64xf32> {
  ^bb0(%p: tensor<32x64xf32>, %q: tensor<64xf32>):
    %0 = tgraph.mul %p, %q : (tensor<32x64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
    tsched.yield %0 : tensor<32x64xf32>
  }
  %b = tsched.group row [32, 64] (%a) : (tensor<32x64xf32>) -> tensor<32x1xf32> {
  ^bb0(%p: tensor<32x64xf32>):
    %0 = tgraph.reduce_max %p {dims = array<i64: 1>, keepdims} : tensor<32x64xf32> -> tensor<32x1xf32>
    tsched.yield %0 : tensor<32x1xf32>
  }
  %c = tsched.group row [32, 64] (%x, %b) : (tensor<32x64xf32>, tensor<32x1xf32>) -> tensor<32x64xf32> {
  ^bb0(%p: tensor<32x64xf32>, %q: tensor<32x1xf32>):
    %0 = tgraph.sub %p, %q : (tensor<32x64xf32>, tensor<32x1xf32>) -> tensor<32x64xf32>
    tsched.yield %0 : tensor<32x64xf32>
  }
  %d = tsched.group reduction (%c) : (tensor<32x64xf32>) -> tensor<64xf32> {
  ^bb0(%p: tensor<32x64xf32>):
    %0 = tgraph.reduce_sum %p {dims = array<i64: 0>} : tensor<32x64xf32> -> tensor<64xf32>
    tsched.yield %0 : tensor<64xf32>
  }
  %e = tgraph.reshape %c : tensor<32x64xf32> -> tensor<2048xf32>
  return %d, %x, %d, %e : tensor<64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<2048xf32>
}

// -----

// A temporary returned once, through a view of it, is the caller's buffer.
// CHECK-LABEL: func.func @returned_view
// CHECK-SAME: attributes {tsched.workspace = 0 : i64}
// CHECK: %[[A:.+]] = memref.alloc() : memref<4x8xf32>
// CHECK: tsched.launch @returned_view_row0 grid [1] (%arg0, %[[A]])
// CHECK: %[[V:.+]] = tsched.view %[[A]] : memref<4x8xf32> to memref<32xf32>
// CHECK: return %[[V]] : memref<32xf32>
func.func @returned_view(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %a = tsched.group row [4, 8] (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %0 = tgraph.exp %p : tensor<4x8xf32>
    tsched.yield %0 : tensor<4x8xf32>
  }
  %e = tgraph.reshape %a : tensor<4x8xf32> -> tensor<32xf32>
  return %e : tensor<32xf32>
}

// -----

// A layout group that only adds a dim of one is a view, not a launch.
// CHECK-LABEL: func.func @unit_dim
// CHECK: %[[V:.+]] = tsched.view %arg0 : memref<16xi32> to memref<16x1xi32>
// CHECK-NOT: tsched.launch
// CHECK: memref.copy %[[V]]
func.func @unit_dim(%x: tensor<16xi32>) -> tensor<16x1xi32> {
  %a = tsched.group layout (%x) : (tensor<16xi32>) -> tensor<16x1xi32> {
  ^bb0(%p: tensor<16xi32>):
    %0 = tgraph.broadcast_in_dim %p {broadcast_dimensions = array<i64: 0>} : tensor<16xi32> -> tensor<16x1xi32>
    tsched.yield %0 : tensor<16x1xi32>
  }
  return %a : tensor<16x1xi32>
}

// -----

// A transpose of the last two dims has no copy kernel yet: the group says
// why, and the host program stops at it.
func.func @transpose(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'tsched.group' op of kind 'layout' ('tgraph.transpose') has no generated kernel: a layout change that moves the last dim or steps along it}}
  %a = tsched.group layout (%x) : (tensor<4x8xf32>) -> tensor<8x4xf32> {
  ^bb0(%p: tensor<4x8xf32>):
    %0 = tgraph.transpose %p {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
    tsched.yield %0 : tensor<8x4xf32>
  }
  return %a : tensor<8x4xf32>
}

// -----

func.func @int_sum(%x: tensor<4x8xi32>) -> tensor<8xi32> {
  // expected-error @+1 {{'tsched.group' op of kind 'reduction' ('tgraph.reduce_sum') has no generated kernel: it reduces tensor<4x8xi32>, not f32, f16 or bf16}}
  %a = tsched.group reduction (%x) : (tensor<4x8xi32>) -> tensor<8xi32> {
  ^bb0(%p: tensor<4x8xi32>):
    %0 = tgraph.reduce_sum %p {dims = array<i64: 0>} : tensor<4x8xi32> -> tensor<8xi32>
    tsched.yield %0 : tensor<8xi32>
  }
  return %a : tensor<8xi32>
}

// -----

func.func @dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @-1 {{argument 0 is 'tensor<?x8xf32>'; the GPU host program takes tensors of static shape}}
  return %x : tensor<?x8xf32>
}

// -----

// Liveness: %a dies at the second launch, so %c (written by the third)
// takes its place; %b is live across both and sits beside them.
// CHECK-LABEL: func.func @reuse
// CHECK-SAME: attributes {tsched.workspace = 16384 : i64}
// CHECK: tsched.buffer offset 0 : memref<32x64xf32>
// CHECK: tsched.buffer offset 8192 : memref<32x64xf32>
// CHECK: tsched.buffer offset 0 : memref<32x64xf32>
func.func @reuse(%x: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %a = tsched.group row [32, 64] (%x) : (tensor<32x64xf32>) -> tensor<32x64xf32> {
  ^bb0(%p: tensor<32x64xf32>):
    %0 = tgraph.exp %p : tensor<32x64xf32>
    tsched.yield %0 : tensor<32x64xf32>
  }
  %b = tsched.group row [32, 64] (%a) : (tensor<32x64xf32>) -> tensor<32x64xf32> {
  ^bb0(%p: tensor<32x64xf32>):
    %0 = tgraph.tanh %p : tensor<32x64xf32>
    tsched.yield %0 : tensor<32x64xf32>
  }
  %c = tsched.group row [32, 64] (%b) : (tensor<32x64xf32>) -> tensor<32x64xf32> {
  ^bb0(%p: tensor<32x64xf32>):
    %0 = tgraph.exp %p : tensor<32x64xf32>
    tsched.yield %0 : tensor<32x64xf32>
  }
  %d = tsched.group row [32, 64] (%c, %b) : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32> {
  ^bb0(%p: tensor<32x64xf32>, %q: tensor<32x64xf32>):
    %0 = tgraph.add %p, %q : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
    tsched.yield %0 : tensor<32x64xf32>
  }
  return %d : tensor<32x64xf32>
}

// -----

// A group's launch list (tsched.launches, as attention groups have): each
// argument names an input, a result, a buffer saved with a result or an
// input, or a scratch buffer, with the shape the kernel reads it as. The
// saved buffer outlives its group until the last launch that reads it.
// CHECK-LABEL: func.func @launch_list
// CHECK-SAME: attributes {tsched.workspace = 512 : i64}
// CHECK: %[[A:.+]] = tsched.buffer offset 0 : memref<32xf32>
// CHECK: %[[S:.+]] = tsched.buffer offset 256 : memref<8x4xf32>
// CHECK: %[[SV:.+]] = tsched.view %[[S]] : memref<8x4xf32> to memref<32xf32>
// CHECK: tsched.launch @k2s grid [1, 2] (%arg0, %[[SV]]) scalars [2.500000e-01 : f32] : memref<32xf32>, memref<32xf32>
// CHECK: tsched.launch @k2 grid [1] (%[[SV]], %[[A]]){{.*}} : memref<32xf32>, memref<32xf32>
// CHECK: %[[R:.+]] = memref.alloc() : memref<32xf32>
// CHECK: tsched.launch @k2 grid [3] (%[[SV]], %[[R]]){{.*}} : memref<32xf32>, memref<32xf32>
func.func @k2(%a: memref<?xf32>, %b: memref<?xf32>) attributes {ttile.kernel} {
  return
}
func.func @k2s(%a: memref<?xf32>, %b: memref<?xf32>, %s: f32) attributes {ttile.kernel} {
  return
}
func.func @launch_list(%x: tensor<32xf32>) -> tensor<32xf32> {
  %a = tsched.group single (%x) {tsched.saved = [memref<8x4xf32>], tsched.launches = [{kernel = @k2s, grid = array<i64: 1, 2>, args = [array<i64: 0, 0, 32>, array<i64: 2, 0, 32>], scalars = [0.25 : f32]}, {kernel = @k2, grid = array<i64: 1>, args = [array<i64: 2, 0, 32>, array<i64: 1, 0, 32>]}]} : (tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%p: tensor<32xf32>):
    %0 = tgraph.exp %p : tensor<32xf32>
    tsched.yield %0 : tensor<32xf32>
  }
  %b = tsched.group single (%a) {tsched.launches = [{kernel = @k2, grid = array<i64: 3>, args = [array<i64: 3, 0, 32>, array<i64: 1, 0, 32>]}]} : (tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%p: tensor<32xf32>):
    %0 = tgraph.exp %p : tensor<32xf32>
    tsched.yield %0 : tensor<32xf32>
  }
  return %b : tensor<32xf32>
}

// -----

func.func @k2(%a: memref<?xf32>, %b: memref<?xf32>) attributes {ttile.kernel} {
  return
}
func.func @unsaved(%x: tensor<32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'tsched.group' op launch 0 argument 0 reads the buffer saved with input 0, which the group that made it did not save}}
  %a = tsched.group single (%x) {tsched.launches = [{kernel = @k2, grid = array<i64: 1>, args = [array<i64: 3, 0, 32>, array<i64: 1, 0, 32>]}]} : (tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%p: tensor<32xf32>):
    %0 = tgraph.exp %p : tensor<32xf32>
    tsched.yield %0 : tensor<32xf32>
  }
  return %a : tensor<32xf32>
}

// -----

func.func @k2(%a: memref<?xf32>, %b: memref<?xf32>) attributes {ttile.kernel} {
  return
}
func.func @bad_kind(%x: tensor<32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'tsched.group' op launch 0 argument 1 is of kind 7; kinds are 0 input, 1 result, 2 saved with a result, 3 saved with an input, 4 scratch}}
  %a = tsched.group single (%x) {tsched.launches = [{kernel = @k2, grid = array<i64: 1>, args = [array<i64: 0, 0, 32>, array<i64: 7, 0, 32>]}]} : (tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%p: tensor<32xf32>):
    %0 = tgraph.exp %p : tensor<32xf32>
    tsched.yield %0 : tensor<32xf32>
  }
  return %a : tensor<32xf32>
}

// -----

func.func @k2(%a: memref<?xf32>, %b: memref<?xf32>) attributes {ttile.kernel} {
  return
}
func.func @bad_view(%x: tensor<32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'tsched.group' op launch 0 reads argument 1 of type 'memref<32xf32>' as 'memref<4x4xf32>', which has another number of elements}}
  %a = tsched.group single (%x) {tsched.scratch = [memref<2xf32>], tsched.launches = [{kernel = @k2, grid = array<i64: 1>, args = [array<i64: 0, 0, 32>, array<i64: 1, 0, 4, 4>]}]} : (tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%p: tensor<32xf32>):
    %0 = tgraph.exp %p : tensor<32xf32>
    tsched.yield %0 : tensor<32xf32>
  }
  return %a : tensor<32xf32>
}

// -----

func.func @k2(%a: memref<?xf32>, %b: memref<?xf32>) attributes {ttile.kernel} {
  return
}
func.func @missing_scratch(%x: tensor<32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'tsched.group' op launch 0 argument 1 names scratch buffer 2, which it does not have}}
  %a = tsched.group single (%x) {tsched.scratch = [memref<2xf32>], tsched.launches = [{kernel = @k2, grid = array<i64: 1>, args = [array<i64: 0, 0, 32>, array<i64: 4, 2, 32>]}]} : (tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%p: tensor<32xf32>):
    %0 = tgraph.exp %p : tensor<32xf32>
    tsched.yield %0 : tensor<32xf32>
  }
  return %a : tensor<32xf32>
}
