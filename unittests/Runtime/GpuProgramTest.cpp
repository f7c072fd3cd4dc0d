//===- GpuProgramTest.cpp - GPU program files and their checks ------------===//

#include "tessera/Runtime/Cuda.h"
#include "tessera/Runtime/Executable.h"
#include "tessera/Runtime/GpuProgram.h"

#include <cstdio>

#include <gtest/gtest.h>

using namespace tessera::runtime;
using Image = GpuProgramImage;

namespace {

/// y = k(x) into the workspace, then z = copy of it: an argument, a
/// workspace buffer, a result and a constant.
Image sample() {
  Image img;
  img.compilerVersion = tesseraVersion();
  img.chip = "sm_90a";
  img.name = "f";
  img.workspaceBytes = 512;
  img.storages = {
      {Image::StorageKind::Argument, 0, 0, DType::f32, {4, 8}},
      {Image::StorageKind::Workspace, 0, 256, DType::f32, {32}},
      {Image::StorageKind::Result, 0, 0, DType::f32, {4, 8}},
      {Image::StorageKind::Constant, 0, 0, DType::bf16, {3}},
  };
  img.arguments = {0};
  img.constants = {std::vector<char>(6, '\x3f')};
  Image::Step launch;
  launch.kernel = "f_row0";
  launch.grid = {2, 1, 1};
  launch.operands = {{0, {4, 8}}, {3, {3}}, {1, {4, 8}}};
  // 0.125f and -3 (as i32): the bits the kernel's parameters read.
  launch.scalars = {{DType::f32, 0x3e000000u}, {DType::i32, 0xfffffffdu}};
  Image::Step copy;
  copy.kind = Image::Step::Kind::Copy;
  copy.operands = {{1, {32}}, {2, {32}}};
  img.steps = {launch, copy};
  img.results = {{2, {32}}};
  img.ptx = ".version 8.0\n";
  return img;
}

std::string refusal(const Image &img) {
  Status st = img.verify();
  return st ? std::string() : st.error().message;
}

TEST(GpuProgram, RoundTrips) {
  Image img = sample();
  auto back = Image::decode(img.encode(), "t");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->encode(), img.encode());
  EXPECT_EQ(back->name, "f");
  EXPECT_EQ(back->storages[3].type, DType::bf16);
  EXPECT_EQ(back->steps[0].grid[0], 2);
  EXPECT_EQ(back->steps[1].kind, Image::Step::Kind::Copy);
  EXPECT_EQ(back->constants[0].size(), 6u);
  ASSERT_EQ(back->steps[0].scalars.size(), 2u);
  EXPECT_EQ(back->steps[0].scalars[0].type, DType::f32);
  EXPECT_EQ(back->steps[0].scalars[0].bits, 0x3e000000u);
  EXPECT_EQ(back->steps[0].scalars[1].type, DType::i32);
  EXPECT_EQ(back->steps[0].scalars[1].bits, 0xfffffffdu);
}

TEST(GpuProgram, EveryTruncationIsRefused) {
  std::vector<char> bytes = sample().encode();
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    std::vector<char> cut(bytes.begin(), bytes.begin() + long(n));
    auto r = Image::decode(cut, "t");
    ASSERT_FALSE(r) << n;
    EXPECT_NE(r.error().message.find(n < 8 ? "not a Tessera GPU program"
                                           : "truncated"),
              std::string::npos)
        << n << ": " << r.error().message;
  }
}

