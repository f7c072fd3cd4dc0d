"""One function per Graph IR op, under the op's own name (``op.matmul``,
``op.tanh``, ``op.reduce_sum``, ``op.softmax``, ...).

They work on traced tensors inside ``ts.jit`` and the transforms; arrays and
Python numbers passed beside a traced tensor become constants (numbers are
weak: they take the tensor's dtype when their kind fits). Shapes are
checked as each op is added, by the compiler's own shape functions, and a
mismatch raises ``TesseraError`` naming the op, the dims and your line.
Called on arrays outside a trace, an op runs eagerly: it is compiled once
per signature and cached. Array axes are ``axis`` everywhere, mesh axes
of collectives ``axis_name``.

>>> def layer(x: ts.Tensor["B", 2, ts.f64], w):
...     return op.softmax(op.tanh(x @ w), axis=-1)
>>> ts.jit(layer)(np.zeros((3, 2)), np.eye(2)).shape
(3, 2)
"""

from __future__ import annotations

import numpy as np

from . import _keywords
from ._dtypes import as_dtype
from ._tracing import (Tracer, TesseraError, _apply, _binary,
                       _checked_operands as _operands, call_core,
                       operand_list,
                       constant as _constant, context_of, policy_of,
                       tensor_of)

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _example(call, result):
    return f"\n\n>>> {call}\n{result}\n"


def _unary(name, doc, call, result):
    def fn(x):
        return _apply(name, x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``{doc}``, elementwise; the result has ``x``'s shape and "
                  f"dtype." + _example(call, result))
    globals()[name] = fn
    __all__.append(name)


# name, formula, example call, its result
for _args in [
        ("neg", "-x", "op.neg(np.array([1.0, -2.0]))", "array([-1.,  2.])"),
        ("abs", "|x|", "op.abs(np.array([-1.5, 2.0]))", "array([1.5, 2. ])"),
        ("exp", "e^x", "np.round(op.exp(np.array([0.0, 1.0])), 4)",
         "array([1.    , 2.7183])"),
        ("log", "ln(x)", "np.round(op.log(np.array([1.0, np.e])), 4)",
         "array([0., 1.])"),
        ("log1p", "ln(1 + x)", "np.round(op.log1p(np.array([0.0, 1.0])), 4)",
         "array([0.    , 0.6931])"),
        ("sin", "sin(x)", "np.round(op.sin(np.array([0.0, np.pi / 2])), 4)",
         "array([0., 1.])"),
        ("cos", "cos(x)", "np.round(op.cos(np.array([0.0, np.pi])), 4)",
         "array([ 1., -1.])"),
        ("tanh", "tanh(x)", "np.round(op.tanh(np.array([0.0, 1.0])), 4)",
         "array([0.    , 0.7616])"),
        ("erf", "erf(x)", "np.round(op.erf(np.array([0.0, 1.0])), 4)",
         "array([0.    , 0.8427])"),
        ("sigmoid", "1 / (1 + e^-x)", "op.sigmoid(np.array([0.0]))",
         "array([0.5])"),
        ("relu", "max(x, 0)", "op.relu(np.array([-1.0, 2.0]))",
         "array([0., 2.])"),
        ("silu", "x * sigmoid(x)",
         "np.round(op.silu(np.array([0.0, 1.0])), 4)",
         "array([0.    , 0.7311])"),
        ("sqrt", "sqrt(x)", "op.sqrt(np.array([4.0, 9.0]))",
         "array([2., 3.])"),
        ("rsqrt", "1 / sqrt(x)", "op.rsqrt(np.array([4.0, 0.25]))",
         "array([0.5, 2. ])"),
        ("reciprocal", "1 / x", "op.reciprocal(np.array([2.0, -4.0]))",
         "array([ 0.5 , -0.25])"),
        ("square", "x * x", "op.square(np.array([3, -2]))",
         "array([9, 4]...)"),
        ("floor", "floor(x)", "op.floor(np.array([1.5, -1.5]))",
         "array([ 1., -2.])"),
        ("sign", "sign(x)", "op.sign(np.array([-3.0, 0.0, 2.0]))",
         "array([-1.,  0.,  1.])")]:
    _unary(*_args)


