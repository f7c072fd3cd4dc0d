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

    Fusion is linear in the program. A cluster of elementwise generics in
    which every result except the last member's is read only inside the
    cluster, element by element, becomes one generic with each member's
    body copied once (computed once per point). What remains (producers
    read through a transposing map) fuses in rounds in which each op takes
    part in one fusion at most, so a chain halves each round. Fusing one
    pair at a time copies the growing body at every step: a 64-layer
    Hessian-vector product that ends as one loop of 3,000 operations took
    2.5 s that way, 0.1 s in clusters.
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

    Outer parallel loops become `scf.forall` (OpenMP later in the pipeline,
    or ordinary loops where the work is too small to pay for threads);
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

#endif // TESSERA_TSCHED_PASSES
