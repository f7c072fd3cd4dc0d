"""The conventions of the public API, checked over every public callable:
array axes are spelled ``axis`` (an int, or a tuple where a function works
over several axes; negative counts from the end), mesh axes ``axis_name``,
old spellings raise an error naming the new one, and Python numbers are
weak (NumPy 2 and JAX). Values are checked against NumPy in float64."""

import inspect

import numpy as np
import pytest

import public_api
import tessera as ts
from tessera import op

# Parameters whose names end in _dim but that are sizes, not axes.
SIZES = {"head_dim"}


def _callables():
    """(qualified name, callable) of every public function and method; the
    Tracer's methods as ``Tracer.<name>``."""
    for mod, name, fn in public_api.callables():
        if name.startswith("Tracer."):
            yield name, fn
        else:
            yield f"{mod.__name__}.{name}", fn


def _params(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


def test_no_parameter_is_named_dim_or_dims():
    bad = []
    for name, fn in _callables():
        for p in _params(fn):
            if p in SIZES:
                continue
            if p in ("dim", "dims") or p.endswith(("_dim", "_dims")):
                bad.append(f"{name}({p})")
    assert not bad, f"array axes must be spelled 'axis': {bad}"


def test_mesh_axes_are_axis_name():
    for fn in (op.all_reduce, op.all_gather, op.reduce_scatter,
               op.all_to_all, op.permute):
        params = _params(fn)
        assert "axis_name" in params, fn.__name__
        assert params.get("axis") is None or params["axis"].default is \
            inspect.Parameter.empty or params["axis"].default != ""


# -- functions with an axis, against NumPy ----------------------------------


def _logsumexp(x, axis, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


def _softmax(x, axis):
    return np.exp(x - _logsumexp(x, axis, keepdims=True))


def _normalized(x, axis):
    return tuple(sorted(a % x.ndim for a in np.atleast_1d(axis)))


def _layernorm(x, axis, eps=1e-5):
    m = x.mean(axis=axis, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axis, keepdims=True)
    return (x - m) / np.sqrt(v + eps)


def _rmsnorm(x, axis, eps=1e-5):
    return x / np.sqrt((x ** 2).mean(axis=axis, keepdims=True) + eps)


# name -> (the function as called with (x, axis), its NumPy reference)
MULTI_AXIS = {
    "reduce_sum": (op.reduce_sum, np.sum),
    "reduce_mean": (op.reduce_mean, np.mean),
    "reduce_prod": (op.reduce_prod, np.prod),
    "reduce_max": (op.reduce_max, np.max),
    "reduce_min": (op.reduce_min, np.min),
    "logsumexp": (op.logsumexp, _logsumexp),
    "logsumexp_safe": (op.logsumexp_safe, _logsumexp),
    "softmax": (op.softmax, _softmax),
    "softmax_safe": (op.softmax_safe, _softmax),
    "log_softmax": (op.log_softmax, lambda x, a: np.log(_softmax(x, a))),
    "layernorm": (lambda x, axis: op.layernorm(x, axis=axis), _layernorm),
    "layernorm_safe": (lambda x, axis: op.layernorm_safe(x, axis=axis),
                       _layernorm),
    "rmsnorm": (lambda x, axis: op.rmsnorm(x, axis=axis), _rmsnorm),
    "rmsnorm_safe": (lambda x, axis: op.rmsnorm_safe(x, axis=axis),
                     _rmsnorm),
    "Tracer.sum": (lambda x, axis: x.sum(axis=axis), np.sum),
    "Tracer.mean": (lambda x, axis: x.mean(axis=axis), np.mean),
    "Tracer.prod": (lambda x, axis: x.prod(axis=axis), np.prod),
    "Tracer.max": (lambda x, axis: x.max(axis=axis), np.max),
    "Tracer.min": (lambda x, axis: x.min(axis=axis), np.min),
}

# Functions of one axis (an int): a tuple is a TypeError naming the call.
ONE_AXIS = {
    "argmax": (op.argmax, np.argmax),
    "argmin": (op.argmin, np.argmin),
    "Tracer.argmax": (lambda x, axis: x.argmax(axis=axis), np.argmax),
    "Tracer.argmin": (lambda x, axis: x.argmin(axis=axis), np.argmin),
    "concat": (lambda x, axis: op.concat([x, 2 * x], axis=axis),
               lambda x, axis: np.concatenate([x, 2 * x], axis=axis)),
    "gather": (lambda x, axis: op.gather(x, np.array([0, 0]), axis=axis),
               lambda x, axis: np.take(x, [0, 0], axis=axis)),
    "scatter_add": (
        lambda x, axis: op.scatter_add(
            x, np.array([0]), op.ones_like(op.gather(x, np.array([0]),
                                                     axis=axis)), axis=axis),
        lambda x, axis: x + (np.arange(x.shape[axis]) == 0).reshape(
            [-1 if d == axis % x.ndim else 1 for d in range(x.ndim)])),
    "dim_size": (lambda x, axis: op.dim_size(x, axis=axis),
                 lambda x, axis: np.int64(x.shape[axis])),
    "iota": (lambda x, axis: op.iota(x.shape, axis=axis, dtype="f64"),
             lambda x, axis: np.indices(x.shape)[axis].astype(np.float64)),
    "all_gather": (lambda x, axis: op.all_gather(x, axis=axis,
                                                 axis_name="d"),
                   lambda x, axis: x),
    "reduce_scatter": (lambda x, axis: op.reduce_scatter(x, axis=axis,
                                                         axis_name="d"),
                       lambda x, axis: x),
}


def test_every_axis_function_is_checked_here():
    """Each public callable with an ``axis`` parameter is in one of the
    tables above (so a new one cannot skip these checks)."""
    covered = set(MULTI_AXIS) | set(ONE_AXIS) | {"all_to_all"}
    missing = []
    for name, fn in _callables():
        if "axis" not in _params(fn):
            continue
        short = name.split(".")[-1] if not name.startswith("Tracer") \
            else name
        mod = name.rsplit(".", 1)[0]
        if mod in ("tessera.tile", "tessera.random") or short in covered:
            continue  # the tile DSL and random are checked elsewhere
        missing.append(name)
    assert not missing, f"axis functions without a check here: {missing}"


def _random_axes(rng, rank):
    """A random non-empty set of axes of ``rank``, each spelled at random
    as a non-negative or a negative int, in random order."""
    k = int(rng.integers(1, rank + 1))
    axes = rng.permutation(rank)[:k]
    return tuple(int(a) - rank if rng.random() < 0.5 else int(a)
                 for a in axes)


@pytest.mark.parametrize("name", sorted(MULTI_AXIS))
def test_multi_axis_functions_take_an_int_or_a_tuple(name, rng):
    fn, ref = MULTI_AXIS[name]
    for trial in range(6):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(s) for s in rng.choice([1, 2, 3, 5], rank))
        x = rng.standard_normal(shape) + (1.5 if "prod" in name else 0)
        axis = -1 if trial == 0 else _random_axes(rng, rank)
        want = ref(x, _normalized(x, axis) if not isinstance(axis, int)
                   else axis)
        got = ts.jit(lambda x: fn(x, axis))(x)
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12,
                                   err_msg=f"{name} {shape} axis={axis}")


