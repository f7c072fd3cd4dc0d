"""The compile cache: a second process finds the compiled library instead of
recompiling; a damaged entry (truncated, altered, half missing) is reported
once, rebuilt, and the results stay right."""

import pathlib
import subprocess

import numpy as np
import pytest

from harness import TESSERA_RUN, run_env

IR = """func.func @f(%x: tensor<?xf32, #tgraph.dims<[N]>>) -> tensor<?xf32, #tgraph.dims<[N]>> {
  %y = tgraph.tanh %x : tensor<?xf32, #tgraph.dims<[N]>>
  %z = tgraph.mul %y, %x : tensor<?xf32, #tgraph.dims<[N]>>
  return %z : tensor<?xf32, #tgraph.dims<[N]>>
}
"""


def run(tmp, cache, *extra):
    source = tmp / "f.mlir"
    source.write_text(IR)
    x = np.linspace(-3, 3, 37, dtype=np.float32)
    np.save(tmp / "x.npy", x)
    proc = subprocess.run([TESSERA_RUN, str(source), "--input", str(tmp / "x.npy"),
                           "--out-dir", str(tmp), "--quiet", "--time-compile",
                           "--cache-dir", str(cache), *extra],
                          capture_output=True, text=True, env=run_env())
    assert proc.returncode == 0, proc.stderr
    out = np.load(tmp / "out0.npy")
    np.testing.assert_allclose(out, np.tanh(x.astype(np.float64)) * x, rtol=1e-6, atol=1e-7)
    return proc


def entry(cache):
    libraries = sorted(cache.glob("*.so"))
    assert len(libraries) == 1, libraries
    return libraries[0]


def test_second_process_uses_the_cache(tmp_path):
    cache = tmp_path / "cache"
    first = run(tmp_path, cache)
    assert "(cached)" not in first.stdout
    second = run(tmp_path, cache)
    assert "(cached)" in second.stdout
    assert second.stderr == ""


def test_key_changes_with_the_pipeline(tmp_path):
    cache = tmp_path / "cache"
    run(tmp_path, cache)
    # The same pipeline spelled out by hand is a different key only if the
    # text differs; a different pipeline must not reuse the entry.
    other = run(tmp_path, cache, "--pass-pipeline",
                "builtin.module(tessera-tgraph-lower-to-linalg, tessera-cpu-pipeline)")
    assert "(cached)" not in other.stdout
    assert len(list(cache.glob("*.so"))) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip", "drop-sum", "drop-library"])
def test_damaged_entry_is_reported_once_and_rebuilt(tmp_path, damage):
    cache = tmp_path / "cache"
    run(tmp_path, cache)
    library = entry(cache)
    checksum = library.with_suffix(".sum")
    data = bytearray(library.read_bytes())
    if damage == "truncate":
        library.write_bytes(data[: len(data) // 3])
        reason = "bytes, but"
    elif damage == "flip":
        data[len(data) // 2] ^= 0x5A
        library.write_bytes(data)
        reason = "checksum does not match"
    elif damage == "drop-sum":
        checksum.unlink()
        reason = "checksum file is missing"
    else:
        library.unlink()
        reason = "library is missing"
    repaired = run(tmp_path, cache)
    assert repaired.stderr.count("is damaged") == 1, repaired.stderr
    assert reason in repaired.stderr
    assert "recompiling" in repaired.stderr
    assert "(cached)" not in repaired.stdout
    again = run(tmp_path, cache)
    assert "(cached)" in again.stdout and again.stderr == ""


def test_unreadable_checksum_file(tmp_path):
    cache = tmp_path / "cache"
    run(tmp_path, cache)
    entry(cache).with_suffix(".sum").write_text("garbage\n")
    repaired = run(tmp_path, cache)
    assert "checksum file is unreadable" in repaired.stderr
