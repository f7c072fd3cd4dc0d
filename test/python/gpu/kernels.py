"""Kernels written in the tile DSL that the GPU tests run (and the CPU
tests compile to PTX for sm_80 and sm_90a).

`python kernels.py --precompile CHIP` compiles every specialization the
GPU tests launch into the kernel cache (TESSERA_KERNEL_CACHE), for
machines that run them without the compiler.
"""

import math
import sys

import tessera as ts
from tessera import KTile, tile


@ts.kernel.schedule(ts.Schedule(block=(4, 256), warps=4))
def softmax(X: KTile["R", "N", ts.f32], Y: KTile["R", "N", ts.f32]):
    """Softmax of each row (n <= 256), T.m rows per program."""
    T = tile.context()
    r = tile.program_id(0) * T.m
    x = tile.load(X, at=(r, 0), shape=(T.m, T.n), padding=-math.inf)
    e = tile.exp(x - tile.max(x, axis=1)[:, None])
    tile.store(Y, e / tile.sum(e, axis=1)[:, None], at=(r, 0))


@ts.kernel.schedule(ts.Schedule(block=(2, 512), warps=8))
def rmsnorm(X: KTile["R", "N"], W: KTile["N", ts.f32], Y: KTile["R", "N"],
            eps: float):
    """y = x / sqrt(mean(x^2) + eps) * w, statistics in f32; any float
    dtype for X and Y (one kernel per dtype); n <= T.n."""
    T = tile.context()
    r = tile.program_id(0) * T.m
    n = X.shape[1]
    x = tile.cast(tile.load(X, at=(r, 0), shape=(T.m, T.n)), ts.f32)
    ms = tile.sum(x * x, axis=1) / tile.cast(n, ts.f32)
    w = tile.load(W, at=(0,), shape=(T.n,))
    y = x * tile.rsqrt(ms + eps)[:, None] * w
    tile.store(Y, tile.cast(y, Y.dtype), at=(r, 0))


@ts.kernel.schedule(ts.Schedule(block=(128, 128), k=32, warps=8, stages=3))
def matmul(A: KTile["M", "K", ts.bf16], B: KTile["K", "N", ts.bf16],
           C: KTile["M", "N", ts.bf16]):
    """C = A @ B, f32 accumulation (wgmma on sm_90a, mma.sync before)."""
    T = tile.context()
    i, j = tile.program_id(0) * T.m, tile.program_id(1) * T.n
    acc = tile.zeros((T.m, T.n))
    for k in tile.range(0, A.shape[1], T.k):
        a = tile.load(A, at=(i, k), shape=(T.m, T.k))
        b = tile.load(B, at=(k, j), shape=(T.k, T.n))
        acc = tile.dot(a, b, acc)
    tile.store(C, tile.cast(acc, ts.bf16), at=(i, j))


@ts.kernel.schedule(ts.Schedule(block=(64, 64), k=32, warps=4, stages=2))
def matmul_tf32(A: KTile["M", "K", ts.f32], B: KTile["K", "N", ts.f32],
                C: KTile["M", "N", ts.f32]):
    """C = A @ B of f32 read as tf32, B N-contiguous: mma.sync m16n8k8 (on
    Hopper too: wgmma's tf32 form takes B K-contiguous only)."""
    T = tile.context()
    i, j = tile.program_id(0) * T.m, tile.program_id(1) * T.n
    acc = tile.zeros((T.m, T.n))
    for k in tile.range(0, A.shape[1], T.k):
        a = tile.load(A, at=(i, k), shape=(T.m, T.k))
        b = tile.load(B, at=(k, j), shape=(T.k, T.n))
        acc = tile.dot(a, b, acc, tf32=True)
    tile.store(C, acc, at=(i, j))


matmul_tuned = ts.kernel.autotune(
    space=dict(BM=[64, 128], BN=[64, 128], warps=[4, 8]),
    budget_ms=50)(matmul)


