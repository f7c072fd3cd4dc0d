#!/usr/bin/env python3
"""Reverse-mode gradients on the CPU: Tessera beside JAX, in one run.

    python3 bench/cpu/autodiff_bench.py [--tessera-run build/bin/tessera-run] [--calls 20]

For an MLP loss and the example transformer block (d_model 512), prints
- Tessera's forward time and gradient time (tgraph.adjoint with respect to
  every weight; for the block also the input), and their ratio (the goal
  is <= 3);
- jax.jit(jax.grad(f)) on the same shapes, and the ratio JAX time /
  Tessera time (>= 1 means Tessera's gradient is at least as fast).

Times are medians of timed calls (Tessera inside tessera-run, JAX here,
after warm-up and compilation), float32, 2 threads for both (JAX through
XLA's CPU client with the process limited to 2 cores). Forward, gradient
and JAX are measured in turn, in several rounds; the ratios are medians
of the rounds' ratios (a shared machine drifts between rounds), and in
parentheses the same from each round's fastest calls.
"""

import argparse
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
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from cpu_bench import times_ms  # noqa: E402  (median, min) of timed calls, in ms


def tessera_times(run, mlir, fn, dims, calls, threads=2):
    """(median, min) in ms."""
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "bench.mlir"
        path.write_text(mlir)
        out = subprocess.run([run, str(path), "--fn", fn, "--dims", dims, "--bench", str(calls),
                              "--quiet", "--num-threads", str(threads)],
                             capture_output=True, text=True)
        if out.returncode:
            sys.exit(f"tessera-run failed: {out.stderr}")
        return (float(re.search(r"median ([0-9.]+) ms", out.stdout).group(1)),
                float(re.search(r"min ([0-9.]+) ms", out.stdout).group(1)))


MLP = """func.func @loss(%x: tensor<?x512xf32, #tgraph.dims<[B, 512]>>,
                 %w1: tensor<512x1024xf32> {tgraph.name = "w1"},
                 %b1: tensor<1024xf32> {tgraph.name = "b1"},
                 %w2: tensor<1024x1024xf32> {tgraph.name = "w2"},
                 %b2: tensor<1024xf32> {tgraph.name = "b2"},
                 %w3: tensor<1024x512xf32> {tgraph.name = "w3"}) -> tensor<f32> {
  %h1 = tgraph.matmul %x, %w1 : (tensor<?x512xf32, #tgraph.dims<[B, 512]>>, tensor<512x1024xf32>)
      -> tensor<?x1024xf32, #tgraph.dims<[B, 1024]>>
  %a1 = tgraph.add %h1, %b1 : (tensor<?x1024xf32, #tgraph.dims<[B, 1024]>>, tensor<1024xf32>)
      -> tensor<?x1024xf32, #tgraph.dims<[B, 1024]>>
  %r1 = tgraph.tanh %a1 : tensor<?x1024xf32, #tgraph.dims<[B, 1024]>>
  %h2 = tgraph.matmul %r1, %w2 : (tensor<?x1024xf32, #tgraph.dims<[B, 1024]>>, tensor<1024x1024xf32>)
      -> tensor<?x1024xf32, #tgraph.dims<[B, 1024]>>
  %a2 = tgraph.add %h2, %b2 : (tensor<?x1024xf32, #tgraph.dims<[B, 1024]>>, tensor<1024xf32>)
      -> tensor<?x1024xf32, #tgraph.dims<[B, 1024]>>
  %r2 = tgraph.tanh %a2 : tensor<?x1024xf32, #tgraph.dims<[B, 1024]>>
  %o = tgraph.matmul %r2, %w3 : (tensor<?x1024xf32, #tgraph.dims<[B, 1024]>>, tensor<1024x512xf32>)
      -> tensor<?x512xf32, #tgraph.dims<[B, 512]>>
  %d = tgraph.sub %o, %x : (tensor<?x512xf32, #tgraph.dims<[B, 512]>>, tensor<?x512xf32, #tgraph.dims<[B, 512]>>)
      -> tensor<?x512xf32, #tgraph.dims<[B, 512]>>
  %s = tgraph.square %d : tensor<?x512xf32, #tgraph.dims<[B, 512]>>
  %l = tgraph.reduce_mean %s {dims = array<i64: 0, 1>} : (tensor<?x512xf32, #tgraph.dims<[B, 512]>>)
      -> tensor<f32>
  return %l : tensor<f32>
}
tgraph.adjoint @loss wrt(%w1, %b1, %w2, %b2, %w3) -> @grad
"""


def jax_mlp(jnp):
    def loss(w1, b1, w2, b2, w3, x):
        r1 = jnp.tanh(x @ w1 + b1)
        r2 = jnp.tanh(r1 @ w2 + b2)
        return jnp.mean((r2 @ w3 - x) ** 2)
    return loss


