"""The standard library's kernels, written in the tile DSL.

Row kernels (softmax, norms, cross-entropy) give each program ``T.m`` rows
and hold a row's ``T.n`` columns at once when they fit (``T.n`` >= the
row length), or walk the row in ``T.n``-column blocks (the ``_long``
variants). Statistics are f32 whatever the storage dtype. Column sums of
the backward passes are deterministic: each program writes its partial
sums, and a second kernel adds them in a fixed order.
"""

import math

import tessera as ts
from tessera import KTile, tile

LOG2E = 1.4426950408889634
FLT_MAX = 3.4028234663852886e38
NEG_INF = -math.inf


def _cols(T, c0=0):
    """Column indices of a [T.m, T.n] block starting at column c0 (i32)."""
    return tile.iota((T.m, T.n), axis=1) + c0


# --------------------------------------------------------------------------
# Softmax
# --------------------------------------------------------------------------

@ts.kernel
def softmax_rows(X: KTile["R", "N"], Y: KTile["R", "N"]):
    T = tile.context()
    r = tile.program_id(0) * T.m
    x = tile.cast(tile.load(X, at=(r, 0), shape=(T.m, T.n), padding=NEG_INF),
                  ts.f32)
    e = tile.exp(x - tile.max(x, axis=1)[:, None])
    y = e / tile.sum(e, axis=1)[:, None]
    tile.store(Y, tile.cast(y, Y.dtype), at=(r, 0))


@ts.kernel
def softmax_rows_long(X: KTile["R", "N"], Y: KTile["R", "N"]):
    T = tile.context()
    r = tile.program_id(0) * T.m
    n = X.shape[1]
    m = tile.full((T.m,), NEG_INF)
    l = tile.zeros((T.m,))
    for c in tile.range(0, n, T.n, stages=2):
        x = tile.cast(tile.load(X, at=(r, c), shape=(T.m, T.n),
                                padding=NEG_INF), ts.f32)
        m_new = tile.maximum(m, tile.max(x, axis=1))
        l = l * tile.exp(m - m_new) + tile.sum(tile.exp(x - m_new[:, None]),
                                               axis=1)
        m = m_new
    inv = 1.0 / l
    for c in tile.range(0, n, T.n, stages=2):
        x = tile.cast(tile.load(X, at=(r, c), shape=(T.m, T.n),
                                padding=NEG_INF), ts.f32)
        y = tile.exp(x - m[:, None]) * inv[:, None]
        tile.store(Y, tile.cast(y, Y.dtype), at=(r, c))


# --------------------------------------------------------------------------
# LayerNorm and RMSNorm
# --------------------------------------------------------------------------

@ts.kernel
def layernorm_fwd(X: KTile["R", "N"], W: KTile["N"], B: KTile["N"],
                  Y: KTile["R", "N"], Mean: KTile["R", ts.f32],
                  Rstd: KTile["R", ts.f32], eps: float):
    """Program p normalizes rows p, p + P, p + 2P... (P programs), T.m at
    a time: the weight and bias are read once a program, not once a row
    (they are as large as a bf16 row each, in f32), and the programs on
    the card at once work on neighbouring rows (as one streaming copy
    would), not on P distant stretches of the tensor."""
    T = tile.context()
    n = X.shape[1]
    inv_n = 1.0 / tile.cast(n, ts.f32)
    valid = _cols(T) < tile.cast(n, ts.i32)
    w = tile.cast(tile.load(W, at=(0,), shape=(T.n,)), ts.f32)
    b = tile.cast(tile.load(B, at=(0,), shape=(T.n,)), ts.f32)
    for r in tile.range(tile.program_id(0) * T.m, X.shape[0],
                        tile.num_programs(0) * T.m, stages=T.stages):
        x = tile.cast(tile.load(X, at=(r, 0), shape=(T.m, T.n)), ts.f32)
        mean = tile.sum(x, axis=1) * inv_n
        d = tile.where(valid, x - mean[:, None], 0.0)
        rstd = tile.rsqrt(tile.sum(d * d, axis=1) * inv_n + eps)
        y = d * rstd[:, None] * w + b
        tile.store(Y, tile.cast(y, Y.dtype), at=(r, 0))
        tile.store(Mean, mean, at=(r,))
        tile.store(Rstd, rstd, at=(r,))


