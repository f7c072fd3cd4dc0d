"""tessera.stdlib against PyTorch on one GPU, in one run: memory-bound ops
as bandwidth beside a device-to-device copy, GEMM and attention as
TFLOP/s beside torch.matmul and SDPA. Each op is timed in alternating
batches with its peer (and the row ops with the copy too), so that the
clocks of a warm card fall on all alike.

    python3 stdlib_bench.py                  # on the GPU machine
    python3 stdlib_bench.py attn             # attention only (or gemm, rows)
    python3 stdlib_bench.py --precompile sm_90a   # fill the kernel cache
                                                  # (where the compiler is)
"""

import sys

import tessera as ts
from tessera import stdlib as S

ROWS, COLS = 32768, 4096
CE_ROWS, VOCAB = 4096, 32768
ADAM_N = 64 * 1024 * 1024
GEMM = [4096, 8192]
# The default bf16 GEMM schedule with one program per output tile (the
# default on Hopper is a persistent grid, one program per SM).
PER_TILE = ts.Schedule(block=(128, 256), k=64, warps=8, stages=4, group=8,
                       persistent=False)
ATTN = [(16, 4096, 128), (16, 16384, 128)]  # (B*H, S, D)
# Batched bf16 GEMMs (batch, M, N, K, B given as [N, K]): attention's
# scores and its probabilities times the values.
BMM = [(32, 2048, 2048, 128, True), (32, 2048, 128, 2048, False)]


def _per_batch_grid(a, b, c, bt):
    """The batched GEMM's other kernel (a program per output tile and
    batch, for M that the tiles do not divide) with its base schedule."""
    z, m, n = c.shape
    s = S._BATCHED_BASE["16"]
    grid = (ts.cdiv(m, s.m), ts.cdiv(n, s.n), z)
    S._kernels.batched_matmul.with_schedule(s)[grid](
        a, b, c, b_transposed=bt, a_shared=False)


def _calls(mk):
    """The stdlib calls the benchmark times (for --precompile)."""
    S.stable_softmax(mk((ROWS, COLS), "f32"))
    y, mean, rstd = S.layernorm(mk((ROWS, COLS), "bf16"), mk((COLS,), "f32"),
                                mk((COLS,), "f32"))
    S.layernorm_backward(mk((ROWS, COLS), "bf16"), mk((ROWS, COLS), "bf16"),
                         mk((COLS,), "f32"), mean, rstd)
    _, rrstd = S.rmsnorm(mk((ROWS, COLS), "bf16"), mk((COLS,), "f32"))
    S.rmsnorm_backward(mk((ROWS, COLS), "bf16"), mk((ROWS, COLS), "bf16"),
                       mk((COLS,), "f32"), rrstd)
    _, lse = S.cross_entropy(mk((CE_ROWS, VOCAB), "bf16"),
                             mk((CE_ROWS,), "i32"))
    S.cross_entropy_backward(mk((CE_ROWS, VOCAB), "bf16"),
                             mk((CE_ROWS,), "i32"), lse, mk((CE_ROWS,), "f32"))
    S.fused_adam(mk((ADAM_N,), "f32"), mk((ADAM_N,), "f32"),
                 mk((ADAM_N,), "f32"), mk((ADAM_N,), "f32"), lr=1e-3, step=1)
    for n in GEMM:
        S.gemm(mk((n, n), "bf16"), mk((n, n), "bf16"))
        S.gemm.with_schedule(PER_TILE)(mk((n, n), "bf16"), mk((n, n), "bf16"))
        S.gemm(mk((n, n), "f32"), mk((n, n), "f32"), transposed_b=True,
               allow_tf32=True)
        S.gemm(mk((n, n), "f8E4M3FN"), mk((n, n), "f8E4M3FN"))
    for z, m, n, k, bt in BMM:
        args = (mk((z, m, k), "bf16"),
                mk((z, n, k) if bt else (z, k, n), "bf16"),
                mk((z, m, n), "bf16"))
        S.gemm(*args[:2], transposed_b=bt, out=args[2])
        _per_batch_grid(*args, bt)
    for bh, s, d in ATTN:
        for causal in (False, True):
            S.flash_attention_2(*(mk((bh, s, d), "bf16") for _ in range(3)),
                                causal=causal)
            S.flash_attention_2_backward(
                *(mk((bh, s, d), "bf16") for _ in range(5)),
                mk((bh, s), "f32"), causal=causal)


