// RUN: tessera-opt %s -split-input-file -verify-diagnostics
// Diagnostics of the reduction, softmax, normalization and loss ops: one case per message.

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// reduce_*: a dims entry out of range.
func.func @reduce_dims_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.reduce_sum' op dims entry 2 is out of range for an operand of rank 2}}
  %0 = tgraph.reduce_sum %x {dims = array<i64: 2>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// reduce_*: a dim reduced twice.
func.func @reduce_dims_repeated(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.reduce_max' op dims names dimension 1 twice}}
  %0 = tgraph.reduce_max %x {dims = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Policy: loss_scale on a reduction that does not produce a scalar.
func.func @reduce_loss_scale_not_scalar(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.reduce_sum' op loss_scale applies to ops that produce a scalar loss, but the result is not a scalar}}
  %0 = tgraph.reduce_sum %x {dims = array<i64: 1>, policy = #tgraph.policy<loss_scale = 8.0>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Policy: accum on an integer reduction.
func.func @reduce_accum_integer(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{'tgraph.reduce_prod' op the accum policy applies to float computations, but the operands are i32}}
  %0 = tgraph.reduce_prod %x {dims = array<i64: 1>, policy = #tgraph.policy<accum = f32>} : tensor<4x8xi32> -> tensor<4xi32>
  return
}

// -----

// Policy: stochastic_round without a narrower result (f32 accumulation, f32 result).
func.func @reduce_stochastic_round(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.reduce_mean' op stochastic_round needs a float result narrower than the accumulation type (f32), but it is f32}}
  %0 = tgraph.reduce_mean %x {dims = array<i64: 1>, policy = #tgraph.policy<stochastic_round>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Policy: saturate on a result that is not fp8.
func.func @reduce_saturate(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.reduce_sum' op saturate applies to fp8 results, but the result is f32}}
  %0 = tgraph.reduce_sum %x {dims = array<i64: 1>, policy = #tgraph.policy<saturate>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// ODS type constraint: reduce_mean takes float tensors.
func.func @reduce_mean_integer(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{'tgraph.reduce_mean' op operand #0 must be ranked tensor of floating-point element type values, but got 'tensor<4x8xi32>'}}
  %0 = tgraph.reduce_mean %x {dims = array<i64: 1>} : tensor<4x8xi32> -> tensor<4xi32>
  return
}

// -----

// argmax: dim out of range.
func.func @argmax_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.argmax' op dim 2 is out of range for an operand of rank 2 (expected 0..1)}}
  %0 = tgraph.argmax %x {dim = 2 : i64} : tensor<4x8xf32> -> tensor<4xi64>
  return
}

// -----

// ODS type constraint: argmin returns i32 or i64 indices.
func.func @argmin_float_result(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.argmin' op result #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = tgraph.argmin %x {dim = 1 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

// softmax: dim out of range (negative).
func.func @softmax_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.log_softmax' op dim -1 is out of range for an operand of rank 2 (expected 0..1)}}
  %0 = tgraph.log_softmax %x {dim = -1 : i64} : tensor<4x8xf32>
  return
}

// -----

// logsumexp: dim out of range.
func.func @logsumexp_dim(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.logsumexp' op dim 2 is out of range for an operand of rank 2 (expected 0..1)}}
  %0 = tgraph.logsumexp %x {dim = 2 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

// norms: scale has the input's element type.
func.func @norm_scale_type(%x: tensor<4x8xf32>, %g: tensor<8xbf16>) {
  // expected-error @+1 {{'tgraph.layernorm' op x (operand 0) has element type f32 but scale (operand 1) has bf16; tensor dtypes do not promote: cast one of them (tgraph.cast, op.cast)}}
  %0 = tgraph.layernorm %x scale %g {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xbf16>) -> tensor<4x8xf32>
  return
}

// -----

// norms: bias has the input's element type.
func.func @norm_bias_type(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf16>) {
  // expected-error @+1 {{'tgraph.layernorm_safe' op x (operand 0) has element type f32 but bias (operand 2) has f16; tensor dtypes do not promote: cast one of them (tgraph.cast, op.cast)}}
  %0 = tgraph.layernorm_safe %x scale %g bias %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf16>) -> tensor<4x8xf32>
  return
}

// -----

// norms: epsilon >= 0.
func.func @norm_negative_epsilon(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.rmsnorm' op epsilon must be >= 0, but is -1e-05}}
  %0 = tgraph.rmsnorm %x {axis = 1 : i64, epsilon = -1.0e-5 : f64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// norms: axis out of range.
func.func @norm_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.rmsnorm_safe' op axis 2 is out of range for an operand of rank 2 (expected 0..1)}}
  %0 = tgraph.rmsnorm_safe %x {axis = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// norms: scale has the rank of the normalized dims.
func.func @norm_scale_rank(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.rmsnorm' op scale (operand 1) must have rank 1 (the normalized dims [8] of the input), but has shape [4, 8]}}
  %0 = tgraph.rmsnorm %x scale %g {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// norms: a scale dim that can never equal the normalized dim (D vs D+1).
func.func @norm_scale_dim(%x: tensor<4x?xf32, #tgraph.dims<[4, D]>>,
                          %g: tensor<?xf32, #tgraph.dims<["D+1"]>>) {
  // expected-error @+1 {{'tgraph.layernorm' op normalized dimension mismatch: x (operand 0) dim 1 is D but scale (operand 1) dim 0 is D+1, which differ for every value of D}}
  %0 = tgraph.layernorm %x scale %g {axis = 1 : i64} : (tensor<4x?xf32, #tgraph.dims<[4, D]>>,
      tensor<?xf32, #tgraph.dims<["D+1"]>>) -> tensor<4x?xf32, #tgraph.dims<[4, D]>>
  return
}

// -----

// norms: a bias dim differs from the normalized dim (constants).
func.func @norm_bias_dim(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<9xf32>) {
  // expected-error @+1 {{'tgraph.layernorm' op normalized dimension mismatch: x (operand 0) dim 1 is 8 but bias (operand 2) dim 0 is 9}}
  %0 = tgraph.layernorm %x scale %g bias %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<9xf32>) -> tensor<4x8xf32>
  return
}

// -----

// ODS type constraint: norms take float tensors.
func.func @norm_integer(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{'tgraph.layernorm' op operand #0 must be ranked tensor of floating-point element type values, but got 'tensor<4x8xi32>'}}
  %0 = tgraph.layernorm %x {axis = 1 : i64} : (tensor<4x8xi32>) -> tensor<4x8xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// cross_entropy: soft labels have the logits' element type.
func.func @ce_soft_label_type(%l: tensor<4x10xf32>, %y: tensor<4x10xbf16>) {
  // expected-error @+1 {{'tgraph.cross_entropy' op soft labels (labels (operand 1)) have element type bf16 but the logits have f32}}
  %0 = tgraph.cross_entropy %l, %y : (tensor<4x10xf32>, tensor<4x10xbf16>) -> tensor<f32>
  return
}

// -----

// cross_entropy: class-index labels are i32 or i64.
func.func @ce_index_label_type(%l: tensor<4x10xf32>, %y: tensor<4xi8>) {
  // expected-error @+1 {{'tgraph.cross_entropy' op class-index labels must be i32 or i64, but are i8}}
  %0 = tgraph.cross_entropy %l, %y : (tensor<4x10xf32>, tensor<4xi8>) -> tensor<f32>
  return
}

// -----

// cross_entropy: logits have a class dim.
func.func @ce_scalar_logits(%l: tensor<f32>, %y: tensor<i64>) {
  // expected-error @+1 {{'tgraph.cross_entropy' op logits (operand 0) must have rank >= 1 ([..., classes]), but is a scalar}}
  %0 = tgraph.cross_entropy %l, %y : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// cross_entropy: class-index labels drop the class dim.
func.func @ce_index_label_rank(%l: tensor<4x10xf32>, %y: tensor<4x10xi64>) {
  // expected-error @+1 {{'tgraph.cross_entropy' op labels (operand 1) must have rank 1 (class indices have the logits' shape without the class dim), but has shape [4, 10]}}
  %0 = tgraph.cross_entropy %l, %y : (tensor<4x10xf32>, tensor<4x10xi64>) -> tensor<f32>
  return
}

// -----

// cross_entropy: soft labels have the logits' rank.
func.func @ce_soft_label_rank(%l: tensor<4x10xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.cross_entropy' op labels (operand 1) must have rank 2 (soft labels have the shape of the logits), but has shape [4]}}
  %0 = tgraph.cross_entropy %l, %y : (tensor<4x10xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

// cross_entropy: a label dim that can never equal the logits' dim (B vs B+1).
func.func @ce_label_dim_symbolic(%l: tensor<?x10xf32, #tgraph.dims<[B, 10]>>,
                                 %y: tensor<?xi64, #tgraph.dims<["B+1"]>>) {
  // expected-error @+1 {{'tgraph.cross_entropy' op label dimension mismatch: logits (operand 0) dim 0 is B but labels (operand 1) dim 0 is B+1, which differ for every value of B}}
  %0 = tgraph.cross_entropy %l, %y : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>,
      tensor<?xi64, #tgraph.dims<["B+1"]>>) -> tensor<f32>
  return
}

// -----

// cross_entropy: soft labels with a different number of classes (constants).
func.func @ce_label_dim_constant(%l: tensor<4x10xf32>, %y: tensor<4x11xf32>) {
  // expected-error @+1 {{'tgraph.cross_entropy' op label dimension mismatch: logits (operand 0) dim 1 is 10 but labels (operand 1) dim 1 is 11}}
  %0 = tgraph.cross_entropy %l, %y : (tensor<4x10xf32>, tensor<4x11xf32>) -> tensor<f32>
  return
}

// -----

// cross_entropy policy: loss_scale with reduction none (per-example losses are not a scalar).
func.func @ce_loss_scale_unreduced(%l: tensor<4x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'tgraph.cross_entropy' op loss_scale applies to ops that produce a scalar loss, but the result is not a scalar}}
  %0 = tgraph.cross_entropy %l, %y {reduction = #tgraph<loss_reduction none>, policy = #tgraph.policy<loss_scale = 2.0>} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

// norms: without a scale, the bias is operand 1 and is named as such.
func.func @norm_bias_without_scale(%x: tensor<4x8xf32>, %b: tensor<9xf32>) {
  // expected-error @+1 {{'tgraph.layernorm' op normalized dimension mismatch: x (operand 0) dim 1 is 8 but bias (operand 1) dim 0 is 9}}
  %0 = tgraph.layernorm %x bias %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<9xf32>) -> tensor<4x8xf32>
  return
}

// -----

// softmax: a scalar has no dim to normalize over.
func.func @softmax_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{'tgraph.softmax' op dim 0 is out of range: the operand is a scalar and has no dims}}
  %0 = tgraph.softmax %x {dim = 0 : i64} : tensor<f32>
  return
}

// -----

// argmax over an empty dim: no index to give.
func.func @argmax_of_nothing(%x: tensor<3x0xf32>) {
  // expected-error @+1 {{'tgraph.argmax' op dim 1 of the operand [3, 0] is empty: there is no element to take the index of}}
  %0 = tgraph.argmax %x {dim = 1 : i64} : tensor<3x0xf32> -> tensor<3xi64>
  return
}
