//===- CompileProgress.h - Telling the user a compile is still running ----===//
//
// Private to the CPU compiler: a compile that runs past a threshold says so
// on stderr, naming the functions being compiled and the passes or phases
// running at that moment, so that no one waits in silence.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_LIB_EXECUTION_COMPILEPROGRESS_H
#define TESSERA_LIB_EXECUTION_COMPILEPROGRESS_H

#include "mlir/Pass/PassInstrumentation.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace mlir::tessera {

/// Watches one compilation. Past the threshold (the environment variable
/// TESSERA_COMPILE_NOTICE_SECONDS, 30 by default; 0 turns the notices off)
/// it prints, and again at each further multiple of it:
///
///   tessera: compiling @f has taken 30 s so far; running:
///   TSchedCPUSchedule on @f.part3
class CompileProgress {
public:
  /// `functions`: the functions being compiled, as the user named them.
  explicit CompileProgress(std::string functions);
  ~CompileProgress();
  CompileProgress(const CompileProgress &) = delete;
  CompileProgress &operator=(const CompileProgress &) = delete;

  /// A phase outside the pass manager (LLVM code generation, linking) now
  /// runs on this thread; an empty name ends it.
  void phase(std::string name);

  /// Records, for a pass manager, the pass each thread is running and the
  /// function it runs on.
  std::unique_ptr<PassInstrumentation> instrumentation();

  /// The threshold in seconds (0: no notices).
  static double thresholdSeconds();

private:
  friend class ProgressInstrumentation;
  void set(std::string what);
  void watch();
  std::string running();

  std::string functions;
  double threshold;
  std::chrono::steady_clock::time_point start;
  std::mutex mutex;
  std::condition_variable wake;
  bool done = false;
  std::map<std::thread::id, std::string> current;
  std::thread watcher;
};

} // namespace mlir::tessera

#endif // TESSERA_LIB_EXECUTION_COMPILEPROGRESS_H
