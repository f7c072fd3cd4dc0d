// RUN: tessera-opt %s --tessera-gpu-form-groups --tessera-gpu-generate-kernels | FileCheck %s
// RUN: tessera-opt %s --tessera-gpu-form-groups | FileCheck %s --check-prefix=GROUPS

// argmax and argmin over the last dim of a float tensor join the row
// group of their operand; over another dim (or of integers) they stay
// library ops.
// GROUPS: tsched.group row [8, 300] (%arg0) : (tensor<8x300xf32>) -> (tensor<8xi64>, tensor<8xi32>)
// GROUPS: tgraph.exp
// GROUPS: tgraph.argmax
// GROUPS: tgraph.argmin
// GROUPS: tsched.group single
// GROUPS: tgraph.argmax {{.*}}dim = 0

// The kernel: the first NaN's column if the row has one, else the first
// column equal to the row's max; the 300 columns of a 512-wide block are
// masked, the index is reduced in f32 and stored as the result's type.
// CHECK-LABEL: func.func @f_row0
// CHECK-SAME: memref<?xi64>, %{{.*}}: memref<?xi32>
// CHECK: %[[COL:.+]] = ttile.iota {dim = 1 : i32} : tensor<{{.*}}x512xi32>
// CHECK: arith.cmpi slt, %[[COL]]
// CHECK: arith.cmpf uno
// CHECK: ttile.reduce min
// CHECK: ttile.reduce max
// CHECK: arith.cmpf oeq
// CHECK: ttile.reduce min
// CHECK: arith.cmpf olt
// CHECK: ttile.cast {{.*}} -> tensor<{{.*}}xi64>
// CHECK: ttile.reduce min
// CHECK: ttile.reduce min
// CHECK: ttile.cast {{.*}} -> tensor<{{.*}}xi32>
// CHECK: ttile.store {{.*}} memref<?xi64>
// CHECK: ttile.store {{.*}} memref<?xi32>
func.func @f(%x: tensor<8x300xf32>, %y: tensor<4x6xf32>)
    -> (tensor<8xi64>, tensor<8xi32>, tensor<6xi64>) {
  %e = tgraph.exp %x : tensor<8x300xf32>
  %0 = tgraph.argmax %e {dim = 1 : i64} : tensor<8x300xf32> -> tensor<8xi64>
  %1 = tgraph.argmin %e {dim = 1 : i64} : tensor<8x300xf32> -> tensor<8xi32>
  %2 = tgraph.argmax %y {dim = 0 : i64} : tensor<4x6xf32> -> tensor<6xi64>
  return %0, %1, %2 : tensor<8xi64>, tensor<8xi32>, tensor<6xi64>
}
