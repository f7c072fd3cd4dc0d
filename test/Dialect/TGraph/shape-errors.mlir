// RUN: tessera-opt %s -split-input-file -verify-diagnostics
// RUN: not tessera-opt %s -split-input-file 2>&1 | FileCheck %s --check-prefix=LOC

// The messages users see for the two classic shape mistakes: they name the
// op, the operand positions, both dims, the symbols and the location.

func.func @matmul_d_vs_2d(%x: tensor<?x?xf32, #tgraph.dims<[B, D]>>,
                          %w: tensor<?x?xf32, #tgraph.dims<["2*D+1", H]>>) {
  // LOC: shape-errors.mlir:[[@LINE+2]]:8: error: 'tgraph.matmul' op contracting dimension mismatch: lhs (operand 0) dim 1 is D but rhs (operand 1) dim 0 is 2*D+1, which differ for every value of D
  // expected-error @+1 {{'tgraph.matmul' op contracting dimension mismatch: lhs (operand 0) dim 1 is D but rhs (operand 1) dim 0 is 2*D+1, which differ for every value of D}}
  %y = tgraph.matmul %x, %w : (tensor<?x?xf32, #tgraph.dims<[B, D]>>,
      tensor<?x?xf32, #tgraph.dims<["2*D+1", H]>>) -> tensor<?x?xf32>
  return
}

// -----

func.func @broadcast_constants(%a: tensor<3x?xf32, #tgraph.dims<[3, S]>>,
                               %b: tensor<4x?xf32, #tgraph.dims<[4, S]>>) {
  // LOC: shape-errors.mlir:[[@LINE+2]]:8: error: 'tgraph.add' op broadcast mismatch: lhs (operand 0) dim 0 is 3 but rhs (operand 1) dim 0 is 4
  // expected-error @+1 {{'tgraph.add' op broadcast mismatch: lhs (operand 0) dim 0 is 3 but rhs (operand 1) dim 0 is 4}}
  %y = tgraph.add %a, %b : (tensor<3x?xf32, #tgraph.dims<[3, S]>>,
      tensor<4x?xf32, #tgraph.dims<[4, S]>>) -> tensor<?x?xf32>
  return
}
