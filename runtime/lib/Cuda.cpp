//===- Cuda.cpp - NVIDIA GPUs through the CUDA driver API -----------------===//
//
// The driver's functions are looked up in libcuda.so.1 at first use
// (cuda.h gives their types; nothing links against the driver), so the
// runtime loads on machines without one. Every call makes the device's
// primary context current first: the runtime can be used from any thread.
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Cuda.h"

#include "tessera/Runtime/Allocator.h"

#include "CudaDriver.h"
#include "CudaTensorMaps.h"

#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

using namespace tessera::runtime;
using namespace tessera::runtime::cuda;
using namespace tessera::runtime::cuda::detail;

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

namespace {

std::mutex &contextMutex() {
  static std::mutex m;
  return m;
}

} // namespace

/// The driver, loaded and initialized once.
const Driver &detail::driver() {
  static const Driver *loaded = [] {
    auto *d = new Driver;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = dlerror();
      d->failure = std::string("the CUDA driver (libcuda.so.1) is not "
                               "installed or not on the library path: ") +
                   (why ? why : "dlopen failed");
      return d;
    }
    bool missing = false;
    std::string missingName;
    auto load = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(lib, symbol));
      if (!fn && !missing) {
        missing = true;
        missingName = symbol;
      }
    };
    load(d->init, "cuInit");
    load(d->getErrorName, "cuGetErrorName");
    load(d->getErrorString, "cuGetErrorString");
    load(d->deviceGetCount, "cuDeviceGetCount");
    load(d->deviceGet, "cuDeviceGet");
    load(d->deviceGetName, "cuDeviceGetName");
    load(d->deviceGetAttribute, "cuDeviceGetAttribute");
    load(d->deviceTotalMem, "cuDeviceTotalMem_v2");
    load(d->primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    load(d->ctxSetCurrent, "cuCtxSetCurrent");
    load(d->ctxSynchronize, "cuCtxSynchronize");
    load(d->memAlloc, "cuMemAlloc_v2");
    load(d->memFree, "cuMemFree_v2");
    load(d->memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    load(d->memcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    load(d->memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    load(d->memsetD8Async, "cuMemsetD8Async");
    load(d->streamCreate, "cuStreamCreate");
    load(d->streamDestroy, "cuStreamDestroy_v2");
    load(d->streamSynchronize, "cuStreamSynchronize");
    load(d->eventCreate, "cuEventCreate");
    load(d->eventDestroy, "cuEventDestroy_v2");
    load(d->eventRecord, "cuEventRecord");
    load(d->eventSynchronize, "cuEventSynchronize");
    load(d->eventElapsedTime, "cuEventElapsedTime_v2");
    load(d->moduleLoadDataEx, "cuModuleLoadDataEx");
    load(d->moduleUnload, "cuModuleUnload");
    load(d->moduleGetFunction, "cuModuleGetFunction");
    load(d->moduleGetGlobal, "cuModuleGetGlobal_v2");
    load(d->memcpyDtoH, "cuMemcpyDtoH_v2");
    load(d->launchKernel, "cuLaunchKernel");
    load(d->funcSetAttribute, "cuFuncSetAttribute");
    d->tensorMapEncodeTiled =
        reinterpret_cast<decltype(d->tensorMapEncodeTiled)>(
            dlsym(lib, "cuTensorMapEncodeTiled"));
    d->launchKernelEx = reinterpret_cast<decltype(d->launchKernelEx)>(
        dlsym(lib, "cuLaunchKernelEx"));
    // CUDA graphs: all or none.
    {
      Driver g;
      bool all = true;
      auto optional = [&](auto &fn, const char *symbol) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
            dlsym(lib, symbol));
        all &= fn != nullptr;
      };
      optional(g.graphCreate, "cuGraphCreate");
      optional(g.graphDestroy, "cuGraphDestroy");
      optional(g.graphAddKernelNode, "cuGraphAddKernelNode_v2");
      optional(g.graphAddMemcpyNode, "cuGraphAddMemcpyNode");
      optional(g.graphKernelNodeSetAttribute,
               "cuGraphKernelNodeSetAttribute");
      optional(g.graphInstantiate, "cuGraphInstantiateWithFlags");
      optional(g.graphExecDestroy, "cuGraphExecDestroy");
      optional(g.graphLaunch, "cuGraphLaunch");
      optional(g.graphExecKernelNodeSetParams,
               "cuGraphExecKernelNodeSetParams_v2");
      optional(g.graphExecMemcpyNodeSetParams,
               "cuGraphExecMemcpyNodeSetParams");
      if (all) {
        d->graphCreate = g.graphCreate;
        d->graphDestroy = g.graphDestroy;
        d->graphAddKernelNode = g.graphAddKernelNode;
        d->graphAddMemcpyNode = g.graphAddMemcpyNode;
        d->graphKernelNodeSetAttribute = g.graphKernelNodeSetAttribute;
        d->graphInstantiate = g.graphInstantiate;
        d->graphExecDestroy = g.graphExecDestroy;
        d->graphLaunch = g.graphLaunch;
        d->graphExecKernelNodeSetParams = g.graphExecKernelNodeSetParams;
        d->graphExecMemcpyNodeSetParams = g.graphExecMemcpyNodeSetParams;
      }
    }
    if (missing) {
      d->failure = "the CUDA driver lacks " + missingName +
                   " (a driver for CUDA 12.8 or newer is needed)";
      return d;
    }
    CUresult r = d->init(0);
    if (r != CUDA_SUCCESS) {
      const char *name = nullptr;
      d->getErrorName(r, &name);
      d->failure = std::string("cuInit failed: ") + (name ? name : "?");
      return d;
    }
    d->deviceGetCount(&d->devices);
    if (d->devices == 0)
      d->failure = "the CUDA driver reports no GPU";
    d->contexts.assign(std::size_t(d->devices), nullptr);
    return d;
  }();
  return *loaded;
}

