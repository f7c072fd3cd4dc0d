//===- row_bench.cpp - Memory-bound Tile IR kernels vs a copy kernel ------===//
//
// Times the kernels of row_kernels.mlir (compiled at build time through the
// Tile IR GPU lowering to PTX) on rows x 4096 f32 and reports each one's
// bandwidth beside the copy kernel's, measured in the same run:
//
//   tessera-row-bench [PTX] [rows]
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Cuda.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace tessera::runtime;
namespace cu = tessera::runtime::cuda;

namespace {

/// Memref descriptors and scalars in a kernel's parameter order.
struct Args {
  std::deque<uint64_t> ptrs;
  std::deque<int64_t> ints;
  std::deque<float> floats;
  std::vector<void *> list;
  Args &memref(const cu::DeviceBuffer &b, std::vector<int64_t> shape) {
    ptrs.push_back(b.pointer());
    list.push_back(&ptrs.back());
    list.push_back(&ptrs.back());
    push(0);
    for (int64_t s : shape)
      push(s);
    std::vector<int64_t> strides(shape.size());
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      strides[i] = stride;
      stride *= shape[i];
    }
    for (int64_t s : strides)
      push(s);
    return *this;
  }
  Args &f32(float v) {
    floats.push_back(v);
    list.push_back(&floats.back());
    return *this;
  }
  void push(int64_t v) {
    ints.push_back(v);
    list.push_back(&ints.back());
  }
};

template <typename T> T check(Result<T> r, const char *what) {
  if (!r) {
    std::fprintf(stderr, "%s: %s\n", what, r.error().message.c_str());
    std::exit(1);
  }
  return std::move(*r);
}

/// Median milliseconds of `reps` launches after 3 warm-up launches.
double timeKernel(const cu::Kernel &k, unsigned rows, cu::Stream &stream,
                  Args &args, int reps = 20) {
  cu::LaunchConfig cfg{{rows, 1, 1}, {256, 1, 1}, 0};
  std::vector<double> ms;
  for (int i = 0; i < reps + 3; ++i) {
    auto start = check(cu::Event::create(), "event");
    auto end = check(cu::Event::create(), "event");
    if (!start.record(stream) || !k.launch(cfg, stream, args.list) ||
        !end.record(stream) || !end.synchronize()) {
      std::fprintf(stderr, "launch of %s failed\n", k.name().c_str());
      std::exit(1);
    }
    double t = check(cu::Event::elapsedMs(start, end), "timing");
    if (i >= 3)
      ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  std::string path = argc > 1 ? argv[1] : TESSERA_ROW_BENCH_PTX;
  int64_t rows = argc > 2 ? std::atoll(argv[2]) : 16384;
  const int64_t n = 4096;
  if (!cu::available()) {
    std::fprintf(stderr, "no GPU: %s\n", cu::unavailableReason().c_str());
    return 1;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto module = check(cu::Module::loadPtx(text.str()), "loading the PTX");
  auto stream = check(cu::Stream::create(), "stream");
  auto info = check(cu::deviceInfo(0), "device");
  auto host = check(HostBuffer::allocate(DType::f32, {rows, n}), "host");
  for (int64_t i = 0; i < rows * n; ++i)
    host.as<float>()[i] = float((i * 7919) % 1000) / 250.0f - 2.0f;
  auto x = check(cu::DeviceBuffer::fromHost(host), "x");
  auto y = check(cu::DeviceBuffer::zeros(DType::f32, {rows, n}), "y");
  auto wHost = check(HostBuffer::allocate(DType::f32, {n}), "w");
  for (int64_t i = 0; i < n; ++i)
    wHost.as<float>()[i] = 1.0f + float(i % 7) / 8.0f;
  auto w = check(cu::DeviceBuffer::fromHost(wHost), "w");

  double bytes = 2.0 * double(rows) * n * 4; // read x, write y
  std::printf("Tessera Tile IR row kernels, %lld x %lld f32 on %s\n",
              (long long)rows, (long long)n, info.describe().c_str());
  Args copyArgs;
  copyArgs.memref(x, {rows, n}).memref(y, {rows, n});
  double copyMs = timeKernel(check(module.kernel("copy_rows"), "copy_rows"),
                             unsigned(rows), stream, copyArgs);
  double copyBw = bytes / copyMs / 1e6;
  std::printf("%-14s %8.3f ms %8.1f GB/s\n", "copy", copyMs, copyBw);
  struct Case {
    const char *name;
    Args args;
  };
  std::vector<Case> cases(2);
  cases[0].name = "softmax_rows";
  cases[0].args.memref(x, {rows, n}).memref(y, {rows, n});
  cases[1].name = "rmsnorm_rows";
  cases[1]
      .args.memref(x, {rows, n})
      .memref(w, {n})
      .memref(y, {rows, n})
      .f32(1e-6f);
  for (Case &c : cases) {
    double ms = timeKernel(check(module.kernel(c.name), c.name), unsigned(rows),
                           stream, c.args);
    double bw = bytes / ms / 1e6;
    // The output of the last launch, checked on a few rows in double.
    auto out = check(y.toHost(&stream), "result");
    double worst = 0;
    for (int64_t r : {int64_t(0), rows / 2, rows - 1}) {
      const float *xr = host.as<float>() + r * n;
      const float *yr = out.as<float>() + r * n;
      double m = -INFINITY, s = 0, ss = 0;
      for (int64_t j = 0; j < n; ++j) {
        m = std::max(m, double(xr[j]));
        ss += double(xr[j]) * xr[j];
      }
      for (int64_t j = 0; j < n; ++j)
        s += std::exp(xr[j] - m);
      for (int64_t j = 0; j < n; ++j) {
        double want =
            c.name == std::string("softmax_rows")
                ? std::exp(xr[j] - m) / s
                : xr[j] / std::sqrt(ss / n + 1e-6) * wHost.as<float>()[j];
        worst =
            std::max(worst, std::abs(yr[j] - want) / (std::abs(want) + 1e-6));
      }
    }
    std::printf("%-14s %8.3f ms %8.1f GB/s  %.2f of copy  (max rel err "
                "%.1e)\n",
                c.name, ms, bw, bw / copyBw, worst);
  }
  return 0;
}
