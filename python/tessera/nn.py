"""Functional building blocks: parameters are pytrees of arrays, layers are
functions of (params, inputs). They trace like any other code, so a model
and its training step compile into one function; outside a trace they run
eagerly on NumPy arrays.

The ``*_init`` functions create parameters as NumPy arrays (outside jit),
drawing random values from a NumPy Generator such as ``nn.rng(0)``::

    params = nn.mlp_init(nn.rng(0), [784, 512, 10])
    logits = nn.mlp(params, x)                     # x: [B, 784]
"""

from __future__ import annotations

import math

import numpy as np

from . import op
from ._dtypes import as_dtype

# -- initializers (NumPy Generators: parameters are created outside jit) ----


def rng(seed: int = 0) -> np.random.Generator:
    """A NumPy random Generator on the Philox counter-based bit generator.

    ``seed`` is an int; the same seed gives the same values on every
    machine. Pass the generator to the initializers of this module.

    >>> g = nn.rng(0)
    >>> type(g.bit_generator).__name__
    'Philox'
    >>> np.array_equal(nn.rng(7).integers(0, 100, 5),
    ...                nn.rng(7).integers(0, 100, 5))
    True
    """
    return np.random.Generator(np.random.Philox(seed))


def glorot_uniform(rng, shape, dtype="f32"):
    """Glorot (Xavier) uniform initializer: values drawn uniformly from
    [-limit, limit) with limit = sqrt(6 / (fan_in + fan_out)).

    ``fan_in`` is ``shape[-2]`` and ``fan_out`` is ``shape[-1]`` (both are
    ``shape[0]`` for a 1-D shape). ``rng`` is a NumPy Generator; ``dtype``
    is a Tessera dtype, its name or a NumPy dtype. Returns a NumPy array of
    ``shape`` and ``dtype``.

    >>> w = nn.glorot_uniform(nn.rng(0), (3, 4))
    >>> w.shape, w.dtype
    ((3, 4), dtype('float32'))
    >>> bool(np.abs(w).max() <= np.sqrt(6 / (3 + 4)))
    True
    """
    fan_in, fan_out = shape[-2] if len(shape) > 1 else shape[0], shape[-1]
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, shape).astype(as_dtype(dtype).numpy)


def he_normal(rng, shape, dtype="f32"):
    """He (Kaiming) normal initializer: normal values with mean 0 and
    standard deviation sqrt(2 / fan_in), suited to ReLU layers.

    ``fan_in`` is the product of all dims but the last (``shape[0]`` for a
    1-D shape), so an HWIO convolution filter gets kh * kw * c_in.
    ``rng`` is a NumPy Generator. Returns a NumPy array of ``shape`` and
    ``dtype``.

    >>> w = nn.he_normal(nn.rng(0), (512, 256))
    >>> w.shape, w.dtype
    ((512, 256), dtype('float32'))
    >>> bool(abs(w.std() - np.sqrt(2 / 512)) < 0.002)
    True
    """
    fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else shape[0]
    return (rng.standard_normal(shape) * math.sqrt(2.0 / fan_in)).astype(
        as_dtype(dtype).numpy)


def normal(rng, shape, stddev=0.02, dtype="f32"):
    """Normal values with mean 0 and standard deviation ``stddev``, as a
    NumPy array of ``shape`` and ``dtype`` (``rng``: a NumPy Generator).

    >>> w = nn.normal(nn.rng(0), (1000, 10), stddev=0.5, dtype="f64")
    >>> w.dtype, bool(abs(w.std() - 0.5) < 0.02)
    (dtype('float64'), True)
    """
    return (rng.standard_normal(shape) * stddev).astype(as_dtype(dtype).numpy)


def zeros(shape, dtype="f32"):
    """A NumPy array of zeros of ``shape`` (an int or a tuple) and
    ``dtype`` (a Tessera dtype, its name or a NumPy dtype).

    >>> nn.zeros((2, 3)).dtype
    dtype('float32')
    >>> nn.zeros(2, "i32")
    array([0, 0], dtype=int32)
    """
    return np.zeros(shape, as_dtype(dtype).numpy)


def ones(shape, dtype="f32"):
    """A NumPy array of ones of ``shape`` (an int or a tuple) and ``dtype``
    (a Tessera dtype, its name or a NumPy dtype).

    >>> nn.ones(3)
    array([1., 1., 1.], dtype=float32)
    >>> nn.ones((2, 2), "bf16").dtype
    dtype(bfloat16)
    """
    return np.ones(shape, as_dtype(dtype).numpy)


