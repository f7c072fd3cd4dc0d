"""bf16, f16 and fp8 on the CPU: fp8 conversions bit-exact against ml_dtypes
(every fp8 value, rounding midpoints, subnormals, overflow, NaN),
saturating casts, and elementwise ops and contractions in bf16/f16 against
float64 NumPy with per-dtype tolerances."""

import math

import ml_dtypes
import numpy as np
import pytest

from harness import assert_close, run, tensor_type

rng = np.random.default_rng(13)
FP8 = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]


def same_bits(actual, expected):
    """Equal bit patterns, except that any NaN matches any NaN."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape and a.dtype == e.dtype
    nan_a = np.isnan(a.astype(np.float64))
    nan_e = np.isnan(e.astype(np.float64))
    np.testing.assert_array_equal(nan_a, nan_e)
    ua = a.view(np.uint8 if a.itemsize == 1 else np.uint16)
    ue = e.view(np.uint8 if e.itemsize == 1 else np.uint16)
    bad = (ua != ue) & ~nan_a
    assert not bad.any(), (a[bad][:8], e[bad][:8], a.astype(np.float64)[bad][:8])


def hard_values(fmt, src):
    """Every fp8 value, the midpoints between neighbours and points just
    beside them, subnormals, overflow thresholds, zeros, infinities, NaN."""
    every = np.arange(256, dtype=np.uint8).view(fmt).astype(np.float64)
    finite = np.unique(every[np.isfinite(every)])
    mids = (finite[:-1] + finite[1:]) / 2
    info = ml_dtypes.finfo(fmt)
    top = float(info.max)
    ulp_top = top - float(np.nextafter(np.array(top, dtype=fmt), np.array(0, dtype=fmt)))
    extra = [0.0, -0.0, np.inf, -np.inf, np.nan, top + ulp_top / 2, top + ulp_top,
             1e30, -1e30, float(info.smallest_subnormal) / 2,
             float(info.smallest_subnormal) / 3, 1e-30]
    values = np.concatenate([finite, mids, extra]).astype(src)
    beside = np.concatenate([np.nextafter(values, src(np.inf)),
                             np.nextafter(values, src(-np.inf))])
    randoms = (rng.standard_normal(4000) * np.exp2(rng.integers(-14, 16, 4000))).astype(src)
    return np.concatenate([values, beside, randoms, -randoms])


def round_exact(x, fmt):
    """Round-to-nearest-even of float64 values to `fmt`, in exact rational
    arithmetic (ml_dtypes rounds float64 through float32, which rounds twice
    near midpoints)."""
    from fractions import Fraction
    codes = np.arange(128, dtype=np.uint8)
    mags = codes.view(fmt).astype(np.float64)
    finite = np.isfinite(mags)
    codes, mags = codes[finite], mags[finite]
    order = np.argsort(mags)
    codes, mags = codes[order], mags[order]
    top_ulp = mags[-1] - mags[-2]
    overflow = np.inf if fmt == ml_dtypes.float8_e5m2 else np.nan
    out = np.empty(x.shape, dtype=fmt)
    for i, v in enumerate(x):
        if np.isnan(v):
            out[i] = np.nan
            continue
        if np.isinf(v):
            out[i] = np.array(np.copysign(overflow, v)).astype(fmt)
            continue
        a = Fraction(abs(float(v)))
        # Candidates: the finite magnitudes and the first value past the top.
        j = np.searchsorted(mags, abs(v))
        lo = j - 1 if j > 0 else 0
        cands = [(Fraction(float(mags[k])), int(codes[k])) for k in (lo, min(j, len(mags) - 1))]
        cands.append((Fraction(float(mags[-1])) + Fraction(float(top_ulp)), int(codes[-1]) + 1))
        best = min(cands, key=lambda c: (abs(c[0] - a), c[1] & 1))
        if best[1] > int(codes[-1]):
            r = np.array(np.copysign(overflow, v)).astype(fmt)
        else:
            r = np.array(float(best[0]) * (1 if v > 0 or (v == 0 and math.copysign(1, v) > 0) else -1)).astype(fmt)
        out[i] = r
    return out


@pytest.mark.parametrize("fmt", FP8)
def test_exact_rounding_reference_agrees_with_ml_dtypes_from_f32(fmt):
    x = hard_values(fmt, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        same_bits(round_exact(x.astype(np.float64), fmt), x.astype(fmt))


@pytest.mark.parametrize("fmt", FP8)
@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("saturate", [False, True])
def test_fp8_casts_are_bit_exact(fmt, src, saturate):
    x = hard_values(fmt, src)
    t8 = {ml_dtypes.float8_e4m3fn: "f8E4M3FN", ml_dtypes.float8_e5m2: "f8E5M2"}[fmt]
    ts = "f32" if src == np.float32 else "f64"
    n = x.size
    policy = " {policy = #tgraph.policy<saturate>}" if saturate else ""
    ir = f"""func.func @f(%x: tensor<{n}x{ts}>) -> (tensor<{n}x{t8}>, tensor<{n}x{ts}>) {{
      %y = tgraph.cast %x{policy} : tensor<{n}x{ts}> -> tensor<{n}x{t8}>
      %z = tgraph.cast %y : tensor<{n}x{t8}> -> tensor<{n}x{ts}>
      return %y, %z : tensor<{n}x{t8}>, tensor<{n}x{ts}>
    }}"""
    y, z = run(ir, [x], out_dtypes=[fmt, None])
    x64 = x.astype(np.float64)
    if saturate:
        top = float(ml_dtypes.finfo(fmt).max)
        x64 = np.clip(x64, -top, top)  # NaN stays NaN
    ref = round_exact(x64, fmt)
    same_bits(y, ref)
    # Widening back is exact.
    np.testing.assert_array_equal(z, ref.astype(src))


@pytest.mark.parametrize("fmt", FP8)
def test_every_fp8_value_widens_exactly(fmt):
    bits = np.arange(256, dtype=np.uint8)
    x = bits.view(fmt)
    t8 = {ml_dtypes.float8_e4m3fn: "f8E4M3FN", ml_dtypes.float8_e5m2: "f8E5M2"}[fmt]
    ir = f"""func.func @f(%x: tensor<256x{t8}>) -> (tensor<256xf32>, tensor<256xf64>,
                                                   tensor<256xbf16>, tensor<256xf16>) {{
      %a = tgraph.cast %x : tensor<256x{t8}> -> tensor<256xf32>
      %b = tgraph.cast %x : tensor<256x{t8}> -> tensor<256xf64>
      %c = tgraph.cast %x : tensor<256x{t8}> -> tensor<256xbf16>
      %d = tgraph.cast %x : tensor<256x{t8}> -> tensor<256xf16>
      return %a, %b, %c, %d : tensor<256xf32>, tensor<256xf64>, tensor<256xbf16>, tensor<256xf16>
    }}"""
    a, b, c, d = run(ir, [x], out_dtypes=[None, None, ml_dtypes.bfloat16, np.float16])
    np.testing.assert_array_equal(a, x.astype(np.float32))
    np.testing.assert_array_equal(b, x.astype(np.float64))
    same_bits(c, x.astype(ml_dtypes.bfloat16))
    same_bits(d, x.astype(np.float16))


def test_fp8_arithmetic_rounds_once_per_op():
    fmt = ml_dtypes.float8_e4m3fn
    a = rng.uniform(-8, 8, 64).astype(fmt)
    b = rng.uniform(-8, 8, 64).astype(fmt)
    ir = """func.func @f(%a: tensor<64xf8E4M3FN>, %b: tensor<64xf8E4M3FN>) -> tensor<64xf8E4M3FN> {
      %m = tgraph.mul %a, %b : tensor<64xf8E4M3FN>
      %s = tgraph.add %m, %a : tensor<64xf8E4M3FN>
      return %s : tensor<64xf8E4M3FN>
    }"""
    (s,) = run(ir, [a, b], out_dtypes=[fmt])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    m = (a64 * b64).astype(fmt).astype(np.float64)  # f32 holds the exact product
    same_bits(s, (m + a64).astype(fmt))


@pytest.mark.parametrize("src,dst,values,ref", [
    ("f32", "i8", [-1e3, -128.5, -3.7, 0.0, 3.7, 126.9, 127.5, 1e9, np.inf, -np.inf, np.nan],
     [-128, -128, -3, 0, 3, 126, 127, 127, 127, -128, 0]),
    ("f64", "i32", [-3e9, -2147483648.0, 2147483647.0, 2147483648.0, 1e300, np.nan],
     [-2147483648, -2147483648, 2147483647, 2147483647, 2147483647, 0]),
    ("i32", "i8", [-100000, -129, -128, 5, 127, 128, 99999],
     [-128, -128, -128, 5, 127, 127, 127]),
    ("f64", "f32", [1e39, -1e39, 3.0e38, np.inf, np.nan, 1e-50],
     [3.4028234663852886e38, -3.4028234663852886e38, 3.0e38, 3.4028234663852886e38, np.nan, 0.0]),
])
def test_saturating_casts(src, dst, values, ref):
    npsrc = {"f32": np.float32, "f64": np.float64, "i32": np.int32}[src]
    npdst = {"i8": np.int8, "i32": np.int32, "f32": np.float32}[dst]
    with np.errstate(over="ignore"):
        x = np.array(values, dtype=npsrc)
    n = x.size
    ir = f"""func.func @f(%x: tensor<{n}x{src}>) -> tensor<{n}x{dst}> {{
      %y = tgraph.cast %x {{policy = #tgraph.policy<saturate>}} : tensor<{n}x{src}> -> tensor<{n}x{dst}>
      return %y : tensor<{n}x{dst}>
    }}"""
    (y,) = run(ir, [x])
    np.testing.assert_array_equal(y, np.array(ref, dtype=npdst))


LOW = [ml_dtypes.bfloat16, np.float16]
UNARY = {
    "exp": np.exp, "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "sqrt": lambda x: np.sqrt(np.abs(x)), "neg": np.negative,
}


def name(dtype):
    return "bf16" if dtype == ml_dtypes.bfloat16 else "f16"


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("n", [1, 37])
def test_elementwise_in_low_precision(dtype, n):
    x = rng.uniform(0.1, 2.0, (n, 3)).astype(dtype)
    y = rng.uniform(-2.0, 2.0, (n, 3)).astype(dtype)
    t = tensor_type((n, 3), dtype, ["N", None])
    ir = f"""func.func @f(%x: {t}, %y: {t}) -> ({t}, {t}, {t}, {t}, {t}, {t}, {t}) {{
      %a = tgraph.add %x, %y : {t}
      %m = tgraph.mul %x, %y : {t}
      %e = tgraph.exp %y : {t}
      %h = tgraph.tanh %y : {t}
      %s = tgraph.sigmoid %y : {t}
      %q = tgraph.sqrt %x : {t}
      %d = tgraph.div %y, %x : {t}
      return %a, %m, %e, %h, %s, %q, %d : {t}, {t}, {t}, {t}, {t}, {t}, {t}
    }}"""
    outs = run(ir, [x, y], out_dtypes=[dtype] * 7)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    refs = [x64 + y64, x64 * y64, np.exp(y64), np.tanh(y64), 1 / (1 + np.exp(-y64)),
            np.sqrt(x64), y64 / x64]
    for out, ref in zip(outs, refs):
        assert out.dtype == np.dtype(dtype)
        # One rounding of the exact value, give or take an ulp of the
        # intermediate steps.
        np.testing.assert_allclose(out.astype(np.float64), ref,
                                   rtol=2 * float(ml_dtypes.finfo(dtype).eps), atol=1e-6)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("k", [16, 300])
def test_matmul_accumulates_in_f32_policy(dtype, k):
    a = rng.uniform(-1, 1, (5, k)).astype(dtype)
    b = rng.uniform(-1, 1, (k, 7)).astype(dtype)
    ta, tb, tr = (tensor_type(s, dtype) for s in [(5, k), (k, 7), (5, 7)])
    ir = f"""func.func @f(%a: {ta}, %b: {tb}) -> ({tr}, tensor<5x7xf32>) {{
      %m = tgraph.matmul %a, %b {{policy = #tgraph.policy<accum = f32>}} : ({ta}, {tb}) -> {tr}
      %w = tgraph.matmul %a, %b {{policy = #tgraph.policy<accum = f32>}} : ({ta}, {tb}) -> tensor<5x7xf32>
      return %m, %w : {tr}, tensor<5x7xf32>
    }}"""
    m, w = run(ir, [a, b], out_dtypes=[dtype, None])
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # The f32 accumulation is good to f32 precision; the bf16/f16 result is
    # that value rounded once.
    np.testing.assert_allclose(w, exact, rtol=0, atol=k * 2e-7)
    same_bits(m, w.astype(dtype))


SR_TARGETS = [ml_dtypes.bfloat16, np.float16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]
MLIR_NAME = {np.dtype(ml_dtypes.bfloat16): "bf16", np.dtype(np.float16): "f16",
             np.dtype(ml_dtypes.float8_e4m3fn): "f8E4M3FN",
             np.dtype(ml_dtypes.float8_e5m2): "f8E5M2",
             np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def neighbours(x, fmt):
    """The values of `fmt` next to each x toward and away from zero, found
    by searching the sorted list of every finite value of the format (the
    one after the largest finite value is infinity, or NaN where the
    format has none)."""
    width = np.dtype(fmt).itemsize
    codes = np.arange(2 ** (8 * width), dtype=np.uint8 if width == 1 else np.uint16)
    every = codes.view(fmt).astype(np.float64)
    finite = np.unique(np.abs(every[np.isfinite(every)]))
    beyond = np.inf if np.isinf(every).any() else np.nan
    mag = np.abs(x.astype(np.float64))
    i = np.searchsorted(finite, mag, side="right") - 1  # finite[i] <= |x|
    lo = finite[np.clip(i, 0, None)]
    hi = np.where(i + 1 < finite.size, finite[np.clip(i + 1, None, finite.size - 1)], beyond)
    exact = lo == mag
    hi = np.where(exact, lo, hi)
    sign = np.where(np.signbit(x), -1.0, 1.0)
    return sign * lo, sign * hi


def stochastic_cast(x, fmt, saturate=False, threads=None):
    n = x.size
    src, dst = MLIR_NAME[x.dtype], MLIR_NAME[np.dtype(fmt)]
    policy = "stochastic_round, saturate" if saturate else "stochastic_round"
    ir = f"""func.func @f(%x: tensor<?x{src}, #tgraph.dims<[N]>>) -> tensor<?x{dst}, #tgraph.dims<[N]>> {{
      %y = tgraph.cast %x {{policy = #tgraph.policy<{policy}>}}
          : tensor<?x{src}, #tgraph.dims<[N]>> -> tensor<?x{dst}, #tgraph.dims<[N]>>
      return %y : tensor<?x{dst}, #tgraph.dims<[N]>>
    }}"""
    (y,) = run(ir, [x], out_dtypes=[fmt], threads=threads)
    assert y.shape == (n,)
    return y.astype(np.float64)


@pytest.mark.parametrize("fmt", SR_TARGETS)
@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_stochastic_rounding_picks_a_neighbour(fmt, src):
    # Every result is one of the two neighbours (the value itself when it
    # is representable); NaN stays NaN, infinities stay infinite (NaN in
    # E4M3FN, which has none); results do not depend on the thread count.
    info = ml_dtypes.finfo(fmt)
    top = float(info.max)
    x = np.concatenate([
        rng.standard_normal(3000) * np.exp2(rng.integers(-20, 12, 3000)),
        rng.uniform(-1, 1, 500) * float(info.smallest_normal),  # subnormals
        [0.0, -0.0, 1.0, -2.5, top, -top, top * 1.04, top * 1.5, 1e30, np.inf, -np.inf, np.nan],
    ]).astype(src)
    with np.errstate(invalid="ignore", over="ignore"):
        y = stochastic_cast(x, fmt)
        lo, hi = neighbours(x, fmt)
    finite = np.isfinite(x)
    ok = (y == lo) | (y == hi) | (np.isnan(y) & np.isnan(hi))
    assert ok[finite].all(), (x[finite & ~ok][:5], y[finite & ~ok][:5], lo[finite & ~ok][:5])
    assert np.isnan(y[np.isnan(x)]).all()
    inf = np.isinf(x)
    if np.isinf(np.float64(np.array(np.inf, dtype=fmt))):
        np.testing.assert_array_equal(y[inf], x[inf].astype(np.float64))
    else:
        assert np.isnan(y[inf]).all()
    representable = x.astype(fmt).astype(np.float64) == x.astype(np.float64)
    np.testing.assert_array_equal(y[representable], x[representable].astype(np.float64))
    np.testing.assert_array_equal(y, stochastic_cast(x, fmt, threads=1))


@pytest.mark.parametrize("fmt", SR_TARGETS)
def test_stochastic_rounding_is_unbiased(fmt):
    # 200000 copies of a value a quarter of the way (and 0.1 of the way)
    # between two neighbours: the share rounded up is binomial with that
    # probability; 6 standard deviations of slack.
    n = 200000
    for frac in (0.25, 0.1):
        lo = 1.5
        ulp = float(np.nextafter(np.array(lo, dtype=fmt), np.array(4, dtype=fmt))) - lo
        x = np.full(n, lo + frac * ulp, dtype=np.float32)
        y = stochastic_cast(x, fmt)
        assert set(np.unique(y)) <= {lo, lo + ulp}
        up = np.mean(y == lo + ulp)
        assert abs(up - frac) < 6 * math.sqrt(frac * (1 - frac) / n), (fmt, frac, up)
    # The mean of many different values is the mean of the inputs, within
    # the noise of the rounding.
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    y = stochastic_cast(x, fmt)
    lo, hi = neighbours(x, fmt)
    bound = 6 * math.sqrt(np.sum((hi - lo) ** 2) / 4) / n
    assert abs(np.mean(y) - np.mean(x.astype(np.float64))) < bound


@pytest.mark.parametrize("fmt", SR_TARGETS)
def test_stochastic_rounding_saturates(fmt):
    # With saturate, rounding up past the largest finite value stays at it.
    top = float(ml_dtypes.finfo(fmt).max)
    x = np.array([top * 1.01, top * 1.06, -top * 1.03, top * 4, np.inf, -np.inf, np.nan] * 50,
                 dtype=np.float32 if top < 1e38 else np.float64)
    y = stochastic_cast(x, fmt, saturate=True)
    finite = ~np.isnan(x)
    np.testing.assert_array_equal(np.abs(y[finite]), top)
    np.testing.assert_array_equal(np.sign(y[finite]), np.sign(x[finite]))
    assert np.isnan(y[~finite]).all()


def nearest_even(x, fmt):
    """Round-to-nearest-even of float64 values to `fmt` from the sorted
    list of its finite values (midpoints of 8- to 16-bit formats are exact
    in float64); past the largest finite value's rounding boundary,
    infinity."""
    lo, hi = neighbours(x, fmt)
    mag, alo, ahi = np.abs(x), np.abs(lo), np.abs(hi)
    top = float(ml_dtypes.finfo(fmt).max)
    gap_top = top - float(np.nextafter(np.array(top, dtype=fmt), np.array(0, dtype=fmt)))
    ahi = np.where(np.isfinite(ahi), ahi, top + gap_top)
    mid = (alo + ahi) / 2
    lo_bits = np.abs(lo).astype(fmt).view(np.uint16 if np.dtype(fmt).itemsize == 2 else np.uint8)
    lo_even = (lo_bits & 1) == 0
    up = (mag > mid) | ((mag == mid) & ~lo_even)
    r = np.where(up, ahi, alo)
    r = np.where(r > top, np.inf, r)
    return np.where(np.isnan(x), np.nan, np.copysign(r, x))


@pytest.mark.parametrize("fmt", [ml_dtypes.bfloat16, np.float16])
def test_f64_to_half_casts_round_once(fmt):
    # f64 -> bf16/f16 rounds once (not through f32, which rounds twice just
    # beside midpoints), for midpoints and the f64 values next to them.
    every = np.arange(2 ** 16, dtype=np.uint16).view(fmt).astype(np.float64)
    finite = np.unique(every[np.isfinite(every)])
    finite = finite[finite >= 0]
    mids = (finite[:-1] + finite[1:]) / 2
    x = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, 0), finite,
                        rng.standard_normal(2000) * np.exp2(rng.integers(-140, 120, 2000)),
                        [1e300, np.inf, np.nan, 0.0, 1e-320]])
    x = np.concatenate([x, -x])
    n = x.size
    t = MLIR_NAME[np.dtype(fmt)]
    ir = f"""func.func @f(%x: tensor<{n}xf64>) -> tensor<{n}x{t}> {{
      %y = tgraph.cast %x : tensor<{n}xf64> -> tensor<{n}x{t}>
      return %y : tensor<{n}x{t}>
    }}"""
    (y,) = run(ir, [x], out_dtypes=[fmt])
    with np.errstate(invalid="ignore", over="ignore"):
        ref = nearest_even(x, fmt)
    np.testing.assert_array_equal(y.astype(np.float64), ref)
    number = ~np.isnan(ref)
    np.testing.assert_array_equal(np.signbit(y.astype(np.float64))[number], np.signbit(ref)[number])


def test_stochastic_rounding_between_same_width_formats():
    # bf16 -> f16: values past f16's largest (65504) round to it or to
    # infinity; the rest to one of their two f16 neighbours.
    x = np.concatenate([[65504, 65536, 1e5, -7e4, np.inf, -np.inf],
                        rng.standard_normal(3000) * np.exp2(rng.integers(-20, 16, 3000))])
    x = x.astype(ml_dtypes.bfloat16)
    with np.errstate(over="ignore"):
        y = stochastic_cast(x, np.float16)
        lo, hi = neighbours(x, np.float16)
    x64 = x.astype(np.float64)
    big = np.abs(x64) > 65504
    assert set(np.abs(y[big])) <= {65504.0, np.inf}
    assert np.isinf(y[np.isinf(x64)]).all()
    ok = (y == lo) | (y == hi)
    assert ok[~big].all(), (x64[~big & ~ok][:5], y[~big & ~ok][:5])
