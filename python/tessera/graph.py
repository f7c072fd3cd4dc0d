"""The spec 004 surface: modules, parameters, and derivatives of values.

A model written against spec 004 reads::

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

__all__ = ["Parameter", "module", "training_step", "backward", "forward",
           "jvp", "hvp"]


class Parameter:
    """A named tensor that the traced functions using it take as an input;
    ``value`` is the array passed on each call.

    ``op.tensor(shape, dtype, name, init)`` makes one. ``shape`` is a
    sequence of sizes >= 0 and ``dtype`` a Tessera dtype or its name. The
    first value is zeros when ``init`` is None, ``init(shape,
    numpy_dtype)`` when ``init`` is callable, else the array ``init``
    (converted to the dtype). Without a ``name`` the parameter is named
    ``param`` followed by a counter. ``shape`` (a tuple), ``dtype`` and
    ``name`` are attributes.

    Inside a trace (a ``ts.jit`` function, a ``graph.module``, a
    ``graph.training_step``) a parameter stands for the tensor it holds:
    arithmetic, indexing, ``@`` and the traced tensor's methods (such as
    ``.sum()``) work on it, and the compiled function reads ``value`` on
    every call, so assigning a new value needs no recompilation. Outside a
    trace only ``value`` gives the data.

    Raises ``TesseraError`` for a negative or non-integer size, and, when
    the parameter is used as a tensor outside a trace, an error that says
    to use ``.value``.

    Example:

    >>> W = op.tensor((2, 2), "f32", name="W", init=np.eye(2))
    >>> W
    Parameter(W, f32[2, 2])
    >>> double = ts.jit(lambda x: x @ W)
    >>> double(np.array([[1.0, 2.0]], np.float32))
    array([[1., 2.]], dtype=float32)
    >>> W.value = 2 * np.eye(2)
    >>> double(np.array([[1.0, 2.0]], np.float32))
    array([[2., 4.]], dtype=float32)
    """

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
        """The parameter's current array (C-contiguous, of the parameter's
        dtype and shape).

        Assigning converts the new value to the dtype; raises
        ``TesseraError`` when its shape differs from the parameter's.

        Example:

        >>> b = graph.Parameter((3,), "f64", name="b")
        >>> b.value
        array([0., 0., 0.])
        >>> b.value = [1, 2, 3]
        >>> b.value, b.value.dtype
        (array([1., 2., 3.]), dtype('float64'))
        >>> b.value = np.zeros(2)
        Traceback (most recent call last):
            ...
        tessera.TesseraError: parameter b has shape (3,), got a value of ...
        """
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
    """A decorator that compiles a function as the module ``name``:
    ``@graph.module("mlp")``.

    It is ``ts.jit`` under the name ``name`` (the function's name when
    omitted): the result is a ``ts.jit`` function, compiled on the first
    call for each signature of its arguments, whose compiled function is
    named ``name``. Parameters the function uses become inputs of the
    compiled function.

    Example:

    >>> W = op.tensor((2, 3), "f32", name="W", init=np.ones((2, 3)))
    >>> @graph.module("linear")
    ... def f(x):
    ...     return op.matmul(x, W)
    >>> x = np.array([[1.0, 2.0]], np.float32)
    >>> f(x)
    array([[3., 3., 3.]], dtype=float32)
    >>> ir = f.lower(x).graph
    >>> "func.func @linear(" in ir, 'tgraph.name = "W"' in ir
    (True, True)
    """
    def decorate(fn):
        return jit(fn, name=name or fn.__name__)
    return decorate


def training_step(module=None):
    """A decorator that compiles a training step as the module ``module``:
    ``@graph.training_step(module="m_train")``.

    Like :func:`module`, it is ``ts.jit`` under that name (the function's
    name when omitted). A training step typically computes a loss, takes
    its gradients with :func:`backward` and returns
    ``(grads, metrics)``; it may return any pytree of values.

    Example:

    >>> W = op.tensor((2,), "f32", name="W", init=np.array([1.0, 2.0]))
    >>> @graph.training_step(module="fit_train")
    ... def step(x):
    ...     loss = op.reduce_sum(x * W * W)
    ...     return graph.backward(loss, wrt=[W]), {"loss": loss}
    >>> grads, metrics = step(np.array([3.0, 0.5], np.float32))
    >>> grads
    [array([6., 2.], dtype=float32)]
    >>> metrics
    {'loss': array(5., dtype=float32)}
    """
    def decorate(fn):
        return jit(fn, name=module or fn.__name__)
    return decorate


def backward(loss, wrt):
    """The gradient of the scalar ``loss`` (a value of the running trace)
    with respect to ``wrt`` (a tensor or parameter, or a list of them).

    ``wrt`` may be any value the loss was computed from: an input, a
    parameter or an intermediate value. The ops between ``wrt`` and
    ``loss`` are cut out of the trace into a function that autodiff
    differentiates. Returns one gradient, of the shape and dtype of
    ``wrt``, or a list of them when ``wrt`` is a list or tuple.

    Raises ``TesseraError`` when ``loss`` is not a traced value (called
    outside a trace) or an item of ``wrt`` is neither a traced tensor nor a
    parameter.

    Example:

    >>> @ts.jit
    ... def f(x):
    ...     h = x * 3.0
    ...     loss = op.reduce_sum(h * h)
    ...     return graph.backward(loss, wrt=h), graph.backward(loss, wrt=[x])
    >>> f(np.array([1.0, 2.0]))
    (array([ 6., 12.]), [array([18., 36.])])
    """
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
    """Forward-mode derivative, spec 004's ``graph.forward``: returns
    ``(f(*args), J @ tangents)``.

    ``f`` is a function of the arrays ``args``; ``tangents`` holds one
    tangent per argument, of its shape. The second result is the
    derivative of ``f`` at ``args`` in the direction ``tangents`` (the same
    as ``ts.jvp``).

    Example:

    >>> graph.forward(lambda x: x * x, (np.array([3.0]),), (np.array([1.0]),))
    (array([9.]), array([6.]))
    """
    return _autodiff.jvp(f, tuple(args), tuple(tangents))


def jvp(u, wrt, tangent=None):
    """The directional derivative of the traced value ``u`` with respect to
    ``wrt`` along ``tangent`` (ones when omitted).

    ``wrt`` is a traced tensor or parameter that ``u`` was computed from;
    ``tangent`` a tensor or array of its shape. With ones as the tangent
    and an elementwise ``u``, the result is du/dx at each point (as in a
    physics-informed loss). The result has the shape of ``u``.

    Raises ``TesseraError`` when ``u`` is not a traced value (for a
    function use ``ts.jvp``).

    Example:

    >>> @ts.jit
    ... def du(x):
    ...     u = x * x * x
    ...     half = np.full(2, 0.5)
    ...     return graph.jvp(u, wrt=x), graph.jvp(u, wrt=x, tangent=half)
    >>> du(np.array([1.0, 2.0]))
    (array([ 3., 12.]), array([1.5, 6. ]))
    """
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
    """A Hessian-vector product: the Hessian of a scalar with respect to
    ``wrt`` times the direction ``dir``.

    With ``f`` a function (spec 004 §13.3), the scalar is
    ``f(wrt, *inputs)``, and ``wrt``, ``dir`` and ``inputs`` are arrays
    (compiled and run at once) or traced tensors (the product becomes part
    of the running trace), as for ``ts.hvp``. With ``f`` a traced scalar
    value, ``wrt`` is a traced tensor or parameter that ``f`` was computed
    from and ``inputs`` is unused. ``dir`` has the shape of ``wrt``, and so
    does the result.

    Example:

    >>> loss = lambda w, a: op.reduce_sum(a * w * w)
    >>> graph.hvp(loss, np.array([1.0, 2.0]), np.array([1.0, 1.0]),
    ...           inputs=(np.array([3.0, 0.5]),))
    array([6., 1.])
    >>> @ts.jit
    ... def h(x):
    ...     y = op.reduce_sum(x * x * x)
    ...     return graph.hvp(y, wrt=x, dir=np.array([1.0, 1.0]))
    >>> h(np.array([1.0, 2.0]))
    array([ 6., 12.])
    """
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
