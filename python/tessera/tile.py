"""The tile DSL: the operations a ``@ts.kernel`` body is written with::

    import math
    import tessera as ts
    from tessera import tile, KTile

    @ts.kernel.schedule(ts.Schedule(block=(4, 256), warps=4))
    def softmax(X: KTile["R", "N", ts.f32], Y: KTile["R", "N", ts.f32]):
        T = tile.context()
        r = tile.program_id(0) * T.m
        x = tile.load(X, at=(r, 0), shape=(T.m, T.n), padding=-math.inf)
        e = tile.exp(x - tile.max(x, axis=1)[:, None])
        tile.store(Y, e / tile.sum(e, axis=1)[:, None], at=(r, 0))

A kernel runs as a grid of programs; each program computes on tiles
(static-shape blocks held by its threads). Tiles combine with Python
operators elementwise, with NumPy broadcasting of lower-rank tiles and
Python numbers; ``a @ b`` is ``tile.dot``. Scalars (program ids, sizes,
offsets) are values of the program too and combine with Python operators.
Every operation here becomes one Tile IR op (``ttile``, ``arith``,
``math``) whose location is the line of the kernel that made it.

The operations run only while a kernel is traced (when it is compiled,
or by ``kernel.lower(...)``, which returns the Tile IR text and needs no
GPU); called elsewhere they raise a ``KernelTraceError`` (a
``TypeError``), as do operands of the wrong kind, with the kernel's
line in the message. ``tile.rsqrt`` and ``tile.cdiv`` of Python numbers
are the exceptions: they give Python numbers anywhere.
"""

from __future__ import annotations

import builtins
import math as _math

from ._tile_ir import (bit_width, check_visible, current_trace,
                       element_type, float_literal, int_literal, is_float,
                       tensor_type)
# _index_const and _scalar_const: for tessera._kernel's loop tracing.
from ._tile_values import (Block, Scalar, Tile, TileRef, _Expanded,  # noqa: F401
                           _as_index, _binary, _broadcast_shape,
                           _convert_scalar, _err, _index_const, _is_number,
                           _operands, _scalar_const, _splat, _to_shape,
                           _unary, constexpr)

__all__ = [
    "Block", "Scalar", "Tile", "TileRef", "abs", "broadcast_to", "cast",
    "cdiv", "col_index", "constexpr", "context", "dot", "exp", "exp2", "fma",
    "full", "iota", "load", "load_scalar", "log", "mask_causal", "mask_keys",
    "max", "maximum", "min", "minimum", "num_programs", "program_id",
    "range", "range_n", "row_index", "rsqrt", "sigmoid",
    "softmax_accumulate", "softmax_online", "sqrt", "store", "sum", "tanh",
    "transpose", "where", "zeros",
]

INF = _math.inf




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


# --------------------------------------------------------------------------
# Tile construction and shape ops
# --------------------------------------------------------------------------

def _shape_of(shape):
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(shape)
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise _err(f"a tile's shape holds positive Python integers "
                       f"(schedule values), got {list(shape)}")
    return shape


def full(shape, value, dtype=None):
    """A tile of ``shape`` whose elements are all ``value``.

    ``shape`` is a tuple of positive Python integers (usually schedule values
    such as ``T.m``) or one integer. ``value`` is a Python number or a scalar
    of the program. The element type is ``dtype`` (a Tessera dtype or its
    name), else the scalar's type, else f32 for a Python float; an integer
    number needs ``dtype``. A number becomes an ``arith.constant``, a scalar a
    ``tensor.splat``.

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32]):
    ...     print(tile.full((4, 8), float("-inf")))
    ...     print(tile.full(16, 1, ts.i32))
    ...     print(tile.full((16,), tile.program_id(0)))
    >>> text = k.lower()
    Tile([4, 8], f32)
    Tile([16], i32)
    Tile([16], index)
    >>> for line in text.splitlines():
    ...     if "arith.constant dense" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v1 = arith.constant dense<0xFF800000> : tensor<4x8xf32>
    %v2 = arith.constant dense<1> : tensor<16xi32>
    """
    shape = _shape_of(shape)
    if dtype is None:
        if isinstance(value, Scalar):
            dtype = value.type
        elif isinstance(value, float):
            dtype = "f32"
        else:
            raise _err("tile.full of an integer needs a dtype")
    t = element_type(dtype) if not isinstance(dtype, str) or dtype not in (
        "index",) else dtype
    return _splat(value, shape, t)


def zeros(shape, dtype=None):
    """A tile of ``shape`` filled with zeros (f32 unless ``dtype``).

    ``shape`` is a tuple of positive Python integers or one integer; the usual
    start of an accumulator: ``acc = tile.zeros((T.m, T.n))``.

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32]):
    ...     print(tile.zeros((4, 8)), tile.zeros(16, ts.i32))
    >>> text = k.lower()
    Tile([4, 8], f32) Tile([16], i32)
    """
    return full(shape, 0.0 if dtype is None else 0,
                "f32" if dtype is None else dtype)


def iota(shape, axis: int, dtype=None):
    """A tile whose elements are their index along ``axis``.

    The op is ``ttile.iota``. The element type is i32 unless ``dtype`` names
    another integer type; a float ``dtype`` raises a ``KernelTraceError`` (a
    ``TypeError``: cast the result instead). Added to a block's first column it
    numbers the columns of the block, for masks:
    ``tile.iota((T.m, T.n), axis=1) + col``.

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32]):
    ...     print(tile.iota((4, 8), axis=1))
    >>> text = k.lower()
    Tile([4, 8], i32)
    >>> for line in text.splitlines():
    ...     if "ttile.iota" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v1 = ttile.iota {dim = 1 : i32} : tensor<4x8xi32>
    """
    shape = _shape_of(shape)
    t = element_type(dtype) if dtype is not None else "i32"
    if is_float(t):
        raise _err("tile.iota gives integers; cast the result for floats")
    axis = _axis(axis, len(shape))
    ttype = tensor_type(shape, t)
    (name,) = current_trace().emit(f"ttile.iota {{dim = {axis} : i32}} : "
                                   f"{ttype}", [ttype])
    return Tile(name, shape, t)


