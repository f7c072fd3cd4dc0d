"""``ts.scan`` and ``ts.vmap``: loops over a leading axis in the Graph IR
(tgraph.scan), usable inside and outside ``jit`` and differentiable."""

from __future__ import annotations

from . import tree as _tree
from ._autodiff import _eager, _specs, _trace_flat
from ._tracing import TesseraError, Tracer, context_of, tensor_of


def _scan(f, init, xs, length, reverse):
    ctx = context_of(*_tree.leaves((init, xs)))
    carry_leaves, carry_tree = _tree.flatten(init)
    x_leaves, x_tree = _tree.flatten(xs)
    carry = [tensor_of(c, ctx=ctx) for c in carry_leaves]
    seqs = [tensor_of(x, ctx=ctx) for x in x_leaves]
    for s in seqs:
        if not s.shape:
            raise TesseraError("scan: every xs leaf needs a leading axis to "
                               "scan over, got a 0-d tensor")
    import tessera._core as core
    specs = _specs(carry, "carry") + [
        core.TensorSpec(list(s.shape[1:]), s.dtype, f"x{i}")
        for i, s in enumerate(seqs)]
    y_tree = []
    nc = len(carry)

    def body(*flat):
        c = _tree.unflatten(carry_tree, flat[:nc])
        x = _tree.unflatten(x_tree, flat[nc:])
        out = f(c, x)
        if not isinstance(out, tuple) or len(out) != 2:
            raise TesseraError("scan: the body must return (carry, y)")
        new_c, y = out
        new_leaves, new_tree = _tree.flatten(new_c)
        if new_tree != carry_tree:
            raise TesseraError("scan: the body must return a carry with the "
                               "structure of init")
        y_leaves, tree = _tree.flatten(y)
        y_tree.append(tree)
        return new_leaves + y_leaves

    fn = _trace_flat(ctx, body, specs, "scan_body")
    results = ctx.module.scan(fn, carry, seqs, length, reverse)
    results = [Tracer(r, ctx) for r in results]
    return (_tree.unflatten(carry_tree, results[:nc]),
            _tree.unflatten(y_tree[0], results[nc:]))


def scan(f, init, xs=None, length=None, reverse=False):
    """A loop as ``jax.lax.scan``: ``f(carry, x) -> (carry, y)`` over the
    leading axis of ``xs`` (pytrees), from ``init``; returns the final carry
    and the ``y`` stacked along a new leading axis (``tgraph.scan``).
    ``length`` is needed when ``xs`` is None; ``reverse`` runs from the
    end. Over no elements the carry is ``init`` and the stack is empty.

    >>> def step(total, x):
    ...     return total + x, total * 10.0
    >>> ts.scan(step, np.array(0.0), np.array([1.0, 2.0, 3.0]))
    (array(6.), array([ 0., 10., 30.]))
    """
    run = _eager(lambda init, xs: _scan(f, init, xs, length, reverse))
    run.__name__ = "scan"
    return run(init, xs)


def _move_axis(x, src, dst):
    from . import op
    if src == dst:
        return x
    perm = list(range(x.ndim))
    perm.insert(dst % x.ndim if dst < 0 else dst, perm.pop(src))
    return op.transpose(x, perm)


def vmap(f, in_axes=0, out_axes=0):
    """``f`` mapped over an axis of its arguments (``in_axes``: an int or
    None per argument, None for arguments shared by every element; pytrees
    map every leaf) and of its results (``out_axes``). ``f`` is traced once
    on one element and its ops are rewritten to work on the whole batch
    (batching rules in the C++ API); functions with an op that has no rule
    run as a loop (``tgraph.scan``) over the batch. Any sizes, symbolic ones
    included; differentiable, and usable inside and outside ``jit``.

    >>> ts.vmap(lambda row: op.reduce_sum(row * row))(
    ...     np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([ 5., 25.])
    >>> ts.vmap(lambda w, x: x @ w, in_axes=(None, 0))(
    ...     np.eye(2), np.ones((3, 2))).shape
    (3, 2)
    """

    def batched(*args):
        axes = (list(in_axes) if isinstance(in_axes, (list, tuple))
                else [in_axes] * len(args))
        if len(axes) != len(args):
            raise TesseraError(f"vmap: in_axes has {len(axes)} entries for "
                               f"{len(args)} arguments")
        ctx = context_of(*_tree.leaves(args))
        flat, flags, trees = [], [], []
        for a, ax in zip(args, axes):
            leaves, tree = _tree.flatten(a)
            trees.append((tree, len(leaves)))
            for l in leaves:
                t = l if isinstance(l, Tracer) else Tracer(
                    tensor_of(l, ctx=ctx), ctx)
                if ax is not None:
                    if t._t.is_key or t._t.is_kv_cache or t.ndim == 0:
                        raise TesseraError(
                            "vmap: a mapped argument needs an axis to map "
                            f"over, got {t._t!r} (keys and KV caches are "
                            "shared: give them in_axes None)")
                    t = _move_axis(t, ax % t.ndim, 0)
                flat.append(t)
                flags.append(ax is not None)
        if not any(flags):
            raise TesseraError("vmap: no argument is mapped (all in_axes are "
                               "None)")
        import tessera._core as core
        specs = [core.TensorSpec(list(t.shape[1:] if m else t.shape),
                                 t._t.dtype, f"a{i}", is_key=t._t.is_key,
                                 is_kv_cache=t._t.is_kv_cache)
                 for i, (t, m) in enumerate(zip(flat, flags))]
        out_tree = []

        def element(*xs):
            it = iter(xs)
            full = [_tree.unflatten(tree, [next(it) for _ in range(n)])
                    for tree, n in trees]
            leaves, tree = _tree.flatten(f(*full))
            out_tree.append(tree)
            return leaves

        fn = _trace_flat(ctx, element, specs, f"vmap_{_fname(f)}")
        results = ctx.module.vmap(fn, [t._t for t in flat], flags)
        ys = [Tracer(r, ctx) for r in results]
        if out_axes != 0:
            ys = [_move_axis(y, 0, out_axes % y.ndim) for y in ys]
        return _tree.unflatten(out_tree[0], ys)

    batched.__name__ = f"vmap_{_fname(f)}"
    return _eager(batched)


def _fname(f):
    return getattr(f, "__name__", "fn").replace("<", "").replace(">", "")


def _rank(x):
    return x.ndim if hasattr(x, "ndim") else len(getattr(x, "shape", ()))
