//===- CudaTest.cpp - The CUDA runtime -----------------------------------===//
//
// On a machine without a GPU only the first test runs (calls fail with the
// reason); the others skip, saying why.
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Cuda.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <sstream>

using namespace tessera::runtime;
namespace cu = tessera::runtime::cuda;

namespace {

#define REQUIRE_GPU()                                                          \
  do {                                                                         \
    if (!cu::available())                                                      \
      GTEST_SKIP() << "no GPU: " << cu::unavailableReason();                   \
  } while (false)

/// y = a * x + y over n floats, one thread per element.
const char *kAxpyPtx = R"(
.version 8.0
.target sm_80
.address_size 64

.visible .entry axpy(.param .u64 x_param, .param .u64 y_param,
                     .param .f32 a_param, .param .u32 n_param)
{
  .reg .pred p;
  .reg .b32 r<6>;
  .reg .f32 f<4>;
  .reg .b64 rd<8>;
  ld.param.u64 rd1, [x_param];
  ld.param.u64 rd2, [y_param];
  ld.param.f32 f1, [a_param];
  ld.param.u32 r1, [n_param];
  mov.u32 r2, %ctaid.x;
  mov.u32 r3, %ntid.x;
  mov.u32 r4, %tid.x;
  mad.lo.s32 r5, r2, r3, r4;
  setp.ge.u32 p, r5, r1;
  @p bra DONE;
  cvta.to.global.u64 rd3, rd1;
  cvta.to.global.u64 rd4, rd2;
  mul.wide.u32 rd5, r5, 4;
  add.s64 rd6, rd3, rd5;
  add.s64 rd7, rd4, rd5;
  ld.global.f32 f2, [rd6];
  ld.global.f32 f3, [rd7];
  fma.rn.f32 f3, f1, f2, f3;
  st.global.f32 [rd7], f3;
DONE:
  ret;
}
)";

HostBuffer iota(int64_t n, float scale) {
  auto b = HostBuffer::allocate(DType::f32, {n});
  EXPECT_TRUE(bool(b));
  for (int64_t i = 0; i < n; ++i)
    b->as<float>()[i] = float(i) * scale;
  return *b;
}

TEST(Cuda, WithoutAGpuCallsFailWithTheReason) {
  if (cu::available())
    GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(cu::unavailableReason().empty());
  EXPECT_EQ(cu::deviceCount(), 0);
  auto b = cu::DeviceBuffer::allocate(DType::f32, {4});
  ASSERT_FALSE(bool(b));
  EXPECT_NE(b.error().message.find("CUDA is not available: " +
                                   cu::unavailableReason()),
            std::string::npos)
      << b.error().message;
  EXPECT_FALSE(bool(cu::Stream::create()));
}

TEST(Cuda, DescribesTheDevice) {
  REQUIRE_GPU();
  auto info = cu::deviceInfo(0);
  ASSERT_TRUE(bool(info)) << info.error().message;
  EXPECT_GE(info->major, 7);
  EXPECT_GT(info->multiprocessors, 0);
  EXPECT_GT(info->totalMemory, std::size_t(1) << 30);
  EXPECT_GE(info->maxSharedMemoryPerBlock, std::size_t(48) << 10);
  std::cout << info->describe() << "\n";
  auto bad = cu::deviceInfo(cu::deviceCount());
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(bad.error().message.find("does not exist"), std::string::npos);
}

TEST(Cuda, CopiesRoundTripAndZeros) {
  REQUIRE_GPU();
  HostBuffer x = iota(1000, 0.5f);
  auto d = cu::DeviceBuffer::fromHost(x);
  ASSERT_TRUE(bool(d)) << d.error().message;
  EXPECT_EQ(d->describe(), "f32[1000] on cuda:0");
  auto back = d->toHost();
  ASSERT_TRUE(bool(back)) << back.error().message;
  EXPECT_EQ(std::memcmp(back->data(), x.data(), x.byteSize()), 0);
  auto z = cu::DeviceBuffer::zeros(DType::f64, {3, 5});
  ASSERT_TRUE(bool(z));
  auto zh = z->toHost();
  for (int i = 0; i < 15; ++i)
    EXPECT_EQ(zh->as<double>()[i], 0.0);
  // A copy of the wrong shape is refused, naming both.
  auto wrong = d->copyFromHost(iota(999, 1.0f));
  ASSERT_FALSE(bool(wrong));
  EXPECT_NE(wrong.error().message.find("cannot copy f32[999] into f32[1000] "
                                       "on cuda:0"),
            std::string::npos);
}

