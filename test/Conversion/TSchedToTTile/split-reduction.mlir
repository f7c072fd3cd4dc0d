// RUN: tessera-opt %s --tessera-gpu-generate-kernels --tessera-gpu-host-program | FileCheck %s

// A mean over all of [8, 2048, 1024] bf16 (a loss): one row of 2^24
// elements would be one program's work, so it runs as two launches: 512
// f32 partials of 32768 elements each (256 programs of two), into a
// scratch buffer, then the row of 512 partials, divided by 2^24
// (0x4B800000), not by 512.
// CHECK-LABEL: func.func @loss
// CHECK: %[[P:.+]] = tsched.buffer offset 0 : memref<512xf32>
// CHECK: %[[IN:.+]] = tsched.view %arg0 : memref<8x2048x1024xbf16> to memref<512x32768xbf16>
// CHECK: tsched.launch @loss_reduce0 grid [256] (%[[IN]], %[[P]]){{.*}} : memref<512x32768xbf16>, memref<512xf32>
// CHECK: %[[PV:.+]] = tsched.view %[[P]] : memref<512xf32> to memref<1x512xf32>
// CHECK: %[[OUT:.+]] = tsched.view %alloc : memref<bf16> to memref<1xbf16>
// CHECK: tsched.launch @loss_reduce1 grid [1] (%[[PV]], %[[OUT]]){{.*}} : memref<1x512xf32>, memref<1xbf16>
// A mean over the rows of many rows keeps one launch.
// CHECK-LABEL: func.func @rows
// CHECK: tsched.launch @rows_reduce0 grid [1024]
// CHECK-NOT: tsched.launch
// A bias gradient: columns summed over 16384 tokens. 8 blocks of 128
// columns would leave the chip idle, so 64 chunks of 256 tokens each give
// f32 partials [64 * 1024], then the 64 partials of each column are
// summed and rounded to bf16.
// CHECK-LABEL: func.func @bias_grad
// CHECK: %[[P:.+]] = tsched.buffer offset 0 : memref<65536xf32>
// CHECK: tsched.launch @bias_grad_reduce0 grid [512] (%arg0, %[[P]]){{.*}} : memref<16384x1024xbf16>, memref<65536xf32>
// CHECK: %[[PV:.+]] = tsched.view %[[P]] : memref<65536xf32> to memref<64x1024xf32>
// CHECK: tsched.launch @bias_grad_reduce1 grid [{{[0-9]+}}] (%[[PV]], %{{.+}}){{.*}} : memref<64x1024xf32>, memref<1024xbf16>
// CHECK-LABEL: func.func @loss_reduce0(%arg0: memref<?x?xbf16>, %arg1: memref<?xf32>)
// CHECK-NOT: arith.divf
// CHECK-LABEL: func.func @loss_reduce1(%arg0: memref<?x?xf32>, %arg1: memref<?xbf16>)
// CHECK: arith.constant dense<0x4B800000> : tensor<1xf32>
// CHECK: arith.divf
func.func @loss(%x: tensor<8x2048x1024xbf16>) -> tensor<bf16> {
  %m = tsched.group reduction (%x) : (tensor<8x2048x1024xbf16>) -> tensor<bf16> {
  ^bb0(%a: tensor<8x2048x1024xbf16>):
    %0 = tgraph.reduce_mean %a {dims = array<i64: 0, 1, 2>} : tensor<8x2048x1024xbf16> -> tensor<bf16>
    tsched.yield %0 : tensor<bf16>
  }
  return %m : tensor<bf16>
}
func.func @rows(%x: tensor<4096x1024xf32>) -> tensor<4096xf32> {
  %m = tsched.group reduction (%x) : (tensor<4096x1024xf32>) -> tensor<4096xf32> {
  ^bb0(%a: tensor<4096x1024xf32>):
    %0 = tgraph.reduce_mean %a {dims = array<i64: 1>} : tensor<4096x1024xf32> -> tensor<4096xf32>
    tsched.yield %0 : tensor<4096xf32>
  }
  return %m : tensor<4096xf32>
}

func.func @bias_grad(%x: tensor<16384x1024xbf16>) -> tensor<1024xbf16> {
  %m = tsched.group reduction (%x) : (tensor<16384x1024xbf16>) -> tensor<1024xbf16> {
  ^bb0(%a: tensor<16384x1024xbf16>):
    %0 = tgraph.reduce_sum %a {dims = array<i64: 0>} : tensor<16384x1024xbf16> -> tensor<1024xbf16>
    tsched.yield %0 : tensor<1024xbf16>
  }
  return %m : tensor<1024xbf16>
}
