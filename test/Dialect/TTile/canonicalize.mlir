// RUN: tessera-opt %s --canonicalize | FileCheck %s

#blocked = #ttile.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#mma = #ttile.mma<version = 2, warpsPerCTA = [4, 1], instrShape = [16, 8, 16]>

// A conversion to the same layout, and a round trip, are no-ops.
// CHECK-LABEL: func.func @round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<64x32xf32, #blocked>)
// CHECK-NOT: ttile.convert_layout
// CHECK: return %[[X]], %[[X]]
func.func @round_trip(%x: tensor<64x32xf32, #blocked>)
    -> (tensor<64x32xf32, #blocked>, tensor<64x32xf32, #blocked>) {
  %same = ttile.convert_layout %x : tensor<64x32xf32, #blocked> -> tensor<64x32xf32, #blocked>
  %m = ttile.convert_layout %x : tensor<64x32xf32, #blocked> -> tensor<64x32xf32, #mma>
  %back = ttile.convert_layout %m : tensor<64x32xf32, #mma> -> tensor<64x32xf32, #blocked>
  return %same, %back : tensor<64x32xf32, #blocked>, tensor<64x32xf32, #blocked>
}