@_export
def stop_gradient(x):
    """``x``, seen by autodiff as a constant: no derivative flows through it
    (``ts.stop_gradient`` applies it to every leaf of a pytree).

    >>> ts.grad(lambda x: op.reduce_sum(x * op.stop_gradient(x)))(
    ...     np.array([3.0]))
    array([3.])
    """
    return _apply("stop_gradient", x)


def _binary_op(name, doc, call, result):
    def fn(lhs, rhs):
        return _binary(name, lhs, rhs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``{doc}``, elementwise with NumPy broadcasting. Both "
                  "operands have one dtype; a Python number takes the other "
                  "operand's (see docs/FRONTENDS.md)."
                  + (" Integers divide rounding toward zero (Python's ``/`` "
                     "on traced tensors is true division: integers divide "
                     "as f32)." if name == "div" else "")
                  + _example(call, result))
    globals()[name] = fn
    __all__.append(name)


for _args in [
        ("add", "lhs + rhs", "op.add(np.array([1.0, 2.0]), 10.0)",
         "array([11., 12.])"),
        ("sub", "lhs - rhs",
         "op.sub(np.array([[1.0], [2.0]]), np.array([1.0, 2.0]))",
         "array([[ 0., -1.],\n       [ 1.,  0.]])"),
        ("mul", "lhs * rhs", "op.mul(np.array([1, 2, 3]), 2)",
         "array([2, 4, 6]...)"),
        ("div", "lhs / rhs",
         "op.div(np.array([7, -7]), 2), op.div(np.array([7.0, -7.0]), 2.0)",
         "(array([ 3, -3]...), array([ 3.5, -3.5]))"),
        ("pow", "lhs ** rhs", "op.pow(np.array([2.0, 3.0]), 2.0)",
         "array([4., 9.])"),
        ("max", "max(lhs, rhs)", "op.max(np.array([1.0, 5.0]), 3.0)",
         "array([3., 5.])"),
        ("min", "min(lhs, rhs)", "op.min(np.array([1.0, 5.0]), 3.0)",
         "array([1., 3.])")]:
    _binary_op(*_args)

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
    """A tensor of ``shape`` filled with ``value``, of ``dtype`` (f32 by
    default). Symbolic dims (names such as ``"B"``) must be dims of the
    traced function's arguments.

    >>> op.full((2, 3), 1.5)
    array([[1.5, 1.5, 1.5],
           [1.5, 1.5, 1.5]], dtype=float32)
    """
    return call_core("full", context_of(), float(value), list(shape),
                     as_dtype(dtype).name)


@_export
def zeros(shape, dtype="f32"):
    """A tensor of ``shape`` filled with zeros (``full(shape, 0, dtype)``).

    >>> op.zeros((2,), "i32")
    array([0, 0], dtype=int32)
    """
    return full(shape, 0.0, dtype)


