//===- fashion_mnist.cpp - Train a classifier from C++ alone
//---------------===//
//
// The demo classifier of `make demo` (a 784-512-256-10 MLP trained with
// AdamW on Fashion-MNIST), written against Tessera's C++ API: the loss is
// traced from a C++ lambda, its gradient is a Graph IR transformation, and
// the training step (forward, backward and the AdamW update) is one
// compiled function, for the CPU or an NVIDIA GPU (--device cuda: the
// parameters stay on the device; each batch size is compiled on first use
// and kept in the compile cache). --export-gpu writes the GPU programs for
// fashion_mnist_runtime, which trains with the runtime alone.
//
//   fashion_mnist [--epochs N] [--data DIR] [--device cpu|cuda|cuda:K]
//   fashion_mnist --export-gpu DIR [--chip sm_90a,sm_80] [--cubin]
//
//===----------------------------------------------------------------------===//

#include "fashion_mnist_data.h"

#include "tessera/Tessera.h"

#include <filesystem>

using namespace tessera;
using namespace fashion_mnist;
namespace rt = tessera::runtime;

namespace {

//===-- Model
//--------------------------------------------------------------===//

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
  std::string step, predict, logits;
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
  // The GPU back end generates no argmax kernel yet: on the GPU the test
  // set's logits are computed and the host takes their argmax.
  auto logits = m.trace("logits", predictInputs, [](std::vector<Tensor> a) {
    std::vector<Tensor> params(a.begin() + 1, a.end());
    return std::vector{mlp(a[0], params)};
  });
  if (!logits)
    return logits.error();
  p->logits = logits->name;
  return p;
}

//===-- Training
//-----------------------------------------------------------===//

} // namespace

/// Writes the GPU programs a runtime-only trainer needs
/// (fashion_mnist_runtime) as one bundle, DIR/fashion_mnist.tgpu: the step
/// for batches of 128 and for the last batch of an epoch, and the logits
/// of the test set, for each of `chips` (comma-separated), with cubins
/// when `cubin`. No GPU is needed.
int exportGpu(const Program &program, const std::string &dir,
              const std::string &chips, bool cubin, int64_t trainSize,
              int64_t testSize) {
  std::filesystem::create_directories(dir);
  struct Entry {
    std::string fn;
    int64_t batch;
  };
  std::vector<Entry> entries = {{program.step, 128},
                                {program.logits, testSize}};
  if (trainSize % 128)
    entries.push_back({program.step, trainSize % 128});
  rt::GpuBundle bundle;
  for (size_t at = 0; at <= chips.size();) {
    size_t end = std::min(chips.find(',', at), chips.size());
    std::string chip = chips.substr(at, end - at);
    at = end + 1;
    for (const Entry &e : entries) {
      GPUCompileOptions options;
      options.entry = e.fn;
      options.chip = chip;
      options.cubin = cubin;
      options.dims = {{"B", e.batch}};
      auto image = program.module.compileGPU(options);
      if (!image)
        return fail(image.error().message);
      bundle.programs.push_back(std::move(*image));
    }
  }
  std::string path = dir + "/fashion_mnist.tgpu";
  if (rt::Status st = bundle.save(path); !st)
    return fail(st.error().message);
  std::printf("wrote %s (%zu programs)\n", path.c_str(),
              bundle.programs.size());
  return 0;
}

int main(int argc, char **argv) {
  int epochs = 10;
  std::string dir = "/usr/share/datasets/fashion-mnist", device = "cpu",
              exportDir, chip = "sm_90a";
  bool cubin = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--epochs" && i + 1 < argc)
      epochs = std::atoi(argv[++i]);
    else if (a == "--data" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--device" && i + 1 < argc)
      device = argv[++i];
    else if (a == "--export-gpu" && i + 1 < argc)
      exportDir = argv[++i];
    else if (a == "--chip" && i + 1 < argc)
      chip = argv[++i];
    else if (a == "--cubin")
      cubin = true;
    else
      return fail("unknown argument '" + a +
                  "' (expected --epochs N, --data DIR, --device cpu|cuda|"
                  "cuda:K, --export-gpu DIR, --chip sm_XX[,sm_YY] or "
                  "--cubin)");
  }
  if (epochs < 1)
    return fail("--epochs must be >= 1");
  Target target = Target::cpu();
  if (device.rfind("cuda", 0) == 0) {
    int index = 0;
    if (device.size() > 4 &&
        (device[4] != ':' ||
         device.find_first_not_of("0123456789", 5) != std::string::npos ||
         device.size() == 5))
      return fail("--device " + device + ": expected cpu, cuda or cuda:K");
    if (device.size() > 5)
      index = std::atoi(device.c_str() + 5);
    target = Target::cuda(index);
  } else if (device != "cpu") {
    return fail("--device " + device + ": expected cpu, cuda or cuda:K");
  }
  auto train = loadSplit(dir, "train");
  auto test = loadSplit(dir, "t10k");
  if (!train || !test)
    return fail(!train ? train.error().message : test.error().message);

  auto program = build();
  if (!program)
    return fail(program.error().message);
  if (!exportDir.empty())
    return exportGpu(**program, exportDir, chip, cubin, train->n, test->n);
  auto exe = (*program)->module.compile({Module::defaultCacheDirectory(),
                                         target});
  if (!exe)
    return fail(exe.error().message);
  if (target.kind == Target::Kind::CUDA)
    return trainOnGpu(**exe, (*program)->step, (*program)->logits, *train,
                      *test, epochs);
  auto step = (*exe)->function((*program)->step);
  auto predict = (*exe)->function((*program)->predict);
  if (!step || !predict)
    return fail("the compiled module lacks its functions");

  // Parameters (He-normal weights, zero biases) and AdamW moments.
  std::mt19937_64 gen(0);
  std::vector<rt::HostBuffer> state = initialState(gen);

  const int64_t batch = 128, n = train->n;
  const int64_t stepsPerEpoch = (n + batch - 1) / batch;
  const double total = double(epochs * stepsPerEpoch);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  int64_t t = 0;
  double accuracy = 0;
  auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), gen);
    double lossSum = 0;
    for (int64_t s = 0; s < stepsPerEpoch; ++s, ++t) {
      auto [x, y] = makeBatch(*train, order, s * batch, batch);
      double lr = learningRate(t, total);
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
