//===- APITest.cpp - The C++ modeling API ---------------------------------===//
//
// Traced functions compiled and run, checked against values computed here
// in double precision; shape errors checked for the words users see.
//
//===----------------------------------------------------------------------===//

#include "tessera/Tessera.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tessera;
namespace rt = tessera::runtime;

namespace {

rt::HostBuffer buffer(std::vector<int64_t> shape, std::vector<double> values) {
  auto b = rt::HostBuffer::allocate(DType::f64, shape);
  EXPECT_TRUE(bool(b));
  std::copy(values.begin(), values.end(), b->as<double>());
  return *b;
}

rt::Function compiled(Module &m, const std::string &name) {
  auto exe = m.compile();
  EXPECT_TRUE(bool(exe)) << (exe ? "" : exe.error().message);
  auto fn = (*exe)->function(name);
  EXPECT_TRUE(bool(fn)) << (fn ? "" : fn.error().message);
  return *fn;
}

/// sum(tanh(x @ w)) with x [B, 2] and w [2, 2].
Result<Function> traceLoss(Module &m) {
  return m.trace(
      "loss", {{{"B", 2}, DType::f64, "x"}, {{2, 2}, DType::f64, "w"}},
      [](std::vector<Tensor> a) {
        return std::vector{op::reduce_sum(op::tanh(op::matmul(a[0], a[1])))};
      });
}

TEST(API, TracesCompilesAndRuns) {
  Module m;
  auto loss = traceLoss(m);
  ASSERT_TRUE(bool(loss)) << loss.error().message;
  EXPECT_EQ(loss->inputs[0].shape[0].symbol(), "B");
  EXPECT_TRUE(loss->outputs[0].shape.empty());
  std::vector<double> x = {0.5, -1.0, 2.0, 0.25, -0.75, 1.5};
  std::vector<double> w = {0.1, -0.2, 0.3, 0.4};
  auto out = compiled(m, "loss").call({buffer({3, 2}, x), buffer({2, 2}, w)});
  ASSERT_TRUE(bool(out)) << out.error().message;
  double want = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      want += std::tanh(x[2 * i] * w[j] + x[2 * i + 1] * w[2 + j]);
  EXPECT_NEAR((*out)[0].as<double>()[0], want, 1e-14);
}

TEST(API, GradientMatchesTheAnalyticDerivative) {
  Module m;
  auto loss = traceLoss(m);
  ASSERT_TRUE(bool(loss));
  auto grad = m.grad(*loss, {1}, /*isPublic=*/true);
  ASSERT_TRUE(bool(grad)) << grad.error().message;
  std::vector<double> x = {0.5, -1.0, 2.0, 0.25};
  std::vector<double> w = {0.1, -0.2, 0.3, 0.4};
  auto out =
      compiled(m, grad->name).call({buffer({2, 2}, x), buffer({2, 2}, w)});
  ASSERT_TRUE(bool(out)) << out.error().message;
  // d/dw[k][j] = sum_i x[i][k] * (1 - tanh(z[i][j])^2).
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 2; ++j) {
      double want = 0;
      for (int i = 0; i < 2; ++i) {
        double z = x[2 * i] * w[j] + x[2 * i + 1] * w[2 + j];
        want += x[2 * i + k] * (1 - std::tanh(z) * std::tanh(z));
      }
      EXPECT_NEAR((*out)[0].as<double>()[2 * k + j], want, 1e-14);
    }
}

TEST(API, JvpAndHvpOfAScalarFunction) {
  Module m;
  auto f = m.trace("f", {{{3}, DType::f64, "x"}}, [](std::vector<Tensor> a) {
    return std::vector{op::reduce_sum(op::exp(a[0]) * a[0])};
  });
  ASSERT_TRUE(bool(f));
  auto jvp = m.jvp(*f, {0}, true);
  auto hvp = m.hvp(*f, {0}, true);
  ASSERT_TRUE(jvp && hvp);
  std::vector<double> x = {0.1, -0.4, 1.2}, v = {1.0, 2.0, -0.5};
  auto j = compiled(m, jvp->name).call({buffer({3}, x), buffer({3}, v)});
  auto h = compiled(m, hvp->name).call({buffer({3}, x), buffer({3}, v)});
  ASSERT_TRUE(j && h);
  double dot = 0;
  for (int i = 0; i < 3; ++i) {
    // f = sum x e^x: gradient (1 + x) e^x, Hessian diagonal (2 + x) e^x.
    dot += (1 + x[i]) * std::exp(x[i]) * v[i];
    EXPECT_NEAR((*h)[0].as<double>()[i], (2 + x[i]) * std::exp(x[i]) * v[i],
                1e-13);
  }
  EXPECT_NEAR((*j)[1].as<double>()[0], dot, 1e-13);
}