# -- layers -----------------------------------------------------------------


def linear_init(rng, d_in, d_out, bias=True, dtype="f32", init=he_normal):
    """Parameters of :func:`linear`: ``{"w": [d_in, d_out], "b": [d_out]}``.

    ``w`` is ``init(rng, (d_in, d_out), dtype)`` (He normal by default);
    ``b`` is zeros, and is left out when ``bias`` is False.

    >>> p = nn.linear_init(nn.rng(0), 784, 10)
    >>> p["w"].shape, p["b"].shape, p["w"].dtype
    ((784, 10), (10,), dtype('float32'))
    >>> sorted(nn.linear_init(nn.rng(0), 4, 2, bias=False))
    ['w']
    """
    p = {"w": init(rng, (d_in, d_out), dtype)}
    if bias:
        p["b"] = zeros((d_out,), dtype)
    return p


def linear(params, x):
    """A dense layer: ``x [..., d_in] @ w [d_in, d_out] + b [d_out]``.

    ``params`` is a dict with ``"w"`` and optionally ``"b"`` (as made by
    :func:`linear_init`); without ``"b"`` no bias is added. Returns
    ``[..., d_out]``.

    >>> p = {"w": np.array([[1.0, 0.0], [1.0, 2.0]], np.float32),
    ...      "b": np.array([0.5, -1.0], np.float32)}
    >>> nn.linear(p, np.array([[1.0, 2.0]], np.float32))
    array([[3.5, 3. ]], dtype=float32)
    """
    y = op.matmul(x, params["w"])
    return y + params["b"] if "b" in params else y


def mlp_init(rng, sizes, dtype="f32"):
    """Parameters of :func:`mlp`: a list of :func:`linear_init` dicts, one
    per pair of consecutive ``sizes`` (``[784, 512, 10]`` makes two layers,
    784 -> 512 and 512 -> 10).

    >>> params = nn.mlp_init(nn.rng(0), [784, 512, 10])
    >>> [layer["w"].shape for layer in params]
    [(784, 512), (512, 10)]
    """
    return [linear_init(rng, a, b, dtype=dtype)
            for a, b in zip(sizes[:-1], sizes[1:])]


def mlp(params, x, activation=op.relu):
    """Linear layers with ``activation`` between them (not after the last).

    ``params`` is a list of :func:`linear` parameter dicts (see
    :func:`mlp_init`); ``activation`` is a function of one tensor (default
    ``op.relu``). Returns the output of the last layer, e.g. logits.

    >>> params = [{"w": np.array([[1.0, -1.0]], np.float32)},
    ...           {"w": np.array([[1.0], [1.0]], np.float32)}]
    >>> x = np.array([[2.0]], np.float32)
    >>> nn.mlp(params, x)                  # relu([2, -2]) @ [1, 1]
    array([[2.]], dtype=float32)
    >>> nn.mlp(params, x, activation=op.abs)
    array([[4.]], dtype=float32)
    >>> ts.jit(lambda p, x: nn.mlp(p, x))(params, x)      # traced and compiled
    array([[2.]], dtype=float32)
    """
    for i, layer in enumerate(params):
        x = linear(layer, x)
        if i + 1 < len(params):
            x = activation(x)
    return x


def layernorm_init(d, dtype="f32"):
    """Parameters of :func:`layernorm` over a last dim of ``d``:
    ``{"scale": ones [d], "bias": zeros [d]}``.

    >>> nn.layernorm_init(2)
    {'scale': array([1., 1.], dtype=float32), 'bias': array([0., 0.], dtype=float32)}
    """
    return {"scale": ones((d,), dtype), "bias": zeros((d,), dtype)}


def layernorm(params, x, epsilon=1e-5):
    """Layer normalization over the last axis:
    ``(x - mean) / sqrt(var + epsilon) * scale + bias``.

    ``params`` has ``"scale"`` and ``"bias"`` of shape [d] (see
    :func:`layernorm_init`); ``x`` is [..., d]. Returns the shape of ``x``.

    >>> p = {"scale": np.array([2.0, 2.0], np.float32),
    ...      "bias": np.array([1.0, 1.0], np.float32)}
    >>> np.round(nn.layernorm(p, np.array([[1.0, 3.0]], np.float32)), 4)
    array([[-1.,  3.]], dtype=float32)
    """
    return op.layernorm(x, params["scale"], params["bias"], axis=-1,
                        epsilon=epsilon)


