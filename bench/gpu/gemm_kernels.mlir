// bf16 GEMMs for bench/gpu/gemm_bench.cpp: C = A @ B, f32 accumulation on
// the tensor cores, C written as bf16; gemm_bf16 takes 128 x 128 blocks of
// C on 8 warps, K in steps of 32, the others are named gemm_BMxBNxBK_wW
// (or _sS_wW with S stages). Built for sm_90a, every one of them runs on
// wgmma with operands in shared memory (for sm_80, on mma.sync).

func.func @gemm_bf16(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %c128 : index
  %c = arith.muli %j, %c128 : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %c32 stages 2
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x32xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<32x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x32xbf16>, tensor<32x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  %o = ttile.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<128x128xbf16>, memref<?x?xbf16>
  return
}

func.func @gemm_128x128x64_w8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 128 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 2
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  %o = ttile.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<128x128xbf16>, memref<?x?xbf16>
  return
}

func.func @gemm_128x256x32_w8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cbk = arith.constant 32 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 256 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 2
      iter_args(%a0 = %zero) -> (tensor<128x256xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x32xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<32x256xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x32xbf16>, tensor<32x256xbf16> -> tensor<128x256xf32>
    ttile.yield %a1 : tensor<128x256xf32>
  }
  %o = ttile.cast %acc : tensor<128x256xf32> -> tensor<128x256xbf16>
  ttile.store %o, %C[%r, %c] : tensor<128x256xbf16>, memref<?x?xbf16>
  return
}

func.func @gemm_64x128x32_w4(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cbk = arith.constant 32 : index
  %cbm = arith.constant 64 : index
  %cbn = arith.constant 128 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 2
      iter_args(%a0 = %zero) -> (tensor<64x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<64x32xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<32x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<64x32xbf16>, tensor<32x128xbf16> -> tensor<64x128xf32>
    ttile.yield %a1 : tensor<64x128xf32>
  }
  %o = ttile.cast %acc : tensor<64x128xf32> -> tensor<64x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<64x128xbf16>, memref<?x?xbf16>
  return
}

func.func @gemm_128x128x32_w4(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cbk = arith.constant 32 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 128 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 2
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x32xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<32x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x32xbf16>, tensor<32x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  %o = ttile.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<128x128xbf16>, memref<?x?xbf16>
  return
}

func.func @gemm_128x128x64_s4_w8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 128 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 4
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  %o = ttile.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<128x128xbf16>, memref<?x?xbf16>
  return
}

func.func @gemm_128x256x64_s3_w8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 256 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 3
      iter_args(%a0 = %zero) -> (tensor<128x256xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x256xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
    ttile.yield %a1 : tensor<128x256xf32>
  }
  %o = ttile.cast %acc : tensor<128x256xf32> -> tensor<128x256xbf16>
  ttile.store %o, %C[%r, %c] : tensor<128x256xbf16>, memref<?x?xbf16>
  return
}

func.func @gemm_256x128x64_s3_w8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 256 : index
  %cbn = arith.constant 128 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<256x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 3
      iter_args(%a0 = %zero) -> (tensor<256x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<256x64xbf16>, tensor<64x128xbf16> -> tensor<256x128xf32>
    ttile.yield %a1 : tensor<256x128xf32>
  }
  %o = ttile.cast %acc : tensor<256x128xf32> -> tensor<256x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<256x128xbf16>, memref<?x?xbf16>
  return
}

// gemm_128x128x64_s4_w8, programs in groups of 8 block rows: the
// grid is 1-d and consecutive programs walk down 8 block rows of one block
// column before moving right, so that the A and B panels they share stay
// in L2.
func.func @gemm_128x128x64_s4_w8_g8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 128 : index
  %pid = ttile.program_id x
  %m = memref.dim %A, %c0 : memref<?x?xbf16>
  %n = memref.dim %B, %c1 : memref<?x?xbf16>
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %rows = arith.ceildivui %m, %cbm : index
  %cols = arith.ceildivui %n, %cbn : index
  %per_group = arith.muli %cols, %c8 : index
  %group = arith.divui %pid, %per_group : index
  %first = arith.muli %group, %c8 : index
  %left = arith.subi %rows, %first : index
  %size = arith.minui %left, %c8 : index
  %in_group = arith.remui %pid, %per_group : index
  %di = arith.remui %in_group, %size : index
  %i = arith.addi %first, %di : index
  %j = arith.divui %in_group, %size : index
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 4
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  %o = ttile.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<128x128xbf16>, memref<?x?xbf16>
  return
}

