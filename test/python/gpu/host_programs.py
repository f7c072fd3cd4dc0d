"""Whole programs compiled by the C++ GPU pipeline into GPU program files
(`Module.compile_gpu`: the host program and its kernels' PTX), run by the
runtime's HostProgram on the GPU and compared with the CPU.

Where the compiler is, `--precompile CHIP DIR` writes, for each program
that the pipeline compiles whole (every group has a generated kernel), its
program file, random inputs and the outputs the CPU path computes for
them (`ts.jit` on the CPU, checked against NumPy and JAX elsewhere). On
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
    for seed in range(0, 200, 3):
        fn, args = compile_fuzz.program(*compile_fuzz.load(seed, max_ops=50))
        yield f"fuzz{seed}", fn, args


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
            data = lowered._module.compile_gpu(lowered.name, chip)
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
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump(cases, f)
    print(f"{out_dir}: {len(cases)} programs")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--precompile":
        precompile(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
