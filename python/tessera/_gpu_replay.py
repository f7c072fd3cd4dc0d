"""Recording a GPU program's launches once and replaying them.

A :class:`~tessera._gpu_graph.GpuProgram` call spends most of its host
time in Python: choosing kernels, checking and packing arguments, about
30 us a launch. The launches and the buffers they use are the same at
every call of a program (its shapes are fixed), so a call records them
into a ``LaunchSequence`` of the runtime: every launch's packed
parameters, with each device address written as (buffer, offset), and
every buffer the steps allocate. Later calls give the sequence the new
arguments' addresses; it allocates the intermediate buffers, patches the
addresses and queues the launches from C++.

Anything a recorded call does that a replay would not repeat (a copy from
the host, a synchronization, autotuning, an address outside the
program's buffers) spoils the recording: the call still runs, and the
program records again at its next call.
"""

import bisect
import threading


class _Current(threading.local):
    recorder = None


current = _Current()


def spoil(reason):
    """Marks the recording in progress (if any) as not replayable."""
    rec = current.recorder
    if rec is not None and rec.reason is None:
        rec.reason = reason


def nbytes(t):
    dt = t._dtype
    size = (dt.numpy if dt.numpy is not None else dt.bits_dtype).itemsize
    n = 1
    for d in t._shape:
        n *= d
    return n * size


class Recorder:
    """The launches and allocations of one call, as a LaunchSequence.
    ``reason`` is None while the call can be replayed."""

    def __init__(self, device):
        from . import _cuda
        self.sequence = _cuda.LaunchSequence(device)
        self.device = device
        self.reason = None
        # Live memory: sorted start addresses, and (end, buffer) for each;
        # buffer None is memory the program keeps (its constants).
        self._starts = []
        self._spans = {}
        self.buffer_types = {}        # buffer -> (dtype name, shape)
        self.argument_buffers = {}    # buffer -> argument index

    # -- memory ------------------------------------------------------------

    def _add(self, t, buffer):
        start = t._ptr
        end = start + max(1, nbytes(t))
        # Memory freed during the call and allocated again: the newest
        # allocation owns it.
        i = bisect.bisect_right(self._starts, start)
        if i and self._spans[self._starts[i - 1]][0] > start:
            i -= 1
        while i < len(self._starts) and self._starts[i] < end:
            old = self._starts.pop(i)
            old_buffer = self._spans.pop(old)[1]
            if old_buffer is None or old_buffer in self.argument_buffers:
                self.reason = ("a buffer overlaps an argument or a constant "
                               "of the program")
        bisect.insort(self._starts, start)
        self._spans[start] = (end, buffer)

    def argument(self, index, t):
        b = self.sequence.add_argument()
        self.argument_buffers[b] = index
        self.buffer_types[b] = (t._dtype.name, t._shape)
        self._add(t, b)

    def constant(self, t):
        self._add(t, None)

    def allocated(self, t, zeroed):
        b = self.sequence.add_buffer(t._dtype.name, list(t._shape), zeroed)
        self.buffer_types[b] = (t._dtype.name, t._shape)
        self._add(t, b)

    def resolve(self, address):
        """(buffer, byte offset) of a device address; buffer None for a
        constant's memory. None when the address is not the program's."""
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0:
            return None
        start = self._starts[i]
        end, buffer = self._spans[start]
        if address >= end:
            return None
        return buffer, address - start

    # -- launches ------------------------------------------------------------

    def launch(self, fn, grid, block, packed, offsets, params, tensors):
        if self.reason is not None:
            return
        patches = []
        k = 0
        for p, t in zip(params, tensors):
            if p.kind != "tensor":
                k += 1
                continue
            where = self.resolve(t._ptr)
            if where is None:
                self.reason = (f"a launch of {fn.name} reads memory the "
                               f"program did not allocate")
                return
            buffer, delta = where
            if buffer is not None:
                # The memref's allocated and aligned pointers.
                patches.append((offsets[k], buffer, delta))
                patches.append((offsets[k + 1], buffer, delta))
            k += 3 + 2 * len(t._shape)
        self.sequence.add_launch(fn, grid, block, 0, packed, offsets, patches)
