"""The program of a tile kernel: its ids and context, loads and stores,
and loops. tessera.tile re-exports them."""

from __future__ import annotations

from ._tile_ir import (bit_width, check_visible, current_trace, float_literal,
                       int_literal, is_float, tensor_type)
from ._tile_tensors import _shape_of
from ._tile_values import (Block, Scalar, Tile, TileRef, _Expanded, _as_index,
                           _err, _is_number, _scalar_const, _to_shape)


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