TEST(API, ShapeErrorsNameTheDimsTheOpAndTheLine) {
  Module m;
  int line = 0;
  auto f = m.trace(
      "f", {{{"B", "D"}, DType::f32, "x"}, {{"E", "H"}, DType::f32, "w"}},
      [&](std::vector<Tensor> a) {
        line = __LINE__ + 1;
        Tensor y = op::matmul(a[0], a[1]);
        EXPECT_FALSE(y.valid());
        return std::vector{op::relu(y)};
      });
  ASSERT_FALSE(bool(f));
  const std::string &msg = f.error().message;
  EXPECT_NE(msg.find("APITest.cpp:" + std::to_string(line)), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("'tgraph.matmul'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(D)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(E)"), std::string::npos) << msg;
  // The module stays usable once the error is taken.
  m.takeError();
  EXPECT_TRUE(bool(traceLoss(m)));
}

TEST(API, ClosuresBecomeArgumentsOfInnerFunctions) {
  Module m;
  auto outer = m.trace(
      "outer", {{{2}, DType::f64, "x"}, {{2}, DType::f64, "s"}},
      [&](std::vector<Tensor> a) {
        Tensor s = a[1];
        // The inner function reads `s` of the outer trace.
        auto inner = m.trace(
            "inner", {{{2}, DType::f64, "y"}}, [&](std::vector<Tensor> b) {
              return std::vector{op::reduce_sum(b[0] * b[0] * s)};
            });
        EXPECT_TRUE(bool(inner));
        EXPECT_EQ(inner->captures.size(), 1u);
        auto grad = m.grad(*inner, {0});
        EXPECT_TRUE(bool(grad));
        return m.call(*grad, {a[0]});
      });
  ASSERT_TRUE(bool(outer)) << outer.error().message;
  auto out = compiled(m, "outer")
                 .call({buffer({2}, {3.0, -1.0}), buffer({2}, {0.5, 4.0})});
  ASSERT_TRUE(bool(out)) << out.error().message;
  EXPECT_DOUBLE_EQ((*out)[0].as<double>()[0], 2 * 3.0 * 0.5);
  EXPECT_DOUBLE_EQ((*out)[0].as<double>()[1], 2 * -1.0 * 4.0);
}

TEST(API, MisuseIsReportedNotFatal) {
  Module m;
  // An op outside any trace.
  Module other;
  auto f =
      other.trace("g", {{{2}, DType::f32, "x"}}, [&](std::vector<Tensor> a) {
        return std::vector{op::neg(a[0])};
      });
  ASSERT_TRUE(bool(f));
  EXPECT_FALSE(m.grad(*f, {0}).operator bool()) << "grad of a foreign fn";
  EXPECT_FALSE(other.grad(*f, {3}).operator bool()) << "wrt out of range";
  auto bad = m.trace("bad", {{{"2*"}, DType::f32, "x"}},
                     [](std::vector<Tensor> a) { return a; });
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(bad.error().message.find("bad dim '2*'"), std::string::npos);
  m.takeError();
  auto axis =
      m.trace("axis", {{{4}, DType::f32, "x"}}, [](std::vector<Tensor> a) {
        return std::vector{op::softmax(a[0], 3)};
      });
  ASSERT_FALSE(bool(axis));
  EXPECT_NE(axis.error().message.find(
                "axis 3 is out of range for f32[4] (rank 1: axes -1..0)"),
            std::string::npos)
      << axis.error().message;
}

TEST(API, LowerShowsEachStage) {
  Module m;
  ASSERT_TRUE(bool(traceLoss(m)));
  for (auto [stage, needle] : std::vector<std::pair<Stage, std::string>>{
           {Stage::Graph, "tgraph.matmul"},
           {Stage::GraphOptimized, "tgraph.tanh"},
           {Stage::Linalg, "linalg."},
           {Stage::LLVM, "llvm.func"}}) {
    auto text = m.lower(stage);
    ASSERT_TRUE(bool(text)) << text.error().message;
    EXPECT_NE(text->find(needle), std::string::npos) << needle;
  }
}

