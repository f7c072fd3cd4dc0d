//===- Cuda.cpp - tessera._cuda: GPUs through the runtime -----------------===//
//
// The runtime's CUDA layer for Python, without the compiler: device
// buffers, DLPack exchange with other frameworks, modules of PTX and kernel
// launches, streams and events. It links the runtime library alone, so a
// deployment that runs precompiled kernels needs neither MLIR nor LLVM.
//
// Work is queued on one stream per device that this module owns. It is a
// blocking stream: the legacy default stream (PyTorch's default) and it
// wait for each other, so tensors pass between the two frameworks without
// explicit synchronization.
//
//===----------------------------------------------------------------------===//

#include "DLPackNames.h"

#include "tessera/Runtime/Cuda.h"
#include "tessera/Runtime/DType.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>

namespace nb = nanobind;
namespace rt = tessera::runtime;
namespace cu = tessera::runtime::cuda;
using rt::DType;
using tessera::python::dlpackDType;
using tessera::python::dlpackName;

namespace {

nb::object errorType;

[[noreturn]] void raise(const std::string &message) {
  PyErr_SetString(errorType.ptr(), message.c_str());
  throw nb::python_error();
}

template <typename T> T take(rt::Result<T> r) {
  if (!r)
    raise(r.error().message);
  return std::move(*r);
}

void check(const rt::Status &s) {
  if (!s)
    raise(s.error().message);
}

/// The stream of each device that Python's work goes on.
cu::Stream &streamOf(int device) {
  static std::map<int, std::unique_ptr<cu::Stream>> *streams =
      new std::map<int, std::unique_ptr<cu::Stream>>;
  auto &slot = (*streams)[device];
  if (!slot)
    slot = std::make_unique<cu::Stream>(take(cu::Stream::create(device)));
  return *slot;
}

DType parseDType(const std::string &name) {
  auto t = rt::parseDType(name);
  if (!t)
    raise("unknown dtype '" + name + "'");
  return *t;
}

/// A buffer of device memory owned by the runtime's caching allocator.
struct Buffer {
  cu::DeviceBuffer buffer;
};

/// A loaded module and its kernels.
struct LoadedModule {
  std::unique_ptr<cu::Module> module;
  int device = 0;
};

struct LoadedKernel {
  std::unique_ptr<cu::Kernel> kernel;
  int device = 0;
};

struct Sequence {
  std::unique_ptr<cu::LaunchSequence> sequence;
};

struct LoadedProgram {
  std::shared_ptr<cu::HostProgram> program;
};
struct TimingEvent {
  std::unique_ptr<cu::Event> event;
};

using CudaArray = nb::ndarray<nb::device::cuda>;
using HostArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

} // namespace

