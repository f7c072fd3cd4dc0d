//===- CudaHostProgram.cpp - Running a compiled GPU host program ---------===//
//
// cuda::HostProgram (Cuda.h): a GpuProgramImage loaded on a device (its PTX
// module, a kernel for each launch step, its constants uploaded and its
// workspace allocated once) and run with the caller's buffers. Kernels take
// each buffer as a memref descriptor (allocated and aligned pointers,
// offset, sizes, strides: 3 + 2 * rank 8-byte slots) under the shape the
// step names; each launch step is its own TMA launch site. From the
// second run on, the steps are queued as one CUDA graph: one kept for each
// of the last few sets of argument and result buffers, launched as it is
// on a set seen before.
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Cuda.h"

#include "CudaDriver.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

using namespace tessera::runtime;
using namespace tessera::runtime::cuda;
using namespace tessera::runtime::cuda::detail;

Result<std::shared_ptr<HostProgram>> HostProgram::load(GpuProgramImage image,
                                                       int device) {
  std::string what = "GPU program '" + image.name + "'";
  if (Status st = image.verify(); !st)
    return Error{what + ": " + st.error().message};
  auto info = deviceInfo(device);
  if (!info)
    return info.error();
  std::string why;
  if (!chipRuns(image.chip, info->major, info->minor, why))
    return Error{what + " " + why + " (" + info->describe() + ")"};
  bool launches = false;
  for (const GpuProgramImage::Step &step : image.steps)
    launches |= step.kind == GpuProgramImage::Step::Kind::Launch;
  // A program of views and copies alone has no kernels to load.
  std::optional<Module> module;
  if (launches) {
    // The cubin where the device runs its code (no JIT), else the PTX.
    auto loaded = !image.cubin.empty() &&
                          cubinRuns(image.chip, info->major, info->minor)
                      ? Module::loadImage(image.cubin, device)
                      : Module::loadPtx(image.ptx, device);
    if (!loaded)
      return Error{what + ": " + loaded.error().message};
    module = std::move(*loaded);
  }
  std::shared_ptr<HostProgram> program(
      new HostProgram(std::move(image), device));
  if (const char *env = std::getenv("TESSERA_CUDA_GRAPHS");
      env && std::string(env) == "0") {
    program->graphsWanted = false;
    program->graphWhy = "turned off by TESSERA_CUDA_GRAPHS=0";
  } else if (!driver().hasGraphs()) {
    program->graphsWanted = false;
    program->graphWhy = "the CUDA driver lacks the graph API";
  }
  const GpuProgramImage &img = program->img;
  // One Kernel a launch step (each keeps its own TMA tensor maps), with
  // its memref descriptors (pointer, pointer, offset 0, sizes, row-major
  // strides) written once; run() fills in the pointers.
  program->prepared.resize(img.steps.size());
  for (std::size_t i = 0; i < img.steps.size(); ++i) {
    const GpuProgramImage::Step &step = img.steps[i];
    Prepared &p = program->prepared[i];
    for (const auto &o : step.operands) {
      auto kind = img.storages[std::size_t(o.storage)].kind;
      p.variable |= kind == GpuProgramImage::StorageKind::Argument ||
                    kind == GpuProgramImage::StorageKind::Result;
    }
    if (step.kind == GpuProgramImage::Step::Kind::Copy) {
      const auto &storage = img.storages[std::size_t(step.operands[0].storage)];
      p.copyBytes = std::size_t(*elementCount(storage.shape)) *
                    byteSize(storage.type);
      continue;
    }
    auto kernel = module->kernel(step.kernel);
    if (!kernel)
      return Error{what + ": " + kernel.error().message};
    const KernelLaunchRecord *record = kernel->launchRecord();
    if (!record)
      return Error{what + ": kernel '" + step.kernel +
                   "' has no launch record (it is not a compiled Tile IR "
                   "kernel)"};
    for (const auto &o : step.operands) {
      p.addresses.push_back({p.slots.size(), o.storage});
      p.addresses.push_back({p.slots.size() + 1, o.storage});
      p.slots.insert(p.slots.end(), {0, 0, 0});
      p.slots.insert(p.slots.end(), o.shape.begin(), o.shape.end());
      std::vector<std::int64_t> strides(o.shape.size());
      std::int64_t stride = 1;
      for (std::size_t d = o.shape.size(); d-- > 0;) {
        strides[d] = stride;
        stride *= o.shape[d];
      }
      p.slots.insert(p.slots.end(), strides.begin(), strides.end());
    }
    // Scalars take a slot each, their bits in its low bytes (where the
    // kernel's 4- or 8-byte parameter reads them).
    for (const GpuProgramImage::Scalar &c : step.scalars)
      p.slots.push_back(std::int64_t(c.bits));
    if (std::int64_t(p.slots.size()) != record->parameterSlots)
      return Error{what + ": kernel '" + step.kernel + "' takes " +
                   std::to_string(record->parameterSlots) +
                   " parameter slots; the program passes " +
                   std::to_string(p.slots.size())};
    for (std::int64_t &v : p.slots)
      p.params.push_back(&v);
    p.config.grid = {unsigned(step.grid[0]), unsigned(step.grid[1]),
                     unsigned(step.grid[2])};
    p.config.block = {unsigned(record->consumerThreads), 1, 1};
    p.kernel = *kernel;
  }
  // A program of views alone queues nothing: there is nothing to replay.
  if (std::none_of(program->prepared.begin(), program->prepared.end(),
                   [](const Prepared &p) { return p.kernel || p.copyBytes; }))
    program->graphsWanted = false;
  Stream *noStream = nullptr;
  for (const GpuProgramImage::Storage &s : img.storages) {
    if (s.kind != GpuProgramImage::StorageKind::Constant)
      continue;
    const auto &bytes = img.constants[std::size_t(s.index)];
    auto host = HostBuffer::wrap(s.type, s.shape,
                                 const_cast<char *>(bytes.data()));
    if (!host)
      return host.error();
    auto buffer = DeviceBuffer::fromHost(*host, device, noStream);
    if (!buffer)
      return buffer.error();
    if (program->constants.size() <= std::size_t(s.index))
      program->constants.resize(std::size_t(s.index) + 1);
    program->constants[std::size_t(s.index)] = std::move(*buffer);
  }
  if (img.workspaceBytes > 0) {
    auto workspace =
        DeviceBuffer::allocate(DType::i8, {img.workspaceBytes}, device);
    if (!workspace)
      return workspace.error();
    program->workspace = std::move(*workspace);
  }
  return program;
}

