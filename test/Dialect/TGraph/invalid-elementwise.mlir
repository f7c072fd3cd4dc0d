// RUN: tessera-opt %s -split-input-file -verify-diagnostics
// Diagnostics of the constant, generator, elementwise, compare, select and cast ops, and of the generic result checks: one case per message.

// full: the value attribute must have the result's element type.
func.func @full_value_type() {
  // expected-error @+1 {{'tgraph.full' op value has type i32 but the result's element type is f32}}
  %0 = tgraph.full {value = 0 : i32} : tensor<4xf32>
  return
}

// -----

// full: the value must be a float or integer attribute (any other typed attribute is rejected).
func.func @full_value_kind() {
  // expected-error @+1 {{'tgraph.full' op value must be a float or integer attribute}}
  %0 = tgraph.full {value = #ml_program.extern : f32} : tensor<4xf32>
  return
}

// -----

// full: a created tensor cannot have a '?' dim.
func.func @full_unknown_dim() {
  // expected-error @+1 {{'tgraph.full' op result dim 0 is '?'; a created tensor needs every dim to be a constant or a symbol expression (e.g. #tgraph.dims<[B, 64]>)}}
  %0 = tgraph.full {value = 0.0 : f32} : tensor<?xf32>
  return
}

// -----

// iota: a created tensor cannot have a '?' dim.
func.func @iota_unknown_dim() {
  // expected-error @+1 {{'tgraph.iota' op result dim 1 is '?'; a created tensor needs every dim to be a constant or a symbol expression (e.g. #tgraph.dims<[B, 64]>)}}
  %0 = tgraph.iota {dim = 0 : i64} : tensor<4x?xi64>
  return
}

// -----

// iota: dim must be a dimension of the result.
func.func @iota_dim_out_of_range() {
  // expected-error @+1 {{'tgraph.iota' op dim 2 is out of range for a result of rank 2}}
  %0 = tgraph.iota {dim = 2 : i64} : tensor<4x4xi64>
  return
}

// -----

// ODS type constraint: iota produces a numeric tensor, not i1.
func.func @iota_i1_result() {
  // expected-error @+1 {{'tgraph.iota' op result #0 must be ranked tensor of numeric element type values, but got 'tensor<4xi1>'}}
  %0 = tgraph.iota {dim = 0 : i64} : tensor<4xi1>
  return
}

// -----

// constant: the value and the result have the same type (AllTypesMatch).
func.func @constant_type() {
  // expected-error @+1 {{'tgraph.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "tgraph.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf16>
  return
}

// -----

// zeros_like (and the unary ops): the result has the operand's type (SameOperandsAndResultType).
func.func @zeros_like_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.zeros_like' op requires the same type for all operands and results}}
  %0 = "tgraph.zeros_like"(%a) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// ODS type constraint: float-only unary ops reject integer tensors.
func.func @exp_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{'tgraph.exp' op operand #0 must be ranked tensor of floating-point element type values, but got 'tensor<4xi32>'}}
  %0 = tgraph.exp %a : tensor<4xi32>
  return
}

// -----

// binary ops: operands have one element type (no implicit promotion).
func.func @binary_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'tgraph.sub' op lhs (operand 0) has element type f32 but rhs (operand 1) has f16; tensor dtypes do not promote: cast one of them (tgraph.cast, op.cast)}}
  %0 = tgraph.sub %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

// broadcast: two constant dims that are not 1 must be equal.
func.func @broadcast_constants(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{'tgraph.max' op broadcast mismatch: lhs (operand 0) dim 0 is 2 but rhs (operand 1) dim 0 is 3}}
  %0 = tgraph.max %a, %b : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// broadcast: symbolic dims that differ for every value of the symbol (D vs D+1).
func.func @broadcast_symbolic(%a: tensor<?xf32, #tgraph.dims<[D]>>,
                              %b: tensor<?xf32, #tgraph.dims<["D+1"]>>) {
  // expected-error @+1 {{'tgraph.mul' op broadcast mismatch: lhs (operand 0) dim 0 is D but rhs (operand 1) dim 0 is D+1, which differ for every value of D}}
  %0 = tgraph.mul %a, %b : (tensor<?xf32, #tgraph.dims<[D]>>,
      tensor<?xf32, #tgraph.dims<["D+1"]>>) -> tensor<?xf32>
  return
}

// -----

// compare: operands have one element type.
func.func @compare_element_types(%a: tensor<4xi32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{'tgraph.compare' op lhs (operand 0) has element type i32 but rhs (operand 1) has i64; tensor dtypes do not promote: cast one of them (tgraph.cast, op.cast)}}
  %0 = tgraph.compare eq, %a, %b : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi1>
  return
}

// -----

// select: on_true and on_false have one element type.
func.func @select_element_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'tgraph.select' op on_true (operand 1) has element type f32 but on_false (operand 2) has bf16; tensor dtypes do not promote: cast one of them (tgraph.cast, op.cast)}}
  %0 = tgraph.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

