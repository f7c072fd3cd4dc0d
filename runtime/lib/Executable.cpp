//===- Executable.cpp - Compiled code loaded into the process -------------===//

#include "tessera/Runtime/Executable.h"

#include "tessera/Runtime/Allocator.h"
#include "tessera/Runtime/Device.h"
#include "tessera/Runtime/Errors.h"

#include "DimEval.h"
#include "Internal.h"

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <mutex>
#include <set>
#include <unistd.h>

using namespace tessera::runtime;
using detail::DimEval;

//===----------------------------------------------------------------------===//
// Executable
//===----------------------------------------------------------------------===//

/// Checks that `path` is a whole shared library of this machine before
/// dlopen maps it: dlopen trusts the headers it reads, and a truncated file
/// whose segments extend past its end crashes the process when they are
/// touched. Returns why not.
static std::optional<std::string> checkLibraryFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return std::string("it cannot be opened");
  auto size = std::uint64_t(in.tellg());
  in.seekg(0);
  Elf64_Ehdr eh;
  if (size < sizeof eh) {
    if (size >= 4) {
      char magic[4];
      in.read(magic, 4);
      if (std::memcmp(magic, ELFMAG, SELFMAG) == 0)
        return "it is truncated: " + std::to_string(size) +
               " bytes, fewer than an ELF header";
    }
    return std::string("it is not a shared library (no ELF header)");
  }
  in.read(reinterpret_cast<char *>(&eh), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return std::string("it is not a shared library (no ELF header)");
#if defined(__x86_64__)
  constexpr unsigned machine = EM_X86_64;
#elif defined(__aarch64__)
  constexpr unsigned machine = EM_AARCH64;
#else
  constexpr unsigned machine = 0;
#endif
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_DYN ||
      (machine && eh.e_machine != machine))
    return std::string("it is not a 64-bit shared library for this machine");
  // Everything the headers place in the file must lie inside it.
  std::uint64_t needed = sizeof eh;
  auto table = [&](std::uint64_t offset, std::uint64_t count,
                   std::uint64_t entry) {
    if (offset && count)
      needed = std::max(needed, offset + count * entry);
  };
  table(eh.e_phoff, eh.e_phnum, eh.e_phentsize);
  table(eh.e_shoff, eh.e_shnum, eh.e_shentsize);
  if (needed <= size && eh.e_phoff && eh.e_phentsize == sizeof(Elf64_Phdr)) {
    in.seekg(std::streamoff(eh.e_phoff));
    for (unsigned i = 0; i < eh.e_phnum && in; ++i) {
      Elf64_Phdr ph;
      in.read(reinterpret_cast<char *>(&ph), sizeof ph);
      if (in && ph.p_filesz)
        needed = std::max<std::uint64_t>(needed, ph.p_offset + ph.p_filesz);
    }
  }
  if (needed <= size && eh.e_shoff && eh.e_shentsize == sizeof(Elf64_Shdr)) {
    in.seekg(std::streamoff(eh.e_shoff));
    for (unsigned i = 0; i < eh.e_shnum && in; ++i) {
      Elf64_Shdr sh;
      in.read(reinterpret_cast<char *>(&sh), sizeof sh);
      if (in && sh.sh_type != SHT_NOBITS && sh.sh_size)
        needed = std::max<std::uint64_t>(needed, sh.sh_offset + sh.sh_size);
    }
  }
  if (needed > size)
    return "it is truncated: its ELF headers place " +
           std::to_string(needed) + " bytes in the file, which has " +
           std::to_string(size);
  return std::nullopt;
}

Result<std::shared_ptr<Executable>> Executable::load(const std::string &path) {
  if (access(path.c_str(), F_OK) == 0)
    if (std::optional<std::string> why = checkLibraryFile(path))
      return Error{"cannot load compiled code from " + path + ": " + *why};
  // dlopen looks a name without a slash up on the library search path
  // only: a file of that name in the current directory comes first.
  std::string file = path;
  if (path.find('/') == std::string::npos && access(path.c_str(), F_OK) == 0)
    file = "./" + path;
  // RTLD_LOCAL: two executables may define functions of the same name.
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return Error{"cannot load compiled code from " + path + ": " +
                 (why ? why : "unknown error")};
  }
  auto resolve = [handle](const std::string &symbol) {
    dlerror();
    return dlsym(handle, symbol.c_str());
  };
  return finish(std::shared_ptr<Executable>(
      new Executable(handle, resolve, nullptr, path)));
}

