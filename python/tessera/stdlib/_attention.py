"""The stdlib flash attention (FlashAttention-2), forward and backward,
with the Hopper kernels (warp specialization, ping-pong) where they run."""

from __future__ import annotations

import functools
import math

from .. import cuda as _cuda
from .._errors import TesseraError
from .._kernel import Schedule, cdiv
from . import _kernels as K
from ._common import _chip, _kernel_for, _op, _out, _tensor


@_op
def _flash_attention_2(schedule, q, k, v, *, causal=False, scale=None,
                       out=None):
    """Attention forward (FlashAttention-2): returns ``(o, lse)``.

    ``flash_attention_2(q, k, v, *, causal=False, scale=None, out=None)``:
    ``q``, ``k``, ``v`` are bf16 or f16 device tensors of one shape
    ``[B, H, S, D]`` (or ``[BH, S, D]``), head dim ``D`` 64 or 128, at most
    65535 batch x heads. ``o = softmax(scale * q @ k^T) @ v`` has ``q``'s shape
    and dtype (written into ``out`` if given); ``scale`` defaults to
    ``1 / sqrt(D)``; with ``causal=True`` query ``i`` sees keys ``0 .. i``.
    ``lse`` is f32 ``[B, H, S]``, each query's log-sum-exp of its scaled
    scores, which ``flash_attention_2_backward`` takes. Other shapes raise
    ``TesseraError``.

    >>> from tessera.stdlib import flash_attention_2
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_80"):  # compiles the launch; no GPU needed
    ...     q = ts.cuda.empty((1, 2, 64, 64), ts.bf16)
    ...     o, lse = flash_attention_2(q, q, q, causal=True)
    >>> o, lse
    (DeviceTensor(bf16[1, 2, 64, 64] on cuda:0),
     DeviceTensor(f32[1, 2, 64] on cuda:0))
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     zeros = ts.to_device(np.zeros((1, 2, 64, 64)), dtype=ts.bf16)
    ...     ones = ts.to_device(np.ones((1, 2, 64, 64)), dtype=ts.bf16)
    ...     o, lse = flash_attention_2(zeros, zeros, ones)
    ...     # o all 1 (equal scores average the values),
    ...     # lse all log(64) = 4.1589
    """
    q, k, v = (_tensor(t, n) for t, n in ((q, "q"), (k, "k"), (v, "v")))
    if q.shape != k.shape or q.shape != v.shape or q.ndim not in (3, 4):
        raise TesseraError(f"flash_attention_2 takes q, k, v of one shape "
                           f"[B, H, S, D]; got {list(q.shape)}, "
                           f"{list(k.shape)}, {list(v.shape)}")
    d, seq = q.shape[-1], q.shape[-2]
    bh = math.prod(q.shape[:-2])
    if d not in (64, 128):
        raise TesseraError(f"flash_attention_2: head dim 64 or 128, got {d}")
    if bh > 65535:
        raise TesseraError(f"flash_attention_2: at most 65535 batch x heads "
                           f"(one grid row each), got {bh}")
    kern = _attention_fwd_kernel(schedule, d, bool(causal),
                                 _chip(q.device.index) == "sm_90a")
    dev = q.device.index
    o = _out(out, q.shape, q.dtype, dev)
    lse = _cuda.empty(q.shape[:-1], "f32", device=f"cuda:{dev}")
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    kern[lambda T: (cdiv(seq, T.m), bh)](
        q.reshape(bh, seq, d), k.reshape(bh, seq, d), v.reshape(bh, seq, d),
        o.reshape(bh, seq, d), lse.reshape(bh, seq), scale,
        causal=bool(causal))
    return o, lse


flash_attention_2 = _flash_attention_2


def _attention_schedule(schedule, d, hopper, m_before_hopper):
    """The caller's schedule (given head dim d), or the base of the
    autotuned one: 64 x 64 blocks of 4 warps on Hopper; before it,
    mma.sync with narrower key blocks."""
    s = schedule or (Schedule(block=(64, 64), warps=4, stages=2, d=d)
                     if hopper
                     else Schedule(block=(m_before_hopper,
                                          32 if d == 64 else 16),
                                   warps=4, stages=2, d=d))
    if "d" not in s.params:
        return s.with_params(d=d)
    if s.params["d"] != d:
        raise TesseraError(f"flash attention: the schedule's head dim d = "
                           f"{s.params['d']} differs from the tensors' "
                           f"head dim {d}")
    return s


@functools.lru_cache(maxsize=256)
def _attention_fwd_kernel(schedule, d, causal, hopper):
    # Hopper: both products on wgmma; query and key blocks, warps, stages
    # and ping-pong of the two warpgroups of 8 warps tuned per shape
    # (causal: 128 queries a program, so that key blocks of 64 or 128
    # divide them); before it, mma.sync with narrower key blocks.
    s = _attention_schedule(schedule, d, hopper, 64)
    if causal and s.m % s.n:
        raise TesseraError(f"causal flash_attention_2 needs block m a "
                           f"multiple of block n; got {s.block}")
    if schedule is None and hopper:
        return _kernel_for("flash_attention_fwd", None, s,
                           BM=[128] if causal else [64, 128], BN=[64, 128],
                           warps=[4, 8], stages=[2, 3],
                           pingpong=[False, True])
    return K.flash_attention_fwd.with_schedule(s)


