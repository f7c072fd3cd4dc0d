//===- Signature.h - What a compiled function takes and returns -*- C++ -*-===//
//
// Part of the Tessera runtime: no MLIR or LLVM types in this header.
//
// A compiled library carries a manifest: the signature of each of its
// functions in Graph IR terms (dtypes, symbolic dims), so the runtime can
// check arguments without the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_SIGNATURE_H
#define TESSERA_RUNTIME_SIGNATURE_H

#include "tessera/Runtime/DType.h"
#include "tessera/Runtime/Result.h"

#include <string>
#include <string_view>
#include <vector>

namespace tessera::runtime {

/// One argument or result: a dtype and one dim expression per axis ("64",
/// "B", "2*S", or "?" for a size known only at run time).
struct TensorSpec {
  DType dtype = DType::f32;
  std::vector<std::string> dims;
  /// A random key: an i32[2] buffer holding its two Philox words.
  bool isKey = false;
  /// State the call updates in place (the buffers of a KV cache: keys,
  /// values, and i64[2] holding the valid length and the window, 0 for
  /// none). The caller keeps the buffers between calls.
  bool isState = false;

  /// "f32[B, 64]" (or "key", or "state f32[B, 8, 128, 64]").
  std::string describe() const;
};

struct FunctionSignature {
  std::string name;
  std::vector<TensorSpec> arguments;
  std::vector<TensorSpec> results;

  /// "@f(f32[B, 64], f32[64]) -> (f32[B])".
  std::string describe() const;
};

/// The manifest text of `functions` (what the compiler embeds).
std::string printManifest(const std::vector<FunctionSignature> &functions);
/// Parses a manifest; every dim must be a valid dim expression.
Result<std::vector<FunctionSignature>> parseManifest(std::string_view text);

/// Compiled code names function `f` `tessera.f` (its packed entry point is
/// `_mlir__mlir_ciface_tessera.f`), apart from the C library's names.
inline constexpr const char *compiledSymbolPrefix = "tessera.";

/// The symbol a compiled library defines for its manifest (a
/// NUL-terminated string).
inline constexpr const char *kManifestSymbol = "tessera_manifest";

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_SIGNATURE_H
