//===- TSchedBase.td - Schedule IR dialect and attributes --*- tablegen -*-===//

#ifndef TESSERA_TSCHED_BASE
#define TESSERA_TSCHED_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def TSched_Dialect : Dialect {
  let name = "tsched";
  let summary = "Tessera's Schedule IR: how an op is tiled, vectorized and parallelized";
  let description = [{
    A schedule says how the loops of one op are cut into blocks for the
    caches, into register tiles and vectors, and spread over threads. It is
    written Halide-style and attached to a Graph IR op as the `tsched.schedule`
    attribute; ops without one get a default for their kind and the target.
    On the CPU a schedule becomes a transform-dialect script (see
    `-tessera-cpu-schedule`); on the GPU it is the tile, warps and load
    stages of the group's kernel (see `-tessera-gpu-generate-kernels`).

    ```mlir
    %c = tgraph.matmul %a, %b {tsched.schedule = #tsched.schedule<"block(128, 256).k(256).tile(8, 32)">}
        : (tensor<?x?xf32, #tgraph.dims<[M, K]>>, tensor<?x?xf32, #tgraph.dims<[K, N]>>)
        -> tensor<?x?xf32, #tgraph.dims<[M, N]>>
    ```
  }];
  let cppNamespace = "::mlir::tessera::tsched";
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// The name of the discardable attribute that carries a schedule.
    static constexpr ::llvm::StringLiteral kScheduleAttrName = "tsched.schedule";
  }];
}

def TSched_ScheduleAttr : AttrDef<TSched_Dialect, "Schedule"> {
  let mnemonic = "schedule";
  let summary = "block / k / tile / vector / threads / warps / stages / split / pingpong of one op";
  let description = [{
    Each part is optional; what is left out takes the default for the op
    and the target. The chain is written as a string (MLIR tokens have no
    `.`), exactly as in the Python API.

    | part | meaning on the CPU |
    |---|---|
    | `block(M, N)` | cache block of the result: M rows by N columns |
    | `k(K)` | cache block of the reduction dim |
    | `tile(MR, NR)` | register tile of a contraction (MR rows of NR lanes) |
    | `vector(V)` | vector width in elements (a multiple of it for tile NR) |
    | `threads(T)` | most threads for the outer parallel loops |

    | part | meaning on the GPU |
    |---|---|
    | `block(BM, BN)` | the output tile of one program |
    | `k(BK)` | the K step of a product's loop |
    | `warps(W)` | warps a program |
    | `stages(S)` | loads issued S - 1 steps of the K loop ahead |
    | `split(S)` | a product's K in S equal chunks: f32 partials, then their sum in order and the epilogue |
    | `pingpong` | a product's programs two a block, `warps` warps each, taking turns on the tensor cores: one's K loop runs while the other's epilogue does |

    Each target ignores the parts it has no use for.

    ```mlir
    #tsched.schedule<"block(64, 512).k(128).vector(16)">
    #tsched.schedule<"block(128, 256).k(64).warps(8).stages(4)">
    #tsched.schedule<"block(128, 128).k(64).warps(4).stages(3).pingpong">
    ```
  }];
  let parameters = (ins
    OptionalArrayRefParameter<"int64_t">:$block,
    DefaultValuedParameter<"int64_t", "0">:$k,
    OptionalArrayRefParameter<"int64_t">:$tile,
    DefaultValuedParameter<"int64_t", "0">:$vector,
    DefaultValuedParameter<"int64_t", "0">:$threads,
    DefaultValuedParameter<"int64_t", "0">:$warps,
    DefaultValuedParameter<"int64_t", "0">:$stages,
    DefaultValuedParameter<"int64_t", "0">:$split,
    DefaultValuedParameter<"bool", "false">:$pingpong
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The chain as written: `block(128, 256).k(256).vector(16)`.
    std::string str() const;
    /// Parses a chain (as the Python front end writes it).
    static ::mlir::FailureOr<ScheduleAttr>
    parseSchedule(::llvm::StringRef text, ::mlir::MLIRContext *ctx,
                  ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError);
  }];
}

#endif // TESSERA_TSCHED_BASE
