// RUN: tessera-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// A schedule is the Halide-style chain, kept as written (parts in a fixed
// order).
// CHECK-LABEL: func.func @schedules
// CHECK: tsched.schedule = #tsched.schedule<"block(128, 256).k(256).tile(8, 32).vector(16).threads(2)">
// CHECK: tsched.schedule = #tsched.schedule<"k(64).vector(8)">
// CHECK: tsched.schedule = #tsched.schedule<"block(128, 256).k(64).warps(8).stages(4).split(4)">
// CHECK: tsched.schedule = #tsched.schedule<"block(128, 128).k(64).warps(4).stages(3).pingpong">
func.func @schedules(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tgraph.matmul %a, %a {tsched.schedule = #tsched.schedule<"vector(16).block(128, 256).tile(8, 32).k(256).threads(2)">} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = tgraph.exp %0 {tsched.schedule = #tsched.schedule<" vector(8) . k(64) ">} : tensor<4x4xf32>
  %2 = tgraph.matmul %1, %1 {tsched.schedule = #tsched.schedule<"split(4).stages(4).warps(8).block(128, 256).k(64)">} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = tgraph.matmul %2, %2 {tsched.schedule = #tsched.schedule<"pingpong . block(128, 128).k(64).stages(3).warps(4)">} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}

// -----

// expected-error @+1 {{unknown schedule part 'warp'; expected block, k, tile, vector, threads, warps, stages, split or pingpong}}
func.func private @f() attributes {s = #tsched.schedule<"block(64, 64).warp(4)">}

// -----

// expected-error @+1 {{schedule part 'pingpong' appears twice}}
func.func private @f() attributes {s = #tsched.schedule<"pingpong.block(64, 64).pingpong">}

// -----

// expected-error @+1 {{pingpong and split(4) do not go together (a split's partials have no epilogue to overlap)}}
func.func private @f() attributes {s = #tsched.schedule<"block(128, 128).split(4).pingpong">}

// -----

// expected-error @+1 {{pingpong programs are whole warpgroups: warps must be 4, 8 or 16, but got 2}}
func.func private @f() attributes {s = #tsched.schedule<"block(64, 64).warps(2).pingpong">}

// -----

// expected-error @+1 {{expected '(' after schedule part 'pingpongs'}}
func.func private @f() attributes {s = #tsched.schedule<"pingpongs">}

// -----

// expected-error @+1 {{split takes 1 to 64 chunks, but got 100}}
func.func private @f() attributes {s = #tsched.schedule<"block(64, 64).split(100)">}

// -----

// expected-error @+1 {{schedule part 'block' takes 2 values, but got 1}}
func.func private @f() attributes {s = #tsched.schedule<"block(64)">}

// -----

// expected-error @+1 {{schedule part 'k' appears twice}}
func.func private @f() attributes {s = #tsched.schedule<"k(64).k(32)">}

// -----

// expected-error @+1 {{expected '.' between schedule parts, but got 'k(32)'}}
func.func private @f() attributes {s = #tsched.schedule<"k(64) k(32)">}

// -----

// expected-error @+1 {{schedule part 'k' takes integers, but got 'x'}}
func.func private @f() attributes {s = #tsched.schedule<"k(x)">}

// -----

// expected-error @+1 {{schedule part 'k' takes positive values, but got 0}}
func.func private @f() attributes {s = #tsched.schedule<"block(64, 64).k(0)">}

// -----

// expected-error @+1 {{warps must be 1, 2, 4, 8 or 16, but got 3}}
func.func private @f() attributes {s = #tsched.schedule<"block(64, 64).warps(3)">}

// -----

// expected-error @+1 {{vector width must be a power of two, but got 12}}
func.func private @f() attributes {s = #tsched.schedule<"vector(12)">}

// -----

// expected-error @+1 {{tile NR (24) must be a multiple of the vector width (16)}}
func.func private @f() attributes {s = #tsched.schedule<"tile(8, 24).vector(16)">}

// -----

// expected-error @+1 {{block (100, 256) must be a multiple of tile (8, 32)}}
func.func private @f() attributes {s = #tsched.schedule<"block(100, 256).tile(8, 32)">}

// -----

// expected-error @+1 {{schedule part 'block' takes positive values, but got 0}}
func.func private @f() attributes {s = #tsched.schedule<"block(0, 32)">}

// -----

// expected-error @+1 {{a schedule needs at least one part}}
func.func private @f() attributes {s = #tsched.schedule<"">}
