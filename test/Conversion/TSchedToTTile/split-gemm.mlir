// RUN: tessera-opt %s --tessera-gpu-generate-kernels --tessera-gpu-host-program | FileCheck %s

// A weight gradient X^T dY ([1024, 1024], K 16384): 64 tiles of 128x128
// would leave half of 132 SMs idle for the whole K, so K splits in 4
// chunks of 4096: 32 tiles of 128x256 for each chunk write f32 partials
// [4, 1024, 1024] into a scratch buffer (128 programs), then 256 programs
// of [32, 128] add the 4 chunks in order and round to bf16.
// CHECK-LABEL: func.func @weight_grad
// CHECK: %[[P:.+]] = tsched.buffer offset 0 : memref<4x1024x1024xf32>
// Both launches carry the group's tuning key: an autotuner times them
// together.
// CHECK: tsched.launch @weight_grad_gemm0 grid [128] (%arg0, %arg1, %[[P]]) {tsched.schedule = "block(128, 256).k(64).warps(8).stages(4).split(4)", tsched.tuning = "[[KEY:gemm-[0-9a-f]+]]"} : memref<16384x1024xbf16>, memref<16384x1024xbf16>, memref<4x1024x1024xf32>
// CHECK: tsched.launch @weight_grad_gemm_sum0 grid [256] (%[[P]], %arg0, %arg1, %{{.+}}) {tsched.schedule = "block(32, 128).warps(4)", tsched.tuning = "[[KEY]]"}
// The bias of a product of few tiles: the sum kernel runs the epilogue.
// CHECK-LABEL: func.func @with_epilogue
// CHECK: tsched.launch @with_epilogue_gemm0 grid [128]
// CHECK: tsched.launch @with_epilogue_gemm_sum0 grid [256] (%{{.+}}, %arg0, %arg1, %arg2, %{{.+}})
// A short K, or a product with a schedule of its own, is one kernel.
// CHECK-LABEL: func.func @short_k
// CHECK: tsched.launch @short_k_gemm0 grid [128]
// CHECK-NOT: tsched.launch
// CHECK-LABEL: func.func @own_schedule
// CHECK: tsched.launch @own_schedule_gemm0 grid [64]
// CHECK-NOT: tsched.launch
// The first kernel: program p takes tile p mod 32 over K chunk p / 32,
// the K loop over the chunk's 4096, offset by chunk * 4096, and stores
// the accumulator at [chunk, rows, cols] unrounded.
// CHECK-LABEL: func.func @weight_grad_gemm0(%arg0: memref<?x?xbf16>, %arg1: memref<?x?xbf16>, %arg2: memref<?x?x?xf32>)
// CHECK: %[[CHUNK:.+]] = arith.divsi %{{.+}}, %c32
// CHECK: arith.remsi %{{.+}}, %c32
// CHECK: %[[BASE:.+]] = arith.muli %[[CHUNK]], %c4096
// CHECK: ttile.range %{{.+}} = %c0{{.*}} to %c4096{{.*}} step %c64
// CHECK: arith.addi %[[BASE]]
// CHECK: ttile.dot
// CHECK: memref.subview %arg2[%[[CHUNK]], 0, 0]
// CHECK: ttile.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : tensor<128x256xf32>
// The second: the 4 chunks' tiles loaded and added in order, then cast.
// CHECK-LABEL: func.func @weight_grad_gemm_sum0(%arg0: memref<?x?x?xf32>
// CHECK-COUNT-4: ttile.load
// CHECK-NOT: ttile.dot
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK: ttile.cast
// CHECK: ttile.store
func.func @weight_grad(%x: tensor<16384x1024xbf16>, %dy: tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16> {
  %0 = tsched.group contraction [1024, 1024] (%x, %dy) : (tensor<16384x1024xbf16>, tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16> {
  ^bb0(%a: tensor<16384x1024xbf16>, %b: tensor<16384x1024xbf16>):
    %1 = tgraph.matmul %a, %b {transpose_lhs} : (tensor<16384x1024xbf16>, tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16>
    tsched.yield %1 : tensor<1024x1024xbf16>
  }
  return %0 : tensor<1024x1024xbf16>
}
func.func @with_epilogue(%x: tensor<16384x1024xbf16>, %dy: tensor<16384x1024xbf16>, %bias: tensor<1024xbf16>) -> tensor<1024x1024xf32> {
  %0 = tsched.group contraction [1024, 1024] (%x, %dy, %bias) : (tensor<16384x1024xbf16>, tensor<16384x1024xbf16>, tensor<1024xbf16>) -> tensor<1024x1024xf32> {
  ^bb0(%a: tensor<16384x1024xbf16>, %b: tensor<16384x1024xbf16>, %c: tensor<1024xbf16>):
    %1 = tgraph.matmul %a, %b {transpose_lhs} : (tensor<16384x1024xbf16>, tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16>
    %2 = tgraph.add %1, %c : (tensor<1024x1024xbf16>, tensor<1024xbf16>) -> tensor<1024x1024xbf16>
    %3 = tgraph.cast %2 : tensor<1024x1024xbf16> -> tensor<1024x1024xf32>
    tsched.yield %3 : tensor<1024x1024xf32>
  }
  return %0 : tensor<1024x1024xf32>
}
func.func @short_k(%x: tensor<2048x1024xbf16>, %dy: tensor<2048x1024xbf16>) -> tensor<1024x1024xbf16> {
  %0 = tsched.group contraction [1024, 1024] (%x, %dy) : (tensor<2048x1024xbf16>, tensor<2048x1024xbf16>) -> tensor<1024x1024xbf16> {
  ^bb0(%a: tensor<2048x1024xbf16>, %b: tensor<2048x1024xbf16>):
    %1 = tgraph.matmul %a, %b {transpose_lhs} : (tensor<2048x1024xbf16>, tensor<2048x1024xbf16>) -> tensor<1024x1024xbf16>
    tsched.yield %1 : tensor<1024x1024xbf16>
  }
  return %0 : tensor<1024x1024xbf16>
}
func.func @own_schedule(%x: tensor<16384x1024xbf16>, %dy: tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16> {
  %0 = tsched.group contraction [1024, 1024] (%x, %dy) : (tensor<16384x1024xbf16>, tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16> {
  ^bb0(%a: tensor<16384x1024xbf16>, %b: tensor<16384x1024xbf16>):
    %1 = tgraph.matmul %a, %b {transpose_lhs, tsched.schedule = #tsched.schedule<"block(128, 128)">} : (tensor<16384x1024xbf16>, tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16>
    tsched.yield %1 : tensor<1024x1024xbf16>
  }
  return %0 : tensor<1024x1024xbf16>
}
