"""The GPU pipeline's fusion groups (`as_text("gpu_groups")`, the pass
-tessera-gpu-form-groups) on the programs of the GPU tests and on random
programs of the compile fuzzer: every op of the optimized graph lands in
exactly one group (or stays outside as a view, a constant or an index
tensor), each group holds only what its kernel family computes, and the
normalizations and matmul epilogues fuse as they should. The pass manager
verifies the grouped IR (dominance, isolation, types) after the pass."""

import collections
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tessera as ts
from tessera import op

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "gpu"))
sys.path.insert(0, HERE)
import compile_fuzz  # noqa: E402
import jit_programs  # noqa: E402

# Copied into the groups that read them (literals, tensors computed from
# indices), so they may appear more than once.
GENERATED = {"tgraph.constant", "tgraph.iota", "tgraph.full"}
VIEWS = {"tgraph.reshape", "tgraph.stop_gradient"}
ELEMENTWISE = {
    "neg", "abs", "exp", "log", "log1p", "sin", "cos", "tanh", "erf",
    "sigmoid", "relu", "gelu", "silu", "sqrt", "rsqrt", "reciprocal",
    "square", "floor", "sign", "add", "sub", "mul", "div", "pow", "max",
    "min", "compare", "select", "cast", "zeros_like", "ones_like"}
ROW_REDUCTIONS = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}
CONTRACTIONS = {"matmul", "batch_matmul", "dot_general"}

OP = re.compile(r"^\s*(?:%[\w#:]+(?:, %[\w#:]+)* = )?(tgraph\.[\w.]+|"
                r"tsched\.\w+|func\.return|return)\b(.*)$")


def parse_groups(text):
    """(groups, outside ops): each group as (kind, layout, [(op, rest of
    the line)]), for the first function of `text`."""
    groups, outside, current = [], [], None
    for line in text.splitlines():
        g = re.search(r"tsched\.group (\w+) (?:\[(\d+), (\d+)\] )?\(", line)
        if g:
            layout = (int(g.group(2)), int(g.group(3))) if g.group(2) else None
            current = (g.group(1), layout, [])
            groups.append(current)
            continue
        m = OP.match(line)
        if not m:
            continue
        name = m.group(1)
        if name == "tsched.yield":
            current = None
        elif current is not None:
            current[2].append((name, m.group(2)))
        elif name.startswith("tgraph."):
            outside.append(name)
    return groups, outside


