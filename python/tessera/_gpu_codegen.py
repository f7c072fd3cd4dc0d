"""Tile IR kernels the GPU executor of ``ts.jit`` generates for one plan:
fused row kernels (elementwise ops, broadcasts and last-dim reductions of
one row layout, see FusedGroup) and row copies (permutes, slices, concats,
pads and broadcasts, see row_copy). Each is Python source for the tile DSL,
compiled through the kernel cache like any @ts.kernel."""

import hashlib
import linecache
import math

from ._errors import TesseraError
from ._gpu_kernels import Step
from . import tile
from ._kernel import KTile, Schedule, cdiv, kernel
from .stdlib._common import _pow2

UNARY = {
    "tgraph.neg": "(-{0})", "tgraph.abs": "tile.abs({0})",
    "tgraph.exp": "tile.exp({0})", "tgraph.log": "tile.log({0})",
    "tgraph.log1p": "tile.log(1.0 + {0})", "tgraph.tanh": "tile.tanh({0})",
    "tgraph.erf": "tile.erf({0})", "tgraph.sigmoid": "tile.sigmoid({0})",
    "tgraph.relu": "tile.maximum({0}, 0.0)",
    "tgraph.silu": "({0} * tile.sigmoid({0}))",
    "tgraph.sqrt": "tile.sqrt({0})", "tgraph.rsqrt": "tile.rsqrt({0})",
    "tgraph.reciprocal": "(1.0 / {0})", "tgraph.square": "({0} * {0})",
    "tgraph.stop_gradient": "{0}",
}
BINARY = {
    "tgraph.add": "({0} + {1})", "tgraph.sub": "({0} - {1})",
    "tgraph.mul": "({0} * {1})", "tgraph.div": "({0} / {1})",
    "tgraph.max": "tile.maximum({0}, {1})",
    "tgraph.min": "tile.minimum({0}, {1})",
}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">",
            "ge": ">="}
_NEUTRAL = {"sum": 0.0, "max": -math.inf, "min": math.inf}


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def direction(attr):
    text = attr if isinstance(attr, str) else str(attr.get("text", ""))
    for word in sorted(_COMPARE, key=len, reverse=True):
        if word in text.lower():
            return word
    raise TesseraError(f"unknown comparison {text!r}")


def lit(v):
    """A float as Python source (inf and nan included)."""
    v = float(v)
    return repr(v) if math.isfinite(v) else f"float('{v}')"


class Generated(Step):
    """A launch of a kernel generated for the plan; ``views`` gives each
    argument as (value id, the shape the kernel reads it as)."""

    def __init__(self, inputs, outputs, fn, grid, schedule, views):
        self.inputs, self.outputs = tuple(inputs), tuple(outputs)
        self.kernel = fn.with_schedule(schedule)
        self.schedule = schedule
        self.grid = grid
        self.views = views

    def run(self, env, alloc):
        self.kernel[self.grid](*[alloc(vid).reshape(*shape)
                                 for vid, shape in self.views])


def make_kernel(prefix, params, lines):
    """A @ts.kernel from generated source: `params` and body `lines`. It
    is named by a hash of its text, so that a kernel gets the same name
    (and kernel-cache entry) in every process; the source is kept in
    linecache for tracebacks and locations."""
    text = f"({params}):\n" + "\n".join(lines) + "\n"
    name = f"{prefix}_{hashlib.sha1(text.encode()).hexdigest()[:12]}"
    source = f"def {name}{text}"
    filename = f"<tessera-gpu {name}>"
    linecache.cache[filename] = (len(source), None,
                                 source.splitlines(True), filename)
    namespace = {"tile": tile, "KTile": KTile}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return kernel(namespace[name])


