"""The spec 004 surface: modules, parameters, and derivatives of values.

    from tessera import op, graph

    W1 = op.tensor((784, 256), dtype="fp32", init=...)     # a parameter

    @graph.module("mlp")
    def mlp(x):
        return op.relu(op.matmul(x, W1))

    @graph.training_step(module="mlp_train")
    def step(x, y):
        loss = op.cross_entropy(mlp(x), y)
        grads = graph.backward(loss, wrt=[W1])
        return grads, {"loss": loss}

Parameters used while tracing become inputs of the compiled function that
read their current ``.value`` on every call. ``graph.backward`` takes the
gradient of a value already computed with respect to others: the ops
between them are cut out of the trace into a function (Module.outline),
which autodiff differentiates.
"""

from __future__ import annotations

import numpy as np

from . import _autodiff
from ._dtypes import as_dtype
from ._jit import jit
from ._tracing import TesseraError, Tracer, context_of, tensor_of


class Parameter:
    """A named tensor the traced functions that use it take as an input;
    ``value`` is the array passed on each call."""

    _count = 0

    def __init__(self, shape, dtype="f32", name=None, init=None):
        self.dtype = as_dtype(dtype)
        if any(not isinstance(d, (int, np.integer)) or d < 0 for d in shape):
            raise TesseraError(f"a parameter's shape must be sizes >= 0, got "
                               f"{tuple(shape)}")
        self.shape = tuple(int(d) for d in shape)
        Parameter._count += 1
        self.name = name or f"param{Parameter._count}"
        if init is None:
            value = np.zeros(self.shape, self.dtype.numpy)
        elif callable(init):
            value = init(self.shape, self.dtype.numpy)
        else:
            value = init
        self.value = value

    @property
    def value(self):
        return self._value

    @value.setter
    def value(self, v):
        v = np.ascontiguousarray(np.asarray(v, self.dtype.numpy))
        if v.shape != self.shape:
            raise TesseraError(f"parameter {self.name} has shape {self.shape}, "
                               f"got a value of shape {v.shape}")
        self._value = v

    def __repr__(self):
        return f"Parameter({self.name}, {self.dtype.name}{list(self.shape)})"

    # In a trace a parameter behaves as the tensor it stands for.
    def _traced(self):
        ctx = context_of()
        if ctx is None:
            raise TesseraError(f"parameter {self.name} is used outside a "
                               f"trace; use its .value")
        return ctx.parameter(self)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._traced(), name)

    def __add__(self, o): return self._traced() + o
    def __radd__(self, o): return o + self._traced()
    def __sub__(self, o): return self._traced() - o
    def __rsub__(self, o): return o - self._traced()
    def __mul__(self, o): return self._traced() * o
    def __rmul__(self, o): return o * self._traced()
    def __truediv__(self, o): return self._traced() / o
    def __matmul__(self, o): return self._traced() @ o
    def __rmatmul__(self, o): return o @ self._traced()
    def __neg__(self): return -self._traced()
    def __getitem__(self, i): return self._traced()[i]


def _tracer(x, ctx):
    if isinstance(x, Tracer):
        return x
    if isinstance(x, Parameter):
        return ctx.parameter(x)
    raise TesseraError(f"expected a traced tensor or a parameter, got "
                       f"{type(x).__name__}")


def module(name=None):
    """A compiled module: ``@graph.module("mlp")``."""
    def decorate(fn):
        return jit(fn, name=name or fn.__name__)
    return decorate


def training_step(module=None):
    """A compiled training step: ``@graph.training_step(module="m_train")``;
    it typically returns ``(graph.backward(loss, wrt=...), metrics)``."""
    def decorate(fn):
        return jit(fn, name=module or fn.__name__)
    return decorate


def backward(loss, wrt):
    """The gradient of the scalar ``loss`` (a value of the running trace)
    with respect to ``wrt`` (a tensor or parameter, or a list of them)."""
    single = not isinstance(wrt, (list, tuple))
    items = [wrt] if single else list(wrt)
    if not isinstance(loss, Tracer):
        raise TesseraError("graph.backward needs the loss as a traced value "
                           "(call it inside a module or training step)")
    ctx = loss._ctx
    ts_wrt = [_tracer(w, ctx) for w in items]
    m = ctx.module
    fn = m.outline([loss._t], [w._t for w in ts_wrt], "backward")
    d = m.derive(fn, "grad", list(range(len(ts_wrt))))
    grads = [Tracer(g, ctx) for g in m.call(d, [w._t for w in ts_wrt])]
    return grads[0] if single else grads


def forward(f, args, tangents):
    """(f(*args), J @ tangents): forward mode, spec 004's graph.forward."""
    return _autodiff.jvp(f, tuple(args), tuple(tangents))


def jvp(u, wrt, tangent=None):
    """The directional derivative of the value ``u`` with respect to ``wrt``
    along ``tangent`` (ones when omitted)."""
    if not isinstance(u, Tracer):
        raise TesseraError("graph.jvp takes a traced value; for a function "
                           "use ts.jvp")
    ctx = u._ctx
    x = _tracer(wrt, ctx)
    t = x * 0.0 + 1.0 if tangent is None else _tracer_or_const(tangent, ctx)
    m = ctx.module
    fn = m.outline([u._t], [x._t], "jvp_slice")
    d = m.derive(fn, "jvp", [0])
    return Tracer(m.call(d, [x._t, t._t])[1], ctx)


def _tracer_or_const(v, ctx):
    return v if isinstance(v, Tracer) else Tracer(tensor_of(v, ctx=ctx), ctx)


def hvp(f, wrt, dir, inputs=()):
    """Hessian-vector product. ``f`` a function: the Hessian of
    ``f(wrt, *inputs)`` with respect to ``wrt`` times ``dir`` (spec 004
    §13.3); ``f`` a traced scalar value: its Hessian with respect to the
    value ``wrt`` times ``dir``."""
    if callable(f):
        (h,) = _autodiff.hvp(lambda w: f(w, *inputs), (wrt,), (dir,))
        return h
    ctx = f._ctx
    x = _tracer(wrt, ctx)
    v = _tracer_or_const(dir, ctx)
    m = ctx.module
    fn = m.outline([f._t], [x._t], "hvp_slice")
    d = m.derive(fn, "hvp", [0])
    return Tracer(m.call(d, [x._t, v._t])[0], ctx)
