"""Runs one stdlib kernel of each kind once, after warm-ups, for a
profiler (Nsight Compute) to read:

    ncu --clock-control none --kernel-name regex:"^gemm|nvjet" \\
        --launch-skip 6 --launch-count 2 --metrics \\
        gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \\
        python3 profile_driver.py gemm
    ncu --clock-control none --kernel-name regex:flash --launch-skip 1 \\
        --launch-count 3 --page source --print-source sass --csv \\
        python3 profile_driver.py attn > attn.csv

gemm: the bf16 GEMM 4096^3 (three Tessera launches, three cuBLAS ones,
then one of each); attn: the forward at S 4096 without a mask (128, 128,
8 warps, 2 stages, ping-pong), then at S 16384 the causal forward, dQ and
dK/dV kernels at the stdlib's usual schedules (BH 16, D 128, bf16).
`--precompile [chip]` fills the kernel cache where the compiler is.
"""
import math
import sys

import tessera as ts
from tessera import stdlib as S
from tessera._kernel import Schedule, cdiv
from tessera.stdlib import _kernels as K

BH, D = 16, 128


def _sch(bm, bn, warps, stages, pingpong=False):
    return Schedule(block=(bm, bn), warps=warps, stages=stages, d=D,
                    pingpong=pingpong)


def attention(mk, sync=lambda: None):
    scale = 1 / math.sqrt(D)
    q, k, v, do = (mk((BH, 4096, D), "bf16") for _ in range(4))
    o, lse = mk((BH, 4096, D), "bf16"), mk((BH, 4096), "f32")
    K.flash_attention_fwd.with_schedule(_sch(128, 128, 8, 2, True))[
        (cdiv(4096, 128), BH)](q, k, v, o, lse, scale, causal=False)
    seq = 16384
    q, k, v, do = (mk((BH, seq, D), "bf16") for _ in range(4))
    o, dq, dk, dv = (mk((BH, seq, D), "bf16") for _ in range(4))
    lse, delta = mk((BH, seq), "f32"), mk((BH, seq), "f32")
    K.flash_attention_fwd.with_schedule(_sch(128, 128, 8, 2))[
        (cdiv(seq, 128), BH)](q, k, v, o, lse, scale, causal=True)
    K.flash_attention_bwd_dq.with_schedule(_sch(128, 64, 8, 2))[
        (cdiv(seq, 128), BH)](q, k, v, o, do, lse, delta, dq, scale,
                              causal=True)
    K.flash_attention_bwd_dkdv.with_schedule(_sch(128, 64, 8, 2, True))[
        (cdiv(seq, 64), BH)](q, k, v, do, lse, delta, dk, dv, scale,
                             causal=True)
    sync()


def gemm():
    import torch
    a, b = (torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
            for _ in range(2))
    at, bt = ts.from_dlpack(a), ts.from_dlpack(b)
    for _ in range(3):
        S.gemm(at, bt)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    S.gemm(at, bt)
    torch.cuda.synchronize()
    a @ b
    torch.cuda.synchronize()


def main(what):
    if what == "gemm":
        gemm()
    elif what == "attn":
        import torch

        def mk(shape, dt):
            x = torch.randn(*shape, device="cuda")
            return ts.from_dlpack(x.bfloat16() if dt == "bf16" else x)
        attention(mk, torch.cuda.synchronize)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--precompile"]:
        from tessera._kernel import compile_only
        with compile_only(sys.argv[2] if len(sys.argv) > 2 else "sm_90a"):
            attention(lambda shape, dt: ts.cuda.empty(shape, dt))
            S.gemm(ts.cuda.empty((4096, 4096), "bf16"),
                   ts.cuda.empty((4096, 4096), "bf16"))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "")
