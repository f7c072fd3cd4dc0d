"""Tessera: a deep-learning programming model and compiler on MLIR.

    import tessera as ts
    from tessera import op

    @ts.jit
    def loss(w, x: ts.Tensor["B", 784, ts.f32], y):
        return op.cross_entropy(x @ w, y)

    g = ts.grad(loss)(w, x, y)

Everything here is a thin layer over the C++ API (tessera._core).
"""

from . import _core
from . import graph
from . import op
from . import random
from . import tree
from ._autodiff import (checkpoint, custom_jvp, custom_vjp, grad, hvp,
                        jacfwd, jacrev, jvp, remat, stop_gradient,
                        value_and_grad, vjp)
from ._control import scan, vmap
from ._dtypes import (DType, Policy, accum, as_dtype, bf16, bfloat16, bool_,
                      f8e4m3, f8e5m2, f16, f32, f64, float16, float32,
                      float64, i4, i8, i16, i32, i64, int4, int8, int16, int32,
                      int64)
from ._jit import Lowered, jit
from ._tracing import TesseraError, Tracer
from ._types import Tensor, TensorType
from .state import KVCache
from .io import load, save

set_num_threads = _core.set_num_threads
num_threads = _core.num_threads

__version__ = "0.1.0"

__all__ = [
    "DType", "KVCache", "Lowered", "Policy", "Tensor", "TensorType", "TesseraError",
    "Tracer", "accum", "as_dtype", "bf16", "bfloat16", "bool_", "checkpoint",
    "custom_jvp", "custom_vjp", "f16", "f32",
    "f64", "f8e4m3", "f8e5m2", "float16", "float32", "float64", "grad", "hvp",
    "i16", "i32", "i4", "i64", "i8", "int16", "int32", "int4", "int64", "int8",
    "jacfwd",
    "load", "save",
    "graph", "jacrev", "jit", "jvp", "num_threads", "op", "random", "remat",
    "scan", "set_num_threads",
    "stop_gradient", "tree", "value_and_grad", "vjp", "vmap",
]
