"""The values a tile kernel computes on (tiles, scalars, tensors in
memory) and the elementwise arithmetic behind their operators; the
operations users call are in tessera.tile, which re-exports these."""

from __future__ import annotations

import builtins

from ._dtypes import DType, as_dtype
from ._tile_ir import (KernelTraceError, bit_width, check_visible,
                       current_trace, float_literal, int_literal, is_float,
                       tensor_type, user_line)


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

    # Arithmetic and comparisons, the same for scalars and tiles (Python
    # numbers on either side).
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
    def __lt__(self, o): return _compare("lt", self, o)
    def __le__(self, o): return _compare("le", self, o)
    def __gt__(self, o): return _compare("gt", self, o)
    def __ge__(self, o): return _compare("ge", self, o)
    def __eq__(self, o): return _compare("eq", self, o)
    def __ne__(self, o): return _compare("ne", self, o)
    __hash__ = object.__hash__


class Scalar(_Value):
    """A scalar of the program: an index, integer or float value.

    Program ids, tensor sizes, offsets and scalar arguments are scalars: values
    the kernel computes at run time.

    Scalars are made by ``tile`` functions and by kernel arguments annotated
    ``int`` (index), ``float`` (f32), ``bool`` or a dtype, never directly. They
    combine with Python operators (``+ - * / // %``, comparisons, which give an
    i1 scalar) with other scalars and Python numbers, which take the scalar's
    type; an index and a fixed-width integer compute in the integer type.
    ``//`` and ``%`` follow Python (floor division); ``/`` of integers rounds
    toward zero (``arith.divsi``). Other mixed types raise a
    ``KernelTraceError`` (a ``TypeError``): convert with ``tile.cast``. A
    scalar has no truth value while the kernel is traced (Python ``if`` on it
    raises; use ``tile.where``). ``s.type`` is the element type's name.

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], scale: float):
    ...     r = tile.program_id(0) * 16 + 1
    ...     print(r, r.type, scale, r < X.shape[0])
    >>> text = k.lower()
    Scalar(index) index Scalar(f32) Scalar(i1)
    """

    __slots__ = ("type",)

    def __init__(self, name: str, type_: str):
        self.name = name
        self.type = type_
        self.block = current_trace().block

    def __repr__(self):
        return f"Scalar({self.type})"

    def __neg__(self): return _binary("sub", 0, self)


