//===- GpuProgram.cpp - GPU program files: writing, reading, checking -----===//

#include "tessera/Runtime/GpuProgram.h"

#include "tessera/Runtime/Buffer.h"
#include "tessera/Runtime/CompileCache.h"

#include "DimEval.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <optional>
#include <fstream>
#include <iterator>
#include <limits>

using namespace tessera::runtime;

#ifndef TESSERA_VERSION
#error "TESSERA_VERSION must be defined by the build"
#endif

const char *tessera::runtime::tesseraVersion() { return TESSERA_VERSION; }

namespace {

class Writer {
public:
  std::vector<char> bytes;
  template <typename T> void put(T v) {
    char raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    bytes.insert(bytes.end(), raw, raw + sizeof(T));
  }
  void put(const std::string &s) {
    put<std::uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void put(const std::vector<std::int64_t> &dims) {
    put<std::uint32_t>(std::uint32_t(dims.size()));
    for (std::int64_t d : dims)
      put<std::int64_t>(d);
  }
  void put(const GpuProgramImage::Operand &o) {
    put<std::int32_t>(o.storage);
    put(o.shape);
  }
};

/// Reads the payload; the first failure is kept and later reads return
/// zeros, so the caller checks once at the end of each part.
class Reader {
public:
  Reader(const char *data, std::size_t size) : data(data), size(size) {}
  std::string error;