def check_groups(lowered):
    """Checks the groups of one lowered program; returns the groups."""
    text = lowered.as_text("gpu_groups")
    listing = lowered._module.list_graph(lowered.name, gpu_attention=True)
    groups, outside = parse_groups(text)
    inside = [name for _, _, ops in groups for name, _ in ops]
    # Every op of the optimized graph once, nothing more; a broadcast of a
    # row, column or scalar, and a cheap unary op, is computed again by
    # each group that reads it.
    want = collections.Counter(o["op"] for o in listing["ops"]
                               if o["op"] not in GENERATED)
    got = collections.Counter(n for n in inside + outside
                              if n not in GENERATED)
    for again in ("tgraph.broadcast_in_dim", "tgraph.square", "tgraph.neg",
                  "tgraph.abs", "tgraph.relu", "tgraph.cast",
                  "tgraph.slice", "tgraph.transpose"):
        # (A window of columns, too, is read by each row group using it,
        # and so is a transpose of leading dims that only windows read.)
        assert got[again] >= want[again], again
        got[again] = want[again]
    # A sum of two zero pads side by side along the last dim is their
    # concat: each such concat takes one add and two pads.
    joined = got["tgraph.concat"] - want["tgraph.concat"]
    assert joined >= 0
    for name, n in (("tgraph.add", 1), ("tgraph.pad", 2)):
        want[name] -= n * joined
        assert want[name] >= 0, name
    want["tgraph.concat"] += joined
    assert +got == +want, (got - want, want - got)
    for name in outside:
        assert name in GENERATED | VIEWS, f"{name} is in no group"
    for kind, layout, ops in groups:
        names = [n.split(".", 1)[1] for n, _ in ops
                 if n not in GENERATED]
        assert names, "a group without ops"
        if kind == "row":
            assert layout is not None
            for n, rest in ops:
                short = n.split(".", 1)[1]
                assert (n in GENERATED or short in ELEMENTWISE
                        or short == "broadcast_in_dim"
                        or short in ROW_REDUCTIONS
                        or short in ("slice", "concat", "transpose")), n
                if short == "transpose":
                    # Of leading dims: the last dim stays last.
                    perm = re.search(r"permutation = array<i64: ([^>]*)>",
                                     rest).group(1).split(", ")
                    assert int(perm[-1]) == len(perm) - 1, rest
                if short == "slice":
                    # A window of the last dim's columns: every other dim
                    # starts at 0.
                    start = re.search(r"start = #tgraph\.dims<\[([^\]]*)\]>",
                                      rest).group(1).split(", ")
                    assert all(d == "0" for d in start[:-1]), rest
                if short == "concat":
                    rank = len(re.search(r"-> tensor<([^>]*)>", rest)
                               .group(1).split("x")) - 1
                    assert f"dim = {rank - 1} " in rest, rest
                if short in ROW_REDUCTIONS:
                    # Along the last dim only.
                    dims = re.search(r"dims = array<i64: (\d+)>", rest)
                    rank = len(re.search(r": tensor<([^>]*)>", rest)
                               .group(1).split("x")) - 1
                    assert dims and int(dims.group(1)) == rank - 1, rest
        elif kind == "contraction":
            assert layout is not None
            assert names[0] in CONTRACTIONS, names
            assert all(n in ELEMENTWISE for n in names[1:]), names
        elif kind == "attention":
            # The attention op, with head transposes of its operands (read
            # in place) and of its results (written in place).
            assert layout is None
            assert sorted(set(names) - {"transpose"}) in (
                ["attention"], ["attention_grad"]), names
            assert len([n for n in names if n != "transpose"]) == 1, names
        else:
            assert layout is None
            assert len(names) == 1, (kind, names)
    return groups


@pytest.mark.parametrize("name", list(jit_programs.cases()))
def test_programs_of_the_gpu_tests(name):
    fn, args = jit_programs.cases()[name]
    lowered = fn.lower(*args)
    groups = check_groups(lowered)
    kinds = collections.Counter(kind for kind, _, _ in groups)
    # Fusion: fewer groups than ops of the graph that need a kernel.
    listing = lowered._module.list_graph(lowered.name, gpu_attention=True)
    ops = [o for o in listing["ops"] if o["op"] not in GENERATED | VIEWS]
    assert len(groups) <= max(1, len(ops)), dict(kinds)
    if name in ("mlp_grad", "block_grad"):
        assert len(groups) < len(ops) / 2, (len(groups), len(ops))
    if name in ("mlp_grad", "block_grad", "bf16_mlp"):
        # Products with an epilogue: the bias and activation fuse in.
        assert any(kind == "contraction" and len(ops) > 1
                   for kind, _, ops in groups)
    if name == "attention_grad":
        assert kinds["attention"] == 2


def test_normalization_and_softmax_are_one_row_kernel():
    def f(x, s, b):
        return op.softmax(op.layernorm(x) * s + b, axis=-1) * 2.0

    x = np.ones((32, 100), np.float32)
    v = np.ones(100, np.float32)
    groups = check_groups(ts.jit(f).lower(x, v, v))
    assert [(k, l) for k, l, _ in groups] == [("row", (32, 100))]


def test_epilogue_reads_bias_residual_and_keeps_its_layout():
    def f(x, w, b, r):
        return op.gelu(op.matmul(x, w) + b, approximate=True) + r

    x = np.ones((48, 64), np.float32)
    w = np.ones((64, 96), np.float32)
    b = np.ones(96, np.float32)
    r = np.ones((48, 96), np.float32)
    groups = check_groups(ts.jit(f).lower(x, w, b, r))
    assert len(groups) == 1
    kind, layout, ops = groups[0]
    assert (kind, layout) == ("contraction", (48, 96))


def test_unknown_stage_names_the_gpu_stage():
    lowered = ts.jit(lambda x: op.exp(x)).lower(np.ones(3, np.float32))
    with pytest.raises(Exception, match="gpu_groups"):
        lowered.as_text("gpu_groupz")


