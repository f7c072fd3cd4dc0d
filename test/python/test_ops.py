"""Every function of tessera.op, compiled with ts.jit, against NumPy float64."""

import math

import numpy as np
import pytest

import tessera as ts
from tessera import op


def run(fn, *args):
    return ts.jit(fn)(*args)


def close(got, want, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


UNARY = {
    "neg": (lambda x: -x, None),
    "abs": (np.abs, None),
    "exp": (np.exp, None),
    "log": (np.log, "positive"),
    "log1p": (np.log1p, "positive"),
    "sin": (np.sin, None),
    "cos": (np.cos, None),
    "tanh": (np.tanh, None),
    "erf": (np.vectorize(math.erf), None),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), None),
    "relu": (lambda x: np.maximum(x, 0), None),
    "silu": (lambda x: x / (1 + np.exp(-x)), None),
    "sqrt": (np.sqrt, "positive"),
    "rsqrt": (lambda x: 1 / np.sqrt(x), "positive"),
    "reciprocal": (lambda x: 1 / x, "positive"),
    "square": (np.square, None),
    "floor": (np.floor, None),
    "sign": (np.sign, None),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, rng):
    ref, domain = UNARY[name]
    x = rng.standard_normal((3, 5)) * 2
    if domain == "positive":
        x = np.abs(x) + 0.1
    close(run(getattr(op, name), x), ref(x), rtol=1e-13, atol=1e-14)


def test_gelu(rng):
    x = rng.standard_normal((4, 6))
    exact = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    tanh_form = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                       (x + 0.044715 * x ** 3)))
    close(run(op.gelu, x), exact, rtol=1e-12)
    close(run(lambda x: op.gelu(x, approximate=True), x), tanh_form,
          rtol=1e-12)


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
          "div": np.divide, "pow": np.power, "max": np.maximum,
          "min": np.minimum}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasting(name, rng):
    a = np.abs(rng.standard_normal((2, 3, 4))) + 0.5
    b = np.abs(rng.standard_normal((3, 1))) + 0.5
    close(run(getattr(op, name), a, b), BINARY[name](a, b), rtol=1e-13)


def test_operators_and_scalars(rng):
    x = rng.standard_normal((3, 4))
    y = rng.standard_normal((4,))
    got = run(lambda x, y: (x + y, x - 2.0, 3.0 * x, x / 2.0, 1.0 / (x * x + 1),
                            -x, x ** 2, x ** 3, abs(x), x @ y[:, None]), x, y)
    want = (x + y, x - 2, 3 * x, x / 2, 1 / (x * x + 1), -x, x ** 2, x ** 3,
            abs(x), x @ y[:, None])
    for g, w in zip(got, want):
        close(g, w, rtol=1e-13)


def test_compare_select(rng):
    a, b = rng.standard_normal((5,)), rng.standard_normal((5,))
    for d, f in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                 ("le", np.less_equal), ("gt", np.greater),
                 ("ge", np.greater_equal)]:
        np.testing.assert_array_equal(run(lambda a, b: op.compare(a, b, d),
                                          a, b), f(a, b))
    close(run(lambda a, b: op.select(a > b, a, b), a, b), np.maximum(a, b))
    close(run(lambda a, b: op.where(a < 0.0, 0.0, a), a, b),
          np.where(a < 0, 0, a))


def test_cast_and_dtypes(rng):
    x = rng.standard_normal((4,)) * 100
    np.testing.assert_array_equal(run(lambda x: op.cast(x, ts.i32), x),
                                  x.astype(np.int32))
    got = run(lambda x: op.cast(x, "f32"), x)
    assert got.dtype == np.float32
    close(got, x.astype(np.float32), rtol=0, atol=0)
    bf = run(lambda x: op.cast(x, ts.bf16), x.astype(np.float32))
    assert bf.dtype == ts.bf16.numpy
    close(bf.astype(np.float64), x.astype(np.float32).astype(ts.bf16.numpy)
          .astype(np.float64), rtol=0, atol=0)


