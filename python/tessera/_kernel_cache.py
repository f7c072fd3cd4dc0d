"""Compiled kernels: the compiler (when installed), the kernel cache on
disk that installations without it read, and a compilation loaded on a
device."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile

COMPILER_ABI = "tessera-ttile-2"
_LOC = re.compile(r' loc\((?:"(?:[^"\\]|\\.)*":\d+:\d+|unknown)\)')


# --------------------------------------------------------------------------
# The kernel cache (compiled PTX on disk)
# --------------------------------------------------------------------------

def _compiler():
    try:
        from . import _core
    except ImportError as e:  # a runtime-only installation
        return None, str(e)
    return _core, None


@functools.lru_cache(maxsize=None)
def compiler_id() -> str:
    """Identifies the compiler (version and build), part of cache keys."""
    core, _ = _compiler()
    if core is None:
        return "none"
    from . import __version__
    path = core.__file__
    st = os.stat(path)
    return f"{__version__}-{st.st_size}-{int(st.st_mtime)}"


class KernelCache:
    """Compiled kernels on disk: ``<key>.ptx`` and ``<key>.json`` per
    compilation, keyed by the Tile IR, the target and the compiler. Writes
    are atomic; an unreadable entry is ignored (and recompiled)."""

    def __init__(self, directory=None):
        self._directory = directory
        self._resolved = (None, None)

    @property
    def directory(self) -> str:
        # Read at every launch (it keys compiled kernels): the path is
        # resolved again only when what it depends on changes.
        env = os.environ
        given = (self._directory, env.get("TESSERA_KERNEL_CACHE"),
                 env.get("HOME"))
        if self._resolved[0] == given:
            return self._resolved[1]
        d = (given[0] or given[1]
             or os.path.join(os.path.expanduser("~"), ".cache", "tessera",
                             "kernels"))
        d = os.path.expanduser(d)
        self._resolved = (given, d)
        return d

    @staticmethod
    def key(text: str, chip: str, features: str, opt_level: int) -> str:
        """Of the IR without its source locations (moving a kernel's file
        keeps its entries)."""
        h = hashlib.sha256()
        text = _LOC.sub("", text)
        for part in (COMPILER_ABI, text, chip, features, str(opt_level)):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()[:32]

    def get(self, key: str, compiler: str):
        """(ptx, info) of entry ``key`` made by ``compiler`` (any compiler
        when this installation has none), or None."""
        base = os.path.join(self.directory, key)
        try:
            with open(base + ".json") as f:
                info = json.load(f)
            with open(base + ".ptx") as f:
                ptx = f.read()
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if not isinstance(info, dict) or not isinstance(
                info.get("kernels"), list) or info.get("key") != key:
            return None
        if hashlib.sha256(ptx.encode()).hexdigest() != info.get("ptx_sha256"):
            return None
        if compiler != "none" and info.get("compiler") != compiler:
            return None
        return ptx, info

    def put(self, key: str, ptx: str, info: dict):
        os.makedirs(self.directory, exist_ok=True)
        info = dict(info, key=key,
                    ptx_sha256=hashlib.sha256(ptx.encode()).hexdigest())
        for suffix, data in ((".ptx", ptx), (".json", json.dumps(info))):
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                f.write(data)
            os.replace(tmp, os.path.join(self.directory, key + suffix))

    def export(self, path: str) -> int:
        """Copies every entry into directory ``path``; returns the count."""
        os.makedirs(path, exist_ok=True)
        n = 0
        for name in sorted(os.listdir(self.directory)) if os.path.isdir(
                self.directory) else []:
            if name.endswith(".json"):
                key = name[:-5]
                entry = self.get(key, "none")
                if entry is not None:
                    KernelCache(path).put(key, entry[0], entry[1])
                    n += 1
        return n

    def import_(self, path: str) -> int:
        """Adds the valid entries of directory ``path``; returns the count."""
        return KernelCache(path)._copy_to(self)

    def _copy_to(self, other) -> int:
        n = 0
        for name in sorted(os.listdir(self.directory)):
            if name.endswith(".json"):
                entry = self.get(name[:-5], "none")
                if entry is not None:
                    other.put(name[:-5], entry[0], entry[1])
                    n += 1
        return n


kernel_cache = KernelCache()


class CompiledKernel:
    """One specialization compiled for one architecture."""

    __slots__ = ("name", "ptx", "text", "chip", "num_warps", "shared_bytes",
                 "signature", "schedule", "launch", "_modules")

    def __init__(self, name, ptx, text, chip, num_warps, shared_bytes,
                 signature, schedule, launch=()):
        self.name = name
        self.ptx = ptx
        self.text = text
        self.chip = chip
        self.num_warps = num_warps
        self.shared_bytes = shared_bytes
        self.signature = signature
        self.schedule = schedule
        # The words of the kernel's launch record (the runtime reads the
        # same from the module): threads, shared bytes, slots, cluster,
        # tensor maps.
        self.launch = tuple(launch)
        self._modules = {}

    def function(self, device: int):
        fn = self._modules.get(device)
        if fn is None:
            from . import _cuda
            module = _cuda.Module.load_ptx(self.ptx, device)
            fn = (module, module.kernel(self.name))
            self._modules[device] = fn
        return fn[1]

    def __repr__(self):
        return (f"CompiledKernel({self.name}, {self.chip}, {self.num_warps} "
                f"warps, {self.shared_bytes} B shared)")
