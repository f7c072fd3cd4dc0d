"""cuBLAS through torch.matmul for tessera-gemm-bench, on the same card in
the same call: bf16 square GEMMs, TFLOP/s (median of 10 after 3 warm-ups).

    python3 bench/gpu/gemm_peer.py [n ...]
"""

import sys

import torch


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [4096, 8192]
    print(f"PyTorch {torch.__version__} torch.matmul (cuBLAS) bf16 on "
          f"{torch.cuda.get_device_name()}")
    for n in sizes:
        a = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) - 0.5
        b = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) - 0.5
        times = []
        for i in range(13):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(a, b)
            end.record()
            end.synchronize()
            if i >= 3:
                times.append(start.elapsed_time(end))
        times.sort()
        t = times[len(times) // 2]
        print(f"n={n:<6} {t:8.3f} ms {2 * n**3 / t / 1e9:7.1f} TFLOP/s")


if __name__ == "__main__":
    main()