def test_generators(rng):
    x = rng.standard_normal((2, 3))
    z, o, f, i, c = run(lambda x: (op.zeros_like(x), op.ones_like(x),
                                   op.full((2, 3), 2.5, "f64"),
                                   op.iota((2, 3), 1, "i32"),
                                   op.constant(np.arange(3.0))), x)
    close(z, np.zeros((2, 3))), close(o, np.ones((2, 3)))
    close(f, np.full((2, 3), 2.5))
    np.testing.assert_array_equal(i, np.tile(np.arange(3), (2, 1)))
    close(c, np.arange(3.0))
    close(run(lambda x: op.zeros((2, 3), ts.f64) + op.ones((2, 3), ts.f64), x),
          np.ones((2, 3)))


def test_contractions(rng):
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    close(run(op.batch_matmul, a, b), a @ b, rtol=1e-12)
    close(run(op.matmul, a, b), a @ b, rtol=1e-12)
    m, n = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    close(run(lambda m, n: op.matmul(m, n, transpose_lhs=True,
                                     transpose_rhs=True), m, n),
          m.T @ n.T, rtol=1e-12)
    close(run(lambda a, b: op.dot_general(a, b, [0], [0], [2], [1]), a, b),
          np.einsum("bmk,bkn->bmn", a, b), rtol=1e-12)


