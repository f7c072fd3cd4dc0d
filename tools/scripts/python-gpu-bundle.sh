#!/bin/bash
# Packs the Python package for a GPU machine that has the NVIDIA driver and
# a Python (with numpy) but neither the compiler's libraries nor this
# Python's build of tessera._core: the pure-Python package, tessera._cuda
# built for that machine's Python, the runtime library, and a kernel cache
# holding every kernel the GPU tests and bench/gpu/stdlib_bench.py launch,
# precompiled for CHIP.
#   tools/scripts/python-gpu-bundle.sh PYTHON CHIP [OUT]
#   (there) PYTHONPATH=OUT LD_LIBRARY_PATH=OUT TESSERA_KERNEL_CACHE=OUT/kcache \
#           TESSERA_GENERATED_KERNELS=OUT/generated TESSERA_HOST_PROGRAMS=OUT/hostprog \
#           TESSERA_BLOCK_PROGRAMS=OUT/blocks TESSERA_GPU_PROGRAMS=OUT/programs \
#           python3 -m pytest test/python/gpu
#   (there, the C++ trainer) OUT/cpp/tessera-example-fashion-mnist-runtime \
#           OUT/cpp --data DIR
# PYTHON is an interpreter of the target's Python version (with nanobind).
set -euo pipefail
python=${1:?usage: python-gpu-bundle.sh PYTHON CHIP [OUT]}
chip=${2:?usage: python-gpu-bundle.sh PYTHON CHIP [OUT]}
out=${3:-build/pybundle}
version=$("$python" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
build=build-py$version
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DPython3_EXECUTABLE=/usr/bin/python3 -DPython_EXECUTABLE="$python"
fi
ninja -C "$build" _cuda
rm -rf "$out"
mkdir -p "$out/tessera/stdlib"
cp python/tessera/*.py python/tessera/py.typed "$out/tessera/"
cp python/tessera/stdlib/*.py "$out/tessera/stdlib/"
cp "$build"/python/tessera/_cuda*.so "$out/tessera/"
cp -L "$build/lib/libTesseraRuntime.so" "$out/"
omp=$(ldd "$build/lib/libTesseraRuntime.so" | awk '/libomp/ {print $3}')
[ -n "$omp" ] && cp -L "$omp" "$out/"
# The compiler of this machine's build (build/) fills the kernel cache.
for script in test/python/gpu/kernels.py test/python/gpu/test_stdlib_gpu.py \
              bench/gpu/stdlib_bench.py bench/gpu/attn_schedule_sweep.py \
              bench/gpu/gemm_schedule_sweep.py bench/gpu/row_schedule_sweep.py \
              bench/gpu/profile_driver.py; do
  TESSERA_KERNEL_CACHE=$PWD/$out/kcache PYTHONPATH=build/python \
    build/venv/bin/python $script --precompile "$chip"
done
# The GPU programs of the ts.jit(device="cuda") tests.
PYTHONPATH=build/python \
  build/venv/bin/python test/python/gpu/jit_programs.py --precompile "$chip" \
  "$out/programs"
# The row kernels the compiler generates, with the CPU's outputs for them.
PYTHONPATH=build/python TESSERA_RUN=build/bin/tessera-run \
  build/venv/bin/python test/python/gpu/generated_kernels.py --precompile \
  "$chip" "$out/generated"
PYTHONPATH=build/python build/venv/bin/python \
  test/python/gpu/host_programs.py --precompile "$chip" "$out/hostprog"
# The transformer-block training step of bench/gpu/jit_block_bench.py
# (the C++ pipeline's program file), at batch 1 and 8, and the same step
# written with the C++ API (examples/cpp/transformer_block.cpp), with the
# autotuning variants; test_block_program_gpu.py checks the program files
# and tunes the variants.
ninja -C build tessera-example-transformer-block
for batch in 1 8; do
  PYTHONPATH=build/python \
    build/venv/bin/python bench/gpu/jit_block_bench.py --precompile "$chip" \
    "$out/blocks/b$batch" --batch $batch --variants
  build/bin/tessera-example-transformer-block --batch $batch --seq 2048 \
    --chip "$chip" --emit-gpu "$out/blocks/b$batch/program_cpp.tgpu"
done
# The C++ deployment: the runtime-only Fashion-MNIST trainer and the bundle
# of its programs (CHIP and sm_80, with cubins); there it runs as
#   OUT/cpp/tessera-example-fashion-mnist-runtime OUT/cpp --data DIR
ninja -C build tessera-example-fashion-mnist tessera-example-fashion-mnist-runtime
mkdir -p "$out/cpp"
cp build/bin/tessera-example-fashion-mnist-runtime "$out/cpp/"
chips=$chip
[ "$chip" = sm_80 ] || chips="$chip,sm_80"
build/bin/tessera-example-fashion-mnist --export-gpu "$out/cpp" \
  --chip "$chips" --cubin
echo "$out: $(du -sh "$out" | cut -f1)"