TEST(API, RandomKeysGiveReproducibleSamples) {
  Module m;
  auto f = m.trace("sample", {{{}, DType::i32, "k", /*isKey=*/true}},
                   [](std::vector<Tensor> a) {
                     auto keys = op::rng_split(a[0], 2);
                     return std::vector{
                         op::rng_uniform(keys[0], {1000}, DType::f64, -1, 1),
                         op::rng_normal(keys[1], {1000}, DType::f64)};
                   });
  ASSERT_TRUE(bool(f)) << f.error().message;
  EXPECT_TRUE(f->inputs[0].isKey);
  auto fn = compiled(m, "sample");
  auto key = *rt::HostBuffer::allocate(DType::i32, {2});
  key.as<int32_t>()[0] = 1;
  key.as<int32_t>()[1] = 2;
  auto a = fn.call({key}), b = fn.call({key});
  ASSERT_TRUE(a && b);
  double mean = 0, sq = 0;
  for (int i = 0; i < 1000; ++i) {
    double u = (*a)[0].as<double>()[i], z = (*a)[1].as<double>()[i];
    EXPECT_EQ(u, (*b)[0].as<double>()[i]);
    EXPECT_TRUE(u >= -1 && u < 1);
    mean += z / 1000;
    sq += z * z / 1000;
  }
  EXPECT_LT(std::fabs(mean), 0.12);
  EXPECT_LT(std::fabs(sq - 1), 0.15);
  // A tensor is not a key.
  Module n;
  auto bad =
      n.trace("bad", {{{2}, DType::f32, "x"}}, [](std::vector<Tensor> a) {
        return std::vector{op::rng_normal(a[0], {3})};
      });
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(bad.error().message.find("expected a random key"),
            std::string::npos);
}

TEST(API, OutlineDifferentiatesAComputedValue) {
  Module m;
  auto f = m.trace("f", {{{3}, DType::f64, "x"}}, [&](std::vector<Tensor> a) {
    Tensor h = op::sin(a[0]);
    Tensor loss = op::reduce_sum(h * h);
    // d loss / d h = 2 h, by cutting loss(h) out of the trace.
    auto slice = m.outline({loss}, {h});
    EXPECT_TRUE(bool(slice));
    auto grad = m.grad(*slice, {0});
    EXPECT_TRUE(bool(grad));
    return m.call(*grad, {h});
  });
  ASSERT_TRUE(bool(f)) << f.error().message;
  auto out = compiled(m, "f").call({buffer({3}, {0.1, 0.7, -1.3})});
  ASSERT_TRUE(bool(out));
  for (int i = 0; i < 3; ++i) {
    double x = std::vector<double>{0.1, 0.7, -1.3}[i];
    EXPECT_NEAR((*out)[0].as<double>()[i], 2 * std::sin(x), 1e-15);
  }
}

TEST(API, FixedPointIteratesToTheSolution) {
  Module m;
  auto f = m.trace("f", {{{2}, DType::f64, "t"}}, [&](std::vector<Tensor> a) {
    Tensor t = a[0];
    // z = cos(z) * t, with t captured by the body.
    auto body =
        m.trace("body", {{{2}, DType::f64, "z"}}, [&](std::vector<Tensor> z) {
          return std::vector{op::cos(z[0]) * t};
        });
    EXPECT_TRUE(bool(body));
    return std::vector{m.fixedPoint(*body, op::zeros_like(t), {}, 1e-14, 500)};
  });
  ASSERT_TRUE(bool(f)) << f.error().message;
  auto out = compiled(m, "f").call({buffer({2}, {0.5, 1.0})});
  ASSERT_TRUE(bool(out)) << out.error().message;
  for (int i = 0; i < 2; ++i) {
    double t = i ? 1.0 : 0.5, z = (*out)[0].as<double>()[i];
    EXPECT_NEAR(z, std::cos(z) * t, 1e-12);
  }
}

