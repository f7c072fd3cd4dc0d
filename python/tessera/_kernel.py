"""``@ts.kernel``: GPU kernels written with tiles (spec 002 §3)::

    import tessera as ts
    from tessera import tile, KTile

    @ts.kernel.schedule(ts.Schedule(block=(128, 128), k=32, warps=8, stages=3))
    def matmul(A: KTile["M", "K", ts.bf16], B: KTile["K", "N", ts.bf16],
               C: KTile["M", "N", ts.bf16]):
        T = tile.context()
        i, j = tile.program_id(0) * T.m, tile.program_id(1) * T.n
        acc = tile.zeros((T.m, T.n))
        for k in tile.range(0, A.shape[1], T.k):
            acc = tile.dot(tile.load(A, at=(i, k), shape=(T.m, T.k)),
                           tile.load(B, at=(k, j), shape=(T.k, T.n)), acc)
        tile.store(C, tile.cast(acc, ts.bf16), at=(i, j))

    matmul[lambda T: (ts.cdiv(M, T.m), ts.cdiv(N, T.n))](a, b, c)

A kernel is traced into Tile IR once per specialization (the schedule,
the dtypes of arguments whose annotation leaves it open, the values of
keyword-only / ``tile.constexpr`` parameters) and compiled to PTX for the
device's architecture; compiled kernels are kept in memory and in a
kernel cache on disk (``TESSERA_KERNEL_CACHE``, default
``~/.cache/tessera/kernels``), which installations without the compiler
read. Tensors are Tessera device tensors (``ts.device("cuda")``) or any
CUDA tensor that speaks DLPack (PyTorch).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import struct
import threading

import numpy as np

from . import _kernel_ast
from . import tile as _tile
from ._dtypes import DType, PolicyDType
from ._errors import TesseraError
from ._types import Tensor as _TensorAnnotation
from ._types import TensorType
from ._schedule import Schedule, ScheduleBuilder, _as_schedule  # noqa: F401
from ._kernel_cache import (CompiledKernel, KernelCache,  # noqa: F401
                            _compiler, compiler_id, kernel_cache)
from ._tile_ir import KernelTraceError, Trace, element_type
from ._kernel_loops import _loop

__all__ = ["KTile", "Schedule", "TileKernel", "cdiv", "compile_only", "kernel",
           "kernel_cache"]



def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` of Python integers, for grid sizes.

    It is the number of blocks of ``b`` that cover ``a``.

    >>> ts.cdiv(1000, 256), ts.cdiv(1024, 256), ts.cdiv(0, 256)
    (4, 4, 0)

    A grid given as a function of the schedule uses it with the block sizes:
    ``kern[lambda T: (ts.cdiv(M, T.m), ts.cdiv(N, T.n))](...)``.
    """
    return -(-a // b)


# --------------------------------------------------------------------------
# Annotations
# --------------------------------------------------------------------------

class KTileType(TensorType):
    """What ``KTile[...]`` stands for: a tensor argument of a kernel."""

    __slots__ = ()
    _spelling = "KTile"


class KTile:
    """Annotation of a kernel's tensor argument: ``KTile["M", "N", ts.f32]``.

    The items are the dims, then optionally a dtype (``ts.bf16``, or with a
    policy, ``ts.bf16 @ ts.accum(ts.f32)``), with the grammar of
    ``ts.Tensor[...]`` annotations. A named dim (``"M"``, or an expression such
    as ``"B*H"``) takes its size at launch, and the same name must have the
    same size in every argument of a launch; an integer dim is fixed. Without a
    dtype the kernel is compiled for each dtype it is called with
    (``kern.lower`` and ``kern.compile`` then take the dtypes). A launch checks
    each argument's rank, dtype and sizes before anything runs, and raises
    ``TesseraError`` naming the argument. ``KTile[...]`` without a dim raises
    ``TypeError``.

    >>> ts.KTile["M", "N", ts.f32]
    KTile['M', 'N', ts.f32]
    >>> from tessera._kernel import compile_only
    >>> @ts.kernel.schedule(ts.Schedule(block=(256,), warps=4))
    ... def twice(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     T = tile.context()
    ...     at = (tile.program_id(0) * T.m,)
    ...     tile.store(Y, tile.load(X, at=at, shape=(T.m,)) * 2.0, at=at)
    >>> with compile_only("sm_90a"):  # checks the launch; no GPU needed
    ...     twice[(4,)](ts.cuda.empty((1000,), ts.f32),
    ...                 ts.cuda.empty((999,), ts.f32))
    Traceback (most recent call last):
        ...
    tessera.TesseraError: argument 'Y' of kernel twice: dim 0 (N) is 999,
    but N is 1000 in argument 'X'
    """

    def __class_getitem__(cls, items):
        # The same grammar as Tensor[...] annotations of jit functions.
        t = _TensorAnnotation.__class_getitem__(items)
        if not t.shape:
            raise TypeError("KTile[...] needs at least one dim")
        return KTileType(t.shape, t.dtype, t.policy)


# --------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------

_SCALAR_ANNOTATIONS = {int: "index", float: "f32", bool: "i1"}


class _Param:
    __slots__ = ("name", "kind", "ktile", "scalar", "default")

    def __init__(self, name, kind, ktile=None, scalar=None,
                 default=inspect.Parameter.empty):
        self.name, self.kind = name, kind
        self.ktile, self.scalar, self.default = ktile, scalar, default


def _params(fn):
    sig = inspect.signature(fn)
    out = []
    for p in sig.parameters.values():
        ann = p.annotation
        if isinstance(ann, str):
            try:
                ann = eval(ann, fn.__globals__)  # noqa: S307
            except Exception as e:
                raise TypeError(f"annotation {ann!r} of {fn.__name__}'s "
                                f"{p.name}: {e}") from None
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"kernel {fn.__name__}: *args/**kwargs are not "
                            f"kernel parameters")
        if p.kind == p.KEYWORD_ONLY or ann is _tile.constexpr:
            out.append(_Param(p.name, "constexpr", default=p.default))
        elif isinstance(ann, KTileType):
            out.append(_Param(p.name, "tensor", ktile=ann))
        elif ann in _SCALAR_ANNOTATIONS or isinstance(ann, (DType,
                                                             PolicyDType)):
            t = (_SCALAR_ANNOTATIONS[ann] if ann in _SCALAR_ANNOTATIONS
                 else element_type(ann))
            out.append(_Param(p.name, "scalar", scalar=t))
        else:
            raise TypeError(
                f"kernel {fn.__name__}: parameter {p.name!r} needs an "
                f"annotation: KTile[...] (a tensor), int, float or a dtype "
                f"(a scalar), tile.constexpr, or make it keyword-only (a "
                f"compile-time constant)")
    return out