@pytest.mark.parametrize("name", sorted(ONE_AXIS))
def test_one_axis_functions_take_an_int(name, rng):
    fn, ref = ONE_AXIS[name]
    x = rng.standard_normal((2, 3, 4))
    for axis in (-1, 1, -3):
        got = ts.jit(lambda x: fn(x, axis))(x)
        np.testing.assert_allclose(got, ref(x, axis), rtol=1e-12,
                                   err_msg=f"{name} axis={axis}")
    with pytest.raises(TypeError, match=r"one axis \(an int\), got \(0, 1\)"):
        ts.jit(lambda x: fn(x, (0, 1)))(x)


def test_all_to_all_axes(rng):
    x = rng.standard_normal((2, 3))
    got = ts.jit(lambda x: op.all_to_all(x, split_axis=-1, concat_axis=0,
                                         axis_name="d"))(x)
    np.testing.assert_array_equal(got, x)


def test_keepdims_and_every_axis(rng):
    x = rng.standard_normal((2, 3, 4))
    got = ts.jit(lambda x: op.logsumexp(x, axis=(0, 2), keepdims=True))(x)
    np.testing.assert_allclose(got, _logsumexp(x, (0, 2), keepdims=True),
                               rtol=1e-12)
    np.testing.assert_allclose(ts.jit(lambda x: op.reduce_max(x))(x), x.max())
    np.testing.assert_allclose(
        ts.jit(lambda x: op.reduce_sum(x, axis=(-1, 0), keepdims=True))(x),
        x.sum(axis=(0, 2), keepdims=True), rtol=1e-12)


