"""Tests of the Python package against independent references: NumPy in
float64 for ops, JAX for derivatives. Run with the build tree on the path
(`ninja -C build check-tessera-python`)."""

import os
import sys

import numpy as np
import pytest

build_python = os.environ.get("TESSERA_PYTHON_PATH")
if build_python and build_python not in sys.path:
    sys.path.insert(0, build_python)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
