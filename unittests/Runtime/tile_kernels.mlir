// Tile IR kernels without layouts: TesseraCudaTests compiles them with
// tessera-opt (-tessera-ttile-assign-layouts, -tessera-convert-ttile-to-gpu,
// the NVVM pipeline) to PTX and checks them on the GPU against references
// computed on the CPU in double precision.

// Softmax of each row of X [rows, n], n <= 256; four rows per program.
func.func @softmax_rows(%X: memref<?x?xf32>, %Y: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %pid = ttile.program_id x
  %row = arith.muli %pid, %c4 : index
  %x = ttile.load %X[%row, %c0] {padding = 0xFF800000 : f32}
      : memref<?x?xf32> -> tensor<4x256xf32>
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

// LayerNorm of bf16 rows (n <= 512) with f32 statistics, weight and bias;
// two rows per program on 8 warps (rows are split over warps, so the sums
// cross warps).
func.func @layernorm_bf16(%X: memref<?x?xbf16>, %W: memref<?xf32>,
                          %B: memref<?xf32>, %Y: memref<?x?xbf16>,
                          %eps: f32)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %pid = ttile.program_id x
  %row = arith.muli %pid, %c2 : index
  %n = memref.dim %X, %c1 : memref<?x?xbf16>
  %ni = arith.index_cast %n : index to i32
  %nf = arith.sitofp %ni : i32 to f32
  %xb = ttile.load %X[%row, %c0] : memref<?x?xbf16> -> tensor<2x512xbf16>
  %x = ttile.cast %xb : tensor<2x512xbf16> -> tensor<2x512xf32>
  %sum = ttile.reduce sum %x {dim = 1 : i32} : tensor<2x512xf32> -> tensor<2xf32>
  %nv = tensor.splat %nf : tensor<2xf32>
  %mean = arith.divf %sum, %nv : tensor<2xf32>
  %meanb = ttile.broadcast %mean {dims = array<i64: 0>} : tensor<2xf32> -> tensor<2x512xf32>
  %cols = ttile.iota {dim = 1 : i32} : tensor<2x512xi32>
  %nt = tensor.splat %ni : tensor<2x512xi32>
  %valid = arith.cmpi slt, %cols, %nt : tensor<2x512xi32>
  %zero = arith.constant dense<0.0> : tensor<2x512xf32>
  %dx = arith.subf %x, %meanb : tensor<2x512xf32>
  %dm = arith.select %valid, %dx, %zero : tensor<2x512xi1>, tensor<2x512xf32>
  %sq = arith.mulf %dm, %dm : tensor<2x512xf32>
  %ss = ttile.reduce sum %sq {dim = 1 : i32} : tensor<2x512xf32> -> tensor<2xf32>
  %var = arith.divf %ss, %nv : tensor<2xf32>
  %ev = tensor.splat %eps : tensor<2xf32>
  %ve = arith.addf %var, %ev : tensor<2xf32>
  %rstd = math.rsqrt %ve : tensor<2xf32>
  %rb = ttile.broadcast %rstd {dims = array<i64: 0>} : tensor<2xf32> -> tensor<2x512xf32>
  %w1 = ttile.load %W[%c0] : memref<?xf32> -> tensor<512xf32>
  %b1 = ttile.load %B[%c0] : memref<?xf32> -> tensor<512xf32>
  %w = ttile.broadcast %w1 {dims = array<i64: 1>} : tensor<512xf32> -> tensor<2x512xf32>
  %bb = ttile.broadcast %b1 {dims = array<i64: 1>} : tensor<512xf32> -> tensor<2x512xf32>
  %xn = arith.mulf %dm, %rb : tensor<2x512xf32>
  %xw = arith.mulf %xn, %w : tensor<2x512xf32>
  %y = arith.addf %xw, %bb : tensor<2x512xf32>
  %yb = ttile.cast %y : tensor<2x512xf32> -> tensor<2x512xbf16>
  ttile.store %yb, %Y[%row, %c0] : tensor<2x512xbf16>, memref<?x?xbf16>
  return
}

