"""The GPU executor of ``ts.jit(device="cuda")``.

A function's optimized Graph IR (``Module.list_graph``: after shape
inference, autodiff, inlining and decomposition) becomes a launch plan:

* ops that depend only on constants are evaluated once on the host;
* elementwise ops, broadcasts and reductions along the last dim that
  share a row layout ``[R, C]`` are fused into one generated Tile IR
  kernel (whole rows in registers, float math in f32): normalizations and
  softmaxes decomposed by the graph pipeline become single kernels;
* matmuls run on the stdlib GEMM (autotuned on Hopper) or a batched
  Tile IR product; reshapes are views; transposes, slices, concats, pads
  and general broadcasts are row copies or batched 2-D transposes;
  reductions over leading dims are deterministic two-pass column
  reductions.

The plan is built from the listing alone (no compiler objects), so a
listing saved with :meth:`GpuProgram.save` runs where only the runtime and
the kernel cache are installed (``GpuProgram.load``).
"""

from __future__ import annotations

import base64
import itertools
import json
import linecache
import math

import numpy as np

from . import _gpu_kernels as K
from . import cuda as _cuda
from ._dtypes import as_dtype
from ._errors import TesseraError
from ._kernel import Schedule, _compile_only, cdiv, kernel

_FORMAT = "tessera.gpu_program/1"
_MAX_ROW = 16384          # elements of a row a fused kernel keeps in registers

_UNARY = {
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
_BINARY = {
    "tgraph.add": "({0} + {1})", "tgraph.sub": "({0} - {1})",
    "tgraph.mul": "({0} * {1})", "tgraph.div": "({0} / {1})",
    "tgraph.max": "tile.maximum({0}, {1})",
    "tgraph.min": "tile.minimum({0}, {1})",
}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">",
            "ge": ">="}
_REDUCE = {"tgraph.reduce_sum": "sum", "tgraph.reduce_mean": "sum",
           "tgraph.reduce_max": "max", "tgraph.reduce_min": "min"}
_NEUTRAL = {"sum": 0.0, "max": -math.inf, "min": math.inf}
_FLOATS = ("f32", "bf16", "f16", "f64")

_NUMPY_UNARY = {
    "tgraph.neg": np.negative, "tgraph.abs": np.abs, "tgraph.exp": np.exp,
    "tgraph.log": np.log, "tgraph.log1p": np.log1p, "tgraph.sin": np.sin,
    "tgraph.cos": np.cos, "tgraph.tanh": np.tanh, "tgraph.sqrt": np.sqrt,
    "tgraph.rsqrt": lambda x: 1 / np.sqrt(x),
    "tgraph.reciprocal": lambda x: 1 / x, "tgraph.square": np.square,
    "tgraph.floor": np.floor, "tgraph.sign": np.sign,
    "tgraph.relu": lambda x: np.maximum(x, 0),
    "tgraph.sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tgraph.silu": lambda x: x / (1 + np.exp(-x)),
    "tgraph.stop_gradient": lambda x: x,
}
_NUMPY_BINARY = {
    "tgraph.add": np.add, "tgraph.sub": np.subtract,
    "tgraph.mul": np.multiply, "tgraph.div": np.divide,
    "tgraph.max": np.maximum, "tgraph.min": np.minimum,
    "tgraph.pow": np.power,
}


