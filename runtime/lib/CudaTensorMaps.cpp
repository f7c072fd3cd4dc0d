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
  if (int(args.size()) + 1 != paramSlots)
    return Error{"kernel '" + kernel + "' takes " +
                 std::to_string(paramSlots - 1) +
                 " parameter values (each memref as pointer, pointer, "
                 "offset, sizes, strides), got " +
                 std::to_string(args.size())};
  if (config.block != std::array<unsigned, 3>{unsigned(consumerThreads), 1, 1})
    return Error{"kernel '" + kernel + "' runs on blocks of " +
                 std::to_string(consumerThreads) +
                 " threads (its warps; the launch adds its producer's " +
                 std::to_string(extraThreads) + "), got (" +
                 std::to_string(config.block[0]) + ", " +
                 std::to_string(config.block[1]) + ", " +
                 std::to_string(config.block[2]) + ")"};
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
    std::uint64_t address = base + std::uint64_t(offset * m.eltBytes);
    cuuint64_t dims[5], strides[4];
    cuuint32_t box[5] = {cuuint32_t(m.boxCols), cuuint32_t(m.boxRows), 1, 1, 1};
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
        std::uint64_t strideBytes = std::uint64_t(stride * m.eltBytes);
        ok = ok && stride > 0 && strideBytes % 16 == 0 &&
             strideBytes < (1ull << 40);
        strides[dim - 1] = strideBytes;
      }
    }
    if (ok) {
      CUtensorMap map;
      CUtensorMapDataType type = m.eltBytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                 : m.eltBytes == 2
                                     ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                                     : CU_TENSOR_MAP_DATA_TYPE_UINT32;
      CUtensorMapSwizzle swizzle = m.swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                   : m.swizzle == 64
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

Result<std::shared_ptr<Kernel::TmaLaunch>>
detail::readTmaLaunch(CUmodule module, const std::string &name) {
  CUdeviceptr global;
  size_t globalBytes = 0;
  CUresult r = driver().moduleGetGlobal(&global, &globalBytes, module,
                                        ("tessera_tma_" + name).c_str());
  if (r != CUDA_SUCCESS)
    return std::shared_ptr<Kernel::TmaLaunch>();
  std::vector<std::int32_t> record(globalBytes / 4);
  if (record.size() < 5 || globalBytes % 4)
    return Error{"kernel '" + name + "': its TMA launch record has " +
                 std::to_string(globalBytes) + " bytes"};
  TESSERA_CU(driver().memcpyDtoH(record.data(), global, globalBytes),
             "cannot read the TMA launch record of kernel '" + name + "'");
  // Version 1: no cluster field (one program a cluster).
  std::size_t head = record[0] == 1 ? 5 : 6;
  if ((record[0] != 1 && record[0] != 2) || record.size() < head ||
      record.size() != head + 6 * std::size_t(record[4]))
    return Error{"kernel '" + name +
                 "': its TMA launch record is of an unknown version (" +
                 std::to_string(record[0]) + ", " +
                 std::to_string(record.size()) + " entries)"};
  auto tma = std::make_shared<Kernel::TmaLaunch>();
  tma->extraThreads = record[1];
  tma->consumerThreads = record[2];
  tma->paramSlots = record[3];
  tma->cluster = head == 6 ? record[5] : 1;
  if (tma->cluster < 1 || tma->cluster > 8)
    return Error{"kernel '" + name + "': its TMA launch record asks for " +
                 std::to_string(tma->cluster) + " programs a cluster (1 to 8)"};
  for (std::int32_t i = 0; i < record[4]; ++i) {
    const std::int32_t *m = &record[head + 6 * std::size_t(i)];
    if (m[0] < 0 || m[1] < 2 || m[1] > 5 ||
        m[0] + 3 + 2 * m[1] > tma->paramSlots - 1 ||
        (m[2] != 1 && m[2] != 2 && m[2] != 4) ||
        (m[5] != 32 && m[5] != 64 && m[5] != 128) || m[3] <= 0 || m[3] > 256 ||
        m[4] <= 0 || m[4] > 256)
      return Error{"kernel '" + name + "': tensor map " + std::to_string(i) +
                   " of its TMA launch record is malformed"};
    tma->maps.push_back({m[0], m[1], m[2], m[3], m[4], m[5]});
  }
  return tma;
}

void Kernel::forgetSite(const void *site) const {
  if (!tma || !site)
    return;
  std::lock_guard<std::mutex> lock(tma->mutex);
  for (auto it = tma->tables.begin(); it != tma->tables.end();)
    it = it->first.second == site ? tma->tables.erase(it) : std::next(it);
}
