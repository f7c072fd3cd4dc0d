"""Function transforms: grad, value_and_grad, vjp, jvp, hvp, jacfwd, jacrev.

Each transform traces the function into a private Graph IR function of the
module being traced, declares its derivative (tgraph.adjoint / jvp / hvp,
expanded at once by the autodiff transformation) and calls it. Outside a
trace, the transformed function is compiled with ``ts.jit`` first, so
``ts.grad(f)(x)`` works on arrays too. Transforms compose: the derivative
of a derivative is traced the same way.
"""

from __future__ import annotations

import functools

import numpy as np

from . import tree as _tree
from ._jit import _arg_name, _is_array, _leaf_paths, jit
from ._tracing import (TesseraError, Tracer, context_of, current_context,
                       tensor_of)


class _Traced:
    """A function traced as a callee: its IR Function and how to call it."""

    def __init__(self, ctx, fun, args, name):
        self.ctx = ctx
        module = ctx.module
        self.arg_trees = []
        self.outer = []      # outer tensors passed for the dynamic leaves
        self.leaf_arg = []   # top-level argument of each dynamic leaf
        self.leaf_float = []
        specs = []
        import tessera._core as core
        for i, a in enumerate(args):
            leaves, td = _tree.flatten(a)
            paths = _leaf_paths(a, f"a{i}")
            self.arg_trees.append((leaves, td))
            for leaf, path in zip(leaves, paths):
                if isinstance(leaf, Tracer) or _is_array(leaf):
                    t = tensor_of(leaf, ctx=ctx)
                    self.outer.append(t)
                    self.leaf_arg.append(i)
                    self.leaf_float.append(not t.is_key and
                                           t.dtype.startswith(("f", "bf")))
                    specs.append(core.TensorSpec(list(t.shape), t.dtype,
                                                 _arg_name(path),
                                                 is_key=t.is_key))
        inner = iter(module.begin_trace(name, specs, False))
        traced = []
        for leaves, td in self.arg_trees:
            new = [Tracer(next(inner), ctx)
                   if isinstance(leaf, Tracer) or _is_array(leaf) else leaf
                   for leaf in leaves]
            traced.append(_tree.unflatten(td, new))
        try:
            out = fun(*traced)
            self.out_leaves_raw, self.out_tree = _tree.flatten(out)
            tensors = [tensor_of(o, ctx=ctx) for o in self.out_leaves_raw]
        except BaseException:
            module.abort_trace()
            raise
        self.function = module.end_trace(tensors)
        self.out_float = [o.dtype.startswith(("f", "bf"))
                          for o in self.function.outputs]

    def wrt(self, argnums):
        idx = [k for k, i in enumerate(self.leaf_arg) if i in argnums]
        return idx

    def call(self, fn, extra=()):
        out = self.ctx.module.call(fn, self.outer + list(extra))
        return [Tracer(t, self.ctx) for t in out]

    def rebuild_arg(self, i, values):
        """Argument ``i``'s structure with its dynamic leaves from ``values``
        (in order); other leaves become None."""
        leaves, td = self.arg_trees[i]
        it = iter(values)
        return _tree.unflatten(td, [next(it) if (isinstance(l, Tracer) or
                                                 _is_array(l)) else None
                                    for l in leaves])


def _name(fun, prefix):
    return _arg_name(f"{prefix}_{getattr(fun, '__name__', 'fn')}")


def _eager(transformed):
    """Runs ``transformed`` under jit when called outside a trace."""
    compiled = jit(transformed, name=getattr(transformed, "__name__", "fn"))

    @functools.wraps(transformed)
    def run(*args):
        if current_context() is not None or any(
                isinstance(l, Tracer) for l in _tree.leaves(args)):
            return transformed(*args)
        return compiled(*args)
    return run


