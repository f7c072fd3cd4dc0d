//===- fashion_mnist.cpp - Train a classifier from C++ alone
//---------------===//
//
// The demo classifier of `make demo` (a 784-512-256-10 MLP trained with
// AdamW on Fashion-MNIST), written against Tessera's C++ API: the loss is
// traced from a C++ lambda, its gradient is a Graph IR transformation, and
// the training step (forward, backward and the AdamW update) is one
// compiled function.
//
//   fashion_mnist [--epochs N] [--data DIR]
//
//===----------------------------------------------------------------------===//

#include "tessera/Tessera.h"

#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>

using namespace tessera;
namespace rt = tessera::runtime;

namespace {

//===-- Data
//---------------------------------------------------------------===//

/// A gzip-compressed IDX file: its dims and bytes (uint8 elements).
struct Idx {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

Result<Idx> readIdx(const std::string &path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    return Error{path + ": cannot open (install the Debian package "
                        "dataset-fashion-mnist)"};
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  int n;
  while ((n = gzread(f, chunk, sizeof chunk)) > 0)
    bytes.insert(bytes.end(), chunk, chunk + n);
  gzclose(f);
  if (bytes.size() < 4 || bytes[0] || bytes[1] || bytes[2] != 0x08)
    return Error{path + ": not an IDX file of uint8 elements"};
  Idx idx;
  size_t offset = 4 + 4 * size_t(bytes[3]), count = 1;
  for (int i = 0; i < bytes[3]; ++i) {
    const uint8_t *p = &bytes[4 + 4 * i];
    idx.dims.push_back(int64_t(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3]);
    count *= size_t(idx.dims.back());
  }
  if (bytes.size() != offset + count)
    return Error{path + ": the dims need " + std::to_string(count) +
                 " bytes of data"};
  idx.data.assign(bytes.begin() + offset, bytes.end());
  return idx;
}

/// Images as standardized f32 rows [N, 784] and labels as i32 [N].
struct Split {
  std::vector<float> x;
  std::vector<int32_t> y;
  int64_t n = 0;
};

Result<Split> loadSplit(const std::string &dir, const std::string &prefix) {
  auto images = readIdx(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  if (!images)
    return images.error();
  auto labels = readIdx(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  if (!labels)
    return labels.error();
  Split s;
  s.n = images->dims[0];
  // Mean and standard deviation of the training pixels (0.2860, 0.3530).
  const float mean = 0.2860f, stddev = 0.3530f;
  for (uint8_t v : images->data)
    s.x.push_back((float(v) / 255.0f - mean) / stddev);
  s.y.assign(labels->data.begin(), labels->data.end());
  return s;
}

//===-- Model
//--------------------------------------------------------------===//

const std::vector<int64_t> kSizes = {784, 512, 256, 10};

/// The MLP's logits; params are w0, b0, w1, b1, w2, b2.
Tensor mlp(Tensor x, const std::vector<Tensor> &params) {
  for (size_t i = 0; i < params.size(); i += 2) {
    x = op::matmul(x, params[i]) + params[i + 1];
    if (i + 2 < params.size())
      x = op::relu(x);
  }
  return x;
}

std::vector<TensorSpec> paramSpecs(const std::string &prefix) {
  std::vector<TensorSpec> specs;
  for (size_t i = 0; i + 1 < kSizes.size(); ++i) {
    specs.push_back({{kSizes[i], kSizes[i + 1]},
                     DType::f32,
                     prefix + "w" + std::to_string(i)});
    specs.push_back(
        {{kSizes[i + 1]}, DType::f32, prefix + "b" + std::to_string(i)});
  }
  return specs;
}

struct Program {
  Module module;
  std::string step, predict;
};

/// train_step(x, y, lr, t, params..., m..., v...) ->
///   (params'..., m'..., v'..., loss): forward, gradient and AdamW.
Result<std::unique_ptr<Program>> build() {
  auto p = std::make_unique<Program>();
  Module &m = p->module;
  TensorSpec x{{"B", 784}, DType::f32, "x"}, y{{"B"}, DType::i32, "y"};
  std::vector<TensorSpec> lossInputs = {x, y};
  for (TensorSpec &s : paramSpecs(""))
    lossInputs.push_back(s);
  auto loss = m.trace(
      "loss", lossInputs,
      [](std::vector<Tensor> a) {
        std::vector<Tensor> params(a.begin() + 2, a.end());
        return std::vector{op::cross_entropy(mlp(a[0], params), a[1])};
      },
      /*isPublic=*/false);
  if (!loss)
    return loss.error();
  std::vector<int> wrt(6);
  std::iota(wrt.begin(), wrt.end(), 2);
  auto grad = m.grad(*loss, wrt);
  if (!grad)
    return grad.error();

  std::vector<TensorSpec> stepInputs = {
      x, y, {{}, DType::f32, "lr"}, {{}, DType::f32, "t"}};
  for (const char *group : {"", "m_", "v_"})
    for (TensorSpec &s : paramSpecs(group))
      stepInputs.push_back(s);
  auto step = m.trace("train_step", stepInputs, [&](std::vector<Tensor> a) {
    Tensor lr = a[2], t = a[3]; // t: the 1-based step count
    std::vector<Tensor> params(a.begin() + 4, a.begin() + 10);
    std::vector<Tensor> ms(a.begin() + 10, a.begin() + 16);
    std::vector<Tensor> vs(a.begin() + 16, a.begin() + 22);
    std::vector<Tensor> lossArgs = {a[0], a[1]};
    lossArgs.insert(lossArgs.end(), params.begin(), params.end());
    Tensor value = m.call(*loss, lossArgs)[0];
    std::vector<Tensor> grads = m.call(*grad, lossArgs);
    // AdamW (b1 0.9, b2 0.999, eps 1e-8, decoupled weight decay 1e-4).
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8, decay = 1e-4;
    Tensor c1 = 1.0 - op::exp(t * std::log(b1));
    Tensor c2 = 1.0 - op::exp(t * std::log(b2));
    std::vector<Tensor> out(18);
    for (size_t i = 0; i < 6; ++i) {
      Tensor g = grads[i];
      Tensor mi = b1 * ms[i] + (1 - b1) * g;
      Tensor vi = b2 * vs[i] + (1 - b2) * (g * g);
      Tensor update = (mi / c1) / (op::sqrt(vi / c2) + eps) + decay * params[i];
      out[i] = params[i] - lr * update;
      out[6 + i] = mi;
      out[12 + i] = vi;
    }
    out.push_back(value);
    return out;
  });
  if (!step)
    return step.error();
  p->step = step->name;

  std::vector<TensorSpec> predictInputs = {x};
  for (TensorSpec &s : paramSpecs(""))
    predictInputs.push_back(s);
  auto predict = m.trace("predict", predictInputs, [](std::vector<Tensor> a) {
    std::vector<Tensor> params(a.begin() + 1, a.end());
    return std::vector{op::argmax(mlp(a[0], params), -1)};
  });
  if (!predict)
    return predict.error();
  p->predict = predict->name;
  return p;
}

//===-- Training
//-----------------------------------------------------------===//

rt::HostBuffer scalar(float v) {
  rt::HostBuffer b = *rt::HostBuffer::allocate(DType::f32, {});
  *b.as<float>() = v;
  return b;
}

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  int epochs = 10;
  std::string dir = "/usr/share/datasets/fashion-mnist";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--epochs" && i + 1 < argc)
      epochs = std::atoi(argv[++i]);
    else if (a == "--data" && i + 1 < argc)
      dir = argv[++i];
    else
      return fail("unknown argument '" + a +
                  "' (expected --epochs N or --data DIR)");
  }
  if (epochs < 1)
    return fail("--epochs must be >= 1");
  auto train = loadSplit(dir, "train");
  auto test = loadSplit(dir, "t10k");
  if (!train || !test)
    return fail(!train ? train.error().message : test.error().message);

  auto program = build();
  if (!program)
    return fail(program.error().message);
  auto exe = (*program)->module.compile({Module::defaultCacheDirectory()});
  if (!exe)
    return fail(exe.error().message);
  auto step = (*exe)->function((*program)->step);
  auto predict = (*exe)->function((*program)->predict);
  if (!step || !predict)
    return fail("the compiled module lacks its functions");

  // Parameters (He-normal weights, zero biases) and AdamW moments.
  std::mt19937_64 gen(0);
  std::vector<rt::HostBuffer> state;
  for (int group = 0; group < 3; ++group)
    for (size_t i = 0; i + 1 < kSizes.size(); ++i) {
      auto w = *rt::HostBuffer::zeros(DType::f32, {kSizes[i], kSizes[i + 1]});
      auto b = *rt::HostBuffer::zeros(DType::f32, {kSizes[i + 1]});
      if (group == 0) {
        std::normal_distribution<float> normal(
            0.0f, std::sqrt(2.0f / float(kSizes[i])));
        for (int64_t k = 0; k < w.numElements(); ++k)
          w.as<float>()[k] = normal(gen);
      }
      state.push_back(w);
      state.push_back(b);
    }

  const int64_t batch = 128, n = train->n;
  const int64_t stepsPerEpoch = (n + batch - 1) / batch;
  const double baseLr = 1e-3, warmup = 200,
               total = double(epochs * stepsPerEpoch);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  int64_t t = 0;
  double accuracy = 0;
  auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), gen);
    double lossSum = 0;
    for (int64_t s = 0; s < stepsPerEpoch; ++s, ++t) {
      int64_t rows = std::min(batch, n - s * batch);
      auto x = *rt::HostBuffer::allocate(DType::f32, {rows, 784});
      auto y = *rt::HostBuffer::allocate(DType::i32, {rows});
      for (int64_t r = 0; r < rows; ++r) {
        int64_t k = order[s * batch + r];
        std::memcpy(x.as<float>() + r * 784, &train->x[k * 784],
                    784 * sizeof(float));
        y.as<int32_t>()[r] = train->y[k];
      }
      // Linear warmup, then cosine decay.
      double lr = t < warmup ? baseLr * double(t + 1) / warmup
                             : baseLr * 0.5 *
                                   (1 + std::cos(M_PI * (double(t) - warmup) /
                                                 (total - warmup)));
      std::vector<rt::HostBuffer> args = {x, y, scalar(float(lr)),
                                          scalar(float(t + 1))};
      args.insert(args.end(), state.begin(), state.end());
      auto out = step->call(args);
      if (!out)
        return fail(out.error().message);
      lossSum += double(*out->back().as<float>());
      out->pop_back();
      state = std::move(*out);
    }
    // Test accuracy.
    auto x = *rt::HostBuffer::wrap(DType::f32, {test->n, 784}, test->x.data());
    std::vector<rt::HostBuffer> args = {x};
    args.insert(args.end(), state.begin(), state.begin() + 6);
    auto pred = predict->call(args);
    if (!pred)
      return fail(pred.error().message);
    int64_t correct = 0;
    for (int64_t i = 0; i < test->n; ++i)
      correct += (*pred)[0].as<int64_t>()[i] == test->y[i];
    accuracy = double(correct) / double(test->n);
    std::printf("epoch %d/%d: train_loss %.4f, test_accuracy %.4f\n", epoch + 1,
                epochs, lossSum / double(stepsPerEpoch), accuracy);
    std::fflush(stdout);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("test accuracy %.4f after %d epochs (%.1f s)\n", accuracy, epochs,
              seconds);
  return accuracy >= 0.88 ? 0 : 2;
}
