"""Stateless random numbers: Philox 4x32-10 streams addressed by keys.

A key names a stream of random numbers; split it to get independent ones::

    key = ts.random.key(0)
    k1, k2 = ts.random.split(key)
    x = ts.random.normal(k1, (128, 784))

Keys are values (two 32-bit words), split or folded in to get new ones;
nothing is hidden in a global state. Inside ``ts.jit`` and outside it the
same key gives the same numbers (both run the same compiled ops), on any
thread count.
"""

from __future__ import annotations

import functools

import numpy as np

from . import _core
from . import tree as _tree
from ._dtypes import as_dtype
from ._tracing import (TesseraError, Tracer, _raise, call_core,
                       current_context, tensor_of, user_location)

__all__ = ["Key", "key", "split", "fold_in", "uniform", "normal",
           "bernoulli", "categorical"]


class Key:
    """A random key outside a trace: its two Philox words.

    ``data`` is the int32 array of shape (2,) that holds them. Keys come
    from :func:`key`, :func:`split` and :func:`fold_in`; building one
    from two words directly is also allowed. Keys compare equal when their
    words are equal and can be used as dict keys. Passed to a ``ts.jit``
    function, a ``Key`` becomes a traced key; a key returned by one comes
    back as a ``Key``.

    Raises ``TesseraError`` when ``data`` does not hold exactly 2 words.

    Example:

    >>> k = random.Key([1, 2])
    >>> k
    Key(1, 2)
    >>> k.data.dtype, k.data.shape
    (dtype('int32'), (2,))
    >>> k == random.Key(np.array([1, 2])), k == random.Key([2, 1])
    (True, False)
    """

    __slots__ = ("data",)

    def __init__(self, data):
        data = np.ascontiguousarray(data, dtype=np.int32)
        if data.shape != (2,):
            raise TesseraError(f"a key holds 2 words, got shape {data.shape}")
        self.data = data

    def __repr__(self):
        return f"Key({self.data[0]}, {self.data[1]})"

    def __eq__(self, other):
        return isinstance(other, Key) and bool(np.all(self.data == other.data))

    def __hash__(self):
        return hash(self.data.tobytes())


def _is_key_tracer(x):
    return isinstance(x, Tracer) and x._t.is_key


def _check_key(key, what):
    if not (isinstance(key, Key) or _is_key_tracer(key)):
        raise TesseraError(f"random.{what} takes a key (ts.random.key or "
                           f"split), got {type(key).__name__}")


_EAGER = {}


