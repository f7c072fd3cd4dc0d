"""ts.jit(device="cuda") without a GPU: the graph listing, every GPU test
program compiled by the C++ GPU pipeline for sm_90a and sm_80, attention
kept whole for the flash kernels, and the errors for what has no GPU
lowering, bad devices and bad arguments."""

import os
import re
import sys

import numpy as np
import pytest

import tessera as ts
from tessera import op

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "gpu"))
import jit_programs  # noqa: E402


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
    assert "test_jit_gpu_compile.py" in red["loc"]


@pytest.mark.parametrize("chip", ["sm_90a", "sm_80"])
def test_programs_compile_for_the_card(chip):
    """Each program of the GPU tests becomes a GPU program file for the
    chip: its header, and the chip named in it."""
    for name, (fn, args) in jit_programs.cases().items():
        data = fn.lower(*args).compile_gpu(chip)
        assert data[:8] == b"TSGPUPRG", name
        assert chip.encode() in data, name


def test_attention_stays_whole_for_the_flash_kernels():
    """bf16 attention of head dim 64 and its gradient launch the stdlib's
    flash-attention kernels; f32, or a head dim the kernels lack, is
    expanded into products and a softmax."""
    fn, args = jit_programs.cases()["attention_grad"]
    text = fn.lower(*args).as_text("gpu_kernels")
    assert "flash_attention_fwd_bf16_d64_causal" in text
    assert "flash_attention_bwd_dq_bf16_d64_causal" in text
    import ml_dtypes
    for dt, d in ((np.float32, 64), (ml_dtypes.bfloat16, 32)):
        x = np.ones((2, 4, 16, d), dt)
        lowered = ts.jit(lambda q: op.attention(q, q, q)).lower(x)
        text = lowered.as_text("gpu_groups")
        assert "tsched.group attention" not in text
        assert "tgraph.matmul" in text
        assert lowered.compile_gpu("sm_90a")[:8] == b"TSGPUPRG"


def test_unsupported_op_names_the_op_and_the_line():
    def f(x, w):
        return op.conv2d(x, w)

    lowered = ts.jit(f, device="cuda").lower(
        np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32))
    with pytest.raises(ts.TesseraError) as e:
        lowered.compile_gpu("sm_90a")
    assert "'tgraph.conv2d'" in str(e.value)
    assert "test_jit_gpu_compile.py" in str(e.value)
    assert "no GPU lowering for it yet" in str(e.value)


def test_bad_device_and_argument_errors():
    with pytest.raises(ts.TesseraError, match="'cpu' or 'cuda"):
        ts.jit(lambda x: x, device="tpu")
    with pytest.raises(ts.TesseraError, match="compiled for the CPU"):
        ts.jit(lambda x: x).gpu_program(np.ones(3, np.float32))
    with pytest.raises(ts.TesseraError, match="'cuda' or 'cuda:K'"):
        ts.GpuProgram(b"", "gpu")
    f = ts.jit(lambda x: op.exp(x), device="cuda")
    x = np.ones((4, 4), np.float32)
    if not ts.cuda.is_available():
        # Traced and compiled; loading it says what the machine lacks.
        with pytest.raises(ts.TesseraError, match="CUDA"):
            f(x)
        return
    prog = f.gpu_program(x)
    with pytest.raises(ts.TesseraError, match="takes 1 arguments, got 2"):
        prog(x, x)
    with pytest.raises(ts.TesseraError, match=r"argument 0 must be f32\[4, 4\]"):
        prog(np.ones((4, 5), np.float32))
    np.testing.assert_allclose(f(x).numpy(), np.exp(x), rtol=1e-6)


def _weight_grad():
    """A weight gradient X^T dY, [1024, 1024] over 16384 tokens: the
    estimate splits K in 4 (128x256 tiles); its autotune space has other
    tiles and splits."""
    import ml_dtypes
    x = np.zeros((16384, 1024), ml_dtypes.bfloat16)
    return ts.jit(lambda x, dy: op.matmul(x, dy, transpose_lhs=True)).lower(
        x, x)


