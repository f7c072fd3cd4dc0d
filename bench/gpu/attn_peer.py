"""torch.nn.functional.scaled_dot_product_attention for tessera-attn-bench,
on the same card in the same call: bf16, batch*heads 16, head dim 128,
causal and not, TFLOP/s (median of 5 after 3 warm-ups).

    python3 bench/gpu/attn_peer.py [seq ...]
"""

import sys

import torch
import torch.nn.functional as F


def main():
    seqs = [int(a) for a in sys.argv[1:]] or [4096, 16384]
    print(f"PyTorch {torch.__version__} scaled_dot_product_attention bf16 on "
          f"{torch.cuda.get_device_name()}")
    for s in seqs:
        q, k, v = (torch.randn(1, 16, s, 128, device="cuda",
                               dtype=torch.bfloat16) for _ in range(3))
        for causal in (False, True):
            times = []
            for i in range(8):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                end.record()
                end.synchronize()
                if i >= 3:
                    times.append(start.elapsed_time(end))
            times.sort()
            t = times[len(times) // 2]
            flops = 4 * 16 * s * s * 128 * (0.5 if causal else 1.0)
            print(f"seq={s:<6} {'causal' if causal else 'full':<7} "
                  f"{t:9.3f} ms {flops / t / 1e9:7.1f} TFLOP/s")


if __name__ == "__main__":
    main()