@_export
def ones(shape, dtype="f32"):
    """A tensor of ``shape`` filled with ones (``full(shape, 1, dtype)``).

    >>> op.ones((2, 2))
    array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    return full(shape, 1.0, dtype)


@_export
def zeros_like(x):
    """Zeros of ``x``'s shape and dtype.

    >>> op.zeros_like(np.array([[1.5, 2.0]]))
    array([[0., 0.]])
    """
    return _call("zeros_like", x)


@_export
def ones_like(x):
    """Ones of ``x``'s shape and dtype.

    >>> op.ones_like(np.array([4, 5]))
    array([1, 1]...)
    """
    return _call("ones_like", x)


@_export
def iota(shape, axis, dtype="i64"):
    """A tensor of ``shape`` whose elements are their index along ``axis``
    (an int; negative counts from the last), of ``dtype`` (i64 by
    default).

    >>> op.iota((2, 3), axis=1)
    array([[0, 1, 2],
           [0, 1, 2]]...)
    """
    return call_core("iota", context_of(), list(shape),
                     _keywords.one_axis(axis, "op.iota"),
                     as_dtype(dtype).name)


@_export
def constant(value):
    """The array ``value`` as a constant of the traced function, with the
    array's dtype (arrays beside a traced tensor become constants by
    themselves; this names one explicitly).

    >>> ts.jit(lambda x: x + op.constant(np.array([1.0, 2.0])))(np.zeros(2))
    array([1., 2.])
    """
    return _constant(value, context_of())


@_export
def gelu(x, approximate=False):
    """The GELU activation ``x * Phi(x)`` (Phi the standard normal CDF,
    through ``erf``); ``approximate=True`` uses the tanh form
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    >>> np.round(op.gelu(np.array([0.0, 1.0])), 4)
    array([0.    , 0.8413])
    >>> np.round(op.gelu(np.array([0.0, 1.0]), approximate=True), 4)
    array([0.    , 0.8412])
    """
    return _call("gelu", x, approximate=approximate)


@_export
def compare(lhs, rhs, direction):
    """Elementwise ``lhs <direction> rhs`` as booleans, ``direction`` one of
    eq, ne, lt, le, gt, ge (NumPy broadcasting; a Python number is compared
    in the tensor's dtype, or in f32 with an integer tensor and a float
    number). Traced tensors also compare with ``<``, ``==``, ...

    >>> op.compare(np.array([1, 2, 3]), 2, "lt")
    array([ True, False, False])
    """
    ctx = context_of(lhs, rhs)
    return call_core("compare", ctx, *_operands(lhs, rhs, ctx), direction)


@_export
def select(cond, on_true, on_false):
    """``on_true`` where the boolean ``cond`` holds, else ``on_false``
    (NumPy's ``where``; ``op.where`` is the same function). The three
    broadcast together.

    >>> op.select(np.array([True, False]), np.array([1.0, 2.0]), 0.0)
    array([1., 0.])
    """
    ctx = context_of(cond, on_true, on_false)
    return call_core("select", ctx, _t(cond, ctx=ctx),
                     *_operands(on_true, on_false, ctx),
                     policy=policy_of(on_true, on_false))


where = select


@_export
def cast(x, dtype):
    """``x`` converted to ``dtype``: floats round to nearest even, floats to
    integers truncate toward zero, narrowing integer casts saturate
    (``.astype`` on traced tensors is the same).

    >>> op.cast(np.array([1.7, -1.7]), "i32")
    array([ 1, -1], dtype=int32)
    """
    return _call("cast", x, dtype=as_dtype(dtype).name)


# -- Contractions -----------------------------------------------------------

@_export
def matmul(lhs, rhs, transpose_lhs=False, transpose_rhs=False, accum=None):
    """The matrix product ``[..., M, K] @ [..., K, N] -> [..., M, N]``, with
    the batch dims broadcast. As in NumPy, a 1-D ``lhs`` is a row
    (``[K] @ [K, N] -> [N]``) and a 1-D ``rhs`` a column
    (``[M, K] @ [K] -> [M]``). ``transpose_lhs`` and ``transpose_rhs`` take
    an operand's last two dims swapped. ``accum`` (a dtype) is the
    accumulation type; it defaults to the operands' policy
    (``ts.Tensor[..., ts.bf16 @ ts.accum(ts.f32)]``), else their dtype.

    >>> op.matmul(np.array([[1.0, 2.0]]), np.array([[3.0], [4.0]]))
    array([[11.]])
    >>> op.matmul(np.ones((5, 2, 3)), np.ones(3)).shape
    (5, 2)
    """
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
    """``[B, M, K] @ [B, K, N] -> [B, M, N]`` with equal batch dims (no
    broadcasting); ``accum`` as in ``matmul``.

    >>> op.batch_matmul(np.ones((2, 1, 3)), np.ones((2, 3, 1))).ravel()
    array([3., 3.])
    """
    return _call("batch_matmul", lhs, rhs,
                 accum=_policy_accum(accum, lhs, rhs))


@_export
def dot_general(lhs, rhs, lhs_batch_axes, rhs_batch_axes, lhs_contract_axes,
                rhs_contract_axes):
    """Contracts ``lhs_contract_axes`` of ``lhs`` with ``rhs_contract_axes``
    of ``rhs``, pairing the batch axes; the result is ``[batch..., lhs
    free..., rhs free...]`` (StableHLO's dot_general). Each argument is a
    list of ints.

    >>> a, b = np.ones((2, 3, 4)), np.ones((2, 4, 5))
    >>> op.dot_general(a, b, [0], [0], [2], [1]).shape
    (2, 3, 5)
    """
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
    """2-D convolution (cross-correlation, as in every DL framework):
    ``input`` NCHW and ``filter`` OIHW, or NHWC and HWIO with
    ``channels_last``. ``strides`` and ``dilation`` are (height, width),
    ``padding`` (top, bottom, left, right) zeros; ``groups`` splits the
    channels (the filter has C / groups input channels).

    >>> op.conv2d(np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2)))
    array([[[[4., 4.],
             [4., 4.]]]])
    >>> op.conv2d(np.ones((1, 4, 4, 1)), np.ones((3, 3, 1, 1)),
    ...           padding=(1, 1, 1, 1), channels_last=True).shape
    (1, 4, 4, 1)
    """
    return _call("conv2d", input, filter, strides=list(strides),
                 padding=list(padding), dilation=list(dilation),
                 groups=groups, channels_last=channels_last)


@_export
def attention(query, key, value, causal=False, scale=None):
    """``softmax(q k^T * scale) v`` over the last two dims of ``query``
    ``[..., S, D]``, ``key`` and ``value`` ``[..., T, D]``; ``scale``
    defaults to ``1/sqrt(D)`` (which needs a static ``D``). With ``causal``
    query i sees the keys up to ``i + T - S`` (the last query sees all).
    No keys (``T = 0``) gives 0, the sum over nothing.

    >>> q = k = np.ones((1, 3, 2))
    >>> v = np.arange(6.0).reshape(1, 3, 2)
    >>> op.attention(q, k, v, causal=True)[0, 0]
    array([0., 1.])
    """
    return _call("attention", query, key, value, causal=causal, scale=scale)


# -- Reductions and normalizations ------------------------------------------

_REDUCE_EXAMPLES = {
    "reduce_sum": ("x = np.array([[1, 2], [3, 4]])\n>>> op.reduce_sum(x, "
                   "axis=0)", "array([4, 6]...)"),
    "reduce_mean": ("op.reduce_mean(np.array([[1.0, 2.0], [3.0, 5.0]]), "
                    "axis=1)", "array([1.5, 4. ])"),
    "reduce_prod": ("op.reduce_prod(np.array([1.0, 2.0, 3.0]))",
                    "array(6.)"),
    "reduce_max": ("op.reduce_max(np.array([[1, 5], [7, 2]]), axis=-1, "
                   "keepdims=True)", "array([[5],\n       [7]]...)"),
    "reduce_min": ("op.reduce_min(np.array([[1, 5], [7, 2]]), axis=(0, 1))",
                   "array(1...)"),
}
_EMPTY = {"reduce_sum": "is 0", "reduce_mean": "is NaN",
          "reduce_prod": "is 1",
          "reduce_max": "is an error naming the op (as NumPy raises)",
          "reduce_min": "is an error naming the op (as NumPy raises)"}


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
                  + ("; ``stable=True`` compensates (Kahan)" if stable_arg
                     else "")
                  + f". The {what} of nothing {_EMPTY[name]}."
                  + _example(*_REDUCE_EXAMPLES[name]))
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
                  "(an int; a NaN counts as the extreme, as in NumPy), as "
                  "i64; ``keepdims`` keeps the axis with size 1. An empty "
                  "axis is an error." + _example(*{
                      "argmax": ("op.argmax(np.array([[1.0, 3.0, 3.0], "
                                 "[2.0, 0.0, 1.0]]))", "array([1, 0]...)"),
                      "argmin": ("op.argmin(np.array([[3, 1], [0, 4]]), "
                                 "axis=0)", "array([1, 0]...)")}[name]))
    globals()[name] = fn
    __all__.append(name)


for _name in ["argmax", "argmin"]:
    _arg_reduce(_name)


def _along(name, keep, doc, call, result):
    if keep:
        def fn(x, axis=-1, keepdims=False):
            return _call(name, x, axis=_keywords.axes(axis, f"op.{name}"),
                         keepdims=keepdims)
    else:
        def fn(x, axis=-1):
            return _call(name, x, axis=_keywords.axes(axis, f"op.{name}"))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (doc + " over ``axis`` (an int, or a tuple of ints taken "
                  "together; None for every axis)"
                  + ("; ``keepdims`` keeps the axes with size 1." if keep
                     else ".") + _example(call, result))
    globals()[name] = fn
    __all__.append(name)


for _args in [
        ("logsumexp", True, "``log(sum(exp(x)))``, computed stably (the "
         "maximum subtracted first; -inf over nothing),",
         "np.round(op.logsumexp(np.array([[0.0, 0.0], [1.0, 1.0]])), 4)",
         "array([0.6931, 1.6931])"),
        ("logsumexp_safe", True, "``log(sum(exp(x)))``, -inf (not NaN) "
         "where every entry is -inf, with the statistics in f32,",
         "op.logsumexp_safe(np.array([[-np.inf, -np.inf], [0.0, 0.0]]))",
         "array([      -inf, 0.69314718])"),
        ("softmax", False, "``exp(x) / sum(exp(x))``, computed stably,",
         "op.softmax(np.zeros((2, 2)), axis=(0, 1))",
         "array([[0.25, 0.25],\n       [0.25, 0.25]])"),
        ("log_softmax", False, "``x - logsumexp(x)``",
         "np.round(op.log_softmax(np.array([0.0, 0.0])), 4)",
         "array([-0.6931, -0.6931])"),
        ("softmax_safe", False, "softmax, 0 (not NaN) where every entry is "
         "-inf (a fully masked row),",
         "op.softmax_safe(np.array([[-np.inf, -np.inf], [0.0, 0.0]]))",
         "array([[0. , 0. ],\n       [0.5, 0.5]])")]:
    _along(*_args)


def _norm_axis(axis, name):
    return _keywords.axes(axis, f"op.{name}")


@_export
def layernorm(x, scale=None, bias=None, axis=-1, epsilon=1e-5):
    """Layer normalization ``(x - mean) / sqrt(var + epsilon) * scale +
    bias`` over ``axis`` (an int or a tuple of ints; the last axis by
    default); ``scale`` and ``bias`` (optional) have the shape of those
    axes, in axis order.

    >>> np.round(op.layernorm(np.array([[1.0, 3.0]])), 4)
    array([[-1.,  1.]])
    """
    return _call("layernorm", x, scale, bias,
                 axis=_norm_axis(axis, "layernorm"), epsilon=epsilon)


@_export
def layernorm_safe(x, scale=None, bias=None, axis=-1, epsilon=1e-5):
    """``layernorm`` with its statistics computed in f32 (whatever the
    storage type) and the variance kept >= 0.

    >>> x, scale, bias = np.array([[1.0, 3.0]]), np.array([2.0, 2.0]), 1.0
    >>> np.round(op.layernorm_safe(x, scale, np.array([bias, bias])), 4)
    array([[-1.,  3.]])
    """
    return _call("layernorm_safe", x, scale, bias,
                 axis=_norm_axis(axis, "layernorm_safe"), epsilon=epsilon)


@_export
def rmsnorm(x, scale=None, axis=-1, epsilon=1e-5):
    """RMS normalization ``x / sqrt(mean(x^2) + epsilon) * scale`` over
    ``axis`` (an int or a tuple of ints; the last axis by default);
    ``scale`` (optional) has the shape of those axes.

    >>> np.round(op.rmsnorm(np.array([[3.0, 4.0]])), 4)
    array([[0.8485, 1.1314]])
    """
    return _call("rmsnorm", x, scale, axis=_norm_axis(axis, "rmsnorm"),
                 epsilon=epsilon)


@_export
def rmsnorm_safe(x, scale=None, axis=-1, epsilon=1e-5):
    """``rmsnorm`` with its statistics computed in f32.

    >>> np.round(op.rmsnorm_safe(np.array([[3.0, 4.0]]), np.array([1.0, 0.5])),
    ...          4)
    array([[0.8485, 0.5657]])
    """
    return _call("rmsnorm_safe", x, scale,
                 axis=_norm_axis(axis, "rmsnorm_safe"), epsilon=epsilon)


@_export
def cross_entropy(logits, labels, reduction="mean"):
    """Softmax cross-entropy ``-sum_c labels_c * log_softmax(logits)_c`` of
    ``logits`` ``[..., C]`` with integer class labels ``[...]`` or a
    distribution ``[..., C]``; ``reduction`` is ``"mean"`` (over the
    examples), ``"sum"`` or ``"none"`` (per-example losses). No classes
    (``C = 0``) is an error; the mean over no examples is NaN.

    >>> loss = op.cross_entropy(np.array([[0.0, 0.0]]), np.array([1]))
    >>> round(float(loss), 4)
    0.6931
    """
    return _call("cross_entropy", logits, labels, reduction=reduction)


# -- Layout -----------------------------------------------------------------

@_export
def transpose(x, permutation):
    """``x`` with its axes permuted: result axis i is ``x``'s axis
    ``permutation[i]`` (``.T`` on traced tensors reverses them all).

    >>> op.transpose(np.arange(6).reshape(2, 3), [1, 0])
    array([[0, 3],
           [1, 4],
           [2, 5]]...)
    """
    return _call("transpose", x, permutation=list(permutation))


@_export
def reshape(x, shape):
    """``x`` with the row-major elements laid out in ``shape`` (ints or
    symbol names); one dim may be -1, solved from the element count.

    >>> op.reshape(np.arange(6), [2, -1])
    array([[0, 1, 2],
           [3, 4, 5]]...)
    """
    return _call("reshape", x, shape=list(shape))


@_export
def broadcast_in_dim(x, shape, broadcast_axes):
    """``x`` placed in a tensor of ``shape``: axis i of ``x`` becomes axis
    ``broadcast_axes[i]`` of the result (of the same size, or of size 1 and
    broadcast); the other result axes repeat it (StableHLO's
    broadcast_in_dim).

    >>> op.broadcast_in_dim(np.array([1, 2]), (3, 2), [1])
    array([[1, 2],
           [1, 2],
           [1, 2]]...)
    """
    return _call("broadcast_in_dim", x, shape=list(shape),
                 broadcast_axes=_axis_list(broadcast_axes,
                                           "broadcast_in_dim"))


@_export
def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` with NumPy's rules (trailing axes
    aligned, size-1 axes repeated).

    >>> op.broadcast_to(np.array([1, 2]), (2, 2))
    array([[1, 2],
           [1, 2]]...)
    """
    return _call("broadcast_to", x, shape=list(shape))