  template <typename T> T get() {
    T v{};
    if (!need(sizeof(T)))
      return v;
    std::memcpy(&v, data + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  std::string getString() {
    auto n = get<std::uint64_t>();
    if (!need(n))
      return {};
    std::string s(data + at, data + at + n);
    at += n;
    return s;
  }
  /// A count of items of at least `itemBytes` each.
  std::size_t count(std::size_t itemBytes, const char *what) {
    auto n = get<std::uint32_t>();
    if (error.empty() && std::uint64_t(n) * itemBytes > size - at)
      fail(std::string("claims ") + std::to_string(n) + " " + what +
           ", more than its remaining " + std::to_string(size - at) +
           " bytes hold");
    return error.empty() ? n : 0;
  }
  std::vector<std::int64_t> getDims() {
    std::vector<std::int64_t> dims(count(8, "dims"));
    for (auto &d : dims)
      d = get<std::int64_t>();
    return dims;
  }
  GpuProgramImage::Operand getOperand() {
    GpuProgramImage::Operand o;
    o.storage = get<std::int32_t>();
    o.shape = getDims();
    return o;
  }
  bool done() const { return at == size; }
  std::size_t remaining() const { return size - at; }
  void fail(const std::string &what) {
    if (error.empty())
      error = what;
  }

private:
  bool need(std::uint64_t n) {
    if (!error.empty())
      return false;
    if (n > size - at) {
      fail("ends " + std::to_string(n - (size - at)) +
           " bytes short of a field at byte " + std::to_string(at));
      return false;
    }
    return true;
  }
  const char *data;
  std::size_t size;
  std::size_t at = 0;
};

constexpr std::size_t kHeaderBytes = 8 + 4 + 8 + 8;

/// Writes `bytes` to `path`; `what` names the file kind in the error.
Status writeFile(const std::vector<char> &bytes, const std::string &path,
                 const char *what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out)
    return Error{std::string("cannot write the ") + what + " " + path};
  return Status::ok();
}

Result<std::vector<char>> readFile(const std::string &path, const char *what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error{std::string("cannot open the ") + what + " " + path};
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  if (in.bad())
    return Error{std::string("cannot read the ") + what + " " + path};
  return bytes;
}

} // namespace

std::vector<char> GpuProgramImage::encode() const {
  Writer w;
  w.put(compilerVersion);
  w.put(chip);
  w.put(name);
  w.put(signature.name.empty() ? std::string()
                               : printManifest({signature}));
  w.put<std::uint32_t>(std::uint32_t(dims.size()));
  for (const auto &[symbol, size] : dims) {
    w.put(symbol);
    w.put<std::int64_t>(size);
  }
  w.put<std::int64_t>(workspaceBytes);
  w.put<std::uint32_t>(std::uint32_t(storages.size()));
  for (const Storage &s : storages) {
    w.put<std::uint8_t>(std::uint8_t(s.kind));
    w.put<std::int64_t>(s.index);
    w.put<std::int64_t>(s.offset);
    w.put(std::string(runtime::name(s.type)));
    w.put(s.shape);
  }
  w.put<std::uint32_t>(std::uint32_t(arguments.size()));
  for (std::int32_t a : arguments)
    w.put<std::int32_t>(a);
  w.put<std::uint32_t>(std::uint32_t(results.size()));
  for (const Operand &o : results)
    w.put(o);
  w.put<std::uint32_t>(std::uint32_t(constants.size()));
  for (const auto &c : constants) {
    w.put<std::uint64_t>(c.size());
    w.bytes.insert(w.bytes.end(), c.begin(), c.end());
  }
  w.put<std::uint32_t>(std::uint32_t(steps.size()));
  for (const Step &s : steps) {
    w.put<std::uint8_t>(std::uint8_t(s.kind));
    w.put(s.kernel);
    for (std::int64_t g : s.grid)
      w.put<std::int64_t>(g);
    w.put<std::uint32_t>(std::uint32_t(s.operands.size()));
    for (const Operand &o : s.operands)
      w.put(o);
    w.put<std::uint32_t>(std::uint32_t(s.scalars.size()));
    for (const Scalar &c : s.scalars) {
      w.put(std::string(runtime::name(c.type)));
      w.put<std::uint64_t>(c.bits);
    }
    w.put(s.schedule);
    w.put(s.tuning);
  }
  w.put(ptx);
  w.put(std::string(cubin.begin(), cubin.end()));
  w.put(graph);

  Writer file;
  file.bytes.insert(file.bytes.end(), kMagic, kMagic + 8);
  file.put<std::uint32_t>(kFormat);
  file.put<std::uint64_t>(w.bytes.size());
  file.put<std::uint64_t>(checksumBytes(w.bytes.data(), w.bytes.size()));
  file.bytes.insert(file.bytes.end(), w.bytes.begin(), w.bytes.end());
  return file.bytes;
}

Result<GpuProgramImage>
GpuProgramImage::decode(const std::vector<char> &bytes,
                        const std::string &what) {
  auto bad = [&](const std::string &why) {
    return Error{"GPU program " + what + ": " + why};
  };
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return bad("is not a Tessera GPU program (it does not start with \"" +
               std::string(kMagic) + "\")");
  if (bytes.size() < kHeaderBytes)
    return bad("is truncated: " + std::to_string(bytes.size()) +
               " bytes, fewer than its " + std::to_string(kHeaderBytes) +
               "-byte header");
  std::uint32_t format;
  std::uint64_t length, hash;
  std::memcpy(&format, bytes.data() + 8, 4);
  std::memcpy(&length, bytes.data() + 12, 8);
  std::memcpy(&hash, bytes.data() + 20, 8);
  if (format != kFormat)
    return bad("has format version " + std::to_string(format) +
               "; this runtime (Tessera " + tesseraVersion() +
               ") reads version " + std::to_string(kFormat) +
               " (compile it again)");
  std::uint64_t payload = bytes.size() - kHeaderBytes;
  if (payload < length)
    return bad("is truncated: its header promises " + std::to_string(length) +
               " bytes after it, the file has " + std::to_string(payload));
  if (payload > length)
    return bad("has " + std::to_string(payload - length) +
               " bytes after the " + std::to_string(length) +
               " its header promises");
  const char *data = bytes.data() + kHeaderBytes;
  if (checksumBytes(data, length) != hash)
    return bad("is corrupted: its content does not match the hash in its "
               "header");

  Reader r(data, length);
  GpuProgramImage img;
  img.compilerVersion = r.getString();
  img.chip = r.getString();
  img.name = r.getString();
  std::string manifest = r.getString();
  std::size_t symbolCount = r.count(8 + 8, "dim sizes");
  for (std::size_t i = 0; i < symbolCount && r.error.empty(); ++i) {
    std::string symbol = r.getString();
    img.dims[symbol] = r.get<std::int64_t>();
  }
  if (r.error.empty() && !manifest.empty()) {
    auto parsed = parseManifest(manifest);
    if (!parsed)
      r.fail("has a bad signature: " + parsed.error().message);
    else if (parsed->size() != 1)
      r.fail("has " + std::to_string(parsed->size()) +
             " signatures; a program is one function");
    else
      img.signature = std::move(parsed->front());
  }
  img.workspaceBytes = r.get<std::int64_t>();
  img.storages.resize(r.count(1 + 8 + 8 + 8 + 4, "buffers"));
  for (Storage &s : img.storages) {
    auto kind = r.get<std::uint8_t>();
    if (kind > std::uint8_t(StorageKind::Constant))
      r.fail("has a buffer of unknown kind " + std::to_string(kind));
    s.kind = StorageKind(kind);
    s.index = r.get<std::int64_t>();
    s.offset = r.get<std::int64_t>();
    std::string dtype = r.getString();
    if (auto t = parseDType(dtype))
      s.type = *t;
    else if (r.error.empty())
      r.fail("has a buffer of unknown dtype '" + dtype + "'");
    s.shape = r.getDims();
  }
  img.arguments.resize(r.count(4, "arguments"));
  for (auto &a : img.arguments)
    a = r.get<std::int32_t>();
  img.results.resize(r.count(8, "results"));
  for (Operand &o : img.results)
    o = r.getOperand();
  img.constants.resize(r.count(8, "constants"));
  for (auto &c : img.constants) {
    auto n = r.get<std::uint64_t>();
    if (r.error.empty() && n > r.remaining())
      r.fail("has a constant of " + std::to_string(n) + " bytes, more than " +
             "the " + std::to_string(r.remaining()) + " left");
    if (!r.error.empty())
      break;
    c.resize(n);
    for (auto &b : c)
      b = r.get<char>();
  }
  img.steps.resize(r.count(1 + 8 + 24 + 4 + 4 + 8, "steps"));
  for (Step &s : img.steps) {
    auto kind = r.get<std::uint8_t>();
    if (kind > std::uint8_t(Step::Kind::Copy))
      r.fail("has a step of unknown kind " + std::to_string(kind));
    s.kind = Step::Kind(kind);
    s.kernel = r.getString();
    for (auto &g : s.grid)
      g = r.get<std::int64_t>();
    s.operands.resize(r.count(8, "operands"));
    for (Operand &o : s.operands)
      o = r.getOperand();
    s.scalars.resize(r.count(8 + 8, "scalars"));
    for (Scalar &c : s.scalars) {
      std::string type = r.getString();
      c.bits = r.get<std::uint64_t>();
      if (!r.error.empty())
        break;
      std::optional<DType> t = parseDType(type);
      if (!t)
        r.fail("has a scalar of unknown type '" + type + "'");
      else
        c.type = *t;
    }
    s.schedule = r.getString();
    s.tuning = r.getString();
  }
  img.ptx = r.getString();
  std::string cubin = r.getString();
  img.cubin.assign(cubin.begin(), cubin.end());
  img.graph = r.getString();
  if (r.error.empty() && !r.done())
    r.fail("has " + std::to_string(r.remaining()) +
           " bytes after its last field");
  if (!r.error.empty())
    return bad(r.error);
  if (img.compilerVersion != tesseraVersion())
    return bad("was compiled by Tessera " + img.compilerVersion +
               "; this runtime is Tessera " + tesseraVersion() +
               " (compile it again)");
  if (Status st = img.verify(); !st)
    return bad(st.error().message);
  return img;
}

Status GpuProgramImage::verify() const {
  auto bad = [](const std::string &why) { return Status(Error{why}); };
  if (workspaceBytes < 0)
    return bad("has a workspace of " + std::to_string(workspaceBytes) +
               " bytes");
  for (std::size_t i = 0; i < storages.size(); ++i) {
    const Storage &s = storages[i];
    std::string which = "buffer " + std::to_string(i);
    auto n = elementCount(s.shape);
    if (!n)
      return bad(which + ": " + n.error().message);
    std::int64_t bytes = *n * std::int64_t(byteSize(s.type));
    switch (s.kind) {
    case StorageKind::Argument:
      if (s.index < 0 || s.index >= std::int64_t(arguments.size()) ||
          arguments[std::size_t(s.index)] != std::int32_t(i))
        return bad(which + " is argument " + std::to_string(s.index) +
                   ", which does not name it back");
      break;
    case StorageKind::Workspace:
      if (s.offset < 0 || s.offset > workspaceBytes ||
          bytes > workspaceBytes - s.offset)
        return bad(which + " (" + std::to_string(bytes) + " bytes at " +
                   std::to_string(s.offset) + ") lies outside the " +
                   std::to_string(workspaceBytes) + "-byte workspace");
      break;
    case StorageKind::Result:
      break;
    case StorageKind::Constant:
      if (s.index < 0 || s.index >= std::int64_t(constants.size()))
        return bad(which + " is constant " + std::to_string(s.index) +
                   " of " + std::to_string(constants.size()));
      if (std::int64_t(constants[std::size_t(s.index)].size()) != bytes)
        return bad(which + " is constant " + std::to_string(s.index) +
                   " of " +
                   std::to_string(constants[std::size_t(s.index)].size()) +
                   " bytes; its shape needs " + std::to_string(bytes));
      break;
    }
  }
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    std::int32_t a = arguments[i];
    if (a < 0 || a >= std::int32_t(storages.size()) ||
        storages[std::size_t(a)].kind != StorageKind::Argument ||
        storages[std::size_t(a)].index != std::int64_t(i))
      return bad("argument " + std::to_string(i) + " names buffer " +
                 std::to_string(a) + ", which is not that argument");
  }
  auto checkOperand = [&](const Operand &o,
                          const std::string &where) -> Status {
    if (o.storage < 0 || o.storage >= std::int32_t(storages.size()))
      return bad(where + " names buffer " + std::to_string(o.storage) +
                 " of " + std::to_string(storages.size()));
    const Storage &s = storages[std::size_t(o.storage)];
    auto n = elementCount(o.shape);
    if (!n || *n != *elementCount(s.shape))
      return bad(where + " reads buffer " + std::to_string(o.storage) +
                 ", " + describe(s.type, s.shape) + ", as " +
                 describe(s.type, o.shape) +
                 ", which has another number of elements");
    return Status::ok();
  };
  std::vector<bool> returned(storages.size(), false);
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (Status st = checkOperand(results[i], "result " + std::to_string(i));
        !st)
      return st;
    std::size_t s = std::size_t(results[i].storage);
    if (storages[s].kind != StorageKind::Result || returned[s])
      return bad("result " + std::to_string(i) + " is buffer " +
                 std::to_string(s) +
                 ", which is not a buffer of its own for the caller");
    returned[s] = true;
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step &s = steps[i];
    std::string where = "step " + std::to_string(i);
    for (std::size_t j = 0; j < s.operands.size(); ++j)
      if (Status st = checkOperand(s.operands[j],
                                   where + " operand " + std::to_string(j));
          !st)
        return st;
    if (s.kind == Step::Kind::Launch) {
      if (s.kernel.empty())
        return bad(where + " launches a kernel without a name");
      for (std::int64_t g : s.grid)
        if (g < 1 || g > std::numeric_limits<std::int32_t>::max())
          return bad(where + " launches " + s.kernel + " on a grid of " +
                     std::to_string(g) + " programs");
      for (std::size_t j = 0; j < s.scalars.size(); ++j) {
        const Scalar &c = s.scalars[j];
        bool narrow = c.type == DType::f32 || c.type == DType::i32;
        if (!narrow && c.type != DType::i64)
          return bad(where + " scalar " + std::to_string(j) + " is " +
                     runtime::name(c.type) +
                     "; kernels take f32, i32 or i64 scalars");
        if (narrow && (c.bits >> 32) != 0)
          return bad(where + " scalar " + std::to_string(j) + " is " +
                     runtime::name(c.type) + " with bits beyond its 32");
      }
    } else {
      if (!s.scalars.empty())
        return bad(where + " is a copy with scalar parameters");
      if (s.operands.size() != 2)
        return bad(where + " copies " + std::to_string(s.operands.size()) +
                   " buffers; a copy has a source and a destination");
      const Storage &from = storages[std::size_t(s.operands[0].storage)];
      const Storage &to = storages[std::size_t(s.operands[1].storage)];
      if (from.type != to.type)
        return bad(where + " copies " + runtime::name(from.type) +
                   " into " + runtime::name(to.type));
    }
  }
  return checkSignature();
}

