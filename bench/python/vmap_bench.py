"""Per-example gradients (vmap of grad) through ts.jit beside jax.jit on the
same CPU, in the same run, and the same map run as a loop (ts.scan).

    PYTHONPATH=build/python build/venv/bin/python bench/python/vmap_bench.py

Model: MLP 784-256-10 (f32), cross-entropy per example, batch 128: the
gradient of every parameter for every example ([128, 784, 256] for the first
weight). Tessera's vmap rewrites the per-example program into batched ops;
the loop is what vmap ran before it had batching rules (and still runs for
ops without one). Timings as train_bench.py: medians over rounds,
frameworks interleaved, ratios are medians of per-round ratios.
"""

import argparse
import os
import platform

import numpy as np

import tessera as ts
from tessera import nn, op

from train_bench import compare


def loss(params, x, y):
    logits = nn.mlp(params, op.reshape(x, [1, 784]))
    return op.cross_entropy(logits, op.reshape(y, [1]))


def tessera_vmap(params, xs, ys):
    f = ts.jit(ts.vmap(ts.grad(loss), in_axes=(None, 0, 0)))
    return lambda: f(params, xs, ys)[0]["w"].sum()


def tessera_loop(params, xs, ys):
    @ts.jit
    def f(params, xs, ys):
        def body(c, xy):
            return c, ts.grad(loss)(params, *xy)
        return ts.scan(body, (), (xs, ys))[1]
    return lambda: f(params, xs, ys)[0]["w"].sum()


def jax_vmap(params, xs, ys):
    import jax
    import jax.numpy as jnp

    def jloss(p, x, y):
        h = x[None]
        for i, layer in enumerate(p):
            h = h @ layer["w"] + layer["b"]
            if i + 1 < len(p):
                h = jax.nn.relu(h)
        return -jax.nn.log_softmax(h)[0, y]

    f = jax.jit(jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0)))
    jp = jax.tree_util.tree_map(jnp.asarray, params)
    jx, jy = jnp.asarray(xs), jnp.asarray(ys)

    def run():
        g = f(jp, jx, jy)
        return g[0]["w"].sum().block_until_ready()
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    import jax
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} "
          f"cpus, {ts.num_threads()} Tessera threads; numpy {np.__version__}, "
          f"jax {jax.__version__}")
    rng = nn.rng(0)
    params = nn.mlp_init(rng, [784, 256, 10])
    xs = rng.standard_normal((args.batch, 784)).astype(np.float32)
    ys = rng.integers(0, 10, args.batch).astype(np.int32)
    makers = {"tessera": lambda: tessera_vmap(params, xs, ys),
              "jax": lambda: jax_vmap(params, xs, ys),
              "tessera_loop": lambda: tessera_loop(params, xs, ys)}
    compare("per-example grads", makers, args.calls, args.rounds)


if __name__ == "__main__":
    main()
