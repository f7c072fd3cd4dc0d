"""Whole programs compiled by the C++ GPU pipeline into GPU program files
(`Module.compile_gpu`: the host program and its kernels' PTX), run by the
runtime's HostProgram on the GPU and compared with the CPU.

Where the compiler is, `--precompile CHIP DIR` writes, for each program
that the pipeline compiles whole (every group has a generated kernel), its
program file, random inputs and the outputs the CPU path computes for
them (`ts.jit` on the CPU, checked against NumPy and JAX elsewhere); for
the programs with flash attention (bf16 and f16), float64 NumPy
references and a tolerance instead. On
the GPU machine, test_host_programs_gpu.py loads each file with the
runtime alone and compares.

    python test/python/gpu/host_programs.py --precompile sm_90a DIR
"""

import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32"}


def programs():
    """(name, function, arguments): f32 programs (the GPU accumulates
    products in f32, which the CPU reference does too for f32)."""
    import tessera as ts
    from tessera import op
    import compile_fuzz

    rng = np.random.default_rng(11)

    def classifier_loss(w1, b1, w2, b2, x, y):
        h = op.relu(op.matmul(x, w1) + b1)
        return op.cross_entropy(op.matmul(h, w2) + b2, y)

    for batch, hidden in ((64, 128), (50, 96), (1, 33)):
        args = ((rng.standard_normal((784, hidden)) * 0.05).astype(np.float32),
                (rng.standard_normal(hidden) * 0.1).astype(np.float32),
                (rng.standard_normal((hidden, 10)) * 0.1).astype(np.float32),
                np.zeros(10, np.float32),
                rng.random((batch, 784)).astype(np.float32),
                rng.integers(0, 10, batch).astype(np.int32))
        yield (f"classifier_step_{batch}x{hidden}",
               ts.value_and_grad(classifier_loss, argnums=(0, 1, 2, 3)), args)

    def norm_dense(x, w, b):
        h = op.layernorm(x)
        return (op.gelu(op.matmul(h, w) + b, approximate=True),
                op.reduce_sum(x, axis=0), op.reshape(h, (-1,)), x)

    yield "norm_dense", norm_dense, (
        rng.standard_normal((40, 72)).astype(np.float32),
        (rng.standard_normal((72, 50)) * 0.2).astype(np.float32),
        rng.standard_normal(50).astype(np.float32))

    def mlp_loss(w1, b1, w2, x, y):
        h = op.gelu(op.matmul(x, w1) + b1, approximate=True)
        p = op.softmax(op.layernorm(op.matmul(h, w2)))
        return op.reduce_mean((p - y) * (p - y))

    yield "mlp_step", ts.value_and_grad(mlp_loss, argnums=(0, 1, 2)), (
        (rng.standard_normal((64, 100)) * 0.1).astype(np.float32),
        (rng.standard_normal(100) * 0.1).astype(np.float32),
        (rng.standard_normal((100, 36)) * 0.1).astype(np.float32),
        rng.standard_normal((48, 64)).astype(np.float32),
        rng.standard_normal((48, 36)).astype(np.float32))
    # Layout changes: transposes that keep the last dim, slices (with
    # steps and offsets), concats along any dim, pads with a value, and
    # ranks 1 to 4 (awkward sizes on purpose).
    def layouts(x, y, z):
        t = op.transpose(x, (2, 0, 1, 3))
        s = op.slice(x, (1, 0, 3, 2), (3, 5, 17, 9), (1, 2, 3, 1))
        c = op.concat([y, op.exp(y), y[:, :3]], axis=1)
        c0 = op.concat([y, y * 2.0], axis=0)
        p = op.pad(z, [3], [5], value=-1.5)
        p2 = op.pad(y, [1, 0], [0, 2], value=0.25)
        return t, s, c, c0, p, p2

    yield "layout_changes", layouts, (
        rng.standard_normal((3, 5, 17, 9)).astype(np.float32),
        rng.standard_normal((6, 7)).astype(np.float32),
        rng.standard_normal(11).astype(np.float32))

    # Reductions of few long rows run as two launches (partials, then
    # rows): a mean and a max over everything, sums of three rows of
    # 140000 (125 chunks of 1120).
    # Column sums over many rows split the same way: a bias gradient over
    # 8192 tokens of 300 columns (128 chunks), a mean over the middle dim
    # of [3, 5000, 40] (50 chunks of 100).
    def long_rows(x, y, g, m):
        return (op.reduce_mean(x), op.reduce_max(x), op.reduce_sum(y, axis=1),
                op.reduce_sum(g, axis=0), op.reduce_mean(m, axis=1))

    yield "long_row_reductions", long_rows, (
        rng.standard_normal((384, 1024)).astype(np.float32),
        rng.standard_normal((3, 140000)).astype(np.float32),
        rng.standard_normal((8192, 300)).astype(np.float32),
        rng.standard_normal((3, 5000, 40)).astype(np.float32))

    # A whole f32 transformer block step (attention decomposed: softmax
    # rows and batched products; RoPE as slices, concats and pads; the
    # head transposes), on the CPU's float32 reference.
    from tessera import nn
    block_p = nn.transformer_block_init(nn.rng(3), 64, 4, 96)
    block_x = (rng.standard_normal((2, 24, 64)) * 0.5).astype(np.float32)

    def block_loss(p, x):
        y = nn.transformer_block(p, x, 4)
        return op.reduce_mean(y * y)

    yield "block_step_f32", ts.value_and_grad(block_loss), (block_p, block_x)
    for seed in range(0, 200, 3):
        fn, args = compile_fuzz.program(*compile_fuzz.load(seed, max_ops=50))
        yield f"fuzz{seed}", fn, args


