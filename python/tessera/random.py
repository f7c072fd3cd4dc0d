"""Stateless random numbers: Philox 4x32-10 streams addressed by keys.

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


class Key:
    """A random key: its two Philox words (``data``, int32[2])."""

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
    """A key from an integer seed."""
    if not isinstance(seed, (int, np.integer)):
        raise TesseraError(f"random.key takes an integer seed, got "
                           f"{type(seed).__name__}; use fold_in to mix in "
                           f"traced values")
    return call_core("rng_key", _ctx(), int(seed))


@_eager
def split(key, num: int = 2):
    """``num`` independent keys derived from ``key``."""
    _check_key(key, "split")
    ctx = key._ctx
    ctx.module.set_location(*user_location())
    keys = _core.op.rng_split(key._t, num)
    if not keys or not all(k.valid for k in keys):
        _raise(ctx.module)
    return tuple(Tracer(k, ctx) for k in keys)


@_eager
def fold_in(key, data):
    """A key derived from ``key`` and an integer (a step, a rank)."""
    _check_key(key, "fold_in")
    ctx = key._ctx
    if isinstance(data, (int, np.integer)):
        from . import op
        data = op.constant(np.asarray(data, np.int64))
    return call_core("rng_fold_in", ctx, key._t, tensor_of(data, ctx=ctx))


@_eager
def uniform(key, shape=(), dtype="f32", minval=0.0, maxval=1.0):
    """Samples uniform in [minval, maxval)."""
    _check_key(key, "uniform")
    return call_core("rng_uniform", key._ctx, key._t, list(shape),
                     as_dtype(dtype).name, float(minval), float(maxval))


@_eager
def normal(key, shape=(), dtype="f32", mean=0.0, stddev=1.0):
    """Normal samples."""
    _check_key(key, "normal")
    return call_core("rng_normal", key._ctx, key._t, list(shape),
                     as_dtype(dtype).name, float(mean), float(stddev))


@_eager
def bernoulli(key, p=0.5, shape=()):
    """Booleans that are true with probability ``p``."""
    _check_key(key, "bernoulli")
    if not 0.0 <= float(p) <= 1.0:
        raise TesseraError(f"bernoulli needs 0 <= p <= 1, got {p}")
    return call_core("rng_bernoulli", key._ctx, key._t, list(shape), float(p))


@_eager
def categorical(key, logits, axis=-1):
    """Class indices drawn with probabilities softmax(logits) along ``axis``
    (the Gumbel-max trick: argmax(logits + Gumbel noise))."""
    _check_key(key, "categorical")
    from . import op
    logits = logits if isinstance(logits, Tracer) else op.constant(logits)
    tiny = float(np.finfo(logits.dtype.numpy).tiny)
    u = uniform(key, logits.shape, logits.dtype, tiny, 1.0)
    gumbel = -op.log(-op.log(u))
    return op.argmax(logits + gumbel, axis)
