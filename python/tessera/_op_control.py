"""The Graph IR ops of tessera.op that have regions or effects: parameters
(``op.tensor``), implicit layers (``fixed_point``, ``solve``), key/value
caches and control flow (``cond``, ``while_loop``). tessera.op re-exports
them; its docstring describes the conventions."""

from __future__ import annotations

from ._dtypes import as_dtype
from ._tracing import (Tracer, TesseraError, call_core, context_of,
                       tensor_of as _t, user_location as _user_location)


def tensor(shape, dtype="f32", name=None, init=None):
    """A parameter (spec 004's ``op.tensor``): traced functions that use it
    take it as an input and read its ``.value`` on each call. The value
    starts as zeros, ``init(shape, dtype)`` or the array ``init``.

    >>> w = op.tensor((2,), "f64", init=np.array([1.0, 2.0]))
    >>> ts.jit(lambda x: x * w)(np.ones(2))
    array([1., 2.])
    """
    from .graph import Parameter
    return Parameter(shape, dtype, name, init)


def _solve(kind, f, x0, tol, max_iter):
    from ._autodiff import _specs, _trace_flat
    ctx = context_of(x0)
    x = x0 if isinstance(x0, Tracer) else Tracer(_t(x0, ctx=ctx), ctx)
    body = _trace_flat(ctx, lambda x: [f(x)], _specs([x._t], "x"),
                       f"{kind}_body")
    ctx.module.set_location(*_user_location())
    return Tracer(ctx.module.solve(kind, body, x._t, [], float(tol),
                                   int(max_iter)), ctx)


def fixed_point(f, x0, tol=1e-6, max_iter=100):
    """``x* = f(x*)`` by iteration from ``x0``, until the largest change is
    at most ``tol`` (an error after ``max_iter`` iterations). Values ``f``
    closes over are its parameters: gradients with respect to them come
    from the implicit function theorem, not from unrolling the iterations.

    >>> solve_cos = ts.jit(lambda x0: op.fixed_point(op.cos, x0, tol=1e-12))
    >>> solve_cos(np.array([1.0])).round(4)
    array([0.7391])
    """
    return _solve("fixed_point", f, x0, tol, max_iter)


def solve(f, x0, tol=1e-6, max_iter=100):
    """A root of ``f(x) = 0`` by Newton's method from ``x0`` (the Jacobian
    by finite differences), to ``tol``; differentiated implicitly with
    respect to the values ``f`` closes over.

    >>> root = ts.jit(lambda x0: op.solve(lambda x: x * x - 2.0, x0))
    >>> root(np.array([1.0])).round(4)
    array([1.4142])
    """
    return _solve("solve", f, x0, tol, max_iter)


def kv_cache_create(shape, dtype="f32", window=None):
    """An empty key/value cache of ``shape`` ``[batch, heads, max_length,
    head_dim]`` and ``dtype``, local to the traced function (pass a
    ``ts.KVCache`` to keep one across calls); with ``window`` it keeps only
    the last ``window`` positions.

    >>> def length(k):
    ...     cache = op.kv_cache_create((1, 1, 4, 2), "f64")
    ...     op.kv_cache_append(cache, k, k)
    ...     return op.kv_cache_read(cache)[2]
    >>> ts.jit(length)(np.ones((1, 1, 3, 2)))
    array(3...)
    """
    return call_core("kv_cache_create", context_of(), list(shape),
                     as_dtype(dtype).name, window)


def _cache_effect(name, cache, *args):
    from ._tracing import _raise
    ctx = context_of(cache)
    ctx.module.set_location(*_user_location())
    import tessera._core as core
    ok = getattr(core.op, name)(_t(cache, ctx=ctx), *args)
    if not ok:
        _raise(ctx.module)


def kv_cache_append(cache, keys, values):
    """Appends ``keys`` and ``values`` ``[batch, heads, T, head_dim]`` to
    ``cache`` in place (an effect: later reads see them). Appending past
    ``max_length`` is an error; a windowed cache drops its oldest
    positions instead.

    >>> def decode(k):
    ...     cache = op.kv_cache_create((1, 1, 4, 1), "f64")
    ...     op.kv_cache_append(cache, k, k)
    ...     op.kv_cache_append(cache, 2 * k, 2 * k)
    ...     keys, values, length = op.kv_cache_read(cache)
    ...     return keys[0, 0, :, 0], length
    >>> ts.jit(decode)(np.ones((1, 1, 1, 1)))
    (array([1., 2., 0., 0.]), array(2...))
    """
    ctx = context_of(cache, keys, values)
    _cache_effect("kv_cache_append", cache, _t(keys, ctx=ctx),
                  _t(values, ctx=ctx))


