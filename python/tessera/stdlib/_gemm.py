"""The stdlib GEMM: 2-D and batched products on the tensor cores (wgmma
on Hopper, mma.sync before) or FMAs, autotuned per shape."""

from __future__ import annotations

import functools

from .._dtypes import as_dtype
from .._errors import TesseraError
from .._kernel import Schedule, cdiv
from . import _kernels as K
from ._common import _chip, _multiprocessors, _op, _out, _tensor, _tuned


_GEMM_SPACE = {"bf16": Schedule(block=(128, 256), k=64, warps=8, stages=4,
                                group=8),
               "f16": Schedule(block=(128, 256), k=64, warps=8, stages=4,
                               group=8),
               "f32": Schedule(block=(64, 64), k=16, warps=4, stages=2,
                               group=8)}
# f32 read as tf32 by the tensor cores (b transposed).
_TF32_BASE = Schedule(block=(128, 128), k=32, warps=8, stages=4, group=8)


# GEMM tiles (block, warps) that a GEMM without a schedule is autotuned
# over, per shape: wide tiles for large products, narrow ones so that
# small products do not leave SMs idle. bf16/f16 and tf32 on the tensor
# cores (wgmma on Hopper, mma.sync before); f32 on FMAs.
_GEMM_TILES = {"16": (((128, 256), 8), ((128, 128), 8), ((64, 128), 4)),
               "f32": (((64, 64), 4), ((32, 64), 4), ((128, 64), 8),
                       ((128, 128), 8))}


def _gemm_kernel(name, dtype, device):
    """The kernel a GEMM without a schedule runs: the base schedule of
    `dtype` (or "tf32") autotuned over its _GEMM_TILES."""
    base = _TF32_BASE if dtype == "tf32" else _GEMM_SPACE[dtype]
    return _tuned(name, base,
                  tuple((("BM", blk[0]), ("BN", blk[1]), ("warps", w))
                        for blk, w in _GEMM_TILES["f32" if dtype == "f32"
                                                  else "16"]), listed=True)


@functools.lru_cache(maxsize=1024)
def _grouped_schedule(s):
    """s with the GEMM's row-block groups (8 unless s sets them)."""
    return s if "group" in s.params else s.with_params(group=8)