@_export
def slice(x, start, limit, stride=None):
    """Elements ``start[d] <= i < limit[d]`` of each axis d, every
    ``stride[d]``-th (1 by default): ``x[start:limit:stride]`` per axis.
    Bounds may be symbol expressions; those that depend on sizes are checked
    when the function runs. (Traced tensors also slice with ``x[1:, ::2]``.)

    >>> op.slice(np.arange(10), [1], [8], [3])
    array([1, 4, 7]...)
    """
    return _call("slice", x, start=list(start), limit=list(limit),
                 stride=list(stride or []))


@_export
def concat(inputs, axis=0):
    """The ``inputs`` (tensors of one dtype, equal but for ``axis``) joined
    along ``axis`` (an int). Python numbers and lists among them are weak:
    they take the tensors' dtype.

    >>> op.concat([np.array([1, 2]), np.array([3])])
    array([1, 2, 3]...)
    """
    ctx = context_of(*inputs)
    return call_core("concat", ctx, operand_list(list(inputs), ctx),
                     _keywords.one_axis(axis, "op.concat"))


@_export
def pad(x, low, high, value=0.0, interior=None):
    """``x`` with ``low[d]`` and ``high[d]`` elements of ``value`` added
    before and after axis d (and ``interior[d]`` between its elements).

    >>> op.pad(np.array([1, 2]), [1], [2], value=9)
    array([9, 1, 2, 9, 9]...)
    """
    return _call("pad", x, low=list(low), high=list(high), value=float(value),
                 interior=list(interior or []))


