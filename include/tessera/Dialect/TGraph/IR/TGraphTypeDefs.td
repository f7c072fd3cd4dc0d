//===- TGraphTypeDefs.td - Graph IR types ------------------*- tablegen -*-===//

#ifndef TESSERA_TGRAPH_TYPEDEFS
#define TESSERA_TGRAPH_TYPEDEFS

include "tessera/Dialect/TGraph/IR/TGraphAttrDefs.td"

class TGraph_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<TGraph_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def TGraph_KeyType : TGraph_Type<"Key", "key"> {
  let summary = "a stateless random-number key (Philox 4x32-10)";
  let description = [{
    Random ops take a key explicitly and never change it; new keys come from
    `tgraph.rng.split` and `tgraph.rng.fold_in`, so a program's random numbers
    depend only on its keys, never on execution order or thread count.

    ```mlir
    %k = tgraph.rng.key {seed = 42 : i64}
    ```
  }];
}

def TGraph_KVCacheType : TGraph_Type<"KVCache", "kv_cache"> {
  let summary = "a key/value cache for autoregressive attention";
  let description = [{
    A stateful buffer of keys and values with shape
    `[batch, heads, max_length, head_dim]`; it is changed only through the
    `tgraph.kv_cache.*` ops, which are effects.

    ```mlir
    !tgraph.kv_cache<[B, 8, 4096, 64], bf16>
    ```
  }];
  let parameters = (ins "DimsAttr":$shape, "::mlir::Type":$elementType);
  let assemblyFormat = "`<` custom<DimList>($shape) `,` $elementType `>`";
  let genVerifyDecl = 1;
}

def TGraph_Key : Type<CPred<"::llvm::isa<::mlir::tessera::tgraph::KeyType>($_self)">,
                      "random key", "::mlir::tessera::tgraph::KeyType"> {
  let builderCall = "$_builder.getType<::mlir::tessera::tgraph::KeyType>()";
}
def TGraph_KVCache : Type<CPred<"::llvm::isa<::mlir::tessera::tgraph::KVCacheType>($_self)">,
                          "kv cache", "::mlir::tessera::tgraph::KVCacheType">;

#endif // TESSERA_TGRAPH_TYPEDEFS