// gemm_128x256x64_s3_w8, programs in groups of 8 block rows: the
// grid is 1-d and consecutive programs walk down 8 block rows of one block
// column before moving right, so that the A and B panels they share stay
// in L2.
func.func @gemm_128x256x64_s3_w8_g8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 256 : index
  %pid = ttile.program_id x
  %m = memref.dim %A, %c0 : memref<?x?xbf16>
  %n = memref.dim %B, %c1 : memref<?x?xbf16>
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %rows = arith.ceildivui %m, %cbm : index
  %cols = arith.ceildivui %n, %cbn : index
  %per_group = arith.muli %cols, %c8 : index
  %group = arith.divui %pid, %per_group : index
  %first = arith.muli %group, %c8 : index
  %left = arith.subi %rows, %first : index
  %size = arith.minui %left, %c8 : index
  %in_group = arith.remui %pid, %per_group : index
  %di = arith.remui %in_group, %size : index
  %i = arith.addi %first, %di : index
  %j = arith.divui %in_group, %size : index
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 3
      iter_args(%a0 = %zero) -> (tensor<128x256xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x256xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
    ttile.yield %a1 : tensor<128x256xf32>
  }
  %o = ttile.cast %acc : tensor<128x256xf32> -> tensor<128x256xbf16>
  ttile.store %o, %C[%r, %c] : tensor<128x256xbf16>, memref<?x?xbf16>
  return
}

// gemm_256x128x64_s3_w8, programs in groups of 8 block rows: the
// grid is 1-d and consecutive programs walk down 8 block rows of one block
// column before moving right, so that the A and B panels they share stay
// in L2.
func.func @gemm_256x128x64_s3_w8_g8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 256 : index
  %cbn = arith.constant 128 : index
  %pid = ttile.program_id x
  %m = memref.dim %A, %c0 : memref<?x?xbf16>
  %n = memref.dim %B, %c1 : memref<?x?xbf16>
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %rows = arith.ceildivui %m, %cbm : index
  %cols = arith.ceildivui %n, %cbn : index
  %per_group = arith.muli %cols, %c8 : index
  %group = arith.divui %pid, %per_group : index
  %first = arith.muli %group, %c8 : index
  %left = arith.subi %rows, %first : index
  %size = arith.minui %left, %c8 : index
  %in_group = arith.remui %pid, %per_group : index
  %di = arith.remui %in_group, %size : index
  %i = arith.addi %first, %di : index
  %j = arith.divui %in_group, %size : index
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %zero = arith.constant dense<0.0> : tensor<256x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 3
      iter_args(%a0 = %zero) -> (tensor<256x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<256x64xbf16>, tensor<64x128xbf16> -> tensor<256x128xf32>
    ttile.yield %a1 : tensor<256x128xf32>
  }
  %o = ttile.cast %acc : tensor<256x128xf32> -> tensor<256x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<256x128xbf16>, memref<?x?xbf16>
  return
}

// gemm_256x128x64_s4_w8, programs in groups of 8 block rows: the
// grid is 1-d and consecutive programs walk down 8 block rows of one block
// column before moving right, so that the A and B panels they share stay
// in L2.
func.func @gemm_256x128x64_s4_w8_g8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 256 : index
  %cbn = arith.constant 128 : index
  %pid = ttile.program_id x
  %m = memref.dim %A, %c0 : memref<?x?xbf16>
  %n = memref.dim %B, %c1 : memref<?x?xbf16>
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %rows = arith.ceildivui %m, %cbm : index
  %cols = arith.ceildivui %n, %cbn : index
  %per_group = arith.muli %cols, %c8 : index
  %group = arith.divui %pid, %per_group : index
  %first = arith.muli %group, %c8 : index
  %left = arith.subi %rows, %first : index
  %size = arith.minui %left, %c8 : index
  %in_group = arith.remui %pid, %per_group : index
  %di = arith.remui %in_group, %size : index
  %i = arith.addi %first, %di : index
  %j = arith.divui %in_group, %size : index
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %zero = arith.constant dense<0.0> : tensor<256x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 4
      iter_args(%a0 = %zero) -> (tensor<256x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<256x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<256x64xbf16>, tensor<64x128xbf16> -> tensor<256x128xf32>
    ttile.yield %a1 : tensor<256x128xf32>
  }
  %o = ttile.cast %acc : tensor<256x128xf32> -> tensor<256x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<256x128xbf16>, memref<?x?xbf16>
  return
}

