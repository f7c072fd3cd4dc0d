"""The GPU executor of ``ts.jit(device="cuda")``.

A function's optimized Graph IR (``Module.list_graph``: after shape
inference, autodiff, inlining and decomposition) becomes a launch plan:

* ops that depend only on constants are evaluated once on the host;
* elementwise ops, broadcasts and reductions along the last dim that
  share a row layout ``[R, C]`` are fused into one generated Tile IR
  kernel (whole rows in registers, float math in f32): normalizations and
  softmaxes decomposed by the graph pipeline become single kernels;
* matmuls run on the stdlib GEMM (autotuned on Hopper) or a batched
  Tile IR product (autotuned per shape); reshapes are views; transposes,
  slices, concats, pads and general broadcasts are row copies or batched
  2-D transposes;
  reductions over leading dims are deterministic two-pass column
  reductions.

The plan is built from the listing alone (no compiler objects), so a
listing saved with :meth:`GpuProgram.save` runs where only the runtime and
the kernel cache are installed (``GpuProgram.load``).
"""

import base64
import json

import numpy as np

from . import _gpu_replay
from . import cuda as _cuda
from ._dtypes import as_dtype
from ._errors import TesseraError
from ._gpu_codegen import (BINARY, UNARY, FusedGroup, direction, numel,
                           row_copy)
from ._gpu_kernels import (Alias, Attention, AttentionGrad, Chain,
                           ColumnReduce, LongRows, Matmul, SwapLast)
from ._kernel import _compile_only
from .cuda import _row_major

_FORMAT = "tessera.gpu_program/1"
_RECORD_TRIES = 3        # calls that try to record before giving up
_MAX_ROW = 16384          # elements of a row a fused kernel keeps in registers
_REDUCE = {"tgraph.reduce_sum": "sum", "tgraph.reduce_mean": "sum",
           "tgraph.reduce_max": "max", "tgraph.reduce_min": "min"}
# Float dtypes computed in f32 registers (f64 would lose precision).
_FLOATS = ("f32", "bf16", "f16")

