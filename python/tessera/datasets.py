"""Datasets read from their original files (no downloads).

Fashion-MNIST comes from Debian's ``dataset-fashion-mnist`` package
(``/usr/share/datasets/fashion-mnist``), in the IDX format of its authors.
"""

from __future__ import annotations

import gzip
import os
import struct

import numpy as np

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                         "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")

_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"),
              0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"),
              0x0E: np.dtype(">f8")}


def read_idx(path: str) -> np.ndarray:
    """An IDX file (optionally gzip-compressed) as an array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an IDX file (expected the magic "
                         f"00 00 <type> <rank>, got {data[:4].hex()})")
    dtype, rank = data[2], data[3]
    if dtype not in _IDX_TYPES:
        raise ValueError(f"{path}: unknown IDX element type 0x{dtype:02x}")
    header = 4 + 4 * rank
    shape = struct.unpack(f">{rank}I", data[4:header])
    dt = np.dtype(_IDX_TYPES[dtype])
    expected = int(np.prod(shape)) * dt.itemsize
    if len(data) - header != expected:
        raise ValueError(f"{path}: shape {shape} needs {expected} bytes of "
                         f"data, the file has {len(data) - header}")
    return np.frombuffer(data, dt, offset=header).reshape(shape).astype(
        dt.newbyteorder("="))


def fashion_mnist(split: str = "train", root: str | None = None):
    """(images uint8 [N, 28, 28], labels int32 [N]) of ``split`` (train or
    test)."""
    root = root or os.environ.get("TESSERA_FASHION_MNIST", FASHION_MNIST_DIR)
    prefix = {"train": "train", "test": "t10k"}.get(split)
    if prefix is None:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    paths = [os.path.join(root, f"{prefix}-{kind}-idx{r}-ubyte.gz")
             for kind, r in (("images", 3), ("labels", 1))]
    for p in paths:
        if not os.path.exists(p):
            raise FileNotFoundError(
                f"{p} is missing: install the Debian package "
                f"dataset-fashion-mnist (or set TESSERA_FASHION_MNIST to a "
                f"directory with the IDX files)")
    images, labels = (read_idx(p) for p in paths)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{len(images)} images but {len(labels)} labels")
    return images, labels.astype(np.int32)


def batches(arrays, batch_size, rng=None, drop_last=False):
    """Yields tuples of aligned slices of ``arrays`` (shuffled by ``rng``)."""
    n = len(arrays[0])
    order = rng.permutation(n) if rng is not None else np.arange(n)
    stop = n - n % batch_size if drop_last else n
    for start in range(0, stop, batch_size):
        idx = order[start:start + batch_size]
        yield tuple(np.ascontiguousarray(a[idx]) for a in arrays)
