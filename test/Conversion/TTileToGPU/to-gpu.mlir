// RUN: tessera-opt %s --tessera-ttile-assign-layouts --tessera-convert-ttile-to-gpu --canonicalize --cse --split-input-file | FileCheck %s

// A row softmax: 16-byte vector loads and stores where aligned and in
// bounds (guarded scalar accesses otherwise), the row reductions as
// butterflies of xor shuffles over the 32 lanes.
// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @tessera_kernels
// CHECK: gpu.func @softmax(%{{.*}}: memref<?x?xf32>, %{{.*}}: memref<?x?xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.thread_id x
// CHECK: gpu.block_id x
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// CHECK: memref.load
// CHECK-COUNT-5: gpu.shuffle xor {{.*}}, %{{.*}} : f32
// CHECK: math.exp
// CHECK-COUNT-5: gpu.shuffle xor {{.*}}, %{{.*}} : f32
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// CHECK-NOT: func.func
func.func @softmax(%X: memref<?x?xf32>, %Y: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %pid = ttile.program_id x
  %row = arith.muli %pid, %c4 : index
  %x = ttile.load %X[%row, %c0] {padding = 0xFF800000 : f32} : memref<?x?xf32> -> tensor<4x256xf32>
  %m = ttile.reduce max %x {dim = 1 : i32} : tensor<4x256xf32> -> tensor<4xf32>
  %mb = ttile.broadcast %m {dims = array<i64: 0>} : tensor<4xf32> -> tensor<4x256xf32>
  %d = arith.subf %x, %mb : tensor<4x256xf32>
  %e = math.exp %d : tensor<4x256xf32>
  %s = ttile.reduce sum %e {dim = 1 : i32} : tensor<4x256xf32> -> tensor<4xf32>
  %sb = ttile.broadcast %s {dims = array<i64: 0>} : tensor<4xf32> -> tensor<4x256xf32>
  %y = arith.divf %e, %sb : tensor<4x256xf32>
  ttile.store %y, %Y[%row, %c0] : tensor<4x256xf32>, memref<?x?xf32>
  return
}

// -----

// A row longer than a warp's share: after the shuffles, the warps' partial
// sums meet in shared memory between barriers. All shared memory is
// dynamic: the kernel's launch record states its size (256 partial sums,
// 1024 bytes of alignment): version 3, 256 threads, no producer, 2048
// bytes, 12 parameter slots, no cluster, no tensor maps.
// CHECK: llvm.mlir.global external constant @tessera_launch_row_sum(dense<[3, 256, 0, 2048, 12, 1, 0, 0]>
// CHECK: gpu.func @row_sum(%{{.*}}: memref<?x?xf32>, %{{.*}}: memref<?xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK: gpu.barrier
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK: arith.addf
func.func @row_sum(%X: memref<?x?xf32>, %Y: memref<?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<1x4096xf32>
  %s = ttile.reduce sum %x {dim = 1 : i32} : tensor<1x4096xf32> -> tensor<1xf32>
  ttile.store %s, %Y[%c0] : tensor<1xf32>, memref<?xf32>
  return
}

// -----

// Sixteen warps along the row: each thread reads one warp's partial sum
// (lane l the l-th warp's, mod 16) and four more butterfly steps over the
// lanes combine them, instead of sixteen loads and adds in every thread.
// CHECK: gpu.func @row_sum_16_warps
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK: gpu.barrier
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.load {{.*}} !llvm.ptr<3>
// CHECK-COUNT-4: gpu.shuffle xor
// CHECK-NOT: llvm.load {{.*}} !llvm.ptr<3>
// CHECK: gpu.return
func.func @row_sum_16_warps(%X: memref<?x?xf32>, %Y: memref<?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 16 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<1x4096xf32>
  %s = ttile.reduce sum %x {dim = 1 : i32} : tensor<1x4096xf32> -> tensor<1xf32>
  ttile.store %s, %Y[%c0] : tensor<1xf32>, memref<?xf32>
  return
}

// -----

// A column sum over sixteen warps: the lanes hold different columns, so
// each thread reads the sixteen warps' partials of its columns in warp
// order (no butterfly across lanes).
// CHECK: gpu.func @col_sum_16_warps
// CHECK-NOT: gpu.shuffle
// CHECK-COUNT-16: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return
func.func @col_sum_16_warps(%X: memref<?x?xf32>, %Y: memref<?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 16 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<16x128xf32>
  %s = ttile.reduce sum %x {dim = 0 : i32} : tensor<16x128xf32> -> tensor<128xf32>
  ttile.store %s, %Y[%c0] : tensor<128xf32>, memref<?xf32>
  return
}

