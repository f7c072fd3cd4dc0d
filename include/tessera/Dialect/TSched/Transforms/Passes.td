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

def TSchedFormGPUGroups : Pass<"tessera-gpu-form-groups",
                               "::mlir::func::FuncOp"> {
  let summary = "Group the ops of a Graph IR function into GPU kernels";
  let description = [{
    The first step of the GPU pipeline, on Graph IR after autodiff,
    inlining and decomposition: each op joins a `tsched.group`, the ops
    that one kernel computes. Ops are visited in program order; a group
    accepts ops while none of its values has been read outside it, so
    groups never depend on each other in a cycle and each one can run
    where its last op was.

    - Elementwise ops, reductions along the last dim (rows of at most
      `max-row`) and broadcasts of a row back along it form `row` groups on
      one static `[R, C]` layout. An op joins the group of one of its
      operands if every operand is a full tile, a row, a column or a scalar
      of that layout and its result is a full tile (or a row computed from
      rows and scalars): the statistics of a layernorm or softmax stay
      inside. Failing that, it joins the latest open row group of its
      layout (one launch fewer; the groups it reads are closed, so no
      cycle can form).
    - A broadcast of a row, a column or a scalar of its result is computed
      by each group that reads it, from its source: it is never written
      out, unless an op in no group reads it. So is a periodic value (the
      full shape's trailing dims repeated over its leading ones, with rows
      a multiple of 16: rotary tables `[S, D]` of `[B, H, S, D]`), which a
      row kernel reads at its row modulo the period; a GEMM's epilogue
      reads it written out.
    - A cheap unary op (`square`, `neg`, `abs`, `relu`, a float `cast`
      that does not narrow) whose readers are all elementwise ops of
      static shape is computed again by each group that reads it, from
      its operand of the same shape, instead of being written out: a
      reader reads no more bytes, and the operand is often read anyway
      (the `u^2` a GELU's forward and backward share).
    - A slice of the last dim alone (every other dim whole, unit steps) is
      a window of its operand's columns: each row group that reads it
      takes the operand as an input and reads the window in place (a GEMM
      reads it written out, by a row kernel of its own). A `concat` along
      the last dim of full values of one row group joins it, which writes
      each part into its window of the result; the group then closes. A
      sum of two zero pads of the last dim that place their operands side
      by side, filling it (a window's gradient), is taken as their concat
      first (a -0 element stays -0 where the sum gave +0). A transpose of
      leading dims (the last dim stays) that only windows read is read in
      place by their row groups, and one that is the only reader of such a
      concat joins the concat's group, which writes its rows in that
      order.
    - A matrix product the GPU runs as a GEMM (`matmul`, `batch_matmul`,
      a `dot_general` that is a batched matrix product: see
      `GemmForm.h`) opens a `contraction` group on its `[..., M, N]`
      result; elementwise ops of that result with rows, columns and
      scalars (bias, activation, residual) join it as its epilogue. The
      GEMM reads its operands from memory: a broadcast it multiplies is
      written out, and the epilogue reads an operand of the product only
      as a full tile. Other contractions are `single` groups.
    - `attention` and `attention_grad` (kept whole for the GPU) form
      `attention` groups; transposes, slices, concats, pads and gathers
      `layout` groups; reductions over leading dims `reduction` groups;
      other ops `single` groups.
    - Reshapes (views of the same buffer), constants and ops with regions
      stay outside; a constant of one element and tensors of indices
      (`iota`, `full`) are computed in the groups that use them instead of
      being read from memory.

    Values a group computes and nothing outside reads are not results: they
    never go to memory.

    ```mlir
    %m = tgraph.matmul %x, %w : (tensor<32x100xf32>, tensor<100x64xf32>) -> tensor<32x64xf32>
    %y = tgraph.add %m, %b : (tensor<32x64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
    // becomes
    %y = tsched.group contraction [32, 64] (%x, %w, %b) : (...) -> tensor<32x64xf32> {
    ^bb0(%a: tensor<32x100xf32>, %c: tensor<100x64xf32>, %d: tensor<64xf32>):
      %0 = tgraph.matmul %a, %c : ...
      %1 = tgraph.add %0, %d : ...
      tsched.yield %1 : tensor<32x64xf32>
    }
    ```
  }];
  let options = [
    Option<"maxRow", "max-row", "int64_t", /*default=*/"16384",
           "Longest row a row group reduces in one program">,
  ];
  let dependentDialects = ["::mlir::tessera::tsched::TSchedDialect"];
}

def TSchedGPUHostProgram : Pass<"tessera-gpu-host-program", "::mlir::ModuleOp"> {
  let summary = "Turn a function of GPU fusion groups into its host program";
  let description = [{
    After `-tessera-gpu-generate-kernels`: each function (other than the
    kernels) becomes the program the host runs, on memrefs of the same
    shapes (i1 stored as i8, as kernels store it):

    - each group with a generated kernel becomes a `tsched.launch` of it on
      its inputs' and results' buffers, each viewed (`tsched.view`) as the
      group's `tsched.views` says the kernel reads it;
    - a group with a launch list (`tsched.launches`, as attention groups
      have) becomes those launches in order. Each entry is `{kernel =
      @k, grid = array<i64: x[, y[, z]]>, args = [...], scalars = [...]}`;
      each argument is `array<i64: kind, index, dims...>`, the buffer
      read as `dims`: kind 0 the group's input `index`, 1 its result
      `index`, 2 the buffer it saves with result `index`, 3 the buffer
      the group that made input `index` saved with it, 4 its scratch
      buffer `index`. `tsched.saved` (a memref type or unit per result)
      and `tsched.scratch` (memref types) give those buffers: temporaries
      of the workspace like results, a saved one live until the last
      launch that reads it;
    - a reshape, outside groups or as a `layout` group of its own
      (`tgraph.reshape`, or a broadcast that only adds dims of one), is a
      `tsched.view` of its source: no copy, no launch;
    - a constant is a private `memref.global` read with `memref.get_global`;
    - a group's results are temporaries (`tsched.buffer`) in one workspace
      of `tsched.workspace` bytes. A temporary is live from the launch that
      writes it to the last launch that reads it (directly or through a
      view); the largest are placed first, each at the lowest 256-byte
      aligned offset where no temporary live at the same time is;
    - a result the function returns is a `memref.alloc` of its own, the
      caller's to keep; an argument, a constant or a value returned twice
      is copied into one (`memref.copy`).

    Launches run in program order on one stream. A group without a
    generated kernel, an op outside every group that is not a reshape or a
    constant, and a dynamic shape are errors at the op.

    ```mlir
    func.func @f(%x: tensor<128xi32>, %y: tensor<128x10xf32>) -> tensor<128x10xf32> {
      %r = tgraph.broadcast_in_dim %x {broadcast_dimensions = array<i64: 0>} : tensor<128xi32> -> tensor<128x1xi32>
      %0 = tsched.group row [128, 10] (%y, %r) {tsched.kernel = @f_row0, tsched.grid = array<i64: 8>, ...}
      return %0 : tensor<128x10xf32>
    }
    // becomes
    func.func @f(%x: memref<128xi32>, %y: memref<128x10xf32>) -> memref<128x10xf32>
        attributes {tsched.workspace = 0 : i64} {
      %r = tsched.view %x : memref<128xi32> to memref<128x1xi32>
      %0 = memref.alloc() : memref<128x10xf32>
      %1 = tsched.view %r : memref<128x1xi32> to memref<128xi32>
      tsched.launch @f_row0 grid [8] (%y, %1, %0) : memref<128x10xf32>, memref<128xi32>, memref<128x10xf32>
      return %0 : memref<128x10xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::tessera::tsched::TSchedDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TSchedGPUOutlineKernels : Pass<"tessera-gpu-outline-kernels",
                                   "::mlir::ModuleOp"> {
  let summary = "Move the kernels of a host program into its device module";
  let description = [{
    After `-tessera-gpu-host-program`: the Tile IR kernels (`ttile.kernel`
    functions) move into a nested `builtin.module` (`@kernels` unless
    `module-name` says otherwise), which the GPU pipeline compiles to a
    `gpu.binary` on its own while the host program stays as it is; each
    `tsched.launch @k` becomes `tsched.launch @kernels::@k`.

    ```mlir
    func.func @f(...) { tsched.launch @f_row0 grid [8] (...) ... }
    func.func @f_row0(...) attributes {ttile.kernel} { ... }
    // becomes
    func.func @f(...) { tsched.launch @kernels::@f_row0 grid [8] (...) ... }
    module @kernels {
      func.func @f_row0(...) attributes {ttile.kernel} { ... }
    }
    ```
  }];
  let options = [
    Option<"moduleName", "module-name", "std::string", /*default=*/"\"kernels\"",
           "Name of the device module">,
  ];
}

#endif // TESSERA_TSCHED_PASSES
