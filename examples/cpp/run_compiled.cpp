//===- run_compiled.cpp - Call a compiled Tessera library from C++ --------===//
//
// An application that runs a model compiled ahead of time:
//
//   tessera-run model.mlir --emit-library model.so      (once, with the
//   compiler) run_compiled model.so NAME in0.npy in1.npy ... OUT_DIR
//
// It links only the Tessera runtime: no compiler, MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Runtime.h"

#include <cstdio>
#include <string>
#include <vector>

namespace rt = tessera::runtime;

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s LIBRARY FUNCTION [INPUT.npy ...] OUT_DIR\n",
                 argv[0]);
    return 1;
  }
  auto executable = rt::Executable::load(argv[1]);
  if (!executable) {
    std::fprintf(stderr, "error: %s\n", executable.error().message.c_str());
    return 1;
  }
  auto function = (*executable)->function(argv[2]);
  if (!function) {
    std::fprintf(stderr, "error: %s\n", function.error().message.c_str());
    return 1;
  }
  const rt::FunctionSignature &signature = function->signature();
  std::printf("%s on %s\n", signature.describe().c_str(),
              rt::Device::host().describe().c_str());

  std::vector<rt::HostBuffer> arguments;
  for (int i = 3; i < argc - 1; ++i) {
    size_t index = arguments.size();
    std::optional<rt::DType> dtype;
    if (index < signature.arguments.size())
      dtype = signature.arguments[index].dtype;
    auto buffer = rt::HostBuffer::loadNpy(argv[i], dtype);
    if (!buffer) {
      std::fprintf(stderr, "error: %s\n", buffer.error().message.c_str());
      return 1;
    }
    arguments.push_back(std::move(*buffer));
  }
  auto results = function->call(arguments);
  if (!results) {
    std::fprintf(stderr, "error: %s\n", results.error().message.c_str());
    return 2;
  }
  std::string outDir = argv[argc - 1];
  for (size_t i = 0; i < results->size(); ++i) {
    std::string path = outDir + "/out" + std::to_string(i) + ".npy";
    if (rt::Status s = (*results)[i].saveNpy(path); !s) {
      std::fprintf(stderr, "error: %s\n", s.error().message.c_str());
      return 1;
    }
    std::printf("result %zu: %s -> %s\n", i, (*results)[i].describe().c_str(),
                path.c_str());
  }
  return 0;
}
