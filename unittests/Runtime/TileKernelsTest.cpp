//===- TileKernelsTest.cpp - Tile IR kernels on the GPU -------------------===//
//
// The kernels of tile_kernels.mlir, compiled at build time through
// -tessera-ttile-assign-layouts and -tessera-convert-ttile-to-gpu to PTX,
// run on random data with poisoned outputs and are compared with references
// computed here in double precision. Without a GPU the tests skip.
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Cuda.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

using namespace tessera::runtime;
namespace cu = tessera::runtime::cuda;

namespace {

std::string kernelText(const std::string &file) {
  const char *dir = std::getenv("TESSERA_CUDA_TEST_KERNELS");
  std::ifstream in(std::string(dir ? dir : TESSERA_CUDA_TEST_KERNELS) + "/" +
                   file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1); // round to nearest even (finite inputs)
  return uint16_t(u >> 16);
}

float fromBf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Random values in [lo, hi), the same on every run.
std::vector<float> randomValues(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

HostBuffer f32Buffer(const std::vector<float> &v, std::vector<int64_t> shape) {
  auto b = HostBuffer::allocate(DType::f32, std::move(shape));
  EXPECT_TRUE(bool(b));
  std::memcpy(b->data(), v.data(), v.size() * 4);
  return *b;
}

HostBuffer bf16Buffer(const std::vector<float> &v, std::vector<int64_t> shape) {
  auto b = HostBuffer::allocate(DType::bf16, std::move(shape));
  EXPECT_TRUE(bool(b));
  for (size_t i = 0; i < v.size(); ++i)
    b->as<uint16_t>()[i] = toBf16(v[i]);
  return *b;
}

/// A device buffer filled with NaN (all-ones bits), so that elements a
/// kernel fails to write show up.
cu::DeviceBuffer poisoned(DType type, std::vector<int64_t> shape) {
  auto h = HostBuffer::allocate(type, shape);
  EXPECT_TRUE(bool(h));
  std::memset(h->data(), 0xff, h->byteSize());
  auto d = cu::DeviceBuffer::fromHost(*h);
  EXPECT_TRUE(bool(d));
  return std::move(*d);
}

/// Kernel arguments: memrefs as their descriptors (allocated and aligned
/// pointers, offset, sizes, strides), scalars as themselves.
class Args {
public:
  Args &memref(const cu::DeviceBuffer &buf, std::vector<int64_t> shape) {
    ptrs.push_back(buf.pointer());
    list.push_back(&ptrs.back());
    list.push_back(&ptrs.back());
    push(0);
    for (int64_t s : shape)
      push(s);
    int64_t stride = 1;
    std::vector<int64_t> strides(shape.size());
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
  std::vector<void *> list;

private:
  void push(int64_t v) {
    ints.push_back(v);
    list.push_back(&ints.back());
  }
  std::deque<uint64_t> ptrs;
  std::deque<int64_t> ints;
  std::deque<float> floats;
};

/// The tests of tile_kernels.mlir run on its sm_80 build (mma.sync) and
/// its sm_90a build (wgmma where the dots allow it; Hopper only).
class TileKernels : public ::testing::TestWithParam<const char *> {
protected:
  /// The PTX file the tests' kernels come from.
  virtual std::string kernelFile() const { return GetParam(); }

  void SetUp() override {
    if (!cu::available())
      GTEST_SKIP() << "no GPU: " << cu::unavailableReason();
    if (kernelFile() == "tile_kernels_sm90a.ptx") {
      auto info = cu::deviceInfo();
      ASSERT_TRUE(bool(info)) << info.error().message;
      if (info->major != 9 || info->minor != 0)
        GTEST_SKIP() << "built for sm_90a; the GPU is " << info->describe();
    }
    std::string ptx = kernelText(kernelFile());
    ASSERT_FALSE(ptx.empty()) << kernelFile() << " was not generated";
    auto m = cu::Module::loadPtx(ptx);
    ASSERT_TRUE(bool(m)) << m.error().message;
    module.emplace(std::move(*m));
    auto s = cu::Stream::create();
    ASSERT_TRUE(bool(s)) << s.error().message;
    stream.emplace(std::move(*s));
  }

  void launch(const std::string &name, const cu::LaunchConfig &shape,
              Args &args) {
    auto k = module->kernel(name);
    ASSERT_TRUE(bool(k)) << k.error().message;
    Status st = k->launch(shape, *stream, args.list);
    ASSERT_TRUE(bool(st)) << st.error().message;
  }

  /// Causal attention of one head, [s, d] bf16, `kernel` taking `block`
  /// queries per program on 4 warps, against double precision.
  void checkFlashAttention(const char *kernel, int64_t block, int64_t d);

  HostBuffer result(const cu::DeviceBuffer &d) {
    auto h = d.toHost(&*stream);
    EXPECT_TRUE(bool(h)) << h.error().message;
    return std::move(*h);
  }

  std::optional<cu::Module> module;
  std::optional<cu::Stream> stream;
};

TEST_P(TileKernels, SoftmaxOfRows) {
  // 256 columns (vector accesses) and 203 (unaligned rows, masked tail);
  // 37 rows is not a multiple of the 4 rows per program.
  for (int64_t n : {256, 203}) {
    const int64_t rows = 37;
    auto x = randomValues(rows * n, -6.0f, 6.0f, unsigned(n));
    auto dx = cu::DeviceBuffer::fromHost(f32Buffer(x, {rows, n}));
    ASSERT_TRUE(bool(dx));
    cu::DeviceBuffer dy = poisoned(DType::f32, {rows, n});
    Args args;
    args.memref(*dx, {rows, n}).memref(dy, {rows, n});
    launch("softmax_rows", {{unsigned((rows + 3) / 4), 1, 1}, {128, 1, 1}},
           args);
    HostBuffer y = result(dy);
    for (int64_t r = 0; r < rows; ++r) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < n; ++j)
        m = std::max(m, double(x[r * n + j]));
      for (int64_t j = 0; j < n; ++j)
        s += std::exp(double(x[r * n + j]) - m);
      for (int64_t j = 0; j < n; ++j) {
        double want = std::exp(double(x[r * n + j]) - m) / s;
        double got = y.as<float>()[r * n + j];
        ASSERT_NEAR(got, want, 1e-6 + 1e-5 * want)
            << "n " << n << " row " << r << " col " << j;
      }
    }
  }
}

TEST_P(TileKernels, LayerNormOfBf16Rows) {
  for (int64_t n : {512, 300}) {
    const int64_t rows = 9;
    auto x = randomValues(rows * n, -3.0f, 5.0f, 7);
    auto w = randomValues(n, 0.5f, 1.5f, 8);
    auto bias = randomValues(n, -1.0f, 1.0f, 9);
    auto dx = cu::DeviceBuffer::fromHost(bf16Buffer(x, {rows, n}));
    auto dw = cu::DeviceBuffer::fromHost(f32Buffer(w, {n}));
    auto db = cu::DeviceBuffer::fromHost(f32Buffer(bias, {n}));
    ASSERT_TRUE(dx && dw && db);
    cu::DeviceBuffer dy = poisoned(DType::bf16, {rows, n});
    const float eps = 1e-5f;
    Args args;
    args.memref(*dx, {rows, n})
        .memref(*dw, {n})
        .memref(*db, {n})
        .memref(dy, {rows, n})
        .f32(eps);
    launch("layernorm_bf16", {{unsigned((rows + 1) / 2), 1, 1}, {256, 1, 1}},
           args);
    HostBuffer y = result(dy);
    for (int64_t r = 0; r < rows; ++r) {
      // The kernel sees the bf16-rounded inputs.
      double mean = 0, var = 0;
      for (int64_t j = 0; j < n; ++j)
        mean += fromBf16(toBf16(x[r * n + j]));
      mean /= n;
      for (int64_t j = 0; j < n; ++j) {
        double d = fromBf16(toBf16(x[r * n + j])) - mean;
        var += d * d;
      }
      var /= n;
      for (int64_t j = 0; j < n; ++j) {
        double xn =
            (fromBf16(toBf16(x[r * n + j])) - mean) / std::sqrt(var + eps);
        double want = xn * w[j] + bias[j];
        double got = fromBf16(y.as<uint16_t>()[r * n + j]);
        // One bf16 rounding of the output (relative 2^-8).
        ASSERT_NEAR(got, want, 1e-3 + std::abs(want) * (1.0 / 256))
            << "n " << n << " row " << r << " col " << j;
      }
    }
  }
}

TEST_P(TileKernels, Transpose) {
  const int64_t rows = 70, cols = 150; // neither a multiple of the block
  auto x = randomValues(rows * cols, -1.0f, 1.0f, 3);
  auto dx = cu::DeviceBuffer::fromHost(f32Buffer(x, {rows, cols}));
  ASSERT_TRUE(bool(dx));
  cu::DeviceBuffer dy = poisoned(DType::f32, {cols, rows});
  Args args;
  args.memref(*dx, {rows, cols}).memref(dy, {cols, rows});
  launch("transpose",
         {{unsigned((rows + 31) / 32), unsigned((cols + 63) / 64), 1},
          {128, 1, 1}},
         args);
  HostBuffer y = result(dy);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      ASSERT_EQ(y.as<float>()[j * rows + i], x[i * cols + j]) << i << "," << j;
}

TEST_P(TileKernels, MatmulOnFmas) {
  const int64_t m = 75, k = 41, n = 66;
  auto a = randomValues(m * k, -1.0f, 1.0f, 11);
  auto bm = randomValues(k * n, -1.0f, 1.0f, 12);
  auto da = cu::DeviceBuffer::fromHost(f32Buffer(a, {m, k}));
  auto db = cu::DeviceBuffer::fromHost(f32Buffer(bm, {k, n}));
  ASSERT_TRUE(da && db);
  cu::DeviceBuffer dc = poisoned(DType::f32, {m, n});
  Args args;
  args.memref(*da, {m, k}).memref(*db, {k, n}).memref(dc, {m, n});
  launch("matmul_fma",
         {{unsigned((m + 31) / 32), unsigned((n + 31) / 32), 1}, {128, 1, 1}},
         args);
  HostBuffer c = result(dc);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < k; ++p)
        want += double(a[i * k + p]) * bm[p * n + j];
      ASSERT_NEAR(c.as<float>()[i * n + j], want, 1e-5) << i << "," << j;
    }
}

