"""Tessera's standard library of GPU kernels, written in the tile DSL
(``tessera.stdlib._kernels``)::

    from tessera.stdlib import (gemm, flash_attention_2, efficient_layernorm,
                                rmsnorm, stable_softmax, cross_entropy,
                                fused_adam, rotary_embedding)

    o, lse = flash_attention_2(q, k, v, causal=True)
    my_attention = flash_attention_2.with_schedule(
        ts.Schedule(block=(128, 64), warps=8, stages=2))

Arguments are device tensors (``ts.device("cuda")``) or CUDA tensors of
other frameworks (PyTorch, through DLPack); results are new device tensors
(``torch.from_dlpack`` views them) unless ``out=`` names where to write.
Each op picks its schedule from the shapes; ``with_schedule`` overrides it
(and a bad schedule fails to compile with the compiler's message).

The ops run on a CUDA device. Without one, ``tessera._kernel.compile_only``
runs everything an op does but the launches: it checks the arguments,
compiles the kernels into the kernel cache and returns results without
memory (the examples below do this).
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np

from .. import cuda as _cuda
from .._dtypes import as_dtype
from .._errors import TesseraError
from .._kernel import Schedule, cdiv
from . import _kernels as K

__all__ = ["StdlibOp", "cross_entropy", "cross_entropy_backward",
           "efficient_layernorm", "flash_attention_2",
           "flash_attention_2_backward", "fused_adam", "gemm",
           "layernorm", "layernorm_backward", "rmsnorm", "rmsnorm_backward",
           "rotary_embedding", "stable_softmax"]


class StdlibOp:
    """An op of the standard library, which runs its kernels on the GPU.

    ``op(*args)`` runs it with a schedule chosen for the shapes (autotuned on
    the first call of each shape, for most ops); ``op.with_schedule(s)`` is the
    op with the fixed schedule ``s``.

    Arguments are device tensors (``ts.to_device``, ``ts.cuda.empty``) or CUDA
    tensors of other frameworks (through DLPack); results are new device
    tensors unless ``out=`` names where to write. Under
    ``tessera._kernel.compile_only`` an op checks its arguments and compiles
    its kernels without a GPU, on tensors without memory, and returns results
    of the right shapes and dtypes (without memory either).

    >>> from tessera.stdlib import gemm
    >>> from tessera._kernel import compile_only
    >>> gemm
    <tessera.stdlib.gemm>
    >>> s = ts.Schedule(block=(64, 64), k=32, warps=4, stages=2)
    >>> small = gemm.with_schedule(s)
    >>> with compile_only("sm_90a"):  # compiles the launch; no GPU needed
    ...     a = ts.cuda.empty((64, 32), ts.bf16)
    ...     c = small(a, ts.cuda.empty((32, 64), ts.bf16))
    >>> c
    DeviceTensor(bf16[64, 64] on cuda:0)
    """

    def __init__(self, name, run, doc, schedule=None):
        self.__name__ = name
        self.__doc__ = doc
        self._run = run
        self._schedule = schedule

    def __call__(self, *args, **kwargs):
        return self._run(self._schedule, *args, **kwargs)

    def with_schedule(self, schedule: Schedule) -> "StdlibOp":
        """The op with a fixed schedule instead of the one it would choose.

        ``schedule`` is a ``ts.Schedule``; the op then does not autotune. A
        schedule that does not suit the op's kernel fails when the kernel is
        compiled, with the compiler's message; anything but a ``Schedule``
        raises ``TypeError``.

        >>> from tessera.stdlib import stable_softmax
        >>> fixed = stable_softmax.with_schedule(ts.Schedule(block=(4, 256)))
        >>> fixed
        <tessera.stdlib.stable_softmax>
        >>> stable_softmax.with_schedule((4, 256))
        Traceback (most recent call last):
            ...
        TypeError: with_schedule takes a ts.Schedule, got (4, 256)
        """
        if not isinstance(schedule, Schedule):
            raise TypeError(f"with_schedule takes a ts.Schedule, got "
                            f"{schedule!r}")
        return StdlibOp(self.__name__, self._run, self.__doc__, schedule)

    def __repr__(self):
        return f"<tessera.stdlib.{self.__name__}>"


def _op(fn):
    return StdlibOp(fn.__name__.lstrip("_"), fn, fn.__doc__)


def _tensor(x, what):
    if isinstance(x, _cuda.DeviceTensor):
        return x
    if isinstance(x, np.ndarray):
        raise TesseraError(f"{what} is a NumPy array; stdlib ops take device "
                           f"tensors (ts.to_device)")
    if hasattr(x, "__dlpack__"):
        return _cuda.from_dlpack(x)
    raise TesseraError(f"{what} must be a device tensor, got "
                       f"{type(x).__name__}")


def _out(out, shape, dtype, device, what="out"):
    if out is None:
        return _cuda.empty(shape, dtype, device=f"cuda:{device}")
    out = _tensor(out, what)
    if tuple(out.shape) != tuple(shape) or out.dtype != as_dtype(dtype):
        raise TesseraError(f"{what} must be {as_dtype(dtype).name}"
                           f"{list(shape)}, got {out.dtype.name}"
                           f"{list(out.shape)}")
    return out


def _pow2(n):
    return 1 << max(0, (int(n) - 1).bit_length())


def _rows(x, what):
    """A [rows, n] view of a tensor's last dim (rank >= 1)."""
    if x.ndim < 1:
        raise TesseraError(f"{what} needs at least one dim")
    n = x.shape[-1]
    if x.ndim == 2:
        return x, n
    return x.reshape(math.prod(x.shape[:-1]), n), n


