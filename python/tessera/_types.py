"""``Tensor["B", "S", "D", ts.bf16 @ ts.accum(ts.f32)]`` annotations.

Named dims are symbolic: a jit-compiled function whose parameters carry such
annotations is compiled once for every size of those dims, and the names
are checked at trace time (two dims with different names are different
dims, so ``Tensor["B","D"] @ Tensor["E","H"]`` is an error naming D and E).
"""

from __future__ import annotations

from ._dtypes import DType, PolicyDType, as_dtype


class TensorType:
    """The type a ``Tensor[...]`` annotation stands for."""

    __slots__ = ("shape", "dtype", "policy")
    _spelling = "Tensor"

    def __init__(self, shape, dtype=None, policy=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.policy = policy

    def __repr__(self):
        parts = [repr(d) for d in self.shape]
        if self.dtype is not None:
            parts.append(repr(self.dtype) if self.policy is None
                         else f"{self.dtype!r} @ {self.policy!r}")
        return f"{self._spelling}[{', '.join(parts)}]"


class Tensor:
    """Annotation of a tensor argument: ``Tensor["B", 784, ts.f32]``."""

    def __class_getitem__(cls, items):
        if not isinstance(items, tuple):
            items = (items,)
        dims, dtype, policy = [], None, None
        for i, item in enumerate(items):
            if isinstance(item, (DType, PolicyDType)):
                if i != len(items) - 1:
                    raise TypeError("the dtype comes last in Tensor[...]")
                dtype = as_dtype(item)
                policy = item.policy if isinstance(item, PolicyDType) else None
            elif isinstance(item, str) or (isinstance(item, int)
                                           and not isinstance(item, bool)):
                if isinstance(item, int) and item < 0:
                    raise TypeError(f"a dim size must be >= 0, got {item}")
                dims.append(item)
            else:
                raise TypeError(f"Tensor[...] takes dim names, sizes and a "
                                f"dtype; got {item!r}")
        return TensorType(dims, dtype, policy)