// gemm_128x256x64_s4_w8, programs in groups of 8 block rows: the
// grid is 1-d and consecutive programs walk down 8 block rows of one block
// column before moving right, so that the A and B panels they share stay
// in L2.
func.func @gemm_128x256x64_s4_w8_g8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 256 : index
  %pid = ttile.program_id x
  %m = memref.dim %A, %c0 : memref<?x?xbf16>
  %n = memref.dim %B, %c1 : memref<?x?xbf16>
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %rows = arith.ceildivui %m, %cbm : index
  %cols = arith.ceildivui %n, %cbn : index
  %per_group = arith.muli %cols, %c8 : index
  %group = arith.divui %pid, %per_group : index
  %first = arith.muli %group, %c8 : index
  %left = arith.subi %rows, %first : index
  %size = arith.minui %left, %c8 : index
  %in_group = arith.remui %pid, %per_group : index
  %di = arith.remui %in_group, %size : index
  %i = arith.addi %first, %di : index
  %j = arith.divui %in_group, %size : index
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 4
      iter_args(%a0 = %zero) -> (tensor<128x256xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x256xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
    ttile.yield %a1 : tensor<128x256xf32>
  }
  %o = ttile.cast %acc : tensor<128x256xf32> -> tensor<128x256xbf16>
  ttile.store %o, %C[%r, %c] : tensor<128x256xbf16>, memref<?x?xbf16>
  return
}

// gemm_128x128x64_s6_w8, programs in groups of 8 block rows: the
// grid is 1-d and consecutive programs walk down 8 block rows of one block
// column before moving right, so that the A and B panels they share stay
// in L2.
func.func @gemm_128x128x64_s6_w8_g8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 128 : index
  %pid = ttile.program_id x
  %m = memref.dim %A, %c0 : memref<?x?xbf16>
  %n = memref.dim %B, %c1 : memref<?x?xbf16>
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %rows = arith.ceildivui %m, %cbm : index
  %cols = arith.ceildivui %n, %cbn : index
  %per_group = arith.muli %cols, %c8 : index
  %group = arith.divui %pid, %per_group : index
  %first = arith.muli %group, %c8 : index
  %left = arith.subi %rows, %first : index
  %size = arith.minui %left, %c8 : index
  %in_group = arith.remui %pid, %per_group : index
  %di = arith.remui %in_group, %size : index
  %i = arith.addi %first, %di : index
  %j = arith.divui %in_group, %size : index
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 6
      iter_args(%a0 = %zero) -> (tensor<128x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x128xbf16> -> tensor<128x128xf32>
    ttile.yield %a1 : tensor<128x128xf32>
  }
  %o = ttile.cast %acc : tensor<128x128xf32> -> tensor<128x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<128x128xbf16>, memref<?x?xbf16>
  return
}

// gemm_256x128x32_s8_w8, programs in groups of 8 block rows: the
// grid is 1-d and consecutive programs walk down 8 block rows of one block
// column before moving right, so that the A and B panels they share stay
// in L2.
func.func @gemm_256x128x32_s8_w8_g8(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cbk = arith.constant 32 : index
  %cbm = arith.constant 256 : index
  %cbn = arith.constant 128 : index
  %pid = ttile.program_id x
  %m = memref.dim %A, %c0 : memref<?x?xbf16>
  %n = memref.dim %B, %c1 : memref<?x?xbf16>
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %rows = arith.ceildivui %m, %cbm : index
  %cols = arith.ceildivui %n, %cbn : index
  %per_group = arith.muli %cols, %c8 : index
  %group = arith.divui %pid, %per_group : index
  %first = arith.muli %group, %c8 : index
  %left = arith.subi %rows, %first : index
  %size = arith.minui %left, %c8 : index
  %in_group = arith.remui %pid, %per_group : index
  %di = arith.remui %in_group, %size : index
  %i = arith.addi %first, %di : index
  %j = arith.divui %in_group, %size : index
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %zero = arith.constant dense<0.0> : tensor<256x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 8
      iter_args(%a0 = %zero) -> (tensor<256x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<256x32xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<32x128xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<256x32xbf16>, tensor<32x128xbf16> -> tensor<256x128xf32>
    ttile.yield %a1 : tensor<256x128xf32>
  }
  %o = ttile.cast %acc : tensor<256x128xf32> -> tensor<256x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<256x128xbf16>, memref<?x?xbf16>
  return
}

