"""The tile DSL: the operations a ``@ts.kernel`` body is written with.

    import tessera as ts
    from tessera import tile, KTile

    @ts.kernel.schedule(ts.Schedule(block=(4, 256), warps=4))
    def softmax(X: KTile["R", "N", ts.f32], Y: KTile["R", "N", ts.f32]):
        T = tile.context()
        r = tile.program_id(0) * T.m
        x = tile.load(X, at=(r, 0), shape=(T.m, T.n), padding=-math.inf)
        e = tile.exp(x - tile.max(x, axis=1)[:, None])
        tile.store(Y, e / tile.sum(e, axis=1)[:, None], at=(r, 0))

A kernel runs as a grid of programs; each program computes on tiles
(static-shape blocks held by its threads). Tiles combine with Python
operators elementwise, with NumPy broadcasting of lower-rank tiles and
Python numbers; ``a @ b`` is ``tile.dot``. Scalars (program ids, sizes,
offsets) are values of the program too and combine with Python operators.
Every operation here becomes one Tile IR op (``ttile``, ``arith``,
``math``) whose location is the line of the kernel that made it.
"""

from __future__ import annotations

import builtins
import math as _math

from ._dtypes import DType, PolicyDType, as_dtype
from ._tile_ir import (KernelTraceError, bit_width, check_visible,
                       current_trace, element_type, float_literal,
                       int_literal, is_float, tensor_type, user_line)

__all__ = [
    "Block", "Scalar", "Tile", "TileRef", "abs", "broadcast_to", "cast",
    "cdiv", "col_index", "constexpr", "context", "dot", "exp", "exp2",
    "full", "iota", "load", "log", "mask_causal", "max", "maximum", "min",
    "minimum", "num_programs", "program_id", "range", "range_n",
    "row_index", "rsqrt", "sigmoid", "softmax_accumulate", "softmax_online",
    "sqrt", "store", "sum", "tanh", "transpose", "where", "zeros",
]

INF = _math.inf


def _err(message: str):
    return KernelTraceError(f"{user_line()}: {message}")


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------

class _Value:
    __slots__ = ("name", "block")

    def __bool__(self):
        raise _err("a value of the kernel has no truth value while the kernel "
                   "is traced: Python `if`/`while` on it cannot be compiled; "
                   "use tile.where (or a constexpr argument)")

    def __iter__(self):
        raise _err(f"cannot iterate over a {type(self).__name__.lower()}; "
                   f"loops over tiles use tile.range")


class Scalar(_Value):
    """A scalar of the program (index, integer or float)."""

    __slots__ = ("type",)

    def __init__(self, name: str, type_: str):
        self.name = name
        self.type = type_
        self.block = current_trace().block

    def __repr__(self):
        return f"Scalar({self.type})"

    # Arithmetic
    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("sub", self, o)
    def __rsub__(self, o): return _binary("sub", o, self)
    def __mul__(self, o): return _binary("mul", self, o)
    def __rmul__(self, o): return _binary("mul", o, self)
    def __truediv__(self, o): return _binary("div", self, o)
    def __rtruediv__(self, o): return _binary("div", o, self)
    def __floordiv__(self, o): return _binary("floordiv", self, o)
    def __rfloordiv__(self, o): return _binary("floordiv", o, self)
    def __mod__(self, o): return _binary("mod", self, o)
    def __rmod__(self, o): return _binary("mod", o, self)
    def __neg__(self): return _binary("sub", 0, self)
    def __lt__(self, o): return _compare("lt", self, o)
    def __le__(self, o): return _compare("le", self, o)
    def __gt__(self, o): return _compare("gt", self, o)
    def __ge__(self, o): return _compare("ge", self, o)
    def __eq__(self, o): return _compare("eq", self, o)
    def __ne__(self, o): return _compare("ne", self, o)
    __hash__ = object.__hash__