Result<std::shared_ptr<Executable>>
Executable::fromResolver(SymbolResolver resolve, std::shared_ptr<void> owner,
                         std::string description) {
  return finish(std::shared_ptr<Executable>(new Executable(
      nullptr, std::move(resolve), std::move(owner), std::move(description))));
}

Result<std::shared_ptr<Executable>>
Executable::finish(std::shared_ptr<Executable> executable) {
  auto *text = static_cast<const char *>(executable->resolve(kManifestSymbol));
  if (!text)
    return Error{executable->description +
                 " is not a Tessera library: it has no manifest"};
  auto manifest = parseManifest(text);
  if (!manifest)
    return Error{executable->description + ": " + manifest.error().message};
  executable->manifest = std::move(*manifest);
  return executable;
}

Executable::~Executable() {
  if (handle)
    dlclose(handle);
}

Result<Executable::PackedFunction>
Executable::lookup(const std::string &name) const {
  if (gpu || !resolve)
    return Error{description + ": @" + name + " runs on cuda:" +
                 std::to_string(cudaDevice()) +
                 "; it has no packed host entry (call it through function())"};
  // The compiler emits a packed wrapper `_mlir__mlir_ciface_tessera.<name>`
  // for the C interface of every public function.
  void *address =
      resolve("_mlir__mlir_ciface_" + std::string(compiledSymbolPrefix) + name);
  if (!address)
    return Error{description + " has no compiled function @" + name};
  return reinterpret_cast<PackedFunction>(address);
}

//===----------------------------------------------------------------------===//
// Call plans: a signature parsed once for argument checking
//===----------------------------------------------------------------------===//

namespace tessera::runtime::detail {
/// The GPU programs of an executable's functions, by function and by the
/// sizes of its symbolic dims, loaded on one device; runs are serialized
/// (a program's temporaries live in its one workspace) and queued on one
/// stream.
struct GpuFunctions {
  int device = 0;
  std::optional<cuda::Stream> stream;
  Executable::GpuCompiler compile;
  std::string description;
  std::mutex mutex;
  std::map<std::string, std::map<std::map<std::string, int64_t>,
                                 std::shared_ptr<cuda::HostProgram>>>
      programs;
  /// Sizes whose compile failed, with why (not compiled again).
  std::map<std::string, std::map<std::map<std::string, int64_t>, Error>>
      failed;

  /// Work queued on the stream may still use the programs' kernels and
  /// workspaces: it finishes before they are released.
  ~GpuFunctions() {
    if (stream)
      (void)stream->synchronize();
  }

  /// The program of `sig` for `sizes` (compiled on first use); the caller
  /// holds `mutex`.
  Result<std::shared_ptr<cuda::HostProgram>>
  program(const FunctionSignature &sig,
          const std::map<std::string, int64_t> &sizes);
};

namespace {
std::string describeSizes(const std::map<std::string, int64_t> &sizes) {
  if (sizes.empty())
    return "no symbolic dims";
  std::string out;
  for (const auto &[name, size] : sizes)
    out += (out.empty() ? "" : ", ") + name + " = " + std::to_string(size);
  return out;
}
} // namespace

Result<std::shared_ptr<cuda::HostProgram>>
GpuFunctions::program(const FunctionSignature &sig,
                      const std::map<std::string, int64_t> &sizes) {
  auto &bySizes = programs[sig.name];
  auto it = bySizes.find(sizes);
  if (it != bySizes.end())
    return it->second;
  auto known = failed[sig.name].find(sizes);
  if (known != failed[sig.name].end())
    return known->second;
  if (!compile) {
    std::string have;
    for (const auto &entry : bySizes)
      have += (have.empty() ? "" : "; ") + describeSizes(entry.first);
    return Error{description + ": @" + sig.name + " has no GPU program for " +
                 describeSizes(sizes) + " (it has programs for " +
                 (have.empty() ? std::string("none") : have) +
                 "); compile one for these sizes"};
  }
  auto image = compile(sig.name, sizes);
  if (!image) {
    failed[sig.name].emplace(sizes, image.error());
    return image.error();
  }
  auto loaded = cuda::HostProgram::load(std::move(*image), device);
  if (!loaded) {
    failed[sig.name].emplace(sizes, loaded.error());
    return loaded.error();
  }
  bySizes[sizes] = *loaded;
  return *loaded;
}

struct CallPlan {
  FunctionSignature signature;
  Executable::PackedFunction entry;
  /// Per argument, per dim: its expression.
  std::vector<std::vector<DimEval>> argumentDims;
  /// Per argument, per dim, what checking it takes: a fixed size, the
  /// symbol `symbols[value]`, evaluating the expression, or nothing ('?').
  struct DimCheck {
    enum Kind { kFixed, kSymbol, kExpression, kAnySize } kind;
    int64_t value;
  };
  std::vector<std::vector<DimCheck>> argumentChecks;
  std::vector<std::string> symbols;
  /// Words of the result descriptors (allocated and aligned pointers,
  /// offset, sizes, strides per result).
  size_t resultWords = 0;
  /// Whether any argument is state (written in place by the call).
  bool hasState = false;
  /// The programs of a GPU function (null on the CPU).
  std::shared_ptr<GpuFunctions> gpu;
};
} // namespace tessera::runtime::detail

