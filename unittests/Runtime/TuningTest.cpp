//===- TuningTest.cpp - Tuning files --------------------------------------===//

#include "tessera/Runtime/Tuning.h"

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

using namespace tessera::runtime;

namespace {

const char *kKey = "gemm-439d2df7d153cffd";

TEST(Tuning, ParsesKeysSchedulesAndTimes) {
  auto t = TuningTable::parse(
      "# a comment\n\n"
      "gemm-439d2df7d153cffd block(128, 256).k(64).warps(8).stages(4).split(4)"
      "  # 96.1 us\n"
      "  gemm-0000000000000001   block(64, 128).k(64).warps(4).stages(4)\n",
      "t.txt");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->entries.size(), 2u);
  EXPECT_EQ(t->entries.at(kKey).schedule,
            "block(128, 256).k(64).warps(8).stages(4).split(4)");
  EXPECT_NEAR(t->entries.at(kKey).seconds, 96.1e-6, 1e-12);
  EXPECT_EQ(t->entries.at("gemm-0000000000000001").seconds, 0.0);
  // What str() writes reads back the same.
  auto again = TuningTable::parse(t->str(), "again");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->str(), t->str());
}

TEST(Tuning, RefusesMalformedLinesByLine) {
  for (const char *text :
       {"gemm-0123 block(64, 64)\n", "gemm-439d2df7d153cffd\n",
        "gemm-439D2DF7D153CFFD block(64, 64)\n",
        "# ok\nnot-a-key block(64, 64)\n"}) {
    auto t = TuningTable::parse(text, "t.txt");
    ASSERT_FALSE(t) << text;
    EXPECT_NE(t.error().message.find("t.txt:"), std::string::npos)
        << t.error().message;
    EXPECT_NE(t.error().message.find("expected 'KEY SCHEDULE'"),
              std::string::npos)
        << t.error().message;
  }
  auto second = TuningTable::parse("# ok\nbad line\n", "t.txt");
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("t.txt:2:"), std::string::npos);
}

TEST(Tuning, SavesMergesAndLoads) {
  std::string path = ::testing::TempDir() + "/tessera-tuning-test.txt";
  std::remove(path.c_str());
  auto missing = TuningTable::load(path);
  ASSERT_TRUE(missing);
  EXPECT_TRUE(missing->entries.empty());
  TuningTable a;
  a.entries[kKey] = {"block(128, 128).k(64).warps(8).stages(4)", 1e-4};
  ASSERT_TRUE(a.save(path));
  TuningTable b;
  b.entries[kKey] = {"block(64, 128).k(64).warps(4).stages(4)", 5e-5};
  b.entries["gemm-0000000000000002"] = {"block(128, 256).k(64)", 0};
  auto loaded = TuningTable::load(path);
  ASSERT_TRUE(loaded);
  loaded->merge(b);
  ASSERT_TRUE(loaded->save(path));
  auto back = TuningTable::load(path);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->entries.size(), 2u);
  EXPECT_EQ(back->entries.at(kKey).schedule,
            "block(64, 128).k(64).warps(4).stages(4)");
  // A corrupted file is refused, not half read.
  std::ofstream(path) << "gemm-439d2df7d153cffd block(64, 64)\ngarbage\n";
  auto bad = TuningTable::load(path);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(path + ":2:"), std::string::npos);
  std::remove(path.c_str());
}

} // namespace

TEST(Tuning, ListsTheSchedulesTriedAsComments) {
  TuningTable t;
  TuningTable::Entry e;
  e.schedule = "block(128, 128).k(64).warps(8).stages(4)";
  e.seconds = 259.3e-6;
  e.tried = {{"block(64, 128).k(64).warps(4).stages(3).pingpong", 301.5e-6},
             {"block(128, 128).k(64).warps(8).stages(4)", 259.3e-6}};
  t.entries[kKey] = e;
  std::string text = t.str();
  EXPECT_NE(text.find("#   tried block(64, 128).k(64).warps(4).stages(3)."
                      "pingpong  # 301.5 us\n"),
            std::string::npos)
      << text;
  // Read back, the file gives the chosen schedule and its time only.
  auto back = TuningTable::parse(text, "tuning.txt");
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->entries.size(), 1u);
  EXPECT_EQ(back->entries.at(kKey).schedule, e.schedule);
  EXPECT_NEAR(back->entries.at(kKey).seconds, 259.3e-6, 1e-12);
  EXPECT_TRUE(back->entries.at(kKey).tried.empty());
}