def test_autotune_variants_and_tuning_files(tmp_path):
    lowered = _weight_grad()
    default = lowered.compile_gpu("sm_90a")
    assert b"block(128, 256).k(64).warps(8).stages(4).split(4)" in default
    keys = set(re.findall(rb"gemm-[0-9a-f]{16}", default))
    assert len(keys) == 1, keys
    key = keys.pop().decode()
    # Variant N builds candidate N of the space (the estimate's order).
    second = lowered.compile_gpu("sm_90a", variant=1)
    assert b"block(128, 128).k(64).warps(8).stages(6).split(2)" in second
    assert key.encode() in second  # the key does not depend on the choice
    # A tuning file's schedule for the key is built ...
    tuned = tmp_path / "tuning.txt"
    tuned.write_text(f"# tuned\n{key} "
                     "block(128, 128).k(64).warps(8).stages(6).split(4)"
                     "  # 90.0 us\n")
    data = lowered.compile_gpu("sm_90a", tuning=str(tuned))
    assert b"block(128, 128).k(64).warps(8).stages(6).split(4)" in data
    # ... unless it is not in the product's space (a stale entry), or the
    # file is about other products.
    for text in [f"{key} block(16, 16).k(16).warps(4).stages(1)\n",
                 "gemm-0123456789abcdef block(64, 128).k(64)\n"]:
        tuned.write_text(text)
        assert lowered.compile_gpu("sm_90a", tuning=str(tuned)) == default
    # A malformed file names the line; a missing one is an error too.
    tuned.write_text(f"{key} block(128, 128)\nnot a line\n")
    with pytest.raises(ts.TesseraError, match=r"tuning.txt:2: expected "
                       r"'KEY SCHEDULE'"):
        lowered.compile_gpu("sm_90a", tuning=str(tuned))
    with pytest.raises(ts.TesseraError, match="cannot read the tuning file"):
        lowered.compile_gpu("sm_90a", tuning=str(tmp_path / "missing.txt"))


def test_autotune_needs_a_gpu_device():
    with pytest.raises(ts.TesseraError, match="needs device='cuda'"):
        ts.jit(lambda x: x, autotune=True)


def test_autotuning_starts_its_tuning_file(tmp_path):
    """Autotuning from an empty cache: the tuning file is created and the
    variants compiled; without a GPU the timing is what fails, saying so
    (with one, the file gains the product's choice)."""
    lowered = _weight_grad()
    tuning = tmp_path / "gpu" / "tuning.txt"
    tuning.parent.mkdir()
    if ts.cuda.is_available():
        data = lowered.compile_gpu("sm_90a", tuning=str(tuning),
                                   autotune_device=0)
        assert data[:8] == b"TSGPUPRG"
        assert "gemm-" in tuning.read_text()
        return
    with pytest.raises(ts.TesseraError, match="autotuning @"):
        lowered.compile_gpu("sm_90a", tuning=str(tuning), autotune_device=0)
    assert tuning.read_text().startswith("# Tessera tuned schedules")
    # Variants ignore a tuning file: they are what a tuner compares.
    key = re.search(r"gemm-[0-9a-f]{16}",
                    lowered.compile_gpu("sm_90a").decode("latin-1")).group()
    tuning.write_text(f"{key} block(128,128).k(64).warps(8).stages(6).split(4)\n")
    assert (lowered.compile_gpu("sm_90a", variant=1, tuning=str(tuning))
            == lowered.compile_gpu("sm_90a", variant=1))
    # A chain written another way still names the same schedule.
    assert b"block(128, 128).k(64).warps(8).stages(6).split(4)" in \
        lowered.compile_gpu("sm_90a", tuning=str(tuning))


def test_a_tuning_file_that_knows_the_products_needs_no_gpu(tmp_path):
    """With every product's choice in the file, autotuning compiles at
    once (no device is touched: without a GPU it still compiles); a choice
    that left the product's space is stale and tuned again."""
    lowered = _weight_grad()
    key = re.search(r"gemm-[0-9a-f]{16}",
                    lowered.compile_gpu("sm_90a").decode("latin-1")).group()
    tuning = tmp_path / "tuning.txt"
    tuning.write_text(
        f"{key} block(128, 128).k(64).warps(8).stages(6).split(2)  # 90 us\n")
    data = lowered.compile_gpu("sm_90a", tuning=str(tuning), autotune_device=0)
    assert b"block(128, 128).k(64).warps(8).stages(6).split(2)" in data
    tuning.write_text(f"{key} block(16, 16).k(16).warps(4).stages(1)\n")
    if ts.cuda.is_available():  # tuned again: the entry is replaced
        lowered.compile_gpu("sm_90a", tuning=str(tuning), autotune_device=0)
        assert "block(16, 16)" not in tuning.read_text()
        return
    with pytest.raises(ts.TesseraError, match="autotuning @"):
        lowered.compile_gpu("sm_90a", tuning=str(tuning), autotune_device=0)
