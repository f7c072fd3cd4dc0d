"""The row-wise stdlib ops: softmax, layer and RMS normalization with their
backward passes, cross-entropy, the fused Adam update and rotary
embeddings."""

from __future__ import annotations

import functools
import math

from .. import cuda as _cuda
from .._errors import TesseraError
from .._kernel import Schedule, cdiv
from . import _kernels as K
from ._common import (StdlibOp, _float, _kernel_for, _multiprocessors, _op,
                      _out, _pow2, _row_schedule, _rows, _rows_space, _tensor)


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