// fp8 (e4m3) C = A @ Bt^T: Bt is N x K (K contiguous, the B layout wgmma
// takes for fp8), f32 accumulation, C written as bf16; programs grouped by
// 8 block rows.
func.func @gemm_fp8_128x256x128_s4_w8_g8(%A: memref<?x?xf8E4M3FN>,
                     %Bt: memref<?x?xf8E4M3FN>, %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cbk = arith.constant 128 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 256 : index
  %pid = ttile.program_id x
  %m = memref.dim %A, %c0 : memref<?x?xf8E4M3FN>
  %n = memref.dim %Bt, %c0 : memref<?x?xf8E4M3FN>
  %k = memref.dim %A, %c1 : memref<?x?xf8E4M3FN>
  %rows = arith.ceildivui %m, %cbm : index
  %cols = arith.ceildivui %n, %cbn : index
  %per_group = arith.muli %cols, %c8 : index
  %group = arith.divui %pid, %per_group : index
  %first = arith.muli %group, %c8 : index
  %left = arith.subi %rows, %first : index
  %size = arith.minui %left, %c8 : index
  %in_group = arith.remui %pid, %per_group : index
  %di = arith.remui %in_group, %size : index
  %i = arith.addi %first, %di : index
  %j = arith.divui %in_group, %size : index
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %zero = arith.constant dense<0.0> : tensor<128x256xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 4
      iter_args(%a0 = %zero) -> (tensor<128x256xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %bt = ttile.load %Bt[%c, %kk] : memref<?x?xf8E4M3FN> -> tensor<256x128xf8E4M3FN>
    %b = ttile.transpose %bt {permutation = array<i64: 1, 0>} : tensor<256x128xf8E4M3FN> -> tensor<128x256xf8E4M3FN>
    %a1 = ttile.dot %a, %b, %a0 : tensor<128x128xf8E4M3FN>, tensor<128x256xf8E4M3FN> -> tensor<128x256xf32>
    ttile.yield %a1 : tensor<128x256xf32>
  }
  %o = ttile.cast %acc : tensor<128x256xf32> -> tensor<128x256xbf16>
  ttile.store %o, %C[%r, %c] : tensor<128x256xbf16>, memref<?x?xbf16>
  return
}

// fp8 (e4m3) C = A @ Bt^T: Bt is N x K (K contiguous, the B layout wgmma
// takes for fp8), f32 accumulation, C written as bf16; programs grouped by
// 8 block rows.
func.func @gemm_fp8_256x128x128_s4_w8_g8(%A: memref<?x?xf8E4M3FN>,
                     %Bt: memref<?x?xf8E4M3FN>, %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cbk = arith.constant 128 : index
  %cbm = arith.constant 256 : index
  %cbn = arith.constant 128 : index
  %pid = ttile.program_id x
  %m = memref.dim %A, %c0 : memref<?x?xf8E4M3FN>
  %n = memref.dim %Bt, %c0 : memref<?x?xf8E4M3FN>
  %k = memref.dim %A, %c1 : memref<?x?xf8E4M3FN>
  %rows = arith.ceildivui %m, %cbm : index
  %cols = arith.ceildivui %n, %cbn : index
  %per_group = arith.muli %cols, %c8 : index
  %group = arith.divui %pid, %per_group : index
  %first = arith.muli %group, %c8 : index
  %left = arith.subi %rows, %first : index
  %size = arith.minui %left, %c8 : index
  %in_group = arith.remui %pid, %per_group : index
  %di = arith.remui %in_group, %size : index
  %i = arith.addi %first, %di : index
  %j = arith.divui %in_group, %size : index
  %r = arith.muli %i, %cbm : index
  %c = arith.muli %j, %cbn : index
  %zero = arith.constant dense<0.0> : tensor<256x128xf32>
  %acc = ttile.range %kk = %c0 to %k step %cbk stages 4
      iter_args(%a0 = %zero) -> (tensor<256x128xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xf8E4M3FN> -> tensor<256x128xf8E4M3FN>
    %bt = ttile.load %Bt[%c, %kk] : memref<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %b = ttile.transpose %bt {permutation = array<i64: 1, 0>} : tensor<128x128xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
    %a1 = ttile.dot %a, %b, %a0 : tensor<256x128xf8E4M3FN>, tensor<128x128xf8E4M3FN> -> tensor<256x128xf32>
    ttile.yield %a1 : tensor<256x128xf32>
  }
  %o = ttile.cast %acc : tensor<256x128xf32> -> tensor<256x128xbf16>
  ttile.store %o, %C[%r, %c] : tensor<256x128xbf16>, memref<?x?xbf16>
  return
}

