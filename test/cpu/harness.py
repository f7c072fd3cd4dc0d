"""Compiles Graph IR with the CPU pipeline and runs it through tessera-run.

Each test writes a small .mlir function, feeds it NumPy inputs as .npy files
and compares the results with a float64 NumPy reference.
"""

import hashlib
import os
import pathlib
import subprocess
import tempfile

import ml_dtypes
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESSERA_RUN = os.environ.get("TESSERA_RUN", str(ROOT / "build" / "bin" / "tessera-run"))
# Compiled test functions are cached next to the build (not in ~/.cache).
CACHE_DIR = os.environ.get("TESSERA_TEST_CACHE_DIR",
                           str(pathlib.Path(TESSERA_RUN).resolve().parents[1] / "test-cache"))

MLIR_DTYPES = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.int8): "i8",
    np.dtype(np.bool_): "i1",
    np.dtype(np.float16): "f16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(ml_dtypes.float8_e4m3fn): "f8E4M3FN",
    np.dtype(ml_dtypes.float8_e5m2): "f8E5M2",
}

# 16- and 8-bit floats cross the tessera-run boundary as bit patterns.
BITS = {2: np.uint16, 1: np.uint8}


def is_small_float(dtype):
    dtype = np.dtype(dtype)
    return MLIR_DTYPES.get(dtype, "").startswith(("f16", "bf16", "f8"))


def tensor_type(shape, dtype, symbols=None):
    """`tensor<...>` for `shape`; `symbols` names dims (None keeps the size)."""
    element = MLIR_DTYPES[np.dtype(dtype)]
    if not symbols or all(s is None for s in symbols):
        dims = "x".join(str(d) for d in shape)
        return f"tensor<{dims + 'x' if shape else ''}{element}>"
    sizes = "x".join("?" if s is not None else str(d) for d, s in zip(shape, symbols))
    names = ", ".join(s if s is not None else str(d) for d, s in zip(shape, symbols))
    return f"tensor<{sizes}x{element}, #tgraph.dims<[{names}]>>"


class RunError(Exception):
    def __init__(self, returncode, stderr):
        super().__init__(f"tessera-run failed ({returncode}): {stderr}")
        self.returncode = returncode
        self.stderr = stderr


def run_env():
    """The environment of tessera-run in the tests: the test cache, and
    fresh allocations of compiled code filled with NaN (0xFF bytes), so
    reads of memory that was never written show up in the results."""
    env = dict(os.environ)
    env.setdefault("TESSERA_CACHE_DIR", CACHE_DIR)
    env["TESSERA_POISON_ALLOCATIONS"] = "1"
    return env


def source_file(mlir: str) -> pathlib.Path:
    """The IR at a path named by its content: locations (the file name) are
    part of the compile cache's key, so the same IR run again (another
    function of it, other inputs) finds its compiled code."""
    digest = hashlib.sha256(mlir.encode()).hexdigest()[:20]
    path = pathlib.Path(CACHE_DIR) / "sources" / f"{digest}.mlir"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(mlir)
        partial.replace(path)
    return path


def run(mlir: str, inputs, fn="f", extra_args=(), out_dtypes=None, threads=None):
    """Runs `fn` of `mlir` on `inputs`; returns the list of outputs.

    Outputs of 16- or 8-bit float types come back as unsigned bit patterns
    unless `out_dtypes` names their dtypes (one entry per output, None for
    the others). `threads` sets OMP_NUM_THREADS for the run."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        args = [TESSERA_RUN, str(source_file(mlir)), "--fn", fn, "--out-dir", str(tmp)]
        for i, a in enumerate(inputs):
            path = tmp / f"in{i}.npy"
            a = np.array(a, order="C")  # keeps 0-d arrays 0-d
            if is_small_float(a.dtype):
                a = a.view(BITS[a.dtype.itemsize])
            np.save(path, a)
            args += ["--input", str(path)]
        args += list(extra_args)
        if threads is not None:
            args += ["--num-threads", str(threads)]
        proc = subprocess.run(args, capture_output=True, text=True, env=run_env())
        if proc.returncode != 0:
            raise RunError(proc.returncode, proc.stderr)
        outs = []
        i = 0
        while (tmp / f"out{i}.npy").exists():
            outs.append(np.load(tmp / f"out{i}.npy"))
            i += 1
        for i, d in enumerate(out_dtypes or []):
            if d is not None and is_small_float(d):
                outs[i] = outs[i].view(d)
        return outs


# Relative tolerances: a few units in the last place of each type.
TOLERANCE = {
    np.dtype(np.float64): 1e-13,
    np.dtype(np.float32): 2e-6,
    np.dtype(np.float16): 2e-3,
    np.dtype(ml_dtypes.bfloat16): 1.6e-2,
}


def assert_close(actual, expected, dtype, scale=1.0):
    """Relative error against the float64 reference, per dtype."""
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if np.dtype(dtype).kind in "iub":
        np.testing.assert_array_equal(actual, expected)
        return
    tol = TOLERANCE[np.dtype(dtype)] * scale
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=tol, atol=tol)
