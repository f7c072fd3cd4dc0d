//===- Tuning.h - Tuned schedules of GPU programs ---------------*- C++ -*-===//
//
// What an autotuner found: for each product's tuning key (the
// `tsched.tuning_key` the compiler gives a GEMM group, which a program's
// launches carry as GpuProgramImage::Step::tuning) the schedule that ran
// fastest, as a text file the compiler reads back
// (--tessera-gpu-pipeline="tuning=FILE", GPUCompileOptions::tuningFile):
//
//   # Tessera tuned schedules
//   gemm-439d2df7d153cffd block(128, 256).k(64).warps(8).stages(4).split(4)  # 96.1 us
//
// One `KEY SCHEDULE` a line; '#' starts a comment. The key covers what the
// product computes, the chip and the SM count, so one file serves every
// program with the same products.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_TUNING_H
#define TESSERA_RUNTIME_TUNING_H

#include "tessera/Runtime/Result.h"

#include <map>
#include <string>
#include <vector>

namespace tessera::runtime {

struct TuningTable {
  struct Entry {
    std::string schedule;
    /// The measured time of the key's launches (seconds; 0: not known).
    double seconds = 0;
    /// Every schedule a tuner timed for the key and its time, in the
    /// order timed (written as comments; not read back).
    std::vector<std::pair<std::string, double>> tried = {};
  };
  std::map<std::string, Entry> entries;

  /// Parses the text of a tuning file (`what` names it in errors, which
  /// give the line).
  static Result<TuningTable> parse(const std::string &text,
                                   const std::string &what);
  /// Reads a tuning file; a missing file is an empty table.
  static Result<TuningTable> load(const std::string &path);
  /// The file's text, keys in order.
  std::string str() const;
  /// Writes the file (to a temporary name, then renamed over `path`).
  Status save(const std::string &path) const;
  /// Takes `other`'s entries, replacing those of the same keys.
  void merge(const TuningTable &other);
};

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_TUNING_H
