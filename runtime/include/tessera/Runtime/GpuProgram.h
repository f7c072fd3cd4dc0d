//===- GpuProgram.h - A compiled GPU host program, runnable -----*- C++ -*-===//
//
// What --tessera-gpu-pipeline produces, in a form the runtime runs without
// the compiler: the host program (its buffers, launches and copies, in
// order) and its kernels' PTX. GpuProgramImage is the data and its file
// format; cuda::HostProgram (Cuda.h) loads one on a device and runs it.
//
// File format (little-endian), version kFormat:
//   8 bytes  magic "TSGPUPRG"
//   u32      format version
//   u64      payload bytes
//   u64      FNV-1a 64 of the payload
//   payload: the fields below, strings and arrays with u64/u32 lengths.
// A file is checked whole (magic, version, length, hash, then every count
// and index) before anything of it is used.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_GPUPROGRAM_H
#define TESSERA_RUNTIME_GPUPROGRAM_H

#include "tessera/Runtime/DType.h"
#include "tessera/Runtime/Result.h"
#include "tessera/Runtime/Signature.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::runtime {

/// The Tessera release that wrote (or reads) GPU program files.
const char *tesseraVersion();

struct GpuProgramImage {
  static constexpr std::uint32_t kFormat = 5;
  static constexpr char kMagic[9] = "TSGPUPRG";

  /// Where a buffer's memory comes from.
  enum class StorageKind : std::uint8_t {
    /// The caller's argument `index`.
    Argument = 0,
    /// `offset` bytes into the program's workspace.
    Workspace = 1,
    /// Allocated by each run and returned to the caller.
    Result = 2,
    /// The program's constant `index`, uploaded once when loaded.
    Constant = 3,
  };
  struct Storage {
    StorageKind kind = StorageKind::Workspace;
    std::int64_t index = 0;
    std::int64_t offset = 0;
    DType type = DType::f32;
    std::vector<std::int64_t> shape;
  };
  /// A storage's memory under a shape of as many elements (a view).
  struct Operand {
    std::int32_t storage = 0;
    std::vector<std::int64_t> shape;
  };
  /// A number a launch passes after its buffers, in the kernel's type
  /// (f32, i32 or i64): the value's bits, zero-extended to 8 bytes.
  struct Scalar {
    DType type = DType::f32;
    std::uint64_t bits = 0;
  };
  struct Step {
    enum class Kind : std::uint8_t { Launch = 0, Copy = 1 };
    Kind kind = Kind::Launch;
    /// Launch: the kernel's name in the PTX module and its programs.
    std::string kernel;
    std::array<std::int64_t, 3> grid = {1, 1, 1};
    /// Launch: the kernel's buffers in parameter order. Copy: from, to.
    std::vector<Operand> operands;
    /// Launch: the kernel's scalar parameters, which follow its buffers.
    std::vector<Scalar> scalars;
    /// Launch: the schedule its kernel was generated with
    /// ("block(128, 128).warps(8).stages(2)"; empty if not recorded).
    std::string schedule;
    /// Launch: the tuning key of the product it computes (a part of), for
    /// an autotuner: each schedule of a key's space is timed over all of
    /// its launches (empty: not tunable).
    std::string tuning;
  };

  /// The Tessera release that compiled it (tesseraVersion()).
  std::string compilerVersion;
  /// The chip its PTX was generated for ("sm_90a").
  std::string chip;
  /// The function it was compiled from.
  std::string name;
  /// That function's signature as written, symbolic dims included (empty
  /// name: not recorded), and the sizes its symbols were compiled for: the
  /// arguments' and results' static shapes are the signature's dims under
  /// these sizes (verify() checks it).
  FunctionSignature signature;
  std::map<std::string, std::int64_t> dims;
  std::int64_t workspaceBytes = 0;
  std::vector<Storage> storages;
  /// The storage of each argument, in order (dtype and shape checked at
  /// each run).
  std::vector<std::int32_t> arguments;
  /// What each run returns, in order.
  std::vector<Operand> results;
  /// Raw little-endian bytes of each constant.
  std::vector<std::vector<char>> constants;
  std::vector<Step> steps;
  /// The kernels' module (PTX text).
  std::string ptx;
  /// The same module compiled for `chip` by ptxas (empty: none), loaded
  /// instead of the PTX on devices that run its code (no JIT at load).
  std::vector<char> cubin;
  /// The Graph IR the program was compiled from (the module's text).
  std::string graph;