def _axis(axis, rank):
    if not isinstance(axis, int) or not -rank <= axis < rank:
        raise _err(f"axis {axis!r} of a rank-{rank} tile")
    return axis % rank


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape``, with NumPy's rules.

    The op is ``ttile.broadcast``. ``x`` is a tile or a view of one with unit
    dims (``x[:, None]``); a dim of ``x`` must equal the dim of ``shape`` it
    lands on. A unit dim of a tile is not stretched (a ``KernelTraceError``, a
    ``TypeError``): index with ``None`` instead. Binary ops broadcast
    implicitly; this spells it out. A Python number raises: use ``tile.full``.

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32]):
    ...     row = tile.load(X, at=(0,), shape=(8,))
    ...     print(tile.broadcast_to(row, (4, 8)))
    ...     print(tile.broadcast_to(row[:, None], (8, 3)))
    >>> text = k.lower()
    Tile([4, 8], f32)
    Tile([8, 3], f32)
    """
    shape = _shape_of(shape)
    if isinstance(x, (Tile, _Expanded)):
        return _to_shape(x, shape)
    raise _err("tile.broadcast_to takes a tile; numbers use tile.full")


def transpose(x, perm=None):
    """The tile with its dims permuted (reversed by default).

    ``perm`` is a permutation of ``0 .. ndim - 1``; the op is
    ``ttile.transpose``. ``x.T`` is ``tile.transpose(x)``.

    >>> @ts.kernel
    ... def k(X: ts.KTile["M", "N", ts.f32]):
    ...     x = tile.load(X, at=(0, 0), shape=(16, 32))
    ...     print(tile.transpose(x), x.T)
    >>> text = k.lower()
    Tile([32, 16], f32) Tile([32, 16], f32)
    """
    if not isinstance(x, Tile):
        raise _err(f"tile.transpose takes a tile, got {x!r}")
    check_visible(x, "tile")
    perm = tuple(builtins.range(x.ndim))[::-1] if perm is None else tuple(perm)
    if sorted(perm) != list(builtins.range(x.ndim)):
        raise _err(f"{list(perm)} is not a permutation of a rank-{x.ndim} "
                   f"tile's dims")
    shape = tuple(x.shape[p] for p in perm)
    ttype = tensor_type(shape, x.type)
    (name,) = current_trace().emit(
        f"ttile.transpose {x.name} {{permutation = array<i64: "
        f"{', '.join(map(str, perm))}>}} : {x.mlir_type} -> {ttype}", [ttype])
    return Tile(name, shape, x.type)


def cast(x, dtype, *, saturate: bool = False, stochastic_round=None):
    """``x`` converted to the element type ``dtype``.

    The op is ``ttile.cast`` for tiles. ``x`` is a tile (a tile of the same
    type without options is returned as it is) or a scalar of the program
    (converted with ``arith`` ops). Float results round to nearest even, or,
    with ``stochastic_round`` (an i32 seed: a Python integer or scalar),
    stochastically: to the neighbour away from zero with probability equal to
    the distance from the one toward zero over the gap, so that the expected
    result is the value. The draws are Philox blocks of the key (seed, 0) and
    the counter (the element's row-major place in the tile, the program's
    linear index, 3, 0): the same seed gives the same result, so a kernel
    varies it between steps and loop iterations. ``saturate=True`` clamps to
    the target's finite range (for fp8).

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.bf16]):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     tile.store(Y, tile.cast(x, ts.bf16), at=(0,))
    ...     print(tile.cast(tile.program_id(0), ts.f32))
    >>> text = k.lower()
    Scalar(f32)
    >>> for line in text.splitlines():
    ...     if "ttile.cast" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v3 = ttile.cast %v2 : tensor<16xf32> -> tensor<16xbf16>
    """
    if isinstance(x, Scalar):
        return _convert_scalar(x, element_type(dtype))
    if not isinstance(x, Tile):
        raise _err(f"tile.cast takes a tile, got {x!r}")
    check_visible(x, "tile")
    t = element_type(dtype)
    if t == x.type and not saturate and stochastic_round is None:
        return x
    rtype = tensor_type(x.shape, t)
    attrs = []
    if saturate:
        attrs.append("saturate")
    seed = ""
    if stochastic_round is not None:
        attrs.append("stochastic_round")
        s = stochastic_round
        if _is_number(s):
            s = _scalar_const(int(s), "i32")
        elif isinstance(s, Scalar):
            s = _convert_scalar(s, "i32")
        else:
            raise _err("stochastic_round takes an i32 seed")
        seed = f" seed {s.name}"
    attr_text = f" {{{', '.join(attrs)}}}" if attrs else ""
    (name,) = current_trace().emit(
        f"ttile.cast {x.name}{seed}{attr_text} : {x.mlir_type} -> {rtype}",
        [rtype])
    return Tile(name, x.shape, t)


# --------------------------------------------------------------------------
# Reductions and products
# --------------------------------------------------------------------------

def _reduce(kind, x, axis):
    if not isinstance(x, Tile):
        raise _err(f"tile.{kind} takes a tile, got {x!r}")
    check_visible(x, "tile")
    if x.ndim == 1:
        raise _err(f"tile.{kind} of a rank-1 tile would give a scalar; "
                   f"reduce a [1, n] tile along axis 1 instead")
    axis = _axis(axis, x.ndim)
    shape = x.shape[:axis] + x.shape[axis + 1:]
    rtype = tensor_type(shape, x.type)
    (name,) = current_trace().emit(
        f"ttile.reduce {kind} {x.name} {{dim = {axis} : i32}} : "
        f"{x.mlir_type} -> {rtype}", [rtype])
    return Tile(name, shape, x.type)


def sum(x, axis: int = -1):  # noqa: A001
    """The sum of the tile ``x`` along ``axis``, which is dropped.

    The op is ``ttile.reduce sum``. The order of the additions is fixed: a
    kernel gives the same bits at every run. ``x`` has rank 2 or more: a
    reduction that would leave a scalar (of a rank-1 tile) raises a
    ``KernelTraceError`` (a ``TypeError``); reduce a ``[1, n]`` tile along axis
    1 instead. ``axis`` may be negative.

    >>> @ts.kernel
    ... def k(X: ts.KTile["M", "N", ts.f32], Y: ts.KTile["M", ts.f32]):
    ...     x = tile.load(X, at=(0, 0), shape=(4, 8))
    ...     y = tile.sum(x, axis=1)
    ...     print(y)
    ...     tile.store(Y, y, at=(0,))
    >>> text = k.lower()
    Tile([4], f32)
    >>> for line in text.splitlines():
    ...     if "ttile.reduce" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v4 = ttile.reduce sum %v3 {dim = 1 : i32} :
        tensor<4x8xf32> -> tensor<4xf32>
    """
    return _reduce("sum", x, axis)


def max(x, axis: int = -1):  # noqa: A001
    """The maximum of the tile ``x`` along ``axis``, which is dropped.

    The op is ``ttile.reduce max``. ``x`` has rank 2 or more: a reduction that
    would leave a scalar (of a rank-1 tile) raises a ``KernelTraceError`` (a
    ``TypeError``); reduce a ``[1, n]`` tile along axis 1 instead. ``axis`` may
    be negative.

    >>> @ts.kernel
    ... def k(X: ts.KTile["M", "N", ts.f32], Y: ts.KTile["M", ts.f32]):
    ...     x = tile.load(X, at=(0, 0), shape=(4, 8))
    ...     y = tile.max(x, axis=1)
    ...     print(y)
    ...     tile.store(Y, y, at=(0,))
    >>> text = k.lower()
    Tile([4], f32)
    >>> for line in text.splitlines():
    ...     if "ttile.reduce" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v4 = ttile.reduce max %v3 {dim = 1 : i32} :
        tensor<4x8xf32> -> tensor<4xf32>
    """
    return _reduce("max", x, axis)


def min(x, axis: int = -1):  # noqa: A001
    """The minimum of the tile ``x`` along ``axis``, which is dropped.

    The op is ``ttile.reduce min``. ``x`` has rank 2 or more: a reduction that
    would leave a scalar (of a rank-1 tile) raises a ``KernelTraceError`` (a
    ``TypeError``); reduce a ``[1, n]`` tile along axis 1 instead. ``axis`` may
    be negative.

    >>> @ts.kernel
    ... def k(X: ts.KTile["M", "N", ts.f32], Y: ts.KTile["M", ts.f32]):
    ...     x = tile.load(X, at=(0, 0), shape=(4, 8))
    ...     y = tile.min(x, axis=1)
    ...     print(y)
    ...     tile.store(Y, y, at=(0,))
    >>> text = k.lower()
    Tile([4], f32)
    >>> for line in text.splitlines():
    ...     if "ttile.reduce" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v4 = ttile.reduce min %v3 {dim = 1 : i32} :
        tensor<4x8xf32> -> tensor<4xf32>
    """
    return _reduce("min", x, axis)


def prod(x, axis: int = -1):
    return _reduce("prod", x, axis)


def dot(a, b, acc=None, *, tf32=False):
    """The matrix product ``acc + a @ b`` of two rank-2 tiles.

    The op is ``ttile.dot``. ``a`` is ``[M, K]`` and ``b`` ``[K, N]``; ``acc``
    is an ``[M, N]`` accumulator (zeros by default: f32, or i32 for i8
    operands), and the result has its type. ``a @ b`` of tiles is the same with
    zeros. bf16, f16 and fp8 operands multiply into f32 on the tensor cores, i8
    into i32; f32 operands multiply exactly on FMAs, or, with ``tf32=True``,
    are rounded to tf32 (10 mantissa bits) on the tensor cores: wgmma on Hopper
    where ``b`` is the transpose of an ``[N, K]`` load (it reads the f32 bits,
    dropping the low 13), mma.sync m16n8k8 otherwise (rounded to nearest, ties
    away: ``cvt.rna``). Inner dims that differ, or an accumulator of another
    shape, raise a ``KernelTraceError`` (a ``TypeError``).

    >>> @ts.kernel
    ... def k(A: ts.KTile["M", "K", ts.bf16], B: ts.KTile["K", "N", ts.bf16],
    ...       C: ts.KTile["M", "N", ts.f32]):
    ...     a = tile.load(A, at=(0, 0), shape=(64, 32))
    ...     b = tile.load(B, at=(0, 0), shape=(32, 16))
    ...     c = tile.dot(a, b)
    ...     print(c)
    ...     tile.store(C, c, at=(0, 0))
    >>> text = k.lower()
    Tile([64, 16], f32)
    >>> for line in text.splitlines():
    ...     if "ttile.dot" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v8 = ttile.dot %v3, %v6, %v7 :
        tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xf32>
    """
    for x in (a, b):
        if not isinstance(x, Tile) or x.ndim != 2:
            raise _err(f"tile.dot takes two rank-2 tiles, got {x!r}")
        check_visible(x, "tile")
    if a.shape[1] != b.shape[0]:
        raise _err(f"tile.dot of [{a.shape[0]}, {a.shape[1]}] and "
                   f"[{b.shape[0]}, {b.shape[1]}]: the inner dims differ")
    shape = (a.shape[0], b.shape[1])
    if acc is None:
        acc = zeros(shape, "i32" if a.type == "i8" else "f32")
    elif not isinstance(acc, Tile):
        raise _err(f"tile.dot's accumulator must be a tile, got {acc!r}")
    check_visible(acc, "tile")
    if acc.shape != shape:
        raise _err(f"tile.dot's accumulator is {list(acc.shape)}, the product "
                   f"{list(shape)}")
    attrs = ""
    if tf32:
        if a.type != "f32" or b.type != "f32":
            raise _err(f"tile.dot(tf32=True) reads f32 operands as tf32; got "
                       f"{a.type} and {b.type}")
        attrs = " {tf32}"
    (name,) = current_trace().emit(
        f"ttile.dot {a.name}, {b.name}, {acc.name}{attrs} : {a.mlir_type}, "
        f"{b.mlir_type} -> {acc.mlir_type}", [acc.mlir_type])
    return Tile(name, shape, acc.type)


# --------------------------------------------------------------------------
# Attention helpers
# --------------------------------------------------------------------------

def _rebind(x: Tile, result: Tile) -> Tile:
    """In-place form: ``x`` now stands for ``result`` (only for tiles of
    the current block: a tile from outside a loop is carried by
    assignment)."""
    if x.block is not current_trace().block:
        raise _err("an in-place tile op on a tile defined outside this "
                   "tile.range loop; assign the result instead")
    x.name = result.name
    return x


def _mask(op, scores, offsets):
    """ttile.<op> of ``scores`` with index operands ``offsets`` ((value,
    what) pairs; a Block stands for its start), in place."""
    if not isinstance(scores, Tile) or scores.ndim != 2 or not is_float(
            scores.type):
        raise _err(f"tile.{op} takes a rank-2 float tile, got {scores!r}")
    check_visible(scores, "tile")
    names = [_as_index(v.start if isinstance(v, Block) else v,
                       f"{op}'s {what}").name for v, what in offsets]
    (name,) = current_trace().emit(
        f"ttile.{op} {scores.name}, {', '.join(names)} : "
        f"{scores.mlir_type}", [scores.mlir_type])
    return _rebind(scores, Tile(name, scores.shape, scores.type))


def mask_causal(scores, row_offset, col_offset):
    """Sets to -inf the scores of keys that come after their query.

    Element ``(i, j)`` of ``scores`` is the score of query ``row_offset + i``
    against key ``col_offset + j``; it becomes -inf where
    ``col_offset + j > row_offset + i`` (``ttile.mask_causal``).

    ``scores`` is a rank-2 float tile; the offsets are integer scalars or
    Python integers (a ``tile.range_n`` block stands for its first row).
    Changes ``scores`` in place and returns it; ``scores`` must be defined in
    the current loop body (a ``KernelTraceError`` otherwise: assign the result
    instead).

    >>> @ts.kernel
    ... def k(S: ts.KTile["M", "N", ts.f32]):
    ...     s = tile.load(S, at=(0, 0), shape=(16, 16))
    ...     tile.mask_causal(s, tile.row_index(), 0)
    ...     tile.store(S, s, at=(0, 0))
    >>> "ttile.mask_causal" in k.lower()
    True
    """
    return _mask("mask_causal", scores, [(row_offset, "row offset"),
                                         (col_offset, "column offset")])


def mask_keys(scores, col_offset, count):
    """Sets to -inf the scores of keys past the end of the sequence.

    Column ``j`` of ``scores`` holds key ``col_offset + j``; it becomes -inf
    where that key is not below ``count`` (``ttile.mask_keys``): the last key
    block of a sequence of ``count`` keys runs past its end.

    ``scores`` is a rank-2 float tile; ``col_offset`` and ``count`` are integer
    scalars or Python integers (a ``tile.range_n`` block stands for its first
    row). Changes ``scores`` in place and returns it, as ``tile.mask_causal``
    does.

    >>> @ts.kernel
    ... def k(S: ts.KTile["M", "N", ts.f32]):
    ...     s = tile.load(S, at=(0, 0), shape=(16, 16))
    ...     tile.mask_keys(s, 0, S.shape[1])
    ...     tile.store(S, s, at=(0, 0))
    >>> "ttile.mask_keys" in k.lower()
    True
    """
    return _mask("mask_keys", scores, [(col_offset, "column offset"),
                                       (count, "key count")])


def softmax_online(scores):
    """One block of an online softmax over rows: returns ``(p, m_c, l_c)``.

    ``m_c`` holds the row maxima of ``scores`` ``[M]``,
    ``p = exp(scores - m_c[:, None])`` ``[M, N]``, and ``l_c`` the row sums of
    ``p`` ``[M]`` (``ttile.softmax_online``).

    ``scores`` is an f32 ``[M, N]`` tile. The three results are what
    ``tile.softmax_accumulate`` folds into a running attention output.

    >>> @ts.kernel
    ... def k(S: ts.KTile["M", "N", ts.f32]):
    ...     p, m_c, l_c = tile.softmax_online(
    ...         tile.load(S, at=(0, 0), shape=(16, 32)))
    ...     print(p, m_c, l_c)
    >>> text = k.lower()
    Tile([16, 32], f32) Tile([16], f32) Tile([16], f32)
    """
    if not isinstance(scores, Tile) or scores.ndim != 2 or scores.type != "f32":
        raise _err(f"tile.softmax_online takes an f32 [M, N] tile, got "
                   f"{scores!r}")
    check_visible(scores, "tile")
    m = scores.shape[0]
    row = tensor_type((m,), "f32")
    p, mc, lc = current_trace().emit(
        f"ttile.softmax_online {scores.name} : {scores.mlir_type} -> "
        f"{scores.mlir_type}, {row}, {row}", [scores.mlir_type, row, row])
    return (Tile(p, scores.shape, "f32"), Tile(mc, (m,), "f32"),
            Tile(lc, (m,), "f32"))


def softmax_accumulate(acc, m, l, p, v, m_c, l_c):
    """Folds one block of an online softmax into the running output.

    Returns ``(acc', m', l')`` (``ttile.softmax_accumulate``). With
    ``m' = max(m, m_c)``: ``acc' = exp(m - m') acc + exp(m_c - m') p @ v`` and
    ``l' = exp(m - m') l + exp(m_c - m') l_c``, row by row. ``acc`` is
    ``[M, D]``, ``p`` ``[M, N]`` and ``v`` ``[N, D]`` (``p`` is f32 from
    ``tile.softmax_online``, ``v`` may be a bf16 or f16 tile of values), and
    ``m``, ``l``, ``m_c``, ``l_c`` are f32 ``[M]`` row statistics. Shapes that
    do not match, or statistics of another shape or type, raise a
    ``KernelTraceError`` (a ``TypeError``).

    >>> import math
    >>> @ts.kernel
    ... def k(S: ts.KTile["M", "N", ts.f32], V: ts.KTile["N", "D", ts.f32]):
    ...     p, m_c, l_c = tile.softmax_online(
    ...         tile.load(S, at=(0, 0), shape=(16, 32)))
    ...     acc, m = tile.zeros((16, 64)), tile.full((16,), -math.inf)
    ...     l = tile.zeros((16,))
    ...     v = tile.load(V, at=(0, 0), shape=(32, 64))
    ...     print(*tile.softmax_accumulate(acc, m, l, p, v, m_c, l_c))
    >>> text = k.lower()
    Tile([16, 64], f32) Tile([16], f32) Tile([16], f32)
    """
    for x in (acc, m, l, p, v, m_c, l_c):
        if not isinstance(x, Tile):
            raise _err(f"tile.softmax_accumulate takes tiles, got {x!r}")
        check_visible(x, "tile")
    if p.ndim != 2 or v.ndim != 2 or acc.ndim != 2:
        raise _err("tile.softmax_accumulate: acc, p and v are rank-2 tiles")
    if p.shape[1] != v.shape[0] or acc.shape != (p.shape[0], v.shape[1]):
        raise _err(f"tile.softmax_accumulate: p {list(p.shape)} @ v "
                   f"{list(v.shape)} does not match acc {list(acc.shape)}")
    for x in (m, l, m_c, l_c):
        if x.shape != (acc.shape[0],) or x.type != "f32":
            raise _err(f"tile.softmax_accumulate: row statistics are f32 "
                       f"[{acc.shape[0]}] tiles, got {x!r}")
    row = m.mlir_type
    a, mm, ll = current_trace().emit(
        f"ttile.softmax_accumulate {acc.name}, {m.name}, {l.name}, {p.name}, "
        f"{v.name}, {m_c.name}, {l_c.name} : {acc.mlir_type}, {row}, "
        f"{p.mlir_type}, {v.mlir_type}", [acc.mlir_type, row, row])
    return (Tile(a, acc.shape, acc.type), Tile(mm, m.shape, "f32"),
            Tile(ll, l.shape, "f32"))


# --------------------------------------------------------------------------
# The program and its context
# --------------------------------------------------------------------------

_AXES = {0: "x", 1: "y", 2: "z", "x": "x", "y": "y", "z": "z"}


def program_id(axis=0) -> Scalar:
    """This program's index along grid axis ``axis``, an index scalar.

    ``axis`` is 0, 1 or 2 (or "x", "y", "z"); the op is ``ttile.program_id``. A
    launch ``kernel[grid](...)`` runs one program per point of the grid;
    ``tile.program_id(0) * T.m`` is the first row of the program's block. Other
    axes raise a ``KernelTraceError`` (a ``TypeError``).

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32]):
    ...     print(tile.program_id(0))
    >>> text = k.lower()
    Scalar(index)
    >>> "ttile.program_id x" in text
    True
    """
    if axis not in _AXES:
        raise _err(f"grid axes are 0, 1 and 2; got {axis!r}")
    trace = current_trace()
    key = _AXES[axis]
    cached = trace.program_ids.get(key)
    if cached is not None and cached.block.encloses(trace.block):
        return cached
    (name,) = trace.emit(f"ttile.program_id {key}", ["index"])
    value = Scalar(name, "index")
    if trace.block.depth == 0:
        trace.program_ids[key] = value
    return value


def num_programs(axis=0) -> Scalar:
    """The number of programs of the grid along ``axis``, an index scalar.

    ``axis`` is 0, 1 or 2 (or "x", "y", "z"); the op is ``ttile.num_programs``.
    It is the stride of a program that loops over the blocks ``program_id,
    program_id + num_programs, ...``.

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32]):
    ...     print(tile.num_programs(0))
    >>> text = k.lower()
    Scalar(index)
    >>> "ttile.num_programs x" in text
    True
    """
    if axis not in _AXES:
        raise _err(f"grid axes are 0, 1 and 2; got {axis!r}")
    (name,) = current_trace().emit(f"ttile.num_programs {_AXES[axis]}",
                                   ["index"])
    return Scalar(name, "index")


def context():
    """The schedule the kernel is traced with, by convention ``T``.

    It is a ``ts.Schedule``. ``T.m`` and ``T.n`` are the block sizes, ``T.k``
    the reduction step, then ``T.warps``, ``T.stages``, ``T.vector``,
    ``T.swizzle``, ``T.cluster`` and the schedule's named parameters (``T.d``,
    ...; ``T.BM``, ``T.BN``, ``T.BK`` alias ``m``, ``n``, ``k``). They are
    Python values, so tile shapes can use them.

    >>> @ts.kernel.schedule(ts.Schedule(block=(32, 64), warps=4, d=128))
    ... def k(X: ts.KTile["N", ts.f32]):
    ...     T = tile.context()
    ...     print(T.m, T.n, T.k, T.warps, T.d)
    >>> text = k.lower()
    32 64 32 4 128
    """
    return current_trace().schedule


def row_index():
    """The first row (query) of this program's block, an index scalar.

    It is ``tile.program_id(0) * T.m``.

    >>> @ts.kernel
    ... def k(X: ts.KTile["M", "N", ts.f32]):
    ...     print(tile.row_index())
    >>> text = k.lower()
    Scalar(index)
    """
    return program_id(0) * context().m


def col_index(block) -> Scalar:
    """The first column (key) of a ``tile.range_n`` block, an index scalar.

    ``block`` is a block of a ``tile.range_n`` loop (the value is its first
    row); an integer scalar or a Python integer is returned as an index scalar.

    >>> @ts.kernel
    ... def k(K: ts.KTile["S", "D", ts.f32]):
    ...     for blk in tile.range_n(K.shape, 64):
    ...         print(blk, tile.col_index(blk))
    >>> text = k.lower()
    Block(size 64) Scalar(index)
    """
    if isinstance(block, Block):
        return block.start
    return _as_index(block, "tile.col_index's argument")


# --------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------

def _start(ref, at, shape, rows):
    if isinstance(at, Block):
        if ref.rank != 2:
            raise _err("a tile.range_n block indexes the rows of a rank-2 "
                       "tensor")
        return [at.start, 0]
    if at is None:
        if ref.rank != 2 or rows is None:
            raise _err("tile.load/store needs at=(indices...) (or rows= of "
                       "a rank-2 tensor: the program's block of rows)")
        return [program_id(0) * rows, 0]
    if not isinstance(at, (tuple, list)):
        at = (at,)
    if len(at) != ref.rank:
        raise _err(f"{ref.arg} has {ref.rank} dims; at= gives {len(at)} "
                   f"indices")
    return list(at)


def _box(ref, at, shape, rows, cols):
    if shape is None:
        if isinstance(at, Block):
            rows = at.size if rows is None else rows
        if rows is None or cols is None or ref.rank != 2:
            raise _err("tile.load needs shape=(...) (or rows= and cols= for "
                       "a rank-2 tensor)")
        shape = (rows, cols)
    shape = _shape_of(shape)
    if len(shape) != ref.rank:
        raise _err(f"a tile of {ref.arg} has its {ref.rank} dims; got shape "
                   f"{list(shape)} (use unit dims)")
    return shape


def _mask_of(mask, shape):
    if mask is None:
        return None
    if not isinstance(mask, (Tile, _Expanded)):
        raise _err(f"a mask is a boolean tile, got {mask!r}")
    m = _to_shape(mask, shape)
    if m.type != "i1":
        raise _err(f"a mask is a boolean tile, got {m.type}")
    return m


def load(ref, at=None, shape=None, *, rows=None, cols=None, mask=None,
         padding=None, vector=None, prefetch=None, multicast=False):
    """Reads a tile of the tensor ``ref``: the box of ``shape`` at ``at``.

    The result is a tile of ``ref``'s element type (``ttile.load``). ``ref`` is
    a ``KTile`` argument of the kernel or a part of one (``X[b]``). ``at``
    gives one index per dim (integer scalars or Python integers), or is a
    ``tile.range_n`` block (its rows of a rank-2 tensor); ``shape`` has one
    positive Python integer per dim. Elements outside the tensor, and where the
    boolean tile ``mask`` (broadcast to ``shape``) is false, read ``padding``
    (0 by default).

    For rank-2 tensors ``rows=`` and ``cols=`` may replace ``at`` and ``shape``
    (spec 002's form): without ``at`` the box starts at the program's block of
    rows, ``program_id(0) * rows``, and with a block ``at`` its rows are the
    block's.

    ``vector`` states the widest access the kernel needs, in elements: the
    compiler uses 16-byte accesses wherever alignment allows, and ``vector`` is
    checked against that (a power of two, at most 16 bytes).

    ``prefetch=N`` in a ``tile.range``/``tile.range_n`` loop keeps N copies of
    the tile in flight, N - 1 loaded ahead of the one in use: the loop runs at
    least N stages (as ``range_n(prefetch=N)``; stages are the loop's, so its
    other loads are prefetched as deep). Outside any loop a load is already
    issued where it stands and waited for only at its first use; ``prefetch``
    is checked and changes nothing there.

    ``multicast=True`` (a schedule of ``cluster`` programs, ``T.cluster`` of 2
    or more) states that every program of the cluster loads this same tile at
    the same point; on Hopper the copy is then made once for the cluster (each
    program copies a part for all of them). The programs of a cluster must run
    the same iterations of the loop around it.

    Errors (a ``KernelTraceError``, a ``TypeError``): ``ref`` not a tensor
    argument, a count of indices or dims other than the tensor's rank, a mask
    that is not boolean, ``vector`` too wide.

    >>> @ts.kernel
    ... def k(X: ts.KTile["M", "N", ts.f32], Y: ts.KTile["M", "N", ts.f32]):
    ...     T = tile.context()
    ...     x = tile.load(X, at=(tile.row_index(), 0), shape=(T.m, T.n),
    ...                   padding=-1.0)
    ...     print(x)
    ...     tile.store(Y, x, at=(tile.row_index(), 0))
    >>> text = k.lower()
    Tile([64, 64], f32)
    >>> for line in text.splitlines():
    ...     if "ttile.load" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v5 = ttile.load %arg0[%v3, %v4] {padding = 0xBF800000 : f32} :
        memref<?x?xf32> -> tensor<64x64xf32>
    """
    if not isinstance(ref, TileRef):
        raise _err(f"tile.load reads a KTile argument (or a part of one), got "
                   f"{ref!r}")
    check_visible(ref, "tensor")
    shape = _box(ref, at, shape, rows, cols)
    _check_vector(vector, ref.type)
    if prefetch is not None:
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) or \
                prefetch < 1:
            raise _err(f"tile.load's prefetch is a positive integer (copies "
                       f"of the tile in flight), got {prefetch!r}")
        loops = current_trace().loop_prefetch
        if loops:
            loops[-1].append(prefetch)
    idx = [_as_index(i, "a load index") for i in _start(ref, at, shape,
                                                          rows)]
    m = _mask_of(mask, shape)
    ttype = tensor_type(shape, ref.type)
    if not isinstance(multicast, bool):
        raise _err(f"tile.load's multicast is True or False, got "
                   f"{multicast!r}")
    if multicast and context().cluster < 2:
        raise _err("tile.load(multicast=True) shares a tile among the "
                   "programs of a cluster: the schedule needs cluster >= 2, "
                   f"got cluster={context().cluster}")
    attrs = []
    if padding is not None:
        if is_float(ref.type):
            attrs.append(f"padding = {float_literal(padding, ref.type)} : "
                         f"{ref.type}")
        else:
            attrs.append(f"padding = {int_literal(int(padding), ref.type)} "
                         f": {ref.type}")
    if multicast:
        attrs.append("multicast")
    attrs = f" {{{', '.join(attrs)}}}" if attrs else ""
    mask_text = f" mask {m.name}" if m is not None else ""
    mask_type = f", {m.mlir_type}" if m is not None else ""
    (name,) = current_trace().emit(
        f"ttile.load {ref.name}[{', '.join(i.name for i in idx)}]{mask_text}"
        f"{attrs} : {ref.memref_type}{mask_type} -> {ttype}", [ttype])
    return Tile(name, shape, ref.type)


def load_scalar(ref, at, *, padding=0):
    """The element of ``ref`` at ``at`` as a scalar of the program.

    ``at`` gives one index per dim of ``ref`` (integer scalars or Python
    integers). Every thread reads the element, and the scalar can index further
    loads (a row's label picks its logit). An index outside the tensor reads
    ``padding`` (a Python number, 0 by default) instead.

    >>> @ts.kernel
    ... def k(X: ts.KTile["M", "C", ts.f32], L: ts.KTile["M", ts.i32],
    ...       Y: ts.KTile["M", ts.f32]):
    ...     r = tile.program_id(0)
    ...     label = tile.load_scalar(L, at=(r,), padding=0)
    ...     print(label, tile.load_scalar(X, at=(r, label)))
    >>> text = k.lower()
    Scalar(i32) Scalar(f32)
    """
    if not isinstance(ref, TileRef):
        raise _err(f"tile.load_scalar reads a KTile argument (or a part of "
                   f"one), got {ref!r}")
    check_visible(ref, "tensor")
    if not isinstance(at, (tuple, list)):
        at = (at,)
    if len(at) != ref.rank:
        raise _err(f"{ref.arg} has {ref.rank} dims; at= gives {len(at)} "
                   f"indices")
    if not _is_number(padding):
        raise _err(f"tile.load_scalar's padding is a number, got "
                   f"{padding!r}")
    idx = [_as_index(i, "a load index") for i in at]
    trace = current_trace()
    # In bounds: 0 <= i < dim for every dim (unsigned: a negative index is
    # a large one).
    ok = None
    for d, i in enumerate(idx):
        (c,) = trace.emit(f"arith.cmpi ult, {i.name}, {ref.dim(d).name} : "
                          f"index", ["i1"])
        if ok is not None:
            (c,) = trace.emit(f"arith.andi {ok}, {c} : i1", ["i1"])
        ok = c
    pad = _scalar_const(padding, ref.type)
    inner = trace.fresh()
    (name,) = trace.emit(
        f"scf.if {ok} -> ({ref.type}) {{\n"
        f"  {inner} = memref.load {ref.name}"
        f"[{', '.join(i.name for i in idx)}] : {ref.memref_type}\n"
        f"  scf.yield {inner} : {ref.type}\n"
        f"}} else {{\n  scf.yield {pad.name} : {ref.type}\n}}", [ref.type])
    return Scalar(name, ref.type)


def _check_vector(vector, t):
    if vector is None:
        return
    if (isinstance(vector, bool) or not isinstance(vector, int) or vector < 1
            or vector & (vector - 1)):
        raise _err(f"vector= is a power of two, got {vector!r}")
    if vector * bit_width(t) > 128:
        raise _err(f"vector={vector} of {t} is {vector * bit_width(t) // 8} "
                   f"bytes per access; the widest access is 16 bytes")


def store(ref, value, at=None, *, rows=None, mask=None):
    """Writes the tile ``value`` into the tensor ``ref`` at ``at``.

    The op is ``ttile.store``. ``at`` gives one index per dim (integer scalars
    or Python integers) or is a ``tile.range_n`` block; for a rank-2 tensor,
    ``at`` may be left out for the program's block of rows
    (``program_id(0) * rows``, ``rows`` defaulting to the tile's first dim).
    Elements outside the tensor, and where the boolean tile ``mask`` is false,
    are not written. ``value`` must have the tensor's rank and element type
    (``tile.cast`` converts), else a ``KernelTraceError`` (a ``TypeError``) is
    raised.

    >>> @ts.kernel
    ... def k(X: ts.KTile["M", "N", ts.f32], Y: ts.KTile["M", "N", ts.f32]):
    ...     x = tile.load(X, at=(0, 0), shape=(16, 16))
    ...     tile.store(Y, x * 2.0, at=(0, 0))
    >>> for line in k.lower().splitlines():
    ...     if "ttile.store" in line:
    ...         print(line.split(" loc(")[0].strip())
    ttile.store %v5, %arg1[%v6, %v7] : tensor<16x16xf32>, memref<?x?xf32>
    """
    if not isinstance(ref, TileRef):
        raise _err(f"tile.store writes a KTile argument, got {ref!r}")
    if not isinstance(value, Tile):
        raise _err(f"tile.store writes a tile, got {value!r}")
    check_visible(ref, "tensor")
    check_visible(value, "tile")
    if value.ndim != ref.rank:
        raise _err(f"a tile stored into {ref.arg} has its {ref.rank} dims; "
                   f"got {list(value.shape)}")
    if value.type != ref.type:
        raise _err(f"storing a {value.type} tile into {ref.arg} of {ref.type}; "
                   f"use tile.cast")
    rows = value.shape[0] if rows is None and ref.rank == 2 else rows
    idx = [_as_index(i, "a store index")
           for i in _start(ref, at, value.shape, rows)]
    m = _mask_of(mask, value.shape)
    mask_text = f" mask {m.name}" if m is not None else ""
    mask_type = f", {m.mlir_type}" if m is not None else ""
    current_trace().emit(
        f"ttile.store {value.name}, {ref.name}[{', '.join(i.name for i in idx)}]"
        f"{mask_text} : {value.mlir_type}, {ref.memref_type}{mask_type}")


# --------------------------------------------------------------------------
# Loops
# --------------------------------------------------------------------------

class _Range:
    """What ``tile.range`` returns: a ``for`` loop over it in a kernel
    becomes one ``ttile.range`` (see tessera._kernel_ast)."""

    __slots__ = ("start", "stop", "step", "stages", "block")

    def __init__(self, start, stop, step, stages, block=None):
        self.start, self.stop, self.step = start, stop, step
        self.stages = stages
        self.block = block

    def __iter__(self):
        raise _err("a loop over tile.range must be a plain `for` statement "
                   "of the kernel's body, without break, continue or return")


def range(start, stop=None, step=1, *, stages=None):  # noqa: A001
    """A loop of the program, traced once into one ``ttile.range`` op.

    Written ``for k in tile.range(start, stop, step):`` in a kernel. As with
    Python's ``range``, ``tile.range(stop)`` starts at 0; the bounds are
    integer scalars or Python integers, and a Python ``step`` must be positive.
    ``stages`` (by default the schedule's ``stages``) of 2 or more prefetches
    the loop's loads ``stages - 1`` iterations ahead. Variables that exist
    before the loop and are assigned in its body are carried from one iteration
    to the next (their type must stay); values set only inside the body are not
    visible after it. The ``for`` must be a plain statement of the kernel's
    body, without ``break``, ``continue`` or ``return``.

    >>> @ts.kernel.schedule(ts.Schedule(block=(16, 16), warps=4, stages=2))
    ... def k(X: ts.KTile["M", "N", ts.f32], Y: ts.KTile["M", "N", ts.f32]):
    ...     T = tile.context()
    ...     acc = tile.zeros((T.m, T.n))
    ...     for j in tile.range(0, X.shape[1], T.n):
    ...         acc = acc + tile.load(X, at=(0, j), shape=(T.m, T.n))
    ...     tile.store(Y, acc, at=(0, 0))
    >>> for line in k.lower().splitlines():
    ...     if "ttile.range" in line:
    ...         print(line.strip())
    %v17 = ttile.range %v12 = %v6 to %v5 step %v7 stages 2
        iter_args(%v13 = %v1) -> (tensor<16x16xf32>) {
    """
    if stop is None:
        start, stop = 0, start
    if stages is None:
        stages = context().stages
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
        raise _err(f"stages is a positive integer, got {stages!r}")
    if isinstance(step, int) and step <= 0:
        raise _err(f"tile.range's step must be positive, got {step}")
    return _Range(start, stop, step, stages)


def range_n(extent, block: int, *, prefetch=None, start=0):
    """A loop over blocks of ``block`` rows: one ``Block`` per step.

    ``for blk in tile.range_n(K.shape, T.n):`` walks the rows of ``K``, read
    with ``tile.load(K, blk, cols=...)``. ``extent`` is a size (an integer
    scalar or Python integer) or a shape whose first dim is the size; ``block``
    is a positive Python integer (a schedule value); the loop starts at
    ``start``. ``prefetch`` is the loop's stages (by default the schedule's).
    It is a ``tile.range`` loop otherwise.

    >>> @ts.kernel.schedule(ts.Schedule(block=(16, 32), warps=4))
    ... def k(K: ts.KTile["S", "D", ts.f32], Y: ts.KTile["S", "D", ts.f32]):
    ...     T = tile.context()
    ...     for blk in tile.range_n(K.shape, T.n, prefetch=2):
    ...         kb = tile.load(K, blk, cols=64)
    ...         print(blk, kb)
    ...         tile.store(Y, kb, at=blk)
    >>> text = k.lower()
    Block(size 32) Tile([32, 64], f32)
    >>> "stages 2" in text
    True
    """
    if isinstance(extent, tuple):
        extent = extent[0]
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise _err(f"tile.range_n's block is a positive integer (a schedule "
                   f"value), got {block!r}")
    r = range(start, extent, block, stages=prefetch)
    r.block = block
    return r
