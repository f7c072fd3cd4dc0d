// RUN: tessera-opt %s --tessera-gpu-generate-kernels | FileCheck %s
// RUN: tessera-opt %s --tessera-gpu-generate-kernels="multiprocessors=114" | FileCheck %s --check-prefix=SM114
// RUN: tessera-opt %s --tessera-gpu-generate-kernels="chip=sm_80" | FileCheck %s --check-prefix=SM80

// On Hopper a GEMM of 16-bit operands runs on a persistent grid: at most
// one block a multiprocessor, each program looping over output tiles
// (program_id, then every num_programs-th), so that the producer fills
// the ring for a program's next tile while its consumers finish the last.
// [4096, 1024] x [1024, 4096] in 128x256 tiles: 512 tiles on 132 blocks.
// CHECK-LABEL: func.func @plain
// CHECK: tsched.grid = array<i64: 132>, tsched.kernel = @plain_gemm0, tsched.schedule = #tsched.schedule<"block(128, 256).k(64).warps(8).stages(4)">
// Fewer tiles than multiprocessors (64 of 64x128): a block a tile.
// CHECK-LABEL: func.func @few
// CHECK: tsched.grid = array<i64: 64>, tsched.kernel = @few_gemm0
// A GEMM of f32 operands (FMAs, no producer warpgroup): a block a tile.
// CHECK-LABEL: func.func @wide
// CHECK: tsched.grid = array<i64: 256>, tsched.kernel = @wide_gemm0
// CHECK-LABEL: func.func @plain_gemm0
// CHECK: %[[P:.+]] = ttile.program_id x
// CHECK: %[[NP:.+]] = ttile.num_programs x
// CHECK: ttile.range %{{.+}} = %[[P]] to %c512 step %[[NP]] {

// The bound is the card's multiprocessors (an H100 PCIe has 114).
// SM114-LABEL: func.func @plain
// SM114: tsched.grid = array<i64: 114>, tsched.kernel = @plain_gemm0

// Before Hopper (mma.sync, cp.async, several blocks an SM): a block a tile.
// SM80-LABEL: func.func @plain
// SM80: tsched.grid = array<i64: 512>, tsched.kernel = @plain_gemm0

func.func @plain(%x: tensor<4096x1024xbf16>, %w: tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16> {
  %0 = tsched.group contraction [4096, 4096] (%x, %w) : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16> {
  ^bb0(%a: tensor<4096x1024xbf16>, %bw: tensor<1024x4096xbf16>):
    %m = tgraph.matmul %a, %bw : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16>
    tsched.yield %m : tensor<4096x4096xbf16>
  }
  return %0 : tensor<4096x4096xbf16>
}

func.func @few(%x: tensor<512x1024xbf16>, %w: tensor<1024x1024xbf16>) -> tensor<512x1024xbf16> {
  %0 = tsched.group contraction [512, 1024] (%x, %w) : (tensor<512x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<512x1024xbf16> {
  ^bb0(%a: tensor<512x1024xbf16>, %bw: tensor<1024x1024xbf16>):
    %m = tgraph.matmul %a, %bw : (tensor<512x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<512x1024xbf16>
    tsched.yield %m : tensor<512x1024xbf16>
  }
  return %0 : tensor<512x1024xbf16>
}

func.func @wide(%x: tensor<1024x256xf32>, %w: tensor<256x1024xf32>) -> tensor<1024x1024xf32> {
  %0 = tsched.group contraction [1024, 1024] (%x, %w) : (tensor<1024x256xf32>, tensor<256x1024xf32>) -> tensor<1024x1024xf32> {
  ^bb0(%a: tensor<1024x256xf32>, %bw: tensor<256x1024xf32>):
    %m = tgraph.matmul %a, %bw : (tensor<1024x256xf32>, tensor<256x1024xf32>) -> tensor<1024x1024xf32>
    tsched.yield %m : tensor<1024x1024xf32>
  }
  return %0 : tensor<1024x1024xf32>
}