Status GpuProgramImage::checkSignature() const {
  if (signature.name.empty())
    return Status::ok();
  auto bad = [&](const std::string &why) {
    return Status(Error{"its signature " + signature.describe() + " " + why});
  };
  if (signature.name != name)
    return bad("is not that of its function @" + name);
  for (const auto &[symbol, size] : dims)
    if (size < 0)
      return bad("is compiled for " + symbol + " = " + std::to_string(size));
  auto check = [&](const TensorSpec &spec, DType type,
                   const std::vector<std::int64_t> &shape,
                   const std::string &what) -> Status {
    std::vector<std::int64_t> expected;
    for (const std::string &d : spec.dims) {
      std::string error;
      auto e = detail::DimEval::parse(d, error);
      std::optional<std::int64_t> v = e ? e->evaluate(dims) : std::nullopt;
      if (!v)
        return bad("has a dim '" + d + "' of " + what +
                   " that its sizes do not fix");
      expected.push_back(*v);
    }
    if (spec.dtype != type || expected != shape)
      return bad("says " + what + " is " + describe(spec.dtype, expected) +
                 " for its sizes, but the program has " +
                 describe(type, shape));
    return Status::ok();
  };
  if (signature.arguments.size() != arguments.size() ||
      signature.results.size() != results.size())
    return bad("has " + std::to_string(signature.arguments.size()) +
               " arguments and " + std::to_string(signature.results.size()) +
               " results; the program " + std::to_string(arguments.size()) +
               " and " + std::to_string(results.size()));
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const Storage &s = storages[std::size_t(arguments[i])];
    if (Status st = check(signature.arguments[i], s.type, s.shape,
                          "argument " + std::to_string(i));
        !st)
      return st;
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    DType type = storages[std::size_t(results[i].storage)].type;
    if (Status st = check(signature.results[i], type, results[i].shape,
                          "result " + std::to_string(i));
        !st)
      return st;
  }
  return Status::ok();
}

