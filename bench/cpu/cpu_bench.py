#!/usr/bin/env python3
"""CPU benchmarks: Tessera beside its peers, in one run on one machine.

    python3 bench/cpu/cpu_bench.py [--quick] [--tessera-run build/bin/tessera-run]

- f32 GEMM (square sizes and a transformer shape) against OpenBLAS sgemm
  (Debian libopenblas, called through ctypes), 1 and 2 threads;
- a fused elementwise chain gelu(x * w + b) over 16M floats against NumPy
  and against this machine's copy bandwidth (np.copyto, measured here);
- row softmax and layernorm (8192 x 1024) against the copy bandwidth;
- the example transformer block's forward pass against the same block in
  NumPy;
- compile time of a 2-layer transformer block (d_model 512).

Each Tessera figure is the median of timed calls inside tessera-run (the
call only: arguments prepared once, results freed, not copied); each peer
figure is the median of the same number of calls here. The memory-bound
section measures the copy bandwidth right before each op, in several
rounds, and reports the median of the rounds' ratios: on a machine shared
with other work, bandwidth drifts from minute to minute. Ratios are peer time
over Tessera time (higher is better for Tessera; 1.0 is parity).
"""

import argparse
import ctypes
import os
import pathlib
import platform
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Rounds of (copy, op) pairs in the memory-bound section.
ROUNDS = 3


def machine():
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    llvm = subprocess.run(["llvm-config-22", "--version"], capture_output=True,
                          text=True).stdout.strip() or "?"
    return f"{model}, {os.cpu_count()} cores; LLVM {llvm}; NumPy {np.__version__}; Python {platform.python_version()}"


class OpenBLAS:
    def __init__(self):
        self.lib = ctypes.CDLL("libopenblas.so.0")
        self.lib.openblas_get_config.restype = ctypes.c_char_p
        self.config = self.lib.openblas_get_config().decode()
        f = ctypes.c_float
        p = ctypes.c_void_p
        i = ctypes.c_int
        self.lib.cblas_sgemm.argtypes = [i, i, i, i, i, i, f, p, i, p, i, f, p, i]

    def threads(self, n):
        self.lib.openblas_set_num_threads(n)

    def sgemm(self, a, b, c):
        m, k = a.shape
        n = b.shape[1]
        self.lib.cblas_sgemm(101, 111, 111, m, n, k, 1.0, a.ctypes.data, k,
                             b.ctypes.data, n, 0.0, c.ctypes.data, n)