TEST_P(TileKernels, Bf16MatmulOnTensorCores) {
  // 64x64 blocks: the edges of 150 x 200 are partial blocks; K = 96 is
  // three 32-wide steps.
  const int64_t m = 150, k = 96, n = 200;
  auto a = randomValues(m * k, -1.0f, 1.0f, 31);
  auto bm = randomValues(k * n, -1.0f, 1.0f, 32);
  auto da = cu::DeviceBuffer::fromHost(bf16Buffer(a, {m, k}));
  auto db = cu::DeviceBuffer::fromHost(bf16Buffer(bm, {k, n}));
  ASSERT_TRUE(da && db);
  cu::DeviceBuffer dc = poisoned(DType::f32, {m, n});
  Args args;
  args.memref(*da, {m, k}).memref(*db, {k, n}).memref(dc, {m, n});
  launch("matmul_bf16",
         {{unsigned((m + 63) / 64), unsigned((n + 63) / 64), 1}, {128, 1, 1}},
         args);
  HostBuffer c = result(dc);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      // Products of bf16 values are exact in f32; only the f32 sums round.
      double want = 0;
      for (int64_t p = 0; p < k; ++p)
        want += double(fromBf16(toBf16(a[i * k + p]))) *
                fromBf16(toBf16(bm[p * n + j]));
      ASSERT_NEAR(c.as<float>()[i * n + j], want, 1e-4) << i << "," << j;
    }
}

