"""Fixed Tile IR kernels the GPU executor of ``ts.jit`` launches beside
the fused kernels it generates (see _gpu_graph): batched products, 2-D
transposes, row gathers and column reductions."""


from . import tile
from ._dtypes import f32
from ._kernel import KTile, kernel


@kernel
def batched_matmul(A: KTile["BA", "M", "K"], B: KTile["BB", "KN0", "KN1"],
                   C: KTile["BC", "M", "N"], *, b_transposed: bool,
                   a_shared: bool, b_shared: bool):
    """C[z] = A[z] @ B[z] (B[z]^T with b_transposed); an operand whose
    batch is shared has one matrix. Grid: (M tiles, N tiles, batch)."""
    T = tile.context()
    i = tile.program_id(0) * T.m
    j = tile.program_id(1) * T.n
    z = tile.program_id(2)
    a_z = A[0] if a_shared else A[z]
    b_z = B[0] if b_shared else B[z]
    acc = tile.zeros((T.m, T.n))
    for k in tile.range(0, A.shape[2], T.k):
        a = tile.load(a_z, at=(i, k), shape=(T.m, T.k))
        if b_transposed:
            b = tile.transpose(tile.load(b_z, at=(j, k), shape=(T.n, T.k)))
        else:
            b = tile.load(b_z, at=(k, j), shape=(T.k, T.n))
        acc = tile.dot(a, b, acc)
    tile.store(C[z], tile.cast(acc, C.dtype), at=(i, j))


@kernel
def swap_last(X: KTile["Z", "P", "Q"], Y: KTile["Z", "Q", "P"]):
    """Y[z] = X[z]^T. Grid: (P tiles, Q tiles, batch)."""
    T = tile.context()
    i = tile.program_id(0) * T.m
    j = tile.program_id(1) * T.n
    z = tile.program_id(2)
    x = tile.load(X[z], at=(i, j), shape=(T.m, T.n))
    tile.store(Y[z], tile.transpose(x), at=(j, i))


@kernel
def column_partials(X: KTile["R", "C"], Part: KTile["P", "C", f32],
                    rows_per_program: int, *, kind: str):
    """Part[p, c] = the reduction of rows [p * rows_per_program, ...) of
    column c, in row order. Grid: (C tiles, P)."""
    T = tile.context()
    c = tile.program_id(0) * T.n
    p = tile.program_id(1)
    r0 = p * rows_per_program
    neutral = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}[kind]
    acc = tile.full((T.n,), neutral)
    for r in tile.range(r0, r0 + rows_per_program, T.m):
        rows = tile.iota((T.m, T.n), 0) + r
        ok = (rows < r0 + rows_per_program) & (rows < X.shape[0])
        x = tile.where(ok, tile.cast(tile.load(X, at=(r, c),
                                               shape=(T.m, T.n)), "f32"),
                       neutral)
        if kind == "sum":
            acc = acc + tile.sum(x, axis=0)
        elif kind == "max":
            acc = tile.maximum(acc, tile.max(x, axis=0))
        else:
            acc = tile.minimum(acc, tile.min(x, axis=0))
    tile.store(Part, tile.broadcast_to(acc[None, :], (1, T.n)), at=(p, c))


@kernel
def column_finish(Part: KTile["P", "C", f32], Out: KTile["C"], scale: float,
                  *, kind: str):
    """Out[c] = scale * the reduction of Part[:, c], in row order."""
    T = tile.context()
    c = tile.program_id(0) * T.n
    neutral = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}[kind]
    acc = tile.full((T.n,), neutral)
    for p in tile.range(0, Part.shape[0], T.m):
        rows = tile.iota((T.m, T.n), 0) + p
        x = tile.where(rows < Part.shape[0],
                       tile.load(Part, at=(p, c), shape=(T.m, T.n)), neutral)
        if kind == "sum":
            acc = acc + tile.sum(x, axis=0)
        elif kind == "max":
            acc = tile.maximum(acc, tile.max(x, axis=0))
        else:
            acc = tile.minimum(acc, tile.min(x, axis=0))
    tile.store(Out, tile.cast(acc * scale, Out.dtype), at=(c,))


@kernel
def long_rows(X: KTile["R", "C"], Out: KTile["R"], scale: float, *,
              kind: str):
    """Out[r] = scale * the reduction of row r, in column order, for rows
    longer than a program holds. Grid: (R,)."""
    T = tile.context()
    r = tile.program_id(0)
    neutral = {"sum": 0.0, "max": float("-inf"), "min": float("inf")}[kind]
    acc = tile.full((1, T.n), neutral)
    for c in tile.range(0, X.shape[1], T.n):
        cols = tile.iota((1, T.n), 1) + c
        x = tile.where(cols < X.shape[1],
                       tile.cast(tile.load(X, at=(r, c), shape=(1, T.n)),
                                 "f32"), neutral)
        if kind == "sum":
            acc = acc + x
        elif kind == "max":
            acc = tile.maximum(acc, x)
        else:
            acc = tile.minimum(acc, x)
    if kind == "sum":
        total = tile.sum(acc, axis=1)
    elif kind == "max":
        total = tile.max(acc, axis=1)
    else:
        total = tile.min(acc, axis=1)
    tile.store(Out, tile.cast(total * scale, Out.dtype), at=(r,))
