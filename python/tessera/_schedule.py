"""Schedules of tile kernels: how a kernel maps onto the card (block sizes,
warps, stages, vector width, swizzle and named parameters), given as a
``Schedule`` or in spec 002's chained form (``ts.block(...).warps(...)``),
which with lists of values is an autotune space."""

from __future__ import annotations

import json


_FIELDS = ("block", "k", "warps", "stages", "vector", "swizzle")


class Schedule:
    """How a kernel is mapped onto the card: block sizes, warps, stages.

    - ``block=(m, n)``: the tile sizes (one or two positive integers), ``T.m``
      and ``T.n`` in the kernel.
    - ``k``: the reduction step (``T.k``), a positive integer.
    - ``warps``: warps per program, 1, 2, 4, 8, 16 or 32.
    - ``stages``: how many copies of a loop's loads are in flight (1: no
      prefetch).
    - ``vector``: the widest access, in elements (a power of two), that the
      kernel's loads state with ``tile.load(vector=T.vector)``; checked against
      the 16 bytes of the widest access.
    - ``swizzle``: ``"xor"``, the layout of every shared tile (by 128-, 64- or
      32-byte rows), or None.
    - named parameters (``d=128``, ...), which the kernel reads as ``T.d``.
      Some mean something to the compiler: ``pingpong=True`` makes the
      warpgroups of a kernel of 8 warps or more take turns to issue their
      tensor-core products in loops, so one computes while another multiplies;
      ``cluster=2`` (1, 2, 4 or 8) runs the programs in clusters of 2,
      consecutive along grid dim 0, which share the tiles loaded with
      ``multicast=True``; ``producer_registers=40`` (a multiple of 8 from 24 to
      256) leaves a Hopper kernel's producer warpgroup 40 registers a thread
      and gives the rest to the consumers; ``programs_per_sm=2`` keeps each
      thread's registers within what two programs an SM leave it, so that both
      run at once.

    Inside the kernel ``tile.context()`` is the schedule. Values out of range
    raise ``ValueError``. Schedules are immutable and compare (and hash) by
    value; the ``with_*`` methods return changed copies.

    >>> base = ts.Schedule(block=(128, 128), warps=8, stages=3, d=64)
    >>> base
    Schedule(block=(128, 128), k=32, warps=8, stages=3, d=64)
    >>> base.m, base.n, base.k, base.d
    (128, 128, 32, 64)
    >>> base.with_block(64, 64)
    Schedule(block=(64, 64), k=32, warps=8, stages=3, d=64)
    >>> base.with_warps(4) == ts.Schedule(block=(128, 128), warps=4, stages=3,
    ...                                   d=64)
    True
    >>> ts.Schedule(warps=3)
    Traceback (most recent call last):
        ...
    ValueError: warps is a power of two up to 32, got 3
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
        """Programs a cluster (the parameter ``cluster``, default 1).

        >>> ts.Schedule().cluster, ts.Schedule(cluster=2).cluster
        (1, 2)
        """
        return self.params.get("cluster", 1)

    @property
    def m(self) -> int:
        """The block's first size (``T.m``: rows of a program's block).

        >>> ts.Schedule(block=(128, 64)).m
        128
        """
        return self.block[0]

    @property
    def n(self) -> int:
        """The block's second size (``T.n``).

        A block of one dim has none (``AttributeError``).

        >>> ts.Schedule(block=(128, 64)).n
        64
        """
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
        if name == "n":  # the property failed: a block of one dim
            raise AttributeError(
                f"the schedule's block {self.block} has one dim (no T.n)")
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
        """The schedule with block ``(m, n)`` (or ``(m,)`` when ``n`` is None).

        >>> ts.Schedule(block=(128, 128), warps=8).with_block(64, 32)
        Schedule(block=(64, 32), k=32, warps=8, stages=1)
        """
        return self._replace(block=(m,) if n is None else (m, n))

    def with_k(self, k):
        """The schedule with reduction step ``k``.

        >>> ts.Schedule().with_k(64).k
        64
        """
        return self._replace(k=k)

    def with_warps(self, warps):
        """The schedule with ``warps`` warps per program.

        >>> ts.Schedule(warps=8).with_warps(4).warps
        4
        """
        return self._replace(warps=warps)

    def with_stages(self, stages):
        """The schedule with ``stages`` pipeline stages.

        >>> ts.Schedule().with_stages(3).stages
        3
        """
        return self._replace(stages=stages)

    def with_vector(self, vector):
        """The schedule with vector width ``vector``.

        ``vector`` counts the elements of the widest access; None states none.

        >>> ts.Schedule().with_vector(8)
        Schedule(block=(64, 64), k=32, warps=4, stages=1, vector=8)
        """
        return self._replace(vector=vector)

    def with_swizzle(self, swizzle):
        """The schedule with shared-tile layout ``swizzle`` (``"xor"``, None).

        >>> ts.Schedule().with_swizzle("xor").swizzle
        'xor'
        """
        return self._replace(swizzle=swizzle)

    def with_params(self, **params):
        """The schedule with named parameters added or replaced.

        >>> s = ts.Schedule(d=64).with_params(d=128, pingpong=False)
        >>> s.d, s.params
        (128, {'d': 128, 'pingpong': False})
        """
        return self._replace(**params)

    def key(self) -> str:
        """The schedule as a canonical JSON string.

        Equal schedules have equal keys; it keys compiled kernels and autotune
        choices.

        >>> ts.Schedule(block=(64, 32), d=64).key()
        '[[64, 32], 32, 4, 1, null, null, {"d": 64}]'
        """
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
    """Spec 002's chained form of a schedule, or of an autotune search space.

    ``ts.block(m, n)`` starts one; ``.k()``, ``.warps()``, ``.stages()``,
    ``.vector()``, ``.swizzle()`` and ``.params()`` set the other fields, each
    returning a new builder. With one value a field it is one schedule
    (``.schedule()``; ``kernel.schedule``, ``kernel(schedule=)`` and
    ``with_schedule`` take the builder as it is); with a list for some field it
    is a space (``.space()``; ``kernel.autotune(space=...)`` takes it as it
    is).

    >>> ts.block(128, 128).k(64).warps(8).stages(3).schedule()
    Schedule(block=(128, 128), k=64, warps=8, stages=3)
    >>> space = ts.block(m=[64, 128], n=[64, 128], k=[64]).warps([4, 8])
    >>> space.is_space()
    True
    >>> space.space()
    {'BM': [64, 128], 'BN': [64, 128], 'BK': [64], 'warps': [4, 8]}
    """

    __slots__ = ("_fields",)

    def __init__(self, fields):
        self._fields = dict(fields)

    def _with(self, **changes):
        fields = dict(self._fields)
        fields.update(changes)
        return ScheduleBuilder(fields)

    def k(self, k):
        """The builder with reduction step ``k`` (or a list of them).

        >>> ts.block(64, 64).k(16).schedule().k
        16
        """
        return self._with(k=k)

    def warps(self, warps):
        """The builder with ``warps`` warps per program (or a list of counts).

        >>> ts.block(64, 64).warps([4, 8]).space()["warps"]
        [4, 8]
        """
        return self._with(warps=warps)

    def stages(self, stages):
        """The builder with ``stages`` pipeline stages (or a list of them).

        >>> ts.block(64, 64).stages(2).schedule().stages
        2
        """
        return self._with(stages=stages)

    def vector(self, vector):
        """The builder with vector width ``vector`` (or a list of widths).

        >>> ts.block(64, 64).vector(8).schedule().vector
        8
        """
        return self._with(vector=vector)

    def swizzle(self, swizzle):
        """The builder with shared-tile layout ``swizzle`` (``"xor"``).

        >>> ts.block(64, 64).swizzle("xor").schedule().swizzle
        'xor'
        """
        return self._with(swizzle=swizzle)

    def params(self, **params):
        """The builder with named parameters, or lists of them in a space.

        Parameters are ``d=128``, ``pingpong=True`` and the like. A field's
        name raises ``ValueError`` (set fields with their own methods).

        >>> ts.block(64, 64).params(d=128).schedule().d
        128
        >>> ts.block(64, 64).params(warps=8)
        Traceback (most recent call last):
            ...
        ValueError: warps is a schedule field: use .warps(...)
        """
        for name in params:
            if name in _FIELDS or name in ("m", "n"):
                raise ValueError(f"{name} is a schedule field: use "
                                 f".{name}(...)" if name != "block" else
                                 "block is set by ts.block(m, n)")
        return self._with(**params)

    def is_space(self) -> bool:
        """Whether some field holds a list of values: a search space.

        >>> ts.block(64, 64).is_space(), ts.block(64, [64, 128]).is_space()
        (False, True)
        """
        return any(isinstance(v, (list, tuple)) for v in self._fields.values())

    def schedule(self) -> Schedule:
        """The one ``Schedule`` the builder describes.

        A search space raises ``TypeError``.

        >>> ts.block(128, 64).warps(8).schedule()
        Schedule(block=(128, 64), k=32, warps=8, stages=1)
        >>> ts.block(128, 64).warps([4, 8]).schedule()
        Traceback (most recent call last):
            ...
        TypeError: this builder is a search space (lists for warps), not one
        schedule: give it to kernel.autotune(space=...)
        """
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
        """The autotune space: a dict of lists of values.

        The keys are BM, BN, BK for the block sizes and the reduction step, and
        the fields' and parameters' own names for the rest; single values
        become one-element lists. An empty list raises ``ValueError``.

        >>> b = ts.block(m=[64, 128], n=64).stages([2, 3])
        >>> b.params(pingpong=[False, True]).space()
        {'BM': [64, 128], 'BN': [64], 'stages': [2, 3],
         'pingpong': [False, True]}
        """
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
    """The first link of a chained schedule, a ``ScheduleBuilder``.

    ``ts.block(128, 128).k(64).warps(8)`` is one schedule. ``m``, ``n`` (the
    block sizes) and ``k`` (the reduction step) are integers, or lists of them
    for a search space (see ``ScheduleBuilder``). Fields left out take
    ``Schedule``'s defaults.

    >>> ts.block(128, 64).schedule()
    Schedule(block=(128, 64), k=32, warps=4, stages=1)
    >>> ts.block(m=[64, 128], n=[64, 128]).space()
    {'BM': [64, 128], 'BN': [64, 128]}
    """
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
