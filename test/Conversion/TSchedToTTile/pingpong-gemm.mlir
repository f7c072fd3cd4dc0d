// RUN: tessera-opt %s --tessera-gpu-generate-kernels | FileCheck %s
// RUN: not tessera-opt %s --tessera-gpu-generate-kernels="chip=sm_80" 2>&1 | FileCheck %s --check-prefix=SM80

// A product with an epilogue (bias, tanh) whose schedule says `pingpong`
// on sm_90a is a ping-pong GEMM: two programs a block of one warpgroup
// each (ttile.programs_per_block = 2), a persistent grid of 3 blocks for
// its 5 tiles of 128x128 ([640, 128]). The programs take turns and share
// one ring, each run of the K loop taking as many of its slots as the
// others, so each program runs the tiles loop as often as the others and
// every K loop runs in full: over 6 tiles (5 rounded up to whole blocks),
// the sixth on the last tile's coordinates, its epilogue skipped.
// CHECK-LABEL: func.func @epilogue
// CHECK: tsched.group contraction [640, 128]
// CHECK-SAME: tsched.grid = array<i64: 3>, tsched.kernel = @epilogue_gemm0, tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(4).stages(3).pingpong">
// Without a schedule of its own the product may take one: the ping-pong
// GEMM is in its autotune space, after the estimate's choice (the 128x256
// tile: the bias epilogue holds no tile of its own). (The tiles of one
// program a block take the deepest ring that fits beside their output's
// shared buffer, six stages at most; the ping-pong GEMM's two programs
// share one ring, five stages beside each program's output buffer.)
// CHECK-LABEL: func.func @tunable
// CHECK: tsched.schedule = #tsched.schedule<"block(128, 256).k(64).warps(8).stages(4)">, tsched.space = ["block(128, 256).k(64).warps(8).stages(4)", "block(128, 128).k(64).warps(4).stages(5).pingpong", "block(128, 128).k(64).warps(8).stages(6)", "block(64, 128).k(64).warps(4).stages(6)"]
// A schedule of its own that only says `pingpong` takes the ping-pong
// GEMM's tiles, warps and stages.
// CHECK-LABEL: func.func @only_pingpong
// CHECK: tsched.grid = array<i64: 128>, tsched.kernel = @only_pingpong_gemm0, tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(4).stages(5).pingpong">
// A plain product has no epilogue to hide: no ping-pong in its space.
// CHECK-LABEL: func.func @plain
// CHECK: tsched.schedule = #tsched.schedule<"block(128, 256).k(64).warps(8).stages(4)">
// CHECK-NOT: pingpong
// CHECK-SAME: tsched.tuning_key
// CHECK-LABEL: func.func @epilogue_gemm0
// CHECK-SAME: attributes {ttile.kernel, ttile.num_warps = 4 : i32, ttile.programs_per_block = 2 : i32}
// CHECK: %[[P:.+]] = ttile.program_id x
// CHECK: %[[NP:.+]] = ttile.num_programs x
// CHECK: ttile.range %[[T:.+]] = %[[P]] to %c6 step %[[NP]] {
// CHECK: %[[VALID:.+]] = arith.cmpi slt, %[[T]], %c5
// CHECK: %[[TC:.+]] = arith.minsi %[[T]], %c4
// CHECK-NOT: arith.select
// CHECK: ttile.range %{{.+}} = %c0{{.*}} to %c256{{.*}} step %c64{{.*}} stages 3
// CHECK: ttile.dot
// CHECK: scf.if %[[VALID]] {
// CHECK: math.tanh
// CHECK: ttile.store
// CHECK: }
// CHECK-LABEL: func.func @plain_gemm0
// CHECK-SAME: attributes {ttile.kernel, ttile.num_warps = 8 : i32}

// Before Hopper (no wgmma, no TMA) a ping-pong schedule is refused at the
// product, and none is in a space.
// SM80: error: 'tgraph.matmul' op has the GPU schedule block(128, 128).k(64).warps(4).stages(3).pingpong, which is a ping-pong GEMM: it needs sm_90a (wgmma and TMA), 16-bit operands (bf16, f16; got 'bf16'), whole warpgroups (warps 4, 8 or 16) and no split

func.func @epilogue(%x: tensor<640x256xbf16>, %w: tensor<256x128xbf16>,
                    %b: tensor<128xbf16>) -> tensor<640x128xbf16> {
  %0 = tsched.group contraction [640, 128] (%x, %w, %b) : (tensor<640x256xbf16>, tensor<256x128xbf16>, tensor<128xbf16>) -> tensor<640x128xbf16> {
  ^bb0(%a: tensor<640x256xbf16>, %bw: tensor<256x128xbf16>, %bias: tensor<128xbf16>):
    %m = tgraph.matmul %a, %bw {tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(4).stages(3).pingpong">} : (tensor<640x256xbf16>, tensor<256x128xbf16>) -> tensor<640x128xbf16>
    %s = tgraph.add %m, %bias : (tensor<640x128xbf16>, tensor<128xbf16>) -> tensor<640x128xbf16>
    %t = tgraph.tanh %s : tensor<640x128xbf16>
    tsched.yield %t : tensor<640x128xbf16>
  }
  return %0 : tensor<640x128xbf16>
}

func.func @tunable(%x: tensor<4096x1024xbf16>, %w: tensor<1024x1024xbf16>,
                   %b: tensor<1024xbf16>) -> tensor<4096x1024xbf16> {
  %0 = tsched.group contraction [4096, 1024] (%x, %w, %b) : (tensor<4096x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024xbf16>) -> tensor<4096x1024xbf16> {
  ^bb0(%a: tensor<4096x1024xbf16>, %bw: tensor<1024x1024xbf16>, %bias: tensor<1024xbf16>):
    %m = tgraph.matmul %a, %bw : (tensor<4096x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<4096x1024xbf16>
    %s = tgraph.add %m, %bias : (tensor<4096x1024xbf16>, tensor<1024xbf16>) -> tensor<4096x1024xbf16>
    tsched.yield %s : tensor<4096x1024xbf16>
  }
  return %0 : tensor<4096x1024xbf16>
}

func.func @only_pingpong(%x: tensor<4096x1024xbf16>, %w: tensor<1024x1024xbf16>,
                         %b: tensor<1024xbf16>) -> tensor<4096x1024xbf16> {
  %0 = tsched.group contraction [4096, 1024] (%x, %w, %b) : (tensor<4096x1024xbf16>, tensor<1024x1024xbf16>, tensor<1024xbf16>) -> tensor<4096x1024xbf16> {
  ^bb0(%a: tensor<4096x1024xbf16>, %bw: tensor<1024x1024xbf16>, %bias: tensor<1024xbf16>):
    %m = tgraph.matmul %a, %bw {tsched.schedule = #tsched.schedule<"pingpong">} : (tensor<4096x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<4096x1024xbf16>
    %s = tgraph.add %m, %bias : (tensor<4096x1024xbf16>, tensor<1024xbf16>) -> tensor<4096x1024xbf16>
    tsched.yield %s : tensor<4096x1024xbf16>
  }
  return %0 : tensor<4096x1024xbf16>
}

func.func @plain(%x: tensor<4096x1024xbf16>, %w: tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16> {
  %0 = tsched.group contraction [4096, 4096] (%x, %w) : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16> {
  ^bb0(%a: tensor<4096x1024xbf16>, %bw: tensor<1024x4096xbf16>):
    %m = tgraph.matmul %a, %bw : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16>
    tsched.yield %m : tensor<4096x4096xbf16>
  }
  return %0 : tensor<4096x4096xbf16>
}