TEST(GpuProgram, ChecksItsBuffers) {
  Image img = sample();
  img.storages[1].offset = 448; // 128 bytes at 448 end past 512
  EXPECT_NE(refusal(img).find("lies outside the 512-byte workspace"),
            std::string::npos)
      << refusal(img);

  img = sample();
  img.steps[0].operands[2].shape = {4, 9};
  EXPECT_NE(refusal(img).find("which has another number of elements"),
            std::string::npos)
      << refusal(img);

  img = sample();
  img.results = {{0, {4, 8}}};
  EXPECT_NE(refusal(img).find("not a buffer of its own for the caller"),
            std::string::npos)
      << refusal(img);

  img = sample();
  img.constants[0].pop_back();
  EXPECT_NE(refusal(img).find("its shape needs 6"), std::string::npos)
      << refusal(img);

  img = sample();
  img.steps[0].grid = {0, 1, 1};
  EXPECT_NE(refusal(img).find("on a grid of 0 programs"), std::string::npos)
      << refusal(img);

  img = sample();
  img.storages[2].type = DType::i32;
  EXPECT_NE(refusal(img).find("copies f32 into i32"), std::string::npos)
      << refusal(img);

  img = sample();
  img.steps[0].scalars[0].type = DType::bf16;
  EXPECT_NE(refusal(img).find("step 0 scalar 0 is bf16; kernels take f32, "
                              "i32 or i64 scalars"),
            std::string::npos)
      << refusal(img);

  img = sample();
  img.steps[0].scalars[1].bits = 1ull << 40;
  EXPECT_NE(refusal(img).find("is i32 with bits beyond its 32"),
            std::string::npos)
      << refusal(img);

  img = sample();
  img.steps[1].scalars = {{DType::f32, 0}};
  EXPECT_NE(refusal(img).find("is a copy with scalar parameters"),
            std::string::npos)
      << refusal(img);

  img = sample();
  img.arguments = {1};
  EXPECT_NE(refusal(img).find("which does not name it back"),
            std::string::npos)
      << refusal(img);
}

TEST(GpuProgram, RefusesAnotherRelease) {
  Image img = sample();
  img.compilerVersion = "0.0.0-elsewhere";
  auto r = Image::decode(img.encode(), "t");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("was compiled by Tessera 0.0.0-elsewhere"),
            std::string::npos)
      << r.error().message;
}

/// sample() as compiled from @f(f32[B, 8]) -> (f32["8*B"]) for B = 4.
Image withSignature() {
  Image img = sample();
  img.signature.name = "f";
  img.signature.arguments = {{DType::f32, {"B", "8"}}};
  img.signature.results = {{DType::f32, {"8*B"}}};
  img.dims = {{"B", 4}};
  return img;
}

TEST(GpuProgram, RecordsItsSignatureAndSizes) {
  Image img = withSignature();
  auto back = Image::decode(img.encode(), "t");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->signature.describe(), "@f(f32[B, 8]) -> (f32[8*B])");
  ASSERT_EQ(back->dims.size(), 1u);
  EXPECT_EQ(back->dims.at("B"), 4);
  EXPECT_EQ(back->encode(), img.encode());
}

TEST(GpuProgram, ChecksItsSignatureAgainstItsShapes) {
  // Sizes that give other shapes than the program's.
  Image img = withSignature();
  img.dims["B"] = 5;
  EXPECT_NE(refusal(img).find("says argument 0 is f32[5, 8] for its sizes, "
                              "but the program has f32[4, 8]"),
            std::string::npos)
      << refusal(img);
  // A symbol without a size.
  img = withSignature();
  img.dims.clear();
  EXPECT_NE(refusal(img).find("has a dim 'B' of argument 0 that its sizes do "
                              "not fix"),
            std::string::npos)
      << refusal(img);
  // Another dtype, another count, another function.
  img = withSignature();
  img.signature.results[0].dtype = DType::f16;
  EXPECT_NE(refusal(img).find("says result 0 is f16[32]"), std::string::npos)
      << refusal(img);
  img = withSignature();
  img.signature.arguments.push_back({DType::f32, {"B"}});
  EXPECT_NE(refusal(img).find("has 2 arguments and 1 results; the program 1 "
                              "and 1"),
            std::string::npos)
      << refusal(img);
  img = withSignature();
  img.signature.name = "g";
  EXPECT_NE(refusal(img).find("is not that of its function @f"),
            std::string::npos)
      << refusal(img);
  // decode() checks the same.
  img = withSignature();
  img.dims["B"] = 5;
  auto r = Image::decode(img.encode(), "t");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("for its sizes"), std::string::npos);
}