@_export
def dynamic_slice(x, starts, sizes):
    """A slice of static ``sizes`` at run-time ``starts``: one 0-d integer
    per axis, clamped to ``[0, dim - size]`` so the slice stays inside ``x``
    (StableHLO's dynamic_slice). A size larger than its dim is an error.

    >>> op.dynamic_slice(np.arange(5), [np.array(1)], [2])
    array([1, 2]...)
    >>> op.dynamic_slice(np.arange(5), [np.array(4)], [2])  # clamped to 3
    array([3, 4]...)
    """
    ctx = context_of(x, *starts)
    return call_core("dynamic_slice", ctx, _t(x, ctx=ctx),
                     [_t(s, ctx=ctx) for s in starts], list(sizes),
                     policy=policy_of(x))


@_export
def dim_size(x, axis, dtype="i64"):
    """The size of axis ``axis`` of ``x`` as a 0-d tensor of ``dtype`` (i64
    by default); a symbolic size is read when the function runs.

    >>> def length(x: ts.Tensor["B"]):
    ...     return op.dim_size(x, 0)
    >>> ts.jit(length)(np.zeros(7))
    array(7...)
    """
    return _call("dim_size", x, axis=_keywords.one_axis(axis, "op.dim_size"),
                 dtype=as_dtype(dtype).name)