static std::string describeError(CUresult r) {
  const Driver &d = driver();
  const char *name = nullptr, *text = nullptr;
  if (d.getErrorName)
    d.getErrorName(r, &name);
  if (d.getErrorString)
    d.getErrorString(r, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(int(r));
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}

Error detail::cudaError(const std::string &what, CUresult r) {
  return Error{"CUDA: " + what + ": " + describeError(r)};
}

Status detail::enter(int device) {
  const Driver &d = driver();
  if (!d.failure.empty())
    return Error{"CUDA is not available: " + d.failure};
  if (device < 0 || device >= d.devices)
    return Error{"cuda:" + std::to_string(device) + " does not exist (" +
                 std::to_string(d.devices) + " GPU(s))"};
  CUcontext ctx;
  {
    std::lock_guard<std::mutex> lock(contextMutex());
    auto &slot = const_cast<Driver &>(d).contexts[std::size_t(device)];
    if (!slot) {
      CUdevice dev;
      CUresult r = d.deviceGet(&dev, device);
      if (r == CUDA_SUCCESS)
        r = d.primaryCtxRetain(&slot, dev);
      if (r != CUDA_SUCCESS)
        return cudaError("cannot open cuda:" + std::to_string(device), r);
    }
    ctx = slot;
  }
  CUresult r = d.ctxSetCurrent(ctx);
  if (r != CUDA_SUCCESS)
    return cudaError("cannot use cuda:" + std::to_string(device), r);
  return Status::ok();
}

namespace {

std::string gib(std::size_t bytes) {
  std::ostringstream os;
  os.precision(3);
  os << double(bytes) / double(std::size_t(1) << 30) << " GiB";
  return os.str();
}

//===----------------------------------------------------------------------===//
// The caching allocator
//===----------------------------------------------------------------------===//

/// Sizes are rounded up to 512 bytes (small) or 2 MiB (large) so freed
/// blocks fit later requests of nearby sizes.
std::size_t roundSize(std::size_t bytes) {
  if (bytes == 0)
    bytes = 1;
  std::size_t unit = bytes < (std::size_t(1) << 20) ? 512 : (2u << 20);
  return (bytes + unit - 1) / unit * unit;
}

struct Block {
  CUdeviceptr address = 0;
  std::size_t size = 0;
  CUstream stream = nullptr;
  int device = 0;
};

class DeviceAllocator {
public:
  explicit DeviceAllocator(int device) : device(device) {}

  Result<Block> allocate(std::size_t bytes, CUstream stream) {
    std::size_t size = roundSize(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++stats.allocations;
      // The smallest cached block of this stream that fits, if it wastes
      // less than half of itself.
      auto &bins = cached[stream];
      auto it = bins.lower_bound(size);
      if (it != bins.end() && it->first <= 2 * size) {
        // Of the blocks of that size, the one freed last: a loop that
        // frees and allocates a buffer each step gets the same address
        // each time (and kernels that keep tensor maps of it keep them).
        it = std::prev(bins.upper_bound(it->first));
        Block b = it->second;
        bins.erase(it);
        stats.bytesCached -= b.size;
        ++stats.cacheHits;
        take(b.size);
        return b;
      }
    }
    TESSERA_ENTER(device);
    const Driver &d = driver();
    CUdeviceptr address = 0;
    CUresult r = d.memAlloc(&address, size);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      // Give the cache back and try once more.
      Status released = release();
      if (!released)
        return released.error();
      {
        std::lock_guard<std::mutex> lock(mutex);
        ++stats.cacheFlushes;
      }
      r = d.memAlloc(&address, size);
    }
    if (r != CUDA_SUCCESS) {
      std::lock_guard<std::mutex> lock(mutex);
      return cudaError("cannot allocate " + gib(size) +
                           " on cuda:" + std::to_string(device) + " (" +
                           gib(stats.bytesInUse) + " in use by Tessera)",
                       r);
    }
    std::lock_guard<std::mutex> lock(mutex);
    take(size);
    return Block{address, size, stream, device};
  }

  void free(const Block &b) {
    std::lock_guard<std::mutex> lock(mutex);
    stats.bytesInUse -= b.size;
    stats.bytesCached += b.size;
    cached[b.stream].emplace(b.size, b);
  }

  /// Frees the cached blocks (after the work that used them is done).
  Status release() {
    std::vector<Block> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (auto &[stream, bins] : cached)
        for (auto &[size, b] : bins)
          blocks.push_back(b);
      cached.clear();
      stats.bytesCached = 0;
    }
    if (blocks.empty())
      return Status::ok();
    TESSERA_ENTER(device);
    const Driver &d = driver();
    TESSERA_CU(d.ctxSynchronize(),
               "cannot synchronize cuda:" + std::to_string(device));
    for (const Block &b : blocks)
      TESSERA_CU(d.memFree(b.address), "cannot free device memory");
    return Status::ok();
  }

  /// Blocks cached for `stream` go to the default stream's bins when the
  /// stream is destroyed (after it finished).
  void forgetStream(CUstream stream) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cached.find(stream);
    if (it == cached.end())
      return;
    auto &fallback = cached[nullptr];
    for (auto &[size, b] : it->second) {
      b.stream = nullptr;
      fallback.emplace(size, b);
    }
    cached.erase(stream);
  }

  DeviceAllocatorStats snapshot() {
    std::lock_guard<std::mutex> lock(mutex);
    return stats;
  }

