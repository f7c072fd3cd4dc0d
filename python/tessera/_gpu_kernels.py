"""The fixed Tile IR kernels of the GPU executor of ``ts.jit`` (2-D
transposes, column and long-row reductions) and the plan steps that
launch them (see _gpu_graph for the plan)."""

from . import cuda as _cuda
from . import stdlib
from . import tile
from ._dtypes import f32
from ._kernel import KTile, Schedule, _compile_only, cdiv, kernel
from .stdlib._common import _multiprocessors, _pow2
from .stdlib._rows import _split_rows


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
def column_partials(X: KTile["R", "C"], Out: KTile["P", "C"],
                    rows_per_program: int, scale: float, *, kind: str):
    """Out[p, c] = scale * the reduction of rows [p * rows_per_program,
    ...) of column c, in row order (f32). Grid: (C tiles, P). Run on X,
    then on its partials with one program, it reduces over rows in a fixed
    order."""
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
                                               shape=(T.m, T.n)), f32),
                       neutral)
        if kind == "sum":
            acc = acc + tile.sum(x, axis=0)
        elif kind == "max":
            acc = tile.maximum(acc, tile.max(x, axis=0))
        else:
            acc = tile.minimum(acc, tile.min(x, axis=0))
    tile.store(Out, tile.cast(tile.broadcast_to((acc * scale)[None, :],
                                                (1, T.n)), Out.dtype),
               at=(p, c))


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
                                 f32), neutral)
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


# --------------------------------------------------------------------------
# Plan steps
# --------------------------------------------------------------------------

class Step:
    """One launch (or a few) of a plan: ``run(env, alloc)`` reads its
    ``inputs`` from env (value id -> DeviceTensor) and writes its
    ``outputs``, allocated by ``alloc(value id)``."""
    inputs = ()
    outputs = ()


class Alias(Step):
    """out = x reshaped (a view)."""

    def __init__(self, x, out, shape):
        self.inputs, self.outputs, self.shape = (x,), (out,), shape

    def run(self, env, alloc):
        env[self.outputs[0]] = env[self.inputs[0]].reshape(*self.shape)


class Chain(Step):
    """Steps that write one output together (a pad's fill and interior)."""

    def __init__(self, inputs, outputs, parts):
        self.inputs, self.outputs, self.parts = tuple(inputs), outputs, parts

    def run(self, env, alloc):
        for s in self.parts:
            s.run(env, alloc)


class Matmul(Step):
    """out[z] = a[z] @ b[z] (b[z] given as [N, K] when b_transposed) on the
    stdlib GEMM; an operand whose batch is shared has one matrix (a shared
    b folds the batch into M: one GEMM)."""

    def __init__(self, a, b, out, batch, m, n, k, a_shared, b_shared,
                 b_transposed):
        self.inputs, self.outputs = (a, b), (out,)
        self.batch, self.m, self.n, self.k = batch, m, n, k
        self.a_shared, self.b_shared = a_shared, b_shared
        self.b_transposed = b_transposed

    def run(self, env, alloc):
        a, b = env[self.inputs[0]], env[self.inputs[1]]
        out = alloc(self.outputs[0])
        m, n, k, z = self.m, self.n, self.k, self.batch
        kb = (n, k) if self.b_transposed else (k, n)
        if z == 1:
            stdlib.gemm(a.reshape(m, k), b.reshape(*kb),
                        transposed_b=self.b_transposed, out=out.reshape(m, n))
            return
        stdlib.gemm(a.reshape(m, k) if self.a_shared else a.reshape(z, m, k),
                    b.reshape(*kb) if self.b_shared else b.reshape(z, *kb),
                    transposed_b=self.b_transposed, out=out.reshape(z, m, n))


_SWAP = Schedule(block=(32, 32), warps=4)


class SwapLast(Step):
    """out = x viewed as [Z, P, Q], transposed to [Z, Q, P]."""

    def __init__(self, x, out, z, p, q):
        self.inputs, self.outputs = (x,), (out,)
        self.z, self.p, self.q = z, p, q

    def run(self, env, alloc):
        out = alloc(self.outputs[0])
        swap_last.with_schedule(_SWAP)[(cdiv(self.p, _SWAP.m),
                                        cdiv(self.q, _SWAP.n), self.z)](
            env[self.inputs[0]].reshape(self.z, self.p, self.q),
            out.reshape(self.z, self.q, self.p))


