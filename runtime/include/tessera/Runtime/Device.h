//===- Device.h - Devices that run compiled code ----------------*- C++ -*-===//
//
// Part of the Tessera runtime: no MLIR or LLVM types in this header.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_DEVICE_H
#define TESSERA_RUNTIME_DEVICE_H

#include "tessera/Runtime/Result.h"

#include <string>
#include <vector>

namespace tessera::runtime {

enum class DeviceKind { CPU };

/// A device compiled code runs on. The host CPU is one device whose
/// parallel loops run on OpenMP threads.
class Device {
public:
  /// The host CPU.
  static Device &host();
  /// Every device this process can use.
  static std::vector<Device *> all();

  DeviceKind kind() const { return deviceKind; }
  /// "cpu:0 (AMD EPYC 9B14, 2 cores)".
  std::string describe() const;
  /// Hardware threads available to this process.
  int hardwareThreads() const;
  /// Threads the parallel loops of compiled code use: the last
  /// setThreadCount(), else OMP_NUM_THREADS, else hardwareThreads().
  int threadCount() const;
  /// Sets the thread count for calls made afterwards from any thread.
  /// Results do not depend on it (reductions have a fixed order).
  Status setThreadCount(int threads);

private:
  Device(DeviceKind kind, int index) : deviceKind(kind), index(index) {}
  DeviceKind deviceKind;
  int index;
};

namespace detail {
/// Applies the chosen thread count to the calling thread's OpenMP state.
void applyThreadCount();
} // namespace detail

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_DEVICE_H
