"""KV caches on the CPU: create/append/read/prune inside a function, and
caches passed as state arguments that persist from call to call, against a
NumPy model of the cache."""

import os
import pathlib
import subprocess
import tempfile

import ml_dtypes
import numpy as np
import pytest

from harness import MLIR_DTYPES, RunError, TESSERA_RUN, run, run_env

rng = np.random.default_rng(11)


class Cache:
    """The cache's documented behaviour: valid positions first, zeros after
    them; with a window only the last `window` positions stay."""

    def __init__(self, b, h, s, d, dtype, window=0):
        self.keys = np.zeros((b, h, s, d), dtype)
        self.values = np.zeros((b, h, s, d), dtype)
        self.length, self.window, self.capacity = 0, window, s

    def _set(self, keys, values):
        keys, values = keys.copy(), values.copy()  # may view the buffers
        n = keys.shape[2]
        self.keys[...] = 0
        self.values[...] = 0
        self.keys[:, :, :n] = keys
        self.values[:, :, :n] = values
        self.length = n

    def append(self, k, v):
        limit = self.window or self.capacity
        if not self.window and self.length + k.shape[2] > self.capacity:
            raise OverflowError
        n = self.length
        keys = np.concatenate([self.keys[:, :, :n], k], axis=2)[:, :, -limit:]
        values = np.concatenate([self.values[:, :, :n], v], axis=2)[:, :, -limit:]
        self._set(keys, values)

    def prune(self, keep):
        n = self.length
        if n > keep:
            self._set(self.keys[:, :, n - keep:n], self.values[:, :, n - keep:n])


def cache_type(dtype, s=8):
    return f"!tgraph.kv_cache<[B, 2, {s}, 4], {MLIR_DTYPES[np.dtype(dtype)]}>"


def tensor(dtype, t, s=8):
    e = MLIR_DTYPES[np.dtype(dtype)]
    if t == "full":
        return f"tensor<?x2x{s}x4x{e}, #tgraph.dims<[B, 2, {s}, 4]>>"
    return f"tensor<?x2x?x4x{e}, #tgraph.dims<[B, 2, {t}, 4]>>"


