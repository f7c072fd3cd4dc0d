//===- fashion_mnist_data.h - Fashion-MNIST and GPU training for examples -===//
//
// Shared by the C++ examples: the dataset (gzip-compressed IDX files, as
// the Debian package dataset-fashion-mnist installs them), the learning
// rate schedule, and the training loop on a GPU, which needs the runtime
// only: it runs `train_step` and `predict` of an executable whose functions
// run on a GPU, keeping the parameters and AdamW moments on the device.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_EXAMPLES_FASHION_MNIST_DATA_H
#define TESSERA_EXAMPLES_FASHION_MNIST_DATA_H

#include "tessera/Runtime/Runtime.h"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace fashion_mnist {

namespace rt = tessera::runtime;
using tessera::runtime::DType;
using tessera::runtime::Error;
using tessera::runtime::Result;


/// A gzip-compressed IDX file: its dims and bytes (uint8 elements).
struct Idx {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

inline Result<Idx> readIdx(const std::string &path) {
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

inline Result<Split> loadSplit(const std::string &dir, const std::string &prefix) {
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

/// The layer sizes of the classifier (784-512-256-10).
inline const std::vector<int64_t> kSizes = {784, 512, 256, 10};

inline rt::HostBuffer scalar(float v) {
  rt::HostBuffer b = *rt::HostBuffer::allocate(DType::f32, {});
  *b.as<float>() = v;
  return b;
}

inline int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}


/// Images and labels of `order[first, first + batch)` (fewer at the end).
inline std::pair<rt::HostBuffer, rt::HostBuffer>
makeBatch(const Split &split, const std::vector<int64_t> &order,
          int64_t first, int64_t batch) {
  int64_t rows = std::min(batch, split.n - first);
  auto x = *rt::HostBuffer::allocate(DType::f32, {rows, 784});
  auto y = *rt::HostBuffer::allocate(DType::i32, {rows});
  for (int64_t r = 0; r < rows; ++r) {
    int64_t k = order[size_t(first + r)];
    std::memcpy(x.as<float>() + r * 784, &split.x[size_t(k * 784)],
                784 * sizeof(float));
    y.as<int32_t>()[r] = split.y[size_t(k)];
  }
  return {x, y};
}

/// Linear warmup over 200 steps, then cosine decay to 0 at the last step.
inline double learningRate(int64_t t, double total) {
  const double base = 1e-3, warmup = 200;
  return t < warmup ? base * double(t + 1) / warmup
                    : base * 0.5 *
                          (1 + std::cos(M_PI * (double(t) - warmup) /
                                        (total - warmup)));
}

/// He-normal weights and zero biases, then zero AdamW moments: w0, b0, w1,
/// b1, w2, b2, the six first moments, the six second moments.
inline std::vector<rt::HostBuffer> initialState(std::mt19937_64 &gen) {
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
  return state;
}

/// Trains with `step` and evaluates with `logits` (the classifier's
/// outputs, whose argmax over a row is its class) of an executable whose
/// functions run on a GPU: batches of 128 (and the rest), the parameters
/// and moments staying on the device from step to step. Returns the exit
/// status (0 when the test accuracy reaches 0.88).
inline int trainOnGpu(const rt::Executable &exe, const std::string &stepName,
                      const std::string &logitsName, const Split &train,
                      const Split &test, int epochs) {
  auto step = exe.function(stepName);
  auto predict = exe.function(logitsName);
  if (!step || !predict)
    return fail(!step ? step.error().message : predict.error().message);
  rt::cuda::Stream &stream = *exe.stream();
  int device = exe.cudaDevice();
  auto upload = [&](const rt::HostBuffer &h) {
    return rt::cuda::DeviceBuffer::fromHost(h, device, &stream);
  };
  std::mt19937_64 gen(0);
  std::vector<rt::cuda::DeviceBuffer> state;
  for (const rt::HostBuffer &h : initialState(gen)) {
    auto d = upload(h);
    if (!d)
      return fail(d.error().message);
    state.push_back(*d);
  }
  auto testX = rt::HostBuffer::wrap(DType::f32, {test.n, 784},
                                    const_cast<float *>(test.x.data()));
  auto testOnDevice = upload(*testX);
  if (!testOnDevice)
    return fail(testOnDevice.error().message);

  const int64_t batch = 128, n = train.n;
  const int64_t stepsPerEpoch = (n + batch - 1) / batch;
  const double total = double(epochs * stepsPerEpoch);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  int64_t t = 0;
  double accuracy = 0;
  auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), gen);
    std::vector<rt::cuda::DeviceBuffer> losses;
    for (int64_t s = 0; s < stepsPerEpoch; ++s, ++t) {
      auto [x, y] = makeBatch(train, order, s * batch, batch);
      std::vector<rt::cuda::DeviceBuffer> args;
      for (const rt::HostBuffer &h :
           {x, y, scalar(float(learningRate(t, total))), scalar(float(t + 1))}) {
        auto d = upload(h);
        if (!d)
          return fail(d.error().message);
        args.push_back(*d);
      }
      args.insert(args.end(), state.begin(), state.end());
      auto out = step->call(args);
      if (!out)
        return fail(out.error().message);
      losses.push_back(out->back());
      out->pop_back();
      state = std::move(*out);
    }
    double lossSum = 0;
    for (const rt::cuda::DeviceBuffer &l : losses) {
      auto h = l.toHost(&stream);
      if (!h)
        return fail(h.error().message);
      lossSum += double(*h->as<float>());
    }
    std::vector<rt::cuda::DeviceBuffer> args = {*testOnDevice};
    args.insert(args.end(), state.begin(), state.begin() + 6);
    auto pred = predict->call(args);
    if (!pred)
      return fail(pred.error().message);
    auto scores = (*pred)[0].toHost(&stream);
    if (!scores)
      return fail(scores.error().message);
    int64_t correct = 0, classes = kSizes.back();
    for (int64_t i = 0; i < test.n; ++i) {
      const float *row = scores->as<float>() + i * classes;
      correct += std::max_element(row, row + classes) - row == test.y[i];
    }
    accuracy = double(correct) / double(test.n);
    std::printf("epoch %d/%d: train_loss %.4f, test_accuracy %.4f\n",
                epoch + 1, epochs, lossSum / double(stepsPerEpoch), accuracy);
    std::fflush(stdout);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("test accuracy %.4f after %d epochs (%.1f s on cuda:%d)\n",
              accuracy, epochs, seconds, device);
  return accuracy >= 0.88 ? 0 : 2;
}

} // namespace fashion_mnist

#endif // TESSERA_EXAMPLES_FASHION_MNIST_DATA_H