TEST(API, CondAndWhileFromTracedFunctions) {
  Module m;
  auto f = m.trace("f", {{{3}, DType::f64, "x"}}, [&](std::vector<Tensor> a) {
    Tensor x = a[0];
    auto twice = m.trace(
        "twice", {}, [&](std::vector<Tensor>) { return std::vector{x * 2.0}; });
    auto negate = m.trace("negate", {},
                          [&](std::vector<Tensor>) { return std::vector{-x}; });
    Tensor positive = op::compare(op::reduce_sum(x), op::scalar(0.0, x), "gt");
    Tensor picked = m.cond(positive, *twice, *negate)[0];
    // Halve until the sum is below 1.
    auto small =
        m.trace("small", {{{3}, DType::f64, "v"}}, [](std::vector<Tensor> v) {
          return std::vector{
              op::compare(op::reduce_sum(v[0]), op::scalar(1.0, v[0]), "ge")};
        });
    auto halve =
        m.trace("halve", {{{3}, DType::f64, "v"}},
                [](std::vector<Tensor> v) { return std::vector{v[0] * 0.5}; });
    return std::vector{picked, m.whileLoop(*small, *halve, {picked})[0]};
  });
  ASSERT_TRUE(bool(f)) << f.error().message;
  auto out = compiled(m, "f").call({buffer({3}, {1.0, 2.0, 3.0})});
  ASSERT_TRUE(bool(out)) << out.error().message;
  EXPECT_EQ((*out)[0].as<double>()[2], 6.0);
  // 12 -> 6 -> 3 -> 1.5 -> 0.75: [2, 4, 6] / 16.
  EXPECT_EQ((*out)[1].as<double>()[0], 2.0 / 16);
  EXPECT_EQ((*out)[1].as<double>()[2], 6.0 / 16);
}

TEST(API, VmapBatchesPerExampleGradients) {
  // d/dw sum(tanh(x @ w)) for each row x of X, as one batched program.
  Module m;
  auto loss = m.trace(
      "row_loss", {{{1, 2}, DType::f64, "x"}, {{2, 2}, DType::f64, "w"}},
      [](std::vector<Tensor> a) {
        return std::vector{op::reduce_sum(op::tanh(op::matmul(a[0], a[1])))};
      },
      /*isPublic=*/false);
  ASSERT_TRUE(bool(loss)) << loss.error().message;
  auto grad = m.grad(*loss, {1});
  ASSERT_TRUE(bool(grad)) << grad.error().message;
  auto f = m.trace("per_example",
                   {{{"N", 1, 2}, DType::f64, "X"}, {{2, 2}, DType::f64, "w"}},
                   [&](std::vector<Tensor> a) {
                     return m.vmap(*grad, {a[0], a[1]}, {true, false});
                   });
  ASSERT_TRUE(bool(f)) << f.error().message;
  EXPECT_EQ(f->outputs[0].shape.size(), 3u);
  EXPECT_EQ(f->outputs[0].shape[0].symbol(), "N");
  // Batching rules, no loop over the rows.
  EXPECT_EQ(m.str().find("tgraph.scan"), std::string::npos) << m.str();
  std::vector<double> x = {0.5, -1.0, 2.0, 0.25, -0.75, 1.5};
  std::vector<double> w = {0.1, -0.2, 0.3, 0.4};
  auto out = compiled(m, "per_example")
                 .call({buffer({3, 1, 2}, x), buffer({2, 2}, w)});
  ASSERT_TRUE(bool(out)) << out.error().message;
  const double *g = (*out)[0].as<double>();
  for (int n = 0; n < 3; ++n)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        double z = x[2 * n] * w[j] + x[2 * n + 1] * w[2 + j];
        double want = x[2 * n + i] * (1 - std::tanh(z) * std::tanh(z));
        EXPECT_NEAR(g[4 * n + 2 * i + j], want, 1e-14) << n << i << j;
      }
  // Mapped sizes must agree.
  auto bad = m.trace(
      "bad", {{{3, 1, 2}, DType::f64, "X"}, {{4, 2, 2}, DType::f64, "W"}},
      [&](std::vector<Tensor> a) {
        return m.vmap(*grad, {a[0], a[1]}, {true, true});
      });
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(bad.error().message.find("different sizes along the mapped axis: "
                                     "3 and 4"),
            std::string::npos)
      << bad.error().message;
}

} // namespace

