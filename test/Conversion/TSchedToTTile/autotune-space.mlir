// RUN: tessera-opt %s --tessera-gpu-generate-kernels | FileCheck %s
// RUN: tessera-opt %s --tessera-gpu-generate-kernels=variant=1 | FileCheck %s --check-prefix=VARIANT
// RUN: tessera-opt %s --tessera-gpu-generate-kernels=variant=9 | FileCheck %s --check-prefix=LAST
// RUN: tessera-opt %s --tessera-gpu-generate-kernels | grep -o 'gemm-[0-9a-f]*' | head -1 | sed 's/$/ block(128, 128).k(64).warps(8).stages(6).split(2)  # tuned/' > %t.tuning
// RUN: tessera-opt %s --tessera-gpu-generate-kernels=tuning=%t.tuning | FileCheck %s --check-prefix=TUNED
// The caller's copy of the file's text (tuning-text) is parsed instead of
// the file, which then only names it: a compile matches the text its cache
// key hashed even if the file changed since (here the file has a tuned
// entry, the text none; and a missing file is not read).
// RUN: tessera-opt %s --tessera-gpu-generate-kernels="tuning=%t.tuning tuning-text='gemm-0123456789abcdef block(64, 64).k(64).warps(4).stages(4)'" | FileCheck %s
// RUN: tessera-opt %s --tessera-gpu-generate-kernels="tuning=%t.missing tuning-text='gemm-0123456789abcdef block(64, 64).k(64).warps(4).stages(4)'" | FileCheck %s
// RUN: not tessera-opt %s --tessera-gpu-generate-kernels="tuning-text='gemm-0123 block(64, 64)'" 2>&1 | FileCheck %s --check-prefix=BADTEXT
// RUN: echo 'gemm-0123 block(64, 64)' > %t.bad
// RUN: not tessera-opt %s --tessera-gpu-generate-kernels=tuning=%t.bad 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: echo 'gemm-0123456789abcdef block(64, 64).stage(2)' > %t.bad2
// RUN: not tessera-opt %s --tessera-gpu-generate-kernels=tuning=%t.bad2 2>&1 | FileCheck %s --check-prefix=BAD2
// RUN: not tessera-opt %s --tessera-gpu-generate-kernels=tuning=%t.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo 'gemm-0123456789abcdef block(64, 64).k(64).warps(4).stages(4)' > %t.other
// RUN: tessera-opt %s --tessera-gpu-generate-kernels=tuning=%t.other 2>&1 | FileCheck %s --check-prefix=OTHER
// RUN: tessera-opt %s --tessera-gpu-generate-kernels | grep -o 'gemm-[0-9a-f]*' | head -1 | sed 's/$/ block(64, 64).k(64).warps(4).stages(4)/' > %t.stale
// RUN: tessera-opt %s --tessera-gpu-generate-kernels=tuning=%t.stale 2>&1 | FileCheck %s --check-prefix=STALE

