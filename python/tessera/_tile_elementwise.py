"""Elementwise tile operations: math functions, minimum and maximum,
fused multiply-add and selection. tessera.tile re-exports them; its
docstring describes the DSL."""

from __future__ import annotations

import builtins
import math as _math

from ._tile_ir import (current_trace, is_float)
from ._tile_values import (Scalar, Tile, _Expanded, _binary, _broadcast_shape,
                           _err, _is_number, _operands, _splat, _to_shape,
                           _unary)


def exp(x):
    """Elementwise ``e ** x`` (``math.exp``).

    ``x`` is a float tile or a float scalar of the program; the result has its
    shape and type. An integer value or a Python number raises a
    ``KernelTraceError`` (a ``TypeError``): cast integers with ``tile.cast``,
    and use the ``math`` module for numbers.

    Example (a kernel that uses it, and the op it adds to the Tile IR):

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.exp(x), at=(0,))
    >>> for line in k.lower().splitlines():
    ...     if "math.exp" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v3 = math.exp %v2 : tensor<16xf32>
    """
    return _unary("exp", x)


def exp2(x):
    """Elementwise ``2 ** x`` (``math.exp2``).

    ``x`` is a float tile or a float scalar of the program; the result has its
    shape and type. An integer value or a Python number raises a
    ``KernelTraceError`` (a ``TypeError``): cast integers with ``tile.cast``,
    and use the ``math`` module for numbers.

    On the GPU ``exp2`` of an f32 tile is the hardware's
    ``ex2.approx.ftz.f32``: within 2 ulp, with subnormal results flushed to
    zero.

    Example (a kernel that uses it, and the op it adds to the Tile IR):

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.exp2(x), at=(0,))
    >>> for line in k.lower().splitlines():
    ...     if "math.exp2" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v3 = math.exp2 %v2 : tensor<16xf32>
    """
    return _unary("exp2", x)


def log(x):
    """Elementwise natural logarithm (``math.log``).

    ``x`` is a float tile or a float scalar of the program; the result has its
    shape and type. An integer value or a Python number raises a
    ``KernelTraceError`` (a ``TypeError``): cast integers with ``tile.cast``,
    and use the ``math`` module for numbers.

    Example (a kernel that uses it, and the op it adds to the Tile IR):

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.log(x), at=(0,))
    >>> for line in k.lower().splitlines():
    ...     if "math.log" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v3 = math.log %v2 : tensor<16xf32>
    """
    return _unary("log", x)


def sqrt(x):
    """Elementwise square root (``math.sqrt``).

    ``x`` is a float tile or a float scalar of the program; the result has its
    shape and type. An integer value or a Python number raises a
    ``KernelTraceError`` (a ``TypeError``): cast integers with ``tile.cast``,
    and use the ``math`` module for numbers.

    Example (a kernel that uses it, and the op it adds to the Tile IR):

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.sqrt(x), at=(0,))
    >>> for line in k.lower().splitlines():
    ...     if "math.sqrt" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v3 = math.sqrt %v2 : tensor<16xf32>
    """
    return _unary("sqrt", x)


def rsqrt(x):
    """Elementwise ``1 / sqrt(x)`` (``math.rsqrt``).

    ``x`` is a float tile or a float scalar of the program (the result has its
    shape and type), or a Python number, for which the result is the Python
    float ``1 / math.sqrt(x)`` (so that schedule values can be used directly).
    An integer tile or scalar raises a ``KernelTraceError`` (a ``TypeError``).

    >>> tile.rsqrt(4.0)
    0.5
    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.rsqrt(x), at=(0,))
    >>> for line in k.lower().splitlines():
    ...     if "math.rsqrt" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v3 = math.rsqrt %v2 : tensor<16xf32>
    """
    if _is_number(x):
        return 1.0 / _math.sqrt(x)
    return _unary("rsqrt", x)


def tanh(x):
    """Elementwise hyperbolic tangent (``math.tanh``).

    ``x`` is a float tile or a float scalar of the program; the result has its
    shape and type. An integer value or a Python number raises a
    ``KernelTraceError`` (a ``TypeError``): cast integers with ``tile.cast``,
    and use the ``math`` module for numbers.

    Example (a kernel that uses it, and the op it adds to the Tile IR):

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.tanh(x), at=(0,))
    >>> for line in k.lower().splitlines():
    ...     if "math.tanh" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v3 = math.tanh %v2 : tensor<16xf32>
    """
    return _unary("tanh", x)


