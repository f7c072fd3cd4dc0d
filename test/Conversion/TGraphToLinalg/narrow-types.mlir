// RUN: tessera-opt %s -split-input-file --tessera-tgraph-lower-to-linalg -verify-diagnostics

// i4 tensors reach this lowering only as i8 (-tessera-tgraph-widen-i4):
// vector and scalar memory accesses would disagree on their layout (a
// strided slice read wrong values).
func.func @cast_to_i4(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{'tgraph.cast' op result 0 is an i4 tensor, which this lowering cannot store (sub-byte elements have no single memory layout in compiled code); run -tessera-tgraph-widen-i4 first}}
  %b = tgraph.cast %x : tensor<64xf32> -> tensor<64xi4>
  %r = tgraph.cast %b : tensor<64xi4> -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument 0 is an i4 tensor}}
func.func @i4_argument(%x: tensor<8xi4>) -> tensor<8xi4> {
  return %x : tensor<8xi4>
}
