"""Datasets read from their original files (no downloads).

Fashion-MNIST comes from Debian's ``dataset-fashion-mnist`` package
(``/usr/share/datasets/fashion-mnist``, the value of ``FASHION_MNIST_DIR``),
in the IDX format of its authors; ``FASHION_MNIST_CLASSES`` names its ten
classes in label order.
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
    """Reads an IDX file (gzip-compressed when ``path`` ends with ``.gz``)
    as a NumPy array.

    The file holds the magic bytes ``00 00 <type> <rank>``, ``rank``
    big-endian uint32 dims, then the elements in row-major order. The
    element types are 0x08 (uint8), 0x09 (int8), 0x0B (int16), 0x0C
    (int32), 0x0D (float32) and 0x0E (float64); the array returned has
    that shape and type in native byte order. Raises ValueError when the
    magic bytes are wrong, the type is unknown, or the data does not have
    exactly the size the dims require.

    >>> import struct
    >>> from tessera import datasets
    >>> data = np.array([[1, 2, 3], [4, 5, 6]], np.uint8)
    >>> with open("tiny-idx2-ubyte", "wb") as f:
    ...     _ = f.write(struct.pack(">BBBBII", 0, 0, 0x08, 2, 2, 3)
    ...                 + data.tobytes())
    >>> datasets.read_idx("tiny-idx2-ubyte")
    array([[1, 2, 3],
           [4, 5, 6]], dtype=uint8)
    >>> with open("short-idx2-ubyte", "wb") as f:
    ...     _ = f.write(struct.pack(">BBBBII", 0, 0, 0x08, 2, 2, 3) + b"12345")
    >>> datasets.read_idx("short-idx2-ubyte")
    Traceback (most recent call last):
        ...
    ValueError: short-idx2-ubyte: shape (2, 3) needs 6 bytes of data, the file has 5
    """
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
    """The Fashion-MNIST ``split`` ("train" or "test") as ``(images,
    labels)``: images uint8 [N, 28, 28] and labels int32 [N] (class ids 0
    to 9, see ``FASHION_MNIST_CLASSES``).

    The files are read from ``root``, else from the directory in the
    environment variable ``TESSERA_FASHION_MNIST``, else from
    ``FASHION_MNIST_DIR``: ``train-images-idx3-ubyte.gz`` and
    ``train-labels-idx1-ubyte.gz`` for "train", ``t10k-...`` for "test"
    (see :func:`read_idx`). Raises ValueError for another split or when the
    image and label counts differ, and FileNotFoundError, naming the Debian
    package to install, when a file is missing.

    >>> import gzip, os, struct
    >>> from tessera import datasets
    >>> def write_idx(path, array):
    ...     header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim)
    ...     header += struct.pack(f">{array.ndim}I", *array.shape)
    ...     with gzip.open(path, "wb") as f:
    ...         f.write(header + array.astype(np.uint8).tobytes())
    >>> os.makedirs("fmnist", exist_ok=True)
    >>> write_idx("fmnist/t10k-images-idx3-ubyte.gz", np.zeros((2, 28, 28)))
    >>> write_idx("fmnist/t10k-labels-idx1-ubyte.gz", np.array([3, 9]))
    >>> images, labels = datasets.fashion_mnist("test", root="fmnist")
    >>> images.shape, images.dtype, labels
    ((2, 28, 28), dtype('uint8'), array([3, 9], dtype=int32))
    >>> [datasets.FASHION_MNIST_CLASSES[i] for i in labels]
    ['Dress', 'Ankle boot']
    >>> datasets.fashion_mnist("train", root="fmnist")
    Traceback (most recent call last):
        ...
    FileNotFoundError: fmnist/train-images-idx3-ubyte.gz is missing: install the Debian package dataset-fashion-mnist ...
    """
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
    """Yields tuples of aligned batches of ``batch_size`` rows of the NumPy
    ``arrays`` (a sequence of arrays with the same number of rows).

    Rows are taken in order, or in the order of ``rng.permutation(n)`` when
    ``rng`` (a NumPy Generator) is given, so the same rows of every array go
    together. The last batch is smaller when ``batch_size`` does not divide
    the row count, unless ``drop_last`` leaves it out. Each batch is a new
    C-contiguous array.

    >>> from tessera import datasets
    >>> x = np.arange(5)
    >>> y = x * 10
    >>> [xb.tolist() for xb, yb in datasets.batches((x, y), 2)]
    [[0, 1], [2, 3], [4]]
    >>> [yb.tolist() for xb, yb in datasets.batches((x, y), 2, drop_last=True)]
    [[0, 10], [20, 30]]
    >>> xb, yb = next(datasets.batches((x, y), 3, rng=nn.rng(0)))
    >>> len(xb), bool(np.array_equal(yb, xb * 10))
    (3, True)
    """
    n = len(arrays[0])
    order = rng.permutation(n) if rng is not None else np.arange(n)
    stop = n - n % batch_size if drop_last else n
    for start in range(0, stop, batch_size):
        idx = order[start:start + batch_size]
        yield tuple(np.ascontiguousarray(a[idx]) for a in arrays)