@_op
def _flash_attention_2_backward(schedule, do, q, k, v, o, lse, *,
                                causal=False, scale=None):
    """The gradients of ``flash_attention_2``: returns ``(dq, dk, dv)``.

    ``flash_attention_2_backward(do, q, k, v, o, lse, *, causal=False,
    scale=None)``: ``do`` (the gradient of ``o``), ``q``, ``k``, ``v`` and
    ``o`` have one shape ``[B, H, S, D]`` (or ``[BH, S, D]``), ``lse`` is the
    f32 ``[B, H, S]`` the forward returned, and ``causal`` and ``scale`` are
    the forward's. The gradients have ``q``'s shape and dtype. Deterministic:
    one kernel gives dK and dV per key block over the query blocks that see it,
    another dQ per query block; no atomics.

    >>> from tessera.stdlib import flash_attention_2_backward
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_80"):  # compiles the launch; no GPU needed
    ...     x = ts.cuda.empty((1, 2, 64, 64), ts.bf16)
    ...     lse = ts.cuda.empty((1, 2, 64), ts.f32)
    ...     dq, dk, dv = flash_attention_2_backward(x, x, x, x, x, lse)
    >>> dq.shape, dk.shape, dv.dtype
    ((1, 2, 64, 64), (1, 2, 64, 64), ts.bf16)
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     from tessera.stdlib import flash_attention_2
    ...     zeros = ts.to_device(np.zeros((1, 2, 64, 64)), dtype=ts.bf16)
    ...     ones = ts.to_device(np.ones((1, 2, 64, 64)), dtype=ts.bf16)
    ...     o, lse = flash_attention_2(zeros, zeros, ones)
    ...     dq, dk, dv = flash_attention_2_backward(ones, zeros, zeros, ones,
    ...                                             o, lse)
    ...     # dq and dk all 0, dv all 1
    """
    do, q, k, v, o, lse = (_tensor(t, n) for t, n in (
        (do, "do"), (q, "q"), (k, "k"), (v, "v"), (o, "o"), (lse, "lse")))
    if not (q.shape == k.shape == v.shape == o.shape == do.shape) or \
            q.ndim not in (3, 4) or lse.shape != q.shape[:-1]:
        raise TesseraError(f"flash_attention_2_backward takes do, q, k, v, o "
                           f"of one shape [B, H, S, D] and lse [B, H, S]; got "
                           f"{[list(t.shape) for t in (do, q, k, v, o, lse)]}")
    d, seq = q.shape[-1], q.shape[-2]
    bh = math.prod(q.shape[:-2])
    if d not in (64, 128):
        raise TesseraError(f"flash_attention_2_backward: head dim 64 or 128, "
                           f"got {d}")
    if bh > 65535:
        raise TesseraError(f"flash_attention_2_backward: at most 65535 batch "
                           f"x heads, got {bh}")
    dkdv, dqk = _attention_bwd_kernels(
        schedule, d, bool(causal), _chip(q.device.index) == "sm_90a")
    dev = q.device.index
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    rows = (bh, seq, d)
    q3, k3, v3, o3, do3 = (t.reshape(*rows) for t in (q, k, v, o, do))
    delta = _cuda.empty((bh, seq), "f32", device=f"cuda:{dev}")
    dq, dk, dv = (_cuda.empty(q.shape, q.dtype, device=f"cuda:{dev}")
                  for _ in range(3))
    lse3 = lse.reshape(bh, seq)
    # The dQ kernel writes delta = rowsum(dO * O), which dK/dV reads.
    dqk[lambda T: (cdiv(seq, T.m), bh)](
        q3, k3, v3, o3, do3, lse3, delta, dq.reshape(*rows), scale,
        causal=bool(causal))
    dkdv[lambda T: (cdiv(seq, T.n), bh)](
        q3, k3, v3, do3, lse3, delta, dk.reshape(*rows), dv.reshape(*rows),
        scale, causal=bool(causal))
    return dq, dk, dv


flash_attention_2_backward = _flash_attention_2_backward


@functools.lru_cache(maxsize=256)
def _attention_bwd_kernels(schedule, d, causal, hopper):
    """(dK/dV, dQ) kernels of the backward."""
    s = _attention_schedule(schedule, d, hopper, 32)
    if causal and (s.m % s.n and s.n % s.m):
        raise TesseraError(f"causal flash_attention_2_backward needs block "
                           f"sizes that divide each other; got {s.block}")
    # On Hopper each kernel tunes its blocks, stages and producer
    # registers per shape (dQ also its ping-pong). dK/dV with 64 queries x
    # 128 keys and two warpgroups: each warpgroup owns 64 keys, so P^T and
    # dS^T go through shared memory within a warpgroup (no barrier across
    # them), and its two 64 x 128 accumulators need the registers a
    # 24-register producer leaves (240 a consumer thread). dQ with 128
    # keys a block: 64 x 128 scores a warpgroup beside its 64 x 128
    # accumulator, with a 40-register producer (232).
    if hopper and schedule is None:
        dkdv = dict(BM=[64, 128], BN=[64, 128], warps=[8], stages=[2, 3],
                    producer_registers=[24, 96])
        dq = dict(BM=[64, 128], BN=[64, 128], warps=[8], stages=[2],
                  pingpong=[False, True], producer_registers=[40, 96])
        return (_kernel_for("flash_attention_bwd_dkdv", None, s, **dkdv),
                _kernel_for("flash_attention_bwd_dq", None, s, **dq))
    return (K.flash_attention_bwd_dkdv.with_schedule(s),
            K.flash_attention_bwd_dq.with_schedule(s))
