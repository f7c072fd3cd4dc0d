"""Optimizers as pure functions of pytrees (``init`` and ``update``), so the
whole training step, update included, compiles into one function: the
update of each parameter is one fused elementwise loop. Outside a trace the
same functions run eagerly on NumPy arrays::

    opt = optim.adamw(1e-3, weight_decay=1e-4)
    state = opt.init(params)
    params, state = opt.update(grads, state, params, lr=lr)   # inside jit
"""

from __future__ import annotations

import math

import numpy as np

from . import op
from . import tree as _tree


def _zeros_like(p):
    return np.zeros(np.shape(p), np.asarray(p).dtype)


class SGD:
    """Stochastic gradient descent, optionally with (Nesterov) momentum.

    Without ``momentum`` the update is ``p - lr * g`` and the state is
    ``{}``. With momentum ``mu`` the state is ``{"v": velocities}`` (the
    structure of the parameters), ``v = mu * v + g``, and the update is
    ``p - lr * v``, or ``p - lr * (g + mu * v)`` with ``nesterov`` (the
    formulation of PyTorch). :func:`sgd` makes one.

    >>> opt = optim.SGD(lr=0.5, momentum=0.5)
    >>> params = {"w": np.array([1.0, 2.0], np.float32)}
    >>> grads = {"w": np.array([0.5, -1.0], np.float32)}
    >>> state = opt.init(params)
    >>> params, state = opt.update(grads, state, params)
    >>> params, state = opt.update(grads, state, params)
    >>> params["w"], state["v"]["w"]
    (array([0.375, 3.25 ], dtype=float32), array([ 0.75, -1.5 ], dtype=float32))
    """

    def __init__(self, lr=1e-2, momentum=0.0, nesterov=False):
        self.lr, self.momentum, self.nesterov = lr, momentum, nesterov

    def init(self, params):
        """The initial optimizer state for the pytree ``params``: ``{}``
        without momentum, else ``{"v": zeros like params}``.

        >>> params = {"w": np.ones(2, np.float32)}
        >>> optim.SGD(0.1).init(params)
        {}
        >>> optim.SGD(0.1, momentum=0.9).init(params)
        {'v': {'w': array([0., 0.], dtype=float32)}}
        """
        if not self.momentum:
            return {}
        return {"v": _tree.map(_zeros_like, params)}

    def update(self, grads, state, params, lr=None):
        """One step: returns ``(new_params, new_state)``.

        ``grads`` has the structure of ``params``; ``state`` comes from
        :meth:`init` or the previous update. ``lr`` overrides the learning
        rate given to the constructor; inside jit pass a schedule's value as
        an array (``np.float32(lr)``), since a Python number is static and
        each new value would compile the function again.

        >>> opt = optim.SGD(lr=0.5)
        >>> params = {"w": np.array([1.0, 2.0], np.float32)}
        >>> grads = {"w": np.array([0.5, -1.0], np.float32)}
        >>> opt.update(grads, opt.init(params), params)
        ({'w': array([0.75, 2.5 ], dtype=float32)}, {})
        >>> step = ts.jit(lambda g, s, p, lr: opt.update(g, s, p, lr=lr))
        >>> step(grads, {}, params, np.float32(1.0))
        ({'w': array([0.5, 3. ], dtype=float32)}, {})
        """
        lr = self.lr if lr is None else lr
        if not self.momentum:
            return _tree.map(lambda p, g: p - lr * g, params, grads), state
        mu = self.momentum
        v = _tree.map(lambda v, g: mu * v + g, state["v"], grads)
        step = (_tree.map(lambda v, g: g + mu * v, v, grads) if self.nesterov
                else v)
        return (_tree.map(lambda p, s: p - lr * s, params, step), {"v": v})