/// The steps as a CUDA graph: a chain of kernel and copy nodes in step
/// order, instantiated once, with the buffer addresses (and TMA table
/// address) each node was last given.
struct HostProgram::Graph {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  std::vector<CUgraphNode> nodes;             // a step's node, or null
  std::vector<std::vector<std::uint64_t>> values; // what each node holds
  /// The argument and result addresses its nodes hold, in storage order.
  std::vector<std::uint64_t> key;
  /// Its TMA sites: graphSites[step * kGraphsKept + slot].
  std::size_t slot = 0;
  int device = 0;
  ~Graph() {
    const Driver &d = driver();
    if (!exec && !graph)
      return;
    // An executable graph still running is freed when it completes.
    if (!enter(device))
      return;
    if (exec)
      d.graphExecDestroy(exec);
    if (graph)
      d.graphDestroy(graph);
  }
};

HostProgram::HostProgram(GpuProgramImage image, int device)
    : img(std::move(image)), deviceIndex(device) {}

HostProgram::~HostProgram() {
  graphs.clear();
  for (std::size_t i = 0; i < prepared.size(); ++i)
    if (prepared[i].kernel) {
      prepared[i].kernel->forgetSite(&img.steps[i]);
      for (std::size_t k = 0; k < kGraphsKept && !graphSites.empty(); ++k)
        prepared[i].kernel->forgetSite(&graphSites[i * kGraphsKept + k]);
    }
}

