"""Every op on inputs with a dimension of size 0, against NumPy.

Each case names its inputs' dims with letters; every letter in turn is set
to 0 (the others to small sizes), and the op runs twice: compiled for those
exact shapes (static dims), and compiled once for symbolic dims (the
inputs annotated ``ts.Tensor["A", "B", ...]``) and called with the empty
arrays. Results must match NumPy in float64: reductions of nothing give
their identity, and where NumPy raises (the max or argmax of nothing)
Tessera raises an error that names the op."""

import inspect
import math

import numpy as np
import pytest

import tessera as ts
from tessera import op

SIZES = {"A": 3, "B": 2, "C": 4, "K": 3, "N": 2, "S": 5, "T": 3, "D": 4,
         "H": 2, "W": 3, "F": 2}


def _ln(x, axis=-1, eps=1e-5):
    m = x.mean(axis=axis, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(axis=axis, keepdims=True)
                             + eps)


def _lse(x, axis=-1, keepdims=False):
    with np.errstate(divide="ignore", invalid="ignore"):
        if x.shape[axis] == 0:
            r = np.full(np.sum(x, axis=axis, keepdims=True).shape, -np.inf)
        else:
            m = np.max(x, axis=axis, keepdims=True)
            r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


def _softmax(x, axis=-1):
    if x.size == 0:
        return x
    return np.exp(x - _lse(x, axis, keepdims=True))


def _attention(q, k, v):
    """softmax(q k^T / sqrt(D)) v; with no keys, the sum over nothing (0),
    as softmax-then-matmul gives."""
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    return _softmax(s) @ v


def _cross_entropy(logits, labels, reduction):
    logp = logits - _lse(logits, -1, keepdims=True)
    per = -np.take_along_axis(logp, labels[..., None], -1)[..., 0]
    if reduction == "none":
        return per
    if reduction == "sum":
        return per.sum()
    with np.errstate(invalid="ignore"):
        return per.mean() if per.size else np.float64(np.nan)


NO_IDENTITY = "has no identity"

