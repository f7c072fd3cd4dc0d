//===- CompileCache.cpp - Compiled code kept on disk ----------------------===//

#include "tessera/Runtime/CompileCache.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace tessera::runtime;

namespace {
constexpr const char *kFormat = "tessera-cache-1";

std::string sumPath(const std::string &library) {
  return library.substr(0, library.size() - 3) + ".sum";
}

/// Reports each damaged entry once per process.
void reportOnce(const std::string &path, const std::string &why) {
  static std::mutex mutex;
  static std::set<std::string> reported;
  std::lock_guard<std::mutex> lock(mutex);
  if (reported.insert(path).second)
    std::fprintf(stderr,
                 "tessera: compile cache entry %s is damaged (%s); "
                 "recompiling\n",
                 path.c_str(), why.c_str());
}

bool makeDirectories(const std::string &path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i != path.size() && path[i] != '/')
      continue;
    std::string prefix = path.substr(0, i);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return false;
  }
  return true;
}
} // namespace

std::uint64_t tessera::runtime::checksumBytes(const char *data,
                                              std::size_t size,
                                              std::uint64_t hash) {
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::optional<std::uint64_t>
tessera::runtime::checksumFile(const std::string &path, std::uint64_t *size) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::uint64_t hash = checksumBytes(nullptr, 0), bytes = 0;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof buffer);
    std::streamsize n = in.gcount();
    hash = checksumBytes(buffer, std::size_t(n), hash);
    bytes += static_cast<std::uint64_t>(n);
  }
  if (size)
    *size = bytes;
  return hash;
}

CompileCache::CompileCache(std::string directory) : dir(std::move(directory)) {}

std::string CompileCache::defaultDirectory() {
  if (const char *d = std::getenv("TESSERA_CACHE_DIR"); d && *d)
    return d;
  if (const char *d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return std::string(d) + "/tessera";
  if (const char *d = std::getenv("HOME"); d && *d)
    return std::string(d) + "/.cache/tessera";
  // No home directory: the system's temporary directory, one cache per
  // user (never a directory another user could have filled).
  std::error_code ec;
  std::filesystem::path temporary = std::filesystem::temp_directory_path(ec);
  if (ec)
    temporary = P_tmpdir;
  return (temporary / ("tessera-cache-" + std::to_string(getuid()))).string();
}

std::optional<std::string> CompileCache::find(const std::string &key) const {
  std::string library = dir + "/" + key + ".so";
  std::string sum = sumPath(library);
  struct stat info;
  bool haveLibrary = stat(library.c_str(), &info) == 0;
  bool haveSum = access(sum.c_str(), F_OK) == 0;
  if (!haveLibrary && !haveSum)
    return std::nullopt;
  auto damaged = [&](const std::string &why) -> std::optional<std::string> {
    reportOnce(library, why);
    std::remove(library.c_str());
    std::remove(sum.c_str());
    return std::nullopt;
  };
  if (!haveLibrary)
    return damaged("the library is missing");
  if (!haveSum)
    return damaged("its checksum file is missing");
  std::ifstream in(sum);
  std::string format;
  std::uint64_t expectedSize = 0, expectedHash = 0;
  if (!(in >> format >> expectedSize >> std::hex >> expectedHash) ||
      format != kFormat)
    return damaged("its checksum file is unreadable");
  std::uint64_t size = 0;
  std::optional<std::uint64_t> hash = checksumFile(library, &size);
  if (!hash)
    return damaged("the library cannot be read");
  if (size != expectedSize)
    return damaged("the library has " + std::to_string(size) + " bytes, but " +
                   std::to_string(expectedSize) + " were written");
  if (*hash != expectedHash)
    return damaged("the library's checksum does not match");
  return library;
}

Result<std::string> CompileCache::scratchPath(const std::string &key) const {
  if (!makeDirectories(dir))
    return Error{"cannot create the compile cache directory " + dir + ": " +
                 std::strerror(errno)};
  return dir + "/." + key + "." + std::to_string(getpid()) + ".tmp.so";
}

Result<std::string> CompileCache::store(const std::string &key,
                                        const std::string &builtPath) const {
  std::string library = dir + "/" + key + ".so";
  std::uint64_t size = 0;
  std::optional<std::uint64_t> hash = checksumFile(builtPath, &size);
  if (!hash)
    return Error{"cannot read the compiled library " + builtPath};
  // The checksum goes first: a library without one is treated as damaged,
  // never trusted.
  std::string sum = sumPath(library);
  std::string sumTemp = sum + "." + std::to_string(getpid()) + ".tmp";
  {
    std::ofstream out(sumTemp);
    char hex[32];
    std::snprintf(hex, sizeof hex, "%016" PRIx64, *hash);
    out << kFormat << " " << size << " " << hex << "\n";
    if (!out)
      return Error{"cannot write " + sumTemp};
  }
  if (std::rename(sumTemp.c_str(), sum.c_str()) != 0 ||
      std::rename(builtPath.c_str(), library.c_str()) != 0)
    return Error{"cannot move the compiled library into " + dir + ": " +
                 std::strerror(errno)};
  return library;
}