// Y = X^T, 32x64 blocks of X per program (grid: x over row blocks, y over
// column blocks).
func.func @transpose(%X: memref<?x?xf32>, %Y: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %c32 : index
  %c = arith.muli %j, %c64 : index
  %x = ttile.load %X[%r, %c] : memref<?x?xf32> -> tensor<32x64xf32>
  %t = ttile.transpose %x {permutation = array<i64: 1, 0>} : tensor<32x64xf32> -> tensor<64x32xf32>
  ttile.store %t, %Y[%c, %r] : tensor<64x32xf32>, memref<?x?xf32>
  return
}

// C = A @ B in f32 on FMAs: 32x32 blocks of C, K in steps of 16.
func.func @matmul_fma(%A: memref<?x?xf32>, %B: memref<?x?xf32>,
                      %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %c32 : index
  %c = arith.muli %j, %c32 : index
  %k = memref.dim %A, %c1 : memref<?x?xf32>
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %acc = ttile.range %kk = %c0 to %k step %c16 stages 2
      iter_args(%a0 = %zero) -> (tensor<32x32xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xf32> -> tensor<32x16xf32>
    %b = ttile.load %B[%kk, %c] : memref<?x?xf32> -> tensor<16x32xf32>
    %a1 = ttile.dot %a, %b, %a0 : tensor<32x16xf32>, tensor<16x32xf32> -> tensor<32x32xf32>
    ttile.yield %a1 : tensor<32x32xf32>
  }
  ttile.store %acc, %C[%r, %c] : tensor<32x32xf32>, memref<?x?xf32>
  return
}

// Causal flash attention forward over one head: Q, K, V, O [s, 32] bf16,
// 32 queries per program against 32-key blocks, as spec 002's
// flash_attention writes it with tile ops.
func.func @flash_attention_causal(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                                  %V: memref<?x?xbf16>, %O: memref<?x?xbf16>,
                                  %scale: f32)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %pid = ttile.program_id x
  %row0 = arith.muli %pid, %c32 : index
  %rowEnd = arith.addi %row0, %c32 : index
  %len = memref.dim %K, %c0 : memref<?x?xbf16>
  %end = arith.minui %rowEnd, %len : index
  %q = ttile.load %Q[%row0, %c0] : memref<?x?xbf16> -> tensor<32x32xbf16>
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %minf = arith.constant dense<0xFF800000> : tensor<32xf32>
  %lzero = arith.constant dense<0.0> : tensor<32xf32>
  %r:3 = ttile.range %n = %c0 to %end step %c32
      iter_args(%acc = %zero, %m = %minf, %l = %lzero)
      -> (tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32>) {
    %k = ttile.load %K[%n, %c0] : memref<?x?xbf16> -> tensor<32x32xbf16>
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<32x32xbf16> -> tensor<32x32xbf16>
    %s0 = ttile.dot %q, %kt, %zero : tensor<32x32xbf16>, tensor<32x32xbf16> -> tensor<32x32xf32>
    %sc = tensor.splat %scale : tensor<32x32xf32>
    %s1 = arith.mulf %s0, %sc : tensor<32x32xf32>
    %s = ttile.mask_causal %s1, %row0, %n : tensor<32x32xf32>
    %p, %mc, %lc = ttile.softmax_online %s : tensor<32x32xf32> -> tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32>
    %v = ttile.load %V[%n, %c0] : memref<?x?xbf16> -> tensor<32x32xbf16>
    %acc2, %m2, %l2 = ttile.softmax_accumulate %acc, %m, %l, %p, %v, %mc, %lc
        : tensor<32x32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x32xbf16>
    ttile.yield %acc2, %m2, %l2 : tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32>
  }
  %lb = ttile.broadcast %r#2 {dims = array<i64: 0>} : tensor<32xf32> -> tensor<32x32xf32>
  %o32 = arith.divf %r#0, %lb : tensor<32x32xf32>
  %o = ttile.cast %o32 : tensor<32x32xf32> -> tensor<32x32xbf16>
  ttile.store %o, %O[%row0, %c0] : tensor<32x32xbf16>, memref<?x?xbf16>
  return
}

