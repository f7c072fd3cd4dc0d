"""Pytrees: nested dicts, lists, tuples, named tuples and dataclasses.

``flatten`` returns the leaves in a fixed order (dict keys sorted, as JAX
does) and a ``TreeDef`` that ``unflatten`` uses to rebuild the structure.
"""

from __future__ import annotations

import dataclasses


class TreeDef:
    __slots__ = ("kind", "meta", "children", "_hash")

    def __init__(self, kind, meta, children):
        self.kind = kind
        self.meta = meta
        self.children = children
        self._hash = hash((kind, meta, children))

    def __eq__(self, other):
        return (isinstance(other, TreeDef) and self._hash == other._hash
                and self.kind == other.kind and self.meta == other.meta
                and self.children == other.children)

    def __hash__(self):
        return self._hash

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __repr__(self):
        return f"TreeDef({self.kind}, {self.meta}, {self.children})"


_LEAF = TreeDef("leaf", None, ())
_NONE = TreeDef("none", None, ())


def _flatten(x, leaves):
    if x is None:
        return _NONE
    t = type(x)
    if t is tuple or t is list:
        return TreeDef(t.__name__, None,
                       tuple(_flatten(v, leaves) for v in x))
    if t is dict:
        keys = tuple(sorted(x))
        return TreeDef("dict", keys, tuple(_flatten(x[k], leaves) for k in keys))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return TreeDef("namedtuple", t, tuple(_flatten(v, leaves) for v in x))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        names = tuple(f.name for f in dataclasses.fields(x))
        return TreeDef("dataclass", (t, names),
                       tuple(_flatten(getattr(x, n), leaves) for n in names))
    leaves.append(x)
    return _LEAF


def flatten(tree):
    """(leaves, treedef) of a pytree."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _unflatten(td, it):
    k = td.kind
    if k == "leaf":
        return next(it)
    if k == "none":
        return None
    children = [_unflatten(c, it) for c in td.children]
    if k == "tuple":
        return tuple(children)
    if k == "list":
        return children
    if k == "dict":
        return dict(zip(td.meta, children))
    if k == "namedtuple":
        return td.meta(*children)
    cls, names = td.meta
    return cls(**dict(zip(names, children)))


def unflatten(treedef: TreeDef, leaves):
    """The pytree of ``treedef`` with ``leaves``."""
    return _unflatten(treedef, iter(leaves))


def leaves(tree):
    return flatten(tree)[0]


def map(fn, tree, *rest):
    """Applies ``fn`` leaf by leaf to trees of the same structure."""
    ls, td = flatten(tree)
    others = [flatten(r) for r in rest]
    for i, (_, otd) in enumerate(others):
        if otd != td:
            raise ValueError(f"tree.map: tree {i + 1} has a different "
                             f"structure than tree 0")
    return unflatten(td, [fn(*xs) for xs in zip(ls, *[o[0] for o in others])])
