//===- gemm_bench.cpp - The Tile IR bf16 GEMM on the GPU ------------------===//
//
// Times gemm_kernels.mlir's bf16 GEMM (compiled at build time through the
// Tile IR GPU lowering to PTX) for square sizes and prints TFLOP/s; run
// bench/gpu/gemm_peer.py right after on the same card for cuBLAS:
//
//   tessera-gemm-bench [PTX] [n ...]
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Cuda.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace tessera::runtime;
namespace cu = tessera::runtime::cuda;

namespace {

template <typename T> T check(Result<T> r, const char *what) {
  if (!r) {
    std::fprintf(stderr, "%s: %s\n", what, r.error().message.c_str());
    std::exit(1);
  }
  return std::move(*r);
}

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Args {
  std::deque<uint64_t> ptrs;
  std::deque<int64_t> ints;
  std::vector<void *> list;
  void memref(const cu::DeviceBuffer &b, int64_t rows, int64_t cols) {
    ptrs.push_back(b.pointer());
    list.push_back(&ptrs.back());
    list.push_back(&ptrs.back());
    for (int64_t v : {int64_t(0), rows, cols, cols, int64_t(1)}) {
      ints.push_back(v);
      list.push_back(&ints.back());
    }
  }
};

/// The value of an fp8 e4m3fn byte (bias 7, no infinities).
double fromE4M3(uint8_t v) {
  int sign = v >> 7, exp = (v >> 3) & 15, man = v & 7;
  double mag = exp == 0 ? std::ldexp(man / 8.0, -6)
                        : std::ldexp(1.0 + man / 8.0, exp - 7);
  return sign ? -mag : mag;
}

} // namespace

