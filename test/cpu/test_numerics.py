"""Every lowered op against a float64 NumPy reference, at symbolic sizes that
include 1 and sizes that are not multiples of any vector width."""

import math

import ml_dtypes
import numpy as np
import pytest

from harness import RunError, assert_close, run, tensor_type

SIZES = [1, 7, 33]
FLOATS = [np.float32, np.float64]
rng = np.random.default_rng(2026)


def rand(shape, dtype, low=-2.0, high=2.0):
    if np.dtype(dtype).kind == "f":
        return rng.uniform(low, high, size=shape).astype(dtype)
    return rng.integers(-5, 6, size=shape).astype(dtype)


def erf(x):
    return np.vectorize(math.erf)(x)


UNARY = {
    "neg": (np.negative, None),
    "abs": (np.abs, None),
    "exp": (np.exp, None),
    "log": (np.log, (0.1, 3.0)),
    "log1p": (np.log1p, (-0.5, 3.0)),
    "sin": (np.sin, None),
    "cos": (np.cos, None),
    "tanh": (np.tanh, None),
    "erf": (erf, None),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), None),
    "relu": (lambda x: np.maximum(x, 0), None),
    "gelu": (lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))), None),
    "silu": (lambda x: x / (1 + np.exp(-x)), None),
    "sqrt": (np.sqrt, (0.0, 4.0)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 4.0)),
    "reciprocal": (lambda x: 1 / x, (0.5, 3.0)),
    "square": (np.square, None),
    "floor": (np.floor, None),
    "sign": (np.sign, None),
}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_unary(op, dtype, n):
    ref, domain = UNARY[op]
    x = rand((n, 5), dtype, *(domain or (-2.0, 2.0)))
    t = tensor_type((n, 5), dtype, ["N", None])
    ir = f"""func.func @f(%x: {t}) -> {t} {{
      %y = tgraph.{op} %x : {t}
      return %y : {t}
    }}"""
    (y,) = run(ir, [x])
    assert_close(y, ref(x.astype(np.float64)), dtype, scale=4)


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, ml_dtypes.bfloat16, np.float16])
def test_gelu_tanh_approximation(dtype):
    # Far into both tails too: the decomposition's sigmoid(2u) takes
    # exp(-|2u|), which underflows for |x| >> 0.
    x = np.concatenate([rand((64,), np.float64, -2.0, 2.0), rand((64,), np.float64, -12.0, 12.0),
                        [-60.0, -20.0, -9.0, -1e-6, 0.0, 1e-6, 9.0, 20.0, 60.0]]).astype(dtype)
    t = tensor_type(x.shape, dtype, ["N"])
    ir = f"""func.func @f(%x: {t}) -> {t} {{
      %y = tgraph.gelu %x {{approximate}} : {t}
      return %y : {t}
    }}"""
    (y,) = run(ir, [x], out_dtypes=[dtype])
    assert_close(y, gelu_tanh(x.astype(np.float64)), dtype, scale=4)


