#!/bin/bash
# Packs TesseraCudaTests with the libraries and generated kernels it needs
# into one folder (default build/device), to run on a GPU machine that has
# the NVIDIA driver but not the compiler:
#   cd build/device && LD_LIBRARY_PATH=$PWD TESSERA_CUDA_TEST_KERNELS=$PWD/kernels ./TesseraCudaTests
#   LD_LIBRARY_PATH=$PWD ./tessera-row-bench kernels/row_kernels.ptx
#   python3 row_peer.py
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
# The GPU benchmarks: ./tessera-row-bench kernels/row_kernels.ptx (and
# gemm), with their PyTorch peers.
for bench in row gemm attn; do
  if [ -x "$build/bin/tessera-$bench-bench" ]; then
    cp "$build/bin/tessera-$bench-bench" "$out/"
    cp "$build/bench/gpu/${bench}_kernels.ptx" "$out/kernels/"
    cp "$build/bench/gpu/${bench}_kernels_cpasync.ptx" "$out/kernels/"
    cp "$(dirname "$0")/../../bench/gpu/${bench}_peer.py" "$out/"
  fi
done
echo "$out: $(du -sh "$out" | cut -f1)"
