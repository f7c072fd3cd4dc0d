"""Schedules of tile kernels: how a kernel maps onto the card (block sizes,
warps, stages, vector width, swizzle and named parameters), given as a
``Schedule`` or in spec 002's chained form (``ts.block(...).warps(...)``),
which with lists of values is an autotune space."""

from __future__ import annotations

import json


_FIELDS = ("block", "k", "warps", "stages", "vector", "swizzle")


class Schedule:
    """How a kernel is mapped onto the card: ``block=(m, n)`` tile sizes,
    ``k`` (the reduction step), ``warps`` per program, ``stages`` of the
    loops' prefetch, ``vector`` (the widest access, in elements, that the
    kernel's loads state with ``tile.load(vector=T.vector)``: checked
    against the 16 bytes of the widest access), ``swizzle`` (``"xor"``, the
    layout of every shared tile, by 128-, 64- or 32-byte rows) and named
    parameters
    (``d=128``; ``pingpong=True`` makes the warpgroups of a kernel of 8
    warps or more take turns to issue their tensor-core products in loops,
    so one computes while another multiplies; ``cluster=2`` runs the
    programs in clusters of 2, consecutive along grid dim 0, which share
    the tiles loaded with ``multicast=True``; ``producer_registers=40``
    leaves a Hopper kernel's producer warpgroup 40 registers a thread and
    gives the rest to the consumers; ``programs_per_sm=2`` keeps each
    thread's registers within what two programs an SM leave it, so that
    both run at once). Inside the kernel
    ``tile.context()`` gives them as
    ``T.m``, ``T.n``, ``T.k``, ``T.warps``, ``T.stages``, ``T.d``...

        base = Schedule(block=(128, 128), warps=8, stages=3)
        small = base.with_block(64, 64)
    """

    __slots__ = ("block", "k", "warps", "stages", "vector", "swizzle",
                 "params", "_key")

    def __init__(self, block=(64, 64), k=32, warps=4, stages=1, vector=None,
                 swizzle=None, **params):
        if isinstance(block, int):
            block = (block,)
        block = tuple(block)
        for v in block:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"block sizes are positive integers, got "
                                 f"{block}")
        if warps not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"warps is a power of two up to 32, got {warps!r}")
        if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
            raise ValueError(f"stages is a positive integer, got {stages!r}")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int)
                              or k < 1):
            raise ValueError(f"k is a positive integer, got {k!r}")
        if vector is not None and (not isinstance(vector, int) or vector < 1
                                   or vector & (vector - 1)):
            raise ValueError(f"vector is a power of two, got {vector!r}")
        if swizzle not in (None, "xor"):
            raise ValueError(
                f"swizzle is 'xor' (shared tiles are XOR-swizzled: the "
                f"layout tensor cores, TMA and ldmatrix read without bank "
                f"conflicts), got {swizzle!r}")
        for name in params:
            if name in _FIELDS or name in ("m", "n"):
                raise ValueError(f"{name} is a schedule field, not a parameter")
        pingpong = params.get("pingpong", False)
        if not isinstance(pingpong, bool):
            raise ValueError(f"pingpong is True or False, got {pingpong!r}")
        if pingpong and warps < 8:
            raise ValueError(f"pingpong=True alternates two warpgroups or "
                             f"more (warps >= 8), got warps={warps}")
        regs = params.get("producer_registers")
        if regs is not None and (isinstance(regs, bool) or regs not in
                                 range(24, 257, 8)):
            raise ValueError(f"producer_registers is a multiple of 8 from 24 "
                             f"to 256, got {regs!r}")
        per_sm = params.get("programs_per_sm")
        if per_sm is not None and (
                isinstance(per_sm, bool) or not isinstance(per_sm, int)
                or per_sm < 1 or per_sm * 32 * warps > 2048):
            raise ValueError(f"programs_per_sm is the programs an SM holds "
                             f"at once, from 1 to {2048 // (32 * warps)} "
                             f"with {warps} warps (2048 threads an SM), got "
                             f"{per_sm!r}")
        cluster = params.get("cluster", 1)
        if isinstance(cluster, bool) or cluster not in (1, 2, 4, 8):
            raise ValueError(f"cluster (programs a cluster, consecutive along "
                             f"grid dim 0) is 1, 2, 4 or 8, got {cluster!r}")
        self.block = block
        self.k = k
        self.warps = warps
        self.stages = stages
        self.vector = vector
        self.swizzle = swizzle
        self.params = dict(sorted(params.items()))
        self._key = json.dumps([list(self.block), self.k, self.warps,
                                self.stages, self.vector, self.swizzle,
                                self.params], sort_keys=True, default=repr)

    @property
    def cluster(self) -> int:
        """Programs a cluster (the parameter ``cluster``, default 1)."""
        return self.params.get("cluster", 1)

    @property
    def m(self) -> int:
        return self.block[0]

    @property
    def n(self) -> int:
        if len(self.block) < 2:
            raise AttributeError("the schedule's block has one dim (no T.n)")
        return self.block[1]

    def __getattr__(self, name):
        params = object.__getattribute__(self, "params")
        if name in params:
            return params[name]
        aliases = {"BM": "m", "BN": "n", "BK": "k"}
        if name in aliases:
            return getattr(self, aliases[name])
        raise AttributeError(
            f"the schedule has no {name!r} (fields: m, n, k, warps, stages, "
            f"vector, swizzle; parameters: {', '.join(params) or 'none'})")

    def _replace(self, **changes):
        fields = dict(block=self.block, k=self.k, warps=self.warps,
                      stages=self.stages, vector=self.vector,
                      swizzle=self.swizzle, **self.params)
        fields.update(changes)
        return Schedule(**fields)

    def with_block(self, m, n=None):
        return self._replace(block=(m,) if n is None else (m, n))

    def with_k(self, k):
        return self._replace(k=k)

    def with_warps(self, warps):
        return self._replace(warps=warps)

    def with_stages(self, stages):
        return self._replace(stages=stages)

    def with_vector(self, vector):
        return self._replace(vector=vector)

    def with_swizzle(self, swizzle):
        return self._replace(swizzle=swizzle)

    def with_params(self, **params):
        return self._replace(**params)

    def key(self) -> str:
        return self._key

    def __eq__(self, other):
        return isinstance(other, Schedule) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        parts = [f"block={self.block}", f"k={self.k}", f"warps={self.warps}",
                 f"stages={self.stages}"]
        if self.vector is not None:
            parts.append(f"vector={self.vector}")
        if self.swizzle is not None:
            parts.append(f"swizzle={self.swizzle!r}")
        parts += [f"{k}={v!r}" for k, v in self.params.items()]
        return f"Schedule({', '.join(parts)})"