@ts.kernel
def layernorm_bwd(DY: KTile["R", "N"], X: KTile["R", "N"], W: KTile["N"],
                  Mean: KTile["R", ts.f32], Rstd: KTile["R", ts.f32],
                  DX: KTile["R", "N"], DWp: KTile["P", "N", ts.f32],
                  DBp: KTile["P", "N", ts.f32]):
    """dx of each row; program p handles rows p, p + P, p + 2P... (T.m at
    a time, as layernorm_fwd) and writes its partial sums of dw and db as
    row p of DWp/DBp."""
    T = tile.context()
    p = tile.program_id(0)
    n = X.shape[1]
    inv_n = 1.0 / tile.cast(n, ts.f32)
    valid = _cols(T) < tile.cast(n, ts.i32)
    w = tile.cast(tile.load(W, at=(0,), shape=(T.n,)), ts.f32)
    dw = tile.zeros((T.n,))
    db = tile.zeros((T.n,))
    for r in tile.range(p * T.m, X.shape[0], tile.num_programs(0) * T.m,
                        stages=2):
        x = tile.cast(tile.load(X, at=(r, 0), shape=(T.m, T.n)), ts.f32)
        dy = tile.cast(tile.load(DY, at=(r, 0), shape=(T.m, T.n)), ts.f32)
        mean = tile.load(Mean, at=(r,), shape=(T.m,))
        rstd = tile.load(Rstd, at=(r,), shape=(T.m,))
        xhat = tile.where(valid, (x - mean[:, None]) * rstd[:, None], 0.0)
        wdy = dy * w
        c1 = tile.sum(xhat * wdy, axis=1) * inv_n
        c2 = tile.sum(wdy, axis=1) * inv_n
        dx = (wdy - (xhat * c1[:, None] + c2[:, None])) * rstd[:, None]
        tile.store(DX, tile.cast(dx, DX.dtype), at=(r, 0))
        # Rows past the end read zeros: they add nothing to the sums.
        dw = dw + tile.sum(dy * xhat, axis=0)
        db = db + tile.sum(dy, axis=0)
    tile.store(DWp, tile.broadcast_to(dw[None, :], (1, T.n)), at=(p, 0))
    tile.store(DBp, tile.broadcast_to(db[None, :], (1, T.n)), at=(p, 0))


@ts.kernel
def rmsnorm_fwd(X: KTile["R", "N"], W: KTile["N"], Y: KTile["R", "N"],
                Rstd: KTile["R", ts.f32], eps: float):
    T = tile.context()
    r = tile.program_id(0) * T.m
    nf = tile.cast(X.shape[1], ts.f32)
    x = tile.cast(tile.load(X, at=(r, 0), shape=(T.m, T.n)), ts.f32)
    rstd = tile.rsqrt(tile.sum(x * x, axis=1) / nf + eps)
    w = tile.cast(tile.load(W, at=(0,), shape=(T.n,)), ts.f32)
    tile.store(Y, tile.cast(x * rstd[:, None] * w, Y.dtype), at=(r, 0))
    tile.store(Rstd, rstd, at=(r,))


@ts.kernel
def rmsnorm_bwd(DY: KTile["R", "N"], X: KTile["R", "N"], W: KTile["N"],
                Rstd: KTile["R", ts.f32], DX: KTile["R", "N"],
                DWp: KTile["P", "N", ts.f32]):
    """As layernorm_bwd, for rmsnorm (partial sums of dw only)."""
    T = tile.context()
    p = tile.program_id(0)
    inv_n = 1.0 / tile.cast(X.shape[1], ts.f32)
    w = tile.cast(tile.load(W, at=(0,), shape=(T.n,)), ts.f32)
    dw = tile.zeros((T.n,))
    for r in tile.range(p * T.m, X.shape[0], tile.num_programs(0) * T.m,
                        stages=2):
        x = tile.cast(tile.load(X, at=(r, 0), shape=(T.m, T.n)), ts.f32)
        dy = tile.cast(tile.load(DY, at=(r, 0), shape=(T.m, T.n)), ts.f32)
        rstd = tile.load(Rstd, at=(r,), shape=(T.m,))
        xhat = x * rstd[:, None]
        wdy = dy * w
        c = tile.sum(xhat * wdy, axis=1) * inv_n
        dx = (wdy - xhat * c[:, None]) * rstd[:, None]
        tile.store(DX, tile.cast(dx, DX.dtype), at=(r, 0))
        dw = dw + tile.sum(dy * xhat, axis=0)
    tile.store(DWp, tile.broadcast_to(dw[None, :], (1, T.n)), at=(p, 0))