class TileKernel:
    """A tile kernel: what ``@ts.kernel`` makes of a function.

    ``kern[grid](*args, **constexprs)`` launches it: ``grid`` is 1 to 3
    non-negative integers (a tuple, or one integer), or a function of the
    schedule that gives them (``lambda T: (ts.cdiv(n, T.m),)``); the arguments
    are device tensors (``ts.device("cuda")``, or CUDA tensors of other
    frameworks through DLPack) for the ``KTile`` parameters and Python numbers
    for the scalar ones. The launch checks them, compiles the specialization on
    first use (for the device's architecture, kept in memory and in the kernel
    cache) and returns the ``CompiledKernel`` it ran. Calling ``kern(...)``
    without a grid raises ``TypeError``. A launch needs a CUDA device;
    ``kern.lower`` and ``kern.compile`` do not.

    >>> @ts.kernel.schedule(ts.Schedule(block=(256,), warps=4))
    ... def twice(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     T = tile.context()
    ...     at = (tile.program_id(0) * T.m,)
    ...     tile.store(Y, tile.load(X, at=at, shape=(T.m,)) * 2.0, at=at)
    >>> twice
    <tessera kernel twice Schedule(block=(256,), k=32, warps=4, stages=1)>
    >>> "arith.mulf" in twice.lower()
    True
    >>> if ts.cuda.is_available():  # a launch needs a CUDA device
    ...     x = ts.to_device(np.arange(1000, dtype=np.float32))
    ...     y = ts.cuda.empty((1000,), ts.f32)
    ...     _ = twice[lambda T: (ts.cdiv(1000, T.m),)](x, y)
    ...     assert np.array_equal(y.numpy(), 2 * np.arange(1000))
    """

    def __init__(self, fn, schedule=None, autotune=None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._schedule = (Schedule() if schedule is None else
                          _as_schedule(schedule, "ts.kernel(schedule=)"))
        self._autotune = autotune
        self._params = _params(fn)
        self._signature = inspect.signature(fn)
        self._traced_fn = None
        self._compiled = {}
        self._tuned = {}
        self._variants = {}
        self._plans = {}
        self._positional = sum(p.kind != "constexpr" for p in self._params)
        # Launches take the plan cache only where the positional arguments
        # are the runtime parameters in order (no constexpr among them).
        self._plannable = all(p.kind != "constexpr"
                              for p in self._params[:self._positional])

    # Schedules ----------------------------------------------------------
    @property
    def default_schedule(self) -> Schedule:
        """The schedule the kernel is compiled with unless told otherwise.

        >>> @ts.kernel
        ... def k(X: ts.KTile["N", ts.f32]):
        ...     pass
        >>> k.default_schedule
        Schedule(block=(64, 64), k=32, warps=4, stages=1)
        """
        return self._schedule

    def with_schedule(self, schedule: Schedule) -> "TileKernel":
        """The same kernel with another schedule; the original is unchanged.

        ``schedule`` is a ``ts.Schedule`` or a ``ts.block(...)`` chain of one
        schedule. Kernels made for equal schedules are shared, with their
        compilations.

        >>> @ts.kernel.schedule(ts.Schedule(block=(256,), warps=4))
        ... def twice(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
        ...     T = tile.context()
        ...     at = (tile.program_id(0) * T.m,)
        ...     tile.store(Y, tile.load(X, at=at, shape=(T.m,)) * 2.0, at=at)
        >>> small = twice.with_schedule(ts.block(128).warps(2))
        >>> small
        <tessera kernel twice Schedule(block=(128,), k=32, warps=2, stages=1)>
        >>> "tensor<128xf32>" in small.lower(), twice.default_schedule.m
        (True, 256)
        """
        schedule = _as_schedule(schedule, "with_schedule")
        variant = self._variants.get(schedule)
        if variant is None:
            variant = self._variants[schedule] = TileKernel(self.fn, schedule,
                                                            None)
            variant._traced_fn = self._traced_fn
        return variant

    # Tracing ------------------------------------------------------------
    def _body(self):
        if self._traced_fn is None:
            self._traced_fn = _kernel_ast.rewrite(self.fn, _loop)
        return self._traced_fn

    def _split(self, args, kwargs):
        """Positional runtime arguments and the constexpr values, bound as
        Python binds a call (defaults applied; keyword-only parameters by
        keyword only)."""
        if not kwargs and len(args) == len(self._params) and not any(
                p.kind == "constexpr" for p in self._params):
            return list(args), {}
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}: {e}") from None
        bound.apply_defaults()
        values, consts = [], {}
        for p in self._params:
            if p.name not in bound.arguments:
                raise TypeError(f"{self.__name__}: missing argument "
                                f"{p.name!r}")
            v = bound.arguments[p.name]
            if p.kind == "constexpr":
                consts[p.name] = v
            else:
                values.append(v)
        return values, consts

    def lower(self, *dtypes, schedule=None, **consts) -> str:
        """The Tile IR text of one specialization (no GPU or compiler needed).

        ``dtypes`` gives, in order, the element type of each tensor parameter
        whose ``KTile`` annotation has none; ``consts`` the values of the
        constexpr parameters (those without a default are required);
        ``schedule`` replaces the kernel's schedule. A missing dtype or value,
        or one too many, raises ``TypeError``; a body that cannot be traced a
        ``KernelTraceError`` (a ``TypeError``) naming its line.

        >>> @ts.kernel
        ... def scale(X: ts.KTile["N"], Y: ts.KTile["N"], *, factor):
        ...     x = tile.load(X, at=(0,), shape=(16,))
        ...     tile.store(Y, x * factor, at=(0,))
        >>> text = scale.lower(ts.bf16, ts.bf16, factor=2.0)
        >>> print(text.splitlines()[1].split(" attributes")[0].strip())
        func.func @scale(%arg0: memref<?xbf16>, %arg1: memref<?xbf16>)
        >>> scale.lower(ts.f32, factor=2.0)
        Traceback (most recent call last):
            ...
        TypeError: scale: the dtype of tensor 'Y' is open; pass it
        """
        schedule = schedule or self._schedule
        tensor_types = self._tensor_types(dtypes)
        consts = self._consts(consts)
        return self._trace(tensor_types, consts, schedule)

    def _tensor_types(self, dtypes):
        out, it = [], iter(dtypes)
        for p in self._params:
            if p.kind != "tensor":
                continue
            if p.ktile.dtype is not None:
                out.append(element_type(p.ktile.dtype))
            else:
                try:
                    out.append(element_type(next(it)))
                except StopIteration:
                    raise TypeError(f"{self.__name__}: the dtype of tensor "
                                    f"{p.name!r} is open; pass it") from None
        if next(it, None) is not None:
            raise TypeError(f"{self.__name__}: more dtypes than open tensor "
                            f"dtypes")
        return tuple(out)

    def _consts(self, given):
        consts = {}
        for p in self._params:
            if p.kind != "constexpr":
                continue
            if p.name in given:
                consts[p.name] = given[p.name]
            elif p.default is not inspect.Parameter.empty:
                consts[p.name] = p.default
            else:
                raise TypeError(f"{self.__name__}: constexpr {p.name!r} has "
                                f"no value")
        extra = set(given) - set(consts)
        if extra:
            raise TypeError(f"{self.__name__}: no constexpr parameter named "
                            f"{sorted(extra)[0]!r}")
        return consts

    def _trace(self, tensor_types, consts, schedule) -> str:
        name = self.fn.__name__
        trace = Trace(schedule)
        params_text, call_args = [], []
        with trace:
            it = iter(tensor_types)
            for i, p in enumerate(self._params):
                if p.kind == "constexpr":
                    continue
                ssa = f"%arg{i}"
                if p.kind == "tensor":
                    t = next(it)
                    dims = "x".join("?" if isinstance(d, str) else str(d)
                                    for d in p.ktile.shape)
                    mtype = f"memref<{dims}x{t}>"
                    params_text.append(f"{ssa}: {mtype}")
                    call_args.append(_tile.TileRef(ssa, len(p.ktile.shape), t,
                                                   p.name, mtype))
                else:
                    params_text.append(f"{ssa}: {p.scalar}")
                    call_args.append(_tile.Scalar(ssa, p.scalar))
            kwargs = dict(consts)
            body = self._body()
            k = 0
            for p in self._params:
                if p.kind != "constexpr":
                    kwargs[p.name] = call_args[k]
                    k += 1
            result = body(**kwargs)
            if result is not None:
                raise KernelTraceError(
                    f"kernel {name} returns a value; kernels write their "
                    f"results with tile.store")
        # pingpong=True: the warpgroups take turns to issue their wgmma
        # products in loops (named barriers), one computing while another
        # multiplies.
        # The schedule's kernel attributes: pingpong=True (the warpgroups
        # take turns to issue their wgmma products in loops), cluster=N
        # (clusters of N programs along grid dim 0), producer_registers=N
        # (what a producer warpgroup keeps of its registers),
        # programs_per_sm=N (registers within what N programs an SM leave).
        attrs = ["ttile.kernel", f"ttile.num_warps = {schedule.warps} : i32"]
        if schedule.params.get("pingpong"):
            attrs.append("ttile.pingpong")
        if schedule.cluster > 1:
            attrs.append(f"ttile.cluster = {schedule.cluster} : i32")
        if schedule.params.get("producer_registers") is not None:
            attrs.append(f"ttile.producer_registers = "
                         f"{schedule.params['producer_registers']} : i32")
        if schedule.params.get("programs_per_sm") is not None:
            attrs.append(f"ttile.programs_per_sm = "
                         f"{schedule.params['programs_per_sm']} : i32")
        header = (f"func.func @{name}({', '.join(params_text)}) attributes "
                  f"{{{', '.join(attrs)}}}")
        lines = "\n".join("    " + l.replace("\n", "\n    ")
                          for l in trace.block.lines)
        return (f"module {{\n  {header} {{\n{lines}\n    return\n  }} "
                f"{self._def_location()}\n}}\n")

    def _def_location(self) -> str:
        code = self.fn.__code__
        name = code.co_filename.replace("\\", "\\\\").replace('"', '\\"')
        return f'loc("{name}":{code.co_firstlineno}:1)'

    # Compilation --------------------------------------------------------
    def compile(self, *dtypes, chip=None, schedule=None, features=None,
                opt_level=3, **consts) -> CompiledKernel:
        """Compiles one specialization to PTX for ``chip``.

        It returns the ``CompiledKernel``, with ``.ptx``, ``.name``, ``.chip``,
        ``.num_warps`` and ``.shared_bytes``.

        ``chip`` is an architecture such as ``"sm_80"`` or ``"sm_90a"`` (by
        default the first GPU's, else ``"sm_90a"``); ``dtypes``, ``consts`` and
        ``schedule`` are as for ``lower``; ``features`` and ``opt_level`` (3)
        are passed to the code generator. No GPU is needed. The result is kept
        in memory and in the kernel cache on disk; an installation without the
        compiler takes it from the cache or raises ``TesseraError``. A kernel
        the target cannot hold (more shared memory than a block has, say)
        raises ``TesseraError`` with the compiler's message, which names the
        kernel's source line.

        >>> @ts.kernel.schedule(ts.Schedule(block=(256,), warps=4))
        ... def twice(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
        ...     T = tile.context()
        ...     at = (tile.program_id(0) * T.m,)
        ...     tile.store(Y, tile.load(X, at=at, shape=(T.m,)) * 2.0, at=at)
        >>> c = twice.compile(chip="sm_80")
        >>> c
        CompiledKernel(twice, sm_80, 4 warps, 0 B shared)
        >>> ".target sm_80" in c.ptx, ".entry twice(" in c.ptx
        (True, True)
        """
        schedule = schedule or self._schedule
        tensor_types = self._tensor_types(dtypes)
        consts = self._consts(consts)
        return self._compile(tensor_types, consts, schedule,
                             chip or _default_chip(), features, opt_level)

    def _compile(self, tensor_types, consts, schedule, chip, features=None,
                 opt_level=3):
        features = features or _features_for(chip)
        const_key = _value_key(consts)
        # The cache directory is part of the key: compile_only() fills the
        # cache in use, whatever this process compiled for another one.
        mkey = (tensor_types, const_key, schedule._key, chip, features,
                opt_level, kernel_cache.directory)
        compiled = self._compiled.get(mkey)
        if compiled is not None:
            return compiled
        text = self._trace(tensor_types, consts, schedule)
        key = KernelCache.key(text, chip, features, opt_level)
        core, missing = _compiler()
        cid = compiler_id()
        entry = kernel_cache.get(key, cid)
        if entry is None:
            if core is None:
                raise TesseraError(
                    f"kernel {self.__name__} ({chip}, {schedule}) is not in "
                    f"the kernel cache {kernel_cache.directory} and this "
                    f"installation has no compiler ({missing}); compile it "
                    f"where the compiler is and import the cache")
            out = core.compile_tile(text, chip, features, opt_level,
                                    f"kernel {self.__name__}")
            info = dict(kernels=out["kernels"], compiler=cid, chip=chip,
                        kernel=self.__name__)
            kernel_cache.put(key, out["ptx"], info)
            ptx = out["ptx"]
        else:
            ptx, info = entry
        k = info["kernels"][0]
        compiled = CompiledKernel(k["name"], ptx, text, chip, k["num_warps"],
                                  k["shared_bytes"], tensor_types, schedule,
                                  k.get("launch", ()))
        self._compiled[mkey] = compiled
        return compiled

    # Launches -----------------------------------------------------------
    def __getitem__(self, grid):
        return functools.partial(self._launch, grid)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"launch a kernel with a grid: "
                        f"{self.__name__}[grid](...)")

    def _launch(self, grid, *args, **kwargs):
        # A launch like an earlier one (device tensors of the same shapes,
        # dtypes, strides and device, scalars of the same types, the same
        # constexpr values) reuses its checks, schedule and compiled
        # kernel: the host cost of a launch is then packing and the
        # driver call.
        key = self._plan_key(args, kwargs)
        plan = self._plans.get(key) if key is not None else None
        if plan is not None:
            compiled, schedule, runtime_params, device = plan
            # (Scalars stand in their own places of `tensors`: _run reads
            # a tensor parameter's tensor and a scalar parameter's value.)
            _run(compiled, grid, schedule, runtime_params, args, args,
                 device)
            return compiled
        compiled, plan = self._launch_checked(grid, args, kwargs)
        if key is not None and plan is not None:
            if len(self._plans) >= 256:  # (scalars of a tuned kernel vary)
                self._plans.clear()
            self._plans[key] = plan
        return compiled

    def _plan_key(self, args, kwargs):
        """The launch's key for the plan cache, or None when the launch
        takes the checked path (arguments other than device tensors and
        numbers, runtime values by keyword, compiling only)."""
        if (not self._plannable or len(args) != self._positional
                or _compile_only.chip is not None):
            return None
        sig = []
        device_tensor = _device_tensor_type()
        tuned = self._autotune is not None
        for v in args:
            t = type(v)
            if t is device_tensor:
                sig.append((v._shape, v._dtype, v._strides, v._device))
            elif t is float or t is int or t is bool:
                # The autotuner keys its choice by scalar values too (by
                # repr, which tells -0.0 from 0.0 and matches nan).
                sig.append((t, repr(v)) if tuned else t)
            else:
                return None
        consts = []
        for k, v in kwargs.items():
            t = type(v)
            if t not in (bool, int, float, str) or k not in self._constexprs:
                return None
            consts.append((k, t, repr(v)))
        return (tuple(sig), tuple(sorted(consts)), kernel_cache.directory)

    @functools.cached_property
    def _constexprs(self):
        return frozenset(p.name for p in self._params
                         if p.kind == "constexpr")

    def _launch_checked(self, grid, args, kwargs):
        from . import cuda
        values, consts = self._split(args, kwargs)
        runtime_params = [p for p in self._params if p.kind != "constexpr"]
        tensors, device = cuda._kernel_arguments(self.__name__,
                                                 runtime_params, values)
        tensor_types = tuple(element_type(t.dtype) for t in tensors
                             if t is not None)
        if _compile_only.chip is not None:
            # Ahead of time: compile what this launch would run.
            if self._autotune is not None:
                for config in self._autotune.configs():
                    try:
                        self._compile(tensor_types, consts,
                                      _schedule_from(self._schedule, config),
                                      _compile_only.chip)
                    except (TesseraError, KernelTraceError, ValueError):
                        pass  # the tuner skips it too
                return None, None
            return self._compile(tensor_types, consts, self._schedule,
                                 _compile_only.chip), None
        chip = _chip_of(device)
        schedule = self._schedule
        if self._autotune is not None:
            schedule = self._autotune.choose(self, grid, runtime_params,
                                             values, tensors, tensor_types,
                                             consts, device, chip)
        compiled = self._compile(tensor_types, consts, schedule, chip)
        _run(compiled, grid, schedule, runtime_params, values, tensors,
             device)
        return compiled, (compiled, schedule, runtime_params, device)

    def __repr__(self):
        return f"<tessera kernel {self.__name__} {self._schedule}>"


