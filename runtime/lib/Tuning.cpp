//===- Tuning.cpp - Tuned schedules of GPU programs -----------------------===//

#include "tessera/Runtime/Tuning.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

using namespace tessera::runtime;

namespace {

std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

bool isKey(const std::string &key) {
  if (key.size() != 21 || key.compare(0, 5, "gemm-") != 0)
    return false;
  return key.find_first_not_of("0123456789abcdef", 5) == std::string::npos;
}

} // namespace

Result<TuningTable> TuningTable::parse(const std::string &text,
                                       const std::string &what) {
  TuningTable table;
  std::istringstream in(text);
  std::string raw;
  for (int line = 1; std::getline(in, raw); ++line) {
    std::string comment, body = raw;
    if (size_t hash = raw.find('#'); hash != std::string::npos) {
      body = raw.substr(0, hash);
      comment = raw.substr(hash + 1);
    }
    body = trim(body);
    if (body.empty())
      continue;
    size_t space = body.find(' ');
    std::string key = body.substr(0, space);
    std::string schedule =
        space == std::string::npos ? std::string() : trim(body.substr(space));
    if (!isKey(key) || schedule.empty())
      return Error{what + ":" + std::to_string(line) +
                   ": expected 'KEY SCHEDULE' (a product's key gemm-<16 hex "
                   "digits> and its schedule chain), got '" + body + "'"};
    Entry e{schedule, 0};
    double us = 0;
    if (std::sscanf(comment.c_str(), " %lf us", &us) == 1 && us > 0)
      e.seconds = us * 1e-6;
    table.entries[key] = e;
  }
  return table;
}

Result<TuningTable> TuningTable::load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return TuningTable{};
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

std::string TuningTable::str() const {
  std::ostringstream os;
  os << "# Tessera tuned schedules: KEY SCHEDULE  # time of its launches\n";
  for (const auto &[key, e] : entries) {
    os << key << " " << e.schedule;
    if (e.seconds > 0) {
      char us[32];
      std::snprintf(us, sizeof us, "%.1f", e.seconds * 1e6);
      os << "  # " << us << " us";
    }
    os << "\n";
    for (const auto &[schedule, seconds] : e.tried) {
      char us[32];
      std::snprintf(us, sizeof us, "%.1f", seconds * 1e6);
      os << "#   tried " << schedule << "  # " << us << " us\n";
    }
  }
  return os.str();
}

Status TuningTable::save(const std::string &path) const {
  // A temporary name of this writer alone: writers in other processes or
  // threads never interleave, and a reader sees a whole file.
  static std::atomic<unsigned> serial{0};
  std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
                    std::to_string(serial++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << str();
    if (!out)
      return Error{"cannot write the tuning file " + tmp};
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Error{"cannot replace the tuning file " + path};
  }
  return Status::ok();
}

void TuningTable::merge(const TuningTable &other) {
  for (const auto &[key, e] : other.entries)
    entries[key] = e;
}