# (name, input dims, tessera function, NumPy reference, input kinds)
# Input kinds: "f" float64 data, "i:n" int64 indices in [0, n) (n a dim
# letter), "b" booleans. A reference that raises ValueError means the op
# must raise a TesseraError naming it.
CASES = [
    ("exp", ["AB"], op.exp, np.exp),
    ("tanh", ["AB"], op.tanh, np.tanh),
    ("gelu", ["AB"], op.gelu, lambda x: 0.5 * x * (1 + np.vectorize(
        math.erf, otypes=[float])(x / math.sqrt(2)))),
    ("add_broadcast", ["AB", "B"], op.add, np.add),
    ("mul_scalar", ["AB"], lambda x: x * 2.5 + 1, lambda x: x * 2.5 + 1),
    ("max", ["AB", "AB"], op.max, np.maximum),
    ("compare", ["AB", "AB"], lambda x, y: x < y, np.less),
    ("select", ["AB", "AB"], lambda x, y: op.select(x < y, x, y),
     lambda x, y: np.where(x < y, x, y)),
    ("cast", ["AB"], lambda x: op.cast(x, "f32"),
     lambda x: x.astype(np.float32)),
    ("matmul", ["AK", "KN"], op.matmul, np.matmul),
    ("matmul_batched", ["BAK", "BKN"], op.matmul, np.matmul),
    ("matmul_vector", ["K", "KN"], op.matmul, np.matmul),
    ("batch_matmul", ["BAK", "BKN"], op.batch_matmul, np.matmul),
    ("dot_general", ["BAK", "BKN"],
     lambda a, b: op.dot_general(a, b, [0], [0], [2], [1]), np.matmul),
    ("reduce_sum_all", ["AB"], op.reduce_sum, np.sum),
    ("reduce_sum_0", ["AB"], lambda x: op.reduce_sum(x, 0),
     lambda x: np.sum(x, 0)),
    ("reduce_sum_stable", ["AB"], lambda x: op.reduce_sum(x, 1, stable=True),
     lambda x: np.sum(x, 1)),
    ("reduce_prod_1", ["AB"], lambda x: op.reduce_prod(x, 1),
     lambda x: np.prod(x, 1)),
    ("reduce_mean_1", ["AB"], lambda x: op.reduce_mean(x, 1),
     lambda x: np.mean(x, 1)),
    ("reduce_max_1", ["AB"], lambda x: op.reduce_max(x, 1),
     lambda x: np.max(x, 1)),
    ("reduce_min_all", ["AB"], op.reduce_min, np.min),
    ("argmax", ["AB"], lambda x: op.argmax(x, 1), lambda x: np.argmax(x, 1)),
    ("argmin", ["AB"], lambda x: op.argmin(x, 0), lambda x: np.argmin(x, 0)),
    ("softmax", ["AB"], op.softmax, _softmax),
    ("log_softmax", ["AB"], op.log_softmax,
     lambda x: x - _lse(x, -1, keepdims=True)),
    ("softmax_safe", ["AB"], op.softmax_safe, _softmax),
    ("logsumexp", ["AB"], op.logsumexp, _lse),
    ("logsumexp_safe", ["AB"], op.logsumexp_safe, _lse),
    ("layernorm", ["AB"], op.layernorm, _ln),
    ("layernorm_safe", ["AB", "B", "B"],
     lambda x, g, b: op.layernorm_safe(x, g, b),
     lambda x, g, b: _ln(x) * g + b),
    ("rmsnorm", ["AB"], op.rmsnorm,
     lambda x: x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5)),
    # No classes: NumPy cannot index them, and Tessera's cross_entropy says
    # the softmax of nothing is undefined.
    ("cross_entropy_mean", ["AC", "i:C A"],
     lambda lg, y: op.cross_entropy(lg, y),
     lambda lg, y: _cross_entropy(lg, y, "mean")),
    ("cross_entropy_sum", ["AC", "i:C A"],
     lambda lg, y: op.cross_entropy(lg, y, reduction="sum"),
     lambda lg, y: _cross_entropy(lg, y, "sum")),
    ("cross_entropy_none", ["BAC", "i:C BA"],
     lambda lg, y: op.cross_entropy(lg, y, reduction="none"),
     lambda lg, y: _cross_entropy(lg, y, "none")),
    ("attention", ["BS4", "BT4", "BT4"], op.attention, _attention),
    ("attention_causal", ["BS4", "BT4", "BT4"],
     lambda q, k, v: op.attention(q, k, v, causal=True),
     lambda q, k, v: _causal_attention(q, k, v)),
    ("transpose", ["ABC"], lambda x: op.transpose(x, [2, 0, 1]),
     lambda x: np.transpose(x, [2, 0, 1])),
    ("reshape_merge", ["ABC"],
     lambda x: op.reshape(x, [x.shape[0], _product(*x.shape[1:])]),
     lambda x: x.reshape(x.shape[0], -1) if x.shape[0] else
     x.reshape(0, x.shape[1] * x.shape[2])),
    ("broadcast_to", ["B"], lambda x: op.broadcast_to(x, [4, x.shape[0]]),
     lambda x: np.broadcast_to(x, (4, x.shape[0]))),
    ("concat", ["AB", "CB"], lambda x, y: op.concat([x, y], 0),
     lambda x, y: np.concatenate([x, y], 0)),
    ("pad", ["AB"], lambda x: op.pad(x, [1, 0], [0, 2], 7.0),
     lambda x: np.pad(x, [(1, 0), (0, 2)], constant_values=7.0)),
    ("slice_prefix", ["AB"], lambda x: x[:, :0], lambda x: x[:, :0]),
    ("index_rows", ["AB"], lambda x: x[..., ::2], lambda x: x[..., ::2]),
    ("dim_size", ["AB"], lambda x: op.dim_size(x, 0),
     lambda x: np.int64(x.shape[0])),
    ("gather", ["AB", "i:A C"], lambda x, i: op.gather(x, i, 0),
     lambda x, i: np.take(x, i, 0)),
    ("scatter_add", ["AB", "i:A C", "CB"],
     lambda x, i, u: op.scatter_add(x, i, u, 0),
     lambda x, i, u: _scatter_add(x, i, u)),
    ("embedding", ["AD", "i:A BC"], op.embedding, lambda t, i: t[i]),
    ("one_hot", ["i:C AB"], lambda i: op.one_hot(i, 3, "f64"),
     lambda i: np.eye(3)[i]),
    ("zeros_like", ["AB"], op.zeros_like, np.zeros_like),
    ("iota", ["AB"], lambda x: op.iota(x.shape, 1, "f64") + x,
     lambda x: np.indices(x.shape)[1] + x),
    ("full", ["AB"], lambda x: op.full(x.shape, 2.0, "f64") * x,
     lambda x: 2.0 * x),
    ("all_reduce", ["AB"], lambda x: op.all_reduce(x, axis_name="d"),
     lambda x: x),
    ("conv2d_batch", ["NCHW", "FCHW"],
     lambda x, w: op.conv2d(x, w, padding=(1, 1, 1, 1)),
     lambda x, w: _conv(x, w)),
]


