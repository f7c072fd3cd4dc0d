"""The machinery every stdlib op shares: ``StdlibOp`` (an op with a
default schedule and ``with_schedule``), argument checks, and the
schedule choice and autotuning of kernels."""

from __future__ import annotations

import functools
import math
import os

import numpy as np

from .. import cuda as _cuda
from .._dtypes import as_dtype
from .._errors import TesseraError
from .._kernel import Schedule
from . import _kernels as K


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