def test_norm_parameters_have_the_shape_of_the_axes(rng):
    x = rng.standard_normal((2, 3, 4))
    g, b = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    got = ts.jit(lambda x, g, b: op.layernorm(x, g, b, axis=(2, 0)))(x, g, b)
    want = _layernorm(x, (0, 2)) * g[:, None, :] + b[:, None, :]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    with pytest.raises(ts.TesseraError, match="needs at least one axis"):
        ts.jit(lambda x: op.rmsnorm(x, axis=()))(x)


def test_gradients_through_several_axes(rng):
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    x = rng.standard_normal((2, 3, 4))
    g = ts.grad(lambda x: op.reduce_sum(op.softmax(x, axis=(0, 2)) ** 3))(x)
    want = jax.grad(lambda x: jnp.sum(jax.nn.softmax(x, axis=(0, 2)) ** 3))(x)
    np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-13)


# -- errors --------------------------------------------------------------------


def test_old_spellings_name_the_new_one(rng):
    x = rng.standard_normal((2, 3))
    checks = [
        (lambda: op.reduce_sum(x, dims=[0]), r"reduce_sum\(\) has no keyword "
         r"'dims': use 'axis'"),
        (lambda: op.softmax(x, dim=-1), r"softmax\(\) has no keyword 'dim': "
         r"use 'axis'"),
        (lambda: op.concat([x, x], dim=0), "use 'axis'"),
        (lambda: op.all_to_all(x, split_dim=0, concat_axis=1),
         "use 'split_axis'"),
        (lambda: op.dot_general(x, x, [], [], lhs_contracting_dims=[1],
                                rhs_contract_axes=[1]),
         "use 'lhs_contract_axes'"),
        (lambda: op.broadcast_in_dim(x, (2, 3), broadcast_dimensions=[0, 1]),
         "use 'broadcast_axes'"),
        (lambda: op.all_reduce(x, axis="data"),
         r"axis= is an array axis; name the mesh axis with "
         r"axis_name='data'"),
        (lambda: op.all_gather(x, 0, axis="data"), "axis_name='data'"),
    ]
    for call, message in checks:
        with pytest.raises(TypeError, match=message):
            call()

    def traced(x):
        return x.sum(dims=0)
    with pytest.raises(TypeError, match=r"Tracer.sum\(\) has no keyword "
                       r"'dims': use 'axis'"):
        ts.jit(traced)(x)


def test_bad_axes_are_clear_errors(rng):
    x = rng.standard_normal((2, 3))
    with pytest.raises(ts.TesseraError,
                       match=r"axis 2 is out of range for f64\[2, 3\] "
                             r"\(rank 2: axes -2..1\)"):
        ts.jit(lambda x: op.reduce_sum(x, axis=2))(x)
    with pytest.raises(ts.TesseraError,
                       match=r"axis \(1, -1\) names axis 1 of f64\[2, 3\] "
                             r"twice"):
        ts.jit(lambda x: op.softmax(x, axis=(1, -1)))(x)
    with pytest.raises(TypeError, match="takes axis as an int, a tuple"):
        ts.jit(lambda x: op.reduce_sum(x, axis=1.0))(x)
    with pytest.raises(TypeError, match="takes axis as an int, a tuple"):
        ts.jit(lambda x: op.softmax(x, axis=[True]))(x)
    # None is every axis, wherever a tuple is accepted.
    np.testing.assert_allclose(ts.jit(lambda x: op.softmax(x, axis=None))(x),
                               _softmax(x, (0, 1)), rtol=1e-12)


# -- promotion -----------------------------------------------------------------

DTYPES = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "bool"]


def _weak_expected(dtype, kind):
    """The table of docs/FRONTENDS.md, written out."""
    if kind == "float" and dtype in ("i64", "i32", "i16", "i8", "bool"):
        return "f32"
    if kind == "int" and dtype == "bool":
        return "i64"
    return dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_python_numbers_are_weak(dtype, rng):
    dt = ts.as_dtype(dtype).numpy
    x = (rng.integers(-3, 4, 5) if dtype != "bool"
         else rng.integers(0, 2, 5)).astype(dt)
    for kind, number in (("bool", True), ("int", 2), ("float", 0.5),
                         ("float", np.float64(0.5)), ("int", np.int64(2))):
        want_dtype = _weak_expected(dtype, kind)
        for name, fn, ref in (
                ("x * n", lambda x: x * number, lambda x: x * number),
                ("n - x", lambda x: number - x, lambda x: number - x),
                ("x < n", lambda x: x < number, lambda x: x < number)):
            if dtype == "bool" and kind == "bool" and name != "x < n":
                continue  # no arithmetic on booleans
            got = ts.jit(fn)(x)
            want = ref(x.astype(np.float64)) if name != "x < n" else \
                ref(x.astype(np.float64))
            if name == "x < n":
                assert got.dtype == np.bool_, (dtype, kind, name)
            else:
                assert ts.as_dtype(got.dtype).name == want_dtype, \
                    (dtype, kind, name, got.dtype)
            np.testing.assert_allclose(np.asarray(got, np.float64), want,
                                       err_msg=f"{dtype} {name} {number!r}")