Status HostProgram::launchStep(Stream &stream,
                               const std::vector<std::uint64_t> &address,
                               std::size_t i) {
  auto stepWhat = [&] {
    return "GPU program '" + img.name + "': step " + std::to_string(i);
  };
  TESSERA_ENTER(deviceIndex);
  const GpuProgramImage::Step &step = img.steps[i];
  Prepared &p = prepared[i];
  if (!p.kernel) {
    const auto &from = step.operands[0], &to = step.operands[1];
    if (p.copyBytes)
      TESSERA_CU(driver().memcpyDtoDAsync(
                     CUdeviceptr(address[std::size_t(to.storage)]),
                     CUdeviceptr(address[std::size_t(from.storage)]),
                     p.copyBytes, static_cast<CUstream>(stream.handle())),
                 stepWhat() + " (a copy)");
    return Status::ok();
  }
  for (auto [slot, storage] : p.addresses)
    p.slots[slot] = std::int64_t(address[std::size_t(storage)]);
  Status st = p.kernel->launch(p.config, stream, p.params, &step);
  if (!st)
    return Error{stepWhat() + ": " + st.error().message};
  return Status::ok();
}

Status HostProgram::launchSteps(Stream &stream,
                                const std::vector<std::uint64_t> &address) {
  for (std::size_t i = 0; i < img.steps.size(); ++i)
    if (Status st = launchStep(stream, address, i); !st)
      return st;
  return Status::ok();
}