def test_gelu_tanh_extremes():
    # Overflowing intermediates (x^2, exp) still give the limits: gelu(x) = x
    # for x >> 0 and -0 for x << 0; -inf gives NaN as 0.5 x (1 + tanh) does.
    x = np.array([-3e38, -1e30, -1e20, -100.0, 1e20, 1e30, 3e38, np.inf, -np.inf, np.nan,
                  -1e-40, 1e-40], np.float32)
    t = tensor_type(x.shape, np.float32)
    ir = f"""func.func @f(%x: {t}) -> {t} {{
      %y = tgraph.gelu %x {{approximate}} : {t}
      return %y : {t}
    }}"""
    (y,) = run(ir, [x])
    expected = np.array([-0.0, -0.0, -0.0, -0.0, 1e20, 1e30, 3e38, np.inf, np.nan, np.nan,
                         -5e-41, 5e-41], np.float32)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(expected))
    finite = ~np.isnan(expected)
    np.testing.assert_allclose(y[finite], expected[finite], rtol=1e-6, atol=2e-45)
    # The negative tail underflows to zero, not to a tiny wrong-signed value.
    assert np.all(y[:4] == 0)


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
    "pow": np.power,
}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_binary_broadcasting(op, dtype, n):
    # [N, 1, 6] with [3, 6] broadcasts to [N, 3, 6]
    low = 0.5 if op in ("pow", "div") else -2.0
    a = rand((n, 1, 6), dtype, low, 2.0)
    b = rand((3, 6), dtype, low, 2.0)
    ta = tensor_type((n, 1, 6), dtype, ["N", None, None])
    tb = tensor_type((3, 6), dtype)
    tr = tensor_type((n, 3, 6), dtype, ["N", None, None])
    ir = f"""func.func @f(%a: {ta}, %b: {tb}) -> {tr} {{
      %y = tgraph.{op} %a, %b : ({ta}, {tb}) -> {tr}
      return %y : {tr}
    }}"""
    (y,) = run(ir, [a, b])
    assert_close(y, BINARY[op](a.astype(np.float64), b.astype(np.float64)), dtype, 4)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_integer_arithmetic(dtype):
    a = rand((4, 5), dtype)
    b = rand((4, 5), dtype)
    b[b == 0] = 3
    t = tensor_type((4, 5), dtype)
    ir = f"""func.func @f(%a: {t}, %b: {t}) -> ({t}, {t}, {t}, {t}) {{
      %s = tgraph.add %a, %b : {t}
      %m = tgraph.mul %a, %b : {t}
      %d = tgraph.div %a, %b : {t}
      %x = tgraph.max %a, %b : {t}
      return %s, %m, %d, %x : {t}, {t}, {t}, {t}
    }}"""
    s, m, d, x = run(ir, [a, b])
    assert_close(s, a + b, dtype)
    assert_close(m, a * b, dtype)
    # integer division rounds toward zero
    assert_close(d, (np.trunc(a.astype(np.float64) / b)).astype(dtype), dtype)
    assert_close(x, np.maximum(a, b), dtype)


@pytest.mark.parametrize("direction,ref", [
    ("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
    ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)])
def test_compare_with_nan(direction, ref):
    a = np.array([1.0, 2.0, np.nan, 3.0, -0.0], np.float32)
    b = np.array([1.0, 1.0, 1.0, np.nan, 0.0], np.float32)
    t = tensor_type((5,), np.float32)
    tb = tensor_type((5,), np.bool_)
    ir = f"""func.func @f(%a: {t}, %b: {t}) -> {tb} {{
      %c = tgraph.compare {direction}, %a, %b : ({t}, {t}) -> {tb}
      return %c : {tb}
    }}"""
    (c,) = run(ir, [a, b])
    np.testing.assert_array_equal(c, ref(a, b))