def jax_block(jax, jnp):
    def rmsnorm(x, scale):
        return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-5) * scale

    def block(x, ln1, wq, wk, wv, wo, ln2, w1, w2):
        b, s, d = x.shape

        def heads(t):
            return t.reshape(b, s, 8, d // 8).transpose(0, 2, 1, 3)

        h = rmsnorm(x, ln1)
        q, k, v = heads(h @ wq), heads(h @ wk), heads(h @ wv)
        sc = q @ jnp.swapaxes(k, -1, -2) / np.sqrt(d // 8)
        sc = jnp.where(jnp.tril(jnp.ones((s, s), bool)), sc, -jnp.inf)
        o = jax.nn.softmax(sc, axis=-1) @ v
        r1 = x + o.transpose(0, 2, 1, 3).reshape(b, s, d) @ wo
        u = rmsnorm(r1, ln2) @ w1
        return r1 + jax.nn.gelu(u, approximate=True) @ w2
    return block


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tessera-run", default=str(ROOT / "build" / "bin" / "tessera-run"))
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    # JAX on 2 cores, like Tessera's 2 threads.
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:2]))
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true")
    import jax
    import jax.numpy as jnp
    sys.path.insert(0, str(ROOT / "examples"))
    import transformer_block as block_ref

    model = "unknown CPU"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    print(f"# {time.strftime('%Y-%m-%d')} | {model}, {os.cpu_count()} cores | "
          f"JAX {jax.__version__} | Python {platform.python_version()}")
    print("# medians; in parentheses the ratios of the fastest calls (steadier on a shared host)")
    print(f"{'model':>28} {'fwd ms':>8} {'grad ms':>8} {'grad/fwd':>14} "
          f"{'JAX grad ms':>11} {'JAX/Tessera':>14}")

    def row(label, measure):
        """`measure()` -> (fwd, grad, jax), each (median, min) in ms."""
        rounds = [measure() for _ in range(args.rounds)]
        med = lambda xs: float(np.median(xs))
        fwd = [r[0][0] for r in rounds]
        grad = [r[1][0] for r in rounds]
        jx = [r[2][0] for r in rounds]
        ratio = med([r[1][0] / r[0][0] for r in rounds])
        ratio_min = med([r[1][1] / r[0][1] for r in rounds])
        vs = med([r[2][0] / r[1][0] for r in rounds])
        vs_min = med([r[2][1] / r[1][1] for r in rounds])
        print(f"{label:>28} {med(fwd):>8.2f} {med(grad):>8.2f} "
              f"{ratio:>6.2f} ({ratio_min:>5.2f}) {med(jx):>11.2f} "
              f"{vs:>6.2f} ({vs_min:>5.2f})")
        print(f"{'rounds: grad/fwd':>28} " +
              " ".join(f"{r[1][0] / r[0][0]:.2f}" for r in rounds) +
              " | JAX/Tessera " + " ".join(f"{r[2][0] / r[1][0]:.2f}" for r in rounds))
    rng = np.random.default_rng(0)
    run = args.tessera_run

    # MLP: 512 -> 1024 -> 1024 -> 512, mean squared reconstruction error.
    batch = 256
    ws = [rng.standard_normal(s).astype(np.float32) / np.sqrt(s[0]) for s in
          [(512, 1024), (1024,), (1024, 1024), (1024,), (1024, 512)]]
    x = rng.standard_normal((batch, 512)).astype(np.float32)
    g = jax.jit(jax.grad(jax_mlp(jnp), argnums=(0, 1, 2, 3, 4)))
    row(f"MLP 512-1024-1024-512, B={batch}", lambda: (
        tessera_times(run, MLP, "loss", f"B={batch}", args.calls),
        tessera_times(run, MLP, "grad", f"B={batch}", args.calls),
        times_ms(lambda: jax.block_until_ready(g(*ws, x)), args.calls, warmup=3)))

    # The example transformer block: VJP with respect to the input and all
    # eight weights.
    text = (ROOT / "examples" / "transformer_block.mlir").read_text()
    text += ("tgraph.adjoint @block wrt(" + ", ".join(f"%arg{i}" for i in range(9)) +
             ") -> @block_vjp\n")
    for b, s in ((4, 128),):
        weights = block_ref.random_weights(rng, np.float32)
        xb = rng.standard_normal((b, s, 512)).astype(np.float32)
        seed = rng.standard_normal((b, s, 512)).astype(np.float32)
        f = jax_block(jax, jnp)

        def vjp(*a):
            _, pull = jax.vjp(f, *a)
            return pull(seed)
        jv = jax.jit(vjp)
        row(f"transformer block B={b} S={s}", lambda: (
            tessera_times(run, text, "block", f"B={b},S={s}", args.calls),
            tessera_times(run, text, "block_vjp", f"B={b},S={s}", args.calls),
            times_ms(lambda: jax.block_until_ready(jv(xb, *weights)), args.calls, warmup=3)))

if __name__ == "__main__":
    main()
