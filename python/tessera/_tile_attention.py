"""The attention helpers of the tile DSL: causal and key masks, and the
online softmax of flash attention. tessera.tile re-exports them."""

from __future__ import annotations

from ._tile_ir import (check_visible, current_trace, is_float, tensor_type)
from ._tile_values import (Block, Tile, _as_index, _err)


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