# Every elementwise op: an empty operand gives an empty result.
_ERF = np.vectorize(math.erf, otypes=[float])
for _name, _ref in {
        "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log,
        "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
        "erf": _ERF, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "relu": lambda x: np.maximum(x, 0), "silu": lambda x: x / (
            1 + np.exp(-x)), "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(
            x), "reciprocal": lambda x: 1 / x, "square": np.square,
        "floor": np.floor, "sign": np.sign,
        "stop_gradient": lambda x: x}.items():
    CASES.append((f"{_name}_unary", ["AB"], getattr(op, _name), _ref))
for _name, _ref in {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                    "div": np.divide, "pow": np.power, "max": np.maximum,
                    "min": np.minimum}.items():
    CASES.append((f"{_name}_binary", ["AB", "B"], getattr(op, _name), _ref))
CASES += [
    ("broadcast_in_dim", ["AB"],
     lambda x: op.broadcast_in_dim(x, (x.shape[0], 3, x.shape[1]), [0, 2]),
     lambda x: np.broadcast_to(x[:, None, :], (x.shape[0], 3, x.shape[1]))),
    ("all_gather", ["AB"], lambda x: op.all_gather(x, 1, axis_name="d"),
     lambda x: x),
    ("reduce_scatter", ["AB"],
     lambda x: op.reduce_scatter(x, 0, axis_name="d"), lambda x: x),
    ("all_to_all", ["AB"],
     lambda x: op.all_to_all(x, 0, 1, axis_name="d"), lambda x: x),
    ("permute", ["AB"], lambda x: op.permute(x, [(0, 0)], axis_name="d"),
     lambda x: x),
    ("cond", ["AB"],
     lambda x: op.cond(np.array(True), lambda v: v * 2.0, lambda v: -v, x),
     lambda x: 2.0 * x),
    ("while_loop", ["AB"],
     lambda x: op.while_loop(lambda c: c[0] < 3.0,
                             lambda c: (c[0] + 1.0, c[1] * 2.0),
                             (np.float64(0.0), x))[1],
     lambda x: 8.0 * x),
    ("fixed_point", ["AB"], lambda x: op.fixed_point(lambda v: v * 0.5, x),
     lambda x: 0.0 * x),
    ("solve", ["AB"], lambda x: op.solve(lambda v: v - 1.0, x),
     lambda x: x * 0.0 + 1.0),
    ("zeros", ["AB"], lambda x: op.zeros(x.shape, "f64") + x,
     lambda x: x.copy()),
    ("ones", ["AB"], lambda x: op.ones(x.shape, "f64") * x, lambda x: x.copy()),
    ("ones_like", ["AB"], op.ones_like, np.ones_like),
    ("rmsnorm_safe", ["AB", "B"], op.rmsnorm_safe,
     lambda x, g: x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5) * g),
    ("slice", ["AB"],
     lambda x: op.slice(x, [0, 0], [x.shape[0], x.shape[1]], [2, 1]),
     lambda x: x[::2]),
    ("kv_cache", ["A1T2"], lambda k: _cache_keys(k, prune=False),
     lambda k: _padded(k, 4)),
    ("kv_cache_prune", ["A1T2"], lambda k: _cache_keys(k, prune=True),
     lambda k: _padded(k[:, :, -1:] if k.shape[2] else k, 4)),
    ("concat_numbers", ["AB"],
     lambda x: op.concat([x, op.broadcast_to(op.constant(np.float64(1.0)),
                                             (1, x.shape[1]))], 0),
     lambda x: np.concatenate([x, np.ones((1, x.shape[1]))], 0)),
]


def _cache_keys(k, prune):
    """The keys of a cache of capacity 4 after appending k [B, 1, T, 2]
    (and, with ``prune``, keeping the last position)."""
    cache = op.kv_cache_create((k.shape[0], 1, 4, 2), "f64")
    op.kv_cache_append(cache, k, k)
    if prune:
        op.kv_cache_prune(cache, 1)
    return op.kv_cache_read(cache)[0]


def _padded(k, capacity):
    pad = np.zeros(k.shape[:2] + (capacity - k.shape[2],) + k.shape[3:])
    return np.concatenate([k, pad], axis=2)


