// A multiply that feeds an add contracts into one fma by default (as
// nvcc's --fmad=true), and stays two rounded operations without it.
// REQUIRES: ptxas
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_90a" -o %t.on.mlir
// RUN: tessera-opt %s --tessera-ttile-to-ptx="chip=sm_90a fp-contract=false" -o %t.off.mlir
// RUN: %extract_ptx %t.on.mlir %t.on.ptx && %extract_ptx %t.off.mlir %t.off.ptx
// RUN: FileCheck %s --check-prefix=ON < %t.on.ptx
// RUN: FileCheck %s --check-prefix=OFF < %t.off.ptx
// RUN: %ptxas -arch=sm_90a %t.on.ptx -o %t.on.cubin
// RUN: tessera-opt %s --tessera-ttile-assign-layouts --tessera-convert-ttile-to-gpu | FileCheck %s --check-prefix=IR

// ON-LABEL: .visible .entry axpb(
// ON: fma.rn.f32
// ON-NOT: mul.rn.f32
// OFF-LABEL: .visible .entry axpb(
// OFF-NOT: fma.rn.f32
// OFF: mul.rn.f32
// OFF: add.rn.f32
// IR: arith.mulf {{.*}} fastmath<contract> : f32
// IR: arith.addf {{.*}} fastmath<contract> : f32

func.func @axpb(%X: memref<?xf32>, %Y: memref<?xf32>, %a: f32, %c: f32)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0] : memref<?xf32> -> tensor<512xf32>
  %av = tensor.splat %a : tensor<512xf32>
  %cv = tensor.splat %c : tensor<512xf32>
  %p = arith.mulf %x, %av : tensor<512xf32>
  %y = arith.addf %p, %cv : tensor<512xf32>
  ttile.store %y, %Y[%c0] : tensor<512xf32>, memref<?xf32>
  return
}
