"""Tessera dtypes and numeric policies (``ts.bf16 @ ts.accum(ts.f32)``)."""

from __future__ import annotations

import numpy as np

try:  # bfloat16 and fp8 NumPy dtypes
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover - ml_dtypes is a declared dependency
    _ml = None


class DType:
    """A storage element type: ``ts.f64``, ``ts.f32``, ``ts.f16``,
    ``ts.bf16``, ``ts.f8e4m3``, ``ts.f8e5m2``, ``ts.i64``, ``ts.i32``,
    ``ts.i16``, ``ts.i8``, ``ts.int4`` and ``ts.bool_``. ``.name`` is the
    Graph IR spelling, ``.numpy`` the NumPy dtype of its arrays (bf16, fp8
    and int4 through ``ml_dtypes``); ``dtype @ ts.accum(ts.f32)`` attaches
    a numeric policy.

    >>> ts.bf16.name, ts.bf16.is_float, ts.i32.numpy
    ('bf16', True, dtype('int32'))
    >>> ts.bf16 @ ts.accum(ts.f32)
    ts.bf16 @ accum(ts.f32)
    """

    __slots__ = ("name", "numpy", "bits_dtype")

    def __init__(self, name: str, numpy, bits_dtype=None):
        self.name = name
        self.numpy = np.dtype(numpy) if numpy is not None else None
        # NumPy has no native type for these: their arrays cross into the
        # runtime as uint16/uint8 bit patterns.
        self.bits_dtype = np.dtype(bits_dtype) if bits_dtype else None

    @property
    def is_float(self) -> bool:
        """True for the floating-point types.

        >>> ts.f8e4m3.is_float, ts.i8.is_float
        (True, False)
        """
        return self.name.startswith(("f", "bf"))

    def __matmul__(self, policy: "Policy") -> "PolicyDType":
        if not isinstance(policy, Policy):
            raise TypeError(f"expected a policy such as ts.accum(ts.f32) after "
                            f"'{self.name} @', got {policy!r}")
        return PolicyDType(self, policy)

    def __repr__(self) -> str:
        return f"ts.{self.name}"

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return self.name == other.name
        if isinstance(other, str):
            return self.name == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)


class Policy:
    """A numeric policy (spec 002): the accumulation type of contractions
    and reductions (``accum``), and how results are rounded
    (``stochastic_round``, ``saturate``) or scaled (``loss_scale``). Made
    by ``ts.accum`` and attached with ``@``.

    >>> p = ts.Policy(accum=ts.f32, saturate=True)
    >>> p
    accum(ts.f32) @ saturate
    >>> p.accum.name
    'f32'
    """

    __slots__ = ("accum", "stochastic_round", "saturate", "loss_scale")

    def __init__(self, accum=None, stochastic_round=False, saturate=False,
                 loss_scale=None):
        self.accum = accum
        self.stochastic_round = stochastic_round
        self.saturate = saturate
        self.loss_scale = loss_scale

    def __repr__(self) -> str:
        parts = []
        if self.accum is not None:
            parts.append(f"accum({self.accum!r})")
        if self.stochastic_round:
            parts.append("stochastic_round")
        if self.saturate:
            parts.append("saturate")
        if self.loss_scale is not None:
            parts.append(f"loss_scale({self.loss_scale})")
        return " @ ".join(parts) or "Policy()"


class PolicyDType:
    """A storage dtype with a policy, as in ``Tensor["B", ts.bf16 @ ts.accum(ts.f32)]``."""

    __slots__ = ("dtype", "policy")

    def __init__(self, dtype: DType, policy: Policy):
        self.dtype = dtype
        self.policy = policy

    def __repr__(self) -> str:
        return f"{self.dtype!r} @ {self.policy!r}"


def accum(dtype: DType) -> Policy:
    """A policy that accumulates contractions and reductions in ``dtype``
    (f32 or bf16): ``ts.Tensor["B", 64, ts.bf16 @ ts.accum(ts.f32)]``
    makes the matmuls of that argument accumulate in f32.

    >>> ts.accum(ts.f32)
    accum(ts.f32)
    >>> def mm(a: ts.Tensor[2, 2, ts.bf16 @ ts.accum(ts.f32)], b):
    ...     return a @ b
    >>> "accum = f32" in ts.jit(mm).lower(
    ...     np.ones((2, 2), ts.bf16.numpy), np.ones((2, 2), ts.bf16.numpy)
    ... ).as_text("graph")
    True
    """
    return Policy(accum=as_dtype(dtype))


f64 = DType("f64", np.float64)
f32 = DType("f32", np.float32)
f16 = DType("f16", np.float16)
bf16 = DType("bf16", _ml.bfloat16 if _ml else None, np.uint16)
f8e4m3 = DType("f8E4M3FN", _ml.float8_e4m3fn if _ml else None, np.uint8)
f8e5m2 = DType("f8E5M2", _ml.float8_e5m2 if _ml else None, np.uint8)
i64 = DType("i64", np.int64)
i32 = DType("i32", np.int32)
i16 = DType("i16", np.int16)
i8 = DType("i8", np.int8)
# One byte per element, the value in the low 4 bits (ml_dtypes.int4).
i4 = DType("i4", _ml.int4 if _ml else None, np.uint8)
bool_ = DType("i1", np.bool_)

float64, float32, float16, bfloat16 = f64, f32, f16, bf16
int64, int32, int16, int8, int4 = i64, i32, i16, i8, i4

_ALL = [f64, f32, f16, bf16, f8e4m3, f8e5m2, i64, i32, i16, i8, i4, bool_]
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update({"fp32": f32, "fp64": f64, "fp16": f16, "float32": f32,
                 "float64": f64, "float16": f16, "bfloat16": bf16,
                 "int64": i64, "int32": i32, "int16": i16, "int8": i8,
                 "int4": i4,
                 "bool": bool_, "f8e4m3": f8e4m3, "f8e5m2": f8e5m2,
                 "fp8_e4m3": f8e4m3, "fp8_e5m2": f8e5m2})
_BY_NUMPY = {d.numpy: d for d in _ALL if d.numpy is not None}


def as_dtype(x) -> DType:
    """The ``DType`` of a DType, a name (``"f32"``, ``"float32"``,
    ``"bf16"``, ``"int4"``, ``"bool"``, ...) or a NumPy dtype; anything else
    is a TypeError listing the dtypes.

    >>> ts.as_dtype("float32"), ts.as_dtype(np.int8), ts.as_dtype("bool")
    (ts.f32, ts.i8, ts.i1)
    """
    if isinstance(x, DType):
        return x
    if isinstance(x, np.dtype):
        d = _BY_NUMPY.get(x)
        if d is not None:
            return d
    if isinstance(x, PolicyDType):
        return x.dtype
    if isinstance(x, str) and x in _BY_NAME:
        return _BY_NAME[x]
    try:
        npd = np.dtype(x)
    except TypeError:
        npd = None
    if npd is not None and npd in _BY_NUMPY:
        return _BY_NUMPY[npd]
    raise TypeError(f"unknown dtype {x!r}; Tessera has "
                    + ", ".join(d.name for d in _ALL))
