#!/bin/bash
# Packs TesseraCudaTests with the libraries and generated kernels it needs
# into one folder (default build/device), to run on a GPU machine that has
# the NVIDIA driver but not the compiler:
#   cd build/device && LD_LIBRARY_PATH=$PWD TESSERA_CUDA_TEST_KERNELS=$PWD/kernels ./TesseraCudaTests
set -euo pipefail
build=${1:-build}
out=${2:-$build/device}
rm -rf "$out"
mkdir -p "$out/kernels"
cp "$build/unittests/TesseraCudaTests" "$out/"
cp -L "$build/lib/libTesseraRuntime.so" "$out/"
omp=$(ldd "$build/unittests/TesseraCudaTests" | awk '/libomp/ {print $3}')
cp -L "$omp" "$out/"
cp "$build"/unittests/cuda-kernels/*.ptx "$out/kernels/"
echo "$out: $(du -sh "$out" | cut -f1)"