  std::vector<char> encode() const;
  /// Decodes and checks `bytes` (`what` names them in errors: a path).
  static Result<GpuProgramImage> decode(const std::vector<char> &bytes,
                                        const std::string &what);
  /// Checks the fields' consistency (indices in range, views of as many
  /// elements as their storage, constants of their storage's size).
  Status verify() const;
  /// Part of verify(): the signature (when recorded) gives the arguments'
  /// and results' dtypes and shapes under `dims`.
  Status checkSignature() const;

  Status save(const std::string &path) const;
  static Result<GpuProgramImage> load(const std::string &path);

  /// A listing of the program, one fact per line: the header (function,
  /// chip, compiler, signature, dims), the workspace, every storage, step
  /// (kernel, grid, operands, scalars, schedule) and result, and the size
  /// and FNV-1a 64 of each constant, the PTX, the cubin and the Graph IR.
  /// Lines that depend only on what runs start with a space; the others
  /// (the function's name and signature, the release, the IR text) start
  /// with '#', so two programs of one function name that run the same
  /// kernels on the same buffers list the same space lines (kernel names
  /// begin with the function's name).
  std::string listing() const;
};

/// A chip's compute capability ("sm_90a": 9, 0, arch-specific).
struct ChipVersion {
  int major = 0, minor = 0;
  bool archSpecific = false;
};
/// `chip` as sm_<major><minor>[a]; nullopt for any other spelling.
std::optional<ChipVersion> parseChip(const std::string &chip);
/// The chip Tessera generates code for on a device of compute capability
/// major.minor: Hopper's own instructions on 9.0, else sm_80 PTX (which
/// the driver compiles for every later chip); nullopt before 8.0.
std::optional<std::string> chipForDevice(int major, int minor);

/// Whether code compiled for `chip` ("sm_90a", "sm_80") runs on a device
/// of compute capability major.minor: an "a" chip on exactly that one,
/// PTX of others on it and every later one; if not, `why` says so.
bool chipRuns(const std::string &chip, int major, int minor,
              std::string &why);
/// Whether a cubin (SASS) for `chip` runs there: the same major version
/// and a minor at least the chip's ("a" chips: exactly).
bool cubinRuns(const std::string &chip, int major, int minor);

/// Several GPU programs in one file (a deployment: functions, sizes and
/// chips), each a whole program file with its own header and hash:
///   8 bytes "TSGPUBND", u32 format, u64 payload bytes, u64 FNV-1a 64 of
///   the payload; payload: u32 count, then per program u64 bytes and the
///   program file.
struct GpuBundle {
  static constexpr std::uint32_t kFormat = 1;
  static constexpr char kMagic[9] = "TSGPUBND";

  std::vector<GpuProgramImage> programs;

  std::vector<char> encode() const;
  static Result<GpuBundle> decode(const std::vector<char> &bytes,
                                  const std::string &what);
  Status save(const std::string &path) const;
  /// A bundle file, or a single program file as a bundle of one.
  static Result<GpuBundle> load(const std::string &path);
  /// For each function and sizes, the program for the newest chip a device
  /// of compute capability major.minor runs ("sm_90a" on 9.0 before
  /// "sm_90" before "sm_80"); an error naming the function and sizes when
  /// none runs, or when two are for the same chip. `what` names the source.
  Result<std::vector<GpuProgramImage>>
  forDevice(int major, int minor, const std::string &what) &&;
};

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_GPUPROGRAM_H