def _attention64(q, k, v, causal, scale):
    """Attention in float64: (o, p), p the probabilities."""
    s = np.einsum("...qd,...kd->...qk", q, k) * scale
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("...qk,...kd->...qd", p, v), p


def _attention_grads64(q, k, v, do, causal, scale):
    """(dq, dk, dv) of attention in float64, from its definition."""
    _, p = _attention64(q, k, v, causal, scale)
    dv = np.einsum("...qk,...qd->...kd", p, do)
    dp = np.einsum("...qd,...kd->...qk", do, v)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    return (np.einsum("...qk,...kd->...qd", ds, k) * scale,
            np.einsum("...qk,...qd->...kd", ds, q) * scale, dv)


def attention_programs():
    """(name, function, arguments, references, tolerance): programs with
    flash attention (bf16 and f16), their float64 references computed
    from the definition on the same rounded inputs, and the error allowed
    relative to each output's largest magnitude."""
    import ml_dtypes
    import tessera as ts
    from tessera import op

    rng = np.random.default_rng(5)
    cases = [  # shape, dtype, causal, scale, backward
        ((2, 4, 128, 64), ml_dtypes.bfloat16, True, None, True),
        ((1, 3, 200, 128), ml_dtypes.bfloat16, False, None, True),
        ((4, 96, 64), np.float16, True, 0.2, True),
        ((1, 2, 300, 64), np.float16, False, None, False),
        ((1, 1, 64, 128), ml_dtypes.bfloat16, True, 0.05, False),
    ]
    for shape, dtype, causal, scale, backward in cases:
        q, k, v = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
        q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
        s = 1 / np.sqrt(shape[-1]) if scale is None else scale
        tol = 2e-2 if dtype is ml_dtypes.bfloat16 else 4e-3
        name = (f"attention_{np.dtype(dtype).name}_"
                f"{'x'.join(map(str, shape))}"
                f"{'_causal' if causal else ''}")
        o64, _ = _attention64(q64, k64, v64, causal, s)
        if not backward:
            yield (name, lambda q, k, v, c=causal, sc=scale:
                   op.attention(q, k, v, causal=c, scale=sc),
                   (q, k, v), [o64], tol)
            continue
        w = rng.standard_normal(shape).astype(np.float32)

        def loss(q, k, v, w, c=causal, sc=scale):
            o = op.attention(q, k, v, causal=c, scale=sc)
            return op.reduce_sum(op.cast(o, ts.f32) * w)

        do = w.astype(dtype).astype(np.float64)
        grads = _attention_grads64(q64, k64, v64, do, causal, s)
        yield (name + "_grad", ts.value_and_grad(loss, argnums=(0, 1, 2)),
               (q, k, v, w), [np.array((o64 * w).sum()), *grads], tol)


