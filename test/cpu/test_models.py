"""Whole models compiled for the CPU against float64 NumPy references."""

import pathlib
import sys

import numpy as np
import pytest

from harness import assert_close, run

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import transformer_block  # noqa: E402


@pytest.mark.parametrize("b,s", [(1, 1), (2, 7), (1, 33)])
def test_transformer_block(b, s):
    # examples/transformer_block.mlir: rmsnorm, QKV projections of
    # [B, S, 512] activations, 8-head causal attention, output projection,
    # gelu MLP, residuals; sequence lengths of 1, odd, past a register tile.
    rng = np.random.default_rng(7)
    x = rng.standard_normal((b, s, 512)).astype(np.float32)
    weights = transformer_block.random_weights(rng, np.float32)
    mlir = (ROOT / "examples" / "transformer_block.mlir").read_text()
    (y,) = run(mlir, [x] + weights, fn="block")
    ref = transformer_block.block(*(a.astype(np.float64) for a in [x] + weights))
    # f32 through about 2 * 512 + 2048 terms per output: a few hundred ulps.
    assert_close(y, ref, np.float32, 64)
