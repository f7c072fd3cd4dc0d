"""Key/value caches: state that compiled calls update in place.

A decoder passes the cache to a ``ts.jit`` function on every step::

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
    of valid positions, passed to ``ts.jit`` functions as state.

    A ``ts.jit`` function takes the cache as an argument and uses it with
    ``op.kv_cache_append``, ``op.kv_cache_read`` and ``op.kv_cache_prune``;
    each call updates the cache's buffers in place, so the next call sees
    what the previous one appended. The cache starts empty (length 0,
    zeros). Appending past ``max_length`` fails the call and leaves the
    cache as it was; with ``window`` (1 to ``max_length``) the cache keeps
    only the last ``window`` positions instead.

    ``dtype`` is a floating-point Tessera dtype or its name. The buffers
    are the attributes ``keys``, ``values`` (NumPy arrays of the full
    shape; for a dtype NumPy lacks, its bit patterns: uint16 for bf16,
    uint8 for 8-bit floats) and ``meta``
    (int64 ``[length, window]``, window 0 when there is none).

    Raises ``TesseraError`` for a dtype that is not a float or a window
    outside [1, ``max_length``].

    Example:

    >>> cache = ts.KVCache(batch=1, heads=1, max_length=4, head_dim=2)
    >>> cache
    KVCache([1, 1, 4, 2], f32, length 0)
    >>> append = ts.jit(lambda c, k, v: op.kv_cache_append(c, k, v))
    >>> k = np.ones((1, 1, 3, 2), np.float32)
    >>> append(cache, k, 2 * k)
    >>> cache.length, cache.values[0, 0, :, 0]
    (3, array([2., 2., 2., 0.], dtype=float32))
    >>> rolling = ts.KVCache(1, 1, 4, 2, window=2)
    >>> append(rolling, k, k)
    >>> rolling.length
    2
    """

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
        """The buffers' shape, ``(batch, heads, max_length, head_dim)``.

        Example:

        >>> ts.KVCache(2, 8, 128, 64).shape
        (2, 8, 128, 64)
        """
        return self.keys.shape

    @property
    def length(self) -> int:
        """The number of valid positions (0 for a new cache).

        Example:

        >>> cache = ts.KVCache(1, 1, 4, 2)
        >>> cache.length
        0
        >>> ts.jit(lambda c, k: op.kv_cache_append(c, k, k))(
        ...     cache, np.ones((1, 1, 2, 2), np.float32))
        >>> cache.length
        2
        """
        return int(self.meta[0])

    def buffers(self):
        """The state arrays a compiled call takes and updates in place:
        ``[keys, values, meta]``.

        Example:

        >>> cache = ts.KVCache(1, 2, 8, 4, "bf16", window=5)
        >>> keys, values, meta = cache.buffers()
        >>> keys.shape, keys.dtype, meta
        ((1, 2, 8, 4), dtype('uint16'), array([0, 5]))
        """
        return [self.keys, self.values, self.meta]

    def __repr__(self):
        return (f"KVCache({list(self.shape)}, {self.dtype.name}, length "
                f"{self.length})")
