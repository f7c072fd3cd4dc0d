"""The spec 004 surface (graph.module, op.tensor parameters, graph.backward,
graph.forward, graph.jvp, graph.hvp, op.fixed_point, op.solve) against JAX
and closed forms."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tessera as ts
from tessera import graph, op

jax.config.update("jax_enable_x64", True)


def close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol,
                               atol=atol)


def test_mlp2_training_step_of_spec_004(rng):
    D, H, C = 6, 8, 3
    W1 = op.tensor((D, H), dtype="f64", name="W1",
                   init=lambda s, d: rng.standard_normal(s).astype(d))
    b1 = op.tensor((H,), dtype="f64", name="b1")
    W2 = op.tensor((H, C), dtype="f64", name="W2",
                   init=lambda s, d: rng.standard_normal(s).astype(d))
    b2 = op.tensor((C,), dtype="f64", name="b2")

    @graph.module("mlp2")
    def mlp2(x):
        h = op.relu(op.matmul(x, W1) + b1)
        return op.matmul(h, W2) + b2

    @graph.training_step(module="mlp2_train")
    def step(x, y_true):
        y_pred = mlp2(x)
        loss = op.cross_entropy(y_pred, y_true)
        grads = graph.backward(loss, wrt=[W1, b1, W2, b2])
        return grads, {"loss": loss}

    x = rng.standard_normal((5, D))
    y = rng.integers(0, C, 5).astype(np.int32)

    def jloss(w1, c1, w2, c2):
        logits = jax.nn.relu(x @ w1 + c1) @ w2 + c2
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(5), y])

    params = [W1.value, b1.value, W2.value, b2.value]
    grads, metrics = step(x, y)
    close(metrics["loss"], jloss(*params))
    for g, jg in zip(grads, jax.grad(jloss, argnums=(0, 1, 2, 3))(*params)):
        close(g, jg)
    # Parameters are read on every call.
    W1.value = W1.value * 0.5
    grads, metrics = step(x, y)
    close(metrics["loss"], jloss(W1.value, b1.value, W2.value, b2.value))
    close(mlp2(x), jax.nn.relu(x @ W1.value) @ W2.value)
    assert len(step._cache) == 1


def test_backward_of_an_intermediate_value(rng):
    @ts.jit
    def f(x, w):
        h = op.tanh(x @ w)
        loss = op.reduce_sum(h * h)
        return graph.backward(loss, wrt=h), graph.backward(loss, wrt=[w])[0]

    x, w = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    gh, gw = f(x, w)
    h = np.tanh(x @ w)
    close(gh, 2 * h)
    close(gw, jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w) ** 2))(w))


def test_forward_jvp_and_hvp(rng):
    x = rng.standard_normal(3)
    dx = rng.standard_normal(3)
    out, tan = graph.forward(lambda x: op.sin(x) * x, (x,), tangents=(dx,))
    jo, jt = jax.jvp(lambda x: jnp.sin(x) * x, (x,), (dx,))
    close(out, jo)
    close(tan, jt)

    @ts.jit
    def pinn(x):
        u = op.sin(x) * x
        return graph.jvp(u, wrt=x), graph.hvp(op.reduce_sum(u), wrt=x, dir=dx)

    du, hv = pinn(x)
    close(du, np.cos(x) * x + np.sin(x))
    close(hv, (2 * np.cos(x) - x * np.sin(x)) * dx)
    loss = lambda p, x, y: op.reduce_sum((x * p - y) ** 2)
    y = rng.standard_normal(3)
    v = rng.standard_normal(3)
    close(graph.hvp(loss, wrt=np.ones(3), dir=v, inputs=(x, y)),
          2 * x * x * v)


def test_fixed_point_and_solve_with_implicit_gradients():
    theta = np.array([0.5, 0.2])

    def z_star(th):
        return op.fixed_point(lambda z: op.tanh(z * th + 0.1),
                              op.zeros((2,), "f64"), tol=1e-13, max_iter=500)

    z = ts.jit(z_star)(theta)
    close(z, np.tanh(z * theta + 0.1), rtol=1e-11)
    g = ts.grad(lambda th: op.reduce_sum(z_star(th)))(theta)
    # z = tanh(z t + 0.1): dz/dt = (1 - z^2) z / (1 - t (1 - z^2)).
    s = 1 - z * z
    close(g, s * z / (1 - theta * s), rtol=1e-9)

    a = np.array([2.0, 9.0])
    root = lambda a: op.solve(lambda x: x * x - a, op.ones((2,), "f64"),
                              tol=1e-12)
    close(ts.jit(root)(a), np.sqrt(a), rtol=1e-10)
    close(ts.grad(lambda a: op.reduce_sum(root(a)))(a), 0.5 / np.sqrt(a),
          rtol=1e-6)


def test_parameter_errors():
    p = op.tensor((2, 2), "f32", "p")
    with pytest.raises(ts.TesseraError, match="shape"):
        p.value = np.zeros(3)
    with pytest.raises(ts.TesseraError, match="outside a trace"):
        p.shape_of_nothing  # noqa: B018
    with pytest.raises(ts.TesseraError, match="traced value"):
        graph.backward(np.ones(()), wrt=[p])
