"""Making tiles, changing their shape and element type, reducing them and
contracting them (tile.dot). tessera.tile re-exports them; its docstring
describes the DSL."""

from __future__ import annotations

import builtins

from ._tile_ir import (check_visible, current_trace, element_type, is_float,
                       tensor_type)
from ._tile_values import (Scalar, Tile, _Expanded, _convert_scalar, _err,
                           _is_number, _scalar_const, _splat, _to_shape)


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
