//===- TTileOps.td - Tile IR: tiles, not threads ------------*- tablegen -*-===//
//
// A kernel is a function run by a grid of programs (one per CTA); each
// program computes on tiles: statically shaped tensors that live in
// registers, spread over the program's threads as their layout encoding
// says. Memory is global or shared (workgroup) memrefs; tiles move between
// memory and registers through ttile.load and ttile.store, which mask
// elements outside the memref. Elementwise math on tiles is upstream arith
// and math on tensors.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TTILE_OPS
#define TESSERA_TTILE_OPS

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def TTile_Dialect : Dialect {
  let name = "ttile";
  let cppNamespace = "::mlir::tessera::ttile";
  let summary = "Tessera's Tile IR: kernels as programs computing on tiles";
  let description = [{
    Kernels are `func.func`s marked `ttile.kernel`; their arguments are
    global memrefs (any sizes) and scalars. A launch runs one program per
    point of a grid (`ttile.program_id`), and each program works on tiles,
    ranked tensors of static shape. A tile's encoding, when it has one, says
    how its elements are spread over threads: `#ttile.blocked` (each thread
    holds contiguous elements), `#ttile.mma` (the accumulator fragments of
    mma.sync or wgmma), `#ttile.dot_operand` (the A and B fragments) and
    `#ttile.slice` (a reduction's result). Ops check that the layouts of
    their tiles agree; `ttile.convert_layout` is the one op that changes a
    tile's layout.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::gpu::GPUDialect"];
}

class TTile_Op<string mnemonic, list<Trait> traits = []>
    : Op<TTile_Dialect, mnemonic, traits>;

class TTile_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<TTile_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

def TTile_BlockedAttr : TTile_Attr<"Blocked", "blocked"> {
  let summary = "each thread holds blocks of contiguous elements";
  let description = [{
    Dim `d` of a tile is split into `sizePerThread[d]` elements per thread,
    `threadsPerWarp[d]` threads per warp (their product is 32) and
    `warpsPerCTA[d]` warps; `order` lists the dims from fastest to slowest.
    A tile larger than one such footprint repeats it; a smaller one
    replicates elements.

    ```mlir
    tensor<128x64xf32, #ttile.blocked<sizePerThread = [1, 4],
        threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]>>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$sizePerThread,
                        ArrayRefParameter<"int64_t">:$threadsPerWarp,
                        ArrayRefParameter<"int64_t">:$warpsPerCTA,
                        ArrayRefParameter<"int64_t">:$order);
  let assemblyFormat = "`<` `sizePerThread` `=` `[` $sizePerThread `]` `,` "
      "`threadsPerWarp` `=` `[` $threadsPerWarp `]` `,` "
      "`warpsPerCTA` `=` `[` $warpsPerCTA `]` `,` `order` `=` `[` $order `]` `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned getRank() const { return getOrder().size(); }
    int64_t getNumWarps() const;
  }];
}

def TTile_MmaAttr : TTile_Attr<"Mma", "mma"> {
  let summary = "the accumulator fragments of tensor-core instructions";
  let description = [{
    `version = 2` is Ampere's `mma.sync` (instruction shape 16x8 per warp),
    `version = 3` Hopper's `wgmma` (a warpgroup of 4 warps computes 64xN,
    N a multiple of 8 up to 256). `warpsPerCTA` tiles the warps (groups)
    over the M and N dims.

    ```mlir
    tensor<128x128xf32, #ttile.mma<version = 3, warpsPerCTA = [8, 1],
        instrShape = [64, 128, 16]>>
    ```
  }];
  let parameters = (ins "unsigned":$version,
                        ArrayRefParameter<"int64_t">:$warpsPerCTA,
                        ArrayRefParameter<"int64_t">:$instrShape);
  let assemblyFormat = "`<` `version` `=` $version `,` "
      "`warpsPerCTA` `=` `[` $warpsPerCTA `]` `,` "
      "`instrShape` `=` `[` $instrShape `]` `>`";
  let genVerifyDecl = 1;
}

def TTile_DotOperandAttr : TTile_Attr<"DotOperand", "dot_operand"> {
  let summary = "the A (opIdx 0) or B (opIdx 1) fragments of a dot";
  let description = [{
    The layout a `ttile.dot` operand must have when the accumulator has
    layout `parent`; `kWidth` elements along K are contiguous per thread.

    ```mlir
    tensor<128x32xbf16, #ttile.dot_operand<opIdx = 0, parent = #mma, kWidth = 8>>
    ```
  }];
  let parameters = (ins "unsigned":$opIdx, "::mlir::Attribute":$parent,
                        "unsigned":$kWidth);
  let assemblyFormat = "`<` `opIdx` `=` $opIdx `,` `parent` `=` $parent `,` "
      "`kWidth` `=` $kWidth `>`";
  let genVerifyDecl = 1;
}

def TTile_SharedAttr : TTile_Attr<"Shared", "shared"> {
  let summary = "a tile held in shared memory, as the tensor cores read it";
  let description = [{
    The tile lives in shared memory, not in registers: dim `order[0]` is
    contiguous in rows of `swizzle` bytes (32, 64 or 128), whose 16-byte
    chunks are XOR-swizzled by row, and a tile wider than one row is kept
    as consecutive column blocks of `swizzle` bytes (Hopper's canonical
    wgmma operand layouts). `ttile.load` fills it from global memory with
    asynchronous copies; `ttile.dot` with a `#ttile.mma` version 3
    accumulator reads both operands from it.

    ```mlir
    tensor<128x64xbf16, #ttile.shared<swizzle = 128, order = [1, 0]>>
    ```
  }];
  let parameters = (ins "unsigned":$swizzle, ArrayRefParameter<"int64_t">:$order);
  let assemblyFormat = "`<` `swizzle` `=` $swizzle `,` `order` `=` `[` $order `]` `>`";
  let genVerifyDecl = 1;
}

def TTile_SliceAttr : TTile_Attr<"Slice", "slice"> {
  let summary = "a layout with one dim of its parent removed";
  let description = [{
    What a reduction over `dim` leaves: each remaining element sits on the
    threads that held its row (or column) of the parent layout.

    ```mlir
    tensor<128xf32, #ttile.slice<dim = 1, parent = #blocked>>
    ```
  }];
  let parameters = (ins "unsigned":$dim, "::mlir::Attribute":$parent);
  let assemblyFormat = "`<` `dim` `=` $dim `,` `parent` `=` $parent `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def TTile_ReduceKind : I32EnumAttr<"ReduceKind", "a tile reduction",
    [I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"max", 1>,
     I32EnumAttrCase<"min", 2>, I32EnumAttrCase<"prod", 3>]> {
  let cppNamespace = "::mlir::tessera::ttile";
  let genSpecializedAttr = 0;
}
def TTile_ReduceKindAttr : EnumAttr<TTile_Dialect, TTile_ReduceKind, "reduce">;

//===----------------------------------------------------------------------===//
// Types used by the ops
//===----------------------------------------------------------------------===//

def TTile_Tile : StaticShapeTensorOf<[AnyType]>;
def TTile_FloatTile : StaticShapeTensorOf<[AnyFloat]>;
def TTile_IntTile : StaticShapeTensorOf<[I32, I64]>;
def TTile_MaskTile : StaticShapeTensorOf<[I1]>;
def TTile_Memory : RankedOrUnrankedMemRefOf<[AnyType]>;

//===----------------------------------------------------------------------===//
// The program grid
//===----------------------------------------------------------------------===//

def TTile_ProgramIdOp : TTile_Op<"program_id", [Pure]> {
  let summary = "this program's index along one grid dim";
  let description = [{
    ```mlir
    %pid = ttile.program_id x
    ```
  }];
  let arguments = (ins I32Attr:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "custom<GridDim>($dim) attr-dict";
  let hasVerifier = 1;
}

def TTile_NumProgramsOp : TTile_Op<"num_programs", [Pure]> {
  let summary = "the number of programs along one grid dim";
  let description = [{
    ```mlir
    %n = ttile.num_programs y
    ```
  }];
  let arguments = (ins I32Attr:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "custom<GridDim>($dim) attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

def TTile_LoadOp : TTile_Op<"load",
    [AttrSizedOperandSegments, MemoryEffects<[MemRead]>]> {
  let summary = "a tile of a global or shared memref";
  let description = [{
    Reads the box of the result's shape whose first element is at
    `indices` (one per memref dim; the tile has the memref's rank).
    Elements outside the memref, and those where `mask` is false, read
    `padding` (zero by default) and touch no memory.

    `multicast` (in a kernel of `ttile.cluster` programs a cluster) states
    that every program of the cluster loads this same tile at the same
    point: on Hopper, where a producer warpgroup copies the tile, each
    program copies a part of it and the Tensor Memory Accelerator delivers
    every part to all of the cluster's programs. Elsewhere it is a plain
    load.

    ```mlir
    %q = ttile.load %Q[%row, %c0] : memref<?x?xbf16> -> tensor<128x64xbf16>
    %k = ttile.load %K[%n, %c0] mask %m {padding = 0.0 : bf16}
        : memref<?x?xbf16> -> tensor<64x64xbf16, #blocked>
    %b = ttile.load %B[%k, %j] {multicast} : memref<?x?xbf16>
        -> tensor<64x256xbf16>
    ```
  }];
  let arguments = (ins TTile_Memory:$source, Variadic<Index>:$indices,
                       Optional<TTile_MaskTile>:$mask,
                       OptionalAttr<TypedAttrInterface>:$padding,
                       UnitAttr:$multicast);
  let results = (outs TTile_Tile:$result);
  let assemblyFormat = "$source `[` $indices `]` (`mask` $mask^)? attr-dict "
      "`:` type($source) (`,` type($mask)^)? `->` type($result)";
  let hasVerifier = 1;
}

def TTile_StoreOp : TTile_Op<"store",
    [AttrSizedOperandSegments, MemoryEffects<[MemWrite]>]> {
  let summary = "writes a tile into a global or shared memref";
  let description = [{
    Writes `value` to the box whose first element is at `indices`; elements
    outside the memref and those where `mask` is false are not written.

    ```mlir
    ttile.store %o, %O[%row, %c0] : tensor<128x64xbf16>, memref<?x?xbf16>
    ```
  }];
  let arguments = (ins TTile_Tile:$value, TTile_Memory:$dest,
                       Variadic<Index>:$indices,
                       Optional<TTile_MaskTile>:$mask);
  let assemblyFormat = "$value `,` $dest `[` $indices `]` (`mask` $mask^)? "
      "attr-dict `:` type($value) `,` type($dest) (`,` type($mask)^)?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

def TTile_DotOp : TTile_Op<"dot", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "tile matrix product on the tensor cores: acc + a @ b";
  let description = [{
    `[M, K] x [K, N] + [M, N]`. Operands are bf16, f16, tf32, fp8 (e4m3 and
    e5m2 may mix) or f32 with an f32 accumulator, f16 also with an f16
    accumulator, or i8 with an i32 accumulator. With layouts, `acc` is a
    `#ttile.mma` (or blocked) tile and `a`, `b` are its `#ttile.dot_operand`
    0 and 1. The instruction the lowering picks (mma.sync, wgmma) is the
    accumulator layout's. f32 operands multiply exactly (FMAs) unless
    `tf32` allows the tensor cores to read them as tf32 (10 explicit
    mantissa bits; Hopper's wgmma, with B given K-contiguous).

    ```mlir
    %c = ttile.dot %a, %b, %acc : tensor<128x32xbf16>, tensor<32x128xbf16>
        -> tensor<128x128xf32>
    %d = ttile.dot %x, %y, %acc {tf32} : tensor<128x32xf32>,
        tensor<32x128xf32> -> tensor<128x128xf32>
    ```
  }];
  let arguments = (ins TTile_Tile:$a, TTile_Tile:$b, TTile_Tile:$acc,
                       UnitAttr:$tf32);
  let results = (outs TTile_Tile:$result);
  let assemblyFormat = "$a `,` $b `,` $acc attr-dict `:` type($a) `,` "
      "type($b) `->` type($result)";
  let hasVerifier = 1;
}

def TTile_ReduceOp : TTile_Op<"reduce", [Pure]> {
  let summary = "reduces one dim of a tile";
  let description = [{
    The result drops `dim`; with a layout L it has `#ttile.slice<dim, L>`.

    ```mlir
    %m = ttile.reduce max %s {dim = 1 : i32} : tensor<128x64xf32> -> tensor<128xf32>
    ```
  }];
  let arguments = (ins TTile_ReduceKindAttr:$kind, TTile_Tile:$source,
                       I32Attr:$dim);
  let results = (outs TTile_Tile:$result);
  let assemblyFormat = "$kind $source attr-dict `:` type($source) `->` "
      "type($result)";
  let hasVerifier = 1;
}

def TTile_BroadcastOp : TTile_Op<"broadcast", [Pure]> {
  let summary = "repeats a tile along new or size-1 dims";
  let description = [{
    Operand dim i becomes result dim `dims[i]` (size 1 or equal); the other
    result dims are new. The operand's layout, when the result has layout L
    and the operand has one dim less, is `#ttile.slice` of L.

    ```mlir
    %b = ttile.broadcast %m {dims = array<i64: 0>} : tensor<128xf32> -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins TTile_Tile:$source, DenseI64ArrayAttr:$dims);
  let results = (outs TTile_Tile:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def TTile_TransposeOp : TTile_Op<"transpose", [Pure]> {
  let summary = "permutes the dims of a tile";
  let description = [{
    Result dim i is operand dim `permutation[i]`.

    ```mlir
    %kt = ttile.transpose %k {permutation = array<i64: 1, 0>} : tensor<64x32xbf16> -> tensor<32x64xbf16>
    ```
  }];
  let arguments = (ins TTile_Tile:$source, DenseI64ArrayAttr:$permutation);
  let results = (outs TTile_Tile:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def TTile_IotaOp : TTile_Op<"iota", [Pure]> {
  let summary = "each element's index along one dim (row or column index)";
  let description = [{
    ```mlir
    %rows = ttile.iota {dim = 0 : i32} : tensor<128x64xi32>
    ```
  }];
  let arguments = (ins I32Attr:$dim);
  let results = (outs TTile_IntTile:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TTile_CastOp : TTile_Op<"cast", [Pure]> {
  let summary = "converts a tile's element type";
  let description = [{
    Floats round to nearest even unless `stochastic_round` (with the 32-bit
    `seed` operand); `saturate` clamps to the target's finite range (fp8).
    Shape and layout stay.

    ```mlir
    %o = ttile.cast %acc : tensor<128x64xf32> -> tensor<128x64xbf16>
    ```
  }];
  let arguments = (ins TTile_Tile:$source, UnitAttr:$saturate,
                       UnitAttr:$stochastic_round, Optional<I32>:$seed);
  let results = (outs TTile_Tile:$result);
  let assemblyFormat = "$source (`seed` $seed^)? attr-dict `:` type($source) "
      "`->` type($result)";
  let hasVerifier = 1;
}

def TTile_ConvertLayoutOp : TTile_Op<"convert_layout", [Pure]> {
  let summary = "moves a tile's elements to another layout";
  let description = [{
    The only op that changes a tile's layout (through shared memory or warp
    shuffles); shape and element type stay.

    ```mlir
    %a = ttile.convert_layout %x : tensor<128x32xbf16, #blocked>
        -> tensor<128x32xbf16, #ttile.dot_operand<opIdx = 0, parent = #mma, kWidth = 8>>
    ```
  }];
  let arguments = (ins TTile_Tile:$source);
  let results = (outs TTile_Tile:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Attention helpers
//===----------------------------------------------------------------------===//

def TTile_MaskCausalOp : TTile_Op<"mask_causal",
    [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "sets the scores of future keys to -inf";
  let description = [{
    Element (i, j) of the `[M, N]` score tile is query `row_offset + i`
    against key `col_offset + j`; it becomes -inf when the key comes after
    the query. The GPU lowering compares element by element only when the
    block reaches past the diagonal (`col_offset + N - 1 > row_offset`, a
    comparison of program scalars); blocks below it pass through.

    ```mlir
    %s1 = ttile.mask_causal %s, %q0, %k0 : tensor<128x64xf32>
    ```
  }];
  let arguments = (ins TTile_FloatTile:$scores, Index:$row_offset,
                       Index:$col_offset);
  let results = (outs TTile_FloatTile:$result);
  let assemblyFormat = "$scores `,` $row_offset `,` $col_offset attr-dict `:` "
      "type($scores)";
  let hasVerifier = 1;
}

def TTile_MaskKeysOp : TTile_Op<"mask_keys",
    [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "sets the scores of keys past the last to -inf";
  let description = [{
    Column j of the `[M, N]` score tile is key `col_offset + j` of a
    sequence of `count` keys; its scores become -inf when
    `col_offset + j >= count` (a key block that runs past the sequence's
    end).

    ```mlir
    %s1 = ttile.mask_keys %s, %k0, %keys : tensor<128x64xf32>
    ```

    Like `mask_causal`, the GPU lowering compares element by element only
    when the block has a masked key: the test is one comparison of program
    scalars, so blocks inside the sequence cost a branch.
  }];
  let arguments = (ins TTile_FloatTile:$scores, Index:$col_offset,
                       Index:$count);
  let results = (outs TTile_FloatTile:$result);
  let assemblyFormat = "$scores `,` $col_offset `,` $count attr-dict `:` "
      "type($scores)";
  let hasVerifier = 1;
}

def TTile_SoftmaxOnlineOp : TTile_Op<"softmax_online", [Pure]> {
  let summary = "one block of an online softmax over the rows of a tile";
  let description = [{
    For scores `s` `[M, N]`: `m_c = max_j s`, `p = exp(s - m_c)`,
    `l_c = sum_j p` (rows of -inf give m_c = -inf, p = 0, l_c = 0).

    ```mlir
    %p, %mc, %lc = ttile.softmax_online %s : tensor<128x64xf32>
        -> tensor<128x64xf32>, tensor<128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins TTile_FloatTile:$scores);
  let results = (outs TTile_FloatTile:$p, TTile_FloatTile:$m_c,
                      TTile_FloatTile:$l_c);
  let assemblyFormat = "$scores attr-dict `:` type($scores) `->` type($p) `,` "
      "type($m_c) `,` type($l_c)";
  let hasVerifier = 1;
}

def TTile_SoftmaxAccumulateOp : TTile_Op<"softmax_accumulate",
    [Pure, AllTypesMatch<["acc", "new_acc"]>,
     AllTypesMatch<["m", "l", "m_c", "l_c", "new_m", "new_l"]>]> {
  let summary = "folds one softmax block and its values into the running output";
  let description = [{
    With the running `acc` `[M, D]`, row maximum `m` and row sum `l`, and a
    block's `p` `[M, N]`, `v` `[N, D]`, `m_c`, `l_c` (from
    ttile.softmax_online): `m' = max(m, m_c)`, `a = exp(m - m')`,
    `b = exp(m_c - m')`, `acc' = a * acc + b * (p @ v)`, `l' = a * l + b * l_c`.
    The output is `acc' / l'` after the last block.

    ```mlir
    %acc1, %m1, %l1 = ttile.softmax_accumulate %acc, %m, %l, %p, %v, %mc, %lc
        : tensor<128x64xf32>, tensor<128xf32>, tensor<128x64xf32>, tensor<64x64xbf16>
    ```
  }];
  let arguments = (ins TTile_FloatTile:$acc, TTile_FloatTile:$m,
                       TTile_FloatTile:$l, TTile_FloatTile:$p,
                       TTile_FloatTile:$v, TTile_FloatTile:$m_c,
                       TTile_FloatTile:$l_c);
  let results = (outs TTile_FloatTile:$new_acc, TTile_FloatTile:$new_m,
                      TTile_FloatTile:$new_l);
  let assemblyFormat = "$acc `,` $m `,` $l `,` $p `,` $v `,` $m_c `,` $l_c "
      "attr-dict `:` type($acc) `,` type($m) `,` type($p) `,` type($v)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loops
//===----------------------------------------------------------------------===//

def TTile_RangeOp : TTile_Op<"range",
    [RecursiveMemoryEffects, SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a loop over tile offsets, with prefetch stages";
  let description = [{
    `for iv = lb; iv < ub; iv += step` carrying `iter_args`. With
    `stages = s > 1` the loads in the body that depend only on `iv` are
    issued `s - 1` iterations ahead (software pipelining through shared
    memory), as the schedule's `stages` asks.

    ```mlir
    %r:2 = ttile.range %n = %c0 to %len step %c64 stages 3
        iter_args(%acc = %z, %m = %minf) -> (tensor<128x64xf32>, tensor<128xf32>) {
      ...
      ttile.yield %acc2, %m2 : tensor<128x64xf32>, tensor<128xf32>
    }
    ```
  }];
  let arguments = (ins Index:$lower_bound, Index:$upper_bound, Index:$step,
                       Variadic<AnyType>:$inits,
                       DefaultValuedAttr<I32Attr, "1">:$stages);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    Value getInductionVar() { return getBody().getArgument(0); }
  }];
}

def TTile_YieldOp : TTile_Op<"yield",
    [Pure, Terminator, ReturnLike, HasParent<"RangeOp">]> {
  let summary = "the values a ttile.range iteration carries on";
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ /* no values */ }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // TESSERA_TTILE_OPS
