"""tessera.stdlib on the GPU against float64 references (NumPy, and
PyTorch's CPU autograd in float64 for the backward passes). Skipped
without a GPU; `python test_stdlib_gpu.py --precompile CHIP` fills the
kernel cache with what these tests launch."""

import math
import os
import sys

import numpy as np
import pytest

import tessera as ts
from tessera import stdlib as S

SOFTMAX = [((7, 1000), "f32"), ((7, 4096), "bf16"), ((3, 20000), "f32")]
NORMS = [((7, 1000), "f32"), ((7, 4096), "bf16"), ((3001, 256), "bf16")]
CE = ((5, 50000), "bf16")
ADAM_N = 5000
ROPE = (2, 100, 4, 64)
# bf16 row strides of 200 bytes: TMA cannot read A (the 2nd), B (the 1st)
# or either (the 3rd); the producer copies those tiles with cp.async.
GEMMS = [((300, 200, 100), "bf16"), ((300, 100, 200), "bf16"),
         ((300, 100, 100), "bf16"), ((300, 200, 100), "f32"),
         ((300, 200, 100), "f16"), ((2048, 256, 1024), "f16"),
         # Hopper's tile choice: 128x128 (128 tiles), 128x256 (256 tiles).
         ((2048, 256, 1024), "bf16"), ((2048, 128, 4096), "bf16")]
PERSISTENT = [(700, 320, 900), (700, 100, 900)]
PERSISTENT_SCHEDULE = ts.Schedule(block=(128, 256), k=64, warps=8, stages=4,
                                  group=8, persistent=5)
# Clusters of two programs sharing B's tiles (multicast): (M, K, N) with
# an odd count of 128-row blocks (the last cluster's second program has
# no rows), B's row stride TMA cannot read (cp.async, 200-byte rows), and
# persistent grids of whole clusters (5 programs: 2 clusters).
CLUSTER = [(700, 320, 900, None), (900, 256, 520, 5), (640, 300, 100, None),
           (4096, 1024, 4096, None)]
CLUSTER_SCHEDULE = ts.Schedule(block=(128, 256), k=64, warps=8, stages=4,
                               group=8, cluster=2)


def _cluster_schedule(persistent):
    return (CLUSTER_SCHEDULE.with_params(persistent=persistent)
            if persistent else CLUSTER_SCHEDULE)

# Output tiles written through shared memory and TMA (3 stages leave room
# for the staging buffer): partial tiles in both dims (TMA clips them), C
# rows of 1808 bytes (TMA) and of 1800 (not a multiple of 16: the
# consumers store directly).
STAGED = [(700, 320, 904), (700, 320, 900), (256, 64, 512)]
STAGED_SCHEDULE = ts.Schedule(block=(128, 256), k=64, warps=8, stages=3,
                              group=8, persistent=5)
FP8 = (300, 256, 100)
TF32 = (300, 256, 200)
# Batched GEMMs (Z, M, K, N, b transposed, a shared, dtype): M = 256 takes
# the [Z * M, N] view (gemm_batched; K = 96 with b transposed, where K's
# tail is padding), M = 200 or 100 the per-batch grid (batched_matmul).
BATCHED = [(3, 256, 96, 136, True, False, "bf16"),
           (3, 256, 128, 72, False, False, "bf16"),
           (3, 256, 128, 72, False, True, "bf16"),
           (3, 200, 96, 136, True, False, "bf16"),
           (3, 200, 96, 40, False, True, "bf16"),
           (2, 256, 64, 48, False, False, "f32"),
           (2, 100, 30, 20, True, False, "f32")]


def _batched_schedules(dtype, device):
    """(view?, schedule) of every schedule the batched GEMMs of `dtype`
    autotune over: the view's (gemm_batched) and the per-batch grid's."""
    from tessera._autotune import _schedule_from
    wide = "f32" if dtype == "f32" else "16"
    view = S._gemm_kernel("gemm_batched", dtype, device)
    grid = S._tuned("batched_matmul", S._BATCHED_BASE[wide],
                    S._BATCHED_SPACE[wide], listed=True)
    return [(k is view, _schedule_from(k._schedule, c))
            for k in (view, grid) for c in k._autotune.configs()]
