"""The PyTorch side of tessera-row-bench, run right after it on the same
card: torch.softmax, an RMSNorm written in eager ops and fused by
torch.compile, and a device-to-device copy (Tensor.copy_), on rows x 4096
f32, as bandwidth (read + write of one tensor).

    python3 bench/gpu/row_peer.py [rows]
"""

import sys

import torch


def time_ms(fn, reps=20):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
    n = 4096
    x = torch.randn(rows, n, device="cuda")
    y = torch.empty_like(x)
    w = torch.rand(n, device="cuda") + 0.5
    gb = 2 * x.numel() * 4 / 1e9

    def rms(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    rms_compiled = torch.compile(rms)
    print(f"PyTorch {torch.__version__}, {rows} x {n} f32 on "
          f"{torch.cuda.get_device_name()}")
    copy = time_ms(lambda: y.copy_(x))
    print(f"{'copy_':<22} {copy:8.3f} ms {gb / copy * 1e3:8.1f} GB/s")
    for name, fn in [("softmax", lambda: torch.softmax(x, -1, out=None)),
                     ("rmsnorm (compile)", lambda: rms_compiled(x, w))]:
        t = time_ms(fn)
        print(f"{name:<22} {t:8.3f} ms {gb / t * 1e3:8.1f} GB/s  "
              f"{copy / t:.2f} of copy")


if __name__ == "__main__":
    main()
