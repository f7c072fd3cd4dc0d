"""One spelling for array axes.

Every function of the package names an array axis ``axis`` (an int, or a
tuple of ints where it works over several axes; negative counts from the
last), as NumPy and JAX do; the mesh axis of a collective is ``axis_name``.
Earlier spellings are not aliases: they raise a ``TypeError`` that names
the keyword to use, so old code fails at the call instead of drifting.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

# Old keyword -> the one that replaced it.
RENAMED = {
    "dim": "axis",
    "dims": "axis",
    "axes": "axis",
    "split_dim": "split_axis",
    "concat_dim": "concat_axis",
    "lhs_batching_dims": "lhs_batch_axes",
    "rhs_batching_dims": "rhs_batch_axes",
    "lhs_contracting_dims": "lhs_contract_axes",
    "rhs_contracting_dims": "rhs_contract_axes",
    "broadcast_dimensions": "broadcast_axes",
}


def _check(qualname, kwargs, renamed, collective):
    for old in kwargs.keys() & renamed.keys():
        raise TypeError(
            f"{qualname}() has no keyword '{old}': use '{renamed[old]}' "
            f"(Tessera spells array axes 'axis', as NumPy and JAX do)")
    if collective and isinstance(kwargs.get("axis"), str):
        raise TypeError(
            f"{qualname}(): axis= is an array axis; name the mesh axis with "
            f"axis_name={kwargs['axis']!r} (as in JAX)")


def checker(fn, qualname):
    """A function of a call's keyword arguments that raises for the old
    keywords ``fn`` does not take (a TypeError naming the new one)."""
    params = inspect.signature(fn).parameters
    renamed = {old: new for old, new in RENAMED.items()
               if old not in params and new in params}
    collective = "axis_name" in params
    return lambda kwargs: _check(qualname, kwargs, renamed, collective)


def checked(fn, qualname=None):
    """``fn`` behind ``checker``'s check (the signature and docs stay
    ``fn``'s)."""
    check = checker(fn, qualname or fn.__qualname__)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if kwargs:
            check(kwargs)
        return fn(*args, **kwargs)
    return run


def one_axis(axis, qualname):
    """``axis`` as an int, or a TypeError for anything else (a tuple where
    the op takes a single axis, a bool, a float)."""
    if isinstance(axis, (int, np.integer)) and not isinstance(
            axis, (bool, np.bool_)):
        return int(axis)
    raise TypeError(f"{qualname}() takes one axis (an int), got {axis!r}")


def axes(axis, qualname):
    """``axis`` as the binding takes it: None (every axis), an int, or a
    list of ints."""
    if axis is None:
        return None
    try:
        if isinstance(axis, (tuple, list)):
            return [one_axis(a, qualname) for a in axis]
        return one_axis(axis, qualname)
    except TypeError:
        raise TypeError(f"{qualname}() takes axis as an int, a tuple of "
                        f"ints or None (every axis), got {axis!r}") from None
