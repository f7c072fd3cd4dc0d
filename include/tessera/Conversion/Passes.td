//===- Passes.td - Tessera conversion passes ---------------*- tablegen -*-===//

#ifndef TESSERA_CONVERSION_PASSES
#define TESSERA_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def TGraphLowerToLinalg : Pass<"tessera-tgraph-lower-to-linalg", "ModuleOp"> {
  let summary = "Lower Graph IR to linalg, tensor, arith, math and scf";
  let description = [{
    Rewrites `tgraph` ops on tensors into structured linalg ops (elementwise
    ops with NumPy broadcasting become `linalg.generic` with broadcasting
    indexing maps; contractions and reductions become `linalg.generic` with
    reduction iterators), and tensor ops for layout changes. Symbolic dims
    stay dynamic: their sizes come
    from `tensor.dim` of the operands or of the function arguments that bind
    the symbols. Tensor types lose their `#tgraph.dims` encodings. A failed
    run-time shape check calls the runtime hook
    `tessera_shape_check_failed(const char *message, int64_t, int64_t)` with
    the two sizes found; a `fixed_point` that does not converge calls
    `tessera_not_converged(const char *message, int64_t, double)`.

    Composite ops (softmax, layernorm, attention, ...) are expected to have
    been expanded by -tessera-tgraph-decompose first.

    Before:
    ```mlir
    %y = tgraph.add %x, %b : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>,
        tensor<64xf32>) -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
    ```
    After:
    ```mlir
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?x64xf32>
    %e = tensor.empty(%n) : tensor<?x64xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
        affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
        iterator_types = ["parallel", "parallel"]} ins(%x, %b : ...) outs(%e : ...) {...}
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::cf::ControlFlowDialect", "::mlir::func::FuncDialect",
    "::mlir::scf::SCFDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::bufferization::BufferizationDialect"
  ];
}

def ExpandShapeViews : Pass<"tessera-expand-shape-views"> {
  let summary = "Rewrite memref.expand_shape with several dynamic dims per group as views";
  let description = [{
    `memref.expand_shape` ops that split one dim into several dynamic ones
    (a `?` row count into batch and sequence, `[[0, 1], [2]]` into
    `memref<?x?x32xf32>`) become `memref.reinterpret_cast` of the source's
    base buffer, with the sizes of `output_shape` and strides multiplied
    out from the source's. MLIR 22's `-expand-strided-metadata` supports at
    most one dynamic dim per group (it crashes on more); run this pass
    before it. Other expand_shape ops are left to it.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def ExpandSmallFloats : Pass<"tessera-expand-small-floats"> {
  let summary = "Compute fp8 arithmetic in f32 and expand fp8 conversions";
  let description = [{
    LLVM has no fp8 types, so this pass makes fp8 code convertible to LLVM:
    arithmetic on f8E4M3FN and f8E5M2 values runs in f32 with one rounding
    back after each op (`arith-emulate-unsupported-floats` keeps chains of
    ops in f32, which rounds differently), and
    `arith.extf` from / `arith.truncf` to those types become integer code on
    the bit patterns: round to nearest even, subnormals included; values
    beyond the largest finite value become NaN (f8E4M3FN, which has no
    infinity) or infinity (f8E5M2). With `bf16` (the default) bf16
    conversions expand as in `arith-expand{include-bf16}`; the GPU pipeline
    leaves them to the target's conversion instructions. Scalars and
    vectors are both handled.
  }];
  let options = [
    Option<"bf16", "bf16", "bool", /*default=*/"true",
           "Also expand bf16 conversions into integer code">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def MathApproximations : Pass<"tessera-math-approximations"> {
  let summary = "Vectorizable polynomial approximations of f32 math functions";
  let description = [{
    Replaces f32 `exp`, `expm1`, `log`, `log1p`, `log2`, `tanh` and `erf`
    (scalars and vectors) with polynomial approximations, which compile to
    straight-line vector code instead of one libm call per lane. They stay
    within a few units in the last place of the correctly rounded result
    over the whole f32 range (the CPU numerics tests check them against
    float64). f64 keeps libm; sin and cos keep libm because their
    approximations lose accuracy for large arguments.

    `exp` has a form of its own, within one f32 step of e^x everywhere
    (subnormal results included) and shorter than MLIR's: k =
    roundeven(x log2(e)), r = x - k ln2 in two FMAs, a degree-7 polynomial
    for e^r, and 2^k applied with one rounding: by `vscalefps` for 16-lane
    vectors with AVX-512 (`isa=avx512`, or `isa=host` on such a CPU),
    otherwise by two multiplications by powers of two, which give the same
    values.
  }];
  let options = [
    Option<"isa", "isa", "std::string", /*default=*/"\"host\"",
           "Instruction set to approximate for: host (the compiling CPU), "
           "avx512 or generic">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::x86vector::X86VectorDialect"];
}


def EarlyDeallocs : Pass<"tessera-early-deallocs"> {
  let summary = "Allocate each buffer at its first use, free it after its last";
  let description = [{
    MLIR's ownership-based deallocation frees buffers at the end of their
    block, so every temporary of a function stays allocated until it
    returns. This pass moves each unconditional `memref.dealloc` of a
    buffer allocated in the same block to just after the last op of the
    block that uses the buffer or any view of it (through
    BufferViewFlowAnalysis; uses inside nested regions count at their
    enclosing op), moves each `memref.alloc` down to just before its first
    use, and folds the `scf.if true` wrappers the deallocation pipeline
    leaves. Peak memory then follows the live values instead of
    the sum of all temporaries, and freed blocks are reused while still in
    cache.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def SerializeSmallParallelLoops
    : Pass<"tessera-serialize-small-parallel-loops"> {
  let summary = "Run parallel loops with little work as ordinary loops";
  let description = [{
    Starting a parallel region costs microseconds (waking the threads,
    handing out the iterations, the barrier at the end), about as long as a
    few thousand scalar operations. A `scf.parallel` without reductions
    whose work, estimated from static sizes, is below `min-work` operations
    becomes a nest of `scf.for` loops, so it runs on the calling thread
    without that cost and without an OpenMP region to outline. Its stack
    allocations move before the loops (iterations that run one after the
    other can share them); a loop whose allocations cannot move (dynamic
    sizes, nested regions, a position where the stack grows per iteration
    of an enclosing loop) stays parallel. The estimate counts each operation once per
    iteration of the loops around it inside the parallel loop, each
    structured linalg op as its static iteration space times its body, and
    each `memref.copy` as its elements. A size or trip count not known
    statically, or a call, counts as unbounded work: such a loop stays
    parallel.

    ```mlir
    // Before: 3 rows of 6 elements.
    scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
      ... row %i ...
      scf.reduce
    }
    // After:
    scf.for %i = %c0 to %c3 step %c1 {
      ... row %i ...
    }
    ```
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"8192",
           "Estimated operations below which a parallel loop runs serially">,
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def OutlineParallelLoops : Pass<"tessera-outline-parallel-loops", "ModuleOp"> {
  let summary = "Move each outermost parallel loop into a function of its own";
  let description = [{
    Each outermost `scf.parallel` of a function becomes the body of a new
    private function `@<function>.parallel<k>` (LLVM linkage internal), called
    in its place with the values it uses from outside; constants are copied
    in instead of passed.

    LLVM's OpenMP lowering outlines every parallel region of a function and,
    for each one, analyses the whole function that holds it, so a function
    with n parallel loops costs n times its size: quadratic in the program
    (a 64-layer gradient spent a third of its compile time there, a
    128-layer one half). With each region in a function of its own, the
    cost is linear. LLVM inlines the small calling functions back after
    outlining.

    ```mlir
    // Before:
    func.func @f(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
      scf.parallel (%i) = (%c0) to (%c4) step (%c1) { ... %a, %b ... }
      return
    }
    // After:
    func.func @f(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
      call @f.parallel0(%a, %b) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
      return
    }
    func.func private @f.parallel0(%a: memref<4x8xf32>, %b: memref<4x8xf32>)
        attributes {llvm.linkage = #llvm.linkage<internal>} {
      %c0 = arith.constant 0 : index
      ...
      scf.parallel (%i) = (%c0) to (%c4) step (%c1) { ... %a, %b ... }
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def InlineRecompute : Pass<"tessera-inline-recompute", "ModuleOp"> {
  let summary = "Inline the recomputation functions of checkpoints";
  let description = [{
    Reverse-mode autodiff recomputes a `tgraph.checkpoint` in a private
    function marked `tgraph.recompute`, so that tensor-level CSE cannot
    merge the recomputation back into the forward pass (which would keep
    the checkpoint's intermediates alive after all). Once the last
    tensor-level CSE has run, this pass inlines every call of such a
    function and erases the functions: buffer deallocation then sees the
    recomputed buffers in the caller and frees them after their last use,
    instead of keeping every buffer passed to an opaque call until the
    function returns.
  }];
}

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

def ConvertTTileToGPU : Pass<"tessera-convert-ttile-to-gpu", "ModuleOp"> {
  let summary = "Lower Tile IR kernels to GPU dialect kernels, thread by thread";
  let description = [{
    Each `ttile.kernel` function becomes a `gpu.func` kernel (in the
    `gpu.module` named by `module-name`, the module marked
    `gpu.container_module`) run by `32 * ttile.num_warps` threads
    (`known_block_size`). Every tile, which must have a blocked, slice or
    dot_operand-of-blocked layout (run `-tessera-ttile-assign-layouts`
    first), becomes the scalars its layout gives each thread:

    - `ttile.load` / `ttile.store` read and write each thread's elements,
      16-byte vector accesses where a thread's elements are contiguous in
      memory and aligned (checked at run time), guarded element accesses
      at the edges and where masks are off;
    - elementwise `arith` and `math` ops apply to each element (f32
      `math.exp2` as `ex2.approx.ftz.f32`);
    - `ttile.reduce` combines a thread's elements, then the lanes of a warp
      (butterfly shuffles), then the warps (shared memory), in a fixed
      order: results are deterministic and identical on every thread;
    - `ttile.convert_layout`, and broadcasts or transposes that move data
      between threads, go through shared memory; a conversion to a
      `#ttile.shared` layout stores a computed tile for wgmma;
    - `ttile.dot` with a `#ttile.mma` version 2 accumulator (bf16 or f16
      into f32) runs on the tensor cores as `nvvm.mma.sync` m16n8k16 per
      warp fragment; with a blocked accumulator it multiplies with FMAs;
    - `ttile.range` and `scf.for`/`scf.if` carry tiles as their scalars.

    With `tma` (sm_90a), a kernel whose shared-tile rings all belong to
    ranges at its top level gets a producer warpgroup after its warps: one
    producer warp fills the rings with TMA copies (`cp.async.bulk.tensor`,
    mbarriers per ring slot), the other warps only compute. Such a kernel
    takes one more parameter (the device address of its tensor maps, which
    the runtime makes at each launch), runs 128 more threads, and says so
    in a `tessera_tma_<kernel>` global.

    All of a kernel's shared memory is dynamic: its shared tiles, then one
    scratch area for layout conversions and reductions, which uses one
    after the other share. The kernel states its size in a
    `tessera_dynamic_smem_<kernel>` global; more than `shared-limit` is an
    error.

    With `fp-contract` (the default) the kernels' float arithmetic carries
    `fastmath<contract>`, so that LLVM fuses a multiply feeding an add into
    one fma, as nvcc does by default: one rounding instead of two, and the
    same results at every run.

    Then `--gpu-lower-to-nvvm-pipeline` produces PTX.
  }];
  let options = [
    Option<"moduleName", "module-name", "std::string", "\"tessera_kernels\"",
           "Name of the gpu.module that receives the kernels">,
    Option<"tma", "tma", "bool", "false",
           "Fill shared-tile rings with TMA copies from a producer warpgroup "
           "(sm_90a)">,
    Option<"sharedLimit", "shared-limit", "int64_t", "232448",
           "Shared memory a block may use, in bytes: the chip's opt-in "
           "limit (232448 on sm_90, 166912 on sm_80 and sm_87, 101376 on "
           "sm_86 and sm_89)">,
    Option<"fpContract", "fp-contract", "bool", "true",
           "Let the float arithmetic of kernels contract a multiply and an "
           "add into one fma (fastmath<contract>; nvcc's --fmad=true)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // TESSERA_CONVERSION_PASSES
