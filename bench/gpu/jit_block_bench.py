"""One training step (loss and all parameter gradients) of a pre-norm
transformer block, bf16, as ts.jit(device="cuda") compiles it (the C++ GPU
pipeline, --tessera-gpu-pipeline: a GPU program file run by the runtime's
HostProgram, replayed as a CUDA graph) beside its peers at their best, on
the same card in the same run: torch eager, torch.compile in each mode
(default, reduce-overhead with CUDA graphs, max-autotune-no-cudagraphs)
and jax.jit with cuDNN attention and with XLA's attention. Each line gives
the peer's time over Tessera's; the best peer is named at the end, with
the step's cold compile time and the host time of a run.

The block is tessera.nn.transformer_block: layernorm, q/k/v projections,
rotary embeddings, causal attention, output projection, residual,
layernorm, GELU (tanh) MLP, residual; the loss is mean(y^2). d 1024, 16
heads, FFN 4096, sequence 2048, batch 1 (change with --batch/--seq).

The GPU machine has no compiler, so the program is compiled here first:

    PYTHONPATH=build/python python bench/gpu/jit_block_bench.py \
        --precompile sm_90a <dir> [--batch B]

then, on the GPU machine (tessera._cuda):

    python3 bench/gpu/jit_block_bench.py [--profile] <dir>

Autotuning: `--precompile CHIP DIR --variants` also writes the step with
each candidate rank of its products' autotune spaces; on the GPU machine
`--tune DIR` times them and writes DIR/tuning.txt; back here
`--precompile CHIP DIR --tuning DIR/tuning.txt` adds program_tuned.tgpu,
which the run times beside the estimate's program (and keeps the faster
for the peers' ratios).
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np

D, HEADS, FFN = 1024, 16, 4096
# JAX takes memory as it needs it, beside PyTorch and Tessera.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def shapes(batch, seq, d=D, ffn=FFN):
    """name -> shape of the block's parameters and input, in the order
    tessera.tree flattens them (sorted names)."""
    return {"attn.wk": (d, d), "attn.wo": (d, d), "attn.wq": (d, d),
            "attn.wv": (d, d), "down.b": (d,), "down.w": (ffn, d),
            "ln1.bias": (d,), "ln1.scale": (d,), "ln2.bias": (d,),
            "ln2.scale": (d,), "up.b": (ffn,), "up.w": (d, ffn),
            "x": (batch, seq, d)}


def arrays(batch, seq, d=D, ffn=FFN, dtype="bf16", seed=0):
    """Deterministic values (made where they are used: nothing but the
    plan travels to the GPU machine), bf16 or f32: weights N(0, 1/fan_in),
    norm scales near 1, small biases, a standard normal input."""
    import ml_dtypes
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes(batch, seq, d, ffn).items():
        a = rng.standard_normal(shape)
        if name.endswith((".w", ".wq", ".wk", ".wv", ".wo")):
            a /= math.sqrt(shape[0])
        elif name.endswith(".scale"):
            a = 1.0 + 0.1 * a
        elif name != "x":
            a *= 0.1
        out[name] = a.astype(ml_dtypes.bfloat16 if dtype == "bf16"
                             else np.float32)
    return out


def nested(flat):
    """{"attn.wq": a, ...} -> {"attn": {"wq": a}, ...} (and x)."""
    p = {}
    for name, a in flat.items():
        if name == "x":
            continue
        group, key = name.split(".")
        p.setdefault(group, {})[key] = a
    return p, flat["x"]


def precompile(chip, out, batch, seq, variants=False, tuning=None):
    import tessera as ts
    from tessera import nn, op
    os.makedirs(out, exist_ok=True)
    values = arrays(batch, seq)
    p, x = nested(values)
    with open(os.path.join(out, "block_shape.json"), "w") as f:
        json.dump({"batch": batch, "seq": seq}, f)

    def loss(p, x):
        y = nn.transformer_block(p, x, HEADS)
        return op.reduce_mean(op.cast(y, "f32") * op.cast(y, "f32"))

    # Cold compile: no compile cache is involved.
    t0 = time.perf_counter()
    lowered = ts.jit(ts.value_and_grad(loss)).lower(p, x)
    data = lowered.compile_gpu(chip)
    seconds = time.perf_counter() - t0
    with open(os.path.join(out, "program.tgpu"), "wb") as f:
        f.write(data)
    with open(os.path.join(out, "program.json"), "w") as f:
        json.dump({"compile_s": seconds}, f)
    print(f"block step: compiled in {seconds:.1f} s, {len(data)} bytes")
    if variants:
        # Autotuning: one program per candidate rank of the products'
        # spaces, for --tune on the GPU machine.
        for v in range(4):
            with open(os.path.join(out, f"variant{v}.tgpu"), "wb") as f:
                f.write(lowered.compile_gpu(chip, variant=v))
        print("block step: 4 variants for autotuning")
    if tuning:
        with open(os.path.join(out, "program_tuned.tgpu"), "wb") as f:
            f.write(lowered.compile_gpu(chip, tuning=tuning))
        print(f"block step: compiled with the tuned schedules of {tuning}")


def tune(saved):
    """Times the variants --precompile --variants wrote and writes the
    products' fastest schedules to DIR/tuning.txt (the GPU machine)."""
    from tessera import _cuda
    paths = sorted(os.path.join(saved, f) for f in os.listdir(saved)
                   if f.startswith("variant") and f.endswith(".tgpu"))
    if not paths:
        sys.exit(f"{saved} has no variant*.tgpu (--precompile --variants)")
    text = _cuda.tune_programs(paths)
    with open(os.path.join(saved, "tuning.txt"), "w") as f:
        f.write(text)
    print(text, end="")


