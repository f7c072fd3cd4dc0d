//===- Passes.td - Tile IR passes --------------------------*- tablegen -*-===//
//
// Tile IR -> Tile IR rewrites that the GPU lowering expects to have run:
// layouts for every tile, loads issued ahead in pipelined loops.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_DIALECT_TTILE_TRANSFORMS_PASSES
#define TESSERA_DIALECT_TTILE_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def TTileAssignLayouts : Pass<"tessera-ttile-assign-layouts", "ModuleOp"> {
  let summary = "Give every tile of a Tile IR kernel a layout";
  let description = [{
    Expands `ttile.softmax_online` and `ttile.softmax_accumulate` into tile
    ops, then walks each `ttile.kernel` in program order and gives tiles
    without an encoding one: loads, `iota`, constants and splats take a
    blocked layout chosen from the tile's shape, element type and the
    kernel's `ttile.num_warps` (up to 16 bytes contiguous per thread along
    the last dim, a warp's lanes along the fastest dims, warps along the
    slowest); elementwise ops, casts, `mask_causal` and `mask_keys` keep
    their operand's layout; reductions give `#ttile.slice` of it; broadcasts and transposes
    take the layout that needs no data movement when there is one; a `dot`
    of bf16 or f16 into f32 whose tile is whole 16 x 8 fragments per warp
    gets an mma.sync (`#ttile.mma` version 2) accumulator, other dots a
    blocked one, and `#ttile.dot_operand` operands of it. Where
    two layouts meet, a `ttile.convert_layout` is inserted (splat constants
    are re-created in the layout instead). Loop-carried tiles keep their
    initial value's layout.

    With `wgmma` (Hopper, sm_90a), a dot of bf16 or f16 into f32 whose
    operands are loaded (unmasked, from global memory, rows contiguous) in
    its block and used only by it, M a multiple of 64 and whole warpgroups,
    gets a `#ttile.mma` version 3 accumulator, and its operand loads
    `#ttile.shared` results: the tensor cores read A and B from shared
    memory, filled by asynchronous copies.

    ```mlir
    %x = ttile.load %X[%r, %c0] : memref<?x?xf32> -> tensor<4x256xf32>
    // becomes
    %x = ttile.load %X[%r, %c0] : memref<?x?xf32> -> tensor<4x256xf32,
        #ttile.blocked<sizePerThread = [1, 4], threadsPerWarp = [1, 32],
                       warpsPerCTA = [4, 1], order = [1, 0]>>
    ```
  }];
  let options = [
    Option<"wgmma", "wgmma", "bool", "false",
           "Use Hopper warpgroup MMAs (sm_90a) for dots of tiles loaded "
           "from global memory">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TTilePipelineLoads : Pass<"tessera-ttile-pipeline-loads", "ModuleOp"> {
  let summary = "Issue the loads of a staged ttile.range stages - 1 iterations ahead";
  let description = [{
    In a `ttile.range` with `stages = S >= 2`, each `ttile.load` whose
    operands are the induction variable, values from outside the loop or
    pure arith ops of the body on those (an index computed from the
    induction variable, cloned along), from a memref the loop does not
    write, is loaded for the first S - 1 iterations before the loop and,
    in each iteration, for the one S - 1 ahead (the loop carries the S - 1
    tiles, oldest first), so that the memory latency overlaps the work of
    S - 1 iterations. A load past the end reads padding. A load that does
    not depend on the induction variable reads the same tile each time
    and stays where it is. Loads into `#ttile.shared` tiles are left
    alone: the GPU lowering gives them a ring of `stages` shared buffers
    filled by asynchronous copies ahead of the loop; in such a loop
    `stages` sizes the ring, and the loads into registers beside it run
    one iteration ahead.

    ```mlir
    %r = ttile.range %k = %c0 to %n step %c32 stages 2 iter_args(%acc = %z) ... {
      %a = ttile.load %A[%row, %k] : ...
      ...
    }
    // becomes
    %a0 = ttile.load %A[%row, %c0] : ...
    %r:2 = ttile.range %k = %c0 to %n step %c32 stages 2
        iter_args(%acc = %z, %a = %a0) ... {
      %k1 = arith.addi %k, %c32 : index
      %a1 = ttile.load %A[%row, %k1] : ...
      ...
      ttile.yield %acc1, %a1 : ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // TESSERA_DIALECT_TTILE_TRANSFORMS_PASSES
