"""Compile time of a chain of softmaxes with residual connections (the
program of a deep stack of normalizations), Tessera beside jax.jit, forward
and gradient, at several depths.

  build/venv/bin/python bench/cpu/compile_bench.py [--depths 8,32,64]

Each compile is of a fresh function (no cache): the first call's time,
trace included, minus nothing (the call itself runs in microseconds). The
values of both are checked against NumPy in float64. Prints the machine,
versions, one row per depth and mode, and the ratio JAX / Tessera (above
1: Tessera compiles faster).
"""

import argparse
import os
import platform
import time

import numpy as np


def chain_tessera(n):
    from tessera import op

    def f(x):
        h = x
        for _ in range(n):
            h = op.softmax(h, axis=-1) * 2.0 + h
        return op.reduce_sum(h * h)
    return f


def chain_jax(n):
    import jax
    import jax.numpy as jnp

    def f(x):
        h = x
        for _ in range(n):
            h = jax.nn.softmax(h, axis=-1) * 2.0 + h
        return jnp.sum(h * h)
    return f


def chain_numpy(n, x):
    h = x.astype(np.float64)
    for _ in range(n):
        e = np.exp(h - h.max(-1, keepdims=True))
        h = e / e.sum(-1, keepdims=True) * 2.0 + h
    return (h * h).sum()


def first_call(fn, x):
    start = time.perf_counter()
    out = fn(x)
    if hasattr(out, "block_until_ready"):
        out.block_until_ready()
    return time.perf_counter() - start, np.asarray(out, np.float64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="8,32,64")
    a = parser.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import tessera as ts

    print(f"machine: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores; jax {jax.__version__}")
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    print("depth  mode      Tessera s   jax.jit s   JAX / Tessera")
    for n in [int(d) for d in a.depths.split(",")]:
        for mode in ["forward", "gradient"]:
            if mode == "forward":
                t_fn = ts.jit(chain_tessera(n), cache_dir="")
                j_fn = jax.jit(chain_jax(n))
            else:
                t_fn = ts.jit(ts.grad(chain_tessera(n)), cache_dir="")
                j_fn = jax.jit(jax.grad(chain_jax(n)))
            t_s, t_out = first_call(t_fn, x)
            j_s, j_out = first_call(j_fn, x)
            if mode == "forward":
                ref = chain_numpy(n, x)
                assert abs(t_out - ref) <= 1e-4 * abs(ref), (t_out, ref)
            else:
                assert np.allclose(t_out, j_out, rtol=1e-3, atol=1e-3)
            print(f"{n:5d}  {mode:8s}  {t_s:9.3f}   {j_s:9.3f}   "
                  f"{j_s / t_s:6.2f}")


if __name__ == "__main__":
    main()
