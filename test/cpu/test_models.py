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


def test_kv_cache_decode_steps(tmp_path):
    # examples/kv_decode.mlir, one token per call, the cache saved by each
    # call and passed to the next: each step's output is the new token's
    # attention over all tokens so far (float64 NumPy).
    import subprocess
    from harness import TESSERA_RUN, run_env

    rng = np.random.default_rng(3)
    b, steps = 2, 6
    q, k, v = (rng.standard_normal((steps, b, 8, 1, 64)).astype(np.float32) for _ in range(3))
    state = [np.zeros((b, 8, 128, 64), np.float32), np.zeros((b, 8, 128, 64), np.float32),
             np.zeros(2, np.int64)]
    source = ROOT / "examples" / "kv_decode.mlir"
    for t in range(steps):
        args = [TESSERA_RUN, str(source), "--out-dir", str(tmp_path)]
        for i, a in enumerate(state + [q[t], k[t], v[t]]):
            np.save(tmp_path / f"in{i}.npy", a)
            args += ["--input", str(tmp_path / f"in{i}.npy")]
        proc = subprocess.run(args, capture_output=True, text=True, env=run_env())
        assert proc.returncode == 0, proc.stderr
        state = [np.load(tmp_path / f"arg{i}.npy") for i in range(3)]
        (out,) = [np.load(tmp_path / "out0.npy")]
        keys = k[: t + 1, :, :, 0].astype(np.float64).transpose(1, 2, 0, 3)  # [B, 8, t+1, 64]
        vals = v[: t + 1, :, :, 0].astype(np.float64).transpose(1, 2, 0, 3)
        s = q[t].astype(np.float64) @ np.swapaxes(keys, -1, -2) / 8.0
        p = np.exp(s - s.max(-1, keepdims=True))
        ref = (p / p.sum(-1, keepdims=True)) @ vals
        assert_close(out, ref, np.float32, 64)
        assert list(state[2]) == [t + 1, 0]
