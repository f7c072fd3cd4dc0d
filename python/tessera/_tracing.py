"""Tracing Python functions into Graph IR (JAX style).

A trace runs the user's function on ``Tracer`` objects; every operation on
them adds a ``tgraph`` op to a function of a ``_core.Module`` through the C++
API, whose shape functions check it on the spot. Errors carry the user's
file and line: before each op the location of the first frame outside this
package is handed to the module.
"""

from __future__ import annotations

import threading

import numpy as np

from . import _core, _keywords
from ._dtypes import DType, as_dtype
from ._tile_ir import user_frame

TesseraError = _core.TesseraError

_local = threading.local()


class Context:
    """A module being traced into (one per jit compilation)."""

    def __init__(self):
        self.module = _core.Module()
        # graph.Parameter -> its Tracer (an input added on first use).
        self.params = {}
        self.param_order = []

    def parameter(self, p):
        """The traced input standing for parameter ``p``."""
        t = self.params.get(id(p))
        if t is None:
            spec = _core.TensorSpec(list(p.shape), p.dtype.name, p.name)
            t = Tracer(self.module.add_argument(spec), self)
            self.params[id(p)] = t
            self.param_order.append(p)
        return t

    def __enter__(self):
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _local.stack.pop()
        return False


def current_context():
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def user_location():
    """(file, line, column) of the innermost caller outside the package."""
    return user_frame()


def _raise(module):
    message = module.take_error() or "the op could not be added"
    raise TesseraError(message) from None


