"""The public surface of the package, for the tests that check conventions
over all of it (test_api_conventions, test_docs)."""

import types

import tessera as ts
from tessera import (cuda, datasets, graph, io, nn, op, optim, random, state,
                     stdlib, tile, training, tree)

MODULES = [ts, op, nn, optim, random, tree, graph, state, io, training,
           datasets, tile, stdlib, cuda]


def callables():
    """(module, name, object) of every public callable, each object once:
    a module's names (those of ``__all__``, else those without a leading
    underscore) defined in the package, and the public methods of its
    classes as ``Class.method``."""
    seen = set()
    for mod in MODULES:
        names = getattr(mod, "__all__", None) or [
            n for n in vars(mod) if not n.startswith("_")]
        for n in names:
            v = getattr(mod, n)
            if isinstance(v, types.ModuleType) or not callable(v):
                continue
            if not (getattr(v, "__module__", "") or "").startswith("tessera"):
                continue
            if id(v) in seen:
                continue
            seen.add(id(v))
            yield mod, n, v
            if isinstance(v, type):
                for m, f in vars(v).items():
                    if m.startswith("_") or not callable(f) or \
                            isinstance(f, type) or id(f) in seen:
                        continue
                    seen.add(id(f))
                    yield mod, f"{n}.{m}", f
