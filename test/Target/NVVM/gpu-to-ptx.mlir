// The NVIDIA code path through tessera-opt: a GPU kernel in upstream
// dialects -> NVVM -> PTX (LLVM's NVPTX back end), validated by ptxas for
// Hopper (sm_90a) and Ampere (sm_80).
// RUN: tessera-opt %s --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 opt-level=3 cubin-format=isa" | FileCheck %s
// RUN: tessera-opt %s --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 opt-level=3 cubin-format=isa" -o %t.90.mlir
// RUN: tessera-opt %s --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 opt-level=3 cubin-format=isa" -o %t.80.mlir
// RUN: %extract_ptx %t.90.mlir %t.90.ptx && %extract_ptx %t.80.mlir %t.80.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t.90.ptx -o %t.90.cubin %}
// RUN: %if ptxas %{ %ptxas -arch=sm_80 %t.80.ptx -o %t.80.cubin %}

// CHECK: gpu.binary @kernels
// CHECK-SAME: chip = "sm_90a"
// CHECK-SAME: .target sm_90a
// CHECK-SAME: .visible .entry axpy(
// CHECK-SAME: fma.rn.f32
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @axpy(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %xv = memref.load %x[%i] : memref<?xf32>
        %yv = memref.load %y[%i] : memref<?xf32>
        %m = arith.mulf %a, %xv fastmath<contract> : f32
        %r = arith.addf %m, %yv fastmath<contract> : f32
        memref.store %r, %y[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