def test_conv2d(rng):
    x = rng.standard_normal((2, 3, 7, 6))   # NCHW
    w = rng.standard_normal((4, 3, 3, 2))   # OIHW
    got = run(lambda x, w: op.conv2d(x, w, strides=(2, 1),
                                     padding=(1, 1, 0, 1)), x, w)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 1)))
    oh, ow = (xp.shape[2] - 3) // 2 + 1, xp.shape[3] - 2 + 1
    want = np.zeros((2, 4, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, 2 * i:2 * i + 3, j:j + 2]
            want[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    close(got, want, rtol=1e-11, atol=1e-12)


def test_attention(rng):
    q, k, v = (rng.standard_normal((2, 5, 8)) for _ in range(3))
    for causal in (False, True):
        s = q @ k.transpose(0, 2, 1) / math.sqrt(8)
        if causal:
            s = np.where(np.tril(np.ones((5, 5))) > 0, s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        close(run(lambda q, k, v: op.attention(q, k, v, causal=causal),
                  q, k, v), p @ v, rtol=1e-11)


@pytest.mark.parametrize("name,ref", [("reduce_sum", np.sum),
                                      ("reduce_mean", np.mean),
                                      ("reduce_prod", np.prod),
                                      ("reduce_max", np.max),
                                      ("reduce_min", np.min)])
def test_reductions(name, ref, rng):
    x = rng.standard_normal((3, 4, 5))
    f = getattr(op, name)
    close(run(f, x), ref(x), rtol=1e-12)
    close(run(lambda x: f(x, axis=(0, 2), keepdims=True), x),
          ref(x, axis=(0, 2), keepdims=True), rtol=1e-12)
    close(run(lambda x: f(x, -1), x), ref(x, axis=-1), rtol=1e-12)


def test_stable_sum_is_compensated():
    # 1 followed by many tiny values: a naive f32 sum loses them.
    x = np.full(1 << 16, 1e-8, np.float32)
    x[0] = 1.0
    got = run(lambda x: op.reduce_sum(x, stable=True), x)
    assert abs(float(got) - (1.0 + (len(x) - 1) * 1e-8)) < 1e-6


def test_arg_reductions_and_softmax_family(rng):
    x = rng.standard_normal((4, 7))
    np.testing.assert_array_equal(run(op.argmax, x), x.argmax(-1))
    np.testing.assert_array_equal(run(lambda x: op.argmin(x, 0), x),
                                  x.argmin(0))
    e = np.exp(x - x.max(-1, keepdims=True))
    sm = e / e.sum(-1, keepdims=True)
    lse = np.log(np.exp(x).sum(-1))
    close(run(op.softmax, x), sm, rtol=1e-13)
    close(run(op.softmax_safe, x), sm, rtol=1e-13)
    close(run(op.log_softmax, x), np.log(sm), rtol=1e-13)
    close(run(op.logsumexp, x), lse, rtol=1e-13)
    close(run(lambda x: op.logsumexp_safe(x, 0, keepdims=True), x),
          np.log(np.exp(x).sum(0, keepdims=True)), rtol=1e-13)
    big = np.array([[1000.0, 1000.0]])
    close(run(op.softmax_safe, big), [[0.5, 0.5]])


def test_normalizations(rng):
    x = rng.standard_normal((3, 8))
    s, b = rng.standard_normal(8), rng.standard_normal(8)
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    ln = (x - mu) / np.sqrt(var + 1e-5) * s + b
    rms = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * s
    close(run(op.layernorm, x, s, b), ln, rtol=1e-12)
    close(run(op.layernorm_safe, x, s, b), ln, rtol=1e-12)
    close(run(op.rmsnorm, x, s), rms, rtol=1e-12)
    close(run(op.rmsnorm_safe, x, s), rms, rtol=1e-12)
    close(run(op.layernorm, x), (x - mu) / np.sqrt(var + 1e-5), rtol=1e-12)


def test_cross_entropy(rng):
    logits = rng.standard_normal((6, 5))
    labels = rng.integers(0, 5, 6).astype(np.int32)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    per = -logp[np.arange(6), labels]
    close(run(op.cross_entropy, logits, labels), per.mean(), rtol=1e-13)
    close(run(lambda l, y: op.cross_entropy(l, y, "sum"), logits, labels),
          per.sum(), rtol=1e-13)
    close(run(lambda l, y: op.cross_entropy(l, y, "none"), logits, labels),
          per, rtol=1e-13)
    soft = np.exp(rng.standard_normal((6, 5)))
    soft /= soft.sum(-1, keepdims=True)
    close(run(op.cross_entropy, logits, soft), -(soft * logp).sum(-1).mean(),
          rtol=1e-13)


def test_layout_ops(rng):
    x = rng.standard_normal((2, 3, 4))
    close(run(lambda x: op.transpose(x, [2, 0, 1]), x), x.transpose(2, 0, 1))
    close(run(lambda x: op.reshape(x, [3, -1]), x), x.reshape(3, -1))
    close(run(lambda x: x.reshape(6, 4), x), x.reshape(6, 4))
    close(run(lambda x: op.broadcast_to(x[0, 0], (5, 4)), x),
          np.broadcast_to(x[0, 0], (5, 4)))
    close(run(lambda x: op.broadcast_in_dim(x[:, 0, 0], (2, 3), [0]), x),
          np.broadcast_to(x[:, 0, 0][:, None], (2, 3)))
    close(run(lambda x: op.slice(x, [0, 1, 0], [2, 3, 4], [1, 1, 2]), x),
          x[0:2, 1:3, 0:4:2])
    close(run(lambda x: op.concat([x, x * 2.0], 1), x),
          np.concatenate([x, 2 * x], 1))
    close(run(lambda x: op.pad(x, [0, 1, 2], [1, 0, 0], 7.0), x),
          np.pad(x, ((0, 1), (1, 0), (2, 0)), constant_values=7.0))
    close(run(lambda x: x.T, x[0]), x[0].T)


def test_indexing(rng):
    x = rng.standard_normal((4, 5, 6))
    got = run(lambda x: (x[1], x[:, 2], x[1:3, ::2, -1], x[..., 0],
                         x[None, 0, :, 1:4], x[-1, -2:]), x)
    want = (x[1], x[:, 2], x[1:3, ::2, -1], x[..., 0], x[None, 0, :, 1:4],
            x[-1, -2:])
    for g, w in zip(got, want):
        close(g, w)
    # A single element (a 0-d reshape of a slice) used in arithmetic.
    close(run(lambda x: x[1, 2, 3] * x[0] + x[-1, 0, 0], x),
          x[1, 2, 3] * x[0] + x[-1, 0, 0])


def test_gather_scatter_embedding_one_hot(rng):
    x = rng.standard_normal((5, 3))
    idx = np.array([4, 0, 2, 2], np.int32)
    close(run(lambda x, i: op.gather(x, i, 0), x, idx), x[idx])
    close(run(lambda x, i: x[i], x, idx), x[idx])
    upd = rng.standard_normal((4, 3))
    want = x.copy()
    np.add.at(want, idx, upd)
    close(run(lambda x, i, u: op.scatter_add(x, i, u, 0), x, idx, upd), want,
          rtol=1e-13)
    ids = np.array([[1, 4], [0, 0]], np.int32)
    close(run(op.embedding, x, ids), x[ids])
    close(run(lambda i: op.one_hot(i, 5, "f64"), ids), np.eye(5)[ids])


def test_stop_gradient_is_the_identity(rng):
    x = rng.standard_normal((2, 3))
    close(run(op.stop_gradient, x), x, rtol=0, atol=0)


def test_every_public_op_is_tested():
    import pathlib
    text = "".join(p.read_text() for p in
                   pathlib.Path(__file__).parent.glob("test_*.py"))
    untested = [n for n in op.__all__ if n != "TesseraError"
                and f"op.{n}" not in text and f'"{n}"' not in text]
    assert not untested, f"ops without a test: {untested}"


def test_dynamic_slice_and_dim_size(rng):
    x = rng.standard_normal((5, 4))
    got = run(lambda x, i, j: op.dynamic_slice(x, [i, j], [2, 3]), x,
              np.array(2, np.int64), np.array(3, np.int64))
    close(got, x[2:4, 1:4])  # the start of dim 1 is clamped to 4 - 3 = 1

    @ts.jit
    def n(x: ts.Tensor["B", 4, ts.f64]):
        return op.dim_size(x, 0, "f64") * 2.0

    close(n(x), 10.0)
    close(n(x[:3]), 6.0)


def test_collectives_on_a_single_device(rng):
    # One process is a group of one: each collective returns its operand.
    x = rng.standard_normal((4, 6))
    for fn in (lambda x: op.all_reduce(x, "sum", "data", 1),
               lambda x: op.all_gather(x, 0, "data", 1),
               lambda x: op.reduce_scatter(x, 1, "mean", "data", 1),
               lambda x: op.all_to_all(x, 0, 1, "data", 1),
               lambda x: op.permute(x, [(0, 0)], "data")):
        close(run(fn, x), x)
    with pytest.raises(ts.TesseraError, match="sum, prod, min, max or mean"):
        run(lambda x: op.all_reduce(x, "avg"), x)


def test_cond_and_while_loop(rng):
    x = rng.standard_normal(3)
    f = ts.jit(lambda p, x: op.cond(p, lambda x: x * 2.0, lambda x: -x, x))
    close(f(np.array(True), x), 2 * x)
    close(f(np.array(False), x), -x)

    def count(x):
        def body(state):
            i, v = state
            return i + 1, v * 1.5
        return op.while_loop(lambda s: s[0] < 5, body,
                             (op.zeros((), "i64"), x))

    i, v = ts.jit(count)(x)
    assert int(i) == 5
    close(v, x * 1.5 ** 5)
    g = ts.grad(lambda x: op.reduce_sum(op.while_loop(
        lambda s: s[0] < 4, lambda s: (s[0] + 1, op.sin(s[1])),
        (op.zeros((), "i64"), x), trip_count=4)[1]))(x)
    # d/dx sin(sin(sin(sin(x)))) = prod_k cos(s_k), s_0 = x, s_k+1 = sin(s_k).
    want, s = np.ones_like(x), x
    for _ in range(4):
        want, s = want * np.cos(s), np.sin(s)
    close(g, want, rtol=1e-12)


def _attend(q, keys, values, length):
    s = q @ keys.transpose(0, 1, 3, 2) * 0.5
    s[..., length:] = -np.inf
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ values


def test_kv_cache_decoding_keeps_state_across_calls(rng):
    cache = ts.KVCache(2, 2, 8, 4, "f64")

    @ts.jit
    def decode(cache, q, k, v):
        op.kv_cache_append(cache, k, v)
        keys, values, length = op.kv_cache_read(cache)
        s = op.matmul(q, keys, transpose_rhs=True) * 0.5
        valid = op.iota((8,), 0, "i64") < length
        p = op.softmax(op.select(valid, s, op.full((), -1e300, "f64")), -1)
        return op.matmul(p, values)

    ks, vs = [], []
    for step in range(4):
        q, k, v = (rng.standard_normal((2, 2, 1, 4)) for _ in range(3))
        ks.append(k), vs.append(v)
        out = decode(cache, q, k, v)
        assert cache.length == step + 1
        close(out, _attend(q, np.concatenate(ks, 2), np.concatenate(vs, 2),
                           step + 1), rtol=1e-12)
    close(cache.keys[:, :, :4], np.concatenate(ks, 2), rtol=0, atol=0)


def test_kv_cache_window_prune_and_local_caches(rng):
    cache = ts.KVCache(1, 1, 4, 2, "f64", window=2)
    append = ts.jit(lambda c, k: op.kv_cache_append(c, k, k * 2.0))
    for i in range(3):
        append(cache, np.full((1, 1, 1, 2), float(i + 1)))
    assert cache.length == 2  # a rolling window of 2

    @ts.jit
    def local(k):
        c = op.kv_cache_create((1, 1, 4, 2), "f64")
        op.kv_cache_append(c, k, k)
        op.kv_cache_prune(c, 1)
        keys, _, length = op.kv_cache_read(c)
        return keys, length

    keys, length = local(np.arange(6.0).reshape(1, 1, 3, 2))
    assert int(length) == 1
    close(keys[0, 0, 0], [4.0, 5.0])  # the last position is kept
    with pytest.raises(ts.TesseraError, match="expected a kv_cache"):
        ts.jit(lambda x: op.kv_cache_read(x))(np.ones((1, 1, 2, 2)))


# -- int4 ----------------------------------------------------------------------

def _wrap4(x):
    """x modulo 16 as a 4-bit two's complement value."""
    return ((np.asarray(x, np.int64) + 8) % 16) - 8


def test_int4_arithmetic_wraps_like_4_bit_integers(rng):
    import ml_dtypes
    # Sizes past one vector, odd strides: the CPU code vectorizes these.
    a = rng.integers(-8, 8, (37, 65)).astype(ml_dtypes.int4)
    b = rng.integers(-8, 8, (65, 19)).astype(ml_dtypes.int4)
    A, B = a.astype(np.int64), b.astype(np.int64)
    cases = [
        (lambda a, b: a @ b, _wrap4(A @ B)),
        (lambda a, b: a * a + 3, _wrap4(A * A + 3)),
        (lambda a, b: -a - a[0], _wrap4(-A - A[0])),
        (lambda a, b: abs(a), _wrap4(np.abs(A))),
        (lambda a, b: a[1::3, ::2], A[1::3, ::2]),
        (lambda a, b: a.T[::5], A.T[::5]),
        (lambda a, b: op.reduce_sum(a, [1]), _wrap4(A.sum(1))),
        (lambda a, b: op.reduce_max(a, [0]), A.max(0)),
        (lambda a, b: op.argmax(a, 1), A.argmax(1), np.int64),
        (lambda a, b: op.select(a > 0, a, b[0, 0] * a), np.where(
            A > 0, A, _wrap4(B[0, 0] * A))),
        (lambda a, b: op.cast(a, ts.f32) * 0.5, A * 0.5, np.float32),
        # Casts to int4 saturate, as every narrowing integer cast does.
        (lambda a, b: op.cast(op.cast(a, ts.f32) * 3.0, ts.i4),
         np.clip(A * 3, -8, 7)),
        (lambda a, b: op.cast(op.cast(a, ts.i32) * 5, ts.int4),
         np.clip(A * 5, -8, 7)),
        (lambda a, b: a + op.constant(np.array(7, ml_dtypes.int4)),
         _wrap4(A + 7)),
    ]
    for fn, want, *dtype in cases:
        got = run(fn, a, b)
        assert got.dtype == (dtype[0] if dtype else ml_dtypes.int4)
        np.testing.assert_array_equal(np.asarray(got).astype(np.float64),
                                      want.astype(np.float64))
        if got.dtype == ml_dtypes.int4:
            # Results leave as low nibbles, the high bits zero.
            assert int(got.view(np.uint8).max(initial=0)) < 16


def test_int4_inputs_read_the_low_nibble():
    import ml_dtypes
    # High bits set (as another producer may leave them) are ignored.
    raw = np.array([0x0D, 0xFD, 0x77, 0x88, 0xF0, 0x3F], np.uint8)
    x = raw.view(ml_dtypes.int4)
    want = np.array([-3, -3, 7, -8, 0, -1])
    np.testing.assert_array_equal(run(lambda x: op.cast(x, ts.i32), x), want)
    np.testing.assert_array_equal(
        run(lambda x: x + 1, x).astype(np.int64), _wrap4(want + 1))