class _CompileOnly(threading.local):
    chip = None


_compile_only = _CompileOnly()


@contextlib.contextmanager
def compile_only(chip: str):
    """A context in which kernel launches compile and run nothing.

    Within it, ``kern[grid](...)`` checks its arguments and compiles what the
    launch would run for ``chip`` (every configuration of an autotuned kernel)
    into the kernel cache, and ``ts.cuda.empty`` and ``ts.cuda.zeros`` give
    tensors without memory (shape and dtype only). Code that launches kernels
    (``tessera.stdlib`` ops too) can so fill the kernel cache for a machine
    without the compiler, on one without a GPU. It applies to the current
    thread.

    >>> from tessera._kernel import compile_only
    >>> @ts.kernel.schedule(ts.Schedule(block=(256,), warps=4))
    ... def twice(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     T = tile.context()
    ...     at = (tile.program_id(0) * T.m,)
    ...     tile.store(Y, tile.load(X, at=at, shape=(T.m,)) * 2.0, at=at)
    >>> with compile_only("sm_80"):
    ...     x = ts.cuda.empty((1000,), ts.f32)
    ...     y = ts.cuda.empty((1000,), ts.f32)
    ...     twice[lambda T: (ts.cdiv(1000, T.m),)](x, y)
    CompiledKernel(twice, sm_80, 4 warps, 0 B shared)
    """
    previous = _compile_only.chip
    _compile_only.chip = chip
    try:
        yield
    finally:
        _compile_only.chip = previous


