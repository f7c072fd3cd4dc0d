"""The stdlib attention kernels at explicit schedules, against SDPA.

    python3 attn_schedule_sweep.py --precompile   # here: fills the kernel cache
    python3 attn_schedule_sweep.py [seq [kernel]]   # on the GPU machine
                                                   # (kernel: fwd, dkdv, dq)

Times flash_attention_fwd, flash_attention_bwd_dkdv and
flash_attention_bwd_dq (bf16, batch x heads 16, head dim 128) at each
schedule of FWD, DKDV and DQ (block (queries, keys), warps, stages and,
for the forward, whether the two warpgroups take turns: pingpong) beside
SDPA's forward and backward, and prints each kernel's largest error
against PyTorch (f32 autograd for the gradients). TF/s count 4 S^2 D BH
FLOPs (half when causal) for the forward, 1.5 and 1.0 times that for the
dK/dV and dQ kernels (four and three products of the forward's two).
"""
import math
import sys

import tessera as ts
from tessera._kernel import Schedule, cdiv
from tessera.stdlib import _kernels as K

from stdlib_bench import time_ms  # noqa: E402 (beside this script)

FWD = [(128, 64, 8, 2), (128, 128, 8, 2), (128, 128, 8, 3), (64, 128, 4, 2),
       (128, 64, 8, 2, True), (128, 128, 8, 2, True), (128, 128, 8, 3, True)]
DKDV = [(64, 64, 4, 2), (64, 128, 8, 2), (64, 128, 8, 3), (128, 64, 8, 2),
        (128, 128, 8, 1), (64, 64, 4, 3), (128, 64, 8, 2, True),
        (64, 128, 8, 2, True), (64, 128, 8, 2, False, 24),
        (64, 128, 8, 2, False, 32), (64, 128, 8, 2, False, 40),
        (64, 128, 8, 3, False, 32), (64, 128, 8, 3, False, 40)]
DQ = [(64, 64, 4, 2), (128, 64, 8, 2), (64, 128, 8, 2), (64, 128, 4, 2),
      (128, 128, 8, 1), (128, 64, 8, 2, True), (64, 128, 8, 2, True),
      (128, 128, 8, 2, False, 24), (128, 128, 8, 2, False, 40),
      (128, 128, 8, 2, True, 40), (128, 64, 8, 2, False, 40)]
BH, D = 16, 128


def schedule(cfg):
    """(queries, keys, warps, stages[, pingpong[, producer registers]]) as
    a Schedule."""
    extra = {"producer_registers": cfg[5]} if len(cfg) > 5 else {}
    return Schedule(block=cfg[:2], warps=cfg[2], stages=cfg[3], d=D,
                    pingpong=len(cfg) > 4 and cfg[4], **extra)


def launches(Q, Kt, V, DO, o, lse, delta, dq, dk, dv, seq, causal, scale):
    """(name, config, launch) of every kernel and schedule swept."""
    for cfg in FWD:
        s = schedule(cfg)
        if causal and s.m % s.n:
            continue
        kern = K.flash_attention_fwd.with_schedule(s)
        yield "fwd", cfg, lambda kern=kern, s=s: kern[(cdiv(seq, s.m), BH)](
            Q, Kt, V, o, lse, scale, causal=causal)
    for cfg in DKDV:
        s = schedule(cfg)
        kern = K.flash_attention_bwd_dkdv.with_schedule(s)
        yield "dkdv", cfg, lambda kern=kern, s=s: kern[(cdiv(seq, s.n), BH)](
            Q, Kt, V, DO, lse, delta, dk, dv, scale, causal=causal)
    for cfg in DQ:
        s = schedule(cfg)
        if causal and s.m % s.n and s.n % s.m:
            continue
        kern = K.flash_attention_bwd_dq.with_schedule(s)
        yield "dq", cfg, lambda kern=kern, s=s: kern[(cdiv(seq, s.m), BH)](
            Q, Kt, V, o, DO, lse, delta, dq, scale, causal=causal)


def precompile(chip="sm_90a"):
    from tessera._kernel import compile_only
    with compile_only(chip):
        bf = [ts.cuda.empty((1, 128, D), "bf16") for _ in range(7)]
        f32 = [ts.cuda.empty((1, 128), "f32") for _ in range(2)]
        for causal in (False, True):
            for name, cfg, run in launches(*bf[:4], bf[4], f32[0], f32[1],
                                           *bf[4:], 128, causal, 0.1):
                try:
                    run()
                except Exception as ex:  # a schedule that does not fit
                    print(name, cfg, causal, str(ex).splitlines()[0][:160])