private:
  void take(std::size_t size) {
    stats.bytesInUse += size;
    stats.peakBytesInUse = std::max(stats.peakBytesInUse, stats.bytesInUse);
  }

  int device;
  std::mutex mutex;
  std::map<CUstream, std::multimap<std::size_t, Block>> cached;
  DeviceAllocatorStats stats;
};

DeviceAllocator &allocatorOf(int device) {
  static std::mutex m;
  static std::map<int, std::unique_ptr<DeviceAllocator>> all;
  std::lock_guard<std::mutex> lock(m);
  auto &slot = all[device];
  if (!slot)
    slot = std::make_unique<DeviceAllocator>(device);
  return *slot;
}

} // namespace

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

bool cuda::available() { return driver().failure.empty(); }
std::string cuda::unavailableReason() { return driver().failure; }
int cuda::deviceCount() { return available() ? driver().devices : 0; }

std::string DeviceInfo::describe() const {
  return "cuda:" + std::to_string(index) + " (" + name + ", sm_" +
         std::to_string(major) + std::to_string(minor) + ", " +
         std::to_string(multiprocessors) + " SMs, " + gib(totalMemory) + ")";
}

Result<DeviceInfo> cuda::deviceInfo(int device) {
  TESSERA_ENTER(device);
  const Driver &d = driver();
  CUdevice dev;
  TESSERA_CU(d.deviceGet(&dev, device), "cuDeviceGet");
  DeviceInfo info;
  info.index = device;
  char name[256] = {};
  TESSERA_CU(d.deviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  info.name = name;
  auto attr = [&](CUdevice_attribute a, int &out) {
    return d.deviceGetAttribute(&out, a, dev);
  };
  int l2 = 0, shared = 0;
  TESSERA_CU(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, info.major),
             "cuDeviceGetAttribute");
  TESSERA_CU(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, info.minor),
             "cuDeviceGetAttribute");
  TESSERA_CU(
      attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, info.multiprocessors),
      "cuDeviceGetAttribute");
  TESSERA_CU(attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, l2),
             "cuDeviceGetAttribute");
  TESSERA_CU(
      attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, shared),
      "cuDeviceGetAttribute");
  TESSERA_CU(
      attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, info.maxThreadsPerBlock),
      "cuDeviceGetAttribute");
  info.l2CacheBytes = std::size_t(l2);
  info.maxSharedMemoryPerBlock = std::size_t(shared);
  TESSERA_CU(d.deviceTotalMem(&info.totalMemory, dev), "cuDeviceTotalMem");
  return info;
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