def _numel(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def _pow2(n):
    return 1 << max(0, (int(n) - 1).bit_length())


def _direction(attr):
    text = attr if isinstance(attr, str) else str(attr.get("text", ""))
    for word in sorted(_COMPARE, key=len, reverse=True):
        if word in text.lower():
            return word
    raise TesseraError(f"unknown comparison {text!r}")


def _numpy_dtype(name):
    return as_dtype(name).numpy


def _decode(attr):
    """A dense constant of the listing as a NumPy array."""
    dt = attr["dtype"]
    raw = attr["data"]
    if dt == "i1":
        a = np.frombuffer(raw, np.uint8).astype(bool)
    else:
        a = np.frombuffer(raw, _numpy_dtype(dt))
    shape = tuple(attr["shape"])
    return (np.full(shape, a[0]) if attr["splat"] else a.reshape(shape)).copy()


class _Op:
    __slots__ = ("index", "name", "operands", "results", "attrs", "loc",
                 "regions")

    def __init__(self, index, record):
        self.index = index
        self.name = record["op"]
        self.operands = tuple(record["operands"])
        self.results = tuple(record["results"])
        self.attrs = record["attrs"]
        self.loc = record.get("loc", "")
        self.regions = record.get("regions", 0)

    def where(self):
        return f"{self.loc}: " if self.loc else ""


# --------------------------------------------------------------------------
# Steps of a plan
# --------------------------------------------------------------------------

class _Step:
    """One launch (or a few) of the plan; ``inputs``/``outputs`` are value
    ids."""
    inputs = ()
    outputs = ()


class _Alias(_Step):
    def __init__(self, src, dst, shape):
        self.inputs, self.outputs, self.shape = (src,), (dst,), shape

    def run(self, env, alloc):
        env[self.outputs[0]] = env[self.inputs[0]].reshape(*self.shape)


class _Matmul(_Step):
    """out[batch] = a[batch] @ b[batch] (b transposed when asked)."""

    def __init__(self, a, b, out, batch, m, n, k, a_shared, b_shared,
                 b_transposed, dtype):
        self.inputs, self.outputs = (a, b), (out,)
        self.batch, self.m, self.n, self.k = batch, m, n, k
        self.a_shared, self.b_shared = a_shared, b_shared
        self.b_transposed, self.dtype = b_transposed, dtype

    def run(self, env, alloc):
        from . import stdlib
        a, b = env[self.inputs[0]], env[self.inputs[1]]
        out = alloc(self.outputs[0])
        m, n, k, batch = self.m, self.n, self.k, self.batch
        if batch == 1 or (self.b_shared and not self.a_shared):
            # The batch folds into M: one stdlib GEMM.
            rows = m * (1 if self.a_shared else batch)
            stdlib.gemm(a.reshape(rows, k),
                        b.reshape(*((n, k) if self.b_transposed else (k, n))),
                        transposed_b=self.b_transposed,
                        out=out.reshape(rows, n))
            return
        kb = (n, k) if self.b_transposed else (k, n)
        s = (Schedule(block=(64, 64), k=16, warps=4, stages=2)
             if self.dtype == "f32" else
             Schedule(block=(128, 128), k=64, warps=8, stages=3))
        K.batched_matmul.with_schedule(s)[(cdiv(m, s.m), cdiv(n, s.n),
                                           batch)](
            a.reshape(1 if self.a_shared else batch, m, k),
            b.reshape(1 if self.b_shared else batch, *kb),
            out.reshape(batch, m, n), b_transposed=self.b_transposed,
            a_shared=self.a_shared, b_shared=self.b_shared)


class _SwapLast(_Step):
    """out = x viewed as [Z, P, Q], transposed to [Z, Q, P]."""

    def __init__(self, x, out, z, p, q):
        self.inputs, self.outputs = (x,), (out,)
        self.z, self.p, self.q = z, p, q

    def run(self, env, alloc):
        out = alloc(self.outputs[0])
        s = Schedule(block=(32, 32), warps=4)
        K.swap_last.with_schedule(s)[(cdiv(self.p, 32), cdiv(self.q, 32),
                                      self.z)](
            env[self.inputs[0]].reshape(self.z, self.p, self.q),
            out.reshape(self.z, self.q, self.p))


class _ColumnReduce(_Step):
    """out[c] = scale * reduce(x[:, c]) of x viewed as [R, C]."""

    def __init__(self, x, out, r, c, kind, scale):
        self.inputs, self.outputs = (x,), (out,)
        self.r, self.c, self.kind, self.scale = r, c, kind, scale

    def run(self, env, alloc):
        out = alloc(self.outputs[0])
        bn = min(256, _pow2(self.c))
        programs = max(1, min(cdiv(self.r, 32), cdiv(264, cdiv(self.c, bn))))
        per = cdiv(cdiv(self.r, programs), 16) * 16 if self.r else 16
        programs = max(1, cdiv(self.r, per))
        part = _cuda.empty((programs, self.c), "f32")
        s = Schedule(block=(16, bn), warps=4)
        K.column_partials.with_schedule(s)[(cdiv(self.c, bn), programs)](
            env[self.inputs[0]].reshape(self.r, self.c), part, per,
            kind=self.kind)
        K.column_finish.with_schedule(s)[(cdiv(self.c, bn),)](
            part, out.reshape(self.c), float(self.scale), kind=self.kind)


class _LongRows(_Step):
    def __init__(self, x, out, r, c, kind, scale):
        self.inputs, self.outputs = (x,), (out,)
        self.r, self.c, self.kind, self.scale = r, c, kind, scale

    def run(self, env, alloc):
        out = alloc(self.outputs[0])
        s = Schedule(block=(1, 1024), warps=8)
        K.long_rows.with_schedule(s)[(self.r,)](
            env[self.inputs[0]].reshape(self.r, self.c), out.reshape(self.r),
            float(self.scale), kind=self.kind)


class _Generated(_Step):
    """A kernel generated for this plan: ``launch(env, alloc)``."""

    def __init__(self, inputs, outputs, fn, grid, schedule, views):
        self.inputs, self.outputs = tuple(inputs), tuple(outputs)
        self.kernel = fn
        self.grid = grid
        self.schedule = schedule
        self.views = views   # per argument: (value id, view shape)

    def run(self, env, alloc):
        args = []
        for vid, shape in self.views:
            t = env.get(vid)
            if t is None:
                t = alloc(vid)
            args.append(t.reshape(*shape))
        self.kernel.with_schedule(self.schedule)[self.grid](*args)


_GENERATED = itertools.count()


def _make_kernel(name, source):
    """A @ts.kernel from generated source (kept in linecache so that
    tracebacks and locations show it)."""
    filename = f"<tessera-gpu {name}>"
    linecache.cache[filename] = (len(source), None,
                                 source.splitlines(True), filename)
    from . import tile
    from ._kernel import KTile
    import tessera as ts
    namespace = {"tile": tile, "KTile": KTile, "ts": ts}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return kernel(namespace[name])


# --------------------------------------------------------------------------
# The program
# --------------------------------------------------------------------------

class GpuProgram:
    """A launch plan for one listed function (see the module docstring).
    Call it with one array per argument of the listing (NumPy arrays are
    copied to the device; device tensors and DLPack CUDA tensors are
    used in place); it returns one DeviceTensor per result."""

    def __init__(self, listing, device="cuda"):
        self.listing = listing
        self._device_spec = device
        self._resolved = None
        self.name = listing["name"]
        self._shapes = [tuple(s) for s in listing["shapes"]]
        self._dtypes = list(listing["dtypes"])
        self._ops = [_Op(i, r) for i, r in enumerate(listing["ops"])]
        self._args = tuple(listing["arguments"])
        self._results = tuple(listing["results"])
        for vid in self._args + self._results:
            if self._dtypes[vid] == "key":
                raise TesseraError(f"{self.name}: random keys are not "
                                   f"supported on the GPU yet")
        for i, s in enumerate(self._shapes):
            if any(d < 0 for d in s):
                raise TesseraError(
                    f"{self.name}: value {i} has symbolic dims {list(s)}; "
                    f"GPU programs are built for concrete shapes")
        self._plan()

    # -- building ---------------------------------------------------------

    def _plan(self):
        self.constants = {}           # value id -> host array
        self._producer = {}
        uses = {}
        for op in self._ops:
            for r in op.results:
                self._producer[r] = op
            for o in op.operands:
                uses.setdefault(o, []).append(op)
        self._uses = uses
        self.steps = []
        self._fold_constants()
        self._group_of = {}
        self._groups = []
        self._bcast = {}              # lazy broadcast: id -> (source, shape)
        for op in self._ops:
            if op.results and all(r in self.constants for r in op.results):
                continue
            self._lower(op)
        self._flush_all()
        self._finish_groups()

    def _fold_constants(self):
        for op in self._ops:
            if op.regions:
                continue
            if not all(o in self.constants for o in op.operands):
                continue
            try:
                vals = self._evaluate(op, [self.constants[o]
                                           for o in op.operands])
            except _NoFold:
                continue
            for r, v in zip(op.results, vals):
                dt = self._dtypes[r]
                self.constants[r] = np.asarray(v).astype(
                    bool if dt == "i1" else _numpy_dtype(dt)).reshape(
                    self._shapes[r])

    def _evaluate(self, op, xs):
        """NumPy semantics of the ops constants fold through."""
        n, a = op.name, op.attrs
        shape = self._shapes[op.results[0]] if op.results else ()
        if n == "tgraph.constant":
            return [_decode(a["value"])]
        if n == "tgraph.full":
            return [np.full(shape, a.get("value", 0.0))]
        if n in ("tgraph.zeros_like", "tgraph.ones_like"):
            return [np.full(shape, 0.0 if "zeros" in n else 1.0)]
        if n == "tgraph.iota":
            d = a["dim"]
            idx = np.arange(shape[d]).reshape(
                [-1 if i == d else 1 for i in range(len(shape))])
            return [np.broadcast_to(idx, shape)]
        f32 = [x.astype(np.float64) if x.dtype.kind == "f" or
               x.dtype.name == "bfloat16" else x for x in xs]
        if n in _NUMPY_UNARY:
            return [_NUMPY_UNARY[n](f32[0])]
        if n in _NUMPY_BINARY:
            return [_NUMPY_BINARY[n](f32[0], f32[1])]
        if n == "tgraph.compare":
            ops = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
                   "le": np.less_equal, "gt": np.greater,
                   "ge": np.greater_equal}
            return [ops[_direction(a["direction"])](f32[0], f32[1])]
        if n == "tgraph.select":
            return [np.where(xs[0], f32[1], f32[2])]
        if n == "tgraph.cast":
            return [xs[0]]
        if n == "tgraph.reshape":
            return [xs[0].reshape(shape)]
        if n == "tgraph.transpose":
            return [np.transpose(xs[0], a["permutation"])]
        if n == "tgraph.broadcast_in_dim":
            dims = a["broadcast_dimensions"]
            expanded = [1] * len(shape)
            for i, d in enumerate(dims):
                expanded[d] = xs[0].shape[i]
            return [np.broadcast_to(xs[0].reshape(expanded), shape)]
        raise _NoFold()

    # -- grouping -----------------------------------------------------------

    def _err(self, op, message):
        return TesseraError(f"{op.where()}ts.jit(device='cuda'): {op.name}: "
                            f"{message}")

    def _lower(self, op):
        n = op.name
        if op.regions:
            raise self._err(op, "control flow has no GPU lowering yet "
                                "(run it on the CPU)")
        for r in op.results:
            if self._dtypes[r] not in _FLOATS + ("i1",):
                raise self._err(op, f"{self._dtypes[r]} tensors are not "
                                    f"supported on the GPU yet")
        if n == "tgraph.reshape" or n == "tgraph.stop_gradient" and \
                self._shapes[op.results[0]] == self._shapes[op.operands[0]]:
            src = op.operands[0]
            self._flush_producing([src])
            self.steps.append(_Alias(src, op.results[0],
                                     self._shapes[op.results[0]]))
            return
        if n == "tgraph.matmul":
            return self._matmul(op)
        if n == "tgraph.transpose":
            return self._transpose(op)
        if n in ("tgraph.slice", "tgraph.concat", "tgraph.pad"):
            return self._copy_op(op)
        if n in _REDUCE:
            return self._reduce(op)
        if n == "tgraph.broadcast_in_dim":
            return self._broadcast(op)
        if n in _UNARY or n in _BINARY or n in (
                "tgraph.compare", "tgraph.select", "tgraph.cast",
                "tgraph.pow", "tgraph.gelu", "tgraph.full",
                "tgraph.zeros_like", "tgraph.ones_like"):
            return self._elementwise(op)
        raise self._err(op, "has no GPU lowering yet")

    # Fusion groups: ops sharing the row layout [R, C] of `full`; a value
    # of a group is 'full' [R, C], 'row' [R] or 'col' [C].

    def _classify(self, vid, full, internal=None):
        """The class of value vid read in a group of layout `full`."""
        if internal is not None and vid in internal.cls:
            return internal.cls[vid]
        src, shape = self._bcast.get(vid, (vid, self._shapes[vid]))
        if src in self.constants and self.constants[src].size == 1:
            return "scalar"
        n = len(full)
        if len(shape) > n:
            return None
        padded = (1,) * (n - len(shape)) + tuple(shape)
        if not full:
            return "full" if _numel(shape) == 1 else None
        if padded == tuple(full):
            return "full"
        if all(d == 1 for d in padded):
            return "scalar"
        if padded[:-1] == tuple(full[:-1]) and padded[-1] == 1:
            return "row"
        if all(d == 1 for d in padded[:-1]) and padded[-1] == full[-1]:
            return "col"
        return None

    def _group_for(self, op, full, operand_classes):
        """An open group of layout `full` the op may join (one holding an
        operand), or None."""
        key = (_numel(full[:-1]) if full else 1, full[-1] if full else 1)
        for o in op.operands:
            g = self._group_of.get(o)
            if g is not None and g.open and g.key == key:
                return g
        return None

    def _elementwise(self, op):
        out = op.results[0]
        full = self._shapes[out]
        # A row-shaped result joins its operand's group as a row value.
        for o in op.operands:
            g = self._group_of.get(o)
            if g is not None and g.open and g.cls.get(o) == "row" and (
                    tuple(full) in (tuple(g.full[:-1]) + (1,),
                                    tuple(g.full[:-1]))):
                if all(self._row_operand(x, g) for x in op.operands):
                    return self._join(g, op, "row")
        classes = [self._classify(o, full) for o in op.operands]
        g = self._group_for(op, full, classes)
        if g is not None:
            classes = [self._classify(o, g.full, g) for o in op.operands]
            if None not in classes and self._result_class(classes) == "full":
                return self._join(g, op, "full")
        classes = [self._classify(o, full) for o in op.operands]
        if None in classes:
            # A broadcast the row layout cannot express: materialize it.
            for o, c in zip(op.operands, classes):
                if c is None:
                    self._materialize_broadcast(op, o, full)
            classes = [self._classify(o, full) for o in op.operands]
            if None in classes:
                raise self._err(op, f"operands of shapes "
                                    f"{[self._shapes[o] for o in op.operands]}"
                                    f" do not broadcast to {list(full)}")
        g = _Group(self, full)
        self._join(g, op, "full")

    def _row_operand(self, vid, g):
        c = g.cls.get(vid)
        if c in ("row", "scalar"):
            return True
        if vid in self.constants and self.constants[vid].size == 1:
            return True
        shape = self._shapes[vid]
        if c is None and shape in (tuple(g.full[:-1]) + (1,),
                                   tuple(g.full[:-1])):
            self._flush_producing([vid])
            return True
        return _numel(shape) == 1

    @staticmethod
    def _result_class(classes):
        if "full" in classes or ("row" in classes and "col" in classes):
            return "full"
        return "row" if "row" in classes else (
            "col" if "col" in classes else "scalar")

    def _join(self, g, op, cls):
        # Values from other open groups must be computed first.
        outside = [o for o in op.operands if self._group_of.get(o) is not g]
        self._flush_producing([self._source(o) for o in outside],
                              materialize=False)
        g.add(op, cls)
        for r in op.results:
            self._group_of[r] = g

    def _source(self, vid):
        """The buffer a value is read from (its source for a lazy
        broadcast)."""
        return self._bcast[vid][0] if vid in self._bcast else vid

    def _flush_producing(self, vids, materialize=True):
        for v in vids:
            if v in self._bcast:
                src, expanded = self._bcast[v]
                if not materialize:
                    v = src
                else:
                    del self._bcast[v]
                    self._flush_producing([src])
                    self._copy(None, src, v, expanded)
                    continue
            g = self._group_of.get(v)
            if g is not None and g.open:
                self._close(g)

    def _close(self, g):
        g.open = False
        self.steps.append(g)

    def _flush_all(self):
        for g in self._groups:
            if g.open:
                self._close(g)

    def _reduce(self, op):
        x, out = op.operands[0], op.results[0]
        shape = self._shapes[x]
        dims = sorted(d % max(1, len(shape)) for d in op.attrs.get("dims", ()))
        kind = _REDUCE[op.name]
        count = _numel([shape[d] for d in dims])
        scale = 1.0 / count if op.name == "tgraph.reduce_mean" and count \
            else 1.0
        n = len(shape)
        if not dims:
            return self._elementwise_alias(op)
        if dims == [n - 1] and shape[-1] <= _MAX_ROW:
            g = self._group_of.get(x)
            if g is None or not g.open or g.key != (_numel(shape[:-1]),
                                                     shape[-1]) or \
                    g.cls.get(x) != "full":
                g = _Group(self, shape)
            self._flush_producing([x] if self._group_of.get(x) is not g
                                  else [])
            g.add(op, "row", reduce=(kind, scale))
            self._group_of[out] = g
            return
        self._flush_producing([x])
        k = dims[0]
        if dims == list(range(k, n)):        # a suffix: rows of prod(...)
            r, c = _numel(shape[:k]), _numel(shape[k:])
            if c <= _MAX_ROW:
                g = _Group(self, (r, c))
                g.view_inputs[x] = (r, c)
                g.add(op, "row", reduce=(kind, scale))
                self._group_of[out] = g
                self._close(g)
                return
            self.steps.append(_LongRows(x, out, r, c, kind, scale))
            return
        if dims == list(range(len(dims))):   # a prefix: columns
            r, c = _numel(shape[:len(dims)]), _numel(shape[len(dims):])
            if c == 1:
                self.steps.append(_LongRows(x, out, 1, r, kind, scale))
                return
            self.steps.append(_ColumnReduce(x, out, r, c, kind, scale))
            return
        raise self._err(op, f"reduction over dims {dims} of {list(shape)} "
                            f"(leading or trailing dims only) is not "
                            f"supported on the GPU yet")

    def _elementwise_alias(self, op):
        self._flush_producing([op.operands[0]])
        self.steps.append(_Alias(op.operands[0], op.results[0],
                                 self._shapes[op.results[0]]))

    def _broadcast(self, op):
        x, out = op.operands[0], op.results[0]
        full = self._shapes[out]
        dims = op.attrs["broadcast_dimensions"]
        src = self._shapes[x]
        expanded = [1] * len(full)
        for i, d in enumerate(dims):
            expanded[d] = src[i]
        g = self._group_of.get(x)
        if g is not None and g.open and g.cls.get(x) == "row" and \
                tuple(expanded[:-1]) == tuple(full[:-1]) and expanded[-1] == 1 \
                and g.key == (_numel(full[:-1]), full[-1]):
            g.add(op, "full", broadcast=True)
            self._group_of[out] = g
            return
        if _numel(src) == _numel(expanded) and x not in self._bcast and \
                self._classify_shape(expanded, full) is not None:
            self._bcast[out] = (x, tuple(expanded))
            return
        self._flush_producing([x])
        self._copy(op, x, out, expanded)

    def _classify_shape(self, padded, full):
        if tuple(padded) == tuple(full):
            return "full"
        if all(d == 1 for d in padded):
            return "scalar"
        if tuple(padded[:-1]) == tuple(full[:-1]) and padded[-1] == 1:
            return "row"
        if all(d == 1 for d in padded[:-1]) and padded[-1] == full[-1]:
            return "col"
        return None

    def _materialize_broadcast(self, op, vid, full):
        """A copy of vid broadcast to `full` (numpy rules), in place of
        vid for this op's group."""
        shape = self._shapes[vid]
        expanded = (1,) * (len(full) - len(shape)) + tuple(shape)
        new = self._new_value(full, self._dtypes[vid])
        if vid in self.constants:
            self.constants[new] = np.ascontiguousarray(np.broadcast_to(
                self.constants[vid].reshape(expanded), full))
        else:
            self._flush_producing([vid])
            self._copy(op, vid, new, expanded)
        op.operands = tuple(new if o == vid else o for o in op.operands)

    def _new_value(self, shape, dtype):
        self._shapes.append(tuple(shape))
        self._dtypes.append(dtype)
        return len(self._shapes) - 1

    # -- layout ops -----------------------------------------------------------

    def _matmul(self, op):
        a, b = op.operands
        out = op.results[0]
        self._flush_producing([a, b])
        ta = bool(op.attrs.get("transpose_lhs", False))
        tb = bool(op.attrs.get("transpose_rhs", False))
        sa, sb, so = self._shapes[a], self._shapes[b], self._shapes[out]
        if len(sa) < 2 or len(sb) < 2:
            raise self._err(op, "matmul of vectors is not supported on the "
                                "GPU yet")
        if ta:
            a = self._swapped(op, a)
            sa = self._shapes[a]
        m, k = sa[-2], sa[-1]
        n = sb[-2] if tb else sb[-1]
        batch_shape = tuple(so[:-2])
        batch = _numel(batch_shape)
        a_b, b_b = tuple(sa[:-2]), tuple(sb[:-2])
        a_shared = _numel(a_b) == 1
        b_shared = _numel(b_b) == 1
        if not a_shared and a_b != batch_shape[len(batch_shape) - len(a_b):]:
            raise self._err(op, f"batch dims {list(a_b)} and {list(b_b)}")
        if not a_shared and _numel(a_b) != batch:
            a = self._broadcast_batch(op, a, batch_shape + (m, k))
        if not b_shared and _numel(b_b) != batch:
            b = self._broadcast_batch(op, b, batch_shape + tuple(sb[-2:]))
        dtype = self._dtypes[out]
        if self._dtypes[a] != dtype or self._dtypes[b] != dtype:
            raise self._err(op, f"matmul of {self._dtypes[a]} and "
                                f"{self._dtypes[b]} into {dtype}")
        self.steps.append(_Matmul(a, b, out, batch, m, n, k, a_shared,
                                  b_shared, tb, dtype))

    def _broadcast_batch(self, op, vid, shape):
        new = self._new_value(shape, self._dtypes[vid])
        src = self._shapes[vid]
        self._copy(op, vid, new, (1,) * (len(shape) - len(src)) + tuple(src))
        return new

    def _swapped(self, op, vid):
        s = self._shapes[vid]
        new = self._new_value(tuple(s[:-2]) + (s[-1], s[-2]),
                              self._dtypes[vid])
        self.steps.append(_SwapLast(vid, new, _numel(s[:-2]), s[-2], s[-1]))
        return new

    def _transpose(self, op):
        x, out = op.operands[0], op.results[0]
        self._flush_producing([x])
        perm = list(op.attrs["permutation"])
        shape = self._shapes[x]
        n = len(perm)
        if perm == list(range(n)):
            self.steps.append(_Alias(x, out, self._shapes[out]))
            return
        if perm[-1] == n - 1:
            self._permute_rows(op, x, out, perm)
            return
        # Groups swap: [lead..., g1, g2] -> [lead..., g2, g1].
        p = 0
        while perm[p] == p:
            p += 1
        q = perm[p]
        if perm == list(range(p)) + list(range(q, n)) + list(range(p, q)):
            self.steps.append(_SwapLast(x, out, _numel(shape[:p]),
                                        _numel(shape[p:q]),
                                        _numel(shape[q:])))
            return
        # The last dim moves: bring dim perm[-1] last, then permute rows.
        k = perm[-1]
        first = list(range(k)) + list(range(k + 1, n)) + [k]
        mid = self._new_value(tuple(shape[i] for i in first),
                              self._dtypes[x])
        self.steps.append(_SwapLast(x, mid, _numel(shape[:k]), shape[k],
                                    _numel(shape[k + 1:])))
        rest = [first.index(d) for d in perm]
        self._permute_rows(op, mid, out, rest)

    def _permute_rows(self, op, x, out, perm):
        """out = transpose(x, perm) where the last dim stays last."""
        shape = self._shapes[x]
        strides = _row_strides(shape[:-1])
        out_shape = self._shapes[out]
        space = list(out_shape[:-1])
        in_coef = [strides[perm[d]] for d in range(len(space))]
        self.steps.append(_row_copy(
            self, x, out, space, in_coef, _row_strides(out_shape[:-1]), 0, 0,
            shape[-1], 0, 0, out_shape[-1], False, None))

    def _copy(self, op, x, out, expanded):
        """out = broadcast of x (its shape padded to `expanded`)."""
        shape = self._shapes[out]
        src = self._shapes[x]
        strides = _row_strides(expanded[:-1])
        space = list(shape[:-1])
        in_coef = [0 if expanded[d] == 1 and shape[d] != 1 else strides[d]
                   for d in range(len(space))]
        col_bcast = expanded[-1] == 1 and shape[-1] != 1 if shape else False
        del src
        self.steps.append(_row_copy(
            self, x, out, space, in_coef, _row_strides(shape[:-1]), 0, 0,
            expanded[-1] if shape else 1, 0, 0, shape[-1] if shape else 1,
            col_bcast, None))

    def _copy_op(self, op):
        x = op.operands
        out = op.results[0]
        self._flush_producing(list(x))
        shape = self._shapes[out]
        n = len(shape)
        if n == 0:
            raise self._err(op, "of a scalar")
        out_rows = _row_strides(shape[:-1])
        if op.name == "tgraph.slice":
            src = self._shapes[x[0]]
            start = list(op.attrs["start"])
            stride = list(op.attrs.get("stride", [1] * n))
            if stride[-1] != 1:
                raise self._err(op, "a strided slice of the last dim is not "
                                    "supported on the GPU yet")
            st = _row_strides(src[:-1])
            base = sum(start[d] * st[d] for d in range(n - 1))
            coef = [stride[d] * st[d] for d in range(n - 1)]
            self.steps.append(_row_copy(
                self, x[0], out, list(shape[:-1]), coef, out_rows, base, 0,
                src[-1], start[-1], 0, shape[-1], False, None))
            return
        if op.name == "tgraph.concat":
            dim = op.attrs["dim"] % n
            offset = 0
            steps = []
            for v in x:
                s = self._shapes[v]
                if dim == n - 1:
                    steps.append(_row_copy(
                        self, v, out, list(s[:-1]), _row_strides(s[:-1]),
                        out_rows, 0, 0, s[-1], 0, offset, shape[-1], False,
                        None))
                else:
                    steps.append(_row_copy(
                        self, v, out, list(s[:-1]), _row_strides(s[:-1]),
                        out_rows, 0, offset * out_rows[dim], s[-1], 0, 0,
                        shape[-1], False, None))
                offset += s[dim]
            self.steps.append(_Chain(x, (out,), steps))
            return
        # pad: fill with the value, then copy the interior.
        src = self._shapes[x[0]]
        low = list(op.attrs["low"])
        interior = list(op.attrs.get("interior", [0] * n))
        if any(d < 0 for d in low) or list(op.attrs["high"]) and any(
                d < 0 for d in op.attrs["high"]):
            raise self._err(op, "negative padding is not supported on the "
                                "GPU yet")
        if interior[-1] != 0:
            raise self._err(op, "interior padding of the last dim is not "
                                "supported on the GPU yet")
        value = op.attrs.get("value", 0.0)
        if isinstance(value, dict):
            value = float(_decode(value).reshape(-1)[0])
        fill = _row_copy(self, None, out, list(shape[:-1]), None, out_rows,
                         0, 0, 0, 0, 0, shape[-1], False, float(value))
        coef = [(interior[d] + 1) * out_rows[d] for d in range(n - 1)]
        base = sum(low[d] * out_rows[d] for d in range(n - 1))
        body = _row_copy(self, x[0], out, list(src[:-1]),
                         _row_strides(src[:-1]), coef, 0, base, src[-1], 0,
                         low[-1], shape[-1], False, None)
        self.steps.append(_Chain(x, (out,), [fill, body]))

    # -- fused kernels ---------------------------------------------------------

    def _finish_groups(self):
        steps = []
        for s in self.steps:
            steps.append(s.build() if isinstance(s, _Group) else s)
        self.steps = steps
        # When each value is last used, for freeing buffers early.
        self._last_use = {}
        for i, s in enumerate(self.steps):
            for v in s.inputs:
                self._last_use[v] = i

    def _needed_outside(self, vid, group):
        if vid in self._results:
            return True
        for op in self._uses.get(vid, ()):
            if not any(op is g_op for g_op in group.ops):
                return True
        for s in self.steps:
            if not isinstance(s, _Group) and vid in s.inputs:
                return True
            if isinstance(s, _Group) and s is not group and \
                    vid in s.external_inputs():
                return True
        return False

    # -- running -----------------------------------------------------------------

    def __call__(self, *args):
        if len(args) != len(self._args):
            raise TesseraError(f"{self.name} takes {len(self._args)} "
                               f"arrays, got {len(args)}")
        aot = _compile_only.chip is not None
        if not aot and self._resolved is None:
            self._resolved = _cuda.device(self._device_spec)
        env = {}
        for vid, a in zip(self._args, args):
            env[vid] = self._argument(vid, a, aot)
        for vid, c in self.constants.items():
            if vid in self._needed_constants:
                env[vid] = self._constant(vid, c, aot)
        shapes, dtypes = self._shapes, self._dtypes

        def alloc(vid):
            t = env.get(vid)
            if t is None:
                dt = dtypes[vid]
                t = _cuda.empty(shapes[vid] or (1,), "i8" if dt == "i1"
                                else dt, device=self._resolved or
                                self._device_spec)
                if not shapes[vid]:
                    t = t.reshape()
                env[vid] = t
            return t

        keep = set(self._results) | set(self._args)
        for i, step in enumerate(self.steps):
            step.run(env, alloc)
            for v in step.inputs:
                if self._last_use.get(v) == i and v not in keep:
                    env.pop(v, None)
        return [env[r] if r in env else self._constant(r, self.constants[r],
                                                       aot)
                for r in self._results]

    @property
    def device(self):
        return self._resolved or _cuda.device(self._device_spec)

    @property
    def _needed_constants(self):
        needed = set()
        for s in self.steps:
            needed.update(v for v in s.inputs if v in self.constants)
        needed.update(r for r in self._results if r in self.constants)
        return needed

    def _argument(self, vid, a, aot):
        shape, dt = self._shapes[vid], self._dtypes[vid]
        if aot:
            return _cuda.empty(shape or (1,), dt).reshape(*shape)
        if isinstance(a, np.ndarray) or np.isscalar(a):
            a = np.asarray(a)
            if tuple(a.shape) != shape:
                raise TesseraError(f"{self.name}: argument of shape "
                                   f"{list(a.shape)}, expected {list(shape)}")
            return _cuda.to_device(a, self.device, dt)
        t = a if isinstance(a, _cuda.DeviceTensor) else _cuda.from_dlpack(a)
        if tuple(t.shape) != shape or t.dtype.name != dt:
            raise TesseraError(f"{self.name}: argument {t.dtype.name}"
                               f"{list(t.shape)}, expected {dt}{list(shape)}")
        return t

    def _constant(self, vid, c, aot):
        cache = self.__dict__.setdefault("_device_constants", {})
        t = cache.get(vid)
        if t is None:
            dt = self._dtypes[vid]
            if aot:
                t = _cuda.empty(c.shape or (1,), "i8" if dt == "i1" else dt)
            else:
                host = c.astype(np.int8) if dt == "i1" else c
                t = _cuda.to_device(host.reshape(c.shape or (1,)),
                                    self.device, "i8" if dt == "i1" else dt)
            t = t.reshape(*c.shape)
            if not aot:
                cache[vid] = t
        return t

    # -- saving -------------------------------------------------------------------

    def save(self, path):
        """Writes the listing this program was built from (JSON): load()
        rebuilds the same plan without the compiler."""
        def enc(x):
            if isinstance(x, bytes):
                return {"__bytes__": base64.b64encode(x).decode()}
            if isinstance(x, dict):
                return {k: enc(v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return [enc(v) for v in x]
            return x
        with open(path, "w") as f:
            json.dump({"format": _FORMAT, "listing": enc(self.listing)}, f)

    @classmethod
    def load(cls, path, device="cuda"):
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise TesseraError(f"cannot read GPU program {path}: {e}") \
                from None
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise TesseraError(f"{path} is not a {_FORMAT} file")

        def dec(x):
            if isinstance(x, dict):
                if "__bytes__" in x:
                    return base64.b64decode(x["__bytes__"])
                return {k: dec(v) for k, v in x.items()}
            if isinstance(x, list):
                return [dec(v) for v in x]
            return x
        return cls(dec(data["listing"]), device)


class _NoFold(Exception):
    pass


def _row_strides(shape):
    """Row-major strides of `shape` in elements."""
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= d
    return list(reversed(out))


class _Chain(_Step):
    def __init__(self, inputs, outputs, steps):
        self.inputs, self.outputs, self.parts = tuple(inputs), outputs, steps

    def run(self, env, alloc):
        for s in self.parts:
            s.run(env, alloc)


def _row_copy(program, x, out, space, in_coef, out_coef, in_base, out_base,
              in_cols, in_c0, out_c0, out_cols, col_bcast, fill):
    """A generated kernel: for each point e of `space` (one program per
    row), out row (out_base + sum e*out_coef) gets columns [out_c0, ...)
    from x row (in_base + sum e*in_coef) columns [in_c0, ...); or `fill`
    everywhere when x is None."""
    rows = _numel(space)
    width = out_cols if fill is not None or col_bcast else \
        min(in_cols - in_c0, out_cols - out_c0)
    bn = _pow2(max(1, width))
    name = f"row_copy_{next(_GENERATED)}"
    lines = [f"def {name}(" + ("" if x is None else "X: KTile['RI', 'CI'], ")
             + "Y: KTile['RO', 'CO']):",
             "    T = tile.context()",
             "    e = tile.program_id(0)"]
    in_row, out_row = [str(in_base)], [str(out_base)]
    inner = 1
    for d in reversed(range(len(space))):
        idx = f"((e // {inner}) % {space[d]})" if inner > 1 else \
            f"(e % {space[d]})"
        if in_coef is not None and in_coef[d]:
            in_row.append(f"{idx} * {in_coef[d]}")
        if out_coef[d]:
            out_row.append(f"{idx} * {out_coef[d]}")
        inner *= space[d]
    lines.append(f"    ro = {' + '.join(out_row)}")
    lines.append("    cols = tile.iota((1, T.n), 1)")
    lines.append(f"    ok = cols < {width}")
    if fill is not None:
        lines.append(f"    v = tile.full((1, T.n), {_lit(fill)})")
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
    fn = _make_kernel(name, "\n".join(lines) + "\n")
    s = Schedule(block=(1, bn), warps=1 if bn <= 256 else 4)
    views = []
    if x is not None:
        xs = program._shapes[x]
        views.append((x, (_numel(xs[:-1]), xs[-1] if xs else 1)))
    os_ = program._shapes[out]
    views.append((out, (_numel(os_[:-1]), os_[-1] if os_ else 1)))
    return _Generated([x] if x is not None else [], [out], fn, (rows,), s,
                      views)


class _Group:
    """Ops fused into one row kernel of layout `full` ([..., C])."""

    def __init__(self, program, full):
        self.program = program
        self.full = tuple(full)
        self.key = (_numel(self.full[:-1]) if self.full else 1,
                    self.full[-1] if self.full else 1)
        self.ops = []
        self.cls = {}            # value id -> full / row / col / scalar
        self.extra = {}          # op index -> dict(reduce=..., broadcast=...)
        self.view_inputs = {}    # value id -> shape it is read as
        self.open = True
        program._groups.append(self)

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

    @property
    def inputs(self):
        p = self.program
        out = []
        for o in self.external_inputs():
            src = p._source(o)
            if not (src in p.constants and p.constants[src].size == 1) \
                    and src not in out:
                out.append(src)
        return tuple(out)

    def build(self):
        p = self.program
        r_count, c = self.key
        produced = [r for op in self.ops for r in op.results]
        outputs = [v for v in produced if p._needed_outside(v, self)]
        if not outputs:
            outputs = produced[-1:]
        inputs = [o for o in self.external_inputs()
                  if not (p._source(o) in p.constants and
                          p.constants[p._source(o)].size == 1)]
        bn = _pow2(c)
        m = max(1, min(16, 4096 // bn))
        warps = 8 if m * bn >= 4096 else 4
        name = f"fused_{next(_GENERATED)}"
        params, lines, views = [], [], []
        names = {}
        lines.append("    T = tile.context()")
        lines.append("    r = tile.program_id(0) * T.m")
        if bn != c:
            lines.append(f"    colmask = tile.iota((T.m, T.n), 1) < {c}")
        scalar_consts = {}
        for o in self.external_inputs():
            src = p._source(o)
            if src in p.constants and p.constants[src].size == 1:
                v = p.constants[src].reshape(-1)[0]
                scalar_consts[o] = (repr(bool(v)) if p._dtypes[src] == "i1"
                                    else _lit(v))
        for i, vid in enumerate(inputs):
            arg = f"I{i}"
            src = p._source(vid)
            dt = p._dtypes[src]
            cls = p._classify(vid, self.full) if vid not in self.view_inputs \
                else p._classify_shape(self.view_inputs[vid], self.full)
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
                                   f"{p._shapes[vid]} in a group of "
                                   f"{list(self.full)}")
            self.cls.setdefault(vid, cls)
            names[vid] = f"v{vid}"
        for o, text in scalar_consts.items():
            names[o] = text
            self.cls[o] = "scalar"

        def ref(vid, want):
            """vid's value as a tile of class `want`."""
            have = self.cls[vid]
            t = names[vid]
            if have == want or have == "scalar":
                return t
            if have == "row" and want == "full":
                return f"{t}[:, None]"
            if have == "col" and want == "full":
                return t
            raise TesseraError(f"internal: {have} value read as {want}")

        for op in self.ops:
            res = op.results[0]
            cls = self.cls[res]
            ex = self.extra[op.index]
            if ex.get("reduce"):
                kind, scale = ex["reduce"]
                x = ref(op.operands[0], "full")
                if bn != c:
                    x = f"tile.where(colmask, {x}, {_lit(_NEUTRAL[kind])})"
                expr = f"tile.{kind}({x}, axis=1)"
                if scale != 1.0:
                    expr = f"({expr} * {scale!r})"
            elif ex.get("broadcast"):
                src = op.operands[0]
                expr = (f"tile.broadcast_to({ref(src, 'full')}, (T.m, T.n))"
                        if self.cls[src] == "row" else names[src])
                if self.cls[src] == "scalar":
                    expr = f"tile.full((T.m, T.n), {names[src]})"
                    if not _is_number(names[src]):
                        expr = f"tile.broadcast_to({names[src]}[:, None], " \
                               f"(T.m, T.n))"
                elif self.cls[src] == "col":
                    expr = f"tile.broadcast_to({names[src]}[None, :], " \
                           f"(T.m, T.n))"
            else:
                args = [ref(o, cls) for o in op.operands]
                expr = _expression(op, args, p._dtypes[res], p)
            names[res] = f"v{res}"
            lines.append(f"    v{res} = {expr}")
        outs = []
        for j, vid in enumerate(outputs):
            arg = f"O{j}"
            cls = self.cls[vid]
            dt = p._dtypes[vid]
            store = "i8" if dt == "i1" else dt
            value = names[vid]
            if _is_number(value):
                value = f"tile.full((T.m, T.n), {value})"
                cls = "full"
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
        source = (f"def {name}({', '.join(params)}):\n" + "\n".join(lines)
                  + "\n")
        fn = _make_kernel(name, source)
        s = Schedule(block=(m, bn), warps=warps)
        sources = []
        for v in inputs:
            if p._source(v) not in sources:
                sources.append(p._source(v))
        return _Generated(sources, outs, fn, (cdiv(r_count, m),), s, views)


def _lit(v):
    """A float as Python source (inf and nan included)."""
    v = float(v)
    return repr(v) if math.isfinite(v) else f"float('{v}')"


def _is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return text in ("True", "False") or text.startswith("float(")


def _expression(op, args, dtype, program):
    n = op.name
    if n in _UNARY:
        return _UNARY[n].format(*args)
    if n in _BINARY:
        return _BINARY[n].format(*args)
    if n == "tgraph.compare":
        return f"({args[0]} {_COMPARE[_direction(op.attrs['direction'])]} " \
               f"{args[1]})"
    if n == "tgraph.select":
        return f"tile.where({args[0]}, {args[1]}, {args[2]})"
    if n == "tgraph.cast":
        src = program._dtypes[op.operands[0]]
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
