"""The stdlib kernels the C++ compiler takes without Python: each kernel of
``CATALOG`` traced to Tile IR for every specialization it lists, written at
build time as a C++ table (``python -m tessera.stdlib._library OUT.inc``)
that ``-tessera-gpu-generate-kernels`` looks kernels up in.

The kernels stay authored in the tile DSL; the build runs this module on
the source tree (no compiled extension is needed to trace), so a C++
program compiles GPU groups that take stdlib kernels with no interpreter.
A specialization is a kernel, its element type, its head dim, causal or
not, and the target family: ``sm_90a`` kernels use the Hopper schedules
(wgmma, a TMA producer warpgroup, ping-pong), the others the mma.sync
ones. The schedules are what the autotuner chose most often on an H200
for the shapes of transformer training (sequence 512 to 16384; see
docs/GPU_PIPELINE.md).

>>> entries = list(catalog())
>>> len(entries)
48
>>> e = entries[0]
>>> e.kernel, e.dtype, e.head_dim, e.causal, e.hopper
('flash_attention_fwd', 'bf16', 64, False, True)
>>> e.schedule_text
'block(128, 128).warps(8).stages(2).pingpong'
>>> e.ir().splitlines()[1].split("(")[0].strip()
'func.func @flash_attention_fwd'
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys

from .._kernel import Schedule
from . import _kernels as K

# Hopper: the autotuner's most frequent choices on an H200 (bf16, head
# dims 64 and 128, sequences 512 to 16384). Before Hopper: the bases the
# Python ops start from (mma.sync, narrower key blocks for d = 128).
_HOPPER = {
    "flash_attention_fwd": dict(block=(128, 128), warps=8, stages=2,
                                pingpong=True),
    "flash_attention_bwd_dq": dict(block=(128, 128), warps=8, stages=2,
                                   pingpong=True, producer_registers=40),
    "flash_attention_bwd_dkdv": dict(block=(64, 128), warps=8, stages=2,
                                     producer_registers=24),
}
# Per head dim where it differs. dK/dV at d = 64: three stages and the
# producer's default registers (the consumers' two 64 x 128 accumulators
# fit in what 96 leave at d = 64, not at 128). H200, bf16, the same call:
# causal 364 against 392 us (BH 128, S 2048) and 633 against 704 (BH 64,
# S 4096); equal without a mask. At d = 128 the same took 2.2x as long.
_HOPPER_BY_HEAD_DIM = {
    ("flash_attention_bwd_dkdv", 64): dict(block=(64, 128), warps=8,
                                           stages=3, producer_registers=96),
}


def _before_hopper(kernel, d):
    m = 64 if kernel == "flash_attention_fwd" else 32
    return dict(block=(m, 32 if d == 64 else 16), warps=4, stages=2)


@dataclasses.dataclass(frozen=True)
class Entry:
    kernel: str
    dtype: str
    head_dim: int
    causal: bool
    hopper: bool

    @property
    def schedule(self) -> Schedule:
        spec = dict(_HOPPER_BY_HEAD_DIM.get((self.kernel, self.head_dim),
                                            _HOPPER[self.kernel])
                    if self.hopper
                    else _before_hopper(self.kernel, self.head_dim))
        block = spec.pop("block")
        warps, stages = spec.pop("warps"), spec.pop("stages")
        return Schedule(block=block, warps=warps, stages=stages,
                        d=self.head_dim, **spec)

    @property
    def schedule_text(self) -> str:
        """The schedule as the compiler prints it on the group."""
        s = self.schedule
        parts = [f"block({s.m}, {s.n})", f"warps({s.warps})",
                 f"stages({s.stages})"]
        if s.params.get("pingpong"):
            parts.append("pingpong")
        if s.params.get("producer_registers") is not None:
            parts.append(f"producer_registers({s.params['producer_registers']})")
        return ".".join(parts)

    def ir(self) -> str:
        """The kernel's Tile IR, its ops located at the kernel's definition
        (relative to the package, so the table is the same on every
        machine)."""
        kern = getattr(K, self.kernel)
        opened = sum(1 for p in kern._params
                     if p.kind == "tensor" and p.ktile.dtype is None)
        text = kern.lower(*([self.dtype] * opened), schedule=self.schedule,
                          causal=self.causal)
        code = kern.fn.__code__
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(code.co_filename))))
        rel = os.path.relpath(code.co_filename, root).replace(os.sep, "/")
        where = f'loc("{rel}":{code.co_firstlineno}:1)'
        return re.sub(r'loc\("(?:[^"\\]|\\.)*":\d+:\d+\)', where, text)


def catalog():
    """Every specialization the C++ table holds, in a fixed order."""
    for hopper in (True, False):
        for kernel in ("flash_attention_fwd", "flash_attention_bwd_dq",
                       "flash_attention_bwd_dkdv"):
            for dtype in ("bf16", "f16"):
                for d in (64, 128):
                    for causal in (False, True):
                        yield Entry(kernel, dtype, d, causal, hopper)


def write_table(path: str) -> None:
    """Writes the C++ table: one initializer per entry (kernel, dtype, head
    dim, causal, Hopper, block m and n, schedule, Tile IR), only if it changed (so an
    unchanged table does not rebuild the compiler)."""
    lines = ["// Generated by tessera.stdlib._library from the tile-DSL "
             "kernels; do not edit.\n"]
    for e in catalog():
        ir = e.ir()
        if ")tessera_ir\"" in ir:
            raise RuntimeError(f"{e.kernel}: its IR holds the raw-string "
                               f"delimiter")
        s = e.schedule
        lines.append(
            f'{{"{e.kernel}", "{e.dtype}", {e.head_dim}, '
            f'{"true" if e.causal else "false"}, '
            f'{"true" if e.hopper else "false"}, {s.m}, {s.n}, '
            f'"{e.schedule_text}",\n'
            f' R"tessera_ir({ir})tessera_ir"}},\n')
    text = "".join(lines)
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tessera.stdlib._library OUT.inc")
    write_table(sys.argv[1])