Result<Stream> Stream::create(int device) {
  TESSERA_ENTER(device);
  CUstream s;
  // A blocking stream: work on the default stream (copies without a
  // stream) waits for it, so blocks it freed are safe to reuse there.
  TESSERA_CU(driver().streamCreate(&s, CU_STREAM_DEFAULT),
             "cannot create a stream on cuda:" + std::to_string(device));
  return Stream(device, s);
}

Stream::Stream(Stream &&other) noexcept
    : deviceIndex(other.deviceIndex), stream(other.stream) {
  other.stream = nullptr;
}

Stream &Stream::operator=(Stream &&other) noexcept {
  std::swap(deviceIndex, other.deviceIndex);
  std::swap(stream, other.stream);
  return *this;
}

Stream::~Stream() {
  if (!stream || !enter(deviceIndex))
    return;
  auto s = static_cast<CUstream>(stream);
  driver().streamSynchronize(s);
  allocatorOf(deviceIndex).forgetStream(s);
  driver().streamDestroy(s);
}

Status Stream::synchronize() {
  TESSERA_ENTER(deviceIndex);
  TESSERA_CU(driver().streamSynchronize(static_cast<CUstream>(stream)),
             "a kernel or copy on cuda:" + std::to_string(deviceIndex) +
                 " failed");
  return Status::ok();
}

Result<Event> Event::create(int device) {
  TESSERA_ENTER(device);
  CUevent e;
  TESSERA_CU(driver().eventCreate(&e, CU_EVENT_DEFAULT),
             "cannot create an event");
  return Event(device, e);
}

Event::Event(Event &&other) noexcept
    : deviceIndex(other.deviceIndex), event(other.event) {
  other.event = nullptr;
}

Event &Event::operator=(Event &&other) noexcept {
  std::swap(deviceIndex, other.deviceIndex);
  std::swap(event, other.event);
  return *this;
}

Event::~Event() {
  if (event && enter(deviceIndex))
    driver().eventDestroy(static_cast<CUevent>(event));
}

Status Event::record(Stream &stream) {
  if (stream.device() != deviceIndex)
    return Error{"an event of cuda:" + std::to_string(deviceIndex) +
                 " cannot be recorded on a stream of cuda:" +
                 std::to_string(stream.device())};
  TESSERA_ENTER(deviceIndex);
  TESSERA_CU(driver().eventRecord(static_cast<CUevent>(event),
                                  static_cast<CUstream>(stream.handle())),
             "cuEventRecord");
  return Status::ok();
}

Status Event::synchronize() {
  TESSERA_ENTER(deviceIndex);
  TESSERA_CU(driver().eventSynchronize(static_cast<CUevent>(event)),
             "work before an event failed");
  return Status::ok();
}

