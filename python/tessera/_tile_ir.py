"""The Tile IR that a ``@ts.kernel`` trace writes: values, types and the
text of ``ttile`` kernels.

A trace runs the kernel's Python body once on the values below; each
operation appends one line of MLIR to the innermost open block, with the
user's file and line as its location, so that the compiler's diagnostics
point at the kernel source. The module text is parsed and verified by the
C++ compiler (``tessera._core.compile_tile``).
"""

from __future__ import annotations

import math
import os
import sys
import threading

import numpy as np

from ._dtypes import DType, PolicyDType, as_dtype

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_local = threading.local()


class KernelTraceError(TypeError):
    """A kernel body that cannot be traced into Tile IR (raised with the
    user's line)."""


# --------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------

_FLOATS = {"f64", "f32", "f16", "bf16", "f8E4M3FN", "f8E5M2"}
_INTS = {"i64", "i32", "i16", "i8", "i1"}


def element_type(dtype) -> str:
    """The MLIR element type of a dtype (``ts.bf16`` -> ``bf16``)."""
    if isinstance(dtype, PolicyDType):
        dtype = dtype.dtype
    if isinstance(dtype, str) and dtype in ("index",):
        return dtype
    name = as_dtype(dtype).name
    if name not in _FLOATS | _INTS:
        raise KernelTraceError(f"tiles hold f64, f32, f16, bf16, fp8 or "
                               f"integer elements; got {name}")
    return name


def is_float(t: str) -> bool:
    return t in _FLOATS


def bit_width(t: str) -> int:
    if t == "index":
        return 64
    if t == "i1":
        return 1
    return {"f64": 64, "f32": 32, "f16": 16, "bf16": 16, "f8E4M3FN": 8,
            "f8E5M2": 8}.get(t) or int(t[1:])


def float_literal(value: float, t: str) -> str:
    """An exact MLIR literal for ``value`` rounded to float type ``t``."""
    value = float(value)
    if t == "f64":
        return "0x%016X" % np.array(value, np.float64).view(np.uint64)
    if t == "f32":
        return "0x%08X" % np.array(value, np.float32).view(np.uint32)
    if t == "f16":
        return "0x%04X" % np.array(value, np.float16).view(np.uint16)
    if t == "bf16":
        bits = int(np.array(value, np.float32).view(np.uint32))
        if math.isnan(value):
            return "0x7FC0"
        bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
        return "0x%04X" % ((bits >> 16) & 0xFFFF)
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover
        raise KernelTraceError(f"{t} constants need the ml_dtypes package")
    np_type = (ml_dtypes.float8_e4m3fn if t == "f8E4M3FN"
               else ml_dtypes.float8_e5m2)
    return "0x%02X" % np.array(value, np_type).view(np.uint8)


def int_literal(value: int, t: str) -> str:
    if t == "i1":
        return "true" if value else "false"
    bits = bit_width(t)
    lo, hi = -(1 << (bits - 1)), (1 << bits) - 1
    if not lo <= value <= hi:
        raise KernelTraceError(f"{value} does not fit in {t}")
    return str(int(value))


def tensor_type(shape, t: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + t + ">"


# --------------------------------------------------------------------------
# The trace: blocks of op lines
# --------------------------------------------------------------------------

def user_frame():
    """(file, line, column) of the innermost caller outside the package
    (the user's code; also what Graph IR tracing records)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep):
            return filename, frame.f_lineno, _column(frame)
        frame = frame.f_back
    return "<unknown>", 0, 0


def user_location() -> str:
    """``loc("file":line:col)`` of the user's code."""
    filename, line, col = user_frame()
    if filename == "<unknown>":
        return "loc(unknown)"
    name = filename.replace("\\", "\\\\").replace('"', '\\"')
    return f'loc("{name}":{line}:{col})'


def user_line() -> str:
    """``file:line`` of the user's code."""
    filename, line, _ = user_frame()
    return f"{filename}:{line}"


def _column(frame) -> int:
    """1-based column of the expression the frame is running (0: unknown)."""
    try:
        positions = list(frame.f_code.co_positions())
        col = positions[frame.f_lasti // 2][2]
    except (AttributeError, IndexError):
        return 0
    return col + 1 if col is not None else 0


class Block:
    """The op lines of one region being traced, and the values defined in
    it (a value may be used in its block and the blocks nested in it)."""

    def __init__(self, parent=None):
        self.parent = parent
        self.lines: list[str] = []
        self.depth = 0 if parent is None else parent.depth + 1

    def encloses(self, other: "Block") -> bool:
        while other is not None:
            if other is self:
                return True
            other = other.parent
        return False


class Trace:
    """One kernel being traced."""

    def __init__(self, schedule):
        self.schedule = schedule
        self.counter = 0
        self.block = Block()
        self.program_ids = {}
        # Of each tile.range loop being traced (innermost last): the
        # prefetch its loads ask for (tile.load(prefetch=N)).
        self.loop_prefetch: list[list[int]] = []

    def fresh(self) -> str:
        self.counter += 1
        return f"%v{self.counter}"

    def emit(self, text: str, result_types=(), loc=None):
        """Appends ``results = text loc``; returns the result names."""
        names = [self.fresh() for _ in result_types]
        if len(names) == 1:
            lhs = names[0] + " = "
        elif names:
            base = self.fresh()
            lhs = f"{base}:{len(names)} = "
            names = [f"{base}#{i}" for i in range(len(names))]
        else:
            lhs = ""
        self.block.lines.append(f"{lhs}{text} {loc or user_location()}")
        return names

    def __enter__(self):
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _local.stack.pop()
        return False


def current_trace() -> Trace:
    stack = getattr(_local, "stack", None)
    if not stack:
        raise KernelTraceError("tile operations run only inside a @ts.kernel "
                               "function while it is traced (call the kernel, "
                               "or its .lower())")
    return stack[-1]


def check_visible(value, what="value"):
    """Raises when ``value`` was defined in a loop body that has ended."""
    trace = current_trace()
    if not value.block.encloses(trace.block):
        raise KernelTraceError(
            f"{user_line()}: a {what} defined inside a tile.range loop is "
            f"used after the loop ended; carry it through the loop by "
            f"assigning it before the loop")