// -----

// A layout change between threads goes through shared memory (the load
// has two users, so it is not simply loaded in the second layout): 16-byte
// stores where a thread's elements run along the buffer's rows, 16-byte
// chunks swizzled by row. The buffer is the kernel's scratch area (8 KiB).
// CHECK: llvm.mlir.global external constant @tessera_launch_convert(dense<[3, 128, 0, 9216, 21, 1, 0, 0]>
// CHECK: gpu.func @convert
// CHECK: gpu.barrier
// CHECK: arith.xori
// CHECK: llvm.store {{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<3>
// CHECK: gpu.barrier
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f32
#row = #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]>
#col = #ttile.blocked<sizePerThread = [4, 1], threadsPerWarp = [32, 1], warpsPerCTA = [1, 4], order = [0, 1]>
func.func @convert(%X: memref<?x?xf32>, %Y: memref<?x?xf32>, %Z: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<16x128xf32, #row>
  %y = ttile.convert_layout %x : tensor<16x128xf32, #row> -> tensor<16x128xf32, #col>
  ttile.store %y, %Y[%c0, %c0] : tensor<16x128xf32, #col>, memref<?x?xf32>
  ttile.store %x, %Z[%c0, %c0] : tensor<16x128xf32, #row>, memref<?x?xf32>
  return
}

// -----

// The operands of a tensor-core dot come through shared memory together:
// one barrier before both writes, one before both ldmatrix reads; their
// buffers (4 KiB each) are live together.
// CHECK: llvm.mlir.global external constant @tessera_launch_dot_operands(dense<[3, 128, 0, 9216, 21, 1, 0, 0]>
// CHECK-LABEL: gpu.func @dot_operands
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: llvm.store {{.*}} : vector<8xbf16>, !llvm.ptr<3>
// CHECK-NOT: gpu.barrier
// CHECK: llvm.store {{.*}} : vector<8xbf16>, !llvm.ptr<3>
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.mma.sync
func.func @dot_operands(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                        %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %a = ttile.load %A[%c0, %c0] : memref<?x?xbf16> -> tensor<64x32xbf16>
  %b = ttile.load %B[%c0, %c0] : memref<?x?xbf16> -> tensor<32x64xbf16>
  %d = ttile.dot %a, %b, %zero : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
  ttile.store %d, %C[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  return
}

// -----

// f16 operands: nvvm.mma.sync takes each pair as <2 x half> (bf16 pairs
// as i32).
// CHECK-LABEL: gpu.func @dot_f16
// CHECK: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32)
func.func @dot_f16(%A: memref<?x?xf16>, %B: memref<?x?xf16>,
                   %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %a = ttile.load %A[%c0, %c0] : memref<?x?xf16> -> tensor<64x32xf16>
  %b = ttile.load %B[%c0, %c0] : memref<?x?xf16> -> tensor<32x64xf16>
  %d = ttile.dot %a, %b, %zero : tensor<64x32xf16>, tensor<32x64xf16> -> tensor<64x64xf32>
  ttile.store %d, %C[%c0, %c0] : tensor<64x64xf32>, memref<?x?xf32>
  return
}

// -----

// A conversion and a reduction one after the other share the scratch area
// (each starts behind a barrier): the kernel needs the tile's 8 KiB, not
// 8 KiB and the warps' partial sums.
// CHECK: llvm.mlir.global external constant @tessera_launch_convert_reduce(dense<[3, 128, 0, 9216, 19, 1, 0, 0]>
// CHECK: gpu.func @convert_reduce
// CHECK: gpu.barrier
// CHECK: llvm.store {{.*}} : vector<4xf32>, !llvm.ptr<3>
// CHECK: gpu.barrier
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK: gpu.barrier
// CHECK: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK: gpu.barrier
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f32
#row = #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]>
#col = #ttile.blocked<sizePerThread = [4, 1], threadsPerWarp = [32, 1], warpsPerCTA = [1, 4], order = [0, 1]>
func.func @convert_reduce(%X: memref<?x?xf32>, %Y: memref<?xf32>, %Z: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0, %c0] : memref<?x?xf32> -> tensor<16x128xf32, #row>
  %y = ttile.convert_layout %x : tensor<16x128xf32, #row> -> tensor<16x128xf32, #col>
  %s = ttile.reduce sum %y {dim = 1 : i32} : tensor<16x128xf32, #col> -> tensor<16xf32, #ttile.slice<dim = 1, parent = #col>>
  ttile.store %s, %Y[%c0] : tensor<16xf32, #ttile.slice<dim = 1, parent = #col>>, memref<?xf32>
  ttile.store %x, %Z[%c0, %c0] : tensor<16x128xf32, #row>, memref<?x?xf32>
  return
}

