"""ts.jit: caching by signature, symbolic dims, errors at the user's line,
the IR at each level, the disk cache across processes, dtypes."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tessera as ts
from tessera import op


def test_symbolic_dims_compile_once():
    @ts.jit
    def f(x: ts.Tensor["B", 4, ts.f32], w: ts.Tensor[4, 3, ts.f32]):
        return op.relu(x @ w)

    w = np.ones((4, 3), np.float32)
    for b in (1, 7, 33):
        x = np.arange(b * 4, dtype=np.float32).reshape(b, 4) - 10
        np.testing.assert_allclose(f(x, w), np.maximum(x @ w, 0))
    assert len(f._cache) == 1


def test_static_shapes_compile_per_shape():
    f = ts.jit(lambda x: x * 2.0)
    f(np.ones(3, np.float32)), f(np.ones(4, np.float32))
    f(np.ones(3, np.float32))
    assert len(f._cache) == 2


def test_shape_error_names_dims_op_and_line():
    @ts.jit
    def f(x: ts.Tensor["B", "D"], w: ts.Tensor["E", "H"]):
        return x @ w  # the line the error points at

    with pytest.raises(ts.TesseraError) as e:
        f(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    msg = str(e.value)
    line = f.fun.__code__.co_firstlineno + 2
    assert f"{__file__}:{line}:" in msg
    assert "'tgraph.matmul'" in msg and "(D)" in msg and "(E)" in msg


def test_annotation_mismatch_is_reported():
    @ts.jit
    def f(x: ts.Tensor["B", 4, ts.f32]):
        return x

    with pytest.raises(ts.TesseraError, match="dim 1 must be 4"):
        f(np.ones((2, 5), np.float32))
    with pytest.raises(ts.TesseraError, match="dtype f64"):
        f(np.ones((2, 4), np.float64))
    with pytest.raises(ts.TesseraError, match="rank 2"):
        f(np.ones((4,), np.float32))


def test_broadcast_error_at_trace_time():
    with pytest.raises(ts.TesseraError, match="tgraph.add"):
        ts.jit(lambda a, b: a + b)(np.ones((2, 3)), np.ones((4,)))


def test_python_exception_leaves_no_partial_state():
    calls = []

    def f(x):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("user bug")
        return x + 1.0

    g = ts.jit(f)
    with pytest.raises(RuntimeError):
        g(np.ones(2))
    np.testing.assert_allclose(g(np.ones(2)), [2.0, 2.0])


def test_lower_shows_every_level():
    lowered = ts.jit(lambda x: op.exp(x) * 2.0).lower(
        np.ones((256, 256), np.float32))
    assert "tgraph.exp" in lowered.graph
    assert "linalg.generic" in lowered.as_text("linalg")
    scheduled = lowered.as_text("scheduled")
    assert "scf.forall" in scheduled and "vector<" in scheduled
    assert "llvm.func" in lowered.as_text("llvm")
    with pytest.raises(ts.TesseraError, match="unknown stage"):
        lowered.as_text("ptx")


def test_static_args_and_pytrees():
    @ts.jit
    def f(cfg, xs):
        return {"sum": xs[0] + xs[1] * cfg["scale"]}

    out = f({"scale": 3.0}, [np.ones(2), np.full(2, 2.0)])
    np.testing.assert_allclose(out["sum"], [7.0, 7.0])
    out = f({"scale": 1.0}, [np.ones(2), np.full(2, 2.0)])
    np.testing.assert_allclose(out["sum"], [3.0, 3.0])


def test_bf16_and_int_round_trip():
    x = np.array([1.5, -2.25, 3.0], ts.bf16.numpy)
    y = ts.jit(lambda x: x * 2.0)(x)
    assert y.dtype == ts.bf16.numpy
    np.testing.assert_array_equal(y.astype(np.float32), [3.0, -4.5, 6.0])
    n = ts.jit(lambda n: n + 1)(np.arange(3, dtype=np.int64))
    np.testing.assert_array_equal(n, [1, 2, 3])


def test_non_contiguous_inputs_are_copied():
    x = np.arange(12.0).reshape(3, 4).T
    np.testing.assert_allclose(ts.jit(lambda x: x + 0.0)(x), x)


def test_disk_cache_across_processes(tmp_path):
    script = textwrap.dedent(f"""
        import sys, time, numpy as np
        import tessera as ts
        f = ts.jit(lambda x: ts.op.tanh(x) * 3.0, cache_dir={str(tmp_path)!r})
        t = time.perf_counter()
        y = f(np.ones(4, np.float32))
        print(time.perf_counter() - t, float(y[0]))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    runs = [subprocess.run([sys.executable, "-c", script], env=env,
                           capture_output=True, text=True, check=True)
            for _ in range(2)]
    (t0, y0), (t1, y1) = [map(float, r.stdout.split()) for r in runs]
    assert y0 == y1 == pytest.approx(3 * np.tanh(1.0), rel=1e-6)
    assert any(p.suffix == ".so" or p.is_dir() for p in tmp_path.iterdir())
    assert t1 < t0