# (head dim, causal, dtype): bf16 throughout, and f16 operands (the same
# kernels' f16 wgmma and conversions) for two of them.
ATTN = [(d, causal, "bf16") for d in (64, 128) for causal in (True, False)]
ATTN += [(64, True, "f16"), (128, False, "f16")]
# Forward tolerance: one rounding of the output to its dtype.
ATTN_TOL = {"bf16": 2e-2, "f16": 1e-2}
ATTN_SHAPE = (2, 3, 200)
# The warpgroups taking turns to issue their products (head dim 128).
PINGPONG_FWD = ts.Schedule(block=(128, 128), warps=8, stages=2, d=128,
                           pingpong=True)
PINGPONG_BWD = ts.Schedule(block=(128, 64), warps=8, stages=2, d=128,
                           pingpong=True)


def _calls(mk, chip):
    """Every stdlib call the tests make, on tensors from mk(shape, dtype)."""
    for shape, dt in SOFTMAX + [((4, 300), "f32")]:
        S.stable_softmax(mk(shape, dt))
    for (rows, n), dt in NORMS:
        y, mean, rstd = S.layernorm(mk((rows, n), dt), mk((n,), "f32"),
                                    mk((n,), "f32"))
        S.layernorm_backward(mk((rows, n), dt), mk((rows, n), dt),
                             mk((n,), "f32"), mean, rstd)
        y, rstd = S.rmsnorm(mk((rows, n), dt), mk((n,), "f32"))
        S.rmsnorm_backward(mk((rows, n), dt), mk((rows, n), dt),
                           mk((n,), "f32"), rstd)
    (rows, v), dt = CE
    loss, lse = S.cross_entropy(mk((rows, v), dt), mk((rows,), "i32"))
    S.cross_entropy_backward(mk((rows, v), dt), mk((rows,), "i32"), lse,
                             mk((rows,), "f32"))
    S.fused_adam(mk((ADAM_N,), "f32"), mk((ADAM_N,), "bf16"),
                 mk((ADAM_N,), "f32"), mk((ADAM_N,), "f32"), lr=1e-2, step=1)
    b, s, h, d = ROPE
    S.rotary_embedding(mk(ROPE, "bf16"), mk((s, d // 2), "f32"),
                       mk((s, d // 2), "f32"))
    for (m, k, n), dt in GEMMS:
        S.gemm(mk((m, k), dt), mk((k, n), dt))
    S.gemm(mk((300, 200), "bf16"), mk((100, 200), "bf16"), transposed_b=True)
    for m, k, n, persistent in CLUSTER:
        for transposed in (False, True):
            S.gemm.with_schedule(_cluster_schedule(persistent))(
                mk((m, k), "bf16"), mk((n, k) if transposed else (k, n),
                                       "bf16"), transposed_b=transposed)
    for m, k, n in STAGED:
        S.gemm.with_schedule(STAGED_SCHEDULE)(mk((m, k), "bf16"),
                                              mk((k, n), "bf16"))
    for m, k, n in PERSISTENT:
        S.gemm.with_schedule(PERSISTENT_SCHEDULE)(mk((m, k), "bf16"),
                                                  mk((k, n), "bf16"))
    m, k, n = TF32
    for tf32 in (True, False):
        S.gemm(mk((m, k), "f32"), mk((n, k), "f32"), transposed_b=True,
               allow_tf32=tf32)
    for z, m, k, n, bt, a_shared, dt in BATCHED:
        a = mk((m, k) if a_shared else (z, m, k), dt)
        b = mk((z, n, k) if bt else (z, k, n), dt)
        S.gemm(a, b, transposed_b=bt)
        if dt == "bf16":
            for view, s in _batched_schedules(dt, 0):
                if view == (m % 128 == 0):
                    S.gemm.with_schedule(s)(a, b, transposed_b=bt)
    if chip == "sm_90a":
        m, k, n = FP8
        S.gemm(mk((m, k), "f8E4M3FN"), mk((n, k), "f8E4M3FN"), scale=0.25)
    for d, causal, dt in ATTN:
        shape = ATTN_SHAPE + (d,)
        S.flash_attention_2(*(mk(shape, dt) for _ in range(3)),
                            causal=causal)
        S.flash_attention_2_backward(*(mk(shape, dt) for _ in range(5)),
                                     mk(shape[:-1], "f32"), causal=causal)
    shape = ATTN_SHAPE + (128,)
    for causal in (True, False):
        S.flash_attention_2.with_schedule(PINGPONG_FWD)(
            *(mk(shape, "bf16") for _ in range(3)), causal=causal)
        S.flash_attention_2_backward.with_schedule(PINGPONG_BWD)(
            *(mk(shape, "bf16") for _ in range(5)), mk(shape[:-1], "f32"),
            causal=causal)


def precompile(chip):
    from tessera._kernel import compile_only
    with compile_only(chip):
        _calls(lambda shape, dt: ts.cuda.empty(shape, dt), chip)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--precompile":
        sys.exit("usage: test_stdlib_gpu.py --precompile CHIP")
    precompile(sys.argv[2])
    sys.exit(0)

pytestmark = pytest.mark.skipif(not ts.cuda.is_available(),
                                reason="needs a CUDA GPU")
import ml_dtypes  # noqa: E402


def rounded(x, dt):
    """float64 values as stored in dtype dt."""
    if dt == "f32":
        return np.asarray(x, np.float32).astype(np.float64)
    np_type = {"bf16": ml_dtypes.bfloat16, "f16": np.float16,
               "f8E4M3FN": ml_dtypes.float8_e4m3fn}[dt]
    return np.asarray(x, np.float32).astype(np_type).astype(np.float64)


def dev(x, dt):
    return ts.to_device(np.asarray(x, np.float32), dtype=dt)


def host(t):
    return t.numpy().astype(np.float64)


TOL = {"f32": 2e-5, "bf16": 1e-2}


@pytest.mark.parametrize("shape,dt", SOFTMAX)
def test_stable_softmax(shape, dt, rng=np.random.default_rng(0)):
    x = rounded(rng.standard_normal(shape) * 5, dt)
    y = S.stable_softmax(dev(x, dt))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(host(y), e / e.sum(1, keepdims=True),
                               rtol=TOL[dt], atol=TOL[dt] * 1e-3)


def _torch64(*arrays):
    torch = pytest.importorskip("torch")
    return torch, [torch.tensor(a, dtype=torch.float64, requires_grad=True)
                   for a in arrays]


@pytest.mark.parametrize("shape,dt", NORMS)
def test_layernorm_forward_backward(shape, dt, rng=np.random.default_rng(1)):
    rows, n = shape
    x = rounded(rng.standard_normal(shape) * 2 + 0.5, dt)
    w, b = rng.standard_normal(n), rng.standard_normal(n)
    dy = rounded(rng.standard_normal(shape), dt)
    y, mean, rstd = S.layernorm(dev(x, dt), dev(w, "f32"), dev(b, "f32"),
                                1e-5)
    dx, dw, db = S.layernorm_backward(dev(dy, dt), dev(x, dt), dev(w, "f32"),
                                      mean, rstd)
    torch, (tx, tw, tb) = _torch64(x, rounded(w, "f32"), rounded(b, "f32"))
    ty = torch.nn.functional.layer_norm(tx, (n,), tw, tb, 1e-5)
    ty.backward(torch.tensor(dy))
    tol = TOL[dt]
    np.testing.assert_allclose(host(y), ty.detach().numpy(), rtol=tol,
                               atol=tol)
    np.testing.assert_allclose(host(mean), x.mean(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(dx), tx.grad.numpy(), rtol=tol,
                               atol=tol * 2)
    np.testing.assert_allclose(host(dw), tw.grad.numpy(), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(host(db), tb.grad.numpy(), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("shape,dt", NORMS)
def test_rmsnorm_forward_backward(shape, dt, rng=np.random.default_rng(2)):
    rows, n = shape
    x = rounded(rng.standard_normal(shape), dt)
    w = rng.standard_normal(n)
    dy = rounded(rng.standard_normal(shape), dt)
    y, rstd = S.rmsnorm(dev(x, dt), dev(w, "f32"), 1e-6)
    dx, dw = S.rmsnorm_backward(dev(dy, dt), dev(x, dt), dev(w, "f32"), rstd)
    torch, (tx, tw) = _torch64(x, rounded(w, "f32"))
    ty = tx * torch.rsqrt((tx * tx).mean(1, keepdim=True) + 1e-6) * tw
    ty.backward(torch.tensor(dy))
    tol = TOL[dt]
    np.testing.assert_allclose(host(y), ty.detach().numpy(), rtol=tol,
                               atol=tol)
    np.testing.assert_allclose(host(dx), tx.grad.numpy(), rtol=tol,
                               atol=tol * 2)
    np.testing.assert_allclose(host(dw), tw.grad.numpy(), rtol=1e-4,
                               atol=1e-4)


def test_cross_entropy_forward_backward(rng=np.random.default_rng(3)):
    (rows, v), dt = CE
    x = rounded(rng.standard_normal((rows, v)) * 3, dt)
    labels = rng.integers(0, v, rows).astype(np.int32)
    labels[2] = -100  # ignored
    g = rng.standard_normal(rows)
    loss, lse = S.cross_entropy(dev(x, dt), ts.to_device(labels))
    dx = S.cross_entropy_backward(dev(x, dt), ts.to_device(labels), lse,
                                  dev(g, "f32"))
    torch, (tx,) = _torch64(x)
    tl = torch.nn.functional.cross_entropy(
        tx, torch.tensor(labels, dtype=torch.long), reduction="none",
        ignore_index=-100)
    tl.backward(torch.tensor(rounded(g, "f32")))
    np.testing.assert_allclose(host(loss), tl.detach().numpy(), rtol=1e-5,
                               atol=1e-4)
    np.testing.assert_allclose(host(dx), tx.grad.numpy(), rtol=1e-2,
                               atol=1e-4)


def test_cross_entropy_shifted_rows(rng=np.random.default_rng(12)):
    # Rows far from 0 (the exponentials need the running maximum) and a row
    # whose maximum moves at every column block (rescaled each time).
    (rows, v), dt = CE
    x = rng.standard_normal((rows, v)) * 3
    x[0] += 100.0
    x[1] -= 100.0
    x[3] = np.linspace(-20.0, 20.0, v)
    x = rounded(x, dt)
    labels = rng.integers(0, v, rows).astype(np.int32)
    loss, lse = S.cross_entropy(dev(x, dt), ts.to_device(labels))
    top = x.max(axis=1, keepdims=True)
    ref_lse = (top + np.log(np.exp(x - top).sum(axis=1, keepdims=True)))[:, 0]
    np.testing.assert_allclose(host(lse), ref_lse, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(host(loss), ref_lse - x[np.arange(rows), labels],
                               rtol=1e-5, atol=1e-4)


def test_fused_adam(rng=np.random.default_rng(4)):
    n = ADAM_N
    p = rng.standard_normal(n).astype(np.float32)
    m, v = np.zeros(n, np.float32), np.zeros(n, np.float32)
    dp, dm, dv = dev(p, "f32"), dev(m, "f32"), dev(v, "f32")
    ref_p, ref_m, ref_v = (a.astype(np.float64) for a in (p, m, v))
    lr, b1, b2, eps, wd = 1e-2, 0.9, 0.999, 1e-8, 0.01
    for step in (1, 2, 3):
        g = rounded(rng.standard_normal(n), "bf16")
        S.fused_adam(dp, dev(g, "bf16"), dm, dv, lr=lr, step=step, beta1=b1,
                     beta2=b2, eps=eps, weight_decay=wd)
        ref_m = b1 * ref_m + (1 - b1) * g
        ref_v = b2 * ref_v + (1 - b2) * g * g
        mhat, vhat = ref_m / (1 - b1 ** step), ref_v / (1 - b2 ** step)
        ref_p = ref_p - lr * (mhat / (np.sqrt(vhat) + eps) + wd * ref_p)
    np.testing.assert_allclose(host(dp), ref_p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(dm), ref_m, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(host(dv), ref_v, rtol=1e-5, atol=1e-9)


def test_rotary_embedding(rng=np.random.default_rng(5)):
    b, s, h, d = ROPE
    x = rounded(rng.standard_normal(ROPE), "bf16")
    inv = 1.0 / 10000 ** (np.arange(0, d, 2) / d)
    ang = np.arange(s)[:, None] * inv[None, :]
    cos, sin = rounded(np.cos(ang), "f32"), rounded(np.sin(ang), "f32")
    y = S.rotary_embedding(dev(x, "bf16"), dev(cos, "f32"), dev(sin, "f32"))
    x1, x2 = x[..., :d // 2], x[..., d // 2:]
    c, sn = cos[None, :, None, :], sin[None, :, None, :]
    ref = np.concatenate([x1 * c - x2 * sn, x2 * c + x1 * sn], -1)
    np.testing.assert_allclose(host(y), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("mkn,dt", GEMMS)
def test_gemm(mkn, dt, rng=np.random.default_rng(6)):
    m, k, n = mkn
    a, b = (rounded(rng.standard_normal(s), dt) for s in ((m, k), (k, n)))
    c = S.gemm(dev(a, dt), dev(b, dt))
    ref = a @ b
    if dt == "f32":
        np.testing.assert_allclose(host(c), ref, rtol=1e-4, atol=1e-4)
    else:  # f32 accumulation, one bf16 rounding of the result
        np.testing.assert_allclose(host(c), ref, rtol=1e-2,
                                   atol=1e-2 * math.sqrt(k))


@pytest.mark.parametrize("mkn", [(2048, 256, 1024), (1024, 256, 1024),
                                 (300, 200, 100)])
def test_gemm_bf16_transposed_b(mkn, rng=np.random.default_rng(12)):
    # One shape for each of Hopper's tile choices (128x128, 64x128, and
    # 64x128 with partial tiles).
    m, k, n = mkn
    a, bt = (rounded(rng.standard_normal(s), "bf16") for s in ((m, k),
                                                             (n, k)))
    c = S.gemm(dev(a, "bf16"), dev(bt, "bf16"), transposed_b=True)
    np.testing.assert_allclose(host(c), a @ bt.T, rtol=1e-2,
                               atol=1e-2 * math.sqrt(k))


@pytest.mark.parametrize("mkn", PERSISTENT)
def test_gemm_persistent(mkn, rng=np.random.default_rng(11)):
    # 5 programs for 24 output tiles: each loops over about 5 tiles, the
    # operand rings' slots and phases running on across them (and, for
    # K = 100, the producer copying A with cp.async).
    m, k, n = mkn
    a, b = (rounded(rng.standard_normal(s), "bf16") for s in ((m, k), (k, n)))
    c = S.gemm.with_schedule(PERSISTENT_SCHEDULE)(dev(a, "bf16"),
                                                  dev(b, "bf16"))
    np.testing.assert_allclose(host(c), a @ b, rtol=1e-2,
                               atol=1e-2 * math.sqrt(k))


@pytest.mark.parametrize("mkn", STAGED)
def test_gemm_staged_stores(mkn, rng=np.random.default_rng(13)):
    m, k, n = mkn
    a, b = (rounded(rng.standard_normal(s), "bf16") for s in ((m, k), (k, n)))
    c = dev(np.full((m, n), np.nan), "bf16")
    S.gemm.with_schedule(STAGED_SCHEDULE)(dev(a, "bf16"), dev(b, "bf16"),
                                          out=c)
    np.testing.assert_allclose(host(c), a @ b, rtol=1e-2,
                               atol=1e-2 * math.sqrt(k))


@pytest.mark.parametrize("mkn", CLUSTER)
def test_gemm_clusters(mkn, rng=np.random.default_rng(12)):
    m, k, n, persistent = mkn
    a, b = (rounded(rng.standard_normal(s), "bf16") for s in ((m, k),
                                                             (k, n)))
    bt = np.ascontiguousarray(b.T)
    for s, transposed in ((_cluster_schedule(persistent), False),
                          (_cluster_schedule(persistent), True)):
        c = S.gemm.with_schedule(s)(dev(a, "bf16"),
                                    dev(bt if transposed else b, "bf16"),
                                    transposed_b=transposed)
        np.testing.assert_allclose(host(c), a @ b, rtol=1e-2,
                                   atol=1e-2 * math.sqrt(k))


@pytest.mark.parametrize("tf32", [True, False])
def test_gemm_f32_transposed_b(tf32, rng=np.random.default_rng(10)):
    m, k, n = TF32
    a, bt = (rng.standard_normal(s).astype(np.float32) for s in ((m, k),
                                                                (n, k)))
    c = S.gemm(dev(a, "f32"), dev(bt, "f32"), transposed_b=True,
               allow_tf32=tf32)
    ref = a.astype(np.float64) @ bt.astype(np.float64).T
    err = np.abs(host(c) - ref).max()
    hopper = ts.device("cuda").describe().find("sm_90") >= 0
    if tf32 and hopper:
        # The tensor cores read 10 mantissa bits: errors of about
        # sqrt(k) * 2^-11, far above f32 rounding (so tf32 ran).
        assert 1e-5 < err < 1e-2 * math.sqrt(k), err
    else:
        assert err < 1e-4, err


@pytest.mark.parametrize("case", BATCHED)
def test_gemm_batched(case, rng=np.random.default_rng(14)):
    """Batched GEMMs against float64, autotuned and (bf16) on every
    schedule of their autotune space, into poisoned outputs."""
    z, m, k, n, bt, a_shared, dt = case
    a = rounded(rng.standard_normal((m, k) if a_shared else (z, m, k)), dt)
    b = rounded(rng.standard_normal((z, n, k) if bt else (z, k, n)), dt)
    ref = a @ (np.swapaxes(b, -1, -2) if bt else b)
    tol = 1e-4 if dt == "f32" else 1e-2

    def check(c, what):
        got = host(c)
        assert got.shape == (z, m, n), what
        err = np.abs(got - ref).max() / np.abs(ref).max()
        assert err < tol, f"{what}: relative error {err:.3g}"

    ad, bd = dev(a, dt), dev(b, dt)
    check(S.gemm(ad, bd, transposed_b=bt), "autotuned")
    if dt == "bf16":
        for view, s in _batched_schedules(dt, 0):
            if view == (m % 128 == 0):
                out = dev(np.full((z, m, n), np.nan), dt)
                S.gemm.with_schedule(s)(ad, bd, transposed_b=bt, out=out)
                check(out, str(s))


def test_gemm_fp8(rng=np.random.default_rng(7)):
    if ts.device("cuda").describe().find("sm_90") < 0:
        pytest.skip("fp8 tensor cores: Hopper")
    m, k, n = FP8
    a = rounded(rng.standard_normal((m, k)), "f8E4M3FN")
    bt = rounded(rng.standard_normal((n, k)), "f8E4M3FN")
    c = S.gemm(dev(a, "f8E4M3FN"), dev(bt, "f8E4M3FN"), scale=0.25)
    ref = 0.25 * a @ bt.T
    # The tensor cores' fp8 accumulator keeps about 14 bits per 32-deep
    # step; the result is rounded to bf16.
    np.testing.assert_allclose(host(c), ref, rtol=2e-2,
                               atol=(k / 32 + 1) * 2**-13 * np.abs(ref).max()
                               + 1e-2)


def _attention_ref(q, k, v, causal):
    """float64 attention: (o, lse, p) of softmax(q k^T / sqrt(d)) v."""
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        seq = q.shape[-2]
        s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
    mx = s.max(-1, keepdims=True)
    lse = (mx + np.log(np.exp(s - mx).sum(-1, keepdims=True)))[..., 0]
    p = np.exp(s - lse[..., None])
    return p @ v, lse, p


def _attention_grads_ref(q, k, v, g, causal):
    """float64 (dq, dk, dv) of loss = sum(o * g)."""
    _, _, p = _attention_ref(q, k, v, causal)
    scale = 1 / math.sqrt(q.shape[-1])
    dv = np.swapaxes(p, -1, -2) @ g
    dp = g @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, dv


def _check_grads(got, want):
    for x, ref in zip(got, want):
        # bf16 probabilities and dS into the products; bf16 results.
        np.testing.assert_allclose(host(x), ref, rtol=3e-2,
                                   atol=3e-2 * np.abs(ref).max())


@pytest.mark.parametrize("d,causal,dt", ATTN)
def test_flash_attention_2(d, causal, dt, rng=np.random.default_rng(8)):
    shape = ATTN_SHAPE + (d,)
    q, k, v = (rounded(rng.standard_normal(shape), dt) for _ in range(3))
    o, lse = S.flash_attention_2(dev(q, dt), dev(k, dt), dev(v, dt),
                                 causal=causal)
    assert o.dtype.name == dt
    ref, ref_lse, _ = _attention_ref(q, k, v, causal)
    np.testing.assert_allclose(host(o), ref, rtol=ATTN_TOL[dt],
                               atol=ATTN_TOL[dt])
    np.testing.assert_allclose(host(lse), ref_lse, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("d,causal,dt", ATTN)
def test_flash_attention_2_backward(d, causal, dt,
                                    rng=np.random.default_rng(9)):
    shape = ATTN_SHAPE + (d,)
    q, k, v, g = (rounded(rng.standard_normal(shape), dt) for _ in range(4))
    dq_, dk_, dv_ = (dev(t, dt) for t in (q, k, v))
    o, lse = S.flash_attention_2(dq_, dk_, dv_, causal=causal)
    _check_grads(S.flash_attention_2_backward(dev(g, dt), dq_, dk_, dv_, o,
                                              lse, causal=causal),
                 _attention_grads_ref(q, k, v, g, causal))


def test_tensor_maps_of_many_buffers(rng=np.random.default_rng(14)):
    """A TMA kernel launched on many sets of buffers in turn: the runtime
    keeps the tensor maps of each set (64 a launch site) and rewrites the
    least recently used past that. 66 output buffers (poisoned first) in
    rotation, with inputs A, then B, then A again: each output holds its
    own pass's attention, never a stale one."""
    shape = ATTN_SHAPE + (128,)
    sets = []
    for _ in range(2):
        q, k, v = (rounded(rng.standard_normal(shape), "bf16")
                   for _ in range(3))
        sets.append((tuple(dev(t, "bf16") for t in (q, k, v)),
                     _attention_ref(q, k, v, False)[0]))
    outs = [dev(np.full(shape, np.nan), "bf16") for _ in range(66)]
    for which in (0, 1, 0):
        args, want = sets[which]
        for out in outs:
            S.flash_attention_2(*args, out=out)
        for i, out in enumerate(outs):
            np.testing.assert_allclose(host(out), want, rtol=2e-2, atol=2e-2,
                                       err_msg=f"buffer {i}, inputs {which}")


@pytest.mark.parametrize("causal", [True, False])
def test_flash_attention_ping_pong(causal, rng=np.random.default_rng(10)):
    """pingpong=True (the two warpgroups take turns on the tensor cores
    through named barriers): the same attention and gradients, with a
    partial last key block."""
    shape = ATTN_SHAPE + (128,)
    q, k, v, g = (rounded(rng.standard_normal(shape), "bf16")
                  for _ in range(4))
    dq_, dk_, dv_ = (dev(t, "bf16") for t in (q, k, v))
    o, lse = S.flash_attention_2.with_schedule(PINGPONG_FWD)(
        dq_, dk_, dv_, causal=causal)
    ref, ref_lse, _ = _attention_ref(q, k, v, causal)
    np.testing.assert_allclose(host(o), ref, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(host(lse), ref_lse, rtol=1e-3, atol=1e-3)
    _check_grads(S.flash_attention_2_backward.with_schedule(PINGPONG_BWD)(
        dev(g, "bf16"), dq_, dk_, dv_, o, lse, causal=causal),
        _attention_grads_ref(q, k, v, g, causal))


def test_ops_take_torch_tensors_and_report_bad_shapes():
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 300, device="cuda")
    y = torch.from_dlpack(S.stable_softmax(x))
    torch.testing.assert_close(y, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
    with pytest.raises(ts.TesseraError, match="weight must have shape"):
        S.rmsnorm(x, torch.ones(299, device="cuda"))
    with pytest.raises(ts.TesseraError, match="inner dims 300 and 5 differ"):
        S.gemm(x.bfloat16(), torch.ones(5, 2, device="cuda",
                                        dtype=torch.bfloat16))