def _scatter_add(x, i, u):
    """Tessera's scatter_add drops indices out of range (and an empty dim
    has no index in range)."""
    out = x.copy()
    keep = (i >= 0) & (i < x.shape[0])
    np.add.at(out, i[keep], u[keep])
    return out


def _causal_attention(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    sq, sk = s.shape[-2], s.shape[-1]
    visible = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq)
    s = np.where(visible, s, -np.inf)
    if s.size == 0:
        return np.zeros(q.shape[:-1] + v.shape[-1:])
    with np.errstate(invalid="ignore"):
        p = np.exp(s - s.max(-1, keepdims=True))
        p = p / p.sum(-1, keepdims=True)
    return np.nan_to_num(p, nan=0.0) @ v if sk else p @ v


def _product(a, b):
    """The product of two dims, ints or symbol names."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return f"({a})*({b})"


def _conv(x, w):
    """NCHW / OIHW, stride 1, padding 1, by loops in float64."""
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    oh, ow = h + 2 - kh + 1, wd + 2 - kw + 1
    out = np.zeros((n, f, max(oh, 0), max(ow, 0)))
    for i in range(max(oh, 0)):
        for j in range(max(ow, 0)):
            patch = xp[:, :, i:i + kh, j:j + kw]
            out[:, :, i, j] = np.einsum("nchw,fchw->nf", patch, w)
    return out


def _op_name(case):
    """The op a case exercises: its name without a variant suffix."""
    name = case[0]
    head, _, tail = name.rpartition("_")
    if head and tail in ("all", "0", "1", "mean", "sum", "none", "stable",
                         "batched", "vector", "broadcast", "scalar",
                         "causal", "batch", "unary", "binary", "numbers"):
        return head
    return name


def _spec(text):
    """(dims, kind, index bound) of an input spec: "AB", "i:C AB"; a digit
    is a static size."""
    if text.startswith("i:"):
        bound, dims = text[2:].split(" ")
        return dims, "i", bound
    return text, "f", None


def _inputs(case, sizes, rng):
    out = []
    for text in case[1]:
        dims, kind, bound = _spec(text)
        shape = tuple(int(d) if d.isdigit() else sizes[d] for d in dims)
        if kind == "i":
            n = sizes[bound]
            out.append(rng.integers(0, max(n, 1), shape) if n else
                       np.zeros(shape, np.int64))
        else:
            out.append(rng.standard_normal(shape))
    return out


def _symbolic(case):
    """The case's function with its inputs annotated with symbolic dims."""
    fn = case[2]
    params = []
    for i, text in enumerate(case[1]):
        dims, kind, _ = _spec(text)
        dtype = ts.i64 if kind == "i" else ts.f64
        params.append(inspect.Parameter(
            f"a{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=ts.Tensor[(*[int(d) if d.isdigit() else d
                                    for d in dims], dtype)]))

    def f(*args):
        return fn(*args)
    f.__signature__ = inspect.Signature(params)
    f.__name__ = case[0]
    return f


def _letters(case):
    return sorted({d for text in case[1] for d in _spec(text)[0]
                   if d in SIZES} | {_spec(t)[2] for t in case[1]
                                     if _spec(t)[2]})


def _cases():
    for case in CASES:
        for letter in _letters(case):
            yield pytest.param(case, letter, id=f"{case[0]}-{letter}=0")


@pytest.mark.parametrize("case,letter", list(_cases()))
def test_empty(case, letter, rng):
    sizes = dict(SIZES, **{letter: 0})
    # Index inputs that would index into an empty dim: NumPy raises, and so
    # must Tessera (an index out of range of nothing).
    args = _inputs(case, sizes, rng)
    try:
        with np.errstate(invalid="ignore", divide="ignore"):
            want = case[3](*args)
        want_error = None
    except (ValueError, IndexError) as e:
        want, want_error = None, str(e)
    for mode, fn in (("static", case[2]), ("symbolic", _symbolic(case))):
        compiled = ts.jit(fn)
        if want_error is not None:
            with pytest.raises(ts.TesseraError) as info:
                compiled(*args)
            message = str(info.value)
            assert _op_name(case) in message and "empty" in message, \
                (mode, message)
            continue
        got = compiled(*args)
        got = np.asarray(got)
        assert got.shape == np.shape(want), (mode, got.shape, np.shape(want))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{case[0]} {mode} {letter}=0")


# -- beyond single ops ---------------------------------------------------------