@ts.kernel
def column_sums(Part: KTile["P", "N", ts.f32], Out: KTile["N"]):
    """Out = the sum of Part's rows, in a fixed order (deterministic).
    Program j sums the T.n columns of block j: each position adds the
    rows of its column T.m apart, and one reduction across the block's
    rows ends it."""
    T = tile.context()
    c = tile.program_id(0) * T.n
    acc = tile.zeros((T.m, T.n))
    for i in tile.range(0, Part.shape[0], T.m, stages=2):
        acc = acc + tile.load(Part, at=(i, c), shape=(T.m, T.n))
    tile.store(Out, tile.cast(tile.sum(acc, axis=0), Out.dtype), at=(c,))


# --------------------------------------------------------------------------
# Cross-entropy
# --------------------------------------------------------------------------

@ts.kernel
def cross_entropy_fwd(Logits: KTile["R", "V"], Labels: KTile["R", ts.i32],
                      Loss: KTile["R", ts.f32], Lse: KTile["R", ts.f32],
                      ignore_index: ts.i32):
    """loss = logsumexp(row) - row[label]; 0 where label == ignore_index.
    Each position of the T.n-column block keeps its own running maximum
    and sum of exponentials, so the loop over column blocks needs one exp
    per logit and no reduction across threads; the row's log-sum-exp
    combines the positions at the end. The label's logit is one element
    read per row, not picked from every block."""
    T = tile.context()
    r = tile.program_id(0) * T.m
    v = Logits.shape[1]
    label = tile.load(Labels, at=(r,), shape=(T.m,))
    # The running maxima start at the lowest finite float, so that the
    # maximum is never -inf: no test for it a logit (a -inf logit, or a
    # padded one, weighs 0; the first finite one rescales the sum, still
    # 0, by 0).
    m = tile.full((T.m, T.n), -FLT_MAX)
    l = tile.zeros((T.m, T.n))
    for c in tile.range(0, v, T.n, stages=T.stages):
        x = tile.cast(tile.load(Logits, at=(r, c), shape=(T.m, T.n),
                                padding=NEG_INF), ts.f32)
        # exp(-|x - m|) rescales the old sum (x a new maximum) or weighs x
        # (as 2^(-|x - m| log2 e): the hardware's ex2; the sign and the
        # absolute value are operand modifiers of the multiply).
        d = x - m
        e = tile.exp2(-tile.abs(d) * LOG2E)
        l = tile.where(d > 0.0, l * e + 1.0, l + e)
        m = tile.maximum(m, x)
    top = tile.max(m, axis=1)
    total = tile.sum(l * tile.exp2((m - top[:, None]) * LOG2E), axis=1)
    lse = top + tile.log(total)
    # Each row's label logit (0 for a label outside the row: the loss is
    # then the log-sum-exp).
    picked = tile.zeros((T.m,))
    which = tile.iota((T.m,), axis=0)
    for i in range(T.m):
        lab = tile.load_scalar(Labels, at=(r + i,), padding=-1)
        x = tile.load_scalar(Logits, at=(r + i, lab), padding=0.0)
        picked = tile.where(which == i, tile.cast(x, ts.f32), picked)
    loss = tile.where(label == ignore_index, 0.0, lse - picked)
    tile.store(Loss, loss, at=(r,))
    tile.store(Lse, lse, at=(r,))


@ts.kernel
def cross_entropy_bwd(Logits: KTile["R", "V"], Labels: KTile["R", ts.i32],
                      Lse: KTile["R", ts.f32], DLoss: KTile["R", ts.f32],
                      DLogits: KTile["R", "V"], ignore_index: ts.i32):
    """dlogits = dloss * (softmax(row) - onehot(label))."""
    T = tile.context()
    r = tile.program_id(0) * T.m
    label = tile.load(Labels, at=(r,), shape=(T.m,))
    lse = tile.load(Lse, at=(r,), shape=(T.m,))
    g = tile.where(label == ignore_index, 0.0,
                   tile.load(DLoss, at=(r,), shape=(T.m,)))
    for c in tile.range(0, Logits.shape[1], T.n, stages=2):
        x = tile.cast(tile.load(Logits, at=(r, c), shape=(T.m, T.n)), ts.f32)
        p = tile.exp2((x - lse[:, None]) * LOG2E)
        hit = _cols(T, c) == label[:, None]
        d = (p - tile.where(hit, 1.0, 0.0)) * g[:, None]
        tile.store(DLogits, tile.cast(d, DLogits.dtype), at=(r, c))