TEST(API, AxesAreOneIntOrSeveral) {
  // x [2, 3, 4] with x[i][j][k] = sin(12i + 4j + k): a softmax over axes
  // {0, 2} taken together, a layernorm over axis 1 (not trailing), and sums
  // over one axis and over every axis.
  Module m;
  auto f = m.trace("axes", {{{2, 3, 4}, DType::f64, "x"}},
                   [](std::vector<Tensor> a) {
                     return std::vector{op::softmax(a[0], {0, -1}),
                                        op::layernorm(a[0], {}, {}, 1),
                                        op::reduce_sum(a[0], -2),
                                        op::reduce_sum(a[0])};
                   });
  ASSERT_TRUE(bool(f)) << f.error().message;
  std::vector<double> x(24);
  for (int i = 0; i < 24; ++i)
    x[i] = std::sin(double(i));
  auto out = compiled(m, "axes").call({buffer({2, 3, 4}, x)});
  ASSERT_TRUE(bool(out)) << out.error().message;
  auto at = [&](int i, int j, int k) { return x[12 * i + 4 * j + k]; };
  for (int j = 0; j < 3; ++j) {
    double total = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k)
        total += std::exp(at(i, j, k));
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k)
        EXPECT_NEAR((*out)[0].as<double>()[12 * i + 4 * j + k],
                    std::exp(at(i, j, k)) / total, 1e-14);
  }
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      double mean = 0, var = 0;
      for (int j = 0; j < 3; ++j)
        mean += at(i, j, k) / 3;
      for (int j = 0; j < 3; ++j)
        var += (at(i, j, k) - mean) * (at(i, j, k) - mean) / 3;
      for (int j = 0; j < 3; ++j)
        EXPECT_NEAR((*out)[1].as<double>()[12 * i + 4 * j + k],
                    (at(i, j, k) - mean) / std::sqrt(var + 1e-5), 1e-12);
    }
  double all = 0;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) {
      double sum = 0;
      for (int j = 0; j < 3; ++j)
        sum += at(i, j, k);
      EXPECT_NEAR((*out)[2].as<double>()[4 * i + k], sum, 1e-14);
      all += sum;
    }
  EXPECT_NEAR((*out)[3].as<double>()[0], all, 1e-13);

  Module twice;
  auto bad = twice.trace("bad", {{{2, 3}, DType::f32, "x"}},
                         [](std::vector<Tensor> a) {
                           return std::vector{op::reduce_max(a[0], {1, -1})};
                         });
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(bad.error().message.find(
                "axis (1, -1) names axis 1 of f32[2, 3] twice"),
            std::string::npos)
      << bad.error().message;
}

TEST(API, NumbersTakeTheTensorsDtypeWhenTheirKindFits) {
  Module m;
  auto f = m.trace("weak", {{{3}, DType::i32, "n"}, {{3}, DType::f16, "h"}},
                   [](std::vector<Tensor> a) {
                     return std::vector{a[0] * 0.5, 2 * a[0], a[1] + 1,
                                        1.5 - a[1]};
                   });
  ASSERT_TRUE(bool(f)) << f.error().message;
  EXPECT_EQ(f->outputs[0].dtype, DType::f32) << "an int tensor times 0.5";
  EXPECT_EQ(f->outputs[1].dtype, DType::i32) << "an int stays with ints";
  EXPECT_EQ(f->outputs[2].dtype, DType::f16) << "an int with a float";
  EXPECT_EQ(f->outputs[3].dtype, DType::f16) << "a float with a float";
  auto in = rt::HostBuffer::allocate(DType::i32, {3});
  ASSERT_TRUE(bool(in));
  int32_t values[] = {3, -1, 4};
  std::copy(values, values + 3, in->as<int32_t>());
  auto h = rt::HostBuffer::allocate(DType::f16, {3});
  ASSERT_TRUE(bool(h));
  std::fill(h->as<uint16_t>(), h->as<uint16_t>() + 3, uint16_t(0x3c00));
  auto out = compiled(m, "weak").call({*in, *h});
  ASSERT_TRUE(bool(out)) << out.error().message;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*out)[0].as<float>()[i], values[i] * 0.5f);
    EXPECT_EQ((*out)[1].as<int32_t>()[i], 2 * values[i]);
  }

  Module narrow;
  auto bad = narrow.trace("bad", {{{3}, DType::i8, "x"}},
                          [](std::vector<Tensor> a) {
                            return std::vector{a[0] + 300};
                          });
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(bad.error().message.find(
                "the number 300 is out of range for i8 (-128..127)"),
            std::string::npos)
      << bad.error().message;
}