// A weight gradient X^T dY ([1024, 1024], K 16384). Its autotune space is
// the 4 best of the tiles and splits of K the estimate weighs, fastest
// first; the estimate's choice (K in 4 chunks of 128x256 tiles) is built.
// On sm_90a each tile takes the deepest TMA ring that fits in shared
// memory, six stages at most: 128x256 stages are 48 KiB (four), 128x128
// ones 32 KiB (six; a split's partials are f32, with no output buffer).
// CHECK-LABEL: func.func @weight_grad
// CHECK: tsched.group contraction
// CHECK-SAME: tsched.schedule = #tsched.schedule<"block(128, 256).k(64).warps(8).stages(4).split(4)">
// CHECK-SAME: tsched.space = ["block(128, 256).k(64).warps(8).stages(4).split(4)", "block(128, 128).k(64).warps(8).stages(6).split(2)", "block(128, 128).k(64).warps(8).stages(6).split(4)", "block(128, 256).k(64).warps(8).stages(4).split(8)"]
// CHECK-SAME: tsched.tuning_key = "gemm-{{[0-9a-f]+}}"
//
// variant=N builds candidate N of each space: the programs an autotuner
// times.
// VARIANT: tsched.group contraction
// VARIANT-SAME: grid = array<i64: 128>, kernel = @weight_grad_gemm0, schedule = "block(128, 128).k(64).warps(8).stages(6).split(2)"
// VARIANT-SAME: grid = array<i64: 256>, kernel = @weight_grad_gemm_sum0
// VARIANT-SAME: tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(8).stages(6).split(2)">
//
// A space of fewer candidates gives its last.
// LAST: tsched.group contraction
// LAST-SAME: tsched.schedule = #tsched.schedule<"block(128, 256).k(64).warps(8).stages(4).split(8)">
//
// A tuning file names a schedule for the product's key; a key the file
// lacks leaves the estimate's choice, without a word (the file may hold
// other programs' products).
// TUNED: tsched.group contraction
// TUNED-SAME: tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(8).stages(6).split(2)">
// OTHER-NOT: warning
// OTHER: tsched.schedule = #tsched.schedule<"block(128, 256).k(64).warps(8).stages(4).split(4)">
//
// A schedule for the product's key that is not in its space (a file tuned
// by another compiler version) is not used either, with a warning.
// STALE: warning: the tuning file gives product gemm-{{[0-9a-f]+}} the schedule 'block(64, 64).k(64).warps(4).stages(4)', which is not in its autotune space [block(128, 256).k(64).warps(8).stages(4).split(4), block(128, 128).k(64).warps(8).stages(6).split(2), block(128, 128).k(64).warps(8).stages(6).split(4), block(128, 256).k(64).warps(8).stages(4).split(8)] (a file tuned by another compiler version or for another card?); the estimate's 'block(128, 256).k(64).warps(8).stages(4).split(4)' is used
// STALE: tsched.schedule = #tsched.schedule<"block(128, 256).k(64).warps(8).stages(4).split(4)">
//
// BADTEXT: the tuning text:1: expected 'KEY SCHEDULE' (a product's key gemm-<16 hex digits> and its schedule chain), got 'gemm-0123 block(64, 64)'
// BAD: .bad:1: expected 'KEY SCHEDULE' (a product's key gemm-<16 hex digits> and its schedule chain), got 'gemm-0123 block(64, 64)'
// BAD2: .bad2:1: the schedule of gemm-0123456789abcdef: unknown schedule part 'stage'
// MISSING: cannot read the tuning file {{.*}}missing: No such file or directory
func.func @weight_grad(%x: tensor<16384x1024xbf16>, %dy: tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16> {
  %0 = tsched.group contraction [1024, 1024] (%x, %dy) : (tensor<16384x1024xbf16>, tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16> {
  ^bb0(%a: tensor<16384x1024xbf16>, %b: tensor<16384x1024xbf16>):
    %1 = tgraph.matmul %a, %b {transpose_lhs} : (tensor<16384x1024xbf16>, tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16>
    tsched.yield %1 : tensor<1024x1024xbf16>
  }
  return %0 : tensor<1024x1024xbf16>
}

// Outputs of 16 bits leave through shared buffers of their own (32 KiB a
// 128x128 tile): with two of them (a GELU and its input) the 128x128
// tile's ring has five stages; with one, six. A ring never has more
// stages than K has steps (4 here), nor fewer than the candidate's.
// RUN: tessera-opt %s --tessera-gpu-generate-kernels | FileCheck %s --check-prefix=RING
// These epilogues hold no tile of their own (a bias, 16-bit outputs): the
// 128x256 tile is a candidate; its 48 KiB stages stay at four. With one
// output it comes first. Two outputs' 64 KiB buffers do not fit beside
// its ring (they would be stored from registers), so the 128x128 tile,
// whose two buffers do fit, comes first and the 128x256 one after the
// ping-pong GEMM.
// RING-LABEL: func.func @two_outputs
// RING: tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(8).stages(5)">, tsched.space = ["block(128, 128).k(64).warps(8).stages(5)", "block(128, 128).k(64).warps(4).stages(6).pingpong", "block(128, 256).k(64).warps(8).stages(4)", "block(64, 128).k(64).warps(4).stages(6)"]
// RING-LABEL: func.func @one_output
// RING: tsched.space = ["block(128, 256).k(64).warps(8).stages(4)", {{.*}}"block(128, 128).k(64).warps(8).stages(6)"
// RING-LABEL: func.func @short_k
// RING: tsched.space = ["block(128, 256).k(64).warps(8).stages(4)", {{.*}}"block(128, 128).k(64).warps(8).stages(4)"
//
// An epilogue that reads a tile (a residual) or writes an f32 tile would
// spill beside a 128x256 accumulator: its space has no 128x256 tile.
// RING-LABEL: func.func @residual
// RING: tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(8).stages(6)">
// RING-NOT: block(128, 256)
// RING: tsched.yield
// RING-LABEL: func.func @f32_output
// RING: tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(8).stages(6)">
// RING-NOT: block(128, 256)
// RING: tsched.yield
func.func @two_outputs(%x: tensor<4096x1024xbf16>, %w: tensor<1024x4096xbf16>, %b: tensor<4096xbf16>) -> (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) {
  %0:2 = tsched.group contraction [4096, 4096] (%x, %w, %b) : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096xbf16>) -> (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) {
  ^bb0(%a: tensor<4096x1024xbf16>, %m: tensor<1024x4096xbf16>, %c: tensor<4096xbf16>):
    %p = tgraph.matmul %a, %m : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16>
    %q = tgraph.add %p, %c : (tensor<4096x4096xbf16>, tensor<4096xbf16>) -> tensor<4096x4096xbf16>
    %t = tgraph.tanh %q : tensor<4096x4096xbf16>
    tsched.yield %q, %t : tensor<4096x4096xbf16>, tensor<4096x4096xbf16>
  }
  return %0#0, %0#1 : tensor<4096x4096xbf16>, tensor<4096x4096xbf16>
}
func.func @one_output(%x: tensor<4096x1024xbf16>, %w: tensor<1024x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<4096x4096xbf16> {
  %0 = tsched.group contraction [4096, 4096] (%x, %w, %b) : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096xbf16>) -> tensor<4096x4096xbf16> {
  ^bb0(%a: tensor<4096x1024xbf16>, %m: tensor<1024x4096xbf16>, %c: tensor<4096xbf16>):
    %p = tgraph.matmul %a, %m : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16>
    %q = tgraph.add %p, %c : (tensor<4096x4096xbf16>, tensor<4096xbf16>) -> tensor<4096x4096xbf16>
    tsched.yield %q : tensor<4096x4096xbf16>
  }
  return %0 : tensor<4096x4096xbf16>
}
func.func @short_k(%x: tensor<4096x256xbf16>, %w: tensor<256x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<4096x4096xbf16> {
  %0 = tsched.group contraction [4096, 4096] (%x, %w, %b) : (tensor<4096x256xbf16>, tensor<256x4096xbf16>, tensor<4096xbf16>) -> tensor<4096x4096xbf16> {
  ^bb0(%a: tensor<4096x256xbf16>, %m: tensor<256x4096xbf16>, %c: tensor<4096xbf16>):
    %p = tgraph.matmul %a, %m : (tensor<4096x256xbf16>, tensor<256x4096xbf16>) -> tensor<4096x4096xbf16>
    %q = tgraph.add %p, %c : (tensor<4096x4096xbf16>, tensor<4096xbf16>) -> tensor<4096x4096xbf16>
    tsched.yield %q : tensor<4096x4096xbf16>
  }
  return %0 : tensor<4096x4096xbf16>
}
func.func @residual(%x: tensor<4096x1024xbf16>, %w: tensor<1024x4096xbf16>, %r: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %0 = tsched.group contraction [4096, 4096] (%x, %w, %r) : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  ^bb0(%a: tensor<4096x1024xbf16>, %m: tensor<1024x4096xbf16>, %c: tensor<4096x4096xbf16>):
    %p = tgraph.matmul %a, %m : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16>
    %q = tgraph.add %p, %c : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
    tsched.yield %q : tensor<4096x4096xbf16>
  }
  return %0 : tensor<4096x4096xbf16>
}
func.func @f32_output(%x: tensor<4096x1024xbf16>, %w: tensor<1024x4096xbf16>, %b: tensor<4096xbf16>) -> tensor<4096x4096xf32> {
  %0 = tsched.group contraction [4096, 4096] (%x, %w, %b) : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096xbf16>) -> tensor<4096x4096xf32> {
  ^bb0(%a: tensor<4096x1024xbf16>, %m: tensor<1024x4096xbf16>, %c: tensor<4096xbf16>):
    %p = tgraph.matmul %a, %m : (tensor<4096x1024xbf16>, tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16>
    %q = tgraph.add %p, %c : (tensor<4096x4096xbf16>, tensor<4096xbf16>) -> tensor<4096x4096xbf16>
    %f = tgraph.cast %q : tensor<4096x4096xbf16> -> tensor<4096x4096xf32>
    tsched.yield %f : tensor<4096x4096xf32>
  }
  return %0 : tensor<4096x4096xf32>
}