TEST_P(TileKernels, CausalFlashAttention) {
  checkFlashAttention("flash_attention_causal", 32, 32);
  // 64-query blocks, head dim 64 (wgmma for Q K^T in the sm_90a build).
  checkFlashAttention("flash_attention_causal_64", 64, 64);
}

void TileKernels::checkFlashAttention(const char *kernel, int64_t block,
                                      int64_t d) {
  for (int64_t s : {128, 77, 200}) {
    auto q = randomValues(s * d, -1.0f, 1.0f, 21);
    auto kk = randomValues(s * d, -1.0f, 1.0f, 22);
    auto v = randomValues(s * d, -1.0f, 1.0f, 23);
    auto dq = cu::DeviceBuffer::fromHost(bf16Buffer(q, {s, d}));
    auto dk = cu::DeviceBuffer::fromHost(bf16Buffer(kk, {s, d}));
    auto dv = cu::DeviceBuffer::fromHost(bf16Buffer(v, {s, d}));
    ASSERT_TRUE(dq && dk && dv);
    cu::DeviceBuffer dout = poisoned(DType::bf16, {s, d});
    const float scale = 1.0f / std::sqrt(float(d));
    Args args;
    args.memref(*dq, {s, d})
        .memref(*dk, {s, d})
        .memref(*dv, {s, d})
        .memref(dout, {s, d})
        .f32(scale);
    launch(kernel, {{unsigned((s + block - 1) / block), 1, 1}, {128, 1, 1}},
           args);
    HostBuffer o = result(dout);
    auto at = [](const std::vector<float> &t, int64_t i) {
      return double(fromBf16(toBf16(t[i])));
    };
    for (int64_t i = 0; i < s; ++i) {
      std::vector<double> p(i + 1);
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += at(q, i * d + c) * at(kk, j * d + c);
        p[j] = dot * scale;
        mx = std::max(mx, p[j]);
      }
      for (double &x : p)
        sum += (x = std::exp(x - mx));
      for (int64_t c = 0; c < d; ++c) {
        double want = 0;
        for (int64_t j = 0; j <= i; ++j)
          want += p[j] * at(v, j * d + c);
        want /= sum;
        double got = fromBf16(o.as<uint16_t>()[i * d + c]);
        // P is rounded to bf16 before P @ V, as flash attention does, and
        // the output once more: bf16-operand bounds.
        ASSERT_NEAR(got, want, 1e-2 * (1 + std::abs(want)))
            << kernel << " s " << s << " query " << i << " col " << c;
      }
    }
  }
}

} // namespace