TEST(Cuda, LaunchesAPtxKernelOnAStreamAndTimesIt) {
  REQUIRE_GPU();
  auto module = cu::Module::loadPtx(kAxpyPtx);
  ASSERT_TRUE(bool(module)) << module.error().message;
  auto kernel = module->kernel("axpy");
  ASSERT_TRUE(bool(kernel)) << kernel.error().message;
  auto stream = cu::Stream::create();
  ASSERT_TRUE(bool(stream)) << stream.error().message;
  const unsigned n = 1u << 20;
  HostBuffer x = iota(n, 1.0f), y = iota(n, -0.25f);
  auto dx = cu::DeviceBuffer::fromHost(x, 0, &*stream);
  auto dy = cu::DeviceBuffer::fromHost(y, 0, &*stream);
  ASSERT_TRUE(dx && dy);
  auto start = cu::Event::create(), end = cu::Event::create();
  ASSERT_TRUE(start && end);
  std::uint64_t px = dx->pointer(), py = dy->pointer();
  float a = 3.0f;
  unsigned count = n;
  ASSERT_TRUE(bool(start->record(*stream)));
  Status launched = kernel->launch({{(n + 255) / 256, 1, 1}, {256, 1, 1}},
                                   *stream, {&px, &py, &a, &count});
  ASSERT_TRUE(bool(launched)) << launched.error().message;
  ASSERT_TRUE(bool(end->record(*stream)));
  auto out = dy->toHost(&*stream);
  ASSERT_TRUE(bool(out)) << out.error().message;
  for (unsigned i = 0; i < n; i += 4099)
    ASSERT_EQ(out->as<float>()[i], std::fma(3.0f, float(i), -0.25f * i)) << i;
  auto ms = cu::Event::elapsedMs(*start, *end);
  ASSERT_TRUE(bool(ms)) << ms.error().message;
  EXPECT_GT(*ms, 0.0f);
  EXPECT_LT(*ms, 100.0f);
}

/// The text of a kernel file generated at build time; the folder is
/// TESSERA_CUDA_TEST_KERNELS when set (a run on another machine).
std::string generatedKernel(const std::string &name) {
  const char *dir = std::getenv("TESSERA_CUDA_TEST_KERNELS");
  std::ifstream in(std::string(dir ? dir : TESSERA_CUDA_TEST_KERNELS) + "/" +
                   name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Cuda, RunsAKernelGeneratedThroughNvvm) {
  REQUIRE_GPU();
  // axpy_gpu.mlir through tessera-opt's NVVM pipeline (sm_80 PTX, which the
  // driver compiles for this GPU).
  std::string ptx = generatedKernel("axpy_gpu.ptx");
  ASSERT_FALSE(ptx.empty()) << "axpy_gpu.ptx was not generated";
  auto module = cu::Module::loadPtx(ptx);
  ASSERT_TRUE(bool(module)) << module.error().message;
  auto kernel = module->kernel("axpy");
  ASSERT_TRUE(bool(kernel)) << kernel.error().message;
  auto stream = cu::Stream::create();
  const int64_t n = 100003; // not a multiple of the block
  HostBuffer x = iota(n, 0.5f), y = iota(n, 2.0f);
  auto dx = cu::DeviceBuffer::fromHost(x), dy = cu::DeviceBuffer::fromHost(y);
  ASSERT_TRUE(dx && dy);
  // Each memref<?xf32> is passed as its descriptor: allocated and aligned
  // pointers, offset, size, stride.
  std::uint64_t px = dx->pointer(), py = dy->pointer();
  int64_t offset = 0, size = n, stride = 1, count = n;
  float a = -1.5f;
  std::vector<void *> args = {&px, &px,     &offset, &size,   &stride, &py,
                              &py, &offset, &size,   &stride, &a,      &count};
  Status launched = kernel->launch(
      {{unsigned((n + 127) / 128), 1, 1}, {128, 1, 1}}, *stream, args);
  ASSERT_TRUE(bool(launched)) << launched.error().message;
  auto out = dy->toHost(&*stream);
  ASSERT_TRUE(bool(out)) << out.error().message;
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out->as<float>()[i], std::fma(-1.5f, 0.5f * i, 2.0f * i)) << i;
}

