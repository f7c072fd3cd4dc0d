//===- Passes.td - Schedule IR passes ----------------------*- tablegen -*-===//

#ifndef TESSERA_TSCHED_PASSES
#define TESSERA_TSCHED_PASSES

include "mlir/Pass/PassBase.td"

def TSchedFuseElementwise : Pass<"tessera-fuse-elementwise", "ModuleOp"> {
  let summary = "Fuse chains of elementwise linalg ops before scheduling";
  let description = [{
    Fuses elementwise `linalg.generic` producers into their consumers (a
    producer with one use), folds reshapes into elementwise ops by expanding
    their iteration space, and folds constants, like upstream
    `-linalg-fuse-elementwise-ops`, with two differences: reshapes never
    move into or out of contractions, and a producer is not fused into a
    consumer that broadcasts it (a per-row 1 / sum read by every element of
    the row would be recomputed per element). The Graph IR lowering collapses the
    leading dims of `[..., M, K] x [K, N]` products into M so that they are
    plain matrix products with the packed GEMM schedule; folding the
    reshapes back would give them extra M loops again.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect"
  ];
}

def TSchedCPUSchedule : Pass<"tessera-cpu-schedule", "::mlir::func::FuncOp"> {
  let summary = "Tile, pack, vectorize and parallelize linalg ops for the host CPU";
  let description = [{
    Runs on linalg ops on tensors (after -tessera-tgraph-lower-to-linalg).
    Each op gets a schedule: the `tsched.schedule` attribute it carries from
    the Graph IR, completed with defaults for its kind and the target's
    vector width. The schedule becomes a transform-dialect script, which
    this pass prints with `print-scripts` and then applies:

    - contractions with one M, N and K loop (matmul, batch_matmul, most
      dot_generals) are packed into register tiles (`tile(MR, NR)`; padded,
      so every size works), split into cache blocks (`block(M, N)`, `k(K)`)
      whose (M, N) grid is an `scf.forall`, and computed by a vectorized
      micro-kernel whose MR x NR accumulators stay in registers;
    - ops whose innermost loop is a reduction (row sums, maxima, norms) keep
      one partial result per vector lane and combine the lanes at the end;
    - every other op (elementwise, broadcasts, transposes, outer reductions,
      convolutions) is vectorized along its innermost loop; the loop is
      peeled so that only the last partial vector is masked.

    The pass runs on one function at a time, so a module's functions are
    scheduled on parallel threads (`print-scripts` prints each function's
    script whole; `--mlir-disable-threading` keeps them in order).

    Outer parallel loops become `scf.forall` (OpenMP later in the pipeline);
    reductions are never split across threads, so results do not depend on
    the thread count. Ops the vectorizer cannot handle keep scalar loops.
  }];
  let options = [
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"0",
           "Vector register width in bytes (0: from the host CPU)">,
    Option<"printScripts", "print-scripts", "bool", /*default=*/"false",
           "Print the generated transform script">,
  ];
  let dependentDialects = [
    "::mlir::transform::TransformDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect",
    "::mlir::affine::AffineDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::ub::UBDialect",
    "::mlir::bufferization::BufferizationDialect",
    // The scripts name `tsched.scheduled` attributes: parsing them loads the
    // dialect, which must not happen on the pass's parallel threads.
    "::mlir::tessera::tsched::TSchedDialect"
  ];
}

def TSchedSplitFunctions : Pass<"tessera-split-functions", "ModuleOp"> {
  let summary = "Split functions longer than a bound into parts called in turn";
  let description = [{
    After scheduling, a function whose body holds more than `max-ops`
    operations is cut, in program order, into parts of at most that many
    (an op with regions goes whole into one part); each part becomes a
    private function that the original calls in turn, passing the values
    that cross the cut. Constants are copied into each part that uses them.

    The passes after scheduling, LLVM's OpenMP outlining and its
    optimizations each take time that grows faster than linearly with the
    size of a function (for every parallel loop, OpenMP outlining scans the
    whole function). Bounded parts keep compile time linear in the program,
    let the function passes run on parallel threads, and let identical parts
    (identical layers) be compiled once by LLVM's function merging. Nothing
    else changes: fusion and scheduling have happened. Parts take their
    tensors read-only (`bufferization.writable = false`): one-shot
    bufferization would otherwise write into a buffer the caller still
    reads.

    Not in the CPU pipeline yet: buffers that cross the calls raise the
    peak memory of gradients (a 16-layer MLP: 35 MB to 48 MB, and
    checkpointing saves less), which must be fixed first.

    ```mlir
    // Before (max-ops=2):
    func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
      %a = linalg.generic ... ins(%x ...)     // a, b, c: 3 ops each
      %b = linalg.generic ... ins(%a ...)
      %c = linalg.generic ... ins(%b ...)
      return %c : tensor<8xf32>
    }
    // After:
    func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
      %a = call @f.part0(%x) : (tensor<8xf32>) -> tensor<8xf32>
      %b = call @f.part1(%a) : (tensor<8xf32>) -> tensor<8xf32>
      %c = call @f.part2(%b) : (tensor<8xf32>) -> tensor<8xf32>
      return %c : tensor<8xf32>
    }
    func.func private @f.part0(%x: tensor<8xf32>) -> tensor<8xf32> { ... }
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"2048",
           "The most operations a function keeps whole">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

#endif // TESSERA_TSCHED_PASSES