TEST(GpuProgram, ExecutablesSayWhyTheyCannotRun) {
  // Without a usable GPU (CI has none) an executable of GPU programs is
  // refused at once with the reason; with one, a program without its
  // signature is refused before it is loaded.
  std::vector<Image> programs = {sample()};
  auto exe = Executable::forCuda(0, {}, programs, nullptr, nullptr, "test");
  ASSERT_FALSE(exe);
  if (!cuda::available())
    EXPECT_NE(exe.error().message.find("test: cannot run on cuda:0: " +
                                       cuda::unavailableReason()),
              std::string::npos)
        << exe.error().message;
  else
    EXPECT_NE(exe.error().message.find("does not record its signature"),
              std::string::npos)
        << exe.error().message;
  auto none = Executable::loadGpuPrograms({});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "no GPU program files to load");
  // A damaged file is refused by name before any device is touched.
  std::string path = ::testing::TempDir() + "/damaged.tgpu";
  std::vector<char> bytes = withSignature().encode();
  bytes.back() ^= 1;
  FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_TRUE(f);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  auto damaged = Executable::loadGpuPrograms({path});
  ASSERT_FALSE(damaged);
  EXPECT_NE(damaged.error().message.find(path + ": is corrupted"),
            std::string::npos)
      << damaged.error().message;
  std::remove(path.c_str());
}

TEST(GpuProgram, KeepsSchedulesGraphAndCubin) {
  Image img = withSignature();
  img.steps[0].schedule = "block(16, 64).warps(4)";
  img.graph = "func.func @f(...)";
  img.cubin = {'\x7f', 'E', 'L', 'F', '\0', '\x01'};
  auto back = Image::decode(img.encode(), "t");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->steps[0].schedule, "block(16, 64).warps(4)");
  EXPECT_EQ(back->steps[1].schedule, "");
  EXPECT_EQ(back->graph, "func.func @f(...)");
  EXPECT_EQ(back->cubin, img.cubin);
}