class Adam:
    """Adam (Kingma & Ba); with ``weight_decay`` > 0, AdamW's decoupled
    decay (Loshchilov & Hutter).

    The state is ``{"m": first moments, "v": second moments, "t": step
    count}`` (an f32 scalar). A step computes ``m = b1 * m + (1 - b1) * g``,
    ``v = b2 * v + (1 - b2) * g * g``, ``t = t + 1`` and
    ``p - lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * p)`` with the
    bias-corrected ``m_hat = m / (1 - b1^t)`` and ``v_hat = v / (1 - b2^t)``.
    :func:`adam` and :func:`adamw` make one.

    >>> opt = optim.Adam(lr=0.1)
    >>> params = {"w": np.array([1.0, 2.0], np.float32)}
    >>> grads = {"w": np.array([0.5, -1.0], np.float32)}
    >>> params, state = opt.update(grads, opt.init(params), params)
    >>> np.round(params["w"], 4)               # the first step is ~lr * sign(g)
    array([0.9, 2.1], dtype=float32)
    >>> float(state["t"])
    1.0
    """

    def __init__(self, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.weight_decay = weight_decay

    def init(self, params):
        """The initial state for the pytree ``params``: zero moments ``m``
        and ``v`` (the structure and dtypes of ``params``) and ``t`` = 0.

        >>> state = optim.Adam().init({"w": np.ones(2, np.float32)})
        >>> sorted(state), state["m"]["w"], state["t"]
        (['m', 't', 'v'], array([0., 0.], dtype=float32), array(0., dtype=float32))
        """
        return {"m": _tree.map(_zeros_like, params),
                "v": _tree.map(_zeros_like, params),
                "t": np.zeros((), np.float32)}

    def update(self, grads, state, params, lr=None):
        """One step: returns ``(new_params, new_state)``.

        ``grads`` has the structure of ``params``; ``state`` comes from
        :meth:`init` or the previous update. ``lr`` overrides the learning
        rate given to the constructor; inside jit pass a schedule's value as
        an array (``np.float32(lr)``) so that it is not a static argument.
        The bias corrections are computed in the dtype of each parameter.

        >>> opt = optim.Adam(lr=0.1, weight_decay=0.5)
        >>> params = {"w": np.array([1.0, 2.0], np.float32)}
        >>> grads = {"w": np.array([0.5, -1.0], np.float32)}
        >>> step = ts.jit(lambda g, s, p: opt.update(g, s, p))
        >>> new, state = step(grads, opt.init(params), params)
        >>> np.round(new["w"], 4)           # p - 0.1 * (sign(g) + 0.5 * p)
        array([0.85, 2.  ], dtype=float32)
        >>> state["m"]["w"], float(state["t"])
        (array([ 0.05, -0.1 ], dtype=float32), 1.0)
        """
        lr = self.lr if lr is None else lr
        b1, b2, eps, wd = self.b1, self.b2, self.eps, self.weight_decay
        t = state["t"] + 1.0
        m = _tree.map(lambda m, g: b1 * m + (1.0 - b1) * g, state["m"], grads)
        v = _tree.map(lambda v, g: b2 * v + (1.0 - b2) * (g * g), state["v"],
                      grads)

        def step(p, m, v):
            # Bias corrections 1 - b^t in the parameter's dtype (the step
            # count is f32; CSE shares them between parameters).
            tp = t if t.dtype == m.dtype else op.cast(t, m.dtype)
            c1 = 1.0 - op.exp(tp * math.log(b1))
            c2 = 1.0 - op.exp(tp * math.log(b2))
            update = (m / c1) / (op.sqrt(v / c2) + eps)
            if wd:
                update = update + wd * p
            return p - lr * update

        return (_tree.map(step, params, m, v), {"m": m, "v": v, "t": t})


def sgd(lr=1e-2, momentum=0.0, nesterov=False):
    """An :class:`SGD` optimizer with learning rate ``lr`` and optional
    (Nesterov) momentum.

    >>> opt = optim.sgd(0.1, momentum=0.9)
    >>> opt.lr, opt.momentum, opt.nesterov
    (0.1, 0.9, False)
    """
    return SGD(lr, momentum, nesterov)


def adam(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    """An :class:`Adam` optimizer without weight decay.

    >>> opt = optim.adam(3e-4)
    >>> opt.lr, opt.b1, opt.b2, opt.weight_decay
    (0.0003, 0.9, 0.999, 0.0)
    """
    return Adam(lr, b1, b2, eps)


def adamw(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=1e-2):
    """An :class:`Adam` optimizer with decoupled weight decay (AdamW):
    each step also subtracts ``lr * weight_decay * p``.

    >>> opt = optim.adamw(1e-3, weight_decay=1e-4)
    >>> opt.lr, opt.weight_decay
    (0.001, 0.0001)
    """
    return Adam(lr, b1, b2, eps, weight_decay)


def global_norm(grads):
    """The L2 norm of all the leaves of the pytree ``grads`` taken together:
    sqrt of the sum of the squares of every element, as a scalar.

    >>> grads = {"a": np.array([3.0], np.float32),
    ...          "b": np.array([[4.0]], np.float32)}
    >>> float(optim.global_norm(grads))
    5.0
    """
    return op.sqrt(sum(op.reduce_sum(g * g) for g in _tree.leaves(grads)))


def clip_by_global_norm(grads, max_norm):
    """Scales ``grads`` so their global L2 norm is at most ``max_norm``.

    Returns ``(clipped_grads, norm)``, ``norm`` being the
    :func:`global_norm` before clipping. Every leaf is multiplied by
    ``min(1, max_norm / norm)``, so gradients with a smaller norm are
    unchanged.

    >>> grads = {"a": np.array([3.0], np.float32),
    ...          "b": np.array([[4.0]], np.float32)}
    >>> clipped, norm = optim.clip_by_global_norm(grads, 1.0)
    >>> clipped["a"], clipped["b"], float(norm)
    (array([0.6], dtype=float32), array([[0.8]], dtype=float32), 5.0)
    >>> optim.clip_by_global_norm(grads, 10.0)[0]["a"]
    array([3.], dtype=float32)
    """
    norm = global_norm(grads)
    scale = op.min(op.ones_like(norm), max_norm / (norm + 1e-12))
    return _tree.map(lambda g: g * scale, grads), norm


def ema(average, params, decay):
    """One step of an exponential moving average of parameters:
    ``decay * average + (1 - decay) * params``, leaf by leaf.

    ``average`` and ``params`` are pytrees of the same structure; works on
    traced values and on NumPy arrays.

    >>> avg = {"w": np.array([0.0, 1.0], np.float32)}
    >>> optim.ema(avg, {"w": np.array([1.0, 1.0], np.float32)}, 0.75)
    {'w': array([0.25, 1.  ], dtype=float32)}
    """
    return _tree.map(lambda a, p: decay * a + (1.0 - decay) * p, average,
                     params)


# -- learning-rate schedules (plain Python: pass the value into the step) ---


def constant_schedule(lr):
    """A learning-rate schedule (a function of the step index) that always
    returns ``lr``.

    >>> optim.constant_schedule(0.1)(1000)
    0.1
    """
    return lambda step: lr


def cosine_schedule(lr, total_steps, warmup_steps=0, final_fraction=0.0):
    """A schedule with linear warmup, then cosine decay to
    ``final_fraction * lr``.

    Returns a function of the step index: ``lr * (step + 1) / warmup_steps``
    for the first ``warmup_steps`` steps, then ``lr`` decaying along half a
    cosine to ``final_fraction * lr`` at ``total_steps``, and that value
    after.

    >>> sched = optim.cosine_schedule(1.0, 10, warmup_steps=2)
    >>> [round(sched(step), 4) for step in (0, 1, 2, 6, 10, 20)]
    [0.5, 1.0, 1.0, 0.5, 0.0, 0.0]
    >>> optim.cosine_schedule(1.0, 4, final_fraction=0.5)(4)
    0.5
    """
    def schedule(step):
        if step < warmup_steps:
            return lr * (step + 1) / warmup_steps
        t = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return lr * (final_fraction + (1 - final_fraction) * 0.5 *
                     (1 + math.cos(math.pi * t)))
    return schedule


def step_schedule(lr, boundaries, factor=0.1):
    """A piecewise-constant schedule: ``lr`` multiplied by ``factor`` once
    for each of the step indices in ``boundaries`` that ``step`` has
    reached.

    >>> sched = optim.step_schedule(1.0, [2, 4], factor=0.5)
    >>> [sched(step) for step in range(6)]
    [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    """
    def schedule(step):
        return lr * factor ** sum(step >= b for b in boundaries)
    return schedule
