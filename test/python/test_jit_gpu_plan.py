"""ts.jit(device="cuda") without a GPU: the listing of the optimized graph,
the launch plan, its kernels compiled for sm_90a and sm_80 (ptxas checks
each), saving and loading, and the errors for what has no GPU lowering."""

import json
import os
import shutil
import sys

import numpy as np
import pytest

import tessera as ts
from tessera import op
from tessera._gpu_graph import GpuProgram
from tessera._kernel import compile_only

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "gpu"))
import jit_programs  # noqa: E402


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_KERNEL_CACHE", str(tmp_path / "kcache"))


def test_list_graph_numbers_values_and_converts_attributes():
    def f(x, w):
        return op.reduce_sum(op.matmul(x, w, transpose_rhs=True), axis=1)

    j = ts.jit(f, device="cuda")
    ctx, fn, _ = j._trace((np.ones((4, 8), np.float32),
                           np.ones((3, 8), np.float32)), concrete=True)
    g = ctx.module.list_graph(fn.name)
    assert g["name"] == fn.name
    names = [o["op"] for o in g["ops"]]
    assert names == ["tgraph.matmul", "tgraph.reduce_sum"]
    mm, red = g["ops"]
    assert mm["operands"] == g["arguments"]
    assert mm["attrs"]["transpose_rhs"] is True
    assert red["attrs"]["dims"] == (1,)
    assert g["shapes"][mm["results"][0]] == (4, 3)
    assert g["shapes"][red["results"][0]] == (4,)
    assert g["dtypes"][red["results"][0]] == "f32"
    assert g["results"] == red["results"]
    assert "test_jit_gpu_plan.py" in red["loc"]


@pytest.mark.parametrize("chip", ["sm_90a", "sm_80"])
def test_programs_compile_for_the_card(chip):
    if shutil.which("ptxas") is None and not os.path.exists(
            "/usr/local/cuda/bin/ptxas"):
        pytest.skip("no ptxas")
    for name, (fn, args) in jit_programs.cases().items():
        prog = fn.gpu_program(*args)
        kinds = {type(s).__name__ for s in prog.steps}
        assert "Generated" in kinds or name == "bf16_mlp", (name, kinds)
        with compile_only(chip):
            outs = prog(*jit_programs.flat_arrays(args))
        assert len(outs) == len(prog.listing["results"])


def test_attention_and_its_gradient_run_as_flash_attention():
    # bf16 attention of head dim 64 and its VJP stay whole in the listing;
    # the backward step reads the forward step's log-sum-exp.
    fn, args = jit_programs.cases()["attention_grad"]
    prog = fn.gpu_program(*args)
    names = [o["op"] for o in prog.listing["ops"]]
    assert names.count("tgraph.attention") == 1
    assert names.count("tgraph.attention_grad") == 1
    assert "tgraph.softmax" not in names and "tgraph.exp" not in names
    fwd = [s for s in prog.steps if type(s).__name__ == "Attention"]
    bwd = [s for s in prog.steps if type(s).__name__ == "AttentionGrad"]
    assert len(fwd) == len(bwd) == 1
    assert bwd[0].lse == fwd[0].outputs[1] and fwd[0].causal
    # f32, or a head dim the kernels lack: expanded into products.
    for dtype, d in (("f32", 64), ("bf16", 32)):
        import ml_dtypes
        dt = ml_dtypes.bfloat16 if dtype == "bf16" else np.float32
        x = np.ones((2, 4, 16, d), dt)
        p = ts.jit(lambda q: op.attention(q, q, q), device="cuda") \
            .gpu_program(x)
        names = [o["op"] for o in p.listing["ops"]]
        assert "tgraph.attention" not in names and "tgraph.matmul" in names


def test_normalization_fuses_into_one_kernel():
    def f(x, s, b):
        return op.layernorm(x, s, b)

    prog = ts.jit(f, device="cuda").gpu_program(
        np.ones((32, 100), np.float32), np.ones(100, np.float32),
        np.zeros(100, np.float32))
    assert [type(s).__name__ for s in prog.steps] == ["Generated"]
    assert prog.steps[0].schedule.n == 128   # whole rows, masked


