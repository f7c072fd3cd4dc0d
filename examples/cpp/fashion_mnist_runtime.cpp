//===- fashion_mnist_runtime.cpp - Train on a GPU with the runtime alone --===//
//
// A deployment of the Fashion-MNIST classifier: the GPU programs that
// `fashion_mnist --export-gpu DIR` wrote (one bundle holding, for each
// chip, the training step for each batch size and the logits of the test
// set, each with its kernels' PTX or cubin, its host program and its
// signature) are loaded by the runtime and run, with no compiler and no
// Python in the process: the newest chip the device runs is taken. Files
// are checked whole (format, Tessera version, chip, content hashes) before
// anything of them is used.
//
//   fashion_mnist_runtime PROGRAM_DIR [--epochs N] [--data DIR] [--device K]
//
//===----------------------------------------------------------------------===//

#include "fashion_mnist_data.h"

#include <filesystem>

using namespace fashion_mnist;

int main(int argc, char **argv) {
  int epochs = 10, device = 0;
  std::string programs, dir = "/usr/share/datasets/fashion-mnist";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--epochs" && i + 1 < argc)
      epochs = std::atoi(argv[++i]);
    else if (a == "--data" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--device" && i + 1 < argc)
      device = std::atoi(argv[++i]);
    else if (programs.empty() && a.rfind("--", 0) != 0)
      programs = a;
    else
      return fail("unknown argument '" + a +
                  "' (expected PROGRAM_DIR, --epochs N, --data DIR or "
                  "--device K)");
  }
  if (programs.empty())
    return fail("usage: fashion_mnist_runtime PROGRAM_DIR [--epochs N] "
                "[--data DIR] [--device K]");
  if (epochs < 1)
    return fail("--epochs must be >= 1");
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(programs, ec))
    if (entry.path().extension() == ".tgpu")
      files.push_back(entry.path().string());
  if (ec)
    return fail(programs + ": " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty())
    return fail(programs + " holds no GPU programs (*.tgpu); write them with "
                           "fashion_mnist --export-gpu " + programs);
  auto exe = rt::Executable::loadGpuPrograms(files, device);
  if (!exe)
    return fail(exe.error().message);
  auto train = loadSplit(dir, "train");
  auto test = loadSplit(dir, "t10k");
  if (!train || !test)
    return fail(!train ? train.error().message : test.error().message);
  return trainOnGpu(**exe, "train_step", "logits", *train, *test, epochs);
}