TEST(API, EmptyDimsHaveDefinedResults) {
  // One compilation for every B, B = 0 included: sums of nothing are 0, the
  // maximum of nothing stops the call with an error naming the op.
  Module m;
  auto f = m.trace("stats", {{{"B", 3}, DType::f64, "x"}},
                   [](std::vector<Tensor> a) {
                     return std::vector{op::reduce_sum(a[0], 0),
                                        op::softmax(a[0]) * 2.0};
                   });
  ASSERT_TRUE(bool(f)) << f.error().message;
  auto g = m.trace("peak", {{{"B", 3}, DType::f64, "x"}},
                   [](std::vector<Tensor> a) {
                     return std::vector{op::reduce_max(a[0], 0)};
                   });
  ASSERT_TRUE(bool(g)) << g.error().message;
  auto exe = m.compile();
  ASSERT_TRUE(bool(exe)) << exe.error().message;
  auto empty = rt::HostBuffer::allocate(DType::f64, {0, 3});
  ASSERT_TRUE(bool(empty));
  auto out = (*exe)->function("stats")->call({*empty});
  ASSERT_TRUE(bool(out)) << out.error().message;
  EXPECT_EQ((*out)[0].shape(), (std::vector<int64_t>{3}));
  for (int j = 0; j < 3; ++j)
    EXPECT_EQ((*out)[0].as<double>()[j], 0.0);
  EXPECT_EQ((*out)[1].shape(), (std::vector<int64_t>{0, 3}));
  auto peak = (*exe)->function("peak")->call({*empty});
  ASSERT_FALSE(bool(peak));
  EXPECT_NE(peak.error().message.find(
                "'tgraph.reduce_max' op at " __FILE__),
            std::string::npos)
      << peak.error().message;
  EXPECT_NE(peak.error().message.find(
                "the maximum of nothing is undefined: the reduced axes of "
                "f64[B, 3] must hold at least 1 element (B)"),
            std::string::npos)
      << peak.error().message;

  Module fixed;
  auto bad = fixed.trace("bad", {{{0, 3}, DType::f64, "x"}},
                         [](std::vector<Tensor> a) {
                           return std::vector{op::reduce_min(a[0], 0)};
                         });
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(bad.error().message.find(
                "reduce_min over an empty axis: axis 0 of f64[0, 3] has size "
                "0, and the minimum of nothing is undefined"),
            std::string::npos)
      << bad.error().message;
}

TEST(API, FloorDivisionRoundsTowardMinusInfinity) {
  // Python's //: -7 // 2 == -4 and 7 // -2 == -4 for integers, and the
  // floor of the quotient for floats.
  Module m;
  auto f = m.trace("fdiv", {{{4}, DType::i32, "a"}, {{4}, DType::i32, "b"}},
                   [](std::vector<Tensor> a) {
                     Tensor x = op::cast(a[0], DType::f64);
                     return std::vector{op::floor_div(a[0], a[1]),
                                        op::floor_div(x, x * 0.0 + 2.0)};
                   });
  ASSERT_TRUE(bool(f)) << f.error().message;
  int32_t a[] = {7, -7, 7, -7}, b[] = {2, 2, -2, -2};
  auto in = [](const int32_t *v) {
    auto buf = rt::HostBuffer::allocate(DType::i32, {4});
    std::copy(v, v + 4, buf->as<int32_t>());
    return *buf;
  };
  auto out = compiled(m, "fdiv").call({in(a), in(b)});
  ASSERT_TRUE(bool(out)) << out.error().message;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*out)[0].as<int32_t>()[i],
              int32_t(std::floor(double(a[i]) / b[i])));
    EXPECT_EQ((*out)[1].as<double>()[i], std::floor(a[i] / 2.0));
  }
}