def main(seq, only=None):
    import torch
    import torch.nn.functional as F
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v, do = (torch.randn(BH, seq, D, device="cuda",
                               dtype=torch.bfloat16, generator=g)
                   for _ in range(4))
    Q, Kt, V, DO = (ts.from_dlpack(x) for x in (q, k, v, do))
    scale = 1 / math.sqrt(D)
    print(f"# {ts.device('cuda').describe()}; torch {torch.__version__}")
    q4, k4, v4, do4 = (x.view(1, BH, seq, D) for x in (q, k, v, do))
    for causal in (False, True):
        flops = 4 * BH * seq * seq * D / (2 if causal else 1)
        sdpa = time_ms(lambda: F.scaled_dot_product_attention(
            q4, k4, v4, is_causal=causal), torch, reps=5, batches=3)
        grads = [x.detach().requires_grad_() for x in (q4, k4, v4)]
        out = F.scaled_dot_product_attention(*grads, is_causal=causal)
        sdpa_bwd = time_ms(lambda: torch.autograd.grad(
            out, grads, do4, retain_graph=True), torch, reps=5, batches=3)
        print(f"causal={causal}: SDPA fwd {sdpa:.3f} ms "
              f"{flops / sdpa / 1e9:.0f} TF/s, bwd {sdpa_bwd:.3f} ms "
              f"{2.5 * flops / sdpa_bwd / 1e9:.0f} TF/s")
        ref_o = F.scaled_dot_product_attention(
            q4, k4, v4, is_causal=causal).view(BH, seq, D).float()
        f32 = [x.detach().float().requires_grad_() for x in (q4, k4, v4)]
        ref = [r.view(BH, seq, D) for r in torch.autograd.grad(
            F.scaled_dot_product_attention(*f32, is_causal=causal), f32,
            do4.float())]
        o, dq, dk, dv = (ts.cuda.empty((BH, seq, D), "bf16")
                         for _ in range(4))
        lse, delta = (ts.cuda.empty((BH, seq), "f32") for _ in range(2))
        # The backward's inputs: lse from the default forward, delta from
        # a dQ kernel (which writes it).
        K.flash_attention_fwd.with_schedule(schedule((128, 64, 8, 2)))[
            (cdiv(seq, 128), BH)](Q, Kt, V, o, lse, scale, causal=causal)
        K.flash_attention_bwd_dq.with_schedule(schedule((128, 64, 8, 2)))[
            (cdiv(seq, 128), BH)](Q, Kt, V, o, DO, lse, delta, dq, scale,
                                  causal=causal)
        share = {"fwd": 1.0, "dkdv": 1.5, "dq": 1.0}
        for name, cfg, run in launches(Q, Kt, V, DO, o, lse, delta, dq, dk,
                                       dv, seq, causal, scale):
            if only and not name.startswith(only):
                continue
            # Poisoned outputs: each schedule's are its own.
            for x in {"fwd": (o,), "dq": (dq,)}.get(name, (dk, dv)):
                torch.from_dlpack(x).fill_(float("nan"))
            try:
                t = time_ms(run, torch, reps=5, batches=3)
            except Exception as ex:
                print(f"  {name} {cfg}: {str(ex).splitlines()[0][:120]}")
                continue
            if name == "fwd":
                err = f"{(torch.from_dlpack(o).float() - ref_o).abs().max():.3g}"
            else:
                got = (dk, dv) if name == "dkdv" else (dq,)
                want = (ref[1], ref[2]) if name == "dkdv" else (ref[0],)
                err = " ".join(
                    f"{((torch.from_dlpack(x).float() - r).abs().max() / r.abs().max()):.3g}"
                    for x, r in zip(got, want))
            peer = f" ({sdpa / t:.2f} of SDPA's time)" if name == "fwd" else ""
            print(f"  {name} {cfg}: {t:.3f} ms "
                  f"{share[name] * flops / t / 1e9:.0f} TF/s{peer}, "
                  f"error {err}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--precompile"]:
        precompile(*sys.argv[2:3])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096,
             sys.argv[2] if len(sys.argv) > 2 else None)
