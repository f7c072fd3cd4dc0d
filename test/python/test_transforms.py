"""ts.grad / value_and_grad / vjp / jvp / hvp against JAX, inside and outside
jit, with pytrees, closures, auxiliary outputs and composition."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tessera as ts
from tessera import op

jax.config.update("jax_enable_x64", True)


def close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol,
                               atol=atol)


def tree_close(a, b, **kw):
    la, ta = ts.tree.flatten(a)
    lb, _ = ts.tree.flatten(jax.tree_util.tree_map(np.asarray, b))
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        close(x, y, **kw)


def ts_mlp(p, x, y):
    h = op.tanh(x @ p["w1"] + p["b1"])
    return op.cross_entropy(h @ p["w2"], y)


def jax_mlp(p, x, y):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    logp = jax.nn.log_softmax(h @ p["w2"])
    return -jnp.mean(logp[jnp.arange(x.shape[0]), y])


@pytest.fixture
def problem(rng):
    p = {"w1": rng.standard_normal((6, 8)), "b1": rng.standard_normal(8),
         "w2": rng.standard_normal((8, 3))}
    x = rng.standard_normal((5, 6))
    y = rng.integers(0, 3, 5).astype(np.int32)
    return p, x, y


def test_grad_pytree_matches_jax(problem):
    p, x, y = problem
    tree_close(ts.grad(ts_mlp)(p, x, y), jax.grad(jax_mlp)(p, x, y))


def test_grad_argnums_and_value(problem):
    p, x, y = problem
    v, (gp, gx) = ts.value_and_grad(ts_mlp, argnums=(0, 1))(p, x, y)
    jv, (jgp, jgx) = jax.value_and_grad(jax_mlp, argnums=(0, 1))(p, x, y)
    close(v, jv)
    tree_close(gp, jgp)
    close(gx, jgx)


def test_grad_inside_jit_with_closure(problem):
    p, x, y = problem

    @ts.jit
    def step(p, x, y):
        loss, g = ts.value_and_grad(lambda q: ts_mlp(q, x, y))(p)
        return loss, ts.tree.map(lambda w, d: w - 0.1 * d, p, g)

    loss, new = step(p, x, y)
    jl, jg = jax.value_and_grad(jax_mlp)(p, x, y)
    close(loss, jl)
    tree_close(new, jax.tree_util.tree_map(lambda w, d: w - 0.1 * d, p, jg))


def test_has_aux(problem):
    p, x, y = problem

    def f(p):
        loss = ts_mlp(p, x, y)
        return loss, {"twice": loss * 2.0}

    (g, aux) = ts.grad(f, has_aux=True)(p)
    tree_close(g, jax.grad(jax_mlp)(p, x, y))
    close(aux["twice"], 2 * jax_mlp(p, x, y))


def test_second_derivative_by_composition(rng):
    x = rng.standard_normal(4)
    f = lambda x: op.reduce_sum(op.sin(x) * x * x)
    jf = lambda x: jnp.sum(jnp.sin(x) * x * x)
    d2 = ts.grad(lambda x: op.reduce_sum(ts.grad(f)(x)))(x)
    close(d2, jax.grad(lambda x: jnp.sum(jax.grad(jf)(x)))(x))


def test_jvp_matches_jax(problem, rng):
    p, x, y = problem
    t = {k: rng.standard_normal(v.shape) for k, v in p.items()}
    tx = rng.standard_normal(x.shape)
    tv = np.zeros(y.shape, np.int32)
    out, tan = ts.jvp(ts_mlp, (p, x, y), (t, tx, tv))
    jout, jtan = jax.jvp(lambda p, x: jax_mlp(p, x, y), (p, x), (t, tx))
    close(out, jout)
    close(tan, jtan)


def test_vjp_matches_jax(rng):
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 2))
    f = lambda a, b: op.tanh(a @ b)
    out, fn = ts.vjp(f, a, b)
    ct = rng.standard_normal((3, 2))
    ga, gb = fn(ct)
    jout, jfn = jax.vjp(lambda a, b: jnp.tanh(a @ b), a, b)
    close(out, jout)
    for g, jg in zip((ga, gb), jfn(ct)):
        close(g, jg)


def test_hvp_matches_jax(problem, rng):
    p, x, y = problem
    v = {k: rng.standard_normal(w.shape) for k, w in p.items()}
    (hp,) = ts.hvp(lambda p: ts_mlp(p, x, y), (p,), (v,))
    jh = jax.jvp(jax.grad(lambda p: jax_mlp(p, x, y)), (p,), (v,))[1]
    tree_close(hp, jh, rtol=1e-9)


def test_grad_of_non_scalar_is_an_error(rng):
    with pytest.raises(ts.TesseraError, match="one scalar float"):
        ts.grad(lambda x: x * 2.0)(rng.standard_normal(3))


def test_grad_wrt_integer_is_an_error():
    with pytest.raises(ts.TesseraError, match="float types"):
        ts.grad(lambda x, n: op.reduce_sum(x * op.cast(n, "f64")),
                argnums=1)(np.ones(3), np.ones(3, np.int32))


def test_eager_transform_compiles_once(problem):
    p, x, y = problem
    g = ts.grad(ts_mlp)
    a = g(p, x, y)
    b = g(p, x, y)
    tree_close(a, b, rtol=0, atol=0)


def test_stop_gradient(rng):
    x = rng.standard_normal(4)
    g = ts.grad(lambda x: op.reduce_sum(x * ts.stop_gradient(x * x)))(x)
    close(g, jax.grad(lambda x: jnp.sum(x * jax.lax.stop_gradient(x * x)))(x))
    _, t = ts.jvp(lambda x: x * op.stop_gradient(x), (x,), (np.ones(4),))
    close(t, x)


def test_checkpoint_keeps_values_and_gradients(problem):
    p, x, y = problem

    def loss(p):
        h = ts.checkpoint(lambda p, x: op.tanh(x @ p["w1"] + p["b1"]))(p, x)
        return op.cross_entropy(h @ p["w2"], y)

    g = ts.grad(loss)(p)
    tree_close(g, jax.grad(jax_mlp)(p, x, y))
    lowered = ts.jit(ts.grad(loss)).lower(p)
    assert "tgraph.checkpoint" in lowered.graph


def test_custom_vjp_rule_is_used(rng):
    @ts.custom_vjp
    def clip_grad(x):
        return x * 1.0

    def fwd(x):
        return clip_grad(x), (x,)

    def bwd(res, g):
        (x,) = res
        return (op.min(op.max(g, -1.0), 1.0) * 2.0,)

    clip_grad.defvjp(fwd, bwd)
    x = rng.standard_normal(5)
    w = np.array([3.0, -0.5, 0.25, -4.0, 1.5])
    g = ts.grad(lambda x: op.reduce_sum(clip_grad(x) * w))(x)
    close(g, np.clip(w, -1, 1) * 2.0)
    close(clip_grad(x), x)


def test_custom_jvp_rule_is_used(rng):
    @ts.custom_jvp
    def f(x):
        return op.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), 10.0 * t  # deliberately not cos(x) * t

    x = rng.standard_normal(3)
    out, tan = ts.jvp(f, (x,), (np.ones(3),))
    close(out, np.sin(x))
    close(tan, 10.0 * np.ones(3))


def test_custom_vjp_must_not_close_over_traced_values(rng):
    @ts.jit
    def g(x, s):
        @ts.custom_vjp
        def f(x):
            return x * s

        f.defvjp(lambda x: (f(x), (x,)), lambda r, g: (g,))
        return f(x)

    with pytest.raises(ts.TesseraError, match="enclosing trace"):
        g(np.ones(2), np.ones(2))


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev"])
def test_jacobians_match_jax(jac, rng):
    a = rng.standard_normal((3, 2))
    x = rng.standard_normal(2)
    f = lambda x: op.tanh(op.matmul(a, op.reshape(x, [2, 1])))
    jf = lambda x: jnp.tanh(a @ x.reshape(2, 1))
    close(getattr(ts, jac)(f)(x), getattr(jax, jac)(jf)(x))
    # A matrix input and a second argument: one batched derivative program
    # (no per-element loop or call).
    w = rng.standard_normal((4, 5)) * 0.3
    b = rng.standard_normal(5)
    g = lambda w, b: op.softmax(op.tanh(op.reshape(x, [1, 2]) @ w[:2] + b), -1)
    jg = lambda w, b: jax.nn.softmax(jnp.tanh(x.reshape(1, 2) @ w[:2] + b), -1)
    close(getattr(ts, jac)(g)(w, b), getattr(jax, jac)(jg)(w, b), rtol=1e-9)
    ir = ts.jit(getattr(ts, jac)(g)).lower(w, b).as_text("graph_optimized")
    assert "tgraph.scan" not in ir and "tgraph.call" not in ir


def test_dlpack_interop_with_jax(rng):
    x = jnp.asarray(rng.standard_normal((3, 4)))
    y = ts.jit(lambda x: x * 2.0)(x)
    close(y, 2 * np.asarray(x))
    back = jnp.from_dlpack(y)
    close(back, 2 * np.asarray(x))