def test_ops_outside_a_trace_run_eagerly():
    np.testing.assert_allclose(op.exp(np.ones(3)), np.exp(np.ones(3)))
    np.testing.assert_allclose(op.reduce_sum(np.arange(4.0), axis=0), 6.0)
    np.testing.assert_allclose(op.full((2,), 3.0, "f64"), [3.0, 3.0])


def test_policy_annotations_set_the_accumulation_type():
    @ts.jit
    def f(a: ts.Tensor["M", 64, ts.bf16 @ ts.accum(ts.f32)],
          b: ts.Tensor[64, "N", ts.bf16]):
        return a @ b

    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 64)).astype(ts.bf16.numpy)
    b = rng.standard_normal((64, 5)).astype(ts.bf16.numpy)
    assert "accum = f32" in f.lower(a, b).graph
    got = f(a, b)
    assert got.dtype == ts.bf16.numpy
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # f32 accumulation, one bf16 rounding at the end: within a bf16 ulp.
    np.testing.assert_allclose(got.astype(np.float64), exact,
                               rtol=2 ** -8, atol=1e-6)


def test_dlpack_interop_with_torch():
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = ts.jit(lambda x: x * 2.0 + 1.0)(x)
    t = torch.from_dlpack(y)
    assert torch.equal(t, x * 2 + 1)
    assert t.data_ptr() == y.ctypes.data  # the result is shared, not copied


def test_keyword_arguments_and_defaults():
    @ts.jit
    def f(x, scale=2.0, *, unused=None):
        return x * scale

    np.testing.assert_allclose(f(np.ones(2), scale=3.0), [3.0, 3.0])
    np.testing.assert_allclose(f(x=np.ones(2)), [2.0, 2.0])
    with pytest.raises(ts.TesseraError, match="keyword-only"):
        f(np.ones(2), unused=1)
    with pytest.raises(ts.TesseraError, match="unexpected keyword"):
        f(np.ones(2), bogus=1)


def test_a_long_compile_says_what_is_running(tmp_path):
    # Past TESSERA_COMPILE_NOTICE_SECONDS a compile names the function and
    # the pass or phase running; 0 turns the notices off.
    code = (
        "import numpy as np, tessera as ts\n"
        "from tessera import op\n"
        "def slow_model(x):\n"
        "    for _ in range(40):\n"
        "        x = op.softmax(x, axis=-1) * 2.0 + x\n"
        "    return op.reduce_sum(x)\n"
        "ts.jit(slow_model, cache_dir='')(np.ones((3, 6), np.float32))\n")
    env = dict(os.environ, TESSERA_COMPILE_NOTICE_SECONDS="0.05")
    done = subprocess.run([sys.executable, "-c", code], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "tessera: compiling @slow_model has taken" in done.stderr
    assert "s so far; running: " in done.stderr
    env["TESSERA_COMPILE_NOTICE_SECONDS"] = "0"
    done = subprocess.run([sys.executable, "-c", code], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "has taken" not in done.stderr