def row_copy(program, x, out, space, in_coef, out_coef, in_base, out_base,
              in_cols, in_c0, out_c0, out_cols, col_bcast, fill):
    """A generated kernel: for each point e of `space` (one program per
    row), out row (out_base + sum e*out_coef) gets columns [out_c0, ...)
    from x row (in_base + sum e*in_coef) columns [in_c0, ...); or `fill`
    everywhere when x is None."""
    rows = numel(space)
    width = out_cols if fill is not None or col_bcast else \
        min(in_cols - in_c0, out_cols - out_c0)
    bn = _pow2(max(1, width))
    block = _row_block(program, x, out, space, in_coef, out_coef, bn,
                       col_bcast)
    if block > 1:
        return _row_block_copy(program, x, out, space, in_coef, out_coef,
                               in_base, out_base, in_c0, out_c0, width, bn,
                               block, fill)
    params = ("" if x is None else "X: KTile['RI', 'CI'], ") + \
        "Y: KTile['RO', 'CO']"
    lines = ["    T = tile.context()",
             "    e = tile.program_id(0)"]
    in_row, out_row = _row_terms(space, in_coef, out_coef, [str(in_base)],
                                 [str(out_base)])
    lines.append(f"    ro = {' + '.join(out_row)}")
    lines.append("    cols = tile.iota((1, T.n), 1)")
    lines.append(f"    ok = cols < {width}")
    if fill is not None:
        lines.append(f"    v = tile.full((1, T.n), {lit(fill)})")
        lines.append(f"    tile.store(Y, tile.cast(v, Y.dtype), at=(ro, "
                     f"{out_c0}), mask=ok)")
    else:
        lines.append(f"    ri = {' + '.join(in_row)}")
        if col_bcast:
            lines.append("    v = tile.load(X, at=(ri, 0), shape=(1, T.n), "
                         "mask=cols < 1)")
            lines.append("    v = tile.broadcast_to(tile.sum(tile.cast(v, "
                         "'f32'), axis=1)[:, None], (1, T.n))")
            lines.append(f"    tile.store(Y, tile.cast(v, Y.dtype), at=(ro, "
                         f"{out_c0}), mask=ok)")
        else:
            lines.append(f"    v = tile.load(X, at=(ri, {in_c0}), "
                         f"shape=(1, T.n), mask=ok)")
            lines.append(f"    tile.store(Y, v, at=(ro, {out_c0}), mask=ok)")
    fn = make_kernel("row_copy", params, lines)
    s = Schedule(block=(1, bn), warps=1 if bn <= 256 else 4)
    views = []
    if x is not None:
        xs = program.shapes[x]
        views.append((x, (numel(xs[:-1]), xs[-1] if xs else 1)))
    os_ = program.shapes[out]
    views.append((out, (numel(os_[:-1]), os_[-1] if os_ else 1)))
    return Generated([x] if x is not None else [], [out], fn, (rows,), s,
                      views)


def _row_terms(space, in_coef, out_coef, in_row, out_row):
    """The terms (source text) of the input and output rows of point `e`
    of `space` (row-major), appended to `in_row` and `out_row`; no input
    terms when in_coef is None."""
    inner = 1
    for d in reversed(range(len(space))):
        idx = f"((e // {inner}) % {space[d]})" if inner > 1 else \
            f"(e % {space[d]})"
        if in_coef is not None and in_coef[d]:
            in_row.append(f"{idx} * {in_coef[d]}")
        if out_coef[d]:
            out_row.append(f"{idx} * {out_coef[d]}")
        inner *= space[d]
    return in_row, out_row


def _row_block(program, x, out, space, in_coef, out_coef, bn, col_bcast):
    """Rows a row copy's program moves together (1: one row a program):
    consecutive points of the last dim of `space`, whose rows are
    `in_coef[-1]` and `out_coef[-1]` rows apart, read as one box of a view
    with rows that many times wider."""
    if not space or space[-1] < 2 or col_bcast:
        return 1
    a, b = (in_coef[-1] if x is not None else 0), out_coef[-1]
    ri = numel(program.shapes[x][:-1]) if x is not None else 0
    ro = numel(program.shapes[out][:-1])
    if b < 1 or ro % b or (a and ri % a):
        return 1
    block = 1
    while block < space[-1] and block * 2 * bn <= 4096:
        block *= 2
    return block


