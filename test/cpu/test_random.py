"""Stateless random numbers: the compiled Philox 4x32-10 streams against an
independent NumPy implementation (itself checked against the Random123
known-answer vectors), plus distribution checks on large samples."""

import math

import numpy as np
import pytest

from harness import run, tensor_type

M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
MASK = np.uint64(0xFFFFFFFF)


def philox(counter, key):
    """Philox 4x32-10 over arrays of counters: counter is 4 uint32 arrays."""
    c = [np.asarray(x, dtype=np.uint32) for x in counter]
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    with np.errstate(over="ignore"):
        for r in range(10):
            if r:
                k0 = np.uint32(k0 + W0)
                k1 = np.uint32(k1 + W1)
            p0 = c[0].astype(np.uint64) * M0
            p1 = c[2].astype(np.uint64) * M1
            hi0, lo0 = (p0 >> np.uint64(32)).astype(np.uint32), (p0 & MASK).astype(np.uint32)
            hi1, lo1 = (p1 >> np.uint64(32)).astype(np.uint32), (p1 & MASK).astype(np.uint32)
            c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
    return c


def test_reference_philox_matches_random123_known_answers():
    cases = [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
         (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
    ]
    for ctr, key, out in cases:
        got = [int(w) for w in philox([np.uint32(x) for x in ctr], key)]
        assert got == list(out)


def key_of(seed):
    return (seed & 0xFFFFFFFF, seed >> 32)


def blocks(key, n):
    idx = np.arange(n, dtype=np.uint64)
    lo = (idx & MASK).astype(np.uint32)
    hi = (idx >> np.uint64(32)).astype(np.uint32)
    zero = np.zeros(n, np.uint32)
    return philox([lo, hi, zero, zero], key)


def fraction(hi, lo):
    bits = (hi.astype(np.uint64) << np.uint64(21)) | (lo.astype(np.uint64) >> np.uint64(11))
    return bits.astype(np.float64) * 2.0**-53


def as_key(words):
    return tuple(int(np.uint32(w)) for w in words)


SEEDS = [0, 42, 2**40 + 17]
SHAPE_IR = "tensor<?xf32, #tgraph.dims<[B]>>"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [1, 7])
def test_uniform_is_the_documented_stream(seed, dtype, rows):
    t = tensor_type((rows, 9), dtype, ["B", None])
    ir = f"""func.func @f(%x: {SHAPE_IR}) -> {t} {{
      %k = tgraph.rng.key {{seed = {seed} : i64}}
      %u = tgraph.rng.uniform %k {{low = -2.0 : f64, high = 3.0 : f64}} : {t}
      return %u : {t}
    }}"""
    (u,) = run(ir, [np.zeros(rows, np.float32)])
    w = blocks(key_of(seed), rows * 9)
    ref = (-2.0 + 5.0 * fraction(w[0], w[1])).astype(dtype).reshape(rows, 9)
    ref = np.minimum(ref, np.nextafter(dtype(3.0), dtype(-np.inf)))
    np.testing.assert_array_equal(u, ref)
    assert u.min() >= -2.0 and u.max() < 3.0


