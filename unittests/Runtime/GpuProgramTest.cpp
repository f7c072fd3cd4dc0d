//===- GpuProgramTest.cpp - GPU program files and their checks ------------===//

#include "tessera/Runtime/GpuProgram.h"

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

} // namespace