def test_select_and_casts():
    c = np.array([True, False, True, False])
    a = rand((3, 4), np.float64)
    b = rand((4,), np.float64)
    tc, ta, tb = tensor_type((4,), np.bool_), tensor_type((3, 4), np.float64), tensor_type((4,), np.float64)
    ti = tensor_type((3, 4), np.int32)
    tf = tensor_type((3, 4), np.float32)
    ir = f"""func.func @f(%c: {tc}, %a: {ta}, %b: {tb}) -> ({ta}, {ti}, {tf}, {ta}) {{
      %s = tgraph.select %c, %a, %b : ({tc}, {ta}, {tb}) -> {ta}
      %i = tgraph.cast %s : {ta} -> {ti}
      %f = tgraph.cast %s : {ta} -> {tf}
      %w = tgraph.cast %i : {ti} -> {ta}
      return %s, %i, %f, %w : {ta}, {ti}, {tf}, {ta}
    }}"""
    s, i, f, w = run(ir, [c, a, b])
    ref = np.where(c, a, b)
    assert_close(s, ref, np.float64)
    np.testing.assert_array_equal(i, np.trunc(ref).astype(np.int32))  # toward zero
    np.testing.assert_array_equal(f, ref.astype(np.float32))  # round to nearest even
    assert_close(w, np.trunc(ref), np.float64)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_family(n, dtype):
    # matmul with a broadcast batch dim and both transposes, batch_matmul,
    # dot_general
    a = rand((2, 1, 5, n), dtype)      # transposed lhs: [.., K=5, M=n]
    b = rand((3, 7, 5), dtype)         # transposed rhs: [.., N=7, K=5]
    ta = tensor_type((2, 1, 5, n), dtype, [None, None, None, "M"])
    tb = tensor_type((3, 7, 5), dtype)
    tr = tensor_type((2, 3, n, 7), dtype, [None, None, "M", None])
    x = rand((n, 4, 6), dtype)
    y = rand((n, 6, 3), dtype)
    tx = tensor_type((n, 4, 6), dtype, ["B", None, None])
    ty = tensor_type((n, 6, 3), dtype, ["B", None, None])
    tz = tensor_type((n, 4, 3), dtype, ["B", None, None])
    td = tensor_type((n, 6, 6), dtype, ["B", None, None])
    ir = f"""func.func @f(%a: {ta}, %b: {tb}, %x: {tx}, %y: {ty}) -> ({tr}, {tz}, {td}) {{
      %m = tgraph.matmul %a, %b {{transpose_lhs, transpose_rhs}} : ({ta}, {tb}) -> {tr}
      %bm = tgraph.batch_matmul %x, %y : ({tx}, {ty}) -> {tz}
      %dg = tgraph.dot_general %x, %x {{lhs_batching_dims = array<i64: 0>,
          rhs_batching_dims = array<i64: 0>, lhs_contracting_dims = array<i64: 1>,
          rhs_contracting_dims = array<i64: 1>}} : ({tx}, {tx}) -> {td}
      return %m, %bm, %dg : {tr}, {tz}, {td}
    }}"""
    m, bm, dg = run(ir, [a, b, x, y])
    a64, b64, x64, y64 = (v.astype(np.float64) for v in (a, b, x, y))
    assert_close(m, np.swapaxes(a64, -1, -2) @ np.swapaxes(b64, -1, -2), dtype, 8)
    assert_close(bm, x64 @ y64, dtype, 8)
    assert_close(dg, np.einsum("bki,bkj->bij", x64, x64), dtype, 8)


