"""The kernels the GPU pipeline generates for row, contraction and
reduction groups (-tessera-gpu-generate-kernels), run one group at a time
against the CPU.

Where the compiler is, `--precompile CHIP DIR` lowers programs (the GPU
tests' programs, random fuzzer programs and a few made for the kernels'
corners) to the `gpu_kernels` stage, and for each row group writes its
kernel's PTX, random inputs, and the outputs the CPU computes for the
group's Graph IR body (`tessera-run` on the body as a function of its
own: the CPU path, checked against NumPy elsewhere, is the reference). On
the GPU machine, test_generated_kernels_gpu.py launches each kernel on the
inputs and compares.

    python test/python/gpu/generated_kernels.py --precompile sm_90a DIR
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

GROUP = re.compile(
    r"(%[\w#:]+) = tsched\.group (?:row|contraction|reduction)"
    r"(?: \[(\d+), (\d+)\])? "
    r"\(([^)]*)\) "
    r"\{([^}]*)\} : \(([^)]*)\) -> (\([^\n]*\)|tensor<[^>]*>) \{\n"
    r"\s*\^bb0\(([^)]*)\):\n(.*?)\n\s*tsched\.yield ([^:]*) : ([^\n]*)\n",
    re.S)


def _programs():
    """(name, lowered program) for the programs whose groups are run."""
    import ml_dtypes
    import tessera as ts
    from tessera import op
    import compile_fuzz
    import jit_programs

    for name, (fn, args) in jit_programs.cases().items():
        yield name, fn.lower(*args)
    rng = np.random.default_rng(7)

    def bf16_norm(x, s, b):
        return op.cast(op.layernorm(op.cast(x, ts.f32)) * s + b, ts.bf16)

    x = rng.standard_normal((24, 300)).astype(ml_dtypes.bfloat16)
    s = rng.standard_normal(300).astype(np.float32)
    yield "bf16_norm", ts.jit(bf16_norm).lower(x, s, s)

    def causal(q, k, v):
        return op.attention(q, k, v, causal=True)

    q = rng.standard_normal((2, 3, 40, 16)).astype(np.float32)
    yield "causal_f32_attention", ts.jit(ts.grad(
        lambda q, k, v: op.reduce_sum(causal(q, k, v) ** 2))).lower(q, q, q)

    def classifier_loss(w1, b1, w2, b2, x, y):
        h = op.relu(op.matmul(x, w1) + b1)
        return op.cross_entropy(op.matmul(h, w2) + b2, y)

    w1 = (rng.standard_normal((784, 96)) * 0.05).astype(np.float32)
    w2 = (rng.standard_normal((96, 10)) * 0.1).astype(np.float32)
    xs = rng.random((50, 784)).astype(np.float32)
    labels = rng.integers(0, 10, 50).astype(np.int32)
    yield "classifier_grad", ts.jit(ts.grad(
        classifier_loss, argnums=(0, 1, 2, 3))).lower(
            w1, np.zeros(96, np.float32), w2, np.zeros(10, np.float32), xs,
            labels)

    def wide(x):
        return op.softmax(x * 3.0, axis=-1), op.reduce_max(x, axis=-1)

    yield "rows_of_5000", ts.jit(wide).lower(
        rng.standard_normal((5, 5000)).astype(np.float32))
    yield from _contractions(rng)
    yield from _reductions(rng)
    yield from _arg_reductions(rng)
    for seed in range(0, 60, 3):
        fn, args = compile_fuzz.program(*compile_fuzz.load(seed, max_ops=40))
        yield f"fuzz{seed}", ts.jit(fn).lower(*args)


def _contractions(rng):
    """GEMMs in each form the generator builds: flat and batched, either
    operand transposed, batch dims broadcast, sizes that no tile divides,
    and epilogues with columns, rows, full tiles, iota and activations."""
    import ml_dtypes
    import tessera as ts
    from tessera import op

    def arr(shape, dtype=np.float32):
        return rng.standard_normal(shape).astype(dtype)

    bf = ml_dtypes.bfloat16

    def dense(x, w, b, r):
        return op.gelu(op.matmul(x, w) + b, approximate=True) + r

    yield "gemm_dense_bf16", ts.jit(dense).lower(
        arr((3, 50, 72), bf), arr((72, 136), bf), arr(136, bf),
        arr((3, 50, 136), bf))
    yield "gemm_dense_f32", ts.jit(dense).lower(
        arr((100, 48)), arr((48, 36)), arr(36), arr((100, 36)))
    yield "gemm_dense_f16", ts.jit(lambda x, w: op.relu(op.matmul(x, w))).lower(
        arr((33, 200), np.float16), arr((200, 70), np.float16))

    def trans(a, b, c, d):
        return (op.matmul(a, b, transpose_lhs=True),
                op.matmul(c, d, transpose_rhs=True) * 0.5)

    yield "gemm_transposed_bf16", ts.jit(trans).lower(
        arr((130, 40), bf), arr((130, 90), bf), arr((40, 77), bf),
        arr((90, 77), bf))
    yield "gemm_transposed_f32", ts.jit(trans).lower(
        arr((19, 23)), arr((19, 17)), arr((23, 5)), arr((17, 5)))

    def batched(a, b, c, rows):
        # Batch dims broadcast on both sides; a row statistic and an
        # iota in the epilogue.
        p = op.matmul(a, b)
        return p - rows + op.cast(op.iota(p.shape, p.ndim - 2), p.dtype) \
            * 0.01, op.matmul(c, b, transpose_rhs=False)

    yield "gemm_batched_f32", ts.jit(batched).lower(
        arr((2, 1, 21, 13)), arr((1, 3, 13, 30)), arr((21, 13)),
        arr((2, 3, 21, 1)))
    yield "gemm_batched_bf16", ts.jit(
        lambda a, b: op.matmul(a, b, transpose_lhs=True)).lower(
        arr((4, 72, 40), bf), arr((4, 72, 136), bf))
    yield "gemm_dot_general", ts.jit(lambda a, b: op.dot_general(
        a, b, [0], [0], [1], [2])).lower(arr((3, 24, 20)), arr((3, 9, 24)))
    yield "gemm_tiny", ts.jit(lambda a, b: op.matmul(a, b) + 1.0).lower(
        arr((1, 1)), arr((1, 1)))
    yield "gemm_long_k_bf16", ts.jit(
        lambda a, b: op.matmul(a, b, transpose_rhs=True)).lower(
        arr((64, 1000), bf), arr((48, 1000), bf))
    yield from _random_contractions(np.random.default_rng(11), 24)


def _reductions(rng):
    """Reductions over leading, middle and trailing runs of dims: column
    blocks that do not divide the columns, batches whose rows no tile
    divides, whole tensors, long rows, each kind and float type."""
    import ml_dtypes
    import tessera as ts
    from tessera import op

    kinds = [op.reduce_sum, op.reduce_mean, op.reduce_max, op.reduce_min]
    cases = [((1000, 37), (0,), np.float32),
             ((3, 77, 50), (1,), np.float32),
             ((6, 130, 3, 40), (1, 2), ml_dtypes.bfloat16),
             ((4096, 1024), (0,), ml_dtypes.bfloat16),
             ((5, 9000), (0, 1), np.float32),
             ((7, 33, 300), (1, 2), np.float16),
             ((2, 1, 8), (0,), np.float32),
             ((513, 2, 64), (0, 1), np.float32)]
    for i, (shape, axes, dtype) in enumerate(cases):
        x = rng.standard_normal(shape).astype(dtype)
        reduce = kinds[i % len(kinds)]

        def fn(x, reduce=reduce, axes=axes):
            return reduce(x, axis=axes)

        yield f"reduce{i}", ts.jit(fn).lower(x)


def _random_contractions(rng, count):
    """Random products: sizes from 1 to a few tiles (none a multiple of a
    tile, some exactly one), K from 0 up, either operand transposed, batch
    dims of either side broadcast, f32/bf16/f16, and a random epilogue of
    columns, rows, full tiles and activations."""
    import ml_dtypes
    import tessera as ts
    from tessera import op
    dtypes = [np.float32, ml_dtypes.bfloat16, np.float16]
    sizes = [1, 3, 16, 33, 64, 100, 130, 257]
    for i in range(count):
        dtype = dtypes[i % 3]
        m, n = (int(rng.choice(sizes)) for _ in range(2))
        k = int(rng.choice([0, 1, 7, 64, 200]))
        ta, tb = bool(rng.integers(2)), bool(rng.integers(2))
        batch = [int(b) for b in rng.choice([1, 2, 3], int(rng.integers(3)))]
        a_batch = [b if rng.random() < 0.7 else 1 for b in batch]
        b_batch = [] if rng.random() < 0.4 else [
            b if rng.random() < 0.7 else 1 for b in batch]
        a_shape = a_batch + ([k, m] if ta else [m, k])
        b_shape = b_batch + ([n, k] if tb else [k, n])
        out = [max(x, y) for x, y in zip(
            [1] * (len(batch) - len(a_batch)) + a_batch,
            [1] * (len(batch) - len(b_batch)) + b_batch)] + [m, n]
        extras = []
        steps = []
        for _ in range(int(rng.integers(4))):
            kind = rng.choice(["col", "row", "full", "act"])
            if kind == "col":
                extras.append(rng.standard_normal(n).astype(dtype))
            elif kind == "row":
                extras.append(rng.standard_normal(out[:-1] + [1])
                              .astype(dtype))
            elif kind == "full":
                extras.append(rng.standard_normal(out).astype(dtype))
            steps.append(kind)

        def fn(a, b, *xs, steps=tuple(steps), ta=ta, tb=tb):
            y = op.matmul(a, b, transpose_lhs=ta, transpose_rhs=tb)
            it = iter(xs)
            for j, kind in enumerate(steps):
                if kind == "act":
                    y = (op.gelu(y, approximate=True) if j % 2 else
                         op.sigmoid(y) * y)
                else:
                    y = y + next(it) if j % 2 else y * next(it)
            return y

        args = [rng.standard_normal(a_shape).astype(dtype),
                rng.standard_normal(b_shape).astype(dtype)] + extras
        yield f"gemm_random{i}", ts.jit(fn).lower(*args)


_PRODUCT = re.compile(
    r"(tgraph\.(?:matmul|batch_matmul|dot_general) %[\w#:]+, %[\w#:]+)"
    r"( \{[^}]*\})?( : [^\n]*)")


def _f32_accumulation(body):
    """`body` with its bf16 and f16 products accumulating in f32. The GPU
    accumulates products in f32 (the tensor cores' accumulator); on the
    CPU, one without a policy accumulates in its operands' type."""
    def fix(m):
        head, attrs, types = m.group(1), m.group(2) or "", m.group(3)
        if "policy" in attrs or not re.search(r"x(bf16|f16)>", types):
            return m.group(0)
        policy = "policy = #tgraph.policy<accum = f32>"
        attrs = (attrs[:-1] + f", {policy}}}") if attrs else f" {{{policy}}}"
        return head + attrs + types
    return _PRODUCT.sub(fix, body)


def pack_memrefs(tensors):
    """The parameter bytes and offsets of a kernel taking `tensors` (device
    tensors, row-major) as memrefs: pointer, pointer, offset 0, sizes,
    strides."""
    fields = []
    for t in tensors:
        shape = t.shape
        strides, s = [], 1
        for d in reversed(shape):
            strides.append(s)
            s *= d
        fields += [t.pointer, t.pointer, 0, *shape, *reversed(strides)]
    packed = struct.pack(f"<{len(fields)}q", *[
        f if f < 2 ** 63 else f - 2 ** 64 for f in fields])
    return packed, [8 * i for i in range(len(fields))]


def _types(text):
    """The tensor types of a comma-separated list."""
    return re.findall(r"tensor<([^>]*)>", text)


def _shape_dtype(t):
    parts = t.split("x")
    dims = [int(p) for p in parts[:-1]]
    return dims, parts[-1]


def _arg_reductions(rng):
    """argmax and argmin over the last dim in row kernels: ties (the first
    index wins), NaNs (the first NaN wins), rows of -inf, rows whose length
    is not a power of two (masked columns), 16-bit inputs, i32 results."""
    import ml_dtypes
    import tessera as ts
    from tessera import op

    def ties(x):
        return op.argmax(op.floor(x * 2.0), axis=-1)

    def nans(x):
        return op.argmax(op.log(x), axis=-1)

    def minus_inf(x):
        return op.argmax(op.log(op.relu(x - 1.0)), axis=-1)

    def smallest(x):
        return op.argmin(op.floor(x * 3.0), axis=-1).astype(np.int32)

    def both(x):
        return (op.argmax(x, axis=-1), op.argmin(op.log(x + 0.5), axis=-1),
                op.reduce_max(x, axis=-1))

    cases = [("argmax_ties", ties, (64, 37), np.float32),
             ("argmax_nan", nans, (33, 300), np.float32),
             ("argmax_minus_inf", minus_inf, (16, 10), np.float32),
             ("argmin_ties_bf16", smallest, (5, 7, 129), ml_dtypes.bfloat16),
             ("argmax_argmin_f16", both, (48, 1000), np.float16)]
    for name, fn, shape, dtype in cases:
        x = rng.standard_normal(shape).astype(dtype)
        yield name, ts.jit(fn).lower(x)


def _random(shape, dtype, rng):
    import ml_dtypes
    if dtype == "i1":
        return rng.random(shape) < 0.5
    if dtype in ("i32", "i64"):
        return rng.integers(-5, 6, shape).astype(f"int{dtype[1:]}")
    x = rng.standard_normal(shape)
    return x.astype({"f32": np.float32, "f16": np.float16,
                     "bf16": ml_dtypes.bfloat16}[dtype])


def _to_npy(a):
    """What tessera-run reads: 16-bit floats as their bits."""
    import ml_dtypes
    if a.dtype == ml_dtypes.bfloat16 or a.dtype == np.float16:
        return a.view(np.uint16)
    return a


def _tessera_run():
    for path in (os.environ.get("TESSERA_RUN"),
                 os.path.join(HERE, "..", "..", "..", "build", "bin",
                              "tessera-run"),
                 shutil.which("tessera-run")):
        if path and os.path.exists(path):
            return path
    raise SystemExit("tessera-run not found (set TESSERA_RUN)")


# The ping-pong GEMM's schedule (two programs a block taking turns on the
# tensor cores): a candidate the estimate ranks after the default tile, so
# the products of the programs above rarely take it by themselves.
PINGPONG = "block(64, 128).k(64).warps(4).stages(4).pingpong"


def _with_pingpong(lowered):
    """The gpu_kernels stage of `lowered` with its bf16 and f16 products
    scheduled as ping-pong GEMMs (tessera-opt: a schedule on the product
    op), or None when it has none."""
    text = lowered.as_text("graph_optimized")

    def add(m):
        head, attrs, types = m.group(1), m.group(2) or "", m.group(3)
        if not re.search(r"x(bf16|f16)>, tensor<[^>]*x(bf16|f16)>", types):
            return m.group(0)
        schedule = f'tsched.schedule = #tsched.schedule<"{PINGPONG}">'
        attrs = (attrs[:-1] + f", {schedule}}}") if attrs else \
            f" {{{schedule}}}"
        return head + attrs + types

    scheduled = _PRODUCT.sub(add, text)
    if scheduled == text:
        return None
    opt = os.environ.get("TESSERA_OPT") or os.path.join(
        os.path.dirname(_tessera_run()), "tessera-opt")
    done = subprocess.run([opt, "-", "--tessera-gpu-form-groups",
                           "--tessera-gpu-generate-kernels"],
                          input=scheduled, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"ping-pong schedule refused:\n{done.stderr}")
    return done.stdout


def _texts():
    """(name, gpu_kernels text): each program's, then those of the
    programs with 16-bit products scheduled as ping-pong GEMMs."""
    pingpong = []
    for name, lowered in _programs():
        yield name, lowered.as_text("gpu_kernels")
        if name.startswith("gemm") or name == "bf16_mlp":
            pingpong.append((name, lowered))
    for name, lowered in pingpong:
        text = _with_pingpong(lowered)
        if text is not None:
            yield f"pingpong_{name}", text


def precompile(chip, out_dir, limit=400):
    from tessera import _core
    os.makedirs(out_dir, exist_ok=True)
    run = _tessera_run()
    rng = np.random.default_rng(0)
    cases = []
    for name, text in _texts():
        ptx = None
        for k, m in enumerate(GROUP.finditer(text)):
            if len(cases) >= limit:
                break
            _, r, c, _, attrs, in_types, out_types, args, body, vals, \
                yield_types = m.groups()
            if "tsched.kernel" not in attrs:
                continue  # a reduction group without a generated kernel
            kernel = re.search(r"tsched\.kernel = @(\w+)", attrs).group(1)
            grid = int(re.search(r"tsched\.grid = array<i64: (\d+)>",
                                 attrs).group(1))
            views = [[int(v) for v in x.split(",")] for x in re.findall(
                r"array<i64: ([\d, ]+)>", attrs.split("tsched.views")[1])]
            ins = [_shape_dtype(t) for t in _types(in_types)]
            outs = [_shape_dtype(t) for t in _types(yield_types)]
            if any(0 in s for s, _ in ins + outs):
                continue  # empty tensors launch nothing
            body = _f32_accumulation(body)
            fn = (f"module {{\n  func.func @g({args}) -> "
                  f"({yield_types}) {{\n{body}\n    return {vals} : "
                  f"{yield_types}\n  }}\n}}\n")
            case = f"{name}_{k}"
            d = os.path.join(out_dir, case)
            os.makedirs(d, exist_ok=True)
            inputs = [_random(s, t, rng) for s, t in ins]
            with tempfile.TemporaryDirectory() as tmp:
                src = os.path.join(tmp, "g.mlir")
                with open(src, "w") as f:
                    f.write(fn)
                cmd = [run, src, "--fn=g", "--quiet", "--no-cache",
                       f"--out-dir={tmp}"]
                for i, a in enumerate(inputs):
                    p = os.path.join(tmp, f"in{i}.npy")
                    np.save(p, _to_npy(a))
                    cmd.append(f"--input={p}")
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode:
                    raise SystemExit(f"{case}: tessera-run failed:\n"
                                     f"{done.stderr}\n{fn}")
                for i in range(len(outs)):
                    shutil.copy(os.path.join(tmp, f"out{i}.npy"),
                                os.path.join(d, f"want{i}.npy"))
            for i, a in enumerate(inputs):
                np.save(os.path.join(d, f"in{i}.npy"), _to_npy(a))
            if ptx is None:
                # One PTX module a program, shared by its groups' cases.
                ptx = _core.compile_tile(text, chip, "+ptx80", 3,
                                         name)["ptx"]
                with open(os.path.join(out_dir, f"{name}.ptx"), "w") as f:
                    f.write(ptx)
            warps = int(re.search(
                rf"func\.func @{kernel}\(.*ttile\.num_warps = (\d+)",
                text).group(1))
            # (A ping-pong GEMM's blocks hold two programs of `warps`.)
            per_block = re.search(
                rf"func\.func @{kernel}\(.*ttile\.programs_per_block = "
                rf"(\d+)", text)
            warps *= int(per_block.group(1)) if per_block else 1
            # A sum's rounding error grows with the sum of the magnitudes
            # it adds, not with its result (which cancellation can make
            # small): the test allows for it.
            abs_sum = 0.0
            red = re.search(r"tgraph\.reduce_(sum|mean) %\w+ \{dims = "
                            r"array<i64: ([\d, ]+)>", body)
            if red and re.search(r"_reduce\d+$", kernel):
                axes = tuple(int(a) for a in red.group(2).split(","))
                mags = np.abs(inputs[0].astype(np.float64)).sum(axis=axes)
                abs_sum = float(mags.max()) if mags.size else 0.0
            meta = dict(kernel=kernel, ptx=f"{name}.ptx", grid=grid,
                        warps=warps, views=views,
                        inputs=[t for _, t in ins],
                        outputs=[t for _, t in outs],
                        out_shapes=[s for s, _ in outs],
                        rows=int(r or 0), cols=int(c or 0), abs_sum=abs_sum)
            with open(os.path.join(d, "meta.json"), "w") as f:
                json.dump(meta, f)
            cases.append(case)
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump(cases, f)
    print(f"{out_dir}: {len(cases)} kernels")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--precompile":
        precompile(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
