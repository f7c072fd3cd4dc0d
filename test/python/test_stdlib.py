"""tessera.stdlib without a GPU: every op compiles (for the shapes the GPU
tests use) to PTX that ptxas accepts for sm_80 and sm_90a, whose SASS runs
the tensor-core instructions the PTX asks for, and bad arguments are
reported before anything runs. gpu/test_stdlib_gpu.py checks
the numbers on a GPU."""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys

import pytest

import tessera as ts
from tessera import stdlib as S
from tessera._kernel import compile_only

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "gpu"))
import test_stdlib_gpu as G  # noqa: E402

PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if os.path.exists(
    "/usr/local/cuda/bin/ptxas") else None)


def _cuobjdump():
    """cuobjdump of the CUDA toolkit or of the nvidia-cuda-cuobjdump wheel
    (python/requirements-test.txt), or None."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        path = os.path.join(root, "cu13", "bin", "cuobjdump")
        if os.path.exists(path):
            return path
    return None


CUOBJDUMP = _cuobjdump()

# The SASS a tensor-core instruction of the PTX must become: HGMMA (16-bit
# and tf32) or QGMMA (fp8) for wgmma, HMMA for mma.sync.
TENSOR_CORE_SASS = {"wgmma.mma_async": ("HGMMA.", "QGMMA."),
                    "mma.sync.aligned": ("HMMA.",)}


def fake(shape, dtype):
    return ts.cuda.empty(shape, dtype)


@pytest.mark.parametrize("chip", ["sm_80", "sm_90a"])
def test_every_op_compiles_and_ptxas_accepts_it(chip, tmp_path, monkeypatch):
    cache = tmp_path / "kernels"
    monkeypatch.setenv("TESSERA_KERNEL_CACHE", str(cache))
    with compile_only(chip):
        G._calls(fake, chip)
    entries = [json.loads((cache / f).read_text())
               for f in sorted(os.listdir(cache)) if f.endswith(".json")]
    kernels = {e["kernel"] for e in entries}
    expected = {"softmax_rows", "softmax_rows_long", "layernorm_fwd",
                "layernorm_bwd", "rmsnorm_fwd", "rmsnorm_bwd", "column_sums",
                "cross_entropy_fwd", "cross_entropy_bwd", "adamw_step",
                "rotary", "gemm", "flash_attention_fwd"}
    if chip == "sm_90a":
        expected.add("gemm_bt")
    assert expected <= kernels, expected - kernels
    assert all(e["chip"] == chip for e in entries)
    if PTXAS is None:
        pytest.skip("ptxas (CUDA toolkit) not installed")
    assert CUOBJDUMP, ("cuobjdump not found: python/requirements-test.txt "
                       "installs it (nvidia-cuda-cuobjdump)")
    # The tensor-core kernels use wgmma on sm_90a (each in some variant:
    # f32 products without tf32 stay on FMAs).
    if chip == "sm_90a":
        for name in ("gemm", "gemm_bt", "flash_attention_fwd",
                     "flash_attention_bwd_dkdv", "flash_attention_bwd_dq"):
            assert any("wgmma.mma_async" in (cache / (e["key"] + ".ptx"))
                       .read_text() for e in entries if e["kernel"] == name), \
                name
    # ptxas on every compiled variant (the autotune spaces' included), as
    # many at once as there are cores; in the SASS of each, the tensor-core
    # instructions its PTX asks for (HGMMA for wgmma, HMMA for mma.sync:
    # ptxas did not fall back).
    def assemble(e):
        ptx = cache / (e["key"] + ".ptx")
        cubin = tmp_path / (e["key"] + ".cubin")
        out = subprocess.run([PTXAS, f"-arch={chip}", str(ptx), "-o",
                              str(cubin)], capture_output=True, text=True)
        if out.returncode != 0:
            return e["kernel"], out.stderr
        wanted = [sass for instr, sass in TENSOR_CORE_SASS.items()
                  if instr in ptx.read_text()]
        if wanted:
            sass = subprocess.run([CUOBJDUMP, "-sass", str(cubin)],
                                  capture_output=True, text=True).stdout
            missing = [w for w in wanted
                       if not any(name in sass for name in w)]
            if missing:
                return e["kernel"], f"no {missing} in the SASS"
            return e["kernel"], wanted
        return None

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        results = [r for r in pool.map(assemble, entries) if r]
    failed = [r for r in results if isinstance(r[1], str)]
    assert not failed, failed[:3]
    checked = {k for k, _ in results}
    assert {"gemm", "flash_attention_fwd"} <= checked, checked


def test_bad_arguments_are_reported_before_anything_runs():
    with compile_only("sm_90a"):
        x = fake((4, 300), "f32")
        with pytest.raises(ts.TesseraError, match=r"weight must have shape "
                                                  r"\[300\], got \[299\]"):
            S.rmsnorm(x, fake((299,), "f32"))
        with pytest.raises(ts.TesseraError, match="inner dims 300 and 5"):
            S.gemm(fake((4, 300), "bf16"), fake((5, 2), "bf16"))
        with pytest.raises(ts.TesseraError, match=r"batched gemm of "
                           r"bf16\[3, 4, 8\] and bf16\[2, 8, 5\]: expected"):
            S.gemm(fake((3, 4, 8), "bf16"), fake((2, 8, 5), "bf16"))
        with pytest.raises(ts.TesseraError, match=r"\[Z, N, K\] of one "
                                                  r"dtype"):
            S.gemm(fake((3, 4, 8), "bf16"), fake((3, 5, 7), "bf16"),
                   transposed_b=True)
        with pytest.raises(ts.TesseraError, match="a batched gemm takes bf16, "
                                                  "f16 or f32"):
            S.gemm(fake((3, 4, 8), "f8E4M3FN"), fake((3, 5, 8), "f8E4M3FN"))
        with pytest.raises(ts.TesseraError, match=r"matrices \(\[M, K\]\) or "
                                                  r"batches"):
            S.gemm(fake((2, 3, 4, 8), "bf16"), fake((8, 5), "bf16"))
        with pytest.raises(ts.TesseraError, match="head dim 64 or 128, got 96"):
            q = fake((1, 2, 64, 96), "bf16")
            S.flash_attention_2(q, q, q)
        with pytest.raises(ts.TesseraError, match="the schedule's head dim "
                           "d = 128 differs from the tensors' head dim 64"):
            q = fake((1, 2, 64, 64), "bf16")
            S.flash_attention_2.with_schedule(ts.Schedule(
                block=(128, 64), warps=8, stages=2, d=128))(q, q, q)
        with pytest.raises(ts.TesseraError, match="i32 labels"):
            S.cross_entropy(fake((4, 10), "f32"), fake((4,), "i64"))
        with pytest.raises(ts.TesseraError, match="cos and sin must be"):
            S.rotary_embedding(fake((1, 8, 2, 64), "bf16"),
                               fake((8, 31), "f32"), fake((8, 32), "f32"))
        with pytest.raises(ts.TesseraError, match="must be a float tensor"):
            S.stable_softmax(fake((4, 8), "i32"))
        with pytest.raises(ts.TesseraError, match="step counts from 1"):
            S.fused_adam(*(fake((8,), "f32") for _ in range(4)), lr=1.0,
                         step=0)
        with pytest.raises(ts.TesseraError,
                           match="rows of up to 16384 elements"):
            S.rmsnorm(fake((2, 20000), "f32"), fake((20000,), "f32"))
        with pytest.raises(ts.TesseraError, match="out must be bf16"):
            S.stable_softmax(fake((4, 8), "bf16"), out=fake((4, 8), "f32"))
        with pytest.raises(ts.TesseraError, match="NumPy array"):
            import numpy as np
            S.stable_softmax(np.zeros((4, 8), np.float32))
    with pytest.raises(TypeError, match="with_schedule takes a ts.Schedule"):
        S.gemm.with_schedule((128, 128))


def test_with_schedule_overrides_the_tuned_choice(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_KERNEL_CACHE", str(tmp_path / "kernels"))
    s = ts.Schedule(block=(64, 128), k=32, warps=4, stages=3, group=4)
    op = S.gemm.with_schedule(s)
    assert repr(op) == "<tessera.stdlib.gemm>"
    with compile_only("sm_90a"):
        c = op(fake((256, 128), "bf16"), fake((128, 256), "bf16"))
    assert c.shape == (256, 256) and c.dtype == ts.bf16
    # The kernel the op launched is the one compiled with that schedule.
    variant = S._kernels.gemm._variants[s]
    assert any(k[2] == s.key() and k[3] == "sm_90a"
               for k in variant._compiled)
    text = S._kernels.gemm.with_schedule(s).lower(ts.bf16, ts.bf16, ts.bf16)
    assert "tensor<64x128xf32>" in text and "ttile.num_warps = 4" in text
    assert "stages 3" in text
