// RUN: tessera-opt %s --tessera-split-functions=max-ops=6 --split-input-file | FileCheck %s

// Ops of three and four operations (a generic, its body and its yield)
// over a bound of 6: two parts; the second reads the first's result and
// the argument; the constant and the empty tensor are copied into each
// part that uses them.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.+]]: tensor<8xf32>)
// CHECK: %[[P0:.+]]:2 = call @chain.part0(%[[X]]) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
// CHECK: %[[P1:.+]] = call @chain.part1(%[[P0]]#1, %[[X]]) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK: return %[[P1]], %[[P0]]#0
// CHECK: func.func private @chain.part0(%{{.+}}: tensor<8xf32> {bufferization.writable = false}) -> (tensor<8xf32>, tensor<8xf32>)
// CHECK: math.exp
// CHECK: math.exp
// CHECK-NOT: math.exp
// CHECK: return
// CHECK: func.func private @chain.part1
// CHECK: arith.constant 2.000000e+00 : f32
// CHECK: arith.addf
#id = affine_map<(d0) -> (d0)>
func.func @chain(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %c = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%b, %x : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.addf %v, %w : f32
    %r = arith.addf %s, %two : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %c, %a : tensor<8xf32>, tensor<8xf32>
}

// -----

// Within the bound: unchanged.
// CHECK-LABEL: func.func @short
// CHECK-NOT: call
// CHECK: math.exp
// CHECK-NOT: func.func private
#id2 = affine_map<(d0) -> (d0)>
func.func @short(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %a : tensor<8xf32>
}