def time_group(fns, torch, reps=5, rounds=7):
    """Milliseconds per call of each of `fns`: medians over `rounds`
    rounds of a batch of `reps` calls of each in turn, so that all see the
    same clocks (a long run heats the card and its clocks drift by several
    percent between one batch and the next). Each batch runs between CUDA
    events, after three warm-up calls (the first call of a stdlib op
    autotunes it); Tessera's stream and PyTorch's default stream order
    with each other, so the events see both. Each batch is queued behind
    half a millisecond of spinning on the card, so that its first call
    does not find the card idle: a batch that started on an idle card
    counted the host time of its first call (25-45 us) in the device
    time of its calls, which a model's steady state, with the host ahead,
    does not see (host_us reports the host time apart)."""
    for _ in range(3):
        for f in fns:
            f()
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    for _ in range(rounds):
        for f, out in zip(fns, times):
            torch.cuda._sleep(1_000_000)
            start, end = torch.cuda.Event(True), torch.cuda.Event(True)
            start.record()
            for _ in range(reps):
                f()
            end.record()
            end.synchronize()
            out.append(start.elapsed_time(end) / reps)
    return tuple(sorted(t)[len(t) // 2] for t in times)


def time_ms(fn, torch, reps=20, batches=5):
    """Milliseconds per call of fn alone: the median over `batches` of the
    mean of `reps` calls (time_group of one)."""
    return time_group((fn,), torch, reps, batches)[0]


def time_pair(fn, peer, torch, reps=5, rounds=7):
    """(ms of fn, ms of peer), timed in alternating batches (time_group)."""
    return time_group((fn, peer), torch, reps, rounds)


def host_us(fn, torch, calls=50):
    """Microseconds of host time per call, launches queued without
    waiting (the GPU stays ahead of the host only while this is shorter
    than the kernel)."""
    import time
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    us = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    return us


def main(only=None):
    import torch
    import torch.nn.functional as F
    dev = ts.device("cuda")
    print(f"# {dev.describe()}; torch {torch.__version__}, "
          f"tessera {ts.__version__}")
    g = torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape, dtype=torch.float32):
        return torch.randn(*shape, device="cuda", dtype=dtype, generator=g)

    rows = []
    if only in (None, "rows"):
        _row_ops(torch, F, g, rand, rows)
    if only in (None, "gemm"):
        _gemms(torch, rand, g)
    if only in (None, "attn"):
        _attention(torch, F, rand)


def _row_ops(torch, F, g, rand, rows):
    def row(name, nbytes, fn, peer):
        # The op, its peer and the copy in turns: "of copy" is the op's
        # bandwidth over the copy's in the same rounds.
        t_ms, peer_ms, copy_ms = time_group((fn, peer, copy), torch, 20)
        ts_gbs, peer_gbs = nbytes / t_ms / 1e6, nbytes / peer_ms / 1e6
        copy_gbs = 2 * x32.numel() * 4 / copy_ms / 1e6
        rows.append((name, t_ms, ts_gbs, peer_ms, peer_gbs, peer_ms / t_ms,
                     ts_gbs / copy_gbs))

    # Copy bandwidth: read and write of one 128 MiB f32 tensor.
    x32 = rand(ROWS, COLS)
    y32 = torch.empty_like(x32)
    def copy():
        y32.copy_(x32)
    copy_ms = time_ms(copy, torch)
    copy_gbs = 2 * x32.numel() * 4 / copy_ms / 1e6
    print(f"copy_ {x32.numel() * 4 >> 20} MiB f32: {copy_ms:.3f} ms "
          f"{copy_gbs:.0f} GB/s (bytes read + written)")
    # Host time per call (no synchronization): what launches cost Python.
    xs_ = ts.from_dlpack(x32[:8])
    print(f"host time of one stdlib call: "
          f"{host_us(lambda: S.stable_softmax(xs_), torch, 1000):.1f} us")

    xs = ts.from_dlpack(x32)
    row("softmax f32", 2 * x32.numel() * 4,
        lambda: S.stable_softmax(xs), lambda: torch.softmax(x32, -1))

    xb = rand(ROWS, COLS, dtype=torch.bfloat16)
    w, b = rand(COLS), rand(COLS)
    xbt, wt, bt = ts.from_dlpack(xb), ts.from_dlpack(w), ts.from_dlpack(b)
    wbf, bbf = w.bfloat16(), b.bfloat16()
    nb = xb.numel() * 2
    row("layernorm fwd bf16", 2 * nb,
        lambda: S.layernorm(xbt, wt, bt),
        lambda: F.layer_norm(xb, (COLS,), wbf, bbf))
    _, mean, rstd = S.layernorm(xbt, wt, bt)
    dy = rand(ROWS, COLS, dtype=torch.bfloat16)
    dyt = ts.from_dlpack(dy)
    tmean = torch.from_dlpack(mean).view(ROWS, 1)
    trstd = torch.from_dlpack(rstd).view(ROWS, 1)
    row("layernorm bwd bf16", 3 * nb,
        lambda: S.layernorm_backward(dyt, xbt, wt, mean, rstd),
        lambda: torch.ops.aten.native_layer_norm_backward(
            dy, xb, (COLS,), tmean, trstd, wbf, bbf, [True, True, True]))
    row("rmsnorm fwd bf16", 2 * nb,
        lambda: S.rmsnorm(xbt, wt), lambda: F.rms_norm(xb, (COLS,), wbf))
    _, rrstd = S.rmsnorm(xbt, wt)
    xg, wg = xb.detach().requires_grad_(), wbf.detach().requires_grad_()
    rms = F.rms_norm(xg, (COLS,), wg)
    row("rmsnorm bwd bf16", 3 * nb,
        lambda: S.rmsnorm_backward(dyt, xbt, wt, rrstd),
        lambda: torch.autograd.grad(rms, (xg, wg), dy, retain_graph=True))

    logits = rand(CE_ROWS, VOCAB, dtype=torch.bfloat16)
    labels = torch.randint(0, VOCAB, (CE_ROWS,), device="cuda",
                           generator=g)
    lt, lab32 = ts.from_dlpack(logits), ts.from_dlpack(labels.int())
    row("cross-entropy fwd bf16", logits.numel() * 2,
        lambda: S.cross_entropy(lt, lab32),
        lambda: F.cross_entropy(logits, labels, reduction="none"))
    _, lse = S.cross_entropy(lt, lab32)
    dl = rand(CE_ROWS)
    dlt = ts.from_dlpack(dl)
    lg = logits.detach().requires_grad_()
    ce = F.cross_entropy(lg, labels, reduction="none")
    row("cross-entropy bwd bf16", 2 * logits.numel() * 2,
        lambda: S.cross_entropy_backward(lt, lab32, lse, dlt),
        lambda: torch.autograd.grad(ce, lg, dl, retain_graph=True))

    params = [rand(ADAM_N) for _ in range(4)]
    p, gr, m, v = params
    tp, tg, tm, tv = (ts.from_dlpack(t) for t in params)
    tparam = torch.nn.Parameter(p.clone())
    tparam.grad = gr.clone()
    opt = torch.optim.AdamW([tparam], lr=1e-3, fused=True)
    row("fused adam f32", 7 * ADAM_N * 4,
        lambda: S.fused_adam(tp, tg, tm, tv, lr=1e-3, step=1), opt.step)

    print(f"\n{'op':<24}{'tessera ms':>11}{'GB/s':>8}{'torch ms':>10}"
          f"{'GB/s':>8}{'vs torch':>9}{'of copy':>9}")
    for name, t, tg_, pt, pg, ratio, frac in rows:
        print(f"{name:<24}{t:>11.3f}{tg_:>8.0f}{pt:>10.3f}{pg:>8.0f}"
              f"{ratio:>9.2f}{frac:>9.2f}")



def _gemms(torch, rand, g):
    print(f"\n{'op':<30}{'tessera TF/s':>13}{'torch TF/s':>12}{'ratio':>7}")
    for n in GEMM:
        a, bm = rand(n, n, dtype=torch.bfloat16), rand(n, n,
                                                       dtype=torch.bfloat16)
        at, bmt = ts.from_dlpack(a), ts.from_dlpack(bm)
        flops = 2 * n ** 3
        t, pt = time_pair(lambda: S.gemm(at, bmt), lambda: a @ bm, torch,
                          reps=10)
        print(f"{f'gemm bf16 {n}^3':<30}{flops / t / 1e9:>13.0f}"
              f"{flops / pt / 1e9:>12.0f}{pt / t:>7.2f}"
              f"   (host {host_us(lambda: S.gemm(at, bmt), torch):.0f} us "
              f"a call)")
        t = time_ms(lambda: S.gemm.with_schedule(PER_TILE)(at, bmt), torch,
                    reps=10)
        print(f"{'  same, one program a tile':<30}{flops / t / 1e9:>13.0f}"
              f"{flops / pt / 1e9:>12.0f}{pt / t:>7.2f}")
        a32, bt32 = rand(n, n), rand(n, n)
        at32, btt32 = ts.from_dlpack(a32), ts.from_dlpack(bt32)
        torch.backends.cuda.matmul.allow_tf32 = True
        t, pt = time_pair(lambda: S.gemm(at32, btt32, transposed_b=True,
                                         allow_tf32=True),
                          lambda: a32 @ bt32.T, torch, reps=10)
        torch.backends.cuda.matmul.allow_tf32 = False
        print(f"{f'gemm tf32 {n}^3 (b as [N, K])':<30}{flops / t / 1e9:>13.0f}"
              f"{flops / pt / 1e9:>12.0f}{pt / t:>7.2f}")
        # fp8 e4m3 (B as [N, K], bf16 out) beside torch._scaled_mm with
        # unit scales and fast accumulation (the tensor cores' fp8
        # accumulator, as Tessera's kernel keeps it); the same bytes.
        a8, bt8 = ((torch.rand(n, n, device="cuda", generator=g) - 0.5).to(
            torch.float8_e4m3fn) for _ in range(2))
        at8, btt8 = (ts.to_device(x.float().cpu().numpy(), dtype="f8E4M3FN")
                     for x in (a8, bt8))
        one = torch.ones((), device="cuda", dtype=torch.float32)
        t, pt = time_pair(lambda: S.gemm(at8, btt8),
                          lambda: torch._scaled_mm(
                              a8, bt8.t(), one, one, out_dtype=torch.bfloat16,
                              use_fast_accum=True), torch, reps=10)
        print(f"{f'gemm fp8 {n}^3 (b as [N, K])':<30}"
              f"{flops / t / 1e9:>13.0f}{flops / pt / 1e9:>12.0f}"
              f"{pt / t:>7.2f}   (peer torch._scaled_mm)")
    for z, m, n, k, bt in BMM:
        a = rand(z, m, k, dtype=torch.bfloat16)
        b = rand(z, n, k, dtype=torch.bfloat16) if bt else rand(
            z, k, n, dtype=torch.bfloat16)
        c = torch.empty(z, m, n, device="cuda", dtype=torch.bfloat16)
        at, btt, ct = (ts.from_dlpack(x) for x in (a, b, c))
        flops = 2 * z * m * n * k
        t, pt = time_pair(lambda: S.gemm(at, btt, transposed_b=bt, out=ct),
                          lambda: torch.matmul(a, b.transpose(1, 2) if bt
                                               else b), torch, reps=10)
        name = f"bmm bf16 {z}x{m}x{n}x{k}{' bT' if bt else ''}"
        print(f"{name:<30}{flops / t / 1e9:>13.0f}{flops / pt / 1e9:>12.0f}"
              f"{pt / t:>7.2f}   (peer torch.matmul)")
        t = time_ms(lambda: _per_batch_grid(at, btt, ct, bt), torch, reps=10)
        print(f"{'  same, a program per tile':<30}{flops / t / 1e9:>13.0f}"
              f"{flops / pt / 1e9:>12.0f}{pt / t:>7.2f}")


def _attention(torch, F, rand):
    print(f"\n{'op':<30}{'tessera TF/s':>13}{'torch TF/s':>12}{'ratio':>7}")
    for bh, s, d in ATTN:
        q, k, vv = (rand(1, bh, s, d, dtype=torch.bfloat16) for _ in range(3))
        qt, kt, vt = (ts.from_dlpack(x.view(bh, s, d)) for x in (q, k, vv))
        for causal in (False, True):
            flops = 4 * bh * s * s * d / (2 if causal else 1)
            t, pt = time_pair(
                lambda: S.flash_attention_2(qt, kt, vt, causal=causal),
                lambda: F.scaled_dot_product_attention(q, k, vv,
                                                       is_causal=causal),
                torch)
            name = f"attn fwd BH{bh} S{s} D{d}{' causal' if causal else ''}"
            host = host_us(lambda: S.flash_attention_2(qt, kt, vt,
                                                       causal=causal), torch)
            print(f"{name:<30}{flops / t / 1e9:>13.0f}"
                  f"{flops / pt / 1e9:>12.0f}{pt / t:>7.2f}"
                  f"   (host {host:.0f} us a call)")
            # Backward: 2.5x the forward's FLOPs (five products of which
            # one recomputes the scores), as FlashAttention counts them.
            o, lse = S.flash_attention_2(qt, kt, vt, causal=causal)
            dout = rand(1, bh, s, d, dtype=torch.bfloat16)
            gt = ts.from_dlpack(dout.view(bh, s, d))
            qg, kg, vg = (x.detach().requires_grad_() for x in (q, k, vv))
            out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
            t, pt = time_pair(
                lambda: S.flash_attention_2_backward(gt, qt, kt, vt, o, lse,
                                                     causal=causal),
                lambda: torch.autograd.grad(out, (qg, kg, vg), dout,
                                            retain_graph=True),
                torch, reps=3)
            name = f"attn bwd BH{bh} S{s} D{d}{' causal' if causal else ''}"
            print(f"{name:<30}{2.5 * flops / t / 1e9:>13.0f}"
                  f"{2.5 * flops / pt / 1e9:>12.0f}{pt / t:>7.2f}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--precompile":
        from tessera._kernel import compile_only
        with compile_only(sys.argv[2]):
            _calls(lambda shape, dt: ts.cuda.empty(shape, dt))
    elif len(sys.argv) == 1:
        main()
    elif len(sys.argv) == 2 and sys.argv[1] in ("rows", "gemm", "attn"):
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