std::string GpuProgramImage::listing() const {
  std::ostringstream os;
  auto dims = [](const std::vector<std::int64_t> &shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
      out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
  };
  auto sum = [](const char *data, std::size_t size) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  (unsigned long long)checksumBytes(data, size));
    return std::to_string(size) + " bytes, fnv1a " + hex;
  };
  auto operand = [&](const Operand &o) {
    return "s" + std::to_string(o.storage) + dims(o.shape);
  };
  os << "# program " << name << " for " << chip << ", Tessera "
     << compilerVersion << "\n";
  if (!signature.name.empty())
    os << "# signature " << signature.describe() << "\n";
  os << " chip " << chip << "\n";
  os << " dims";
  for (const auto &[dim, size] : this->dims)
    os << " " << dim << "=" << size;
  os << "\n workspace " << workspaceBytes << " bytes\n";
  static const char *kKinds[] = {"argument", "workspace", "result",
                                 "constant"};
  for (std::size_t i = 0; i < storages.size(); ++i) {
    const Storage &st = storages[i];
    os << " storage s" << i << ": " << kKinds[int(st.kind) & 3];
    if (st.kind == StorageKind::Workspace)
      os << " +" << st.offset;
    else if (st.kind != StorageKind::Result)
      os << " " << st.index;
    os << " " << tessera::runtime::name(st.type) << dims(st.shape) << "\n";
  }
  for (std::size_t i = 0; i < arguments.size(); ++i)
    os << " argument " << i << ": s" << arguments[i] << "\n";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step &step = steps[i];
    os << " step " << i << ": ";
    if (step.kind == Step::Kind::Copy) {
      os << "copy";
    } else {
      os << "launch " << step.kernel << " grid " << dims({step.grid[0],
                                                           step.grid[1],
                                                           step.grid[2]});
    }
    for (const Operand &o : step.operands)
      os << " " << operand(o);
    for (const Scalar &sc : step.scalars) {
      char bits[24];
      std::snprintf(bits, sizeof bits, "0x%llx", (unsigned long long)sc.bits);
      os << " " << tessera::runtime::name(sc.type) << ":" << bits;
    }
    if (!step.schedule.empty())
      os << " schedule " << step.schedule;
    if (!step.tuning.empty())
      os << " tuning " << step.tuning;
    os << "\n";
  }
  for (std::size_t i = 0; i < results.size(); ++i)
    os << " result " << i << ": " << operand(results[i]) << "\n";
  for (std::size_t i = 0; i < constants.size(); ++i)
    os << " constant " << i << ": "
       << sum(constants[i].data(), constants[i].size()) << "\n";
  os << " ptx " << sum(ptx.data(), ptx.size()) << "\n";
  os << " cubin " << sum(cubin.data(), cubin.size()) << "\n";
  os << "# graph " << sum(graph.data(), graph.size()) << "\n";
  return os.str();
}