using detail::CallPlan;

Result<Function> Executable::function(const std::string &name) const {
  const FunctionSignature *signature = nullptr;
  for (const FunctionSignature &s : manifest)
    if (s.name == name)
      signature = &s;
  if (!signature) {
    std::string names;
    for (const FunctionSignature &s : manifest)
      names += (names.empty() ? "@" : ", @") + s.name;
    return Error{description + " has no function @" + name +
                 (names.empty() ? "" : " (it has " + names + ")")};
  }
  auto plan = std::make_shared<CallPlan>();
  plan->signature = *signature;
  plan->gpu = gpu;
  if (!gpu) {
    auto entry = lookup(name);
    if (!entry)
      return entry.error();
    plan->entry = *entry;
  }
  for (const TensorSpec &spec : signature->arguments)
    plan->hasState |= spec.isState;
  for (const TensorSpec &a : signature->arguments) {
    std::vector<DimEval> dims;
    for (const std::string &d : a.dims) {
      std::string error;
      auto e = DimEval::parse(d, error);
      if (!e)
        return Error{description + ": bad dim '" + d + "' in the signature " +
                     signature->describe() + ": " + error};
      dims.push_back(*e);
    }
    std::vector<CallPlan::DimCheck> checks;
    for (const DimEval &e : dims) {
      if (auto c = e.getConstant()) {
        checks.push_back({CallPlan::DimCheck::kFixed, *c});
      } else if (auto name = e.getSymbol()) {
        auto &symbols = plan->symbols;
        size_t at =
            std::find(symbols.begin(), symbols.end(), *name) - symbols.begin();
        if (at == symbols.size())
          symbols.push_back(*name);
        checks.push_back({CallPlan::DimCheck::kSymbol, int64_t(at)});
      } else {
        checks.push_back({e.isUnknown() ? CallPlan::DimCheck::kAnySize
                                        : CallPlan::DimCheck::kExpression,
                          0});
      }
    }
    plan->argumentDims.push_back(std::move(dims));
    plan->argumentChecks.push_back(std::move(checks));
  }
  for (const TensorSpec &r : signature->results)
    plan->resultWords += 3 + 2 * r.dims.size();
  return Function(shared_from_this(), std::move(plan));
}

//===----------------------------------------------------------------------===//
// Function
//===----------------------------------------------------------------------===//

const FunctionSignature &Function::signature() const { return plan->signature; }