@pytest.mark.parametrize("seed", SEEDS)
def test_normal_and_bernoulli_are_the_documented_streams(seed):
    ir = f"""func.func @f(%x: {SHAPE_IR}) -> (tensor<?x3xf64, #tgraph.dims<[B, 3]>>,
                                             tensor<?x3xi1, #tgraph.dims<[B, 3]>>) {{
      %k = tgraph.rng.key {{seed = {seed} : i64}}
      %n = tgraph.rng.normal %k {{mean = 1.5 : f64, stddev = 0.25 : f64}}
          : tensor<?x3xf64, #tgraph.dims<[B, 3]>>
      %b = tgraph.rng.bernoulli %k {{p = 0.3 : f64}} : tensor<?x3xi1, #tgraph.dims<[B, 3]>>
      return %n, %b : tensor<?x3xf64, #tgraph.dims<[B, 3]>>, tensor<?x3xi1, #tgraph.dims<[B, 3]>>
    }}"""
    rows = 11
    n, b = run(ir, [np.zeros(rows, np.float32)])
    w = blocks(key_of(seed), rows * 3)
    u1 = 1.0 - fraction(w[0], w[1])
    u2 = fraction(w[2], w[3])
    ref = 1.5 + 0.25 * np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2)
    np.testing.assert_allclose(n, ref.reshape(rows, 3), rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(b, (fraction(w[0], w[1]) < 0.3).reshape(rows, 3))


def test_split_and_fold_in_derive_the_documented_keys():
    ir = """func.func @f(%key: !tgraph.key, %d: tensor<i64>)
        -> (!tgraph.key, !tgraph.key, !tgraph.key, !tgraph.key) {
      %a, %b, %c = tgraph.rng.split %key : !tgraph.key, !tgraph.key, !tgraph.key
      %f = tgraph.rng.fold_in %key, %d : tensor<i64>
      return %a, %b, %c, %f : !tgraph.key, !tgraph.key, !tgraph.key, !tgraph.key
    }"""
    key = np.array([0x12345678, -0x2468ACE], np.int32)
    data = np.array(-5, np.int64)
    outs = run(ir, [key, data])
    k = as_key(key)
    for i in range(3):
        w = philox([np.uint32(i), np.uint32(0), np.uint32(1), np.uint32(0)], k)
        assert as_key(outs[i]) == (int(w[0]), int(w[1]))
    d = int(np.uint64(np.int64(-5).astype(np.uint64)))
    w = philox([np.uint32(d & 0xFFFFFFFF), np.uint32(d >> 32), np.uint32(2), np.uint32(0)], k)
    assert as_key(outs[3]) == (int(w[0]), int(w[1]))


def test_samples_have_the_right_distributions():
    n = 200_000
    ir = f"""func.func @f(%x: tensor<?xf32, #tgraph.dims<[N]>>) -> (tensor<?xf64, #tgraph.dims<[N]>>,
        tensor<?xf64, #tgraph.dims<[N]>>, tensor<?xi1, #tgraph.dims<[N]>>) {{
      %k = tgraph.rng.key {{seed = 7 : i64}}
      %k1, %k2, %k3 = tgraph.rng.split %k : !tgraph.key, !tgraph.key, !tgraph.key
      %u = tgraph.rng.uniform %k1 : tensor<?xf64, #tgraph.dims<[N]>>
      %z = tgraph.rng.normal %k2 : tensor<?xf64, #tgraph.dims<[N]>>
      %b = tgraph.rng.bernoulli %k3 {{p = 0.25 : f64}} : tensor<?xi1, #tgraph.dims<[N]>>
      return %u, %z, %b : tensor<?xf64, #tgraph.dims<[N]>>, tensor<?xf64, #tgraph.dims<[N]>>,
          tensor<?xi1, #tgraph.dims<[N]>>
    }}"""
    u, z, b = run(ir, [np.zeros(n, np.float32)])
    se = 1 / math.sqrt(n)
    assert abs(u.mean() - 0.5) < 5 * se * math.sqrt(1 / 12)
    assert abs(u.var() - 1 / 12) < 0.01
    # Kolmogorov-Smirnov distance of the uniforms and the normals.
    grid = np.sort(u)
    assert np.abs(grid - np.arange(1, n + 1) / n).max() < 1.63 / math.sqrt(n)
    zs = np.sort(z)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(zs / math.sqrt(2)))
    assert np.abs(cdf - np.arange(1, n + 1) / n).max() < 1.63 / math.sqrt(n)
    assert abs(z.mean()) < 5 * se and abs(z.std() - 1) < 0.01
    assert abs(b.mean() - 0.25) < 5 * se * math.sqrt(0.25 * 0.75)
    # Split keys give independent streams.
    assert abs(np.corrcoef(u[:-1], z[1:])[0, 1]) < 5 * se


def test_narrow_uniform_stays_below_high():
    # Values of u close to 1 round up to `high` in f32 unless kept inside.
    ir = f"""func.func @f(%x: tensor<?xf32, #tgraph.dims<[N]>>) -> tensor<?xf32, #tgraph.dims<[N]>> {{
      %k = tgraph.rng.key {{seed = 3 : i64}}
      %u = tgraph.rng.uniform %k {{low = 0.0 : f64, high = 1.0e-30 : f64}}
          : tensor<?xf32, #tgraph.dims<[N]>>
      return %u : tensor<?xf32, #tgraph.dims<[N]>>
    }}"""
    (u,) = run(ir, [np.zeros(100_000, np.float32)])
    assert u.min() >= 0 and u.astype(np.float64).max() < 1e-30