Result<float> Event::elapsedMs(const Event &start, const Event &end) {
  TESSERA_ENTER(start.deviceIndex);
  float ms = 0;
  TESSERA_CU(driver().eventElapsedTime(&ms, static_cast<CUevent>(start.event),
                                       static_cast<CUevent>(end.event)),
             "cannot time between the events (both recorded and done?)");
  return ms;
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

Result<DeviceBuffer> DeviceBuffer::reshaped(std::vector<int64_t> shape) const {
  auto count = elementCount(shape);
  if (!count)
    return count.error();
  if (*count != numElements())
    return Error{"cannot view " + describe() + " as a shape of " +
                 std::to_string(*count) + " elements"};
  return DeviceBuffer(type, std::move(shape), deviceIndex, block, address);
}

Result<DeviceBuffer> DeviceBuffer::borrow(DType type,
                                          std::vector<int64_t> shape,
                                          int device, std::uint64_t address) {
  auto count = elementCount(shape);
  if (!count)
    return count.error();
  if (device < 0 || device >= deviceCount())
    return Error{"cannot borrow memory on cuda:" + std::to_string(device) +
                 ": " + std::to_string(deviceCount()) + " devices"};
  if (address == 0 && *count > 0)
    return Error{"cannot borrow " + ::tessera::runtime::describe(type, shape) +
                 " at address 0"};
  return DeviceBuffer(type, std::move(shape), device, nullptr, address);
}

Result<DeviceBuffer> DeviceBuffer::allocate(DType type,
                                            std::vector<int64_t> shape,
                                            int device, Stream *stream) {
  auto count = elementCount(shape);
  if (!count)
    return count.error();
  if (stream && stream->device() != device)
    return Error{"a buffer on cuda:" + std::to_string(device) +
                 " cannot be allocated for a stream of cuda:" +
                 std::to_string(stream->device())};
  std::size_t bytes = std::size_t(*count) * runtime::byteSize(type);
  DeviceAllocator &allocator = allocatorOf(device);
  auto block = allocator.allocate(bytes, streamOf(stream));
  if (!block)
    return block.error();
  Block b = *block;
  auto owner = std::shared_ptr<void>(new Block(b), [&allocator](void *p) {
    auto *blk = static_cast<Block *>(p);
    allocator.free(*blk);
    delete blk;
  });
  if (poisonAllocations()) {
    // (TESSERA_POISON_ALLOCATIONS) 0xFF bytes: what a kernel leaves
    // unwritten reads NaN.
    TESSERA_ENTER(device);
    TESSERA_CU(driver().memsetD8Async(CUdeviceptr(b.address), 0xFF, bytes,
                                      streamOf(stream)),
               "cannot poison device memory");
    if (!stream)
      TESSERA_CU(driver().streamSynchronize(nullptr),
                 "cannot poison device memory");
  }
  return DeviceBuffer(type, std::move(shape), device, std::move(owner),
                      std::uint64_t(b.address));
}

Result<DeviceBuffer> DeviceBuffer::zeros(DType type, std::vector<int64_t> shape,
                                         int device, Stream *stream) {
  auto buffer = allocate(type, std::move(shape), device, stream);
  if (!buffer)
    return buffer;
  TESSERA_ENTER(device);
  TESSERA_CU(driver().memsetD8Async(CUdeviceptr(buffer->pointer()), 0,
                                    buffer->byteSize(), streamOf(stream)),
             "cannot clear device memory");
  if (!stream)
    TESSERA_CU(driver().streamSynchronize(nullptr), "cannot clear memory");
  return buffer;
}

Result<DeviceBuffer> DeviceBuffer::fromHost(const HostBuffer &host, int device,
                                            Stream *stream) {
  auto buffer = allocate(host.dtype(), host.shape(), device, stream);
  if (!buffer)
    return buffer;
  Status copied = buffer->copyFromHost(host, stream);
  if (!copied)
    return copied.error();
  return buffer;
}

Status DeviceBuffer::copyFromHost(const HostBuffer &host, Stream *stream) {
  if (host.dtype() != type || host.shape() != dims)
    return Error{"cannot copy " + host.describe() + " into " + describe()};
  TESSERA_ENTER(deviceIndex);
  const Driver &d = driver();
  TESSERA_CU(d.memcpyHtoDAsync(CUdeviceptr(address), host.data(),
                               host.byteSize(), streamOf(stream)),
             "cannot copy " + host.describe() +
                 " to cuda:" + std::to_string(deviceIndex));
  // The host memory must stay valid until the copy has run.
  TESSERA_CU(stream ? d.streamSynchronize(streamOf(stream))
                    : d.streamSynchronize(nullptr),
             "a copy to cuda:" + std::to_string(deviceIndex) + " failed");
  return Status::ok();
}

Result<HostBuffer> DeviceBuffer::toHost(Stream *stream) const {
  auto host = HostBuffer::allocate(type, dims);
  if (!host)
    return host;
  TESSERA_ENTER(deviceIndex);
  const Driver &d = driver();
  TESSERA_CU(d.memcpyDtoHAsync(host->data(), CUdeviceptr(address), byteSize(),
                               streamOf(stream)),
             "cannot copy " + describe() + " to the host");
  TESSERA_CU(d.streamSynchronize(streamOf(stream)),
             "work on cuda:" + std::to_string(deviceIndex) +
                 " before a copy to the host failed");
  return host;
}

int64_t DeviceBuffer::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

std::size_t DeviceBuffer::byteSize() const {
  return std::size_t(numElements()) * runtime::byteSize(type);
}

std::string DeviceBuffer::describe() const {
  return runtime::describe(type, dims) +
         " on cuda:" + std::to_string(deviceIndex);
}

DeviceAllocatorStats cuda::allocatorStats(int device) {
  return allocatorOf(device).snapshot();
}

Status cuda::releaseCachedMemory(int device) {
  return allocatorOf(device).release();
}

//===----------------------------------------------------------------------===//
// Modules and kernels
//===----------------------------------------------------------------------===//

Result<Module> Module::load(const void *image, int device, const char *what) {
  TESSERA_ENTER(device);
  const Driver &d = driver();
  char log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log) - 1)};
  CUmodule module;
  CUresult r = d.moduleLoadDataEx(&module, image, 2, options, values);
  if (r != CUDA_SUCCESS) {
    std::string message = std::string("cannot load ") + what +
                          " on cuda:" + std::to_string(device);
    Error e = cudaError(message, r);
    if (log[0])
      e.message += "\n" + std::string(log);
    return e;
  }
  auto owner = std::shared_ptr<void>(module, [device](void *m) {
    if (enter(device))
      driver().moduleUnload(static_cast<CUmodule>(m));
  });
  return Module(std::move(owner), device);
}

