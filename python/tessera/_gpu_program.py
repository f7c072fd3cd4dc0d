"""A GPU program compiled by the C++ GPU pipeline (``Module.compile_gpu``'s
bytes, a ``.tgpu`` file) loaded on a CUDA device: what ``ts.jit(...,
device="cuda")`` calls. It needs only the runtime (``tessera._cuda``), not
the compiler."""

from __future__ import annotations

import numpy as np

from ._dtypes import as_dtype
from ._errors import TesseraError


def _device_index(device):
    """The index of a CUDA device ("cuda", "cuda:K", K or a Device), without
    looking for it: a program file is checked before the device."""
    from . import cuda
    if isinstance(device, cuda.Device):
        device = str(device)
    if isinstance(device, int) and not isinstance(device, bool) \
            and device >= 0:
        return device
    kind = index = None
    if isinstance(device, str):
        try:
            kind, index = cuda._parse_device(device)
        except TesseraError:
            pass
    if kind != "cuda":
        raise TesseraError(f"a GPU program runs on 'cuda' or 'cuda:K', got "
                           f"{device!r}")
    return index


class GpuProgram:
    """A compiled GPU program loaded as the runtime's host program on one
    device: called with NumPy arrays or device tensors (or CUDA tensors of
    other libraries, through DLPack) of the compiled shapes and dtypes, it
    queues the program on Tessera's stream and returns one device tensor
    per result. From the second call on, a call is one CUDA graph launch.

    >>> prog = GpuProgram(open("step.tgpu", "rb").read())  # doctest: +SKIP
    >>> loss, *grads = prog(*arrays)                        # doctest: +SKIP
    """

    def __init__(self, data, device="cuda", name="<bytes>"):
        from . import _cuda
        from . import cuda
        self.program_bytes = bytes(data)
        # The file is checked whole before the device is touched.
        index = _device_index(device)
        self._program = _cuda.HostProgram.load(self.program_bytes, index, name)
        self._device = cuda.device(f"cuda:{index}")
        # What each result is, known from the file: a call wraps the
        # buffers it gets back without asking them.
        self._results = [
            (as_dtype(dtype), tuple(shape), cuda._row_major(tuple(shape)),
             index) for dtype, shape in self._program.results]
        self._run = self._program.run
        self._device_tensor = cuda.DeviceTensor

    @classmethod
    def load(cls, path, device="cuda"):
        """The program file at ``path``."""
        with open(path, "rb") as f:
            return cls(f.read(), device, path)

    def __call__(self, *arrays):
        device_tensor = self._device_tensor
        buffers = []
        for a in arrays:
            if type(a) is device_tensor and a._buf is not None:
                buffers.append(a._buf)  # (the hot path: owned buffers)
                continue
            from . import _cuda
            from . import cuda
            dev = getattr(a, "__dlpack_device__", None)
            if (not isinstance(a, (np.ndarray, device_tensor))
                    and dev is not None and dev()[0] == 2):
                a = cuda.from_dlpack(a)  # a CUDA tensor of another library
            if isinstance(a, device_tensor):
                if a._buf is not None:
                    buffers.append(a._buf)
                    continue
                if not a._contiguous():
                    raise TesseraError(
                        f"argument {len(buffers)}: {a!r} has strides "
                        f"{a._strides}; the program reads dense row-major "
                        f"arrays (make it contiguous first)")
                # Memory of another library (DLPack): borrowed for the call.
                buffers.append(_cuda.Buffer.borrow(
                    a._ptr, a._dtype.name, list(a._shape), a._device))
            else:
                buffers.append(cuda.to_device(np.asarray(a),
                                              self._device)._buf)
        wrap = device_tensor._of_buffer
        return [wrap(b, *r) for b, r in zip(self._run(buffers), self._results)]

    @property
    def launches(self):
        """Kernel launches a call queues."""
        return self._program.launches

    @property
    def kernels(self):
        """The kernel of each launch, in launch order."""
        return self._program.kernels

    @property
    def graph_runs(self):
        """Calls queued as one CUDA graph (every call after the first,
        unless ``graph_failure`` says why not)."""
        return self._program.graph_runs

    @property
    def graphs_built(self):
        """CUDA graphs built so far: one for each set of argument and result
        buffers seen, up to a few kept (calls on a kept set launch its
        graph as it is)."""
        return self._program.graphs_built

    @property
    def graph_rewrites(self):
        """Calls on buffers no kept graph had, past the graphs kept: each
        rewrote the nodes of the least recently used graph."""
        return self._program.graph_rewrites

    @property
    def graph_failure(self):
        """Why calls are launched step by step instead of as a graph
        (None while they are replayed)."""
        return self._program.graph_failure