TEST(Cuda, ReportsBadCodeAndLaunches) {
  REQUIRE_GPU();
  auto broken = cu::Module::loadPtx(".version 8.0\n.target sm_80\n"
                                    ".address_size 64\n.visible .entry k() "
                                    "{ frobnicate; }\n");
  ASSERT_FALSE(bool(broken));
  EXPECT_NE(broken.error().message.find("cannot load PTX on cuda:0"),
            std::string::npos)
      << broken.error().message;
  EXPECT_NE(broken.error().message.find("frobnicate"), std::string::npos)
      << "the driver's log names the bad line: " << broken.error().message;
  auto module = cu::Module::loadPtx(kAxpyPtx);
  ASSERT_TRUE(bool(module));
  auto missing = module->kernel("saxpy");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(missing.error().message.find("no kernel named 'saxpy'"),
            std::string::npos);
  auto kernel = module->kernel("axpy");
  auto stream = cu::Stream::create();
  std::uint64_t p = 0;
  float a = 1;
  unsigned n = 0;
  Status tooBig =
      kernel->launch({{1, 1, 1}, {4096, 1, 1}}, *stream, {&p, &p, &a, &n});
  ASSERT_FALSE(bool(tooBig));
  EXPECT_NE(tooBig.error().message.find("cannot launch kernel 'axpy' with "
                                        "grid (1, 1, 1), block (4096, 1, 1)"),
            std::string::npos)
      << tooBig.error().message;
  EXPECT_FALSE(
      bool(kernel->launch({{0, 1, 1}, {1, 1, 1}}, *stream, {&p, &p, &a, &n})));
}

// Kernels with launch records (as the Tile IR lowering writes them, see
// tessera/Runtime/LaunchRecord.h). `k`: one 2-d bf16 memref read in 64 x 64
// boxes, 256 consumer threads and a producer's 128, the tensor-map address
// as its eighth parameter; it stores the map's "usable" flag (after the
// 128-byte map) into the memref's first element.
std::string launchRecordGlobal(const std::string &kernel,
                               const std::vector<std::int32_t> &words) {
  std::string out = ".visible .global .align 4 .b8 tessera_launch_" + kernel +
                    "[" + std::to_string(4 * words.size()) + "] = {";
  for (size_t i = 0; i < words.size(); ++i)
    for (int byte = 0; byte < 4; ++byte)
      out += (i || byte ? ", " : "") +
             std::to_string((std::uint32_t(words[i]) >> (8 * byte)) & 0xff);
  return out + "};\n";
}

std::string tmaRecordPtx() {
  std::vector<std::int32_t> k = {3, 256, 128, 0, 7, 1, 1, 1,
                                 0, 2,   2,   64, 64, 128};
  std::vector<std::int32_t> badRank = k;
  badRank[9] = 7;
  return std::string(".version 8.0\n.target sm_90\n.address_size 64\n") +
         launchRecordGlobal("k", k) +
         launchRecordGlobal("bad_version", {2, 128, 256, 8, 0, 1}) +
         launchRecordGlobal("pair", {3, 256, 128, 0, 0, 2, 1, 0}) +
         launchRecordGlobal("bad_cluster", {3, 256, 128, 0, 0, 16, 1, 0}) +
         launchRecordGlobal("bad_rank", badRank) +
         launchRecordGlobal("cut", {3, 256, 0}) +
         launchRecordGlobal("plain", {3, 64, 0, 65536, 0, 1, 0, 0}) + R"(
.visible .entry k(.param .u64 p0, .param .u64 p1, .param .u64 p2,
                  .param .u64 p3, .param .u64 p4, .param .u64 p5,
                  .param .u64 p6, .param .u64 p7)
{
  .reg .b64 rd<3>;
  .reg .b32 r<2>;
  ld.param.u64 rd1, [p1];
  ld.param.u64 rd2, [p7];
  cvta.to.global.u64 rd1, rd1;
  cvta.to.global.u64 rd2, rd2;
  ld.global.u32 r1, [rd2+128];
  st.global.u32 [rd1], r1;
  ret;
}
.visible .entry bad_version() { ret; }
.visible .entry pair(.param .u64 t) { barrier.cluster.arrive; barrier.cluster.wait; ret; }
.visible .entry bad_cluster(.param .u64 t) { ret; }
.visible .entry bad_rank() { ret; }
.visible .entry cut() { ret; }
.extern .shared .align 16 .b8 smem[];
.visible .entry plain()
{
  .reg .b32 r<2>;
  mov.u32 r1, 65532;
  st.shared.u32 [smem+65532], r1;
  ret;
}
)";
}