namespace {
/// For `e` with exactly one symbol S not in `env`, and linear in it
/// (c*S + d, c != 0): (S, c, d).
std::optional<std::tuple<std::string, int64_t, int64_t>>
linearInOneSymbol(const DimEval &e, const std::map<std::string, int64_t> &env) {
  std::optional<std::string> symbol;
  for (const std::string &s : e.symbols())
    if (!env.count(s)) {
      if (symbol)
        return std::nullopt;
      symbol = s;
    }
  if (!symbol)
    return std::nullopt;
  std::map<std::string, int64_t> at = env;
  auto f = [&](int64_t v) {
    at[*symbol] = v;
    return e.evaluate(at);
  };
  auto f1 = f(1), f2 = f(2), f3 = f(3), f5 = f(5);
  if (!f1 || !f2 || !f3 || !f5)
    return std::nullopt;
  int64_t c = *f2 - *f1, d = *f1 - c;
  if (c == 0 || *f3 != 3 * c + d || *f5 != 5 * c + d)
    return std::nullopt;
  return std::make_tuple(*symbol, c, d);
}

std::string where(size_t argument, size_t dim) {
  return "argument " + std::to_string(argument) + " dim " + std::to_string(dim);
}

/// Checks `arguments` against `plan`; on success fills `sizes` (if given)
/// with the symbols' sizes. The common case (fixed dims and plain symbols)
/// builds no strings: messages are made only for errors.
const void *address(const HostBuffer &b) { return b.data(); }
const void *address(const cuda::DeviceBuffer &b) {
  return reinterpret_cast<const void *>(std::uintptr_t(b.pointer()));
}

template <typename Buffer>
std::optional<Error> checkArguments(const CallPlan &plan,
                                    const std::vector<Buffer> &arguments,
                                    std::map<std::string, int64_t> *sizes) {
  const FunctionSignature &sig = plan.signature;
  auto fn = [&] { return "@" + sig.name; };
  if (arguments.size() != sig.arguments.size())
    return Error{fn() + " takes " + std::to_string(sig.arguments.size()) +
                 " argument" + (sig.arguments.size() == 1 ? "" : "s") + " " +
                 sig.describe() + " but " + std::to_string(arguments.size()) +
                 (arguments.size() == 1 ? " was" : " were") + " given"};
  // Per symbol of the plan: its size and the (argument, dim) that bound it.
  struct Bound {
    int64_t value = -1;
    size_t argument = 0, dim = 0;
  };
  std::vector<Bound> bound(plan.symbols.size());
  struct Pending {
    size_t argument, dim;
    int64_t actual;
  };
  std::vector<Pending> pending;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const TensorSpec &spec = sig.arguments[i];
    const Buffer &a = arguments[i];
    auto expected = [&] {
      return spec.isKey ? std::string("a key (i32[2])") : spec.describe();
    };
    if (a.dtype() != spec.dtype || a.shape().size() != spec.dims.size())
      return Error{fn() + " argument " + std::to_string(i) + " must be " +
                   expected() + " but is " + a.describe()};
    if (a.numElements() && !address(a))
      return Error{fn() + " argument " + std::to_string(i) + " (" +
                   a.describe() + ") has no data"};
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      const CallPlan::DimCheck &check = plan.argumentChecks[i][d];
      int64_t actual = a.shape()[d];
      switch (check.kind) {
      case CallPlan::DimCheck::kFixed:
        if (check.value != actual)
          return Error{fn() + " " + where(i, d) + " must be " +
                       std::to_string(check.value) + " but is " +
                       std::to_string(actual) + " (expected " + expected() +
                       ", found " + a.describe() + ")"};
        break;
      case CallPlan::DimCheck::kSymbol: {
        const std::string &name = plan.symbols[check.value];
        Bound &b = bound[check.value];
        if (b.value < 0)
          b = Bound{actual, i, d};
        else if (b.value != actual)
          return Error{fn() + " " + where(i, d) + " is " + name + " = " +
                       std::to_string(actual) + ", but " +
                       where(b.argument, b.dim) + " bound " + name + " = " +
                       std::to_string(b.value)};
        break;
      }
      case CallPlan::DimCheck::kExpression:
        pending.push_back({i, d, actual});
        break;
      case CallPlan::DimCheck::kAnySize:
        break;
      }
    }
  }
  // State is written in place: two state arguments in one buffer (keys and
  // values of a cache passed as the same array) would overwrite each other.
  for (size_t i = 0; plan.hasState && i < arguments.size(); ++i)
    for (size_t j = i + 1; j < arguments.size(); ++j)
      if ((sig.arguments[i].isState || sig.arguments[j].isState) &&
          arguments[i].numElements() && arguments[j].numElements()) {
        auto *a = static_cast<const char *>(address(arguments[i]));
        auto *b = static_cast<const char *>(address(arguments[j]));
        if (a < b + arguments[j].byteSize() && b < a + arguments[i].byteSize())
          return Error{fn() + " arguments " + std::to_string(i) + " and " +
                       std::to_string(j) +
                       " share memory, but the call writes state arguments "
                       "in place: pass separate buffers"};
      }
  if (pending.empty() && !sizes)
    return std::nullopt;
  // By name from here on: expressions may name symbols that no argument
  // binds directly.
  std::map<std::string, int64_t> values;
  std::map<std::string, std::string> from;
  for (size_t s = 0; s < bound.size(); ++s)
    if (bound[s].value >= 0) {
      values[plan.symbols[s]] = bound[s].value;
      from[plan.symbols[s]] = where(bound[s].argument, bound[s].dim);
    }
  // Dims that are expressions: check those whose symbols are bound, and
  // solve c*S + d = size for a symbol S bound nowhere else.
  for (bool progress = true; progress && !pending.empty();) {
    progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      const DimEval &e = plan.argumentDims[it->argument][it->dim];
      auto at = [&] { return fn() + " " + where(it->argument, it->dim); };
      if (auto v = e.evaluate(values)) {
        if (*v != it->actual) {
          std::string with;
          for (const std::string &s : e.symbols())
            with += (with.empty() ? "" : ", ") + s + " = " +
                    std::to_string(values[s]) + " from " + from[s];
          return Error{at() + " must be " + e.str() + " = " +
                       std::to_string(*v) + " (" + with + ") but is " +
                       std::to_string(it->actual)};
        }
        it = pending.erase(it);
        progress = true;
        continue;
      }
      if (auto linear = linearInOneSymbol(e, values)) {
        auto [name, coeff, constant] = *linear;
        int64_t rest = it->actual - constant;
        if (rest % coeff != 0 || rest / coeff < 1)
          return Error{at() + " must be " + e.str() + " for some " + name +
                       " >= 1, but is " + std::to_string(it->actual)};
        values[name] = rest / coeff;
        from[name] = where(it->argument, it->dim);
        progress = true;
        continue; // checked on the next pass
      }
      ++it;
    }
  }
  if (sizes)
    *sizes = std::move(values);
  return std::nullopt;
}
} // namespace

