// RUN: tessera-opt %s --tessera-gpu-generate-kernels | FileCheck %s
// RUN: tessera-opt %s --tessera-gpu-generate-kernels=variant=1 | FileCheck %s --check-prefix=VARIANT
// RUN: tessera-opt %s --tessera-gpu-generate-kernels=variant=9 | FileCheck %s --check-prefix=LAST
// RUN: tessera-opt %s --tessera-gpu-generate-kernels | grep -o 'gemm-[0-9a-f]*' | head -1 | sed 's/$/ block(128, 128).k(64).warps(8).stages(4).split(2)  # tuned/' > %t.tuning
// RUN: tessera-opt %s --tessera-gpu-generate-kernels=tuning=%t.tuning | FileCheck %s --check-prefix=TUNED
// RUN: echo 'gemm-0123 block(64, 64)' > %t.bad
// RUN: not tessera-opt %s --tessera-gpu-generate-kernels=tuning=%t.bad 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: echo 'gemm-0123456789abcdef block(64, 64).stage(2)' > %t.bad2
// RUN: not tessera-opt %s --tessera-gpu-generate-kernels=tuning=%t.bad2 2>&1 | FileCheck %s --check-prefix=BAD2
// RUN: not tessera-opt %s --tessera-gpu-generate-kernels=tuning=%t.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo 'gemm-0123456789abcdef block(64, 64).k(64).warps(4).stages(4)' > %t.other
// RUN: tessera-opt %s --tessera-gpu-generate-kernels=tuning=%t.other | FileCheck %s

// A weight gradient X^T dY ([1024, 1024], K 16384). Its autotune space is
// the 4 best of the tiles and splits of K the estimate weighs, fastest
// first; the estimate's choice (K in 4 chunks of 128x256 tiles) is built.
// CHECK-LABEL: func.func @weight_grad
// CHECK: tsched.group contraction
// CHECK-SAME: tsched.schedule = #tsched.schedule<"block(128, 256).k(64).warps(8).stages(4).split(4)">
// CHECK-SAME: tsched.space = ["block(128, 256).k(64).warps(8).stages(4).split(4)", "block(128, 128).k(64).warps(8).stages(4).split(2)", "block(128, 128).k(64).warps(8).stages(4).split(4)", "block(128, 256).k(64).warps(8).stages(4).split(8)"]
// CHECK-SAME: tsched.tuning_key = "gemm-{{[0-9a-f]+}}"
//
// variant=N builds candidate N of each space: the programs an autotuner
// times.
// VARIANT: tsched.group contraction
// VARIANT-SAME: grid = array<i64: 128>, kernel = @weight_grad_gemm0, schedule = "block(128, 128).k(64).warps(8).stages(4).split(2)"
// VARIANT-SAME: grid = array<i64: 256>, kernel = @weight_grad_gemm_sum0
// VARIANT-SAME: tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(8).stages(4).split(2)">
//
// A space of fewer candidates gives its last.
// LAST: tsched.group contraction
// LAST-SAME: tsched.schedule = #tsched.schedule<"block(128, 256).k(64).warps(8).stages(4).split(8)">
//
// A tuning file names a schedule for the product's key; a key the file
// lacks (or a schedule outside the space) leaves the estimate's choice.
// TUNED: tsched.group contraction
// TUNED-SAME: tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(8).stages(4).split(2)">
//
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