def torch_block(torch, p, x):
    """The same block in PyTorch (p: the arrays by dotted name)."""
    F = torch.nn.functional
    b, s, d = x.shape
    dh = d // HEADS

    def rope(t):
        half = dh // 2
        pos = torch.arange(s, device=t.device, dtype=torch.float32)[:, None]
        freq = torch.exp(torch.arange(half, device=t.device,
                                      dtype=torch.float32)
                         * (-2.0 * math.log(10000.0) / dh))
        angle = pos * freq
        cos, sin = angle.cos().to(t.dtype), angle.sin().to(t.dtype)
        t1, t2 = t[..., :half], t[..., half:]
        return torch.cat([t1 * cos - t2 * sin, t1 * sin + t2 * cos], -1)

    def heads(t):
        return t.view(b, s, HEADS, dh).transpose(1, 2)

    h = F.layer_norm(x, (d,), p["ln1.scale"], p["ln1.bias"], 1e-5)
    q, k, v = (heads(h @ p[f"attn.{w}"]) for w in ("wq", "wk", "wv"))
    y = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
    x = x + y.transpose(1, 2).reshape(b, s, d) @ p["attn.wo"]
    h = F.layer_norm(x, (d,), p["ln2.scale"], p["ln2.bias"], 1e-5)
    u = F.gelu(h @ p["up.w"] + p["up.b"], approximate="tanh")
    y = x + u @ p["down.w"] + p["down.b"]
    return (y.float() * y.float()).mean()


