"""The tile DSL: the operations a ``@ts.kernel`` body is written with.

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




def exp(x): return _unary("exp", x)
def exp2(x): return _unary("exp2", x)
def log(x): return _unary("log", x)
def sqrt(x): return _unary("sqrt", x)
def rsqrt(x):
    """``1 / sqrt(x)``; of a Python number, the number."""
    if _is_number(x):
        return 1.0 / _math.sqrt(x)
    return _unary("rsqrt", x)
def tanh(x): return _unary("tanh", x)
def abs(x): return _unary("abs", x)  # noqa: A001
def erf(x): return _unary("erf", x)


def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    return 1.0 / (1.0 + exp(-x))


def maximum(a, b):
    """Elementwise maximum (NaN wins, as IEEE maximum)."""
    return _binary("max", a, b)


def minimum(a, b):
    return _binary("min", a, b)


def cdiv(a, b):
    """``ceil(a / b)`` of non-negative integers."""
    if _is_number(a) and _is_number(b):
        return -(-a // b)
    return (a + (b - 1)) // b


def fma(a, b, c):
    """Elementwise ``a * b + c`` rounded once (``math.fma``: the hardware's
    fused multiply-add). At least one operand is a float tile; scalars and
    Python numbers take its type."""
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
    """Elementwise ``cond ? a : b`` (cond: a boolean tile or scalar)."""
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
    """A tile of ``shape`` filled with ``value`` (a number or scalar)."""
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
    """A tile of zeros (f32 unless ``dtype``)."""
    return full(shape, 0.0 if dtype is None else 0,
                "f32" if dtype is None else dtype)


def iota(shape, axis: int, dtype=None):
    """Each element's index along ``axis`` (i32 unless ``dtype``)."""
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
    """``x`` (a tile, an expanded view or a number) broadcast to ``shape``."""
    shape = _shape_of(shape)
    if isinstance(x, (Tile, _Expanded)):
        return _to_shape(x, shape)
    raise _err("tile.broadcast_to takes a tile; numbers use tile.full")


def transpose(x, perm=None):
    """Dims permuted (reversed by default)."""
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
    """Elements converted to ``dtype``: floats round to nearest even, or
    stochastically with the i32 seed ``stochastic_round`` (to the
    neighbour away from zero with probability equal to the distance from
    the one toward zero over the gap, so that the expected result is the
    value); ``saturate`` clamps to the target's finite range (fp8).
    Stochastic draws are Philox blocks of the key (seed, 0) and the counter
    (the element's row-major place in the tile, the program's linear index,
    3, 0): the same seed gives the same result, so a kernel varies it
    between steps and loop iterations."""
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
    """Sum along ``axis`` (that dim dropped); deterministic order."""
    return _reduce("sum", x, axis)


def max(x, axis: int = -1):  # noqa: A001
    return _reduce("max", x, axis)


def min(x, axis: int = -1):  # noqa: A001
    return _reduce("min", x, axis)


def prod(x, axis: int = -1):
    return _reduce("prod", x, axis)


def dot(a, b, acc=None, *, tf32=False):
    """``acc + a @ b`` (``acc`` zeros by default): bf16, f16, fp8 operands
    into f32 on the tensor cores; i8 into i32; f32 operands exactly, or,
    with ``tf32=True``, rounded to tf32 (10 mantissa bits) on the tensor
    cores: wgmma on Hopper where B is the transpose of a [N, K] load (it
    reads the f32 bits, dropping the low 13), mma.sync m16n8k8 otherwise
    (rounded to nearest, ties away: cvt.rna)."""
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
    """-inf where the key (``col_offset + j``) comes after the query
    (``row_offset + i``). Changes ``scores`` in place and returns it."""
    return _mask("mask_causal", scores, [(row_offset, "row offset"),
                                         (col_offset, "column offset")])