# --------------------------------------------------------------------------
# Optimizer
# --------------------------------------------------------------------------

@ts.kernel
def adamw_step(P: KTile["N", ts.f32], G: KTile["N"], M: KTile["N", ts.f32],
               V: KTile["N", ts.f32], lr: float, beta1: float, beta2: float,
               one_minus_beta1: float, one_minus_beta2: float, eps: float,
               weight_decay: float, bias1: float, bias2: float):
    """In place: m, v moments, p -= lr * (mhat / (sqrt(vhat) + eps) + wd p);
    bias1 = 1 - beta1^t, bias2 = 1 - beta2^t. The 1 - beta terms come
    computed in double precision (1 - 0.999 in f32 is off by 1e-5)."""
    T = tile.context()
    i = tile.program_id(0) * T.m
    p = tile.load(P, at=(i,), shape=(T.m,))
    g = tile.cast(tile.load(G, at=(i,), shape=(T.m,)), ts.f32)
    m = tile.load(M, at=(i,), shape=(T.m,)) * beta1 + g * one_minus_beta1
    v = tile.load(V, at=(i,), shape=(T.m,)) * beta2 + g * g * one_minus_beta2
    update = (m / bias1) / (tile.sqrt(v / bias2) + eps) + p * weight_decay
    tile.store(P, p - update * lr, at=(i,))
    tile.store(M, m, at=(i,))
    tile.store(V, v, at=(i,))


# --------------------------------------------------------------------------
# Rotary embedding
# --------------------------------------------------------------------------

@ts.kernel
def rotary(X: KTile["B", "S", "HD"], Cos: KTile["S", "D2", ts.f32],
           Sin: KTile["S", "D2", ts.f32], Y: KTile["B", "S", "HD"],
           heads: int, *, head_dim: int):
    """Rotates the two halves of each head (rotate_half form):
    y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin; grid (cdiv(S, T.m), B)."""
    T = tile.context()
    s0 = tile.program_id(0) * T.m
    Xb, Yb = X[tile.program_id(1)], Y[tile.program_id(1)]
    half = head_dim // 2
    cos = tile.load(Cos, at=(s0, 0), shape=(T.m, half))
    sin = tile.load(Sin, at=(s0, 0), shape=(T.m, half))
    for h in tile.range(0, heads, 1):
        c0 = h * head_dim
        x1 = tile.cast(tile.load(Xb, at=(s0, c0), shape=(T.m, half)), ts.f32)
        x2 = tile.cast(tile.load(Xb, at=(s0, c0 + half), shape=(T.m, half)),
                       ts.f32)
        tile.store(Yb, tile.cast(x1 * cos - x2 * sin, Y.dtype), at=(s0, c0))
        tile.store(Yb, tile.cast(x2 * cos + x1 * sin, Y.dtype),
                   at=(s0, c0 + half))


# --------------------------------------------------------------------------
# Matrix products
# --------------------------------------------------------------------------

