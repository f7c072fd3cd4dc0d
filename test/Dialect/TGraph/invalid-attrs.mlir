// RUN: tessera-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the Graph IR attributes and types (#tgraph.dims, its
// dimension expressions, #tgraph.policy, !tgraph.kv_cache): one case per
// message.

// dims encoding: one entry per tensor dim.
func.func @dims_rank(
    // expected-error @+1 {{#tgraph.dims has 3 entries but the tensor has rank 2}}
    %x: tensor<?x?xf32, #tgraph.dims<[B, S, T]>>) {
  return
}

// -----

// dims encoding: constant entries are not negative.
func.func @dims_negative(
    // expected-error @+1 {{#tgraph.dims entry 1 is negative (-1)}}
    %x: tensor<?x?xf32, #tgraph.dims<[B, -1]>>) {
  return
}

// -----

// dims encoding: constant entries equal the static sizes.
func.func @dims_constant_mismatch(
    // expected-error @+1 {{#tgraph.dims entry 1 is 3 but the tensor's dim 1 is 4}}
    %x: tensor<?x4xf32, #tgraph.dims<[B, 3]>>) {
  return
}

// -----

// dims encoding: a constant entry needs a static size.
func.func @dims_constant_for_dynamic(
    // expected-error @+1 {{#tgraph.dims entry 1 is 3 but the tensor's dim 1 is ?}}
    %x: tensor<?x?xf32, #tgraph.dims<[B, 3]>>) {
  return
}

// -----

// dims encoding: a symbolic entry needs a '?' size.
func.func @dims_symbol_for_static(
    // expected-error @+1 {{#tgraph.dims entry 1 is S but the tensor's dim 1 is the constant 4 (write '?' for a symbolic dim)}}
    %x: tensor<?x4xf32, #tgraph.dims<[B, S]>>) {
  return
}

// -----

// dims encoding: an encoding without symbols is redundant.
func.func @dims_no_symbol(
    // expected-error @+1 {{#tgraph.dims names no symbolic dim; drop the encoding (the builtin shape says it all)}}
    %x: tensor<?x4xf32, #tgraph.dims<[?, 4]>>) {
  return
}

// -----

// dims entries: an integer, a symbol, '?' or a quoted expression.
func.func @dims_bad_entry(
    // expected-error @+1 {{expected a dimension: an integer, a symbol, '?' or a quoted expression such as "2*S"}}
    %x: tensor<?xf32, #tgraph.dims<[*]>>) {
  return
}

// -----

// dimension expressions: an operand is missing.
func.func @expr_missing_operand(
    // expected-error @+1 {{expected an integer, a symbol, '?' or '(' at column 3 of dimension expression 'S*'}}
    %x: tensor<?xf32, #tgraph.dims<["S*"]>>) {
  return
}

// -----

// dimension expressions: parentheses are balanced.
func.func @expr_unbalanced(
    // expected-error @+1 {{expected ')' at column 5 of dimension expression '(S+1'}}
    %x: tensor<?xf32, #tgraph.dims<["(S+1"]>>) {
  return
}

// -----

// dimension expressions: trailing text.
func.func @expr_trailing(
    // expected-error @+1 {{unexpected 'T' at column 3 of dimension expression 'S T'}}
    %x: tensor<?xf32, #tgraph.dims<["S T"]>>) {
  return
}

// -----

// dimension expressions: no division by zero.
func.func @expr_division_by_zero(
    // expected-error @+1 {{division by zero at column 3 of dimension expression 'S/0'}}
    %x: tensor<?xf32, #tgraph.dims<["S/0"]>>) {
  return
}

// -----

// dimension expressions: integers fit in 64 bits.
func.func @expr_integer_too_large(
    // expected-error @+1 {{integer does not fit in 64 bits at column 3 of dimension expression 'S+99999999999999999999'}}
    %x: tensor<?xf32, #tgraph.dims<["S+99999999999999999999"]>>) {
  return
}

// -----

// dimension expressions: arithmetic does not overflow.
func.func @expr_overflow(
    // expected-error @+1 {{integer overflow or expression too large at column 24 of dimension expression 'S*9223372036854775807*2'}}
    %x: tensor<?xf32, #tgraph.dims<["S*9223372036854775807*2"]>>) {
  return
}

// -----

// dimension expressions: nesting is bounded.
func.func @expr_too_deep(
    // expected-error @+1 {{expression nested too deeply at column 33 of dimension expression '((((((((((((((((((((((((((((((((S))))))))))))))))))))))))))))))))'}}
    %x: tensor<?xf32, #tgraph.dims<["((((((((((((((((((((((((((((((((S))))))))))))))))))))))))))))))))"]>>) {
  return
}

// -----

// policy: accum is f32 or bf16.
func.func @policy_accum(%a: tensor<4x4xf16>) {
  // expected-error @+1 {{accum must be f32 or bf16, but is f16}}
  %0 = tgraph.matmul %a, %a {policy = #tgraph.policy<accum = f16>} : tensor<4x4xf16>
  return
}

// -----

// policy: loss_scale is finite and positive.
func.func @policy_loss_scale(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{loss_scale must be a finite positive number, but is -2.000000e+00}}
  %0 = tgraph.matmul %a, %a {policy = #tgraph.policy<loss_scale = -2.0>} : tensor<4x4xf32>
  return
}

// -----

// policy: only the known keys.
func.func @policy_unknown_key(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{unknown policy 'fast'; expected accum, stochastic_round, loss_scale or saturate}}
  %0 = tgraph.matmul %a, %a {policy = #tgraph.policy<accum = f32, fast>} : tensor<4x4xf32>
  return
}

// -----

// kv_cache: the shape is [batch, heads, max_length, head_dim].
func.func @kv_cache_rank(
    // expected-error @+1 {{kv_cache shape must be [batch, heads, max_length, head_dim], but has 3 dims}}
    %c: !tgraph.kv_cache<[B, 8, 64], bf16>) {
  return
}

// -----

// kv_cache: every dim is known and positive.
func.func @kv_cache_dim(
    // expected-error @+1 {{kv_cache dim 2 must be known and positive, but is S-1}}
    %c: !tgraph.kv_cache<[B, 8, "S-1", 64], bf16>) {
  return
}

// -----

// kv_cache: the cache stores floats.
func.func @kv_cache_element_type(
    // expected-error @+1 {{kv_cache element type must be a float type, but is 'i32'}}
    %c: !tgraph.kv_cache<[B, 8, 4096, 64], i32>) {
  return
}

// -----

// The most negative int64 prints and parses back (it is not a symbol).
func.func @int64_min_dim(
    // expected-error @+1 {{#tgraph.dims entry 0 is negative (-9223372036854775808)}}
    %x: tensor<?xf32, #tgraph.dims<[-9223372036854775808]>>) {
  return
}

// -----

// Negating the numerator of a division by -1 overflows: an error, not a
// silently wrong dim.
func.func @dim_negation_overflow(
    // expected-error @+1 {{integer overflow or expression too large}}
    %x: tensor<?xf32, #tgraph.dims<["S + (-9223372036854775808*S)/(-1)"]>>) {
  return
}