// gemm_128x256x64_s4_w8_g8, persistent: a grid of at most one program per
// SM, each looping over output tiles (t, t + programs, ...): on sm_90a the
// producer warpgroup copies the next tile's blocks while the consumers
// finish the current one.
func.func @gemm_128x256x64_s4_w8_g8_p(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                     %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cbk = arith.constant 64 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 256 : index
  %pid = ttile.program_id x
  %np = ttile.num_programs x
  %m = memref.dim %A, %c0 : memref<?x?xbf16>
  %n = memref.dim %B, %c1 : memref<?x?xbf16>
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %rows = arith.ceildivui %m, %cbm : index
  %cols = arith.ceildivui %n, %cbn : index
  %tiles = arith.muli %rows, %cols : index
  scf.for %t = %pid to %tiles step %np {
    %per_group = arith.muli %cols, %c8 : index
    %group = arith.divui %t, %per_group : index
    %first = arith.muli %group, %c8 : index
    %left = arith.subi %rows, %first : index
    %size = arith.minui %left, %c8 : index
    %in_group = arith.remui %t, %per_group : index
    %di = arith.remui %in_group, %size : index
    %i = arith.addi %first, %di : index
    %j = arith.divui %in_group, %size : index
    %r = arith.muli %i, %cbm : index
    %c = arith.muli %j, %cbn : index
    %zero = arith.constant dense<0.0> : tensor<128x256xf32>
    %acc = ttile.range %kk = %c0 to %k step %cbk stages 4
        iter_args(%a0 = %zero) -> (tensor<128x256xf32>) {
      %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<128x64xbf16>
      %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<64x256xbf16>
      %a1 = ttile.dot %a, %b, %a0 : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xf32>
      ttile.yield %a1 : tensor<128x256xf32>
    }
    %o = ttile.cast %acc : tensor<128x256xf32> -> tensor<128x256xbf16>
    ttile.store %o, %C[%r, %c] : tensor<128x256xbf16>, memref<?x?xbf16>
  }
  return
}

// gemm_fp8_128x256x128_s4_w8_g8, persistent (as above).
func.func @gemm_fp8_128x256x128_s4_w8_g8_p(%A: memref<?x?xf8E4M3FN>,
                     %Bt: memref<?x?xf8E4M3FN>, %C: memref<?x?xbf16>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %cbk = arith.constant 128 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 256 : index
  %pid = ttile.program_id x
  %np = ttile.num_programs x
  %m = memref.dim %A, %c0 : memref<?x?xf8E4M3FN>
  %n = memref.dim %Bt, %c0 : memref<?x?xf8E4M3FN>
  %k = memref.dim %A, %c1 : memref<?x?xf8E4M3FN>
  %rows = arith.ceildivui %m, %cbm : index
  %cols = arith.ceildivui %n, %cbn : index
  %tiles = arith.muli %rows, %cols : index
  scf.for %t = %pid to %tiles step %np {
    %per_group = arith.muli %cols, %c8 : index
    %group = arith.divui %t, %per_group : index
    %first = arith.muli %group, %c8 : index
    %left = arith.subi %rows, %first : index
    %size = arith.minui %left, %c8 : index
    %in_group = arith.remui %t, %per_group : index
    %di = arith.remui %in_group, %size : index
    %i = arith.addi %first, %di : index
    %j = arith.divui %in_group, %size : index
    %r = arith.muli %i, %cbm : index
    %c = arith.muli %j, %cbn : index
    %zero = arith.constant dense<0.0> : tensor<128x256xf32>
    %acc = ttile.range %kk = %c0 to %k step %cbk stages 4
        iter_args(%a0 = %zero) -> (tensor<128x256xf32>) {
      %a = ttile.load %A[%r, %kk] : memref<?x?xf8E4M3FN> -> tensor<128x128xf8E4M3FN>
      %bt = ttile.load %Bt[%c, %kk] : memref<?x?xf8E4M3FN> -> tensor<256x128xf8E4M3FN>
      %b = ttile.transpose %bt {permutation = array<i64: 1, 0>} : tensor<256x128xf8E4M3FN> -> tensor<128x256xf8E4M3FN>
      %a1 = ttile.dot %a, %b, %a0 : tensor<128x128xf8E4M3FN>, tensor<128x256xf8E4M3FN> -> tensor<128x256xf32>
      ttile.yield %a1 : tensor<128x256xf32>
    }
    %o = ttile.cast %acc : tensor<128x256xf32> -> tensor<128x256xbf16>
    ttile.store %o, %C[%r, %c] : tensor<128x256xbf16>, memref<?x?xbf16>
  }
  return
}
