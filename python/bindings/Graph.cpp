//===- Graph.cpp - Modules, traced tensors and transforms -----------------===//

#include "Bindings.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

namespace tessera::python {

using DimArg = std::variant<int64_t, std::string>;

Shape toShape(const std::vector<DimArg> &dims) {
  Shape shape;
  for (const DimArg &d : dims) {
    if (auto *size = std::get_if<int64_t>(&d))
      shape.push_back(Dim(*size));
    else
      shape.push_back(Dim(std::get<std::string>(d)));
  }
  return shape;
}

nb::tuple fromShape(const Shape &shape) {
  nb::list out;
  for (const Dim &d : shape) {
    if (d.isStatic())
      out.append(d.size());
    else
      out.append(d.symbol());
  }
  return nb::tuple(out);
}

/// The result of a trace step, or raises the Module's error.
template <typename T> static T checked(Module &m, Result<T> r) {
  if (!r) {
    m.takeError();
    raise(r.error());
  }
  return std::move(*r);
}

static const std::map<std::string, Stage> &stages() {
  static const std::map<std::string, Stage> names = {
      {"graph", Stage::Graph},
      {"graph_optimized", Stage::GraphOptimized},
      {"linalg", Stage::Linalg},
      {"scheduled", Stage::Scheduled},
      {"llvm", Stage::LLVM},
      {"gpu_groups", Stage::GPUGroups},
      {"gpu_kernels", Stage::GPUKernels},
      {"gpu_host", Stage::GPUHost},
      {"gpu_binary", Stage::GPUBinary}};
  return names;
}

void bindGraph(nb::module_ &m) {
  nb::class_<Tensor>(m, "Tensor", "A value of the function being traced.")
      .def_prop_ro("shape",
                   [](const Tensor &t) { return fromShape(t.shape()); })
      .def_prop_ro("dtype",
                   [](const Tensor &t) { return runtime::name(t.dtype()); })
      .def_prop_ro("rank", &Tensor::rank)
      .def_prop_ro("valid", &Tensor::valid)
      .def_prop_ro("is_key", &Tensor::isKey)
      .def_prop_ro("is_kv_cache", &Tensor::isKVCache)
      .def("__repr__", &Tensor::str);

  nb::class_<TensorSpec>(m, "TensorSpec")
      .def(
          "__init__",
          [](TensorSpec *self, const std::vector<DimArg> &shape,
             const std::string &dtype, const std::string &name, bool isKey,
             bool isKVCache) {
            new (self) TensorSpec{toShape(shape), parseDType(dtype), name,
                                  isKey, isKVCache};
          },
          nb::arg("shape"), nb::arg("dtype") = "f32", nb::arg("name") = "",
          nb::arg("is_key") = false, nb::arg("is_kv_cache") = false)
      .def_prop_ro("shape",
                   [](const TensorSpec &s) { return fromShape(s.shape); })
      .def_prop_ro("dtype",
                   [](const TensorSpec &s) { return runtime::name(s.dtype); })
      .def_ro("name", &TensorSpec::name)
      .def_ro("is_key", &TensorSpec::isKey);

  nb::class_<Function>(m, "Function", "A function of a Module.")
      .def_ro("name", &Function::name)
      .def_ro("inputs", &Function::inputs)
      .def_ro("outputs", &Function::outputs)
      .def_prop_ro("num_captures",
                   [](const Function &f) { return f.captures.size(); });

  nb::class_<Module>(m, "Module", "Graph IR functions being traced.")
      .def(nb::init<>())
      .def(
          "begin_trace",
          [](Module &self, const std::string &name,
             const std::vector<TensorSpec> &inputs, bool isPublic) {
            return checked(self, self.beginTrace(name, inputs, isPublic));
          },
          nb::arg("name"), nb::arg("inputs"), nb::arg("public") = true)
      .def(
          "end_trace",
          [](Module &self, const std::vector<Tensor> &results) {
            return checked(self, self.endTrace(results));
          },
          nb::arg("results"))
      .def("abort_trace", &Module::abortTrace)
      .def(
          "call",
          [](Module &self, const Function &fn,
             const std::vector<Tensor> &args) {
            auto out = self.call(fn, args, SourceLoc{});
            if (auto e = self.takeError())
              raise(*e);
            return out;
          },
          nb::arg("fn"), nb::arg("args"))
      .def(
          "outline",
          [](Module &self, const std::vector<Tensor> &results,
             const std::vector<Tensor> &inputs, const std::string &name) {
            return checked(self, self.outline(results, inputs, name));
          },
          nb::arg("results"), nb::arg("inputs"), nb::arg("name") = "slice")
      .def(
          "add_argument",
          [](Module &self, const TensorSpec &spec) {
            return checked(self, self.addArgument(spec));
          },
          nb::arg("spec"))
      .def(
          "solve",
          [](Module &self, const std::string &kind, const Function &body,
             const Tensor &init, const std::vector<Tensor> &params, double tol,
             int64_t maxIter) {
            Tensor x =
                kind == "fixed_point"
                    ? self.fixedPoint(body, init, params, tol, maxIter,
                                      SourceLoc{})
                    : self.solve(body, init, params, tol, maxIter, SourceLoc{});
            if (auto e = self.takeError())
              raise(*e);
            return x;
          },
          nb::arg("kind"), nb::arg("body"), nb::arg("init"), nb::arg("params"),
          nb::arg("tol"), nb::arg("max_iter"))
      .def(
          "cond",
          [](Module &self, const Tensor &pred, const Function &thenFn,
             const Function &elseFn) {
            auto out = self.cond(pred, thenFn, elseFn, SourceLoc{});
            if (auto e = self.takeError())
              raise(*e);
            return out;
          },
          nb::arg("pred"), nb::arg("then_fn"), nb::arg("else_fn"))
      .def(
          "while_loop",
          [](Module &self, const Function &condFn, const Function &bodyFn,
             const std::vector<Tensor> &inits, std::optional<int64_t> trips) {
            auto out =
                self.whileLoop(condFn, bodyFn, inits, trips, SourceLoc{});
            if (auto e = self.takeError())
              raise(*e);
            return out;
          },
          nb::arg("cond_fn"), nb::arg("body_fn"), nb::arg("inits"),
          nb::arg("trip_count") = nb::none())
      .def(
          "scan",
          [](Module &self, const Function &body,
             const std::vector<Tensor> &inits, const std::vector<Tensor> &xs,
             std::optional<int64_t> length, bool reverse) {
            auto out = self.scan(body, inits, xs, length, reverse, SourceLoc{});
            if (auto e = self.takeError())
              raise(*e);
            return out;
          },
          nb::arg("body"), nb::arg("inits"), nb::arg("xs"),
          nb::arg("length") = nb::none(), nb::arg("reverse") = false)
      .def(
          "vmap",
          [](Module &self, const Function &fn, const std::vector<Tensor> &args,
             const std::vector<bool> &mapped) {
            auto out = self.vmap(fn, args, mapped, SourceLoc{});
            if (auto e = self.takeError())
              raise(*e);
            return out;
          },
          nb::arg("fn"), nb::arg("args"), nb::arg("mapped"))
      .def(
          "checkpoint",
          [](Module &self, const Function &fn,
             const std::vector<Tensor> &args) {
            auto out = self.checkpoint(fn, args, SourceLoc{});
            if (auto e = self.takeError())
              raise(*e);
            return out;
          },
          nb::arg("fn"), nb::arg("args"))
      .def(
          "custom_vjp",
          [](Module &self, const Function &fn, const Function &fwd,
             const Function &bwd, const std::vector<Tensor> &args) {
            auto out = self.customVjp(fn, fwd, bwd, args, SourceLoc{});
            if (auto e = self.takeError())
              raise(*e);
            return out;
          },
          nb::arg("fn"), nb::arg("fwd"), nb::arg("bwd"), nb::arg("args"))
      .def(
          "custom_jvp",
          [](Module &self, const Function &fn, const Function &jvp,
             const std::vector<Tensor> &args) {
            auto out = self.customJvp(fn, jvp, args, SourceLoc{});
            if (auto e = self.takeError())
              raise(*e);
            return out;
          },
          nb::arg("fn"), nb::arg("jvp"), nb::arg("args"))
      .def(
          "derive",
          [](Module &self, const Function &fn, const std::string &kind,
             const std::vector<int> &wrt, bool isPublic) {
            Result<Function> r = Error{"unknown transform '" + kind + "'"};
            if (kind == "grad")
              r = self.grad(fn, wrt, isPublic);
            else if (kind == "vjp")
              r = self.vjp(fn, wrt, isPublic);
            else if (kind == "jvp")
              r = self.jvp(fn, wrt, isPublic);
            else if (kind == "hvp")
              r = self.hvp(fn, wrt, isPublic);
            return checked(self, std::move(r));
          },
          nb::arg("fn"), nb::arg("kind"), nb::arg("wrt"),
          nb::arg("public") = false)
      .def("make_public",
           [](Module &self, const std::string &name) {
             if (Status s = self.makePublic(name); !s)
               raise(s.error());
           })
      .def(
          "set_location",
          [](Module &self, const std::string &file, int line, int column) {
            self.setLocation(file, line, column);
          },
          nb::arg("file"), nb::arg("line"), nb::arg("column") = 0)
      .def("take_error",
           [](Module &self) -> std::optional<std::string> {
             if (auto e = self.takeError())
               return e->message;
             return std::nullopt;
           })
      .def_prop_ro("tracing", &Module::tracing)
      .def("__str__", &Module::str)
      .def(
          "lower",
          [](const Module &self, const std::string &stage) {
            auto it = stages().find(stage);
            if (it == stages().end())
              raise(Error{"unknown stage '" + stage +
                          "' (expected graph, graph_optimized, linalg, "
                          "scheduled, llvm, gpu_groups, gpu_kernels, gpu_host or "
                          "gpu_binary)"});
            return take(self.lower(it->second));
          },
          nb::arg("stage"))
      .def(
          "list_graph",
          [](const Module &self, const std::string &fnName, bool gpuAttention) {
            GraphListing g = take(self.listGraph(fnName, gpuAttention));
            auto attr = [](const GraphAttr &a) -> nb::object {
              switch (a.kind) {
              case GraphAttr::Kind::Int:
                return nb::int_(a.i);
              case GraphAttr::Kind::Float:
                return nb::float_(a.f);
              case GraphAttr::Kind::Bool:
                return nb::bool_(a.i != 0);
              case GraphAttr::Kind::String:
                return nb::str(a.s.c_str());
              case GraphAttr::Kind::Ints:
                return nb::tuple(nb::cast(a.ints));
              case GraphAttr::Kind::Floats:
                return nb::tuple(nb::cast(a.floats));
              case GraphAttr::Kind::Dense: {
                nb::dict d;
                d["dtype"] = tessera::runtime::name(a.dtype);
                d["shape"] = nb::tuple(nb::cast(a.shape));
                d["splat"] = a.splat;
                d["data"] = nb::bytes(a.s.data(), a.s.size());
                return d;
              }
              case GraphAttr::Kind::Other:
                break;
              }
              nb::dict d;
              d["text"] = a.s;
              return d;
            };
            nb::list ops;
            for (const GraphOp &op : g.ops) {
              nb::dict attrs;
              for (const GraphAttr &a : op.attrs)
                attrs[a.name.c_str()] = attr(a);
              nb::dict d;
              d["op"] = op.name;
              d["operands"] = nb::tuple(nb::cast(op.operands));
              d["results"] = nb::tuple(nb::cast(op.results));
              d["attrs"] = attrs;
              d["loc"] = op.location;
              d["regions"] = op.regions;
              ops.append(d);
            }
            nb::list shapes, dtypes;
            for (size_t i = 0; i < g.shapes.size(); ++i) {
              shapes.append(nb::tuple(nb::cast(g.shapes[i])));
              dtypes.append(g.isKey[i] ? "key"
                                       : tessera::runtime::name(g.dtypes[i]));
            }
            nb::dict out;
            out["name"] = g.name;
            out["arguments"] = nb::tuple(nb::cast(g.arguments));
            out["results"] = nb::tuple(nb::cast(g.results));
            out["ops"] = ops;
            out["shapes"] = shapes;
            out["dtypes"] = dtypes;
            return out;
          },
          nb::arg("name"), nb::arg("gpu_attention") = false,
          "The public function `name` after shape inference, autodiff and "
          "decomposition, as plain data: {name, arguments, results, ops, "
          "shapes, dtypes}; values are numbered, symbolic dims are -1. "
          "gpu_attention keeps the attention ops the GPU runs as flash "
          "attention.")
      .def(
          "compile",
          [](const Module &self, const std::string &cacheDirectory) {
            CompileOptions options;
            options.cacheDirectory = cacheDirectory;
            Result<std::shared_ptr<runtime::Executable>> r = [&] {
              nb::gil_scoped_release release;
              return self.compile(options);
            }();
            return take(std::move(r));
          },
          nb::arg("cache_dir") = "")
      .def(
          "compile_gpu",
          [](const Module &self, const std::string &entry,
             const std::string &chip, int64_t multiprocessors,
             const std::string &cacheDirectory, int64_t variant,
             const std::string &tuning, int autotuneDevice) {
            GPUCompileOptions options;
            options.entry = entry;
            options.chip = chip;
            options.multiprocessors = multiprocessors;
            options.cacheDirectory = cacheDirectory;
            options.variant = variant;
            options.tuningFile = tuning;
            options.autotuneDevice = autotuneDevice;
            Result<runtime::GpuProgramImage> r = [&] {
              nb::gil_scoped_release release;
              return self.compileGPU(options);
            }();
            std::vector<char> bytes = take(std::move(r)).encode();
            return nb::bytes(bytes.data(), bytes.size());
          },
          nb::arg("entry") = "", nb::arg("chip") = "sm_90a",
          nb::arg("multiprocessors") = 132, nb::arg("cache_dir") = "",
          nb::arg("variant") = -1, nb::arg("tuning") = "",
          nb::arg("autotune_device") = -1,
          "Compiles a public function for NVIDIA GPUs into a GPU program "
          "file's bytes (the host program and its kernels' PTX), which "
          "tessera._cuda.HostProgram runs without the compiler; with "
          "cache_dir, a program compiled earlier for the same IR, entry, "
          "chip, SM count and compiler build is read from there. variant "
          "builds each generated product with that candidate of its "
          "autotune space; tuning names a file of tuned schedules, which "
          "autotune_device (a CUDA device index) first completes by timing "
          "the products missing from it there.")
      .def_static("default_cache_dir", &Module::defaultCacheDirectory);
}

} // namespace tessera::python