@pytest.mark.parametrize("seed", range(150))
def test_random_programs(seed):
    """Random DAGs with fan-out and fan-in (the compile fuzzer's), forward
    and through the derivatives it asks for."""
    ns, inputs = compile_fuzz.load(seed, max_ops=60)
    mode = ns["MODE"]
    fn, args = compile_fuzz.program(ns, inputs)
    # (A derivative may fold to a constant: then there is no group.)
    groups = check_groups(ts.jit(fn).lower(*args))
    rows, cols = ns["SHAPE"]
    if cols <= 16384 and mode == "forward":
        # The rows of the program's inputs fuse: never a row kernel on
        # another layout than [R, C] or the products' [R, C].
        for kind, layout, _ in groups:
            if kind == "row" and layout not in ((rows, cols), (1, 1)):
                assert layout[1] in (1, cols) or layout[0] == 1, layout


# The generated row and GEMM kernels, compiled for Hopper and Ampere --------

PTXAS = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas"
    if os.path.exists("/usr/local/cuda/bin/ptxas") else None)


def compile_kernels(lowered, tmp_path, chips=("sm_90a", "sm_80")):
    """The gpu_kernels stage of `lowered`: checks that every row and
    contraction group names its kernel with a grid, a schedule and a view
    per argument, compiles the module's kernels for each chip and has
    ptxas accept the PTX; returns the number of kernels."""
    from tessera import _core
    text = lowered.as_text("gpu_kernels")
    kernels = set(re.findall(r"func\.func @(\w+)\(", text)) - {lowered.name}
    # A product whose K is split: two launches, the chunks' partials into
    # a scratch buffer, then their sum with the epilogue.
    split = [line for line in text.splitlines()
             if "tsched.group contraction" in line and
             "tsched.launches" in line]
    for line in split:
        names = re.findall(r"kernel = @(\w+)", line)
        assert len(names) == 2 and "_gemm_sum" in names[1], line
        assert set(names) <= kernels
        assert re.search(r"tsched\.scratch = \[memref<\d+x\d+x\d+xf32>\]",
                         line), line
    rows = re.findall(r"tsched\.group (row|contraction) \[(\d+), (\d+)\] "
                      r"\(([^)]*)\) \{([^}]*)\} : \(([^)]*)\) -> (.*) \{",
                      text)
    assert len(rows) + len(split) == (text.count("tsched.group row") +
                                      text.count("tsched.group contraction")), \
        "a row or contraction group has no kernel"
    for kind, r, c, inputs, attrs, _, results in rows:
        name = re.search(r"tsched\.kernel = @(\w+)", attrs).group(1)
        assert name in kernels
        grid = int(re.search(r"tsched\.grid = array<i64: (\d+)>",
                             attrs).group(1))
        bm, bn = map(int, re.search(
            r'tsched\.schedule = #tsched\.schedule<"block\((\d+), (\d+)\)',
            attrs).groups())
        if kind == "row":
            # Every row is some program's; whole rows in a block.
            assert grid * bm >= int(r) > (grid - 1) * bm
            assert bn >= int(c) and bn & (bn - 1) == 0
        else:
            # A program per output tile of [R, C] at least (batched
            # products: of each batch); a ping-pong GEMM's blocks hold two
            # programs each, one block an SM at most (132 by default),
            # each program looping over tiles.
            tiles = -(-int(r) // bm) * -(-int(c) // bn)
            if ".pingpong" in attrs:
                assert grid <= 132 and 2 * grid >= min(tiles, 264), \
                    (grid, tiles)
            else:
                assert grid >= tiles
            assert re.search(r"\.k\(\d+\)\.warps\(\d+\)\.stages\(\d+\)",
                             attrs)
        views = re.findall(r"array<i64: ([\d, ]+)>", attrs.split(
            "tsched.views")[1])
        n_in = len([x for x in inputs.split(",") if x.strip()])
        n_out = max(1, results.count("tensor<"))
        assert len(views) == n_in + n_out
    if not rows and not split:
        return 0
    for chip in chips:
        out = _core.compile_tile(text, chip, "+ptx80", 3, lowered.name)
        assert {k["name"] for k in out["kernels"]} <= kernels
        if PTXAS is not None:
            src = tmp_path / f"{chip}.ptx"
            src.write_text(out["ptx"])
            run = subprocess.run([PTXAS, f"-arch={chip}", str(src), "-o",
                                  str(tmp_path / f"{chip}.cubin")],
                                 capture_output=True, text=True)
            assert run.returncode == 0, run.stderr
    return len(rows) + len(split)


@pytest.mark.parametrize("name", list(jit_programs.cases()))
def test_row_kernels_of_the_gpu_tests_compile(name, tmp_path):
    fn, args = jit_programs.cases()[name]
    compile_kernels(fn.lower(*args), tmp_path)


@pytest.mark.parametrize("seed", range(0, 150, 5))
def test_row_kernels_of_random_programs_compile(seed, tmp_path):
    fn, args = compile_fuzz.program(*compile_fuzz.load(seed, max_ops=60))
    compile_kernels(ts.jit(fn).lower(*args), tmp_path, chips=("sm_90a",))


# -- the host program (as_text("gpu_host")) ----------------------------------

LAUNCH = re.compile(r"tsched\.launch @(\w+) grid \[(\d+)\] \(([^)]*)\)")
BUFFER = re.compile(r"(%\w+) = tsched\.buffer offset (\d+) : memref<([^>]*)>")
VIEW = re.compile(r"(%\w+) = tsched\.view (%\w+) : memref<([^>]*)> to "
                  r"memref<([^>]*)>")
BYTES = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "f16": 2, "bf16": 2,
         "i16": 2, "i8": 1, "f8E4M3FN": 1, "f8E5M2": 1}


