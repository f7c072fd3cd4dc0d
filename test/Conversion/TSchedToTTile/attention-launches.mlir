// RUN: tessera-opt %s --tessera-gpu-generate-kernels --split-input-file | FileCheck %s
// RUN: tessera-opt %s --tessera-gpu-generate-kernels="chip=sm_80" --split-input-file | FileCheck %s --check-prefix=SM80
// RUN: tessera-opt %s --tessera-gpu-generate-kernels --tessera-gpu-host-program --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=HOST

// A causal attention and its gradient, [2, 4, 200, 64] bf16 read as
// [8, 200, 64]: the forward launches the stdlib's flash-attention kernel
// (128 x 128 blocks on Hopper: 2 query blocks by 8 heads) and saves each
// query's lse [8, 200] with its output; the backward reads that lse
// (kind 3: saved with input 3, the output it differentiates), keeps delta
// in a scratch buffer, and launches dQ (128-query blocks) then dK/dV
// (128-key blocks). Each specialization's kernel is in the module once.
// CHECK-LABEL: func.func @attn
// CHECK: tsched.group attention
// CHECK-SAME: tsched.launches = [{args = [array<i64: 0, 0, 8, 200, 64>, array<i64: 0, 1, 8, 200, 64>, array<i64: 0, 2, 8, 200, 64>, array<i64: 1, 0, 8, 200, 64>, array<i64: 2, 0, 8, 200>], grid = array<i64: 2, 8>, kernel = @flash_attention_fwd_bf16_d64_causal, scalars = [1.250000e-01 : f32], schedule = "block(128, 128).warps(8).stages(2).pingpong"}]
// CHECK-SAME: tsched.saved = [memref<8x200xf32>]
// CHECK: tsched.group attention
// CHECK-SAME: tsched.launches = [{args = [array<i64: 0, 0, 8, 200, 64>, array<i64: 0, 1, 8, 200, 64>, array<i64: 0, 2, 8, 200, 64>, array<i64: 0, 3, 8, 200, 64>, array<i64: 0, 4, 8, 200, 64>, array<i64: 3, 3, 8, 200>, array<i64: 4, 0, 8, 200>, array<i64: 1, 0, 8, 200, 64>], grid = array<i64: 2, 8>, kernel = @flash_attention_bwd_dq_bf16_d64_causal, scalars = [1.250000e-01 : f32], schedule = "block(128, 128).warps(8).stages(2).pingpong.producer_registers(40)"}, {args = [array<i64: 0, 0, 8, 200, 64>, array<i64: 0, 1, 8, 200, 64>, array<i64: 0, 2, 8, 200, 64>, array<i64: 0, 4, 8, 200, 64>, array<i64: 3, 3, 8, 200>, array<i64: 4, 0, 8, 200>, array<i64: 1, 1, 8, 200, 64>, array<i64: 1, 2, 8, 200, 64>], grid = array<i64: 2, 8>, kernel = @flash_attention_bwd_dkdv_bf16_d64_causal, scalars = [1.250000e-01 : f32], schedule = "block(64, 128).warps(8).stages(3).producer_registers(96)"}]
// CHECK-SAME: tsched.scratch = [memref<8x200xf32>]
// CHECK: func.func @flash_attention_fwd_bf16_d64_causal(%{{.*}}: memref<?x?x?xbf16>, %{{.*}}: memref<?x?x?xbf16>, %{{.*}}: memref<?x?x?xbf16>, %{{.*}}: memref<?x?x?xbf16>, %{{.*}}: memref<?x?xf32>, %{{.*}}: f32) attributes {ttile.kernel, ttile.num_warps = 8 : i32, ttile.pingpong}
// CHECK-NOT: func.func @flash_attention_fwd
// CHECK: func.func @flash_attention_bwd_dq_bf16_d64_causal
// CHECK: func.func @flash_attention_bwd_dkdv_bf16_d64_causal
// CHECK-NOT: func.func @flash_attention
// SM80-LABEL: func.func @attn
// SM80: kernel = @flash_attention_fwd_bf16_d64_causal_sm80, scalars = [1.250000e-01 : f32], schedule = "block(64, 32).warps(4).stages(2)"
// SM80: grid = array<i64: 7, 8>, kernel = @flash_attention_bwd_dq_bf16_d64_causal_sm80
// SM80: grid = array<i64: 7, 8>, kernel = @flash_attention_bwd_dkdv_bf16_d64_causal_sm80