TEST(GpuProgram, ListsWhatItRuns) {
  Image img = sample();
  img.steps[0].schedule = "block(16, 64).warps(4)";
  std::string text = img.listing();
  for (const char *line :
       {"# program f for sm_90a, Tessera ", "\n chip sm_90a\n",
        "\n workspace 512 bytes\n",
        "\n storage s1: workspace +256 f32[32]\n",
        "\n storage s3: constant 0 bf16[3]\n",
        "\n step 0: launch f_row0 grid [2, 1, 1] s0[4, 8] s3[3] s1[4, 8] "
        "f32:0x3e000000 i32:0xfffffffd schedule block(16, 64).warps(4)\n",
        "\n step 1: copy s1[32] s2[32]\n", "\n result 0: s2[32]\n",
        "\n constant 0: 6 bytes, fnv1a ", "\n ptx 13 bytes, fnv1a ",
        "\n cubin 0 bytes, fnv1a cbf29ce484222325\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  // What runs is listed on lines of its own, apart from names.
  Image renamed = img;
  renamed.name = "g";
  renamed.graph = "func.func @g()";
  auto running = [](const std::string &t) {
    std::string out;
    for (size_t at = 0; at < t.size();) {
      size_t end = t.find('\n', at);
      if (t[at] != '#')
        out += t.substr(at, end - at + 1);
      at = end + 1;
    }
    return out;
  };
  EXPECT_EQ(running(text), running(renamed.listing()));
  renamed.steps[0].grid[0] = 3;
  EXPECT_NE(running(text), running(renamed.listing()));
}

TEST(GpuProgram, ChipsAndWhatRunsThem) {
  std::string why;
  // PTX: its chip and every later one; "a" chips: exactly their own.
  EXPECT_TRUE(chipRuns("sm_80", 8, 0, why));
  EXPECT_TRUE(chipRuns("sm_80", 9, 0, why));
  EXPECT_TRUE(chipRuns("sm_80", 10, 0, why));
  EXPECT_FALSE(chipRuns("sm_86", 8, 0, why));
  EXPECT_TRUE(chipRuns("sm_90a", 9, 0, why));
  EXPECT_FALSE(chipRuns("sm_90a", 10, 0, why));
  EXPECT_EQ(why, "was compiled for sm_90a only; the device is sm_100");
  EXPECT_TRUE(chipRuns("sm_100a", 10, 0, why));
  EXPECT_FALSE(chipRuns("gfx90a", 9, 0, why));
  EXPECT_EQ(why, "names the chip 'gfx90a', which is not sm_<major><minor>");
  // Cubins: the same major version only.
  EXPECT_TRUE(cubinRuns("sm_80", 8, 9));
  EXPECT_FALSE(cubinRuns("sm_80", 9, 0));
  EXPECT_TRUE(cubinRuns("sm_90a", 9, 0));
  EXPECT_FALSE(cubinRuns("sm_86", 8, 0));
}

/// withSignature() compiled for `chip` and `b` rows.
Image forChip(const std::string &chip, int64_t b = 4) {
  Image img = withSignature();
  img.chip = chip;
  if (b != 4) {
    img.storages[0].shape = {b, 8};
    img.storages[1].shape = {8 * b};
    img.storages[2].shape = {b, 8};
    img.workspaceBytes = 256 + 32 * b;
    img.steps[0].operands = {{0, {b, 8}}, {3, {3}}, {1, {b, 8}}};
    img.steps[1].operands = {{1, {8 * b}}, {2, {8 * b}}};
    img.results = {{2, {8 * b}}};
    img.dims = {{"B", b}};
  }
  return img;
}

TEST(GpuProgram, BundlesRoundTripAndAreCheckedWhole) {
  GpuBundle bundle;
  bundle.programs = {forChip("sm_80"), forChip("sm_90a"), forChip("sm_80", 2)};
  std::vector<char> bytes = bundle.encode();
  ASSERT_EQ(std::string(bytes.data(), 8), "TSGPUBND");
  auto back = GpuBundle::decode(bytes, "b");
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->programs.size(), 3u);
  EXPECT_EQ(back->programs[1].chip, "sm_90a");
  EXPECT_EQ(back->programs[2].dims.at("B"), 2);
  // A single program reads as a bundle of one.
  auto one = GpuBundle::decode(forChip("sm_80").encode(), "p");
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(one->programs.size(), 1u);
  // Every truncation, a flipped byte anywhere in the payload, and other
  // files are refused, by name.
  for (std::size_t n = 0; n < bytes.size(); n += 97) {
    std::vector<char> cut(bytes.begin(), bytes.begin() + long(n));
    auto r = GpuBundle::decode(cut, "b");
    ASSERT_FALSE(r) << n;
    EXPECT_NE(r.error().message.find(n < 8 ? "is neither" : "truncated"),
              std::string::npos)
        << n << ": " << r.error().message;
  }
  for (std::size_t at = 28; at < bytes.size(); at += 131) {
    std::vector<char> flipped = bytes;
    flipped[at] ^= 0x20;
    auto r = GpuBundle::decode(flipped, "b");
    ASSERT_FALSE(r) << at;
    EXPECT_NE(r.error().message.find("GPU bundle b: is corrupted"),
              std::string::npos)
        << at << ": " << r.error().message;
  }
  auto other = GpuBundle::decode({'E', 'L', 'F', 0, 0, 0, 0, 0, 0}, "x");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("is neither a Tessera GPU bundle"),
            std::string::npos);
}

TEST(GpuProgram, BundlesGiveEachDeviceItsNewestChip) {
  auto chips = [](GpuBundle bundle, int major, int minor) {
    auto picked = std::move(bundle).forDevice(major, minor, "b");
    if (!picked)
      return "error: " + picked.error().message;
    std::string out;
    for (const Image &p : *picked)
      out += (out.empty() ? "" : " ") + p.chip + "/B" +
             std::to_string(p.dims.at("B"));
    return out;
  };
  GpuBundle bundle;
  bundle.programs = {forChip("sm_80"), forChip("sm_90a"), forChip("sm_80", 2)};
  EXPECT_EQ(chips(bundle, 9, 0), "sm_80/B2 sm_90a/B4");
  EXPECT_EQ(chips(bundle, 8, 9), "sm_80/B2 sm_80/B4");
  EXPECT_EQ(chips(bundle, 10, 0), "sm_80/B2 sm_80/B4");
  EXPECT_EQ(chips(bundle, 7, 5),
            "error: b: no GPU program of @f for B = 2 runs on sm_75 (its "
            "programs are for sm_80)");
  bundle.programs.push_back(forChip("sm_90a"));
  EXPECT_EQ(chips(bundle, 9, 0), "error: b: two GPU programs of @f for B = 4 "
                                 "are compiled for sm_90a");
}

} // namespace
