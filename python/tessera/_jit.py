"""``ts.jit``: trace once per signature, then compile through the CPU
pipeline and call the compiled code with NumPy arrays, or, with
``device="cuda"``, compile through the C++ GPU pipeline and run the GPU
program (``tessera.GpuProgram``) on device tensors."""

from __future__ import annotations

import functools
import inspect
import os
import tempfile
import re

import numpy as np

from . import _core
from . import tree as _tree
from ._dtypes import as_dtype
from ._tracing import (Context, TesseraError, Tracer, current_context,
                       is_weak, tensor_of, weak_default)
from ._types import TensorType
from ._gpu_program import GpuProgram
from .random import Key
from .state import KVCache

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.$-]")


def _arg_name(text: str) -> str:
    name = _NAME_CHARS.sub("_", text) or "arg"
    return name if not name[0].isdigit() else "a" + name


def _is_array(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic)) or (
        not isinstance(x, (bool, int, float, complex, str, bytes, type(None)))
        and (hasattr(x, "__array__") or hasattr(x, "__dlpack__")))


def _leaf_paths(tree, prefix):
    """Readable names of the leaves of ``tree`` ("params.w1", "xs.0")."""
    out = []

    def walk(x, path):
        if x is None:
            return
        if type(x) in (list, tuple) or (isinstance(x, tuple)
                                        and hasattr(x, "_fields")):
            for i, v in enumerate(x):
                walk(v, f"{path}.{i}")
        elif type(x) is dict:
            for k in sorted(x):
                walk(x[k], f"{path}.{k}")
        elif hasattr(x, "__dataclass_fields__") and not isinstance(x, type):
            for k in x.__dataclass_fields__:
                walk(getattr(x, k), f"{path}.{k}")
        else:
            out.append(path)

    walk(tree, prefix)
    return out


class _Entry:
    __slots__ = ("fn", "out_tree", "post", "module", "name", "params")


def _annotations(fun):
    """Positional parameter index -> TensorType, from ``fun``'s annotations."""
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        return {}, []
    names = list(sig.parameters)
    found = {}
    for i, p in enumerate(sig.parameters.values()):
        a = p.annotation
        if isinstance(a, str):
            try:
                a = eval(a, getattr(fun, "__globals__", {}))  # noqa: S307
            except Exception:  # a string annotation that is not ours
                continue
        if isinstance(a, TensorType):
            found[i] = a
    return found, names


def _numpy_leaf(x):
    """An array argument as NumPy, without a copy where the layout allows
    (DLPack from PyTorch or JAX on the CPU, or __array__)."""
    if not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__"):
        try:
            x = np.from_dlpack(x)
        except (TypeError, RuntimeError, BufferError):
            pass  # a layout DLPack cannot share: __array__ copies below
    a = np.asarray(x)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a


class Lowered:
    """The IR of one signature of a jit function at each level of the
    pipeline (``ts.jit(f).lower(*args)``).

    >>> lowered = ts.jit(lambda x: op.tanh(x) * 2.0).lower(np.ones(3))
    >>> "tgraph.tanh" in lowered.graph
    True
    """

    def __init__(self, module, name):
        self._module = module
        self.name = name

    def as_text(self, stage="graph") -> str:
        """The IR at ``stage``: ``"graph"`` (as traced), ``"graph_optimized"``
        (after autodiff, inlining, decomposition and folding),
        ``"linalg"``, ``"scheduled"`` or ``"llvm"`` on the CPU path;
        ``"gpu_groups"``: the GPU path's fusion groups (``tsched.group``
        ops, one a kernel); ``"gpu_kernels"``: with the Tile IR kernel
        generated for each row and contraction group; ``"gpu_host"``: with
        each function turned into its host program (kernel launches on
        buffers of one planned workspace); ``"gpu_binary"``: the whole GPU
        pipeline, the kernels compiled to PTX for sm_90a in the device
        module ``@kernels``.

        >>> lowered = ts.jit(lambda x: op.tanh(x) * 2.0).lower(np.ones(3))
        >>> "linalg.generic" in lowered.as_text("linalg")
        True
        """
        return self._module.lower(stage)

    @property
    def graph(self) -> str:
        return self.as_text("graph")

    def compile_gpu(self, chip="sm_90a", multiprocessors=132,
                    cache_dir="", variant=-1, tuning="",
                    autotune_device=-1) -> bytes:
        """This signature compiled by the C++ GPU pipeline for ``chip``
        (``"sm_90a"``, or ``"sm_80"`` PTX for any chip of compute
        capability 8.0 or newer) and a card of ``multiprocessors`` SMs: a
        GPU program file's bytes, which ``tessera.GpuProgram`` runs on a
        machine with only the runtime. Needs no GPU.

        Autotuning: ``variant=N`` builds each generated product with
        candidate N of its autotune space (0 to 3), the programs
        ``tessera-run FILE --tune T`` (or the runtime's ``tunePrograms``)
        times on a GPU; ``tuning=T`` compiles with the tuned schedules
        such a run keeps in the file ``T``; with ``autotune_device=K`` as
        well (a CUDA device here), the products missing from ``T`` are
        first timed on that device and added to it.

        >>> lowered = ts.jit(lambda x: op.tanh(x) * 2.0).lower(
        ...     np.ones((4, 8), np.float32))
        >>> lowered.compile_gpu("sm_80")[:8]
        b'TSGPUPRG'
        """
        return self._module.compile_gpu(self.name, chip, multiprocessors,
                                        cache_dir, variant, tuning,
                                        autotune_device)

    def __str__(self):
        return self.graph