Status GpuProgramImage::save(const std::string &path) const {
  return writeFile(encode(), path, "GPU program");
}

Result<GpuProgramImage> GpuProgramImage::load(const std::string &path) {
  auto bytes = readFile(path, "GPU program");
  if (!bytes)
    return bytes.error();
  return decode(*bytes, path);
}

//===----------------------------------------------------------------------===//
// Chips
//===----------------------------------------------------------------------===//

std::optional<ChipVersion>
tessera::runtime::parseChip(const std::string &chip) {
  if (chip.rfind("sm_", 0) != 0)
    return std::nullopt;
  std::string digits;
  std::size_t j = 3;
  for (; j < chip.size() && chip[j] >= '0' && chip[j] <= '9'; ++j)
    digits += chip[j];
  std::string rest = chip.substr(j);
  if (digits.size() < 2 || digits.size() > 3 || !(rest.empty() || rest == "a"))
    return std::nullopt;
  return ChipVersion{std::stoi(digits.substr(0, digits.size() - 1)),
                     digits.back() - '0', rest == "a"};
}

std::optional<std::string> tessera::runtime::chipForDevice(int major,
                                                           int minor) {
  if (major == 9 && minor == 0)
    return std::string("sm_90a");
  if (major >= 8)
    return std::string("sm_80");
  return std::nullopt;
}

