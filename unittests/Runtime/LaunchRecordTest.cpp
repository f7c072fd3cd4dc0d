//===- LaunchRecordTest.cpp - The launch record of GPU kernels ------------===//
//
// The compiler writes a kernel's launch record as int32 words and the
// runtime reads them back from the loaded module: a record round-trips,
// and damaged words are refused with a message naming the kernel and the
// field instead of launching with a wrong block, shared size or map.
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/LaunchRecord.h"

#include <gtest/gtest.h>

#include <random>

using tessera::runtime::KernelLaunchRecord;

namespace {

KernelLaunchRecord specialized() {
  KernelLaunchRecord r;
  r.consumerThreads = 256;
  r.producerThreads = 128;
  r.dynamicSharedBytes = 133120;
  r.parameterSlots = 21;
  r.cluster = 2;
  r.tensorMapTable = true;
  r.maps = {{0, 2, 2, 64, 128, 128}, {7, 2, 2, 64, 64, 128}};
  return r;
}

std::string decodeError(const std::vector<int32_t> &words) {
  KernelLaunchRecord out;
  std::string error;
  EXPECT_FALSE(KernelLaunchRecord::decode(words.data(), words.size(), "k",
                                          out, error));
  return error;
}

TEST(LaunchRecord, RoundTrips) {
  for (const KernelLaunchRecord &r : {KernelLaunchRecord(), specialized()}) {
    std::vector<int32_t> words = r.encode();
    EXPECT_EQ(words.size(), KernelLaunchRecord::kHeaderWords +
                                KernelLaunchRecord::kMapWords * r.maps.size());
    KernelLaunchRecord back;
    std::string error;
    ASSERT_TRUE(KernelLaunchRecord::decode(words.data(), words.size(), "k",
                                           back, error))
        << error;
    EXPECT_EQ(back, r);
  }
  // The words the GPU lowering writes for a warp-specialized GEMM (the lit
  // test of -tessera-convert-ttile-to-gpu shows the same).
  EXPECT_EQ(specialized().encode(),
            (std::vector<int32_t>{3, 256, 128, 133120, 21, 2, 1, 2, 0, 2, 2,
                                  64, 128, 128, 7, 2, 2, 64, 64, 128}));
  EXPECT_EQ(specialized().blockThreads(), 384);
}

TEST(LaunchRecord, DamagedWordsAreRefused) {
  std::vector<int32_t> good = specialized().encode();
  EXPECT_NE(decodeError({}).find("version (none)"), std::string::npos);
  auto with = [&](size_t at, int32_t v) {
    std::vector<int32_t> w = good;
    w[at] = v;
    return decodeError(w);
  };
  EXPECT_EQ(with(0, 2), "kernel 'k': its launch record is of version 2; this "
                        "runtime reads version 3 (recompile the kernel)");
  EXPECT_NE(with(1, 100).find("100 threads to its warps"), std::string::npos);
  EXPECT_NE(with(1, 1024).find("1152 threads a block"), std::string::npos);
  EXPECT_NE(with(2, 64).find("64 threads to its producer"), std::string::npos);
  EXPECT_NE(with(3, -1).find("-1 bytes of shared memory"), std::string::npos);
  EXPECT_NE(with(5, 16).find("16 programs a cluster"), std::string::npos);
  EXPECT_NE(with(6, 2).find("tensor-map table flag"), std::string::npos);
  EXPECT_NE(with(7, 3).find("20 words for 3 tensor maps"), std::string::npos);
  // A map past the parameters, of rank 6, of 3-byte elements, a box of 512.
  EXPECT_NE(with(14, 20).find("malformed tensor map 1"), std::string::npos);
  EXPECT_NE(with(9, 6).find("malformed tensor map 0"), std::string::npos);
  EXPECT_NE(with(10, 3).find("malformed tensor map 0"), std::string::npos);
  EXPECT_NE(with(12, 512).find("malformed tensor map 0"), std::string::npos);
  // Maps without a table to pass them in.
  std::vector<int32_t> noTable = good;
  noTable[6] = 0;
  EXPECT_NE(decodeError(noTable).find("2 tensor maps"), std::string::npos);
  // Cut short.
  EXPECT_NE(decodeError({good.begin(), good.begin() + 5}).find("5 words"),
            std::string::npos);
  EXPECT_NE(decodeError({good.begin(), good.end() - 1}).find("19 words"),
            std::string::npos);
}

// Random words never crash the decoder, and whatever it accepts encodes
// back to the same words.
TEST(LaunchRecord, RandomWords) {
  std::mt19937 rng(11);
  std::vector<int32_t> good = specialized().encode();
  int accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<int32_t> w = good;
    w.resize(std::uniform_int_distribution<size_t>(0, good.size() + 2)(rng));
    for (int k = 0, n = std::uniform_int_distribution<int>(0, 3)(rng);
         k < n && !w.empty(); ++k)
      w[std::uniform_int_distribution<size_t>(0, w.size() - 1)(rng)] =
          std::uniform_int_distribution<int32_t>(-4, 300)(rng);
    KernelLaunchRecord out;
    std::string error;
    if (KernelLaunchRecord::decode(w.data(), w.size(), "k", out, error)) {
      EXPECT_EQ(out.encode(), w);
      ++accepted;
    } else {
      EXPECT_NE(error.find("kernel 'k'"), std::string::npos);
    }
  }
  EXPECT_GT(accepted, 100);
}

} // namespace