namespace {
/// Runs a GPU function on device buffers; the caller holds gpu.mutex.
Result<std::vector<cuda::DeviceBuffer>>
runGpu(const CallPlan &plan, const std::vector<cuda::DeviceBuffer> &arguments,
       const std::map<std::string, int64_t> &sizes) {
  detail::GpuFunctions &gpu = *plan.gpu;
  auto program = gpu.program(plan.signature, sizes);
  if (!program)
    return program.error();
  auto out = (*program)->run(*gpu.stream, arguments);
  if (!out)
    return Error{"@" + plan.signature.name + ": " + out.error().message};
  return out;
}

Result<std::vector<HostBuffer>>
callGpuWithHostBuffers(const CallPlan &plan,
                       const std::vector<HostBuffer> &arguments) {
  std::map<std::string, int64_t> sizes;
  if (std::optional<Error> error = checkArguments(plan, arguments, &sizes))
    return *error;
  detail::GpuFunctions &gpu = *plan.gpu;
  std::lock_guard<std::mutex> lock(gpu.mutex);
  std::vector<cuda::DeviceBuffer> onDevice;
  for (const HostBuffer &a : arguments) {
    auto d = cuda::DeviceBuffer::fromHost(a, gpu.device, &*gpu.stream);
    if (!d)
      return d.error();
    onDevice.push_back(std::move(*d));
  }
  auto results = runGpu(plan, onDevice, sizes);
  if (!results)
    return results.error();
  std::vector<HostBuffer> out;
  for (const cuda::DeviceBuffer &r : *results) {
    auto h = r.toHost(&*gpu.stream);
    if (!h)
      return h.error();
    out.push_back(std::move(*h));
  }
  return out;
}
} // namespace

Result<std::vector<cuda::DeviceBuffer>>
Function::call(const std::vector<cuda::DeviceBuffer> &arguments) const {
  if (!plan->gpu)
    return Error{"@" + plan->signature.name + " of " + executable->path() +
                 " runs on the CPU: call it with host buffers"};
  std::map<std::string, int64_t> sizes;
  if (std::optional<Error> error = checkArguments(*plan, arguments, &sizes))
    return *error;
  for (size_t i = 0; i < arguments.size(); ++i)
    if (arguments[i].device() != plan->gpu->device)
      return Error{"@" + plan->signature.name + " argument " +
                   std::to_string(i) + " is " + arguments[i].describe() +
                   ", but the function runs on cuda:" +
                   std::to_string(plan->gpu->device)};
  std::lock_guard<std::mutex> lock(plan->gpu->mutex);
  return runGpu(*plan, arguments, sizes);
}

