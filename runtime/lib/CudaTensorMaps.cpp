//===- CudaTensorMaps.cpp - TMA launches of Tile IR kernels ---------------===//
//
// The launch record a kernel's PTX carries, and the tables of tensor maps
// its launches pass: kept in device memory per stream and launch site, one
// for each set of buffers launched with (64 at most; the least recently
// used is rewritten past that).
//
//===----------------------------------------------------------------------===//

#include "CudaTensorMaps.h"

#include "CudaDriver.h"

#include <cstring>
#include <iterator>

using namespace tessera::runtime;
using namespace tessera::runtime::cuda;
using namespace tessera::runtime::cuda::detail;

Status Kernel::TmaLaunch::prepare(const std::string &kernel,
                                  const LaunchConfig &config,
                                  std::vector<void *> &args, CUstream stream,
                                  const void *site, int device) {
  if (int(args.size()) != paramSlots)
    return Error{"kernel '" + kernel + "' takes " +
                 std::to_string(paramSlots) +
                 " parameter values (each memref as pointer, pointer, "
                 "offset, sizes, strides), got " +
                 std::to_string(args.size())};
  // The memref fields the maps come from: the same as at the last launch
  // on this stream, the table in device memory still holds their maps.
  std::vector<std::int64_t> key;
  for (const MapSpec &m : maps)
    for (int k = 1; k < 3 + 2 * m.rank; ++k) {
      std::int64_t v;
      std::memcpy(&v, args[std::size_t(m.slot + k)], sizeof v);
      key.push_back(v);
    }
  std::lock_guard<std::mutex> lock(mutex);
  if (maps.empty()) { // (no table to make: its address is 0)
    args.push_back(&noTable);
    return Status::ok();
  }
  // Most recently used first: a site launched on the same buffers as last
  // time finds them at the front.
  std::list<Table> &kept = tables[{stream, site}];
  for (auto it = kept.begin(); it != kept.end(); ++it)
    if (it->key == key) {
      kept.splice(kept.begin(), kept, it);
      args.push_back(&kept.front().address);
      return Status::ok();
    }
  // The maps, then one i32 per map: 1 where it could be made.
  std::vector<char> bytes(maps.size() * (sizeof(CUtensorMap) + 4), 0);
  const Driver &d = driver();
  for (std::size_t i = 0; i < maps.size(); ++i) {
    const MapSpec &m = maps[i];
    auto field = [&](int k) {
      std::int64_t v;
      std::memcpy(&v, args[std::size_t(m.slot + k)], sizeof v);
      return v;
    };
    // The memref: pointer, aligned pointer, offset, sizes, strides; the
    // map's dims innermost first.
    std::uint64_t base = std::uint64_t(field(1));
    std::int64_t offset = field(2);
    std::uint64_t address = base + std::uint64_t(offset * m.elementBytes);
    cuuint64_t dims[5], strides[4];
    cuuint32_t box[5] = {cuuint32_t(m.boxColumns), cuuint32_t(m.boxRows), 1, 1, 1};
    cuuint32_t unit[5] = {1, 1, 1, 1, 1};
    // What TMA can address; other tiles are copied with cp.async.
    bool ok = d.tensorMapEncodeTiled && address % 16 == 0 &&
              field(3 + 2 * m.rank - 1) == 1;
    for (int dim = 0; dim < m.rank && ok; ++dim) {
      std::int64_t size = field(3 + m.rank - 1 - dim);
      std::int64_t stride = field(3 + 2 * m.rank - 1 - dim);
      ok = size > 0 && size <= (1ll << 32);
      dims[dim] = cuuint64_t(size);
      if (dim > 0) {
        std::uint64_t strideBytes = std::uint64_t(stride * m.elementBytes);
        ok = ok && stride > 0 && strideBytes % 16 == 0 &&
             strideBytes < (1ull << 40);
        strides[dim - 1] = strideBytes;
      }
    }
    if (ok) {
      CUtensorMap map;
      CUtensorMapDataType type = m.elementBytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                 : m.elementBytes == 2
                                     ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                                     : CU_TENSOR_MAP_DATA_TYPE_UINT32;
      CUtensorMapSwizzle swizzle = m.swizzleBytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                   : m.swizzleBytes == 64
                                       ? CU_TENSOR_MAP_SWIZZLE_64B
                                       : CU_TENSOR_MAP_SWIZZLE_32B;
      ok =
          d.tensorMapEncodeTiled(
              &map, type, cuuint32_t(m.rank), reinterpret_cast<void *>(address),
              dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
              CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
      if (ok)
        std::memcpy(bytes.data() + i * sizeof(CUtensorMap), &map, sizeof map);
    }
    std::int32_t flag = ok ? 1 : 0;
    std::memcpy(bytes.data() + maps.size() * sizeof(CUtensorMap) + 4 * i, &flag,
                sizeof flag);
  }
  // A new table, or the least recently used one rewritten: the copy into
  // it runs after the launches before it on this stream, the only ones
  // that read it.
  if (kept.size() < kTablesPerSite) {
    auto buffer =
        DeviceBuffer::allocate(DType::i8, {std::int64_t(bytes.size())}, device);
    if (!buffer)
      return buffer.error();
    kept.emplace_front().buffer = *buffer;
  } else {
    kept.splice(kept.begin(), kept, std::prev(kept.end()));
  }
  Table *table = &kept.front();
  // Invalid until the copy is queued.
  table->key.clear();
  table->bytes = std::move(bytes);
  TESSERA_CU(d.memcpyHtoDAsync(CUdeviceptr(table->buffer.pointer()),
                               table->bytes.data(), table->bytes.size(),
                               stream),
             "cannot copy the tensor maps of kernel '" + kernel + "'");
  table->key = std::move(key);
  table->address = table->buffer.pointer();
  args.push_back(&table->address);
  return Status::ok();
}

Result<std::shared_ptr<const KernelLaunchRecord>>
detail::readLaunchRecord(CUmodule module, const std::string &name) {
  CUdeviceptr global;
  size_t globalBytes = 0;
  CUresult r = driver().moduleGetGlobal(
      &global, &globalBytes, module,
      (KernelLaunchRecord::kGlobalPrefix + name).c_str());
  if (r != CUDA_SUCCESS)
    return std::shared_ptr<const KernelLaunchRecord>();
  if (globalBytes % 4 || globalBytes > 4096)
    return Error{"kernel '" + name + "': its launch record has " +
                 std::to_string(globalBytes) + " bytes"};
  std::vector<std::int32_t> words(globalBytes / 4);
  if (globalBytes)
    TESSERA_CU(driver().memcpyDtoH(words.data(), global, globalBytes),
               "cannot read the launch record of kernel '" + name + "'");
  auto record = std::make_shared<KernelLaunchRecord>();
  std::string error;
  if (!KernelLaunchRecord::decode(words.data(), words.size(), name, *record,
                                  error))
    return Error{error};
  return std::shared_ptr<const KernelLaunchRecord>(std::move(record));
}

void Kernel::forgetSite(const void *site) const {
  if (!tma || !site)
    return;
  std::lock_guard<std::mutex> lock(tma->mutex);
  for (auto it = tma->tables.begin(); it != tma->tables.end();)
    it = it->first.second == site ? tma->tables.erase(it) : std::next(it);
}
