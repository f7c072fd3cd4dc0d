//===- CudaTensorMaps.h - TMA launches of Tile IR kernels ------*- C++ -*-===//
//
// A Tile IR kernel whose producer copies tiles with TMA says in its launch
// record (tessera/Runtime/LaunchRecord.h) how to make its tensor maps; each
// launch makes the maps of its memref arguments and passes their address
// (a table in device memory).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_CUDATENSORMAPS_H
#define TESSERA_RUNTIME_LIB_CUDATENSORMAPS_H

#include "tessera/Runtime/Cuda.h"
#include "tessera/Runtime/LaunchRecord.h"

#include <cuda.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct tessera::runtime::cuda::Kernel::TmaLaunch {
  using MapSpec = KernelLaunchRecord::TensorMap;
  /// Parameter slots of the kernel's own arguments (the table comes after).
  int paramSlots = 0;
  std::vector<MapSpec> maps;

  /// The maps of one set of memrefs, in device memory.
  struct Table {
    DeviceBuffer buffer;
    std::vector<char> bytes;
    /// The memref fields the maps were made from.
    std::vector<std::int64_t> key;
    std::uint64_t address = 0;
  };
  /// Tables kept per stream and site: a site launched on a few sets of
  /// buffers in turn (the layers of a model, buffers that alternate)
  /// finds each set's maps in device memory without a copy; past this
  /// many, the least recently used table is rewritten.
  static constexpr std::size_t kTablesPerSite = 64;
  std::mutex mutex;
  /// The address launches without maps pass.
  std::uint64_t noTable = 0;
  /// Per stream and launch site (null: launches without one), most
  /// recently used first; a list, so that the addresses passed in `args`
  /// stay put.
  std::map<std::pair<CUstream, const void *>, std::list<Table>> tables;

  /// Checks the launch, makes the maps and appends their address to
  /// `args`.
  Status prepare(const std::string &kernel, const LaunchConfig &config,
                 std::vector<void *> &args, CUstream stream, const void *site,
                 int device);
};

namespace tessera::runtime::cuda::detail {

/// The launch record of kernel `name` in `module` (null when it has none:
/// a kernel not compiled from Tile IR).
Result<std::shared_ptr<const KernelLaunchRecord>>
readLaunchRecord(CUmodule module, const std::string &name);

} // namespace tessera::runtime::cuda::detail

#endif // TESSERA_RUNTIME_LIB_CUDATENSORMAPS_H
