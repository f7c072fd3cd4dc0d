"""Saving and loading pytrees of arrays (checkpoints): ``.npz`` (NumPy) or
``.safetensors`` (when the safetensors package is installed)."""

from __future__ import annotations

import os

import numpy as np

from . import tree as _tree
from ._jit import _leaf_paths


def _flat(params):
    leaves = _tree.leaves(params)
    names = _leaf_paths(params, "")
    return {n.lstrip("."): np.asarray(l) for n, l in zip(names, leaves)}


def save(path: str, params) -> None:
    """Writes the arrays of the pytree ``params`` to the checkpoint file
    ``path``, each under its pytree path (``"layers.0.w"``: dict keys and
    list indices joined by dots).

    A path ending in ``.safetensors`` is written in the safetensors format
    (an ImportError when the safetensors package is missing); any other path
    gets an uncompressed NumPy ``.npz`` archive, at ``path`` exactly (no
    suffix is added). The file is written to ``path + ".tmp"`` and then
    renamed, so it is replaced atomically.

    >>> from tessera import io
    >>> params = {"layers": [{"w": np.ones((2, 3), np.float32)}],
    ...           "step": np.array(3)}
    >>> io.save("ckpt.npz", params)
    >>> with np.load("ckpt.npz") as f:
    ...     sorted(f.files)
    ['layers.0.w', 'step']
    """
    arrays = _flat(params)
    tmp = path + ".tmp"
    if path.endswith(".safetensors"):
        from safetensors.numpy import save_file
        save_file(arrays, tmp)
    else:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
    os.replace(tmp, path)


def load(path: str, like):
    """Reads the checkpoint ``path`` (written by :func:`save`) into the
    structure of the pytree ``like``.

    The format is chosen by the suffix as in :func:`save`. Every leaf of
    ``like`` must be stored under its path with the same shape and dtype,
    and the file must hold no other array; else ValueError, naming the
    missing and unexpected arrays or the array whose shape or dtype
    differs. Returns a pytree of NumPy arrays (``like`` is not changed).

    >>> from tessera import io
    >>> params = [{"w": np.arange(6.0).reshape(2, 3),
    ...            "b": np.zeros(3, np.float32)}]
    >>> io.save("model.npz", params)
    >>> back = io.load("model.npz", params)
    >>> back[0]["w"], back[0]["b"].dtype
    (array([[0., 1., 2.],
           [3., 4., 5.]]), dtype('float32'))
    >>> io.load("model.npz", [{"w": np.zeros((3, 2)),
    ...                        "b": np.zeros(3, np.float32)}])
    Traceback (most recent call last):
        ...
    ValueError: model.npz: '0.w' is float64[2, 3], expected float64[3, 2]
    >>> io.load("model.npz", params + [{"w": np.zeros(1)}])
    Traceback (most recent call last):
        ...
    ValueError: model.npz does not match the parameters: missing ['1.w'], unexpected nothing
    """
    if path.endswith(".safetensors"):
        from safetensors.numpy import load_file
        stored = load_file(path)
    else:
        with np.load(path) as f:
            stored = {k: f[k] for k in f.files}
    expected = _flat(like)
    missing = sorted(set(expected) - set(stored))
    extra = sorted(set(stored) - set(expected))
    if missing or extra:
        raise ValueError(f"{path} does not match the parameters: missing "
                         f"{missing or 'nothing'}, unexpected "
                         f"{extra or 'nothing'}")
    leaves = []
    for name, want in expected.items():
        got = stored[name]
        if got.shape != want.shape or got.dtype != want.dtype:
            raise ValueError(f"{path}: '{name}' is {got.dtype}{list(got.shape)}"
                             f", expected {want.dtype}{list(want.shape)}")
        leaves.append(got)
    _, td = _tree.flatten(like)
    return _tree.unflatten(td, leaves)
