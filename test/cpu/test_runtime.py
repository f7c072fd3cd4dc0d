"""The runtime as users meet it: libraries compiled ahead of time and run
by an application that links only the runtime, the in-process JIT, thread
control, and clear errors for bad arguments."""

import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

from harness import CACHE_DIR, TESSERA_RUN, run_env

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(TESSERA_RUN).resolve().parents[1]
EXAMPLE = os.environ.get("TESSERA_EXAMPLE_RUN_COMPILED",
                         str(BUILD / "bin" / "tessera-example-run-compiled"))
RUNTIME = os.environ.get("TESSERA_RUNTIME_LIBRARY",
                         str(BUILD / "lib" / "libTesseraRuntime.so"))

T = "tensor<?x8xf32, #tgraph.dims<[B, 8]>>"
W = "tensor<8x8xf32>"
V = "tensor<?xf32, #tgraph.dims<[\"2*B\"]>>"
IR = f"""func.func @layer(%x: {T}, %w: {W}, %v: {V}) -> ({T}, tensor<f32>) {{
  %h = tgraph.matmul %x, %w : ({T}, {W}) -> {T}
  %t = tgraph.tanh %h : {T}
  %s = tgraph.reduce_sum %v {{dims = array<i64: 0>}} : {V} -> tensor<f32>
  return %t, %s : {T}, tensor<f32>
}}
"""


def reference(x, w, v):
    return np.tanh(x.astype(np.float64) @ w.astype(np.float64)), v.astype(np.float64).sum()


def tessera_run(*args, check=True):
    proc = subprocess.run([TESSERA_RUN, *map(str, args)], capture_output=True, text=True,
                          env={**run_env(), "TESSERA_CACHE_DIR": CACHE_DIR})
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def model(tmp_path):
    source = tmp_path / "layer.mlir"
    source.write_text(IR)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    w = rng.standard_normal((8, 8)).astype(np.float32) / 3
    v = rng.standard_normal(10).astype(np.float32)
    for name, a in (("x", x), ("w", w), ("v", v)):
        np.save(tmp_path / f"{name}.npy", a)
    return source, (x, w, v)


def inputs(tmp):
    return [str(tmp / f"{n}.npy") for n in ("x", "w", "v")]