// The host program: the lse lives from the forward to the backward's
// last launch, delta only during the backward (so they do not overlap).
// HOST-LABEL: func.func @attn
// HOST-SAME: attributes {tsched.workspace = 12800 : i64}
// HOST: %[[O:.+]] = memref.alloc() : memref<2x4x200x64xbf16>
// HOST: %[[LSE:.+]] = tsched.buffer offset 0 : memref<8x200xf32>
// HOST-DAG: %[[Q:.+]] = tsched.view %arg0 : memref<2x4x200x64xbf16> to memref<8x200x64xbf16>
// HOST-DAG: %[[K:.+]] = tsched.view %arg1 : memref<2x4x200x64xbf16> to memref<8x200x64xbf16>
// HOST-DAG: %[[V:.+]] = tsched.view %arg2 : memref<2x4x200x64xbf16> to memref<8x200x64xbf16>
// HOST-DAG: %[[OV:.+]] = tsched.view %[[O]] : memref<2x4x200x64xbf16> to memref<8x200x64xbf16>
// HOST: tsched.launch @flash_attention_fwd_bf16_d64_causal grid [2, 8] (%[[Q]], %[[K]], %[[V]], %[[OV]], %[[LSE]]) scalars [1.250000e-01 : f32]
// HOST: %[[DELTA:.+]] = tsched.buffer offset 6400 : memref<8x200xf32>
// HOST: tsched.launch @flash_attention_bwd_dq_bf16_d64_causal grid [2, 8] (%[[Q]], %[[K]], %[[V]], %[[OV]], %{{.+}}, %[[LSE]], %[[DELTA]], %{{.+}}) scalars [1.250000e-01 : f32]
// HOST: tsched.launch @flash_attention_bwd_dkdv_bf16_d64_causal grid [2, 8] (%[[Q]], %[[K]], %[[V]], %{{.+}}, %[[LSE]], %[[DELTA]], %{{.+}}, %{{.+}}) scalars [1.250000e-01 : f32]
func.func @attn(%q: tensor<2x4x200x64xbf16>, %k: tensor<2x4x200x64xbf16>, %v: tensor<2x4x200x64xbf16>, %do: tensor<2x4x200x64xbf16>) -> (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>) {
  %o = tsched.group attention (%q, %k, %v) : (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>) -> tensor<2x4x200x64xbf16> {
  ^bb0(%a: tensor<2x4x200x64xbf16>, %b: tensor<2x4x200x64xbf16>, %c: tensor<2x4x200x64xbf16>):
    %0 = tgraph.attention %a, %b, %c {causal} : (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>) -> tensor<2x4x200x64xbf16>
    tsched.yield %0 : tensor<2x4x200x64xbf16>
  }
  %g:3 = tsched.group attention (%q, %k, %v, %o, %do) : (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>) -> (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>) {
  ^bb0(%a: tensor<2x4x200x64xbf16>, %b: tensor<2x4x200x64xbf16>, %c: tensor<2x4x200x64xbf16>, %d: tensor<2x4x200x64xbf16>, %e: tensor<2x4x200x64xbf16>):
    %0:3 = tgraph.attention_grad %a, %b, %c, %d, %e {causal} : (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>) -> (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>)
    tsched.yield %0#0, %0#1, %0#2 : tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>
  }
  return %o, %g#0, %g#1, %g#2 : tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>
}

// -----

