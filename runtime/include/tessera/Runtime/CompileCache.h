//===- CompileCache.h - Compiled code kept on disk --------------*- C++ -*-===//
//
// Compiled shared libraries keyed by a digest of everything that affects
// them (the IR, the pipeline and its options, the target CPU, the compiler
// version; the compiler computes the key). Each entry is `<key>.so` with a
// `<key>.sum` beside it holding the library's size and checksum; an entry
// whose library is missing, truncated or altered is reported once, removed
// and rebuilt by the caller. Entries are written to a temporary name and
// renamed, so a crash mid-write never leaves a half entry under the key.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_COMPILECACHE_H
#define TESSERA_RUNTIME_COMPILECACHE_H

#include "tessera/Runtime/Result.h"

#include <optional>
#include <string>

namespace tessera::runtime {

class CompileCache {
public:
  /// A cache in `directory` (created on first store).
  explicit CompileCache(std::string directory);

  /// The default directory: $TESSERA_CACHE_DIR, else
  /// $XDG_CACHE_HOME/tessera, else $HOME/.cache/tessera.
  static std::string defaultDirectory();

  /// The library of `key` if a valid entry exists. A damaged entry is
  /// reported on stderr, removed, and looked up as missing.
  std::optional<std::string> find(const std::string &key) const;

  /// Moves the library at `builtPath` into the cache under `key`; returns
  /// its final path.
  Result<std::string> store(const std::string &key,
                            const std::string &builtPath) const;

  /// A fresh path in the cache directory for building an entry of `key`.
  Result<std::string> scratchPath(const std::string &key) const;

  const std::string &directory() const { return dir; }

private:
  std::string dir;
};

/// 64-bit FNV-1a of `size` bytes, continuing from `hash` (its start value
/// by default).
std::uint64_t checksumBytes(const char *data, std::size_t size,
                            std::uint64_t hash = 0xcbf29ce484222325ull);

/// 64-bit FNV-1a of a file's bytes; nullopt if it cannot be read.
std::optional<std::uint64_t> checksumFile(const std::string &path,
                                          std::uint64_t *size = nullptr);

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_COMPILECACHE_H