def check_outputs(out_dir, x, w, v):
    t, s = reference(x, w, v)
    np.testing.assert_allclose(np.load(out_dir / "out0.npy"), t, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(np.load(out_dir / "out1.npy"), s, rtol=2e-6, atol=2e-6)


def test_ahead_of_time_library_runs_without_the_compiler(tmp_path, model):
    source, (x, w, v) = model
    # Shipped: the library and the runtime in a directory of their own.
    ship = tmp_path / "ship"
    ship.mkdir()
    tessera_run(source, "--emit-library", ship / "layer.so")
    shutil.copy(RUNTIME, ship)
    needed = subprocess.run(["ldd", str(EXAMPLE)], capture_output=True, text=True).stdout
    needed += subprocess.run(["ldd", str(ship / "layer.so")], capture_output=True, text=True).stdout
    assert "libMLIR" not in needed and "libLLVM" not in needed, needed
    assert str(ship / "libTesseraRuntime.so") in needed  # found beside the library
    proc = subprocess.run([EXAMPLE, str(ship / "layer.so"), "layer", *inputs(tmp_path),
                           str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "@layer(f32[B, 8], f32[8, 8], f32[2*B]) -> (f32[B, 8], f32[])" in proc.stdout
    check_outputs(tmp_path, x, w, v)
    # The same library through tessera-run (no compiling either).
    tessera_run(ship / "layer.so", "--input", *inputs(tmp_path)[:1], "--input",
                inputs(tmp_path)[1], "--input", inputs(tmp_path)[2], "--out-dir", tmp_path)
    check_outputs(tmp_path, x, w, v)


def test_jit_and_library_agree(tmp_path, model):
    source, (x, w, v) = model
    args = [a for p in inputs(tmp_path) for a in ("--input", p)]
    for mode in (["--jit"], ["--no-cache"], []):
        out = tmp_path / (mode[0].strip("-") if mode else "cached")
        out.mkdir()
        tessera_run(source, *args, "--out-dir", out, "--quiet", *mode)
        check_outputs(out, x, w, v)
    assert (np.load(tmp_path / "jit" / "out0.npy").tobytes()
            == np.load(tmp_path / "no-cache" / "out0.npy").tobytes())


def test_thread_count_option(tmp_path, model):
    source, (x, w, v) = model
    args = [a for p in inputs(tmp_path) for a in ("--input", p)]
    outs = []
    for n in (1, 2):
        out = tmp_path / f"t{n}"
        out.mkdir()
        tessera_run(source, *args, "--out-dir", out, "--quiet", "--num-threads", n)
        outs.append(np.load(out / "out0.npy").tobytes())
    assert outs[0] == outs[1]
    proc = tessera_run(source, "--num-threads", "0", check=False)
    assert proc.returncode == 1
    assert "--num-threads: thread count must be at least 1, got 0" in proc.stderr


@pytest.mark.parametrize("case, message", [
    ("count", "@layer takes 3 arguments @layer(f32[B, 8], f32[8, 8], f32[2*B]) -> "
              "(f32[B, 8], f32[]) but 2 --input files were given"),
    ("dtype", "argument 1: {w} has dtype <f8 but f32 (stored as <f4) was expected"),
    ("rank", "@layer argument 1 must be f32[8, 8] but is f32[64]"),
    ("static", "@layer argument 1 dim 0 must be 8 but is 7 (expected f32[8, 8], found f32[7, 8])"),
    ("symbol", "@layer argument 2 dim 0 must be 2*B = 10 (B = 5 from argument 0 dim 0) but is 12"),
    ("truncated", "argument 0: {x} is shorter than its header says (truncated?)"),
])
def test_bad_arguments_are_named(tmp_path, model, case, message):
    source, (x, w, v) = model
    files = inputs(tmp_path)
    if case == "count":
        files = files[:2]
    elif case == "dtype":
        np.save(files[1], w.astype(np.float64))
    elif case == "rank":
        np.save(files[1], w.reshape(64))
    elif case == "static":
        np.save(files[1], w[:7])
    elif case == "symbol":
        np.save(files[2], np.zeros(12, np.float32))
    elif case == "truncated":
        data = pathlib.Path(files[0]).read_bytes()
        pathlib.Path(files[0]).write_bytes(data[:-7])
    proc = tessera_run(source, *[a for p in files for a in ("--input", p)], check=False)
    assert proc.returncode == 1, proc.stderr
    assert message.format(x=files[0], w=files[1]) in proc.stderr, proc.stderr


def test_bad_command_lines(tmp_path, model):
    source, _ = model
    cases = [
        ([source, "--fn", "nope"], "has no function @nope (it has @layer)"),
        ([source, "--dims", "B=-1"], "--dims expects NAME=SIZE pairs with SIZE >= 0, got 'B=-1'"),
        ([source], "argument 0 dim 0 is B; give its size with --dims (B)"),
        ([tmp_path / "missing.so"], "cannot load compiled code from"),
        ([RUNTIME.replace("libTesseraRuntime", "libTesseraRuntime")], None),
    ]
    for args, message in cases[:-1]:
        proc = tessera_run(*args, check=False)
        assert proc.returncode == 1, (args, proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)
    # A shared library that is not Tessera code: renamed to .so, loaded,
    # refused by name.
    other = tmp_path / "runtime.so"
    shutil.copy(RUNTIME, other)
    proc = tessera_run(other, check=False)
    assert proc.returncode == 1
    assert "is not a Tessera library: it has no manifest" in proc.stderr
    # Pipelines of one's own that do not parse or stop short of LLVM.
    for pipeline, message in [
            ("builtin.module(canonicalize", "expected ')' closing 'builtin.module('"),
            ("builtin.module(canonicalize)",
             "the pass pipeline must lower everything to the LLVM dialect, but "
             "'tgraph.matmul' remains")]:
        proc = tessera_run(source, "--dims", "B=2", "--no-cache", "--pass-pipeline", pipeline,
                           check=False)
        assert proc.returncode == 1, proc.stderr
        assert message in proc.stderr, proc.stderr


def test_library_in_the_current_directory_and_new_output_directory(tmp_path, model):
    source, (x, w, v) = model
    tessera_run(source, "--emit-library", tmp_path / "layer.so")
    # A bare file name is the file in the current directory (not a name for
    # the library search path); --out-dir is created with its parents.
    proc = subprocess.run([os.path.abspath(TESSERA_RUN), "layer.so", *[a for p in inputs(tmp_path)
                                                       for a in ("--input", p)],
                           "--out-dir", "new/dir", "--quiet"],
                          capture_output=True, text=True, cwd=tmp_path, env=run_env())
    assert proc.returncode == 0, proc.stderr
    check_outputs(tmp_path / "new" / "dir", x, w, v)


def test_random_inputs_and_bench(tmp_path, model):
    source, _ = model
    proc = tessera_run(source, "--dims", "B=3", "--bench", "5")
    assert "result 0: f32[3x8]" in proc.stdout
    assert "@layer: 5 calls, median" in proc.stdout
    assert "interquartile range" in proc.stdout


def test_truncated_or_foreign_libraries_are_refused(tmp_path, model):
    """A library cut short anywhere (a copy interrupted, a download that
    stopped) or a file that is not one is refused before dlopen maps it,
    with the reason; the whole file still runs."""
    source, (x, w, v) = model
    lib = tmp_path / "layer.so"
    tessera_run(source, "--emit-library", lib)
    data = lib.read_bytes()
    rng = np.random.default_rng(0)
    cuts = sorted({0, 3, 10, 63, 64, 65, len(data) - 1, len(data) - 64,
                   *rng.integers(65, len(data) - 1, 20).tolist()})
    cut = tmp_path / "cut.so"
    for n in cuts:
        cut.write_bytes(data[:n])
        proc = tessera_run(cut, "--quiet", check=False)
        assert proc.returncode == 1, (n, proc.returncode, proc.stderr)
        assert f"cannot load compiled code from {cut}: " in proc.stderr, proc.stderr
        if n < 4:
            assert "it is not a shared library (no ELF header)" in proc.stderr
        elif n < 64:
            assert f"it is truncated: {n} bytes, fewer than an ELF header" in proc.stderr
        else:
            assert (f"it is truncated: its ELF headers place {len(data)} bytes in the "
                    f"file, which has {n}") in proc.stderr, (n, proc.stderr)
    cut.write_bytes(b"#!/bin/sh\n" + data[10:])
    proc = tessera_run(cut, "--quiet", check=False)
    assert "it is not a shared library (no ELF header)" in proc.stderr, proc.stderr
    tessera_run(lib, *[a for p in inputs(tmp_path) for a in ("--input", p)],
                "--out-dir", tmp_path, "--quiet")
    check_outputs(tmp_path, x, w, v)


def test_gpu_programs_from_the_command_line(tmp_path, model):
    """--emit-gpu-program needs no GPU; running one (or --device cuda) checks
    against float64 on a machine with a GPU and names why not elsewhere."""
    source, (x, w, v) = model
    program = tmp_path / "layer.tgpu"
    tessera_run(source, "--emit-gpu-program", program, "--dims", "B=5")
    data = program.read_bytes()
    assert data[:8] == b"TSGPUPRG"
    # The symbolic signature is recorded with the size it was compiled for.
    assert b"function layer 3 2\narg f32 2 B 8\n" in data
    # Several chips make one bundle; with ptxas, each program carries its
    # cubin too.
    bundle = tmp_path / "layer-chips.tgpu"
    ptxas = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas"
                                      if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
    tessera_run(source, "--emit-gpu-program", bundle, "--dims", "B=5", "--chip", "sm_90a,sm_80",
                *(["--cubin"] if ptxas else []))
    packed = bundle.read_bytes()
    assert packed[:8] == b"TSGPUBND"
    assert packed.count(b"TSGPUPRG") == 2
    if ptxas:
        assert packed.count(b"\x7fELF") == 2
    proc = tessera_run(source, "--emit-gpu-program", tmp_path / "x.tgpu", "--dims", "B=5",
                       "--chip", "sm_75", check=False)
    assert proc.returncode == 1
    assert "the chip 'sm_75' is not sm_<major><minor>" in proc.stderr, proc.stderr
    # --describe lists a program (and each program of a bundle) without a
    # GPU: one launch per kernel of the layer, with the sizes for B = 5.
    listed = tessera_run(program, "--describe").stdout
    assert listed.startswith("# program layer for sm_90a"), listed
    assert " storage s0: argument 0 f32[5, 8]\n" in listed, listed
    assert " step 0: launch layer_" in listed, listed
    listed = tessera_run(bundle, "--describe").stdout
    assert "# program 2 of 2\n# program layer for sm_80" in listed, listed
    # Autotuning variants make one bundle; --tuning reads its file.
    variants = tmp_path / "variants.tgpu"
    tessera_run(source, "--emit-gpu-program", variants, "--dims", "B=5", "--variants")
    assert variants.read_bytes().count(b"TSGPUPRG") == 4
    bad_tuning = tmp_path / "tuning.txt"
    bad_tuning.write_text("gemm-12 block(64, 64)\n")
    truncated = tmp_path / "truncated.tgpu"
    truncated.write_bytes(data[:len(data) // 2])
    cases = [
        ([source, "--emit-gpu-program", tmp_path / "x.tgpu", "--dims", "B=5", "--tuning", bad_tuning],
         "tuning.txt:1: expected 'KEY SCHEDULE'"),
        ([source, "--emit-gpu-program", tmp_path / "x.tgpu", "--dims", "B=5", "--variants",
          "--chip", "sm_90a,sm_80"], "--variants compiles for one chip"),
        ([source, "--emit-gpu-program", tmp_path / "x.tgpu", "--dims", "B=5", "--sms", "0"],
         "--sms expects a number of SMs >= 1"),
        ([source, "--tune", bad_tuning], "--tune takes a .tgpu bundle of --variants programs"),
        ([variants, "--tune", bad_tuning, "--device", "cpu"], "--tune times programs on a GPU"),
        ([source, "--describe"], "--describe takes a GPU program file (.tgpu)"),
        ([truncated, "--describe"], "is truncated: its header promises"),
        ([source, "--device", "gpu"], "--device expects cpu, cuda or cuda:K, got 'gpu'"),
        ([source, "--device", "cuda:x"], "--device expects cpu, cuda or cuda:K, got 'cuda:x'"),
        ([source, "--device", "cuda", "--jit"], "--jit is for the CPU; --device cuda runs on a GPU"),
        ([source, "--device", "cuda", "--num-threads", "2"],
         "--num-threads is for the CPU; --device cuda runs on a GPU"),
        ([program, "--device", "cpu"], "is a GPU program: it runs with --device cuda"),
        ([program, "--emit-gpu-program", tmp_path / "again.tgpu"],
         "--emit-gpu-program needs an .mlir input"),
        ([source, "--emit-gpu-program", tmp_path / "x.tgpu"],
         "has the symbolic dim B, which needs a size for the GPU"),
        ([source, "--emit-gpu-program", tmp_path / "x.tgpu", "--dims", "B=5,Q=1"],
         "a size is given for Q, which is not a dim of @layer("),
        ([truncated], "is truncated: its header promises"),
    ]
    for args, message in cases:
        proc = tessera_run(*args, check=False)
        assert proc.returncode == 1, (args, proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)
    assert not (tmp_path / "x.tgpu").exists()

    runs = [[program, *[a for p in inputs(tmp_path) for a in ("--input", p)]],
            [source, "--device", "cuda", *[a for p in inputs(tmp_path) for a in ("--input", p)]]]
    for i, args in enumerate(runs):
        out = tmp_path / f"out{i}"
        proc = tessera_run(*args, "--out-dir", out, check=False)
        if proc.returncode == 1 and "CUDA" in proc.stderr and "not" in proc.stderr:
            # No GPU here: the reason, and nothing written.
            assert "cannot run on cuda:0" in proc.stderr or \
                "--device cuda: CUDA is not available" in proc.stderr, proc.stderr
            assert not out.exists()
            continue
        assert proc.returncode == 0, proc.stderr
        t, s = reference(x, w, v)
        np.testing.assert_allclose(np.load(out / "out0.npy"), t, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.load(out / "out1.npy"), s, rtol=1e-5, atol=1e-5)
    # A batch size the program was not compiled for is refused by name.
    np.save(tmp_path / "x3.npy", x[:3])
    np.save(tmp_path / "v6.npy", v[:6])
    proc = tessera_run(program, "--input", tmp_path / "x3.npy", "--input", inputs(tmp_path)[1],
                       "--input", tmp_path / "v6.npy", check=False)
    assert proc.returncode != 0
    assert ("has no GPU program for B = 3 (it has programs for B = 5)" in proc.stderr
            or "cannot run on cuda:0" in proc.stderr), proc.stderr
