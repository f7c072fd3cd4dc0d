"""Pytrees: nested dicts, lists, tuples, named tuples and dataclasses.

``flatten`` returns the leaves in a fixed order (dict keys sorted, as JAX
does) and a ``TreeDef`` that ``unflatten`` uses to rebuild the structure.
Everything else (arrays, numbers, strings, traced tensors) is a leaf, and
``None`` is an empty subtree with no leaf.
"""

from __future__ import annotations

import dataclasses

import numpy as np


class TreeDef:
    """The structure of a pytree, without its leaves.

    ``kind`` is ``"leaf"``, ``"none"``, ``"tuple"``, ``"list"``, ``"dict"``,
    ``"namedtuple"`` or ``"dataclass"``; ``meta`` is what rebuilding a node
    needs (a dict's sorted keys, a named tuple's class, a dataclass's class
    and field names, else ``None``); ``children`` a tuple with a
    ``TreeDef`` per child. Tree definitions compare equal when the
    structures are the same, and can be used as dict keys.
    :func:`flatten` makes them; there is no need to build one directly.

    Example:

    >>> leaves, td = tree.flatten({"b": (1, 2), "a": [3]})
    >>> td.kind, td.meta, [c.kind for c in td.children]
    ('dict', ('a', 'b'), ['list', 'tuple'])
    >>> td == tree.flatten({"a": [0], "b": (0, 0)})[1]
    True
    """

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
        """The number of leaves of the structure (``None`` counts 0).

        Example:

        >>> tree.flatten({"a": (1, 2), "b": [3, None]})[1].num_leaves
        3
        """
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __repr__(self):
        return f"TreeDef({self.kind}, {self.meta}, {self.children})"


_LEAF = TreeDef("leaf", None, ())
_NONE = TreeDef("none", None, ())

# Types that are always leaves, checked first: arrays and numbers are most
# of what a jit call flattens.
_LEAF_TYPES = {float, int, bool, complex, str, bytes, np.ndarray, np.bool_,
               np.float16, np.float32, np.float64, np.int8, np.int16,
               np.int32, np.int64, np.uint8, np.uint16, np.uint32,
               np.uint64}


def _register_leaf_type(cls):
    """Marks ``cls`` (never a node) as a leaf type, for faster flattening;
    its instances were leaves already."""
    _LEAF_TYPES.add(cls)
    return cls


def _flatten(x, leaves):
    t = type(x)
    if t in _LEAF_TYPES:
        leaves.append(x)
        return _LEAF
    if x is None:
        return _NONE
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
    """The leaves of a pytree, as a list, and its structure, a
    :class:`TreeDef`.

    Tuples, lists, dicts, named tuples and dataclass instances are nodes
    (a dict's values in sorted key order, a dataclass's in field order);
    ``None`` is a node with no children; everything else is a leaf, in
    depth-first order. Sorting a dict's keys raises ``TypeError`` when they
    cannot be compared.

    Example:

    >>> leaves, td = tree.flatten({"b": (1, 2), "a": [3, None]})
    >>> leaves
    [3, 1, 2]
    >>> td.num_leaves
    3
    >>> tree.flatten(np.float32(0.5))[0]
    [np.float32(0.5)]
    """
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
    """The pytree of structure ``treedef`` with ``leaves`` in place of its
    leaves, in the order :func:`flatten` returns them.

    ``leaves`` is any iterable; it must hold at least
    ``treedef.num_leaves`` items (extra ones are ignored; too few is a
    ``ValueError``). Nodes are
    rebuilt as new tuples, lists, dicts, named tuples and dataclass
    instances (a dataclass through its ``__init__``, by field name).

    Example:

    >>> leaves, td = tree.flatten({"b": (1, 2), "a": [3, None]})
    >>> tree.unflatten(td, [10, 20, 30])
    {'a': [10, None], 'b': (20, 30)}
    >>> tree.unflatten(td, [x * 2 for x in leaves])
    {'a': [6, None], 'b': (2, 4)}
    >>> tree.unflatten(td, [1])
    Traceback (most recent call last):
        ...
    ValueError: unflatten: the tree has 3 leaves but only 1 were given
    """
    try:
        return _unflatten(treedef, iter(leaves))
    except StopIteration:
        given = (f"only {len(leaves)}" if hasattr(leaves, "__len__")
                 else "fewer")
        raise ValueError(f"unflatten: the tree has {treedef.num_leaves} "
                         f"leaves but {given} were given") from None


def leaves(tree):
    """The leaves of a pytree, as a list, in :func:`flatten`'s order.

    Example:

    >>> tree.leaves({"w": np.ones(2), "b": 0.5})
    [0.5, array([1., 1.])]
    >>> tree.leaves([1, (2, None), {"x": 3}])
    [1, 2, 3]
    """
    return flatten(tree)[0]


def map(fn, tree, *rest):
    """Applies ``fn`` leaf by leaf to trees of the same structure and
    returns a tree of that structure with the results.

    With several trees, ``fn`` takes one leaf of each:
    ``fn(leaf_of_tree, leaf_of_rest_0, ...)``. Raises ``ValueError`` when a
    tree of ``rest`` has a different structure (dict keys, named tuple or
    dataclass classes, and ``None`` positions included) than ``tree``.

    Example:

    >>> tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
    {'a': 2, 'b': (4, 6)}
    >>> tree.map(lambda x, y: x + y, [1, (2, 3)], [10, (20, 30)])
    [11, (22, 33)]
    >>> tree.map(lambda x, y: x + y, {"a": 1}, {"a": (1,)})
    Traceback (most recent call last):
        ...
    ValueError: tree.map: tree 1 has a different structure than tree 0
    """
    ls, td = flatten(tree)
    others = [flatten(r) for r in rest]
    for i, (_, otd) in enumerate(others):
        if otd != td:
            raise ValueError(f"tree.map: tree {i + 1} has a different "
                             f"structure than tree 0")
    return unflatten(td, [fn(*xs) for xs in zip(ls, *[o[0] for o in others])])