class ColumnReduce(Step):
    """out[c] = scale * reduce(x[:, c]) of x viewed as [R, C]: partials
    of row blocks, then the partials in order (deterministic)."""

    def __init__(self, x, out, r, c, kind, scale):
        self.inputs, self.outputs = (x,), (out,)
        self.r, self.c, self.kind, self.scale = r, c, kind, scale
        bn = min(256, _pow2(c))
        self.schedule = Schedule(block=(16, bn), warps=4)
        self.col_tiles = cdiv(c, bn)
        # About two programs per SM over all column tiles.
        self.programs, self.per = _split_rows(
            r, 16, programs=max(1, 264 // self.col_tiles))

    def run(self, env, alloc):
        out = alloc(self.outputs[0])
        part = _cuda.empty((self.programs, self.c), "f32", device=out.device)
        k = column_partials.with_schedule(self.schedule)
        k[(self.col_tiles, self.programs)](
            env[self.inputs[0]].reshape(self.r, self.c), part, self.per, 1.0,
            kind=self.kind)
        k[(self.col_tiles, 1)](part, out.reshape(1, self.c), self.programs,
                               float(self.scale), kind=self.kind)


_LONG = Schedule(block=(1, 1024), warps=8)


class LongRows(Step):
    """out[r] = scale * reduce(x[r, :]) of x viewed as [R, C], for rows
    longer than a fused kernel holds in registers. When there are few rows
    (a loss over a whole tensor is one row), each row is cut into `parts`
    equal segments reduced by programs of their own, then the segments'
    results in order: the same order every run."""

    def __init__(self, x, out, r, c, kind, scale):
        self.inputs, self.outputs = (x,), (out,)
        self.r, self.c, self.kind, self.scale = r, c, kind, scale
        self._parts = {}

    def parts_for(self, programs):
        """Segments a row for about `programs` programs in all, each of at
        least 4096 elements (a divisor of the row's length)."""
        got = self._parts.get(programs)
        if got is None:
            want = max(1, min(programs // self.r, self.c // 4096, 1024)) \
                if self.r else 1
            got = next(p for p in range(want, 0, -1) if self.c % p == 0)
            self._parts[programs] = got
        return got

    def run(self, env, alloc):
        out = alloc(self.outputs[0])
        x = env[self.inputs[0]]
        k = long_rows.with_schedule(_LONG)
        # About four programs an SM.
        self.parts = self.parts_for(4 * _multiprocessors(out._device)
                                    if not _compile_only.chip else 528)
        if self.parts == 1:
            k[(self.r,)](x.reshape(self.r, self.c), out.reshape(self.r),
                         float(self.scale), kind=self.kind)
            return
        n = self.r * self.parts
        part = _cuda.empty((n,), "f32", device=out.device)
        k[(n,)](x.reshape(n, self.c // self.parts), part, 1.0,
                kind=self.kind)
        k[(self.r,)](part.reshape(self.r, self.parts), out.reshape(self.r),
                     float(self.scale), kind=self.kind)


class Attention(Step):
    """out = flash_attention_2(q, k, v); the log-sum-exp of each query's
    scores goes to value `lse` for the backward step."""

    def __init__(self, q, k, v, out, lse, causal, scale):
        self.inputs, self.outputs = (q, k, v), (out, lse)
        self.causal, self.scale = causal, scale

    def run(self, env, alloc):
        q, k, v = (env[x] for x in self.inputs)
        out, lse = self.outputs
        _, env[lse] = stdlib.flash_attention_2(
            q, k, v, causal=self.causal, scale=self.scale, out=alloc(out))


class AttentionGrad(Step):
    """(dq, dk, dv) of attention output o for its gradient do on the flash
    backward kernels; `lse` is the forward step's value, or None to
    compute it again."""

    def __init__(self, q, k, v, o, do, lse, grads, causal, scale):
        self.inputs = (q, k, v, o, do) + ((lse,) if lse is not None else ())
        self.outputs = grads
        self.lse, self.causal, self.scale = lse, causal, scale

    def run(self, env, alloc):
        q, k, v, o, do = (env[x] for x in self.inputs[:5])
        if self.lse is not None:
            lse = env[self.lse]
        else:
            _, lse = stdlib.flash_attention_2(q, k, v, causal=self.causal,
                                              scale=self.scale)
        grads = stdlib.flash_attention_2_backward(
            do, q, k, v, o, lse, causal=self.causal, scale=self.scale)
        for vid, g in zip(self.outputs, grads):
            env[vid] = g