_DEVICE_TENSOR = []


def _device_tensor_type():
    if not _DEVICE_TENSOR:
        from .cuda import DeviceTensor
        _DEVICE_TENSOR.append(DeviceTensor)
    return _DEVICE_TENSOR[0]


def _value_key(consts: dict):
    """A key of constexpr values that tells apart values Python calls
    equal (0.0 and -0.0, 1 and True and 1.0): each by type and repr."""
    return tuple((k, type(v).__qualname__, repr(v))
                 for k, v in sorted(consts.items()))


def _grid_of(grid, schedule):
    if type(grid) is tuple and len(grid) == 3 and all(
            type(g) is int and 0 <= g < 65536 for g in grid):
        return grid
    if callable(grid):
        grid = grid(schedule)
    if isinstance(grid, int):
        grid = (grid,)
    grid = tuple(grid)
    if not 1 <= len(grid) <= 3 or not all(
            isinstance(g, int) and not isinstance(g, bool) and g >= 0
            for g in grid):
        raise TesseraError(f"a grid is 1 to 3 non-negative integers, got "
                           f"{grid!r}")
    if any(g >= 2**31 for g in grid) or (len(grid) > 1 and
                                         any(g > 65535 for g in grid[1:])):
        raise TesseraError(f"grid {grid} exceeds the card's limits (x < 2^31, "
                           f"y and z <= 65535)")
    return grid + (1,) * (3 - len(grid))


