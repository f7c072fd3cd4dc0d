"""Key/value caches: state that compiled calls update in place.

    cache = ts.KVCache(batch=2, heads=8, max_length=128, head_dim=64)

    @ts.jit
    def decode(cache, q, k, v):                 # q, k, v: [B, H, 1, Dh]
        op.kv_cache_append(cache, k, v)
        keys, values, length = op.kv_cache_read(cache)
        ...

Each call appends to the same buffers (``cache.keys``, ``cache.values``,
``cache.length``); a rolling ``window`` keeps only the last positions.
"""

from __future__ import annotations

import numpy as np

from ._dtypes import as_dtype
from ._tracing import TesseraError


class KVCache:
    """Keys and values [batch, heads, max_length, head_dim] and the number
    of valid positions, passed to ``ts.jit`` functions as state."""

    def __init__(self, batch, heads, max_length, head_dim, dtype="f32",
                 window=None):
        self.dtype = as_dtype(dtype)
        if not self.dtype.is_float:
            raise TesseraError(f"a KV cache holds floats, got {self.dtype.name}")
        if window is not None and not 0 < window <= max_length:
            raise TesseraError(f"window must be in [1, {max_length}], got "
                               f"{window}")
        shape = (batch, heads, max_length, head_dim)
        store = self.dtype.bits_dtype or self.dtype.numpy
        self.keys = np.zeros(shape, store)
        self.values = np.zeros(shape, store)
        # (valid length, window or 0): the layout the runtime updates.
        self.meta = np.array([0, window or 0], np.int64)

    @property
    def shape(self):
        return self.keys.shape

    @property
    def length(self) -> int:
        return int(self.meta[0])

    def buffers(self):
        return [self.keys, self.values, self.meta]

    def __repr__(self):
        return (f"KVCache({list(self.shape)}, {self.dtype.name}, length "
                f"{self.length})")
