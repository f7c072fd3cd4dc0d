"""Tensors on NVIDIA GPUs: ``ts.device("cuda")``, DLPack, synchronization::

    import numpy as np
    import tessera as ts
    import torch

    gpu = ts.device("cuda")               # cuda:0; "cuda:1" for another
    x = ts.to_device(np.ones((4, 8), np.float32), gpu)
    y = ts.cuda.empty((4, 8), ts.bf16, device=gpu)
    t = torch.from_dlpack(x)              # zero-copy, and back:
    z = ts.from_dlpack(t)
    x.numpy()                             # a host copy

Device memory comes from the runtime's caching allocator. Tessera's work
on a device goes on one stream that orders with the legacy default stream
(PyTorch's default), so tensors pass between the frameworks without
explicit synchronization; ``ts.synchronize()`` waits for Tessera's work.

Everything here but ``Device``, ``device("cpu")`` and ``is_available``
needs a CUDA device, except that under ``tessera._kernel.compile_only``
``empty`` and ``zeros`` give tensors without memory (a shape and a
dtype), for compiling kernel launches on a machine without a GPU.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ._dtypes import DType, as_dtype
from ._errors import TesseraError
from . import tree as _tree

__all__ = ["Device", "DeviceTensor", "device", "empty", "from_dlpack",
           "is_available", "synchronize", "to_device", "zeros"]


def _cuda():
    try:
        from . import _cuda as c
    except ImportError as e:  # pragma: no cover
        raise TesseraError(f"this installation has no CUDA runtime: {e}")
    return c


class Device:
    """A device: the host (``cpu``) or a CUDA GPU (``cuda:N``).

    ``ts.device(...)`` makes one and checks that the GPU exists; a device
    tensor's ``.device`` is one. ``d.type`` is ``"cpu"`` or ``"cuda"``,
    ``d.index`` the GPU's number. Devices compare and hash by value.

    >>> ts.device("cpu")
    cpu
    >>> d = ts.cuda.Device("cuda", 1)
    >>> d, d.type, d.index
    (cuda:1, 'cuda', 1)
    """

    __slots__ = ("type", "index")

    def __init__(self, type_: str, index: int = 0):
        self.type = type_
        self.index = index

    def __repr__(self):
        return "cpu" if self.type == "cpu" else f"cuda:{self.index}"

    def __eq__(self, other):
        return (isinstance(other, Device) and self.type == other.type
                and self.index == other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def describe(self) -> str:
        """A description of the device, for logs.

        For a GPU: its name, architecture, multiprocessors and memory (this
        needs the CUDA runtime); for the host ``"cpu"``.

        >>> ts.device("cpu").describe()
        'cpu'
        >>> if ts.cuda.is_available():  # a CUDA device
        ...     text = ts.device("cuda").describe()
        ...     # 'cuda:0 (NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 79.1 GiB)'
        """
        if self.type == "cpu":
            return "cpu"
        return _cuda().device_info(self.index)["description"]


def device(spec="cuda") -> Device:
    """The device named by ``spec``: ``"cuda"``, ``"cuda:N"`` or ``"cpu"``.

    ``"cuda"`` is the first GPU; a ``Device`` is returned as it is. A CUDA
    device must exist: without a usable GPU, or with fewer than N + 1 of them,
    it raises ``TesseraError`` saying why (no driver, say). Any other spec
    raises ``TesseraError``.

    >>> ts.device("cpu")
    cpu
    >>> ts.device("tpu")
    Traceback (most recent call last):
        ...
    tessera.TesseraError: a device is 'cpu', 'cuda' or 'cuda:N', got 'tpu'
    >>> if ts.cuda.is_available():  # needs a CUDA device
    ...     gpu = ts.device("cuda")  # cuda:0
    """
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, str):
        return _device_of(spec)
    raise TesseraError(f"a device is 'cpu', 'cuda' or 'cuda:N', got "
                       f"{spec!r}")


def _parse_device(spec):
    """("cpu", 0) or ("cuda", N) for a device name, without looking for
    the device."""
    if spec == "cpu":
        return "cpu", 0
    kind, _, index = spec.partition(":")
    if kind != "cuda" or (index and not index.isdigit()):
        raise TesseraError(f"a device is 'cpu', 'cuda' or 'cuda:N', got "
                           f"{spec!r}")
    return "cuda", int(index or 0)


@functools.lru_cache(maxsize=64)
def _device_of(spec):
    if not isinstance(spec, str):
        raise TesseraError(f"a device is 'cpu', 'cuda' or 'cuda:N', got "
                           f"{spec!r}")
    kind, i = _parse_device(spec)
    if kind == "cpu":
        return Device("cpu")
    c = _cuda()
    if not c.available():
        raise TesseraError(f"no CUDA device: {c.unavailable_reason()}")
    if i >= c.device_count():
        raise TesseraError(f"{spec}: this machine has {c.device_count()} CUDA "
                           f"device(s)")
    return Device("cuda", i)


def is_available() -> bool:
    """Whether a CUDA device can be used.

    True when a GPU, its driver and Tessera's CUDA runtime are present. Never
    raises.

    >>> ts.cuda.is_available() in (True, False)
    True
    """
    try:
        return _cuda().available()
    except TesseraError:
        return False


def synchronize(dev=None):
    """Waits until the work Tessera has queued on device ``dev`` is done.

    ``dev`` is a device or its name (default ``cuda:0``). Tessera's work on a
    device goes on one stream that orders with the legacy default stream, so
    results are read correctly without it (a copy to the host waits); it is for
    timing and for handing memory to code that does not order with that stream.
    It needs a CUDA device (``TesseraError`` otherwise).

    >>> if ts.cuda.is_available():  # needs a CUDA device
    ...     x = ts.to_device(np.ones((256, 256), np.float32))
    ...     ts.synchronize()
    """
    d = device(dev or "cuda")
    _cuda().synchronize(d.index)


@functools.lru_cache(maxsize=4096)
def _row_major(shape):
    strides, s = [], 1
    for d in reversed(shape):
        strides.append(s)
        s *= d
    return tuple(reversed(strides))


@_tree._register_leaf_type
class DeviceTensor:
    """A dense row-major tensor in GPU memory.

    Made by ``ts.to_device`` (a copy of a NumPy array), ``ts.cuda.empty`` and
    ``ts.cuda.zeros``, or ``ts.from_dlpack`` (a view of another framework's
    CUDA tensor), and returned by kernels and ``tessera.stdlib`` ops. It has a
    ``shape``, ``dtype``, ``strides`` (in elements) and ``device``; ``numpy()``
    copies it to the host, and it exports itself through DLPack
    (``torch.from_dlpack(x)``) without a copy.

    Under ``tessera._kernel.compile_only`` ``ts.cuda.empty`` gives tensors
    without memory, which show the attributes here on a machine without a GPU:

    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):
    ...     x = ts.cuda.empty((4, 8), ts.bf16)
    >>> x
    DeviceTensor(bf16[4, 8] on cuda:0)
    >>> x.shape, x.ndim, x.dtype, x.strides, x.device
    ((4, 8), 2, ts.bf16, (8, 1), cuda:0)
    >>> if ts.cuda.is_available():  # with a CUDA device
    ...     y = ts.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
    ...     assert y.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    """

    __slots__ = ("_buf", "_dtype", "_owner", "_ptr", "_shape", "_strides",
                 "_device", "__weakref__")

    def __init__(self, buf=None, *, dtype=None, pointer=None, shape=None,
                 strides=None, device_index=0, owner=None):
        if buf is not None:
            self._buf = buf
            self._dtype = as_dtype(buf.dtype)
            self._ptr = buf.pointer
            self._shape = tuple(buf.shape)
            self._strides = _row_major(self._shape)
            self._device = buf.device
            self._owner = None
        else:
            self._buf = None
            self._dtype = dtype
            self._ptr = pointer
            self._shape = tuple(shape)
            self._strides = tuple(strides)
            self._device = device_index
            self._owner = owner

    @classmethod
    def _of_buffer(cls, buf, dtype, shape, strides, device):
        """A tensor owning ``buf`` whose dtype, shape, row-major strides and
        device the caller already knows (a GPU program's results: the
        hot path of every call, without asking the buffer for each)."""
        t = object.__new__(cls)
        t._buf = buf
        t._dtype = dtype
        t._ptr = buf.pointer
        t._shape = shape
        t._strides = strides
        t._device = device
        t._owner = None
        return t

    def _contiguous(self) -> bool:
        """Row-major (the strides of unit dims do not matter)."""
        if self._buf is not None:
            return True
        expected = _row_major(self._shape)
        return all(s == e or n == 1 for s, e, n in
                   zip(self._strides, expected, self._shape))

    @property
    def shape(self):
        """The sizes of the dims, a tuple of integers.

        >>> from tessera._kernel import compile_only
        >>> with compile_only("sm_90a"):  # a tensor without memory
        ...     x = ts.cuda.empty((4, 8), ts.f32)
        >>> x.shape
        (4, 8)
        """
        return self._shape

    @property
    def ndim(self) -> int:
        """The number of dims.

        >>> from tessera._kernel import compile_only
        >>> with compile_only("sm_90a"):  # a tensor without memory
        ...     x = ts.cuda.empty((2, 3, 4), ts.f32)
        >>> x.ndim
        3
        """
        return len(self._shape)

    @property
    def dtype(self) -> DType:
        """The element type, a Tessera dtype.

        >>> from tessera._kernel import compile_only
        >>> with compile_only("sm_90a"):  # a tensor without memory
        ...     x = ts.cuda.empty((4, 8), "bf16")
        >>> x.dtype
        ts.bf16
        """
        return self._dtype

    @property
    def strides(self):
        """The strides of the dims, in elements.

        Row-major for tensors Tessera allocates; a DLPack view keeps its
        framework's.

        >>> from tessera._kernel import compile_only
        >>> with compile_only("sm_90a"):  # a tensor without memory
        ...     x = ts.cuda.empty((2, 3, 4), ts.f32)
        >>> x.strides
        (12, 4, 1)
        """
        return self._strides

    @property
    def device(self) -> Device:
        """The GPU that holds the tensor, a ``Device``.

        >>> from tessera._kernel import compile_only
        >>> with compile_only("sm_90a"):  # a tensor without memory
        ...     x = ts.cuda.empty((4,), ts.f32)
        >>> x.device
        cuda:0
        """
        return Device("cuda", self._device)

    @property
    def pointer(self) -> int:
        """The device address of the first element, an integer.

        It is 0 for a tensor without memory (made under ``compile_only``).

        >>> from tessera._kernel import compile_only
        >>> with compile_only("sm_90a"):
        ...     x = ts.cuda.empty((4,), ts.f32)
        >>> x.pointer
        0
        """
        return self._ptr

    def __repr__(self):
        return (f"DeviceTensor({self._dtype.name}{list(self._shape)} on "
                f"cuda:{self._device})")

    def reshape(self, *shape) -> "DeviceTensor":
        """A view with another shape: the same elements, no copy.

        The sizes are given as arguments or as one tuple; one may be -1 (the
        size the others leave). Sizes whose product differs from the tensor's,
        or a tensor that is not contiguous, raise ``TesseraError``.

        >>> from tessera._kernel import compile_only
        >>> with compile_only("sm_90a"):  # a tensor without memory
        ...     x = ts.cuda.empty((4, 8), ts.f32)
        >>> x.reshape(2, -1)
        DeviceTensor(f32[2, 16] on cuda:0)
        >>> x.reshape((32,)).shape
        (32,)
        >>> x.reshape(3, -1)
        Traceback (most recent call last):
            ...
        tessera.TesseraError: cannot reshape [4, 8] to [3, -1]
        """
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if (shape == self._shape and all(type(d) is int for d in shape)
                and self._contiguous()):
            return self
        if any(not isinstance(d, (int, np.integer)) or d < -1 for d in shape):
            raise TesseraError(f"reshape takes sizes >= 0 (one may be -1), got "
                               f"{list(shape)}")
        n = math.prod(self._shape)
        if shape.count(-1) > 1:
            raise TesseraError("reshape: at most one dim may be -1")
        if -1 in shape:
            rest = math.prod(s for s in shape if s != -1)
            if rest == 0 or n % rest:
                raise TesseraError(f"cannot reshape {list(self._shape)} to "
                                   f"{list(shape)}")
            shape = tuple(n // rest if s == -1 else s for s in shape)
        shape = tuple(int(d) for d in shape)
        if math.prod(shape) != n:
            raise TesseraError(f"cannot reshape {list(self._shape)} "
                               f"({n} elements) to {list(shape)}")
        if not self._contiguous():
            raise TesseraError("reshape of a non-contiguous tensor")
        return DeviceTensor(dtype=self._dtype, pointer=self._ptr, shape=shape,
                            strides=_row_major(shape),
                            device_index=self._device,
                            owner=self if self._buf is not None else
                            self._owner)

    def numpy(self) -> np.ndarray:
        """A copy in host memory, as a NumPy array of the tensor's shape.

        bf16 and fp8 tensors give arrays of ``ml_dtypes`` types when that
        package is installed (else of the integer type of their bits). It waits
        for Tessera's queued work on the tensor. A tensor imported through
        DLPack raises ``TesseraError`` (convert it in its own framework). It
        needs a CUDA device.

        >>> if ts.cuda.is_available():  # needs a CUDA device
        ...     a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
        ...     host = ts.to_device(a).numpy()  # [[1., 2.], [3., 4.]], f32
        ...     assert host.tolist() == [[1.0, 2.0], [3.0, 4.0]]
        """
        if self._buf is None:
            if isinstance(self._owner, DeviceTensor):  # a reshaped view
                return self._owner.numpy().reshape(self._shape)
            raise TesseraError("numpy() of a tensor imported through DLPack: "
                               "convert it in the framework it came from")
        host = self._buf.to_host()
        if self._dtype.numpy is not None and host.dtype != self._dtype.numpy:
            host = host.view(self._dtype.numpy)
        return host

    def __dlpack__(self, stream=None, **kwargs):
        if self._buf is None:
            if isinstance(self._owner, DeviceTensor):
                raise TesseraError("a reshaped view is not exported through "
                                   "DLPack; export the tensor it views and "
                                   "reshape there")
            raise TesseraError("a tensor imported through DLPack is exported "
                               "by the framework it came from")
        # A DLPack capsule of the buffer, once Tessera's queued work on it
        # has finished (the consumer reads on its own stream).
        return self._buf.dlpack()

    def __dlpack_device__(self):
        return (2, self._device)  # kDLCUDA


def _host_array(array, dtype):
    a = np.asarray(array)
    if dtype is None:
        dtype = as_dtype(a.dtype)
    else:
        dtype = as_dtype(dtype)
        target = dtype.numpy if dtype.numpy is not None else dtype.bits_dtype
        if a.dtype != target:
            a = a.astype(target)
    bits = dtype.bits_dtype
    if bits is not None and a.dtype != bits:
        a = a.view(bits)
    return np.ascontiguousarray(a), dtype


def to_device(array, dev="cuda", dtype=None) -> DeviceTensor:
    """A copy of a NumPy array on a CUDA device.

    ``array`` is anything ``np.asarray`` takes; ``dev`` a device or its name
    (default ``"cuda"``, the first GPU). With ``dtype`` the elements are
    converted first (``ts.bf16`` too); else the array's dtype is kept. The
    result is a new ``DeviceTensor``. A CPU device, or no usable GPU, raises
    ``TesseraError``.

    >>> ts.to_device(np.ones(3), "cpu")
    Traceback (most recent call last):
        ...
    tessera.TesseraError: to_device copies to a CUDA device
    >>> if ts.cuda.is_available():  # needs a CUDA device
    ...     x = ts.to_device(np.array([0.5, 1.5]), dtype=ts.bf16)
    ...     assert x.dtype == ts.bf16 and x.shape == (2,)
    """
    d = device(dev)
    if d.type != "cuda":
        raise TesseraError("to_device copies to a CUDA device")
    a, dt = _host_array(array, dtype)
    return DeviceTensor(_cuda().Buffer.from_host(a, dt.name, d.index))


def _no_memory(shape, dtype):
    """A tensor without memory, for compile_only (see tessera._kernel)."""
    from ._kernel import _compile_only
    if _compile_only.chip is None:
        return None
    shape = tuple(int(s) for s in shape)
    return DeviceTensor(dtype=as_dtype(dtype), pointer=0, shape=shape,
                        strides=_row_major(shape), device_index=0)


def _allocate(shape, dtype, device, zeroed):
    t = _no_memory(shape, dtype)
    if t is not None:
        return t
    d = _device(device)
    make = _cuda().Buffer.zeros if zeroed else _cuda().Buffer.empty
    t = DeviceTensor(make(as_dtype(dtype).name, [int(s) for s in shape],
                          d.index))
    return t


def empty(shape, dtype, device="cuda") -> DeviceTensor:  # noqa: F811
    """A new tensor of ``shape`` and ``dtype``, not initialized.

    ``device`` is a CUDA device or its name (default ``"cuda"``). Memory comes
    from the runtime's caching allocator. Under
    ``tessera._kernel.compile_only`` the tensor has no memory (shape and dtype
    only, for compiling launches without a GPU); otherwise it needs a CUDA
    device (``TesseraError``).

    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):
    ...     x = ts.cuda.empty((2, 3), ts.f16)
    >>> x
    DeviceTensor(f16[2, 3] on cuda:0)
    """
    return _allocate(shape, dtype, device, zeroed=False)


def zeros(shape, dtype, device="cuda") -> DeviceTensor:  # noqa: F811
    """A new tensor of ``shape`` and ``dtype``, filled with zeros.

    ``device`` is a CUDA device or its name (default ``"cuda"``). As ``empty``:
    without memory under ``tessera._kernel.compile_only``, and otherwise it
    needs a CUDA device.

    >>> from tessera._kernel import compile_only
    >>> with compile_only("sm_90a"):
    ...     x = ts.cuda.zeros((3,), ts.i32)
    >>> x
    DeviceTensor(i32[3] on cuda:0)
    >>> if ts.cuda.is_available():  # needs a CUDA device
    ...     z = ts.cuda.zeros((2, 2), ts.f32).numpy()
    ...     assert z.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    """
    return _allocate(shape, dtype, device, zeroed=True)


_device = device

_DLPACK_DTYPES = {"float64": "f64", "float32": "f32", "float16": "f16",
                  "bfloat16": "bf16", "int64": "i64", "int32": "i32",
                  "int16": "i16", "int8": "i8", "bool8": "i1", "uint8": "u8",
                  "uint16": "u16"}


def from_dlpack(tensor, dtype=None) -> DeviceTensor:
    """A view of another framework's CUDA tensor as a ``DeviceTensor``.

    No copy is made (PyTorch's tensors, say), and the view keeps the tensor
    alive. The view has the tensor's shape, strides and device. uint8 and
    uint16 tensors, which hold fp8 and bf16 bits in frameworks without those
    types, are read as ``dtype`` (``ts.f8e4m3``, ``ts.bf16``...); a dtype of
    another width, or a tensor dtype Tessera lacks, raises ``TesseraError``.
    Kernels take such tensors directly too. It needs a CUDA tensor (and
    device).

    >>> import importlib.util
    >>> if ts.cuda.is_available() and importlib.util.find_spec("torch"):
    ...     import torch  # a PyTorch CUDA tensor, viewed without a copy
    ...     t = torch.arange(4.0, device="cuda")
    ...     x = ts.from_dlpack(t)
    ...     assert x.shape == (4,) and x.pointer == t.data_ptr()
    """
    try:
        ptr, shape, strides, name, dev = _cuda().dlpack_info(tensor)
    except TypeError:
        where = getattr(tensor, "__dlpack_device__", None)
        found = (f"a tensor on DLPack device {where()}" if where is not None
                 else f"a {type(tensor).__name__} without __dlpack__")
        raise TesseraError(f"from_dlpack takes a CUDA tensor (DLPack device "
                           f"type 2), got {found}") from None
    t = _DLPACK_DTYPES.get(name)
    if dtype is not None:
        want = as_dtype(dtype)
        bits = {"u8": 8, "i8": 8, "u16": 16, "i16": 16}.get(t)
        if want.name != t and not (
                bits is not None and want.bits_dtype is not None
                and np.dtype(want.bits_dtype).itemsize * 8 == bits):
            raise TesseraError(f"a {name} tensor cannot be read as "
                               f"{want.name}")
        t = want.name
    if t is None or t in ("u8", "u16"):
        raise TesseraError(f"DLPack dtype {name} has no Tessera dtype (pass "
                           f"dtype= to read its bits as bf16 or fp8)")
    return DeviceTensor(dtype=as_dtype(t), pointer=ptr, shape=shape,
                        strides=strides, device_index=dev, owner=tensor)


def _as_device_tensor(value, what):
    if isinstance(value, DeviceTensor):
        return value
    if isinstance(value, np.ndarray):
        raise TesseraError(f"{what} is a NumPy array in host memory; kernels "
                           f"take device tensors (ts.to_device)")
    if hasattr(value, "__dlpack__"):
        dev = value.__dlpack_device__() if hasattr(
            value, "__dlpack_device__") else None
        if dev is not None and dev[0] != 2:
            raise TesseraError(f"{what} is not on a CUDA device (DLPack device "
                               f"type {dev[0]}); move it to the GPU first")
        return value
    raise TesseraError(f"{what} must be a device tensor, got "
                       f"{type(value).__name__}")


def _kernel_arguments(name, params, values):
    """Checks a launch's arguments against the kernel's parameters: device
    tensors of the annotated rank, dtype and sizes, named dims agreeing,
    rows contiguous. Returns (one DeviceTensor or None per parameter, the
    device index)."""
    out, dev, sizes = [], None, {}
    for p, v in zip(params, values):
        if p.kind != "tensor":
            out.append(None)
            continue
        want = p.ktile.dtype
        if type(v) is not DeviceTensor:
            what = f"argument {p.name!r} of kernel {name}"
            v = _as_device_tensor(v, what)
            if not isinstance(v, DeviceTensor):
                try:
                    v = from_dlpack(v)
                except TesseraError:
                    # uint8/uint16 tensors holding fp8/bf16 bits.
                    if want is None or want.bits_dtype is None:
                        raise
                    v = from_dlpack(v, dtype=want)
        dims = p.ktile.shape
        shape = v._shape
        if (want is not None and v._dtype is not want
                and v._dtype != want) or len(shape) != len(dims):
            what = f"argument {p.name!r} of kernel {name}"
            if len(shape) != len(dims):
                raise TesseraError(f"{what} must have {len(dims)} dims "
                                   f"{list(dims)}, got shape {list(shape)}")
            raise TesseraError(f"{what} must be {want.name}, got "
                               f"{v._dtype.name}")
        for i, d in enumerate(dims):
            s = shape[i]
            if d.__class__ is int:
                if d != s:
                    raise TesseraError(f"argument {p.name!r} of kernel "
                                       f"{name}: dim {i} must be {d}, got {s}")
            else:
                seen = sizes.get(d)
                if seen is None:
                    sizes[d] = (s, p.name)
                elif seen[0] != s:
                    raise TesseraError(
                        f"argument {p.name!r} of kernel {name}: dim {i} ({d}) "
                        f"is {s}, but {d} is {seen[0]} in argument "
                        f"{seen[1]!r}")
        if not v._contiguous():
            raise TesseraError(f"argument {p.name!r} of kernel {name} must be "
                               f"contiguous (row-major); its strides are "
                               f"{list(v._strides)}")
        if dev is None:
            dev = v._device
        elif v._device != dev:
            raise TesseraError(f"argument {p.name!r} of kernel {name} is on "
                               f"cuda:{v._device}, other arguments on "
                               f"cuda:{dev}")
        out.append(v)
    if dev is None:
        dev = 0
    return out, dev
