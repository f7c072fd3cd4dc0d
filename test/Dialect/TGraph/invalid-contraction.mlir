// RUN: tessera-opt %s -split-input-file -verify-diagnostics
// Diagnostics of the contraction ops (matmul, batch_matmul, dot_general, conv2d, attention): one case per message.

//===----------------------------------------------------------------------===//
// Element types and numeric policies (contractionElementType, checkComputePolicy)
//===----------------------------------------------------------------------===//

// Operands share one element type.
func.func @element_types(%a: tensor<4x4xf32>, %b: tensor<4x4xf16>) {
  // expected-error @+1 {{'tgraph.matmul' op lhs (operand 0) has element type f32 but rhs (operand 1) has f16; tensor dtypes do not promote: cast one of them (tgraph.cast, op.cast)}}
  %0 = tgraph.matmul %a, %b : (tensor<4x4xf32>, tensor<4x4xf16>) -> tensor<4x4xf32>
  return
}

// -----

// An fp8 operand pairs only with another fp8 operand.
func.func @fp8_with_bf16(%a: tensor<4x4xf8E4M3FN>, %b: tensor<4x4xbf16>) {
  // expected-error @+1 {{'tgraph.matmul' op lhs (operand 0) has element type f8E4M3FN but rhs (operand 1) has bf16; fp8 operands pair only with fp8}}
  %0 = tgraph.matmul %a, %b {policy = #tgraph.policy<accum = f32>} : (tensor<4x4xf8E4M3FN>, tensor<4x4xbf16>) -> tensor<4x4xf32>
  return
}

// -----

// fp8 operands need an accum policy.
func.func @fp8_without_accum(%a: tensor<4x4xf8E4M3FN>, %b: tensor<4x4xf8E5M2>) {
  // expected-error @+1 {{'tgraph.matmul' op fp8 operands (f8E4M3FN x f8E5M2) must accumulate in f32 or bf16: add {policy = #tgraph.policy<accum = f32>}}}
  %0 = tgraph.matmul %a, %b : (tensor<4x4xf8E4M3FN>, tensor<4x4xf8E5M2>) -> tensor<4x4xf32>
  return
}

// -----

// fp8 operands produce a float result.
func.func @fp8_integer_result(%a: tensor<4x4xf8E4M3FN>, %b: tensor<4x4xf8E5M2>) {
  // expected-error @+1 {{'tgraph.matmul' op result element type i32 is not a valid product type for f8E4M3FN operands (expected f8E4M3FN or any float type)}}
  %0 = tgraph.matmul %a, %b {policy = #tgraph.policy<accum = f32>} : (tensor<4x4xf8E4M3FN>, tensor<4x4xf8E5M2>) -> tensor<4x4xi32>
  return
}

// -----

// The result type is the operand type or a wider one (f32 -> f16 narrows).
func.func @narrower_result(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{'tgraph.matmul' op result element type f16 is not a valid product type for f32 operands (expected f32 or a wider type)}}
  %0 = tgraph.matmul %a, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf16>
  return
}

// -----

// Integer operands produce an integer result.
func.func @integer_to_float_result(%a: tensor<4x4xi8>, %b: tensor<4x4xi8>) {
  // expected-error @+1 {{'tgraph.matmul' op result element type f32 is not a valid product type for i8 operands (expected i8 or a wider type)}}
  %0 = tgraph.matmul %a, %b : (tensor<4x4xi8>, tensor<4x4xi8>) -> tensor<4x4xf32>
  return
}

// -----

// Policy: loss_scale on a non-scalar result.
func.func @loss_scale_not_scalar(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{'tgraph.matmul' op loss_scale applies to ops that produce a scalar loss, but the result is not a scalar}}
  %0 = tgraph.matmul %a, %b {policy = #tgraph.policy<loss_scale = 2.0>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

// Policy: accum on an integer contraction.
func.func @accum_integer(%a: tensor<4x4xi8>, %b: tensor<4x4xi8>) {
  // expected-error @+1 {{'tgraph.matmul' op the accum policy applies to float computations, but the operands are i8}}
  %0 = tgraph.matmul %a, %b {policy = #tgraph.policy<accum = f32>} : (tensor<4x4xi8>, tensor<4x4xi8>) -> tensor<4x4xi32>
  return
}

// -----

// Policy: stochastic_round on a widening result (f16 accumulation, f32 result).
func.func @stochastic_round_widening(%a: tensor<4x4xf16>, %b: tensor<4x4xf16>) {
  // expected-error @+1 {{'tgraph.matmul' op stochastic_round needs a float result narrower than the accumulation type (f16), but it is f32}}
  %0 = tgraph.matmul %a, %b {policy = #tgraph.policy<stochastic_round>} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf32>
  return
}

// -----

// Policy: saturate on a result that is not fp8.
func.func @saturate_not_fp8(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{'tgraph.matmul' op saturate applies to fp8 results, but the result is f32}}
  %0 = tgraph.matmul %a, %b {policy = #tgraph.policy<saturate>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

// ODS type constraint: contractions take numeric tensors, not i1.
func.func @matmul_i1(%a: tensor<4x4xi1>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{'tgraph.matmul' op operand #0 must be ranked tensor of numeric element type values, but got 'tensor<4x4xi1>'}}
  %0 = tgraph.matmul %a, %b : (tensor<4x4xi1>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

// matmul: lhs rank >= 2.
func.func @matmul_lhs_rank(%a: tensor<4xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{'tgraph.matmul' op lhs (operand 0) must have rank >= 2, but has rank 1 (shape [4])}}
  %0 = tgraph.matmul %a, %b : (tensor<4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
  return
}

// -----

// matmul: rhs rank >= 2.
func.func @matmul_rhs_rank(%a: tensor<4x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.matmul' op rhs (operand 1) must have rank >= 2, but has rank 1 (shape [4])}}
  %0 = tgraph.matmul %a, %b : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// matmul: contracting dims that can never be equal (D vs D+1, rhs transposed).
func.func @matmul_contracting(%a: tensor<4x?xf32, #tgraph.dims<[4, D]>>,
                              %b: tensor<4x?xf32, #tgraph.dims<[4, "D+1"]>>) {
  // expected-error @+1 {{'tgraph.matmul' op contracting dimension mismatch: lhs (operand 0) dim 1 is D but rhs (operand 1) dim 1 is D+1, which differ for every value of D}}
  %0 = tgraph.matmul %a, %b {transpose_rhs} : (tensor<4x?xf32, #tgraph.dims<[4, D]>>,
      tensor<4x?xf32, #tgraph.dims<[4, "D+1"]>>) -> tensor<4x4xf32>
  return
}

// -----

// matmul: batch dims broadcast; constants that differ.
func.func @matmul_batch_broadcast(%a: tensor<2x4x4xf32>, %b: tensor<3x4x4xf32>) {
  // expected-error @+1 {{'tgraph.matmul' op broadcast mismatch: lhs (operand 0) dim 0 is 2 but rhs (operand 1) dim 0 is 3}}
  %0 = tgraph.matmul %a, %b : (tensor<2x4x4xf32>, tensor<3x4x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// batch_matmul
//===----------------------------------------------------------------------===//

// batch_matmul: lhs rank 3.
func.func @batch_matmul_lhs_rank(%a: tensor<4x4xf32>, %b: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'tgraph.batch_matmul' op lhs (operand 0) must have rank 3 ([batch, M, K]), but has rank 2 (shape [4, 4])}}
  %0 = tgraph.batch_matmul %a, %b : (tensor<4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

// batch_matmul: rhs rank 3.
func.func @batch_matmul_rhs_rank(%a: tensor<2x4x4xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{'tgraph.batch_matmul' op rhs (operand 1) must have rank 3 ([batch, K, N]), but has rank 2 (shape [4, 4])}}
  %0 = tgraph.batch_matmul %a, %b : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

// batch_matmul: batch dims that can never be equal (B vs 2*B+2).
func.func @batch_matmul_batch(%a: tensor<?x4x4xf32, #tgraph.dims<[B, 4, 4]>>,
                              %b: tensor<?x4x4xf32, #tgraph.dims<["2*B+2", 4, 4]>>) {
  // expected-error @+1 {{'tgraph.batch_matmul' op batch dimension mismatch: lhs (operand 0) dim 0 is B but rhs (operand 1) dim 0 is 2*B+2, which differ for every value of B}}
  %0 = tgraph.batch_matmul %a, %b : (tensor<?x4x4xf32, #tgraph.dims<[B, 4, 4]>>,
      tensor<?x4x4xf32, #tgraph.dims<["2*B+2", 4, 4]>>) -> tensor<?x4x4xf32>
  return
}

// -----

// batch_matmul: contracting dims, constants that differ.
func.func @batch_matmul_contracting(%a: tensor<2x4x8xf32>, %b: tensor<2x7x4xf32>) {
  // expected-error @+1 {{'tgraph.batch_matmul' op contracting dimension mismatch: lhs (operand 0) dim 2 is 8 but rhs (operand 1) dim 1 is 7}}
  %0 = tgraph.batch_matmul %a, %b : (tensor<2x4x8xf32>, tensor<2x7x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// dot_general
//===----------------------------------------------------------------------===//

// dot_general: as many lhs as rhs batching dims.
func.func @dot_general_batching_count(%a: tensor<2x4x8xf32>, %b: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'tgraph.dot_general' op lhs_batching_dims has 2 entries but rhs_batching_dims has 1}}
  %0 = tgraph.dot_general %a, %b {lhs_batching_dims = array<i64: 0, 1>, rhs_batching_dims = array<i64: 0>, lhs_contracting_dims = array<i64: 2>, rhs_contracting_dims = array<i64: 1>} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

// dot_general: as many lhs as rhs contracting dims.
func.func @dot_general_contracting_count(%a: tensor<2x4x8xf32>, %b: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'tgraph.dot_general' op lhs_contracting_dims has 1 entry but rhs_contracting_dims has 2}}
  %0 = tgraph.dot_general %a, %b {lhs_batching_dims = array<i64: 0>, rhs_batching_dims = array<i64: 0>, lhs_contracting_dims = array<i64: 2>, rhs_contracting_dims = array<i64: 1, 2>} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

// dot_general: a dim number out of range.
func.func @dot_general_out_of_range(%a: tensor<2x4x8xf32>, %b: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'tgraph.dot_general' op lhs_batching_dims entry 3 is out of range for rank 3}}
  %0 = tgraph.dot_general %a, %b {lhs_batching_dims = array<i64: 3>, rhs_batching_dims = array<i64: 0>, lhs_contracting_dims = array<i64: 2>, rhs_contracting_dims = array<i64: 1>} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

// dot_general: a dim used twice (as batching and contracting).
func.func @dot_general_repeated(%a: tensor<2x4x8xf32>, %b: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'tgraph.dot_general' op lhs_contracting_dims entry 0 repeats a dimension already used}}
  %0 = tgraph.dot_general %a, %b {lhs_batching_dims = array<i64: 0>, rhs_batching_dims = array<i64: 0>, lhs_contracting_dims = array<i64: 0>, rhs_contracting_dims = array<i64: 1>} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

// dot_general: paired batching dims differ.
func.func @dot_general_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+1 {{'tgraph.dot_general' op batch dimension mismatch: lhs (operand 0) dim 0 is 2 but rhs (operand 1) dim 0 is 3}}
  %0 = tgraph.dot_general %a, %b {lhs_batching_dims = array<i64: 0>, rhs_batching_dims = array<i64: 0>, lhs_contracting_dims = array<i64: 2>, rhs_contracting_dims = array<i64: 1>} : (tensor<2x4x8xf32>, tensor<3x8x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

// dot_general: paired contracting dims can never be equal (K vs K+1).
func.func @dot_general_contracting(%a: tensor<2x4x?xf32, #tgraph.dims<[2, 4, K]>>,
                                   %b: tensor<2x?x4xf32, #tgraph.dims<[2, "K+1", 4]>>) {
  // expected-error @+1 {{'tgraph.dot_general' op contracting dimension mismatch: lhs (operand 0) dim 2 is K but rhs (operand 1) dim 1 is K+1, which differ for every value of K}}
  %0 = tgraph.dot_general %a, %b {lhs_batching_dims = array<i64: 0>, rhs_batching_dims = array<i64: 0>, lhs_contracting_dims = array<i64: 2>, rhs_contracting_dims = array<i64: 1>} : (tensor<2x4x?xf32, #tgraph.dims<[2, 4, K]>>, tensor<2x?x4xf32, #tgraph.dims<[2, "K+1", 4]>>) -> tensor<2x4x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// conv2d
//===----------------------------------------------------------------------===//

// conv2d: input rank 4 (NCHW).
func.func @conv_input_rank_nchw(%a: tensor<3x8x8xf32>, %k: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op input (operand 0) must have rank 4 (NCHW), but has rank 3 (shape [3, 8, 8])}}
  %0 = tgraph.conv2d %a, %k : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv2d: filter rank 4 (OIHW).
func.func @conv_filter_rank_oihw(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op filter (operand 1) must have rank 4 (OIHW), but has rank 3 (shape [4, 3, 3])}}
  %0 = tgraph.conv2d %a, %k : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv2d: input rank 4 (NHWC).
func.func @conv_input_rank_nhwc(%a: tensor<1x8x8xf32>, %k: tensor<3x3x3x4xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op input (operand 0) must have rank 4 (NHWC), but has rank 3 (shape [1, 8, 8])}}
  %0 = tgraph.conv2d %a, %k {layout = #tgraph<conv_layout nhwc>} : (tensor<1x8x8xf32>, tensor<3x3x3x4xf32>) -> tensor<1x6x6x4xf32>
  return
}

// -----

// conv2d: filter rank 4 (HWIO).
func.func @conv_filter_rank_hwio(%a: tensor<1x8x8x3xf32>, %k: tensor<3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op filter (operand 1) must have rank 4 (HWIO), but has rank 3 (shape [3, 3, 3])}}
  %0 = tgraph.conv2d %a, %k {layout = #tgraph<conv_layout nhwc>} : (tensor<1x8x8x3xf32>, tensor<3x3x3xf32>) -> tensor<1x6x6x4xf32>
  return
}

// -----

// conv2d: strides has 2 entries.
func.func @conv_strides_count(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op strides must have 2 entries, but has 3}}
  %0 = tgraph.conv2d %a, %k {strides = array<i64: 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv2d: strides >= 1.
func.func @conv_strides_value(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op strides entries must be >= 1, but one is 0}}
  %0 = tgraph.conv2d %a, %k {strides = array<i64: 1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv2d: dilation has 2 entries.
func.func @conv_dilation_count(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op dilation must have 2 entries, but has 1}}
  %0 = tgraph.conv2d %a, %k {dilation = array<i64: 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv2d: dilation >= 1.
func.func @conv_dilation_value(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op dilation entries must be >= 1, but one is 0}}
  %0 = tgraph.conv2d %a, %k {dilation = array<i64: 0, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv2d: padding has 4 entries.
func.func @conv_padding_count(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op padding must have 4 entries, but has 2}}
  %0 = tgraph.conv2d %a, %k {padding = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv2d: padding >= 0.
func.func @conv_padding_value(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op padding entries must be >= 0, but one is -1}}
  %0 = tgraph.conv2d %a, %k {padding = array<i64: 0, 0, -1, 0>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv2d: groups >= 1.
func.func @conv_groups(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op groups must be >= 1, but is 0}}
  %0 = tgraph.conv2d %a, %k {groups = 0 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv2d: input channels equal filter input channels times groups; constants that differ.
func.func @conv_channels_constant(%a: tensor<1x4x8x8xf32>, %k: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op input channel mismatch: input (operand 0) dim 1 is 4 but filter (operand 1) dim 1 times groups (1) is 3}}
  %0 = tgraph.conv2d %a, %k : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv2d: input channels that can never equal the filter's times groups (C vs 2*C+2, NHWC).
func.func @conv_channels_symbolic(%a: tensor<1x8x8x?xf32, #tgraph.dims<[1, 8, 8, C]>>,
                                  %k: tensor<3x3x?x4xf32, #tgraph.dims<[3, 3, "C+1", 4]>>) {
  // expected-error @+1 {{'tgraph.conv2d' op input channel mismatch: input (operand 0) dim 3 is C but filter (operand 1) dim 2 times groups (2) is 2*C+2, which differ for every value of C}}
  %0 = tgraph.conv2d %a, %k {groups = 2 : i64, layout = #tgraph<conv_layout nhwc>} : (tensor<1x8x8x?xf32, #tgraph.dims<[1, 8, 8, C]>>,
      tensor<3x3x?x4xf32, #tgraph.dims<[3, 3, "C+1", 4]>>) -> tensor<1x6x6x4xf32>
  return
}

// -----

// conv2d: output channels divisible by groups.
func.func @conv_groups_output_channels(%a: tensor<1x6x8x8xf32>, %k: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op filter (operand 1) dim 0 (output channels, 4) is not divisible by groups (3)}}
  %0 = tgraph.conv2d %a, %k {groups = 3 : i64} : (tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv2d: the kernel fits in the padded input height.
func.func @conv_kernel_height(%a: tensor<1x3x2x8xf32>, %k: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op the dilated kernel height (3, dilation 1) is larger than the padded input height (2)}}
  %0 = tgraph.conv2d %a, %k : (tensor<1x3x2x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  return
}

// -----

// conv2d: the dilated kernel fits in the padded input width.
func.func @conv_kernel_width(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op the dilated kernel width (3, dilation 4) is larger than the padded input width (8)}}
  %0 = tgraph.conv2d %a, %k {dilation = array<i64: 1, 4>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x1xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

// attention: query, key and value share one element type.
func.func @attention_element_types(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xbf16>) {
  // expected-error @+1 {{'tgraph.attention' op query (operand 0) has element type f32 but key (operand 1) has bf16; tensor dtypes do not promote: cast one of them (tgraph.cast, op.cast)}}
  %0 = tgraph.attention %q, %k, %k : (tensor<2x8x16xf32>, tensor<2x8x16xbf16>, tensor<2x8x16xbf16>) -> tensor<2x8x16xf32>
  return
}

// -----

// attention: fp8 needs an accum policy.
func.func @attention_fp8_without_accum(%q: tensor<2x8x16xf8E4M3FN>) {
  // expected-error @+1 {{'tgraph.attention' op fp8 attention must accumulate in f32 or bf16: add {policy = #tgraph.policy<accum = f32>}}}
  %0 = tgraph.attention %q, %q, %q : tensor<2x8x16xf8E4M3FN>
  return
}

// -----

// attention: scale > 0.
func.func @attention_scale(%q: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'tgraph.attention' op scale must be positive, but is -0.5}}
  %0 = tgraph.attention %q, %q, %q {scale = -0.5 : f64} : tensor<2x8x16xf32>
  return
}

// -----

// attention: query rank >= 2.
func.func @attention_query_rank(%q: tensor<16xf32>) {
  // expected-error @+1 {{'tgraph.attention' op query (operand 0) must have rank >= 2 ([..., S, D]), but has rank 1 (shape [16])}}
  %0 = tgraph.attention %q, %q, %q : tensor<16xf32>
  return
}

// -----

// attention: key has the query's rank.
func.func @attention_key_rank(%q: tensor<2x8x16xf32>, %k: tensor<8x16xf32>) {
  // expected-error @+1 {{'tgraph.attention' op key (operand 1) must have the rank of the query (3), but has rank 2 (shape [8, 16])}}
  %0 = tgraph.attention %q, %k, %q : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

// attention: value has the query's rank.
func.func @attention_value_rank(%q: tensor<2x8x16xf32>, %v: tensor<8x16xf32>) {
  // expected-error @+1 {{'tgraph.attention' op value (operand 2) must have the rank of the query (3), but has rank 2 (shape [8, 16])}}
  %0 = tgraph.attention %q, %q, %v : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

// attention: batch dims can never be equal (B vs B+1).
func.func @attention_batch(%q: tensor<?x8x16xf32, #tgraph.dims<[B, 8, 16]>>,
                           %k: tensor<?x8x16xf32, #tgraph.dims<["B+1", 8, 16]>>) {
  // expected-error @+1 {{'tgraph.attention' op batch dimension mismatch: query (operand 0) dim 0 is B but key (operand 1) dim 0 is B+1, which differ for every value of B}}
  %0 = tgraph.attention %q, %k, %k : (tensor<?x8x16xf32, #tgraph.dims<[B, 8, 16]>>,
      tensor<?x8x16xf32, #tgraph.dims<["B+1", 8, 16]>>, tensor<?x8x16xf32, #tgraph.dims<["B+1", 8, 16]>>)
      -> tensor<?x8x16xf32, #tgraph.dims<[B, 8, 16]>>
  return
}

// -----

// attention: query and key head dims differ.
func.func @attention_head(%q: tensor<2x8x16xf32>, %k: tensor<2x8x32xf32>) {
  // expected-error @+1 {{'tgraph.attention' op head dimension mismatch: query (operand 0) dim 2 is 16 but key (operand 1) dim 2 is 32}}
  %0 = tgraph.attention %q, %k, %k : (tensor<2x8x16xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return
}

// -----

// attention: key and value sequence lengths differ.
func.func @attention_kv_length(%q: tensor<2x8x16xf32>, %v: tensor<2x9x16xf32>) {
  // expected-error @+1 {{'tgraph.attention' op key/value sequence length mismatch: key (operand 1) dim 1 is 8 but value (operand 2) dim 1 is 9}}
  %0 = tgraph.attention %q, %q, %v : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x9x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

// conv2d: padding that overflows 64-bit sizes.
func.func @conv_padding_overflow(%x: tensor<1x3x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+1 {{'tgraph.conv2d' op the padded input height overflows 64-bit sizes}}
  %0 = tgraph.conv2d %x, %w {padding = array<i64: 9223372036854775807, 9223372036854775807, 0, 0>} : (tensor<1x3x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x4x2xf32>
  return
}

// -----

// attention_grad: the output has attention's result shape [..., Sq, Dv].
func.func @attention_grad_output(%q: tensor<2x8x16xf32>, %v: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'tgraph.attention_grad' op does not have attention's output shape: output (operand 3) dim 2 is 16 but value (operand 2) dim 2 is 4}}
  %0:3 = tgraph.attention_grad %q, %q, %v, %q, %q : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x4xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x4xf32>)
  return
}

// -----

// attention_grad: the output's gradient has the rank of the query.
func.func @attention_grad_rank(%q: tensor<2x8x16xf32>, %g: tensor<8x16xf32>) {
  // expected-error @+1 {{'tgraph.attention_grad' op output_grad (operand 4) must have the rank of the query (3), but has rank 2 (shape [8, 16])}}
  %0:3 = tgraph.attention_grad %q, %q, %q, %q, %g : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  return
}

// -----

// attention: the default scale 1/sqrt(D) needs D at compile time.
func.func @attention_symbolic_head_dim(%q: tensor<?x?xf32, #tgraph.dims<[S, D]>>) {
  // expected-error @+1 {{'tgraph.attention' op the default scale 1/sqrt(head dim) needs a static head dim, but the query's last dim is D; give the scale explicitly}}
  %0 = tgraph.attention %q, %q, %q : (tensor<?x?xf32, #tgraph.dims<[S, D]>>,
      tensor<?x?xf32, #tgraph.dims<[S, D]>>, tensor<?x?xf32, #tgraph.dims<[S, D]>>)
      -> tensor<?x?xf32, #tgraph.dims<[S, D]>>
  return
}