NB_MODULE(_cuda, m) {
  m.doc() = "Tessera's CUDA runtime: device buffers, DLPack, kernel "
            "launches (no compiler).";
  errorType = nb::module_::import_("tessera._errors").attr("TesseraError");
  // Loaded modules and kernels stay in the kernel objects' caches until the
  // interpreter exits; nanobind would report each as a leak then.
  nb::set_leak_warnings(false);

  m.def("available", &cu::available,
        "True when the CUDA driver loads and reports a GPU.");
  m.def("unavailable_reason", &cu::unavailableReason);
  m.def("device_count", &cu::deviceCount);
  m.def(
      "chip_for_device",
      [](int major, int minor) { return rt::chipForDevice(major, minor); },
      nb::arg("major"), nb::arg("minor"),
      "The chip a device of compute capability major.minor runs programs "
      "compiled for (as the C++ API picks it), or None below 8.0.");
  m.def(
      "tune_programs",
      [](const std::vector<std::string> &paths, int device, int reps) {
        std::vector<rt::GpuProgramImage> programs;
        for (const std::string &path : paths) {
          auto bundle = take(rt::GpuBundle::load(path));
          for (auto &p : bundle.programs)
            programs.push_back(std::move(p));
        }
        rt::Result<rt::TuningTable> table = [&] {
          nb::gil_scoped_release release;
          return cu::tunePrograms(programs, device, reps);
        }();
        return take(std::move(table)).str();
      },
      nb::arg("paths"), nb::arg("device") = 0, nb::arg("reps") = 10,
      "Autotuning: times the GPU program files `paths` (one function "
      "compiled with each candidate rank of its products' autotune spaces, "
      "compile_gpu(variant=N)) on `device` and returns the text of a "
      "tuning file: each product's fastest schedule (compile_gpu(tuning=)).");
  m.def(
      "device_info",
      [](int device) {
        cu::DeviceInfo info = take(cu::deviceInfo(device));
        nb::dict d;
        d["index"] = info.index;
        d["name"] = info.name;
        d["capability"] = nb::make_tuple(info.major, info.minor);
        d["multiprocessors"] = info.multiprocessors;
        d["total_memory"] = info.totalMemory;
        d["l2_cache_bytes"] = info.l2CacheBytes;
        d["max_shared_memory_per_block"] = info.maxSharedMemoryPerBlock;
        d["description"] = info.describe();
        return d;
      },
      nb::arg("device") = 0);
  m.def(
      "synchronize", [](int device) { check(streamOf(device).synchronize()); },
      nb::arg("device") = 0, "Waits for the work Tessera queued on `device`.");
  m.def(
      "stream_handle",
      [](int device) {
        return reinterpret_cast<uintptr_t>(streamOf(device).handle());
      },
      nb::arg("device") = 0, "The CUstream Tessera's work on `device` uses.");

  nb::class_<Buffer>(m, "Buffer", "Device memory holding a dense array.")
      .def_static(
          "empty",
          [](const std::string &dtype, std::vector<int64_t> shape, int device) {
            return Buffer{take(
                cu::DeviceBuffer::allocate(parseDType(dtype), std::move(shape),
                                           device, &streamOf(device)))};
          },
          nb::arg("dtype"), nb::arg("shape"), nb::arg("device") = 0)
      .def_static(
          "borrow",
          [](std::uint64_t pointer, const std::string &dtype,
             std::vector<int64_t> shape, int device) {
            return Buffer{take(cu::DeviceBuffer::borrow(
                parseDType(dtype), std::move(shape), device, pointer))};
          },
          nb::arg("pointer"), nb::arg("dtype"), nb::arg("shape"),
          nb::arg("device") = 0,
          "A dense array at `pointer` that Tessera does not own (another "
          "library's tensor): the caller keeps the memory alive until the "
          "work queued on it has run.")
      .def_static(
          "zeros",
          [](const std::string &dtype, std::vector<int64_t> shape, int device) {
            return Buffer{take(cu::DeviceBuffer::zeros(parseDType(dtype),
                                                       std::move(shape), device,
                                                       &streamOf(device)))};
          },
          nb::arg("dtype"), nb::arg("shape"), nb::arg("device") = 0)
      .def_static(
          "from_host",
          [](HostArray a, const std::string &dtype, int device) {
            DType t = parseDType(dtype);
            std::vector<int64_t> shape(a.shape_ptr(), a.shape_ptr() + a.ndim());
            size_t bytes = a.nbytes();
            auto host = take(
                rt::HostBuffer::wrap(t, shape, const_cast<void *>(a.data())));
            if (host.byteSize() != bytes)
              raise("an array of " + std::to_string(bytes) +
                    " bytes does not hold " + std::string(rt::name(t)) +
                    " elements of " + "its shape");
            return Buffer{take(
                cu::DeviceBuffer::fromHost(host, device, &streamOf(device)))};
          },
          nb::arg("array"), nb::arg("dtype"), nb::arg("device") = 0,
          "A device copy of a C-contiguous host array (bf16 and fp8 as "
          "their uint16/uint8 bit patterns).")
      .def(
          "to_host",
          [](const Buffer &b) {
            rt::HostBuffer host =
                take(b.buffer.toHost(&streamOf(b.buffer.device())));
            auto *owned = new rt::HostBuffer(std::move(host));
            nb::capsule owner(owned, [](void *p) noexcept {
              delete static_cast<rt::HostBuffer *>(p);
            });
            std::vector<size_t> shape(owned->shape().begin(),
                                      owned->shape().end());
            nb::dlpack::dtype t =
                dlpackDType(owned->dtype(), /*bf16AsBits=*/false);
            if (owned->dtype() == DType::bf16)
              t = nb::dtype<uint16_t>();
            return nb::cast(nb::ndarray<nb::numpy>(
                owned->data(), shape.size(), shape.data(), owner, nullptr, t));
          },
          "A NumPy copy (waits for the queued work; bf16 and fp8 as bit "
          "patterns).")
      .def(
          "dlpack",
          [](nb::handle self) {
            const Buffer &b = nb::cast<const Buffer &>(self);
            // Consumers read on their own streams: finish ours first.
            check(streamOf(b.buffer.device()).synchronize());
            std::vector<size_t> shape(b.buffer.shape().begin(),
                                      b.buffer.shape().end());
            return CudaArray(
                reinterpret_cast<void *>(b.buffer.pointer()), shape.size(),
                shape.data(), self, nullptr,
                dlpackDType(b.buffer.dtype(), /*bf16AsBits=*/false),
                nb::device::cuda::value, b.buffer.device());
          },
          "A DLPack view of the buffer (it keeps the buffer alive).")
      .def_prop_ro("pointer",
                   [](const Buffer &b) { return b.buffer.pointer(); })
      .def_prop_ro("shape", [](const Buffer &b) { return b.buffer.shape(); })
      .def_prop_ro("dtype",
                   [](const Buffer &b) { return rt::name(b.buffer.dtype()); })
      .def_prop_ro("device", [](const Buffer &b) { return b.buffer.device(); })
      .def_prop_ro("nbytes",
                   [](const Buffer &b) { return b.buffer.byteSize(); })
      .def("__repr__", [](const Buffer &b) { return b.buffer.describe(); });

  m.def(
      "dlpack_info",
      [](CudaArray a) {
        std::vector<int64_t> shape(a.shape_ptr(), a.shape_ptr() + a.ndim());
        std::vector<int64_t> strides;
        for (size_t i = 0; i < a.ndim(); ++i)
          strides.push_back(a.stride(i));
        return std::make_tuple(reinterpret_cast<uintptr_t>(a.data()), shape,
                               strides, dlpackName(a.dtype()), a.device_id());
      },
      nb::arg("tensor"),
      "(pointer, shape, strides in elements, dtype, device) of a CUDA tensor "
      "that supports DLPack (a PyTorch CUDA tensor).");

  nb::class_<LoadedKernel>(m, "Kernel", "A kernel of a loaded module.")
      .def(
          "launch",
          [](const LoadedKernel &k, std::array<unsigned, 3> grid,
             std::array<unsigned, 3> block, unsigned sharedBytes,
             nb::bytes packed, std::vector<size_t> offsets) {
            const char *base = packed.c_str();
            std::vector<void *> args;
            args.reserve(offsets.size());
            for (size_t off : offsets) {
              if (off >= packed.size())
                raise("a kernel argument lies outside the packed arguments");
              args.push_back(const_cast<char *>(base + off));
            }
            cu::LaunchConfig config;
            config.grid = grid;
            config.block = block;
            // (The launch adds the kernel's own dynamic shared memory.)
            config.sharedBytes = sharedBytes;
            check(k.kernel->launch(config, streamOf(k.device), args));
          },
          nb::arg("grid"), nb::arg("block"), nb::arg("shared_bytes"),
          nb::arg("packed"), nb::arg("offsets"),
          "Queues the kernel; each offset points at one parameter's value in "
          "`packed`.")
      .def_prop_ro("name",
                   [](const LoadedKernel &k) { return k.kernel->name(); })
      .def_prop_ro("shared_bytes", [](const LoadedKernel &k) {
        return k.kernel->requiredDynamicSharedMemory();
      });

  nb::class_<LoadedModule>(m, "Module", "GPU code loaded on one device.")
      .def_static(
          "load_ptx",
          [](const std::string &ptx, int device) {
            auto module = take(cu::Module::loadPtx(ptx, device));
            return LoadedModule{std::make_unique<cu::Module>(std::move(module)),
                                device};
          },
          nb::arg("ptx"), nb::arg("device") = 0)
      .def(
          "kernel",
          [](const LoadedModule &mod, const std::string &name) {
            auto k = take(mod.module->kernel(name));
            return LoadedKernel{std::make_unique<cu::Kernel>(std::move(k)),
                                mod.device};
          },
          nb::arg("name"));

  nb::class_<Sequence>(m, "LaunchSequence",
                       "Kernel launches recorded once and queued again with "
                       "other buffers (tessera::runtime::cuda::"
                       "LaunchSequence).")
      .def(
          "__init__",
          [](Sequence *self, int device) {
            new (self) Sequence{std::make_unique<cu::LaunchSequence>(device)};
          },
          nb::arg("device") = 0)
      .def("add_argument",
           [](Sequence &s) { return s.sequence->addArgument(); })
      .def(
          "add_buffer",
          [](Sequence &s, const std::string &dtype, std::vector<int64_t> shape,
             bool zeroed) {
            return take(s.sequence->addBuffer(parseDType(dtype),
                                              std::move(shape), zeroed));
          },
          nb::arg("dtype"), nb::arg("shape"), nb::arg("zeroed") = false)
      .def(
          "mark_result",
          [](Sequence &s, int buffer) {
            check(s.sequence->markResult(buffer));
          },
          nb::arg("buffer"))
      .def(
          "add_launch",
          [](Sequence &s, const LoadedKernel &k, std::array<unsigned, 3> grid,
             std::array<unsigned, 3> block, unsigned sharedBytes,
             nb::bytes packed, std::vector<size_t> offsets,
             std::vector<std::tuple<size_t, int, int64_t>> patches) {
            cu::LaunchConfig config;
            config.grid = grid;
            config.block = block;
            config.sharedBytes = sharedBytes;
            std::vector<cu::LaunchSequence::Patch> ps;
            for (auto &[at, buffer, delta] : patches)
              ps.push_back({at, buffer, delta});
            std::vector<char> bytes(packed.c_str(),
                                    packed.c_str() + packed.size());
            check(s.sequence->addLaunch(*k.kernel, config, std::move(bytes),
                                        std::move(offsets), std::move(ps)));
          },
          nb::arg("kernel"), nb::arg("grid"), nb::arg("block"),
          nb::arg("shared_bytes"), nb::arg("packed"), nb::arg("offsets"),
          nb::arg("patches"),
          "Appends a launch; each patch (byte, buffer, delta) is an address "
          "in `packed` that run() sets to a buffer's address plus delta.")
      .def(
          "run",
          [](Sequence &s, std::vector<uint64_t> arguments) {
            auto buffers = take(
                s.sequence->run(streamOf(s.sequence->device()), arguments));
            std::vector<Buffer> out;
            for (auto &b : buffers)
              out.push_back(Buffer{std::move(b)});
            return out;
          },
          nb::arg("arguments"),
          "Queues the launches with these argument addresses on Tessera's "
          "stream; returns the result buffers.")
      .def_prop_ro("launch_count",
                   [](const Sequence &s) { return s.sequence->launchCount(); })
      .def_prop_ro("argument_count", [](const Sequence &s) {
        return s.sequence->argumentCount();
      });

  nb::class_<LoadedProgram>(
      m, "HostProgram",
      "A compiled GPU program (Module.compile_gpu's bytes, or a file of "
      "them) loaded on one device: run() queues its kernels on Tessera's "
      "stream.")
      .def_static(
          "load",
          [](nb::bytes data, int device, const std::string &what) {
            std::vector<char> bytes(data.c_str(), data.c_str() + data.size());
            auto image = take(rt::GpuProgramImage::decode(bytes, what));
            return LoadedProgram{
                take(cu::HostProgram::load(std::move(image), device))};
          },
          nb::arg("data"), nb::arg("device") = 0,
          nb::arg("what") = "<bytes>",
          "Checks and loads the bytes of a GPU program file (`what` names "
          "them in errors).")
      .def_static(
          "load_file",
          [](const std::string &path, int device) {
            auto image = take(rt::GpuProgramImage::load(path));
            return LoadedProgram{
                take(cu::HostProgram::load(std::move(image), device))};
          },
          nb::arg("path"), nb::arg("device") = 0)
      .def(
          "run",
          [](LoadedProgram &p, const std::vector<const Buffer *> &args) {
            std::vector<cu::DeviceBuffer> buffers;
            for (const Buffer *b : args) {
              if (!b)
                raise("HostProgram.run takes tessera._cuda.Buffer arguments");
              buffers.push_back(b->buffer);
            }
            auto results =
                take(p.program->run(streamOf(p.program->device()), buffers));
            std::vector<Buffer> out;
            for (auto &r : results)
              out.push_back(Buffer{std::move(r)});
            return out;
          },
          nb::arg("args"),
          "Queues a run on the arguments (Buffers of the program's dtypes "
          "and shapes); returns the result Buffers.")
      .def_prop_ro(
          "results",
          [](const LoadedProgram &p) {
            const rt::GpuProgramImage &img = p.program->image();
            std::vector<std::pair<std::string, std::vector<std::int64_t>>> out;
            for (const auto &r : img.results)
              out.emplace_back(
                  rt::name(img.storages[std::size_t(r.storage)].type),
                  r.shape);
            return out;
          },
          "(dtype name, shape) of each result a run returns, in order.")
      .def_prop_ro("name",
                   [](const LoadedProgram &p) { return p.program->image().name; })
      .def_prop_ro("launches",
                   [](const LoadedProgram &p) {
                     std::size_t n = 0;
                     for (const auto &s : p.program->image().steps)
                       n += s.kind == rt::GpuProgramImage::Step::Kind::Launch;
                     return n;
                   })
      .def_prop_ro(
          "kernels",
          [](const LoadedProgram &p) {
            std::vector<std::string> names;
            for (const auto &s : p.program->image().steps)
              if (s.kind == rt::GpuProgramImage::Step::Kind::Launch)
                names.push_back(s.kernel);
            return names;
          },
          "The kernel of each launch, in launch order.")
      .def_prop_ro("workspace_bytes",
                   [](const LoadedProgram &p) {
                     return p.program->image().workspaceBytes;
                   })
      .def_prop_ro(
          "graph_runs",
          [](const LoadedProgram &p) { return p.program->graphRuns(); },
          "Runs queued as one CUDA graph (every run after the first, unless "
          "graph_failure says why not).")
      .def_prop_ro(
          "graphs_built",
          [](const LoadedProgram &p) { return p.program->graphsBuilt(); },
          "CUDA graphs built so far: one per set of argument and result "
          "buffers, for the last few sets.")
      .def_prop_ro(
          "graph_rewrites",
          [](const LoadedProgram &p) { return p.program->graphRewrites(); },
          "Runs on a set of buffers no kept graph had, which rewrote the "
          "nodes of the least recently used one.")
      .def_prop_ro(
          "graph_failure",
          [](const LoadedProgram &p) -> std::optional<std::string> {
            const std::string &why = p.program->graphFailure();
            if (why.empty())
              return std::nullopt;
            return why;
          },
          "Why runs are launched step by step instead of as a graph (None "
          "while they are replayed).");

  nb::class_<TimingEvent>(m, "Event", "A point in Tessera's stream.")
      .def(
          "__init__",
          [](TimingEvent *self, int device) {
            new (self) TimingEvent{
                std::make_unique<cu::Event>(take(cu::Event::create(device)))};
          },
          nb::arg("device") = 0)
      .def(
          "record",
          [](TimingEvent &e, int device) {
            check(e.event->record(streamOf(device)));
          },
          nb::arg("device") = 0)
      .def("synchronize", [](TimingEvent &e) { check(e.event->synchronize()); })
      .def_static("elapsed_ms", [](const TimingEvent &a, const TimingEvent &b) {
        return take(cu::Event::elapsedMs(*a.event, *b.event));
      });
}
