"""The stdlib LayerNorm and cross-entropy forward kernels at explicit
schedules, beside the copy and PyTorch.

    python3 row_schedule_sweep.py --precompile sm_90a   # here: fills the
                                                        # kernel cache
    python3 row_schedule_sweep.py [layernorm|ce]        # on the GPU machine

Times layernorm_fwd (bf16 rows of 4096, f32 weight and bias, the shapes of
stdlib_bench.py) at each schedule of LN_FWD: (rows an iteration, warps,
stages, the schedule's programs_per_sm or None, programs launched per SM). Each schedule runs in alternating batches
with a device-to-device copy and F.layer_norm, so that "of copy" compares
bandwidths at the same clocks; each also prints its largest error against
PyTorch's f32 layer_norm. cross_entropy_fwd (bf16 logits [4096, 32768])
runs at each schedule of CE_FWD: (rows a program, warps, stages), beside
F.cross_entropy.
"""
import sys

import tessera as ts
from tessera._kernel import Schedule
from tessera import stdlib as S
from tessera.stdlib import _kernels as K

from stdlib_bench import (ROWS, COLS, CE_ROWS, VOCAB,  # noqa: E402
                          time_group)  # (beside this script)

LN_FWD = [(1, 8, 2, None, 4), (1, 8, 2, None, 2), (1, 8, 3, None, 4),
          (1, 8, 2, 3, 3), (1, 8, 2, 3, 6), (1, 8, 3, 3, 6),
          (1, 16, 2, None, 4), (1, 16, 3, None, 4), (1, 16, 2, 3, 6),
          (1, 16, 2, None, 2), (2, 8, 2, None, 4), (2, 16, 2, None, 4)]

CE_FWD = [(1, 8, 2), (2, 8, 2), (4, 8, 2), (1, 8, 3), (2, 8, 3), (4, 8, 3),
          (1, 8, 4), (2, 8, 4), (4, 4, 3), (2, 16, 3), (1, 16, 4), (4, 16, 2),
          (4, 16, 3)]


def schedule(cfg):
    m, warps, stages, per_sm, _ = cfg
    extra = {"programs_per_sm": per_sm} if per_sm else {}
    return Schedule(block=(m, COLS), warps=warps, stages=stages, **extra)


def run(cfg, x, w, b, y, mean, rstd, sms):
    K.layernorm_fwd.with_schedule(schedule(cfg))[(cfg[4] * sms,)](
        x, w, b, y, mean, rstd, 1e-5)


def run_ce(cfg, logits, labels, loss, lse):
    s = Schedule(block=(cfg[0], 1024), warps=cfg[1], stages=cfg[2])
    K.cross_entropy_fwd.with_schedule(s)[(ts.cdiv(CE_ROWS, cfg[0]),)](
        logits, labels, loss, lse, -100)


def precompile(chip):
    from tessera._kernel import compile_only
    with compile_only(chip):
        x, y = (ts.cuda.empty((ROWS, COLS), "bf16") for _ in range(2))
        w, b = (ts.cuda.empty((COLS,), "f32") for _ in range(2))
        mean, rstd = (ts.cuda.empty((ROWS,), "f32") for _ in range(2))
        for cfg in LN_FWD:
            run(cfg, x, w, b, y, mean, rstd, 132)
        logits = ts.cuda.empty((CE_ROWS, VOCAB), "bf16")
        labels = ts.cuda.empty((CE_ROWS,), "i32")
        loss, lse = (ts.cuda.empty((CE_ROWS,), "f32") for _ in range(2))
        for cfg in CE_FWD:
            run_ce(cfg, logits, labels, loss, lse)


def main(only=None):
    import torch
    import torch.nn.functional as F
    dev = ts.device("cuda")
    print(f"# {dev.describe()}; torch {torch.__version__}")
    g = torch.Generator(device="cuda").manual_seed(0)
    x32 = torch.randn(ROWS, COLS, device="cuda", generator=g)
    y32 = torch.empty_like(x32)

    def copy():
        y32.copy_(x32)
    copy_bytes = 2 * x32.numel() * 4
    if only in (None, "layernorm"):
        _layernorm(torch, F, g, dev, copy, copy_bytes)
    if only in (None, "ce"):
        _cross_entropy(torch, F, g, copy, copy_bytes)


def _table(name, cfgs, fn, peer, copy, copy_bytes, nbytes, torch, check,
           poison):
    """Each schedule of cfgs in turns with its peer and the copy; its
    outputs are poisoned (NaN) before, so the error is its own."""
    print(f"{name:<42}{'ms':>8}{'GB/s':>7}{'of copy':>9}{'torch':>8}"
          f"{'error':>10}")
    for cfg in cfgs:
        poison()
        try:
            t, peer_ms, copy_ms = time_group(
                (lambda cfg=cfg: fn(cfg), peer, copy), torch, 20)
        except Exception as ex:  # a schedule that does not fit
            print(f"{str(cfg):<42}{str(ex).splitlines()[0][:100]}")
            continue
        gbs = nbytes / t / 1e6
        print(f"{str(cfg):<42}{t:>8.4f}{gbs:>7.0f}"
              f"{gbs / (copy_bytes / copy_ms / 1e6):>9.2f}{peer_ms / t:>8.2f}"
              f"{check():>10.3g}")


def _cross_entropy(torch, F, g, copy, copy_bytes):
    logits = torch.randn(CE_ROWS, VOCAB, device="cuda", generator=g).bfloat16()
    labels = torch.randint(0, VOCAB, (CE_ROWS,), device="cuda", generator=g)
    ref = F.cross_entropy(logits.float(), labels, reduction="none")
    loss, lse = (torch.empty(CE_ROWS, device="cuda") for _ in range(2))
    args = [ts.from_dlpack(t) for t in (logits, labels.int(), loss, lse)]
    _table("cross-entropy (rows, warps, stages)", CE_FWD,
           lambda cfg: run_ce(cfg, *args),
           lambda: F.cross_entropy(logits, labels, reduction="none"),
           copy, copy_bytes, logits.numel() * 2, torch,
           lambda: (loss - ref).abs().max().item(),
           lambda: loss.fill_(float("nan")))


def _layernorm(torch, F, g, dev, copy, copy_bytes):
    xb = torch.randn(ROWS, COLS, device="cuda", generator=g).bfloat16()
    w, b = (torch.randn(COLS, device="cuda", generator=g) for _ in range(2))
    ref = F.layer_norm(xb.float(), (COLS,), w, b)
    wbf, bbf = w.bfloat16(), b.bfloat16()
    y = torch.empty_like(xb)
    mean, rstd = (torch.empty(ROWS, device="cuda") for _ in range(2))
    args = [ts.from_dlpack(t) for t in (xb, w, b, y, mean, rstd)]
    sms = S._multiprocessors(dev.index)

    def fn(cfg):
        run(cfg, *args, sms)
    _table("layernorm (rows, warps, stages, per SM, grid/SM)", LN_FWD, fn,
           lambda: F.layer_norm(xb, (COLS,), wbf, bbf), copy, copy_bytes,
           2 * xb.numel() * 2, torch,
           lambda: (y.float() - ref).abs().max().item(),
           lambda: y.fill_(float("nan")))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--precompile":
        precompile(sys.argv[2])
    elif len(sys.argv) == 1:
        main()
    elif len(sys.argv) == 2 and sys.argv[1] in ("layernorm", "ce"):
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