def jax_step(values, attention):
    """jax.jit of the same step: value_and_grad of the same block, the
    attention by jax.nn.dot_product_attention with `attention` ("cudnn"
    or "xla"); returns the jitted step and its arguments."""
    import jax
    import jax.numpy as jnp

    def block(p, x):
        b, s, d = x.shape
        dh = d // HEADS

        def norm(t, scale, bias):
            tf = t.astype(jnp.float32)
            mu = tf.mean(-1, keepdims=True)
            var = ((tf - mu) ** 2).mean(-1, keepdims=True)
            y = (tf - mu) * jax.lax.rsqrt(var + 1e-5)
            return (y * scale.astype(jnp.float32)
                    + bias.astype(jnp.float32)).astype(t.dtype)

        def rope(t):  # [b, s, heads, dh]
            half = dh // 2
            pos = jnp.arange(s, dtype=jnp.float32)[:, None]
            freq = jnp.exp(jnp.arange(half, dtype=jnp.float32)
                           * (-2.0 * math.log(10000.0) / dh))
            angle = (pos * freq)[:, None, :]
            cos, sin = (jnp.cos(angle).astype(t.dtype),
                        jnp.sin(angle).astype(t.dtype))
            t1, t2 = t[..., :half], t[..., half:]
            return jnp.concatenate([t1 * cos - t2 * sin, t1 * sin + t2 * cos],
                                   -1)

        h = norm(x, p["ln1.scale"], p["ln1.bias"])
        q, k, v = ((h @ p[f"attn.{w}"]).reshape(b, s, HEADS, dh)
                   for w in ("wq", "wk", "wv"))
        y = jax.nn.dot_product_attention(rope(q), rope(k), v, is_causal=True,
                                         implementation=attention)
        x = x + y.reshape(b, s, d) @ p["attn.wo"]
        h = norm(x, p["ln2.scale"], p["ln2.bias"])
        u = jax.nn.gelu(h @ p["up.w"] + p["up.b"], approximate=True)
        y = x + u @ p["down.w"] + p["down.b"]
        yf = y.astype(jnp.float32)
        return (yf * yf).mean()

    step = jax.jit(jax.value_and_grad(block))
    p = {k: jnp.asarray(v) for k, v in values.items() if k != "x"}
    x = jnp.asarray(values["x"])
    return step, p, x


