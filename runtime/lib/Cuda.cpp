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

#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <sstream>

using namespace tessera::runtime;
using namespace tessera::runtime::cuda;

namespace {

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

struct Driver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetName) deviceGetName = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuDeviceTotalMem) deviceTotalMem = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) ctxSynchronize = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemFree) memFree = nullptr;
  decltype(&::cuMemcpyHtoDAsync) memcpyHtoDAsync = nullptr;
  decltype(&::cuMemcpyDtoHAsync) memcpyDtoHAsync = nullptr;
  decltype(&::cuMemsetD8Async) memsetD8Async = nullptr;
  decltype(&::cuStreamCreate) streamCreate = nullptr;
  decltype(&::cuStreamDestroy) streamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&::cuEventCreate) eventCreate = nullptr;
  decltype(&::cuEventDestroy) eventDestroy = nullptr;
  decltype(&::cuEventRecord) eventRecord = nullptr;
  decltype(&::cuEventSynchronize) eventSynchronize = nullptr;
  decltype(&::cuEventElapsedTime) eventElapsedTime = nullptr;
  decltype(&::cuModuleLoadDataEx) moduleLoadDataEx = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuModuleGetGlobal) moduleGetGlobal = nullptr;
  decltype(&::cuMemcpyDtoH) memcpyDtoH = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuFuncSetAttribute) funcSetAttribute = nullptr;
  /// Optional: launches of kernels run in clusters (CUDA 12 drivers).
  decltype(&::cuLaunchKernelEx) launchKernelEx = nullptr;
  /// Optional (CUDA 12 drivers): without it, TMA kernels copy with cp.async.
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled = nullptr;

  std::string failure; // why the driver cannot be used
  int devices = 0;
  std::vector<CUcontext> contexts;
};

