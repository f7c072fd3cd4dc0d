"""Whole programs from the C++ GPU pipeline, run by the runtime alone: each
GPU program file that `host_programs.py --precompile` wrote (set
TESSERA_HOST_PROGRAMS to its folder) is loaded with
tessera._cuda.HostProgram, run on its inputs and compared with the
outputs the CPU computed (float64 NumPy references for attention); a
run replayed as a CUDA graph gives the same bits."""

import json
import os

import numpy as np
import pytest

import tessera as ts
from host_programs import reencode

DIR = os.environ.get("TESSERA_HOST_PROGRAMS")

pytestmark = pytest.mark.skipif(
    DIR is None or not ts.cuda.is_available(),
    reason="needs a GPU and TESSERA_HOST_PROGRAMS")


def _cases():
    if DIR is None:
        return []
    with open(os.path.join(DIR, "cases.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("case", _cases())
def test_host_program(case):
    from tessera import _cuda
    d = os.path.join(DIR, case)
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    program = _cuda.HostProgram.load_file(os.path.join(d, "program.tgpu"))
    args = [_cuda.Buffer.from_host(
        np.ascontiguousarray(np.load(os.path.join(d, f"in{i}.npy"))), t)
        for i, t in enumerate(meta["inputs"])]
    first = [o.to_host() for o in program.run(args)]
    # The second run builds the program's CUDA graph on other buffers
    # (zeros, kept alive so that their addresses stay taken); the third
    # replays it on the arguments, whose addresses every node that reads
    # or writes them must have been given again.
    others = [_cuda.Buffer.zeros(t, list(a.shape))
              for a, t in zip(args, meta["inputs"])]
    program.run(others)
    again = [o.to_host() for o in program.run(args)]
    if program.launches:
        assert program.graph_failure is None, program.graph_failure
        assert program.graph_runs == 2
    assert len(first) == len(meta["outputs"])
    tol = meta.get("tolerance", 2e-4)
    for j, (got, rerun) in enumerate(zip(first, again)):
        want = np.load(os.path.join(d, f"want{j}.npy"))
        assert got.shape == want.shape, (case, j, got.shape, want.shape)
        np.testing.assert_array_equal(got, rerun, err_msg=f"{case}: rerun")
        if meta["outputs"][j] == "bf16":  # bit patterns
            got = (got.astype(np.uint32) << 16).view(np.float32)
        if want.dtype not in (np.float32, np.float64):
            np.testing.assert_array_equal(got, want, err_msg=case)
            continue
        w64, g64 = want.astype(np.float64), got.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g64), np.isnan(w64),
                                      err_msg=f"{case}: NaNs differ")
        finite = np.isfinite(w64)
        scale = np.abs(w64[finite]).max() if finite.any() else 1.0
        err = np.abs(g64[finite] - w64[finite]).max() if finite.any() \
            else 0.0
        assert err <= tol * max(scale, 1.0), (case, j, err, scale)


def test_programs_check_their_chip_and_arguments():
    from tessera import _cuda
    case = next(c for c in _cases() if c.startswith("classifier"))
    d = os.path.join(DIR, case)
    with open(os.path.join(d, "program.tgpu"), "rb") as f:
        data = f.read()
    with pytest.raises(ts.TesseraError,
                       match=r"was compiled for sm_100a only; the device is "
                             r"sm_90"):
        _cuda.HostProgram.load(reencode(data, chip="sm_100a"))
    # An older chip's PTX runs on newer ones.
    _cuda.HostProgram.load(reencode(data, chip="sm_80"))
    program = _cuda.HostProgram.load(data)
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    args = [_cuda.Buffer.from_host(
        np.ascontiguousarray(np.load(os.path.join(d, f"in{i}.npy"))), t)
        for i, t in enumerate(meta["inputs"])]
    with pytest.raises(ts.TesseraError, match=r"takes 6 arguments, got 5"):
        program.run(args[:5])
    wrong = list(args)
    wrong[4] = _cuda.Buffer.zeros("f32", [3, 784])
    with pytest.raises(ts.TesseraError,
                       match=r"argument 4 must be f32\[\d+, 784\], got "
                             r"f32\[3, 784\]"):
        program.run(wrong)
    wrong[4] = _cuda.Buffer.zeros("f16", list(args[4].shape))
    with pytest.raises(ts.TesseraError, match=r"argument 4 must be f32"):
        program.run(wrong)
    # Nothing was lost: the program still runs.
    assert len(program.run(args)) == 5


def test_replay_can_be_turned_off(monkeypatch):
    """TESSERA_CUDA_GRAPHS=0 (read at load) launches every run step by
    step, with the same bits as the replayed runs."""
    from tessera import _cuda
    case = next(c for c in _cases() if c.startswith("classifier"))
    d = os.path.join(DIR, case)
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    args = [_cuda.Buffer.from_host(
        np.ascontiguousarray(np.load(os.path.join(d, f"in{i}.npy"))), t)
        for i, t in enumerate(meta["inputs"])]
    path = os.path.join(d, "program.tgpu")
    replayed = _cuda.HostProgram.load_file(path)
    want = [[o.to_host() for o in replayed.run(args)] for _ in range(3)][-1]
    assert replayed.graph_runs == 2
    monkeypatch.setenv("TESSERA_CUDA_GRAPHS", "0")
    stepped = _cuda.HostProgram.load_file(path)
    for _ in range(3):
        got = [o.to_host() for o in stepped.run(args)]
    assert stepped.graph_runs == 0
    assert "TESSERA_CUDA_GRAPHS=0" in stepped.graph_failure
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