def _wide_at(row, k, cols, c0):
    """Where row `row`, column `c0` of a [R, cols] tensor is in its view
    as [R / k, k * cols] (source text)."""
    if k == 1:
        return f"({row}, {c0})"
    return f"({row} // {k}, ({row} % {k}) * {cols} + {c0})"


def _row_block_copy(program, x, out, space, in_coef, out_coef, in_base,
                    out_base, in_c0, out_c0, width, bn, block, fill):
    """row_copy with `block` rows a program (see _row_block)."""
    chunks = cdiv(space[-1], block)
    a = in_coef[-1] if x is not None else 0
    b = out_coef[-1]
    params = ("" if x is None else "X: KTile['RI', 'CI'], ") + \
        "Y: KTile['RO', 'CO']"
    lines = ["    T = tile.context()",
             "    p = tile.program_id(0)",
             f"    i0 = (p % {chunks}) * {block}",
             f"    e = p // {chunks}"]
    in_row, out_row = _row_terms(
        space[:-1], in_coef if x is not None else None, out_coef,
        [str(in_base), f"i0 * {a}"], [str(out_base), f"i0 * {b}"])
    xs = program.shapes[x] if x is not None else None
    os_ = program.shapes[out]
    ci, co = (xs[-1] if xs else 1) if x is not None else 0, os_[-1]
    lines.append(f"    ro = {' + '.join(out_row)}")
    lines.append("    rows = tile.iota((T.m, T.n), 0)")
    lines.append("    cols = tile.iota((T.m, T.n), 1)")
    lines.append(f"    ok = (cols < {width}) & (rows < {space[-1]} - i0)")
    if fill is not None:
        lines.append(f"    v = tile.cast(tile.full((T.m, T.n), {lit(fill)}), "
                     f"Y.dtype)")
    elif a == 0:
        # Every row of the block reads the same row.
        lines.append(f"    ri = {' + '.join(in_row)}")
        lines.append(f"    v = tile.load(X[ri], at=({in_c0},), shape=(T.n,), "
                     f"mask=tile.iota((T.n,), 0) < {width})")
        lines.append("    v = tile.broadcast_to(v[None, :], (T.m, T.n))")
    else:
        lines.append(f"    ri = {' + '.join(in_row)}")
        lines.append(f"    v = tile.load(X, at={_wide_at('ri', a, ci, in_c0)}, "
                     f"shape=(T.m, T.n), mask=ok)")
    lines.append(f"    tile.store(Y, v, at={_wide_at('ro', b, co, out_c0)}, "
                 f"mask=ok)")
    fn = make_kernel("row_block_copy", params, lines)
    s = Schedule(block=(block, bn), warps=4 if block * bn >= 2048 else 1)
    views = []
    if x is not None:
        ri = numel(xs[:-1])
        views.append((x, (ri // a, a * ci) if a else (ri, ci)))
    views.append((out, (numel(os_[:-1]) // b, b * co)))
    return Generated([x] if x is not None else [], [out], fn,
                     (numel(space[:-1]) * chunks,), s, views)


class FusedGroup:
    """Ops fused into one row kernel of layout `full` ([..., C])."""

    def __init__(self, program, full):
        self.program = program
        self.full = tuple(full)
        self.key = (numel(self.full[:-1]) if self.full else 1,
                    self.full[-1] if self.full else 1)
        self.ops = []
        self.cls = {}            # value id -> full / row / col / scalar
        self.extra = {}          # op index -> dict(reduce=..., broadcast=...)
        self.view_inputs = {}    # value id -> shape it is read as
        self.open = True
        program.groups.append(self)

    def add(self, op, cls, **extra):
        self.ops.append(op)
        self.extra[op.index] = extra
        for r in op.results:
            self.cls[r] = cls

    def external_inputs(self):
        produced = {r for op in self.ops for r in op.results}
        seen = []
        for op in self.ops:
            for o in op.operands:
                if o not in produced and o not in seen:
                    seen.append(o)
        return seen

    def build(self):
        """The group's kernel as a Generated step (None when nothing outside
        the group reads its values)."""
        p = self.program
        r_count, c = self.key
        produced = [r for op in self.ops for r in op.results]
        outputs = [v for v in produced if p.needed_outside(v, self)]
        if not outputs:
            return None
        inputs = [o for o in self.external_inputs()
                  if not (p.source(o) in p.constants and
                          p.constants[p.source(o)].size == 1)]
        bn = _pow2(c)
        m = max(1, min(16, 4096 // bn))
        warps = 8 if m * bn >= 4096 else 4
        params, lines, views = [], [], []
        names = {}
        lines.append("    T = tile.context()")
        lines.append("    r = tile.program_id(0) * T.m")
        if bn != c:
            lines.append(f"    colmask = tile.iota((T.m, T.n), 1) < {c}")
        scalar_consts = {}
        for o in self.external_inputs():
            src = p.source(o)
            if src in p.constants and p.constants[src].size == 1:
                v = p.constants[src].reshape(-1)[0]
                scalar_consts[o] = (repr(bool(v)) if p.dtypes[src] == "i1"
                                    else lit(v))
        for i, vid in enumerate(inputs):
            arg = f"I{i}"
            src = p.source(vid)
            dt = p.dtypes[src]
            cls = p.classify(vid, self.full) if vid not in self.view_inputs \
                else p.classify_shape(self.view_inputs[vid], self.full)
            if vid in self.view_inputs and cls is None:
                cls = "full"
            conv = (lambda t: f"({t} != 0)") if dt == "i1" else (
                (lambda t: f"tile.cast({t}, 'f32')") if dt != "f32" else
                (lambda t: t))
            if cls == "full":
                params.append(f"{arg}: KTile['R', 'C']")
                views.append((src, (r_count, c)))
                lines.append(f"    v{vid} = " + conv(
                    f"tile.load({arg}, at=(r, 0), shape=(T.m, T.n))"))
            elif cls == "row":
                params.append(f"{arg}: KTile['R']")
                views.append((src, (r_count,)))
                lines.append(f"    v{vid} = " + conv(
                    f"tile.load({arg}, at=(r,), shape=(T.m,))"))
            elif cls == "col":
                params.append(f"{arg}: KTile['C']")
                views.append((src, (c,)))
                lines.append(f"    v{vid} = " + conv(
                    f"tile.load({arg}, at=(0,), shape=(T.n,))"))
            elif cls == "scalar":
                params.append(f"{arg}: KTile['One']")
                views.append((src, (1,)))
                lines.append(f"    v{vid} = tile.sum(tile.broadcast_to(" + conv(
                    f"tile.load({arg}, at=(0,), shape=(T.n,), "
                    f"mask=tile.iota((T.n,), 0) < 1)")
                    + "[None, :], (T.m, T.n)), axis=1)")
                cls = "row"
            else:
                raise TesseraError(f"internal: input {vid} of shape "
                                   f"{p.shapes[vid]} in a group of "
                                   f"{list(self.full)}")
            self.cls.setdefault(vid, cls)
            names[vid] = f"v{vid}"
        for o, text in scalar_consts.items():
            names[o] = text
            self.cls[o] = "scalar"

        def ref(vid, want, stretch=False):
            """vid's value as a tile of class `want` (broadcast to the
            whole block with `stretch`, else by the other operands)."""
            have = self.cls[vid]
            t = names[vid]
            if have == want or have == "scalar":
                return t
            if have == "row" and want == "full":
                return (f"tile.broadcast_to({t}[:, None], (T.m, T.n))"
                        if stretch else f"{t}[:, None]")
            if have == "col" and want == "full":
                return f"tile.broadcast_to({t}, (T.m, T.n))" if stretch \
                    else t
            raise TesseraError(f"internal: {have} value read as {want}")

        for op in self.ops:
            res = op.results[0]
            cls = self.cls[res]
            ex = self.extra[op.index]
            if ex.get("reduce"):
                kind, scale = ex["reduce"]
                x = ref(op.operands[0], "full")
                if bn != c:
                    x = f"tile.where(colmask, {x}, {lit(_NEUTRAL[kind])})"
                expr = f"tile.{kind}({x}, axis=1)"
                if scale != 1.0:
                    expr = f"({expr} * {lit(scale)})"
            elif ex.get("broadcast"):
                src = op.operands[0]
                expr = (f"tile.broadcast_to({ref(src, 'full')}, (T.m, T.n))"
                        if self.cls[src] == "row" else names[src])
                if self.cls[src] == "scalar":
                    expr = f"tile.full((T.m, T.n), {names[src]})"
                    if src not in scalar_consts:
                        expr = f"tile.broadcast_to({names[src]}[:, None], " \
                               f"(T.m, T.n))"
                elif self.cls[src] == "col":
                    expr = f"tile.broadcast_to({names[src]}[None, :], " \
                           f"(T.m, T.n))"
            else:
                have = {self.cls[o] for o in op.operands}
                # Only row (or only column) operands of a full result:
                # stretch them to the group's rows and columns first.
                stretch = cls == "full" and "full" not in have and not \
                    {"row", "col"} <= have
                args = [ref(o, cls, stretch) for o in op.operands]
                expr = _expression(op, args, p.dtypes[res], p)
            names[res] = f"v{res}"
            lines.append(f"    v{res} = {expr}")
        outs = []
        for j, vid in enumerate(outputs):
            arg = f"O{j}"
            cls = self.cls[vid]
            dt = p.dtypes[vid]
            store = "i8" if dt == "i1" else dt
            value = names[vid]
            if cls == "full":
                params.append(f"{arg}: KTile['R', 'C']")
                views.append((vid, (r_count, c)))
                lines.append(f"    tile.store({arg}, tile.cast({value}, "
                             f"'{store}'), at=(r, 0))")
            else:
                params.append(f"{arg}: KTile['R']")
                views.append((vid, (r_count,)))
                lines.append(f"    tile.store({arg}, tile.cast({value}, "
                             f"'{store}'), at=(r,))")
            outs.append(vid)
        fn = make_kernel("fused", ", ".join(params), lines)
        s = Schedule(block=(m, bn), warps=warps)
        sources = []
        for v in inputs:
            if p.source(v) not in sources:
                sources.append(p.source(v))
        return Generated(sources, outs, fn, (cdiv(r_count, m),), s, views)


def _expression(op, args, dtype, program):
    n = op.name
    if n in UNARY:
        return UNARY[n].format(*args)
    if n in BINARY:
        return BINARY[n].format(*args)
    if n == "tgraph.compare":
        return f"({args[0]} {_COMPARE[direction(op.attrs['direction'])]} " \
               f"{args[1]})"
    if n == "tgraph.select":
        return f"tile.where({args[0]}, {args[1]}, {args[2]})"
    if n == "tgraph.cast":
        src = program.dtypes[op.operands[0]]
        if dtype == "i1":
            return f"({args[0]} != 0.0)"
        if src == "i1":
            return f"tile.where({args[0]}, 1.0, 0.0)"
        if dtype in ("bf16", "f16"):
            return f"tile.cast(tile.cast({args[0]}, '{dtype}'), 'f32')"
        return args[0]
    if n == "tgraph.pow":
        e = op.operands[1]
        if e in program.constants and program.constants[e].size == 1:
            p = float(program.constants[e].reshape(-1)[0])
            if p == 2.0:
                return f"({args[0]} * {args[0]})"
            if p == 0.5:
                return f"tile.sqrt({args[0]})"
            if p == -0.5:
                return f"tile.rsqrt({args[0]})"
            if p == 1.0:
                return args[0]
            if p == -1.0:
                return f"(1.0 / {args[0]})"
        return f"tile.exp({args[1]} * tile.log({args[0]}))"
    if n == "tgraph.gelu":
        x = args[0]
        if op.attrs.get("approximate"):
            return (f"(0.5 * {x} * (1.0 + tile.tanh(0.7978845608028654 * "
                    f"({x} + 0.044715 * {x} * {x} * {x}))))")
        return f"(0.5 * {x} * (1.0 + tile.erf({x} * 0.7071067811865476)))"
    raise TesseraError(f"{op.where()}ts.jit(device='cuda'): {n} has no GPU "
                       f"lowering yet")
