//===- RuntimeTest.cpp - The runtime without the compiler -----------------===//
//
// Functions here stand in for compiled code: they follow its packed calling
// convention (result descriptors first, then one descriptor per argument)
// and allocate through the runtime, so the runtime's argument checks,
// result handling and error paths are tested without compiling anything.
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Runtime.h"
#include "tessera/Runtime/Errors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace tessera::runtime;

namespace {

/// A rank-`R` memref descriptor.
template <int R> struct Desc {
  void *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[R];
  int64_t strides[R];
};

/// @add(x: f32[B, 4], y: f32[B, 4], n: f32[2*B+1]) -> (f32[B, 4]):
/// x + y, in memory the runtime's allocator hands out.
void addFn(void **packed) {
  auto *result = *static_cast<Desc<2> **>(packed[0]);
  auto *x = *static_cast<Desc<2> **>(packed[1]);
  auto *y = *static_cast<Desc<2> **>(packed[2]);
  int64_t n = x->sizes[0] * x->sizes[1];
  auto *out = static_cast<float *>(
      CachingAllocator::global().allocate(n * sizeof(float)));
  for (int64_t i = 0; i < n; ++i)
    out[i] = x->aligned[i] + y->aligned[i];
  *result = {out, out, 0, {x->sizes[0], x->sizes[1]}, {x->sizes[1], 1}};
}

/// @transpose(x: f32[R, C]) -> (f32[C, R], f32[R, C]): a strided view of a
/// fresh buffer, and the argument itself (never to be taken over).
void transposeFn(void **packed) {
  auto *results = *static_cast<Desc<2> **>(packed[0]);
  auto *x = *static_cast<Desc<2> **>(packed[1]);
  int64_t r = x->sizes[0], c = x->sizes[1];
  auto *copy = static_cast<float *>(
      CachingAllocator::global().allocate(r * c * sizeof(float)));
  std::memcpy(copy, x->aligned, r * c * sizeof(float));
  results[0] = {copy, copy, 0, {c, r}, {1, c}};
  results[1] = *x;
}

/// @bump(a: state f32[4], b: state f32[4]) -> (): a += 1, b += 2 in place
/// (no results: the packed arguments start at index 0).
void bumpFn(void **packed) {
  auto *a = *static_cast<Desc<1> **>(packed[0]);
  auto *b = *static_cast<Desc<1> **>(packed[1]);
  for (int i = 0; i < 4; ++i) {
    a->aligned[i] += 1;
    b->aligned[i] += 2;
  }
}

/// @fails(x: f32[4]) -> (): raises an error as compiled code does.
void failsFn(void **) {
  tessera_shape_check_failed("'tgraph.add' op dims differ", 3, 5);
}

const char *kManifest = "tessera-manifest 1\n"
                        "function add 3 1\n"
                        "arg f32 2 B 4\n"
                        "arg f32 2 B 4\n"
                        "arg f32 1 2*B+1\n"
                        "result f32 2 B 4\n"
                        "function transpose 1 2\n"
                        "arg f32 2 R C\n"
                        "result f32 2 C R\n"
                        "result f32 2 R C\n"
                        "function fails 1 0\n"
                        "arg f32 1 4\n"
                        "function bump 2 0\n"
                        "arg state f32 1 4\n"
                        "arg state f32 1 4\n";

std::shared_ptr<Executable> fakeExecutable() {
  auto e = Executable::fromResolver(
      [](const std::string &symbol) -> void * {
        if (symbol == kManifestSymbol)
          return const_cast<char *>(kManifest);
        if (symbol == "_mlir__mlir_ciface_tessera.add")
          return reinterpret_cast<void *>(&addFn);
        if (symbol == "_mlir__mlir_ciface_tessera.transpose")
          return reinterpret_cast<void *>(&transposeFn);
        if (symbol == "_mlir__mlir_ciface_tessera.fails")
          return reinterpret_cast<void *>(&failsFn);
        if (symbol == "_mlir__mlir_ciface_tessera.bump")
          return reinterpret_cast<void *>(&bumpFn);
        return nullptr;
      },
      nullptr, "fake code");
  EXPECT_TRUE(e) << e.error().message;
  return *e;
}

HostBuffer iota(std::vector<int64_t> shape, float start = 0) {
  auto b = HostBuffer::allocate(DType::f32, shape);
  EXPECT_TRUE(b);
  for (int64_t i = 0; i < b->numElements(); ++i)
    b->as<float>()[i] = start + float(i);
  return *b;
}

TEST(Runtime, DTypes) {
  EXPECT_EQ(parseDType("bf16"), DType::bf16);
  EXPECT_EQ(parseDType("f8E4M3FN"), DType::f8E4M3FN);
  EXPECT_FALSE(parseDType("float32"));
  EXPECT_EQ(byteSize(DType::f8E5M2), 1u);
  EXPECT_EQ(byteSize(DType::i1), 1u);
  // Bit patterns against values from the formats' definitions.
  uint16_t half = 0x3C00, halfMin = 0x0001, bf = 0xC0A0;
  uint8_t e4m3Max = 0x7E, e4m3Nan = 0x7F, e5m2Inf = 0x7C;
  EXPECT_EQ(toDouble(DType::f16, &half), 1.0);
  EXPECT_EQ(toDouble(DType::f16, &halfMin), std::ldexp(1.0, -24));
  EXPECT_EQ(toDouble(DType::bf16, &bf), -5.0);
  EXPECT_EQ(toDouble(DType::f8E4M3FN, &e4m3Max), 448.0);
  EXPECT_TRUE(std::isnan(toDouble(DType::f8E4M3FN, &e4m3Nan)));
  EXPECT_TRUE(std::isinf(toDouble(DType::f8E5M2, &e5m2Inf)));
}

TEST(Runtime, Buffers) {
  auto z = HostBuffer::zeros(DType::i32, {3, 5});
  ASSERT_TRUE(z);
  EXPECT_EQ(z->numElements(), 15);
  EXPECT_EQ(z->byteSize(), 60u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(z->data()) % 64, 0u);
  EXPECT_EQ(z->describe(), "i32[3, 5]");
  for (int i = 0; i < 15; ++i)
    EXPECT_EQ(z->as<int32_t>()[i], 0);
  auto c = z->clone();
  c->as<int32_t>()[0] = 7;
  EXPECT_EQ(z->as<int32_t>()[0], 0);
  auto bad = HostBuffer::allocate(DType::f32, {-1, 4});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("negative dim -1"), std::string::npos);
  auto huge = HostBuffer::allocate(DType::f32, {1 << 30, 1 << 30, 1 << 30});
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("more elements"), std::string::npos);
  EXPECT_FALSE(HostBuffer::wrap(DType::f32, {2}, nullptr));
}

