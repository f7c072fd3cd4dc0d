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

import math as _math

# The operations live in modules by kind; this module is their public home.
from ._tile_attention import (mask_causal, mask_keys, softmax_accumulate,
                              softmax_online)
from ._tile_elementwise import (abs, cdiv, erf, exp, exp2, fma, log,  # noqa: A004
                                maximum, minimum, rsqrt, sigmoid, sqrt, tanh,
                                where)
from ._tile_program import (col_index, context, load, load_scalar,
                            num_programs, program_id, range, range_n,
                            row_index, store)
from ._tile_tensors import (broadcast_to, cast, dot, full, iota,  # noqa: A004
                            max, min, prod, sum, transpose, zeros)
from ._tile_values import Block, Scalar, Tile, TileRef, constexpr

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