TEST(Cuda, ChecksTmaLaunchRecordsAndMakesTensorMaps) {
  REQUIRE_GPU();
  auto info = cu::deviceInfo(0);
  ASSERT_TRUE(bool(info));
  if (info->major < 9)
    GTEST_SKIP() << "TMA: Hopper or newer";
  auto module = cu::Module::loadPtx(tmaRecordPtx());
  ASSERT_TRUE(bool(module)) << module.error().message;
  auto badVersion = module->kernel("bad_version");
  ASSERT_FALSE(bool(badVersion));
  EXPECT_NE(badVersion.error().message.find("is of version 2; this runtime "
                                            "reads version 3"),
            std::string::npos)
      << badVersion.error().message;
  auto badRank = module->kernel("bad_rank");
  ASSERT_FALSE(bool(badRank));
  EXPECT_NE(badRank.error().message.find("malformed tensor map 0"),
            std::string::npos)
      << badRank.error().message;
  auto cut = module->kernel("cut");
  ASSERT_FALSE(bool(cut));
  EXPECT_NE(cut.error().message.find("3 words"), std::string::npos)
      << cut.error().message;

  auto badCluster = module->kernel("bad_cluster");
  ASSERT_FALSE(bool(badCluster));
  EXPECT_NE(badCluster.error().message.find("16 programs a cluster"),
            std::string::npos)
      << badCluster.error().message;

  auto kernel = module->kernel("k");
  ASSERT_TRUE(bool(kernel)) << kernel.error().message;
  EXPECT_EQ(kernel->extraThreads(), 128u);
  ASSERT_TRUE(kernel->launchRecord());
  EXPECT_EQ(kernel->launchRecord()->maps.size(), 1u);
  auto stream = cu::Stream::create();
  ASSERT_TRUE(bool(stream));

  // A kernel of 64 threads and 64 KiB of dynamic shared memory, more than
  // a block gets without opting in: the record's size is opted in to and
  // passed; a block of other than 64 threads is refused.
  auto plain = module->kernel("plain");
  ASSERT_TRUE(bool(plain)) << plain.error().message;
  EXPECT_EQ(plain->requiredDynamicSharedMemory(), 65536u);
  EXPECT_EQ(plain->extraThreads(), 0u);
  Status plainRun = plain->launch({{2, 1, 1}, {64, 1, 1}}, *stream, {});
  ASSERT_TRUE(bool(plainRun)) << plainRun.error().message;
  ASSERT_TRUE(bool(stream->synchronize()));
  Status plainBlock = plain->launch({{2, 1, 1}, {128, 1, 1}}, *stream, {});
  ASSERT_FALSE(bool(plainBlock));
  EXPECT_NE(plainBlock.error().message.find("runs on blocks of 64 threads"),
            std::string::npos)
      << plainBlock.error().message;

  // A kernel of clusters of 2 programs: launched in clusters (its
  // threads meet at a cluster barrier), on a grid whose dim 0 holds whole
  // clusters.
  auto pair = module->kernel("pair");
  ASSERT_TRUE(bool(pair)) << pair.error().message;
  Status odd = pair->launch({{3, 1, 1}, {256, 1, 1}}, *stream, {});
  ASSERT_FALSE(bool(odd));
  EXPECT_NE(odd.error().message.find("clusters of 2 programs along grid dim "
                                     "0"),
            std::string::npos)
      << odd.error().message;
  Status even = pair->launch({{264, 1, 1}, {256, 1, 1}}, *stream, {});
  ASSERT_TRUE(bool(even)) << even.error().message;
  ASSERT_TRUE(bool(stream->synchronize()));
  auto buffer = cu::DeviceBuffer::zeros(DType::bf16, {64, 64});
  ASSERT_TRUE(bool(buffer));
  std::uint64_t ptr = buffer->pointer();
  // The flag the runtime wrote for a memref at `offset` with row stride
  // `stride` (elements).
  auto flagFor = [&](int64_t offset, int64_t stride) -> int {
    int64_t rows = 64, cols = 32, unit = 1;
    std::vector<void *> args = {&ptr,  &ptr,    &offset, &rows,
                                &cols, &stride, &unit};
    Status st = kernel->launch({{1, 1, 1}, {256, 1, 1}}, *stream, args);
    EXPECT_TRUE(bool(st)) << st.error().message;
    auto host = buffer->toHost(&*stream);
    EXPECT_TRUE(bool(host));
    std::uint32_t flag;
    std::memcpy(&flag, host->data(), sizeof flag);
    return int(flag);
  };
  EXPECT_EQ(flagFor(0, 64), 1) << "16-byte aligned base and rows";
  EXPECT_EQ(flagFor(1, 64), 0) << "a base 2 bytes past alignment";
  EXPECT_EQ(flagFor(0, 60), 0) << "rows of 120 bytes";
  EXPECT_EQ(flagFor(0, 64), 1) << "the table is copied again when it changes";

  std::int64_t zero = 0;
  Status fewArgs =
      kernel->launch({{1, 1, 1}, {256, 1, 1}}, *stream, {&ptr, &ptr, &zero});
  ASSERT_FALSE(bool(fewArgs));
  EXPECT_NE(fewArgs.error().message.find("takes 7 parameter values"),
            std::string::npos)
      << fewArgs.error().message;
  int64_t rows = 64, stride = 64, unit = 1;
  // The block of its warps (256) or the whole block (384), nothing else.
  Status wholeBlock =
      kernel->launch({{1, 1, 1}, {384, 1, 1}}, *stream,
                     {&ptr, &ptr, &zero, &rows, &rows, &stride, &unit});
  ASSERT_TRUE(bool(wholeBlock)) << wholeBlock.error().message;
  Status wrongBlock =
      kernel->launch({{1, 1, 1}, {128, 1, 1}}, *stream,
                     {&ptr, &ptr, &zero, &rows, &rows, &stride, &unit});
  ASSERT_FALSE(bool(wrongBlock));
  EXPECT_NE(wrongBlock.error().message.find("runs on blocks of 256 threads"),
            std::string::npos)
      << wrongBlock.error().message;
}