# -- Collectives (SPMD: every device of mesh axis ``axis_name`` runs the
# same function; a single process is a group of one) ----------------------

@_export
def all_reduce(x, reduction="sum", axis_name="", group_size=1):
    """The ``reduction`` (sum, prod, min, max, mean) of ``x`` over the
    ``group_size`` devices of mesh axis ``axis_name``, in a fixed order.
    Compiled for one device, the group has one member and the result is
    ``x``.

    >>> op.all_reduce(np.array([1.0, 2.0]), axis_name="data")
    array([1., 2.])
    """
    return _call("all_reduce", x, reduction=reduction, axis_name=axis_name,
                 group_size=group_size)


@_export
def all_gather(x, axis, axis_name="", group_size=1):
    """The ``x`` of every device of mesh axis ``axis_name`` concatenated
    along array axis ``axis``, in device order.

    >>> op.all_gather(np.array([1.0, 2.0]), 0, axis_name="data")
    array([1., 2.])
    """
    return _call("all_gather", x, axis=_keywords.one_axis(axis, "op.all_gather"),
                 axis_name=axis_name, group_size=group_size)


@_export
def reduce_scatter(x, axis, reduction="sum", axis_name="", group_size=1):
    """The ``reduction`` over the devices of mesh axis ``axis_name``, each
    device keeping its slice along array axis ``axis`` (which
    ``group_size`` must divide).

    >>> op.reduce_scatter(np.array([1.0, 2.0]), 0, axis_name="data")
    array([1., 2.])
    """
    return _call("reduce_scatter", x,
                 axis=_keywords.one_axis(axis, "op.reduce_scatter"),
                 reduction=reduction, axis_name=axis_name,
                 group_size=group_size)