def mask_keys(scores, col_offset, count):
    """-inf in the columns whose key (``col_offset + j``) is past the last
    of ``count`` keys (a key block that runs past the sequence's end).
    Changes ``scores`` in place and returns it."""
    return _mask("mask_keys", scores, [(col_offset, "column offset"),
                                       (count, "key count")])


def softmax_online(scores):
    """One block of an online softmax over rows: ``(p, m_c, l_c)`` with
    ``m_c`` the row maxima, ``p = exp(s - m_c)``, ``l_c`` its row sums."""
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
    """Folds a block into the running output: ``m' = max(m, m_c)``,
    ``acc' = exp(m - m') acc + exp(m_c - m') p @ v``, ``l'`` likewise;
    returns ``(acc', m', l')``."""
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
    """This program's index along grid axis 0, 1 or 2."""
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
    if axis not in _AXES:
        raise _err(f"grid axes are 0, 1 and 2; got {axis!r}")
    (name,) = current_trace().emit(f"ttile.num_programs {_AXES[axis]}",
                                   ["index"])
    return Scalar(name, "index")


def context():
    """The schedule the kernel is compiled with: ``T.m``, ``T.n`` (block),
    ``T.k``, ``T.warps``, ``T.stages``, ``T.vector``, ``T.swizzle`` and the
    schedule's named parameters (``T.d``, ``T.BM``...)."""
    return current_trace().schedule


def row_index():
    """The first row (query) of this program's block: ``program_id(0) *
    T.m``."""
    return program_id(0) * context().m


def col_index(block) -> Scalar:
    """The first column (key) of a ``tile.range_n`` block."""
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
    """The box of ``shape`` of ``ref`` whose first element is at ``at`` (one
    index per dim, or a ``tile.range_n`` block). Elements outside the
    tensor, and where ``mask`` is false, read ``padding`` (0).

    ``rows=``/``cols=`` are spec 002's form for rank-2 tensors: the
    program's block of rows (or the block's rows) and ``cols`` columns.
    ``vector`` states the widest access the kernel needs: the compiler
    uses 16-byte accesses wherever alignment allows, and ``vector`` is
    checked against that (elements of one access, at most 16 bytes).

    ``prefetch=N`` in a ``tile.range``/``tile.range_n`` loop keeps N copies
    of the tile in flight, N - 1 loaded ahead of the one in use: the loop
    runs at least N stages (as ``range_n(prefetch=N)``; stages are the
    loop's, so its other loads are prefetched as deep). Outside any loop a
    load is already issued where it stands and waited for only at its
    first use; ``prefetch`` is checked and changes nothing there.

    ``multicast=True`` (a schedule of ``cluster`` programs, ``T.cluster``
    > 1) states that every program of the cluster loads this same tile at
    the same point; on Hopper the copy is then made once for the cluster
    (each program copies a part for all of them). The programs of a
    cluster must run the same iterations of the loop around it."""
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
    """The element of ``ref`` at ``at`` (one index per dim) as a scalar of
    the program: every thread reads it, and it can index further loads
    (a row's label picks its logit). An index outside the tensor reads
    ``padding``."""
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
    """Writes ``value`` to the box of ``ref`` at ``at``; elements outside the
    tensor and where ``mask`` is false are not written."""
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
    """A loop of the program: ``for k in tile.range(0, K, T.k,
    stages=3)``. ``stages`` (default: the schedule's) >= 2 prefetches the
    loop's loads ``stages - 1`` iterations ahead. Values assigned in the
    body that exist before the loop are carried from one iteration to the
    next."""
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
    """Blocks of ``block`` rows over ``extent`` (a size, or a shape whose
    first dim is the size): ``for nblk in tile.range_n(K.shape, T.n)``
    gives blocks for ``tile.load(K, nblk, cols=...)``. ``prefetch`` is the
    loop's stages."""
    if isinstance(extent, tuple):
        extent = extent[0]
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise _err(f"tile.range_n's block is a positive integer (a schedule "
                   f"value), got {block!r}")
    r = range(start, extent, block, stages=prefetch)
    r.block = block
    return r