TEST(Runtime, NpyRoundTripAndErrors) {
  std::string path = testing::TempDir() + "/runtime-test.npy";
  HostBuffer a = iota({2, 3});
  ASSERT_TRUE(a.saveNpy(path));
  auto b = HostBuffer::loadNpy(path);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->describe(), "f32[2, 3]");
  EXPECT_EQ(std::memcmp(a.data(), b->data(), a.byteSize()), 0);
  auto wrong = HostBuffer::loadNpy(path, DType::i32);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("has dtype <f4 but i32"),
            std::string::npos)
      << wrong.error().message;
  // Truncated: the header promises more data than the file holds.
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 5);
  auto cut = HostBuffer::loadNpy(path);
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message.find(path), std::string::npos);
  std::ofstream(path, std::ios::binary) << "not a numpy file";
  EXPECT_FALSE(HostBuffer::loadNpy(path));
  EXPECT_FALSE(HostBuffer::loadNpy(path + ".missing"));
  ::unlink(path.c_str());
}

TEST(Runtime, ManifestRoundTripAndErrors) {
  auto fns = parseManifest(kManifest);
  ASSERT_TRUE(fns) << fns.error().message;
  ASSERT_EQ(fns->size(), 4u);
  EXPECT_EQ((*fns)[0].describe(),
            "@add(f32[B, 4], f32[B, 4], f32[2*B+1]) -> (f32[B, 4])");
  EXPECT_EQ(printManifest(*fns), kManifest);
  // A KV cache argument: three state buffers.
  auto state = parseManifest("tessera-manifest 1\nfunction step 3 0\n"
                             "arg state bf16 4 B 8 128 64\n"
                             "arg state bf16 4 B 8 128 64\n"
                             "arg state i64 1 2\n");
  ASSERT_TRUE(state) << state.error().message;
  EXPECT_TRUE((*state)[0].arguments[2].isState);
  EXPECT_EQ((*state)[0].describe(),
            "@step(state bf16[B, 8, 128, 64], state bf16[B, 8, 128, 64], "
            "state i64[2]) -> ()");
  EXPECT_EQ(printManifest(*state), "tessera-manifest 1\nfunction step 3 0\n"
                                   "arg state bf16 4 B 8 128 64\n"
                                   "arg state bf16 4 B 8 128 64\n"
                                   "arg state i64 1 2\n");
  for (const char *bad : {"", "tessera-manifest 2\n",
                          "tessera-manifest 1\nfunction f 1 0\narg state\n",
                          "tessera-manifest 1\nfunction f 1 0\narg state key\n",
                          "tessera-manifest 1\nfunction f 1 0\narg f33 1 4\n",
                          "tessera-manifest 1\nfunction f 1 0\narg f32 2 4\n",
                          "tessera-manifest 1\nfunction f 1 0\narg f32 1 4*\n",
                          "tessera-manifest 1\nfunction f 1 0\n",
                          "tessera-manifest 1\nfunction f 0 0\narg f32 1 4\n",
                          "tessera-manifest 1\nresult f32 1 4\n"}) {
    auto r = parseManifest(bad);
    EXPECT_FALSE(r) << bad;
    if (!r)
      EXPECT_NE(r.error().message.find("malformed manifest"),
                std::string::npos);
  }
}