def times_ms(fn, calls, warmup=2):
    """(median, min) of `calls` timed calls, in ms."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return float(np.median(times)), float(np.min(times))


def median_ms(fn, calls, warmup=2):
    return times_ms(fn, calls, warmup)[0]


def tessera(run, mlir, dims, calls, threads, cache_dir=None):
    with tempfile.TemporaryDirectory() as tmp:
        # In the cache directory when there is one: the IR's locations (its
        # file name) are part of the cache key.
        path = pathlib.Path(cache_dir or tmp) / "bench.mlir"
        path.write_text(mlir)
        cache = ["--cache-dir", str(cache_dir)] if cache_dir else []
        out = subprocess.run([run, str(path), "--dims", dims, "--bench", str(calls),
                              "--quiet", "--time-compile", "--num-threads", str(threads),
                              *cache],
                             capture_output=True, text=True)
        if out.returncode:
            sys.exit(f"tessera-run failed: {out.stderr}")
        median = float(re.search(r"median ([0-9.]+) ms", out.stdout).group(1))
        compile_ms = float(re.search(r"compile: ([0-9.]+) ms", out.stdout).group(1))
        return median, compile_ms


MATMUL = """func.func @f(%a: tensor<?x?xf32, #tgraph.dims<[M, K]>>, %b: tensor<?x?xf32, #tgraph.dims<[K, N]>>)
    -> tensor<?x?xf32, #tgraph.dims<[M, N]>> {
  %c = tgraph.matmul %a, %b : (tensor<?x?xf32, #tgraph.dims<[M, K]>>, tensor<?x?xf32, #tgraph.dims<[K, N]>>)
      -> tensor<?x?xf32, #tgraph.dims<[M, N]>>
  return %c : tensor<?x?xf32, #tgraph.dims<[M, N]>>
}"""

GELU = """!t = tensor<?x?xf32, #tgraph.dims<[R, C]>>
!v = tensor<?xf32, #tgraph.dims<[C]>>
func.func @f(%x: !t, %w: !v, %b: !v) -> !t {
  %m = tgraph.mul %x, %w : (!t, !v) -> !t
  %a = tgraph.add %m, %b : (!t, !v) -> !t
  %g = tgraph.gelu %a {approximate} : !t
  return %g : !t
}"""

# A copy through Tessera (negation: one read and one write per element), on
# both threads: the machine's copy bandwidth as compiled code reaches it.
COPY = """!t = tensor<?x?xf32, #tgraph.dims<[R, C]>>
func.func @f(%x: !t) -> !t {
  %y = tgraph.neg %x : !t
  return %y : !t
}"""

SOFTMAX = """!t = tensor<?x?xf32, #tgraph.dims<[R, C]>>
func.func @f(%x: !t) -> !t {
  %s = tgraph.softmax %x {dim = 1 : i64} : !t
  return %s : !t
}"""

LAYERNORM = """!t = tensor<?x?xf32, #tgraph.dims<[R, C]>>
!v = tensor<?xf32, #tgraph.dims<[C]>>
func.func @f(%x: !t, %g: !v, %b: !v) -> !t {
  %y = tgraph.layernorm %x scale %g bias %b {axis = 1 : i64} : (!t, !v, !v) -> !t
  return %y : !t
}"""


def two_layer_block():
    text = (ROOT / "examples" / "transformer_block.mlir").read_text()
    body = text[text.index("func.func"):]
    second = body.replace("@block", "@block2")
    caller = """
func.func @f(%x: !x, %ln1: tensor<512xf32>, %wq: tensor<512x512xf32>,
             %wk: tensor<512x512xf32>, %wv: tensor<512x512xf32>,
             %wo: tensor<512x512xf32>, %ln2: tensor<512xf32>,
             %w1: tensor<512x2048xf32>, %w2: tensor<2048x512xf32>) -> tensor<?x?x?xf32> {
  %y = tgraph.call @block(%x, %ln1, %wq, %wk, %wv, %wo, %ln2, %w1, %w2)
      : (!x, tensor<512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>,
         tensor<512x512xf32>, tensor<512xf32>, tensor<512x2048xf32>, tensor<2048x512xf32>)
      -> tensor<?x?x?xf32>
  %y2 = tgraph.cast %y : tensor<?x?x?xf32> -> !x
  %z = tgraph.call @block2(%y2, %ln1, %wq, %wk, %wv, %wo, %ln2, %w1, %w2)
      : (!x, tensor<512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>,
         tensor<512x512xf32>, tensor<512xf32>, tensor<512x2048xf32>, tensor<2048x512xf32>)
      -> tensor<?x?x?xf32>
  return %z : tensor<?x?x?xf32>
}
"""
    header = text[:text.index("func.func")]
    return header + body.replace("func.func @block", "func.func private @block") + \
        second.replace("func.func @block2", "func.func private @block2") + caller


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tessera-run", default=str(ROOT / "build" / "bin" / "tessera-run"))
    parser.add_argument("--quick", action="store_true", help="fewer sizes and calls")
    args = parser.parse_args()
    run = args.tessera_run
    calls = 3 if args.quick else 7
    blas = OpenBLAS()
    print(f"# {time.strftime('%Y-%m-%d')} | {machine()}")
    print(f"# OpenBLAS: {blas.config}")
    rng = np.random.default_rng(0)

    print("\n## f32 GEMM: Tessera vs OpenBLAS sgemm (ratio = OpenBLAS time / Tessera time)")
    print(f"{'M x K x N':>20} {'threads':>7} {'Tessera ms':>11} {'GFLOP/s':>8} {'OpenBLAS ms':>12} {'GFLOP/s':>8} {'ratio':>6}")
    shapes = [(256,) * 3, (512,) * 3, (1024,) * 3, (2048,) * 3, (4096, 1024, 1024)]
    if args.quick:
        shapes = [(512,) * 3, (1024,) * 3]
    for m, k, n in shapes:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        c = np.empty((m, n), np.float32)
        flops = 2.0 * m * n * k
        for threads in (1, 2):
            t_ms, _ = tessera(run, MATMUL, f"M={m},K={k},N={n}", calls, threads)
            blas.threads(threads)
            b_ms = median_ms(lambda: blas.sgemm(a, b, c), calls)
            print(f"{f'{m} x {k} x {n}':>20} {threads:>7} {t_ms:>11.2f} {flops / t_ms / 1e6:>8.1f} "
                  f"{b_ms:>12.2f} {flops / b_ms / 1e6:>8.1f} {b_ms / t_ms:>6.2f}")

    print("\n## Memory-bound ops, 2 threads (ratio = copy time of the same bytes / op time)")
    print("# copy: the faster of np.copyto and a Tessera copy on 2 threads, measured in each")
    print(f"# of {ROUNDS} rounds right before the op (a shared machine drifts between rounds);")
    print("# the ratio is the median over rounds of each round's ratio of medians")
    mem_calls = max(calls, 30)

    def copy_ms(rows, cols, x):
        dst = np.empty_like(x)
        np_ms, _ = times_ms(lambda: np.copyto(dst, x), mem_calls)
        ts_ms, _ = tessera(run, COPY, f"R={rows},C={cols}", mem_calls, 2)
        return min(np_ms, ts_ms)

    def against_copy(name, mlir, rows, cols, x, peer=None):
        ratios, op_times, copy_times, peer_times = [], [], [], []
        for _ in range(ROUNDS):
            c_ms = copy_ms(rows, cols, x)
            t_ms, _ = tessera(run, mlir, f"R={rows},C={cols}", mem_calls, 2)
            if peer:
                peer_times.append(median_ms(peer, calls))
            ratios.append(c_ms / t_ms)
            op_times.append(t_ms)
            copy_times.append(c_ms)
        gbs = 2 * x.nbytes / float(np.median(copy_times)) / 1e6
        line = (f"{name}: Tessera {np.median(op_times):.2f} ms, copy {np.median(copy_times):.2f} ms "
                f"({gbs:.0f} GB/s read+write)")
        if peer:
            line += f", NumPy {np.median(peer_times):.2f} ms (x{np.median(peer_times) / np.median(op_times):.1f})"
        rounds = " ".join(f"{r:.2f}" for r in ratios)
        print(f"{line}, copy bandwidth fraction {np.median(ratios):.2f} (rounds: {rounds})")

    rows, cols = (4096, 4096)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    w = rng.standard_normal(cols, dtype=np.float32)
    bias = rng.standard_normal(cols, dtype=np.float32)

    def numpy_gelu():
        a = x * w + bias
        return 0.5 * a * (1 + np.tanh(np.float32(0.7978845608) * (a + np.float32(0.044715) * a * a * a)))

    against_copy("gelu(x*w+b) 16M f32", GELU, rows, cols, x, numpy_gelu)

    rows, cols = (8192, 1024)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    for name, mlir in (("softmax", SOFTMAX), ("layernorm", LAYERNORM)):
        against_copy(f"{name} {rows}x{cols} f32", mlir, rows, cols, x)

    print("\n## Transformer block forward (examples/transformer_block.mlir, d_model 512), 2 threads")
    print("# peer: the same block in NumPy float32 (examples/transformer_block.py; NumPy's BLAS)")
    sys.path.insert(0, str(ROOT / "examples"))
    import transformer_block as block_ref
    block_mlir = (ROOT / "examples" / "transformer_block.mlir").read_text()
    weights = block_ref.random_weights(rng, np.float32)
    for b, s in ((2, 32), (4, 128)):
        x = rng.standard_normal((b, s, 512), dtype=np.float32)
        np_ms = median_ms(lambda: block_ref.block(x, *weights), calls)
        t_ms, _ = tessera(run, block_mlir, f"B={b},S={s}", calls, 2)
        tokens = b * s
        flops = tokens * 2.0 * (4 * 512 * 512 + 2 * 512 * 2048) + b * 2.0 * 2 * s * s * 512
        print(f"B={b}, S={s} ({tokens} tokens): Tessera {t_ms:.2f} ms ({flops / t_ms / 1e6:.0f} GFLOP/s), "
              f"NumPy {np_ms:.2f} ms, ratio {np_ms / t_ms:.2f}")

    print("\n## Compile time (tessera-run process: parse, compile or load, first call excluded)")
    cold, warm = [], []
    for _ in range(1 if args.quick else 3):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(tessera(run, two_layer_block(), "B=1,S=16", 1, 1, cache)[1])
            warm.append(tessera(run, two_layer_block(), "B=1,S=16", 1, 1, cache)[1])
    print(f"2-layer transformer block (d_model 512): cold {np.median(cold):.0f} ms, "
          f"from the disk cache (new process) {np.median(warm):.1f} ms "
          f"(medians of {len(cold)}; cold: {' '.join(f'{t:.0f}' for t in cold)})")


if __name__ == "__main__":
    main()