_SCALAR_FORMATS = {"index": "q", "i64": "q", "i32": "i", "i16": "h",
                   "i8": "b", "i1": "b", "f32": "f", "f64": "d"}
_PAD = {"Q": "", "q": "", "d": "", "i": "4x", "f": "4x", "h": "6x",
        "b": "7x"}


@functools.lru_cache(maxsize=None)
def _pack_plan(signature):
    """(struct, offsets) of a parameter list given as ("tensor", rank) and
    ("scalar", type) entries: each memref as (pointer, pointer, offset,
    sizes, strides), scalars as themselves, every field 8-byte aligned."""
    fmt, offsets, at = "<", [], 0
    for kind, what in signature:
        fields = ("QQq" + "q" * (2 * what) if kind == "tensor"
                  else _SCALAR_FORMATS[what])
        for f in fields:
            offsets.append(at)
            fmt += f + _PAD[f]
            at += 8
    return struct.Struct(fmt), offsets


@functools.lru_cache(maxsize=4096)
def _row_major(shape):
    strides, s = [], 1
    for d in reversed(shape):
        strides.append(s)
        s *= d
    return tuple(reversed(strides))


def _pack(params, values, tensors):
    """The kernel's parameters, packed as cuLaunchKernel reads them."""
    signature, flat = [], []
    for p, v, t in zip(params, values, tensors):
        if p.kind == "tensor":
            signature.append(("tensor", len(t.shape)))
            flat += (t.pointer, t.pointer, 0, *t.shape, *_row_major(t.shape))
            continue
        kind = _SCALAR_FORMATS.get(p.scalar)
        if kind is None:
            raise TesseraError(f"argument {p.name!r}: {p.scalar} scalars are "
                               f"not kernel arguments; use f32")
        if kind in "qihb":
            if isinstance(v, np.integer):
                v = int(v)
            if not isinstance(v, int) or (isinstance(v, bool) and
                                          p.scalar != "i1"):
                raise TesseraError(f"argument {p.name!r} is an integer, got "
                                   f"{v!r}")
        elif isinstance(v, (int, float, np.integer, np.floating)) and \
                not isinstance(v, bool):
            v = float(v)
        else:
            raise TesseraError(f"argument {p.name!r} is a number, got {v!r}")
        signature.append(("scalar", p.scalar))
        flat.append(v)
    packer, offsets = _pack_plan(tuple(signature))
    try:
        return packer.pack(*flat), offsets
    except (struct.error, OverflowError) as e:
        raise TesseraError(f"kernel arguments do not fit their types "
                           f"({', '.join(str(t) for _, t in signature)}): "
                           f"{e}") from None