def kv_cache_read(cache):
    """``(keys, values, length)``: the keys and values at full capacity
    ``[batch, heads, max_length, head_dim]`` (zero at and past ``length``)
    and the number of valid positions (a 0-d i64).

    >>> def read(k):
    ...     cache = op.kv_cache_create((1, 1, 3, 1), "f64")
    ...     op.kv_cache_append(cache, k, k)
    ...     return op.kv_cache_read(cache)
    >>> keys, values, length = ts.jit(read)(np.full((1, 1, 2, 1), 5.0))
    >>> keys.ravel(), int(length)
    (array([5., 5., 0.]), 2)
    """
    from ._tracing import _raise
    ctx = context_of(cache)
    ctx.module.set_location(*_user_location())
    import tessera._core as core
    out = core.op.kv_cache_read(_t(cache, ctx=ctx))
    if len(out) != 3:
        _raise(ctx.module)
    return tuple(Tracer(o, ctx) for o in out)


def kv_cache_prune(cache, keep):
    """Keeps only the last ``keep`` positions of ``cache`` (moved to the
    front).

    >>> def last(k):
    ...     cache = op.kv_cache_create((1, 1, 4, 1), "f64")
    ...     op.kv_cache_append(cache, k, k)
    ...     op.kv_cache_prune(cache, 2)
    ...     keys, _, length = op.kv_cache_read(cache)
    ...     return keys[0, 0, :, 0], length
    >>> ts.jit(last)(np.arange(3.0).reshape(1, 1, 3, 1))
    (array([1., 2., 0., 0.]), array(2...))
    """
    _cache_effect("kv_cache_prune", cache, int(keep))


def cond(pred, true_fn, false_fn, *operands):
    """``true_fn(*operands)`` if the boolean scalar ``pred`` holds, else
    ``false_fn(*operands)``; only the chosen branch runs (``tgraph.cond``,
    JAX's ``lax.cond``). The branches return pytrees of the same structure.

    >>> f = ts.jit(lambda p, x: op.cond(p, lambda v: v * 2.0, lambda v: -v, x))
    >>> f(np.array(True), np.array([1.0, 2.0]))
    array([2., 4.])
    >>> f(np.array(False), np.array([1.0, 2.0]))
    array([-1., -2.])
    """
    from . import tree
    from ._autodiff import _trace_flat
    ctx = context_of(pred, *operands)
    trees = []

    def branch(fn):
        def flat():
            leaves, td = tree.flatten(fn(*operands))
            trees.append(td)
            return leaves
        return _trace_flat(ctx, flat, [], f"cond_{getattr(fn, '__name__', 'fn')}")

    then_fn, else_fn = branch(true_fn), branch(false_fn)
    if trees[0] != trees[1]:
        raise TesseraError("cond: the branches return different structures")
    ctx.module.set_location(*_user_location())
    out = ctx.module.cond(_t(pred, ctx=ctx), then_fn, else_fn)
    return tree.unflatten(trees[0], [Tracer(o, ctx) for o in out])


def while_loop(cond_fn, body_fn, init_val, trip_count=None):
    """``while cond_fn(v): v = body_fn(v)`` from ``init_val`` (a pytree;
    ``tgraph.while``, JAX's ``lax.while_loop``). ``body_fn`` returns the
    structure of ``init_val``. A known ``trip_count`` lets reverse mode
    store the iterations instead of recomputing them.

    >>> double = lambda x: op.while_loop(lambda v: v < 100.0,
    ...                                  lambda v: v * 2.0, x)
    >>> ts.jit(double)(np.array(3.0))
    array(192.)
    """
    from . import tree
    from ._autodiff import _specs, _trace_flat
    leaves, td = tree.flatten(init_val)
    ctx = context_of(*leaves)
    inits = [_t(l, ctx=ctx) for l in leaves]
    specs = _specs(inits, "v")

    def flat(fn, check):
        def run(*vals):
            out = fn(tree.unflatten(td, list(vals)))
            if not check:
                return [out]
            out_leaves, out_td = tree.flatten(out)
            if out_td != td:
                raise TesseraError("while_loop: the body must return the "
                                   "structure of init_val")
            return out_leaves
        return run

    c = _trace_flat(ctx, flat(cond_fn, False), specs, "while_cond")
    b = _trace_flat(ctx, flat(body_fn, True), specs, "while_body")
    ctx.module.set_location(*_user_location())
    out = ctx.module.while_loop(c, b, inits, trip_count)
    return tree.unflatten(td, [Tracer(o, ctx) for o in out])