def rmsnorm_init(d, dtype="f32"):
    """Parameters of :func:`rmsnorm` over a last dim of ``d``:
    ``{"scale": ones [d]}``.

    >>> nn.rmsnorm_init(3)
    {'scale': array([1., 1., 1.], dtype=float32)}
    """
    return {"scale": ones((d,), dtype)}


def rmsnorm(params, x, epsilon=1e-6):
    """RMS normalization over the last axis:
    ``x / sqrt(mean(x^2) + epsilon) * scale``.

    ``params`` has ``"scale"`` of shape [d] (see :func:`rmsnorm_init`); ``x``
    is [..., d]. Returns the shape of ``x``.

    >>> x = np.array([[3.0, 4.0]], np.float32)   # mean(x^2) = 12.5
    >>> np.round(nn.rmsnorm(nn.rmsnorm_init(2), x) ** 2, 4)
    array([[0.72, 1.28]], dtype=float32)
    """
    return op.rmsnorm(x, params["scale"], axis=-1, epsilon=epsilon)


def embedding_init(rng, vocab, d, dtype="f32"):
    """Parameters of :func:`embedding`: ``{"table": [vocab, d]}`` drawn from
    a normal distribution with standard deviation 0.02.

    >>> p = nn.embedding_init(nn.rng(0), 1000, 64)
    >>> p["table"].shape, p["table"].dtype
    ((1000, 64), dtype('float32'))
    """
    return {"table": normal(rng, (vocab, d), 0.02, dtype)}


def embedding(params, ids):
    """Looks up the rows of ``params["table"]`` [vocab, d] at the integer
    ``ids`` [...]; returns [..., d].

    >>> p = {"table": np.arange(6, dtype=np.float32).reshape(3, 2)}
    >>> nn.embedding(p, np.array([2, 0]))
    array([[4., 5.],
           [0., 1.]], dtype=float32)
    """
    return op.embedding(params["table"], ids)


def conv2d_init(rng, c_in, c_out, kernel, dtype="f32"):
    """Parameters of :func:`conv2d`: ``{"w": HWIO filter [kh, kw, c_in,
    c_out], "b": zeros [c_out]}``.

    ``kernel`` is an int (a square kernel) or a pair (kh, kw). The filter is
    He normal with fan_in = kh * kw * c_in.

    >>> p = nn.conv2d_init(nn.rng(0), 3, 8, 3)
    >>> p["w"].shape, p["b"].shape
    ((3, 3, 3, 8), (8,))
    >>> nn.conv2d_init(nn.rng(0), 3, 8, (1, 5))["w"].shape
    (1, 5, 3, 8)
    """
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    w = he_normal(rng, (kh * kw * c_in, c_out), dtype).reshape(kh, kw, c_in,
                                                               c_out)
    return {"w": np.ascontiguousarray(w), "b": zeros((c_out,), dtype)}


def conv2d(params, x, strides=(1, 1), padding=(0, 0, 0, 0)):
    """2-D convolution of an NHWC input with an HWIO filter, plus a bias.

    ``params`` has ``"w"`` [kh, kw, c_in, c_out] and ``"b"`` [c_out] (see
    :func:`conv2d_init`); ``x`` is [N, H, W, c_in]. ``strides`` is (sh, sw)
    and ``padding`` is (top, bottom, left, right) in pixels of zeros.
    Returns [N, H', W', c_out].

    >>> p = {"w": np.ones((2, 2, 1, 1), np.float32),
    ...      "b": np.array([0.5], np.float32)}
    >>> x = np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)
    >>> nn.conv2d(p, x)[0, :, :, 0]         # sums of 2x2 windows, + 0.5
    array([[ 8.5, 12.5],
           [20.5, 24.5]], dtype=float32)
    >>> nn.conv2d(p, x, padding=(1, 1, 1, 1)).shape
    (1, 4, 4, 1)
    """
    return op.conv2d(x, params["w"], strides=strides, padding=padding,
                     channels_last=True) + params["b"]


# -- attention and the transformer block ------------------------------------