def _run(compiled, grid, schedule, params, values, tensors, device):
    g = _grid_of(grid, schedule)
    if 0 in g:
        return
    fn = compiled.function(device)
    packed, offsets = _pack(params, values, tensors)
    block = (32 * compiled.num_warps, 1, 1)
    fn.launch(g, block, 0, packed, offsets)


@functools.lru_cache(maxsize=None)
def _chip_of(device: int) -> str:
    from . import _cuda
    major, minor = _cuda.device_info(device)["capability"]
    return f"sm_{major}{minor}" + ("a" if major == 9 else "")


def _default_chip():
    try:
        from . import _cuda
        if _cuda.available():
            return _chip_of(0)
    except ImportError:
        pass
    return "sm_90a"


def _features_for(chip: str) -> str:
    """PTX ISA 8.0: wgmma and TMA for sm_90a, and every older chip."""
    return "+ptx80"


# --------------------------------------------------------------------------
# The decorator
# --------------------------------------------------------------------------

# Autotuning (tessera._autotune) runs launches of this module.
from ._autotune import Autotuner, _schedule_from  # noqa: E402


class _KernelDecorator:
    """Makes a GPU kernel of a function written with ``tessera.tile``.

    Written ``@ts.kernel`` above the function. Each parameter is annotated:
    ``KTile[...]`` for a tensor, ``int`` (index), ``float`` (f32), ``bool`` or
    a dtype for a scalar, and ``tile.constexpr`` (or the parameter is
    keyword-only) for a value fixed at compile time; another annotation raises
    ``TypeError``. The body runs once per specialization, at trace time, adding
    Tile IR ops; it writes its results with ``tile.store`` and returns nothing.
    The forms:

    - ``@ts.kernel`` (or ``ts.kernel(fn)``): the default schedule,
      ``ts.Schedule()``; ``@ts.kernel(schedule=s)`` with schedule ``s``.
    - ``@ts.kernel.schedule(s)``: with schedule ``s`` (a ``ts.Schedule`` or a
      ``ts.block(...)`` chain).
    - ``@ts.kernel.autotune(space=...)``: the fastest schedule of a search
      space, chosen on the device at the first launch of each shape.
    - ``@ts.kernel.auto``: ``autotune`` over a default space.

    The result is a kernel object: ``kern[grid](*args)`` launches it on a CUDA
    device, ``kern.lower(...)`` gives its Tile IR and ``kern.compile(...)`` its
    PTX (neither needs a GPU), and ``kern.with_schedule(s)`` is the kernel with
    another schedule.

    >>> @ts.kernel.schedule(ts.Schedule(block=(256,), warps=4))
    ... def twice(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
    ...     T = tile.context()
    ...     at = (tile.program_id(0) * T.m,)
    ...     tile.store(Y, tile.load(X, at=at, shape=(T.m,)) * 2.0, at=at)
    >>> twice
    <tessera kernel twice Schedule(block=(256,), k=32, warps=4, stages=1)>
    >>> for line in twice.lower().splitlines():
    ...     if "arith.mulf" in line:
    ...         print(line.split(" loc(")[0].strip())
    %v6 = arith.mulf %v4, %v5 : tensor<256xf32>
    >>> if ts.cuda.is_available():  # a launch needs a CUDA device
    ...     x = ts.to_device(np.arange(1000, dtype=np.float32))
    ...     y = ts.cuda.empty((1000,), ts.f32)
    ...     _ = twice[lambda T: (ts.cdiv(1000, T.m),)](x, y)
    ...     assert np.array_equal(y.numpy(), 2 * np.arange(1000))
    """

    def __call__(self, fn=None, *, schedule=None):
        if fn is None:
            return lambda f: self(f, schedule=schedule)
        if isinstance(fn, TileKernel):
            return fn if schedule is None else fn.with_schedule(schedule)
        return TileKernel(fn, schedule)

    def schedule(self, schedule: Schedule):
        """A decorator that gives a kernel a schedule.

        Written ``@ts.kernel.schedule(s)``; ``schedule`` is a ``ts.Schedule``
        or a ``ts.block(...)`` chain of one schedule. Applied to a kernel, it
        gives a kernel of the same function with the new schedule (an autotuned
        kernel stays autotuned, from that base). Anything but a schedule raises
        ``TypeError``.

        >>> @ts.kernel.schedule(ts.block(32, 64).warps(2))
        ... def k(X: ts.KTile["M", "N", ts.f32]):
        ...     print(tile.context())
        >>> text = k.lower()
        Schedule(block=(32, 64), k=32, warps=2, stages=1)
        """
        schedule = _as_schedule(schedule, "kernel.schedule")

        def wrap(fn):
            if isinstance(fn, TileKernel):
                return TileKernel(fn.fn, schedule, fn._autotune)
            return TileKernel(fn, schedule)
        return wrap

    def autotune(self, space, metric="latency_ms", budget_ms=200.0,
                 cache=None):
        """A decorator that autotunes a kernel over a space of schedules.

        Written ``@ts.kernel.autotune(space=...)``. ``space`` is a dict of
        lists such as ``dict(BM=[64, 128], warps=[4, 8])`` (every combination
        is a configuration), a list of configurations (dicts), or a
        ``ts.block(...)`` chain with lists. Keys: ``BM``, ``BN``, ``BK`` (block
        sizes and reduction step), ``warps``, ``stages``, ``vector``,
        ``swizzle``, and any other name a schedule parameter. A configuration
        changes those fields of the kernel's schedule (the default, or the one
        of a kernel given to it). At the first launch of each (shapes, dtypes,
        constexprs, card) every configuration is compiled and those that
        compile are timed on the launch's own arguments within about
        ``budget_ms`` milliseconds; the fastest is kept in memory and, with
        ``cache`` (a JSON file path), on disk. ``metric`` is ``"latency_ms"``,
        the only one. Since tuning runs the kernel several times, kernels that
        accumulate into their outputs should not be autotuned. Under
        ``compile_only`` a launch compiles every configuration.

        >>> @ts.kernel.schedule(ts.Schedule(block=(256,), warps=4))
        ... def twice(X: ts.KTile["N", ts.f32], Y: ts.KTile["N", ts.f32]):
        ...     T = tile.context()
        ...     at = (tile.program_id(0) * T.m,)
        ...     tile.store(Y, tile.load(X, at=at, shape=(T.m,)) * 2.0, at=at)
        >>> space = ts.block(m=[128, 256]).warps([4, 8])
        >>> tuned = ts.kernel.autotune(space=space, budget_ms=50)(twice)
        >>> tuned
        <tessera kernel twice Schedule(block=(256,), k=32, warps=4, stages=1)>
        >>> if ts.cuda.is_available():  # tuning times the kernel on the GPU
        ...     x = ts.to_device(np.arange(1000, dtype=np.float32))
        ...     y = ts.cuda.empty((1000,), ts.f32)
        ...     _ = tuned[lambda T: (ts.cdiv(1000, T.m),)](x, y)
        ...     assert np.array_equal(y.numpy(), 2 * np.arange(1000))
        """
        if isinstance(space, ScheduleBuilder):
            space = space.space()
        tuner = Autotuner(space, metric, budget_ms, cache)

        def wrap(fn):
            if isinstance(fn, TileKernel):
                return TileKernel(fn.fn, fn._schedule, tuner)
            return TileKernel(fn, None, tuner)
        return wrap

    def auto(self, fn):
        """A decorator that autotunes a kernel over a default space.

        ``@ts.kernel.auto`` tries blocks of 64 or 128 by 64 or 128, 4 or 8
        warps and 2 or 3 stages (16 configurations).

        >>> @ts.kernel.auto
        ... def copy(X: ts.KTile["M", "N", ts.f32], Y: ts.KTile["M", "N"]):
        ...     T = tile.context()
        ...     at = (tile.program_id(0) * T.m, tile.program_id(1) * T.n)
        ...     tile.store(Y, tile.load(X, at=at, shape=(T.m, T.n)), at=at)
        >>> copy
        <tessera kernel copy Schedule(block=(64, 64), k=32, warps=4, stages=1)>
        """
        return self.autotune(space=dict(BM=[64, 128], BN=[64, 128],
                                        warps=[4, 8], stages=[2, 3]))(fn)


kernel = _KernelDecorator()
