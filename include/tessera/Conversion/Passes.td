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

def TSchedGenerateKernels : Pass<"tessera-gpu-generate-kernels", "ModuleOp"> {
  let summary = "Generate the Tile IR kernels of GPU fusion groups";
  let description = [{
    Schedule IR -> Tile IR for the groups whose kernel is generated rather
    than taken from the standard library: each `tsched.group row [R, C]`
    and `tsched.group contraction [R, C]` gets a `ttile.kernel` function
    (named after its function, its kind and its number, `@<fn>_row<k>` or
    `@<fn>_gemm<k>`, valid PTX names) and the group records it:
    `tsched.kernel` (the symbol), `tsched.grid` (programs along x),
    `tsched.schedule` (the kernel's `#tsched.schedule`: its tile, and a
    GEMM's K step, warps and stages) and `tsched.views` (each argument's
    shape as the kernel reads it, the inputs then the outputs).

    **Row groups.** A program holds BM whole rows of the layout as
    `[BM, BN]` tiles (BN the power of two at or above C, BM = min(16, 4096
    / BN), 8 warps from 4096 elements on, else 4): full values are loaded
    from `memref<?x?xT>` views `[R, C]`, periodic values from `[P, C]`
    (at the block's row modulo P), rows `[R]`, columns `[C]` and scalars
    `[1]` from `memref<?xT>`. Arithmetic is in f32 (bf16 and f16
    load and store as such; a cast to them rounds); division is the GPU's
    approximate division (`fastmath<afn>`, div.approx.f32: at most 2 ulp
    for divisors of normal magnitude, no branch), sigmoid its stable form
    `(x >= 0 ? 1 : e) / (1 + e)`, `e = exp(-|x|)`; reductions along the
    row mask the columns past C with the reduction's neutral element.
    Outputs are stored as full tiles or rows; i1 values as i8. Broadcasts
    of rows, columns and scalars read the small operand and expand it in
    registers; one-element constants are literals and `iota` is computed
    from the program's row and column indices.

    **Contraction groups.** The group's first op is a GEMM (see
    `GemmForm.h`): C = op(A) @ op(B), op a transpose or not, over the
    result's batch dims. Each program loops over output tiles `[BM, BN]`
    (program_id, then every num_programs-th, in groups of 8 row blocks
    that share operand blocks in L2), accumulates the K loop in f32 with
    its loads `stages - 1` steps ahead, then computes the epilogue (the
    group's other ops) on the accumulator as a row kernel would, at the
    tile's rows and columns, and stores. When B has no batch dims and A is
    not transposed, the batch folds into the rows (`[Z * M, K]` views);
    otherwise A, B, full values and rows are read per batch from `[Z, M,
    N]`-style views (A and B as `[Za, ., .]` with their own batch, ones
    broadcasting). The schedule is the matmul's `tsched.schedule` where it
    sets one; the parts it leaves out are chosen from the shape: of tiles
    128x256 (only for products without an epilogue beyond the final cast:
    otherwise its 128 accumulators a thread leave too few registers),
    128x128 and 64x128 (k 64, 4 stages) for bf16
    and f16 on the tensor cores, 64x64, 128x64 and 32x64 (k 16, 2 stages)
    for f32 on FMAs, the one whose waves of tiles over `multiprocessors`
    SMs finish first.

    ```mlir
    %y = tsched.group row [32, 100] (%x) : (tensor<32x100xf32>) -> tensor<32x100xf32> {
    ^bb0(%a: tensor<32x100xf32>):
      %e = tgraph.exp %a : tensor<32x100xf32>
      tsched.yield %e : tensor<32x100xf32>
    }
    // becomes (the group gains tsched.kernel = @f_row0, tsched.grid =
    // array<i64: 2>, tsched.schedule = #tsched.schedule<"block(16, 128).warps(4)">)
    func.func @f_row0(%X: memref<?x?xf32>, %Y: memref<?x?xf32>)
        attributes {ttile.kernel, ttile.num_warps = 4 : i32} {
      %p = ttile.program_id x
      ...
      %x = ttile.load %X[%r, %c0] : memref<?x?xf32> -> tensor<16x128xf32>
      %e = math.exp %x : tensor<16x128xf32>
      ttile.store %e, %Y[%r, %c0] : tensor<16x128xf32>, memref<?x?xf32>
      return
    }
    ```

    **Attention groups** run the stdlib's flash-attention kernels
    (FlashAttention-2; on sm_90a wgmma with a TMA producer warpgroup),
    taken from a table of their Tile IR that the build traces from the
    tile-DSL source (`python/tessera/stdlib/_library.py`), so no Python
    runs here; each specialization (kernel, dtype, head dim, causal,
    target family) is added to the module once, named like
    `@flash_attention_fwd_bf16_d64_causal`. The group records its launch
    list (`tsched.launches`, see `-tessera-gpu-host-program`), every
    tensor read as `[BH, S, D]`: the forward writes the output and each
    query's log-sum-exp, saved with the output (`tsched.saved`); the
    backward launches the dQ kernel (which writes delta = rowsum(dO * O)
    to a scratch buffer) and then the dK/dV kernel, reading the lse of
    the forward whose output it differentiates, or running that forward
    again into scratch buffers when no such forward exists. The scale is
    the op's, else `1/sqrt(D)`. Attention the kernels do not take (not
    bf16/f16, head dim other than 64 and 128, a policy) records
    `tsched.no_kernel`.

    **Layout groups** (a transpose keeping the last dim, a slice, a
    concat, a pad, a broadcast written out) get copy kernels, one a piece
    of the output (a pad: the input and the value around it), each
    copying `[BM, BN]` tiles between rank-reducing subviews of the input
    and the output; they record a launch list. A reshape, or a broadcast
    that only adds dims of one, is left to the host program as a view.

    **Reduction groups** of fewer rows than `multiprocessors` over rows of
    at least 65536 elements run as two kernels of a launch list: f32
    partials of fixed chunks of each row into a scratch buffer, then the
    rows of partials.

    An op of a row group that has no Tile IR form is an error naming the
    op and its source line.
  }];
  let options = [
    Option<"multiprocessors", "multiprocessors", "int64_t", "132",
           "SMs of the target, for the GEMM tile choice (132 on an H100 "
           "or H200)">,
    Option<"chip", "chip", "std::string", "\"sm_90a\"",
           "The target chip: sm_90a takes the Hopper schedules of stdlib "
           "kernels, other chips the mma.sync ones">,
    Option<"variant", "variant", "int64_t", "-1",
           "Build every tunable product with candidate N of its autotune "
           "space (the last if it has fewer; -1: the estimate's choice): "
           "the programs an autotuner times; a tuning file does not change "
           "them">,
    Option<"tuning", "tuning", "std::string", "\"\"",
           "A file of tuned schedules, one 'KEY SCHEDULE' a line "
           "(tsched.tuning_key of a product, then its chain), used where "
           "the key matches and the schedule is in the product's space">,
    Option<"tuningText", "tuning-text", "std::string", "\"\"",
           "The text of the tuning file as the caller read it: parsed "
           "instead of reading `tuning` again (which then only names it in "
           "messages), so a program matches the text its cache key hashed">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::tessera::ttile::TTileDialect"];
}

def SinkToUses : Pass<"tessera-gpu-sink-to-uses", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Move each pure op of a GPU kernel down to its first use";
  let description = [{
    The thread-level lowering emits a tile op as one op per element, so a
    chain of tile ops (an epilogue: a bias, an activation, a conversion,
    a store) comes out op by op: every element of the first op, then every
    element of the second. All of a tile's intermediate values are then
    live at once, and ptxas, which keeps the order it is given within a
    block, spills them next to a 128x256 accumulator.

    This pass moves every op without memory effects or regions (not
    constants) to just before its first user in the same block, walking
    each block from its end, so that each element's chain ends up next to
    the store that consumes it and only a few values are live between the
    accumulator and memory. Ops with memory effects (loads, stores,
    barriers) keep their order; an op used in a region of a later op
    moves down to that op, and one used in another block of its region,
    or not at all, stays where it is. Moving within a block changes
    neither the threads that run an op nor its value, so the results are
    the same bits.
  }];
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
    the runtime makes at each launch) and runs 128 more threads.

    All of a kernel's shared memory is dynamic: its shared tiles, then one
    scratch area for layout conversions and reductions, which uses one
    after the other share; more than `shared-limit` is an error.

    Every kernel gets a launch record, a constant `i32` array named
    `tessera_launch_<kernel>` (its words are defined in
    `tessera/Runtime/LaunchRecord.h`): version, the threads of its warps
    and of its producer, its dynamic shared bytes, its parameter slots,
    the programs of a cluster, whether it takes the tensor-map table, and
    each tensor map's memref slot, rank, element bytes, box and swizzle.
    The compiler reads it back before the module is serialized, and the
    runtime when it loads the kernel: the launch takes its block size and
    shared memory from it.

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
    Option<"sharedLimit", "shared-limit", "int64_t", "::mlir::tessera::kHopperSharedBytes",
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
