"""NumPy version of examples/transformer_block.mlir, for checking and timing.

`block(...)` computes the same pre-norm block (rmsnorm, 8-head causal
attention, gelu MLP, residuals) in the dtype of its inputs: float64 inputs
give the reference the tests compare with, float32 inputs the NumPy peer the
benchmarks time.
"""

import numpy as np

HEADS = 8


def rmsnorm(x, scale, eps=1e-5):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + x.dtype.type(eps)) * scale


def gelu_tanh(x):
    c = x.dtype.type(np.sqrt(2.0 / np.pi))
    return x.dtype.type(0.5) * x * (1 + np.tanh(c * (x + x.dtype.type(0.044715) * x * x * x)))


def causal_attention(q, k, v):
    """q, k, v: [B, H, S, D]."""
    s = q @ np.swapaxes(k, -1, -2) * q.dtype.type(1.0 / np.sqrt(q.shape[-1]))
    n = s.shape[-1]
    s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, np.finfo(s.dtype).min)
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    return (s / s.sum(axis=-1, keepdims=True)) @ v


def block(x, ln1, wq, wk, wv, wo, ln2, w1, w2):
    b, s, d = x.shape

    def heads(t):
        return t.reshape(b, s, HEADS, d // HEADS).transpose(0, 2, 1, 3)

    h = rmsnorm(x, ln1)
    o = causal_attention(heads(h @ wq), heads(h @ wk), heads(h @ wv))
    r1 = x + o.transpose(0, 2, 1, 3).reshape(b, s, d) @ wo
    return r1 + gelu_tanh(rmsnorm(r1, ln2) @ w1) @ w2


def random_weights(rng, dtype, d=512, ff=2048):
    """ln1, wq, wk, wv, wo, ln2, w1, w2 with variance-preserving scales."""
    def w(n, m):
        return (rng.standard_normal((n, m)) / np.sqrt(n)).astype(dtype)

    def ln():
        return (1 + 0.1 * rng.standard_normal(d)).astype(dtype)

    return [ln(), w(d, d), w(d, d), w(d, d), w(d, d), ln(), w(d, ff), w(ff, d)]