def abs(x):  # noqa: A001
    """Elementwise absolute value.

    The op is ``math.absf`` for floats, ``math.absi`` for integers. ``x`` is a
    tile or a scalar of the program; the result has its shape and type. A
    Python number raises a ``KernelTraceError`` (a ``TypeError``); use Python's
    ``abs`` for numbers.

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.i32], Y: ts.KTile["N", ts.i32]):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.abs(x), at=(0,))
    >>> for line in k.lower().splitlines():
    ...     if "math.abs" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v3 = math.absi %v2 : tensor<16xi32>
    """
    return _unary("abs", x)


def erf(x): return _unary("erf", x)


def sigmoid(x):
    """Elementwise logistic function ``1 / (1 + exp(-x))``.

    ``x`` is a float tile or scalar; the result has its shape and type. It is
    composed of the elementwise ops (``arith.negf``, ``math.exp``,
    ``arith.addf``, ``arith.divf``), not a single op.

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.sigmoid(x), at=(0,))
    >>> for line in k.lower().splitlines():
    ...     if "math.exp" in line or "arith.divf" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v4 = math.exp %v3 : tensor<16xf32>
    %v8 = arith.divf %v7, %v6 : tensor<16xf32>
    """
    return 1.0 / (1.0 + exp(-x))


def maximum(a, b):
    """Elementwise maximum of ``a`` and ``b``.

    Each operand is a tile, a scalar of the program or a Python number; tiles
    broadcast as in NumPy and numbers take the other operand's type (the
    element types of two tiles must be equal). Floats give ``arith.maximumf``,
    where a NaN operand gives NaN (IEEE 754-2019 ``maximum``); integers and
    indices ``arith.maxsi`` (signed). The result is a tile when an operand is
    one, else a scalar.

    >>> @ts.kernel
    ... def relu(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.maximum(x, 0.0), at=(0,))
    >>> for line in relu.lower().splitlines():
    ...     if "arith.maximumf" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v4 = arith.maximumf %v2, %v3 : tensor<16xf32>
    """
    return _binary("max", a, b)


def minimum(a, b):
    """Elementwise minimum of ``a`` and ``b``.

    Operands as for ``tile.maximum``: tiles (broadcast as in NumPy), scalars of
    the program or Python numbers. Floats give ``arith.minimumf`` (a NaN
    operand gives NaN), integers and indices ``arith.minsi``. Of two scalars
    the result is a scalar: the end of a causal attention loop, for instance,
    is ``tile.minimum(tile.row_index() + T.m, K.shape[0])``.

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32]):
    ...     end = tile.minimum(tile.program_id(0) * 16 + 16, X.shape[0])
    ...     print(end)
    >>> text = k.lower()
    Scalar(index)
    >>> "arith.minsi" in text
    True
    """
    return _binary("min", a, b)


