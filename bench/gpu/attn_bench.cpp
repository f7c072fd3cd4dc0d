//===- attn_bench.cpp - Tile IR attention forward on the GPU --------------===//
//
// Times attn_kernels.mlir's attention forward (bf16, head dim 128, causal
// and not; compiled at build time to PTX) for batch * heads = 16 and the
// given sequence lengths, checks rows against double precision, and prints
// TFLOP/s; run bench/gpu/attn_peer.py right after on the same card for
// torch's scaled_dot_product_attention:
//
//   tessera-attn-bench [PTX] [seq ...]
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
  std::deque<float> floats;
  std::vector<void *> list;
  void memref(const cu::DeviceBuffer &b, int64_t rows, int64_t cols) {
    ptrs.push_back(b.pointer());
    list.push_back(&ptrs.back());
    list.push_back(&ptrs.back());
    for (int64_t v : {int64_t(0), rows, cols, cols, int64_t(1)})
      integer(v);
  }
  void integer(int64_t v) {
    ints.push_back(v);
    list.push_back(&ints.back());
  }
  void f32(float v) {
    floats.push_back(v);
    list.push_back(&floats.back());
  }
};

} // namespace

int main(int argc, char **argv) {
  std::string path = argc > 1 ? argv[1] : TESSERA_ATTN_BENCH_PTX;
  std::vector<int64_t> seqs;
  for (int i = 2; i < argc; ++i)
    seqs.push_back(std::atoll(argv[i]));
  if (seqs.empty())
    seqs = {4096, 16384};
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
  const int64_t bh = 16, d = 128;
  const float scale = 1.0f / std::sqrt(float(d));
  std::printf("Tessera Tile IR attention forward, bf16, batch*heads %lld, "
              "head dim %lld, on %s\n",
              (long long)bh, (long long)d, info.describe().c_str());
  for (int64_t s : seqs) {
    int64_t rows = bh * s;
    std::mt19937 gen{unsigned(s)};
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<HostBuffer> host;
    for (int t = 0; t < 3; ++t) {
      host.push_back(check(HostBuffer::allocate(DType::bf16, {rows, d}), "h"));
      for (int64_t i = 0; i < rows * d; ++i)
        host.back().as<uint16_t>()[i] = toBf16(dist(gen));
    }
    auto q = check(cu::DeviceBuffer::fromHost(host[0]), "q");
    auto k = check(cu::DeviceBuffer::fromHost(host[1]), "k");
    auto v = check(cu::DeviceBuffer::fromHost(host[2]), "v");
    // Kernels: 64 queries per program on 4 warps, and 128 on 8 warps.
    struct Variant {
      const char *suffix;
      unsigned queries, threads;
    };
    for (const Variant &var :
         {Variant{"", 64, 128}, Variant{"_q128", 128, 256}})
      for (bool causal : {false, true}) {
        auto o = check(cu::DeviceBuffer::zeros(DType::bf16, {rows, d}), "o");
        Args args;
        args.memref(q, rows, d);
        args.memref(k, rows, d);
        args.memref(v, rows, d);
        args.memref(o, rows, d);
        args.integer(s);
        args.f32(scale);
        std::string kernelName =
            std::string(causal ? "attn_fwd_causal" : "attn_fwd") + var.suffix;
        const char *name = kernelName.c_str();
        auto kernel = check(module.kernel(name), name);
        cu::LaunchConfig cfg{{unsigned(s / var.queries), unsigned(bh), 1},
                             {var.threads, 1, 1},
                             0};
        std::vector<double> ms;
        for (int i = 0; i < 8; ++i) {
          auto start = check(cu::Event::create(), "event");
          auto end = check(cu::Event::create(), "event");
          if (!start.record(stream) || !kernel.launch(cfg, stream, args.list) ||
              !end.record(stream) || !end.synchronize()) {
            std::fprintf(stderr, "launch of %s failed\n", name);
            return 1;
          }
          if (i >= 3)
            ms.push_back(check(cu::Event::elapsedMs(start, end), "timing"));
        }
        std::sort(ms.begin(), ms.end());
        double t = ms[ms.size() / 2];
        double flops = 4.0 * bh * double(s) * s * d * (causal ? 0.5 : 1.0);
        // A few query rows against double precision.
        auto out = check(o.toHost(&stream), "o");
        double worst = 0;
        for (int64_t probe = 0; probe < 6; ++probe) {
          int64_t h = (probe * 5) % bh, i = (probe * 7919 + 13) % s;
          int64_t base = h * s, last = causal ? i : s - 1;
          std::vector<double> p(last + 1);
          double mx = -INFINITY, sum = 0;
          for (int64_t j = 0; j <= last; ++j) {
            double dot = 0;
            for (int64_t c = 0; c < d; ++c)
              dot +=
                  double(fromBf16(host[0].as<uint16_t>()[(base + i) * d + c])) *
                  fromBf16(host[1].as<uint16_t>()[(base + j) * d + c]);
            p[j] = dot * scale;
            mx = std::max(mx, p[j]);
          }
          for (double &x : p)
            sum += (x = std::exp(x - mx));
          for (int64_t c = 0; c < d; ++c) {
            double want = 0;
            for (int64_t j = 0; j <= last; ++j)
              want +=
                  p[j] * fromBf16(host[2].as<uint16_t>()[(base + j) * d + c]);
            want /= sum;
            double got = fromBf16(out.as<uint16_t>()[(base + i) * d + c]);
            worst = std::max(worst, std::abs(got - want));
          }
        }
        std::printf(
            "seq=%-6lld %-7s %3u queries %9.3f ms %7.1f TFLOP/s  (max abs err "
            "%.1e)\n",
            (long long)s, causal ? "causal" : "full", var.queries, t,
            flops / t / 1e9, worst);
      }
  }
  return 0;
}
