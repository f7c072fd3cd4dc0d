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
#include "tessera/Runtime/GpuProgram.h"
#include "tessera/Runtime/Tuning.h"
#include "tessera/Runtime/LaunchRecord.h"
#include "tessera/Runtime/Result.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
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
  /// Memory at `address` on `device` that the runtime does not own (a
  /// tensor of another library, through DLPack): the caller keeps it
  /// alive until the work queued on it has run.
  static Result<DeviceBuffer> borrow(DType type, std::vector<int64_t> shape,
                                     int device, std::uint64_t address);
  /// A host copy; waits for `stream` (or the device) to finish the copy.
  Result<HostBuffer> toHost(Stream *stream = nullptr) const;
  /// Copies `host` (same dtype and shape) into this buffer.
  Status copyFromHost(const HostBuffer &host, Stream *stream = nullptr);
  /// The same memory under another shape with as many elements.
  Result<DeviceBuffer> reshaped(std::vector<int64_t> shape) const;

  DType dtype() const { return type; }
  const std::vector<int64_t> &shape() const { return dims; }
  int64_t numElements() const;
  std::size_t byteSize() const;
  int device() const { return deviceIndex; }
  /// The CUdeviceptr, as kernels take it.
  std::uint64_t pointer() const { return address; }
  /// Whether this is the only copy sharing its memory (false for an empty
  /// or borrowed buffer).
  bool soleOwner() const { return block && block.use_count() == 1; }
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
                std::vector<void *> args) const {
    return launch(config, stream, std::move(args), nullptr);
  }
  /// The same, for a caller that launches the kernel from several places:
  /// each `site` keeps its own TMA tensor maps, so that launches from
  /// one place with the same buffers reuse them.
  Status launch(const LaunchConfig &config, Stream &stream,
                std::vector<void *> args, const void *site) const;
  /// Lets the kernel use up to `bytes` of dynamic shared memory (beyond the
  /// default 48 KiB).
  Status setMaxDynamicSharedMemory(int bytes) const;
  const std::string &name() const { return kernelName; }
  /// Dynamic shared memory every launch gets at least (a Tile IR kernel's
  /// shared tiles, from its launch record; 0 for other kernels).
  unsigned requiredDynamicSharedMemory() const { return dynamicShared; }
  /// Threads a launch adds to the block of the kernel's warps (a Tile IR
  /// kernel's TMA producer warpgroup; 0 for other kernels).
  unsigned extraThreads() const;
  /// What the compiler recorded for launching a Tile IR kernel (its
  /// `tessera_launch_<kernel>` global): null for other kernels. A launch
  /// of a kernel with a record runs blocks of its threads (a caller may
  /// give the block of its warps alone, or the whole block), with its
  /// shared memory, in its clusters, and makes its tensor maps.
  const KernelLaunchRecord *launchRecord() const { return record.get(); }

  /// A Tile IR kernel whose shared tiles a producer warpgroup copies with
  /// TMA: the launch makes a tensor map for each memref argument it reads
  /// that way and passes them in device memory, as one more parameter.
  struct TmaLaunch;

private:
  friend class Module;
  friend class LaunchSequence;
  friend class HostProgram;
  /// A launch checked and made ready: the function, the whole block, the
  /// shared bytes and the cluster size; `args` then ends with the TMA
  /// table's address where the kernel takes one.
  struct Resolved {
    void *function = nullptr;
    std::array<unsigned, 3> grid = {1, 1, 1}, block = {1, 1, 1};
    unsigned shared = 0, cluster = 1;
  };
  Status resolve(const LaunchConfig &config, Stream &stream,
                 std::vector<void *> &args, const void *site,
                 Resolved &out) const;
  /// "cannot launch kernel ..." with the resolved launch's shape.
  std::string describeLaunch(const Resolved &r) const;
  /// Drops the tensor maps kept for `site`.
  void forgetSite(const void *site) const;
  Kernel(std::shared_ptr<void> module, void *function, std::string name,
         int device)
      : module(std::move(module)), function(function),
        kernelName(std::move(name)), deviceIndex(device) {}
  std::shared_ptr<void> module; // keeps the module loaded
  void *function = nullptr;
  std::string kernelName;
  int deviceIndex = 0;
  unsigned dynamicShared = 0;
  std::shared_ptr<const KernelLaunchRecord> record;
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