def run(saved, reps, profile=False, top=14):
    import torch
    import tessera as ts
    with open(os.path.join(saved, "block_shape.json")) as f:
        shape = json.load(f)
    batch, seq = shape["batch"], shape["seq"]
    path = os.path.join(saved, "program.tgpu")
    # What ts.jit(device="cuda") runs for this step, on device tensors.
    prog = ts.GpuProgram.load(path)
    values = arrays(batch, seq)
    dev_args = [ts.to_device(a) for a in values.values()]
    name = torch.cuda.get_device_name()
    print(f"# {name}; torch {torch.__version__}; block d {D}, {HEADS} "
          f"heads, FFN {FFN}, batch {batch}, seq {seq}, bf16, one training "
          f"step (loss and all gradients)")

    def timed(fn, n):
        _sync(fn())
        torch.cuda.synchronize()
        best = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(n):
                out = fn()
            torch.cuda.synchronize()
            _sync(out)
            best.append((time.perf_counter() - t0) / n * 1e3)
        return min(best), out

    flops = _step_flops(batch, seq)
    print(f"{'':<30}{'ms':>9}{'TFLOP/s':>9}{'loss':>12}{'peer/tessera':>14}",
          flush=True)

    def tessera_step():
        return prog(*dev_args)

    t_ms, out = timed(tessera_step, reps)
    print(f"{'tessera jit':<30}{t_ms:>9.2f}{flops / t_ms / 1e9:>9.0f}"
          f"{float(np.asarray(out[0].numpy()).reshape(())):>12.5f}"
          f"{'':>14}", flush=True)
    tuned_path = os.path.join(saved, "program_tuned.tgpu")
    if os.path.exists(tuned_path):
        # The same step with the products' schedules tuned on this card.
        tuned = ts.GpuProgram.load(tuned_path)
        u_ms, u_out = timed(lambda: tuned(*dev_args), reps)
        print(f"{'tessera jit, autotuned':<30}{u_ms:>9.2f}"
              f"{flops / u_ms / 1e9:>9.0f}"
              f"{float(np.asarray(u_out[0].numpy()).reshape(())):>12.5f}"
              f"{u_ms / t_ms:>14.2f}", flush=True)
        if u_ms < t_ms:
            prog, t_ms = tuned, u_ms
    # The same program launched step by step (replay off at load).
    os.environ["TESSERA_CUDA_GRAPHS"] = "0"
    stepped = ts.GpuProgram.load(path)
    del os.environ["TESSERA_CUDA_GRAPHS"]
    s_ms, s_out = timed(lambda: stepped(*dev_args), reps)
    print(f"{'  (launched step by step)':<30}{s_ms:>9.2f}"
          f"{flops / s_ms / 1e9:>9.0f}"
          f"{float(np.asarray(s_out[0].numpy()).reshape(())):>12.5f}"
          f"{'':>14}", flush=True)
    with open(os.path.join(saved, "program.json")) as f:
        compile_s = json.load(f)["compile_s"]
    print(f"# {prog.launches} launches; compiled cold in {compile_s:.1f} s; "
          + (f"{prog.graph_runs} runs replayed as a CUDA graph"
             if prog.graph_failure is None
             else f"not replayed: {prog.graph_failure}"), flush=True)
    # Host time of a call alone (argument buffers, HostProgram.run, result
    # tensors), the queue drained before each so that no launch waits for
    # room in it. A ts.jit hit adds its key and output tree:
    # bench/jit_dispatch_bench.py times them where the compiler is.
    for label, program in (("replayed", prog), ("step by step", stepped)):
        host = []
        for _ in range(50):
            ts.synchronize()
            t0 = time.perf_counter()
            out = program(*dev_args)
            host.append(time.perf_counter() - t0)
        ts.synchronize()
        del out
        print(f"# host time of a call, {label}: "
              f"{np.median(host) * 1e6:.0f} us (median of 50)", flush=True)

    def report(label, ms, value):
        print(f"{label:<30}{ms:>9.2f}{flops / ms / 1e9:>9.0f}{value:>12.5f}"
              f"{ms / t_ms:>14.2f}", flush=True)

    # PyTorch: the same parameters and input, as leaf tensors.
    def to_torch(a):
        return torch.tensor(a.astype(np.float32)).to("cuda", torch.bfloat16)

    tp = {k: to_torch(v).requires_grad_() for k, v in values.items()
          if k != "x"}
    tx = to_torch(values["x"])

    def eager_step():
        for v in tp.values():
            v.grad = None
        out = torch_block(torch, tp, tx)
        out.backward()
        return out

    e_ms, e_loss = timed(eager_step, reps)
    report("torch eager", e_ms, float(e_loss.detach()))
    peers = {"torch eager": e_ms}
    compiled_steps = {}
    for mode in ("default", "reduce-overhead", "max-autotune-no-cudagraphs"):
        label = "torch.compile" if mode == "default" else f"  {mode}"
        try:
            torch._dynamo.reset()
            compiled = torch.compile(lambda: torch_block(torch, tp, tx),
                                     mode=None if mode == "default" else mode)

            def compiled_step(compiled=compiled, graphs=mode ==
                              "reduce-overhead"):
                if graphs:
                    torch.compiler.cudagraph_mark_step_begin()
                for v in tp.values():
                    v.grad = None
                out = compiled()
                out.backward()
                return out

            c_ms, c_loss = timed(compiled_step, reps)
            report(label, c_ms, float(c_loss.detach()))
            peers[f"torch.compile {mode}"] = c_ms
            compiled_steps[mode] = compiled_step
        except Exception as e:  # no Triton / C compiler on the machine
            print(f"torch.compile {mode} unavailable here: "
                  f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
    jax_steps = {}
    for attention in ("cudnn", "xla"):
        label = f"jax.jit {attention}"
        try:
            step, jp, jx = jax_step(values, attention)

            def jax_call(step=step, jp=jp, jx=jx):
                value, grads = step(jp, jx)
                return value, grads

            def jax_timed(fn, n):
                import jax
                jax.block_until_ready(fn())
                best = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    for _ in range(n):
                        out = fn()
                    jax.block_until_ready(out)
                    best.append((time.perf_counter() - t0) / n * 1e3)
                return min(best), out

            j_ms, (j_loss, _) = jax_timed(jax_call, reps)
            report(label, j_ms, float(j_loss))
            peers[label] = j_ms
            jax_steps[attention] = jax_call
        except Exception as e:
            print(f"{label} unavailable here: {type(e).__name__}: "
                  f"{str(e).splitlines()[0][:200]}")
    best = min(peers, key=peers.get)
    print(f"# best peer: {best}, {peers[best]:.2f} ms; Tessera at "
          f"{peers[best] / t_ms:.2f}x of it", flush=True)
    compiled_step = compiled_steps.get("max-autotune-no-cudagraphs") or \
        compiled_steps.get("default")
    if profile:
        _kernel_profile(torch, "tessera jit", tessera_step, top=top)
        for mode, fn in compiled_steps.items():
            if mode != "reduce-overhead":  # (graph replays hide kernels)
                _kernel_profile(torch, f"torch.compile {mode}", fn, top=top)
        for attention, fn in jax_steps.items():
            _kernel_profile(torch, f"jax.jit {attention}",
                            lambda fn=fn: _block(fn()), top=top)


def _kernel_profile(torch, label, fn, steps=5, top=14):
    """Kernel time per step from the profiler's CUDA activity (which
    sees Tessera's driver-API launches too): the total, and the kernels
    that take most of it."""
    from torch.profiler import ProfilerActivity, profile
    _sync(fn())
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            out = fn()
        torch.cuda.synchronize()
        _sync(out)
    rows = []
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = e.self_cuda_time_total
        if us > 0:
            rows.append((us / steps, e.count / steps, e.key))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"# {label}: {sum(r[1] for r in rows):.0f} kernels a step, "
          f"{total / 1e3:.3f} ms of kernel time a step")
    for us, n, key in rows[:top]:
        print(f"#   {us:8.1f} us {n:5.1f}x  {key[:110]}")


