//===- LaunchRecord.h - What a compiled GPU kernel needs at launch -*- C++ -*-===//
//
// The GPU lowering (-tessera-convert-ttile-to-gpu) knows how a Tile IR
// kernel must be launched: its threads (its warps, and a TMA producer
// warpgroup beside them), its dynamic shared memory, its parameter slots,
// the programs of a cluster and the tensor maps it reads through. It writes
// this record into the kernel's module as a constant array of int32 named
// `tessera_launch_<kernel>`; the compiler reads it back before the module is
// serialized and the runtime reads it when it loads the kernel. Both decode
// it here, so the words have one meaning and one check.
//
// Words (version 3):
//   [0] version        [1] consumer threads  [2] producer threads
//   [3] dynamic shared bytes                  [4] parameter slots
//   [5] programs a cluster                    [6] 1: takes a tensor-map table
//   [7] tensor maps, then per map: first parameter slot of its memref, rank,
//       element bytes, box columns, box rows, swizzle bytes.
//
// Plain C++ (no LLVM): the compiler and the runtime both include it.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LAUNCHRECORD_H
#define TESSERA_RUNTIME_LAUNCHRECORD_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::runtime {

struct KernelLaunchRecord {
  static constexpr std::int32_t kVersion = 3;
  /// The record of kernel K is the global `tessera_launch_K`.
  static constexpr const char *kGlobalPrefix = "tessera_launch_";
  static constexpr std::size_t kHeaderWords = 8;
  static constexpr std::size_t kMapWords = 6;

  /// A TMA tensor map the launch makes from a memref argument.
  struct TensorMap {
    /// The memref's first parameter slot (its allocated pointer).
    std::int32_t slot = 0;
    std::int32_t rank = 2;
    std::int32_t elementBytes = 2;
    /// The box one copy moves: columns (one swizzle row) and rows.
    std::int32_t boxColumns = 0, boxRows = 0;
    std::int32_t swizzleBytes = 128;
    bool operator==(const TensorMap &o) const {
      return slot == o.slot && rank == o.rank &&
             elementBytes == o.elementBytes && boxColumns == o.boxColumns &&
             boxRows == o.boxRows && swizzleBytes == o.swizzleBytes;
    }
  };

  /// The kernel's own warps: 32 * ttile.num_warps.
  std::int32_t consumerThreads = 128;
  /// A TMA producer warpgroup's threads beside them (0 or 128).
  std::int32_t producerThreads = 0;
  /// Dynamic shared memory every launch needs (the launch opts in to it).
  std::int32_t dynamicSharedBytes = 0;
  /// 8-byte parameter slots of the kernel's arguments: a memref takes
  /// 3 + 2 * rank (pointer, pointer, offset, sizes, strides), a scalar one.
  /// The tensor-map table, when taken, is one more after them.
  std::int32_t parameterSlots = 0;
  /// Programs a cluster, consecutive along grid dim x (1: no clusters).
  std::int32_t cluster = 1;
  /// Whether the kernel takes the device address of its tensor maps (and a
  /// flag a map, 0 where it could not be made) as its last parameter.
  bool tensorMapTable = false;
  std::vector<TensorMap> maps;

  /// Threads of a block.
  std::int32_t blockThreads() const {
    return consumerThreads + producerThreads;
  }

  bool operator==(const KernelLaunchRecord &o) const {
    return consumerThreads == o.consumerThreads &&
           producerThreads == o.producerThreads &&
           dynamicSharedBytes == o.dynamicSharedBytes &&
           parameterSlots == o.parameterSlots && cluster == o.cluster &&
           tensorMapTable == o.tensorMapTable && maps == o.maps;
  }

  std::vector<std::int32_t> encode() const {
    std::vector<std::int32_t> words = {
        kVersion,       consumerThreads, producerThreads,
        dynamicSharedBytes, parameterSlots, cluster,
        tensorMapTable ? 1 : 0,          std::int32_t(maps.size())};
    for (const TensorMap &m : maps)
      words.insert(words.end(), {m.slot, m.rank, m.elementBytes, m.boxColumns,
                                 m.boxRows, m.swizzleBytes});
    return words;
  }

  /// Decodes `count` words of kernel `kernel`'s record. On failure returns
  /// false and sets `error` to what is wrong with it.
  static bool decode(const std::int32_t *words, std::size_t count,
                     const std::string &kernel, KernelLaunchRecord &out,
                     std::string &error) {
    auto fail = [&](const std::string &what) {
      error = "kernel '" + kernel + "': its launch record " + what;
      return false;
    };
    if (count < 1 || words[0] != kVersion)
      return fail("is of version " +
                  (count ? std::to_string(words[0]) : std::string("(none)")) +
                  "; this runtime reads version " + std::to_string(kVersion) +
                  " (recompile the kernel)");
    if (count < kHeaderWords)
      return fail("has " + std::to_string(count) + " words, fewer than its " +
                  std::to_string(kHeaderWords) + "-word header");
    KernelLaunchRecord r;
    r.consumerThreads = words[1];
    r.producerThreads = words[2];
    r.dynamicSharedBytes = words[3];
    r.parameterSlots = words[4];
    r.cluster = words[5];
    std::int32_t table = words[6], nMaps = words[7];
    if (r.consumerThreads < 32 || r.consumerThreads % 32 ||
        r.consumerThreads > 1024)
      return fail("gives " + std::to_string(r.consumerThreads) +
                  " threads to its warps (a multiple of 32 up to 1024)");
    if (r.producerThreads != 0 && r.producerThreads != 128)
      return fail("gives " + std::to_string(r.producerThreads) +
                  " threads to its producer (0 or 128)");
    if (r.blockThreads() > 1024)
      return fail("needs " + std::to_string(r.blockThreads()) +
                  " threads a block (at most 1024)");
    if (r.dynamicSharedBytes < 0)
      return fail("asks for " + std::to_string(r.dynamicSharedBytes) +
                  " bytes of shared memory");
    if (r.parameterSlots < 0)
      return fail("has " + std::to_string(r.parameterSlots) +
                  " parameter slots");
    if (r.cluster < 1 || r.cluster > 8)
      return fail("asks for " + std::to_string(r.cluster) +
                  " programs a cluster (1 to 8)");
    if (table != 0 && table != 1)
      return fail("has " + std::to_string(table) +
                  " for its tensor-map table flag (0 or 1)");
    r.tensorMapTable = table == 1;
    if (nMaps < 0 || (nMaps > 0 && !r.tensorMapTable) ||
        count != kHeaderWords + kMapWords * std::size_t(nMaps))
      return fail("has " + std::to_string(count) + " words for " +
                  std::to_string(nMaps) + " tensor maps");
    for (std::int32_t i = 0; i < nMaps; ++i) {
      const std::int32_t *m = words + kHeaderWords + kMapWords * i;
      TensorMap map{m[0], m[1], m[2], m[3], m[4], m[5]};
      if (map.slot < 0 || map.rank < 2 || map.rank > 5 ||
          map.slot + 3 + 2 * map.rank > r.parameterSlots ||
          (map.elementBytes != 1 && map.elementBytes != 2 &&
           map.elementBytes != 4) ||
          (map.swizzleBytes != 32 && map.swizzleBytes != 64 &&
           map.swizzleBytes != 128) ||
          map.boxColumns <= 0 || map.boxColumns > 256 || map.boxRows <= 0 ||
          map.boxRows > 256)
        return fail("has a malformed tensor map " + std::to_string(i));
      r.maps.push_back(map);
    }
    out = std::move(r);
    return true;
  }
};

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_LAUNCHRECORD_H
