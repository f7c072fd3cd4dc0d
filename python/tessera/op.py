"""One function per Graph IR op, under the op's own name (``op.matmul``,
``op.tanh``, ``op.reduce_sum``, ``op.softmax``, ...).

They work on traced tensors inside ``ts.jit`` and the transforms; arrays and
Python numbers passed beside a traced tensor become constants. Shapes are
checked as each op is added, by the compiler's own shape functions, and a
mismatch raises ``TesseraError`` naming the op, the dims and your line.
"""

from __future__ import annotations

import numpy as np

from . import _keywords
from ._dtypes import as_dtype
from ._tracing import (Tracer, TesseraError, _apply, _binary,
                       _checked_operands as _operands, call_core,
                       constant as _constant, context_of, policy_of,
                       tensor_of, user_location as _user_location)

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _unary(name, doc):
    def fn(x):
        return _apply(name, x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    globals()[name] = fn
    __all__.append(name)


for _name, _doc in [
        ("neg", "-x"), ("abs", "|x|"), ("exp", "e^x"), ("log", "ln(x)"),
        ("log1p", "ln(1 + x)"), ("sin", "sin(x)"), ("cos", "cos(x)"),
        ("tanh", "tanh(x)"), ("erf", "erf(x)"), ("sigmoid", "1 / (1 + e^-x)"),
        ("relu", "max(x, 0)"), ("silu", "x * sigmoid(x)"),
        ("sqrt", "sqrt(x)"), ("rsqrt", "1 / sqrt(x)"),
        ("reciprocal", "1 / x"), ("square", "x * x"),
        ("floor", "floor(x)"), ("sign", "sign(x): -1, 0 or 1"),
        ("stop_gradient", "x, seen by autodiff as a constant")]:
    _unary(_name, _doc)


def _binary_op(name, doc):
    def fn(lhs, rhs):
        return _binary(name, lhs, rhs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + " (NumPy broadcasting)"
    globals()[name] = fn
    __all__.append(name)


for _name, _doc in [("add", "lhs + rhs"), ("sub", "lhs - rhs"),
                    ("mul", "lhs * rhs"), ("div", "lhs / rhs"),
                    ("pow", "lhs ** rhs"), ("max", "max(lhs, rhs)"),
                    ("min", "min(lhs, rhs)")]:
    _binary_op(_name, _doc)

maximum, minimum = globals()["max"], globals()["min"]


def _t(x, like=None, ctx=None):
    return tensor_of(x, like, ctx)


def _call(name, *tensors, **kwargs):
    ctx = context_of(*tensors)
    return call_core(name, ctx, *[_t(t, ctx=ctx) if t is not None else None
                                  for t in tensors],
                     policy=policy_of(*tensors), **kwargs)


def _policy_accum(accum, *operands):
    """``accum``, else the accumulation type of the operands' policy."""
    if accum is not None:
        return as_dtype(accum).name
    p = policy_of(*operands)
    return p.accum.name if p is not None and p.accum is not None else None


# -- Generators -------------------------------------------------------------

@_export
def full(shape, value, dtype="f32"):
    """A tensor of ``shape`` filled with ``value`` (symbolic dims must be dims
    of the traced function's arguments)."""
    return call_core("full", context_of(), float(value), list(shape),
                     as_dtype(dtype).name)


@_export
def zeros(shape, dtype="f32"):
    return full(shape, 0.0, dtype)


@_export
def ones(shape, dtype="f32"):
    return full(shape, 1.0, dtype)


@_export
def zeros_like(x):
    return _call("zeros_like", x)


@_export
def ones_like(x):
    return _call("ones_like", x)


@_export
def iota(shape, axis, dtype="i64"):
    """Indices along ``axis`` of a tensor of ``shape``."""
    return call_core("iota", context_of(), list(shape),
                     _keywords.one_axis(axis, "op.iota"),
                     as_dtype(dtype).name)


@_export
def constant(value):
    """The array ``value`` as a constant of the traced function."""
    return _constant(value, context_of())


@_export
def gelu(x, approximate=False):
    return _call("gelu", x, approximate=approximate)


@_export
def compare(lhs, rhs, direction):
    """Elementwise ``lhs <direction> rhs`` (eq, ne, lt, le, gt, ge) as bools."""
    ctx = context_of(lhs, rhs)
    return call_core("compare", ctx, *_operands(lhs, rhs, ctx), direction)


@_export
def select(cond, on_true, on_false):
    ctx = context_of(cond, on_true, on_false)
    return call_core("select", ctx, _t(cond, ctx=ctx),
                     *_operands(on_true, on_false, ctx),
                     policy=policy_of(on_true, on_false))


where = select


@_export
def cast(x, dtype):
    return _call("cast", x, dtype=as_dtype(dtype).name)


# -- Contractions -----------------------------------------------------------

@_export
def matmul(lhs, rhs, transpose_lhs=False, transpose_rhs=False, accum=None):
    """[..., M, K] @ [..., K, N] -> [..., M, N] (batch dims broadcast).
    As in NumPy, a 1-D lhs is a row ([K] @ [K, N] -> [N]) and a 1-D rhs a
    column ([M, K] @ [K] -> [M]). ``accum`` defaults to the operands' policy
    (Tensor[..., bf16 @ accum(f32)]), else the operand type."""
    vec_l = _ndim(lhs) == 1 and not transpose_lhs
    vec_r = _ndim(rhs) == 1 and not transpose_rhs
    if vec_l:
        lhs = reshape(lhs, [1] + list(lhs.shape))
    if vec_r:
        rhs = reshape(rhs, list(rhs.shape) + [1])
    out = _call("matmul", lhs, rhs, transpose_lhs=transpose_lhs,
                transpose_rhs=transpose_rhs,
                accum=_policy_accum(accum, lhs, rhs))
    if vec_l or vec_r:
        shape = list(out.shape)
        del shape[-1 if vec_r else -2]
        if vec_l and vec_r:
            del shape[-1]
        out = reshape(out, shape)
    return out


def _ndim(x):
    return x.ndim if hasattr(x, "ndim") else np.ndim(x)


@_export
def batch_matmul(lhs, rhs, accum=None):
    return _call("batch_matmul", lhs, rhs,
                 accum=_policy_accum(accum, lhs, rhs))


@_export
def dot_general(lhs, rhs, lhs_batch_axes, rhs_batch_axes, lhs_contract_axes,
                rhs_contract_axes):
    """Contracts ``lhs_contract_axes`` of ``lhs`` with ``rhs_contract_axes``
    of ``rhs``, pairing the batch axes; the result is [batch..., lhs free...,
    rhs free...] (StableHLO's dot_general)."""
    return _call("dot_general", lhs, rhs,
                 lhs_batch_axes=_axis_list(lhs_batch_axes, "dot_general"),
                 rhs_batch_axes=_axis_list(rhs_batch_axes, "dot_general"),
                 lhs_contract_axes=_axis_list(lhs_contract_axes, "dot_general"),
                 rhs_contract_axes=_axis_list(rhs_contract_axes,
                                              "dot_general"))


def _axis_list(axes, name):
    return [_keywords.one_axis(a, f"op.{name}") for a in axes]


@_export
def conv2d(input, filter, strides=(1, 1), padding=(0, 0, 0, 0),
           dilation=(1, 1), groups=1, channels_last=False):
    """2-D convolution; NCHW/OIHW, or NHWC/HWIO with ``channels_last``.
    ``padding`` is (top, bottom, left, right)."""
    return _call("conv2d", input, filter, strides=list(strides),
                 padding=list(padding), dilation=list(dilation),
                 groups=groups, channels_last=channels_last)


@_export
def attention(query, key, value, causal=False, scale=None):
    """softmax(q k^T * scale) v, scale defaulting to 1/sqrt(head dim)."""
    return _call("attention", query, key, value, causal=causal, scale=scale)


# -- Reductions and normalizations ------------------------------------------

def _reduce(name, stable_arg):
    what = name.split("_")[1]
    if stable_arg:
        def fn(x, axis=None, keepdims=False, stable=False):
            return _call(name, x, axis=_keywords.axes(axis, f"op.{name}"),
                         keepdims=keepdims, stable=stable)
    else:
        def fn(x, axis=None, keepdims=False):
            return _call(name, x, axis=_keywords.axes(axis, f"op.{name}"),
                         keepdims=keepdims)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The {what} over ``axis`` (an int or a tuple of ints; every "
                  "axis when None), in a fixed, thread-count independent "
                  "order; ``keepdims`` keeps the reduced axes with size 1"
                  + ("; ``stable=True`` compensates (Kahan)." if stable_arg
                     else "."))
    globals()[name] = fn
    __all__.append(name)


for _name in ["reduce_sum", "reduce_mean", "reduce_prod"]:
    _reduce(_name, True)
for _name in ["reduce_max", "reduce_min"]:
    _reduce(_name, False)


def _arg_reduce(name):
    def fn(x, axis=-1, keepdims=False):
        return _call(name, x, axis=_keywords.one_axis(axis, f"op.{name}"),
                     keepdims=keepdims)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The index of the first {name[3:]}imum along one ``axis`` "
                  "(an int).")
    globals()[name] = fn
    __all__.append(name)


for _name in ["argmax", "argmin"]:
    _arg_reduce(_name)


def _along(name, keep, doc):
    if keep:
        def fn(x, axis=-1, keepdims=False):
            return _call(name, x, axis=_keywords.axes(axis, f"op.{name}"),
                         keepdims=keepdims)
    else:
        def fn(x, axis=-1):
            return _call(name, x, axis=_keywords.axes(axis, f"op.{name}"))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + (" over ``axis`` (an int, or a tuple of ints taken "
                        "together).")
    globals()[name] = fn
    __all__.append(name)


for _name, _keep, _doc in [
        ("logsumexp", True, "log(sum(exp(x)))"),
        ("logsumexp_safe", True, "log(sum(exp(x))), -inf (not NaN) where "
         "every entry is -inf,"),
        ("softmax", False, "exp(x) / sum(exp(x))"),
        ("log_softmax", False, "x - logsumexp(x)"),
        ("softmax_safe", False, "softmax, 0 (not NaN) where every entry is "
         "-inf,")]:
    _along(_name, _keep, _doc)


def _norm_axis(axis, name):
    return _keywords.axes(axis, f"op.{name}")


@_export
def layernorm(x, scale=None, bias=None, axis=-1, epsilon=1e-5):
    """(x - mean) / sqrt(var + epsilon) * scale + bias over ``axis`` (an int
    or a tuple of ints); ``scale`` and ``bias`` have the shape of those
    axes."""
    return _call("layernorm", x, scale, bias,
                 axis=_norm_axis(axis, "layernorm"), epsilon=epsilon)


@_export
def layernorm_safe(x, scale=None, bias=None, axis=-1, epsilon=1e-5):
    """layernorm with its statistics in f32 and the variance kept >= 0."""
    return _call("layernorm_safe", x, scale, bias,
                 axis=_norm_axis(axis, "layernorm_safe"), epsilon=epsilon)


@_export
def rmsnorm(x, scale=None, axis=-1, epsilon=1e-5):
    """x / sqrt(mean(x^2) + epsilon) * scale over ``axis`` (an int or a
    tuple of ints); ``scale`` has the shape of those axes."""
    return _call("rmsnorm", x, scale, axis=_norm_axis(axis, "rmsnorm"),
                 epsilon=epsilon)


@_export
def rmsnorm_safe(x, scale=None, axis=-1, epsilon=1e-5):
    """rmsnorm with its statistics in f32."""
    return _call("rmsnorm_safe", x, scale,
                 axis=_norm_axis(axis, "rmsnorm_safe"), epsilon=epsilon)


@_export
def cross_entropy(logits, labels, reduction="mean"):
    """Softmax cross-entropy of ``logits`` [..., C] with integer labels [...]
    or a distribution [..., C]; ``reduction``: mean, sum or none."""
    return _call("cross_entropy", logits, labels, reduction=reduction)


# -- Layout -----------------------------------------------------------------

@_export
def transpose(x, permutation):
    return _call("transpose", x, permutation=list(permutation))


@_export
def reshape(x, shape):
    """Reshape; one dim may be -1 (solved from the element count)."""
    return _call("reshape", x, shape=list(shape))


@_export
def broadcast_in_dim(x, shape, broadcast_axes):
    """``x`` placed in a tensor of ``shape``: axis i of ``x`` becomes axis
    ``broadcast_axes[i]`` of the result (same size, or 1 broadcast)."""
    return _call("broadcast_in_dim", x, shape=list(shape),
                 broadcast_axes=_axis_list(broadcast_axes,
                                           "broadcast_in_dim"))


@_export
def broadcast_to(x, shape):
    return _call("broadcast_to", x, shape=list(shape))


@_export
def slice(x, start, limit, stride=None):
    return _call("slice", x, start=list(start), limit=list(limit),
                 stride=list(stride or []))


@_export
def concat(inputs, axis=0):
    """The ``inputs`` joined along ``axis``."""
    ctx = context_of(*inputs)
    like = next((i for i in inputs if isinstance(i, Tracer)), None)
    return call_core("concat", ctx, [_t(i, like, ctx) for i in inputs],
                     _keywords.one_axis(axis, "op.concat"))


@_export
def pad(x, low, high, value=0.0, interior=None):
    return _call("pad", x, low=list(low), high=list(high), value=float(value),
                 interior=list(interior or []))


@_export
def dynamic_slice(x, starts, sizes):
    """A slice of static ``sizes`` at run-time ``starts`` (one 0-d integer
    per dim, clamped so the slice stays inside ``x``)."""
    ctx = context_of(x, *starts)
    return call_core("dynamic_slice", ctx, _t(x, ctx=ctx),
                     [_t(s, ctx=ctx) for s in starts], list(sizes),
                     policy=policy_of(x))


@_export
def dim_size(x, axis, dtype="i64"):
    """The size of axis ``axis`` of ``x`` (a 0-d tensor; symbolic sizes are
    read at run time)."""
    return _call("dim_size", x, axis=_keywords.one_axis(axis, "op.dim_size"),
                 dtype=as_dtype(dtype).name)


# -- Collectives (SPMD: every device of mesh axis ``axis_name`` runs the
# same function; a single process is a group of one) ----------------------

@_export
def all_reduce(x, reduction="sum", axis_name="", group_size=1):
    """The ``reduction`` (sum, prod, min, max, mean) of ``x`` over the
    devices of mesh axis ``axis_name``."""
    return _call("all_reduce", x, reduction=reduction, axis_name=axis_name,
                 group_size=group_size)


@_export
def all_gather(x, axis, axis_name="", group_size=1):
    """The devices' ``x`` concatenated along array axis ``axis``."""
    return _call("all_gather", x, axis=_keywords.one_axis(axis, "op.all_gather"),
                 axis_name=axis_name, group_size=group_size)


@_export
def reduce_scatter(x, axis, reduction="sum", axis_name="", group_size=1):
    """The reduction over devices, each keeping its slice along ``axis``."""
    return _call("reduce_scatter", x,
                 axis=_keywords.one_axis(axis, "op.reduce_scatter"),
                 reduction=reduction, axis_name=axis_name,
                 group_size=group_size)


@_export
def all_to_all(x, split_axis, concat_axis, axis_name="", group_size=1):
    """Splits ``x`` along ``split_axis`` over the devices and concatenates
    what each receives along ``concat_axis``."""
    return _call("all_to_all", x,
                 split_axis=_keywords.one_axis(split_axis, "op.all_to_all"),
                 concat_axis=_keywords.one_axis(concat_axis, "op.all_to_all"),
                 axis_name=axis_name, group_size=group_size)


@_export
def permute(x, pairs, axis_name=""):
    """Device ``b`` receives what device ``a`` has, for each (a, b)."""
    return _call("permute", x, pairs=[tuple(p) for p in pairs],
                 axis_name=axis_name)


@_export
def gather(x, indices, axis=0):
    """The slices of ``x`` along ``axis`` at ``indices``."""
    return _call("gather", x, indices,
                 axis=_keywords.one_axis(axis, "op.gather"))


@_export
def scatter_add(x, indices, updates, axis=0):
    """``x`` with ``updates`` added at ``indices`` along ``axis``."""
    return _call("scatter_add", x, indices, updates,
                 axis=_keywords.one_axis(axis, "op.scatter_add"))


@_export
def embedding(table, ids):
    return _call("embedding", table, ids)


@_export
def one_hot(ids, num_classes, dtype="f32"):
    return _call("one_hot", ids, num_classes=num_classes,
                 dtype=as_dtype(dtype).name)


# -- Parameters and implicit layers -----------------------------------------

def tensor(shape, dtype="f32", name=None, init=None):
    """A parameter (spec 004's ``op.tensor``): traced functions that use it
    take it as an input and read its ``.value`` (zeros, ``init(shape,
    dtype)`` or the array ``init``) on each call."""
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
    """x* = f(x*) by iteration from ``x0`` (until the largest change is at
    most ``tol``). Values ``f`` closes over are its parameters: gradients
    with respect to them come from the implicit function theorem, not from
    unrolling the iterations."""
    return _solve("fixed_point", f, x0, tol, max_iter)


def solve(f, x0, tol=1e-6, max_iter=100):
    """A root of f(x) = 0 (Newton's method from ``x0``); differentiated
    implicitly with respect to the values ``f`` closes over."""
    return _solve("solve", f, x0, tol, max_iter)


def kv_cache_create(shape, dtype="f32", window=None):
    """A cache [batch, heads, max_length, head_dim] local to the traced
    function (pass a ts.KVCache to keep one across calls)."""
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
    """Appends keys and values [batch, heads, T, head_dim] to the cache."""
    ctx = context_of(cache, keys, values)
    _cache_effect("kv_cache_append", cache, _t(keys, ctx=ctx),
                  _t(values, ctx=ctx))


def kv_cache_read(cache):
    """(keys, values, length): keys and values at full capacity (zero at
    and past ``length``), and the number of valid positions."""
    from ._tracing import _raise
    ctx = context_of(cache)
    ctx.module.set_location(*_user_location())
    import tessera._core as core
    out = core.op.kv_cache_read(_t(cache, ctx=ctx))
    if len(out) != 3:
        _raise(ctx.module)
    return tuple(Tracer(o, ctx) for o in out)


def kv_cache_prune(cache, keep):
    """Keeps the last ``keep`` positions."""
    _cache_effect("kv_cache_prune", cache, int(keep))


def cond(pred, true_fn, false_fn, *operands):
    """``true_fn(*operands)`` if the boolean scalar ``pred`` holds, else
    ``false_fn(*operands)`` (tgraph.cond; only the chosen branch runs). The
    branches return pytrees of the same structure."""
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
    tgraph.while). A known ``trip_count`` lets reverse mode store the
    iterations instead of recomputing them."""
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


__all__ += ["tensor", "fixed_point", "solve", "cond", "while_loop",
            "kv_cache_create", "kv_cache_append", "kv_cache_read",
            "kv_cache_prune"]

del _doc
__all__.append("TesseraError")


# -- outside a trace --------------------------------------------------------
# An op called on arrays outside any trace runs eagerly: it is compiled on its
# own (once per op, options and signature, then cached like any jit
# function) and returns arrays.

import functools as _functools  # noqa: E402
import inspect as _inspect  # noqa: E402

from . import tree as _tree  # noqa: E402
from ._tracing import current_context as _current_context  # noqa: E402

_EAGER = {}


def _freeze(x):
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    return x if isinstance(x, (str, int, float, bool, type(None))) else id(x)


def _eager(fn):
    params = _inspect.signature(fn).parameters
    renamed = {old: new for old, new in _keywords.RENAMED.items()
               if old not in params and new in params}
    collective = "axis_name" in params
    qualname = f"op.{fn.__name__}"

    @_functools.wraps(fn)
    def run(*args, **kwargs):
        if kwargs:
            _keywords._check(qualname, kwargs, renamed, collective)
        if _current_context() is not None or any(
                isinstance(l, Tracer) for l in _tree.leaves((args, kwargs))):
            return fn(*args, **kwargs)
        from ._jit import jit
        key = (fn.__name__, _freeze(kwargs))
        compiled = _EAGER.get(key)
        if compiled is None:
            compiled = jit(lambda *a: fn(*a, **kwargs), name=fn.__name__)
            _EAGER[key] = compiled
        return compiled(*args)
    return run


for _name in __all__:
    if _name not in ("TesseraError", "tensor"):
        globals()[_name] = _eager(globals()[_name])
maximum, minimum, where = globals()["max"], globals()["min"], globals()["select"]
del _name