def _block(out):
    import jax
    return jax.block_until_ready(out)


def _sync(out):
    """Waits for Tessera's queue (its results copied to the host)."""
    try:
        first = out[0]
        if hasattr(first, "numpy"):
            first.numpy()
    except (TypeError, IndexError):
        pass


def _step_flops(batch, seq):
    """Forward: projections 2*B*S*(4 D^2 + 2 D FFN), causal attention
    2*B*S^2*D; a training step three times that."""
    tokens = batch * seq
    fwd = 2 * tokens * (4 * D * D + 2 * D * FFN) + 2 * batch * seq * seq * D
    return 3 * fwd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--precompile", nargs=2, metavar=("CHIP", "DIR"))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--profile", action="store_true",
                    help="also print each step's kernel time and top kernels")
    ap.add_argument("--top", type=int, default=14, metavar="N",
                    help="with --profile: how many kernels to list")
    ap.add_argument("--variants", action="store_true",
                    help="with --precompile: also the autotuning variants")
    ap.add_argument("--tuning", metavar="FILE",
                    help="with --precompile: also the step compiled with "
                         "these tuned schedules (program_tuned.tgpu)")
    ap.add_argument("--tune", action="store_true",
                    help="on the GPU: time DIR's variants, write "
                         "DIR/tuning.txt")
    ap.add_argument("dir", nargs="?")
    a = ap.parse_args()
    if a.precompile:
        precompile(a.precompile[0], a.precompile[1], a.batch, a.seq,
                   a.variants, a.tuning)
    elif a.tune and a.dir:
        tune(a.dir)
    elif a.dir:
        run(a.dir, a.reps, a.profile, a.top)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