int main(int argc, char **argv) {
  std::string path = argc > 1 ? argv[1] : TESSERA_GEMM_BENCH_PTX;
  std::vector<int64_t> sizes;
  for (int i = 2; i < argc; ++i)
    sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty())
    sizes = {4096, 8192};
  if (!cu::available()) {
    std::fprintf(stderr, "no GPU: %s\n", cu::unavailableReason().c_str());
    return 1;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto module = check(cu::Module::loadPtx(text.str()), "loading the PTX");
  // name, block of C, threads
  struct Variant {
    const char *name;
    unsigned bm, bn, threads;
    /// A 1-d grid (the kernel orders its programs in groups).
    bool grouped = false;
    /// At most one program per SM, each looping over tiles.
    bool persistent = false;
  };
  const std::vector<Variant> variants = {
      {"gemm_bf16", 128, 128, 256},
      {"gemm_128x128x64_w8", 128, 128, 256},
      {"gemm_128x256x32_w8", 128, 256, 256},
      {"gemm_64x128x32_w4", 64, 128, 128},
      {"gemm_128x128x32_w4", 128, 128, 128},
      {"gemm_128x128x64_s4_w8", 128, 128, 256},
      {"gemm_128x256x64_s3_w8", 128, 256, 256},
      {"gemm_256x128x64_s3_w8", 256, 128, 256},
      {"gemm_128x128x64_s4_w8_g8", 128, 128, 256, true},
      {"gemm_128x256x64_s3_w8_g8", 128, 256, 256, true},
      {"gemm_256x128x64_s3_w8_g8", 256, 128, 256, true},
      {"gemm_256x128x64_s4_w8_g8", 256, 128, 256, true},
      {"gemm_128x256x64_s4_w8_g8", 128, 256, 256, true},
      {"gemm_128x128x64_s6_w8_g8", 128, 128, 256, true},
      {"gemm_256x128x32_s8_w8_g8", 256, 128, 256, true},
      {"gemm_128x256x64_s4_w8_g8_p", 128, 256, 256, true, true}};
  // fp8 (e4m3) GEMMs: A [n, n] and B given transposed (Bt [n, n], K
  // contiguous, as wgmma and torch._scaled_mm take fp8 B), C bf16.
  const std::vector<Variant> fp8Variants = {
      {"gemm_fp8_128x256x128_s4_w8_g8", 128, 256, 256, true},
      {"gemm_fp8_256x128x128_s4_w8_g8", 256, 128, 256, true},
      {"gemm_fp8_128x256x128_s4_w8_g8_p", 128, 256, 256, true, true}};
  auto stream = check(cu::Stream::create(), "stream");
  auto info = check(cu::deviceInfo(0), "device");
  auto bench = [&](const std::vector<Variant> &list, bool fp8) -> bool {
    std::printf("Tessera Tile IR %s GEMM (wgmma, sm_90a build) on %s\n",
                fp8 ? "fp8 e4m3 (B transposed)" : "bf16",
                info.describe().c_str());
    for (int64_t n : sizes) {
      std::mt19937 gen{unsigned(n)};
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::uniform_int_distribution<int> exp(4, 8), man(0, 7), sign(0, 1);
      DType type = fp8 ? DType::f8E4M3FN : DType::bf16;
      auto ha = check(HostBuffer::allocate(type, {n, n}), "a");
      auto hb = check(HostBuffer::allocate(type, {n, n}), "b");
      for (int64_t i = 0; i < n * n; ++i) {
        if (fp8) {
          ha.as<uint8_t>()[i] =
              uint8_t(sign(gen) << 7 | exp(gen) << 3 | man(gen));
          hb.as<uint8_t>()[i] =
              uint8_t(sign(gen) << 7 | exp(gen) << 3 | man(gen));
        } else {
          ha.as<uint16_t>()[i] = toBf16(dist(gen));
          hb.as<uint16_t>()[i] = toBf16(dist(gen));
        }
      }
      auto value = [&](const HostBuffer &h, int64_t i) {
        return fp8 ? fromE4M3(h.as<uint8_t>()[i])
                   : double(fromBf16(h.as<uint16_t>()[i]));
      };
      auto a = check(cu::DeviceBuffer::fromHost(ha), "a");
      auto b = check(cu::DeviceBuffer::fromHost(hb), "b");
      for (const Variant &v : list) {
        auto c = check(cu::DeviceBuffer::zeros(DType::bf16, {n, n}), "c");
        Args args;
        args.memref(a, n, n);
        args.memref(b, n, n);
        args.memref(c, n, n);
        auto kernel = check(module.kernel(v.name), v.name);
        unsigned gx = unsigned((n + v.bm - 1) / v.bm),
                 gy = unsigned((n + v.bn - 1) / v.bn);
        cu::LaunchConfig cfg{{gx, gy, 1}, {v.threads, 1, 1}, 0};
        if (v.grouped)
          cfg.grid = {gx * gy, 1, 1};
        if (v.persistent)
          cfg.grid = {std::min(gx * gy, unsigned(info.multiprocessors)), 1, 1};
        std::vector<double> ms;
        for (int i = 0; i < 13; ++i) {
          auto start = check(cu::Event::create(), "event");
          auto end = check(cu::Event::create(), "event");
          if (!start.record(stream) || !kernel.launch(cfg, stream, args.list) ||
              !end.record(stream) || !end.synchronize()) {
            std::fprintf(stderr, "launch of %s failed\n", v.name);
            return false;
          }
          if (i >= 3)
            ms.push_back(check(cu::Event::elapsedMs(start, end), "timing"));
        }
        std::sort(ms.begin(), ms.end());
        double t = ms[ms.size() / 2];
        // A few outputs against double precision (the output is bf16).
        auto hc = check(c.toHost(&stream), "c");
        double worst = 0;
        for (int64_t s = 0; s < 64; ++s) {
          int64_t i = (s * 7919) % n, j = (s * 104729) % n;
          double want = 0;
          for (int64_t p = 0; p < n; ++p)
            want +=
                value(ha, i * n + p) * value(hb, fp8 ? j * n + p : p * n + j);
          double got = fromBf16(hc.as<uint16_t>()[i * n + j]);
          worst =
              std::max(worst, std::abs(got - want) / (std::abs(want) + 1.0));
        }
        std::printf("n=%-6lld %-30s %8.3f ms %7.1f TFLOP/s  (max err %.1e)\n",
                    (long long)n, v.name, t, 2.0 * n * n * n / t / 1e9, worst);
      }
    }
    return true;
  };
  if (!bench(variants, false) || !bench(fp8Variants, true))
    return 1;
  return 0;
}
