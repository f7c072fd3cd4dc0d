// RUN: tessera-opt %s -split-input-file --tessera-tgraph-infer-shapes | FileCheck %s
// RUN: tessera-opt %s -split-input-file --tessera-tgraph-infer-shapes --tessera-tgraph-infer-shapes | FileCheck %s

// Shape inference for every tgraph op with a shape function, and for
// tgraph.call. Each function writes the op's result (and the function's
// result) with `?` dims; -tessera-tgraph-infer-shapes must replace them with
// the dims the operands determine. Every expected type below was derived by
// hand from the op's documented semantics (the .td descriptions,
// docs/TGraph.md and lib/Shape), using the canonical expression form:
// coefficients first, symbols sorted, constant term last, `/` is floor
// division with the remainder of the numerator's coefficients in [0, c).
// CHECK-NEXT from the signature on checks that no run-time check
// (tgraph.dim / tgraph.assert_dim) is inserted where every equality is
// decidable. The second RUN line checks that the pass is idempotent.

//===----------------------------------------------------------------------===//
// Elementwise binary ops, compare, select, cast
//===----------------------------------------------------------------------===//

// [B, 1, 64] + [S, 64]: right-aligned, the 1 expands -> [B, S, 64].
// CHECK-LABEL: func.func @add(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x1x64xf32, #tgraph.dims<[B, 1, 64]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[S, 64]>>)
// CHECK-SAME:      -> tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.add %[[X]], %[[Y]] : (tensor<?x1x64xf32, #tgraph.dims<[B, 1, 64]>>, tensor<?x64xf32, #tgraph.dims<[S, 64]>>) -> tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
func.func @add(%x: tensor<?x1x64xf32, #tgraph.dims<[B, 1, 64]>>,
               %y: tensor<?x64xf32, #tgraph.dims<[S, 64]>>) -> tensor<?x?x?xf32> {
  %r = tgraph.add %x, %y : (tensor<?x1x64xf32, #tgraph.dims<[B, 1, 64]>>,
      tensor<?x64xf32, #tgraph.dims<[S, 64]>>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// [64] - [B, S, 64]: the lower-rank operand comes first -> [B, S, 64].
// CHECK-LABEL: func.func @sub(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<64xf32>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>)
// CHECK-SAME:      -> tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.sub %[[X]], %[[Y]] : (tensor<64xf32>, tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>) -> tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
func.func @sub(%x: tensor<64xf32>,
               %y: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>) -> tensor<?x?x?xf32> {
  %r = tgraph.sub %x, %y : (tensor<64xf32>,
      tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// [4, 1] * [1, 8] -> [4, 8]: all dims constant, so no encoding.
// CHECK-LABEL: func.func @mul(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<4x1xi32>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<1x8xi32>)
// CHECK-SAME:      -> tensor<4x8xi32> {
// CHECK-NEXT:    %[[R:.+]] = tgraph.mul %[[X]], %[[Y]] : (tensor<4x1xi32>, tensor<1x8xi32>) -> tensor<4x8xi32>
// CHECK-NEXT:    return %[[R]] : tensor<4x8xi32>
func.func @mul(%x: tensor<4x1xi32>, %y: tensor<1x8xi32>) -> tensor<?x?xi32> {
  %r = tgraph.mul %x, %y : (tensor<4x1xi32>, tensor<1x8xi32>) -> tensor<?x?xi32>
  return %r : tensor<?x?xi32>
}

// -----

// [B, S] / [B, 1] -> [B, S].
// CHECK-LABEL: func.func @div(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?xf16, #tgraph.dims<[B, S]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?x1xf16, #tgraph.dims<[B, 1]>>)
// CHECK-SAME:      -> tensor<?x?xf16, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.div %[[X]], %[[Y]] : (tensor<?x?xf16, #tgraph.dims<[B, S]>>, tensor<?x1xf16, #tgraph.dims<[B, 1]>>) -> tensor<?x?xf16, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xf16, #tgraph.dims<[B, S]>>
func.func @div(%x: tensor<?x?xf16, #tgraph.dims<[B, S]>>,
               %y: tensor<?x1xf16, #tgraph.dims<[B, 1]>>) -> tensor<?x?xf16> {
  %r = tgraph.div %x, %y : (tensor<?x?xf16, #tgraph.dims<[B, S]>>,
      tensor<?x1xf16, #tgraph.dims<[B, 1]>>) -> tensor<?x?xf16>
  return %r : tensor<?x?xf16>
}

// -----

// A 0-d tensor broadcasts against [N, 2*D] -> [N, 2*D].
// CHECK-LABEL: func.func @pow(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<f32>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[N, "2*D"]>>)
// CHECK-SAME:      -> tensor<?x?xf32, #tgraph.dims<[N, "2*D"]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.pow %[[X]], %[[Y]] : (tensor<f32>, tensor<?x?xf32, #tgraph.dims<[N, "2*D"]>>) -> tensor<?x?xf32, #tgraph.dims<[N, "2*D"]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xf32, #tgraph.dims<[N, "2*D"]>>
func.func @pow(%x: tensor<f32>,
               %y: tensor<?x?xf32, #tgraph.dims<[N, "D*2"]>>) -> tensor<?x?xf32> {
  %r = tgraph.pow %x, %y : (tensor<f32>,
      tensor<?x?xf32, #tgraph.dims<[N, "D*2"]>>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// [1, 1, D] vs [B, 1]: dim 0 is 1 in the only operand that has it, dim 1
// takes B, dim 2 takes D -> [1, B, D].
// CHECK-LABEL: func.func @max(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<1x1x?xf32, #tgraph.dims<[1, 1, D]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?x1xf32, #tgraph.dims<[B, 1]>>)
// CHECK-SAME:      -> tensor<1x?x?xf32, #tgraph.dims<[1, B, D]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.max %[[X]], %[[Y]] : (tensor<1x1x?xf32, #tgraph.dims<[1, 1, D]>>, tensor<?x1xf32, #tgraph.dims<[B, 1]>>) -> tensor<1x?x?xf32, #tgraph.dims<[1, B, D]>>
// CHECK-NEXT:    return %[[R]] : tensor<1x?x?xf32, #tgraph.dims<[1, B, D]>>
func.func @max(%x: tensor<1x1x?xf32, #tgraph.dims<[1, 1, D]>>,
               %y: tensor<?x1xf32, #tgraph.dims<[B, 1]>>) -> tensor<?x?x?xf32> {
  %r = tgraph.max %x, %y : (tensor<1x1x?xf32, #tgraph.dims<[1, 1, D]>>,
      tensor<?x1xf32, #tgraph.dims<[B, 1]>>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// [H, D/H] vs [1, D/H] -> [H, D/H] (a floor quotient prints as "D/H").
// CHECK-LABEL: func.func @min(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[H, "D/H"]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<1x?xf32, #tgraph.dims<[1, "D/H"]>>)
// CHECK-SAME:      -> tensor<?x?xf32, #tgraph.dims<[H, "D/H"]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.min %[[X]], %[[Y]] : (tensor<?x?xf32, #tgraph.dims<[H, "D/H"]>>, tensor<1x?xf32, #tgraph.dims<[1, "D/H"]>>) -> tensor<?x?xf32, #tgraph.dims<[H, "D/H"]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xf32, #tgraph.dims<[H, "D/H"]>>
func.func @min(%x: tensor<?x?xf32, #tgraph.dims<[H, "D/H"]>>,
               %y: tensor<1x?xf32, #tgraph.dims<[1, "D/H"]>>) -> tensor<?x?xf32> {
  %r = tgraph.min %x, %y : (tensor<?x?xf32, #tgraph.dims<[H, "D/H"]>>,
      tensor<1x?xf32, #tgraph.dims<[1, "D/H"]>>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// compare broadcasts like add and produces i1: [B, S] vs [S] -> i1 [B, S].
// CHECK-LABEL: func.func @compare(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[B, S]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?xf32, #tgraph.dims<[S]>>)
// CHECK-SAME:      -> tensor<?x?xi1, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.compare lt, %[[X]], %[[Y]] : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xi1, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xi1, #tgraph.dims<[B, S]>>
func.func @compare(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>,
                   %y: tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xi1> {
  %r = tgraph.compare lt, %x, %y : (tensor<?x?xf32, #tgraph.dims<[B, S]>>,
      tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xi1>
  return %r : tensor<?x?xi1>
}

// -----

// select: the i1 condition [B, 1], on_true [S] and a 0-d on_false broadcast
// together; the element type is the branches' (bf16) -> bf16 [B, S].
// CHECK-LABEL: func.func @select(
// CHECK-SAME:      %[[C:[^:]+]]: tensor<?x1xi1, #tgraph.dims<[B, 1]>>,
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?xbf16, #tgraph.dims<[S]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<bf16>)
// CHECK-SAME:      -> tensor<?x?xbf16, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.select %[[C]], %[[X]], %[[Y]] : (tensor<?x1xi1, #tgraph.dims<[B, 1]>>, tensor<?xbf16, #tgraph.dims<[S]>>, tensor<bf16>) -> tensor<?x?xbf16, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xbf16, #tgraph.dims<[B, S]>>
func.func @select(%c: tensor<?x1xi1, #tgraph.dims<[B, 1]>>,
                  %x: tensor<?xbf16, #tgraph.dims<[S]>>,
                  %y: tensor<bf16>) -> tensor<?x?xbf16> {
  %r = tgraph.select %c, %x, %y : (tensor<?x1xi1, #tgraph.dims<[B, 1]>>,
      tensor<?xbf16, #tgraph.dims<[S]>>, tensor<bf16>) -> tensor<?x?xbf16>
  return %r : tensor<?x?xbf16>
}

// -----

// cast keeps the shape and takes the declared element type.
// CHECK-LABEL: func.func @cast(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>)
// CHECK-SAME:      -> tensor<?x?xbf16, #tgraph.dims<[B, "2*S"]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.cast %[[X]] : tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>> -> tensor<?x?xbf16, #tgraph.dims<[B, "2*S"]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xbf16, #tgraph.dims<[B, "2*S"]>>
func.func @cast(%x: tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>) -> tensor<?x?xbf16> {
  %r = tgraph.cast %x : tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>> -> tensor<?x?xbf16>
  return %r : tensor<?x?xbf16>
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops, zeros_like/ones_like and the softmax family: their
// result has the operand's type, so the `?` result is that of a producer
// whose type is refined first (program order).
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @exp(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.exp %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @exp(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.exp %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @log(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.log %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @log(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.log %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @log1p(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.log1p %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @log1p(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.log1p %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @sin(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.sin %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @sin(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.sin %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @cos(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.cos %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @cos(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.cos %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @tanh(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.tanh %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @tanh(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.tanh %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @erf(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.erf %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @erf(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.erf %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @sigmoid(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.sigmoid %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @sigmoid(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.sigmoid %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @gelu(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.gelu %[[T]] {approximate} : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @gelu(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.gelu %t {approximate} : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @silu(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.silu %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @silu(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.silu %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @sqrt(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.sqrt %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @sqrt(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.sqrt %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @rsqrt(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.rsqrt %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @rsqrt(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.rsqrt %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @reciprocal(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.reciprocal %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @reciprocal(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.reciprocal %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @floor(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.floor %[[T]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xf32, #tgraph.dims<[64, B]>>
func.func @floor(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
  %r = tgraph.floor %t : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @neg(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?xi32, #tgraph.dims<[S]>>)
// CHECK-SAME:      -> tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.add %[[X]], %[[Y]] : (tensor<?x1xi32, #tgraph.dims<[B, 1]>>, tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.neg %[[T]] : tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xi32, #tgraph.dims<[B, S]>>
func.func @neg(%x: tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
    %y: tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32> {
  %t = tgraph.add %x, %y : (tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
      tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32>
  %r = tgraph.neg %t : tensor<?x?xi32>
  return %r : tensor<?x?xi32>
}

// -----

// CHECK-LABEL: func.func @abs(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?xi32, #tgraph.dims<[S]>>)
// CHECK-SAME:      -> tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.add %[[X]], %[[Y]] : (tensor<?x1xi32, #tgraph.dims<[B, 1]>>, tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.abs %[[T]] : tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xi32, #tgraph.dims<[B, S]>>
func.func @abs(%x: tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
    %y: tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32> {
  %t = tgraph.add %x, %y : (tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
      tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32>
  %r = tgraph.abs %t : tensor<?x?xi32>
  return %r : tensor<?x?xi32>
}

// -----

// CHECK-LABEL: func.func @relu(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?xi32, #tgraph.dims<[S]>>)
// CHECK-SAME:      -> tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.add %[[X]], %[[Y]] : (tensor<?x1xi32, #tgraph.dims<[B, 1]>>, tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.relu %[[T]] : tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xi32, #tgraph.dims<[B, S]>>
func.func @relu(%x: tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
    %y: tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32> {
  %t = tgraph.add %x, %y : (tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
      tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32>
  %r = tgraph.relu %t : tensor<?x?xi32>
  return %r : tensor<?x?xi32>
}

// -----

// CHECK-LABEL: func.func @square(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?xi32, #tgraph.dims<[S]>>)
// CHECK-SAME:      -> tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.add %[[X]], %[[Y]] : (tensor<?x1xi32, #tgraph.dims<[B, 1]>>, tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.square %[[T]] : tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xi32, #tgraph.dims<[B, S]>>
func.func @square(%x: tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
    %y: tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32> {
  %t = tgraph.add %x, %y : (tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
      tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32>
  %r = tgraph.square %t : tensor<?x?xi32>
  return %r : tensor<?x?xi32>
}

// -----

// CHECK-LABEL: func.func @sign(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?xi32, #tgraph.dims<[S]>>)
// CHECK-SAME:      -> tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.add %[[X]], %[[Y]] : (tensor<?x1xi32, #tgraph.dims<[B, 1]>>, tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.sign %[[T]] : tensor<?x?xi32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xi32, #tgraph.dims<[B, S]>>
func.func @sign(%x: tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
    %y: tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32> {
  %t = tgraph.add %x, %y : (tensor<?x1xi32, #tgraph.dims<[B, 1]>>,
      tensor<?xi32, #tgraph.dims<[S]>>) -> tensor<?x?xi32>
  %r = tgraph.sign %t : tensor<?x?xi32>
  return %r : tensor<?x?xi32>
}

// -----

// CHECK-LABEL: func.func @zeros_like(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xbf16, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xbf16, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xbf16, #tgraph.dims<[B, 64]>> -> tensor<64x?xbf16, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.zeros_like %[[T]] : tensor<64x?xbf16, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xbf16, #tgraph.dims<[64, B]>>
func.func @zeros_like(%x: tensor<?x64xbf16, #tgraph.dims<[B, 64]>>) -> tensor<?x?xbf16> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xbf16, #tgraph.dims<[B, 64]>> -> tensor<?x?xbf16>
  %r = tgraph.zeros_like %t : tensor<?x?xbf16>
  return %r : tensor<?x?xbf16>
}

// -----

// CHECK-LABEL: func.func @ones_like(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xbf16, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<64x?xbf16, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x64xbf16, #tgraph.dims<[B, 64]>> -> tensor<64x?xbf16, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.ones_like %[[T]] : tensor<64x?xbf16, #tgraph.dims<[64, B]>>
// CHECK-NEXT:    return %[[R]] : tensor<64x?xbf16, #tgraph.dims<[64, B]>>
func.func @ones_like(%x: tensor<?x64xbf16, #tgraph.dims<[B, 64]>>) -> tensor<?x?xbf16> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x64xbf16, #tgraph.dims<[B, 64]>> -> tensor<?x?xbf16>
  %r = tgraph.ones_like %t : tensor<?x?xbf16>
  return %r : tensor<?x?xbf16>
}

// -----

// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?xf32, #tgraph.dims<[S]>>)
// CHECK-SAME:      -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.add %[[X]], %[[Y]] : (tensor<?x1xf32, #tgraph.dims<[B, 1]>>, tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.softmax %[[T]] {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xf32, #tgraph.dims<[B, S]>>
func.func @softmax(%x: tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
    %y: tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32> {
  %t = tgraph.add %x, %y : (tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
      tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32>
  %r = tgraph.softmax %t {dim = 1 : i64} : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @log_softmax(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?xf32, #tgraph.dims<[S]>>)
// CHECK-SAME:      -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.add %[[X]], %[[Y]] : (tensor<?x1xf32, #tgraph.dims<[B, 1]>>, tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.log_softmax %[[T]] {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xf32, #tgraph.dims<[B, S]>>
func.func @log_softmax(%x: tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
    %y: tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32> {
  %t = tgraph.add %x, %y : (tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
      tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32>
  %r = tgraph.log_softmax %t {dim = 1 : i64} : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_safe(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?xf32, #tgraph.dims<[S]>>)
// CHECK-SAME:      -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.add %[[X]], %[[Y]] : (tensor<?x1xf32, #tgraph.dims<[B, 1]>>, tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.softmax_safe %[[T]] {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?xf32, #tgraph.dims<[B, S]>>
func.func @softmax_safe(%x: tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
    %y: tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32> {
  %t = tgraph.add %x, %y : (tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
      tensor<?xf32, #tgraph.dims<[S]>>) -> tensor<?x?xf32>
  %r = tgraph.softmax_safe %t {dim = 1 : i64} : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// -----

// Batch dims [B, 1] and [H] broadcast to [B, H]; then M = S, N = 32.
// CHECK-LABEL: func.func @matmul_batch_broadcast(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<?x1x?x64xf32, #tgraph.dims<[B, 1, S, 64]>>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<?x64x32xf32, #tgraph.dims<[H, 64, 32]>>)
// CHECK-SAME:      -> tensor<?x?x?x32xf32, #tgraph.dims<[B, H, S, 32]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.matmul %[[A]], %[[W]] : (tensor<?x1x?x64xf32, #tgraph.dims<[B, 1, S, 64]>>, tensor<?x64x32xf32, #tgraph.dims<[H, 64, 32]>>) -> tensor<?x?x?x32xf32, #tgraph.dims<[B, H, S, 32]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?x?x32xf32, #tgraph.dims<[B, H, S, 32]>>
func.func @matmul_batch_broadcast(%a: tensor<?x1x?x64xf32, #tgraph.dims<[B, 1, S, 64]>>,
    %w: tensor<?x64x32xf32, #tgraph.dims<[H, 64, 32]>>) -> tensor<?x?x?x?xf32> {
  %r = tgraph.matmul %a, %w : (tensor<?x1x?x64xf32, #tgraph.dims<[B, 1, S, 64]>>,
      tensor<?x64x32xf32, #tgraph.dims<[H, 64, 32]>>) -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

// -----

// transpose_lhs: [B, 64, M] is read as [B, M, 64]; transpose_rhs: [N, 64] is
// read as [64, N] -> [B, M, N]. With only transpose_rhs and a declared f32
// result for bf16 operands: [B, S, 128] x [V, 128]^T -> f32 [B, S, V].
// CHECK-LABEL: func.func @matmul_transpose(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<?x64x?xf32, #tgraph.dims<[B, 64, M]>>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[N, 64]>>,
// CHECK-SAME:      %[[H:[^:]+]]: tensor<?x?x128xbf16, #tgraph.dims<[B, S, 128]>>,
// CHECK-SAME:      %[[E:[^:]+]]: tensor<?x128xbf16, #tgraph.dims<[V, 128]>>)
// CHECK-SAME:      -> (tensor<?x?x?xf32, #tgraph.dims<[B, M, N]>>, tensor<?x?x?xf32, #tgraph.dims<[B, S, V]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.matmul %[[A]], %[[W]] {transpose_lhs, transpose_rhs} : (tensor<?x64x?xf32, #tgraph.dims<[B, 64, M]>>, tensor<?x64xf32, #tgraph.dims<[N, 64]>>) -> tensor<?x?x?xf32, #tgraph.dims<[B, M, N]>>
// CHECK-NEXT:    %[[L:.+]] = tgraph.matmul %[[H]], %[[E]] {transpose_rhs} : (tensor<?x?x128xbf16, #tgraph.dims<[B, S, 128]>>, tensor<?x128xbf16, #tgraph.dims<[V, 128]>>) -> tensor<?x?x?xf32, #tgraph.dims<[B, S, V]>>
// CHECK-NEXT:    return %[[R]], %[[L]] : tensor<?x?x?xf32, #tgraph.dims<[B, M, N]>>, tensor<?x?x?xf32, #tgraph.dims<[B, S, V]>>
func.func @matmul_transpose(%a: tensor<?x64x?xf32, #tgraph.dims<[B, 64, M]>>,
    %w: tensor<?x64xf32, #tgraph.dims<[N, 64]>>,
    %h: tensor<?x?x128xbf16, #tgraph.dims<[B, S, 128]>>,
    %e: tensor<?x128xbf16, #tgraph.dims<[V, 128]>>)
    -> (tensor<?x?x?xf32>, tensor<?x?x?xf32>) {
  %r = tgraph.matmul %a, %w {transpose_lhs, transpose_rhs}
      : (tensor<?x64x?xf32, #tgraph.dims<[B, 64, M]>>,
         tensor<?x64xf32, #tgraph.dims<[N, 64]>>) -> tensor<?x?x?xf32>
  %l = tgraph.matmul %h, %e {transpose_rhs}
      : (tensor<?x?x128xbf16, #tgraph.dims<[B, S, 128]>>,
         tensor<?x128xbf16, #tgraph.dims<[V, 128]>>) -> tensor<?x?x?xf32>
  return %r, %l : tensor<?x?x?xf32>, tensor<?x?x?xf32>
}

// -----

// [B, S, 64] x [B, 64, 2*S] -> [B, S, 2*S].
// CHECK-LABEL: func.func @batch_matmul(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<?x64x?xf32, #tgraph.dims<[B, 64, "2*S"]>>)
// CHECK-SAME:      -> tensor<?x?x?xf32, #tgraph.dims<[B, S, "2*S"]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.batch_matmul %[[A]], %[[W]] : (tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>, tensor<?x64x?xf32, #tgraph.dims<[B, 64, "2*S"]>>) -> tensor<?x?x?xf32, #tgraph.dims<[B, S, "2*S"]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?x?xf32, #tgraph.dims<[B, S, "2*S"]>>
func.func @batch_matmul(%a: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>,
    %w: tensor<?x64x?xf32, #tgraph.dims<[B, 64, "2*S"]>>) -> tensor<?x?x?xf32> {
  %r = tgraph.batch_matmul %a, %w : (tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>,
      tensor<?x64x?xf32, #tgraph.dims<[B, 64, "2*S"]>>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// dot_general result order: batch dims (in batching order), then the lhs
// free dims, then the rhs free dims.
//   [B, S, H, 64] . [B, T, H, 64], batch (0, 2), contract 3 -> [B, H, S, T]
//   [M, 8, B] . [B, 8, 16], batch lhs 2 / rhs 0, contract 1 -> [B, M, 16]
// CHECK-LABEL: func.func @dot_general(
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<?x?x?x64xf32, #tgraph.dims<[B, S, H, 64]>>,
// CHECK-SAME:      %[[K:[^:]+]]: tensor<?x?x?x64xf32, #tgraph.dims<[B, T, H, 64]>>,
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x8x?xf32, #tgraph.dims<[M, 8, B]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?x8x16xf32, #tgraph.dims<[B, 8, 16]>>)
// CHECK-SAME:      -> (tensor<?x?x?x?xf32, #tgraph.dims<[B, H, S, T]>>, tensor<?x?x16xf32, #tgraph.dims<[B, M, 16]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.dot_general %[[Q]], %[[K]] {lhs_batching_dims = array<i64: 0, 2>, lhs_contracting_dims = array<i64: 3>, rhs_batching_dims = array<i64: 0, 2>, rhs_contracting_dims = array<i64: 3>} : (tensor<?x?x?x64xf32, #tgraph.dims<[B, S, H, 64]>>, tensor<?x?x?x64xf32, #tgraph.dims<[B, T, H, 64]>>) -> tensor<?x?x?x?xf32, #tgraph.dims<[B, H, S, T]>>
// CHECK-NEXT:    %[[R2:.+]] = tgraph.dot_general %[[X]], %[[Y]] {lhs_batching_dims = array<i64: 2>, lhs_contracting_dims = array<i64: 1>, rhs_batching_dims = array<i64: 0>, rhs_contracting_dims = array<i64: 1>} : (tensor<?x8x?xf32, #tgraph.dims<[M, 8, B]>>, tensor<?x8x16xf32, #tgraph.dims<[B, 8, 16]>>) -> tensor<?x?x16xf32, #tgraph.dims<[B, M, 16]>>
// CHECK-NEXT:    return %[[R]], %[[R2]] : tensor<?x?x?x?xf32, #tgraph.dims<[B, H, S, T]>>, tensor<?x?x16xf32, #tgraph.dims<[B, M, 16]>>
func.func @dot_general(%q: tensor<?x?x?x64xf32, #tgraph.dims<[B, S, H, 64]>>,
    %k: tensor<?x?x?x64xf32, #tgraph.dims<[B, T, H, 64]>>,
    %x: tensor<?x8x?xf32, #tgraph.dims<[M, 8, B]>>,
    %y: tensor<?x8x16xf32, #tgraph.dims<[B, 8, 16]>>)
    -> (tensor<?x?x?x?xf32>, tensor<?x?x?xf32>) {
  %r = tgraph.dot_general %q, %k {lhs_batching_dims = array<i64: 0, 2>,
      rhs_batching_dims = array<i64: 0, 2>, lhs_contracting_dims = array<i64: 3>,
      rhs_contracting_dims = array<i64: 3>}
      : (tensor<?x?x?x64xf32, #tgraph.dims<[B, S, H, 64]>>,
         tensor<?x?x?x64xf32, #tgraph.dims<[B, T, H, 64]>>) -> tensor<?x?x?x?xf32>
  %r2 = tgraph.dot_general %x, %y {lhs_batching_dims = array<i64: 2>,
      rhs_batching_dims = array<i64: 0>, lhs_contracting_dims = array<i64: 1>,
      rhs_contracting_dims = array<i64: 1>}
      : (tensor<?x8x?xf32, #tgraph.dims<[M, 8, B]>>,
         tensor<?x8x16xf32, #tgraph.dims<[B, 8, 16]>>) -> tensor<?x?x?xf32>
  return %r, %r2 : tensor<?x?x?x?xf32>, tensor<?x?x?xf32>
}

// -----

// NCHW input [N, 8, H, W], OIHW filter [16, 4, 3, 3], groups 2 (8 = 4 * 2).
//   height: stride 2, padding 1 + 1, dilation 1:
//     (H + 2 - 1*2 - 1)/2 + 1 = (H-1)/2 + 1 = (H+1)/2
//   width: stride 1, padding 0 + 1, dilation 2:
//     (W + 1 - 2*2 - 1)/1 + 1 = W-3
// CHECK-LABEL: func.func @conv2d_nchw(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x8x?x?xf32, #tgraph.dims<[N, 8, H, W]>>,
// CHECK-SAME:      %[[F:[^:]+]]: tensor<16x4x3x3xf32>)
// CHECK-SAME:      -> tensor<?x16x?x?xf32, #tgraph.dims<[N, 16, "(H+1)/2", "W-3"]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.conv2d %[[X]], %[[F]] {dilation = array<i64: 1, 2>, groups = 2 : i64, padding = array<i64: 1, 1, 0, 1>, strides = array<i64: 2, 1>} : (tensor<?x8x?x?xf32, #tgraph.dims<[N, 8, H, W]>>, tensor<16x4x3x3xf32>) -> tensor<?x16x?x?xf32, #tgraph.dims<[N, 16, "(H+1)/2", "W-3"]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x16x?x?xf32, #tgraph.dims<[N, 16, "(H+1)/2", "W-3"]>>
func.func @conv2d_nchw(%x: tensor<?x8x?x?xf32, #tgraph.dims<[N, 8, H, W]>>,
    %f: tensor<16x4x3x3xf32>) -> tensor<?x?x?x?xf32> {
  %r = tgraph.conv2d %x, %f {strides = array<i64: 2, 1>,
      padding = array<i64: 1, 1, 0, 1>, dilation = array<i64: 1, 2>,
      groups = 2 : i64}
      : (tensor<?x8x?x?xf32, #tgraph.dims<[N, 8, H, W]>>, tensor<16x4x3x3xf32>)
      -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

// -----

// NHWC input [N, 32, W, 3], HWIO filter [5, 5, 3, 8], strides (2, 3),
// padding 2 + 2 on the height only.
//   height: (32 + 4 - 4 - 1)/2 + 1 = 31/2 + 1 = 16
//   width:  (W - 4 - 1)/3 + 1 = (W-5)/3 + 1 = (W+1)/3 - 2 + 1 = (W+1)/3-1
// Output NHWC: [N, 16, (W+1)/3-1, 8].
// CHECK-LABEL: func.func @conv2d_nhwc(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x32x?x3xf32, #tgraph.dims<[N, 32, W, 3]>>,
// CHECK-SAME:      %[[F:[^:]+]]: tensor<5x5x3x8xf32>)
// CHECK-SAME:      -> tensor<?x16x?x8xf32, #tgraph.dims<[N, 16, "(W+1)/3-1", 8]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.conv2d %[[X]], %[[F]] {layout = #tgraph<conv_layout nhwc>, padding = array<i64: 2, 2, 0, 0>, strides = array<i64: 2, 3>} : (tensor<?x32x?x3xf32, #tgraph.dims<[N, 32, W, 3]>>, tensor<5x5x3x8xf32>) -> tensor<?x16x?x8xf32, #tgraph.dims<[N, 16, "(W+1)/3-1", 8]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x16x?x8xf32, #tgraph.dims<[N, 16, "(W+1)/3-1", 8]>>
func.func @conv2d_nhwc(%x: tensor<?x32x?x3xf32, #tgraph.dims<[N, 32, W, 3]>>,
    %f: tensor<5x5x3x8xf32>) -> tensor<?x?x?x?xf32> {
  %r = tgraph.conv2d %x, %f {layout = #tgraph<conv_layout nhwc>,
      strides = array<i64: 2, 3>, padding = array<i64: 2, 2, 0, 0>}
      : (tensor<?x32x?x3xf32, #tgraph.dims<[N, 32, W, 3]>>, tensor<5x5x3x8xf32>)
      -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

// -----

// q [B, H, S, 64], k [B, H, T, 64], v [B, H, T, 32] -> [B, H, S, 32].
// CHECK-LABEL: func.func @attention(
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<?x?x?x64xbf16, #tgraph.dims<[B, H, S, 64]>>,
// CHECK-SAME:      %[[K:[^:]+]]: tensor<?x?x?x64xbf16, #tgraph.dims<[B, H, T, 64]>>,
// CHECK-SAME:      %[[V:[^:]+]]: tensor<?x?x?x32xbf16, #tgraph.dims<[B, H, T, 32]>>)
// CHECK-SAME:      -> tensor<?x?x?x32xbf16, #tgraph.dims<[B, H, S, 32]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.attention %[[Q]], %[[K]], %[[V]] {causal} : (tensor<?x?x?x64xbf16, #tgraph.dims<[B, H, S, 64]>>, tensor<?x?x?x64xbf16, #tgraph.dims<[B, H, T, 64]>>, tensor<?x?x?x32xbf16, #tgraph.dims<[B, H, T, 32]>>) -> tensor<?x?x?x32xbf16, #tgraph.dims<[B, H, S, 32]>>
// CHECK-NEXT:    return %[[R]] : tensor<?x?x?x32xbf16, #tgraph.dims<[B, H, S, 32]>>
func.func @attention(%q: tensor<?x?x?x64xbf16, #tgraph.dims<[B, H, S, 64]>>,
    %k: tensor<?x?x?x64xbf16, #tgraph.dims<[B, H, T, 64]>>,
    %v: tensor<?x?x?x32xbf16, #tgraph.dims<[B, H, T, 32]>>) -> tensor<?x?x?x?xbf16> {
  %r = tgraph.attention %q, %k, %v {causal}
      : (tensor<?x?x?x64xbf16, #tgraph.dims<[B, H, S, 64]>>,
         tensor<?x?x?x64xbf16, #tgraph.dims<[B, H, T, 64]>>,
         tensor<?x?x?x32xbf16, #tgraph.dims<[B, H, T, 32]>>) -> tensor<?x?x?x?xbf16>
  return %r : tensor<?x?x?x?xbf16>
}

//===----------------------------------------------------------------------===//
// Reductions, softmax-like reductions, normalization, losses
//===----------------------------------------------------------------------===//

// -----

// [B, S, 64] summed over dim 1 -> [B, 64]; with keepdims -> [B, 1, 64].
// CHECK-LABEL: func.func @reduce_sum(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>)
// CHECK-SAME:      -> (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x1x64xf32, #tgraph.dims<[B, 1, 64]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.reduce_sum %[[X]] {dims = array<i64: 1>} : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK-NEXT:    %[[K:.+]] = tgraph.reduce_sum %[[X]] {dims = array<i64: 1>, keepdims} : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x1x64xf32, #tgraph.dims<[B, 1, 64]>>
// CHECK-NEXT:    return %[[R]], %[[K]]
func.func @reduce_sum(%x: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>)
    -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {
  %r = tgraph.reduce_sum %x {dims = array<i64: 1>}
      : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?xf32>
  %k = tgraph.reduce_sum %x {dims = array<i64: 1>, keepdims}
      : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?x?xf32>
  return %r, %k : tensor<?x?xf32>, tensor<?x?x?xf32>
}

// -----

// [B, S, 64] averaged over dims 0 and 2 -> [S]; with keepdims -> [1, S, 1].
// CHECK-LABEL: func.func @reduce_mean(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>)
// CHECK-SAME:      -> (tensor<?xf32, #tgraph.dims<[S]>>, tensor<1x?x1xf32, #tgraph.dims<[1, S, 1]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.reduce_mean %[[X]] {dims = array<i64: 0, 2>} : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?xf32, #tgraph.dims<[S]>>
// CHECK-NEXT:    %[[K:.+]] = tgraph.reduce_mean %[[X]] {dims = array<i64: 2, 0>, keepdims} : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<1x?x1xf32, #tgraph.dims<[1, S, 1]>>
// CHECK-NEXT:    return %[[R]], %[[K]]
func.func @reduce_mean(%x: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>)
    -> (tensor<?xf32>, tensor<?x?x?xf32>) {
  %r = tgraph.reduce_mean %x {dims = array<i64: 0, 2>}
      : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?xf32>
  %k = tgraph.reduce_mean %x {dims = array<i64: 2, 0>, keepdims}
      : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?x?xf32>
  return %r, %k : tensor<?xf32>, tensor<?x?x?xf32>
}

// -----

// Reducing every symbolic dim leaves only constants, so the results carry
// no encoding: [B, S, 64] over dims 0, 1 -> [64]; keepdims -> [1, 1, 64].
// CHECK-LABEL: func.func @reduce_prod(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x64xi32, #tgraph.dims<[B, S, 64]>>)
// CHECK-SAME:      -> (tensor<64xi32>, tensor<1x1x64xi32>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.reduce_prod %[[X]] {dims = array<i64: 0, 1>} : tensor<?x?x64xi32, #tgraph.dims<[B, S, 64]>> -> tensor<64xi32>
// CHECK-NEXT:    %[[K:.+]] = tgraph.reduce_prod %[[X]] {dims = array<i64: 0, 1>, keepdims} : tensor<?x?x64xi32, #tgraph.dims<[B, S, 64]>> -> tensor<1x1x64xi32>
// CHECK-NEXT:    return %[[R]], %[[K]] : tensor<64xi32>, tensor<1x1x64xi32>
func.func @reduce_prod(%x: tensor<?x?x64xi32, #tgraph.dims<[B, S, 64]>>)
    -> (tensor<?xi32>, tensor<?x?x?xi32>) {
  %r = tgraph.reduce_prod %x {dims = array<i64: 0, 1>}
      : tensor<?x?x64xi32, #tgraph.dims<[B, S, 64]>> -> tensor<?xi32>
  %k = tgraph.reduce_prod %x {dims = array<i64: 0, 1>, keepdims}
      : tensor<?x?x64xi32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?x?xi32>
  return %r, %k : tensor<?xi32>, tensor<?x?x?xi32>
}

// -----

// [B, S, 64] over dim 2 -> [B, S]; keepdims -> [B, S, 1].
// CHECK-LABEL: func.func @reduce_max(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>)
// CHECK-SAME:      -> (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?x?x1xf32, #tgraph.dims<[B, S, 1]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.reduce_max %[[X]] {dims = array<i64: 2>} : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[K:.+]] = tgraph.reduce_max %[[X]] {dims = array<i64: 2>, keepdims} : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?x1xf32, #tgraph.dims<[B, S, 1]>>
// CHECK-NEXT:    return %[[R]], %[[K]]
func.func @reduce_max(%x: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>)
    -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {
  %r = tgraph.reduce_max %x {dims = array<i64: 2>}
      : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?xf32>
  %k = tgraph.reduce_max %x {dims = array<i64: 2>, keepdims}
      : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?x?xf32>
  return %r, %k : tensor<?x?xf32>, tensor<?x?x?xf32>
}

// -----

// [B, S, 64] over dim 0 -> [S, 64]; keepdims -> [1, S, 64].
// CHECK-LABEL: func.func @reduce_min(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>)
// CHECK-SAME:      -> (tensor<?x64xf32, #tgraph.dims<[S, 64]>>, tensor<1x?x64xf32, #tgraph.dims<[1, S, 64]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.reduce_min %[[X]] {dims = array<i64: 0>} : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x64xf32, #tgraph.dims<[S, 64]>>
// CHECK-NEXT:    %[[K:.+]] = tgraph.reduce_min %[[X]] {dims = array<i64: 0>, keepdims} : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<1x?x64xf32, #tgraph.dims<[1, S, 64]>>
// CHECK-NEXT:    return %[[R]], %[[K]]
func.func @reduce_min(%x: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>)
    -> (tensor<?x?xf32>, tensor<?x?x?xf32>) {
  %r = tgraph.reduce_min %x {dims = array<i64: 0>}
      : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?xf32>
  %k = tgraph.reduce_min %x {dims = array<i64: 0>, keepdims}
      : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?x?xf32>
  return %r, %k : tensor<?x?xf32>, tensor<?x?x?xf32>
}

// -----

// argmax over dim 1 of [B, 10] -> [B] (i32 as declared); keepdims ->
// [B, 1] (i64).
// CHECK-LABEL: func.func @argmax(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x10xf32, #tgraph.dims<[B, 10]>>)
// CHECK-SAME:      -> (tensor<?xi32, #tgraph.dims<[B]>>, tensor<?x1xi64, #tgraph.dims<[B, 1]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.argmax %[[X]] {dim = 1 : i64} : tensor<?x10xf32, #tgraph.dims<[B, 10]>> -> tensor<?xi32, #tgraph.dims<[B]>>
// CHECK-NEXT:    %[[K:.+]] = tgraph.argmax %[[X]] {dim = 1 : i64, keepdims} : tensor<?x10xf32, #tgraph.dims<[B, 10]>> -> tensor<?x1xi64, #tgraph.dims<[B, 1]>>
// CHECK-NEXT:    return %[[R]], %[[K]]
func.func @argmax(%x: tensor<?x10xf32, #tgraph.dims<[B, 10]>>)
    -> (tensor<?xi32>, tensor<?x?xi64>) {
  %r = tgraph.argmax %x {dim = 1 : i64}
      : tensor<?x10xf32, #tgraph.dims<[B, 10]>> -> tensor<?xi32>
  %k = tgraph.argmax %x {dim = 1 : i64, keepdims}
      : tensor<?x10xf32, #tgraph.dims<[B, 10]>> -> tensor<?x?xi64>
  return %r, %k : tensor<?xi32>, tensor<?x?xi64>
}

// -----

// argmin over dim 2 of [B, S, V] -> [B, S]; over dim 0 with keepdims ->
// [1, S, V].
// CHECK-LABEL: func.func @argmin(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x?xbf16, #tgraph.dims<[B, S, V]>>)
// CHECK-SAME:      -> (tensor<?x?xi64, #tgraph.dims<[B, S]>>, tensor<1x?x?xi32, #tgraph.dims<[1, S, V]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.argmin %[[X]] {dim = 2 : i64} : tensor<?x?x?xbf16, #tgraph.dims<[B, S, V]>> -> tensor<?x?xi64, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[K:.+]] = tgraph.argmin %[[X]] {dim = 0 : i64, keepdims} : tensor<?x?x?xbf16, #tgraph.dims<[B, S, V]>> -> tensor<1x?x?xi32, #tgraph.dims<[1, S, V]>>
// CHECK-NEXT:    return %[[R]], %[[K]]
func.func @argmin(%x: tensor<?x?x?xbf16, #tgraph.dims<[B, S, V]>>)
    -> (tensor<?x?xi64>, tensor<?x?x?xi32>) {
  %r = tgraph.argmin %x {dim = 2 : i64}
      : tensor<?x?x?xbf16, #tgraph.dims<[B, S, V]>> -> tensor<?x?xi64>
  %k = tgraph.argmin %x {dim = 0 : i64, keepdims}
      : tensor<?x?x?xbf16, #tgraph.dims<[B, S, V]>> -> tensor<?x?x?xi32>
  return %r, %k : tensor<?x?xi64>, tensor<?x?x?xi32>
}

// -----

// logsumexp over dim 1 of [B, S] -> [B]; keepdims -> [B, 1].
// CHECK-LABEL: func.func @logsumexp(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[B, S]>>)
// CHECK-SAME:      -> (tensor<?xf32, #tgraph.dims<[B]>>, tensor<?x1xf32, #tgraph.dims<[B, 1]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.logsumexp %[[X]] {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, #tgraph.dims<[B]>>
// CHECK-NEXT:    %[[K:.+]] = tgraph.logsumexp %[[X]] {dim = 1 : i64, keepdims} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x1xf32, #tgraph.dims<[B, 1]>>
// CHECK-NEXT:    return %[[R]], %[[K]]
func.func @logsumexp(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>)
    -> (tensor<?xf32>, tensor<?x?xf32>) {
  %r = tgraph.logsumexp %x {dim = 1 : i64}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32>
  %k = tgraph.logsumexp %x {dim = 1 : i64, keepdims}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32>
  return %r, %k : tensor<?xf32>, tensor<?x?xf32>
}

// -----

// logsumexp_safe over dim 0 of [B, S] -> [S]; keepdims -> [1, S].
// CHECK-LABEL: func.func @logsumexp_safe(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[B, S]>>)
// CHECK-SAME:      -> (tensor<?xf32, #tgraph.dims<[S]>>, tensor<1x?xf32, #tgraph.dims<[1, S]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.logsumexp_safe %[[X]] {dim = 0 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, #tgraph.dims<[S]>>
// CHECK-NEXT:    %[[K:.+]] = tgraph.logsumexp_safe %[[X]] {dim = 0 : i64, keepdims} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<1x?xf32, #tgraph.dims<[1, S]>>
// CHECK-NEXT:    return %[[R]], %[[K]]
func.func @logsumexp_safe(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>)
    -> (tensor<?xf32>, tensor<?x?xf32>) {
  %r = tgraph.logsumexp_safe %x {dim = 0 : i64}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32>
  %k = tgraph.logsumexp_safe %x {dim = 0 : i64, keepdims}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32>
  return %r, %k : tensor<?xf32>, tensor<?x?xf32>
}

// -----

// Norms keep the input's shape: [B, S, 512] with scale and bias [512].
// CHECK-LABEL: func.func @layernorm(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>,
// CHECK-SAME:      %[[G:[^:]+]]: tensor<512xf32>,
// CHECK-SAME:      %[[BI:[^:]+]]: tensor<512xf32>)
// CHECK-SAME:      -> tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.layernorm %[[X]] scale %[[G]] bias %[[BI]] {axis = 2 : i64} : (tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>, tensor<512xf32>, tensor<512xf32>) -> tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>
// CHECK-NEXT:    return %[[R]]
func.func @layernorm(%x: tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>,
    %g: tensor<512xf32>, %b: tensor<512xf32>) -> tensor<?x?x?xf32> {
  %r = tgraph.layernorm %x scale %g bias %b {axis = 2 : i64}
      : (tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>, tensor<512xf32>,
         tensor<512xf32>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// rmsnorm over dims [2, 4) of [B, S, 8, 64] with scale [8, 64].
// CHECK-LABEL: func.func @rmsnorm(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x8x64xbf16, #tgraph.dims<[B, S, 8, 64]>>,
// CHECK-SAME:      %[[G:[^:]+]]: tensor<8x64xbf16>)
// CHECK-SAME:      -> tensor<?x?x8x64xbf16, #tgraph.dims<[B, S, 8, 64]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.rmsnorm %[[X]] scale %[[G]] {axis = 2 : i64} : (tensor<?x?x8x64xbf16, #tgraph.dims<[B, S, 8, 64]>>, tensor<8x64xbf16>) -> tensor<?x?x8x64xbf16, #tgraph.dims<[B, S, 8, 64]>>
// CHECK-NEXT:    return %[[R]]
func.func @rmsnorm(%x: tensor<?x?x8x64xbf16, #tgraph.dims<[B, S, 8, 64]>>,
    %g: tensor<8x64xbf16>) -> tensor<?x?x?x?xbf16> {
  %r = tgraph.rmsnorm %x scale %g {axis = 2 : i64}
      : (tensor<?x?x8x64xbf16, #tgraph.dims<[B, S, 8, 64]>>, tensor<8x64xbf16>)
      -> tensor<?x?x?x?xbf16>
  return %r : tensor<?x?x?x?xbf16>
}

// -----

// layernorm_safe without scale or bias: [B, D] -> [B, D].
// CHECK-LABEL: func.func @layernorm_safe(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?xf16, #tgraph.dims<[B, D]>>)
// CHECK-SAME:      -> tensor<?x?xf16, #tgraph.dims<[B, D]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.layernorm_safe %[[X]] {axis = 1 : i64} : (tensor<?x?xf16, #tgraph.dims<[B, D]>>) -> tensor<?x?xf16, #tgraph.dims<[B, D]>>
// CHECK-NEXT:    return %[[R]]
func.func @layernorm_safe(%x: tensor<?x?xf16, #tgraph.dims<[B, D]>>) -> tensor<?x?xf16> {
  %r = tgraph.layernorm_safe %x {axis = 1 : i64}
      : (tensor<?x?xf16, #tgraph.dims<[B, D]>>) -> tensor<?x?xf16>
  return %r : tensor<?x?xf16>
}

// -----

// rmsnorm_safe over dims [1, 3) of [B, S, D] with scale [S, D].
// CHECK-LABEL: func.func @rmsnorm_safe(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x?xf32, #tgraph.dims<[B, S, D]>>,
// CHECK-SAME:      %[[G:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[S, D]>>)
// CHECK-SAME:      -> tensor<?x?x?xf32, #tgraph.dims<[B, S, D]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.rmsnorm_safe %[[X]] scale %[[G]] {axis = 1 : i64} : (tensor<?x?x?xf32, #tgraph.dims<[B, S, D]>>, tensor<?x?xf32, #tgraph.dims<[S, D]>>) -> tensor<?x?x?xf32, #tgraph.dims<[B, S, D]>>
// CHECK-NEXT:    return %[[R]]
func.func @rmsnorm_safe(%x: tensor<?x?x?xf32, #tgraph.dims<[B, S, D]>>,
    %g: tensor<?x?xf32, #tgraph.dims<[S, D]>>) -> tensor<?x?x?xf32> {
  %r = tgraph.rmsnorm_safe %x scale %g {axis = 1 : i64}
      : (tensor<?x?x?xf32, #tgraph.dims<[B, S, D]>>,
         tensor<?x?xf32, #tgraph.dims<[S, D]>>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// cross_entropy: mean and sum give a scalar (no dims to refine); none gives
// the per-example shape, the logits without the class dim, for class-index
// labels ([B, S, V] with [B, S] -> [B, S]) and soft labels ([B, V] with
// [B, V] -> [B]).
// CHECK-LABEL: func.func @cross_entropy(
// CHECK-SAME:      %[[L:[^:]+]]: tensor<?x10xf32, #tgraph.dims<[B, 10]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?xi64, #tgraph.dims<[B]>>,
// CHECK-SAME:      %[[L3:[^:]+]]: tensor<?x?x?xf32, #tgraph.dims<[B, S, V]>>,
// CHECK-SAME:      %[[Y3:[^:]+]]: tensor<?x?xi32, #tgraph.dims<[B, S]>>,
// CHECK-SAME:      %[[P:[^:]+]]: tensor<?x10xf32, #tgraph.dims<[B, 10]>>)
// CHECK-SAME:      -> (tensor<f32>, tensor<f32>, tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?xf32, #tgraph.dims<[B]>>)
// CHECK-NEXT:    %[[MEAN:.+]] = tgraph.cross_entropy %[[L]], %[[Y]] : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>, tensor<?xi64, #tgraph.dims<[B]>>) -> tensor<f32>
// CHECK-NEXT:    %[[SUM:.+]] = tgraph.cross_entropy %[[L3]], %[[Y3]] {reduction = #tgraph<loss_reduction sum>} : (tensor<?x?x?xf32, #tgraph.dims<[B, S, V]>>, tensor<?x?xi32, #tgraph.dims<[B, S]>>) -> tensor<f32>
// CHECK-NEXT:    %[[NONE:.+]] = tgraph.cross_entropy %[[L3]], %[[Y3]] {reduction = #tgraph<loss_reduction none>} : (tensor<?x?x?xf32, #tgraph.dims<[B, S, V]>>, tensor<?x?xi32, #tgraph.dims<[B, S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK-NEXT:    %[[SOFT:.+]] = tgraph.cross_entropy %[[L]], %[[P]] {reduction = #tgraph<loss_reduction none>} : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>, tensor<?x10xf32, #tgraph.dims<[B, 10]>>) -> tensor<?xf32, #tgraph.dims<[B]>>
// CHECK-NEXT:    return %[[MEAN]], %[[SUM]], %[[NONE]], %[[SOFT]]
func.func @cross_entropy(%logits: tensor<?x10xf32, #tgraph.dims<[B, 10]>>,
    %labels: tensor<?xi64, #tgraph.dims<[B]>>,
    %logits3: tensor<?x?x?xf32, #tgraph.dims<[B, S, V]>>,
    %labels3: tensor<?x?xi32, #tgraph.dims<[B, S]>>,
    %probs: tensor<?x10xf32, #tgraph.dims<[B, 10]>>)
    -> (tensor<f32>, tensor<f32>, tensor<?x?xf32>, tensor<?xf32>) {
  %mean = tgraph.cross_entropy %logits, %labels
      : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>, tensor<?xi64, #tgraph.dims<[B]>>)
      -> tensor<f32>
  %sum = tgraph.cross_entropy %logits3, %labels3 {reduction = #tgraph<loss_reduction sum>}
      : (tensor<?x?x?xf32, #tgraph.dims<[B, S, V]>>, tensor<?x?xi32, #tgraph.dims<[B, S]>>)
      -> tensor<f32>
  %none = tgraph.cross_entropy %logits3, %labels3 {reduction = #tgraph<loss_reduction none>}
      : (tensor<?x?x?xf32, #tgraph.dims<[B, S, V]>>, tensor<?x?xi32, #tgraph.dims<[B, S]>>)
      -> tensor<?x?xf32>
  %soft = tgraph.cross_entropy %logits, %probs {reduction = #tgraph<loss_reduction none>}
      : (tensor<?x10xf32, #tgraph.dims<[B, 10]>>, tensor<?x10xf32, #tgraph.dims<[B, 10]>>)
      -> tensor<?xf32>
  return %mean, %sum, %none, %soft : tensor<f32>, tensor<f32>, tensor<?x?xf32>, tensor<?xf32>
}

//===----------------------------------------------------------------------===//
// Layout: transpose, reshape, broadcast_in_dim, slice, dynamic_slice,
// concat, pad
//===----------------------------------------------------------------------===//

// -----

// Result dim i is operand dim permutation[i]: [B, S, 64] by (2, 0, 1) ->
// [64, B, S].
// CHECK-LABEL: func.func @transpose(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>)
// CHECK-SAME:      -> tensor<64x?x?xf32, #tgraph.dims<[64, B, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 2, 0, 1>} : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<64x?x?xf32, #tgraph.dims<[64, B, S]>>
// CHECK-NEXT:    return %[[R]]
func.func @transpose(%x: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>) -> tensor<?x?x?xf32> {
  %r = tgraph.transpose %x {permutation = array<i64: 2, 0, 1>}
      : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// The one `?` of the target is solved from the element count:
//   [B, S, 512] -> [B, S, 8, ?]: ? = 512*B*S / (8*B*S) = 64
//   [B, S, 8, 64] -> [?, 512]:   ? = 512*B*S / 512 = B*S
// CHECK-LABEL: func.func @reshape(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>)
// CHECK-SAME:      -> tensor<?x512xf32, #tgraph.dims<["B*S", 512]>>
// CHECK-NEXT:    %[[H:.+]] = tgraph.reshape %[[X]] : tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>> -> tensor<?x?x8x64xf32, #tgraph.dims<[B, S, 8, 64]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.reshape %[[H]] : tensor<?x?x8x64xf32, #tgraph.dims<[B, S, 8, 64]>> -> tensor<?x512xf32, #tgraph.dims<["B*S", 512]>>
// CHECK-NEXT:    return %[[R]]
func.func @reshape(%x: tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>) -> tensor<?x512xf32> {
  %h = tgraph.reshape %x : tensor<?x?x512xf32, #tgraph.dims<[B, S, 512]>>
      -> tensor<?x?x8x?xf32, #tgraph.dims<[B, S, 8, ?]>>
  %r = tgraph.reshape %h : tensor<?x?x8x?xf32, #tgraph.dims<[B, S, 8, ?]>>
      -> tensor<?x512xf32>
  return %r : tensor<?x512xf32>
}

// -----

// Operand dim i maps to result dim broadcast_dimensions[i] and must be 1
// or equal to it. Here the operand is the `?` result of a transpose,
// refined to [1, S] first; its 1 expands to B and S meets S:
// [1, S] by (0, 2) -> [B, 4, S] with no run-time check.
// (The result of broadcast_in_dim itself is not written with `?` dims: a
// `?` result dim that an operand dim determines currently makes the pass
// fail with "cannot check an unknown dim at run time".)
// CHECK-LABEL: func.func @broadcast_in_dim(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x1xf32, #tgraph.dims<[S, 1]>>)
// CHECK-SAME:      -> tensor<?x4x?xf32, #tgraph.dims<[B, 4, S]>>
// CHECK-NEXT:    %[[T:.+]] = tgraph.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<?x1xf32, #tgraph.dims<[S, 1]>> -> tensor<1x?xf32, #tgraph.dims<[1, S]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.broadcast_in_dim %[[T]] {broadcast_dimensions = array<i64: 0, 2>} : tensor<1x?xf32, #tgraph.dims<[1, S]>> -> tensor<?x4x?xf32, #tgraph.dims<[B, 4, S]>>
// CHECK-NEXT:    return %[[R]]
func.func @broadcast_in_dim(%x: tensor<?x1xf32, #tgraph.dims<[S, 1]>>)
    -> tensor<?x4x?xf32, #tgraph.dims<[B, 4, S]>> {
  %t = tgraph.transpose %x {permutation = array<i64: 1, 0>}
      : tensor<?x1xf32, #tgraph.dims<[S, 1]>> -> tensor<?x?xf32>
  %r = tgraph.broadcast_in_dim %t {broadcast_dimensions = array<i64: 0, 2>}
      : tensor<?x?xf32> -> tensor<?x4x?xf32, #tgraph.dims<[B, 4, S]>>
  return %r : tensor<?x4x?xf32, #tgraph.dims<[B, 4, S]>>
}

// -----

// Per dim, ceil((limit - start) / stride) = (limit - start + stride - 1) / stride:
//   [B, S, 64], start (0, 0, 8), limit (B, S, 64), stride (1, 2, 3)
//     -> [B, (S+1)/2, 58/3 = 19]
//   [B, S], start (1, S/2), limit (B, S-1), stride (2, 1)
//     -> [(B-1+1)/2 = B/2, S-1-S/2 = S-S/2-1]
// The second slice's bounds hold only for some sizes (not for an empty B,
// nor for S = 0), so they are checked at run time.
// CHECK-LABEL: func.func @slice(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[B, S]>>)
// CHECK-SAME:      -> (tensor<?x?x19xf32, #tgraph.dims<[B, "(S+1)/2", 19]>>, tensor<?x?xf32, #tgraph.dims<["B/2", "S-S/2-1"]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.slice %[[X]] {limit = #tgraph.dims<[B, S, 64]>, start = #tgraph.dims<[0, 0, 8]>, stride = array<i64: 1, 2, 3>} : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?x19xf32, #tgraph.dims<[B, "(S+1)/2", 19]>>
// CHECK:         tgraph.assert_dim le %{{.+}}, %{{.+}}, "'tgraph.slice' op at {{.*}}: slice of dim 0: its start (1) must be at most its limit (B)"
// CHECK:         tgraph.assert_dim le %{{.+}}, %{{.+}}, "'tgraph.slice' op at {{.*}}: slice of dim 1: its start (S/2) must be at most its limit (S-1)"
// CHECK-NEXT:    %[[R2:.+]] = tgraph.slice %[[Y]] {limit = #tgraph.dims<[B, "S-1"]>, start = #tgraph.dims<[1, "S/2"]>, stride = array<i64: 2, 1>} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<["B/2", "S-S/2-1"]>>
// CHECK-NEXT:    return %[[R]], %[[R2]]
func.func @slice(%x: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>,
                 %y: tensor<?x?xf32, #tgraph.dims<[B, S]>>)
    -> (tensor<?x?x?xf32>, tensor<?x?xf32>) {
  %r = tgraph.slice %x {start = #tgraph.dims<[0, 0, 8]>,
      limit = #tgraph.dims<[B, S, 64]>, stride = array<i64: 1, 2, 3>}
      : tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>> -> tensor<?x?x?xf32>
  %r2 = tgraph.slice %y {start = #tgraph.dims<[1, "S/2"]>,
      limit = #tgraph.dims<[B, "S-1"]>, stride = array<i64: 2, 1>}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32>
  return %r, %r2 : tensor<?x?x?xf32>, tensor<?x?xf32>
}

// -----

// The result has the `sizes` attribute's shape: [1, S/2, 32].
// CHECK-LABEL: func.func @dynamic_slice(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>,
// CHECK-SAME:      %[[I:[^:]+]]: tensor<i64>,
// CHECK-SAME:      %[[J:[^:]+]]: tensor<i32>)
// CHECK-SAME:      -> tensor<1x?x32xf32, #tgraph.dims<[1, "S/2", 32]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.dynamic_slice %[[X]][%[[I]], %[[J]], %[[I]]] {sizes = #tgraph.dims<[1, "S/2", 32]>} : (tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>, tensor<i64>, tensor<i32>, tensor<i64>) -> tensor<1x?x32xf32, #tgraph.dims<[1, "S/2", 32]>>
// CHECK-NEXT:    return %[[R]]
func.func @dynamic_slice(%x: tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>,
    %i: tensor<i64>, %j: tensor<i32>) -> tensor<?x?x?xf32> {
  %r = tgraph.dynamic_slice %x[%i, %j, %i] {sizes = #tgraph.dims<[1, "S/2", 32]>}
      : (tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>, tensor<i64>, tensor<i32>,
         tensor<i64>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// The concatenated dim is the sum: N + M = M+N; S + 1 + 2*S = 3*S+1.
// CHECK-LABEL: func.func @concat(
// CHECK-SAME:      %[[A:[^:]+]]: tensor<?x4xf32, #tgraph.dims<[N, 4]>>,
// CHECK-SAME:      %[[B:[^:]+]]: tensor<?x4xf32, #tgraph.dims<[M, 4]>>,
// CHECK-SAME:      %[[C:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[B, S]>>,
// CHECK-SAME:      %[[D:[^:]+]]: tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
// CHECK-SAME:      %[[E:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>)
// CHECK-SAME:      -> (tensor<?x4xf32, #tgraph.dims<["M+N", 4]>>, tensor<?x?xf32, #tgraph.dims<[B, "3*S+1"]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.concat %[[A]], %[[B]] {dim = 0 : i64} : (tensor<?x4xf32, #tgraph.dims<[N, 4]>>, tensor<?x4xf32, #tgraph.dims<[M, 4]>>) -> tensor<?x4xf32, #tgraph.dims<["M+N", 4]>>
// CHECK-NEXT:    %[[R2:.+]] = tgraph.concat %[[C]], %[[D]], %[[E]] {dim = 1 : i64} : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?x1xf32, #tgraph.dims<[B, 1]>>, tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>) -> tensor<?x?xf32, #tgraph.dims<[B, "3*S+1"]>>
// CHECK-NEXT:    return %[[R]], %[[R2]]
func.func @concat(%a: tensor<?x4xf32, #tgraph.dims<[N, 4]>>,
                  %b: tensor<?x4xf32, #tgraph.dims<[M, 4]>>,
                  %c: tensor<?x?xf32, #tgraph.dims<[B, S]>>,
                  %d: tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
                  %e: tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %r = tgraph.concat %a, %b {dim = 0 : i64}
      : (tensor<?x4xf32, #tgraph.dims<[N, 4]>>, tensor<?x4xf32, #tgraph.dims<[M, 4]>>)
      -> tensor<?x?xf32>
  %r2 = tgraph.concat %c, %d, %e {dim = 1 : i64}
      : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?x1xf32, #tgraph.dims<[B, 1]>>,
         tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>) -> tensor<?x?xf32>
  return %r, %r2 : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// Per dim n + low + high + (n - 1) * interior:
//   B + 0 + 2 + 0 = B+2;  S + 1 + 0 + (S-1)*1 = 2*S;  5 + 1 - 1 + 4*2 = 13.
// CHECK-LABEL: func.func @pad(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x5xf32, #tgraph.dims<[B, S, 5]>>)
// CHECK-SAME:      -> tensor<?x?x13xf32, #tgraph.dims<["B+2", "2*S", 13]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.pad %[[X]] {high = array<i64: 2, 0, -1>, interior = array<i64: 0, 1, 2>, low = array<i64: 0, 1, 1>, value = 0.000000e+00 : f32} : tensor<?x?x5xf32, #tgraph.dims<[B, S, 5]>> -> tensor<?x?x13xf32, #tgraph.dims<["B+2", "2*S", 13]>>
// CHECK-NEXT:    return %[[R]]
func.func @pad(%x: tensor<?x?x5xf32, #tgraph.dims<[B, S, 5]>>) -> tensor<?x?x?xf32> {
  %r = tgraph.pad %x {low = array<i64: 0, 1, 1>, high = array<i64: 2, 0, -1>,
      interior = array<i64: 0, 1, 2>, value = 0.0 : f32}
      : tensor<?x?x5xf32, #tgraph.dims<[B, S, 5]>> -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

//===----------------------------------------------------------------------===//
// Indexing: gather, scatter_add, embedding, one_hot
//===----------------------------------------------------------------------===//

// -----

// take(x, indices, axis=1): [B, V, D] with indices [N, K] -> [B, N, K, D].
// CHECK-LABEL: func.func @gather(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x?xf32, #tgraph.dims<[B, V, D]>>,
// CHECK-SAME:      %[[I:[^:]+]]: tensor<?x?xi32, #tgraph.dims<[N, K]>>)
// CHECK-SAME:      -> tensor<?x?x?x?xf32, #tgraph.dims<[B, N, K, D]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.gather %[[X]], %[[I]] {dim = 1 : i64} : (tensor<?x?x?xf32, #tgraph.dims<[B, V, D]>>, tensor<?x?xi32, #tgraph.dims<[N, K]>>) -> tensor<?x?x?x?xf32, #tgraph.dims<[B, N, K, D]>>
// CHECK-NEXT:    return %[[R]]
func.func @gather(%x: tensor<?x?x?xf32, #tgraph.dims<[B, V, D]>>,
                  %i: tensor<?x?xi32, #tgraph.dims<[N, K]>>) -> tensor<?x?x?x?xf32> {
  %r = tgraph.gather %x, %i {dim = 1 : i64}
      : (tensor<?x?x?xf32, #tgraph.dims<[B, V, D]>>, tensor<?x?xi32, #tgraph.dims<[N, K]>>)
      -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

// -----

// scatter_add returns the operand's shape: [B, V, D] (updates [B, N, D]).
// CHECK-LABEL: func.func @scatter_add(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x?xf32, #tgraph.dims<[B, V, D]>>,
// CHECK-SAME:      %[[I:[^:]+]]: tensor<?xi64, #tgraph.dims<[N]>>,
// CHECK-SAME:      %[[U:[^:]+]]: tensor<?x?x?xf32, #tgraph.dims<[B, N, D]>>)
// CHECK-SAME:      -> tensor<?x?x?xf32, #tgraph.dims<[B, V, D]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.scatter_add %[[X]], %[[I]], %[[U]] {dim = 1 : i64} : (tensor<?x?x?xf32, #tgraph.dims<[B, V, D]>>, tensor<?xi64, #tgraph.dims<[N]>>, tensor<?x?x?xf32, #tgraph.dims<[B, N, D]>>) -> tensor<?x?x?xf32, #tgraph.dims<[B, V, D]>>
// CHECK-NEXT:    return %[[R]]
func.func @scatter_add(%x: tensor<?x?x?xf32, #tgraph.dims<[B, V, D]>>,
                       %i: tensor<?xi64, #tgraph.dims<[N]>>,
                       %u: tensor<?x?x?xf32, #tgraph.dims<[B, N, D]>>) -> tensor<?x?x?xf32> {
  %r = tgraph.scatter_add %x, %i, %u {dim = 1 : i64}
      : (tensor<?x?x?xf32, #tgraph.dims<[B, V, D]>>, tensor<?xi64, #tgraph.dims<[N]>>,
         tensor<?x?x?xf32, #tgraph.dims<[B, N, D]>>) -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

// -----

// table [V, D] (or [32000, 512]) with ids [B, S] -> [B, S, D] ([B, S, 512]).
// CHECK-LABEL: func.func @embedding(
// CHECK-SAME:      %[[T:[^:]+]]: tensor<?x?xbf16, #tgraph.dims<[V, D]>>,
// CHECK-SAME:      %[[T2:[^:]+]]: tensor<32000x512xbf16>,
// CHECK-SAME:      %[[I:[^:]+]]: tensor<?x?xi32, #tgraph.dims<[B, S]>>)
// CHECK-SAME:      -> (tensor<?x?x?xbf16, #tgraph.dims<[B, S, D]>>, tensor<?x?x512xbf16, #tgraph.dims<[B, S, 512]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.embedding %[[T]], %[[I]] : (tensor<?x?xbf16, #tgraph.dims<[V, D]>>, tensor<?x?xi32, #tgraph.dims<[B, S]>>) -> tensor<?x?x?xbf16, #tgraph.dims<[B, S, D]>>
// CHECK-NEXT:    %[[R2:.+]] = tgraph.embedding %[[T2]], %[[I]] : (tensor<32000x512xbf16>, tensor<?x?xi32, #tgraph.dims<[B, S]>>) -> tensor<?x?x512xbf16, #tgraph.dims<[B, S, 512]>>
// CHECK-NEXT:    return %[[R]], %[[R2]]
func.func @embedding(%t: tensor<?x?xbf16, #tgraph.dims<[V, D]>>,
                     %t2: tensor<32000x512xbf16>,
                     %i: tensor<?x?xi32, #tgraph.dims<[B, S]>>)
    -> (tensor<?x?x?xbf16>, tensor<?x?x?xbf16>) {
  %r = tgraph.embedding %t, %i
      : (tensor<?x?xbf16, #tgraph.dims<[V, D]>>, tensor<?x?xi32, #tgraph.dims<[B, S]>>)
      -> tensor<?x?x?xbf16>
  %r2 = tgraph.embedding %t2, %i
      : (tensor<32000x512xbf16>, tensor<?x?xi32, #tgraph.dims<[B, S]>>)
      -> tensor<?x?x?xbf16>
  return %r, %r2 : tensor<?x?x?xbf16>, tensor<?x?x?xbf16>
}

// -----

// ids [B, S] -> [B, S, num_classes = 10], declared element type f32.
// CHECK-LABEL: func.func @one_hot(
// CHECK-SAME:      %[[I:[^:]+]]: tensor<?x?xi64, #tgraph.dims<[B, S]>>)
// CHECK-SAME:      -> tensor<?x?x10xf32, #tgraph.dims<[B, S, 10]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.one_hot %[[I]] {num_classes = 10 : i64} : tensor<?x?xi64, #tgraph.dims<[B, S]>> -> tensor<?x?x10xf32, #tgraph.dims<[B, S, 10]>>
// CHECK-NEXT:    return %[[R]]
func.func @one_hot(%i: tensor<?x?xi64, #tgraph.dims<[B, S]>>) -> tensor<?x?x?xf32> {
  %r = tgraph.one_hot %i {num_classes = 10 : i64}
      : tensor<?x?xi64, #tgraph.dims<[B, S]>> -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// -----

// all_reduce and permute keep the operand's type.
// CHECK-LABEL: func.func @all_reduce_permute(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x512xf32, #tgraph.dims<[B, 512]>>)
// CHECK-SAME:      -> (tensor<?x512xf32, #tgraph.dims<[B, 512]>>, tensor<?x512xf32, #tgraph.dims<[B, 512]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.all_reduce %[[X]] {axis_name = "data", group_size = 8 : i64, reduction = #tgraph<reduction sum>} : tensor<?x512xf32, #tgraph.dims<[B, 512]>>
// CHECK-NEXT:    %[[P:.+]] = tgraph.permute %[[R]] {axis_name = "pipe", pairs = [array<i64: 0, 1>, array<i64: 1, 0>]} : tensor<?x512xf32, #tgraph.dims<[B, 512]>>
// CHECK-NEXT:    return %[[R]], %[[P]]
func.func @all_reduce_permute(%x: tensor<?x512xf32, #tgraph.dims<[B, 512]>>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %r = tgraph.all_reduce %x {reduction = #tgraph<reduction sum>, axis_name = "data",
      group_size = 8 : i64} : tensor<?x512xf32, #tgraph.dims<[B, 512]>> -> tensor<?x?xf32>
  %p = tgraph.permute %r {pairs = [array<i64: 0, 1>, array<i64: 1, 0>], axis_name = "pipe"}
      : tensor<?x?xf32>
  return %r, %p : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// all_gather multiplies the gathered dim by group_size: [S, 64] on dim 0
// over 4 devices -> [4*S, 64].
// CHECK-LABEL: func.func @all_gather(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[S, 64]>>)
// CHECK-SAME:      -> tensor<?x64xf32, #tgraph.dims<["4*S", 64]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.all_gather %[[X]] {axis_name = "model", dim = 0 : i64, group_size = 4 : i64} : tensor<?x64xf32, #tgraph.dims<[S, 64]>> -> tensor<?x64xf32, #tgraph.dims<["4*S", 64]>>
// CHECK-NEXT:    return %[[R]]
func.func @all_gather(%x: tensor<?x64xf32, #tgraph.dims<[S, 64]>>) -> tensor<?x?xf32> {
  %r = tgraph.all_gather %x {dim = 0 : i64, axis_name = "model", group_size = 4 : i64}
      : tensor<?x64xf32, #tgraph.dims<[S, 64]>> -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// reduce_scatter divides the scattered dim by group_size:
//   [4*S, 64] on dim 0 over 4 -> [S, 64];  [B, 512] on dim 1 over 8 -> [B, 64].
// CHECK-LABEL: func.func @reduce_scatter(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<["4*S", 64]>>,
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?x512xf32, #tgraph.dims<[B, 512]>>)
// CHECK-SAME:      -> (tensor<?x64xf32, #tgraph.dims<[S, 64]>>, tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-NEXT:    %[[R:.+]] = tgraph.reduce_scatter %[[X]] {axis_name = "data", dim = 0 : i64, group_size = 4 : i64, reduction = #tgraph<reduction sum>} : tensor<?x64xf32, #tgraph.dims<["4*S", 64]>> -> tensor<?x64xf32, #tgraph.dims<[S, 64]>>
// CHECK-NEXT:    %[[R2:.+]] = tgraph.reduce_scatter %[[Y]] {axis_name = "data", dim = 1 : i64, group_size = 8 : i64, reduction = #tgraph<reduction mean>} : tensor<?x512xf32, #tgraph.dims<[B, 512]>> -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK-NEXT:    return %[[R]], %[[R2]]
func.func @reduce_scatter(%x: tensor<?x64xf32, #tgraph.dims<["4*S", 64]>>,
                          %y: tensor<?x512xf32, #tgraph.dims<[B, 512]>>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %r = tgraph.reduce_scatter %x {reduction = #tgraph<reduction sum>, dim = 0 : i64,
      axis_name = "data", group_size = 4 : i64}
      : tensor<?x64xf32, #tgraph.dims<["4*S", 64]>> -> tensor<?x?xf32>
  %r2 = tgraph.reduce_scatter %y {reduction = #tgraph<reduction mean>, dim = 1 : i64,
      axis_name = "data", group_size = 8 : i64}
      : tensor<?x512xf32, #tgraph.dims<[B, 512]>> -> tensor<?x?xf32>
  return %r, %r2 : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// all_to_all divides split_dim and multiplies concat_dim by group_size:
// [B, 4*S, 16], split 1, concat 2, over 4 -> [B, S, 64].
// CHECK-LABEL: func.func @all_to_all(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?x16xf32, #tgraph.dims<[B, "4*S", 16]>>)
// CHECK-SAME:      -> tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.all_to_all %[[X]] {axis_name = "expert", concat_dim = 2 : i64, group_size = 4 : i64, split_dim = 1 : i64} : tensor<?x?x16xf32, #tgraph.dims<[B, "4*S", 16]>> -> tensor<?x?x64xf32, #tgraph.dims<[B, S, 64]>>
// CHECK-NEXT:    return %[[R]]
func.func @all_to_all(%x: tensor<?x?x16xf32, #tgraph.dims<[B, "4*S", 16]>>) -> tensor<?x?x?xf32> {
  %r = tgraph.all_to_all %x {split_dim = 1 : i64, concat_dim = 2 : i64,
      axis_name = "expert", group_size = 4 : i64}
      : tensor<?x?x16xf32, #tgraph.dims<[B, "4*S", 16]>> -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

// -----

// cond joins the branch types: equal dims stay, different dims become `?`.
//   then [B, 64] (an add refined inside the region) / else [B, 64] -> [B, 64]
//   then [S, 64] / else [T, 64] -> [?, 64] (no symbol left: no encoding)
//   then [B, 64] / else [B, 2*S] -> [B, ?]
// CHECK-LABEL: func.func @cond(
// CHECK-SAME:      %[[P:[^:]+]]: tensor<i1>,
// CHECK-SAME:      %[[A:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
// CHECK-SAME:      %[[S:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[S, 64]>>,
// CHECK-SAME:      %[[T:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[T, 64]>>,
// CHECK-SAME:      %[[C:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>)
// CHECK-SAME:      -> (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x64xf32>, tensor<?x?xf32, #tgraph.dims<[B, ?]>>)
// CHECK-NEXT:    %[[R:[^:]+]]:3 = tgraph.cond %[[P]] -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x64xf32>, tensor<?x?xf32, #tgraph.dims<[B, ?]>> {
// CHECK-NEXT:      %[[N:.+]] = tgraph.add %[[A]], %[[A]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK-NEXT:      tgraph.yield %[[N]], %[[S]], %[[A]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x64xf32, #tgraph.dims<[S, 64]>>, tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      tgraph.yield %[[A]], %[[T]], %[[C]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x64xf32, #tgraph.dims<[T, 64]>>, tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x64xf32>, tensor<?x?xf32, #tgraph.dims<[B, ?]>>
func.func @cond(%p: tensor<i1>, %a: tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
                %s: tensor<?x64xf32, #tgraph.dims<[S, 64]>>,
                %t: tensor<?x64xf32, #tgraph.dims<[T, 64]>>,
                %c: tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>)
    -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %r:3 = tgraph.cond %p -> tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> {
    %n = tgraph.add %a, %a : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
        tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32>
    tgraph.yield %n, %s, %a : tensor<?x?xf32>, tensor<?x64xf32, #tgraph.dims<[S, 64]>>,
        tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  } else {
    tgraph.yield %a, %t, %c : tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
        tensor<?x64xf32, #tgraph.dims<[T, 64]>>, tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>
  }
  return %r#0, %r#1, %r#2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// while results have the carried types: [B, 64] and a 0-d counter; the
// body's `?` result is refined to the carry type.
// CHECK-LABEL: func.func @while(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
// CHECK-SAME:      %[[N:[^:]+]]: tensor<i64>)
// CHECK-SAME:      -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK-NEXT:    %[[R:[^:]+]]:2 = tgraph.while(%[[X]], %[[N]]) : tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<i64> -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<i64> attributes {trip_count = 4 : i64} cond {
// CHECK-NEXT:    ^bb0(%[[H1:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>, %[[I1:[^:]+]]: tensor<i64>):
// CHECK-NEXT:      %[[C:.+]] = tgraph.compare lt, %[[I1]], %[[N]] : (tensor<i64>, tensor<i64>) -> tensor<i1>
// CHECK-NEXT:      tgraph.yield %[[C]] : tensor<i1>
// CHECK-NEXT:    } do {
// CHECK-NEXT:    ^bb0(%[[H:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>, %[[I:[^:]+]]: tensor<i64>):
// CHECK-NEXT:      %[[Y:.+]] = tgraph.mul %[[H]], %[[H]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK-NEXT:      %[[J:.+]] = tgraph.add %[[I]], %[[I]] : tensor<i64>
// CHECK-NEXT:      tgraph.yield %[[Y]], %[[J]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<i64>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]#0 : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
func.func @while(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>, %n: tensor<i64>)
    -> tensor<?x?xf32> {
  %r:2 = tgraph.while (%x, %n) : tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<i64>
      -> tensor<?x?xf32>, tensor<i64> attributes {trip_count = 4 : i64} cond {
  ^bb0(%h: tensor<?x64xf32, #tgraph.dims<[B, 64]>>, %i: tensor<i64>):
    %c = tgraph.compare lt, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>
    tgraph.yield %c : tensor<i1>
  } do {
  ^bb0(%h: tensor<?x64xf32, #tgraph.dims<[B, 64]>>, %i: tensor<i64>):
    %y = tgraph.mul %h, %h : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
        tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32>
    %j = tgraph.add %i, %i : tensor<i64>
    tgraph.yield %y, %j : tensor<?x?xf32>, tensor<i64>
  }
  return %r#0 : tensor<?x?xf32>
}

// -----

// scan over xs [T, B, 64]: the slice argument `?x?` becomes [B, 64]; results
// are the final carry [B, 64], then the outputs stacked under a leading dim
// of the scan length T: [T, B, 64] and [T, B].
// CHECK-LABEL: func.func @scan(
// CHECK-SAME:      %[[H0:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
// CHECK-SAME:      %[[XS:[^:]+]]: tensor<?x?x64xf32, #tgraph.dims<[T, B, 64]>>)
// CHECK-SAME:      -> (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x?x64xf32, #tgraph.dims<[T, B, 64]>>, tensor<?x?xf32, #tgraph.dims<[T, B]>>)
// CHECK-NEXT:    %[[R:[^:]+]]:3 = tgraph.scan init(%[[H0]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>) over(%[[XS]] : tensor<?x?x64xf32, #tgraph.dims<[T, B, 64]>>) -> (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x?x64xf32, #tgraph.dims<[T, B, 64]>>, tensor<?x?xf32, #tgraph.dims<[T, B]>>) {
// CHECK-NEXT:    ^bb0(%[[H:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>, %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>):
// CHECK-NEXT:      %[[N:.+]] = tgraph.add %[[H]], %[[X]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK-NEXT:      %[[M:.+]] = tgraph.reduce_sum %[[N]] {dims = array<i64: 1>} : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?xf32, #tgraph.dims<[B]>>
// CHECK-NEXT:      tgraph.yield %[[N]], %[[N]], %[[M]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?xf32, #tgraph.dims<[B]>>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @scan(%h0: tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
                %xs: tensor<?x?x64xf32, #tgraph.dims<[T, B, 64]>>)
    -> (tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>) {
  %r:3 = tgraph.scan init(%h0 : tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
      over(%xs : tensor<?x?x64xf32, #tgraph.dims<[T, B, 64]>>)
      -> (tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>) {
  ^bb0(%h: tensor<?x64xf32, #tgraph.dims<[B, 64]>>, %x: tensor<?x?xf32>):
    %n = tgraph.add %h, %x : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x?xf32>)
        -> tensor<?x?xf32>
    %m = tgraph.reduce_sum %n {dims = array<i64: 1>} : tensor<?x?xf32> -> tensor<?xf32>
    tgraph.yield %n, %n, %m : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32>
  }
  return %r#0, %r#1, %r#2 : tensor<?x?xf32>, tensor<?x?x?xf32>, tensor<?x?xf32>
}

// -----

// A scan with no xs stacks its outputs under `length`: [B, 64] -> [3, B, 64].
// CHECK-LABEL: func.func @scan_length(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<3x?x64xf32, #tgraph.dims<[3, B, 64]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.scan init() over() -> (tensor<3x?x64xf32, #tgraph.dims<[3, B, 64]>>) attributes {length = 3 : i64, reverse} {
// CHECK-NEXT:      tgraph.yield %[[X]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]
func.func @scan_length(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?x?xf32> {
  %r = tgraph.scan init() over() -> (tensor<?x?x?xf32>) attributes {length = 3 : i64, reverse} {
    tgraph.yield %x : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  }
  return %r : tensor<?x?x?xf32>
}

// -----

// fixed_point: the body's arguments take the init and param types ([N],
// [N, N]); the result has the type of x.
// CHECK-LABEL: func.func @fixed_point(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?xf64, #tgraph.dims<[N]>>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<?x?xf64, #tgraph.dims<[N, N]>>)
// CHECK-SAME:      -> tensor<?xf64, #tgraph.dims<[N]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.fixed_point %[[X]] params(%[[W]] : tensor<?x?xf64, #tgraph.dims<[N, N]>>) : tensor<?xf64, #tgraph.dims<[N]>> -> tensor<?xf64, #tgraph.dims<[N]>> {
// CHECK-NEXT:    ^bb0(%[[Z:[^:]+]]: tensor<?xf64, #tgraph.dims<[N]>>, %[[WA:[^:]+]]: tensor<?x?xf64, #tgraph.dims<[N, N]>>):
// CHECK-NEXT:      %[[P:.+]] = tgraph.mul %[[WA]], %[[Z]] : (tensor<?x?xf64, #tgraph.dims<[N, N]>>, tensor<?xf64, #tgraph.dims<[N]>>) -> tensor<?x?xf64, #tgraph.dims<[N, N]>>
// CHECK-NEXT:      %[[S:.+]] = tgraph.reduce_sum %[[P]] {dims = array<i64: 1>} : tensor<?x?xf64, #tgraph.dims<[N, N]>> -> tensor<?xf64, #tgraph.dims<[N]>>
// CHECK-NEXT:      %[[T:.+]] = tgraph.tanh %[[S]] : tensor<?xf64, #tgraph.dims<[N]>>
// CHECK-NEXT:      tgraph.yield %[[T]] : tensor<?xf64, #tgraph.dims<[N]>>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]
func.func @fixed_point(%x: tensor<?xf64, #tgraph.dims<[N]>>,
                       %w: tensor<?x?xf64, #tgraph.dims<[N, N]>>) -> tensor<?xf64> {
  %r = tgraph.fixed_point %x params(%w : tensor<?x?xf64, #tgraph.dims<[N, N]>>)
      : tensor<?xf64, #tgraph.dims<[N]>> -> tensor<?xf64> {
  ^bb0(%z: tensor<?xf64>, %wa: tensor<?x?xf64>):
    %p = tgraph.mul %wa, %z : (tensor<?x?xf64>, tensor<?xf64>) -> tensor<?x?xf64>
    %s = tgraph.reduce_sum %p {dims = array<i64: 1>} : tensor<?x?xf64> -> tensor<?xf64>
    %t = tgraph.tanh %s : tensor<?xf64>
    tgraph.yield %t : tensor<?xf64>
  }
  return %r : tensor<?xf64>
}

// -----

// solve: x [B, 4], param [4]; the residual x*x - a is [B, 4] and the result
// has the type of x.
// CHECK-LABEL: func.func @solve(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x4xf64, #tgraph.dims<[B, 4]>>,
// CHECK-SAME:      %[[A:[^:]+]]: tensor<4xf64>)
// CHECK-SAME:      -> tensor<?x4xf64, #tgraph.dims<[B, 4]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.solve %[[X]] params(%[[A]] : tensor<4xf64>) : tensor<?x4xf64, #tgraph.dims<[B, 4]>> -> tensor<?x4xf64, #tgraph.dims<[B, 4]>> {
// CHECK-NEXT:    ^bb0(%[[Z:[^:]+]]: tensor<?x4xf64, #tgraph.dims<[B, 4]>>, %[[P:[^:]+]]: tensor<4xf64>):
// CHECK-NEXT:      %[[SQ:.+]] = tgraph.mul %[[Z]], %[[Z]] : tensor<?x4xf64, #tgraph.dims<[B, 4]>>
// CHECK-NEXT:      %[[RES:.+]] = tgraph.sub %[[SQ]], %[[P]] : (tensor<?x4xf64, #tgraph.dims<[B, 4]>>, tensor<4xf64>) -> tensor<?x4xf64, #tgraph.dims<[B, 4]>>
// CHECK-NEXT:      tgraph.yield %[[RES]] : tensor<?x4xf64, #tgraph.dims<[B, 4]>>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]
func.func @solve(%x: tensor<?x4xf64, #tgraph.dims<[B, 4]>>, %a: tensor<4xf64>)
    -> tensor<?x?xf64> {
  %r = tgraph.solve %x params(%a : tensor<4xf64>)
      : tensor<?x4xf64, #tgraph.dims<[B, 4]>> -> tensor<?x?xf64> {
  ^bb0(%z: tensor<?x?xf64>, %p: tensor<4xf64>):
    %sq = tgraph.mul %z, %z : tensor<?x?xf64>
    %res = tgraph.sub %sq, %p : (tensor<?x?xf64>, tensor<4xf64>) -> tensor<?x?xf64>
    tgraph.yield %res : tensor<?x?xf64>
  }
  return %r : tensor<?x?xf64>
}

// -----

// checkpoint: the body's arguments take the operand types; the results are
// what the body yields: gelu([B, 512] x [512, 2048]) -> [B, 2048].
// CHECK-LABEL: func.func @checkpoint(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x512xf32, #tgraph.dims<[B, 512]>>,
// CHECK-SAME:      %[[W:[^:]+]]: tensor<512x2048xf32>)
// CHECK-SAME:      -> tensor<?x2048xf32, #tgraph.dims<[B, 2048]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.checkpoint(%[[X]], %[[W]] : tensor<?x512xf32, #tgraph.dims<[B, 512]>>, tensor<512x2048xf32>) -> tensor<?x2048xf32, #tgraph.dims<[B, 2048]>> {
// CHECK-NEXT:    ^bb0(%[[A:[^:]+]]: tensor<?x512xf32, #tgraph.dims<[B, 512]>>, %[[B:[^:]+]]: tensor<512x2048xf32>):
// CHECK-NEXT:      %[[H:.+]] = tgraph.matmul %[[A]], %[[B]] : (tensor<?x512xf32, #tgraph.dims<[B, 512]>>, tensor<512x2048xf32>) -> tensor<?x2048xf32, #tgraph.dims<[B, 2048]>>
// CHECK-NEXT:      %[[G:.+]] = tgraph.gelu %[[H]] : tensor<?x2048xf32, #tgraph.dims<[B, 2048]>>
// CHECK-NEXT:      tgraph.yield %[[G]] : tensor<?x2048xf32, #tgraph.dims<[B, 2048]>>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]
func.func @checkpoint(%x: tensor<?x512xf32, #tgraph.dims<[B, 512]>>,
                      %w: tensor<512x2048xf32>) -> tensor<?x?xf32> {
  %r = tgraph.checkpoint (%x, %w : tensor<?x512xf32, #tgraph.dims<[B, 512]>>,
      tensor<512x2048xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: tensor<?x?xf32>, %b: tensor<512x2048xf32>):
    %h = tgraph.matmul %a, %b : (tensor<?x?xf32>, tensor<512x2048xf32>) -> tensor<?x?xf32>
    %g = tgraph.gelu %h : tensor<?x?xf32>
    tgraph.yield %g : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}

//===----------------------------------------------------------------------===//
// Calls: the callee's shape symbols bind to the argument dims
//===----------------------------------------------------------------------===//

// -----

// N -> B, D -> 64, so [N, 2*D] -> [B, 128].
func.func private @f(tensor<?x?xf32, #tgraph.dims<[N, D]>>)
    -> tensor<?x?xf32, #tgraph.dims<[N, "2*D"]>>

// CHECK-LABEL: func.func @call(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x64xf32, #tgraph.dims<[B, 64]>>)
// CHECK-SAME:      -> tensor<?x128xf32, #tgraph.dims<[B, 128]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.call @f(%[[X]]) : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x128xf32, #tgraph.dims<[B, 128]>>
// CHECK-NEXT:    return %[[R]]
func.func @call(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32> {
  %r = tgraph.call @f(%x) : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// The callee's own result is `?` until its body is refined ([N, D] concat
// [N, D] on dim 1 -> [N, 2*D]); the caller, which comes first, is refined
// after that: N -> B, D -> S gives [B, 2*S].
// CHECK-LABEL: func.func @call_refined_callee(
// CHECK-SAME:      %[[X:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[B, S]>>)
// CHECK-SAME:      -> tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>
// CHECK-NEXT:    %[[R:.+]] = tgraph.call @g(%[[X]]) : (tensor<?x?xf32, #tgraph.dims<[B, S]>>) -> tensor<?x?xf32, #tgraph.dims<[B, "2*S"]>>
// CHECK-NEXT:    return %[[R]]
// CHECK-LABEL: func.func @g(
// CHECK-SAME:      %[[Y:[^:]+]]: tensor<?x?xf32, #tgraph.dims<[N, D]>>)
// CHECK-SAME:      -> tensor<?x?xf32, #tgraph.dims<[N, "2*D"]>>
// CHECK-NEXT:    %[[C:.+]] = tgraph.concat %[[Y]], %[[Y]] {dim = 1 : i64} : (tensor<?x?xf32, #tgraph.dims<[N, D]>>, tensor<?x?xf32, #tgraph.dims<[N, D]>>) -> tensor<?x?xf32, #tgraph.dims<[N, "2*D"]>>
// CHECK-NEXT:    return %[[C]]
func.func @call_refined_callee(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) -> tensor<?x?xf32> {
  %r = tgraph.call @g(%x) : (tensor<?x?xf32, #tgraph.dims<[B, S]>>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

func.func @g(%y: tensor<?x?xf32, #tgraph.dims<[N, D]>>) -> tensor<?x?xf32> {
  %c = tgraph.concat %y, %y {dim = 1 : i64}
      : (tensor<?x?xf32, #tgraph.dims<[N, D]>>, tensor<?x?xf32, #tgraph.dims<[N, D]>>)
      -> tensor<?x?xf32>
  return %c : tensor<?x?xf32>
}

// -----

// A '?' result dim is refined by the operand dim mapped to it; nothing is
// left to check at run time.
// CHECK-LABEL: func.func @broadcast_in_dim_refines_unknown
// CHECK-SAME: -> tensor<?x4x?xf32, #tgraph.dims<[B, 4, S]>>
// CHECK-NOT: tgraph.assert_dim
// CHECK: tgraph.broadcast_in_dim {{.*}} -> tensor<?x4x?xf32, #tgraph.dims<[B, 4, S]>>
func.func @broadcast_in_dim_refines_unknown(%x: tensor<?xf32, #tgraph.dims<[S]>>)
    -> tensor<?x4x?xf32, #tgraph.dims<[B, 4, ?]>> {
  %0 = tgraph.broadcast_in_dim %x {broadcast_dimensions = array<i64: 2>}
      : tensor<?xf32, #tgraph.dims<[S]>> -> tensor<?x4x?xf32, #tgraph.dims<[B, 4, ?]>>
  return %0 : tensor<?x4x?xf32, #tgraph.dims<[B, 4, ?]>>
}

// -----

// A callee parameter written '?' accepts any size: no check, and the
// result keeps the callee's '?'.
// CHECK-LABEL: func.func @call_unknown_parameter
// CHECK-NOT: tgraph.assert_dim
// CHECK: tgraph.call @k(%arg0) : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x64xf32>
func.func private @k(tensor<?x64xf32>) -> tensor<?x64xf32>
func.func @call_unknown_parameter(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x64xf32> {
  %0 = tgraph.call @k(%x) : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// A callee result dim using a symbol its arguments do not bind (M) says
// nothing about the caller's own M: it becomes '?', and adding it to the
// caller's [M] tensor is checked at run time.
// CHECK-LABEL: func.func @callee_symbols_do_not_leak
// CHECK: %[[Y:.+]] = tgraph.call @g(%arg0) : (tensor<?xf32, #tgraph.dims<[B]>>) -> tensor<?xf32>
// CHECK: %[[N:.+]] = tgraph.dim %[[Y]], 0 : tensor<?xf32>
// CHECK: %[[M:.+]] = tgraph.dim %arg1, 0
// CHECK: tgraph.assert_dim eq %[[N]], %[[M]]
func.func private @g(tensor<?xf32, #tgraph.dims<[N]>>) -> tensor<?xf32, #tgraph.dims<[M]>>
func.func @callee_symbols_do_not_leak(%y: tensor<?xf32, #tgraph.dims<[B]>>,
                                      %x: tensor<?xf32, #tgraph.dims<[M]>>) -> tensor<?xf32> {
  %0 = tgraph.call @g(%y) : (tensor<?xf32, #tgraph.dims<[B]>>) -> tensor<?xf32>
  %1 = tgraph.add %0, %x : (tensor<?xf32>, tensor<?xf32, #tgraph.dims<[M]>>) -> tensor<?xf32>
  return %1 : tensor<?xf32>
}

// -----

// Loop carries written with '?' stay as declared (the body may change them),
// and the pass does not fail on them.
// CHECK-LABEL: func.func @loop_carries_stay
// CHECK: tgraph.while(%arg0) : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32>
// CHECK: ^bb0(%{{.*}}: tensor<?x?xf32>):
func.func @loop_carries_stay(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>, %p: tensor<i1>) -> tensor<?x?xf32> {
  %r = tgraph.while (%x) : tensor<?x64xf32, #tgraph.dims<[B, 64]>> -> tensor<?x?xf32> cond {
  ^bb0(%c: tensor<?x?xf32>):
    tgraph.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<?x?xf32>):
    tgraph.yield %c : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}

// -----

// '?' operands of collectives that split a dim: the share stays '?', and
// the dim must divide by the group size at run time.
// CHECK-LABEL: func.func @split_unknown
// CHECK: %[[D:.+]] = tgraph.dim %arg0, 0 : tensor<?x64xf32>
// CHECK: %[[N:.+]] = arith.constant 4 : index
// CHECK: tgraph.assert_dim divisible %[[D]], %[[N]], "'tgraph.reduce_scatter' op at {{.*}}: the split dimension must divide evenly over group_size: operand 0 dim 0 (?) must be a multiple of 4"
// CHECK: tgraph.reduce_scatter {{.*}} : tensor<?x64xf32>{{$}}
func.func @split_unknown(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = tgraph.reduce_scatter %x {reduction = #tgraph<reduction sum>, dim = 0 : i64,
      axis_name = "data", group_size = 4 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// Dims that other operands pin down refine the result: soft labels [B, 10]
// name the logits' '?' batch dim; the scale [512] names x's '?' dim;
// updates [N, 64] name the scattered tensor's '?' dim. Each is checked at
// run time, where the operand really is '?'.
// CHECK-LABEL: func.func @unified_dims_reach_results
// CHECK-SAME: -> (tensor<?xf32, #tgraph.dims<[B]>>, tensor<?x512xf32, #tgraph.dims<[B, 512]>>, tensor<100x64xf32>)
// CHECK: tgraph.cross_entropy {{.*}} -> tensor<?xf32, #tgraph.dims<[B]>>
// CHECK: tgraph.layernorm {{.*}} -> tensor<?x512xf32, #tgraph.dims<[B, 512]>>
// CHECK: tgraph.scatter_add {{.*}} -> tensor<100x64xf32>
func.func @unified_dims_reach_results(%logits: tensor<?x10xf32>, %p: tensor<?x10xf32, #tgraph.dims<[B, 10]>>,
    %x: tensor<?x?xf32, #tgraph.dims<[B, ?]>>, %g: tensor<512xf32>,
    %t: tensor<100x?xf32>, %ids: tensor<?xi32, #tgraph.dims<[N]>>, %u: tensor<?x64xf32, #tgraph.dims<[N, 64]>>)
    -> (tensor<?xf32>, tensor<?x?xf32>, tensor<100x?xf32>) {
  %0 = tgraph.cross_entropy %logits, %p {reduction = #tgraph<loss_reduction none>}
      : (tensor<?x10xf32>, tensor<?x10xf32, #tgraph.dims<[B, 10]>>) -> tensor<?xf32>
  %1 = tgraph.layernorm %x scale %g {axis = 1 : i64}
      : (tensor<?x?xf32, #tgraph.dims<[B, ?]>>, tensor<512xf32>) -> tensor<?x?xf32>
  %2 = tgraph.scatter_add %t, %ids, %u {dim = 0 : i64}
      : (tensor<100x?xf32>, tensor<?xi32, #tgraph.dims<[N]>>, tensor<?x64xf32, #tgraph.dims<[N, 64]>>) -> tensor<100x?xf32>
  return %0, %1, %2 : tensor<?xf32>, tensor<?x?xf32>, tensor<100x?xf32>
}

// -----

// Ops that create tensors state their (symbolic) shapes; inference carries
// those shapes into their users.
// CHECK-LABEL: func.func @generators_feed_inference
// CHECK-SAME: -> (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x64xi1, #tgraph.dims<[B, 64]>>, tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<?xf32, #tgraph.dims<[B]>>)
// CHECK: %[[K:.+]] = tgraph.rng.key {seed = 7 : i64}
// CHECK: %[[K1:.+]]:2 = tgraph.rng.split %[[K]] : !tgraph.key, !tgraph.key
// CHECK: %[[K2:.+]] = tgraph.rng.fold_in %[[K1]]#1, %{{.*}} : tensor<i64>
// CHECK: %[[U:.+]] = tgraph.rng.uniform %[[K1]]#0 : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK: %[[N:.+]] = tgraph.rng.normal %[[K2]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK: %[[F:.+]] = tgraph.full {value = 1.000000e+00 : f32} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK: %[[S:.+]] = tgraph.add %[[U]], %[[N]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK: %[[T:.+]] = tgraph.mul %[[S]], %[[F]] : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
// CHECK: %[[M:.+]] = tgraph.rng.bernoulli %[[K2]] {p = 5.000000e-01 : f64} : tensor<?x64xi1, #tgraph.dims<[B, 64]>>
// CHECK: %[[I:.+]] = tgraph.iota {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK: %[[NS:.+]] = tgraph.dim_size %arg0 {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<f32>
// CHECK: %[[D:.+]] = tgraph.div %[[I]], %[[NS]] : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<f32>) -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
// CHECK: %[[R:.+]] = tgraph.reduce_sum %[[D]] {dims = array<i64: 1>} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf32, #tgraph.dims<[B]>>
// CHECK: return %[[T]], %[[M]], %[[D]], %[[R]]
func.func @generators_feed_inference(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>, %step: tensor<i64>)
    -> (tensor<?x?xf32>, tensor<?x64xi1, #tgraph.dims<[B, 64]>>, tensor<?x?xf32>, tensor<?xf32>) {
  %k = tgraph.rng.key {seed = 7 : i64}
  %k1, %k2 = tgraph.rng.split %k : !tgraph.key, !tgraph.key
  %k3 = tgraph.rng.fold_in %k2, %step : tensor<i64>
  %u = tgraph.rng.uniform %k1 : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %n = tgraph.rng.normal %k3 : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %f = tgraph.full {value = 1.0 : f32} : tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  %s = tgraph.add %u, %n : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>, tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32>
  %t = tgraph.mul %s, %f : (tensor<?x?xf32>, tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x?xf32>
  %m = tgraph.rng.bernoulli %k3 {p = 0.5 : f64} : tensor<?x64xi1, #tgraph.dims<[B, 64]>>
  %i = tgraph.iota {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  %ns = tgraph.dim_size %x {dim = 1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<f32>
  %d = tgraph.div %i, %ns : (tensor<?x?xf32, #tgraph.dims<[B, S]>>, tensor<f32>) -> tensor<?x?xf32>
  %r = tgraph.reduce_sum %d {dims = array<i64: 1>} : (tensor<?x?xf32>) -> tensor<?xf32>
  return %t, %m, %d, %r : tensor<?x?xf32>, tensor<?x64xi1, #tgraph.dims<[B, 64]>>, tensor<?x?xf32>, tensor<?xf32>
}

// -----

// custom_vjp / custom_jvp results follow the callee, like tgraph.call.
// CHECK-LABEL: func.func @custom_rules
// CHECK-SAME: -> (tensor<?x8xf32, #tgraph.dims<[B, 8]>>, tensor<?x8xf32, #tgraph.dims<[B, 8]>>)
// CHECK: tgraph.custom_vjp @f(%arg0) fwd @f_fwd bwd @f_bwd : (tensor<?x8xf32, #tgraph.dims<[B, 8]>>) -> tensor<?x8xf32, #tgraph.dims<[B, 8]>>
// CHECK: tgraph.custom_jvp @f(%arg0) jvp @f_jvp : (tensor<?x8xf32, #tgraph.dims<[B, 8]>>) -> tensor<?x8xf32, #tgraph.dims<[B, 8]>>
func.func private @f(tensor<?x8xf32, #tgraph.dims<[N, 8]>>) -> tensor<?x8xf32, #tgraph.dims<[N, 8]>>
func.func private @f_fwd(tensor<?x8xf32, #tgraph.dims<[N, 8]>>) -> (tensor<?x8xf32, #tgraph.dims<[N, 8]>>, tensor<?x8xf32, #tgraph.dims<[N, 8]>>)
func.func private @f_bwd(tensor<?x8xf32, #tgraph.dims<[N, 8]>>, tensor<?x8xf32, #tgraph.dims<[N, 8]>>) -> tensor<?x8xf32, #tgraph.dims<[N, 8]>>
func.func private @f_jvp(tensor<?x8xf32, #tgraph.dims<[N, 8]>>, tensor<?x8xf32, #tgraph.dims<[N, 8]>>) -> (tensor<?x8xf32, #tgraph.dims<[N, 8]>>, tensor<?x8xf32, #tgraph.dims<[N, 8]>>)
func.func @custom_rules(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %0 = tgraph.custom_vjp @f(%x) fwd @f_fwd bwd @f_bwd : (tensor<?x8xf32, #tgraph.dims<[B, 8]>>) -> tensor<?x?xf32>
  %1 = tgraph.custom_jvp @f(%x) jvp @f_jvp : (tensor<?x8xf32, #tgraph.dims<[B, 8]>>) -> tensor<?x?xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// kv_cache.read returns the cache's full contents, as its type states;
// the keys feed inference like any tensor.
// CHECK-LABEL: func.func @kv_cache_read_feeds_inference
// CHECK: %[[K:.+]], %{{.*}}, %{{.*}} = tgraph.kv_cache.read
// CHECK: tgraph.reduce_max %[[K]] {dims = array<i64: 2>} : tensor<?x8x128x64xbf16, #tgraph.dims<[B, 8, 128, 64]>> -> tensor<?x8x64xbf16, #tgraph.dims<[B, 8, 64]>>
func.func @kv_cache_read_feeds_inference(%c: !tgraph.kv_cache<[B, 8, 128, 64], bf16>) -> tensor<?x?x?xbf16> {
  %k, %v, %n = tgraph.kv_cache.read %c : !tgraph.kv_cache<[B, 8, 128, 64], bf16>
      -> tensor<?x8x128x64xbf16, #tgraph.dims<[B, 8, 128, 64]>>, tensor<?x8x128x64xbf16, #tgraph.dims<[B, 8, 128, 64]>>, tensor<i64>
  %m = tgraph.reduce_max %k {dims = array<i64: 2>} : tensor<?x8x128x64xbf16, #tgraph.dims<[B, 8, 128, 64]>> -> tensor<?x?x?xbf16>
  return %m : tensor<?x?x?xbf16>
}