def test_division_is_true_division_and_floor_division(rng):
    a = rng.integers(-9, 10, 40).astype(np.int32)
    b = (rng.integers(1, 5, 40) * rng.choice([-1, 1], 40)).astype(np.int32)
    got = ts.jit(lambda a, b: a / b)(a, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, (a / b).astype(np.float32), rtol=1e-7)
    np.testing.assert_array_equal(ts.jit(lambda a, b: a // b)(a, b), a // b)
    np.testing.assert_array_equal(ts.jit(lambda a: 7 // a)(b), 7 // b)
    x = rng.standard_normal(40)
    np.testing.assert_array_equal(ts.jit(lambda x: x // 0.3)(x), x // 0.3)
    # op.div is the Graph IR's: integers round toward zero.
    np.testing.assert_array_equal(ts.jit(op.div)(a, b),
                                  np.trunc(a / b).astype(np.int32))


def test_numbers_that_do_not_fit_are_errors():
    x = np.ones(3, np.int8)
    with pytest.raises(ts.TesseraError,
                       match=r"the number 300 is out of range for i8 "
                             r"\(-128..127\)"):
        ts.jit(lambda x: x + 300)(x)
    with pytest.raises(ts.TesseraError, match="out of range for every"):
        ts.jit(lambda x: x * 2 ** 70)(x)
    with pytest.raises(ts.TesseraError, match="does not fit i8"):
        ts.jit(lambda x: x + [1, 2, 1000])(x)


def test_tensors_of_two_dtypes_do_not_promote():
    x, y = np.ones(3, np.float32), np.ones(3, np.float64)
    for fn in (lambda x, y: x + y, lambda x, y: x < y,
               lambda x, y: op.where(x > 0, x, y), lambda x, y: x @ y):
        with pytest.raises(ts.TesseraError,
                           match=r"has element type f32 but .* has f64; "
                                 r"tensor dtypes do not promote"):
            ts.jit(fn)(x, y)


def test_lists_of_numbers_are_weak_too(rng):
    x = rng.standard_normal(3).astype(np.float32)
    got = ts.jit(lambda x: x * [1.0, 2.0, 3.0])(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, x * np.array([1, 2, 3], np.float32))
    n = np.array([1, 2, 3], np.int32)
    got = ts.jit(lambda n: n + [0.5, 0.5, 1.0])(n)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, n + np.array([0.5, 0.5, 1.0]))


def test_annotated_parameters_take_lists(rng):
    def f(x: ts.Tensor["B", 3, ts.f32], w: ts.Tensor[3, 2, ts.f32]):
        return x @ w
    got = ts.jit(f)([[1.0, 2.0, 3.0]], [[1, 0], [0, 1], [1, 1]])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [[4.0, 5.0]])

    def g(x: ts.Tensor["B"]):
        return x * 2
    assert ts.jit(g)([1.5, 2.0]).dtype == np.float32
    assert ts.jit(g)([1, 2]).dtype == np.int64

    def h(x: ts.Tensor["B", ts.i8]):
        return x
    with pytest.raises(ts.TesseraError,
                       match=r"argument 'x' is annotated Tensor\['B', ts.i8\]"
                             r" but \[1000\] does not fit"):
        ts.jit(h)([1000])


def test_numbers_in_concat_are_weak(rng):
    x = rng.standard_normal((2, 2)).astype(np.float32)
    got = ts.jit(lambda x: op.concat([x, [[1.0, 2.0]]], axis=0))(x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.concatenate(
        [x, np.array([[1.0, 2.0]], np.float32)]))
    n = np.array([[1, 2]], np.int32)
    got = ts.jit(lambda n: op.concat([n, [[0.5, 1.5]]], axis=0))(n)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [[1.0, 2.0], [0.5, 1.5]])