def cdiv(a, b):
    """``ceil(a / b)`` of non-negative integers or integer scalars.

    Of two Python integers the result is a Python integer. Of index or integer
    scalars of the program (a tensor's size, say) it is the scalar
    ``(a + b - 1) // b``, for the number of blocks a loop or a grid covers.

    >>> tile.cdiv(10, 4)
    3
    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32]):
    ...     print(tile.cdiv(X.shape[0], 16))
    >>> text = k.lower()
    Scalar(index)
    """
    if _is_number(a) and _is_number(b):
        return -(-a // b)
    return (a + (b - 1)) // b


def fma(a, b, c):
    """Elementwise ``a * b + c``, rounded once.

    The op is ``math.fma``, the hardware's fused multiply-add. At least one
    operand is a float tile; the other operands are tiles of the same element
    type (broadcast as in NumPy), scalars of the program or Python numbers,
    which take the tile's type. Without a tile, or with integer tiles, or with
    tiles of different types, it raises a ``KernelTraceError`` (a
    ``TypeError``).

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32], c: float):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.fma(x, c, 1.0), at=(0,))
    >>> for line in k.lower().splitlines():
    ...     if "math.fma" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v5 = math.fma %v2, %v3, %v4 : tensor<16xf32>
    """
    ops = (a, b, c)
    tiles = [x for x in ops if isinstance(x, (Tile, _Expanded))]
    if not tiles:
        raise _err("tile.fma takes at least one tile (for scalars, write "
                   "a * b + c)")
    t = tiles[0].type if isinstance(tiles[0], Tile) else tiles[0].tile.type
    if not is_float(t):
        raise _err(f"tile.fma takes floats, got {t}")
    shape = _broadcast_shape([x.shape for x in tiles])
    vals = [_to_shape(x, shape) if isinstance(x, (Tile, _Expanded))
            else _splat(x, shape, t) for x in ops]
    for v in vals:
        if v.type != t:
            raise _err(f"tile.fma's operands differ in type ({t} and "
                       f"{v.type}); use tile.cast")
    x, y, z = vals
    (name,) = current_trace().emit(
        f"math.fma {x.name}, {y.name}, {z.name} : {x.mlir_type}",
        [x.mlir_type])
    return Tile(name, shape, t)


def where(cond, a, b):
    """Elementwise ``cond ? a : b`` (``arith.select``).

    ``cond`` is a boolean tile (a comparison of tiles, ``x > 0.0``) or a
    boolean scalar. With a tile condition, ``cond``, ``a`` and ``b`` broadcast
    together as in NumPy; ``a`` and ``b`` are tiles, scalars or Python numbers,
    and scalars and numbers take the type of the tile among the choices
    (without one: f32 for two Python floats, the type of the first of two
    scalars). With a scalar condition the choices are scalars (or one scalar
    and a Python number) and the result is a scalar. Choices of different
    element types, or a condition that is not boolean, raise a
    ``KernelTraceError`` (a ``TypeError``).

    This is how a kernel branches on data: Python ``if`` on a value of the
    program cannot be traced.

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.where(x > 0.0, x, 0.5 * x), at=(0,))
    >>> for line in k.lower().splitlines():
    ...     if "arith.cmpf" in line or "arith.select" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v4 = arith.cmpf ogt, %v2, %v3 : tensor<16xf32>
    %v7 = arith.select %v4, %v2, %v6 : tensor<16xi1>, tensor<16xf32>
    """
    if isinstance(cond, (Tile, _Expanded)):
        ref = [x for x in (a, b) if isinstance(x, (Tile, _Expanded))]
        t = ((ref[0].type if isinstance(ref[0], Tile) else ref[0].tile.type)
             if ref else None)
        if t is None:
            if builtins.all(isinstance(x, float) for x in (a, b)):
                t = "f32"
            elif builtins.all(isinstance(x, Scalar) for x in (a, b)):
                t = a.type
            else:
                raise _err("tile.where needs a tile or typed value among its "
                           "choices")
        shapes = [x.shape for x in (cond, a, b)
                  if isinstance(x, (Tile, _Expanded))]
        shape = _broadcast_shape(shapes)
        c = _to_shape(cond, shape)
        if c.type != "i1":
            raise _err(f"tile.where's condition must be boolean, got {c.type}")
        x = (_to_shape(a, shape) if isinstance(a, (Tile, _Expanded))
             else _splat(a, shape, t))
        y = (_to_shape(b, shape) if isinstance(b, (Tile, _Expanded))
             else _splat(b, shape, t))
        if x.type != y.type:
            raise _err(f"tile.where's choices differ in type ({x.type} and "
                       f"{y.type})")
        (name,) = current_trace().emit(
            f"arith.select {c.name}, {x.name}, {y.name} : "
            f"{c.mlir_type}, {x.mlir_type}", [x.mlir_type])
        return Tile(name, shape, x.type)
    if isinstance(cond, Scalar):
        x, y, t, shape = _operands(a, b)
        if shape is not None:
            raise _err("a scalar condition selects between scalars; use a "
                       "boolean tile for tiles")
        (name,) = current_trace().emit(
            f"arith.select {cond.name}, {x.name}, {y.name} : {t}", [t])
        return Scalar(name, t)
    raise _err(f"tile.where's condition must be a boolean tile or scalar, "
               f"got {cond!r}")
