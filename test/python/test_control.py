"""ts.scan and ts.vmap against jax.lax.scan and jax.vmap, and their
gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tessera as ts
from tessera import op

jax.config.update("jax_enable_x64", True)


def close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol,
                               atol=atol)


def rnn(w, u):
    def step(h, x):
        h = op.tanh(op.matmul(op.reshape(h, [1, 4]), w)[0] + x * u)
        return h, op.reduce_sum(h)
    return step


def jax_rnn(w, u):
    def step(h, x):
        h = jnp.tanh(h @ w + x * u)
        return h, jnp.sum(h)
    return step


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_matches_lax_scan(reverse, rng):
    w, u = rng.standard_normal((4, 4)) * 0.5, rng.standard_normal(4)
    xs = rng.standard_normal((6, 4))
    h0 = np.zeros(4)
    h, ys = ts.scan(rnn(w, u), h0, xs, reverse=reverse)
    jh, jys = jax.lax.scan(jax_rnn(w, u), h0, xs, reverse=reverse)
    close(h, jh)
    close(ys, jys)


def test_scan_with_pytrees_and_length():
    def step(c, _):
        return {"n": c["n"] + 1.0, "s": c["s"] * 2.0}, c["n"]

    c, ys = ts.scan(step, {"n": np.zeros(()), "s": np.ones(2)}, None,
                    length=5)
    close(c["n"], 5.0)
    close(c["s"], [32.0, 32.0])
    close(ys, np.arange(5.0))


def test_gradient_through_scan_matches_jax(rng):
    w, u = rng.standard_normal((4, 4)) * 0.5, rng.standard_normal(4)
    xs = rng.standard_normal((5, 4))

    def loss(w):
        _, ys = ts.scan(rnn(w, u), op.zeros((4,), "f64"), xs)
        return op.reduce_sum(ys * ys)

    def jloss(w):
        _, ys = jax.lax.scan(jax_rnn(w, u), jnp.zeros(4), xs)
        return jnp.sum(ys * ys)

    close(ts.grad(loss)(w), jax.grad(jloss)(w), rtol=1e-9)


def test_vmap_matches_jax(rng):
    a = rng.standard_normal((5, 3))
    b = rng.standard_normal((3, 2))
    f = lambda x, m: op.tanh(op.matmul(op.reshape(x, [1, 3]), m))[0]
    jf = lambda x, m: jnp.tanh(x @ m)
    close(ts.vmap(f, in_axes=(0, None))(a, b),
          jax.vmap(jf, in_axes=(0, None))(a, b))
    # Mapped over axis 1, results on axis 1.
    close(ts.vmap(f, in_axes=(1, None), out_axes=1)(a.T.copy(), b),
          jax.vmap(jf, in_axes=(1, None), out_axes=1)(a.T, b))
    # Inside jit, with a symbolic batch: one compilation for every size.
    @ts.jit
    def g(x: ts.Tensor["N", 3, ts.f64]):
        return ts.vmap(lambda r: op.reduce_sum(r * r))(x)

    for n in (2, 7):
        x = rng.standard_normal((n, 3))
        close(g(x), (x * x).sum(1))
    assert len(g._cache) == 1
    with pytest.raises(ts.TesseraError, match="no argument is mapped"):
        ts.vmap(f, in_axes=(None, None))(a, b)


def test_gradient_through_vmap(rng):
    a = rng.standard_normal((4, 3))
    m = rng.standard_normal((3, 2))
    f = lambda x, m: op.tanh(op.matmul(op.reshape(x, [1, 3]), m))[0]
    g = ts.grad(lambda m: op.reduce_sum(ts.vmap(f, (0, None))(a, m)))(m)
    close(g, jax.grad(lambda m: jnp.sum(jnp.tanh(a @ m)))(m))
