"""Functional building blocks: parameters are pytrees of arrays, layers are
functions of (params, inputs). They trace like any other code, so a model
and its training step compile into one function.

    params = nn.mlp_init(rng, [784, 512, 10])
    logits = nn.mlp(params, x)                     # x: [B, 784]
"""

from __future__ import annotations

import math

import numpy as np

from . import op
from ._dtypes import as_dtype

# -- initializers (NumPy Generators: parameters are created outside jit) ----


def rng(seed: int = 0) -> np.random.Generator:
    """A NumPy generator on the Philox counter-based bit generator."""
    return np.random.Generator(np.random.Philox(seed))


def glorot_uniform(rng, shape, dtype="f32"):
    fan_in, fan_out = shape[-2] if len(shape) > 1 else shape[0], shape[-1]
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, shape).astype(as_dtype(dtype).numpy)


def he_normal(rng, shape, dtype="f32"):
    fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else shape[0]
    return (rng.standard_normal(shape) * math.sqrt(2.0 / fan_in)).astype(
        as_dtype(dtype).numpy)


def normal(rng, shape, stddev=0.02, dtype="f32"):
    return (rng.standard_normal(shape) * stddev).astype(as_dtype(dtype).numpy)


def zeros(shape, dtype="f32"):
    return np.zeros(shape, as_dtype(dtype).numpy)


def ones(shape, dtype="f32"):
    return np.ones(shape, as_dtype(dtype).numpy)


# -- layers -----------------------------------------------------------------


def linear_init(rng, d_in, d_out, bias=True, dtype="f32", init=he_normal):
    p = {"w": init(rng, (d_in, d_out), dtype)}
    if bias:
        p["b"] = zeros((d_out,), dtype)
    return p


def linear(params, x):
    """x [..., d_in] @ w [d_in, d_out] + b [d_out]."""
    y = op.matmul(x, params["w"])
    return y + params["b"] if "b" in params else y


def mlp_init(rng, sizes, dtype="f32"):
    return [linear_init(rng, a, b, dtype=dtype)
            for a, b in zip(sizes[:-1], sizes[1:])]


def mlp(params, x, activation=op.relu):
    """Linear layers with ``activation`` between them (not after the last)."""
    for i, layer in enumerate(params):
        x = linear(layer, x)
        if i + 1 < len(params):
            x = activation(x)
    return x


def layernorm_init(d, dtype="f32"):
    return {"scale": ones((d,), dtype), "bias": zeros((d,), dtype)}


def layernorm(params, x, epsilon=1e-5):
    return op.layernorm(x, params["scale"], params["bias"], axis=-1,
                        epsilon=epsilon)


def rmsnorm_init(d, dtype="f32"):
    return {"scale": ones((d,), dtype)}


def rmsnorm(params, x, epsilon=1e-6):
    return op.rmsnorm(x, params["scale"], axis=-1, epsilon=epsilon)


def embedding_init(rng, vocab, d, dtype="f32"):
    return {"table": normal(rng, (vocab, d), 0.02, dtype)}


def embedding(params, ids):
    """ids [...] -> [..., d]."""
    return op.embedding(params["table"], ids)


def conv2d_init(rng, c_in, c_out, kernel, dtype="f32"):
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    w = he_normal(rng, (kh * kw * c_in, c_out), dtype).reshape(kh, kw, c_in,
                                                               c_out)
    return {"w": np.ascontiguousarray(w), "b": zeros((c_out,), dtype)}


def conv2d(params, x, strides=(1, 1), padding=(0, 0, 0, 0)):
    """NHWC input, HWIO filter."""
    return op.conv2d(x, params["w"], strides=strides, padding=padding,
                     channels_last=True) + params["b"]


# -- attention and the transformer block ------------------------------------


def rope(x, base=10000.0):
    """Rotary position embedding of x [..., S, Dh] (Dh even): pairs (i,
    i + Dh/2) rotate by angle pos * base^(-2i/Dh). Works for symbolic S."""
    *_, s, dh = x.shape
    if isinstance(dh, str) or dh % 2:
        raise ValueError(f"rope needs a static, even head dim; got {dh}")
    half = dh // 2
    # Angles in f32 at least: bf16 holds positions only to 8 bits (2047
    # would be 2048) and its angles would be off by whole radians.
    dt = as_dtype(x.dtype)
    work = dt if dt.name in ("f32", "f64") else as_dtype("f32")
    pos = op.iota((s, half), 0, work)
    freq = op.exp(op.iota((s, half), 1, work) * (-2.0 * math.log(base) / dh))
    angle = pos * freq
    cos, sin = op.cos(angle), op.sin(angle)
    if work != dt:
        cos, sin = op.cast(cos, dt), op.cast(sin, dt)
    x1, x2 = x[..., :half], x[..., half:]
    return op.concat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def attention_init(rng, d, heads, dtype="f32"):
    if d % heads:
        raise ValueError(f"model dim {d} is not a multiple of {heads} heads")
    init = glorot_uniform
    return {"wq": init(rng, (d, d), dtype), "wk": init(rng, (d, d), dtype),
            "wv": init(rng, (d, d), dtype), "wo": init(rng, (d, d), dtype)}


def _split_heads(x, heads):
    b, s, d = x.shape                      # [B, S, D] -> [B, H, S, D/H]
    return op.transpose(op.reshape(x, [b, s, heads, d // heads]),
                        [0, 2, 1, 3])


def _merge_heads(x):
    b, h, s, dh = x.shape                  # [B, H, S, Dh] -> [B, S, H*Dh]
    return op.reshape(op.transpose(x, [0, 2, 1, 3]), [b, s, h * dh])


def multi_head_attention(params, x, heads, causal=True, use_rope=True):
    """Self-attention of x [B, S, D] with ``heads`` heads (and RoPE)."""
    q = _split_heads(op.matmul(x, params["wq"]), heads)
    k = _split_heads(op.matmul(x, params["wk"]), heads)
    v = _split_heads(op.matmul(x, params["wv"]), heads)
    if use_rope:
        q, k = rope(q), rope(k)
    y = op.attention(q, k, v, causal=causal)
    return op.matmul(_merge_heads(y), params["wo"])


def transformer_block_init(rng, d, heads, ffn, dtype="f32"):
    return {"ln1": layernorm_init(d, dtype),
            "attn": attention_init(rng, d, heads, dtype),
            "ln2": layernorm_init(d, dtype),
            "up": linear_init(rng, d, ffn, dtype=dtype),
            "down": linear_init(rng, ffn, d, dtype=dtype)}


def transformer_block(params, x, heads, causal=True):
    """Pre-norm block: x + attn(ln(x)), then x + mlp(ln(x)) (GELU)."""
    x = x + multi_head_attention(params["attn"], layernorm(params["ln1"], x),
                                 heads, causal)
    h = op.gelu(linear(params["up"], layernorm(params["ln2"], x)),
                approximate=True)
    return x + linear(params["down"], h)