namespace {

/// relu(x @ w) with x [B, 64] and w [64, 32], in f32 (the GPU's types).
Result<Function> traceLayer(Module &m, const std::string &name) {
  return m.trace(
      name, {{{"B", 64}, DType::f32, "x"}, {{64, 32}, DType::f32, "w"}},
      [](std::vector<Tensor> a) {
        return std::vector{op::relu(op::matmul(a[0], a[1]))};
      });
}

TEST(API, GpuProgramsAreCompiledForTheSizesOfSymbolicDims) {
  Module m;
  ASSERT_TRUE(bool(traceLayer(m, "layer")));
  ASSERT_TRUE(bool(traceLayer(m, "other")));
  GPUCompileOptions options;
  options.entry = "layer";
  options.dims = {{"B", 24}};
  auto image = m.compileGPU(options);
  ASSERT_TRUE(bool(image)) << image.error().message;
  EXPECT_EQ(image->name, "layer");
  EXPECT_EQ(image->signature.describe(), "@layer(f32[B, 64], f32[64, 32]) -> "
                                         "(f32[B, 32])");
  EXPECT_EQ(image->dims, (std::map<std::string, int64_t>{{"B", 24}}));
  ASSERT_EQ(image->results.size(), 1u);
  EXPECT_EQ(image->results[0].shape, (std::vector<int64_t>{24, 32}));
  // It reads back whole: the signature agrees with the program's shapes.
  EXPECT_TRUE(bool(rt::GpuProgramImage::decode(image->encode(), "t")));

  // Errors name what is missing or extra.
  options.dims.clear();
  auto unsized = m.compileGPU(options);
  ASSERT_FALSE(unsized);
  EXPECT_NE(unsized.error().message.find(
                "has the symbolic dim B, which needs a size for the GPU"),
            std::string::npos)
      << unsized.error().message;
  options.dims = {{"B", 24}, {"S", 3}};
  auto extra = m.compileGPU(options);
  ASSERT_FALSE(extra);
  EXPECT_NE(extra.error().message.find("a size is given for S, which is not "
                                       "a dim of @layer"),
            std::string::npos)
      << extra.error().message;
  // Without an entry, a module of two public functions is ambiguous.
  options.entry.clear();
  options.dims = {{"B", 24}};
  auto ambiguous = m.compileGPU(options);
  ASSERT_FALSE(ambiguous);
  EXPECT_NE(ambiguous.error().message.find(
                "has more than one public function (@layer, @other); name "
                "the one to compile for the GPU"),
            std::string::npos)
      << ambiguous.error().message;
  options.entry = "missing";
  auto missing = m.compileGPU(options);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("has no public function @missing "
                                         "(it has @layer, @other)"),
            std::string::npos)
      << missing.error().message;
}

TEST(API, AGradientFunctionCompilesForTheGpuByItself) {
  // A function that an autodiff declaration makes (not traced) is an
  // entry like any other.
  Module m;
  auto layer = m.trace(
      "loss", {{{"B", 64}, DType::f32, "x"}, {{64, 32}, DType::f32, "w"}},
      [](std::vector<Tensor> a) {
        return std::vector{
            op::reduce_sum(op::relu(op::matmul(a[0], a[1])))};
      });
  ASSERT_TRUE(bool(layer)) << layer.error().message;
  auto grad = m.grad(*layer, {1}, /*isPublic=*/true);
  ASSERT_TRUE(bool(grad)) << grad.error().message;
  GPUCompileOptions options;
  options.entry = grad->name;
  options.dims = {{"B", 16}};
  auto image = m.compileGPU(options);
  ASSERT_TRUE(bool(image)) << image.error().message;
  EXPECT_EQ(image->name, grad->name);
  ASSERT_EQ(image->results.size(), 1u);
  EXPECT_EQ(image->results[0].shape, (std::vector<int64_t>{64, 32}));
  EXPECT_FALSE(image->graph.empty());
}

TEST(API, CompilingForACudaDeviceSaysWhyItCannot) {
  Module m;
  ASSERT_TRUE(bool(traceLayer(m, "layer")));
  EXPECT_EQ(Target::cuda(1).str(), "cuda:1");
  EXPECT_EQ(Target::cpu().str(), "cpu");
  if (rt::cuda::available())
    GTEST_SKIP() << "this machine has a GPU";
  CompileOptions options;
  options.target = Target::cuda(0);
  auto exe = m.compile(options);
  ASSERT_FALSE(exe);
  EXPECT_NE(exe.error().message.find("cannot compile for cuda:0: "),
            std::string::npos)
      << exe.error().message;
}

} // namespace