// select: the condition broadcasts with the two values.
func.func @select_broadcast(%c: tensor<3xi1>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.select' op broadcast mismatch: cond (operand 0) dim 0 is 3 but on_true (operand 1) dim 0 is 4}}
  %0 = tgraph.select %c, %a, %a : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// cast: floats never cast to i1.
func.func @cast_float_to_i1(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.cast' op cannot cast f32 to i1; compare against zero with tgraph.compare instead}}
  %0 = tgraph.cast %a : tensor<4xf32> -> tensor<4xi1>
  return
}

// -----

// cast policy: accum does not apply.
func.func @cast_accum(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.cast' op the accum policy does not apply to a cast}}
  %0 = tgraph.cast %a {policy = #tgraph.policy<accum = f32>} : tensor<4xf32> -> tensor<4xbf16>
  return
}

// -----

// cast policy: loss_scale does not apply.
func.func @cast_loss_scale(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.cast' op the loss_scale policy does not apply to a cast}}
  %0 = tgraph.cast %a {policy = #tgraph.policy<loss_scale = 2.0>} : tensor<4xf32> -> tensor<4xbf16>
  return
}

// -----

// cast policy: stochastic_round on an exact widening.
func.func @cast_stochastic_round_widening(%a: tensor<4xf16>) {
  // expected-error @+1 {{'tgraph.cast' op stochastic_round needs a float cast that loses precision, but f16 -> f32 is exact}}
  %0 = tgraph.cast %a {policy = #tgraph.policy<stochastic_round>} : tensor<4xf16> -> tensor<4xf32>
  return
}

// -----

// cast policy: saturate on a float cast into a wider range.
func.func @cast_saturate_float(%a: tensor<4xf16>) {
  // expected-error @+1 {{'tgraph.cast' op saturate needs a cast whose values can overflow the result type (to a type of smaller range), but f16 -> bf16 cannot}}
  %0 = tgraph.cast %a {policy = #tgraph.policy<saturate>} : tensor<4xf16> -> tensor<4xbf16>
  return
}

// -----

// cast policy: an integer whose range fits the float's.
func.func @cast_saturate_int_to_float(%a: tensor<4xi8>) {
  // expected-error @+1 {{'tgraph.cast' op saturate needs a cast whose values can overflow the result type (to a type of smaller range), but i8 -> f16 cannot}}
  %0 = tgraph.cast %a {policy = #tgraph.policy<saturate>} : tensor<4xi8> -> tensor<4xf16>
  return
}

// -----

// cast policy: saturate on an integer widening, which cannot overflow.
func.func @cast_saturate_int_widening(%a: tensor<4xi8>) {
  // expected-error @+1 {{'tgraph.cast' op saturate needs a cast whose values can overflow the result type (to a type of smaller range), but i8 -> i32 cannot}}
  %0 = tgraph.cast %a {policy = #tgraph.policy<saturate>} : tensor<4xi8> -> tensor<4xi32>
  return
}

// -----

// result check: the declared element type differs from the produced one.
func.func @result_element_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.add' op result 0 has element type f16 but the op produces f32}}
  %0 = tgraph.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// result check: the declared rank differs from the produced one.
func.func @result_rank(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'tgraph.cast' op result 0 has shape [16] (rank 1) but the op produces shape [4, 4] (rank 2)}}
  %0 = tgraph.cast %a : tensor<4x4xf32> -> tensor<16xf16>
  return
}

// -----

// result check: a declared symbolic dim can never equal the produced one (D+1 vs D).
func.func @result_dim_symbolic(%a: tensor<?xf32, #tgraph.dims<[D]>>) {
  // expected-error @+1 {{'tgraph.add' op result 0 dim 0 is declared as D+1 but the op produces D (result shape [D]), which differ for every value of D}}
  %0 = tgraph.add %a, %a : (tensor<?xf32, #tgraph.dims<[D]>>, tensor<?xf32, #tgraph.dims<[D]>>)
      -> tensor<?xf32, #tgraph.dims<["D+1"]>>
  return
}

// -----

// result check: a declared constant dim differs from the produced constant.
func.func @result_dim_constant(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'tgraph.cast' op result 0 dim 1 is declared as 5 but the op produces 8 (result shape [4, 8])}}
  %0 = tgraph.cast %a : tensor<4x8xf32> -> tensor<4x5xbf16>
  return
}

// -----

// cast policy: stochastic_round on bf16 -> f32, which is exact (same exponent
// range, more precision).
func.func @cast_stochastic_round_bf16_to_f32(%a: tensor<4xbf16>) {
  // expected-error @+1 {{'tgraph.cast' op stochastic_round needs a float cast that loses precision, but bf16 -> f32 is exact}}
  %0 = tgraph.cast %a {policy = #tgraph.policy<stochastic_round>} : tensor<4xbf16> -> tensor<4xf32>
  return
}

// -----

// cast policy: stochastic_round only rounds floats to floats.
func.func @cast_stochastic_round_to_int(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.cast' op stochastic_round applies to float-to-float casts, but this cast is f32 -> i8}}
  %0 = tgraph.cast %a {policy = #tgraph.policy<stochastic_round>} : tensor<4xf32> -> tensor<4xi8>
  return
}

// -----

// cast policy: i1 -> i8 can never overflow, so saturate has nothing to do.
func.func @cast_saturate_bool(%a: tensor<4xi1>) {
  // expected-error @+1 {{'tgraph.cast' op saturate needs a cast whose values can overflow the result type (to a type of smaller range), but i1 -> i8 cannot}}
  %0 = tgraph.cast %a {policy = #tgraph.policy<saturate>} : tensor<4xi1> -> tensor<4xi8>
  return
}