@ts.kernel.schedule(ts.Schedule(block=(64, 64), warps=4, stages=2, d=64))
def flash_attention(q: KTile["BH", "S", "D", ts.bf16],
                    k: KTile["BH", "S", "D", ts.bf16],
                    v: KTile["BH", "S", "D", ts.bf16],
                    o: KTile["BH", "S", "D", ts.bf16], scale: float, *,
                    causal: bool):
    """Attention forward as spec 002 writes it: grid (cdiv(S, T.m), BH)."""
    T = tile.context()
    bh = tile.program_id(1)
    Q, K, V, O = q[bh], k[bh], v[bh], o[bh]
    keys = K.shape[0]
    Qb = tile.load(Q, rows=T.m, cols=T.d, vector=T.vector, prefetch=2)
    acc = tile.zeros((T.m, T.d))
    m = tile.full((T.m,), -math.inf)
    l = tile.zeros((T.m,))
    end = tile.minimum(tile.row_index() + T.m, keys) if causal else keys
    for nblk in tile.range_n(end, T.n, prefetch=T.stages):
        Kb = tile.load(K, nblk, cols=T.d, vector=T.vector)
        Vb = tile.load(V, nblk, cols=T.d, vector=T.vector)
        S = tile.dot(Qb, tile.transpose(Kb)) * scale
        if causal:
            tile.mask_causal(S, tile.row_index(), tile.col_index(nblk))
        else:
            cols = tile.iota((T.m, T.n), axis=1) + tile.col_index(nblk)
            S = tile.where(cols < tile.cast(keys, ts.i32), S, -math.inf)
        P, m_c, l_c = tile.softmax_online(S)
        acc, m, l = tile.softmax_accumulate(acc, m, l, P, Vb, m_c, l_c)
    tile.store(O, tile.cast(acc / l[:, None], ts.bf16), rows=T.m)


@ts.kernel.schedule(ts.Schedule(block=(32, 64), warps=4))
def round_trip(X: KTile["M", "N", ts.f32], Q: KTile["M", "N"],
               Y: KTile["M", "N", ts.f32], *, saturate: bool):
    """Q = X converted to Q's type (fp8 or 16-bit; saturating or not), and
    Y = Q converted back to f32 (grid (cdiv(M, T.m), cdiv(N, T.n)))."""
    T = tile.context()
    at = (tile.program_id(0) * T.m, tile.program_id(1) * T.n)
    x = tile.load(X, at=at, shape=(T.m, T.n))
    q = tile.cast(x, Q.dtype, saturate=saturate)
    tile.store(Q, q, at=at)
    tile.store(Y, tile.cast(q, ts.f32), at=at)


@ts.kernel.schedule(ts.Schedule(block=(32, 64), warps=4))
def convert(X: KTile["M", "N"], Y: KTile["M", "N"]):
    """Y = X converted to Y's type, rounded to nearest even (from memory:
    fp8 and 16-bit floats widen to f32, f16 and bf16 convert)."""
    T = tile.context()
    at = (tile.program_id(0) * T.m, tile.program_id(1) * T.n)
    tile.store(Y, tile.cast(tile.load(X, at=at, shape=(T.m, T.n)), Y.dtype),
               at=at)


@ts.kernel.schedule(ts.Schedule(block=(32, 64), warps=4))
def stochastic(X: KTile["M", "N"], Q: KTile["M", "N"], seed: int, *,
               saturate: bool):
    """Q = X rounded stochastically to Q's type with `seed`."""
    T = tile.context()
    at = (tile.program_id(0) * T.m, tile.program_id(1) * T.n)
    x = tile.load(X, at=at, shape=(T.m, T.n))
    tile.store(Q, tile.cast(x, Q.dtype, saturate=saturate,
                            stochastic_round=seed), at=at)


# Stochastic casts the GPU tests run: (source, target, saturate).
STOCHASTIC = [(ts.f32, ts.bf16, False), (ts.f32, ts.f16, False),
              (ts.f32, ts.f8e4m3, True), (ts.f32, ts.f8e4m3, False),
              (ts.f32, ts.f8e5m2, False), (ts.bf16, ts.f8e4m3, False)]


@ts.kernel.schedule(ts.Schedule(block=(64, 64), warps=4))
def shared_operands(A: KTile["M", "K", ts.bf16], B: KTile["K", "N", ts.bf16],
                    C: KTile["M", "N", ts.f32], *, variant: str):
    """Products that share an operand (one 64 x 64 block):
    "same_a": A @ B + A @ B from one load of A; "chain": the second product
    accumulates into the first; "computed": (A + A) @ B twice, A in
    registers; "computed_once": (A + A) @ B."""
    a = tile.load(A, at=(0, 0), shape=(64, 64))
    b1 = tile.load(B, at=(0, 0), shape=(64, 64))
    b2 = tile.load(B, at=(0, 0), shape=(64, 64))
    if variant == "same_a":
        c = tile.dot(a, b1) + tile.dot(a, b2)
    elif variant == "chain":
        c = tile.dot(a, b2, tile.dot(a, b1))
    elif variant == "computed":
        x = a + a
        c = tile.dot(x, b1) + tile.dot(x, b2)
    else:
        c = tile.dot(a + a, b1)
    tile.store(C, c, at=(0, 0))