// The same with 64-query blocks and head dim 64, keys in blocks of 32
// loaded one block ahead: built for sm_90a, Q K^T runs on wgmma (Q copied
// once into shared memory, K^T the transposed view of each K block, K
// blocks in a ring of two shared buffers), P V on mma.sync.
func.func @flash_attention_causal_64(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                                     %V: memref<?x?xbf16>, %O: memref<?x?xbf16>,
                                     %scale: f32)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %pid = ttile.program_id x
  %row0 = arith.muli %pid, %c64 : index
  %rowEnd = arith.addi %row0, %c64 : index
  %len = memref.dim %K, %c0 : memref<?x?xbf16>
  %end = arith.minui %rowEnd, %len : index
  %q = ttile.load %Q[%row0, %c0] : memref<?x?xbf16> -> tensor<64x64xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x32xf32>
  %accz = arith.constant dense<0.0> : tensor<64x64xf32>
  %minf = arith.constant dense<0xFF800000> : tensor<64xf32>
  %lzero = arith.constant dense<0.0> : tensor<64xf32>
  %r:3 = ttile.range %n = %c0 to %end step %c32 stages 2
      iter_args(%acc = %accz, %m = %minf, %l = %lzero)
      -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
    %k = ttile.load %K[%n, %c0] : memref<?x?xbf16> -> tensor<32x64xbf16>
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<32x64xbf16> -> tensor<64x32xbf16>
    %s0 = ttile.dot %q, %kt, %zero : tensor<64x64xbf16>, tensor<64x32xbf16> -> tensor<64x32xf32>
    %sc = tensor.splat %scale : tensor<64x32xf32>
    %s1 = arith.mulf %s0, %sc : tensor<64x32xf32>
    %s = ttile.mask_causal %s1, %row0, %n : tensor<64x32xf32>
    %p, %mc, %lc = ttile.softmax_online %s : tensor<64x32xf32> -> tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>
    %v = ttile.load %V[%n, %c0] : memref<?x?xbf16> -> tensor<32x64xbf16>
    %acc2, %m2, %l2 = ttile.softmax_accumulate %acc, %m, %l, %p, %v, %mc, %lc
        : tensor<64x64xf32>, tensor<64xf32>, tensor<64x32xf32>, tensor<32x64xbf16>
    ttile.yield %acc2, %m2, %l2 : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
  }
  %lb = ttile.broadcast %r#2 {dims = array<i64: 0>} : tensor<64xf32> -> tensor<64x64xf32>
  %o32 = arith.divf %r#0, %lb : tensor<64x64xf32>
  %o = ttile.cast %o32 : tensor<64x64xf32> -> tensor<64x64xbf16>
  ttile.store %o, %O[%row0, %c0] : tensor<64x64xbf16>, memref<?x?xbf16>
  return
}

// C = A @ B with bf16 operands on the tensor cores (mma.sync m16n8k16, f32
// accumulators): 64x64 blocks of C on 4 warps, K in steps of 32.
func.func @matmul_bf16(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>,
                       %C: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %i = ttile.program_id x
  %j = ttile.program_id y
  %r = arith.muli %i, %c64 : index
  %c = arith.muli %j, %c64 : index
  %k = memref.dim %A, %c1 : memref<?x?xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %acc = ttile.range %kk = %c0 to %k step %c32
      iter_args(%a0 = %zero) -> (tensor<64x64xf32>) {
    %a = ttile.load %A[%r, %kk] : memref<?x?xbf16> -> tensor<64x32xbf16>
    %b = ttile.load %B[%kk, %c] : memref<?x?xbf16> -> tensor<32x64xbf16>
    %a1 = ttile.dot %a, %b, %a0 : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
    ttile.yield %a1 : tensor<64x64xf32>
  }
  ttile.store %acc, %C[%r, %c] : tensor<64x64xf32>, memref<?x?xf32>
  return
}
