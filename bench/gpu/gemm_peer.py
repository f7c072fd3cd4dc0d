"""cuBLAS through torch.matmul for tessera-gemm-bench, on the same card in
the same call: bf16 square GEMMs, and fp8 e4m3 ones through
torch._scaled_mm (unit scales, B column-major, bf16 out), TFLOP/s (median
of 10 after 3 warm-ups).

    python3 bench/gpu/gemm_peer.py [n ...]
"""

import sys

import torch


def median_ms(fn):
    times = []
    for i in range(13):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [4096, 8192]
    print(f"PyTorch {torch.__version__} torch.matmul (cuBLAS) bf16 on "
          f"{torch.cuda.get_device_name()}")
    for n in sizes:
        a = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) - 0.5
        b = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) - 0.5
        t = median_ms(lambda: torch.matmul(a, b))
        print(f"n={n:<6} {t:8.3f} ms {2 * n**3 / t / 1e9:7.1f} TFLOP/s")
    # Fast accumulation keeps the tensor cores' fp8 accumulator, as
    # Tessera's kernel does; without it cuBLAS adds partial sums in f32.
    one = torch.ones((), device="cuda", dtype=torch.float32)
    for fast in (True, False):
        print(f"torch._scaled_mm fp8 e4m3 (B column-major, bf16 out, "
              f"use_fast_accum={fast})")
        for n in sizes:
            a = (torch.rand(n, n, device="cuda") - 0.5).to(torch.float8_e4m3fn)
            bt = (torch.rand(n, n, device="cuda") - 0.5).to(
                torch.float8_e4m3fn)
            t = median_ms(lambda: torch._scaled_mm(
                a, bt.t(), one, one, out_dtype=torch.bfloat16,
                use_fast_accum=fast))
            print(f"n={n:<6} {t:8.3f} ms {2 * n**3 / t / 1e9:7.1f} TFLOP/s")


if __name__ == "__main__":
    main()