SHARED_OPERAND_VARIANTS = {"same_a": 2, "chain": 2, "computed": 4,
                           "computed_once": 2}


@ts.kernel.schedule(ts.Schedule(block=(128, 128), warps=8))
def stored_operands(A: KTile["R", "C", ts.bf16], B: KTile["K", "N", ts.bf16],
                    C: KTile["M", "N", ts.f32], *, variant: str):
    """Computed A operands that wgmma reads from shared memory, two
    warpgroups: "transposed": (A + A)^T @ B with A [64, 128] (stored M
    contiguous, warpgroups along M); "wide": (A + A) @ B with A [64, 64]
    and B [64, 128] (warpgroups along N, which registers cannot feed)."""
    b = tile.load(B, at=(0, 0), shape=(64, 128))
    if variant == "transposed":
        x = tile.load(A, at=(0, 0), shape=(64, 128))
        c = tile.dot(tile.transpose(x + x), b)
    else:
        x = tile.load(A, at=(0, 0), shape=(64, 64))
        c = tile.dot(x + x, b)
    tile.store(C, c, at=(0, 0))



@ts.kernel.schedule(ts.Schedule(block=(4, 64), warps=2))
def pick_columns(X: KTile["R", "C"], Idx: KTile["R", ts.i32],
                 Out: KTile["P", ts.f32]):
    """Out[r] = X[r, Idx[r]] for the program's T.m rows, one scalar read
    each (-7.5 outside X), placed into a tile of the rows."""
    T = tile.context()
    r = tile.program_id(0) * T.m
    out = tile.zeros((T.m,))
    which = tile.iota((T.m,), axis=0)
    for i in range(T.m):
        j = tile.load_scalar(Idx, at=(r + i,), padding=-1)
        v = tile.load_scalar(X, at=(r + i, j), padding=-7.5)
        out = tile.where(which == i, tile.cast(v, ts.f32), out)
    tile.store(Out, out, at=(r,))


# What the GPU tests launch: (kernel, open dtypes, constexprs).
SPECIALIZATIONS = [
    (softmax, (), {}),
    (rmsnorm, (ts.f32, ts.f32), {}),
    (rmsnorm, (ts.bf16, ts.bf16), {}),
    (matmul, (), {}),
    (matmul_tf32, (), {}),
    (flash_attention, (), {"causal": True}),
    (flash_attention, (), {"causal": False}),
] + [(shared_operands, (), {"variant": v}) for v in SHARED_OPERAND_VARIANTS] \
  + [(stored_operands, (), {"variant": v}) for v in ("transposed", "wide")] \
  + [(pick_columns, (t,), {}) for t in (ts.f32, ts.bf16)] \
  + [(round_trip, (t,), {"saturate": s}) for t in (ts.f8e4m3, ts.f8e5m2)
     for s in (False, True)] \
  + [(round_trip, (ts.f16,), {"saturate": True}),
     (round_trip, (ts.bf16,), {"saturate": False})] \
  + [(convert, (t, ts.f32), {})
     for t in (ts.f8e4m3, ts.f8e5m2, ts.f16, ts.bf16)] \
  + [(convert, (ts.f16, ts.bf16), {}), (convert, (ts.bf16, ts.f16), {})] \
  + [(stochastic, (a, b), {"saturate": s}) for a, b, s in STOCHASTIC]


def precompile(chip):
    n = 0
    for kern, dtypes, consts in SPECIALIZATIONS:
        kern.compile(*dtypes, chip=chip, **consts)
        n += 1
    tuner = matmul_tuned._autotune
    for config in tuner.configs():
        from tessera._kernel import _schedule_from
        matmul.compile(chip=chip,
                       schedule=_schedule_from(matmul.default_schedule,
                                               config))
        n += 1
    return n


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--precompile":
        sys.exit("usage: kernels.py --precompile CHIP")
    print(f"{precompile(sys.argv[2])} kernels in "
          f"{ts.kernel_cache.directory}")