TEST(Cuda, TheAllocatorReusesFreedBlocksPerStream) {
  REQUIRE_GPU();
  ASSERT_TRUE(bool(cu::releaseCachedMemory()));
  auto before = cu::allocatorStats();
  std::uint64_t first;
  {
    // 512 KiB (small blocks are rounded to 512 bytes).
    auto b = cu::DeviceBuffer::allocate(DType::f32, {1 << 17});
    ASSERT_TRUE(bool(b));
    first = b->pointer();
    EXPECT_EQ(cu::allocatorStats().bytesInUse - before.bytesInUse,
              std::size_t(1) << 19);
  }
  auto cachedStats = cu::allocatorStats();
  EXPECT_EQ(cachedStats.bytesCached, std::size_t(1) << 19);
  // The same size class on the same (default) stream reuses the block.
  auto again = cu::DeviceBuffer::allocate(DType::f32, {(1 << 17) - 7});
  ASSERT_TRUE(bool(again));
  EXPECT_EQ(again->pointer(), first);
  EXPECT_EQ(cu::allocatorStats().cacheHits, before.cacheHits + 1);
  // Another stream does not take it.
  auto stream = cu::Stream::create();
  auto other = cu::DeviceBuffer::allocate(DType::f32, {1 << 17}, 0, &*stream);
  ASSERT_TRUE(bool(other));
  EXPECT_NE(other->pointer(), first);
  // Asking for more than the device has fails with a message, not a crash.
  auto huge = cu::DeviceBuffer::allocate(DType::f32, {int64_t(1) << 40});
  ASSERT_FALSE(bool(huge));
  EXPECT_NE(huge.error().message.find("cannot allocate"), std::string::npos)
      << huge.error().message;
  EXPECT_EQ(cu::allocatorStats().cacheFlushes, before.cacheFlushes + 1);
}

