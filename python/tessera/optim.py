"""Optimizers as pure functions of pytrees (``init`` and ``update``), so the
whole training step, update included, compiles into one function: the
update of each parameter is one fused elementwise loop.

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
    def __init__(self, lr=1e-2, momentum=0.0, nesterov=False):
        self.lr, self.momentum, self.nesterov = lr, momentum, nesterov

    def init(self, params):
        if not self.momentum:
            return {}
        return {"v": _tree.map(_zeros_like, params)}

    def update(self, grads, state, params, lr=None):
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
    decay (Loshchilov & Hutter)."""

    def __init__(self, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.weight_decay = weight_decay

    def init(self, params):
        return {"m": _tree.map(_zeros_like, params),
                "v": _tree.map(_zeros_like, params),
                "t": np.zeros((), np.float32)}

    def update(self, grads, state, params, lr=None):
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
    return SGD(lr, momentum, nesterov)


def adam(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    return Adam(lr, b1, b2, eps)


def adamw(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=1e-2):
    return Adam(lr, b1, b2, eps, weight_decay)


def global_norm(grads):
    return op.sqrt(sum(op.reduce_sum(g * g) for g in _tree.leaves(grads)))


def clip_by_global_norm(grads, max_norm):
    """Scales ``grads`` so their global L2 norm is at most ``max_norm``."""
    norm = global_norm(grads)
    scale = op.min(op.ones_like(norm), max_norm / (norm + 1e-12))
    return _tree.map(lambda g: g * scale, grads), norm


def ema(average, params, decay):
    """Exponential moving average of parameters (traced or NumPy)."""
    return _tree.map(lambda a, p: decay * a + (1.0 - decay) * p, average,
                     params)


# -- learning-rate schedules (plain Python: pass the value into the step) ---


def constant_schedule(lr):
    return lambda step: lr


def cosine_schedule(lr, total_steps, warmup_steps=0, final_fraction=0.0):
    """Linear warmup, then cosine decay to ``final_fraction * lr``."""
    def schedule(step):
        if step < warmup_steps:
            return lr * (step + 1) / warmup_steps
        t = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return lr * (final_fraction + (1 - final_fraction) * 0.5 *
                     (1 + math.cos(math.pi * t)))
    return schedule


def step_schedule(lr, boundaries, factor=0.1):
    def schedule(step):
        return lr * factor ** sum(step >= b for b in boundaries)
    return schedule