TEST(Runtime, CallChecksAndRuns) {
  auto exe = fakeExecutable();
  auto add = exe->function("add");
  ASSERT_TRUE(add) << add.error().message;
  auto out = add->call({iota({3, 4}), iota({3, 4}, 100), iota({7})});
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].describe(), "f32[3, 4]");
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ((*out)[0].as<float>()[i], 2.0f * i + 100.0f);
  auto bound = add->bind({iota({3, 4}), iota({3, 4}), iota({7})});
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->at("B"), 3);
}

/// The error `call` gives for these arguments.
std::string callError(const Function &f, std::vector<HostBuffer> args) {
  auto r = f.call(args);
  EXPECT_FALSE(r);
  return r ? "" : r.error().message;
}

TEST(Runtime, BadArgumentsNameWhatWasExpected) {
  auto exe = fakeExecutable();
  auto add = *exe->function("add");
  EXPECT_EQ(callError(add, {iota({3, 4})}),
            "@add takes 3 arguments @add(f32[B, 4], f32[B, 4], f32[2*B+1]) "
            "-> (f32[B, 4]) but 1 was given");
  auto ints = *HostBuffer::zeros(DType::i32, {3, 4});
  EXPECT_EQ(callError(add, {iota({3, 4}), ints, iota({7})}),
            "@add argument 1 must be f32[B, 4] but is i32[3, 4]");
  EXPECT_EQ(callError(add, {iota({3, 4}), iota({12}), iota({7})}),
            "@add argument 1 must be f32[B, 4] but is f32[12]");
  EXPECT_EQ(callError(add, {iota({3, 4}), iota({3, 5}), iota({7})}),
            "@add argument 1 dim 1 must be 4 but is 5 (expected f32[B, 4], "
            "found f32[3, 5])");
  EXPECT_EQ(callError(add, {iota({3, 4}), iota({2, 4}), iota({7})}),
            "@add argument 1 dim 0 is B = 2, but argument 0 dim 0 bound B = 3");
  EXPECT_EQ(callError(add, {iota({3, 4}), iota({3, 4}), iota({9})}),
            "@add argument 2 dim 0 must be 2*B+1 = 7 (B = 3 from argument 0 "
            "dim 0) but is 9");
  // B = 0 is a size like any other: 2*B+1 must then be 1.
  auto empty = *HostBuffer::zeros(DType::f32, {0, 4});
  EXPECT_EQ(callError(add, {empty, empty, iota({3})}),
            "@add argument 2 dim 0 must be 2*B+1 = 1 (B = 0 from argument 0 "
            "dim 0) but is 3");
  EXPECT_FALSE(exe->function("mul"));
  EXPECT_NE(
      exe->function("mul").error().message.find(
          "has no function @mul (it has @add, @transpose, @fails, @bump)"),
      std::string::npos);
}

TEST(Runtime, SymbolsSolvedFromExpressions) {
  // B appears only inside expressions: solved from the first, checked
  // against the second.
  const char *manifest = "tessera-manifest 1\nfunction g 2 0\n"
                         "arg f32 1 2*B+1\narg f32 1 3*B\n";
  static bool called = false;
  auto exe = *Executable::fromResolver(
      [manifest](const std::string &s) -> void * {
        if (s == kManifestSymbol)
          return const_cast<char *>(manifest);
        if (s == "_mlir__mlir_ciface_tessera.g")
          return reinterpret_cast<void *>(+[](void **) { called = true; });
        return nullptr;
      },
      nullptr, "fake code");
  auto g = *exe->function("g");
  EXPECT_EQ(callError(g, {iota({8}), iota({12})}),
            "@g argument 0 dim 0 must be 2*B+1 for some B >= 1, but is 8");
  EXPECT_EQ(callError(g, {iota({9}), iota({9})}),
            "@g argument 1 dim 0 must be 3*B = 12 (B = 4 from argument 0 dim "
            "0) but is 9");
  auto ok = g.call({iota({9}), iota({12})});
  EXPECT_TRUE(ok) << ok.error().message;
  EXPECT_TRUE(called);
}