bool tessera::runtime::chipRuns(const std::string &chip, int major, int minor,
                                std::string &why) {
  auto parsed = parseChip(chip);
  if (!parsed) {
    why = "names the chip '" + chip + "', which is not sm_<major><minor>";
    return false;
  }
  auto [wantMajor, wantMinor, archSpecific] = *parsed;
  bool ok = archSpecific ? (major == wantMajor && minor == wantMinor)
                         : (major > wantMajor ||
                            (major == wantMajor && minor >= wantMinor));
  if (!ok)
    why = "was compiled for " + chip + (archSpecific ? " only" : " or newer") +
          "; the device is sm_" + std::to_string(major) +
          std::to_string(minor);
  return ok;
}

bool tessera::runtime::cubinRuns(const std::string &chip, int major,
                                 int minor) {
  auto parsed = parseChip(chip);
  if (!parsed)
    return false;
  auto [wantMajor, wantMinor, archSpecific] = *parsed;
  return archSpecific ? (major == wantMajor && minor == wantMinor)
                      : (major == wantMajor && minor >= wantMinor);
}

//===----------------------------------------------------------------------===//
// Bundles
//===----------------------------------------------------------------------===//

std::vector<char> GpuBundle::encode() const {
  Writer w;
  w.put<std::uint32_t>(std::uint32_t(programs.size()));
  for (const GpuProgramImage &p : programs) {
    std::vector<char> bytes = p.encode();
    w.put<std::uint64_t>(bytes.size());
    w.bytes.insert(w.bytes.end(), bytes.begin(), bytes.end());
  }
  Writer file;
  file.bytes.insert(file.bytes.end(), kMagic, kMagic + 8);
  file.put<std::uint32_t>(kFormat);
  file.put<std::uint64_t>(w.bytes.size());
  file.put<std::uint64_t>(checksumBytes(w.bytes.data(), w.bytes.size()));
  file.bytes.insert(file.bytes.end(), w.bytes.begin(), w.bytes.end());
  return file.bytes;
}