@pytest.mark.parametrize("b,s", [(1, 1), (2, 7), (3, 33)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_tokens_by_weight(b, s, dtype):
    # [B, S, K] x [K, N] and [B, H, S, K] x [N, K]^T with symbolic B and S:
    # the token dims collapse into the rows of one packed matrix product
    # (K and N not multiples of the register tile: padded panels).
    x = rand((b, s, 37), dtype)
    w = rand((37, 45), dtype)
    q = rand((b, 3, s, 16), dtype)
    v = rand((40, 16), dtype)
    tx = tensor_type((b, s, 37), dtype, ["B", "S", None])
    tw = tensor_type((37, 45), dtype)
    ty = tensor_type((b, s, 45), dtype, ["B", "S", None])
    tq = tensor_type((b, 3, s, 16), dtype, ["B", None, "S", None])
    tv = tensor_type((40, 16), dtype)
    tr = tensor_type((b, 3, s, 40), dtype, ["B", None, "S", None])
    ir = f"""func.func @f(%x: {tx}, %w: {tw}, %q: {tq}, %v: {tv}) -> ({ty}, {tr}) {{
      %y = tgraph.matmul %x, %w : ({tx}, {tw}) -> {ty}
      %r = tgraph.matmul %q, %v {{transpose_rhs}} : ({tq}, {tv}) -> {tr}
      return %y, %r : {ty}, {tr}
    }}"""
    y, r = run(ir, [x, w, q, v])
    x64, w64, q64, v64 = (a.astype(np.float64) for a in (x, w, q, v))
    assert_close(y, x64 @ w64, dtype, 8)
    assert_close(r, q64 @ v64.T, dtype, 8)


def test_matmul_bf16_accumulates_in_f32_policy():
    # i8 x i8 -> i32 accumulates exactly
    a = rand((6, 9), np.int8)
    b = rand((9, 4), np.int8)
    ta, tb, tr = tensor_type((6, 9), np.int8), tensor_type((9, 4), np.int8), tensor_type((6, 4), np.int32)
    ir = f"""func.func @f(%a: {ta}, %b: {tb}) -> {tr} {{
      %m = tgraph.matmul %a, %b : ({ta}, {tb}) -> {tr}
      return %m : {tr}
    }}"""
    (m,) = run(ir, [a, b])
    np.testing.assert_array_equal(m, a.astype(np.int32) @ b.astype(np.int32))


REDUCE = {"reduce_sum": np.sum, "reduce_prod": np.prod, "reduce_max": np.max,
          "reduce_min": np.min, "reduce_mean": np.mean}


@pytest.mark.parametrize("op", sorted(REDUCE))
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("n", SIZES)
def test_reductions(op, keepdims, n):
    x = rand((n, 4, 3), np.float64, 0.5, 1.5)
    tx = tensor_type((n, 4, 3), np.float64, ["N", None, None])
    shape = (n, 1, 1) if keepdims else (n,)
    tr = tensor_type(shape, np.float64, ["N"] + [None] * (len(shape) - 1))
    kd = ", keepdims" if keepdims else ""
    ir = f"""func.func @f(%x: {tx}) -> {tr} {{
      %r = tgraph.{op} %x {{dims = array<i64: 1, 2>{kd}}} : {tx} -> {tr}
      return %r : {tr}
    }}"""
    (r,) = run(ir, [x])
    assert_close(r, REDUCE[op](x, axis=(1, 2), keepdims=keepdims), np.float64, 4)


@pytest.mark.parametrize("op, ref", [("reduce_max", np.max), ("reduce_min", np.min)])
def test_max_min_rows_propagate_nan(op, ref):
    # Rows long enough for the vector loop and its remainder; a NaN in
    # either part (or an infinity) decides the row.
    x = rand((6, 1037), np.float32, -3, 3)
    x[1, 5] = np.nan
    x[2, 1036] = np.nan
    x[3, 700] = np.inf
    x[4, 9] = -np.inf
    x[5, :] = np.nan
    tx = tensor_type(x.shape, np.float32, ["R", "C"])
    tr = tensor_type((6,), np.float32, ["R"])
    ir = f"""func.func @f(%x: {tx}) -> {tr} {{
      %r = tgraph.{op} %x {{dims = array<i64: 1>}} : {tx} -> {tr}
      return %r : {tr}
    }}"""
    (r,) = run(ir, [x])
    np.testing.assert_array_equal(r, ref(x, axis=1))


def test_stable_sum_beats_naive_summation():
    # 1 followed by 10^7 values below the f32 ulp of 1: naive f32 summation
    # loses them all, Kahan keeps them (within 1e-6 of float64).
    n = 10_000_000
    x = np.full((1, n + 1), 1e-8, np.float32)
    x[0, 0] = 1.0
    tx = tensor_type((1, n + 1), np.float32)
    tr = tensor_type((1,), np.float32)
    ir = f"""func.func @f(%x: {tx}) -> ({tr}, {tr}) {{
      %s = tgraph.reduce_sum %x {{dims = array<i64: 1>, stable}} : {tx} -> {tr}
      %n = tgraph.reduce_sum %x {{dims = array<i64: 1>}} : {tx} -> {tr}
      return %s, %n : {tr}, {tr}
    }}"""
    stable, naive = run(ir, [x])
    exact = 1.0 + n * np.float64(np.float32(1e-8))
    assert abs(stable[0] - exact) / exact < 1e-6
    # The plain sum keeps one partial per lane of four vectors: the lane
    # holding the 1 loses its share of the small values (1/64 of them with
    # 16-lane vectors, more with narrower ones), the other lanes keep theirs.
    assert abs(naive[0] - exact) / exact > 5e-6


@pytest.mark.parametrize("op,ref", [("argmax", np.argmax), ("argmin", np.argmin)])
def test_arg_reductions_first_index_on_ties(op, ref):
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, np.nan, 5.0, np.nan]])
    tx = tensor_type((3, 4), np.float64)
    tr = tensor_type((3,), np.int64)
    ir = f"""func.func @f(%x: {tx}) -> {tr} {{
      %i = tgraph.{op} %x {{dim = 1 : i64}} : {tx} -> {tr}
      return %i : {tr}
    }}"""
    (i,) = run(ir, [x])
    np.testing.assert_array_equal(i, ref(x, axis=1))


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("n", SIZES)
def test_softmax_family(n):
    x = rand((3, n), np.float64, -30, 30)
    tx = tensor_type((3, n), np.float64, [None, "N"])
    tl = tensor_type((3,), np.float64)
    ir = f"""func.func @f(%x: {tx}) -> ({tx}, {tx}, {tl}) {{
      %p = tgraph.softmax %x {{dim = 1 : i64}} : {tx}
      %l = tgraph.log_softmax %x {{dim = 1 : i64}} : {tx}
      %s = tgraph.logsumexp %x {{dim = 1 : i64}} : {tx} -> {tl}
      return %p, %l, %s : {tx}, {tx}, {tl}
    }}"""
    p, l, s = run(ir, [x])
    ref = softmax(x, 1)
    assert_close(p, ref, np.float64, 10)
    assert_close(l, np.log(ref), np.float64, 100)
    m = x.max(1)
    assert_close(s, m + np.log(np.exp(x - m[:, None]).sum(1)), np.float64, 100)


