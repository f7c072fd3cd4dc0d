"""NumPy-style indexing of traced tensors: ints, slices, None, ..., and
integer arrays (gather along the first indexed dim)."""

from __future__ import annotations

import numpy as np

from ._tracing import Tracer, TesseraError


def _static_slice(item, size):
    start, stop, step = item.indices(size)
    if step <= 0:
        raise TesseraError("negative slice steps are not supported; use "
                           "op.transpose or a gather")
    stop = max(stop, start)
    return start, stop, step


def _symbolic_slice(item, size):
    step = 1 if item.step is None else item.step
    start = 0 if item.start is None else item.start
    if step <= 0 or start < 0 or (item.stop is not None and item.stop < 0):
        raise TesseraError(f"a slice of the symbolic dim {size} needs a "
                           f"non-negative start, stop and step; got {item}")
    stop = size if item.stop is None else item.stop
    return start, stop, step


def getitem(x: Tracer, index):
    from . import op
    if not isinstance(index, tuple):
        index = (index,)
    arrays = [i for i in index if isinstance(i, (Tracer, np.ndarray, list))]
    if arrays:
        if len(index) != 1:
            raise TesseraError("indexing with an array is supported as "
                               "x[indices] (a gather along dim 0)")
        return op.gather(x, index[0], 0)
    if sum(i is Ellipsis for i in index) > 1:
        raise TesseraError("an index can only have one ellipsis ('...')")
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if used > x.ndim:
        raise TesseraError(f"too many indices ({used}) for a tensor of rank "
                           f"{x.ndim}")
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (x.ndim - used) + index[at + 1:]
    else:
        index = index + (slice(None),) * (x.ndim - used)
    shape = x.shape
    starts, limits, strides, out_shape = [], [], [], []
    d = 0
    sliced = False
    for item in index:
        if item is None:
            out_shape.append(1)
            continue
        size = shape[d]
        if isinstance(item, (int, np.integer)):
            i = int(item)
            if isinstance(size, int):
                if not -size <= i < size:
                    raise TesseraError(f"index {i} is out of range for dim "
                                       f"{d} of size {size}")
                i %= size
            elif i < 0:
                raise TesseraError(f"negative index {i} into the symbolic "
                                   f"dim {size}")
            starts.append(i), limits.append(i + 1), strides.append(1)
            sliced = True
        elif isinstance(item, slice):
            if isinstance(size, int):
                s, e, st = _static_slice(item, size)
                out_shape.append(len(range(s, e, st)))
            else:
                s, e, st = _symbolic_slice(item, size)
                out_shape.append(size if (s, e, st) == (0, size, 1) else -1)
            if (s, e, st) != (0, size, 1):
                sliced = True
            starts.append(s), limits.append(e), strides.append(st)
        else:
            raise TesseraError(f"unsupported index {item!r}")
        d += 1
    y = op.slice(x, starts, limits, strides) if sliced else x
    if list(y.shape) != out_shape or len(out_shape) != y.ndim:
        if out_shape.count(-1) <= 1:
            y = op.reshape(y, out_shape)
    return y
