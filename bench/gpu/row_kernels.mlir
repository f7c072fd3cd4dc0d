// Memory-bound row kernels for bench/gpu/row_bench.cpp: one 4096-element
// row per program on 8 warps, plus a copy kernel of the same shape that
// measures the bandwidth the others are compared with.

func.func @copy_rows(%X: memref<?x?xf32>, %Y: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %row = ttile.program_id x
  %x = ttile.load %X[%row, %c0] : memref<?x?xf32> -> tensor<1x4096xf32>
  ttile.store %x, %Y[%row, %c0] : tensor<1x4096xf32>, memref<?x?xf32>
  return
}

func.func @softmax_rows(%X: memref<?x?xf32>, %Y: memref<?x?xf32>)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %row = ttile.program_id x
  %x = ttile.load %X[%row, %c0] {padding = 0xFF800000 : f32}
      : memref<?x?xf32> -> tensor<1x4096xf32>
  %m = ttile.reduce max %x {dim = 1 : i32} : tensor<1x4096xf32> -> tensor<1xf32>
  %mb = ttile.broadcast %m {dims = array<i64: 0>} : tensor<1xf32> -> tensor<1x4096xf32>
  %d = arith.subf %x, %mb : tensor<1x4096xf32>
  %e = math.exp %d : tensor<1x4096xf32>
  %s = ttile.reduce sum %e {dim = 1 : i32} : tensor<1x4096xf32> -> tensor<1xf32>
  %one = arith.constant dense<1.0> : tensor<1xf32>
  %inv = arith.divf %one, %s : tensor<1xf32>
  %ib = ttile.broadcast %inv {dims = array<i64: 0>} : tensor<1xf32> -> tensor<1x4096xf32>
  %y = arith.mulf %e, %ib : tensor<1x4096xf32>
  ttile.store %y, %Y[%row, %c0] : tensor<1x4096xf32>, memref<?x?xf32>
  return
}

func.func @rmsnorm_rows(%X: memref<?x?xf32>, %W: memref<?xf32>,
                        %Y: memref<?x?xf32>, %eps: f32)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %row = ttile.program_id x
  %n = memref.dim %X, %c1 : memref<?x?xf32>
  %ni = arith.index_cast %n : index to i32
  %nf = arith.sitofp %ni : i32 to f32
  %x = ttile.load %X[%row, %c0] : memref<?x?xf32> -> tensor<1x4096xf32>
  %sq = arith.mulf %x, %x : tensor<1x4096xf32>
  %ss = ttile.reduce sum %sq {dim = 1 : i32} : tensor<1x4096xf32> -> tensor<1xf32>
  %nv = tensor.splat %nf : tensor<1xf32>
  %ms = arith.divf %ss, %nv : tensor<1xf32>
  %ev = tensor.splat %eps : tensor<1xf32>
  %r = arith.addf %ms, %ev : tensor<1xf32>
  %rs = math.rsqrt %r : tensor<1xf32>
  %rb = ttile.broadcast %rs {dims = array<i64: 0>} : tensor<1xf32> -> tensor<1x4096xf32>
  %w1 = ttile.load %W[%c0] : memref<?xf32> -> tensor<4096xf32>
  %w = ttile.broadcast %w1 {dims = array<i64: 1>} : tensor<4096xf32> -> tensor<1x4096xf32>
  %xn = arith.mulf %x, %rb : tensor<1x4096xf32>
  %y = arith.mulf %xn, %w : tensor<1x4096xf32>
  ttile.store %y, %Y[%row, %c0] : tensor<1x4096xf32>, memref<?x?xf32>
  return
}
