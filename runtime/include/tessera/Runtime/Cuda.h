//===- Cuda.h - NVIDIA GPUs through the CUDA driver API ---------*- C++ -*-===//
//
// Part of the Tessera runtime: no MLIR, LLVM or CUDA types in this header.
//
// The driver library (libcuda.so.1) is loaded on first use, so programs
// built with this runtime start and run on machines without a GPU;
// cuda::available() tells whether GPUs can be used and, if not, why.
//
//   auto x = cuda::DeviceBuffer::fromHost(hostX);          // cuda:0
//   auto module = cuda::Module::loadPtx(ptxText);
//   auto kernel = module->kernel("axpy");
//   auto stream = cuda::Stream::create();
//   kernel->launch({{blocks}, {256}}, *stream, {&xPtr, &yPtr, &a, &n});
//   auto y = yDevice->toHost(&*stream);                       // synchronizes
//
// Device memory comes from a caching allocator per device: freed blocks
// are kept by size and by the stream they were last used on, and reused
// only on that stream (work on one stream runs in order, so a reused
// block is never still in use); when the device runs out of memory the
// cache is released and the allocation retried.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_CUDA_H
#define TESSERA_RUNTIME_CUDA_H

#include "tessera/Runtime/Buffer.h"
#include "tessera/Runtime/DType.h"
#include "tessera/Runtime/Result.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::runtime::cuda {

/// True when the driver loads, initializes and reports at least one GPU.
bool available();
/// Why available() is false ("libcuda.so.1 not found: ..."), else empty.
std::string unavailableReason();
/// The number of GPUs (0 when unavailable).
int deviceCount();

struct DeviceInfo {
  int index = 0;
  std::string name;
  /// Compute capability (9.0 for Hopper).
  int major = 0, minor = 0;
  int multiprocessors = 0;
  std::size_t totalMemory = 0;
  std::size_t l2CacheBytes = 0;
  /// The most shared memory one block may ask for (after opting in).
  std::size_t maxSharedMemoryPerBlock = 0;
  int maxThreadsPerBlock = 0;
  /// "cuda:0 (NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 79.1 GiB)".
  std::string describe() const;
};
Result<DeviceInfo> deviceInfo(int device = 0);

/// An ordered queue of GPU work (CUstream), owned; move-only.
class Stream {
public:
  static Result<Stream> create(int device = 0);
  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&other) noexcept;
  ~Stream();

  /// Waits until the work queued so far has finished.
  Status synchronize();
  int device() const { return deviceIndex; }
  void *handle() const { return stream; }

private:
  Stream(int device, void *stream) : deviceIndex(device), stream(stream) {}
  int deviceIndex = 0;
  void *stream = nullptr;
};

/// A point in a stream's work (CUevent), for timing and waiting; move-only.
class Event {
public:
  static Result<Event> create(int device = 0);
  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  ~Event();

  Status record(Stream &stream);
  Status synchronize();
  /// Milliseconds from `start` to `end` (both recorded and finished).
  static Result<float> elapsedMs(const Event &start, const Event &end);

private:
  Event(int device, void *event) : deviceIndex(device), event(event) {}
  int deviceIndex = 0;
  void *event = nullptr;
};

/// A dense row-major array in GPU memory; copies share the memory (the
/// last one returns it to the allocator).
class DeviceBuffer {
public:
  DeviceBuffer() = default;

  /// Uninitialized memory, allocated for use on `stream` (null: the
  /// device's default stream).
  static Result<DeviceBuffer> allocate(DType type, std::vector<int64_t> shape,
                                       int device = 0,
                                       Stream *stream = nullptr);
  static Result<DeviceBuffer> zeros(DType type, std::vector<int64_t> shape,
                                    int device = 0, Stream *stream = nullptr);
  /// A device copy of `host` (queued on `stream`; synchronous without one).
  static Result<DeviceBuffer> fromHost(const HostBuffer &host, int device = 0,
                                       Stream *stream = nullptr);
  /// A host copy; waits for `stream` (or the device) to finish the copy.
  Result<HostBuffer> toHost(Stream *stream = nullptr) const;
  /// Copies `host` (same dtype and shape) into this buffer.
  Status copyFromHost(const HostBuffer &host, Stream *stream = nullptr);

