// A kernel that asks for two programs an SM (programs_per_sm=2 in the
// schedule) gets nvvm.minctasm = 2, which ptxas reads as .minnctapersm:
// each thread's registers then stay within what two programs of 512
// threads leave it (64).
// RUN: tessera-opt %s --tessera-ttile-assign-layouts --tessera-convert-ttile-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_90a features=+ptx80" -o %t.mlir
// RUN: %extract_ptx %t.mlir %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// REQUIRES: ptxas

// GPU: gpu.func @rows({{.*}}) kernel attributes {known_block_size = array<i32: 512, 1, 1>, nvvm.minctasm = 2 : i32}
// PTX: .maxntid 512, 1, 1
// PTX-NEXT: .minnctapersm 2
// PTXAS: Used {{([1-5]?[0-9]|6[0-4])}} registers
func.func @rows(%X: memref<?x?xf32>, %Y: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 16 : i32,
                ttile.programs_per_sm = 2 : i32} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %pid = ttile.program_id x
  %row = arith.muli %pid, %c2 : index
  %x = ttile.load %X[%row, %c0] : memref<?x?xf32> -> tensor<2x4096xf32>
  %s = ttile.reduce sum %x {dim = 1 : i32} : tensor<2x4096xf32> -> tensor<2xf32>
  %sb = ttile.broadcast %s {dims = array<i64: 0>} : tensor<2xf32> -> tensor<2x4096xf32>
  %y = arith.divf %x, %sb : tensor<2x4096xf32>
  ttile.store %y, %Y[%row, %c0] : tensor<2x4096xf32>, memref<?x?xf32>
  return
}
