"""The parts of the package that need the compiler (tessera._core):
tracing, autodiff, jit compilation. Imported by tessera/__init__.py when
the extension is present."""

from . import _core
from . import graph
from . import op
from . import random
from . import tree
from ._autodiff import (checkpoint, custom_jvp, custom_vjp, grad, hvp,
                        jacfwd, jacrev, jvp, remat, stop_gradient,
                        value_and_grad, vjp)
from ._control import scan, vmap
from ._jit import Lowered, jit
from ._tracing import Tracer
from ._types import Tensor, TensorType
from .state import KVCache
from .io import load, save



def set_num_threads(n: int) -> None:
    """Sets the number of threads compiled CPU code runs on (the OpenMP
    pool; n >= 1). Results do not depend on it: reductions have a fixed
    order.

    >>> before = ts.num_threads()
    >>> ts.set_num_threads(1)
    >>> ts.num_threads()
    1
    >>> ts.set_num_threads(before)
    """
    _core.set_num_threads(n)


def num_threads() -> int:
    """The number of threads compiled CPU code runs on (by default, the
    processor count).

    >>> ts.num_threads() >= 1
    True
    """
    return _core.num_threads()


__all__ = [
    "KVCache", "Lowered", "Tensor", "TensorType", "Tracer", "checkpoint",
    "custom_jvp", "custom_vjp", "grad", "graph", "hvp", "jacfwd", "jacrev",
    "jit", "jvp", "load", "num_threads", "op", "random", "remat", "save",
    "scan", "set_num_threads", "stop_gradient", "tree", "value_and_grad",
    "vjp", "vmap",
]
