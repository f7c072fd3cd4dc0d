//===- Passes.td - Tessera transforms on upstream dialects -*- tablegen -*-===//
//
// Passes of the pipelines that rewrite upstream dialects (memref, scf,
// math, func) rather than lower a Tessera dialect.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TRANSFORMS_PASSES
#define TESSERA_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

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

#endif // TESSERA_TRANSFORMS_PASSES