class ScheduleBuilder:
    """Spec 002's chained form of a schedule, or of a search space:

        ts.block(128, 128).k(64).warps(8).stages(3).vector(8).swizzle("xor")
        ts.block(m=[64, 128], n=[64, 128], k=[64]).warps([4, 8]).stages([2, 3])

    With one value a field it is one schedule (``.schedule()``;
    ``kernel.schedule``, ``kernel(schedule=)`` and ``with_schedule`` take
    the builder as it is); with a list for some field it is a space
    (``.space()``; ``kernel.autotune(space=...)`` takes it as it is). Each
    method returns a new builder."""

    __slots__ = ("_fields",)

    def __init__(self, fields):
        self._fields = dict(fields)

    def _with(self, **changes):
        fields = dict(self._fields)
        fields.update(changes)
        return ScheduleBuilder(fields)

    def k(self, k):
        return self._with(k=k)

    def warps(self, warps):
        return self._with(warps=warps)

    def stages(self, stages):
        return self._with(stages=stages)

    def vector(self, vector):
        return self._with(vector=vector)

    def swizzle(self, swizzle):
        return self._with(swizzle=swizzle)

    def params(self, **params):
        """Named parameters (``d=128``, ``pingpong=True``...), or lists of
        them in a space."""
        for name in params:
            if name in _FIELDS or name in ("m", "n"):
                raise ValueError(f"{name} is a schedule field: use "
                                 f".{name}(...)" if name != "block" else
                                 "block is set by ts.block(m, n)")
        return self._with(**params)

    def is_space(self) -> bool:
        return any(isinstance(v, (list, tuple)) for v in self._fields.values())

    def schedule(self) -> Schedule:
        if self.is_space():
            listed = sorted(k for k, v in self._fields.items()
                            if isinstance(v, (list, tuple)))
            raise TypeError(f"this builder is a search space (lists for "
                            f"{', '.join(listed)}), not one schedule: give "
                            f"it to kernel.autotune(space=...)")
        f = dict(self._fields)
        m, n = f.pop("m"), f.pop("n", None)
        return Schedule(block=(m,) if n is None else (m, n), **f)

    def space(self) -> dict:
        """The autotune space: BM, BN, BK for the block sizes and the
        fields' and parameters' own names, each a list of values."""
        names = {"m": "BM", "n": "BN", "k": "BK"}
        out = {}
        for key, v in self._fields.items():
            values = list(v) if isinstance(v, (list, tuple)) else [v]
            if not values:
                raise ValueError(f"the space's {key} is an empty list")
            out[names.get(key, key)] = values
        return out

    def __repr__(self):
        return "ScheduleBuilder(" + ", ".join(
            f"{k}={v!r}" for k, v in self._fields.items()) + ")"


def block(m, n=None, k=None) -> ScheduleBuilder:
    """The first link of a chained schedule: ``ts.block(128, 128).k(64)
    .warps(8)``; with lists (``ts.block(m=[64, 128], n=[64, 128])``), of a
    search space (see ScheduleBuilder)."""
    fields = {"m": m}
    if n is not None:
        fields["n"] = n
    if k is not None:
        fields["k"] = k
    return ScheduleBuilder(fields)


def _as_schedule(schedule, what: str) -> Schedule:
    if isinstance(schedule, ScheduleBuilder):
        return schedule.schedule()
    if not isinstance(schedule, Schedule):
        raise TypeError(f"{what} takes a Schedule (or ts.block(...)...), "
                        f"got {schedule!r}")
    return schedule