def values(b, t, dtype):
    return rng.standard_normal((b, 2, t, 4)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
@pytest.mark.parametrize("b,t1,t2", [(1, 1, 1), (2, 3, 5), (3, 6, 2)])
def test_append_and_read_in_one_function(dtype, b, t1, t2):
    # Two appends with reads after each: a read is a copy (the second
    # append does not change what the first read returned).
    c, full, i64 = cache_type(dtype), tensor(dtype, "full"), "tensor<i64>"
    ta, tb = tensor(dtype, "T"), tensor(dtype, "U")
    ir = f"""func.func @f(%k1: {ta}, %v1: {ta}, %k2: {tb}, %v2: {tb})
        -> ({full}, {full}, {i64}, {full}, {full}, {i64}) {{
      %c = tgraph.kv_cache.create : {c}
      tgraph.kv_cache.append %c, %k1, %v1 : {c}, {ta}, {ta}
      %ka, %va, %na = tgraph.kv_cache.read %c : {c} -> {full}, {full}, {i64}
      tgraph.kv_cache.append %c, %k2, %v2 : {c}, {tb}, {tb}
      %kb, %vb, %nb = tgraph.kv_cache.read %c : {c} -> {full}, {full}, {i64}
      return %ka, %va, %na, %kb, %vb, %nb : {full}, {full}, {i64}, {full}, {full}, {i64}
    }}"""
    k1, v1, k2, v2 = values(b, t1, dtype), values(b, t1, dtype), values(b, t2, dtype), values(b, t2, dtype)
    outs = run(ir, [k1, v1, k2, v2], out_dtypes=[dtype, dtype, None, dtype, dtype, None])
    ref = Cache(b, 2, 8, 4, dtype)
    ref.append(k1, v1)
    expected = [ref.keys.copy(), ref.values.copy(), ref.length]
    ref.append(k2, v2)
    expected += [ref.keys.copy(), ref.values.copy(), ref.length]
    for got, want in zip(outs, expected):
        np.testing.assert_array_equal(np.asarray(got).astype(np.float64),
                                      np.asarray(want).astype(np.float64))


def test_window_and_prune():
    # window = 5 over capacity 8: 3, then 4 more (the oldest 2 go), then 6
    # (only the last 5 new ones stay); prune keeps the 2 most recent.
    dtype = np.float32
    c, full, i64 = cache_type(dtype), tensor(dtype, "full"), "tensor<i64>"
    t = [tensor(dtype, name) for name in ("T", "U", "V")]
    ir = f"""func.func @f(%k1: {t[0]}, %k2: {t[1]}, %k3: {t[2]})
        -> ({full}, {i64}, {full}, {i64}, {full}, {i64}, {full}, {full}, {i64}) {{
      %c = tgraph.kv_cache.create {{window = 5 : i64}} : {c}
      tgraph.kv_cache.append %c, %k1, %k1 : {c}, {t[0]}, {t[0]}
      tgraph.kv_cache.append %c, %k2, %k2 : {c}, {t[1]}, {t[1]}
      %a, %va, %na = tgraph.kv_cache.read %c : {c} -> {full}, {full}, {i64}
      tgraph.kv_cache.append %c, %k3, %k3 : {c}, {t[2]}, {t[2]}
      %b, %vb, %nb = tgraph.kv_cache.read %c : {c} -> {full}, {full}, {i64}
      tgraph.kv_cache.prune %c {{keep = 2 : i64}} : {c}
      %p, %vp, %np = tgraph.kv_cache.read %c : {c} -> {full}, {full}, {i64}
      tgraph.kv_cache.prune %c {{keep = 4 : i64}} : {c}
      %q, %vq, %nq = tgraph.kv_cache.read %c : {c} -> {full}, {full}, {i64}
      return %a, %na, %b, %nb, %p, %np, %q, %vq, %nq
          : {full}, {i64}, {full}, {i64}, {full}, {i64}, {full}, {full}, {i64}
    }}"""
    k1, k2, k3 = values(2, 3, dtype), values(2, 4, dtype), values(2, 6, dtype)
    outs = run(ir, [k1, k2, k3])
    ref = Cache(2, 2, 8, 4, dtype, window=5)
    expected = []
    ref.append(k1, k1)
    ref.append(k2, k2)
    expected += [ref.keys.copy(), ref.length]
    ref.append(k3, k3)
    expected += [ref.keys.copy(), ref.length]
    ref.prune(2)
    expected += [ref.keys.copy(), ref.length]
    ref.prune(4)  # fewer valid positions than keep: unchanged
    expected += [ref.keys.copy(), ref.values.copy(), ref.length]
    assert [int(o) for o in outs[1::2][:3]] == [5, 5, 2]
    for got, want in zip(outs, expected):
        np.testing.assert_array_equal(got, want)


def test_append_past_capacity_is_an_error():
    dtype = np.float32
    c, ta = cache_type(dtype), tensor(dtype, "T")
    ir = f"""func.func @f(%k: {ta}) -> tensor<i64> {{
      %c = tgraph.kv_cache.create : {c}
      tgraph.kv_cache.append %c, %k, %k : {c}, {ta}, {ta}
      tgraph.kv_cache.append %c, %k, %k : {c}, {ta}, {ta}
      %a, %b, %n = tgraph.kv_cache.read %c : {c} -> {tensor(dtype, "full")}, {tensor(dtype, "full")}, tensor<i64>
      return %n : tensor<i64>
    }}"""
    (n,) = run(ir, [values(1, 4, dtype)])
    assert int(n) == 8
    with pytest.raises(RunError) as err:
        run(ir, [values(1, 5, dtype)])
    assert err.value.returncode == 2
    assert "'tgraph.kv_cache.append' op at" in err.value.stderr
    assert "the cache holds 8 positions" in err.value.stderr
    assert "(found 10 and 8)" in err.value.stderr


STEP = """func.func @step(%c: {c}, %k: {t}, %v: {t}) -> ({full}, tensor<i64>) {{
  tgraph.kv_cache.append %c, %k, %v : {c}, {t}, {t}
  %keys, %vals, %n = tgraph.kv_cache.read %c : {c} -> {full}, {full}, tensor<i64>
  return %vals, %n : {full}, tensor<i64>
}}"""


def run_step(tmp, inputs, calls):
    dtype = np.float32
    source = tmp / "step.mlir"
    source.write_text(STEP.format(c=cache_type(dtype), t=tensor(dtype, "T"),
                                  full=tensor(dtype, "full")))
    args = [TESSERA_RUN, str(source), "--out-dir", str(tmp), "--calls", str(calls)]
    for i, a in enumerate(inputs):
        np.save(tmp / f"in{i}.npy", a)
        args += ["--input", str(tmp / f"in{i}.npy")]
    proc = subprocess.run(args, capture_output=True, text=True, env=run_env())
    return proc


@pytest.mark.parametrize("window", [0, 5])
def test_cache_argument_persists_across_calls(window, tmp_path):
    # @step(cache, k, v): the cache is three state arguments (keys, values,
    # [length, window]) that each call updates in place; three calls of
    # 2 positions each.
    b = 2
    k, v = values(b, 2, np.float32), values(b, 2, np.float32)
    state = [np.zeros((b, 2, 8, 4), np.float32), np.zeros((b, 2, 8, 4), np.float32),
             np.array([0, window], np.int64)]
    proc = run_step(tmp_path, state + [k, v], calls=3)
    assert proc.returncode == 0, proc.stderr
    ref = Cache(b, 2, 8, 4, np.float32, window=window)
    for _ in range(3):
        ref.append(k, v)
    np.testing.assert_array_equal(np.load(tmp_path / "arg0.npy"), ref.keys)
    np.testing.assert_array_equal(np.load(tmp_path / "arg1.npy"), ref.values)
    np.testing.assert_array_equal(np.load(tmp_path / "arg2.npy"), [ref.length, window])
    np.testing.assert_array_equal(np.load(tmp_path / "out0.npy"), ref.values)
    assert int(np.load(tmp_path / "out1.npy")) == ref.length == (5 if window else 6)
    # The saved state resumes: one more call from the files.
    resumed = [np.load(tmp_path / f"arg{i}.npy") for i in range(3)]
    proc = run_step(tmp_path, resumed + [k, v], calls=1)
    if window:
        assert proc.returncode == 0, proc.stderr
        ref.append(k, v)
        np.testing.assert_array_equal(np.load(tmp_path / "arg0.npy"), ref.keys)
    else:
        # 6 + 2 = 8 fits; a second resumed call would not.
        assert proc.returncode == 0, proc.stderr
        proc = run_step(tmp_path, [np.load(tmp_path / f"arg{i}.npy") for i in range(3)] + [k, v], 1)
        assert proc.returncode == 2
        assert "(found 10 and 8)" in proc.stderr


def test_cache_argument_signature_and_checks(tmp_path):
    # Random inputs start the state empty; a wrong state shape is named.
    source = tmp_path / "step.mlir"
    source.write_text(STEP.format(c=cache_type(np.float32), t=tensor(np.float32, "T"),
                                  full=tensor(np.float32, "full")))
    proc = subprocess.run([TESSERA_RUN, str(source), "--dims", "B=1,T=3", "--calls", "2"],
                          capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr
    assert "result 1: i64[] min 6 max 6" in proc.stdout
    bad = [np.zeros((1, 2, 4, 4), np.float32), np.zeros((1, 2, 8, 4), np.float32),
           np.zeros(2, np.int64), values(1, 3, np.float32), values(1, 3, np.float32)]
    proc = run_step(tmp_path, bad, calls=1)
    assert proc.returncode != 0
    assert "argument 0 dim 2 must be 8 but is 4" in proc.stderr
    assert "state f32[B, 2, 8, 4]" in proc.stderr


@pytest.mark.parametrize("words", [[9, 0], [-1, 0], [0, 9], [4, 3]])
def test_invalid_cache_state_is_an_error(words, tmp_path):
    # A state buffer with a length or window outside [0, 8], or a length
    # past the window, fails the call instead of writing out of bounds.
    state = [np.zeros((1, 2, 8, 4), np.float32), np.zeros((1, 2, 8, 4), np.float32),
             np.array(words, np.int64)]
    k = values(1, 1, np.float32)
    proc = run_step(tmp_path, state + [k, k], calls=1)
    assert proc.returncode == 2
    assert "the cache's state is invalid: its length and window must lie in [0, 8]" in proc.stderr
    assert f"(found {words[0]} and {words[1]})" in proc.stderr


def test_calls_must_be_positive(tmp_path):
    proc = run_step(tmp_path, [np.zeros((1, 2, 8, 4), np.float32), np.zeros((1, 2, 8, 4), np.float32),
                               np.zeros(2, np.int64), values(1, 1, np.float32),
                               values(1, 1, np.float32)], calls=0)
    assert proc.returncode == 1
    assert "--calls expects a number of calls >= 1, got 0" in proc.stderr


def test_returning_a_cache_is_an_error():
    c = cache_type(np.float32)
    ir = f"""func.func @f() -> {c} {{
      %c = tgraph.kv_cache.create : {c}
      return %c : {c}
    }}"""
    with pytest.raises(RunError) as err:
        run(ir, [], extra_args=["--dims", "B=1"])
    assert "result 0 is a kv_cache, but caches are state: pass the cache as an argument" in err.value.stderr


def test_append_checks_sizes_the_types_leave_open():
    # Keys whose batch the type does not name (`?`) must still match the
    # cache's at run time, and values must cover as many positions as keys.
    c = cache_type(np.float32)
    tk = "tensor<?x2x?x4xf32>"
    ir = f"""func.func @f(%c: {c}, %k: {tk}, %v: {tk}) -> tensor<i64> {{
      tgraph.kv_cache.append %c, %k, %v : {c}, {tk}, {tk}
      %a, %b, %n = tgraph.kv_cache.read %c : {c} -> {tensor(np.float32, "full")}, {tensor(np.float32, "full")}, tensor<i64>
      return %n : tensor<i64>
    }}"""
    state = [np.zeros((2, 2, 8, 4), np.float32), np.zeros((2, 2, 8, 4), np.float32),
             np.zeros(2, np.int64)]
    (n,) = run(ir, state + [values(2, 3, np.float32), values(2, 3, np.float32)])
    assert int(n) == 3
    with pytest.raises(RunError) as err:
        run(ir, state + [values(3, 3, np.float32), values(3, 3, np.float32)])
    assert "keys batch vs the cache's batch (found 3 and 2)" in err.value.stderr
    with pytest.raises(RunError) as err:
        run(ir, state + [values(2, 3, np.float32), values(2, 2, np.float32)])
    assert "values positions vs keys positions (found 2 and 3)" in err.value.stderr


def test_bench_restores_state_between_timed_calls(tmp_path):
    # 2 positions per call into 8: without restoring the cache, the fifth
    # timed call would overflow it.
    source = tmp_path / "step.mlir"
    source.write_text(STEP.format(c=cache_type(np.float32), t=tensor(np.float32, "T"),
                                  full=tensor(np.float32, "full")))
    proc = subprocess.run([TESSERA_RUN, str(source), "--dims", "B=1,T=2", "--calls", "2",
                           "--bench", "20", "--out-dir", str(tmp_path)],
                          capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr
    assert "@step: 20 calls" in proc.stdout
    assert "result 1: i64[] min 4 max 4" in proc.stdout
