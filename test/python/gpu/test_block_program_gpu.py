"""The bf16 transformer-block training step compiled by the C++ pipeline
(`bench/gpu/jit_block_bench.py --precompile CHIP DIR --batch B` writes
DIR/program.tgpu; set TESSERA_BLOCK_PROGRAMS to a folder of such DIRs),
run by the runtime's HostProgram alone: its loss and every parameter
gradient against jax.jit of the same block in float32 on the same
bf16-rounded values (XLA attention), and the same bits on a second run, in
a second process, and from the same step written with the C++ API
(program_cpp.tgpu, from examples/cpp/transformer_block.cpp)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tessera as ts

DIR = os.environ.get("TESSERA_BLOCK_PROGRAMS")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "bench", "gpu"))

pytestmark = pytest.mark.skipif(
    DIR is None or not ts.cuda.is_available(),
    reason="needs a GPU and TESSERA_BLOCK_PROGRAMS")


def _cases():
    if DIR is None:
        return []
    return sorted(d for d in os.listdir(DIR)
                  if os.path.exists(os.path.join(DIR, d, "program.tgpu")))


@pytest.mark.parametrize("case", _cases())
def test_block_step_matches_jax_float32(case):
    pytest.importorskip("jax")
    import jit_block_bench as jb
    from tessera import _cuda
    d = os.path.join(DIR, case)
    with open(os.path.join(d, "block_shape.json")) as f:
        shape = json.load(f)
    values = jb.arrays(shape["batch"], shape["seq"])
    program = _cuda.HostProgram.load_file(os.path.join(d, "program.tgpu"))
    args = [_cuda.Buffer.from_host(np.ascontiguousarray(v).view(np.uint16),
                                   "bf16") for v in values.values()]
    first = [o.to_host() for o in program.run(args)]
    again = [o.to_host() for o in program.run(args)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b, err_msg="a second run differs")

    def f32(a):  # bf16 results come back as bit patterns
        return (a.astype(np.uint32) << 16).view(np.float32) \
            if a.dtype == np.uint16 else a.astype(np.float32)

    got = [f32(a) for a in first]
    step, jp, jx = jb.jax_step(
        {k: v.astype(np.float32) for k, v in values.items()}, "xla")
    loss, grads = step(jp, jx)
    names = [k for k in values if k != "x"]
    assert len(got) == 1 + len(names)
    np.testing.assert_allclose(got[0], float(loss), rtol=1e-3)
    for name, g in zip(names, got[1:]):
        ref = np.asarray(grads[name], np.float64)
        assert g.shape == ref.shape, name
        # bf16 storage of every activation and gradient: errors of a few
        # parts in a thousand of the largest gradient.
        err = np.abs(g - ref).max() / np.abs(ref).max()
        assert err < 2e-2, (name, err)


def _run(path, values):
    """The outputs of the program file at `path` on `values`, as host
    arrays (bf16 as bit patterns)."""
    from tessera import _cuda
    program = _cuda.HostProgram.load_file(path)
    args = [_cuda.Buffer.from_host(np.ascontiguousarray(v).view(np.uint16),
                                   "bf16") for v in values.values()]
    return [o.to_host() for o in program.run(args)]


@pytest.mark.parametrize("case", _cases())
def test_block_step_has_the_same_bits_from_cpp_and_in_another_process(
        case, tmp_path):
    import jit_block_bench as jb
    d = os.path.join(DIR, case)
    cpp = os.path.join(d, "program_cpp.tgpu")
    assert os.path.exists(cpp), (
        f"{d} lacks program_cpp.tgpu: tools/scripts/python-gpu-bundle.sh "
        f"writes it with examples/cpp/transformer_block")
    with open(os.path.join(d, "block_shape.json")) as f:
        shape = json.load(f)
    values = jb.arrays(shape["batch"], shape["seq"])
    python = _run(os.path.join(d, "program.tgpu"), values)
    names = ["loss"] + [k for k in values if k != "x"]
    for name, a, b in zip(names, python, _run(cpp, values)):
        np.testing.assert_array_equal(a, b, err_msg=f"C++ step: {name}")

    # A second process runs the Python step's file and saves its outputs.
    script = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        f"sys.path.insert(0, {os.path.dirname(jb.__file__)!r})\n"
        "import jit_block_bench as jb, test_block_program_gpu as t\n"
        f"out = t._run({os.path.join(d, 'program.tgpu')!r}, "
        f"jb.arrays({shape['batch']}, {shape['seq']}))\n"
        f"np.savez({str(tmp_path / 'out.npz')!r}, *out)\n")
    subprocess.run([sys.executable, "-c", script], check=True,
                   env=dict(os.environ))
    with np.load(tmp_path / "out.npz") as other:
        for i, name in enumerate(names):
            np.testing.assert_array_equal(python[i], other[f"arr_{i}"],
                                          err_msg=f"second process: {name}")


@pytest.mark.parametrize("case", _cases())
def test_autotuning_the_block_step(case):
    """The runtime's tuner on the step's variants (--precompile
    --variants): a schedule for every product of the step, one of that
    product's candidates, with its time."""
    import re
    from tessera import _cuda
    d = os.path.join(DIR, case)
    paths = sorted(os.path.join(d, f) for f in os.listdir(d)
                   if f.startswith("variant"))
    assert len(paths) >= 2, (
        f"{d} lacks the variants (jit_block_bench.py --precompile "
        f"--variants, as tools/scripts/python-gpu-bundle.sh runs it)")
    text = _cuda.tune_programs(paths, reps=3)
    with open(os.path.join(d, "program.tgpu"), "rb") as f:
        keys = set(re.findall(rb"gemm-[0-9a-f]{16}", f.read()))
    variants = [open(p, "rb").read() for p in paths]
    lines = [line for line in text.splitlines() if line.startswith("gemm-")]
    assert {line.split()[0].encode() for line in lines} == keys
    for line in lines:
        key, rest = line.split(" ", 1)
        schedule, note = rest.split("  # ")
        assert any(schedule.encode() in v for v in variants), line
        assert note.endswith(" us") and float(note[:-3]) > 0, line
