"""Host time of a ts.jit(device="cuda") cache hit, Python side.

A hit computes the call's key (each argument's tree structure, each leaf's
dtype and shape), finds the compiled program, calls it and rebuilds the
output tree. This bench times all of that except the program call itself,
which it replaces by a stub returning ready results, so that it runs where
the compiler is and no GPU is: the call (argument buffers, the runtime's
HostProgram.run, result tensors) is timed on the GPU by
bench/gpu/jit_block_bench.py ("GpuProgram call on device tensors"); a hit
costs the sum of the two.

    python bench/jit_dispatch_bench.py [--calls N]
"""

import argparse
import os
import platform
import sys
import time

import numpy as np

import tessera as ts
from tessera import _jit, nn, op

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "gpu"))
import jit_block_bench as jb  # noqa: E402


class _Stub:
    """Stands for the loaded GPU program: returns the same results."""

    def __init__(self, count):
        self.results = [np.zeros((), np.float32)] * count

    def __call__(self, *arrays):
        return self.results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    a = ap.parse_args()
    values = jb.arrays(1, 64)
    p, x = jb.nested(values)

    def loss(p, x):
        y = nn.transformer_block(p, x, jb.HEADS)
        return op.reduce_mean(op.cast(y, "f32") * op.cast(y, "f32"))

    step = ts.jit(ts.value_and_grad(loss), device="cuda", cache_dir="")
    real = _jit._compile_for_device
    _jit._compile_for_device = lambda *args, **kw: _Stub(len(values))
    try:
        step(p, x)  # traces (no compile: the stub stands for the program)
        for _ in range(1000):
            step(p, x)
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(a.calls):
                step(p, x)
            best.append((time.perf_counter() - t0) / a.calls * 1e6)
    finally:
        _jit._compile_for_device = real
    print(f"# {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, numpy {np.__version__}")
    print(f"ts.jit(device='cuda') hit, Python side ({len(values)} array "
          f"leaves, a value and a gradient tree out): {min(best):.1f} us "
          f"(best of 5 x {a.calls} calls)")


if __name__ == "__main__":
    main()