Result<std::map<std::string, int64_t>>
Function::bind(const std::vector<HostBuffer> &arguments) const {
  std::map<std::string, int64_t> sizes;
  if (std::optional<Error> error = checkArguments(*plan, arguments, &sizes))
    return *error;
  return sizes;
}

namespace {
/// One memref descriptor of a contiguous row-major buffer.
void appendDescriptor(std::vector<int64_t> &words, const HostBuffer &b) {
  auto base = reinterpret_cast<int64_t>(b.data());
  words.push_back(base);
  words.push_back(base);
  words.push_back(0);
  words.insert(words.end(), b.shape().begin(), b.shape().end());
  size_t rank = b.shape().size();
  words.resize(words.size() + rank);
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    words[words.size() - rank + d] = stride;
    stride *= b.shape()[d];
  }
}

} // namespace

Result<std::vector<HostBuffer>>
Function::call(const std::vector<HostBuffer> &arguments) const {
  if (plan->gpu)
    return callGpuWithHostBuffers(*plan, arguments);
  if (std::optional<Error> error = checkArguments(*plan, arguments, nullptr))
    return *error;
  const FunctionSignature &sig = plan->signature;

  std::vector<std::vector<int64_t>> descriptors(arguments.size());
  for (size_t i = 0; i < arguments.size(); ++i)
    appendDescriptor(descriptors[i], arguments[i]);
  std::vector<int64_t> results(plan->resultWords, 0);
  std::vector<void *> descriptorPointers;
  for (auto &d : descriptors)
    descriptorPointers.push_back(d.data());
  void *resultPointer = results.data();
  std::vector<void *> packed;
  if (!sig.results.empty())
    packed.push_back(&resultPointer);
  for (void *&p : descriptorPointers)
    packed.push_back(&p);

  struct Context {
    Executable::PackedFunction entry;
    void **packed;
  } context{plan->entry, packed.data()};
  detail::applyThreadCount();
  if (auto error = callCatchingErrors(
          [](void *c) {
            auto *ctx = static_cast<Context *>(c);
            ctx->entry(ctx->packed);
          },
          &context))
    return Error{"@" + sig.name + ": " + *error};

  // Results the compiled code allocated (through the runtime's allocator)
  // become the buffers' storage; anything else (a constant, a strided view,
  // a second result of the same memory) is copied. Arguments are never
  // taken over.
  CachingAllocator &allocator = CachingAllocator::global();
  std::set<const void *> taken;
  for (const HostBuffer &a : arguments)
    taken.insert(a.data());
  std::vector<HostBuffer> out;
  std::vector<void *> toFree;
  const int64_t *w = results.data();
  for (const TensorSpec &spec : sig.results) {
    size_t rank = spec.dims.size();
    auto *allocated = reinterpret_cast<void *>(w[0]);
    auto *aligned = reinterpret_cast<char *>(w[1]);
    int64_t offset = w[2];
    const int64_t *sizes = w + 3, *strides = w + 3 + rank;
    std::vector<int64_t> shape(sizes, sizes + rank);
    size_t bytes = byteSize(spec.dtype);
    bool contiguous = true;
    for (int64_t d = int64_t(rank) - 1, s = 1; d >= 0; --d) {
      if (sizes[d] != 1 && strides[d] != s)
        contiguous = false;
      s *= sizes[d];
    }
    bool ours =
        allocated && !taken.count(allocated) && allocator.owns(allocated);
    if (ours && contiguous) {
      taken.insert(allocated);
      out.push_back(HostBuffer(spec.dtype, std::move(shape),
                               detail::adoptBlock(allocated),
                               aligned + offset * bytes));
    } else {
      auto copy = HostBuffer::allocate(spec.dtype, shape);
      if (!copy)
        return copy.error();
      std::vector<int64_t> dense(rank);
      for (int64_t d = int64_t(rank) - 1, step = 1; d >= 0; --d) {
        dense[d] = step;
        step *= sizes[d];
      }
      detail::copyStrided(bytes, rank, sizes, aligned + offset * bytes, strides,
                          static_cast<char *>(copy->data()), dense.data());
      out.push_back(std::move(*copy));
      if (ours)
        toFree.push_back(allocated);
    }
    w += 3 + 2 * rank;
  }
  for (void *p : toFree)
    if (taken.insert(p).second)
      allocator.deallocate(p);
  return out;
}