_HOST_UNARY = {
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
_HOST_BINARY = {
    "tgraph.add": np.add, "tgraph.sub": np.subtract,
    "tgraph.mul": np.multiply, "tgraph.div": np.divide,
    "tgraph.max": np.maximum, "tgraph.min": np.minimum,
    "tgraph.pow": np.power,
}


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


class GpuProgram:
    """A launch plan for one listed function (see the module docstring).
    Call it with one array per argument of the listing (NumPy arrays are
    copied to the device; device tensors and DLPack CUDA tensors are
    used in place); it returns one DeviceTensor per result."""

    def __init__(self, listing, device="cuda"):
        self.listing = listing
        self._device_spec = device
        self._resolved = None
        # Launches recorded at the second call and replayed from C++ (see
        # tessera._gpu_replay); `replay = False` turns it off.
        self.replay = True
        self._calls = 0
        self._record_tries = 0
        self._replay = None
        self._replay_outputs = None
        self.record_failure = None
        self.name = listing["name"]
        self.shapes = [tuple(s) for s in listing["shapes"]]
        self.dtypes = list(listing["dtypes"])
        self._ops = [_Op(i, r) for i, r in enumerate(listing["ops"])]
        self._args = tuple(listing["arguments"])
        self._results = tuple(listing["results"])
        for vid in self._args + self._results:
            if self.dtypes[vid] == "key":
                raise TesseraError(f"{self.name}: random keys are not "
                                   f"supported on the GPU yet")
        for i, s in enumerate(self.shapes):
            if any(d < 0 for d in s):
                raise TesseraError(
                    f"{self.name}: value {i} has symbolic dims {list(s)}; "
                    f"GPU programs are built for concrete shapes")
        self._plan()

    # -- building ---------------------------------------------------------

    def _plan(self):
        self.constants = {}           # value id -> host array
        self._uses = {}               # value id -> indices of ops reading it
        for op in self._ops:
            for o in op.operands:
                self._uses.setdefault(o, set()).add(op.index)
        self.steps = []
        self._fold_constants()
        self._group_of = {}
        self.groups = []
        self._bcast = {}              # lazy broadcast: id -> (source, shape)
        # attention output -> (its lse value, operands, causal, scale)
        self._lse = {}
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
                dt = self.dtypes[r]
                self.constants[r] = np.asarray(v).astype(
                    bool if dt == "i1" else _numpy_dtype(dt)).reshape(
                    self.shapes[r])

    def _evaluate(self, op, xs):
        """NumPy semantics of the ops constants fold through."""
        n, a = op.name, op.attrs
        shape = self.shapes[op.results[0]] if op.results else ()
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
        wide = [x.astype(np.float64) if x.dtype.kind == "f" or
                x.dtype.name == "bfloat16" else x for x in xs]
        if n in _HOST_UNARY:
            return [_HOST_UNARY[n](wide[0])]
        if n in _HOST_BINARY:
            return [_HOST_BINARY[n](wide[0], wide[1])]
        if n == "tgraph.compare":
            ops = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
                   "le": np.less_equal, "gt": np.greater,
                   "ge": np.greater_equal}
            return [ops[direction(a["direction"])](wide[0], wide[1])]
        if n == "tgraph.select":
            return [np.where(xs[0], wide[1], wide[2])]
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
        for v in op.results + op.operands:
            if self.dtypes[v] not in _FLOATS + ("i1",) and \
                    v not in self.constants:
                raise self._err(op, f"{self.dtypes[v]} tensors are not "
                                    f"supported on the GPU yet")
        if n == "tgraph.reshape" or n == "tgraph.stop_gradient" and \
                self.shapes[op.results[0]] == self.shapes[op.operands[0]]:
            src = op.operands[0]
            self._flush_producing([src])
            self.steps.append(Alias(src, op.results[0],
                                     self.shapes[op.results[0]]))
            return
        if n == "tgraph.matmul":
            return self._matmul(op)
        if n in ("tgraph.attention", "tgraph.attention_grad"):
            return self._attention(op)
        if n == "tgraph.transpose":
            return self._transpose(op)
        if n in ("tgraph.slice", "tgraph.concat", "tgraph.pad"):
            return self._copy_op(op)
        if n in _REDUCE:
            return self._reduce(op)
        if n == "tgraph.broadcast_in_dim":
            return self._broadcast(op)
        if n in UNARY or n in BINARY or n in (
                "tgraph.compare", "tgraph.select", "tgraph.cast",
                "tgraph.pow", "tgraph.gelu", "tgraph.full",
                "tgraph.zeros_like", "tgraph.ones_like"):
            return self._elementwise(op)
        raise self._err(op, "has no GPU lowering yet")

    # Fusion groups: ops sharing the row layout [R, C] of `full`; a value
    # of a group is 'full' [R, C], 'row' [R] or 'col' [C].

    def classify(self, vid, full, internal=None):
        """The class of value vid read in a group of layout `full`."""
        if internal is not None and vid in internal.cls:
            return internal.cls[vid]
        src, shape = self._bcast.get(vid, (vid, self.shapes[vid]))
        if src in self.constants and self.constants[src].size == 1:
            return "scalar"
        if not full:
            return "full" if numel(shape) == 1 else None
        if len(shape) > len(full):
            return None
        return self.classify_shape(
            (1,) * (len(full) - len(shape)) + tuple(shape), full)

    def _elementwise(self, op):
        out = op.results[0]
        full = self.shapes[out]
        key = (numel(full[:-1]) if full else 1, full[-1] if full else 1)
        for o in op.operands:
            g = self._group_of.get(o)
            if g is None or not g.open:
                continue
            # A result of the group's row shape joins as a row value.
            if g.cls.get(o) == "row" and tuple(full) in (
                    g.full[:-1] + (1,), g.full[:-1]) and all(
                    self._row_operand(x, g) for x in op.operands):
                return self._join(g, op, "row")
            if g.key == key:
                classes = [self.classify(x, g.full, g) for x in op.operands]
                if None not in classes and \
                        self._result_class(classes) == "full":
                    return self._join(g, op, "full")
        classes = [self.classify(o, full) for o in op.operands]
        if None in classes:
            # A broadcast the row layout cannot express: materialize it.
            for o, c in zip(op.operands, classes):
                if c is None:
                    self._materialize_broadcast(op, o, full)
            classes = [self.classify(o, full) for o in op.operands]
            if None in classes:
                raise self._err(op, f"operands of shapes "
                                    f"{[self.shapes[o] for o in op.operands]}"
                                    f" do not broadcast to {list(full)}")
        g = FusedGroup(self, full)
        self._join(g, op, "full")

    def _row_operand(self, vid, g):
        c = g.cls.get(vid)
        if c in ("row", "scalar"):
            return True
        if vid in self.constants and self.constants[vid].size == 1:
            return True
        shape = self.shapes[vid]
        if c is None and vid not in self._bcast and shape in (
                g.full[:-1] + (1,), g.full[:-1]):
            # Read from memory as the group's rows.
            g.view_inputs[vid] = g.full[:-1] + (1,)
            return True
        return numel(shape) == 1

    @staticmethod
    def _result_class(classes):
        if "full" in classes or ("row" in classes and "col" in classes):
            return "full"
        return "row" if "row" in classes else (
            "col" if "col" in classes else "scalar")

    def _join(self, g, op, cls):
        # Values from other open groups must be computed first.
        outside = [o for o in op.operands if self._group_of.get(o) is not g]
        self._flush_producing([self.source(o) for o in outside],
                              materialize=False)
        g.add(op, cls)
        for r in op.results:
            self._group_of[r] = g

    def source(self, vid):
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
        for g in self.groups:
            if g.open:
                self._close(g)

    def _reduce(self, op):
        x, out = op.operands[0], op.results[0]
        shape = self.shapes[x]
        dims = sorted(d % max(1, len(shape)) for d in op.attrs.get("dims", ()))
        kind = _REDUCE[op.name]
        count = numel([shape[d] for d in dims])
        scale = 1.0 / count if op.name == "tgraph.reduce_mean" and count \
            else 1.0
        n = len(shape)
        if not dims:
            return self._view(op)
        if dims == [n - 1] and shape[-1] <= _MAX_ROW:
            g = self._group_of.get(x)
            if g is None or not g.open or g.key != (numel(shape[:-1]),
                                                     shape[-1]) or \
                    g.cls.get(x) != "full":
                g = FusedGroup(self, shape)
            self._flush_producing([x] if self._group_of.get(x) is not g
                                  else [])
            g.add(op, "row", reduce=(kind, scale))
            self._group_of[out] = g
            return
        self._flush_producing([x])
        k = dims[0]
        if dims == list(range(k, n)):        # a suffix: rows of prod(...)
            r, c = numel(shape[:k]), numel(shape[k:])
            if c <= _MAX_ROW:
                g = FusedGroup(self, (r, c))
                g.view_inputs[x] = (r, c)
                g.add(op, "row", reduce=(kind, scale))
                self._group_of[out] = g
                self._close(g)
                return
            self.steps.append(LongRows(x, out, r, c, kind, scale))
            return
        if dims == list(range(len(dims))):   # a prefix: columns
            r, c = numel(shape[:len(dims)]), numel(shape[len(dims):])
            if c == 1:
                self.steps.append(LongRows(x, out, 1, r, kind, scale))
                return
            self.steps.append(ColumnReduce(x, out, r, c, kind, scale))
            return
        raise self._err(op, f"reduction over dims {dims} of {list(shape)} "
                            f"(leading or trailing dims only) is not "
                            f"supported on the GPU yet")

    def _view(self, op):
        self._flush_producing([op.operands[0]])
        self.steps.append(Alias(op.operands[0], op.results[0],
                                 self.shapes[op.results[0]]))

    def _broadcast(self, op):
        x, out = op.operands[0], op.results[0]
        full = self.shapes[out]
        dims = op.attrs["broadcast_dimensions"]
        src = self.shapes[x]
        expanded = [1] * len(full)
        for i, d in enumerate(dims):
            expanded[d] = src[i]
        g = self._group_of.get(x)
        if g is not None and g.open and g.cls.get(x) == "row" and \
                tuple(expanded[:-1]) == tuple(full[:-1]) and expanded[-1] == 1 \
                and g.key == (numel(full[:-1]), full[-1]):
            g.add(op, "full", broadcast=True)
            self._group_of[out] = g
            return
        if numel(src) == numel(expanded) and x not in self._bcast and \
                self.classify_shape(expanded, full) is not None:
            # Read straight from x's buffer by the groups that use it: x
            # must be in memory before any of them runs.
            self._flush_producing([x])
            self._bcast[out] = (x, tuple(expanded))
            return
        self._flush_producing([x])
        self._copy(op, x, out, expanded)

    def classify_shape(self, padded, full):
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
        shape = self.shapes[vid]
        expanded = (1,) * (len(full) - len(shape)) + tuple(shape)
        new = self._new_value(full, self.dtypes[vid])
        if vid in self.constants:
            self.constants[new] = np.ascontiguousarray(np.broadcast_to(
                self.constants[vid].reshape(expanded), full))
        else:
            self._flush_producing([vid])
            self._copy(op, vid, new, expanded)
        op.operands = tuple(new if o == vid else o for o in op.operands)

    def _new_value(self, shape, dtype):
        self.shapes.append(tuple(shape))
        self.dtypes.append(dtype)
        return len(self.shapes) - 1

    # -- layout ops -----------------------------------------------------------

    def _matmul(self, op):
        a, b = op.operands
        out = op.results[0]
        self._flush_producing([a, b])
        ta = bool(op.attrs.get("transpose_lhs", False))
        tb = bool(op.attrs.get("transpose_rhs", False))
        sa, sb, so = self.shapes[a], self.shapes[b], self.shapes[out]
        if len(sa) < 2 or len(sb) < 2:
            raise self._err(op, f"matmul operands have rank >= 2, got "
                                f"{list(sa)} and {list(sb)}")
        if ta:
            a = self._swapped(op, a)
            sa = self.shapes[a]
        m, k = sa[-2], sa[-1]
        n = sb[-2] if tb else sb[-1]
        batch_shape = tuple(so[:-2])
        batch = numel(batch_shape)
        a_b, b_b = tuple(sa[:-2]), tuple(sb[:-2])
        a_shared = numel(a_b) == 1
        b_shared = numel(b_b) == 1
        if not a_shared and a_b != batch_shape[len(batch_shape) - len(a_b):]:
            raise self._err(op, f"batch dims {list(a_b)} and {list(b_b)}")
        if not a_shared and numel(a_b) != batch:
            a = self._broadcast_batch(op, a, batch_shape + (m, k))
        if not b_shared and numel(b_b) != batch:
            b = self._broadcast_batch(op, b, batch_shape + tuple(sb[-2:]))
        dtype = self.dtypes[out]
        if self.dtypes[a] != dtype or self.dtypes[b] != dtype:
            raise self._err(op, f"matmul of {self.dtypes[a]} and "
                                f"{self.dtypes[b]} into {dtype}")
        self.steps.append(Matmul(a, b, out, batch, m, n, k, a_shared,
                                  b_shared, tb))

    def _attention(self, op):
        """Flash attention forward or backward (the listing keeps the
        attention ops those kernels take, tgraph::isGpuFlashAttention)."""
        self._flush_producing(list(op.operands))
        q = op.operands[0]
        if any(self.shapes[x] != self.shapes[q] or
               self.dtypes[x] not in ("bf16", "f16") for x in op.operands) \
                or self.shapes[q][-1] not in (64, 128):
            got = ", ".join(f"{self.dtypes[x]}{list(self.shapes[x])}"
                            for x in op.operands)
            raise self._err(op, f"flash attention takes bf16 or f16 operands "
                                f"of one shape [..., S, 64 or 128], got {got}")
        causal = bool(op.attrs.get("causal", False))
        scale = op.attrs.get("scale")
        scale = None if scale is None else float(scale)
        if op.name == "tgraph.attention":
            out = op.results[0]
            lse = self._new_value(self.shapes[q][:-1], "f32")
            self._lse[out] = (lse, tuple(op.operands), causal, scale)
            self.steps.append(Attention(*op.operands, out, lse, causal,
                                        scale))
            return
        q, k, v, o, do = op.operands
        saved = self._lse.get(o)
        lse = saved[0] if saved is not None and \
            saved[1:] == ((q, k, v), causal, scale) else None
        self.steps.append(AttentionGrad(q, k, v, o, do, lse, op.results,
                                        causal, scale))

    def _broadcast_batch(self, op, vid, shape):
        new = self._new_value(shape, self.dtypes[vid])
        src = self.shapes[vid]
        self._copy(op, vid, new, (1,) * (len(shape) - len(src)) + tuple(src))
        return new

    def _swapped(self, op, vid):
        s = self.shapes[vid]
        new = self._new_value(tuple(s[:-2]) + (s[-1], s[-2]),
                              self.dtypes[vid])
        self.steps.append(SwapLast(vid, new, numel(s[:-2]), s[-2], s[-1]))
        return new

    def _transpose(self, op):
        x, out = op.operands[0], op.results[0]
        self._flush_producing([x])
        perm = list(op.attrs["permutation"])
        shape = self.shapes[x]
        n = len(perm)
        if perm == list(range(n)):
            self.steps.append(Alias(x, out, self.shapes[out]))
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
            self.steps.append(SwapLast(x, out, numel(shape[:p]),
                                        numel(shape[p:q]),
                                        numel(shape[q:])))
            return
        # The last dim moves: bring dim perm[-1] last, then permute rows.
        k = perm[-1]
        first = list(range(k)) + list(range(k + 1, n)) + [k]
        mid = self._new_value(tuple(shape[i] for i in first),
                              self.dtypes[x])
        self.steps.append(SwapLast(x, mid, numel(shape[:k]), shape[k],
                                    numel(shape[k + 1:])))
        rest = [first.index(d) for d in perm]
        self._permute_rows(op, mid, out, rest)

    def _permute_rows(self, op, x, out, perm):
        """out = transpose(x, perm) where the last dim stays last."""
        shape = self.shapes[x]
        strides = _rows_of(shape[:-1])
        out_shape = self.shapes[out]
        space = list(out_shape[:-1])
        in_coef = [strides[perm[d]] for d in range(len(space))]
        self.steps.append(row_copy(
            self, x, out, space, in_coef, _rows_of(out_shape[:-1]), 0, 0,
            shape[-1], 0, 0, out_shape[-1], False, None))

    def _copy(self, op, x, out, expanded):
        """out = broadcast of x (its shape padded to `expanded`)."""
        shape = self.shapes[out]
        strides = _rows_of(expanded[:-1])
        space = list(shape[:-1])
        in_coef = [0 if expanded[d] == 1 and shape[d] != 1 else strides[d]
                   for d in range(len(space))]
        col_bcast = expanded[-1] == 1 and shape[-1] != 1 if shape else False
        self.steps.append(row_copy(
            self, x, out, space, in_coef, _rows_of(shape[:-1]), 0, 0,
            expanded[-1] if shape else 1, 0, 0, shape[-1] if shape else 1,
            col_bcast, None))

    def _copy_op(self, op):
        x = op.operands
        out = op.results[0]
        self._flush_producing(list(x))
        shape = self.shapes[out]
        n = len(shape)
        if n == 0:
            raise self._err(op, "of a scalar")
        out_rows = _rows_of(shape[:-1])
        if op.name == "tgraph.slice":
            src = self.shapes[x[0]]
            start = list(op.attrs["start"])
            stride = list(op.attrs.get("stride", [1] * n))
            if stride[-1] != 1:
                raise self._err(op, "a strided slice of the last dim is not "
                                    "supported on the GPU yet")
            st = _rows_of(src[:-1])
            base = sum(start[d] * st[d] for d in range(n - 1))
            coef = [stride[d] * st[d] for d in range(n - 1)]
            self.steps.append(row_copy(
                self, x[0], out, list(shape[:-1]), coef, out_rows, base, 0,
                src[-1], start[-1], 0, shape[-1], False, None))
            return
        if op.name == "tgraph.concat":
            dim = op.attrs["dim"] % n
            offset = 0
            steps = []
            for v in x:
                s = self.shapes[v]
                if dim == n - 1:
                    steps.append(row_copy(
                        self, v, out, list(s[:-1]), _rows_of(s[:-1]),
                        out_rows, 0, 0, s[-1], 0, offset, shape[-1], False,
                        None))
                else:
                    steps.append(row_copy(
                        self, v, out, list(s[:-1]), _rows_of(s[:-1]),
                        out_rows, 0, offset * out_rows[dim], s[-1], 0, 0,
                        shape[-1], False, None))
                offset += s[dim]
            self.steps.append(Chain(x, (out,), steps))
            return
        # pad: fill with the value, then copy the interior.
        src = self.shapes[x[0]]
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
        fill = row_copy(self, None, out, list(shape[:-1]), None, out_rows,
                         0, 0, 0, 0, 0, shape[-1], False, float(value))
        coef = [(interior[d] + 1) * out_rows[d] for d in range(n - 1)]
        base = sum(low[d] * out_rows[d] for d in range(n - 1))
        body = row_copy(self, x[0], out, list(src[:-1]),
                         _rows_of(src[:-1]), coef, 0, base, src[-1], 0,
                         low[-1], shape[-1], False, None)
        self.steps.append(Chain(x, (out,), [fill, body]))

    # -- fused kernels ---------------------------------------------------------

    def _finish_groups(self):
        steps = [s.build() if isinstance(s, FusedGroup) else s
                 for s in self.steps]
        self.steps = [s for s in steps if s is not None]
        # When each value is last read, for freeing buffers early; the
        # constants the steps read, uploaded once.
        self._last_use = {}
        for i, s in enumerate(self.steps):
            for v in s.inputs:
                self._last_use[v] = i
        self._device_constants = {}
        self._needed_constants = [v for v in self._last_use
                                  if v in self.constants]

    def needed_outside(self, vid, group):
        """Whether a value a group computes is read by anything else (a
        result, an op of another step, a copy the plan added for it)."""
        if vid in self._results:
            return True
        inside = {op.index for op in group.ops}
        return not self._uses.get(vid, set()) <= inside

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
        for vid in self._needed_constants:
            env[vid] = self._constant(vid, self.constants[vid], aot)
        if aot:
            return self._run_steps(env, aot)
        arguments = [env[vid] for vid in self._args]
        device = self.device.index
        if self.replay and self._replay is not None and all(
                t._contiguous() and t._device == device for t in arguments):
            return self._replayed(arguments)
        # The first call compiles and tunes; a later one records.
        if not self.replay or self._calls == 0 or \
                self._record_tries >= _RECORD_TRIES:
            self._calls += 1
            return self._run_steps(env, aot)
        self._record_tries += 1
        recorder = _gpu_replay.Recorder(device)
        for i, t in enumerate(arguments):
            recorder.argument(i, t)
        for vid in self._needed_constants:
            recorder.constant(env[vid])
        outer = _gpu_replay.current.recorder
        _gpu_replay.current.recorder = recorder
        try:
            results = self._run_steps(env, aot)
        finally:
            _gpu_replay.current.recorder = outer
        if outer is not None:
            outer.reason = outer.reason or "a GPU program called inside it"
        if any(t._device != device for t in arguments):
            recorder.reason = "an argument on another device"
        self._finish_recording(recorder, arguments, results)
        return results

    def _run_steps(self, env, aot):
        shapes, dtypes = self.shapes, self.dtypes

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

    def _finish_recording(self, recorder, arguments, results):
        """Keeps the recorded sequence when later calls can replay it:
        each result is an argument, a constant or a buffer the sequence
        allocates."""
        outputs = []
        marked = {}
        for r, t in zip(self._results, results):
            if recorder.reason is not None:
                break
            const = self._device_constants.get(r)
            if r in self.constants and (const is None or const is t):
                outputs.append(("constant", r))
                continue
            where = recorder.resolve(t._ptr)
            if where is None or where[0] is None or where[1] != 0:
                recorder.reason = f"result {r} is not a whole buffer"
                break
            buffer = where[0]
            if buffer in recorder.argument_buffers:
                outputs.append(("argument", recorder.argument_buffers[buffer],
                                t._shape))
                continue
            if recorder.buffer_types[buffer][0] != t._dtype.name:
                recorder.reason = f"result {r} is a view of another dtype"
                break
            if buffer not in marked:
                marked[buffer] = len(marked)
                recorder.sequence.mark_result(buffer)
            outputs.append(("buffer", marked[buffer], t._shape))
        self.record_failure = recorder.reason
        if recorder.reason is None:
            self._replay = recorder.sequence
            self._replay_outputs = outputs

    def _replayed(self, arguments):
        # (A program replayed inside another's recording is not recorded.)
        _gpu_replay.spoil("a GPU program called inside it")
        buffers = self._replay.run([t._ptr for t in arguments])
        out = []
        for o in self._replay_outputs:
            if o[0] == "constant":
                out.append(self._constant(o[1], self.constants[o[1]], False))
            elif o[0] == "argument":
                out.append(arguments[o[1]].reshape(*o[2]))
            else:
                t = _cuda.DeviceTensor(buffers[o[1]])
                out.append(t if t._shape == o[2] else t.reshape(*o[2]))
        return out

    @property
    def launches_replayed(self):
        """The number of launches a call queues from the recorded sequence
        (None until a call has been recorded)."""
        return None if self._replay is None else self._replay.launch_count

    @property
    def device(self):
        return self._resolved or _cuda.device(self._device_spec)

    def _argument(self, vid, a, aot):
        shape, dt = self.shapes[vid], self.dtypes[vid]
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
        cache = self._device_constants
        t = cache.get(vid)
        if t is None:
            dt = self.dtypes[vid]
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


def _rows_of(shape):
    """Row-major strides of `shape` as lists (in rows, when `shape` is a
    tensor's shape without its last dim)."""
    return list(_row_major(tuple(shape)))


class _NoFold(Exception):
    pass
