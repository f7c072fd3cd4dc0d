// Attention forward kernels for bench/gpu/attn_bench.cpp: bf16 Q, K, V, O
// as [batch * heads * seq, 128] row-major, f32 softmax statistics and
// accumulators, both products on the tensor cores (built for sm_90a: wgmma,
// Q and K^T from shared memory, P from registers, V from shared memory),
// 64 queries per program against 64-key blocks on 4 warps, K and V loaded
// one block ahead (`stages 2`); seq a multiple of 64.

// Non-causal attention forward: one program per BM queries of one head
// (grid x: seq / BM, grid y: batch * heads), keys and values in blocks of BN.
func.func @attn_fwd(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                 %V: memref<?x?xbf16>, %O: memref<?x?xbf16>,
                 %seq: index, %scale: f32)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %cbm = arith.constant 64 : index
  %cbn = arith.constant 64 : index
  %pid = ttile.program_id x
  %bh = ttile.program_id y
  %base = arith.muli %bh, %seq : index
  %q0 = arith.muli %pid, %cbm : index
  %row = arith.addi %base, %q0 : index
  %end = arith.addi %seq, %c0 : index
  %q = ttile.load %Q[%row, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %zs = arith.constant dense<0.0> : tensor<64x64xf32>
  %accz = arith.constant dense<0.0> : tensor<64x128xf32>
  %minf = arith.constant dense<0xFF800000> : tensor<64xf32>
  %lzero = arith.constant dense<0.0> : tensor<64xf32>
  %r:3 = ttile.range %n = %c0 to %end step %cbn stages 2
      iter_args(%acc = %accz, %m = %minf, %l = %lzero)
      -> (tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>) {
    %krow = arith.addi %base, %n : index
    %k = ttile.load %K[%krow, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<64x128xbf16> -> tensor<128x64xbf16>
    %s0 = ttile.dot %q, %kt, %zero : tensor<64x128xbf16>, tensor<128x64xbf16> -> tensor<64x64xf32>
    %sc = tensor.splat %scale : tensor<64x64xf32>
    %s1 = arith.mulf %s0, %sc : tensor<64x64xf32>
    %s = arith.addf %s1, %zs : tensor<64x64xf32>
    %p, %mc, %lc = ttile.softmax_online %s : tensor<64x64xf32> -> tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    %v = ttile.load %V[%krow, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %acc2, %m2, %l2 = ttile.softmax_accumulate %acc, %m, %l, %p, %v, %mc, %lc
        : tensor<64x128xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x128xbf16>
    ttile.yield %acc2, %m2, %l2 : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>
  }
  %lb = ttile.broadcast %r#2 {dims = array<i64: 0>} : tensor<64xf32> -> tensor<64x128xf32>
  %o32 = arith.divf %r#0, %lb : tensor<64x128xf32>
  %o = ttile.cast %o32 : tensor<64x128xf32> -> tensor<64x128xbf16>
  ttile.store %o, %O[%row, %c0] : tensor<64x128xbf16>, memref<?x?xbf16>
  return
}

// Causal attention forward: one program per BM queries of one head
// (grid x: seq / BM, grid y: batch * heads), keys and values in blocks of BN.
func.func @attn_fwd_causal(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                 %V: memref<?x?xbf16>, %O: memref<?x?xbf16>,
                 %seq: index, %scale: f32)
    attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  %cbm = arith.constant 64 : index
  %cbn = arith.constant 64 : index
  %pid = ttile.program_id x
  %bh = ttile.program_id y
  %base = arith.muli %bh, %seq : index
  %q0 = arith.muli %pid, %cbm : index
  %row = arith.addi %base, %q0 : index
  %qEnd = arith.addi %q0, %cbm : index
  %end = arith.minui %qEnd, %seq : index
  %q = ttile.load %Q[%row, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %zs = arith.constant dense<0.0> : tensor<64x64xf32>
  %accz = arith.constant dense<0.0> : tensor<64x128xf32>
  %minf = arith.constant dense<0xFF800000> : tensor<64xf32>
  %lzero = arith.constant dense<0.0> : tensor<64xf32>
  %r:3 = ttile.range %n = %c0 to %end step %cbn stages 2
      iter_args(%acc = %accz, %m = %minf, %l = %lzero)
      -> (tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>) {
    %krow = arith.addi %base, %n : index
    %k = ttile.load %K[%krow, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<64x128xbf16> -> tensor<128x64xbf16>
    %s0 = ttile.dot %q, %kt, %zero : tensor<64x128xbf16>, tensor<128x64xbf16> -> tensor<64x64xf32>
    %sc = tensor.splat %scale : tensor<64x64xf32>
    %s1 = arith.mulf %s0, %sc : tensor<64x64xf32>
    %s = ttile.mask_causal %s1, %q0, %n : tensor<64x64xf32>
    %p, %mc, %lc = ttile.softmax_online %s : tensor<64x64xf32> -> tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    %v = ttile.load %V[%krow, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %acc2, %m2, %l2 = ttile.softmax_accumulate %acc, %m, %l, %p, %v, %mc, %lc
        : tensor<64x128xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x128xbf16>
    ttile.yield %acc2, %m2, %l2 : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>
  }
  %lb = ttile.broadcast %r#2 {dims = array<i64: 0>} : tensor<64xf32> -> tensor<64x128xf32>
  %o32 = arith.divf %r#0, %lb : tensor<64x128xf32>
  %o = ttile.cast %o32 : tensor<64x128xf32> -> tensor<64x128xbf16>
  ttile.store %o, %O[%row, %c0] : tensor<64x128xbf16>, memref<?x?xbf16>
  return
}

// 128 queries per program on 8 warps (two warpgroups along M): non-causal
// attention forward, one program per BM queries of one head
// (grid x: seq / BM, grid y: batch * heads), keys and values in blocks of BN.
func.func @attn_fwd_q128(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                 %V: memref<?x?xbf16>, %O: memref<?x?xbf16>,
                 %seq: index, %scale: f32)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 64 : index
  %pid = ttile.program_id x
  %bh = ttile.program_id y
  %base = arith.muli %bh, %seq : index
  %q0 = arith.muli %pid, %cbm : index
  %row = arith.addi %base, %q0 : index
  %end = arith.addi %seq, %c0 : index
  %q = ttile.load %Q[%row, %c0] : memref<?x?xbf16> -> tensor<128x128xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %zs = arith.constant dense<0.0> : tensor<128x64xf32>
  %accz = arith.constant dense<0.0> : tensor<128x128xf32>
  %minf = arith.constant dense<0xFF800000> : tensor<128xf32>
  %lzero = arith.constant dense<0.0> : tensor<128xf32>
  %r:3 = ttile.range %n = %c0 to %end step %cbn stages 2
      iter_args(%acc = %accz, %m = %minf, %l = %lzero)
      -> (tensor<128x128xf32>, tensor<128xf32>, tensor<128xf32>) {
    %krow = arith.addi %base, %n : index
    %k = ttile.load %K[%krow, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<64x128xbf16> -> tensor<128x64xbf16>
    %s0 = ttile.dot %q, %kt, %zero : tensor<128x128xbf16>, tensor<128x64xbf16> -> tensor<128x64xf32>
    %sc = tensor.splat %scale : tensor<128x64xf32>
    %s1 = arith.mulf %s0, %sc : tensor<128x64xf32>
    %s = arith.addf %s1, %zs : tensor<128x64xf32>
    %p, %mc, %lc = ttile.softmax_online %s : tensor<128x64xf32> -> tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
    %v = ttile.load %V[%krow, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %acc2, %m2, %l2 = ttile.softmax_accumulate %acc, %m, %l, %p, %v, %mc, %lc
        : tensor<128x128xf32>, tensor<128xf32>, tensor<128x64xf32>, tensor<64x128xbf16>
    ttile.yield %acc2, %m2, %l2 : tensor<128x128xf32>, tensor<128xf32>, tensor<128xf32>
  }
  %lb = ttile.broadcast %r#2 {dims = array<i64: 0>} : tensor<128xf32> -> tensor<128x128xf32>
  %o32 = arith.divf %r#0, %lb : tensor<128x128xf32>
  %o = ttile.cast %o32 : tensor<128x128xf32> -> tensor<128x128xbf16>
  ttile.store %o, %O[%row, %c0] : tensor<128x128xbf16>, memref<?x?xbf16>
  return
}

// 128 queries per program on 8 warps: causal attention forward, one
// program per BM queries of one head
// (grid x: seq / BM, grid y: batch * heads), keys and values in blocks of BN.
func.func @attn_fwd_causal_q128(%Q: memref<?x?xbf16>, %K: memref<?x?xbf16>,
                 %V: memref<?x?xbf16>, %O: memref<?x?xbf16>,
                 %seq: index, %scale: f32)
    attributes {ttile.kernel, ttile.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : index
  %cbm = arith.constant 128 : index
  %cbn = arith.constant 64 : index
  %pid = ttile.program_id x
  %bh = ttile.program_id y
  %base = arith.muli %bh, %seq : index
  %q0 = arith.muli %pid, %cbm : index
  %row = arith.addi %base, %q0 : index
  %qEnd = arith.addi %q0, %cbm : index
  %end = arith.minui %qEnd, %seq : index
  %q = ttile.load %Q[%row, %c0] : memref<?x?xbf16> -> tensor<128x128xbf16>
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %zs = arith.constant dense<0.0> : tensor<128x64xf32>
  %accz = arith.constant dense<0.0> : tensor<128x128xf32>
  %minf = arith.constant dense<0xFF800000> : tensor<128xf32>
  %lzero = arith.constant dense<0.0> : tensor<128xf32>
  %r:3 = ttile.range %n = %c0 to %end step %cbn stages 2
      iter_args(%acc = %accz, %m = %minf, %l = %lzero)
      -> (tensor<128x128xf32>, tensor<128xf32>, tensor<128xf32>) {
    %krow = arith.addi %base, %n : index
    %k = ttile.load %K[%krow, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<64x128xbf16> -> tensor<128x64xbf16>
    %s0 = ttile.dot %q, %kt, %zero : tensor<128x128xbf16>, tensor<128x64xbf16> -> tensor<128x64xf32>
    %sc = tensor.splat %scale : tensor<128x64xf32>
    %s1 = arith.mulf %s0, %sc : tensor<128x64xf32>
    %s = ttile.mask_causal %s1, %q0, %n : tensor<128x64xf32>
    %p, %mc, %lc = ttile.softmax_online %s : tensor<128x64xf32> -> tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
    %v = ttile.load %V[%krow, %c0] : memref<?x?xbf16> -> tensor<64x128xbf16>
    %acc2, %m2, %l2 = ttile.softmax_accumulate %acc, %m, %l, %p, %v, %mc, %lc
        : tensor<128x128xf32>, tensor<128xf32>, tensor<128x64xf32>, tensor<64x128xbf16>
    ttile.yield %acc2, %m2, %l2 : tensor<128x128xf32>, tensor<128xf32>, tensor<128xf32>
  }
  %lb = ttile.broadcast %r#2 {dims = array<i64: 0>} : tensor<128xf32> -> tensor<128x128xf32>
  %o32 = arith.divf %r#0, %lb : tensor<128x128xf32>
  %o = ttile.cast %o32 : tensor<128x128xf32> -> tensor<128x128xbf16>
  ttile.store %o, %O[%row, %c0] : tensor<128x128xbf16>, memref<?x?xbf16>
  return
}