class jit:
    """``fun`` compiled, once per signature of its arguments (a decorator,
    also as ``@ts.jit(device="cuda")``).

    Array arguments (NumPy, NumPy scalars, or anything with ``__array__``
    or ``__dlpack__``) are traced; Python numbers and other leaves are
    static (part of the signature). Arguments may be pytrees. Parameters
    annotated ``ts.Tensor["B", 784, ts.f32]`` have symbolic dims: one
    compilation serves every size of ``B``, 0 included; a number or list
    passed for such a parameter becomes an array of its dtype. Compiled
    code is also kept in the disk cache (``cache_dir``; ``""`` disables
    it) across processes. ``device="cuda"`` compiles for the GPU (concrete
    shapes) and takes and returns device tensors; with ``autotune=True``
    the schedules of its generated matrix products are timed on the device
    at the first compile of each signature and the fastest kept (in
    ``<cache_dir>/gpu/tuning.txt``, so later processes tune nothing).

    >>> @ts.jit
    ... def affine(x: ts.Tensor["B", 2, ts.f32], w, b):
    ...     return x @ w + b
    >>> w = np.eye(2, dtype=np.float32)
    >>> affine(np.ones((3, 2), np.float32), w, np.float32(0.5))
    array([[1.5, 1.5],
           [1.5, 1.5],
           [1.5, 1.5]], dtype=float32)
    >>> affine(np.ones((5, 2), np.float32), w, np.float32(0.5)).shape
    (5, 2)
    """

    def __new__(cls, fun=None, **kwargs):
        if fun is None:  # @ts.jit(device="cuda")
            return lambda f: cls(f, **kwargs)
        return super().__new__(cls)

    def __init__(self, fun, *, cache_dir=None, name=None, device=None,
                 autotune=False):
        functools.update_wrapper(self, fun)
        self._device = None
        self._autotune = bool(autotune)
        if device is not None and str(device) != "cpu":
            if not str(device).startswith("cuda"):
                raise TesseraError(f"jit(device=...): 'cpu' or 'cuda[:N]', "
                                   f"got {device!r}")
            self._device = str(device)  # resolved at the first launch
        if self._autotune and self._device is None:
            raise TesseraError("jit(autotune=True) tunes GPU schedules: it "
                               "needs device='cuda'")
        self.fun = fun
        self._name = _arg_name(name or getattr(fun, "__name__", "fn"))
        self._cache = {}
        self._annotated, self._params = _annotations(fun)
        self._cache_dir = (_core.Module.default_cache_dir()
                           if cache_dir is None else cache_dir)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    # -- the hot path ---------------------------------------------------------

    def __call__(self, *args, **kwargs):
        if current_context() is not None:
            return self.fun(*args, **kwargs)  # inside another trace: inline
        if kwargs:
            args = self._positional(args, kwargs)
        if self._annotated:
            args = self._coerce(args)
        if self._device is not None:
            return self._call_gpu(args)
        key, arrays = self._key(args)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._compile(args)
            self._cache[key] = entry
        if entry.params:
            arrays = arrays + [p.value for p in entry.params]
        outs = entry.fn(arrays)
        if entry.post:
            outs = [p(o) if p else o for p, o in zip(entry.post, outs)]
        return _tree.unflatten(entry.out_tree, outs)

    def _positional(self, args, kwargs):
        """Keyword arguments bound to their positions (defaults filled)."""
        try:
            bound = inspect.signature(self.fun).bind(*args, **kwargs)
        except (TypeError, ValueError) as e:
            raise TesseraError(f"{self._name}: {e}") from None
        explicit = sorted(set(bound.kwargs) & set(kwargs))
        if explicit:
            raise TesseraError(f"{self._name}: keyword-only and **kwargs "
                               f"parameters are not supported by jit; got "
                               f"{explicit}")
        bound.apply_defaults()
        return bound.args

    def _coerce(self, args):
        """Python numbers and (nested) lists of them passed for a parameter
        annotated Tensor[...] become arrays of the annotated dtype (without
        one: bool, i64 or f32 by kind, as weak numbers default)."""
        out = None
        for i, ann in self._annotated.items():
            if i >= len(args) or type(args[i]) is np.ndarray or \
                    not is_weak(args[i]):
                continue
            out = out or list(args)
            dt = (ann.dtype.numpy if ann.dtype is not None
                  else weak_default(args[i]))
            try:
                out[i] = np.asarray(args[i], dtype=dt)
            except (OverflowError, ValueError) as e:
                name = self._params[i] if i < len(self._params) else f"arg{i}"
                raise TesseraError(f"argument '{name}' is annotated {ann!r} "
                                   f"but {args[i]!r} does not fit: {e}") from None
        return args if out is None else tuple(out)

    def _key(self, args):
        key = []
        arrays = []
        annotated = self._annotated
        for i, a in enumerate(args):
            if type(a) is np.ndarray and i not in annotated:
                if not a.flags.c_contiguous:
                    a = np.ascontiguousarray(a)
                arrays.append(a.view(a.dtype.newbyteorder("=")) if
                              a.dtype.byteorder == ">" else a)
                key.append((a.dtype, a.shape))
                continue
            leaves, td = _tree.flatten(a)
            key.append(td)
            ann = annotated.get(i)
            for leaf in leaves:
                if type(leaf) is Key:
                    arrays.append(leaf.data)
                    key.append("key")
                elif type(leaf) is KVCache:
                    arrays.extend(leaf.buffers())
                    key.append(("kv_cache", leaf.shape, leaf.dtype.name))
                elif _is_array(leaf):
                    x = _numpy_leaf(leaf)
                    shape = x.shape
                    if ann is not None and leaf is a:
                        shape = self._symbolic_shape(i, ann, x)
                    arrays.append(x)
                    key.append((x.dtype, shape))
                else:
                    key.append(("static", type(leaf), leaf))
        try:
            return tuple(key), self._bits(arrays)
        except TypeError:
            raise TesseraError("static (non-array) arguments of a jit "
                               "function must be hashable") from None

    @staticmethod
    def _bits(arrays):
        for i, a in enumerate(arrays):
            if a.dtype.kind == "V" or a.dtype.name in (
                    "bfloat16", "float8_e4m3fn", "float8_e5m2", "int4"):
                arrays[i] = a.view(np.uint16 if a.itemsize == 2 else np.uint8)
        return arrays

    def _symbolic_shape(self, i, ann, x):
        name = self._params[i] if i < len(self._params) else f"arg{i}"
        if len(ann.shape) != x.ndim:
            raise TesseraError(
                f"argument '{name}' is annotated {ann!r} (rank "
                f"{len(ann.shape)}) but got an array of shape {x.shape}")
        if ann.dtype is not None and as_dtype(x.dtype) != ann.dtype:
            raise TesseraError(
                f"argument '{name}' is annotated {ann!r} but got an array "
                f"of dtype {as_dtype(x.dtype).name}")
        for d, (want, got) in enumerate(zip(ann.shape, x.shape)):
            if isinstance(want, int) and want != got:
                raise TesseraError(
                    f"argument '{name}' dim {d} must be {want} ({ann!r}), "
                    f"got {got} (shape {x.shape})")
        return tuple(w if isinstance(w, str) else g
                     for w, g in zip(ann.shape, x.shape))

    # -- compilation ----------------------------------------------------------

    # -- the GPU ----------------------------------------------------------

    def _call_gpu(self, args):
        key, arrays = self._gpu_key(args)
        try:
            entry = self._cache.get(key)
        except TypeError:
            raise TesseraError("static (non-array) arguments of a jit "
                               "function must be hashable") from None
        if entry is None:
            entry = self._compile_gpu(self._gpu_specs(args, arrays))
            self._cache[key] = entry
        if entry.params:
            arrays = arrays + [p.value for p in entry.params]
        return _tree.unflatten(entry.out_tree, entry.fn(*arrays))

    def _gpu_key(self, args):
        """(key, array leaves): the key holds each argument's structure and
        each leaf's dtype name and shape (static leaves as themselves);
        arrays of other libraries become NumPy arrays or, on a CUDA device,
        device tensors (through DLPack). The hot path of every call."""
        from . import cuda as _cuda
        device_tensor = _cuda.DeviceTensor
        key, arrays = [], []
        for a in args:
            leaves, td = _tree.flatten(a)
            key.append(td)
            for leaf in leaves:
                t = type(leaf)
                if t is not np.ndarray and t is not device_tensor:
                    if t is Key or t is KVCache:
                        raise TesseraError(
                            f"{self._name}: random keys and KV caches are "
                            f"not supported by jit(device='cuda') yet")
                    if not _is_array(leaf):
                        key.append(("static", t, leaf))
                        continue
                    dev = getattr(leaf, "__dlpack_device__", None)
                    leaf = (_cuda.from_dlpack(leaf) if dev is not None
                            and dev()[0] == 2 else np.asarray(leaf))
                key.append((as_dtype(leaf.dtype).name, tuple(leaf.shape)))
                arrays.append(leaf)
        return tuple(key), arrays

    def _gpu_specs(self, args, arrays):
        """``args`` with each array leaf replaced by an uninitialized NumPy
        stand-in of its shape and dtype (never paged in: tracing reads only
        the shape and dtype), in the order of ``arrays``."""
        it = iter(arrays)
        specs = []
        for a in args:
            leaves, td = _tree.flatten(a)
            stand = []
            for leaf in leaves:
                if type(leaf) is np.ndarray or _is_array(leaf):
                    x = next(it)
                    stand.append(np.empty(tuple(x.shape),
                                          as_dtype(x.dtype).numpy))
                else:
                    stand.append(leaf)
            specs.append(_tree.unflatten(td, stand))
        return specs

    def _compile_gpu(self, args):
        """Traces ``args`` and compiles the function through the C++ GPU
        pipeline (``--tessera-gpu-pipeline``) for the jit's device, loaded
        there as a ``tessera.GpuProgram``."""
        ctx, fn, out_tree = self._trace(args, concrete=True)
        entry = _Entry()
        entry.fn = _compile_for_device(
            ctx.module, fn.name, self._device,
            os.path.join(self._cache_dir, "gpu") if self._cache_dir else "",
            self._autotune)
        entry.out_tree = out_tree
        entry.module = ctx.module
        entry.name = fn.name
        entry.params = list(ctx.param_order)
        entry.post = None
        return entry

    def gpu_program(self, *args, **kwargs):
        """The compiled GPU program (a ``tessera.GpuProgram``, loaded on
        the jit's device) this ``device="cuda"`` function runs for
        ``args``: its ``program_bytes`` are a GPU program file that a
        machine with only the runtime loads. To compile without a GPU,
        use ``lower(*args).compile_gpu(chip)``.

        >>> if ts.cuda.is_available():  # needs a CUDA device
        ...     f = ts.jit(lambda x: op.softmax(x) * 2.0, device="cuda")
        ...     prog = f.gpu_program(np.ones((4, 8), np.float32))
        ...     assert prog.launches >= 1
        """
        if self._device is None:
            raise TesseraError(f"{self._name} is compiled for the CPU; use "
                               f"ts.jit(..., device='cuda')")
        if kwargs:
            args = self._positional(args, kwargs)
        _, arrays = self._gpu_key(args)
        return self._compile_gpu(self._gpu_specs(args, arrays)).fn

    def _trace(self, args, public=True, concrete=False):
        """Traces into a new Context; returns (ctx, Function, out_tree)."""
        ctx = Context()
        specs, leaves_of = [], []
        for i, a in enumerate(args):
            leaves, td = _tree.flatten(a)
            pname = self._params[i] if i < len(self._params) else f"arg{i}"
            paths = _leaf_paths(a, pname)
            ann = None if concrete else self._annotated.get(i)
            for leaf, path in zip(leaves, paths):
                if type(leaf) is Key:
                    specs.append(_core.TensorSpec([2], "i32", _arg_name(path),
                                                  is_key=True))
                elif type(leaf) is KVCache:
                    specs.append(_core.TensorSpec(
                        list(leaf.shape), leaf.dtype.name, _arg_name(path),
                        is_kv_cache=True))
                elif _is_array(leaf):
                    x = _numpy_leaf(leaf)
                    shape = (self._symbolic_shape(i, ann, x)
                             if ann is not None and leaf is a else x.shape)
                    dt = as_dtype(x.dtype)
                    specs.append(_core.TensorSpec(list(shape), dt.name,
                                                  _arg_name(path)))
            leaves_of.append((leaves, td))
        module = ctx.module
        with ctx:
            core_args = iter(module.begin_trace(self._name, specs, public))
            traced = []
            for i, (leaves, td) in enumerate(leaves_of):
                ann = self._annotated.get(i)
                policy = ann.policy if ann is not None else None
                new = [Tracer(next(core_args), ctx, policy)
                       if type(leaf) in (Key, KVCache) or _is_array(leaf)
                       else leaf for leaf in leaves]
                traced.append(_tree.unflatten(td, new))
            try:
                out = self.fun(*traced)
                out_leaves, out_tree = _tree.flatten(out)
                tensors = [tensor_of(o, ctx=ctx) for o in out_leaves]
            except BaseException:
                module.abort_trace()
                raise
            fn = module.end_trace(tensors)
        return ctx, fn, out_tree

    def _compile(self, args):
        ctx, fn, out_tree = self._trace(args)
        exe = ctx.module.compile(self._cache_dir)
        entry = _Entry()
        entry.fn = exe.function(fn.name)
        entry.out_tree = out_tree
        entry.module = ctx.module
        entry.name = fn.name
        entry.params = list(ctx.param_order)
        post = []
        for dt, is_key in zip(entry.fn.result_dtypes,
                              entry.fn.result_is_key):
            d = as_dtype(dt)
            if is_key:
                post.append(Key)
            else:
                post.append((lambda o, n=d.numpy: o.view(n)) if d.bits_dtype
                            is not None else None)
        entry.post = post if any(post) else None
        return entry

    def lower(self, *args, **kwargs) -> Lowered:
        """The IR this function compiles to for ``args``, at every level of
        the pipeline (a ``Lowered``); compiles nothing.

        >>> lowered = ts.jit(lambda a, b: a @ b).lower(np.ones((2, 3)),
        ...                                            np.ones((3, 4)))
        >>> "tgraph.matmul" in lowered.as_text("graph")
        True
        """
        if kwargs:
            args = self._positional(args, kwargs)
        ctx, fn, _ = self._trace(args)
        return Lowered(ctx.module, fn.name)

    def clear_cache(self):
        """Forgets the signatures compiled in this process (the disk cache
        stays): the next call traces again.

        >>> f = ts.jit(lambda x: x + 1.0)
        >>> f(np.zeros(1))
        array([1.])
        >>> f.clear_cache()
        >>> f(np.zeros(1))
        array([1.])
        """
        self._cache.clear()


def _compile_for_device(module, name, device, cache_dir="", autotune=False):
    """``name`` of ``module`` compiled by the C++ GPU pipeline for the CUDA
    device ``device`` (PTX for ``sm_90a`` on compute capability 9.0,
    ``sm_80`` on other chips of 8.0 or newer) and loaded there; with
    ``autotune``, its products' schedules tuned there first (kept in
    ``cache_dir``'s tuning.txt, else a file of this process)."""
    from . import _cuda
    from . import cuda
    index = cuda.device(device).index
    info = _cuda.device_info(index)
    chip = _cuda.chip_for_device(*info["capability"])
    if chip is None:
        raise TesseraError(
            f"{info['description']}: the GPU pipeline needs compute "
            f"capability 8.0 or newer")
    tuning = ""
    if autotune:
        folder = cache_dir or tempfile.gettempdir()
        os.makedirs(folder, exist_ok=True)
        tuning = os.path.join(folder, "tuning.txt" if cache_dir else
                              f"tessera-tuning-{os.getpid()}.txt")
    data = module.compile_gpu(name, chip, info["multiprocessors"], cache_dir,
                              tuning=tuning,
                              autotune_device=index if autotune else -1)
    return GpuProgram(data, device, f"@{name}")