def test_gradients_of_empty_inputs_are_empty(rng):
    """d/dx of a loss over an empty batch: zeros of the batch's shape."""
    w = rng.standard_normal((3, 2))

    def loss(w, x):
        return op.reduce_sum(op.softmax(x @ w) * 2.0) + op.reduce_sum(w * w)
    for x in (np.zeros((0, 3)),):
        gw, gx = ts.grad(loss, argnums=(0, 1))(w, x)
        np.testing.assert_allclose(gw, 2 * w, rtol=1e-12)
        assert gx.shape == (0, 3)

    def symbolic(w: ts.Tensor[3, 2, ts.f64], x: ts.Tensor["B", 3, ts.f64]):
        return loss(w, x)
    gw = ts.jit(ts.grad(symbolic))(w, np.zeros((0, 3)))
    np.testing.assert_allclose(gw, 2 * w, rtol=1e-12)
    gw = ts.jit(ts.grad(symbolic))(w, np.ones((2, 3)))
    assert np.all(np.isfinite(gw))


def test_vmap_and_scan_over_nothing(rng):
    x = np.zeros((0, 4))
    got = ts.jit(ts.vmap(lambda r: op.reduce_sum(r * r)))(x)
    assert got.shape == (0,)

    def step(carry, xt):
        return carry + xt, carry * 2.0
    init = np.ones(4)
    carry, ys = ts.jit(lambda c, xs: ts.scan(step, c, xs))(init, x)
    np.testing.assert_array_equal(carry, init)
    assert ys.shape == (0, 4)

    def sym(c: ts.Tensor[4, ts.f64], xs: ts.Tensor["T", 4, ts.f64]):
        return ts.scan(step, c, xs)
    carry, ys = ts.jit(sym)(init, x)
    np.testing.assert_array_equal(carry, init)
    assert ys.shape == (0, 4)


def test_random_and_dynamic_slices_of_nothing():
    key = ts.random.key(0)

    def f(k, x: ts.Tensor["B", 3, ts.f64]):
        u = ts.random.uniform(k, (x.shape[0], 3), "f64")
        return u + x, op.dynamic_slice(x, [op.dim_size(x, 0) * 0, 1], [0, 2])
    u, d = ts.jit(f)(key, np.zeros((0, 3)))
    assert u.shape == (0, 3) and d.shape == (0, 2)
    with pytest.raises(ts.TesseraError,
                       match=r"size of dim 0 \(1\) exceeds operand 0 dim 0 "
                             r"\(0\)"):
        ts.jit(lambda x: op.dynamic_slice(x, [0, 0], [1, 3]))(
            np.zeros((0, 3)))

    def sym(x: ts.Tensor["B", 3, ts.f64]):
        return op.dynamic_slice(x, [0, 0], [1, 3])
    with pytest.raises(ts.TesseraError,
                       match="slice size of dim 0 must not exceed"):
        ts.jit(sym)(np.zeros((0, 3)))


def test_reshape_cannot_solve_minus_one_from_nothing():
    """As in NumPy: [0, 2, 4] -> [0, -1] leaves -1 undetermined."""
    with pytest.raises(ts.TesseraError, match="cannot solve"):
        ts.jit(lambda x: op.reshape(x, [0, -1]))(np.zeros((0, 2, 4)))

    def sym(x: ts.Tensor["A", 2, 4, ts.f64]):
        return op.reshape(x, [x.shape[0], -1])  # A*8/A: exactly 8
    assert ts.jit(sym)(np.zeros((0, 2, 4))).shape == (0, 8)


def test_slices_of_symbolic_dims_are_checked_at_run_time():
    def shift(x: ts.Tensor["S", ts.f64]):
        return x[1:]
    np.testing.assert_array_equal(ts.jit(shift)(np.arange(3.0)), [1, 2])
    with pytest.raises(ts.TesseraError,
                       match=r"slice of dim 0: its start \(1\) must be at "
                             r"most its limit \(S\)"):
        ts.jit(shift)(np.zeros(0))


def test_attention_needs_a_static_head_dim_or_a_scale(rng):
    def f(q: ts.Tensor["S", "D", ts.f64]):
        return op.attention(q, q, q)
    with pytest.raises(ts.TesseraError,
                       match=r"needs a static head dim, but the query's last "
                             r"dim is D; give the scale explicitly"):
        ts.jit(f)(np.zeros((2, 3)))

    def g(q: ts.Tensor["S", "D", ts.f64]):
        return op.attention(q, q, q, scale=0.5)
    q = rng.standard_normal((3, 2))
    s = q @ q.T * 0.5
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(ts.jit(g)(q), p / p.sum(-1, keepdims=True) @ q,
                               rtol=1e-12)
