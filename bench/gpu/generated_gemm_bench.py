"""The GEMMs that -tessera-gpu-generate-kernels builds for contraction
groups, with their fused epilogues, beside cuBLAS through PyTorch (eager,
and torch.compile max-autotune-no-cudagraphs, which picks among cuBLAS and
Triton templates with the epilogue fused) on the same card in the same
run. The products are the transformer block's at d 1024, FFN 4096, 16384
tokens (batch 8, sequence 2048), bf16:

- up:   gelu_tanh(x @ w_up + b_up)            [16384, 1024] x [1024, 4096]
  (and, to see what the epilogue costs, x @ w_up and x @ w_up + b_up)
- down: x @ w_down + b_down + residual        [16384, 4096] x [4096, 1024]
- dx:   dy @ w_up^T (B transposed)            [16384, 4096] x [4096, 1024]^T
- dw:   x^T @ dy (A transposed, K = 16384)    [1024, 16384]^T x [16384, 4096]

Each line gives TFLOP/s and the peer's time over Tessera's; outputs are
checked against PyTorch's.

The GPU machine has no compiler: the kernels are built here,

    PYTHONPATH=build/python python bench/gpu/generated_gemm_bench.py \\
        --precompile sm_90a <dir>

and run there (tessera._cuda on the path):

    python3 bench/gpu/generated_gemm_bench.py <dir>
"""

import argparse
import json
import os
import re
import sys
import time

import numpy as np

TOKENS, D, FFN = 16384, 1024, 4096


def programs():
    """name -> (function, argument shapes)."""
    from tessera import op

    def up(x, w, b):
        return op.gelu(op.matmul(x, w) + b, approximate=True)

    def down(x, w, b, r):
        return op.matmul(x, w) + b + r

    def dx(dy, w):
        return op.matmul(dy, w, transpose_rhs=True)

    def dw(x, dy):
        return op.matmul(x, dy, transpose_lhs=True)

    def up_plain(x, w):
        return op.matmul(x, w)

    def up_bias(x, w, b):
        return op.matmul(x, w) + b

    return {"up_plain": (up_plain, [(TOKENS, D), (D, FFN)]),
            "up_bias": (up_bias, [(TOKENS, D), (D, FFN), (FFN,)]),
            "up": (up, [(TOKENS, D), (D, FFN), (FFN,)]),
            "down": (down, [(TOKENS, FFN), (FFN, D), (D,), (TOKENS, D)]),
            "dx": (dx, [(TOKENS, FFN), (D, FFN)]),
            "dw": (dw, [(TOKENS, D), (TOKENS, FFN)])}


def _with_schedule(graph_ir, schedule):
    """The gpu_kernels stage of `graph_ir` with `schedule` set on its
    products (tessera-opt: the Python API has no GPU schedules yet)."""
    import subprocess

    def add(m):
        attrs = m.group(3) + ", " if m.group(3) else ""
        return (f'{m.group(1)} {{{attrs}tsched.schedule = '
                f'#tsched.schedule<"{schedule}">}}')

    text = re.sub(r"(tgraph\.matmul %\S+, %\S+)( \{([^}]*)\})?", add,
                  graph_ir)
    opt = os.environ.get("TESSERA_OPT", "build/bin/tessera-opt")
    done = subprocess.run([opt, "-", "--tessera-gpu-form-groups",
                           "--tessera-gpu-generate-kernels"], input=text,
                          capture_output=True, text=True, check=True)
    return done.stdout