// A backward whose output comes from elsewhere (an argument): no lse was
// saved, so the forward runs again first, into scratch buffers (o' and
// the lse), before dQ and dK/dV; f16, head dim 128, not causal, scale
// 0.5; self-attention reads one input three times.
// CHECK-LABEL: func.func @grad_alone
// CHECK: tsched.launches = [{args = [array<i64: 0, 0, 3, 128, 128>, array<i64: 0, 0, 3, 128, 128>, array<i64: 0, 0, 3, 128, 128>, array<i64: 4, 0, 3, 128, 128>, array<i64: 4, 1, 3, 128>], grid = array<i64: 1, 3>, kernel = @flash_attention_fwd_f16_d128, scalars = [5.000000e-01 : f32]
// CHECK-SAME: kernel = @flash_attention_bwd_dq_f16_d128
// CHECK-SAME: kernel = @flash_attention_bwd_dkdv_f16_d128
// CHECK-SAME: tsched.scratch = [memref<3x128x128xf16>, memref<3x128xf32>, memref<3x128xf32>]
// HOST-LABEL: func.func @grad_alone
// HOST-COUNT-3: tsched.launch @flash_attention
func.func @grad_alone(%x: tensor<3x128x128xf16>, %o: tensor<3x128x128xf16>, %do: tensor<3x128x128xf16>) -> (tensor<3x128x128xf16>, tensor<3x128x128xf16>, tensor<3x128x128xf16>) {
  %g:3 = tsched.group attention (%x, %o, %do) : (tensor<3x128x128xf16>, tensor<3x128x128xf16>, tensor<3x128x128xf16>) -> (tensor<3x128x128xf16>, tensor<3x128x128xf16>, tensor<3x128x128xf16>) {
  ^bb0(%a: tensor<3x128x128xf16>, %d: tensor<3x128x128xf16>, %e: tensor<3x128x128xf16>):
    %0:3 = tgraph.attention_grad %a, %a, %a, %d, %e {scale = 5.000000e-01 : f64} : (tensor<3x128x128xf16>, tensor<3x128x128xf16>, tensor<3x128x128xf16>, tensor<3x128x128xf16>, tensor<3x128x128xf16>) -> (tensor<3x128x128xf16>, tensor<3x128x128xf16>, tensor<3x128x128xf16>)
    tsched.yield %0#0, %0#1, %0#2 : tensor<3x128x128xf16>, tensor<3x128x128xf16>, tensor<3x128x128xf16>
  }
  return %g#0, %g#1, %g#2 : tensor<3x128x128xf16>, tensor<3x128x128xf16>, tensor<3x128x128xf16>
}

// -----

// Attention the flash kernels do not take (f32) has no kernel, and says
// why; the host program stops there.
// CHECK-LABEL: func.func @f32_attention
// CHECK: tsched.no_kernel = "flash attention takes bf16 or f16 operands of one static shape [..., S, 64 or 128], rank 3 or 4, at most 65535 batch x heads, and no policy but accum = f32"
func.func @f32_attention(%q: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  // expected-error @+1 {{'tsched.group' op of kind 'attention' ('tgraph.attention') has no generated kernel: flash attention takes bf16 or f16 operands}}
  %o = tsched.group attention (%q) : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  ^bb0(%a: tensor<2x16x64xf32>):
    %0 = tgraph.attention %a, %a, %a : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
    tsched.yield %0 : tensor<2x16x64xf32>
  }
  return %o : tensor<2x16x64xf32>
}

// -----

