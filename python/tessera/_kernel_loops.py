"""Loops in kernel bodies: the helper that kernels rewritten by _kernel_ast
call for each ``for`` over ``tile.range``, which traces the body once into a
``ttile.range`` op with the loop-carried values as its iteration
arguments."""

from __future__ import annotations

from . import tile as _tile
from ._tile_ir import (Block as _IRBlock, KernelTraceError, check_visible,
                       current_trace, tensor_type, user_location)
from ._tile_program import _Range
from ._tile_values import _as_index, _index_const, _scalar_const


# --------------------------------------------------------------------------
# Loops (the helper the rewritten kernel calls; see _kernel_ast)
# --------------------------------------------------------------------------

class _Unbound:
    """A variable that has no value here (assigned only inside a loop)."""

    __slots__ = ("_why",)

    def __init__(self, why):
        self._why = why

    def _fail(self, *args):
        raise KernelTraceError(self._why)

    # Even an error message that shows the variable reports it.
    __repr__ = __str__ = _fail

    __getattr__ = __add__ = __radd__ = __sub__ = __rsub__ = _fail
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __matmul__ = _fail
    __getitem__ = __bool__ = __neg__ = __lt__ = __gt__ = _fail


def _type_of(v):
    if isinstance(v, _tile.Tile):
        return tensor_type(v.shape, v.type)
    if isinstance(v, _tile.Scalar):
        return v.type
    return None


def _describe_type(v):
    if isinstance(v, _tile.Tile):
        return f"a {v.type} tile {list(v.shape)}"
    if isinstance(v, _tile.Scalar):
        return f"a {v.type} scalar"
    return f"the Python value {v!r}"


def _loop(iterable, body, names, env):
    init = tuple(env.get(n, _Unbound(
        f"variable {n!r} is read before it is assigned in the loop body"))
        for n in names)
    if not isinstance(iterable, _Range):
        state = init
        for x in iterable:
            state = body(x, state)
        return tuple(state)
    return _trace_range(iterable, body, names, init)


def _matching_init(name, v0, like):
    """The loop's initial value for carried ``name``: ``v0`` converted to
    the type the body gives it (numbers become constants)."""
    if isinstance(v0, _Unbound):
        return None
    if isinstance(like, _tile.Tile):
        if isinstance(v0, (int, float)) and not isinstance(v0, bool):
            return _tile.full(like.shape, v0, like.type)
        if isinstance(v0, _tile.Tile) and v0.shape == like.shape and \
                v0.type == like.type:
            return v0
    else:
        if isinstance(v0, (int, float)) and not isinstance(v0, bool):
            return _scalar_const(v0, like.type) if like.type != "index" \
                else _index_const(int(v0))
        if isinstance(v0, _tile.Scalar) and v0.type == like.type:
            return v0
    raise KernelTraceError(
        f"{_line()}: {name!r} is {_describe_type(v0)} before the tile.range "
        f"loop and {_describe_type(like)} after an iteration; a carried "
        f"variable keeps its type (cast it before the loop)")


def _line():
    from ._tile_ir import user_line
    return user_line()


def _trace_range(r, body, names, init):
    trace = current_trace()
    loc = user_location()
    lb = _as_index(r.start, "tile.range's start")
    ub = _as_index(r.stop, "tile.range's stop")
    step = _as_index(r.step, "tile.range's step")
    # Carried variables: found by tracing the body, then traced again with
    # them as block arguments until the set is stable.
    carried = {}  # index -> a value of the carried type
    for _ in range(4):
        outer = trace.block
        body_block = _IRBlock(outer)
        trace.block = body_block
        prefetch = []
        trace.loop_prefetch.append(prefetch)
        try:
            iv = _tile.Scalar(trace.fresh(), "index")
            args = {i: (_tile.Tile(trace.fresh(), like.shape, like.type)
                        if isinstance(like, _tile.Tile)
                        else _tile.Scalar(trace.fresh(), like.type))
                    for i, like in carried.items()}
            state = tuple(args.get(i, v) for i, v in enumerate(init))
            target = _tile.Block(iv, r.block) if r.block else iv
            out = body(target, state)
        finally:
            trace.block = outer
            trace.loop_prefetch.pop()
        found = {}
        local = set()
        for i, (v0, v1) in enumerate(zip(init, out)):
            if i in args and v1 is args[i]:
                continue  # unchanged
            if i not in args and v1 is v0:
                continue
            if isinstance(v0, _Unbound) or v1 is iv or v1 is target:
                local.add(i)  # first set in the body, or the loop's target
            elif isinstance(v1, (_tile.Tile, _tile.Scalar)):
                found[i] = v1
            elif isinstance(v1, _Unbound):
                continue
            elif isinstance(v1, _tile.TileRef) and v1 is v0:
                continue
            elif not isinstance(v1, (_tile.Tile, _tile.Scalar, _tile.TileRef)) \
                    and not isinstance(v0, (_tile.Tile, _tile.Scalar)) \
                    and type(v1) is type(v0) and v1 == v0:
                continue
            else:
                raise KernelTraceError(
                    f"{_line()}: {names[i]!r} is set to {_describe_type(v1)} "
                    f"in a tile.range loop; a loop of the program carries "
                    f"tiles and scalars only")
        if set(found) == set(carried) and all(
                _type_of(found[i]) == _type_of(carried[i]) for i in found):
            break
        carried = found
    else:
        raise KernelTraceError(f"{_line()}: the variables carried by this "
                               f"tile.range loop do not settle")
    order = sorted(carried)
    inits = [_matching_init(names[i], init[i], carried[i]) for i in order]
    for i, v in zip(order, inits):
        if v is None:
            raise KernelTraceError(f"{_line()}: {names[i]!r} is assigned in "
                                   f"the loop but has no value before it")
        check_visible(v)
    yields = []
    for i in order:
        v = out[i]
        yields.append(v)
    types = [_type_of(carried[i]) for i in order]
    head = (f"ttile.range {iv.name} = {lb.name} to {ub.name} step "
            f"{step.name}")
    # The loop's stages, raised to what its loads' prefetch asks.
    stages = max([r.stages] + prefetch)
    if stages != 1:
        head += f" stages {stages}"
    if order:
        head += (" iter_args(" + ", ".join(
            f"{args[i].name} = {v.name}" for i, v in zip(order, inits)) +
            ") -> (" + ", ".join(types) + ")")
    lines = ["  " + l for l in body_block.lines]
    if order:
        lines.append("  ttile.yield " + ", ".join(v.name for v in yields) +
                     " : " + ", ".join(types) + f" {loc}")
    text = head + " {\n" + "\n".join(lines) + "\n}"
    results = trace.emit(text, types, loc)
    final = list(init)
    for i, name in zip(order, results):
        like = carried[i]
        final[i] = (_tile.Tile(name, like.shape, like.type)
                    if isinstance(like, _tile.Tile)
                    else _tile.Scalar(name, like.type))
    for i in local:
        final[i] = _Unbound(f"variable {names[i]!r} is set only inside a "
                            f"tile.range loop; assign it before the loop to "
                            f"carry it out")
    return tuple(final)