def _eager(fn):
    """Runs ``fn`` compiled when called with no traced values; keys and
    arrays are the compiled function's arguments, the rest is static."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if current_context() is not None or any(
                isinstance(l, Tracer) for l in _tree.leaves((args, kwargs))):
            return fn(*args, **kwargs)
        from ._jit import jit
        from .op import _freeze
        dynamic = [isinstance(a, (Key, np.ndarray)) for a in args]
        cache_key = (fn.__name__,
                     tuple("arg" if d else _freeze(a)
                           for a, d in zip(args, dynamic)),
                     _freeze(kwargs))
        compiled = _EAGER.get(cache_key)
        if compiled is None:
            fixed = list(args)

            def traced(*values):
                it = iter(values)
                full = [next(it) if d else a for a, d in zip(fixed, dynamic)]
                return fn(*full, **kwargs)

            compiled = _EAGER[cache_key] = jit(traced, name=fn.__name__)
        return compiled(*[a for a, d in zip(args, dynamic) if d])
    return run


def _ctx():
    ctx = current_context()
    if ctx is None:
        raise TesseraError("random ops run inside a trace")
    return ctx


@_eager
def key(seed: int):
    """A key from an integer seed.

    The seed, as a 64-bit two's-complement integer, gives the key's words:
    its low 32 bits the first and its high 32 bits the second (a seed in
    [0, 2**31) gives ``Key(seed, 0)``). ``seed`` must
    be a Python or NumPy integer: a traced value is refused (use
    :func:`fold_in` to mix one in). Outside ``ts.jit`` this returns a
    :class:`Key`; inside, a traced key.

    Raises ``TesseraError`` for a seed that is not an integer.

    Example:

    >>> random.key(0), random.key(7)
    (Key(0, 0), Key(7, 0))
    >>> random.key(3) == random.key(3)
    True
    """
    if not isinstance(seed, (int, np.integer)):
        raise TesseraError(f"random.key takes an integer seed, got "
                           f"{type(seed).__name__}; use fold_in to mix in "
                           f"traced values")
    return call_core("rng_key", _ctx(), int(seed))


@_eager
def split(key, num: int = 2):
    """``num`` independent keys derived from ``key``, as a tuple.

    The new keys differ from each other and from ``key``; the same ``key``
    always splits into the same keys. Use each key once: sampling twice
    with one key gives the same numbers twice.

    Raises ``TesseraError`` when ``key`` is not a key or ``num`` is below 1.

    Example:

    >>> k1, k2 = random.split(random.key(0))
    >>> k1 == k2, k1 == random.key(0)
    (False, False)
    >>> random.split(random.key(0)) == (k1, k2)
    True
    >>> len(random.split(random.key(0), 3))
    3
    """
    _check_key(key, "split")
    ctx = key._ctx
    ctx.module.set_location(*user_location())
    keys = _core.op.rng_split(key._t, num)
    if not keys or not all(k.valid for k in keys):
        _raise(ctx.module)
    return tuple(Tracer(k, ctx) for k in keys)


@_eager
def fold_in(key, data):
    """A key derived from ``key`` and an integer (a step, a rank).

    ``data`` is a Python or NumPy integer or an int32/int64 scalar tensor,
    which may be traced, so a step number can be mixed into a key inside
    ``ts.jit``. Different ``data`` give different keys; the same ``data``
    the same key, whether it is given as int32 or int64.

    Outside ``ts.jit`` each distinct Python integer compiles its own small
    function; pass ``np.asarray(step)`` to reuse one compiled function
    for every step.

    Raises ``TesseraError`` when ``key`` is not a key or ``data`` is not an
    integer scalar.

    Example:

    >>> k = random.key(0)
    >>> random.fold_in(k, 3) == random.fold_in(k, 3)
    True
    >>> random.fold_in(k, 3) == random.fold_in(k, 4)
    False
    >>> random.fold_in(k, np.asarray(3)) == random.fold_in(k, 3)
    True
    """
    _check_key(key, "fold_in")
    ctx = key._ctx
    if isinstance(data, (int, np.integer)):
        from . import op
        data = op.constant(np.asarray(data, np.int64))
    return call_core("rng_fold_in", ctx, key._t, tensor_of(data, ctx=ctx))


@_eager
def uniform(key, shape=(), dtype="f32", minval=0.0, maxval=1.0):
    """Samples drawn uniformly from [``minval``, ``maxval``).

    Returns an array (a traced tensor inside ``ts.jit``) of shape
    ``shape`` and the floating-point dtype ``dtype`` (f16, bf16, f32 or
    f64). The same key gives the same samples inside and outside
    ``ts.jit``.

    Raises ``TesseraError`` when ``key`` is not a key or ``dtype`` is not a
    floating-point type.

    Example:

    >>> k = random.key(0)
    >>> u = random.uniform(k, (2, 3))
    >>> u.shape, u.dtype
    ((2, 3), dtype('float32'))
    >>> bool(((0.0 <= u) & (u < 1.0)).all())
    True
    >>> np.array_equal(u, random.uniform(k, (2, 3)))
    True
    >>> np.array_equal(u, ts.jit(lambda k: random.uniform(k, (2, 3)))(k))
    True
    >>> v = random.uniform(k, (100,), "f64", minval=2.0, maxval=4.0)
    >>> v.dtype, bool(((2.0 <= v) & (v < 4.0)).all())
    (dtype('float64'), True)
    """
    _check_key(key, "uniform")
    return call_core("rng_uniform", key._ctx, key._t, list(shape),
                     as_dtype(dtype).name, float(minval), float(maxval))


@_eager
def normal(key, shape=(), dtype="f32", mean=0.0, stddev=1.0):
    """Samples of the normal distribution with mean ``mean`` and standard
    deviation ``stddev``.

    Returns an array (a traced tensor inside ``ts.jit``) of shape
    ``shape`` and the floating-point dtype ``dtype`` (f16, bf16, f32 or
    f64). The same key gives the same samples inside and outside
    ``ts.jit``.

    Raises ``TesseraError`` when ``key`` is not a key or ``dtype`` is not a
    floating-point type.

    Example:

    >>> k1, k2 = random.split(random.key(0))
    >>> x = random.normal(k1, (128, 784))
    >>> x.shape, x.dtype
    ((128, 784), dtype('float32'))
    >>> abs(float(x.mean())) < 0.02, abs(float(x.std()) - 1.0) < 0.02
    (True, True)
    >>> np.array_equal(random.normal(k1, (4,)), random.normal(k2, (4,)))
    False
    >>> random.normal(k1, (3,), "f64", mean=10.0, stddev=0.0)
    array([10., 10., 10.])
    """
    _check_key(key, "normal")
    return call_core("rng_normal", key._ctx, key._t, list(shape),
                     as_dtype(dtype).name, float(mean), float(stddev))


@_eager
def bernoulli(key, p=0.5, shape=()):
    """Booleans of shape ``shape`` that are true with probability ``p``.

    Returns a bool array (a traced tensor inside ``ts.jit``). ``p = 0``
    gives all false and ``p = 1`` all true.

    Raises ``TesseraError`` when ``key`` is not a key or ``p`` is outside
    [0, 1].

    Example:

    >>> k = random.key(0)
    >>> b = random.bernoulli(k, 0.5, (1000,))
    >>> b.shape, b.dtype
    ((1000,), dtype('bool'))
    >>> 400 < int(b.sum()) < 600
    True
    >>> random.bernoulli(k, 1.0, (3,))
    array([ True,  True,  True])
    """
    _check_key(key, "bernoulli")
    if not 0.0 <= float(p) <= 1.0:
        raise TesseraError(f"bernoulli needs 0 <= p <= 1, got {p}")
    return call_core("rng_bernoulli", key._ctx, key._t, list(shape), float(p))


@_eager
def categorical(key, logits, axis=-1):
    """Class indices drawn with probabilities softmax(``logits``) along
    ``axis``.

    ``logits`` is a floating-point array or traced tensor; a logit of
    ``-inf`` is never drawn. The result is int64 and has the shape of
    ``logits`` without ``axis``. The samples are computed by the
    Gumbel-max trick, argmax(logits + Gumbel noise), with the noise drawn
    by :func:`uniform` from ``key``.

    Raises ``TesseraError`` when ``key`` is not a key.

    Example:

    >>> k = random.key(0)
    >>> c = random.categorical(k, np.zeros((2, 3, 4), np.float32), axis=1)
    >>> c.shape, c.dtype
    ((2, 4), dtype('int64'))
    >>> bool(((0 <= c) & (c < 3)).all())
    True
    >>> logits = np.array([[0.0, -np.inf, 0.0]] * 100, np.float32)
    >>> bool((random.categorical(k, logits) != 1).all())
    True
    """
    _check_key(key, "categorical")
    from . import op
    logits = logits if isinstance(logits, Tracer) else op.constant(logits)
    tiny = float(np.finfo(logits.dtype.numpy).tiny)
    u = uniform(key, logits.shape, logits.dtype, tiny, 1.0)
    gumbel = -op.log(-op.log(u))
    return op.argmax(logits + gumbel, axis)