@_op
def _gemm(schedule, a, b, *, out=None, out_dtype=None, scale=1.0,
          transposed_b=None, allow_tf32=False):
    """The matrix product ``a @ b`` with f32 accumulation.

    ``gemm(a, b, *, out=None, out_dtype=None, scale=1.0, transposed_b=None,
    allow_tf32=False)``: ``a`` is ``[M, K]`` and ``b`` ``[K, N]``, or, with
    ``transposed_b=True``, ``[N, K]`` (K contiguous). bf16 and f16 run on the
    tensor cores; f32 exactly on FMAs, or, with ``allow_tf32=True`` and ``b``
    transposed, read as tf32 on the tensor cores (wgmma on Hopper, mma.sync
    before); fp8 (e4m3/e5m2) takes ``b`` transposed (the default for fp8) and
    ``scale`` multiplies its product. The result is ``out_dtype`` (default:
    ``a``'s dtype; bf16 for fp8), written into ``out`` if given. Batched (bf16,
    f16, f32): ``a`` ``[Z, M, K]`` or ``[M, K]`` (shared by the batch), ``b``
    ``[Z, K, N]`` (``[Z, N, K]`` transposed) or ``[K, N]`` (shared), the result
    ``[Z, M, N]``. Without a schedule the tiles are autotuned per shape. Inner
    dims that differ, dtypes that differ, or options that do not apply raise
    ``TesseraError``.

    >>> from tessera.stdlib import gemm
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):  # compiles the launch; no GPU needed
    ...     a = ts.cuda.empty((64, 32), ts.bf16)
    ...     c = gemm(a, ts.cuda.empty((32, 16), ts.bf16))
    >>> c
    DeviceTensor(bf16[64, 16] on cuda:0)
    >>> with compile_only("sm_90a"):
    ...     gemm(a, ts.cuda.empty((16, 8), ts.bf16))
    Traceback (most recent call last):
        ...
    tessera.TesseraError: gemm of [64, 32] and [16, 8]: inner dims 32 and 16
    differ
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     a = ts.to_device(np.array([[1.0, 2.0], [3.0, 4.0]]), dtype=ts.bf16)
    ...     b = ts.to_device(np.eye(2), dtype=ts.bf16)
    ...     c = gemm(a, b)  # bf16 [[1, 2], [3, 4]]
    """
    a, b = _tensor(a, "a"), _tensor(b, "b")
    if 3 in (a.ndim, b.ndim) and {a.ndim, b.ndim} <= {2, 3}:
        if scale != 1.0 or allow_tf32 or out_dtype is not None or \
                a.dtype.name not in _GEMM_SPACE:
            raise TesseraError(f"a batched gemm takes bf16, f16 or f32 "
                               f"operands, without scale, allow_tf32 or "
                               f"out_dtype; got {a.dtype.name}")
        return _batched_gemm(schedule, a, b, out, bool(transposed_b))
    if a.ndim != 2 or b.ndim != 2:
        raise TesseraError(f"gemm takes matrices ([M, K]) or batches of "
                           f"them ([Z, M, K]), got {list(a.shape)} and "
                           f"{list(b.shape)}")
    fp8 = a.dtype.name.startswith("f8")
    if transposed_b is None:
        transposed_b = fp8
    if fp8 and not transposed_b:
        raise TesseraError("fp8 gemm takes b transposed ([N, K], K "
                           "contiguous), as the tensor cores read it")
    if allow_tf32 and a.dtype.name != "f32":
        raise TesseraError(f"allow_tf32 applies to f32 operands, got "
                           f"{a.dtype.name}")
    m, k = a.shape
    n = b.shape[0] if transposed_b else b.shape[1]
    kb = b.shape[1] if transposed_b else b.shape[0]
    if kb != k:
        raise TesseraError(f"gemm of {list(a.shape)} and {list(b.shape)}"
                           f"{' (b transposed)' if transposed_b else ''}: "
                           f"inner dims {k} and {kb} differ")
    if b.dtype != a.dtype and not (fp8 and b.dtype.name.startswith("f8")):
        raise TesseraError(f"gemm of {a.dtype.name} and {b.dtype.name}")
    dtype = as_dtype(out_dtype) if out_dtype is not None else (
        as_dtype("bf16") if fp8 else a.dtype)
    c = _out(out, (m, n), dtype, a.device.index)
    if transposed_b:
        if fp8:
            base = Schedule(block=(128, 256), k=128, warps=8, stages=4,
                            group=8)
        elif a.dtype.name in _GEMM_SPACE:
            base = None
        else:
            raise TesseraError(f"gemm of {a.dtype.name}: bf16, f16, f32 or "
                               f"fp8")
        dev = a.device.index
        kind = "tf32" if allow_tf32 else a.dtype.name
        kern = (K.gemm_bt.with_schedule(_grouped_schedule(schedule or base))
                if schedule or base else _gemm_kernel("gemm_bt", kind, dev))
        kern[lambda T: (_gemm_grid(T, m, n, dev),)](
            a, b, c, float(scale), tf32=bool(allow_tf32))
        return c
    if scale != 1.0:
        raise TesseraError("scale applies to the transposed form "
                           "(transposed_b=True)")
    if a.dtype.name not in _GEMM_SPACE:
        raise TesseraError(f"gemm of {a.dtype.name}: bf16, f16, f32 or fp8")
    dev = a.device.index
    kern = (K.gemm.with_schedule(_grouped_schedule(schedule)) if schedule
            else _gemm_kernel("gemm", a.dtype.name, dev))
    kern[lambda T: (_gemm_grid(T, m, n, dev),)](a, b, c)
    return c


# The general batched kernel (one program per output tile and batch, any
# M, N, K), autotuned per shape: bf16/f16 on the tensor cores (tiles and
# stages; narrow tiles for batches of small matrices), f32 on FMAs.
_BATCHED_BASE = {"f32": Schedule(block=(64, 64), k=16, warps=4, stages=2),
                 "16": Schedule(block=(128, 128), k=64, warps=8, stages=3)}