class Tracer:
    """A tensor of the function being traced (what a jit function's array
    arguments are while it is traced): use it like an array. It has
    ``.shape`` (ints and symbol names), ``.ndim``, ``.dtype`` and ``.T``;
    the operators ``+ - * / // ** @``, comparisons, indexing and slicing
    add Graph IR ops.

    >>> def f(x: ts.Tensor["B", 2, ts.f64]):
    ...     print(type(x).__name__, x.shape, x.dtype)
    ...     return (x * 2.0).T
    >>> ts.jit(f)(np.ones((3, 2))).shape
    Tracer ('B', 2) ts.f64
    (2, 3)
    """

    __slots__ = ("_t", "_ctx", "policy")
    __array_priority__ = 1000  # NumPy defers to our operators

    def __init__(self, tensor, ctx, policy=None):
        self._t = tensor
        self._ctx = ctx
        # The numeric policy of a Tensor[..., dtype @ accum(...)] argument,
        # carried to the results of ops on it (see op.matmul).
        self.policy = policy

    @property
    def shape(self):
        return self._t.shape

    @property
    def ndim(self) -> int:
        return self._t.rank

    @property
    def dtype(self) -> DType:
        return as_dtype(self._t.dtype)

    @property
    def T(self):
        from . import op
        return op.transpose(self, list(range(self.ndim))[::-1])

    def __repr__(self):
        return f"Tracer({self._t!r})"

    def __len__(self):
        d = self.shape[0]
        if isinstance(d, str):
            raise TypeError(f"len() of a tensor whose first dim is the "
                            f"symbol {d}")
        return d

    def __bool__(self):
        raise TypeError("a traced tensor has no Python truth value; use "
                        "op.select or op.compare")

    def __iter__(self):
        raise TypeError("iterating over a traced tensor is not supported")

    # Arithmetic with NumPy broadcasting; Python numbers are weak (they take
    # the tensor's dtype when their kind fits: see promote).
    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("sub", self, o)
    def __rsub__(self, o): return _binary("sub", o, self)
    def __mul__(self, o): return _binary("mul", self, o)
    def __rmul__(self, o): return _binary("mul", o, self)
    def __truediv__(self, o): return _true_divide(self, o)
    def __rtruediv__(self, o): return _true_divide(o, self)
    def __floordiv__(self, o): return _floor_divide(self, o)
    def __rfloordiv__(self, o): return _floor_divide(o, self)
    def __pow__(self, o): return _power(self, o)
    def __rpow__(self, o): return _binary("pow", o, self)
    def __neg__(self): return _apply("neg", self)
    def __pos__(self): return self
    def __abs__(self): return _apply("abs", self)
    def __matmul__(self, o):
        from . import op
        return op.matmul(self, o)
    def __rmatmul__(self, o):
        from . import op
        return op.matmul(o, self)
    def __lt__(self, o): return _compare("lt", self, o)
    def __le__(self, o): return _compare("le", self, o)
    def __gt__(self, o): return _compare("gt", self, o)
    def __ge__(self, o): return _compare("ge", self, o)
    def __eq__(self, o): return _compare("eq", self, o)
    def __ne__(self, o): return _compare("ne", self, o)
    __hash__ = object.__hash__

    def __getitem__(self, index):
        from ._indexing import getitem
        return getitem(self, index)

    # Methods as in NumPy.
    def astype(self, dtype):
        """``op.cast(self, dtype)``.

        >>> ts.jit(lambda x: x.astype("i32"))(np.array([1.5, -2.5]))
        array([ 1, -2], dtype=int32)
        """
        from . import op
        return op.cast(self, dtype)

    def reshape(self, *shape):
        """``op.reshape``; the shape as one tuple or as arguments.

        >>> ts.jit(lambda x: x.reshape(2, -1))(np.arange(6.0)).shape
        (2, 3)
        """
        from . import op
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return op.reshape(self, list(shape))

    def sum(self, axis=None, keepdims=False):
        """The sum over ``axis`` (an int, a tuple, or None for all), as
        ``op.reduce_sum``.

        >>> ts.jit(lambda x: x.sum(axis=0))(np.array([[1.0, 2.0], [3.0, 4.0]]))
        array([4., 6.])
        """
        from . import op
        return op.reduce_sum(self, axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        """The mean over ``axis`` (an int, a tuple, or None for all), as
        ``op.reduce_mean``.

        >>> ts.jit(lambda x: x.mean())(np.array([[1.0, 2.0], [3.0, 6.0]]))
        array(3.)
        """
        from . import op
        return op.reduce_mean(self, axis, keepdims=keepdims)

    def prod(self, axis=None, keepdims=False):
        """The product over ``axis`` (an int, a tuple, or None for all), as
        ``op.reduce_prod``.

        >>> ts.jit(lambda x: x.prod(axis=1))(np.array([[1.0, 2.0], [3.0, 4.0]]))
        array([ 2., 12.])
        """
        from . import op
        return op.reduce_prod(self, axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        """The maximum over ``axis`` (an int, a tuple, or None for all), as
        ``op.reduce_max`` (of nothing: an error).

        >>> ts.jit(lambda x: x.max(axis=-1))(np.array([[1.0, 5.0], [7.0, 2.0]]))
        array([5., 7.])
        """
        from . import op
        return op.reduce_max(self, axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        """The minimum over ``axis`` (an int, a tuple, or None for all), as
        ``op.reduce_min`` (of nothing: an error).

        >>> ts.jit(lambda x: x.min())(np.array([[1.0, 5.0], [7.0, 2.0]]))
        array(1.)
        """
        from . import op
        return op.reduce_min(self, axis, keepdims=keepdims)

    def argmax(self, axis=-1, keepdims=False):
        """The index of the first maximum along ``axis``, as ``op.argmax``.

        >>> ts.jit(lambda x: x.argmax())(np.array([[1.0, 5.0], [7.0, 2.0]]))
        array([1, 0]...)
        """
        from . import op
        return op.argmax(self, axis, keepdims=keepdims)

    def argmin(self, axis=-1, keepdims=False):
        """The index of the first minimum along ``axis``, as ``op.argmin``.

        >>> ts.jit(lambda x: x.argmin(axis=0))(np.array([[1.0, 5.0],
        ...                                             [7.0, 2.0]]))
        array([0, 1]...)
        """
        from . import op
        return op.argmin(self, axis, keepdims=keepdims)


for _method in ("sum", "mean", "prod", "max", "min", "argmax", "argmin"):
    setattr(Tracer, _method, _keywords.checked(
        getattr(Tracer, _method), f"Tracer.{_method}"))
del _method


def is_weak(x) -> bool:
    """True for a Python number, a NumPy scalar, or a (nested) list or tuple
    of them: operands without a dtype of their own, which take the dtype of
    the tensor they meet (NumPy 2 and JAX's weak types)."""
    if isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating)):
        return not isinstance(x, np.ndarray)
    if isinstance(x, (list, tuple)) and x:
        return all(is_weak(v) for v in x)
    return False


# The dtype of a weak value with no tensor to follow, by its kind: what
# runtime::weakResultType gives a number beside a bool tensor, or an int
# one beside an integer tensor, or a float one beside a float tensor.
_WEAK_DEFAULT = {"bool": np.bool_, "int": np.int64, "float": np.float32}


def weak_default(value):
    """The NumPy dtype a weak value (number or list) takes alone: bool, i64
    or f32 by kind."""
    return _WEAK_DEFAULT[_kind(value)]


def _kind(value) -> str:
    """bool, int or float: the kind of a weak operand."""
    k = np.asarray(value).dtype.kind
    if k == "b":
        return "bool"
    if k in "iu":
        return "int"
    if k == "f":
        return "float"
    raise TesseraError(f"expected numbers, got {value!r}")


def _python_number(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        v = int(v)
        if not -2**63 <= v < 2**63:
            raise TesseraError(f"the number {v} is out of range for every "
                               f"Tessera integer dtype (i64 at most)")
        return v
    return float(v)


def promote(t, weak, ctx):
    """(tensor, weak operand) as two _core tensors of the dtype they combine
    in: ``t`` is cast when the weak operand's kind needs it (an int tensor
    and a float number give f32, a bool tensor and an int give i64)."""
    if not isinstance(weak, (list, tuple)):
        ctx.module.set_location(*user_location())
        pair = _core.op.promote(t, _python_number(weak))
        if not pair[0].valid or not pair[1].valid:
            _raise(ctx.module)
        return pair
    dt = _core.weak_result_type(t.dtype, _kind(weak))
    return _cast(t, dt, ctx), _weak_constant(weak, dt, ctx)


def _cast(t, dt, ctx):
    """The _core tensor ``t`` as dtype ``dt`` (itself when it is)."""
    if t.dtype == dt:
        return t
    ctx.module.set_location(*user_location())
    t = _core.op.cast(t, dt)
    if not t.valid:
        _raise(ctx.module)
    return t


def _weak_constant(weak, dt, ctx):
    """The numbers ``weak`` as a constant of dtype ``dt``, or an error when
    they do not fit it (out of range, or fractions for an integer dtype)."""
    target = as_dtype(dt).numpy
    try:
        values = np.asarray(weak, dtype=target)
    except (OverflowError, ValueError) as e:
        raise TesseraError(f"{weak!r} does not fit {dt}: {e}") from None
    if target.kind in "iu" and np.any(values != np.asarray(weak)):
        raise TesseraError(f"{weak!r} does not fit {dt}: it has fractions")
    return constant(values, ctx)._t


def tensor_of(x, like=None, ctx=None):
    """The _core.Tensor of ``x``: a Tracer, a Python number (a 0-d constant of
    ``like``'s dtype, f32 without ``like``) or an array (a constant)."""
    if isinstance(x, Tracer):
        return x._t
    if ctx is None:
        ctx = like._ctx if isinstance(like, Tracer) else current_context()
    if ctx is not None and type(x).__name__ == "Parameter":
        return ctx.parameter(x)._t
    if ctx is None:
        raise TesseraError("Tessera ops on arrays run inside ts.jit or a "
                           "transform; got an op outside any trace")
    if is_weak(x) and not isinstance(x, (list, tuple)):
        if not isinstance(like, Tracer):
            # Nothing to follow: the number takes its kind's default.
            v = _python_number(x)
            return constant(np.asarray(v, weak_default(v)), ctx)._t
        ctx.module.set_location(*user_location())
        t = _core.op.scalar(_python_number(x), like._t)
        if not t.valid:
            _raise(ctx.module)
        return t
    return constant(x, ctx)._t


def operand_list(values, ctx):
    """The _core tensors of the operands of an op that takes many (concat):
    weak ones (numbers, lists) take the dtype of the tensors, widened by
    their kind as in promote."""
    weak = [is_weak(v) for v in values]
    if all(weak) or not any(weak):
        like = next((v for v in values if isinstance(v, Tracer)), None)
        return [tensor_of(v, like, ctx) for v in values]
    tensors = [None if w else tensor_of(v, ctx=ctx)
               for v, w in zip(values, weak)]
    base = next(t for t in tensors if t is not None).dtype
    dt = base
    for v, w in zip(values, weak):
        if w:
            dt = _core.weak_result_type(dt, _kind(v))
    # A tensor of another dtype is left to the op's dtype check.
    return [_weak_constant(v, dt, ctx) if w else
            _cast(t, dt, ctx) if t.dtype == base else t
            for v, w, t in zip(values, weak, tensors)]


def operands(a, b, ctx):
    """The _core tensors of two operands of an elementwise op, a weak one
    promoted with the other (see promote)."""
    if is_weak(a) and not is_weak(b):
        tb, ta = promote(tensor_of(b, ctx=ctx), a, ctx)
        return ta, tb
    if is_weak(b) and not is_weak(a):
        return promote(tensor_of(a, ctx=ctx), b, ctx)
    like = a if isinstance(a, Tracer) else b
    return tensor_of(a, like, ctx), tensor_of(b, like, ctx)


def constant(x, ctx=None):
    """A Tracer holding the array ``x`` as a constant."""
    ctx = ctx or current_context()
    a = np.asarray(x)
    dt = as_dtype(a.dtype)
    # (ascontiguousarray would make a 0-d array 1-d.)
    data = a if a.flags.c_contiguous else np.array(a, order="C")
    if dt.bits_dtype is not None:
        data = data.view(dt.bits_dtype)
    ctx.module.set_location(*user_location())
    t = _core.op.constant(data, dt.name)
    if not t.valid:
        _raise(ctx.module)
    return Tracer(t, ctx)


def context_of(*xs):
    for x in xs:
        if isinstance(x, Tracer):
            return x._ctx
        if isinstance(x, (list, tuple)):
            c = context_of(*x)
            if c is not None:
                return c
    return current_context()


def call_core(name, ctx, *args, policy=None, **kwargs):
    """Calls _core.op.<name> at the user's location; raises its error. The
    result carries ``policy``."""
    if ctx is None:
        raise TesseraError(f"op.{name} runs inside ts.jit or a transform; "
                           f"got it outside any trace")
    ctx.module.set_location(*user_location())
    result = getattr(_core.op, name)(*args, **kwargs)
    if not result.valid:
        _raise(ctx.module)
    return Tracer(result, ctx, policy)


def policy_of(*xs):
    """The first numeric policy among traced operands."""
    for x in xs:
        if isinstance(x, Tracer) and x.policy is not None:
            return x.policy
    return None


def _apply(name, x, **kwargs):
    ctx = context_of(x)
    return call_core(name, ctx, tensor_of(x, ctx=ctx), policy=policy_of(x),
                     **kwargs)


def _binary(name, a, b):
    ctx = context_of(a, b)
    return call_core(name, ctx, *_checked_operands(a, b, ctx),
                     policy=policy_of(a, b))


def _checked_operands(a, b, ctx):
    if ctx is None:
        raise TesseraError("Tessera ops on arrays run inside ts.jit or a "
                           "transform; got an op outside any trace")
    return operands(a, b, ctx)


def _true_divide(a, b):
    """``a / b`` as Python means it: integer and boolean operands divide as
    f32 (NumPy and JAX true division); op.div keeps the Graph IR's integer
    division."""
    ctx = context_of(a, b)
    ta, tb = _checked_operands(a, b, ctx)
    if not as_dtype(ta.dtype).is_float:
        ctx.module.set_location(*user_location())
        ta, tb = _core.op.cast(ta, "f32"), _core.op.cast(tb, "f32")
        if not ta.valid or not tb.valid:
            _raise(ctx.module)
    return call_core("div", ctx, ta, tb, policy=policy_of(a, b))


def _floor_divide(a, b):
    """``a // b``: floor division as in Python (op::floor_div)."""
    ctx = context_of(a, b)
    return call_core("floor_div", ctx, *_checked_operands(a, b, ctx),
                     policy=policy_of(a, b))


def _compare(direction, a, b):
    ctx = context_of(a, b)
    ta, tb = _checked_operands(a, b, ctx)
    return call_core("compare", ctx, ta, tb, direction)


def _power(x, p):
    # Small integer powers as products: exact, and differentiable at 0.
    if isinstance(p, (int, float)) and float(p).is_integer() and 1 <= p <= 4:
        if p == 1:
            return x
        if p == 2:
            return _apply("square", x)
        sq = _apply("square", x)
        return sq * x if p == 3 else _apply("square", sq)
    return _binary("pow", x, p)