def rope(x, base=10000.0):
    """Rotary position embedding of ``x`` [..., S, Dh] (Dh even).

    The pair of features (i, i + Dh/2) at position ``pos`` (0 to S-1) is
    rotated by the angle ``pos * base^(-2i/Dh)``: x1' = x1 cos - x2 sin,
    x2' = x1 sin + x2 cos. Position 0 is unchanged and norms are kept.
    The angles are computed in f32 at least (f64 for f64 inputs), then cast
    to the dtype of ``x``. S may be symbolic; Dh must be static and even,
    else ValueError.

    >>> x = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]], np.float32)
    >>> np.round(nn.rope(x), 4)              # rotated by 0, 1 and 2 radians
    array([[ 1.    ,  0.    ],
           [ 0.5403,  0.8415],
           [-0.4161,  0.9093]], dtype=float32)
    >>> nn.rope(np.ones((2, 3), np.float32))
    Traceback (most recent call last):
        ...
    ValueError: rope needs a static, even head dim; got 3
    """
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
    """Parameters of :func:`multi_head_attention` for a model dim ``d``:
    ``{"wq", "wk", "wv", "wo"}``, each [d, d] and Glorot uniform.

    Raises ValueError when ``d`` is not a multiple of ``heads``.

    >>> p = nn.attention_init(nn.rng(0), 64, 4)
    >>> sorted(p), p["wq"].shape
    (['wk', 'wo', 'wq', 'wv'], (64, 64))
    >>> nn.attention_init(nn.rng(0), 6, 4)
    Traceback (most recent call last):
        ...
    ValueError: model dim 6 is not a multiple of 4 heads
    """
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
    """Multi-head self-attention of ``x`` [B, S, D] with ``heads`` heads.

    Projects ``x`` with ``wq``, ``wk`` and ``wv`` (see
    :func:`attention_init`), splits D into ``heads`` heads of D/heads,
    applies :func:`rope` to queries and keys when ``use_rope``, attends with
    scale 1/sqrt(D/heads) (position s sees only positions <= s when
    ``causal``), merges the heads and projects with ``wo``. Returns
    [B, S, D].

    >>> p = nn.attention_init(nn.rng(0), 8, 2)
    >>> x = nn.rng(1).standard_normal((1, 4, 8)).astype(np.float32)
    >>> y = nn.multi_head_attention(p, x, heads=2)
    >>> y.shape
    (1, 4, 8)
    >>> x2 = x.copy(); x2[:, 2:] = 0.0      # change the last two positions
    >>> np.allclose(y[:, :2], nn.multi_head_attention(p, x2, heads=2)[:, :2])
    True
    """
    q = _split_heads(op.matmul(x, params["wq"]), heads)
    k = _split_heads(op.matmul(x, params["wk"]), heads)
    v = _split_heads(op.matmul(x, params["wv"]), heads)
    if use_rope:
        q, k = rope(q), rope(k)
    y = op.attention(q, k, v, causal=causal)
    return op.matmul(_merge_heads(y), params["wo"])


def transformer_block_init(rng, d, heads, ffn, dtype="f32"):
    """Parameters of :func:`transformer_block` with model dim ``d``,
    ``heads`` attention heads and an MLP of hidden size ``ffn``.

    Returns ``{"ln1", "attn", "ln2", "up", "down"}``: two
    :func:`layernorm_init`, one :func:`attention_init` and two
    :func:`linear_init` (d -> ffn and ffn -> d).

    >>> p = nn.transformer_block_init(nn.rng(0), 8, 2, 32)
    >>> sorted(p)
    ['attn', 'down', 'ln1', 'ln2', 'up']
    >>> p["up"]["w"].shape, p["down"]["w"].shape
    ((8, 32), (32, 8))
    """
    return {"ln1": layernorm_init(d, dtype),
            "attn": attention_init(rng, d, heads, dtype),
            "ln2": layernorm_init(d, dtype),
            "up": linear_init(rng, d, ffn, dtype=dtype),
            "down": linear_init(rng, ffn, d, dtype=dtype)}


def transformer_block(params, x, heads, causal=True):
    """A pre-norm transformer block on ``x`` [B, S, D]: ``x + attn(ln1(x))``,
    then ``x + down(gelu(up(ln2(x))))``.

    The attention is :func:`multi_head_attention` with RoPE and ``heads``
    heads (causal by default); the GELU is the tanh approximation.
    ``params`` comes from :func:`transformer_block_init`. Returns [B, S, D].

    >>> p = nn.transformer_block_init(nn.rng(0), 8, 2, 32)
    >>> x = nn.rng(1).standard_normal((2, 5, 8)).astype(np.float32)
    >>> y = nn.transformer_block(p, x, heads=2)
    >>> y.shape, y.dtype
    ((2, 5, 8), dtype('float32'))
    """
    x = x + multi_head_attention(params["attn"], layernorm(params["ln1"], x),
                                 heads, causal)
    h = op.gelu(linear(params["up"], layernorm(params["ln2"], x)),
                approximate=True)
    return x + linear(params["down"], h)