// Groups that read and write through head transposes: q, k, v, the
// output, dO and dV are read as [2, 200, 256] (4 heads of 64 side by side
// in each row), dQ and dK as [8, 200, 64]; the backward still finds the
// forward's lse (kind 3), through the transposed output.
// CHECK-LABEL: func.func @head_transposes
// CHECK: tsched.launches = [{args = [array<i64: 0, 0, 2, 200, 256>, array<i64: 0, 1, 2, 200, 256>, array<i64: 0, 2, 2, 200, 256>, array<i64: 1, 0, 2, 200, 256>, array<i64: 2, 0, 8, 200>], grid = array<i64: 2, 8>, kernel = @flash_attention_fwd_bf16_d64_causal
// CHECK: tsched.launches = [{args = [array<i64: 0, 0, 2, 200, 256>, array<i64: 0, 1, 2, 200, 256>, array<i64: 0, 2, 2, 200, 256>, array<i64: 0, 3, 2, 200, 256>, array<i64: 0, 4, 2, 200, 256>, array<i64: 3, 3, 8, 200>, array<i64: 4, 0, 8, 200>, array<i64: 1, 0, 8, 200, 64>], grid = array<i64: 2, 8>, kernel = @flash_attention_bwd_dq_bf16_d64_causal
// CHECK-SAME: {args = [array<i64: 0, 0, 2, 200, 256>, array<i64: 0, 1, 2, 200, 256>, array<i64: 0, 2, 2, 200, 256>, array<i64: 0, 4, 2, 200, 256>, array<i64: 3, 3, 8, 200>, array<i64: 4, 0, 8, 200>, array<i64: 1, 1, 8, 200, 64>, array<i64: 1, 2, 2, 200, 256>], grid = array<i64: 2, 8>, kernel = @flash_attention_bwd_dkdv_bf16_d64_causal
// CHECK-SAME: tsched.scratch = [memref<8x200xf32>]
// HOST-LABEL: func.func @head_transposes
// HOST: %[[OUT:.+]] = memref.alloc() : memref<2x200x4x64xbf16>
// HOST: %[[O:.+]] = tsched.view %[[OUT]] : memref<2x200x4x64xbf16> to memref<2x200x256xbf16>
// HOST: tsched.launch @flash_attention_fwd_bf16_d64_causal grid [2, 8] (%[[Q:.+]], %{{.+}}, %{{.+}}, %[[O]], %[[LSE:.+]]) scalars
// HOST-SAME: : memref<2x200x256xbf16>, memref<2x200x256xbf16>, memref<2x200x256xbf16>, memref<2x200x256xbf16>, memref<8x200xf32>
// HOST: tsched.launch @flash_attention_bwd_dq_bf16_d64_causal grid [2, 8] (%[[Q]], %{{.+}}, %{{.+}}, %[[O]], %{{.+}}, %[[LSE]],
func.func @head_transposes(%arg0: tensor<2x200x256xbf16>, %arg1: tensor<2x200x256xbf16>, %arg2: tensor<2x200x256xbf16>, %arg3: tensor<2x200x256xbf16>) -> (tensor<2x200x256xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x200x4x64xbf16>) {
  %0 = tgraph.reshape %arg0 : tensor<2x200x256xbf16> -> tensor<2x200x4x64xbf16>
  %1 = tgraph.reshape %arg1 : tensor<2x200x256xbf16> -> tensor<2x200x4x64xbf16>
  %2 = tgraph.reshape %arg2 : tensor<2x200x256xbf16> -> tensor<2x200x4x64xbf16>
  %3 = tsched.group attention (%0, %1, %2) : (tensor<2x200x4x64xbf16>, tensor<2x200x4x64xbf16>, tensor<2x200x4x64xbf16>) -> tensor<2x200x4x64xbf16> {
  ^bb0(%arg4: tensor<2x200x4x64xbf16>, %arg5: tensor<2x200x4x64xbf16>, %arg6: tensor<2x200x4x64xbf16>):
    %7 = tgraph.transpose %arg4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
    %8 = tgraph.transpose %arg5 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
    %9 = tgraph.transpose %arg6 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
    %10 = tgraph.attention %7, %8, %9 {causal} : tensor<2x4x200x64xbf16>
    %11 = tgraph.transpose %10 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x200x64xbf16> -> tensor<2x200x4x64xbf16>
    tsched.yield %11 : tensor<2x200x4x64xbf16>
  }
  %4 = tgraph.reshape %3 : tensor<2x200x4x64xbf16> -> tensor<2x200x256xbf16>
  %5 = tgraph.reshape %arg3 : tensor<2x200x256xbf16> -> tensor<2x200x4x64xbf16>
  %6:3 = tsched.group attention (%0, %1, %2, %3, %5) : (tensor<2x200x4x64xbf16>, tensor<2x200x4x64xbf16>, tensor<2x200x4x64xbf16>, tensor<2x200x4x64xbf16>, tensor<2x200x4x64xbf16>) -> (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x200x4x64xbf16>) {
  ^bb0(%arg4: tensor<2x200x4x64xbf16>, %arg5: tensor<2x200x4x64xbf16>, %arg6: tensor<2x200x4x64xbf16>, %arg7: tensor<2x200x4x64xbf16>, %arg8: tensor<2x200x4x64xbf16>):
    %7 = tgraph.transpose %arg4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
    %8 = tgraph.transpose %arg5 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
    %9 = tgraph.transpose %arg6 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
    %10 = tgraph.transpose %arg7 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
    %11 = tgraph.transpose %arg8 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x200x4x64xbf16> -> tensor<2x4x200x64xbf16>
    %query_grad, %key_grad, %value_grad = tgraph.attention_grad %7, %8, %9, %10, %11 {causal} : (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>) -> (tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>)
    %12 = tgraph.transpose %value_grad {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x4x200x64xbf16> -> tensor<2x200x4x64xbf16>
    tsched.yield %query_grad, %key_grad, %12 : tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x200x4x64xbf16>
  }
  return %4, %6#0, %6#1, %6#2 : tensor<2x200x256xbf16>, tensor<2x4x200x64xbf16>, tensor<2x4x200x64xbf16>, tensor<2x200x4x64xbf16>
}