INSTANTIATE_TEST_SUITE_P(Builds, TileKernels,
                         ::testing::Values("tile_kernels.ptx",
                                           "tile_kernels_sm90a.ptx"),
                         [](const auto &info) {
                           return std::string(info.param) == "tile_kernels.ptx"
                                      ? "Sm80"
                                      : "Sm90a";
                         });

//===----------------------------------------------------------------------===//
// Hopper warpgroup MMAs (wgmma_kernels.mlir, compiled for sm_90a)
//===----------------------------------------------------------------------===//

class WgmmaKernels : public TileKernels {
protected:
  std::string kernelFile() const override { return "wgmma_kernels.ptx"; }

  void SetUp() override {
    if (cu::available()) {
      auto info = cu::deviceInfo();
      ASSERT_TRUE(bool(info)) << info.error().message;
      if (info->major != 9 || info->minor != 0)
        GTEST_SKIP() << "wgmma kernels are built for sm_90a; the GPU is "
                     << info->describe();
    }
    TileKernels::SetUp();
  }

  /// C = A @ B for bf16 A [m, k], B [k, n] with `kernel` on bm x bn blocks
  /// of `threads`, against a double-precision product of the rounded
  /// inputs.
  void checkGemm(const std::string &kernel, int64_t bm, int64_t bn,
                 unsigned threads, int64_t m, int64_t k, int64_t n,
                 unsigned seed) {
    auto a = randomValues(m * k, -1.0f, 1.0f, seed);
    auto bm_ = randomValues(k * n, -1.0f, 1.0f, seed + 1);
    auto da = cu::DeviceBuffer::fromHost(bf16Buffer(a, {m, k}));
    auto db = cu::DeviceBuffer::fromHost(bf16Buffer(bm_, {k, n}));
    ASSERT_TRUE(da && db);
    cu::DeviceBuffer dc = poisoned(DType::f32, {m, n});
    Args args;
    args.memref(*da, {m, k}).memref(*db, {k, n}).memref(dc, {m, n});
    auto kern = module->kernel(kernel);
    ASSERT_TRUE(bool(kern)) << kern.error().message;
    EXPECT_GT(kern->requiredDynamicSharedMemory(), 0u)
        << kernel << " should declare its shared tiles";
    launch(kernel,
           {{unsigned((m + bm - 1) / bm), unsigned((n + bn - 1) / bn), 1},
            {threads, 1, 1}},
           args);
    HostBuffer c = result(dc);
    std::vector<double> ad(m * k), bd(k * n);
    for (int64_t i = 0; i < m * k; ++i)
      ad[i] = fromBf16(toBf16(a[i]));
    for (int64_t i = 0; i < k * n; ++i)
      bd[i] = fromBf16(toBf16(bm_[i]));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        // Products of bf16 values are exact in f32; only the sums round.
        double want = 0;
        for (int64_t p = 0; p < k; ++p)
          want += ad[i * k + p] * bd[p * n + j];
        ASSERT_NEAR(c.as<float>()[i * n + j], want, 2e-4 * std::sqrt(k))
            << kernel << " " << m << "x" << k << "x" << n << " at " << i << ","
            << j;
      }
  }
};

/// The value of an fp8 e4m3fn byte (bias 7, no infinities; 0x7f and 0xff
/// are NaN).
double fromE4M3(uint8_t v) {
  int sign = v >> 7, exp = (v >> 3) & 15, man = v & 7;
  double mag = exp == 0 ? std::ldexp(man / 8.0, -6)
                        : std::ldexp(1.0 + man / 8.0, exp - 7);
  return sign ? -mag : mag;
}