class Tile(_Value):
    """A tile: a block of elements of static shape held by the program.

    Its elements are spread over the program's threads; in the Tile IR it is a
    ranked tensor value.

    Tiles are made by ``tile`` functions (``tile.load``, ``tile.zeros``,
    ...), never directly. They combine elementwise with Python operators
    (``+ - * / // %``, comparisons, which give boolean (i1) tiles, and
    ``& | ~`` of boolean or integer tiles) with tiles of the same element
    type, scalars and Python numbers, broadcasting as in NumPy; ``a @ b`` is
    ``tile.dot(a, b)``. ``x[:, None]`` (``:``, ``None`` and ``...`` only) is
    a view with unit dims for broadcasting. Element types never change
    implicitly (``tile.cast``). ``x.shape`` is a tuple of Python integers,
    ``x.type`` the element type's name.

    >>> @ts.kernel
    ... def k(X: ts.KTile["M", "N", ts.f32], Y: ts.KTile["M", "N", ts.f32]):
    ...     x = tile.load(X, at=(0, 0), shape=(4, 8))
    ...     y = x / tile.sum(x, axis=1)[:, None]
    ...     print(x, x.shape, x.type, y)
    ...     tile.store(Y, y, at=(0, 0))
    >>> text = k.lower()
    Tile([4, 8], f32) (4, 8) f32 Tile([4, 8], f32)
    """

    __slots__ = ("shape", "type")

    def __init__(self, name: str, shape, type_: str):
        self.name = name
        self.shape = tuple(shape)
        self.type = type_
        self.block = current_trace().block

    @property
    def dtype(self) -> DType:
        """The element type, as a Tessera dtype.

        >>> @ts.kernel
        ... def k(X: ts.KTile["N", ts.bf16]):
        ...     print(tile.load(X, at=(0,), shape=(16,)).dtype)
        >>> text = k.lower()
        ts.bf16
        """
        return as_dtype(self.type)

    @property
    def ndim(self) -> int:
        """The number of dims (the rank).

        >>> @ts.kernel
        ... def k(X: ts.KTile["M", "N", ts.f32]):
        ...     print(tile.load(X, at=(0, 0), shape=(4, 8)).ndim)
        >>> text = k.lower()
        2
        """
        return len(self.shape)

    @property
    def mlir_type(self) -> str:
        return tensor_type(self.shape, self.type)

    def __repr__(self):
        return f"Tile({list(self.shape)}, {self.type})"

    @property
    def T(self):
        """The tile with its dims reversed (``tile.transpose(x)``).

        >>> @ts.kernel
        ... def k(X: ts.KTile["M", "N", ts.f32]):
        ...     print(tile.load(X, at=(0, 0), shape=(4, 8)).T)
        >>> text = k.lower()
        Tile([8, 4], f32)
        """
        from .tile import transpose
        return transpose(self)

    def astype(self, dtype):
        """The tile converted to ``dtype``, rounded to nearest even.

        It is ``tile.cast(x, dtype)``.

        >>> @ts.kernel
        ... def k(X: ts.KTile["N", ts.f32]):
        ...     print(tile.load(X, at=(0,), shape=(16,)).astype(ts.bf16))
        >>> text = k.lower()
        Tile([16], bf16)
        """
        from .tile import cast
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

    def __neg__(self): return _unary("neg", self)
    def __matmul__(self, o):
        from .tile import dot
        return dot(self, o)
    def __and__(self, o): return _binary("and", self, o)
    def __or__(self, o): return _binary("or", self, o)
    def __invert__(self):  # bitwise not: xor with all ones (-1; true for i1)
        return _binary("xor", self, True if self.type == "i1" else -1)


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
    """A tensor in memory as a kernel sees it: a ``KTile`` argument.

    It is the value of a ``KTile`` parameter, or a part of one: ``X[i]`` (rank
    2 or more) is the tensor of dims 1.. at index ``i`` of dim 0 (a strided
    view, bounds kept): ``q[tile.program_id(1)]`` picks a head of a
    ``[BH, S, D]`` tensor. ``tile.load``, ``tile.store`` and
    ``tile.load_scalar`` read and write it. ``X.type`` is the element type's
    name; ``X.rank`` the number of dims.

    >>> @ts.kernel
    ... def k(Q: ts.KTile["BH", "S", "D", ts.bf16]):
    ...     q = Q[tile.program_id(1)]
    ...     print(Q, q)
    >>> text = k.lower()
    TileRef(Q, rank 3, bf16) TileRef(Q[...], rank 2, bf16)
    """

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
        """The element type, as a Tessera dtype.

        >>> @ts.kernel
        ... def k(X: ts.KTile["N", ts.f16]):
        ...     print(X.dtype)
        >>> text = k.lower()
        ts.f16
        """
        return as_dtype(self.type)

    @property
    def shape(self):
        """The sizes of the tensor's dims, a tuple of index scalars.

        The sizes are values of the program: known at launch, not when the
        kernel is traced.

        >>> @ts.kernel
        ... def k(X: ts.KTile["M", "N", ts.f32]):
        ...     print(X.shape)
        >>> text = k.lower()
        (Scalar(index), Scalar(index))
        """
        return tuple(self.dim(i) for i in builtins.range(self.rank))

    def dim(self, i: int) -> Scalar:
        """The size of dim ``i``, an index scalar.

        ``i`` may be negative (from the end); the op is ``memref.dim``. A dim
        the tensor does not have raises a ``KernelTraceError`` (a
        ``TypeError``).

        >>> @ts.kernel
        ... def k(X: ts.KTile["M", "N", ts.f32]):
        ...     print(X.dim(-1))
        >>> text = k.lower()
        Scalar(index)
        >>> "memref.dim %arg0" in text
        True
        """
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
    """One step of a ``tile.range_n`` loop: a block of rows.

    It stands for rows ``start .. start + size`` of the tensor the loop walks.

    ``start`` is an index scalar, ``size`` the loop's block (a Python integer).
    ``tile.load(K, blk, cols=n)`` reads the block's rows of a rank-2 tensor,
    ``tile.store(Y, t, at=blk)`` writes them, and ``tile.col_index(blk)`` is
    ``start``.

    >>> @ts.kernel
    ... def k(K: ts.KTile["S", "D", ts.f32]):
    ...     for blk in tile.range_n(K.shape, 64):
    ...         print(blk, blk.start, blk.size)
    >>> text = k.lower()
    Block(size 64) Scalar(index) 64
    """

    __slots__ = ("start", "size")

    def __init__(self, start, size):
        self.start = start
        self.size = size

    def __repr__(self):
        return f"Block(size {self.size})"


class constexpr:
    """Annotation of a kernel parameter fixed at compile time.

    Written ``causal: tile.constexpr``. Its value is a Python value while the
    kernel is traced, so Python ``if`` and loops on it are resolved then; each
    value gets its own compiled kernel. Keyword-only parameters are constexpr
    too. ``kernel.lower`` and ``kernel.compile`` take the values as keywords.

    >>> @ts.kernel
    ... def k(X: ts.KTile["N", ts.f32], double: tile.constexpr):
    ...     x = tile.load(X, at=(0,), shape=(16,))
    ...     if double:
    ...         x = x * 2.0
    ...     tile.store(X, x, at=(0,))
    >>> "arith.mulf" in k.lower(double=True)
    True
    >>> "arith.mulf" in k.lower(double=False)
    False
    """


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
    if not scalars:
        raise _err(f"two Python numbers ({a!r} and {b!r}) have no type in a "
                   f"kernel: one of them must be a tile or a scalar of the "
                   f"program")
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