Status HostProgram::launchGraph(Stream &stream,
                                const std::vector<std::uint64_t> &address,
                                bool &replayed) {
  replayed = false;
  auto what = [&] { return "GPU program '" + img.name + "'"; };
  const Driver &d = driver();
  TESSERA_ENTER(deviceIndex);
  CUcontext context = d.contexts[std::size_t(deviceIndex)];
  // A failed graph call leaves the program to launch its steps one by one.
  auto give_up = [&](const std::string &call, CUresult r) {
    graphWhy = cudaError(call, r).message;
    graphs.clear();
    return Status::ok();
  };
  auto launchAs = [&](Graph &g) {
    if (CUresult r =
            d.graphLaunch(g.exec, static_cast<CUstream>(stream.handle()));
        r != CUDA_SUCCESS)
      return give_up("cannot launch the CUDA graph of " + what(), r);
    replayed = true;
    return Status::ok();
  };
  std::vector<std::uint64_t> key;
  for (std::size_t i = 0; i < img.storages.size(); ++i)
    if (img.storages[i].kind == GpuProgramImage::StorageKind::Argument ||
        img.storages[i].kind == GpuProgramImage::StorageKind::Result)
      key.push_back(address[i]);
  // The same buffers as a kept graph's: its nodes hold them already (and
  // its tensor-map tables, which only its own rewrites replace).
  for (auto it = graphs.begin(); it != graphs.end(); ++it)
    if ((*it)->key == key) {
      std::rotate(graphs.begin(), it, std::next(it));
      return launchAs(*graphs.front());
    }
  if (graphSites.empty())
    graphSites.assign(img.steps.size() * kGraphsKept, 0);
  std::unique_ptr<Graph> fresh;
  Graph *g = nullptr;
  bool building = graphs.size() < kGraphsKept;
  if (building) {
    fresh = std::make_unique<Graph>();
    g = fresh.get();
    g->device = deviceIndex;
    // The slot no kept graph has.
    for (std::size_t k = 0; k < kGraphsKept; ++k)
      if (std::none_of(graphs.begin(), graphs.end(),
                       [&](const auto &h) { return h->slot == k; })) {
        g->slot = k;
        break;
      }
    g->nodes.assign(img.steps.size(), nullptr);
    g->values.resize(img.steps.size());
    CUresult r = d.graphCreate(&g->graph, 0);
    if (r != CUDA_SUCCESS) {
      graphWhy = cudaError("cannot create a CUDA graph", r).message;
      return Status::ok();
    }
  } else {
    // The least recently used graph takes these buffers.
    g = graphs.back().get();
  }
  CUgraphNode last = nullptr;
  std::vector<std::uint64_t> values;
  for (std::size_t i = 0; i < img.steps.size(); ++i) {
    const GpuProgramImage::Step &step = img.steps[i];
    Prepared &p = prepared[i];
    // A node of the workspace and constants alone keeps what it was built
    // with (its TMA table, made from the same addresses, too).
    if (!building && !p.variable)
      continue;
    values.clear();
    if (!p.kernel) {
      if (!p.copyBytes)
        continue;
      std::uint64_t from = address[std::size_t(step.operands[0].storage)];
      std::uint64_t to = address[std::size_t(step.operands[1].storage)];
      values = {from, to};
      if (!building && values == g->values[i])
        continue;
      CUDA_MEMCPY3D copy = {};
      copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
      copy.srcDevice = CUdeviceptr(from);
      copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
      copy.dstDevice = CUdeviceptr(to);
      copy.WidthInBytes = p.copyBytes;
      copy.Height = 1;
      copy.Depth = 1;
      CUresult r;
      if (building) {
        r = d.graphAddMemcpyNode(&g->nodes[i], g->graph, last ? &last : nullptr,
                                 last ? 1 : 0, &copy, context);
        last = g->nodes[i];
      } else {
        r = d.graphExecMemcpyNodeSetParams(g->exec, g->nodes[i], &copy,
                                           context);
      }
      if (r != CUDA_SUCCESS)
        return give_up("step " + std::to_string(i) + " (a copy) as a graph "
                       "node", r);
      g->values[i] = values;
      continue;
    }
    for (auto [slot, storage] : p.addresses) {
      p.slots[slot] = std::int64_t(address[std::size_t(storage)]);
      values.push_back(address[std::size_t(storage)]);
    }
    std::vector<void *> args = p.params;
    Kernel::Resolved launch;
    if (Status st = p.kernel->resolve(p.config, stream, args,
                                      &graphSites[i * kGraphsKept + g->slot],
                                      launch);
        !st)
      return Error{what() + ": step " + std::to_string(i) + ": " +
                   st.error().message};
    if (args.size() > p.params.size()) // the TMA table's address
      values.push_back(*static_cast<const std::uint64_t *>(args.back()));
    if (!building && values == g->values[i])
      continue;
    CUDA_KERNEL_NODE_PARAMS node = {};
    node.func = static_cast<CUfunction>(launch.function);
    setLaunchShape(node, launch.grid, launch.block, launch.shared);
    node.kernelParams = args.data();
    CUresult r;
    if (building) {
      r = d.graphAddKernelNode(&g->nodes[i], g->graph, last ? &last : nullptr,
                               last ? 1 : 0, &node);
      last = g->nodes[i];
      if (r == CUDA_SUCCESS && launch.cluster > 1) {
        CUlaunchAttributeValue cluster = clusterDimension(launch.cluster);
        r = d.graphKernelNodeSetAttribute(
            g->nodes[i], CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &cluster);
      }
    } else {
      r = d.graphExecKernelNodeSetParams(g->exec, g->nodes[i], &node);
    }
    if (r != CUDA_SUCCESS)
      return give_up(p.kernel->describeLaunch(launch) + " as a graph node", r);
    g->values[i] = values;
  }
  g->key = std::move(key);
  if (building) {
    if (CUresult r = d.graphInstantiate(&g->exec, g->graph, 0);
        r != CUDA_SUCCESS)
      return give_up("cannot instantiate the CUDA graph of " + what(), r);
    graphs.insert(graphs.begin(), std::move(fresh));
    ++graphBuildCount;
  } else {
    std::rotate(graphs.begin(), std::prev(graphs.end()), graphs.end());
    ++graphRewriteCount;
  }
  return launchAs(*graphs.front());
}

Result<std::vector<DeviceBuffer>>
HostProgram::run(Stream &stream, const std::vector<DeviceBuffer> &args) {
  std::vector<std::uint64_t> address;
  std::vector<DeviceBuffer> owned;
  if (Status st = bind(stream, args, address, owned); !st)
    return st.error();
  bool replayed = false;
  if (graphsWanted && runCount > 0) {
    Status st = launchGraph(stream, address, replayed);
    if (!st)
      return st.error();
    if (!replayed)
      graphsWanted = false; // graphWhy says why
  }
  if (replayed) {
    ++graphRunCount;
  } else if (Status st = launchSteps(stream, address); !st) {
    return st.error();
  }
  ++runCount;
  std::vector<DeviceBuffer> results;
  for (const auto &r : img.results) {
    const auto &s = img.storages[std::size_t(r.storage)];
    if (s.kind != GpuProgramImage::StorageKind::Result)
      return Error{"GPU program '" + img.name + "': a result is buffer " +
                   std::to_string(r.storage) +
                   ", which the program does not allocate for the caller"};
    auto view = owned[std::size_t(r.storage)].reshaped(r.shape);
    if (!view)
      return view.error();
    results.push_back(std::move(*view));
  }
  return results;
}