def precompile(chip, out, variants=()):
    import ml_dtypes
    import tessera as ts
    from tessera import _core
    os.makedirs(out, exist_ok=True)
    meta = {}
    jobs = [(name, name, None) for name in programs()]
    for v in variants:
        base, schedule = v.split(":", 1)
        jobs.append((f"{base}@{schedule}", base, schedule))
    for name, base, schedule in jobs:
        fn, shapes = programs()[base]
        args = [np.zeros(s, ml_dtypes.bfloat16) for s in shapes]
        lowered = ts.jit(fn).lower(*args)
        text = (lowered.as_text("gpu_kernels") if schedule is None else
                _with_schedule(lowered.as_text("graph_optimized"), schedule))
        group = re.search(r"tsched\.group contraction [^\n]*", text).group(0)
        kernel = re.search(r"tsched\.kernel = @(\w+)", group).group(1)
        grid = int(re.search(r"tsched\.grid = array<i64: (\d+)>",
                             group).group(1))
        schedule = re.search(r'#tsched\.schedule<"([^"]*)">', group).group(1)
        views = [[int(v) for v in x.split(",")] for x in re.findall(
            r"array<i64: ([\d, ]+)>", group.split("tsched.views")[1])]
        warps = int(re.search(
            rf"func\.func @{kernel}\(.*ttile\.num_warps = (\d+)",
            text).group(1))
        t0 = time.perf_counter()
        ptx = _core.compile_tile(text, chip, "+ptx80", 3, name)["ptx"]
        seconds = time.perf_counter() - t0
        with open(os.path.join(out, f"{len(meta)}.ptx"), "w") as f:
            f.write(ptx)
        meta[name] = dict(base=base, ptx=f"{len(meta)}.ptx", kernel=kernel,
                          grid=grid, warps=warps, views=views,
                          shapes=shapes, schedule=schedule,
                          compile_s=round(seconds, 2))
        print(f"{name}: {kernel} {schedule}, {grid} tiles, compiled in "
              f"{seconds:.2f} s")
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def run(saved, reps, only=None):
    import torch
    import tessera as ts
    from tessera import _cuda
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "..", "test", "python", "gpu"))
    from generated_kernels import pack_memrefs as _pack

    with open(os.path.join(saved, "meta.json")) as f:
        meta = json.load(f)
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    sms = props.multi_processor_count
    print(f"# {props.name}, {sms} SMs; torch {torch.__version__}, "
          f"CUDA {torch.version.cuda}")
    gen = torch.Generator(device=dev).manual_seed(0)

    def timed(fn, n=reps):
        fn()
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(3):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                fn()
            end.record()
            torch.cuda.synchronize()
            best = min(best, start.elapsed_time(end) / n)
        return best

    def peers(name, a):
        import torch.nn.functional as F

        def up(x, w, b):
            return F.gelu(x @ w + b, approximate="tanh")

        def down(x, w, b, r):
            return x @ w + b + r

        def dx(dy, w):
            return dy @ w.t()

        def dw(x, dy):
            return x.t() @ dy

        def up_plain(x, w):
            return x @ w

        def up_bias(x, w, b):
            return x @ w + b

        return {"up": up, "down": down, "dx": dx, "dw": dw,
                "up_plain": up_plain, "up_bias": up_bias}[name]

    for name, m in meta.items():
        if only and name not in only:
            continue
        args = [torch.randn(s, generator=gen, device=dev,
                            dtype=torch.bfloat16) for s in m["shapes"]]
        flops = 2.0
        shapes = m["shapes"]
        base = m["base"]
        if base == "dw":
            flops *= shapes[0][1] * shapes[1][1] * shapes[0][0]
        elif base == "dx":
            flops *= shapes[0][0] * shapes[0][1] * shapes[1][0]
        else:
            flops *= shapes[0][0] * shapes[0][1] * shapes[1][1]
        ref_fn = peers(base, args)
        want = ref_fn(*args)
        out = torch.empty_like(want)
        views = m["views"]
        ts_args = [ts.from_dlpack(a.reshape(v))
                   for a, v in zip(args + [out], views)]
        module = _cuda.Module.load_ptx(
            open(os.path.join(saved, m["ptx"])).read(), 0)
        kernel = module.kernel(m["kernel"])
        packed, offsets = _pack(ts_args)
        grid = min(m["grid"], sms)

        def launch():
            kernel.launch((grid, 1, 1), (32 * m["warps"], 1, 1), 0, packed,
                          offsets)

        launch()
        torch.cuda.synchronize()
        err = (out.float() - want.float()).abs().max().item()
        scale = want.float().abs().max().item()
        ms = timed(launch)
        eager = timed(lambda: ref_fn(*args))
        compiled = torch.compile(ref_fn, mode="max-autotune-no-cudagraphs")
        compiled(*args)
        comp = timed(lambda: compiled(*args))
        tf = flops / ms / 1e9
        print(f"{base:8s} {m['schedule']:42s} Tessera {ms:.3f} ms "
              f"({tf:.0f} TFLOP/s) | torch eager {eager:.3f} ms "
              f"({eager / ms:.2f}x) | max-autotune {comp:.3f} ms "
              f"({comp / ms:.2f}x) | max err {err:.3g} of {scale:.3g}")
        assert err <= 2e-2 * max(scale, 1.0), (name, err, scale)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precompile", nargs=2, metavar=("CHIP", "DIR"))
    ap.add_argument("--variant", action="append", default=[],
                    metavar="PRODUCT:SCHEDULE",
                    help="also build PRODUCT with this #tsched.schedule "
                         "chain (with --precompile)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--only", nargs="*", help="products to run")
    ap.add_argument("dir", nargs="?")
    a = ap.parse_args()
    if a.precompile:
        precompile(*a.precompile, a.variant)
    elif a.dir:
        run(a.dir, a.reps, a.only)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