def test_safe_forms_on_masked_rows():
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, 1.0, -np.inf]])
    tx = tensor_type((2, 3), np.float64)
    tl = tensor_type((2,), np.float64)
    ir = f"""func.func @f(%x: {tx}) -> ({tx}, {tl}) {{
      %p = tgraph.softmax_safe %x {{dim = 1 : i64}} : {tx}
      %s = tgraph.logsumexp_safe %x {{dim = 1 : i64}} : {tx} -> {tl}
      return %p, %s : {tx}, {tl}
    }}"""
    p, s = run(ir, [x])
    np.testing.assert_array_equal(p[0], [0.0, 0.0, 0.0])
    assert_close(p[1], softmax(x[1:], 1)[0], np.float64, 10)
    assert s[0] == -np.inf
    assert_close(s[1:], np.log(np.exp(0.0) + np.exp(1.0))[None], np.float64, 10)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_safe_norms_and_like_constants(dtype):
    # layernorm_safe / rmsnorm_safe compute their statistics in f32 with the
    # variance clamped at 0: finite on constant rows (variance exactly 0),
    # where the results are the bias and 0; ones_like / zeros_like.
    x = rand((5, 8), np.float64)
    x[1] = 3.0  # a constant row
    x = x.astype(dtype)
    g = rand((8,), np.float64).astype(dtype)
    b = rand((8,), np.float64).astype(dtype)
    tx, tg = tensor_type((5, 8), dtype, ["N", None]), tensor_type((8,), dtype)
    ir = f"""func.func @f(%x: {tx}, %g: {tg}, %b: {tg}) -> ({tx}, {tx}, {tx}, {tx}) {{
      %l = tgraph.layernorm_safe %x scale %g bias %b {{axis = 1 : i64, epsilon = 1.0e-5 : f64}} : ({tx}, {tg}, {tg}) -> {tx}
      %r = tgraph.rmsnorm_safe %x scale %g {{axis = 1 : i64, epsilon = 1.0e-5 : f64}} : ({tx}, {tg}) -> {tx}
      %o = tgraph.ones_like %x : {tx}
      %z = tgraph.zeros_like %x : {tx}
      return %l, %r, %o, %z : {tx}, {tx}, {tx}, {tx}
    }}"""
    l, r, o, z = run(ir, [x, g, b], out_dtypes=[dtype] * 4)
    x64, g64, b64 = (a.astype(np.float64) for a in (x, g, b))
    mu = x64.mean(1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(1, keepdims=True)
    tol = np.float32 if dtype == np.float32 else dtype
    assert_close(l, (x64 - mu) / np.sqrt(var + 1e-5) * g64 + b64, tol, 100)
    assert_close(r, x64 / np.sqrt((x64**2).mean(1, keepdims=True) + 1e-5) * g64, tol, 100)
    assert np.isfinite(l.astype(np.float64)).all()
    np.testing.assert_array_equal(o.astype(np.float64), np.ones((5, 8)))
    np.testing.assert_array_equal(z.astype(np.float64), np.zeros((5, 8)))


@pytest.mark.parametrize("n", SIZES)
def test_norms(n):
    x = rand((n, 8), np.float64)
    g = rand((8,), np.float64)
    b = rand((8,), np.float64)
    tx = tensor_type((n, 8), np.float64, ["N", None])
    tg = tensor_type((8,), np.float64)
    ir = f"""func.func @f(%x: {tx}, %g: {tg}, %b: {tg}) -> ({tx}, {tx}) {{
      %l = tgraph.layernorm %x scale %g bias %b {{axis = 1 : i64, epsilon = 1.0e-5 : f64}} : ({tx}, {tg}, {tg}) -> {tx}
      %r = tgraph.rmsnorm %x scale %g {{axis = 1 : i64, epsilon = 1.0e-5 : f64}} : ({tx}, {tg}) -> {tx}
      return %l, %r : {tx}, {tx}
    }}"""
    l, r = run(ir, [x, g, b])
    mu = x.mean(1, keepdims=True)
    var = ((x - mu) ** 2).mean(1, keepdims=True)
    assert_close(l, (x - mu) / np.sqrt(var + 1e-5) * g + b, np.float64, 100)
    assert_close(r, x / np.sqrt((x**2).mean(1, keepdims=True) + 1e-5) * g, np.float64, 100)


def test_cross_entropy():
    logits = rand((5, 4), np.float64, -3, 3)
    labels = np.array([0, 3, 1, 1, 2], np.int64)
    tl, ty = tensor_type((5, 4), np.float64, ["B", None]), tensor_type((5,), np.int64, ["B"])
    tr = tensor_type((), np.float64)
    ir = f"""func.func @f(%l: {tl}, %y: {ty}) -> {tr} {{
      %c = tgraph.cross_entropy %l, %y : ({tl}, {ty}) -> {tr}
      return %c : {tr}
    }}"""
    (c,) = run(ir, [logits, labels])
    logp = np.log(softmax(logits, 1))
    assert_close(c, -logp[np.arange(5), labels].mean(), np.float64, 10)


@pytest.mark.parametrize("causal", [False, True])
def test_attention(causal):
    q = rand((2, 3, 8), np.float64)
    k = rand((2, 5, 8), np.float64)
    v = rand((2, 5, 4), np.float64)
    tq, tk, tv = tensor_type(q.shape, np.float64), tensor_type(k.shape, np.float64), tensor_type(v.shape, np.float64)
    to = tensor_type((2, 3, 4), np.float64)
    flag = "{causal}" if causal else ""
    ir = f"""func.func @f(%q: {tq}, %k: {tk}, %v: {tv}) -> {to} {{
      %o = tgraph.attention %q, %k, %v {flag} : ({tq}, {tk}, {tv}) -> {to}
      return %o : {to}
    }}"""
    (o,) = run(ir, [q, k, v])
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(8)
    if causal:  # queries are the last 3 of 5 positions
        mask = np.arange(5)[None, :] <= np.arange(3)[:, None] + 2
        s = np.where(mask, s, -np.inf)
    assert_close(o, softmax(s, -1) @ v, np.float64, 10)


@pytest.mark.parametrize("n", SIZES)
def test_layout_ops(n):
    x = rand((n, 6), np.float64)
    v = rand((6,), np.float64)
    tx = tensor_type((n, 6), np.float64, ["N", None])
    tt = tensor_type((6, n), np.float64, [None, "N"])
    tr = tensor_type((n, 2, 3), np.float64, ["N", None, None])
    tv = tensor_type((6,), np.float64)
    tb = tensor_type((n, 6), np.float64, ["N", None])
    ts = tensor_type((n, 2), np.float64, ["N", None])
    tc = tensor_type((n, 12), np.float64, ["N", None])
    tp = tensor_type((n + 2, 6), np.float64, [None, None]).replace(
        f"tensor<{n + 2}x6xf64>", 'tensor<?x6xf64, #tgraph.dims<["N+2", 6]>>')
    ir = f"""func.func @f(%x: {tx}, %v: {tv}) -> ({tt}, {tr}, {tb}, {ts}, {tc}, {tp}) {{
      %t = tgraph.transpose %x {{permutation = array<i64: 1, 0>}} : {tx} -> {tt}
      %r = tgraph.reshape %x : {tx} -> {tr}
      %b = tgraph.broadcast_in_dim %v {{broadcast_dimensions = array<i64: 1>}} : {tv} -> {tb}
      %s = tgraph.slice %x {{start = #tgraph.dims<[0, 1]>, limit = #tgraph.dims<[N, 5]>, stride = array<i64: 1, 2>}} : {tx} -> {ts}
      %c = tgraph.concat %x, %b {{dim = 1 : i64}} : ({tx}, {tb}) -> {tc}
      %p = tgraph.pad %x {{low = array<i64: 1, 0>, high = array<i64: 1, 0>, interior = array<i64: 0, 0>, value = 7.0 : f64}} : {tx} -> {tp}
      return %t, %r, %b, %s, %c, %p : {tt}, {tr}, {tb}, {ts}, {tc}, {tp}
    }}"""
    t, r, b, s, c, p = run(ir, [x, v])
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(r, x.reshape(n, 2, 3))
    np.testing.assert_array_equal(b, np.broadcast_to(v, (n, 6)))
    np.testing.assert_array_equal(s, x[:, 1:5:2])
    np.testing.assert_array_equal(c, np.concatenate([x, np.broadcast_to(v, (n, 6))], 1))
    np.testing.assert_array_equal(p, np.pad(x, ((1, 1), (0, 0)), constant_values=7.0))


def test_generators():
    x = rand((4, 3), np.float64)
    tx = tensor_type((4, 3), np.float64, ["N", None])
    ti = tensor_type((4, 3), np.int64, ["N", None])
    tn = tensor_type((), np.float64)
    ir = f"""func.func @f(%x: {tx}) -> ({ti}, {tx}, {tx}, {tn}) {{
      %i = tgraph.iota {{dim = 0 : i64}} : {ti}
      %z = tgraph.zeros_like %x : {tx}
      %f = tgraph.full {{value = 2.5 : f64}} : {tx}
      %n = tgraph.dim_size %x {{dim = 0 : i64}} : {tx} -> {tn}
      return %i, %z, %f, %n : {ti}, {tx}, {tx}, {tn}
    }}"""
    i, z, f, n = run(ir, [x])
    np.testing.assert_array_equal(i, np.broadcast_to(np.arange(4)[:, None], (4, 3)))
    np.testing.assert_array_equal(z, np.zeros((4, 3)))
    np.testing.assert_array_equal(f, np.full((4, 3), 2.5))
    assert n == 4.0


def test_runtime_shape_check_fails_with_the_message():
    ta = tensor_type((4, 3), np.float32, [None, "S"])
    tb = tensor_type((4, 5), np.float32, [None, "T"])
    ir = f"""func.func @f(%a: {ta}, %b: {tb}) -> {ta} {{
      %c = tgraph.add %a, %b : ({ta}, {tb}) -> {ta}
      return %c : {ta}
    }}"""
    with pytest.raises(RunError) as err:
        run(ir, [np.zeros((4, 3), np.float32), np.zeros((4, 5), np.float32)])
    assert err.value.returncode == 2
    assert ("run-time shape check failed" in err.value.stderr)
    assert ("broadcast mismatch: lhs (operand 0) dim 1 (S) must equal rhs "
            "(operand 1) dim 1 (T) (found 3 and 5)") in err.value.stderr


# The f32 transcendentals are polynomial approximations on the CPU: check
# them over their whole useful range, in units in the last place of f32.
WIDE = {
    "exp": (np.exp, lambda n: rng.uniform(-87, 88, n)),
    "log": (np.log, lambda n: np.exp(rng.uniform(-80, 80, n))),
    "log1p": (np.log1p, lambda n: np.concatenate([rng.uniform(-0.999, 1, n // 2),
                                                   np.exp(rng.uniform(-30, 60, n - n // 2))])),
    "tanh": (np.tanh, lambda n: rng.uniform(-12, 12, n)),
    "erf": (erf, lambda n: rng.uniform(-5, 5, n)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), lambda n: rng.uniform(-30, 30, n)),
}


@pytest.mark.parametrize("op", sorted(WIDE))
def test_f32_transcendentals_over_their_range(op):
    ref_fn, sample = WIDE[op]
    x = sample(4099).astype(np.float32)
    t = tensor_type(x.shape, np.float32, ["N"])
    ir = f"""func.func @f(%x: {t}) -> {t} {{
      %y = tgraph.{op} %x : {t}
      return %y : {t}
    }}"""
    (y,) = run(ir, [x])
    ref = ref_fn(x.astype(np.float64))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    err = np.abs(y.astype(np.float64) - ref) / np.maximum(ulp, np.finfo(np.float32).tiny)
    # Near zero crossings (erf, tanh, log1p around 0) relative ulps are
    # meaningless; allow an absolute error of a few f32 epsilons there.
    small = np.abs(ref) < 1e-6
    assert err[~small].max() <= 8, (op, err.max(), x[np.argmax(err)])
    assert np.abs(y.astype(np.float64) - ref)[small].max(initial=0) <= 4e-7


def test_exp_specials_subnormals_and_remainders():
    # Underflow into the subnormals and to 0, overflow to infinity, NaN and
    # infinities, at a length where most elements are in vectors and the
    # last ones in the loop remainder; the remainder gives the same values.
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72, 88.73, 89.5, 1e30,
               -1e30, -87.3, -103.27, -103.28, -103.97, -104.0, -150.0, 1e-30]
    x = np.concatenate([np.linspace(-105, 90, 40000), special]).astype(np.float32)
    n = len(x)
    t = tensor_type((n,), np.float32, ["N"])
    ir = f"""func.func @f(%x: {t}) -> {t} {{
      %y = tgraph.exp %x : {t}
      return %y : {t}
    }}"""
    (y,) = run(ir, [x])
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64)).astype(np.float32)
    assert np.array_equal(np.isnan(y), np.isnan(ref))
    ok = ~np.isnan(ref)
    assert np.array_equal(np.isinf(y[ok]), np.isinf(ref[ok]))
    # Distance in representable f32 values (the subnormals included): at
    # most one.
    steps = np.abs(y[ok].view(np.int32).astype(np.int64) - ref[ok].view(np.int32).astype(np.int64))
    assert steps.max() <= 1, x[ok][np.argmax(steps)]
    assert y[x == -104.0][0] == 0.0 and y[x == -np.inf][0] == 0.0
    # The same inputs moved to the remainder of a 16-lane loop.
    tail = x[:7]
    (y_tail,) = run(ir, [tail])
    assert np.array_equal(y_tail.view(np.int32), y[:7].view(np.int32))


def test_reduction_of_a_fully_reduced_keepdims_value():
    # [2] -> [1] (keepdims, from a 0-d sum) then a reduction over that unit
    # dim: the unit dim's loop keeps its trip count (found by the autodiff
    # random-program tests).
    x = np.array([0.3, -1.2])
    ir = """func.func @f(%x: tensor<2xf64>) -> (tensor<1xf64>, tensor<f64>) {
      %s = tgraph.reduce_sum %x {dims = array<i64: 0>, keepdims} : (tensor<2xf64>) -> tensor<1xf64>
      %m = tgraph.reduce_max %s {dims = array<i64: 0>, keepdims} : (tensor<1xf64>) -> tensor<1xf64>
      %l = tgraph.logsumexp %s {dim = 0 : i64} : (tensor<1xf64>) -> tensor<f64>
      return %m, %l : tensor<1xf64>, tensor<f64>
    }"""
    m, lse = run(ir, [x])
    np.testing.assert_allclose(m, [x.sum()], rtol=1e-15)
    np.testing.assert_allclose(lse, x.sum(), rtol=1e-15)