Result<std::vector<double>>
HostProgram::timeSteps(Stream &stream, const std::vector<DeviceBuffer> &args,
                       int reps) {
  if (reps < 1)
    return Error{"timeSteps needs at least one repetition, got " +
                 std::to_string(reps)};
  std::vector<std::uint64_t> address;
  std::vector<DeviceBuffer> owned;
  if (Status st = bind(stream, args, address, owned); !st)
    return st.error();
  const std::size_t n = img.steps.size();
  std::vector<Event> marks;
  for (std::size_t i = 0; i <= n; ++i) {
    auto e = Event::create(deviceIndex);
    if (!e)
      return e.error();
    marks.push_back(std::move(*e));
  }
  std::vector<std::vector<double>> samples(n);
  // A first pass warms the caches and the kernels' first-launch work.
  for (int rep = -1; rep < reps; ++rep) {
    for (std::size_t i = 0; i < n; ++i) {
      if (Status st = marks[i].record(stream); !st)
        return st.error();
      if (Status st = launchStep(stream, address, i); !st)
        return st.error();
    }
    if (Status st = marks[n].record(stream); !st)
      return st.error();
    if (Status st = marks[n].synchronize(); !st)
      return st.error();
    if (rep < 0)
      continue;
    for (std::size_t i = 0; i < n; ++i) {
      auto ms = Event::elapsedMs(marks[i], marks[i + 1]);
      if (!ms)
        return ms.error();
      samples[i].push_back(double(*ms) * 1e-3);
    }
  }
  std::vector<double> medians(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> &v = samples[i];
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    medians[i] = v[v.size() / 2];
  }
  return medians;
}

Status HostProgram::bind(Stream &stream, const std::vector<DeviceBuffer> &args,
                         std::vector<std::uint64_t> &address,
                         std::vector<DeviceBuffer> &owned) {
  // (Error text is made only on failure: run() is the hot path.)
  auto what = [&] { return "GPU program '" + img.name + "'"; };
  if (stream.device() != deviceIndex)
    return Error{what() + " is loaded on cuda:" + std::to_string(deviceIndex) +
                 ", the stream is on cuda:" + std::to_string(stream.device())};
  if (args.size() != img.arguments.size())
    return Error{what() + " takes " + std::to_string(img.arguments.size()) +
                 " arguments, got " + std::to_string(args.size())};
  address.assign(img.storages.size(), 0);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto &want = img.storages[std::size_t(img.arguments[i])];
    const DeviceBuffer &a = args[i];
    if (a.device() != deviceIndex)
      return Error{what() + ": argument " + std::to_string(i) + " is " +
                   a.describe() + "; the program runs on cuda:" +
                   std::to_string(deviceIndex)};
    if (a.dtype() != want.type || a.shape() != want.shape)
      return Error{what() + ": argument " + std::to_string(i) +
                   " must be " + describe(want.type, want.shape) +
                   ", got " + describe(a.dtype(), a.shape())};
    address[std::size_t(img.arguments[i])] = a.pointer();
  }
  // The results of an earlier run that the caller no longer holds, at the
  // addresses a kept graph has; else new buffers (kept for later runs
  // while fewer than kResultSetsKept sets are).
  auto released = [&](const ResultSet &set) {
    if (set.stream != stream.handle())
      return false;
    for (std::size_t i = 0; i < img.storages.size(); ++i) {
      const DeviceBuffer &b = set.buffers[i];
      if (img.storages[i].kind == GpuProgramImage::StorageKind::Result &&
          !b.soleOwner() && b.byteSize() != 0)
        return false;
    }
    return true;
  };
  owned.clear();
  for (const ResultSet &set : resultSets)
    if (released(set)) {
      owned = set.buffers;
      break;
    }
  bool reused = !owned.empty();
  if (!reused)
    owned.resize(img.storages.size());
  for (std::size_t i = 0; i < img.storages.size(); ++i) {
    const auto &s = img.storages[i];
    switch (s.kind) {
    case GpuProgramImage::StorageKind::Argument:
      break;
    case GpuProgramImage::StorageKind::Workspace:
      address[i] = workspace.pointer() + std::uint64_t(s.offset);
      break;
    case GpuProgramImage::StorageKind::Constant:
      address[i] = constants[std::size_t(s.index)].pointer();
      break;
    case GpuProgramImage::StorageKind::Result: {
      if (!reused) {
        auto buffer = DeviceBuffer::allocate(s.type, s.shape, deviceIndex,
                                             &stream);
        if (!buffer)
          return buffer.error();
        owned[i] = std::move(*buffer);
      }
      address[i] = owned[i].pointer();
      break;
    }
    }
  }
  if (!reused && resultSets.size() < kResultSetsKept)
    resultSets.push_back(ResultSet{owned, stream.handle()});
  return Status::ok();
}