def test_save_and_load_round_trip(tmp_path):
    fn, args = jit_programs.cases()["mlp_grad"]
    prog = fn.gpu_program(*args)
    path = tmp_path / "p.json"
    prog.save(path)
    again = GpuProgram.load(path)
    assert [type(s).__name__ for s in again.steps] == \
        [type(s).__name__ for s in prog.steps]
    # Generated kernels are named by their text: a plan rebuilt elsewhere
    # (another process, another order) finds them in the kernel cache.
    names = [s.kernel.__name__ for s in prog.steps if hasattr(s, "kernel")]
    assert names and names == [s.kernel.__name__ for s in again.steps
                               if hasattr(s, "kernel")]
    assert again.listing["shapes"] == [list(s) for s in
                                       prog.listing["shapes"]] or \
        again.listing["shapes"] == prog.listing["shapes"]


def test_load_rejects_damaged_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ts.TesseraError, match="cannot read GPU program"):
        GpuProgram.load(bad)
    bad.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ts.TesseraError, match="is not a tessera.gpu_program"):
        GpuProgram.load(bad)


def test_unsupported_op_names_the_op_and_the_line():
    def f(x, w):
        return op.conv2d(x, w)

    j = ts.jit(f, device="cuda")
    with pytest.raises(ts.TesseraError) as e:
        j.gpu_program(np.ones((1, 2, 5, 5), np.float32),
                      np.ones((3, 2, 3, 3), np.float32))
    assert "tgraph.conv2d" in str(e.value)
    assert "test_jit_gpu_plan.py" in str(e.value)
    assert "no GPU lowering" in str(e.value)


def test_bad_device_and_argument_errors():
    with pytest.raises(ts.TesseraError, match="'cpu' or 'cuda"):
        ts.jit(lambda x: x, device="tpu")
    prog = ts.jit(lambda x: op.exp(x), device="cuda").gpu_program(
        np.ones((4, 4), np.float32))
    with pytest.raises(ts.TesseraError, match="takes 1 arrays, got 2"):
        prog(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32))
    with pytest.raises(ts.TesseraError, match="compiled for the CPU"):
        ts.jit(lambda x: x).gpu_program(np.ones(3, np.float32))


def test_long_rows_are_cut_into_equal_segments():
    # A divisor of the row length, segments of at least 4096 elements,
    # about `programs` programs over all rows; empty tensors take one.
    from tessera._gpu_kernels import LongRows
    assert LongRows(0, 1, 1, 300300, "sum", 1.0).parts_for(528) == 70
    assert LongRows(0, 1, 2, 1 << 21, "sum", 1.0).parts_for(528) == 256
    assert LongRows(0, 1, 600, 1 << 21, "max", 1.0).parts_for(528) == 1
    assert LongRows(0, 1, 0, 20000, "sum", 1.0).parts_for(528) == 1
    assert LongRows(0, 1, 1, 40961, "sum", 1.0).parts_for(528) == 1  # prime


def test_the_compiler_pipeline_is_chosen_by_name(monkeypatch):
    """TESSERA_GPU_PIPELINE picks the path of jit(device="cuda"): a bad
    value is refused by name; 'compiler' compiles through the C++ GPU
    pipeline (here, without a GPU, it says why it cannot load)."""
    from tessera._jit import _gpu_pipeline
    f = ts.jit(lambda x: op.relu(x) * 2.0, device="cuda")
    x = np.ones((4, 8), np.float32)
    monkeypatch.delenv("TESSERA_GPU_PIPELINE", raising=False)
    assert _gpu_pipeline() == "planner"
    monkeypatch.setenv("TESSERA_GPU_PIPELINE", "fast")
    with pytest.raises(ts.TesseraError,
                       match="TESSERA_GPU_PIPELINE must be 'planner' or "
                             "'compiler', got 'fast'"):
        _gpu_pipeline()
    monkeypatch.setenv("TESSERA_GPU_PIPELINE", "compiler")
    assert _gpu_pipeline() == "compiler"
    if ts.cuda.is_available():
        out = f(x)
        np.testing.assert_array_equal(out.numpy(), np.full((4, 8), 2.0))
    else:
        with pytest.raises(ts.TesseraError, match="CUDA"):
            f(x)
