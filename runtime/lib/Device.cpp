//===- Device.cpp - Devices that run compiled code ------------------------===//

#include "tessera/Runtime/Device.h"

#include <omp.h>
#include <sched.h>

#include <atomic>
#include <fstream>

using namespace tessera::runtime;

/// The thread count set by setThreadCount(); 0: OpenMP's default.
static std::atomic<int> chosenThreads{0};

Device &Device::host() {
  static Device cpu(DeviceKind::CPU, 0);
  return cpu;
}

std::vector<Device *> Device::all() { return {&host()}; }

int Device::hardwareThreads() const {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return CPU_COUNT(&set);
  return omp_get_num_procs();
}

int Device::threadCount() const {
  int n = chosenThreads.load(std::memory_order_relaxed);
  return n ? n : omp_get_max_threads();
}

Status Device::setThreadCount(int threads) {
  if (threads < 1)
    return Error{"thread count must be at least 1, got " +
                 std::to_string(threads)};
  chosenThreads.store(threads, std::memory_order_relaxed);
  omp_set_num_threads(threads);
  return Status::ok();
}

void tessera::runtime::detail::applyThreadCount() {
  // OpenMP keeps the thread count per calling thread.
  int n = chosenThreads.load(std::memory_order_relaxed);
  if (n && omp_get_max_threads() != n)
    omp_set_num_threads(n);
}

std::string Device::describe() const {
  std::string model;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; model.empty() && std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        model = line.substr(line.find_first_not_of(' ', colon + 1));
    }
  std::string text = "cpu:" + std::to_string(index);
  text += " (" + (model.empty() ? std::string("host CPU") : model) + ", " +
          std::to_string(hardwareThreads()) + " threads)";
  return text;
}