def _leaves(tree):
    import tessera as ts
    return [np.asarray(a) for a in ts.tree.leaves(tree)]


HEADER_BYTES = 8 + 4 + 8 + 8


def fnv1a(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def program_strings(payload, count):
    """The first `count` length-prefixed strings of a program file's
    payload (release, chip, name), and where the rest begins."""
    out, at = [], 0
    for _ in range(count):
        (n,) = struct.unpack_from("<Q", payload, at)
        out.append(payload[at + 8:at + 8 + n].decode())
        at += 8 + n
    return out, at


def reencode(data, version=None, chip=None):
    """A GPU program file with its Tessera release or chip replaced and
    its header (length, hash) made consistent again."""
    payload = data[HEADER_BYTES:]
    (old_version, old_chip), rest = program_strings(payload, 2)
    fields = [version or old_version, chip or old_chip]
    new = b"".join(struct.pack("<Q", len(f)) + f.encode() for f in fields)
    payload = new + payload[rest:]
    return (data[:12] + struct.pack("<QQ", len(payload), fnv1a(payload)) +
            payload)


def precompile(chip, out_dir, limit=60):
    import tessera as ts
    os.makedirs(out_dir, exist_ok=True)
    cases = []
    for name, fn, args in programs():
        if len(cases) >= limit:
            break
        flat = _leaves(args)
        if any(a.dtype not in DTYPES for a in flat):
            continue
        lowered = ts.jit(fn).lower(*args)
        try:
            data = lowered.compile_gpu(chip)
        except ts.TesseraError as e:
            if "has no generated kernel" in str(e):
                continue  # a group of a kind the pipeline cannot run yet
            raise
        want = _leaves(ts.jit(fn)(*args))
        if any(w.dtype not in DTYPES for w in want):
            continue
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "program.tgpu"), "wb") as f:
            f.write(data)
        for i, a in enumerate(flat):
            np.save(os.path.join(d, f"in{i}.npy"), a)
        for i, w in enumerate(want):
            np.save(os.path.join(d, f"want{i}.npy"), w)
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(dict(inputs=[DTYPES[a.dtype] for a in flat],
                           outputs=[DTYPES[w.dtype] for w in want]), f)
        cases.append(name)
    for name, fn, args, refs, tol in attention_programs():
        lowered = ts.jit(fn).lower(*args)
        data = lowered.compile_gpu(chip)
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "program.tgpu"), "wb") as f:
            f.write(data)
        names = []
        for i, a in enumerate(args):
            t = {"bfloat16": "bf16", "float16": "f16",
                 "float32": "f32"}[a.dtype.name]
            names.append(t)
            np.save(os.path.join(d, f"in{i}.npy"),
                    a.view(np.uint16) if t == "bf16" else a)
        for i, r in enumerate(refs):
            np.save(os.path.join(d, f"want{i}.npy"), np.asarray(r))
        outputs = ["f32"] + [names[0]] * 3 if len(refs) == 4 \
            else [names[0]]
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(dict(inputs=names, outputs=outputs, tolerance=tol), f)
        cases.append(name)
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump(cases, f)
    print(f"{out_dir}: {len(cases)} programs")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--precompile":
        precompile(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