@functools.lru_cache(maxsize=None)
def _row_schedule(n, elems=4096, longest=8192):
    """Rows of n elements: whole rows per program when they fit."""
    bn = _pow2(n)
    if bn <= longest:
        m = max(1, min(16, elems // bn))
        return Schedule(block=(m, bn), warps=8 if m * bn >= elems else 4), True
    return Schedule(block=(1, 2048), warps=8), False


_AUTOTUNE_CACHE = os.environ.get("TESSERA_AUTOTUNE_CACHE")


@functools.lru_cache(maxsize=None)
def _tuned(name, base, space, listed=False):
    """Kernel `name` from `base`, autotuned over `space`: the items of a
    dict of lists, or with `listed` a tuple of configurations (each as
    items)."""
    from .._kernel import kernel
    space = [dict(c) for c in space] if listed else dict(space)
    return kernel.autotune(space=space, budget_ms=100,
                           cache=_AUTOTUNE_CACHE)(
                               getattr(K, name).with_schedule(base))


def _kernel_for(name, schedule, base, **space):
    """Kernel `name` with the caller's schedule, or `base` autotuned over
    `space` (on the first call of each shape; choices are kept in memory
    and, with $TESSERA_AUTOTUNE_CACHE, in that file)."""
    if schedule is not None:
        return getattr(K, name).with_schedule(schedule)
    return _tuned(name, base, tuple((k, tuple(v)) for k, v in
                                    sorted(space.items())))


def _rows_space(base, elems=8192):
    """Rows per program and warps to try for whole-row kernels."""
    m, bn = base.m, base.n
    return dict(BM=[r for r in (m, 2 * m) if r * bn <= max(elems, m * bn)],
                warps=[4, 8, 16])


def _chip(device):
    """The architecture kernels are compiled for (the compile_only target,
    else the device's)."""
    from .._kernel import _chip_of, _compile_only
    return _compile_only.chip or _chip_of(device)


@functools.lru_cache(maxsize=None)
def _multiprocessors(device):
    from .. import _cuda
    return int(_cuda.device_info(device)["multiprocessors"])


def _float(x, what):
    if not x.dtype.is_float:
        raise TesseraError(f"{what} must be a float tensor, got "
                           f"{x.dtype.name}")


# --------------------------------------------------------------------------

@_op
def _stable_softmax(schedule, x, *, out=None):
    """Softmax over the last dim (in f32, the row maximum subtracted).

    ``stable_softmax(x, *, out=None)``: ``x`` is a float device tensor of any
    rank (rows of any length; rows longer than 8192 elements take two passes).
    The result has ``x``'s shape and dtype; ``out``, if given, must match them
    and receives it. A tensor that is not float, or a NumPy array, raises
    ``TesseraError``. It runs on a CUDA device; under ``compile_only`` it
    compiles what it would run.

    >>> from tessera.stdlib import stable_softmax
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):  # compiles the launch; no GPU needed
    ...     y = stable_softmax(ts.cuda.empty((2, 2), ts.f32))
    >>> y
    DeviceTensor(f32[2, 2] on cuda:0)
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     x = np.array([[0.0, np.log(3.0)], [1.0, 1.0]], np.float32)
    ...     p = stable_softmax(ts.to_device(x)).numpy()
    ...     # p [[0.25, 0.75], [0.5, 0.5]]
    """
    x = _tensor(x, "x")
    _float(x, "x")
    x2, n = _rows(x, "x")
    y = _out(out, x.shape, x.dtype, x.device.index)
    y2 = y.reshape(x2.shape)
    base, whole = _row_schedule(n)
    rows = x2.shape[0]
    if schedule is not None:
        whole = schedule.n >= n
    if whole:
        kern = _kernel_for("softmax_rows", schedule, base, **_rows_space(base))
    else:
        kern = _kernel_for("softmax_rows_long", schedule, base,
                           warps=[4, 8, 16])
    kern[lambda T: (cdiv(rows, T.m),)](x2, y2)
    return y


stable_softmax = _stable_softmax


@_op
def _layernorm(schedule, x, weight, bias, eps=1e-5, *, out=None):
    """LayerNorm over the last dim: returns ``(y, mean, rstd)``.

    ``layernorm(x, weight, bias, eps=1e-5, *, out=None)`` (and
    ``efficient_layernorm``, the same op): ``x`` is a float device tensor
    ``[..., n]`` with rows of up to 16384 elements, ``weight`` and ``bias`` are
    ``[n]``. ``y = (x - mean) * rstd * weight + bias`` has ``x``'s shape and
    dtype (written into ``out`` if given); ``mean`` and
    ``rstd = 1 / sqrt(var + eps)`` are f32 ``[rows]`` (``rows`` the product of
    ``x``'s leading dims), the statistics ``layernorm_backward`` takes.
    Statistics are computed in f32. Shapes that do not match raise
    ``TesseraError``.

    >>> from tessera.stdlib import layernorm
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):  # compiles the launch; no GPU needed
    ...     y, mean, rstd = layernorm(ts.cuda.empty((1, 4), ts.f32),
    ...                               ts.cuda.empty((4,), ts.f32),
    ...                               ts.cuda.empty((4,), ts.f32))
    >>> y, mean, rstd
    (DeviceTensor(f32[1, 4] on cuda:0), DeviceTensor(f32[1] on cuda:0),
     DeviceTensor(f32[1] on cuda:0))
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     x = ts.to_device(np.array([[1.0, 2.0, 3.0, 4.0]], np.float32))
    ...     w = ts.to_device(np.ones(4, np.float32))
    ...     b = ts.to_device(np.zeros(4, np.float32))
    ...     y, mean, rstd = layernorm(x, w, b)
    ...     # y [[-1.3416, -0.4472, 0.4472, 1.3416]], mean [2.5], rstd [0.8944]
    """
    x, w, b = (_tensor(t, n) for t, n in ((x, "x"), (weight, "weight"),
                                          (bias, "bias")))
    _float(x, "x")
    x2, n = _rows(x, "x")
    for t, name in ((w, "weight"), (b, "bias")):
        if tuple(t.shape) != (n,):
            raise TesseraError(f"{name} must have shape [{n}], got "
                               f"{list(t.shape)}")
    base = _norm_schedule(n, "layernorm", x.dtype.name)
    rows = x2.shape[0]
    dev = x.device.index
    y = _out(out, x.shape, x.dtype, dev)
    mean = _cuda.empty((x2.shape[0],), "f32", device=f"cuda:{dev}")
    rstd = _cuda.empty((x2.shape[0],), "f32", device=f"cuda:{dev}")
    # Six programs an SM (a multiple of the two or three that fit on one
    # at once, so that no partial wave trails), each over every P-th block
    # of rows. Measured on an H200 (rows of 4096 bf16): 8 warps a row at
    # three programs an SM (80 registers a thread) 0.89 of the copy, at
    # two 0.80; 16 warps 0.81.
    space = _rows_space(base)
    from .._kernel import _compile_only
    programs = 6 * (132 if _compile_only.chip else _multiprocessors(dev))
    _kernel_for("layernorm_fwd", schedule, base, BM=space["BM"],
                warps=[8, 16], stages=[2], programs_per_sm=[2, 3])[
        lambda T: (max(1, min(programs, cdiv(rows, T.m))),)](
            x2, w, b, y.reshape(x2.shape), mean, rstd, float(eps))
    return y, mean, rstd


layernorm = _layernorm
efficient_layernorm = StdlibOp("efficient_layernorm", _layernorm._run,
                               _layernorm.__doc__)


@functools.lru_cache(maxsize=None)
def _norm_schedule(n, what, dtype, longest=16384):
    """Whole rows per program; 16-byte accesses of 16-bit rows spread over
    more threads (measured: bf16 rows of 4096 run 20% faster on 16 warps
    than on 8, f32 rows best on 4-8)."""
    bn = _pow2(n)
    if bn > longest:
        raise TesseraError(f"{what}: rows of up to {longest} elements (one "
                           f"row per program in registers); got {n}")
    m = max(1, min(16, 4096 // bn))
    if m * bn < 4096:
        warps = 4
    else:
        warps = 16 if dtype in ("bf16", "f16") else 8
    return Schedule(block=(m, bn), warps=warps)


def _split_rows(rows, m, programs=264):
    """(programs, rows per program) for kernels that loop over rows: about
    two programs per SM, each a multiple of m rows (one empty program for
    no rows: it writes zero partial sums)."""
    if rows == 0:
        return 1, m
    per = cdiv(cdiv(rows, min(programs, cdiv(rows, m))), m) * m
    return cdiv(rows, per), per


def _backward_programs(rows, m):
    """Programs of the norm backward passes: 528 (four an SM of a 132-SM
    card, a whole number of waves at one or two an SM), fewer for fewer
    row blocks. Fixed, not the card's count: each program's partial sums
    (its rows p, p + P...) and their order are then the same on every
    card."""
    return max(1, min(528, cdiv(rows, m)))


def _column_sum(part, n, dtype, dev):
    """The sum of the rows of part [P, n], in row order. Blocks of 32
    columns (128 bytes of a row): enough programs to keep the card busy
    for rows of a few thousand."""
    out = _cuda.empty((n,), dtype, device=f"cuda:{dev}")
    s = Schedule(block=(64, 32), warps=4)
    K.column_sums.with_schedule(s)[(cdiv(n, s.n),)](part, out)
    return out


@_op
def _layernorm_backward(schedule, dy, x, weight, mean, rstd):
    """The gradients of ``layernorm``: returns ``(dx, dweight, dbias)``.

    ``layernorm_backward(dy, x, weight, mean, rstd)``: ``dy`` and ``x`` are
    ``[..., n]`` of one float dtype, ``weight`` ``[n]``, ``mean`` and ``rstd``
    the f32 statistics ``layernorm`` returned. ``dx`` has ``x``'s shape and
    dtype; ``dweight`` and ``dbias`` are ``[n]`` of ``weight``'s dtype, summed
    over the rows in a fixed order (the same bits at every run).

    >>> from tessera.stdlib import layernorm_backward
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):  # compiles the launch; no GPU needed
    ...     e = ts.cuda.empty
    ...     x, w, stat = e((1, 4), ts.f32), e((4,), ts.f32), e((1,), ts.f32)
    ...     dx, dw, db = layernorm_backward(x, x, w, stat, stat)
    >>> dx, dw, db
    (DeviceTensor(f32[1, 4] on cuda:0), DeviceTensor(f32[4] on cuda:0),
     DeviceTensor(f32[4] on cuda:0))
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     from tessera.stdlib import layernorm
    ...     x = ts.to_device(np.array([[1.0, 2.0, 3.0, 4.0]], np.float32))
    ...     w = ts.to_device(np.ones(4, np.float32))
    ...     b = ts.to_device(np.zeros(4, np.float32))
    ...     y, mean, rstd = layernorm(x, w, b)
    ...     dy = ts.to_device(np.ones((1, 4), np.float32))
    ...     dx, dw, db = layernorm_backward(dy, x, w, mean, rstd)
    ...     # dx [[0, 0, 0, 0]], db [1, 1, 1, 1],
    ...     # dw [-1.3416, -0.4472, 0.4472, 1.3416]
    """
    dy, x, w, mean, rstd = (_tensor(t, n) for t, n in (
        (dy, "dy"), (x, "x"), (weight, "weight"), (mean, "mean"),
        (rstd, "rstd")))
    x2, n = _rows(x, "x")
    s = schedule or _norm_schedule(n, "layernorm_backward", x.dtype.name)
    dev = x.device.index
    programs = _backward_programs(x2.shape[0], s.m)
    dx = _cuda.empty(x.shape, x.dtype, device=f"cuda:{dev}")
    dwp = _cuda.empty((programs, n), "f32", device=f"cuda:{dev}")
    dbp = _cuda.empty((programs, n), "f32", device=f"cuda:{dev}")
    _kernel_for("layernorm_bwd", schedule, s, warps=[8, 16],
                programs_per_sm=[1, 2])[(programs,)](
        dy.reshape(x2.shape), x2, w, mean, rstd, dx.reshape(x2.shape), dwp,
        dbp)
    return (dx, _column_sum(dwp, n, w.dtype, dev),
            _column_sum(dbp, n, w.dtype, dev))


layernorm_backward = _layernorm_backward


@_op
def _rmsnorm(schedule, x, weight, eps=1e-6, *, out=None):
    """RMSNorm over the last dim: returns ``(y, rstd)``.

    ``rmsnorm(x, weight, eps=1e-6, *, out=None)``: ``x`` is a float device
    tensor ``[..., n]`` with rows of up to 16384 elements, ``weight`` is
    ``[n]``. ``y = x * rstd * weight`` has ``x``'s shape and dtype (written
    into ``out`` if given), with ``rstd = 1 / sqrt(mean(x ** 2) + eps)``
    computed in f32, an f32 ``[rows]`` tensor for ``rmsnorm_backward``. A
    ``weight`` of another shape raises ``TesseraError``.

    >>> from tessera.stdlib import rmsnorm
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):  # compiles the launch; no GPU needed
    ...     y, rstd = rmsnorm(ts.cuda.empty((1, 4), ts.f32),
    ...                       ts.cuda.empty((4,), ts.f32))
    >>> y, rstd
    (DeviceTensor(f32[1, 4] on cuda:0), DeviceTensor(f32[1] on cuda:0))
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     x = ts.to_device(np.full((1, 4), 2.0, np.float32))
    ...     y, rstd = rmsnorm(x, ts.to_device(np.ones(4, np.float32)))
    ...     # y [[1, 1, 1, 1]], rstd [0.5] (to about 1e-7)
    """
    x, w = _tensor(x, "x"), _tensor(weight, "weight")
    _float(x, "x")
    x2, n = _rows(x, "x")
    if tuple(w.shape) != (n,):
        raise TesseraError(f"weight must have shape [{n}], got "
                           f"{list(w.shape)}")
    base = _norm_schedule(n, "rmsnorm", x.dtype.name)
    rows = x2.shape[0]
    dev = x.device.index
    y = _out(out, x.shape, x.dtype, dev)
    rstd = _cuda.empty((x2.shape[0],), "f32", device=f"cuda:{dev}")
    _kernel_for("rmsnorm_fwd", schedule, base, **_rows_space(base))[
        lambda T: (cdiv(rows, T.m),)](x2, w, y.reshape(x2.shape), rstd,
                                      float(eps))
    return y, rstd


rmsnorm = _rmsnorm


@_op
def _rmsnorm_backward(schedule, dy, x, weight, rstd):
    """The gradients of ``rmsnorm``: returns ``(dx, dweight)``.

    ``rmsnorm_backward(dy, x, weight, rstd)``: ``dy`` and ``x`` are
    ``[..., n]`` of one float dtype, ``weight`` ``[n]``, ``rstd`` the f32
    statistic ``rmsnorm`` returned. ``dx`` has ``x``'s shape and dtype;
    ``dweight`` is ``[n]`` of ``weight``'s dtype, summed over the rows in a
    fixed order.

    >>> from tessera.stdlib import rmsnorm_backward
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):  # compiles the launch; no GPU needed
    ...     e = ts.cuda.empty
    ...     dx, dw = rmsnorm_backward(e((1, 4), ts.f32), e((1, 4), ts.f32),
    ...                               e((4,), ts.f32), e((1,), ts.f32))
    >>> dx, dw
    (DeviceTensor(f32[1, 4] on cuda:0), DeviceTensor(f32[4] on cuda:0))
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     from tessera.stdlib import rmsnorm
    ...     x = ts.to_device(np.full((1, 4), 2.0, np.float32))
    ...     w = ts.to_device(np.ones(4, np.float32))
    ...     y, rstd = rmsnorm(x, w)
    ...     dy = ts.to_device(np.ones((1, 4), np.float32))
    ...     dx, dw = rmsnorm_backward(dy, x, w, rstd)
    ...     # dx [[0, 0, 0, 0]], dw [1, 1, 1, 1]
    """
    dy, x, w, rstd = (_tensor(t, n) for t, n in (
        (dy, "dy"), (x, "x"), (weight, "weight"), (rstd, "rstd")))
    x2, n = _rows(x, "x")
    s = schedule or _norm_schedule(n, "rmsnorm_backward", x.dtype.name)
    dev = x.device.index
    programs = _backward_programs(x2.shape[0], s.m)
    dx = _cuda.empty(x.shape, x.dtype, device=f"cuda:{dev}")
    dwp = _cuda.empty((programs, n), "f32", device=f"cuda:{dev}")
    _kernel_for("rmsnorm_bwd", schedule, s, warps=[8, 16],
                programs_per_sm=[1, 2])[(programs,)](
        dy.reshape(x2.shape), x2, w, rstd, dx.reshape(x2.shape), dwp)
    return dx, _column_sum(dwp, n, w.dtype, dev)


rmsnorm_backward = _rmsnorm_backward


@_op
def _cross_entropy(schedule, logits, labels, *, ignore_index=-100):
    """The cross-entropy loss of each row: returns ``(loss, lse)``.

    ``cross_entropy(logits, labels, *, ignore_index=-100)``: ``logits`` is a
    float device tensor ``[rows, classes]``, ``labels`` i32 ``[rows]``.
    ``loss`` and ``lse`` are f32 ``[rows]``: ``lse`` is each row's log-sum-exp
    and ``loss = lse - logits[label]``, 0 where the label is ``ignore_index``
    (a label outside the row gives ``lse``). Other shapes or dtypes raise
    ``TesseraError``.

    >>> from tessera.stdlib import cross_entropy
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):  # compiles the launch; no GPU needed
    ...     loss, lse = cross_entropy(ts.cuda.empty((2, 4), ts.f32),
    ...                               ts.cuda.empty((2,), ts.i32))
    >>> loss, lse
    (DeviceTensor(f32[2] on cuda:0), DeviceTensor(f32[2] on cuda:0))
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     logits = ts.to_device(np.zeros((2, 4), np.float32))
    ...     labels = ts.to_device(np.array([1, -100], np.int32))
    ...     loss, lse = cross_entropy(logits, labels)
    ...     # loss [1.3863, 0.0] (log 4, and the ignored row)
    ...     # lse [1.3863, 1.3863]
    """
    x, y = _tensor(logits, "logits"), _tensor(labels, "labels")
    if x.ndim != 2 or y.shape != (x.shape[0],) or y.dtype.name != "i32":
        raise TesseraError(f"cross_entropy takes logits [rows, classes] and "
                           f"i32 labels [rows]; got {x.dtype.name}"
                           f"{list(x.shape)} and {y.dtype.name}"
                           f"{list(y.shape)}")
    # Column blocks of 1024: the loop keeps three f32 values per position.
    base = Schedule(block=(1, min(1024, _pow2(x.shape[1]))), warps=8,
                    stages=2)
    rows = x.shape[0]
    dev = x.device.index
    loss = _cuda.empty((rows,), "f32", device=f"cuda:{dev}")
    lse = _cuda.empty((rows,), "f32", device=f"cuda:{dev}")
    # Rows per program and warps: one row walking its columns keeps too
    # little in flight on its own.
    _kernel_for("cross_entropy_fwd", schedule, base, BM=[1, 2, 4],
                warps=[4, 8, 16])[lambda T: (cdiv(rows, T.m),)](
        x, y, loss, lse, int(ignore_index))
    return loss, lse


cross_entropy = _cross_entropy


@_op
def _cross_entropy_backward(schedule, logits, labels, lse, dloss, *,
                            ignore_index=-100):
    """The gradient of ``cross_entropy`` with respect to the logits.

    Per row ``dlogits = dloss * (softmax(logits) - onehot(label))``, 0 in rows
    whose label is ``ignore_index``.

    ``cross_entropy_backward(logits, labels, lse, dloss, *,
    ignore_index=-100)``: ``logits`` ``[rows, classes]``, ``labels`` i32
    ``[rows]``, ``lse`` the f32 ``[rows]`` that ``cross_entropy`` returned and
    ``dloss`` f32 ``[rows]``. The result has ``logits``' shape and dtype.

    >>> from tessera.stdlib import cross_entropy_backward
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):  # compiles the launch; no GPU needed
    ...     e = ts.cuda.empty
    ...     dx = cross_entropy_backward(e((1, 4), ts.f32), e((1,), ts.i32),
    ...                                 e((1,), ts.f32), e((1,), ts.f32))
    >>> dx
    DeviceTensor(f32[1, 4] on cuda:0)
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     logits = ts.to_device(np.zeros((1, 4), np.float32))
    ...     labels = ts.to_device(np.array([2], np.int32))
    ...     lse = ts.to_device(np.array([np.log(4.0)], np.float32))
    ...     dloss = ts.to_device(np.ones(1, np.float32))
    ...     dx = cross_entropy_backward(logits, labels, lse, dloss)
    ...     # dx [[0.25, 0.25, -0.75, 0.25]]
    """
    x, y, lse, g = (_tensor(t, n) for t, n in (
        (logits, "logits"), (labels, "labels"), (lse, "lse"),
        (dloss, "dloss")))
    base = Schedule(block=(1, min(4096, _pow2(x.shape[1]))), warps=8)
    rows = x.shape[0]
    dev = x.device.index
    dx = _cuda.empty(x.shape, x.dtype, device=f"cuda:{dev}")
    _kernel_for("cross_entropy_bwd", schedule, base, BM=[1, 2, 4],
                warps=[4, 8, 16])[lambda T: (cdiv(rows, T.m),)](
        x, y, lse, g, dx, int(ignore_index))
    return dx


cross_entropy_backward = _cross_entropy_backward


@_op
def _fused_adam(schedule, params, grads, exp_avg, exp_avg_sq, *, lr, step,
                beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
    """One AdamW step, in place; returns ``params``.

    ``fused_adam(params, grads, exp_avg, exp_avg_sq, *, lr, step, beta1=0.9,
    beta2=0.999, eps=1e-8, weight_decay=0.0)``: ``params`` and the moments
    ``exp_avg``, ``exp_avg_sq`` are f32 device tensors, ``grads`` f32, bf16 or
    f16, all with the same number of elements. With ``g`` the gradient:
    ``m = beta1 m + (1 - beta1) g``, ``v = beta2 v + (1 - beta2) g ** 2``, and
    ``p -= lr * (m / (1 - beta1 ** step) / (sqrt(v / (1 - beta2 ** step)) +
    eps) + weight_decay * p)``. ``step`` counts from 1 (``TesseraError``
    otherwise).

    >>> from tessera.stdlib import fused_adam
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):  # compiles the launch; no GPU needed
    ...     p = fused_adam(*(ts.cuda.empty((4,), ts.f32) for _ in range(4)),
    ...                    lr=0.1, step=1)
    >>> p
    DeviceTensor(f32[4] on cuda:0)
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     p = ts.to_device(np.ones(4, np.float32))
    ...     g = ts.to_device(np.full(4, 0.5, np.float32))
    ...     m = ts.to_device(np.zeros(4, np.float32))
    ...     v = ts.to_device(np.zeros(4, np.float32))
    ...     _ = fused_adam(p, g, m, v, lr=0.1, step=1)
    ...     # p [0.9, 0.9, 0.9, 0.9], m [0.05, ...], v [0.00025, ...]
    """
    p, g, m, v = (_tensor(t, n) for t, n in (
        (params, "params"), (grads, "grads"), (exp_avg, "exp_avg"),
        (exp_avg_sq, "exp_avg_sq")))
    if step < 1:
        raise TesseraError(f"step counts from 1, got {step}")
    n = math.prod(p.shape)
    flat = [t.reshape(n) if math.prod(t.shape) == n else None
            for t in (p, g, m, v)]
    if any(t is None for t in flat):
        raise TesseraError("params, grads and moments must have the same "
                           "number of elements")
    s = schedule or Schedule(block=(2048,), warps=8)
    K.adamw_step.with_schedule(s)[(cdiv(n, s.m),)](
        *flat, float(lr), float(beta1), float(beta2), 1.0 - beta1,
        1.0 - beta2, float(eps), float(weight_decay), 1.0 - beta1 ** step,
        1.0 - beta2 ** step)
    return p


fused_adam = _fused_adam


@_op
def _rotary_embedding(schedule, x, cos, sin, *, out=None):
    """Rotary position embedding (the rotate-half form): returns a new tensor.

    ``rotary_embedding(x, cos, sin, *, out=None)``: ``x`` is a float device
    tensor ``[B, S, H, D]`` (``D`` even), ``cos`` and ``sin`` f32
    ``[S, D / 2]``, each position's angles. With ``x1`` and ``x2`` the two
    halves of a head: ``y1 = x1 cos - x2 sin`` and ``y2 = x2 cos + x1 sin``.
    The result has ``x``'s shape and dtype (written into ``out`` if given);
    other shapes raise ``TesseraError``.

    >>> from tessera.stdlib import rotary_embedding
    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):  # compiles the launch; no GPU needed
    ...     y = rotary_embedding(ts.cuda.empty((1, 1, 1, 4), ts.f32),
    ...                          ts.cuda.empty((1, 2), ts.f32),
    ...                          ts.cuda.empty((1, 2), ts.f32))
    >>> y
    DeviceTensor(f32[1, 1, 1, 4] on cuda:0)
    >>> if ts.cuda.is_available():  # runs on a CUDA device
    ...     x = np.array([1.0, 2.0, 3.0, 4.0], np.float32).reshape(1, 1, 1, 4)
    ...     x = ts.to_device(x)
    ...     cos = ts.to_device(np.zeros((1, 2), np.float32))  # a quarter turn
    ...     sin = ts.to_device(np.ones((1, 2), np.float32))
    ...     y = rotary_embedding(x, cos, sin)  # [[[[-3, -4, 1, 2]]]]
    """
    x, c, s_ = _tensor(x, "x"), _tensor(cos, "cos"), _tensor(sin, "sin")
    if x.ndim != 4:
        raise TesseraError(f"rotary_embedding takes x [B, S, H, D], got "
                           f"{list(x.shape)}")
    b, seq, h, d = x.shape
    if d % 2 or c.shape != (seq, d // 2) or s_.shape != (seq, d // 2):
        raise TesseraError(f"cos and sin must be [{seq}, {d // 2}] (D even), "
                           f"got {list(c.shape)} and {list(s_.shape)}")
    sch = schedule or Schedule(block=(32,), warps=4)
    y = _out(out, x.shape, x.dtype, x.device.index)
    K.rotary.with_schedule(sch)[(cdiv(seq, sch.m), b)](
        x.reshape(b, seq, h * d), c, s_, y.reshape(b, seq, h * d), h,
        head_dim=d)
    return y


rotary_embedding = _rotary_embedding


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
    return s if "d" in s.params else s.with_params(d=d)


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
