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
    """Writes the arrays of ``params`` under their pytree paths
    ("layers.0.w"). The file is replaced atomically."""
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
    """Reads a checkpoint into the structure of ``like``; every array must be
    present with ``like``'s shape and dtype."""
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
