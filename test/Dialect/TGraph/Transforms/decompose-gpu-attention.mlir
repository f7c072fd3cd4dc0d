// RUN: tessera-opt %s -split-input-file --tessera-tgraph-decompose=gpu-attention=true | FileCheck %s

// gpu-attention keeps the attention ops the GPU runs as flash attention
// (bf16 or f16, one static shape [..., S, 64 or 128]) and expands the rest.

// CHECK-LABEL: func.func @kept
// CHECK: tgraph.attention %{{.+}}, %{{.+}}, %{{.+}} {causal}
// CHECK: tgraph.attention_grad
// CHECK-NOT: tgraph.softmax
func.func @kept(%q: tensor<2x4x128x64xbf16>, %g: tensor<2x4x128x64xbf16>)
    -> (tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>) {
  %o = tgraph.attention %q, %q, %q {causal} : tensor<2x4x128x64xbf16>
  %dq, %dk, %dv = tgraph.attention_grad %q, %q, %q, %o, %g {causal}
      : (tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>,
         tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>,
         tensor<2x4x128x64xbf16>)
      -> (tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>,
          tensor<2x4x128x64xbf16>)
  return %o, %dq : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>
}

// -----

// f32, a head dim of 32, a value of another shape, and a bf16 accumulation
// policy are expanded.
// CHECK-LABEL: func.func @expanded
// CHECK-NOT: tgraph.attention
// CHECK: return
func.func @expanded(%a: tensor<2x128x64xf32>, %b: tensor<2x128x32xbf16>,
                    %c: tensor<2x128x64xf16>, %v: tensor<2x128x128xf16>)
    -> (tensor<2x128x64xf32>, tensor<2x128x32xbf16>, tensor<2x128x64xf16>,
        tensor<2x128x128xf16>) {
  %0 = tgraph.attention %a, %a, %a : tensor<2x128x64xf32>
  %1 = tgraph.attention %b, %b, %b : tensor<2x128x32xbf16>
  %2 = tgraph.attention %c, %c, %c {policy = #tgraph.policy<accum = bf16>}
      : tensor<2x128x64xf16>
  %3 = tgraph.attention %c, %c, %v
      : (tensor<2x128x64xf16>, tensor<2x128x64xf16>, tensor<2x128x128xf16>)
      -> tensor<2x128x128xf16>
  return %0, %1, %2, %3 : tensor<2x128x64xf32>, tensor<2x128x32xbf16>,
      tensor<2x128x64xf16>, tensor<2x128x128xf16>
}
