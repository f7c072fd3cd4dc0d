"""ts.random: stateless keys, the same numbers inside and outside jit and
on every thread count, and distributions with the right moments."""

import numpy as np
import pytest

import tessera as ts
from tessera import op


def test_keys_are_values():
    k = ts.random.key(0)
    assert isinstance(k, ts.random.Key)
    assert k == ts.random.key(0) and k != ts.random.key(1)
    a, b = ts.random.split(k)
    assert a != b and a != k
    assert ts.random.split(k) == (a, b)
    assert ts.random.fold_in(k, 3) != ts.random.fold_in(k, 4)


def test_same_numbers_inside_and_outside_jit():
    k = ts.random.key(42)
    eager = ts.random.normal(k, (64,))

    @ts.jit
    def f(k):
        return ts.random.normal(k, (64,))

    np.testing.assert_array_equal(f(k), eager)
    # Keys made inside a trace equal keys made outside it.
    np.testing.assert_array_equal(
        ts.jit(lambda: ts.random.uniform(ts.random.split(
            ts.random.key(7))[1], (5,)))(),
        ts.random.uniform(ts.random.split(ts.random.key(7))[1], (5,)))


def test_same_numbers_on_every_thread_count():
    k = ts.random.key(3)
    before = ts.num_threads()
    try:
        ts.set_num_threads(1)
        one = ts.random.uniform(k, (1 << 14,))
        ts.set_num_threads(2)
        two = ts.random.uniform(k, (1 << 14,))
    finally:
        ts.set_num_threads(before)
    np.testing.assert_array_equal(one, two)


def test_moments():
    k1, k2, k3, k4 = ts.random.split(ts.random.key(11), 4)
    n = 200_000
    u = ts.random.uniform(k1, (n,), "f64", -1.0, 3.0)
    assert u.min() >= -1.0 and u.max() < 3.0
    assert abs(u.mean() - 1.0) < 0.02 and abs(u.var() - 16 / 12) < 0.02
    z = ts.random.normal(k2, (n,), "f64")
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    b = ts.random.bernoulli(k3, 0.3, (n,))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 0.01
    logits = np.log(np.array([0.1, 0.6, 0.3]))
    draws = ts.random.categorical(k4, np.tile(logits, (n // 10, 1)))
    freq = np.bincount(draws, minlength=3) / len(draws)
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.3], atol=0.01)


def test_keys_in_pytrees_and_dropout_in_a_trained_step():
    @ts.jit
    def dropout(params, x):
        keep = ts.random.bernoulli(params["key"], 0.5, x.shape)
        return op.select(keep, x * 2.0, op.zeros_like(x)), \
            ts.random.split(params["key"])[0]

    x = np.ones((4, 8), np.float32)
    y, next_key = dropout({"key": ts.random.key(1)}, x)
    assert isinstance(next_key, ts.random.Key)
    assert set(np.unique(y)) <= {0.0, 2.0}


def test_bad_keys_and_seeds():
    with pytest.raises(ts.TesseraError, match="takes a key"):
        ts.random.uniform(np.zeros(2, np.int32), (3,))
    with pytest.raises(ts.TesseraError, match="integer seed"):
        ts.random.key(1.5)
    with pytest.raises(ts.TesseraError, match="0 <= p <= 1"):
        ts.random.bernoulli(ts.random.key(0), 1.5, (2,))