TEST(Cuda, ReplaysALaunchSequenceWithOtherBuffers) {
  REQUIRE_GPU();
  auto module = cu::Module::loadPtx(kAxpyPtx);
  ASSERT_TRUE(bool(module)) << module.error().message;
  auto kernel = module->kernel("axpy");
  ASSERT_TRUE(bool(kernel)) << kernel.error().message;
  auto stream = cu::Stream::create();
  ASSERT_TRUE(bool(stream));
  const unsigned n = 5000;
  // axpy's parameters: x at byte 0, y at 8, a at 16, n at 20.
  auto packed = [&](float a) {
    std::vector<char> p(24, 0);
    std::memcpy(p.data() + 16, &a, 4);
    std::memcpy(p.data() + 20, &n, 4);
    return p;
  };
  std::vector<std::size_t> offsets = {0, 8, 16, 20};
  cu::LaunchConfig config{{(n + 255) / 256, 1, 1}, {256, 1, 1}, 0};
  // y = 0 + 2 x (an intermediate); z = 0 + 3 y, the result.
  cu::LaunchSequence seq(0);
  int x = seq.addArgument();
  auto y = seq.addBuffer(DType::f32, {n}, /*zeroed=*/true);
  ASSERT_TRUE(bool(y));
  ASSERT_TRUE(bool(seq.addLaunch(*kernel, config, packed(2.0f), offsets,
                                 {{0, x, 0}, {8, *y, 0}})));
  auto z = seq.addBuffer(DType::f32, {n}, /*zeroed=*/true);
  ASSERT_TRUE(bool(z));
  ASSERT_TRUE(bool(seq.addLaunch(*kernel, config, packed(3.0f), offsets,
                                 {{0, *y, 0}, {8, *z, 0}})));
  ASSERT_TRUE(bool(seq.markResult(*z)));
  EXPECT_EQ(seq.launchCount(), 2u);

  HostBuffer h1 = iota(n, 1.0f), h2 = iota(n, -0.5f);
  auto d1 = cu::DeviceBuffer::fromHost(h1, 0, &*stream);
  auto d2 = cu::DeviceBuffer::fromHost(h2, 0, &*stream);
  ASSERT_TRUE(d1 && d2);
  auto inUse = cu::allocatorStats().bytesInUse;
  auto r1 = seq.run(*stream, {d1->pointer()});
  ASSERT_TRUE(bool(r1)) << r1.error().message;
  // The intermediate went back to the allocator; the result is kept.
  EXPECT_EQ(cu::allocatorStats().bytesInUse - inUse, 20480u);
  auto r2 = seq.run(*stream, {d2->pointer()});
  ASSERT_TRUE(bool(r2)) << r2.error().message;
  ASSERT_EQ(r1->size(), 1u);
  ASSERT_EQ(r2->size(), 1u);
  EXPECT_NE((*r1)[0].pointer(), (*r2)[0].pointer());
  auto o1 = (*r1)[0].toHost(&*stream), o2 = (*r2)[0].toHost(&*stream);
  ASSERT_TRUE(o1 && o2);
  for (unsigned i = 0; i < n; i += 7) {
    ASSERT_EQ(o1->as<float>()[i], 6.0f * float(i)) << i;
    ASSERT_EQ(o2->as<float>()[i], -3.0f * float(i)) << i;
  }

  // Wrong arguments and malformed launches are refused with the reason.
  auto noArgs = seq.run(*stream, {});
  ASSERT_FALSE(bool(noArgs));
  EXPECT_NE(noArgs.error().message.find("takes 1 arguments, got 0"),
            std::string::npos)
      << noArgs.error().message;
  Status outside =
      seq.addLaunch(*kernel, config, packed(1.0f), offsets, {{20, x, 0}});
  ASSERT_FALSE(bool(outside));
  EXPECT_NE(outside.error().message.find("address at byte 20"),
            std::string::npos)
      << outside.error().message;
  Status unknown =
      seq.addLaunch(*kernel, config, packed(1.0f), offsets, {{0, 9, 0}});
  ASSERT_FALSE(bool(unknown));
  EXPECT_NE(unknown.error().message.find("reads buffer 9"), std::string::npos)
      << unknown.error().message;
  EXPECT_FALSE(bool(seq.markResult(x)));
  EXPECT_FALSE(bool(seq.markResult(*z)));
}

} // namespace
