"""Tessera: a deep-learning programming model and compiler on MLIR.

Write a model as Python functions of arrays, then compile, differentiate
and batch them::

    import tessera as ts
    from tessera import op

    @ts.jit
    def loss(w, x: ts.Tensor["B", 784, ts.f32], y):
        return op.cross_entropy(x @ w, y)

    g = ts.grad(loss)(w, x, y)

GPU kernels are written with tiles (``@ts.kernel``, ``tessera.tile``) and
run on ``ts.device("cuda")`` tensors.

Everything here is a thin layer over the C++ API (``tessera._core``) and the
runtime (``tessera._cuda``). An installation without the compiler extension
runs precompiled kernels from the kernel cache; then only the dtypes, the
kernel DSL and the CUDA runtime are here.

>>> w = np.zeros((784, 10), np.float32)
>>> x, y = np.ones((4, 784), np.float32), np.arange(4)
>>> loss = lambda w, x, y: op.cross_entropy(x @ w, y)
>>> round(float(ts.jit(loss)(w, x, y)), 4)
2.3026
>>> ts.grad(loss)(w, x, y).shape
(784, 10)
"""

from ._errors import TesseraError
from ._dtypes import (DType, Policy, accum, as_dtype, bf16, bfloat16, bool_,
                      f8e4m3, f8e5m2, f16, f32, f64, float16, float32,
                      float64, i4, i8, i16, i32, i64, int4, int8, int16, int32,
                      int64)
from . import cuda
from . import tile
from .cuda import DeviceTensor, device, from_dlpack, synchronize, to_device
from ._gpu_program import GpuProgram
from ._kernel import KTile, cdiv, kernel, kernel_cache
from ._schedule import Schedule, ScheduleBuilder, block

__version__ = "0.1.0"

try:
    from . import _core
except ImportError as _e:  # a runtime-only installation
    _core = None
    _COMPILER_MISSING = str(_e)

if _core is not None:
    from ._compiler_api import *  # noqa: F401,F403
    from ._compiler_api import __all__ as _compiler_all
else:
    _compiler_all = []

__all__ = [
    "DType", "DeviceTensor", "GpuProgram", "KTile", "Policy", "Schedule",
    "ScheduleBuilder",
    "TesseraError", "accum", "as_dtype", "bf16", "bfloat16", "block",
    "bool_", "cdiv", "cuda",
    "device", "f16", "f32", "f64", "f8e4m3", "f8e5m2", "float16", "float32",
    "float64", "from_dlpack", "i16", "i32", "i4", "i64", "i8", "int16",
    "int32", "int4", "int64", "int8", "kernel", "kernel_cache",
    "synchronize", "tile", "to_device",
] + _compiler_all