//===----------------------------------------------------------------------===//
// GPU executables
//===----------------------------------------------------------------------===//

Result<std::shared_ptr<Executable>>
Executable::forCuda(int device, std::vector<FunctionSignature> signatures,
                    std::vector<GpuProgramImage> programs, GpuCompiler compile,
                    std::shared_ptr<void> owner, std::string description) {
  if (!cuda::available())
    return Error{description + ": cannot run on cuda:" +
                 std::to_string(device) + ": " + cuda::unavailableReason()};
  if (device < 0 || device >= cuda::deviceCount())
    return Error{description + ": there is no cuda:" + std::to_string(device) +
                 " (this machine has " + std::to_string(cuda::deviceCount()) +
                 " GPU" + (cuda::deviceCount() == 1 ? "" : "s") + ")"};
  auto gpu = std::make_shared<detail::GpuFunctions>();
  gpu->device = device;
  auto stream = cuda::Stream::create(device);
  if (!stream)
    return stream.error();
  gpu->stream.emplace(std::move(*stream));
  gpu->compile = std::move(compile);
  gpu->description = description;
  // Programs without a signature of their own name one of `signatures`;
  // a signature missing from `signatures` comes from its programs.
  for (GpuProgramImage &image : programs) {
    if (image.signature.name.empty())
      return Error{description + ": the GPU program of @" + image.name +
                   " does not record its signature (compiled by an older "
                   "Tessera); compile it again"};
    auto same = std::find_if(
        signatures.begin(), signatures.end(),
        [&](const FunctionSignature &s) { return s.name == image.name; });
    if (same == signatures.end())
      signatures.push_back(image.signature);
    else if (same->describe() != image.signature.describe())
      return Error{description + ": GPU programs of @" + image.name +
                   " disagree on its signature: " + same->describe() +
                   " and " + image.signature.describe()};
    auto &slot = gpu->programs[image.name][image.dims];
    if (slot)
      return Error{description + ": two GPU programs of @" + image.name +
                   " are compiled for " + detail::describeSizes(image.dims)};
    auto loaded = cuda::HostProgram::load(std::move(image), device);
    if (!loaded)
      return loaded.error();
    slot = *loaded;
  }
  std::shared_ptr<Executable> executable(
      new Executable(nullptr, nullptr, std::move(owner),
                     std::move(description)));
  executable->manifest = std::move(signatures);
  executable->gpu = std::move(gpu);
  return executable;
}

Result<std::shared_ptr<Executable>>
Executable::loadGpuPrograms(const std::vector<std::string> &paths,
                            int device) {
  if (paths.empty())
    return Error{"no GPU program files to load"};
  std::vector<GpuProgramImage> all;
  for (const std::string &path : paths) {
    auto bundle = GpuBundle::load(path);
    if (!bundle)
      return bundle.error();
    for (GpuProgramImage &image : bundle->programs)
      all.push_back(std::move(image));
  }
  if (!cuda::available())
    return Error{paths[0] + ": cannot run on cuda:" + std::to_string(device) +
                 ": " + cuda::unavailableReason()};
  auto info = cuda::deviceInfo(device);
  if (!info)
    return info.error();
  GpuBundle bundle{std::move(all)};
  auto images = std::move(bundle).forDevice(info->major, info->minor, paths[0]);
  if (!images)
    return Error{images.error().message + " (" + info->describe() + ")"};
  std::string description = paths.size() == 1
                                ? paths[0]
                                : paths[0] + " and " +
                                      std::to_string(paths.size() - 1) +
                                      " more GPU programs";
  return forCuda(device, {}, std::move(*images), nullptr, nullptr,
                 std::move(description));
}

int Executable::cudaDevice() const { return gpu ? gpu->device : -1; }

cuda::Stream *Executable::stream() const {
  return gpu ? &*gpu->stream : nullptr;
}