@_export
def all_to_all(x, split_axis, concat_axis, axis_name="", group_size=1):
    """Splits ``x`` along ``split_axis`` into one block per device of mesh
    axis ``axis_name`` and concatenates the blocks each device receives
    along ``concat_axis``.

    >>> op.all_to_all(np.ones((2, 3)), 0, 1, axis_name="data").shape
    (2, 3)
    """
    return _call("all_to_all", x,
                 split_axis=_keywords.one_axis(split_axis, "op.all_to_all"),
                 concat_axis=_keywords.one_axis(concat_axis, "op.all_to_all"),
                 axis_name=axis_name, group_size=group_size)


@_export
def permute(x, pairs, axis_name=""):
    """Device ``b`` of mesh axis ``axis_name`` receives what device ``a``
    has, for each pair ``(a, b)`` of ``pairs``; a device that is no target
    receives zeros.

    >>> op.permute(np.array([1.0, 2.0]), [(0, 0)], axis_name="pipe")
    array([1., 2.])
    """
    return _call("permute", x, pairs=[tuple(p) for p in pairs],
                 axis_name=axis_name)


@_export
def gather(x, indices, axis=0):
    """The slices of ``x`` along ``axis`` at the integer ``indices``
    (NumPy's ``take``); indices out of range are clamped into the axis, and
    indices into an empty axis are an error.

    >>> op.gather(np.array([10, 20, 30]), np.array([2, 0, 5]))
    array([30, 10, 30]...)
    """
    return _call("gather", x, indices,
                 axis=_keywords.one_axis(axis, "op.gather"))