_BATCHED_SPACE = {
    "f32": ((("BM", 64), ("BN", 64), ("warps", 4)),
            (("BM", 32), ("BN", 64), ("warps", 4)),
            (("BM", 128), ("BN", 64), ("warps", 8))),
    "16": ((("BM", 128), ("BN", 128), ("warps", 8), ("stages", 3)),
           (("BM", 128), ("BN", 128), ("warps", 8), ("stages", 4)),
           (("BM", 64), ("BN", 128), ("warps", 4), ("stages", 4)),
           (("BM", 64), ("BN", 64), ("warps", 4), ("stages", 4)))}


def _batched_gemm(schedule, a, b, out, transposed_b):
    """gemm of a batch (see gemm). When each batch's M is a multiple of
    the row tiles (and K of the K tiles, unless b is transposed), the
    output's [Z * M, N] view is one GEMM (gemm_batched: persistent, with
    the producer warpgroup and staged stores on Hopper); otherwise one
    program per output tile and batch (batched_matmul)."""
    if b.ndim == 2:  # shared b: one GEMM of a's [Z * M, K] view
        z, m, k = a.shape
        n = b.shape[0] if transposed_b else b.shape[1]
        c = _out(out, (z, m, n), a.dtype, a.device.index)
        _gemm._run(schedule, a.reshape(z * m, k), b,
                   out=c.reshape(z * m, n), transposed_b=transposed_b)
        return c
    z = b.shape[0]
    m, k = a.shape[-2:]
    n, kb = (b.shape[1], b.shape[2]) if transposed_b else (b.shape[2],
                                                           b.shape[1])
    if (a.ndim == 3 and a.shape[0] != z) or kb != k or b.dtype != a.dtype:
        raise TesseraError(
            f"batched gemm of {a.dtype.name}{list(a.shape)} and "
            f"{b.dtype.name}{list(b.shape)}"
            f"{' (b transposed)' if transposed_b else ''}: expected "
            f"[Z, M, K] (or [M, K]) and "
            f"[Z, {'N, K' if transposed_b else 'K, N'}] of one dtype")
    dtype, dev = a.dtype.name, a.device.index
    c = _out(out, (z, m, n), a.dtype, dev)
    a_shared = a.ndim == 2
    tile_m, tile_k = (schedule.m, schedule.k) if schedule else (128, 64)
    if m % tile_m == 0 and (transposed_b or k % tile_k == 0):
        kern = (K.gemm_batched.with_schedule(_grouped_schedule(schedule))
                if schedule else _gemm_kernel("gemm_batched", dtype, dev))
        kern[lambda T: (_gemm_grid(T, z * m, n, dev),)](
            a.reshape(m if a_shared else z * m, k),
            b.reshape(z * n, k) if transposed_b else b.reshape(z * k, n),
            c.reshape(z * m, n), m, b_transposed=transposed_b,
            a_shared=a_shared)
        return c
    wide = "f32" if dtype == "f32" else "16"
    kern = (K.batched_matmul.with_schedule(schedule) if schedule else
            _tuned("batched_matmul", _BATCHED_BASE[wide],
                   _BATCHED_SPACE[wide], listed=True))
    kern[lambda T: (cdiv(m, T.m), cdiv(n, T.n), z)](
        a.reshape(1, m, k) if a_shared else a, b, c,
        b_transposed=transposed_b, a_shared=a_shared)
    return c


def _gemm_grid(s, m, n, device):
    """Programs of a GEMM launch: one per output tile, or, with the
    schedule parameter persistent=True (the default on Hopper, where a
    producer warpgroup copies the operands), at most one per SM, each
    looping over tiles so the copies of its next tile overlap the end of
    the current one; persistent=N caps the programs at N. With clusters
    (T.cluster > 1) the tiles are cluster tiles of T.cluster programs and
    the count is a multiple of T.cluster."""
    c = s.cluster
    tiles = cdiv(cdiv(m, s.m), c) * cdiv(n, s.n)
    persistent = s.params.get("persistent", _chip(device) == "sm_90a")
    if isinstance(persistent, bool) or not isinstance(persistent, int):
        from .._kernel import _compile_only
        # (Compiling only: the programs' count does not change the code.)
        if not persistent or _compile_only.chip:
            return tiles * c
        persistent = _multiprocessors(device)
    if persistent < 1:
        raise TesseraError(f"gemm: persistent is a bool or a program count "
                           f">= 1, got {persistent}")
    return max(1, min(tiles, persistent // c)) * c


gemm = _gemm