/// The driver, loaded and initialized once.
const Driver &driver() {
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

std::string describeError(CUresult r) {
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

Error cudaError(const std::string &what, CUresult r) {
  return Error{"CUDA: " + what + ": " + describeError(r)};
}

std::mutex &contextMutex() {
  static std::mutex m;
  return m;
}

/// Makes `device`'s primary context current on this thread.
Status enter(int device) {
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

#define TESSERA_CU(call, what)                                                 \
  do {                                                                         \
    CUresult tesseraResult = (call);                                           \
    if (tesseraResult != CUDA_SUCCESS)                                         \
      return cudaError(what, tesseraResult);                                   \
  } while (false)

#define TESSERA_ENTER(device)                                                  \
  do {                                                                         \
    Status tesseraEntered = enter(device);                                     \
    if (!tesseraEntered)                                                       \
      return tesseraEntered.error();                                           \
  } while (false)

CUstream streamOf(Stream *s) {
  return s ? static_cast<CUstream>(s->handle()) : nullptr;
}

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

struct tessera::runtime::cuda::Kernel::TmaLaunch {
  /// A tensor map: the memref's first parameter slot, its element bytes,
  /// the box (columns = one swizzle row) and the swizzle.
  struct MapSpec {
    int slot, rank, eltBytes, boxCols, boxRows, swizzle;
  };
  int extraThreads = 0, consumerThreads = 0, paramSlots = 0;
  /// Programs a cluster (consecutive along grid dim x; 1: no clusters).
  int cluster = 1;
  std::vector<MapSpec> maps;

  /// The maps of one set of memrefs, in device memory.
  struct Table {
    DeviceBuffer buffer;
    std::vector<char> bytes;
    /// The memref fields the maps were made from.
    std::vector<std::int64_t> key;
    std::uint64_t address = 0;
    /// When it was last launched with (the launch count of the kernel).
    std::uint64_t lastUse = 0;
  };
  /// Tables kept per stream and site: a site launched on a few sets of
  /// buffers in turn (the layers of a model, buffers that alternate)
  /// finds each set's maps in device memory without a copy; past this
  /// many, the least recently used table is rewritten.
  static constexpr std::size_t kTablesPerSite = 64;
  std::mutex mutex;
  std::uint64_t launches = 0;
  /// The address launches without maps pass.
  std::uint64_t noTable = 0;
  /// Per stream and launch site (null: launches without one); a list, so
  /// that the addresses passed in `args` stay put.
  std::map<std::pair<CUstream, const void *>, std::list<Table>> tables;

  /// Checks the launch, makes the maps and appends their address to
  /// `args`.
  Status prepare(const std::string &kernel, const LaunchConfig &config,
                 std::vector<void *> &args, CUstream stream, const void *site,
                 int device);
};

static Result<std::shared_ptr<Kernel::TmaLaunch>>
readTmaLaunch(CUmodule module, const std::string &name);

Result<Kernel> Module::kernel(const std::string &name) const {
  TESSERA_ENTER(deviceIndex);
  CUfunction fn;
  CUresult r = driver().moduleGetFunction(
      &fn, static_cast<CUmodule>(module.get()), name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    return Error{"the GPU module has no kernel named '" + name + "'"};
  TESSERA_CU(r, "cannot find kernel '" + name + "'");
  Kernel kernel(module, fn, name, deviceIndex);
  // Tile IR kernels that keep tiles in dynamic shared memory say how much
  // in a global named after them.
  CUdeviceptr global;
  size_t globalBytes = 0;
  r = driver().moduleGetGlobal(&global, &globalBytes,
                               static_cast<CUmodule>(module.get()),
                               ("tessera_dynamic_smem_" + name).c_str());
  if (r == CUDA_SUCCESS && globalBytes == sizeof(uint32_t)) {
    uint32_t bytes = 0;
    TESSERA_CU(driver().memcpyDtoH(&bytes, global, sizeof bytes),
               "cannot read the shared memory size of kernel '" + name + "'");
    // Opt in whatever the size: a block gets 48 KiB without it, static
    // and dynamic shared memory together.
    if (bytes > 0) {
      Status st = kernel.setMaxDynamicSharedMemory(int(bytes));
      if (!st)
        return st.error();
    }
    kernel.dynamicShared = bytes;
  }
  auto tma = readTmaLaunch(static_cast<CUmodule>(module.get()), name);
  if (!tma)
    return tma.error();
  kernel.tma = *tma;
  return kernel;
}

unsigned Kernel::extraThreads() const {
  return tma ? unsigned(tma->extraThreads) : 0;
}

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
  std::list<Table> &kept = tables[{stream, site}];
  ++launches;
  for (Table &t : kept)
    if (t.key == key) {
      t.lastUse = launches;
      args.push_back(&t.address);
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
  Table *table = nullptr;
  if (kept.size() < kTablesPerSite) {
    auto buffer =
        DeviceBuffer::allocate(DType::i8, {std::int64_t(bytes.size())}, device);
    if (!buffer)
      return buffer.error();
    table = &kept.emplace_back();
    table->buffer = *buffer;
  } else {
    table = &*std::min_element(
        kept.begin(), kept.end(),
        [](const Table &x, const Table &y) { return x.lastUse < y.lastUse; });
  }
  // Invalid until the copy is queued.
  table->key.clear();
  table->bytes = std::move(bytes);
  TESSERA_CU(d.memcpyHtoDAsync(CUdeviceptr(table->buffer.pointer()),
                               table->bytes.data(), table->bytes.size(),
                               stream),
             "cannot copy the tensor maps of kernel '" + kernel + "'");
  table->key = std::move(key);
  table->lastUse = launches;
  table->address = table->buffer.pointer();
  args.push_back(&table->address);
  return Status::ok();
}

static Result<std::shared_ptr<Kernel::TmaLaunch>>
readTmaLaunch(CUmodule module, const std::string &name) {
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

Status Kernel::launch(const LaunchConfig &config, Stream &stream,
                      std::vector<void *> args, const void *site) const {
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
  TESSERA_ENTER(deviceIndex);
  LaunchConfig launch = config;
  if (tma) {
    Status st =
        tma->prepare(kernelName, config, args,
                     static_cast<CUstream>(stream.handle()), site, deviceIndex);
    if (!st)
      return st;
    launch.block[0] += unsigned(tma->extraThreads);
  }
  auto str = [](const std::array<unsigned, 3> &a) {
    return "(" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ", " +
           std::to_string(a[2]) + ")";
  };
  unsigned shared = std::max(config.sharedBytes, dynamicShared);
  std::string what = "cannot launch kernel '" + kernelName + "' with grid " +
                     str(launch.grid) + ", block " + str(launch.block) +
                     " and " + std::to_string(shared) +
                     " bytes of shared memory";
  if (tma && tma->cluster > 1) {
    unsigned cluster = unsigned(tma->cluster);
    if (launch.grid[0] % cluster)
      return Error{"kernel '" + kernelName + "' runs in clusters of " +
                   std::to_string(cluster) +
                   " programs along grid dim 0, whose size must be a "
                   "multiple of it; got grid " +
                   str(launch.grid)};
    if (!driver().launchKernelEx)
      return Error{"kernel '" + kernelName +
                   "' runs in clusters: the CUDA driver lacks "
                   "cuLaunchKernelEx"};
    CUlaunchAttribute attr = {};
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cluster;
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    CUlaunchConfig cfg = {};
    cfg.gridDimX = launch.grid[0];
    cfg.gridDimY = launch.grid[1];
    cfg.gridDimZ = launch.grid[2];
    cfg.blockDimX = launch.block[0];
    cfg.blockDimY = launch.block[1];
    cfg.blockDimZ = launch.block[2];
    cfg.sharedMemBytes = shared;
    cfg.hStream = static_cast<CUstream>(stream.handle());
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    TESSERA_CU(driver().launchKernelEx(&cfg, static_cast<CUfunction>(function),
                                       args.data(), nullptr),
               what + " in clusters of " + std::to_string(cluster));
    return Status::ok();
  }
  TESSERA_CU(driver().launchKernel(
                 static_cast<CUfunction>(function), launch.grid[0],
                 launch.grid[1], launch.grid[2], launch.block[0],
                 launch.block[1], launch.block[2], shared,
                 static_cast<CUstream>(stream.handle()), args.data(), nullptr),
             what);
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

void Kernel::forgetSite(const void *site) const {
  if (!tma || !site)
    return;
  std::lock_guard<std::mutex> lock(tma->mutex);
  for (auto it = tma->tables.begin(); it != tma->tables.end();)
    it = it->first.second == site ? tma->tables.erase(it) : std::next(it);
}