class Tile(_Value):
    """A tile: a static-shape block of elements held by the program."""

    __slots__ = ("shape", "type")

    def __init__(self, name: str, shape, type_: str):
        self.name = name
        self.shape = tuple(shape)
        self.type = type_
        self.block = current_trace().block

    @property
    def dtype(self) -> DType:
        return as_dtype(self.type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def mlir_type(self) -> str:
        return tensor_type(self.shape, self.type)

    def __repr__(self):
        return f"Tile({list(self.shape)}, {self.type})"

    @property
    def T(self):
        return transpose(self)

    def astype(self, dtype):
        return cast(self, dtype)

    def __getitem__(self, index):
        """``x[:, None]``: a view with unit dims, for broadcasting."""
        if not isinstance(index, tuple):
            index = (index,)
        dims, k = [], 0
        for item in index:
            if item is None:
                dims.append(None)
            elif isinstance(item, slice) and item == slice(None):
                if k >= self.ndim:
                    raise _err(f"too many indices for a tile of shape "
                               f"{list(self.shape)}")
                dims.append(k)
                k += 1
            elif item is Ellipsis:
                rest = self.ndim - k - builtins.sum(
                    1 for i in index[index.index(item) + 1:]
                    if i is not None)
                dims.extend(builtins.range(k, k + rest))
                k += rest
            else:
                raise _err("tiles are indexed with ':' and None only (use "
                           "tile.load for parts of memory)")
        dims.extend(builtins.range(k, self.ndim))
        return _Expanded(self, dims)

    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("sub", self, o)
    def __rsub__(self, o): return _binary("sub", o, self)
    def __mul__(self, o): return _binary("mul", self, o)
    def __rmul__(self, o): return _binary("mul", o, self)
    def __truediv__(self, o): return _binary("div", self, o)
    def __rtruediv__(self, o): return _binary("div", o, self)
    def __floordiv__(self, o): return _binary("floordiv", self, o)
    def __mod__(self, o): return _binary("mod", self, o)
    def __neg__(self): return _unary("neg", self)
    def __matmul__(self, o): return dot(self, o)
    def __and__(self, o): return _binary("and", self, o)
    def __or__(self, o): return _binary("or", self, o)
    def __invert__(self):  # bitwise not: xor with all ones (-1; true for i1)
        return _binary("xor", self, True if self.type == "i1" else -1)
    def __lt__(self, o): return _compare("lt", self, o)
    def __le__(self, o): return _compare("le", self, o)
    def __gt__(self, o): return _compare("gt", self, o)
    def __ge__(self, o): return _compare("ge", self, o)
    def __eq__(self, o): return _compare("eq", self, o)
    def __ne__(self, o): return _compare("ne", self, o)
    __hash__ = object.__hash__


class _Expanded:
    """A tile seen with unit dims (``l[:, None]``): ``dims[i]`` is the tile
    dim at position i, or None for a unit dim."""

    __slots__ = ("tile", "dims")

    def __init__(self, tile, dims):
        self.tile = tile
        self.dims = dims

    @property
    def shape(self):
        return tuple(1 if d is None else self.tile.shape[d] for d in self.dims)

    def __getattr__(self, name):
        raise _err(f"a tile indexed with None is only an operand of "
                   f"elementwise ops (it has no attribute {name!r})")

    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("sub", self, o)
    def __rsub__(self, o): return _binary("sub", o, self)
    def __mul__(self, o): return _binary("mul", self, o)
    def __rmul__(self, o): return _binary("mul", o, self)
    def __truediv__(self, o): return _binary("div", self, o)
    def __rtruediv__(self, o): return _binary("div", o, self)


class TileRef:
    """A tensor in memory, as a kernel sees its ``KTile`` argument (or a
    part of one: ``X[b]`` drops the leading dim)."""

    __slots__ = ("name", "rank", "type", "arg", "memref_type", "block",
                 "_dims")

    def __init__(self, name, rank, type_, arg, memref_type):
        self.name = name
        self.rank = rank
        self.type = type_
        self.arg = arg
        self.memref_type = memref_type
        self.block = current_trace().block
        self._dims = {}

    def __repr__(self):
        return f"TileRef({self.arg}, rank {self.rank}, {self.type})"

    @property
    def dtype(self) -> DType:
        return as_dtype(self.type)

    @property
    def shape(self):
        """The sizes of the tensor's dims (scalars of the program)."""
        return tuple(self.dim(i) for i in builtins.range(self.rank))

    def dim(self, i: int) -> Scalar:
        if not -self.rank <= i < self.rank:
            raise _err(f"{self.arg} has {self.rank} dims; no dim {i}")
        i %= self.rank
        trace = current_trace()
        cached = self._dims.get(i)
        if cached is not None and cached.block.encloses(trace.block):
            return cached
        c = _index_const(i)
        (name,) = trace.emit(f"memref.dim {self.name}, {c.name} : "
                             f"{self.memref_type}", ["index"])
        value = Scalar(name, "index")
        if trace.block.depth == 0:
            self._dims[i] = value
        return value

    def __getitem__(self, index):
        """``X[i]``: the tensor of dims 1.. at index i of dim 0."""
        if self.rank < 2:
            raise _err(f"{self.arg} has one dim; index it with tile.load")
        i = _as_index(index, "the index of a TileRef")
        trace = current_trace()
        sizes = [self.dim(d) for d in builtins.range(1, self.rank)]
        rest = self.rank - 1
        dyn = ",".join(["?"] * rest)
        result_type = (f"memref<{dyn.replace(',', 'x')}x{self.type}, "
                       f"strided<[{', '.join(['?'] * (rest - 1) + ['1'])}], "
                       f"offset: ?>>")
        offsets = ", ".join([i.name] + ["0"] * rest)
        size_list = ", ".join(["1"] + [s.name for s in sizes])
        strides = ", ".join(["1"] * self.rank)
        (name,) = trace.emit(
            f"memref.subview {self.name}[{offsets}] [{size_list}] "
            f"[{strides}] : {self.memref_type} to {result_type}",
            ["memref"])
        return TileRef(name, rest, self.type, f"{self.arg}[...]",
                       result_type)


class Block:
    """One step of ``tile.range_n``: rows ``start .. start + size``."""

    __slots__ = ("start", "size")

    def __init__(self, start, size):
        self.start = start
        self.size = size

    def __repr__(self):
        return f"Block(size {self.size})"


class constexpr:
    """Annotation of a kernel parameter whose value is fixed when the
    kernel is compiled (one compiled kernel per value): ``causal:
    tile.constexpr``. Keyword-only parameters are constexpr too."""


# --------------------------------------------------------------------------
# Scalars and constants
# --------------------------------------------------------------------------

def _index_const(v: int) -> Scalar:
    (name,) = current_trace().emit(f"arith.constant {int(v)} : index",
                                   ["index"])
    return Scalar(name, "index")


def _scalar_const(v, t: str) -> Scalar:
    lit = float_literal(v, t) if is_float(t) else int_literal(int(v), t)
    (name,) = current_trace().emit(f"arith.constant {lit} : {t}", [t])
    return Scalar(name, t)


def _as_index(v, what: str) -> Scalar:
    if isinstance(v, bool):
        raise _err(f"{what} must be an integer, got {v!r}")
    if isinstance(v, int):
        return _index_const(v)
    if isinstance(v, Scalar):
        check_visible(v, "scalar")
        if v.type == "index":
            return v
        if v.type in ("i32", "i64", "i16", "i8"):
            (name,) = current_trace().emit(
                f"arith.index_cast {v.name} : {v.type} to index", ["index"])
            return Scalar(name, "index")
    raise _err(f"{what} must be an integer scalar, got {v!r}")


def _splat(v, shape, t: str) -> Tile:
    """A tile of ``shape`` whose elements are the number or scalar ``v``."""
    if isinstance(v, (bool, int, float)):
        if is_float(t):
            lit = float_literal(v, t)
        elif isinstance(v, float) and not float(v).is_integer():
            raise _err(f"{v} is not an integer ({t} tile)")
        else:
            lit = int_literal(int(v), t)
        ttype = tensor_type(shape, t)
        (name,) = current_trace().emit(f"arith.constant dense<{lit}> : "
                                       f"{ttype}", [ttype])
        return Tile(name, shape, t)
    s = _convert_scalar(v, t)
    ttype = tensor_type(shape, t)
    (name,) = current_trace().emit(f"tensor.splat {s.name} : {ttype}", [ttype])
    return Tile(name, shape, t)


def _convert_scalar(s: Scalar, t: str) -> Scalar:
    """A program scalar converted to element type ``t`` (index <-> ints,
    ints -> floats, float widths)."""
    check_visible(s, "scalar")
    if s.type == t:
        return s
    trace = current_trace()
    src = s
    if s.type == "index":
        if is_float(t):
            (n,) = trace.emit(f"arith.index_cast {s.name} : index to i64",
                              ["i64"])
            src = Scalar(n, "i64")
        else:
            (n,) = trace.emit(f"arith.index_cast {s.name} : index to {t}", [t])
            return Scalar(n, t)
    if is_float(t) and not is_float(src.type):
        (n,) = trace.emit(f"arith.sitofp {src.name} : {src.type} to {t}", [t])
        return Scalar(n, t)
    if is_float(t) and is_float(src.type):
        op = ("arith.extf" if bit_width(t) > bit_width(src.type)
              else "arith.truncf")
        (n,) = trace.emit(f"{op} {src.name} : {src.type} to {t}", [t])
        return Scalar(n, t)
    if not is_float(t) and not is_float(src.type):
        if t == "index":
            return _as_index(src, "the value")
        op = ("arith.extsi" if bit_width(t) > bit_width(src.type)
              else "arith.trunci")
        (n,) = trace.emit(f"{op} {src.name} : {src.type} to {t}", [t])
        return Scalar(n, t)
    raise _err(f"a {s.type} scalar does not convert to {t} implicitly; "
               f"use tile.cast")


# --------------------------------------------------------------------------
# Elementwise arithmetic
# --------------------------------------------------------------------------

_FLOAT_OPS = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf",
              "div": "arith.divf", "max": "arith.maximumf",
              "min": "arith.minimumf", "mod": "arith.remf"}