/// Kernel launches recorded once and queued again with other buffers.
/// The host work that chose and checked the launches (a GPU program's
/// plan, argument checks, packing) is done once; each run() allocates the
/// sequence's own buffers, writes the buffers' addresses into the recorded
/// parameters and queues the launches, releasing each buffer after the
/// last launch that reads it (stream order makes that safe).
///
///   LaunchSequence seq(0);
///   int x = seq.addArgument();
///   int y = seq.addBuffer(DType::f32, {n}, /*zeroed=*/true);
///   seq.addLaunch(kernel, config, packed, offsets, {{0, x, 0}, {8, y, 0}});
///   seq.markResult(y);
///   auto results = seq.run(stream, {xDevice.pointer()});   // {y}
class LaunchSequence {
public:
  explicit LaunchSequence(int device = 0) : deviceIndex(device) {}
  ~LaunchSequence();
  LaunchSequence(const LaunchSequence &) = delete;
  LaunchSequence &operator=(const LaunchSequence &) = delete;

  /// A device address a launch takes: the 8 bytes at `at` in its packed
  /// parameters become buffer `buffer`'s address plus `delta` bytes.
  struct Patch {
    std::size_t at = 0;
    int buffer = 0;
    std::int64_t delta = 0;
  };

  /// A buffer that each run() is given (in the order added); returns its
  /// number.
  int addArgument();
  /// A buffer that each run() allocates before the next launch added
  /// (cleared when `zeroed`); returns its number.
  Result<int> addBuffer(DType type, std::vector<int64_t> shape, bool zeroed);
  /// run() returns this allocated buffer (results in the order marked)
  /// instead of releasing it.
  Status markResult(int buffer);
  /// A launch of `kernel` on the sequence's device: `packed` holds the
  /// parameter values, each starting at one of `offsets`; `patches` are
  /// the buffer addresses among them.
  Status addLaunch(const Kernel &kernel, const LaunchConfig &config,
                   std::vector<char> packed, std::vector<std::size_t> offsets,
                   std::vector<Patch> patches);

  std::size_t launchCount() const { return launches.size(); }
  std::size_t argumentCount() const { return argumentSlots.size(); }
  int device() const { return deviceIndex; }

  /// Queues the launches on `stream` with one device address per argument;
  /// returns the result buffers.
  Result<std::vector<DeviceBuffer>>
  run(Stream &stream, const std::vector<std::uint64_t> &arguments);

private:
  struct Slot {
    bool argument = false;
    DType type = DType::f32;
    std::vector<int64_t> shape;
    bool zeroed = false;
    bool result = false;
    int lastUse = -1; // the last launch reading it
  };
  struct Launch {
    Kernel kernel;
    LaunchConfig config;
    std::vector<char> packed;
    std::vector<std::size_t> offsets;
    std::vector<Patch> patches;
    std::vector<int> allocate; // buffers allocated just before it
    std::vector<int> release;  // buffers released just after it
  };
  int deviceIndex = 0;
  std::vector<Slot> slots;
  std::vector<int> argumentSlots, resultSlots;
  std::vector<int> pending; // allocated before the next launch
  std::vector<std::unique_ptr<Launch>> launches;
  bool releasesKnown = false;
};

/// A compiled GPU host program (GpuProgram.h) loaded on one device: its
/// kernels, its constants and its workspace, allocated once. Each run()
/// checks the arguments, allocates the results and queues the program's
/// launches and copies on the stream, in order; temporaries live in the
/// workspace, so runs on one program must not overlap (they are serialized
/// by a stream; a program is not shared between streams that run at once).
///
///   auto image = GpuProgramImage::load("step.tgpu");
///   auto program = HostProgram::load(std::move(*image), 0);
///   auto outputs = (*program)->run(stream, {x, w});
class HostProgram {
public:
  static Result<std::shared_ptr<HostProgram>> load(GpuProgramImage image,
                                                   int device = 0);
  ~HostProgram();
  HostProgram(const HostProgram &) = delete;
  HostProgram &operator=(const HostProgram &) = delete;

  Result<std::vector<DeviceBuffer>> run(Stream &stream,
                                        const std::vector<DeviceBuffer> &args);
  const GpuProgramImage &image() const { return img; }
  int device() const { return deviceIndex; }