Result<Module> Module::loadPtx(const std::string &ptx, int device) {
  return load(ptx.c_str(), device, "PTX");
}

Result<Module> Module::loadImage(const std::vector<char> &image, int device) {
  if (image.empty())
    return Error{"cannot load an empty GPU code image"};
  return load(image.data(), device, "a GPU code image");
}

Result<Kernel> Module::kernel(const std::string &name) const {
  TESSERA_ENTER(deviceIndex);
  CUfunction fn;
  CUresult r = driver().moduleGetFunction(
      &fn, static_cast<CUmodule>(module.get()), name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    return Error{"the GPU module has no kernel named '" + name + "'"};
  TESSERA_CU(r, "cannot find kernel '" + name + "'");
  Kernel kernel(module, fn, name, deviceIndex);
  // Tile IR kernels say how they must be launched in a global named after
  // them.
  auto record =
      detail::readLaunchRecord(static_cast<CUmodule>(module.get()), name);
  if (!record)
    return record.error();
  if (!*record)
    return kernel;
  kernel.record = *record;
  kernel.dynamicShared = unsigned(kernel.record->dynamicSharedBytes);
  // Opt in whatever the size: a block gets 48 KiB without it, static and
  // dynamic shared memory together.
  if (kernel.dynamicShared > 0) {
    Status st = kernel.setMaxDynamicSharedMemory(int(kernel.dynamicShared));
    if (!st)
      return st.error();
  }
  if (kernel.record->tensorMapTable) {
    auto tma = std::make_shared<Kernel::TmaLaunch>();
    tma->paramSlots = kernel.record->parameterSlots;
    tma->maps = kernel.record->maps;
    kernel.tma = std::move(tma);
  }
  return kernel;
}

unsigned Kernel::extraThreads() const {
  return record ? unsigned(record->producerThreads) : 0;
}

static std::string dims3(const std::array<unsigned, 3> &a) {
  return "(" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ", " +
         std::to_string(a[2]) + ")";
}

Status Kernel::resolve(const LaunchConfig &config, Stream &stream,
                       std::vector<void *> &args, const void *site,
                       Resolved &out) const {
  if (stream.device() != deviceIndex)
    return Error{"kernel '" + kernelName +
                 "' is loaded on cuda:" + std::to_string(deviceIndex) +
                 ", the stream is on cuda:" + std::to_string(stream.device())};
  for (unsigned v : config.grid)
    if (v == 0)
      return Error{"kernel '" + kernelName + "': a grid dim is 0"};
  for (unsigned v : config.block)
    if (v == 0)
      return Error{"kernel '" + kernelName + "': a block dim is 0"};
  out.function = function;
  out.grid = config.grid;
  out.block = config.block;
  out.cluster = 1;
  if (record) {
    // The block of the kernel's warps, or the whole block.
    std::array<unsigned, 3> warps = {unsigned(record->consumerThreads), 1, 1};
    std::array<unsigned, 3> whole = {unsigned(record->blockThreads()), 1, 1};
    if (config.block != warps && config.block != whole)
      return Error{"kernel '" + kernelName + "' runs on blocks of " +
                   std::to_string(record->consumerThreads) +
                   " threads (its warps" +
                   (record->producerThreads
                        ? "; the launch adds its producer's " +
                              std::to_string(record->producerThreads)
                        : std::string()) +
                   "), got " + dims3(config.block)};
    out.block = whole;
    out.cluster = unsigned(record->cluster);
  }
  if (out.cluster > 1 && out.grid[0] % out.cluster)
    return Error{"kernel '" + kernelName + "' runs in clusters of " +
                 std::to_string(out.cluster) +
                 " programs along grid dim 0, whose size must be a "
                 "multiple of it; got grid " +
                 dims3(out.grid)};
  if (tma) {
    TESSERA_ENTER(deviceIndex);
    Status st =
        tma->prepare(kernelName, config, args,
                     static_cast<CUstream>(stream.handle()), site, deviceIndex);
    if (!st)
      return st;
  }
  out.shared = std::max(config.sharedBytes, dynamicShared);
  return Status::ok();
}

std::string Kernel::describeLaunch(const Resolved &r) const {
  return "cannot launch kernel '" + kernelName + "' with grid " +
         dims3(r.grid) + ", block " + dims3(r.block) + " and " +
         std::to_string(r.shared) + " bytes of shared memory" +
         (r.cluster > 1 ? " in clusters of " + std::to_string(r.cluster)
                        : std::string());
}

Status Kernel::launch(const LaunchConfig &config, Stream &stream,
                      std::vector<void *> args, const void *site) const {
  Resolved r;
  if (Status st = resolve(config, stream, args, site, r); !st)
    return st;
  TESSERA_ENTER(deviceIndex);
  CUresult result;
  if (r.cluster > 1) {
    if (!driver().launchKernelEx)
      return Error{"kernel '" + kernelName +
                   "' runs in clusters: the CUDA driver lacks "
                   "cuLaunchKernelEx"};
    CUlaunchAttribute attr = {};
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value = clusterDimension(r.cluster);
    CUlaunchConfig cfg = {};
    setLaunchShape(cfg, r.grid, r.block, r.shared);
    cfg.hStream = static_cast<CUstream>(stream.handle());
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    result = driver().launchKernelEx(&cfg, static_cast<CUfunction>(function),
                                     args.data(), nullptr);
  } else {
    result = driver().launchKernel(
        static_cast<CUfunction>(function), r.grid[0], r.grid[1], r.grid[2],
        r.block[0], r.block[1], r.block[2], r.shared,
        static_cast<CUstream>(stream.handle()), args.data(), nullptr);
  }
  if (result != CUDA_SUCCESS)
    return cudaError(describeLaunch(r), result);
  return Status::ok();
}

Status Kernel::setMaxDynamicSharedMemory(int bytes) const {
  TESSERA_ENTER(deviceIndex);
  TESSERA_CU(driver().funcSetAttribute(
                 static_cast<CUfunction>(function),
                 CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
             "kernel '" + kernelName + "' cannot use " + std::to_string(bytes) +
                 " bytes of dynamic shared memory");
  return Status::ok();
}