  DType dtype() const { return type; }
  const std::vector<int64_t> &shape() const { return dims; }
  int64_t numElements() const;
  std::size_t byteSize() const;
  int device() const { return deviceIndex; }
  /// The CUdeviceptr, as kernels take it.
  std::uint64_t pointer() const { return address; }
  /// "f32[4, 64] on cuda:0".
  std::string describe() const;

private:
  DeviceBuffer(DType type, std::vector<int64_t> shape, int device,
               std::shared_ptr<void> block, std::uint64_t address)
      : type(type), dims(std::move(shape)), deviceIndex(device),
        block(std::move(block)), address(address) {}

  DType type = DType::f32;
  std::vector<int64_t> dims;
  int deviceIndex = 0;
  std::shared_ptr<void> block;
  std::uint64_t address = 0;
};

struct DeviceAllocatorStats {
  std::size_t bytesInUse = 0;
  std::size_t peakBytesInUse = 0;
  std::size_t bytesCached = 0;
  std::uint64_t allocations = 0;
  std::uint64_t cacheHits = 0;
  /// Times the device ran out of memory and the cache was released.
  std::uint64_t cacheFlushes = 0;
};
DeviceAllocatorStats allocatorStats(int device = 0);
/// Gives the cached (free) blocks of `device` back to the driver.
Status releaseCachedMemory(int device = 0);

struct LaunchConfig {
  std::array<unsigned, 3> grid = {1, 1, 1};
  std::array<unsigned, 3> block = {1, 1, 1};
  /// Dynamic shared memory per block, in bytes.
  unsigned sharedBytes = 0;
};

class Module;

/// A kernel of a loaded module.
class Kernel {
public:
  /// Queues the kernel on `stream`. `args` point at the argument values in
  /// the kernel's parameter order (a DeviceBuffer's pointer() for each
  /// pointer parameter), as cuLaunchKernel takes them.
  Status launch(const LaunchConfig &config, Stream &stream,
                std::vector<void *> args) const;
  /// Lets the kernel use up to `bytes` of dynamic shared memory (beyond the
  /// default 48 KiB).
  Status setMaxDynamicSharedMemory(int bytes) const;
  const std::string &name() const { return kernelName; }
  /// Dynamic shared memory every launch gets at least (a Tile IR kernel's
  /// shared tiles, read from the module; 0 for other kernels).
  unsigned requiredDynamicSharedMemory() const { return dynamicShared; }
  /// Threads a launch adds to the block the caller asks for (a Tile IR
  /// kernel's TMA producer warpgroup; 0 for other kernels).
  unsigned extraThreads() const;

  /// A Tile IR kernel whose shared tiles a producer warpgroup copies with
  /// TMA (its `tessera_tma_<kernel>` global): the launch makes a tensor map
  /// for each 2-d memref argument it reads that way and passes them in
  /// device memory, as one more parameter.
  struct TmaLaunch;

private:
  friend class Module;
  Kernel(std::shared_ptr<void> module, void *function, std::string name,
         int device)
      : module(std::move(module)), function(function),
        kernelName(std::move(name)), deviceIndex(device) {}
  std::shared_ptr<void> module; // keeps the module loaded
  void *function = nullptr;
  std::string kernelName;
  int deviceIndex = 0;
  unsigned dynamicShared = 0;
  std::shared_ptr<TmaLaunch> tma;
};

/// Compiled GPU code loaded on one device.
class Module {
public:
  /// PTX text, compiled for the device by the driver; a compile error
  /// carries the driver's log.
  static Result<Module> loadPtx(const std::string &ptx, int device = 0);
  /// A cubin (or fatbin) image.
  static Result<Module> loadImage(const std::vector<char> &image,
                                  int device = 0);
  Result<Kernel> kernel(const std::string &name) const;

private:
  static Result<Module> load(const void *image, int device, const char *what);
  Module(std::shared_ptr<void> module, int device)
      : module(std::move(module)), deviceIndex(device) {}
  std::shared_ptr<void> module;
  int deviceIndex = 0;
};

} // namespace tessera::runtime::cuda

#endif // TESSERA_RUNTIME_CUDA_H
