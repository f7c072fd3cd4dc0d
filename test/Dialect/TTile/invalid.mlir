// RUN: tessera-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{threadsPerWarp [4, 4] has 16 threads; a warp has 32}}
func.func private @f(tensor<8x8xf32, #ttile.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 4], warpsPerCTA = [1, 1], order = [1, 0]>>)

// -----

// expected-error @+1 {{order [0, 0] is not a permutation of the 2 dims}}
func.func private @f(tensor<8x8xf32, #ttile.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [0, 0]>>)

// -----

// expected-error @+1 {{wgmma (version 3) computes 64xN per warpgroup with N a multiple of 8 up to 256, got 64x12}}
func.func private @f(tensor<64x12xf32, #ttile.mma<version = 3, warpsPerCTA = [4, 1], instrShape = [64, 12, 16]>>)

// -----

// expected-error @+1 {{wgmma needs whole warpgroups (warps a multiple of 4), got [2, 1]}}
func.func private @f(tensor<64x64xf32, #ttile.mma<version = 3, warpsPerCTA = [2, 1], instrShape = [64, 64, 16]>>)

// -----

// expected-error @+1 {{a dot_operand's parent must be an mma or blocked layout}}
func.func private @f(tensor<64x64xf32, #ttile.dot_operand<opIdx = 0, parent = #ttile.slice<dim = 0, parent = #ttile.mma<version = 2, warpsPerCTA = [4, 1], instrShape = [16, 8, 16]>>, kWidth = 8>>)

// -----

#mma = #ttile.mma<version = 2, warpsPerCTA = [4, 1], instrShape = [16, 8, 16]>
func.func @f() {
  // expected-error @+1 {{'ttile.iota' op result 0 is 1-d but its layout describes 2-d tiles}}
  %t = ttile.iota {dim = 0 : i32} : tensor<64xi32, #mma>
  return
}

// -----

func.func @f(%m: memref<?x?xf32>, %i: index) {
  // expected-error @+1 {{'ttile.load' op the tile is 1-d but the memref is 2-d (use unit tile dims)}}
  %t = ttile.load %m[%i] : memref<?x?xf32> -> tensor<64xf32>
  return
}

// -----

func.func @f(%m: memref<?x?xf32>, %i: index) {
  // expected-error @+1 {{'ttile.load' op the tile's elements are 'bf16' but the memref's 'f32'}}
  %t = ttile.load %m[%i, %i] : memref<?x?xf32> -> tensor<8x64xbf16>
  return
}

// -----

func.func @f(%m: memref<?x?xf32>, %i: index) {
  // expected-error @+1 {{'ttile.load' op padding 0 : i32 is not a 'f32'}}
  %t = ttile.load %m[%i, %i] {padding = 0 : i32} : memref<?x?xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @f(%m: memref<?x?xf32, 5>, %i: index) {
  // expected-error @+1 {{memory must be global (no memory space or #gpu.address_space<global>) or shared (#gpu.address_space<workgroup>), got 5}}
  %t = ttile.load %m[%i, %i] : memref<?x?xf32, 5> -> tensor<8x64xf32>
  return
}

// -----

func.func @f(%t: tensor<8x64xf32>, %m: memref<?x?xf32>, %i: index, %mask: tensor<8x32xi1>) {
  // expected-error @+1 {{'ttile.store' op the mask is [8, 32] but the tile [8, 64]}}
  ttile.store %t, %m[%i, %i] mask %mask : tensor<8x64xf32>, memref<?x?xf32>, tensor<8x32xi1>
  return
}

// -----

func.func @f(%a: tensor<64x32xbf16>, %b: tensor<16x64xbf16>, %c: tensor<64x64xf32>) {
  // expected-error @+1 {{shapes do not chain: a [64, 32] x b [16, 64] + acc [64, 64] (want [M, K] x [K, N] + [M, N])}}
  %d = ttile.dot %a, %b, %c : tensor<64x32xbf16>, tensor<16x64xbf16> -> tensor<64x64xf32>
  return
}

// -----

func.func @f(%a: tensor<64x32xbf16>, %b: tensor<32x64xbf16>, %c: tensor<64x64xbf16>) {
  // expected-error @+1 {{has no tensor-core form for 'bf16' x 'bf16' -> 'bf16'}}
  %d = ttile.dot %a, %b, %c : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xbf16>
  return
}

// -----

#mma = #ttile.mma<version = 2, warpsPerCTA = [4, 1], instrShape = [16, 8, 16]>
#blocked = #ttile.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
#b = #ttile.dot_operand<opIdx = 1, parent = #mma, kWidth = 8>
func.func @f(%a: tensor<64x32xbf16, #blocked>, %b: tensor<32x64xbf16, #b>, %c: tensor<64x64xf32, #mma>) {
  // expected-error @+1 {{operand a must have layout #ttile.dot_operand<opIdx = 0, parent = #ttile.mma<version = 2, warpsPerCTA = [4, 1], instrShape = [16, 8, 16]>, ...>}}
  %d = ttile.dot %a, %b, %c : tensor<64x32xbf16, #blocked>, tensor<32x64xbf16, #b> -> tensor<64x64xf32, #mma>
  return
}

// -----

#blocked = #ttile.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>
func.func @f(%s: tensor<64x32xf32, #blocked>) {
  // expected-error @+1 {{reducing dim 1 of 'tensor<64x32xf32, #ttile.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>>' gives 'tensor<64xf32, #ttile.slice<dim = 1, parent = #ttile.blocked<sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>>>', not 'tensor<64xf32>'}}
  %r = ttile.reduce max %s {dim = 1 : i32} : tensor<64x32xf32, #blocked> -> tensor<64xf32>
  return
}

// -----

func.func @f(%s: tensor<64xf32>) {
  // expected-error @+1 {{operand dim 0 (64) is neither 1 nor result dim 1 (32)}}
  %r = ttile.broadcast %s {dims = array<i64: 1>} : tensor<64xf32> -> tensor<64x32xf32>
  return
}

// -----

func.func @f(%s: tensor<64x32xf32>) {
  // expected-error @+1 {{[0, 0] is not a permutation}}
  %r = ttile.transpose %s {permutation = array<i64: 0, 0>} : tensor<64x32xf32> -> tensor<64x32xf32>
  return
}

// -----

func.func @f(%s: tensor<64x32xf32>) {
  // expected-error @+1 {{stochastic_round and the seed operand go together}}
  %r = ttile.cast %s {stochastic_round} : tensor<64x32xf32> -> tensor<64x32xbf16>
  return
}

// -----

func.func @f(%s: tensor<64x32xf32>) {
  // expected-error @+1 {{changes only the layout}}
  %r = ttile.convert_layout %s : tensor<64x32xf32> -> tensor<64x32xf16>
  return
}

// -----

func.func @f(%s: tensor<64x32xf32>) {
  // expected-error @+1 {{the row maximum and sum are 'tensor<64xf32>'}}
  %p, %m, %l = ttile.softmax_online %s : tensor<64x32xf32> -> tensor<64x32xf32>, tensor<32xf32>, tensor<32xf32>
  return
}

// -----

func.func @f(%acc: tensor<64x16xf32>, %m: tensor<64xf32>, %p: tensor<64x32xf32>, %v: tensor<16x16xbf16>) {
  // expected-error @+1 {{shapes do not chain: acc [64, 16], p [64, 32], v [16, 16] (want [M, D], [M, N], [N, D])}}
  %a, %mm, %l = ttile.softmax_accumulate %acc, %m, %m, %p, %v, %m, %m : tensor<64x16xf32>, tensor<64xf32>, tensor<64x32xf32>, tensor<16x16xbf16>
  return
}

// -----

func.func @f(%n: index, %x: tensor<4xf32>) {
  // expected-error @+1 {{the body yields}}
  %r = ttile.range %i = %n to %n step %n iter_args(%a = %x) -> (tensor<4xf32>) {
    %c = arith.constant dense<1.0> : tensor<8xf32>
    ttile.yield %c : tensor<8xf32>
  }
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{expected grid dim x, y or z, got 'w'}}
  %p = ttile.program_id w
  return
}

// -----

// expected-error @+1 {{a kernel returns nothing (it writes its results through memref arguments), but @k returns 1 value(s)}}
func.func @k(%x: memref<?xf32>) -> f32 attributes {ttile.kernel} {
  %c = arith.constant 0.0 : f32
  return %c : f32
}

// -----

// expected-error @+1 {{ttile.num_warps must be a power of two from 1 to 32, got 6 : i32}}
func.func @k(%x: memref<?xf32>) attributes {ttile.kernel, ttile.num_warps = 6 : i32} {
  return
}

// -----

// expected-error @+1 {{'ttile.pingpong' is a unit attribute of a kernel of two warpgroups or more (ttile.num_warps >= 8), got unit with ttile.num_warps = 4}}
func.func @k(%x: memref<?xf32>) attributes {ttile.kernel, ttile.num_warps = 4 : i32, ttile.pingpong} {
  return
}

// -----

// expected-error @+1 {{'ttile.pingpong' is a unit attribute of a kernel of two warpgroups or more (ttile.num_warps >= 8), got 1 : i32 with ttile.num_warps = 8}}
func.func @k(%x: memref<?xf32>) attributes {ttile.kernel, ttile.num_warps = 8 : i32, ttile.pingpong = 1 : i32} {
  return
}

// -----

// expected-error @+1 {{ttile.producer_registers is a kernel's multiple of 8 from 24 to 256, got 20 : i32}}
func.func @k(%x: memref<?xf32>) attributes {ttile.kernel, ttile.num_warps = 8 : i32, ttile.producer_registers = 20 : i32} {
  return
}

// -----

// expected-error @+1 {{ttile.programs_per_block is a kernel's 1, 2 or 3 programs of whole warpgroups (ttile.num_warps a multiple of 4, at most 16 warps a block), got 2 : i32 with ttile.num_warps = 2}}
func.func @k(%x: memref<?xf32>) attributes {ttile.kernel, ttile.num_warps = 2 : i32, ttile.programs_per_block = 2 : i32} {
  return
}

// -----

// expected-error @+1 {{ttile.programs_per_block is a kernel's 1, 2 or 3 programs of whole warpgroups (ttile.num_warps a multiple of 4, at most 16 warps a block), got 4 : i32 with ttile.num_warps = 4}}
func.func @k(%x: memref<?xf32>) attributes {ttile.kernel, ttile.num_warps = 4 : i32, ttile.programs_per_block = 4 : i32} {
  return
}

// -----

// expected-error @+1 {{ttile.programs_per_block takes turns between programs; it does not go with ttile.pingpong}}
func.func @k(%x: memref<?xf32>) attributes {ttile.kernel, ttile.num_warps = 8 : i32, ttile.programs_per_block = 2 : i32, ttile.pingpong} {
  return
}

// -----

// expected-error @+1 {{ttile.cluster is a kernel's power of two from 1 to 8 (programs a cluster), got 3 : i32}}
func.func @k(%x: memref<?xf32>) attributes {ttile.kernel, ttile.num_warps = 4 : i32, ttile.cluster = 3 : i32} {
  return
}

// -----

func.func @k(%x: memref<?x?xf32>) attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'ttile.load' op is 'multicast' in a kernel without clusters: the kernel needs ttile.cluster >= 2, got none}}
  %t = ttile.load %x[%c0, %c0] {multicast} : memref<?x?xf32> -> tensor<16x16xf32>
  return
}

// -----

func.func @k(%x: memref<?x?xf32, #gpu.address_space<workgroup>>) attributes {ttile.kernel, ttile.num_warps = 4 : i32, ttile.cluster = 2 : i32} {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'ttile.load' op multicasts a tile of global memory, got 'memref<?x?xf32, #gpu.address_space<workgroup>>'}}
  %t = ttile.load %x[%c0, %c0] {multicast} : memref<?x?xf32, #gpu.address_space<workgroup>> -> tensor<16x16xf32>
  return
}

// -----

// expected-error @+1 {{shared swizzle must be 32, 64 or 128 bytes, got 48}}
func.func private @f(tensor<64x64xbf16, #ttile.shared<swizzle = 48, order = [1, 0]>>)

// -----

// expected-error @+1 {{shared order must be a permutation of the dims, got [1, 1]}}
func.func private @f(tensor<64x64xbf16, #ttile.shared<swizzle = 128, order = [1, 1]>>)

// -----

// expected-error @+1 {{a slice's parent must be a register layout}}
func.func private @f(tensor<64xf32, #ttile.slice<dim = 0, parent = #ttile.shared<swizzle = 128, order = [1, 0]>>>)

// -----

#mma = #ttile.mma<version = 3, warpsPerCTA = [4, 1], instrShape = [64, 64, 16]>
#sh = #ttile.shared<swizzle = 128, order = [1, 0]>
#b = #ttile.dot_operand<opIdx = 1, parent = #mma, kWidth = 8>
func.func @f(%a: tensor<64x64xbf16, #sh>, %b: tensor<64x64xbf16, #b>, %c: tensor<64x64xf32, #mma>) {
  // expected-error @+1 {{operand b of a wgmma (#ttile.mma version 3) dot must be a #ttile.shared tile}}
  %d = ttile.dot %a, %b, %c : tensor<64x64xbf16, #sh>, tensor<64x64xbf16, #b> -> tensor<64x64xf32, #mma>
  return
}

// -----

#sh = #ttile.shared<swizzle = 128, order = [1, 0]>
func.func @f(%a: tensor<64x32xbf16, #sh>) {
  // expected-error @+1 {{a transpose of a #ttile.shared tile is the same buffer with its order renumbered: #ttile.shared<swizzle = 128, order = [0, 1]>}}
  %t = ttile.transpose %a {permutation = array<i64: 1, 0>} : tensor<64x32xbf16, #sh> -> tensor<32x64xbf16, #sh>
  return
}

// -----

func.func @tf32_of_bf16(%a: tensor<16x16xbf16>, %b: tensor<16x16xbf16>,
                        %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-error @below {{tf32 reads f32 operands as tf32; the operands are 'bf16' and 'bf16'}}
  %d = ttile.dot %a, %b, %c {tf32} : tensor<16x16xbf16>, tensor<16x16xbf16> -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}

// -----

func.func @f(%s: tensor<64xf32>, %k0: index, %n: index) {
  // expected-error @+1 {{'ttile.mask_keys' op masks a 2-d score tile into one of its type, got 'tensor<64xf32>' -> 'tensor<64xf32>'}}
  %m = ttile.mask_keys %s, %k0, %n : tensor<64xf32>
  return
}

// -----

// expected-error @+1 {{ttile.programs_per_sm is a kernel's count of programs an SM holds at once, from 1 to 2048 threads / 512 threads a program = 4, got 5 : i32}}
func.func @k(%x: memref<?xf32>) attributes {ttile.kernel, ttile.num_warps = 16 : i32, ttile.programs_per_sm = 5 : i32} {
  return
}

// -----

// expected-error @+1 {{ttile.deepest_ring is a unit attribute of a ttile.range, got 4 : i32 on func.func}}
func.func @k(%x: memref<?xf32>) attributes {ttile.kernel, ttile.num_warps = 4 : i32, ttile.deepest_ring = 4 : i32} {
  return
}