class WgmmaTransposedB : public WgmmaKernels {
protected:
  /// C = A @ Bt^T for A [m, k] and Bt [n, k] (bf16, or fp8 e4m3 bytes with
  /// exponents 4..9: magnitudes 1/8 to 7.5), against double precision.
  void check(const std::string &kernel, int64_t bm, int64_t bn,
             unsigned threads, int64_t m, int64_t k, int64_t n, unsigned seed,
             bool fp8) {
    std::mt19937 gen(seed);
    std::vector<double> ad(m * k), bd(n * k);
    auto fill = [&](std::vector<double> &vals, std::vector<int64_t> shape) {
      auto h = HostBuffer::allocate(fp8 ? DType::f8E4M3FN : DType::bf16, shape);
      EXPECT_TRUE(bool(h));
      std::uniform_real_distribution<float> real(-1.0f, 1.0f);
      std::uniform_int_distribution<int> exp(4, 9), man(0, 7), sign(0, 1);
      for (size_t i = 0; i < vals.size(); ++i) {
        if (fp8) {
          auto byte = uint8_t(sign(gen) << 7 | exp(gen) << 3 | man(gen));
          h->as<uint8_t>()[i] = byte;
          vals[i] = fromE4M3(byte);
        } else {
          uint16_t x = toBf16(real(gen));
          h->as<uint16_t>()[i] = x;
          vals[i] = fromBf16(x);
        }
      }
      auto dev = cu::DeviceBuffer::fromHost(*h);
      EXPECT_TRUE(bool(dev));
      return std::move(*dev);
    };
    cu::DeviceBuffer da = fill(ad, {m, k}), db = fill(bd, {n, k});
    cu::DeviceBuffer dc = poisoned(DType::f32, {m, n});
    Args args;
    args.memref(da, {m, k}).memref(db, {n, k}).memref(dc, {m, n});
    launch(kernel,
           {{unsigned((m + bm - 1) / bm), unsigned((n + bn - 1) / bn), 1},
            {threads, 1, 1}},
           args);
    HostBuffer c = result(dc);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        // Products are exact; the sums round, relative to the sum of
        // magnitudes: in f32 for bf16, and for fp8 in the tensor cores'
        // narrower accumulator (about 14 bits kept as each 32-deep step is
        // added, as cuBLAS's fast fp8 accumulation).
        double want = 0, scale = 0;
        for (int64_t p = 0; p < k; ++p) {
          want += ad[i * k + p] * bd[j * k + p];
          scale += std::abs(ad[i * k + p] * bd[j * k + p]);
        }
        double tol = fp8 ? (k / 32 + 1) * std::ldexp(1.0, -13) : 1e-6;
        ASSERT_NEAR(c.as<float>()[i * n + j], want, tol * scale + 1e-6)
            << kernel << " " << m << "x" << k << "x" << n << " at " << i << ","
            << j;
      }
  }
};

TEST_F(WgmmaTransposedB, Bf16WithKContiguousB) {
  check("wgmma_nt_128x128x64_s3", 128, 128, 256, 200, 264, 328, 53, false);
  // Unaligned rows (K = 100) take the element path.
  check("wgmma_nt_128x128x64_s3", 128, 128, 256, 130, 100, 140, 55, false);
}

TEST_F(WgmmaTransposedB, Fp8E4M3) {
  check("wgmma_fp8_64x256x128_s3", 64, 256, 256, 100, 640, 300, 57, true);
  // K = 200 bytes per row: not 16-byte aligned, element path; K ends
  // inside a step.
  check("wgmma_fp8_64x256x128_s3", 64, 256, 256, 70, 200, 260, 59, true);
}

TEST_F(WgmmaKernels, ThreeStageRingWithPartialBlocks) {
  // Aligned rows (16-byte copies); M, N and K end inside a block.
  checkGemm("wgmma_128x128x64_s3", 128, 128, 256, 200, 264, 328, 41);
  // K shorter than the ring: the first stages' copies read nothing.
  checkGemm("wgmma_128x128x64_s3", 128, 128, 256, 128, 64, 128, 43);
}

TEST_F(WgmmaKernels, UnalignedRowsTakeTheElementPath) {
  // K = 100 and N = 300 elements: rows are not 16-byte multiples.
  checkGemm("wgmma_128x128x64_s3", 128, 128, 256, 130, 100, 300, 45);
}

TEST_F(WgmmaKernels, OneWarpgroupM64N256) {
  checkGemm("wgmma_64x256x32_s2", 64, 256, 128, 150, 224, 520, 47);
}

TEST_F(WgmmaKernels, WarpgroupsAlongNWithoutStages) {
  checkGemm("wgmma_64x128x16_n2", 64, 128, 256, 100, 80, 264, 49);
}