@_export
def scatter_add(x, indices, updates, axis=0):
    """``x`` with ``updates`` (shaped like ``gather(x, indices, axis)``)
    added at ``indices`` along ``axis``; repeated indices accumulate in a
    fixed order, and indices out of range are dropped.

    >>> op.scatter_add(np.zeros(3), np.array([0, 2, 0]),
    ...                np.array([1.0, 2.0, 3.0]))
    array([4., 0., 2.])
    """
    return _call("scatter_add", x, indices, updates,
                 axis=_keywords.one_axis(axis, "op.scatter_add"))


@_export
def embedding(table, ids):
    """Rows of ``table`` ``[V, D]`` at the integer ``ids`` ``[...]``, giving
    ``[..., D]``; ids out of range are clamped.

    >>> op.embedding(np.arange(6.0).reshape(3, 2), np.array([2, 0]))
    array([[4., 5.],
           [0., 1.]])
    """
    return _call("embedding", table, ids)


@_export
def one_hot(ids, num_classes, dtype="f32"):
    """``ids`` ``[...]`` as one-hot vectors ``[..., num_classes]`` of
    ``dtype``; an id out of range gives zeros.

    >>> op.one_hot(np.array([0, 2]), 3)
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    return _call("one_hot", ids, num_classes=num_classes,
                 dtype=as_dtype(dtype).name)


# -- Parameters, implicit layers, KV caches and control flow (ops with
# regions or effects, in _op_control.py) -----------------------------------

from ._op_control import (cond, fixed_point, kv_cache_append,  # noqa: E402
                          kv_cache_create, kv_cache_prune, kv_cache_read,
                          solve, tensor, while_loop)

__all__ += ["tensor", "fixed_point", "solve", "cond", "while_loop",
            "kv_cache_create", "kv_cache_append", "kv_cache_read",
            "kv_cache_prune"]

del _args
__all__.append("TesseraError")


# -- outside a trace --------------------------------------------------------
# An op called on arrays outside any trace runs eagerly: it is compiled on its
# own (once per op, options and signature, then cached like any jit
# function) and returns arrays.

import functools as _functools  # noqa: E402

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
    check = _keywords.checker(fn, f"op.{fn.__name__}")

    @_functools.wraps(fn)
    def run(*args, **kwargs):
        if kwargs:
            check(kwargs)
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
    run.__module__ = __name__  # this module is the public home of every op
    return run


for _name in __all__:
    if _name not in ("TesseraError", "tensor"):
        globals()[_name] = _eager(globals()[_name])
maximum, minimum, where = globals()["max"], globals()["min"], globals()["select"]
del _name