def _argnums(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def value_and_grad(fun, argnums=0, has_aux=False):
    """``fun`` transformed to return ``(value, gradient)``. ``fun`` returns
    one float scalar (or ``(scalar, aux)`` with ``has_aux``); the gradient
    is taken with respect to argument ``argnums`` (an int, or a tuple of
    ints for a tuple of gradients) and has its structure (arrays or
    pytrees). Reverse mode, as an IR transformation (``tgraph.adjoint``);
    works inside and outside ``jit``.

    >>> f = lambda w, x: op.reduce_sum((x @ w) ** 2)
    >>> value, g = ts.value_and_grad(f)(np.array([1.0, 2.0]), np.eye(2))
    >>> value, g
    (array(5.), array([2., 4.]))
    >>> def loss(w):
    ...     y = w * 3.0
    ...     return op.reduce_sum(y * y), y
    >>> (value, aux), g = ts.value_and_grad(loss, has_aux=True)(np.array([1.0]))
    >>> value, aux, g
    (array(9.), array([3.]), array([18.]))
    """
    nums = _argnums(argnums)

    def transformed(*args):
        ctx = context_of(*_tree.leaves(args))
        t = _Traced(ctx, fun, args, _name(fun, "loss"))
        outs = t.function.outputs
        if has_aux:
            if not outs or outs[0].shape != () or not t.out_float[0]:
                raise TesseraError("value_and_grad(has_aux=True) needs the "
                                   "function to return (scalar, aux)")
        elif len(outs) != 1 or outs[0].shape != () or not t.out_float[0]:
            shapes = ", ".join(f"{o.dtype}{list(o.shape)}" for o in outs)
            raise TesseraError(f"grad needs a function returning one scalar "
                               f"float, got ({shapes}); use vjp or jacrev")
        wrt = t.wrt(nums)
        values = t.call(t.function)
        if has_aux:
            seeds = [op_full_like(values[k], 1.0 if k == 0 else 0.0)
                     for k in range(len(values)) if t.out_float[k]]
            d = ctx.module.derive(t.function, "vjp", wrt)
            grads = t.call(d, [s._t for s in seeds])
        else:
            d = ctx.module.derive(t.function, "grad", wrt)
            grads = t.call(d)
        it = iter(grads)
        per_arg = []
        for i in nums:
            count = sum(1 for a in t.leaf_arg if a == i)
            per_arg.append(t.rebuild_arg(i, [next(it) for _ in range(count)]))
        g = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        out = _tree.unflatten(t.out_tree, values)
        return out, g

    transformed.__name__ = _name(fun, "value_and_grad")
    return _eager(transformed)


def op_full_like(x, value):
    from . import op
    return op.full(x.shape, value, x.dtype) if x.ndim else (
        op.zeros_like(x) + value)


def grad(fun, argnums=0, has_aux=False):
    """``fun`` transformed to return its gradient with respect to argument
    ``argnums`` (``value_and_grad`` without the value; with ``has_aux``,
    ``(gradient, aux)``).

    >>> ts.grad(lambda x: op.reduce_sum(op.sin(x)))(np.array([0.0]))
    array([1.])
    >>> ts.grad(lambda a, b: op.reduce_sum(a * b), argnums=(0, 1))(
    ...     np.array([2.0]), np.array([5.0]))
    (array([5.]), array([2.]))
    """
    vg = value_and_grad(fun, argnums, has_aux)

    def transformed(*args):
        (value, g) = vg(*args)
        if has_aux:
            return g, value[1]
        return g

    transformed.__name__ = _name(fun, "grad")
    return _eager(transformed)


def jvp(fun, primals, tangents):
    """``(fun(*primals), J @ tangents)``: the value and the Jacobian-vector
    product, by forward mode (``tgraph.jvp``). ``primals`` and ``tangents``
    are tuples of the same structure, one entry per argument of ``fun``.

    >>> ts.jvp(lambda x: x * x, (np.array([3.0]),), (np.array([1.0]),))
    (array([9.]), array([6.]))
    """
    if current_context() is None and not any(
            isinstance(l, Tracer) for l in _tree.leaves((primals, tangents))):
        return jit(lambda p, t: jvp(fun, p, t), name=_name(fun, "jvp"))(
            tuple(primals), tuple(tangents))
    ctx = context_of(*_tree.leaves((primals, tangents)))
    t = _Traced(ctx, fun, tuple(primals), _name(fun, "f"))
    wrt = [k for k in range(len(t.outer)) if t.leaf_float[k]]
    tan_leaves = [l for l in _tree.leaves(tuple(tangents))]
    if len(tan_leaves) != len(t.outer):
        raise TesseraError(f"jvp: got {len(tan_leaves)} tangent arrays for "
                           f"{len(t.outer)} primal arrays")
    d = ctx.module.derive(t.function, "jvp", wrt)
    extra = [tensor_of(tan_leaves[k], ctx=ctx) for k in wrt]
    res = t.call(d, extra)
    n = len(t.function.outputs)
    values, tans = res[:n], iter(res[n:])
    tangents_out = [next(tans) if f else None for f in t.out_float]
    return (_tree.unflatten(t.out_tree, values),
            _tree.unflatten(t.out_tree, tangents_out))


def vjp(fun, *primals):
    """``(fun(*primals), vjp_fn)``, where ``vjp_fn(cotangent)`` returns the
    vector-Jacobian product: a tuple with one cotangent per primal. The
    cotangent has the structure of ``fun``'s result.

    >>> y, pullback = ts.vjp(lambda x: 2.0 * x, np.array([1.0, 2.0]))
    >>> y, pullback(np.array([1.0, 10.0]))
    (array([2., 4.]), (array([ 2., 20.]),))
    """
    if current_context() is None and not any(
            isinstance(l, Tracer) for l in _tree.leaves(primals)):
        out = jit(fun)(*primals)

        def eager_vjp(ct):
            return jit(lambda p, c: vjp(fun, *p)[1](c),
                       name=_name(fun, "vjp"))(tuple(primals), ct)
        return out, eager_vjp
    ctx = context_of(*_tree.leaves(primals))
    t = _Traced(ctx, fun, primals, _name(fun, "f"))
    values = t.call(t.function)
    wrt = [k for k in range(len(t.outer)) if t.leaf_float[k]]

    def vjp_fn(ct):
        cts = _tree.leaves(ct)
        floats = [k for k, f in enumerate(t.out_float) if f]
        if len(cts) != len(t.out_float):
            raise TesseraError(f"vjp_fn: got {len(cts)} cotangents for "
                               f"{len(t.out_float)} results")
        d = ctx.module.derive(t.function, "vjp", wrt)
        res = iter(t.call(d, [tensor_of(cts[k], values[k], ctx)
                              for k in floats]))
        per_leaf = [next(res) if f else None for f in t.leaf_float]
        out, it = [], iter(per_leaf)
        for i in range(len(primals)):
            count = sum(1 for a in t.leaf_arg if a == i)
            out.append(t.rebuild_arg(i, [next(it) for _ in range(count)]))
        return tuple(out)

    return _tree.unflatten(t.out_tree, values), vjp_fn


def hvp(fun, primals, tangents):
    """The Hessian of a scalar function at ``primals`` times ``tangents``
    (forward over reverse, ``tgraph.hvp``): a tuple with the structure of
    ``primals``.

    >>> ts.hvp(lambda x: op.reduce_sum(x ** 3), (np.array([1.0, 2.0]),),
    ...        (np.array([1.0, 0.0]),))
    (array([6., 0.]),)
    """
    if current_context() is None and not any(
            isinstance(l, Tracer) for l in _tree.leaves((primals, tangents))):
        return jit(lambda p, v: hvp(fun, p, v), name=_name(fun, "hvp"))(
            tuple(primals), tuple(tangents))
    ctx = context_of(*_tree.leaves((primals, tangents)))
    t = _Traced(ctx, fun, tuple(primals), _name(fun, "f"))
    wrt = [k for k in range(len(t.outer)) if t.leaf_float[k]]
    tan = _tree.leaves(tuple(tangents))
    if len(tan) != len(t.outer):
        raise TesseraError(f"hvp: got {len(tan)} direction arrays for "
                           f"{len(t.outer)} primal arrays")
    d = ctx.module.derive(t.function, "hvp", wrt)
    res = iter(t.call(d, [tensor_of(tan[k], ctx=ctx) for k in wrt]))
    per_leaf = [next(res) if f else None for f in t.leaf_float]
    out, it = [], iter(per_leaf)
    for i in range(len(primals)):
        count = sum(1 for a in t.leaf_arg if a == i)
        out.append(t.rebuild_arg(i, [next(it) for _ in range(count)]))
    return tuple(out)


# -- steering differentiation -------------------------------------------------

def stop_gradient(x):
    """``x`` (any pytree), with no derivative flowing through any of its
    leaves (``op.stop_gradient`` on each).

    >>> ts.grad(lambda p: op.reduce_sum(p["a"] * ts.stop_gradient(p)["b"]))(
    ...     {"a": np.array([2.0]), "b": np.array([3.0])})
    {'a': array([3.]), 'b': array([0.])}
    """
    from . import op
    return _tree.map(op.stop_gradient, x)


def checkpoint(fun):
    """``fun`` whose intermediates reverse mode recomputes instead of keeping
    (``tgraph.checkpoint``): memory traded for compute. ``ts.remat`` is the
    same function.

    >>> layer = ts.checkpoint(lambda x: op.tanh(x) * 2.0)
    >>> ts.grad(lambda x: op.reduce_sum(layer(x)))(np.array([0.0]))
    array([2.])
    """

    @functools.wraps(fun)
    def wrapped(*args):
        ctx = context_of(*_tree.leaves(args))
        t = _Traced(ctx, fun, args, _name(fun, "checkpoint"))
        out = ctx.module.checkpoint(t.function, t.outer)
        return _tree.unflatten(t.out_tree, [Tracer(o, ctx) for o in out])

    return _eager(wrapped)


remat = checkpoint


def _trace_flat(ctx, fun, specs, name):
    """Traces ``fun(*tracers)`` (returning a flat list) with ``specs``."""
    module = ctx.module
    inner = [Tracer(t, ctx) for t in module.begin_trace(name, specs, False)]
    try:
        outs = [tensor_of(o, ctx=ctx) for o in fun(*inner)]
    except BaseException:
        module.abort_trace()
        raise
    return module.end_trace(outs)


def _specs(tensors, prefix):
    import tessera._core as core
    return [core.TensorSpec(list(t.shape), t.dtype, f"{prefix}{i}")
            for i, t in enumerate(tensors)]


class _CustomRule:
    """What custom_vjp and custom_jvp share: compiled when called on arrays,
    and the primal function itself while their rules are traced (the rules
    call it)."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self._eager = None
        self._in_rule = 0

    def __call__(self, *args):
        if not self._ready():
            raise TesseraError(f"{type(self).__name__} {self.fun.__name__}: "
                               f"define its rule ({self._define}) before "
                               f"using it")
        if current_context() is None and not any(
                isinstance(l, Tracer) for l in _tree.leaves(args)):
            if self._eager is None:
                self._eager = jit(self.__call__, name=self.fun.__name__)
            return self._eager(*args)
        if self._in_rule:
            return self.fun(*args)
        self._in_rule += 1
        try:
            return self._traced(args)
        finally:
            self._in_rule -= 1


class custom_vjp(_CustomRule):
    """A function with a user-defined reverse-mode rule (JAX's API):
    ``fwd(*args)`` returns ``(value, residuals)`` and ``bwd(residuals, g)``
    returns one cotangent per argument (``tgraph.custom_vjp``).

    >>> @ts.custom_vjp
    ... def clip_grad(x):
    ...     return x
    >>> def fwd(x):
    ...     return x, None
    >>> def bwd(res, g):
    ...     return (op.max(op.min(g, 1.0), -1.0),)
    >>> _ = clip_grad.defvjp(fwd, bwd)
    >>> ts.grad(lambda x: op.reduce_sum(clip_grad(x) * 5.0))(
    ...     np.array([1.0, 2.0]))
    array([1., 1.])
    """

    _define = "defvjp(fwd, bwd)"

    def __init__(self, fun):
        super().__init__(fun)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
        """Sets the rule: ``fwd(*args) -> (value, residuals)`` and
        ``bwd(residuals, g) -> (cotangent per argument,)``; returns the
        function.

        >>> double = ts.custom_vjp(lambda x: 2.0 * x)
        >>> double = double.defvjp(lambda x: (2.0 * x, None),
        ...                        lambda res, g: (2.0 * g,))
        >>> ts.grad(lambda x: op.reduce_sum(double(x)))(np.array([1.0]))
        array([2.])
        """
        self.fwd, self.bwd = fwd, bwd
        return self

    def _ready(self):
        return self.fwd is not None

    def _traced(self, args):
        ctx = context_of(*_tree.leaves(args))
        t = _Traced(ctx, self.fun, args, _name(self.fun, "f"))
        n_out = len(t.function.outputs)
        res_tree = []

        def fwd_flat(*a):
            out, res = self.fwd(*a)
            leaves, tree = _tree.flatten(res)
            res_tree.append(tree)
            return _tree.leaves(out) + leaves

        fwd = _Traced(ctx, fwd_flat, args, _name(self.fun, "fwd"))
        res_specs = fwd.function.outputs[n_out:]
        ct_specs = t.function.outputs

        def bwd_flat(*flat):
            res = _tree.unflatten(res_tree[0], flat[:len(res_specs)])
            g = _tree.unflatten(t.out_tree, flat[len(res_specs):])
            cts = self.bwd(res, g)
            if not isinstance(cts, tuple) or len(cts) != len(args):
                raise TesseraError(
                    f"custom_vjp {self.fun.__name__}: bwd must return a tuple "
                    f"with one cotangent per argument ({len(args)})")
            leaves = []
            for i, c in enumerate(cts):
                count = sum(1 for a in t.leaf_arg if a == i)
                got = _tree.leaves(c)
                if len(got) != count:
                    raise TesseraError(
                        f"custom_vjp {self.fun.__name__}: the cotangent of "
                        f"argument {i} has {len(got)} arrays, expected {count}")
                leaves.extend(got)
            return leaves

        specs = _specs(res_specs, "res") + _specs(ct_specs, "ct")
        bwd = _trace_flat(ctx, bwd_flat, specs, _name(self.fun, "bwd"))
        out = ctx.module.custom_vjp(t.function, fwd.function, bwd, t.outer)
        return _tree.unflatten(t.out_tree, [Tracer(o, ctx) for o in out])


class custom_jvp(_CustomRule):
    """A function with a user-defined forward-mode rule (JAX's API): the
    rule takes ``(primals, tangents)`` and returns ``(value,
    tangent_out)``; reverse mode transposes it (``tgraph.custom_jvp``).

    >>> @ts.custom_jvp
    ... def softplus(x):
    ...     return op.log1p(op.exp(x))
    >>> @softplus.defjvp
    ... def softplus_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return softplus(x), t * op.sigmoid(x)
    >>> ts.jvp(softplus, (np.array([0.0]),), (np.array([2.0]),))[1]
    array([1.])
    >>> ts.grad(lambda x: op.reduce_sum(softplus(x)))(np.array([0.0]))
    array([0.5])
    """

    _define = "defjvp(rule)"

    def __init__(self, fun):
        super().__init__(fun)
        self.jvp = None

    def defjvp(self, jvp):
        """Sets the rule ``jvp(primals, tangents) -> (value, tangent_out)``
        (usable as a decorator; returns the rule).

        >>> square = ts.custom_jvp(lambda x: x * x)
        >>> _ = square.defjvp(lambda p, t: (p[0] * p[0], 2.0 * p[0] * t[0]))
        >>> ts.jvp(square, (np.array([3.0]),), (np.array([1.0]),))
        (array([9.]), array([6.]))
        """
        self.jvp = jvp
        return jvp

    def _ready(self):
        return self.jvp is not None

    def _traced(self, args):
        ctx = context_of(*_tree.leaves(args))
        t = _Traced(ctx, self.fun, args, _name(self.fun, "f"))
        n = len(t.outer)

        def jvp_flat(*flat):
            primals = [t.rebuild_arg(i, [flat[k] for k, a in
                                         enumerate(t.leaf_arg) if a == i])
                       for i in range(len(args))]
            tangents = [t.rebuild_arg(i, [flat[n + k] for k, a in
                                          enumerate(t.leaf_arg) if a == i])
                        for i in range(len(args))]
            out, tan = self.jvp(tuple(primals), tuple(tangents))
            return _tree.leaves(out) + _tree.leaves(tan)

        arg_specs = [o for o in t.function.inputs]
        import tessera._core as core
        specs = [core.TensorSpec(list(s.shape), s.dtype, f"x{i}")
                 for i, s in enumerate(arg_specs)] + \
                [core.TensorSpec(list(s.shape), s.dtype, f"t{i}")
                 for i, s in enumerate(arg_specs)]
        rule = _trace_flat(ctx, jvp_flat, specs, _name(self.fun, "jvp"))
        out = ctx.module.custom_jvp(t.function, rule, t.outer)
        return _tree.unflatten(t.out_tree, [Tracer(o, ctx) for o in out])


# -- Jacobians ----------------------------------------------------------------

def _single_array_arg(args, argnums, what):
    if not isinstance(argnums, int):
        raise TesseraError(f"{what} takes one argnum (an int)")
    return argnums


def _basis(shape, dtype):
    """The unit tensors of ``shape`` stacked along a new leading axis."""
    from . import op
    n = int(np.prod(shape, dtype=np.int64))
    return op.constant(np.eye(n, dtype=as_numpy(dtype)).reshape((n,) + shape))


def jacrev(fun, argnums=0):
    """``fun`` transformed to return its Jacobian ``[*out.shape,
    *arg.shape]`` with respect to argument ``argnums`` (one array), by
    reverse mode: one VJP, mapped (``ts.vmap``) over the unit cotangents of
    the output, whose shape must be static.

    >>> ts.jacrev(lambda x: x * x)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """

    def transformed(*args):
        i = _single_array_arg(args, argnums, "jacrev")
        from . import op
        from ._control import vmap
        out, fn = vjp(lambda x: fun(*args[:i], x, *args[i + 1:]), args[i])
        shape = _static(out.shape, "jacrev output")
        rows = vmap(lambda e: fn(e)[0])(_basis(shape, out.dtype))
        return op.reshape(rows, list(shape) + list(args[i].shape))

    transformed.__name__ = _name(fun, "jacrev")
    return _eager(transformed)


def jacfwd(fun, argnums=0):
    """``fun`` transformed to return its Jacobian ``[*out.shape,
    *arg.shape]`` with respect to argument ``argnums`` (one array), by
    forward mode: one JVP, mapped (``ts.vmap``) over the unit tangents of
    the input, whose shape must be static.

    >>> ts.jacfwd(lambda x: op.reduce_sum(x) * x)(np.array([1.0, 2.0]))
    array([[4., 1.],
           [2., 5.]])
    """

    def transformed(*args):
        i = _single_array_arg(args, argnums, "jacfwd")
        from . import op
        from ._control import vmap
        x = args[i]
        shape = _static(x.shape, "jacfwd input")
        f = lambda x: fun(*args[:i], x, *args[i + 1:])
        cols = vmap(lambda e: jvp(f, (x,), (e,))[1])(_basis(shape, x.dtype))
        # [n, *out] -> [*out, n] -> [*out, *shape]
        k = cols.ndim
        cols = op.transpose(cols, list(range(1, k)) + [0])
        return op.reshape(cols, list(cols.shape[:-1]) + list(shape))

    transformed.__name__ = _name(fun, "jacfwd")
    return _eager(transformed)


def _static(shape, what):
    if any(isinstance(d, str) for d in shape):
        raise TesseraError(f"the {what} has symbolic dims {shape}; Jacobians "
                           f"need static shapes")
    return tuple(shape)


def as_numpy(dtype):
    from ._dtypes import as_dtype
    return as_dtype(dtype).numpy
