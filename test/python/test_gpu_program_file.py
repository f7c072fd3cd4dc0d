"""GPU program files (Module.compile_gpu, runtime GpuProgramImage): a
file is checked whole before anything of it is used. A truncated,
corrupted or foreign file, one of another format version, compiler
release or chip is refused with a message that says which, on any
machine (the checks come before the GPU is touched)."""

import os
import struct
import sys

import numpy as np
import pytest

import tessera as ts
from tessera import op

_cuda = pytest.importorskip("tessera._cuda")

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "gpu"))
from host_programs import (HEADER_BYTES as HEADER, fnv1a as _fnv1a,  # noqa: E402
                           program_strings as _strings, reencode)


@pytest.fixture(scope="module")
def program():
    def loss(w, b, x, y):
        return op.cross_entropy(op.matmul(x, w) + b, y)

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((20, 10)).astype(np.float32),
            np.zeros(10, np.float32),
            rng.standard_normal((8, 20)).astype(np.float32),
            rng.integers(0, 10, 8).astype(np.int32))
    lowered = ts.jit(ts.grad(loss, argnums=(0, 1))).lower(*args)
    return lowered.compile_gpu("sm_90a")


def _refused(data, match):
    with pytest.raises(ts.TesseraError, match=match):
        _cuda.HostProgram.load(data, 0, "step.tgpu")


def test_the_file_holds_the_program(program):
    assert program[:8] == b"TSGPUPRG"
    (version,) = struct.unpack_from("<I", program, 8)
    assert version == 5
    (length, digest) = struct.unpack_from("<QQ", program, 12)
    assert length == len(program) - HEADER
    assert digest == _fnv1a(program[HEADER:])
    (release, chip, name, signature), at = _strings(program[HEADER:], 4)
    assert chip == "sm_90a" and name == "grad_loss" and release
    # The function's signature as the runtime checks calls against it, and
    # no symbolic dims to size (the traced shapes are static).
    assert "function grad_loss 4 2\narg f32 2 20 10\n" in signature
    assert struct.unpack_from("<I", program, HEADER + at) == (0,)
    assert b".entry grad_loss_gemm0(" in program
    assert b".entry grad_loss_reduce0(" in program


@pytest.mark.parametrize("cut", [0, 5, HEADER - 1, HEADER, HEADER + 7, -1,
                                 -100])
def test_truncated_files_are_refused(program, cut):
    data = program[:cut]
    if len(data) < 8:
        _refused(data, "is not a Tessera GPU program")
    elif len(data) < HEADER:
        _refused(data, r"step\.tgpu: is truncated: .* fewer than its 28-byte "
                       "header")
    else:
        _refused(data, r"step\.tgpu: is truncated: its header promises "
                       rf"{len(program) - HEADER} bytes after it, the file "
                       rf"has {len(data) - HEADER}")


def test_a_flipped_byte_is_refused(program):
    rng = np.random.default_rng(1)
    for at in rng.integers(HEADER, len(program), 10):
        data = bytearray(program)
        data[at] ^= 0x10
        _refused(bytes(data), "is corrupted: its content does not match the "
                              "hash in its header")


def test_extra_bytes_are_refused(program):
    _refused(program + b"\0", "has 1 bytes after the")


def test_another_format_version_is_refused(program):
    data = program[:8] + struct.pack("<I", 7) + program[12:]
    _refused(data, "has format version 7; this runtime .* reads version 5 "
                   r"\(compile it again\)")


def test_another_compiler_release_is_refused(program):
    _refused(reencode(program, version="0.0.1-other"),
             r"was compiled by Tessera 0\.0\.1-other; this runtime is Tessera")


def test_a_consistent_but_invalid_program_is_refused(program):
    # A header and hash made right for a payload that ends early: the
    # fields are checked one by one.
    payload = program[HEADER:HEADER + 40]
    data = (program[:12] + struct.pack("<QQ", len(payload), _fnv1a(payload))
            + payload)
    _refused(data, "bytes short of a field|claims")


def test_not_a_program(program):
    _refused(b"\x7fELF" + program[4:], "is not a Tessera GPU program")


def test_gpu_programs_check_the_file_before_the_device(program, tmp_path):
    """ts.GpuProgram (what ts.jit(device="cuda") runs) refuses a damaged
    file by what is wrong with it, and a good one by what the machine
    lacks when it has no GPU."""
    with pytest.raises(ts.TesseraError, match="truncated|bytes"):
        ts.GpuProgram(program[:100])
    path = tmp_path / "step.tgpu"
    path.write_bytes(b"\x7fELF" + program[4:])
    with pytest.raises(ts.TesseraError, match="is not a Tessera GPU program"):
        ts.GpuProgram.load(str(path))
    if not ts.cuda.is_available():
        with pytest.raises(ts.TesseraError, match="CUDA"):
            ts.GpuProgram(program)


def test_borrowed_memory_needs_a_device_and_an_address():
    if ts.cuda.is_available():
        with pytest.raises(ts.TesseraError, match="at address 0"):
            _cuda.Buffer.borrow(0, "f32", [4])
        with pytest.raises(ts.TesseraError, match="cuda:99"):
            _cuda.Buffer.borrow(1 << 20, "f32", [4], 99)
    else:
        with pytest.raises(ts.TesseraError, match="cuda:0: 0 devices"):
            _cuda.Buffer.borrow(1 << 20, "f32", [4])


@pytest.mark.parametrize("capability,chip", [
    ((9, 0), "sm_90a"), ((8, 0), "sm_80"), ((8, 9), "sm_80"),
    ((10, 0), "sm_80"), ((12, 0), "sm_80"), ((7, 5), None), ((6, 1), None)])
def test_the_chip_a_device_runs(capability, chip):
    """sm_90a only on compute capability 9.0 (its wgmma and TMA code runs
    on no other chip); portable sm_80 PTX on 8.0 and newer; nothing
    below."""
    assert _cuda.chip_for_device(*capability) == chip