def _memref_bytes(text):
    *dims, elt = text.split("x")
    n = 1
    for d in dims:
        n *= int(d)
    return n * BYTES[elt]


def check_host_program(text):
    """Checks the host program of the first function of `text` without
    trusting the planner: each workspace buffer lies inside the workspace,
    and two buffers that overlap in memory are never live at once (a
    buffer lives from the launch that writes it, its last argument
    position, to the last launch that reads it, through any view).
    Returns the number of launches."""
    host = text.split("func.func @")[1]
    workspace = int(re.search(r"tsched\.workspace = (\d+)", host).group(1))
    spans, root, live = {}, {}, {}
    launches = 0
    for line in host.splitlines():
        if m := BUFFER.search(line):
            name, offset = m.group(1), int(m.group(2))
            size = _memref_bytes(m.group(3))
            assert offset % 256 == 0, line
            assert offset + size <= workspace, (line, workspace)
            spans[name] = (offset, offset + size)
            root[name] = name
        elif m := VIEW.search(line):
            assert _memref_bytes(m.group(3)) == _memref_bytes(m.group(4)), line
            root[m.group(1)] = root.get(m.group(2), m.group(2))
        elif m := LAUNCH.search(line):
            args = [a.strip() for a in m.group(3).split(",")]
            for a in args:
                r = root.get(a, a)
                if r in spans:
                    first, _ = live.get(r, (launches, launches))
                    live[r] = (first, launches)
            launches += 1
    names = [n for n in spans if n in live]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            (s0, e0), (s1, e1) = spans[a], spans[b]
            (f0, l0), (f1, l1) = live[a], live[b]
            if s0 < e1 and s1 < e0:
                assert l0 < f1 or l1 < f0, (a, b, spans, live)
    return launches


HOST_GAPS = re.compile(r"of kind '(attention|layout|single)' has no generated "
                       r"kernel")


def host_program_or_gap(lowered):
    """The host program's text, or None when a group of a kind with no
    generated kernel yet stops it (the only error allowed)."""
    try:
        return lowered.as_text("gpu_host")
    except ts.TesseraError as e:
        assert HOST_GAPS.search(str(e)), str(e)
        return None


@pytest.mark.parametrize("seed", range(1, 150, 7))
def test_host_programs_of_random_programs(seed):
    fn, args = compile_fuzz.program(*compile_fuzz.load(seed, max_ops=60))
    text = host_program_or_gap(ts.jit(fn).lower(*args))
    if text is not None:
        check_host_program(text)


