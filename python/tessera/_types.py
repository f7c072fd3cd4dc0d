"""``Tensor["B", "S", "D", ts.bf16 @ ts.accum(ts.f32)]`` annotations.

Named dims are symbolic: a jit-compiled function whose parameters carry such
annotations is compiled once for every size of those dims, and the names
are checked at trace time (two dims with different names are different
dims, so ``Tensor["B","D"] @ Tensor["E","H"]`` is an error naming D and E).
"""

from __future__ import annotations

from ._dtypes import DType, PolicyDType, as_dtype


class TensorType:
    """The type a ``Tensor[...]`` annotation stands for: ``shape`` (sizes
    and symbol names), ``dtype`` (or None: any) and ``policy``.

    >>> t = ts.Tensor["B", 784, ts.bf16 @ ts.accum(ts.f32)]
    >>> t.shape, t.dtype, t.policy
    (('B', 784), ts.bf16, accum(ts.f32))
    """

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
    """Annotation of a tensor argument of a jit function:
    ``ts.Tensor["B", 784, ts.f32]``. Each entry is a size (an int >= 0) or
    a symbol name; the dtype (optionally with a policy) comes last. At the
    call, rank, static sizes and dtype are checked, and the named dims are
    symbolic: one compilation serves every size, and dims with the same
    name must agree.

    >>> def f(x: ts.Tensor["B", 3, ts.f64]):
    ...     return x.sum(axis=1)
    >>> ts.jit(f)(np.ones((2, 3)))
    array([3., 3.])
    >>> try:
    ...     ts.jit(f)(np.ones((2, 4)))
    ... except ts.TesseraError as e:
    ...     print(e)
    argument 'x' dim 1 must be 3 (Tensor['B', 3, ts.f64]), got 4 (shape (2, 4))
    """

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