def _grouped(T, m, n, t):
    """Output tile t -> (row, column) of this program's tile, in groups of
    T.group row blocks (tiles that run together share A and B blocks in
    L2). With clusters (T.cluster > 1), t counts cluster tiles: T.cluster
    row blocks of one column block, one per program of the cluster, which
    share their B tiles (multicast)."""
    c = T.cluster
    blocks_m = (m + (T.m * c - 1)) // (T.m * c)
    blocks_n = (n + (T.n - 1)) // T.n
    in_group = T.group * blocks_n
    first = (t // in_group) * T.group
    rows = tile.minimum(blocks_m - first, T.group)
    i = first + (t % in_group) % rows
    j = (t % in_group) // rows
    if c > 1:
        return (i * c + tile.program_id(0) % c) * T.m, j * T.n
    return i * T.m, j * T.n


def _tiles(T, m, n):
    """The output tiles of this program: tile program_id, then every
    num_programs-th (a grid of one program per tile runs one each; a
    smaller, persistent grid lets the next tile's copies overlap this one's
    end). With clusters, the cluster's tiles: cluster program_id //
    T.cluster takes cluster tile of that number, then every
    (num_programs // T.cluster)-th; num_programs is a multiple of
    T.cluster, so every program of a cluster runs the same tiles (a
    program whose rows are past the end computes zeros and stores
    nothing)."""
    c = T.cluster
    count = ((m + (T.m * c - 1)) // (T.m * c)) * ((n + (T.n - 1)) // T.n)
    if c > 1:
        return tile.range(tile.program_id(0) // c, count,
                          tile.num_programs(0) // c, stages=1)
    return tile.range(tile.program_id(0), count, tile.num_programs(0),
                      stages=1)


@ts.kernel
def gemm(A: KTile["M", "K"], B: KTile["K", "N"], C: KTile["M", "N"]):
    """C = A @ B (bf16/f16 on the tensor cores, f32 on FMAs), f32
    accumulation; a one-dim grid of up to cdiv(M, T.m) * cdiv(N, T.n)
    programs (a multiple of T.cluster; _tiles)."""
    T = tile.context()
    m, n = A.shape[0], B.shape[1]
    for t in _tiles(T, m, n):
        i, j = _grouped(T, m, n, t)
        acc = tile.zeros((T.m, T.n))
        for k in tile.range(0, A.shape[1], T.k):
            a = tile.load(A, at=(i, k), shape=(T.m, T.k))
            b = tile.load(B, at=(k, j), shape=(T.k, T.n),
                          multicast=T.cluster > 1)
            acc = tile.dot(a, b, acc)
        tile.store(C, tile.cast(acc, C.dtype), at=(i, j))


@ts.kernel
def gemm_bt(A: KTile["M", "K"], Bt: KTile["N", "K"], C: KTile["M", "N"],
            scale: float, *, tf32: bool):
    """C = scale * A @ Bt^T, K contiguous in both operands, as the tensor
    cores take fp8 (e4m3/e5m2) and tf32 (f32 with tf32=True)."""
    T = tile.context()
    m, n = A.shape[0], Bt.shape[0]
    for t in _tiles(T, m, n):
        i, j = _grouped(T, m, n, t)
        acc = tile.zeros((T.m, T.n))
        for k in tile.range(0, A.shape[1], T.k):
            a = tile.load(A, at=(i, k), shape=(T.m, T.k))
            b = tile.load(Bt, at=(j, k), shape=(T.n, T.k),
                          multicast=T.cluster > 1)
            acc = tile.dot(a, tile.transpose(b), acc, tf32=tf32)
        tile.store(C, tile.cast(acc * scale, C.dtype), at=(i, j))


@ts.kernel
def gemm_batched(A: KTile["MA", "K"], B: KTile["KB", "NB"],
                 C: KTile["ZM", "N"], m: int, *, b_transposed: bool,
                 a_shared: bool):
    """C[z] = A[z] @ B[z] (B[z]^T with b_transposed) on 2-D views: C as
    [Z * M, N], A as [Z * M, K] (or one [M, K] with a_shared), B as
    [Z * K, N] (or [Z * N, K] with b_transposed). A GEMM over C's view
    whose row tiles each lie in one batch (M a multiple of T.m), with the
    persistent grid, producer warpgroup and staged stores of `gemm` on
    Hopper. Columns of a B block past N (b_transposed: the next batch's
    rows) only reach columns of C that are not stored; rows of a B block
    past K would meet A's zero padding, so K must be a multiple of T.k
    unless b_transposed."""
    T = tile.context()
    zm, n, k_all = C.shape[0], C.shape[1], A.shape[1]
    for t in _tiles(T, zm, n):
        i, j = _grouped(T, zm, n, t)
        z = i // m
        ia = i - z * m if a_shared else i
        acc = tile.zeros((T.m, T.n))
        for k in tile.range(0, k_all, T.k):
            a = tile.load(A, at=(ia, k), shape=(T.m, T.k))
            if b_transposed:
                b = tile.transpose(tile.load(B, at=(z * n + j, k),
                                             shape=(T.n, T.k)))
            else:
                b = tile.load(B, at=(z * k_all + k, j), shape=(T.k, T.n))
            acc = tile.dot(a, b, acc)
        tile.store(C, tile.cast(acc, C.dtype), at=(i, j))


@ts.kernel
def batched_matmul(A: KTile["BA", "M", "K"], B: KTile["BB", "KN0", "KN1"],
                   C: KTile["BC", "M", "N"], *, b_transposed: bool,
                   a_shared: bool):
    """C[z] = A[z] @ B[z] (B[z]^T with b_transposed); with a_shared A has
    one matrix (a shared B is one GEMM: see gemm). Grid: (M tiles, N
    tiles, batch)."""
    T = tile.context()
    i = tile.program_id(0) * T.m
    j = tile.program_id(1) * T.n
    z = tile.program_id(2)
    a_z = A[0] if a_shared else A[z]
    b_z = B[z]
    acc = tile.zeros((T.m, T.n))
    for k in tile.range(0, A.shape[2], T.k):
        a = tile.load(a_z, at=(i, k), shape=(T.m, T.k))
        if b_transposed:
            b = tile.transpose(tile.load(b_z, at=(j, k), shape=(T.n, T.k)))
        else:
            b = tile.load(b_z, at=(k, j), shape=(T.k, T.n))
        acc = tile.dot(a, b, acc)
    tile.store(C[z], tile.cast(acc, C.dtype), at=(i, j))


# --------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------

def _head(x, bh, d):
    """Head ``bh`` of ``x``: the [S, ...] rows it lies in and the column
    its ``d`` columns start at. ``x`` is [BH, S, d] (head bh is x[bh]), or
    [B, S, H d], the heads side by side in each row (the [B, S, H, d] of a
    product whose heads were split off, read without a transpose): head bh
    is then columns (bh % H) d .. (bh % H + 1) d of x[bh // H]."""
    heads = x.shape[2] // d
    return x[bh // heads], (bh % heads) * d


def _attend(T, Qb, K, V, nblk, scale, acc, m, l, p, causal, q0, ck, cv):
    """Key block j of attention, with the output's product one block
    behind (FlashAttention-3's order within a warpgroup): block j's scores
    are issued first, then the product of block j-1's probabilities ``p``
    (zero in the first block) with its values, which runs while the
    softmax of block j computes. ``acc`` comes in scaled to the running
    max of blocks < j and leaves scaled to block j's. Scores of keys after
    the query (causal, queries from q0) or past the last key are masked;
    the masks compare elements only in blocks that have such keys."""
    Kb = tile.load(K, at=(tile.col_index(nblk), ck), shape=(T.n, T.d))
    Vp = tile.load(V, at=(tile.maximum(tile.col_index(nblk) - T.n, 0), cv),
                   shape=(T.n, T.d))
    S = tile.dot(Qb, tile.transpose(Kb))
    acc = tile.dot(p, Vp, acc)
    if causal:
        tile.mask_causal(S, q0, tile.col_index(nblk))
    else:
        tile.mask_keys(S, tile.col_index(nblk), K.shape[0])
    # Scores scaled as 2^(s scale log2(e) - m' log2(e)); a row without a
    # score yet (m' = -inf) subtracts 0.
    m_new = tile.maximum(m, tile.max(S, axis=1) * scale)
    safe = tile.where(m_new > NEG_INF, m_new, 0.0)
    P = tile.exp2(tile.fma(S, scale * LOG2E, (safe * -LOG2E)[:, None]))
    a = tile.exp2((m - safe) * LOG2E)
    l = a * l + tile.sum(P, axis=1)
    return acc * a[:, None], m_new, l, tile.cast(P, V.dtype)


# Heads whose causal blocks run together (_program): enough programs for a
# wave of the card, and the keys and values they read (8 heads of S = 2048
# and D = 64: 4 MiB) stay in L2.
_HEAD_GROUP = 8


def _program(size, causal, longest_last=True):
    """(head, first row of the block of ``size`` rows) of this program,
    in a grid (blocks, heads). Without a mask every program does the same
    work: program (x, y) takes block x of head y. Causal blocks differ: a
    later query block sees more keys (longest_last), an earlier key block
    more queries. Those programs take the heads in groups of _HEAD_GROUP
    and, within a group, the blocks longest first over its heads: the
    p-th program of a group to start (the card starts them in the order
    of x + y * blocks) takes the (p // n)-th longest block of its head
    p % n (n the group's heads). So the programs running at once read the
    keys and values of a few heads, which stay in L2 (taken longest first
    over all heads, each wave read every head's from memory again), and
    the last wave holds the shortest blocks of the last group. (Longest
    first within each head would start the last head's longest block near
    the end.)"""
    if not causal:
        return tile.program_id(1), tile.program_id(0) * size
    blocks, heads = tile.num_programs(0), tile.num_programs(1)
    p = tile.program_id(0) + tile.program_id(1) * blocks
    group = p // (_HEAD_GROUP * blocks)
    first = group * _HEAD_GROUP
    n = tile.minimum(heads - first, _HEAD_GROUP)
    q = p - first * blocks
    rank = q // n
    block = blocks - 1 - rank if longest_last else rank
    return first + q % n, block * size


@ts.kernel
def flash_attention_fwd(q: KTile["Q_B", "S", "Q_C"],
                        k: KTile["K_B", "S", "K_C"],
                        v: KTile["V_B", "S", "V_C"],
                        o: KTile["O_B", "S", "O_C"],
                        lse: KTile["BH", "S", ts.f32], scale: float, *,
                        causal: bool):
    """Attention forward (one program per T.m queries of one head, keys in
    T.n blocks; grid (cdiv(S, T.m), BH)). Each of q, k, v and o is
    [BH, S, D] or [B, S, H D] on its own (_head). Each block's output
    product is issued with the next block's scores (_attend). Also writes each
    query's log-sum-exp of scaled scores (backward). One loop over the key
    blocks: the masks cost blocks below the diagonal and inside the
    sequence one uniform branch, so a second loop for the masked blocks
    (another query load, a ring drained and refilled) does not pay."""
    T = tile.context()
    bh, q0 = _program(T.m, causal)
    (Q, cq), (K, ck), (V, cv), (O, co) = (_head(x, bh, T.d)
                                          for x in (q, k, v, o))
    L = lse[bh]
    keys = K.shape[0]
    acc = tile.zeros((T.m, T.d))
    m = tile.full((T.m,), NEG_INF)
    l = tile.zeros((T.m,))
    p = tile.zeros((T.m, T.n), V.dtype)
    end = tile.minimum(q0 + T.m, keys) if causal else keys
    Qb = tile.load(Q, at=(q0, cq), shape=(T.m, T.d))
    # One block past the keys: that block's scores are all masked (its
    # probabilities 0, the running max and sum unchanged) and its product
    # is the last block's. (A product after the loop would need one more
    # shared tile than a block of the producer's kernel holds beside the
    # ring.)
    for nblk in tile.range_n(end + T.n, T.n, prefetch=T.stages):
        acc, m, l, p = _attend(T, Qb, K, V, nblk, scale, acc, m, l, p,
                               causal, q0, ck, cv)
    tile.store(O, tile.cast(acc / l[:, None], O.dtype), at=(q0, co))
    tile.store(L, m + tile.log(l), at=(q0,))


def _probabilities(T, S, lse, scale, q0, k0, causal):
    """P = exp(S scale - lse) of one block of scores S = Q K^T (0 above
    the diagonal), as 2^(S scale log2(e) - lse log2(e)): a multiply-add and
    the hardware's ex2 per element."""
    S = tile.fma(S, scale * LOG2E, (lse * -LOG2E)[:, None])
    if causal:
        tile.mask_causal(S, q0, k0)
    return tile.exp2(S)


@ts.kernel
def flash_attention_bwd_dkdv(q: KTile["Q_B", "S", "Q_C"],
                             k: KTile["K_B", "S", "K_C"],
                             v: KTile["V_B", "S", "V_C"],
                             do: KTile["DO_B", "S", "DO_C"],
                             lse: KTile["BH", "S", ts.f32],
                             delta: KTile["BH", "S", ts.f32],
                             dk: KTile["DK_B", "S", "DK_C"],
                             dv: KTile["DV_B", "S", "DV_C"], scale: float, *,
                             causal: bool):
    """dK and dV of T.n keys of one head, over every query block that sees
    them; grid (cdiv(S, T.n), BH). No atomics: each program owns its rows
    of dK and dV. Each [.., S, ..] tensor is [BH, S, D] or [B, S, H D] on
    its own (_head)."""
    T = tile.context()
    bh, k0 = _program(T.n, causal, longest_last=False)
    (Q, cq), (K, ck), (V, cv), (DO, cdo), (DK, cdk), (DV, cdv) = (
        _head(x, bh, T.d) for x in (q, k, v, do, dk, dv))
    L, Dl = lse[bh], delta[bh]
    seq = Q.shape[0]
    Kb = tile.load(K, at=(k0, ck), shape=(T.n, T.d))
    Vb = tile.load(V, at=(k0, cv), shape=(T.n, T.d))
    dK = tile.zeros((T.n, T.d))
    dV = tile.zeros((T.n, T.d))
    # Causal: queries before the block's first key see none of it.
    start = (k0 // T.m) * T.m if causal else 0
    for q0 in tile.range(start, seq, T.m, stages=T.stages):
        Qb = tile.load(Q, at=(q0, cq), shape=(T.m, T.d))
        dOb = tile.load(DO, at=(q0, cdo), shape=(T.m, T.d))
        l = tile.load(L, at=(q0,), shape=(T.m,))
        dl = tile.load(Dl, at=(q0,), shape=(T.m,))
        # The two products of the scores, then the two of the gradients,
        # each pair issued together (P^T and dS^T go to the tensor cores
        # through shared memory).
        S = tile.dot(Qb, tile.transpose(Kb))
        dP = tile.dot(dOb, tile.transpose(Vb))
        P = _probabilities(T, S, l, scale, q0, k0, causal)
        dS = P * (dP - dl[:, None])
        Pb, dSb = tile.cast(P, q.dtype), tile.cast(dS, q.dtype)
        Pt, dSt = tile.transpose(Pb), tile.transpose(dSb)
        dV = tile.dot(Pt, dOb, dV)
        dK = tile.dot(dSt, Qb, dK)
    tile.store(DK, tile.cast(dK * scale, dk.dtype), at=(k0, cdk))
    tile.store(DV, tile.cast(dV, dv.dtype), at=(k0, cdv))


@ts.kernel
def flash_attention_bwd_dq(q: KTile["Q_B", "S", "Q_C"],
                           k: KTile["K_B", "S", "K_C"],
                           v: KTile["V_B", "S", "V_C"],
                           o: KTile["O_B", "S", "O_C"],
                           do: KTile["DO_B", "S", "DO_C"],
                           lse: KTile["BH", "S", ts.f32],
                           delta: KTile["BH", "S", ts.f32],
                           dq: KTile["DQ_B", "S", "DQ_C"], scale: float, *,
                           causal: bool):
    """dQ of T.m queries of one head, over the key blocks they see; grid
    (cdiv(S, T.m), BH). Also computes and writes the softmax backward's
    row term delta = rowsum(dO * O) of its queries (f32), which the dK/dV
    kernel, launched after it, reads. Each [.., S, ..] tensor is
    [BH, S, D] or [B, S, H D] on its own (_head)."""
    T = tile.context()
    bh, q0 = _program(T.m, causal)
    (Q, cq), (K, ck), (V, cv), (O, co), (DO, cdo), (DQ, cdq) = (
        _head(x, bh, T.d) for x in (q, k, v, o, do, dq))
    L, Dl = lse[bh], delta[bh]
    keys = K.shape[0]
    Qb = tile.load(Q, at=(q0, cq), shape=(T.m, T.d))
    dOb = tile.load(DO, at=(q0, cdo), shape=(T.m, T.d))
    l = tile.load(L, at=(q0,), shape=(T.m,))
    dl = tile.sum(
        tile.cast(tile.load(O, at=(q0, co), shape=(T.m, T.d)), ts.f32) *
        tile.cast(tile.load(DO, at=(q0, cdo), shape=(T.m, T.d)), ts.f32),
        axis=1)
    tile.store(Dl, dl, at=(q0,))
    dQ = tile.zeros((T.m, T.d))
    end = tile.minimum(q0 + T.m, keys) if causal else keys
    for k0 in tile.range(0, end, T.n, stages=T.stages):
        Kb = tile.load(K, at=(k0, ck), shape=(T.n, T.d))
        Vb = tile.load(V, at=(k0, cv), shape=(T.n, T.d))
        S = tile.dot(Qb, tile.transpose(Kb))
        dP = tile.dot(dOb, tile.transpose(Vb))
        P = _probabilities(T, S, l, scale, q0, k0, causal)
        dS = tile.cast(P * (dP - dl[:, None]), q.dtype)
        dQ = tile.dot(dS, Kb, dQ)
    tile.store(DQ, tile.cast(dQ * scale, dq.dtype), at=(q0, cdq))