_INT_OPS = {"add": "arith.addi", "sub": "arith.subi", "mul": "arith.muli",
            "div": "arith.divsi", "floordiv": "arith.floordivsi",
            "mod": "arith.remsi", "max": "arith.maxsi", "min": "arith.minsi",
            "and": "arith.andi", "or": "arith.ori", "xor": "arith.xori"}


def _is_number(v) -> bool:
    return isinstance(v, (bool, int, float))


def _broadcast_shape(shapes):
    rank = builtins.max(len(s) for s in shapes)
    out = []
    for i in builtins.range(rank):
        sizes = {s[i - rank + len(s)] for s in shapes
                 if i - rank + len(s) >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise _err("tile shapes " + " and ".join(str(list(s)) for s in shapes)
                       + " do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _to_shape(x, shape) -> Tile:
    """Broadcasts a tile (or an expanded view of one) to ``shape``: each
    operand dim lands on the result dim NumPy's rules give it."""
    if isinstance(x, Tile):
        base, dims = x, list(builtins.range(x.ndim))
    else:
        base, dims = x.tile, x.dims
    check_visible(base, "tile")
    rank = len(shape)
    offset = rank - len(dims)
    mapping = []
    for pos, d in enumerate(dims):
        if d is None:
            continue
        if base.shape[d] != shape[offset + pos]:
            if base.shape[d] == 1:
                raise _err(f"a tile of shape {list(base.shape)} has a unit "
                           f"dim that would be stretched to {list(shape)}; "
                           f"load or build it without that dim and index "
                           f"with None")
            raise _err(f"tile shape {list(base.shape)} does not broadcast "
                       f"to {list(shape)}")
        mapping.append(offset + pos)
    if tuple(base.shape) == tuple(shape) and mapping == list(
            builtins.range(rank)):
        return base
    if mapping != sorted(mapping):
        raise _err("broadcasting that reorders dims needs tile.transpose")
    ttype = tensor_type(shape, base.type)
    (name,) = current_trace().emit(
        f"ttile.broadcast {base.name} {{dims = array<i64: "
        f"{', '.join(map(str, mapping))}>}} : {base.mlir_type} -> {ttype}",
        [ttype])
    return Tile(name, shape, base.type)


def _operands(a, b):
    """(a, b, element type, shape or None for scalars) with numbers and
    scalars converted to the other operand's type."""
    tiles = [x for x in (a, b) if isinstance(x, (Tile, _Expanded))]
    if tiles:
        types = {(x.type if isinstance(x, Tile) else x.tile.type)
                 for x in tiles}
        if len(types) > 1:
            raise _err(f"elementwise operands of different element types "
                       f"({' and '.join(sorted(types))}); use tile.cast")
        t = types.pop()
        shape = _broadcast_shape([x.shape for x in tiles])
        out = []
        for x in (a, b):
            if isinstance(x, (Tile, _Expanded)):
                out.append(_to_shape(x, shape))
            elif _is_number(x) or isinstance(x, Scalar):
                out.append(_splat(x, shape, t))
            else:
                raise _err(f"cannot combine a tile with {x!r}")
        return out[0], out[1], t, shape
    scalars = [x for x in (a, b) if isinstance(x, Scalar)]
    for x in (a, b):
        if not (_is_number(x) or isinstance(x, Scalar)):
            raise _err(f"cannot combine a scalar with {x!r}")
    t = scalars[0].type
    if len(scalars) == 2 and scalars[1].type != t:
        # index with a fixed-width integer: compute in the integer type.
        pair = {scalars[0].type, scalars[1].type}
        if "index" in pair and not builtins.any(is_float(x) for x in pair):
            t = (pair - {"index"}).pop()
        else:
            raise _err(f"scalars of types {scalars[0].type} and "
                       f"{scalars[1].type}; convert one with tile.cast")
    out = []
    for x in (a, b):
        if isinstance(x, Scalar):
            out.append(_convert_scalar(x, t))
        else:
            if isinstance(x, float) and not is_float(t):
                raise _err(f"{x} combined with a {t} scalar; use an integer")
            out.append(_scalar_const(x, t))
    return out[0], out[1], t, None


def _binary(kind: str, a, b):
    a, b, t, shape = _operands(a, b)
    if kind == "mod" and t != "i1":
        # Python's %: the remainder of floor division (sign of b), so that
        # (a // b) * b + a % b == a.
        return _binary("sub", a, _binary("mul", _binary("floordiv", a, b),
                                         b))
    if is_float(t):
        if kind == "floordiv":
            q = _binary("div", a, b)
            return _unary("floor", q)
        op = _FLOAT_OPS.get(kind)
    else:
        if t == "i1" and kind not in ("and", "or", "xor"):
            raise _err(f"{kind} of boolean tiles; use &, | and ~")
        op = _INT_OPS.get(kind)
    if op is None:
        raise _err(f"{kind} is not defined for {t}")
    rtype = tensor_type(shape, t) if shape is not None else t
    (name,) = current_trace().emit(f"{op} {a.name}, {b.name} : {rtype}",
                                   [rtype])
    return Tile(name, shape, t) if shape is not None else Scalar(name, t)


_PREDICATES = {"lt": ("olt", "slt"), "le": ("ole", "sle"),
               "gt": ("ogt", "sgt"), "ge": ("oge", "sge"),
               "eq": ("oeq", "eq"), "ne": ("une", "ne")}


def _compare(kind: str, a, b):
    a, b, t, shape = _operands(a, b)
    fp, ip = _PREDICATES[kind]
    op = f"arith.cmpf {fp}" if is_float(t) else f"arith.cmpi {ip}"
    otype = tensor_type(shape, t) if shape is not None else t
    rtype = tensor_type(shape, "i1") if shape is not None else "i1"
    (name,) = current_trace().emit(f"{op}, {a.name}, {b.name} : {otype}",
                                   [rtype])
    return Tile(name, shape, "i1") if shape is not None else Scalar(name, "i1")


_MATH = {"exp": "math.exp", "exp2": "math.exp2", "log": "math.log",
         "sqrt": "math.sqrt", "rsqrt": "math.rsqrt", "tanh": "math.tanh",
         "abs": "math.absf", "floor": "math.floor", "erf": "math.erf",
         "sin": "math.sin", "cos": "math.cos"}


def _unary(kind: str, x):
    if isinstance(x, _Expanded):
        x = x.tile
    if _is_number(x):
        raise _err(f"tile.{kind} of a Python number: use the math module")
    if not isinstance(x, (Tile, Scalar)):
        raise _err(f"tile.{kind} takes a tile or scalar, got {x!r}")
    check_visible(x)
    rtype = x.mlir_type if isinstance(x, Tile) else x.type
    if kind == "neg":
        if is_float(x.type):
            (name,) = current_trace().emit(f"arith.negf {x.name} : {rtype}",
                                           [rtype])
        else:
            return _binary("sub", 0, x)
    elif kind == "abs" and not is_float(x.type):
        (name,) = current_trace().emit(f"math.absi {x.name} : {rtype}",
                                       [rtype])
    else:
        if not is_float(x.type):
            raise _err(f"tile.{kind} takes floats, got {x.type}")
        (name,) = current_trace().emit(f"{_MATH[kind]} {x.name} : {rtype}",
                                       [rtype])
    return (Tile(name, x.shape, x.type) if isinstance(x, Tile)
            else Scalar(name, x.type))


def exp(x): return _unary("exp", x)
def exp2(x): return _unary("exp2", x)
def log(x): return _unary("log", x)
def sqrt(x): return _unary("sqrt", x)
def rsqrt(x):
    """``1 / sqrt(x)``; of a Python number, the number."""
    if _is_number(x):
        return 1.0 / _math.sqrt(x)
    return _unary("rsqrt", x)
def tanh(x): return _unary("tanh", x)
def abs(x): return _unary("abs", x)  # noqa: A001
def erf(x): return _unary("erf", x)


def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    return 1.0 / (1.0 + exp(-x))


def maximum(a, b):
    """Elementwise maximum (NaN wins, as IEEE maximum)."""
    return _binary("max", a, b)


def minimum(a, b):
    return _binary("min", a, b)


def cdiv(a, b):
    """``ceil(a / b)`` of non-negative integers."""
    if _is_number(a) and _is_number(b):
        return -(-a // b)
    return (a + (b - 1)) // b


def where(cond, a, b):
    """Elementwise ``cond ? a : b`` (cond: a boolean tile or scalar)."""
    if isinstance(cond, (Tile, _Expanded)):
        ref = [x for x in (a, b) if isinstance(x, (Tile, _Expanded))]
        t = ((ref[0].type if isinstance(ref[0], Tile) else ref[0].tile.type)
             if ref else None)
        if t is None:
            if builtins.all(isinstance(x, float) for x in (a, b)):
                t = "f32"
            elif builtins.all(isinstance(x, Scalar) for x in (a, b)):
                t = a.type
            else:
                raise _err("tile.where needs a tile or typed value among its "
                           "choices")
        shapes = [x.shape for x in (cond, a, b)
                  if isinstance(x, (Tile, _Expanded))]
        shape = _broadcast_shape(shapes)
        c = _to_shape(cond, shape)
        if c.type != "i1":
            raise _err(f"tile.where's condition must be boolean, got {c.type}")
        x = (_to_shape(a, shape) if isinstance(a, (Tile, _Expanded))
             else _splat(a, shape, t))
        y = (_to_shape(b, shape) if isinstance(b, (Tile, _Expanded))
             else _splat(b, shape, t))
        if x.type != y.type:
            raise _err(f"tile.where's choices differ in type ({x.type} and "
                       f"{y.type})")
        (name,) = current_trace().emit(
            f"arith.select {c.name}, {x.name}, {y.name} : "
            f"{c.mlir_type}, {x.mlir_type}", [x.mlir_type])
        return Tile(name, shape, x.type)
    if isinstance(cond, Scalar):
        x, y, t, shape = _operands(a, b)
        if shape is not None:
            raise _err("a scalar condition selects between scalars; use a "
                       "boolean tile for tiles")
        (name,) = current_trace().emit(
            f"arith.select {cond.name}, {x.name}, {y.name} : {t}", [t])
        return Scalar(name, t)
    raise _err(f"tile.where's condition must be a boolean tile or scalar, "
               f"got {cond!r}")


# --------------------------------------------------------------------------
# Tile construction and shape ops
# --------------------------------------------------------------------------

def _shape_of(shape):
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(shape)
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise _err(f"a tile's shape holds positive Python integers "
                       f"(schedule values), got {list(shape)}")
    return shape


def full(shape, value, dtype=None):
    """A tile of ``shape`` filled with ``value`` (a number or scalar)."""
    shape = _shape_of(shape)
    if dtype is None:
        if isinstance(value, Scalar):
            dtype = value.type
        elif isinstance(value, float):
            dtype = "f32"
        else:
            raise _err("tile.full of an integer needs a dtype")
    t = element_type(dtype) if not isinstance(dtype, str) or dtype not in (
        "index",) else dtype
    return _splat(value, shape, t)


def zeros(shape, dtype=None):
    """A tile of zeros (f32 unless ``dtype``)."""
    return full(shape, 0.0 if dtype is None else 0,
                "f32" if dtype is None else dtype)


def iota(shape, axis: int, dtype=None):
    """Each element's index along ``axis`` (i32 unless ``dtype``)."""
    shape = _shape_of(shape)
    t = element_type(dtype) if dtype is not None else "i32"
    if is_float(t):
        raise _err("tile.iota gives integers; cast the result for floats")
    axis = _axis(axis, len(shape))
    ttype = tensor_type(shape, t)
    (name,) = current_trace().emit(f"ttile.iota {{dim = {axis} : i32}} : "
                                   f"{ttype}", [ttype])
    return Tile(name, shape, t)


def _axis(axis, rank):
    if not isinstance(axis, int) or not -rank <= axis < rank:
        raise _err(f"axis {axis!r} of a rank-{rank} tile")
    return axis % rank


def broadcast_to(x, shape):
    """``x`` (a tile, an expanded view or a number) broadcast to ``shape``."""
    shape = _shape_of(shape)
    if isinstance(x, (Tile, _Expanded)):
        return _to_shape(x, shape)
    raise _err("tile.broadcast_to takes a tile; numbers use tile.full")


def transpose(x, perm=None):
    """Dims permuted (reversed by default)."""
    if not isinstance(x, Tile):
        raise _err(f"tile.transpose takes a tile, got {x!r}")
    check_visible(x, "tile")
    perm = tuple(builtins.range(x.ndim))[::-1] if perm is None else tuple(perm)
    if sorted(perm) != list(builtins.range(x.ndim)):
        raise _err(f"{list(perm)} is not a permutation of a rank-{x.ndim} "
                   f"tile's dims")
    shape = tuple(x.shape[p] for p in perm)
    ttype = tensor_type(shape, x.type)
    (name,) = current_trace().emit(
        f"ttile.transpose {x.name} {{permutation = array<i64: "
        f"{', '.join(map(str, perm))}>}} : {x.mlir_type} -> {ttype}", [ttype])
    return Tile(name, shape, x.type)


def cast(x, dtype, *, saturate: bool = False, stochastic_round=None):
    """Elements converted to ``dtype``: floats round to nearest even, or
    stochastically with the i32 seed ``stochastic_round``; ``saturate``
    clamps to the target's finite range (fp8)."""
    if isinstance(x, Scalar):
        return _convert_scalar(x, element_type(dtype))
    if not isinstance(x, Tile):
        raise _err(f"tile.cast takes a tile, got {x!r}")
    check_visible(x, "tile")
    t = element_type(dtype)
    if t == x.type and not saturate and stochastic_round is None:
        return x
    rtype = tensor_type(x.shape, t)
    attrs = []
    if saturate:
        attrs.append("saturate")
    seed = ""
    if stochastic_round is not None:
        attrs.append("stochastic_round")
        s = stochastic_round
        if _is_number(s):
            s = _scalar_const(int(s), "i32")
        elif isinstance(s, Scalar):
            s = _convert_scalar(s, "i32")
        else:
            raise _err("stochastic_round takes an i32 seed")
        seed = f" seed {s.name}"
    attr_text = f" {{{', '.join(attrs)}}}" if attrs else ""
    (name,) = current_trace().emit(
        f"ttile.cast {x.name}{seed}{attr_text} : {x.mlir_type} -> {rtype}",
        [rtype])
    return Tile(name, x.shape, t)


# --------------------------------------------------------------------------
# Reductions and products
# --------------------------------------------------------------------------

def _reduce(kind, x, axis):
    if not isinstance(x, Tile):
        raise _err(f"tile.{kind} takes a tile, got {x!r}")
    check_visible(x, "tile")
    if x.ndim == 1:
        raise _err(f"tile.{kind} of a rank-1 tile would give a scalar; "
                   f"reduce a [1, n] tile along axis 1 instead")
    axis = _axis(axis, x.ndim)
    shape = x.shape[:axis] + x.shape[axis + 1:]
    rtype = tensor_type(shape, x.type)
    (name,) = current_trace().emit(
        f"ttile.reduce {kind} {x.name} {{dim = {axis} : i32}} : "
        f"{x.mlir_type} -> {rtype}", [rtype])
    return Tile(name, shape, x.type)


def sum(x, axis: int = -1):  # noqa: A001
    """Sum along ``axis`` (that dim dropped); deterministic order."""
    return _reduce("sum", x, axis)


def max(x, axis: int = -1):  # noqa: A001
    return _reduce("max", x, axis)


def min(x, axis: int = -1):  # noqa: A001
    return _reduce("min", x, axis)


def prod(x, axis: int = -1):
    return _reduce("prod", x, axis)


def dot(a, b, acc=None, *, tf32=False):
    """``acc + a @ b`` (``acc`` zeros by default): bf16, f16, fp8 operands
    into f32 on the tensor cores; i8 into i32; f32 operands exactly, or,
    with ``tf32=True``, read as tf32 (10 mantissa bits) where the tensor
    cores can (Hopper, B given as the transpose of a [N, K] load)."""
    for x in (a, b):
        if not isinstance(x, Tile) or x.ndim != 2:
            raise _err(f"tile.dot takes two rank-2 tiles, got {x!r}")
        check_visible(x, "tile")
    if a.shape[1] != b.shape[0]:
        raise _err(f"tile.dot of [{a.shape[0]}, {a.shape[1]}] and "
                   f"[{b.shape[0]}, {b.shape[1]}]: the inner dims differ")
    shape = (a.shape[0], b.shape[1])
    if acc is None:
        acc = zeros(shape, "i32" if a.type == "i8" else "f32")
    elif not isinstance(acc, Tile):
        raise _err(f"tile.dot's accumulator must be a tile, got {acc!r}")
    check_visible(acc, "tile")
    if acc.shape != shape:
        raise _err(f"tile.dot's accumulator is {list(acc.shape)}, the product "
                   f"{list(shape)}")
    attrs = ""
    if tf32:
        if a.type != "f32" or b.type != "f32":
            raise _err(f"tile.dot(tf32=True) reads f32 operands as tf32; got "
                       f"{a.type} and {b.type}")
        attrs = " {tf32}"
    (name,) = current_trace().emit(
        f"ttile.dot {a.name}, {b.name}, {acc.name}{attrs} : {a.mlir_type}, "
        f"{b.mlir_type} -> {acc.mlir_type}", [acc.mlir_type])
    return Tile(name, shape, acc.type)


# --------------------------------------------------------------------------
# Attention helpers
# --------------------------------------------------------------------------

def _rebind(x: Tile, result: Tile) -> Tile:
    """In-place form: ``x`` now stands for ``result`` (only for tiles of
    the current block: a tile from outside a loop is carried by
    assignment)."""
    if x.block is not current_trace().block:
        raise _err("an in-place tile op on a tile defined outside this "
                   "tile.range loop; assign the result instead")
    x.name = result.name
    return x


def mask_causal(scores, row_offset, col_offset):
    """-inf where the key (``col_offset + j``) comes after the query
    (``row_offset + i``). Changes ``scores`` in place and returns it."""
    if not isinstance(scores, Tile) or scores.ndim != 2 or not is_float(
            scores.type):
        raise _err(f"tile.mask_causal takes a rank-2 float tile, got "
                   f"{scores!r}")
    check_visible(scores, "tile")
    if isinstance(col_offset, Block):
        col_offset = col_offset.start
    r = _as_index(row_offset, "mask_causal's row offset")
    c = _as_index(col_offset, "mask_causal's column offset")
    (name,) = current_trace().emit(
        f"ttile.mask_causal {scores.name}, {r.name}, {c.name} : "
        f"{scores.mlir_type}", [scores.mlir_type])
    return _rebind(scores, Tile(name, scores.shape, scores.type))


def softmax_online(scores):
    """One block of an online softmax over rows: ``(p, m_c, l_c)`` with
    ``m_c`` the row maxima, ``p = exp(s - m_c)``, ``l_c`` its row sums."""
    if not isinstance(scores, Tile) or scores.ndim != 2 or scores.type != "f32":
        raise _err(f"tile.softmax_online takes an f32 [M, N] tile, got "
                   f"{scores!r}")
    check_visible(scores, "tile")
    m = scores.shape[0]
    row = tensor_type((m,), "f32")
    p, mc, lc = current_trace().emit(
        f"ttile.softmax_online {scores.name} : {scores.mlir_type} -> "
        f"{scores.mlir_type}, {row}, {row}", [scores.mlir_type, row, row])
    return (Tile(p, scores.shape, "f32"), Tile(mc, (m,), "f32"),
            Tile(lc, (m,), "f32"))


def softmax_accumulate(acc, m, l, p, v, m_c, l_c):
    """Folds a block into the running output: ``m' = max(m, m_c)``,
    ``acc' = exp(m - m') acc + exp(m_c - m') p @ v``, ``l'`` likewise;
    returns ``(acc', m', l')``."""
    for x in (acc, m, l, p, v, m_c, l_c):
        if not isinstance(x, Tile):
            raise _err(f"tile.softmax_accumulate takes tiles, got {x!r}")
        check_visible(x, "tile")
    if p.ndim != 2 or v.ndim != 2 or acc.ndim != 2:
        raise _err("tile.softmax_accumulate: acc, p and v are rank-2 tiles")
    if p.shape[1] != v.shape[0] or acc.shape != (p.shape[0], v.shape[1]):
        raise _err(f"tile.softmax_accumulate: p {list(p.shape)} @ v "
                   f"{list(v.shape)} does not match acc {list(acc.shape)}")
    for x in (m, l, m_c, l_c):
        if x.shape != (acc.shape[0],) or x.type != "f32":
            raise _err(f"tile.softmax_accumulate: row statistics are f32 "
                       f"[{acc.shape[0]}] tiles, got {x!r}")
    row = m.mlir_type
    a, mm, ll = current_trace().emit(
        f"ttile.softmax_accumulate {acc.name}, {m.name}, {l.name}, {p.name}, "
        f"{v.name}, {m_c.name}, {l_c.name} : {acc.mlir_type}, {row}, "
        f"{p.mlir_type}, {v.mlir_type}", [acc.mlir_type, row, row])
    return (Tile(a, acc.shape, acc.type), Tile(mm, m.shape, "f32"),
            Tile(ll, l.shape, "f32"))


# --------------------------------------------------------------------------
# The program and its context
# --------------------------------------------------------------------------

_AXES = {0: "x", 1: "y", 2: "z", "x": "x", "y": "y", "z": "z"}


def program_id(axis=0) -> Scalar:
    """This program's index along grid axis 0, 1 or 2."""
    if axis not in _AXES:
        raise _err(f"grid axes are 0, 1 and 2; got {axis!r}")
    trace = current_trace()
    key = _AXES[axis]
    cached = trace.program_ids.get(key)
    if cached is not None and cached.block.encloses(trace.block):
        return cached
    (name,) = trace.emit(f"ttile.program_id {key}", ["index"])
    value = Scalar(name, "index")
    if trace.block.depth == 0:
        trace.program_ids[key] = value
    return value


def num_programs(axis=0) -> Scalar:
    if axis not in _AXES:
        raise _err(f"grid axes are 0, 1 and 2; got {axis!r}")
    (name,) = current_trace().emit(f"ttile.num_programs {_AXES[axis]}",
                                   ["index"])
    return Scalar(name, "index")


def context():
    """The schedule the kernel is compiled with: ``T.m``, ``T.n`` (block),
    ``T.k``, ``T.warps``, ``T.stages``, ``T.vector``, ``T.swizzle`` and the
    schedule's named parameters (``T.d``, ``T.BM``...)."""
    return current_trace().schedule


def row_index():
    """The first row (query) of this program's block: ``program_id(0) *
    T.m``."""
    return program_id(0) * context().m


def col_index(block) -> Scalar:
    """The first column (key) of a ``tile.range_n`` block."""
    if isinstance(block, Block):
        return block.start
    return _as_index(block, "tile.col_index's argument")


# --------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------

def _start(ref, at, shape, rows):
    if isinstance(at, Block):
        if ref.rank != 2:
            raise _err("a tile.range_n block indexes the rows of a rank-2 "
                       "tensor")
        return [at.start, 0]
    if at is None:
        if ref.rank != 2 or rows is None:
            raise _err("tile.load/store needs at=(indices...) (or rows= of "
                       "a rank-2 tensor: the program's block of rows)")
        return [program_id(0) * rows, 0]
    if not isinstance(at, (tuple, list)):
        at = (at,)
    if len(at) != ref.rank:
        raise _err(f"{ref.arg} has {ref.rank} dims; at= gives {len(at)} "
                   f"indices")
    return list(at)


def _box(ref, at, shape, rows, cols):
    if shape is None:
        if isinstance(at, Block):
            rows = at.size if rows is None else rows
        if rows is None or cols is None or ref.rank != 2:
            raise _err("tile.load needs shape=(...) (or rows= and cols= for "
                       "a rank-2 tensor)")
        shape = (rows, cols)
    shape = _shape_of(shape)
    if len(shape) != ref.rank:
        raise _err(f"a tile of {ref.arg} has its {ref.rank} dims; got shape "
                   f"{list(shape)} (use unit dims)")
    return shape


def _mask_of(mask, shape):
    if mask is None:
        return None
    if not isinstance(mask, (Tile, _Expanded)):
        raise _err(f"a mask is a boolean tile, got {mask!r}")
    m = _to_shape(mask, shape)
    if m.type != "i1":
        raise _err(f"a mask is a boolean tile, got {m.type}")
    return m


def load(ref, at=None, shape=None, *, rows=None, cols=None, mask=None,
         padding=None, vector=None):
    """The box of ``shape`` of ``ref`` whose first element is at ``at`` (one
    index per dim, or a ``tile.range_n`` block). Elements outside the
    tensor, and where ``mask`` is false, read ``padding`` (0).

    ``rows=``/``cols=`` are spec 002's form for rank-2 tensors: the
    program's block of rows (or the block's rows) and ``cols`` columns.
    ``vector`` states the widest access the kernel needs: the compiler
    uses 16-byte accesses wherever alignment allows, and ``vector`` is
    checked against that (elements of one access, at most 16 bytes)."""
    if not isinstance(ref, TileRef):
        raise _err(f"tile.load reads a KTile argument (or a part of one), got "
                   f"{ref!r}")
    check_visible(ref, "tensor")
    shape = _box(ref, at, shape, rows, cols)
    _check_vector(vector, ref.type)
    idx = [_as_index(i, "a load index") for i in _start(ref, at, shape,
                                                          rows)]
    m = _mask_of(mask, shape)
    ttype = tensor_type(shape, ref.type)
    attrs = ""
    if padding is not None:
        if is_float(ref.type):
            attrs = f" {{padding = {float_literal(padding, ref.type)} : " \
                    f"{ref.type}}}"
        else:
            attrs = f" {{padding = {int_literal(int(padding), ref.type)} : " \
                    f"{ref.type}}}"
    mask_text = f" mask {m.name}" if m is not None else ""
    mask_type = f", {m.mlir_type}" if m is not None else ""
    (name,) = current_trace().emit(
        f"ttile.load {ref.name}[{', '.join(i.name for i in idx)}]{mask_text}"
        f"{attrs} : {ref.memref_type}{mask_type} -> {ttype}", [ttype])
    return Tile(name, shape, ref.type)


def _check_vector(vector, t):
    if vector is None:
        return
    if (isinstance(vector, bool) or not isinstance(vector, int) or vector < 1
            or vector & (vector - 1)):
        raise _err(f"vector= is a power of two, got {vector!r}")
    if vector * bit_width(t) > 128:
        raise _err(f"vector={vector} of {t} is {vector * bit_width(t) // 8} "
                   f"bytes per access; the widest access is 16 bytes")


def store(ref, value, at=None, *, rows=None, mask=None):
    """Writes ``value`` to the box of ``ref`` at ``at``; elements outside the
    tensor and where ``mask`` is false are not written."""
    if not isinstance(ref, TileRef):
        raise _err(f"tile.store writes a KTile argument, got {ref!r}")
    if not isinstance(value, Tile):
        raise _err(f"tile.store writes a tile, got {value!r}")
    check_visible(ref, "tensor")
    check_visible(value, "tile")
    if value.ndim != ref.rank:
        raise _err(f"a tile stored into {ref.arg} has its {ref.rank} dims; "
                   f"got {list(value.shape)}")
    if value.type != ref.type:
        raise _err(f"storing a {value.type} tile into {ref.arg} of {ref.type}; "
                   f"use tile.cast")
    rows = value.shape[0] if rows is None and ref.rank == 2 else rows
    idx = [_as_index(i, "a store index")
           for i in _start(ref, at, value.shape, rows)]
    m = _mask_of(mask, value.shape)
    mask_text = f" mask {m.name}" if m is not None else ""
    mask_type = f", {m.mlir_type}" if m is not None else ""
    current_trace().emit(
        f"ttile.store {value.name}, {ref.name}[{', '.join(i.name for i in idx)}]"
        f"{mask_text} : {value.mlir_type}, {ref.memref_type}{mask_type}")


# --------------------------------------------------------------------------
# Loops
# --------------------------------------------------------------------------

class _Range:
    """What ``tile.range`` returns: a ``for`` loop over it in a kernel
    becomes one ``ttile.range`` (see tessera._kernel_ast)."""

    __slots__ = ("start", "stop", "step", "stages", "block")

    def __init__(self, start, stop, step, stages, block=None):
        self.start, self.stop, self.step = start, stop, step
        self.stages = stages
        self.block = block

    def __iter__(self):
        raise _err("a loop over tile.range must be a plain `for` statement "
                   "of the kernel's body, without break, continue or return")


def range(start, stop=None, step=1, *, stages=None):  # noqa: A001
    """A loop of the program: ``for k in tile.range(0, K, T.k,
    stages=3)``. ``stages`` (default: the schedule's) >= 2 prefetches the
    loop's loads ``stages - 1`` iterations ahead. Values assigned in the
    body that exist before the loop are carried from one iteration to the
    next."""
    if stop is None:
        start, stop = 0, start
    if stages is None:
        stages = context().stages
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
        raise _err(f"stages is a positive integer, got {stages!r}")
    if isinstance(step, int) and step <= 0:
        raise _err(f"tile.range's step must be positive, got {step}")
    return _Range(start, stop, step, stages)


def range_n(extent, block: int, *, prefetch=None, start=0):
    """Blocks of ``block`` rows over ``extent`` (a size, or a shape whose
    first dim is the size): ``for nblk in tile.range_n(K.shape, T.n)``
    gives blocks for ``tile.load(K, nblk, cols=...)``. ``prefetch`` is the
    loop's stages."""
    if isinstance(extent, tuple):
        extent = extent[0]
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise _err(f"tile.range_n's block is a positive integer (a schedule "
                   f"value), got {block!r}")
    r = range(start, extent, block, stages=prefetch)
    r.block = block
    return r
