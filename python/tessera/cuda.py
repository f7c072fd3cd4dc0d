"""Tensors on NVIDIA GPUs: ``ts.device("cuda")``, DLPack, synchronization.

    import tessera as ts
    gpu = ts.device("cuda")               # cuda:0; "cuda:1" for another
    x = ts.to_device(np.ones((4, 8), np.float32), gpu)
    y = ts.empty((4, 8), ts.bf16, device=gpu)
    t = torch.from_dlpack(x)              # zero-copy, and back:
    z = ts.from_dlpack(t)
    x.numpy()                              # a host copy

Device memory comes from the runtime's caching allocator. Tessera's work
on a device goes on one stream that orders with the legacy default stream
(PyTorch's default), so tensors pass between the frameworks without
explicit synchronization; ``ts.synchronize()`` waits for Tessera's work.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import _gpu_replay as _replay
from ._dtypes import DType, as_dtype
from ._errors import TesseraError

__all__ = ["Device", "DeviceTensor", "device", "empty", "from_dlpack",
           "is_available", "synchronize", "to_device", "zeros"]


def _cuda():
    try:
        from . import _cuda as c
    except ImportError as e:  # pragma: no cover
        raise TesseraError(f"this installation has no CUDA runtime: {e}")
    return c


class Device:
    """A device: ``cpu`` or ``cuda:N``."""

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
        """The card: ``cuda:0 (NVIDIA H100 80GB HBM3, sm_90, 132 SMs, ...)``."""
        if self.type == "cpu":
            return "cpu"
        return _cuda().device_info(self.index)["description"]


def device(spec="cuda") -> Device:
    """``ts.device("cuda")``, ``"cuda:1"`` or ``"cpu"``; a CUDA device must
    exist (the error says why not)."""
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, str):
        return _device_of(spec)
    raise TesseraError(f"a device is 'cpu', 'cuda' or 'cuda:N', got "
                       f"{spec!r}")


@functools.lru_cache(maxsize=64)
def _device_of(spec):
    if not isinstance(spec, str):
        raise TesseraError(f"a device is 'cpu', 'cuda' or 'cuda:N', got "
                           f"{spec!r}")
    if spec == "cpu":
        return Device("cpu")
    kind, _, index = spec.partition(":")
    if kind != "cuda" or (index and not index.isdigit()):
        raise TesseraError(f"a device is 'cpu', 'cuda' or 'cuda:N', got "
                           f"{spec!r}")
    c = _cuda()
    if not c.available():
        raise TesseraError(f"no CUDA device: {c.unavailable_reason()}")
    i = int(index or 0)
    if i >= c.device_count():
        raise TesseraError(f"{spec}: this machine has {c.device_count()} CUDA "
                           f"device(s)")
    return Device("cuda", i)


def is_available() -> bool:
    """Whether a CUDA device can be used."""
    try:
        return _cuda().available()
    except TesseraError:
        return False


def synchronize(dev=None):
    """Waits until Tessera's queued work on ``dev`` (default cuda:0) ends."""
    d = device(dev or "cuda")
    _replay.spoil("a synchronization")
    _cuda().synchronize(d.index)


@functools.lru_cache(maxsize=4096)
def _row_major(shape):
    strides, s = [], 1
    for d in reversed(shape):
        strides.append(s)
        s *= d
    return tuple(reversed(strides))


class DeviceTensor:
    """A dense row-major tensor in GPU memory."""

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

    def _contiguous(self) -> bool:
        """Row-major (the strides of unit dims do not matter)."""
        if self._buf is not None:
            return True
        expected = _row_major(self._shape)
        return all(s == e or n == 1 for s, e, n in
                   zip(self._strides, expected, self._shape))

    @property
    def shape(self):
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def strides(self):
        """In elements."""
        return self._strides

    @property
    def device(self) -> Device:
        return Device("cuda", self._device)

    @property
    def pointer(self) -> int:
        return self._ptr

    def __repr__(self):
        return (f"DeviceTensor({self._dtype.name}{list(self._shape)} on "
                f"cuda:{self._device})")

    def reshape(self, *shape) -> "DeviceTensor":
        """A view with another shape (same elements, row-major; one dim may
        be -1)."""
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
        """A host copy (bf16 and fp8 through ml_dtypes when installed)."""
        if self._buf is None:
            if isinstance(self._owner, DeviceTensor):  # a reshaped view
                return self._owner.numpy().reshape(self._shape)
            raise TesseraError("numpy() of a tensor imported through DLPack: "
                               "convert it in the framework it came from")
        _replay.spoil("a copy to the host")
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
        _replay.spoil("a DLPack export")
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
    """A device copy of a NumPy array (converted to ``dtype`` if given)."""
    d = device(dev)
    if d.type != "cuda":
        raise TesseraError("to_device copies to a CUDA device")
    a, dt = _host_array(array, dtype)
    _replay.spoil("a copy from the host")
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
    # A GPU program recording its launches replays this allocation.
    recorder = _replay.current.recorder
    if recorder is not None:
        recorder.allocated(t, zeroed=zeroed)
    return t


def empty(shape, dtype, device="cuda") -> DeviceTensor:  # noqa: F811
    """Uninitialized device memory."""
    return _allocate(shape, dtype, device, zeroed=False)


def zeros(shape, dtype, device="cuda") -> DeviceTensor:  # noqa: F811
    return _allocate(shape, dtype, device, zeroed=True)


_device = device

_DLPACK_DTYPES = {"float64": "f64", "float32": "f32", "float16": "f16",
                  "bfloat16": "bf16", "int64": "i64", "int32": "i32",
                  "int16": "i16", "int8": "i8", "bool8": "i1", "uint8": "u8",
                  "uint16": "u16"}


def from_dlpack(tensor, dtype=None) -> DeviceTensor:
    """A view of another framework's CUDA tensor (no copy; it keeps the
    tensor alive). uint8/uint16 tensors may be read as fp8/bf16 with
    ``dtype``."""
    _replay.spoil("a DLPack import")
    ptr, shape, strides, name, dev = _cuda().dlpack_info(tensor)
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
