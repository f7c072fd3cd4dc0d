"""The stdlib bf16 GEMM at explicit schedules, against torch.matmul.

    python3 gemm_schedule_sweep.py --precompile [chip]  # fill the kernel cache
    python3 gemm_schedule_sweep.py [NAME]               # on the GPU machine
                                          # (schedules whose name has NAME)

Each shape (M, N, K) times torch.matmul and every schedule of SWEEP in
rounds (the card's clocks move over a run) and prints each one's median
TF/s, its ratio to cuBLAS's median and its largest error against torch's
product. A longer K at the same M and N keeps the output
tiles and lengthens their loops: a ratio that grows with K says the time
goes to the tiles' starts and ends, not their loops. Also prints the
names of the kernels cuBLAS runs (tile shapes and clusters).
"""
import sys

import tessera as ts
from tessera import stdlib as S
from tessera._kernel import Schedule

from stdlib_bench import time_ms  # noqa: E402 (beside this script)

SHAPES = [(4096, 4096, 4096), (4096, 4096, 16384), (8192, 8192, 8192)]


def _s(block, stages=4, warps=8, **params):
    return Schedule(block=block, k=64, warps=warps, stages=stages,
                    **{"group": 8, **params})


SWEEP = {
    "128x256 s4 (default)": _s((128, 256)),
    "128x256 s4, a program a tile": _s((128, 256), persistent=False),
    "128x256 s3 (output through TMA)": _s((128, 256), 3),
    "128x256 s4 group 16": _s((128, 256), group=16),
    "256x128 s4": _s((256, 128)),
    "128x128 s4": _s((128, 128)),
    "128x256 s4 cluster 2": _s((128, 256), cluster=2),
    "128x256 s3 cluster 2": _s((128, 256), 3, cluster=2),
}


def _calls(mk):
    for m, n, k in SHAPES:
        for s in SWEEP.values():
            S.gemm.with_schedule(s)(mk((m, k)), mk((k, n)))


def main(only=None, rounds=3):
    import torch
    g = torch.Generator(device="cuda").manual_seed(0)
    print(f"# {ts.device('cuda').describe()}; torch {torch.__version__}")
    sweep = {name: s for name, s in SWEEP.items()
             if not only or only in name}
    for m, n, k in SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16,
                        generator=g)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16,
                        generator=g)
        at, bt = ts.from_dlpack(a), ts.from_dlpack(b)
        want = (a.float() @ b.float())
        flops = 2 * m * n * k
        with torch.profiler.profile() as prof:
            a @ b
            torch.cuda.synchronize()
        names = {e.key for e in prof.key_averages()
                 if not e.key.startswith(("aten::", "cuda", "Activity"))}
        runs = {"cuBLAS": lambda: a @ b}
        errors = {}
        for name, s in sweep.items():
            fn = (lambda s=s: S.gemm.with_schedule(s)(at, bt))
            try:
                got = torch.from_dlpack(fn()).float()
            except Exception as ex:  # a schedule that does not fit
                print(f"  {name}: {str(ex).splitlines()[0][:120]}")
                continue
            errors[name] = ((got - want).abs().max() / want.abs().max()).item()
            runs[name] = fn
        # Rounds over every schedule and cuBLAS in turn (the card's clocks
        # move over a run): each one's median.
        times = {name: [] for name in runs}
        for _ in range(rounds):
            for name, fn in runs.items():
                times[name].append(time_ms(fn, torch, reps=10, batches=3))
        med = {name: sorted(t)[len(t) // 2] for name, t in times.items()}
        peer = med.pop("cuBLAS")
        print(f"\n{m}x{n}x{k}: cuBLAS {flops / peer / 1e9:.0f} TF/s "
              f"({'; '.join(sorted(names))[:300]})")
        for name, t in med.items():
            print(f"  {name:<40}{flops / t / 1e9:>6.0f} TF/s "
                  f"{peer / t:>5.2f} of cuBLAS, error {errors[name]:.2g}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--precompile"]:
        from tessera._kernel import compile_only
        with compile_only(sys.argv[2] if len(sys.argv) > 2 else "sm_90a"):
            _calls(lambda shape: ts.cuda.empty(shape, "bf16"))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else None)