  /// Replay. The first run launches the steps one by one; later runs
  /// queue them as one CUDA graph launched with one driver call. A graph
  /// is kept for each of the last kGraphsKept sets of argument and result
  /// buffers (results from a caching allocator come back at a few
  /// addresses): a run on a set seen before launches its graph as it is;
  /// on a new set, a new graph is built, or past kGraphsKept the least
  /// recently used one has the parameters of just the launches and copies
  /// that touch the buffers rewritten. TESSERA_CUDA_GRAPHS=0 (read at
  /// load) turns replay off.
  static constexpr std::size_t kGraphsKept = 4;
  /// Runs queued as a graph so far.
  std::uint64_t graphRuns() const { return graphRunCount; }
  /// Graphs built so far (at most kGraphsKept, unless one failed), and
  /// runs that rewrote a kept graph's nodes.
  std::uint64_t graphsBuilt() const { return graphBuildCount; }
  std::uint64_t graphRewrites() const { return graphRewriteCount; }
  /// Why runs are not replayed (empty while they are, or may be).
  const std::string &graphFailure() const { return graphWhy; }

  /// The time of each step on `args` (seconds, the median of `reps` runs
  /// after one to warm up): the steps are queued one at a time with an
  /// event between each two, and waited for. For autotuning and profiles;
  /// the results are dropped.
  Result<std::vector<double>> timeSteps(Stream &stream,
                                        const std::vector<DeviceBuffer> &args,
                                        int reps = 10);

private:
  HostProgram(GpuProgramImage image, int device);
  struct Graph;
  /// Checks `args` and gives every storage its address (arguments,
  /// workspace, constants, and result buffers in `owned`).
  Status bind(Stream &stream, const std::vector<DeviceBuffer> &args,
              std::vector<std::uint64_t> &address,
              std::vector<DeviceBuffer> &owned);
  /// Queues step `i`.
  Status launchStep(Stream &stream, const std::vector<std::uint64_t> &address,
                    std::size_t i);
  /// Queues the steps one launch at a time.
  Status launchSteps(Stream &stream, const std::vector<std::uint64_t> &address);
  /// Queues the steps as the graph (building it at the first call);
  /// false in `replayed` where it cannot, with graphWhy saying why.
  Status launchGraph(Stream &stream, const std::vector<std::uint64_t> &address,
                     bool &replayed);
  /// A step as load() prepares it, so that run() only writes addresses:
  /// a launch's memref descriptors (with an address slot for each of
  /// `addresses`: slot, storage), its parameter pointers and its kernel;
  /// a copy's byte count.
  struct Prepared {
    std::optional<Kernel> kernel;
    LaunchConfig config;
    std::vector<std::int64_t> slots;
    std::vector<void *> params;
    std::vector<std::pair<std::size_t, std::int32_t>> addresses;
    std::size_t copyBytes = 0;
    /// Reads or writes an argument or a result, whose addresses change
    /// from run to run (the others: the workspace, constants).
    bool variable = false;
  };
  GpuProgramImage img;
  int deviceIndex = 0;
  std::vector<Prepared> prepared; // one a step, in step order
  DeviceBuffer workspace;
  std::vector<DeviceBuffer> constants;
  bool graphsWanted = true;
  std::uint64_t runCount = 0, graphRunCount = 0, graphBuildCount = 0,
                graphRewriteCount = 0;
  std::string graphWhy;
  /// The kept graphs, most recently used first.
  std::vector<std::unique_ptr<Graph>> graphs;
  /// Result buffers of earlier runs (a buffer per storage, empty but for
  /// results), reused by a run on the same stream once the caller holds
  /// none of them: a caller that keeps one step's results while computing
  /// the next alternates between two sets, whose graphs are kept.
  struct ResultSet {
    std::vector<DeviceBuffer> buffers;
    void *stream = nullptr;
  };
  static constexpr std::size_t kResultSetsKept = 2;
  std::vector<ResultSet> resultSets;
  /// The TMA launch sites of the graphs: one per step and graph slot, so
  /// that a kept graph's tensor-map tables are rewritten only when that
  /// graph's nodes are (steps.size() * kGraphsKept bytes; their addresses
  /// are the sites).
  std::vector<char> graphSites;
};

/// Autotuning of a function's products: `programs` are its compiles with
/// each candidate rank of the products' autotune spaces (the compiler's
/// `variant` 0, 1, ...). Each is loaded on `device` and run on arguments
/// of random values (integers 0), its steps timed (timeSteps, `reps`
/// runs); for each tuning key, the schedule of the program whose launches
/// of that key took least is kept, with that time. The programs must be
/// of one function and signature.
Result<TuningTable> tunePrograms(const std::vector<GpuProgramImage> &programs,
                                 int device = 0, int reps = 10);

} // namespace tessera::runtime::cuda

#endif // TESSERA_RUNTIME_CUDA_H