Result<GpuBundle> GpuBundle::decode(const std::vector<char> &bytes,
                                    const std::string &what) {
  auto bad = [&](const std::string &why) {
    return Error{"GPU bundle " + what + ": " + why};
  };
  if (bytes.size() >= 8 &&
      std::memcmp(bytes.data(), GpuProgramImage::kMagic, 8) == 0) {
    auto one = GpuProgramImage::decode(bytes, what);
    if (!one)
      return one.error();
    GpuBundle bundle;
    bundle.programs.push_back(std::move(*one));
    return bundle;
  }
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return bad("is neither a Tessera GPU bundle nor a GPU program (it "
               "starts with neither \"" +
               std::string(kMagic) + "\" nor \"" +
               std::string(GpuProgramImage::kMagic) + "\")");
  if (bytes.size() < kHeaderBytes)
    return bad("is truncated: " + std::to_string(bytes.size()) +
               " bytes, fewer than its " + std::to_string(kHeaderBytes) +
               "-byte header");
  std::uint32_t format;
  std::uint64_t length, hash;
  std::memcpy(&format, bytes.data() + 8, 4);
  std::memcpy(&length, bytes.data() + 12, 8);
  std::memcpy(&hash, bytes.data() + 20, 8);
  if (format != kFormat)
    return bad("has format version " + std::to_string(format) +
               "; this runtime (Tessera " + tesseraVersion() +
               ") reads version " + std::to_string(kFormat));
  std::uint64_t payload = bytes.size() - kHeaderBytes;
  if (payload != length)
    return bad(payload < length
                   ? "is truncated: its header promises " +
                         std::to_string(length) + " bytes after it, the " +
                         "file has " + std::to_string(payload)
                   : "has " + std::to_string(payload - length) +
                         " bytes after the " + std::to_string(length) +
                         " its header promises");
  const char *data = bytes.data() + kHeaderBytes;
  if (checksumBytes(data, length) != hash)
    return bad("is corrupted: its content does not match the hash in its "
               "header");
  Reader r(data, length);
  GpuBundle bundle;
  std::size_t count = r.count(8 + kHeaderBytes, "programs");
  for (std::size_t i = 0; i < count && r.error.empty(); ++i) {
    auto n = r.get<std::uint64_t>();
    if (r.error.empty() && n > r.remaining())
      r.fail("has a program of " + std::to_string(n) + " bytes, more than the " +
             std::to_string(r.remaining()) + " left");
    if (!r.error.empty())
      break;
    std::vector<char> one(static_cast<std::size_t>(n));
    for (char &c : one)
      c = r.get<char>();
    auto image = GpuProgramImage::decode(
        one, what + " (program " + std::to_string(i) + ")");
    if (!image)
      return image.error();
    bundle.programs.push_back(std::move(*image));
  }
  if (r.error.empty() && !r.done())
    r.fail("has " + std::to_string(r.remaining()) +
           " bytes after its last program");
  if (!r.error.empty())
    return bad(r.error);
  return bundle;
}

Status GpuBundle::save(const std::string &path) const {
  return writeFile(encode(), path, "GPU bundle");
}

Result<GpuBundle> GpuBundle::load(const std::string &path) {
  auto bytes = readFile(path, "GPU bundle");
  if (!bytes)
    return bytes.error();
  return decode(*bytes, path);
}

Result<std::vector<GpuProgramImage>>
GpuBundle::forDevice(int major, int minor, const std::string &what) && {
  auto sizes = [](const std::map<std::string, std::int64_t> &dims) {
    if (dims.empty())
      return std::string("no symbolic dims");
    std::string out;
    for (const auto &[name, size] : dims)
      out += (out.empty() ? "" : ", ") + name + " = " + std::to_string(size);
    return out;
  };
  // Newer chips first; an arch-specific chip before the plain one.
  auto rank = [](const std::string &chip) {
    std::optional<ChipVersion> v = parseChip(chip);
    return v ? 2 * (10 * v->major + v->minor) + v->archSpecific : -1;
  };
  struct Choice {
    std::size_t index;
    std::string chips; // the chips of its programs, for the error
  };
  std::map<std::pair<std::string, std::map<std::string, std::int64_t>>,
           Choice>
      best;
  const std::size_t none = programs.size();
  for (std::size_t i = 0; i < programs.size(); ++i) {
    const GpuProgramImage &p = programs[i];
    std::string why;
    bool runs = chipRuns(p.chip, major, minor, why);
    auto key = std::make_pair(p.name, p.dims);
    auto it = best.find(key);
    if (it == best.end()) {
      best[key] = {runs ? i : none, p.chip};
      continue;
    }
    it->second.chips += ", " + p.chip;
    for (std::size_t j = 0; j < i; ++j)
      if (programs[j].name == p.name && programs[j].dims == p.dims &&
          programs[j].chip == p.chip)
        return Error{what + ": two GPU programs of @" + p.name + " for " +
                     sizes(p.dims) + " are compiled for " + p.chip};
    std::size_t &chosen = it->second.index;
    if (runs && (chosen == none || rank(p.chip) > rank(programs[chosen].chip)))
      chosen = i;
  }
  std::vector<GpuProgramImage> out;
  for (auto &[key, choice] : best) {
    if (choice.index == none)
      return Error{what + ": no GPU program of @" + key.first + " for " +
                   sizes(key.second) + " runs on sm_" + std::to_string(major) +
                   std::to_string(minor) + " (its programs are for " +
                   choice.chips + ")"};
    out.push_back(std::move(programs[choice.index]));
  }
  return out;
}
