"""What a GEMM's epilogue costs: the block step's up projection
([16384, 1024] x [1024, 4096], bf16) compiled by ts.jit(device="cuda")
with growing epilogues, beside PyTorch (eager and torch.compile in its
modes) in the same run:

- plain:  x @ w
- bias:   x @ w + b
- gelu:   gelu_tanh(x @ w + b)
- two:    (h, 2 h) for h = x @ w + b       (two 16-bit outputs)
- gelu2:  (h, gelu_tanh(h))                (the training step's product)

Each line gives Tessera's time (the program replayed, 20 calls, best of 3
rounds), each peer's and the best peer's time over Tessera's.

The GPU machine has no compiler: the programs are compiled here,

    PYTHONPATH=build/python python bench/gpu/epilogue_bench.py \\
        --precompile sm_90a <dir>

and run there (tessera._cuda on the path):

    python3 bench/gpu/epilogue_bench.py <dir>
"""

import argparse
import os
import sys
import time

import numpy as np

M, K, N = 16384, 1024, 4096


def programs(op):
    def plain(x, w, b):
        return op.matmul(x, w)

    def bias(x, w, b):
        return op.matmul(x, w) + b

    def gelu(x, w, b):
        return op.gelu(op.matmul(x, w) + b, approximate=True)

    def two(x, w, b):
        h = op.matmul(x, w) + b
        return h, h * 2.0

    def gelu2(x, w, b):
        h = op.matmul(x, w) + b
        return h, op.gelu(h, approximate=True)

    return dict(plain=plain, bias=bias, gelu=gelu, two=two, gelu2=gelu2)


def torch_programs(F):
    def two(x, w, b):
        h = x @ w + b
        return h, h * 2.0

    def gelu2(x, w, b):
        h = x @ w + b
        return h, F.gelu(h, approximate="tanh")

    return dict(
        plain=lambda x, w, b: x @ w,
        bias=lambda x, w, b: x @ w + b,
        gelu=lambda x, w, b: F.gelu(x @ w + b, approximate="tanh"),
        two=two, gelu2=gelu2)


def inputs():
    import ml_dtypes
    rng = np.random.default_rng(0)
    return [rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16),
            (rng.standard_normal((K, N)) / 32).astype(ml_dtypes.bfloat16),
            rng.standard_normal((N,)).astype(ml_dtypes.bfloat16)]


def precompile(chip, out):
    import tessera as ts
    from tessera import op
    os.makedirs(out, exist_ok=True)
    args = inputs()
    for name, fn in programs(op).items():
        t0 = time.perf_counter()
        data = ts.jit(fn).lower(*args).compile_gpu(chip)
        with open(os.path.join(out, f"{name}.tgpu"), "wb") as f:
            f.write(data)
        print(f"{name}: compiled in {time.perf_counter() - t0:.1f} s")


def run(saved, reps):
    import torch
    import torch.nn.functional as F
    import tessera as ts
    values = inputs()
    dev = [ts.to_device(a) for a in values]
    targs = [torch.from_numpy(a.astype(np.float32)).to("cuda").to(
        torch.bfloat16) for a in values]
    print(f"# {torch.cuda.get_device_name()}; torch {torch.__version__}; "
          f"[{M}, {K}] x [{K}, {N}] bf16")

    def timed(fn):
        fn()
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t0) / reps * 1e6)
        return best

    peers = torch_programs(F)
    for name in programs(None):
        prog = ts.GpuProgram.load(os.path.join(saved, f"{name}.tgpu"))
        got = prog(*dev)
        got = got if isinstance(got, (list, tuple)) else [got]
        want = peers[name](*targs)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            g = np.asarray(g.numpy(), np.float32)
            w = w.float().cpu().numpy()
            err = np.abs(g - w).max()
            assert err <= 2e-2 * max(np.abs(w).max(), 1.0), (name, err)
        t = timed(lambda: prog(*dev))
        times = {"eager": timed(lambda: peers[name](*targs))}
        for mode in ("default", "reduce-overhead",
                     "max-autotune-no-cudagraphs"):
            c = torch.compile(peers[name], mode=mode)
            times[mode] = timed(lambda c=c: c(*targs))
        best = min(times, key=times.get)
        print(f"{name:6s} Tessera {t:7.1f} us | "
              + " | ".join(f"{k} {v:.1f}" for k, v in times.items())
              + f" | best peer {best} {times[best] / t:.2f}x", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precompile", nargs=2, metavar=("CHIP", "DIR"))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("dir", nargs="?")
    a = ap.parse_args()
    if a.precompile:
        precompile(*a.precompile)
    elif a.dir:
        run(a.dir, a.reps)
    else:
        ap.error("give --precompile CHIP DIR or DIR")
    return 0


if __name__ == "__main__":
    sys.exit(main())