TEST(Runtime, ResultsAreCopiedUnlessOwned) {
  auto exe = fakeExecutable();
  auto t = *exe->function("transpose");
  HostBuffer x = iota({2, 3});
  auto out = t.call({x});
  ASSERT_TRUE(out) << out.error().message;
  const HostBuffer &xt = (*out)[0], &same = (*out)[1];
  EXPECT_EQ(xt.describe(), "f32[3, 2]");
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(xt.as<float>()[i * 2 + j], x.as<float>()[j * 3 + i]);
  // The argument came back as a result: a copy, not the caller's memory.
  EXPECT_NE(same.data(), x.data());
  EXPECT_EQ(std::memcmp(same.data(), x.data(), x.byteSize()), 0);
  // Memory is accounted for: results freed, nothing leaks across calls.
  out = Result<std::vector<HostBuffer>>(std::vector<HostBuffer>());
  size_t before = CachingAllocator::global().stats().bytesInUse;
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(t.call({x}));
  EXPECT_EQ(CachingAllocator::global().stats().bytesInUse, before);
}

TEST(Runtime, StateArgumentsAreUpdatedInPlaceAndMustNotAlias) {
  auto exe = fakeExecutable();
  auto bump = exe->function("bump");
  ASSERT_TRUE(bump) << bump.error().message;
  HostBuffer a = iota({4}), b = iota({4}, 10);
  for (int call = 0; call < 3; ++call)
    ASSERT_TRUE(bump->call({a, b}));
  EXPECT_EQ(a.as<float>()[1], 1 + 3 * 1);
  EXPECT_EQ(b.as<float>()[1], 11 + 3 * 2);
  // One buffer as both states: refused, nothing written.
  auto same = bump->call({a, a});
  ASSERT_FALSE(same);
  EXPECT_NE(same.error().message.find("@bump arguments 0 and 1 share "
                                      "memory, but the call writes state "
                                      "arguments in place"),
            std::string::npos)
      << same.error().message;
  EXPECT_EQ(a.as<float>()[1], 4);
}

TEST(Runtime, ErrorsFromCompiledCodeAreValues) {
  auto exe = fakeExecutable();
  auto f = *exe->function("fails");
  std::string message = callError(f, {iota({4})});
  EXPECT_NE(message.find("@fails: "), std::string::npos) << message;
  EXPECT_NE(message.find("'tgraph.add' op dims differ"), std::string::npos)
      << message;
  // The runtime stays usable.
  EXPECT_TRUE(
      exe->function("add")->call({iota({1, 4}), iota({1, 4}), iota({3})}));
}

TEST(Runtime, ThreadCount) {
  Device &cpu = Device::host();
  EXPECT_GE(cpu.hardwareThreads(), 1);
  EXPECT_NE(cpu.describe().find("cpu:0"), std::string::npos);
  Status bad = cpu.setThreadCount(0);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "thread count must be at least 1, got 0");
  ASSERT_TRUE(cpu.setThreadCount(3));
  EXPECT_EQ(cpu.threadCount(), 3);
  ASSERT_TRUE(cpu.setThreadCount(1));
  EXPECT_EQ(cpu.threadCount(), 1);
}

TEST(Runtime, LoadingSomethingElseFails) {
  auto missing = Executable::load("/nonexistent/library.so");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot load compiled code from "
                                         "/nonexistent/library.so"),
            std::string::npos);
  // A real shared library that is not Tessera code.
  auto libc = Executable::load("libc.so.6");
  ASSERT_FALSE(libc);
  EXPECT_NE(libc.error().message.find("not a Tessera library"),
            std::string::npos);
}

TEST(Runtime, MemrefCopyStrided) {
  // A 3x4 source, copied column-major into a 3x4 destination.
  float src[12], dst[12] = {};
  for (int i = 0; i < 12; ++i)
    src[i] = float(i);
  int64_t s[] = {0, 0, 0, 3, 4, 4, 1}, d[] = {0, 0, 0, 3, 4, 1, 3};
  auto setPtr = [](int64_t *desc, float *p) {
    desc[0] = desc[1] = reinterpret_cast<int64_t>(p);
  };
  setPtr(s, src);
  setPtr(d, dst);
  struct {
    int64_t rank;
    void *desc;
  } us{2, s}, ud{2, d};
  memrefCopy(sizeof(float), &us, &ud);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(dst[i + 3 * j], src[i * 4 + j]);
}

} // namespace