def test_host_program_of_a_classifier_step():
    """The gradient of a two-layer classifier with cross entropy reaches
    the host program and its kernels compile: GEMMs with their epilogues,
    row kernels and the bias gradients' column sums, in fewer launches
    than groups (the label reshape is a view), with temporaries sharing
    the workspace."""
    rng = np.random.default_rng(3)

    def loss(w1, b1, w2, b2, x, y):
        h = op.relu(op.matmul(x, w1) + b1)
        return op.cross_entropy(op.matmul(h, w2) + b2, y)

    args = (rng.standard_normal((784, 128)).astype(np.float32),
            np.zeros(128, np.float32),
            rng.standard_normal((128, 10)).astype(np.float32),
            np.zeros(10, np.float32),
            rng.random((64, 784)).astype(np.float32),
            rng.integers(0, 10, 64).astype(np.int32))
    lowered = ts.jit(ts.grad(loss, argnums=(0, 1, 2, 3))).lower(*args)
    text = lowered.as_text("gpu_host")
    launches = check_host_program(text)
    kinds = collections.Counter(m.group(1).rsplit("_", 1)[1].rstrip(
        "0123456789") for m in LAUNCH.finditer(text))
    assert kinds["reduce"] == 2 and kinds["gemm"] == 5, kinds
    assert launches == sum(kinds.values())
    # The four gradients are the caller's buffers.
    assert text.split("func.func @")[1].count("memref.alloc()") == 4
    binary = lowered.as_text("gpu_binary")
    for m in LAUNCH.finditer(text):
        assert f".entry {m.group(1)}(" in binary.replace("\\0A", "\n")


def _op_names(text):
    return re.findall(r"\b(?:ttile|arith|math|memref|scf|tensor)\.[a-z_]+",
                      text)


@pytest.mark.parametrize("dtype,shape,causal", [
    ("bfloat16", (2, 4, 200, 64), True),
    ("float16", (3, 128, 128), False),
])
def test_attention_groups_launch_the_built_in_stdlib_kernels(dtype, shape,
                                                             causal):
    """The kernels compiled into the compiler are the tile-DSL kernels as
    they trace today (the build table is not stale), and the host program
    launches the forward once and the backward's two kernels on the
    forward's saved log-sum-exp."""
    import ml_dtypes
    from tessera.stdlib._library import Entry
    dt = getattr(ml_dtypes, dtype) if dtype == "bfloat16" else np.float16
    q = np.zeros(shape, dt)
    w = np.zeros(shape, np.float32)

    def loss(q, k, v, w):
        o = op.attention(q, k, v, causal=causal)
        return op.reduce_sum(op.cast(o, ts.f32) * w)

    lowered = ts.jit(ts.grad(loss, argnums=(0, 1, 2))).lower(q, q, q, w)
    kernels = lowered.as_text("gpu_kernels")
    short = "bf16" if dtype == "bfloat16" else "f16"
    d = shape[-1]
    for name in ("flash_attention_fwd", "flash_attention_bwd_dq",
                 "flash_attention_bwd_dkdv"):
        sym = f"{name}_{short}_d{d}{'_causal' if causal else ''}"
        at = kernels.index(f"func.func @{sym}(")
        body = kernels[at:kernels.index("\n  }\n", at)]
        traced = Entry(name, short, d, causal, True).ir()
        assert _op_names(body) == _op_names(traced), name
    host = lowered.as_text("gpu_host")
    launches = re.findall(r"tsched\.launch @(\w+) grid \[(\d+), (\d+)\]",
                          host)
    attention = [x for x in launches if x[0].startswith("flash")]
    bh, s = int(np.prod(shape[:-2])), shape[-2]
    assert [x[0].split("_" + short)[0] for x in attention] == [
        "flash_attention_fwd", "flash_attention_bwd_dq",
        "flash_attention_bwd_dkdv"]
    assert all(int(x[2]) == bh for x in attention)
    # 128-query blocks for the forward and dQ, 128-key blocks for dK/dV.
    assert [int(x[1]) for x in attention] == [-(-s // 128)] * 3
    scales = re.findall(r"scalars \[([-+.e0-9]+) : f32\]", host)
    assert len(scales) == 3
    np.testing.assert_allclose([float(x) for x in scales],
                               np.float32(1 / np.sqrt(d)), rtol=1e-6)