Result<TuningTable>
tessera::runtime::cuda::tunePrograms(const std::vector<GpuProgramImage> &programs,
                                     int device, int reps) {
  if (programs.size() < 2)
    return Error{"autotuning compares the variants of one function (compiled "
                 "with variant 0, 1, ...), got " +
                 std::to_string(programs.size()) + " program"};
  const GpuProgramImage &first = programs.front();
  for (const GpuProgramImage &p : programs)
    if (p.name != first.name || p.arguments.size() != first.arguments.size())
      return Error{"autotuning takes compiles of one function: got @" +
                   first.name + " and @" + p.name};
  auto stream = Stream::create(device);
  if (!stream)
    return stream.error();
  // Arguments of random values (the products' time hardly depends on
  // them, but zeros would let the tensor cores idle).
  std::vector<DeviceBuffer> args;
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return std::uint32_t(state >> 33);
  };
  for (std::int32_t storage : first.arguments) {
    const auto &s = first.storages[std::size_t(storage)];
    auto host = HostBuffer::zeros(s.type, s.shape);
    if (!host)
      return host.error();
    std::int64_t n = host->numElements();
    if (s.type == DType::f32) {
      for (std::int64_t i = 0; i < n; ++i)
        host->as<float>()[i] = float(next()) / 2147483648.0f - 1.0f;
    } else if (s.type == DType::bf16 || s.type == DType::f16) {
      // Values of magnitude [0.5, 1) with random signs and mantissas.
      std::uint16_t base = s.type == DType::bf16 ? 0x3f00 : 0x3800;
      std::uint16_t mantissa = s.type == DType::bf16 ? 0x7f : 0x3ff;
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint32_t r = next();
        host->as<std::uint16_t>()[i] = std::uint16_t(
            ((r >> 16) & 1) << 15 | base | (r & mantissa));
      }
    }
    auto buffer = DeviceBuffer::fromHost(*host, device, &*stream);
    if (!buffer)
      return buffer.error();
    args.push_back(std::move(*buffer));
  }
  TuningTable best;
  std::map<std::string, std::vector<std::pair<std::string, double>>> tried;
  for (std::size_t v = 0; v < programs.size(); ++v) {
    auto program = HostProgram::load(programs[v], device);
    if (!program)
      return program.error();
    auto times = (*program)->timeSteps(*stream, args, reps);
    if (!times)
      return Error{"autotuning program " + std::to_string(v) + ": " +
                   times.error().message};
    // Each key's launches together; the schedule its first launch
    // records (a split product's second launch has the sum's own tile).
    std::map<std::string, TuningTable::Entry> found;
    const auto &steps = (*program)->image().steps;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].tuning.empty())
        continue;
      auto [it, fresh] = found.try_emplace(steps[i].tuning);
      if (fresh)
        it->second.schedule = steps[i].schedule;
      it->second.seconds += (*times)[i];
    }
    for (auto &[key, e] : found) {
      tried[key].push_back({e.schedule, e.seconds});
      auto it = best.entries.find(key);
      if (it == best.entries.end() || e.seconds < it->second.seconds)
        best.entries[key] = e;
    }
  }
  for (auto &[key, e] : best.entries)
    e.tried = std::move(tried[key]);
  return best;
}