// -----

// f32 powers of two are the hardware's ex2 (subnormal results flushed to
// zero), one instruction each; other exponentials go through libdevice.
// CHECK-LABEL: gpu.func @powers_of_two
// CHECK-COUNT-4: llvm.inline_asm asm_dialect = att "ex2.approx.ftz.f32 $0, $1;", "=f,f"
// CHECK-NOT: llvm.inline_asm
// CHECK: math.exp
func.func @powers_of_two(%X: memref<?xf32>, %Y: memref<?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 1 : i32} {
  %c0 = arith.constant 0 : index
  %x = ttile.load %X[%c0] : memref<?xf32> -> tensor<128xf32>
  %p = math.exp2 %x : tensor<128xf32>
  %e = math.exp %p : tensor<128xf32>
  ttile.store %e, %Y[%c0] : tensor<128xf32>, memref<?xf32>
  return
}

// -----

// Masks compare element by element only in a branch taken when the block
// has a masked score: causal, when its last key comes after its first
// query (col0 + 63 > row0); past the keys, when col0 + 64 > count. A
// block without one passes its registers through (32 per thread here).
// Each thread compares one i32 of its own (the limit less its part of the
// coordinates: row0 - col0 - (col - row), count - col0 - 1 - col) with
// a constant per register.
// CHECK-LABEL: gpu.func @masks
// CHECK-SAME: (%{{.*}}: memref<?x?xf32>, %{{.*}}: memref<?x?xf32>, %[[ROW0:.*]]: index, %[[COL0:.*]]: index, %[[COUNT:.*]]: index)
// CHECK: %[[DIFF:.*]] = arith.subi %[[ROW0]], %[[COL0]] : index
// CHECK: %[[LAST:.*]] = arith.addi %[[COL0]], %c63 : index
// CHECK: %[[ANY:.*]] = arith.cmpi sgt, %[[LAST]], %[[ROW0]] : index
// CHECK: %[[C:.*]]:32 = scf.if %[[ANY]] -> ({{(f32, )+}}f32) {
// CHECK: %[[REST:.*]] = arith.subi %[[DIFF]], %{{.*}} : index
// CHECK: %[[REST32:.*]] = arith.index_cast %[[REST]] : index to i32
// CHECK: arith.cmpi slt, %[[REST32]], %c0_i32 : i32
// CHECK-COUNT-32: arith.select
// CHECK: scf.yield
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield
// CHECK: %[[LEFT:.*]] = arith.subi %[[COUNT]], %[[COL0]] : index
// CHECK: %[[LIMIT:.*]] = arith.subi %[[LEFT]], %c1 : index
// CHECK: %[[END:.*]] = arith.addi %[[COL0]], %c64 : index
// CHECK: %[[PAST:.*]] = arith.cmpi sgt, %[[END]], %[[COUNT]] : index
// CHECK: scf.if %[[PAST]] -> ({{(f32, )+}}f32) {
// CHECK: %[[KREST:.*]] = arith.subi %[[LIMIT]], %{{.*}} : index
// CHECK: %[[KREST32:.*]] = arith.index_cast %[[KREST]] : index to i32
// CHECK: arith.cmpi slt, %[[KREST32]], %c0_i32 : i32
// CHECK-COUNT-32: arith.select
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[C]]#0, %[[C]]#1,
func.func @masks(%X: memref<?x?xf32>, %Y: memref<?x?xf32>, %row0: index,
                 %col0: index, %count: index)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %x = ttile.load %X[%row0, %col0] : memref<?x?xf32> -> tensor<64x64xf32>
  %c = ttile.mask_causal %x, %row0, %col0 : tensor<64x64xf32>
  %k = ttile.mask_keys %c, %col0, %count : tensor<64x64xf32>
  ttile.store %k, %Y[%row0, %col0] : tensor<64x64xf32>, memref<?x?xf32>
  return
}
