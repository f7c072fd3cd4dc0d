"""ts.scan and ts.vmap against jax.lax.scan and jax.vmap, and their
gradients."""

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


def rnn(w, u):
    def step(h, x):
        h = op.tanh(op.matmul(op.reshape(h, [1, 4]), w)[0] + x * u)
        return h, op.reduce_sum(h)
    return step


def jax_rnn(w, u):
    def step(h, x):
        h = jnp.tanh(h @ w + x * u)
        return h, jnp.sum(h)
    return step


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_matches_lax_scan(reverse, rng):
    w, u = rng.standard_normal((4, 4)) * 0.5, rng.standard_normal(4)
    xs = rng.standard_normal((6, 4))
    h0 = np.zeros(4)
    h, ys = ts.scan(rnn(w, u), h0, xs, reverse=reverse)
    jh, jys = jax.lax.scan(jax_rnn(w, u), h0, xs, reverse=reverse)
    close(h, jh)
    close(ys, jys)


def test_scan_with_pytrees_and_length():
    def step(c, _):
        return {"n": c["n"] + 1.0, "s": c["s"] * 2.0}, c["n"]

    c, ys = ts.scan(step, {"n": np.zeros(()), "s": np.ones(2)}, None,
                    length=5)
    close(c["n"], 5.0)
    close(c["s"], [32.0, 32.0])
    close(ys, np.arange(5.0))


def test_gradient_through_scan_matches_jax(rng):
    w, u = rng.standard_normal((4, 4)) * 0.5, rng.standard_normal(4)
    xs = rng.standard_normal((5, 4))

    def loss(w):
        _, ys = ts.scan(rnn(w, u), op.zeros((4,), "f64"), xs)
        return op.reduce_sum(ys * ys)

    def jloss(w):
        _, ys = jax.lax.scan(jax_rnn(w, u), jnp.zeros(4), xs)
        return jnp.sum(ys * ys)

    close(ts.grad(loss)(w), jax.grad(jloss)(w), rtol=1e-9)


def test_vmap_matches_jax(rng):
    a = rng.standard_normal((5, 3))
    b = rng.standard_normal((3, 2))
    f = lambda x, m: op.tanh(op.matmul(op.reshape(x, [1, 3]), m))[0]
    jf = lambda x, m: jnp.tanh(x @ m)
    close(ts.vmap(f, in_axes=(0, None))(a, b),
          jax.vmap(jf, in_axes=(0, None))(a, b))
    # Mapped over axis 1, results on axis 1.
    close(ts.vmap(f, in_axes=(1, None), out_axes=1)(a.T.copy(), b),
          jax.vmap(jf, in_axes=(1, None), out_axes=1)(a.T, b))
    # Inside jit, with a symbolic batch: one compilation for every size.
    @ts.jit
    def g(x: ts.Tensor["N", 3, ts.f64]):
        return ts.vmap(lambda r: op.reduce_sum(r * r))(x)

    for n in (2, 7):
        x = rng.standard_normal((n, 3))
        close(g(x), (x * x).sum(1))
    assert len(g._cache) == 1
    with pytest.raises(ts.TesseraError, match="no argument is mapped"):
        ts.vmap(f, in_axes=(None, None))(a, b)


def test_gradient_through_vmap(rng):
    a = rng.standard_normal((4, 3))
    m = rng.standard_normal((3, 2))
    f = lambda x, m: op.tanh(op.matmul(op.reshape(x, [1, 3]), m))[0]
    g = ts.grad(lambda m: op.reduce_sum(ts.vmap(f, (0, None))(a, m)))(m)
    close(g, jax.grad(lambda m: jnp.sum(jnp.tanh(a @ m)))(m))


# -- Vectorized vmap: each batching rule against jax.vmap ---------------------

def _ir(fn, *args):
    return ts.jit(fn).lower(*args).as_text("graph")


def _entry(ir):
    """The public (entry) function of a module's text."""
    return ir.split("func.func private")[0]


W34 = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
V4 = np.array([0.5, -1.0, 2.0, 0.25])

# (name, tessera per-element function, jax one, in_axes, per-element shapes
# of the mapped arguments (None: the shared argument as given)).
RULES = [
    ("unary_binary", lambda x, w: op.exp(x) * w + 1.0 - op.tanh(x) / 3.0,
     lambda x, w: jnp.exp(x) * w + 1.0 - jnp.tanh(x) / 3.0, (0, None),
     [(3, 4), W34]),
    ("scalar_times_vector", lambda s, v: s * v, lambda s, v: s * v,
     (0, None), [(), V4]),
    ("both_mapped_ranks_differ", lambda x, v: x - v, lambda x, v: x - v,
     (0, 0), [(3, 4), (4,)]),
    ("select_compare",
     lambda x, w: op.select(x > 0.1, x, w * x),
     lambda x, w: jnp.where(x > 0.1, x, w * x), (0, None), [(3, 4), W34]),
    ("reductions",
     lambda x: op.reduce_sum(x, [0]) + op.reduce_max(x, [1], keepdims=True)
     - op.reduce_mean(x),
     lambda x: x.sum(0) + x.max(1, keepdims=True) - x.mean(), (0,),
     [(3, 4)]),
    ("softmax_family",
     lambda x: op.softmax(x, 0) + op.log_softmax(x, -1)
     + op.logsumexp(x, 1, keepdims=True),
     lambda x: jax.nn.softmax(x, 0) + jax.nn.log_softmax(x, -1)
     + jax.scipy.special.logsumexp(x, 1, keepdims=True), (0,), [(3, 4)]),
    ("layernorm",
     lambda x, g: op.layernorm(x, g, None, axis=-1, epsilon=1e-5),
     lambda x, g: (x - x.mean(-1, keepdims=True))
     / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5) * g, (0, None),
     [(3, 4), V4]),
    ("layout",
     lambda x, v: op.concat([op.reshape(x.T, [2, 6]),
                             op.reshape(op.broadcast_in_dim(v, [3, 4], [1]),
                                        [2, 6])], 1)[:, 1::2],
     lambda x, v: jnp.concatenate([x.T.reshape(2, 6),
                                   jnp.broadcast_to(v, (3, 4)).reshape(2, 6)],
                                  1)[:, 1::2], (0, 0), [(3, 4), (4,)]),
    ("pad", lambda x: op.pad(x, [1, 0], [0, 2], value=-1.0),
     lambda x: jnp.pad(x, ((1, 0), (0, 2)), constant_values=-1.0), (0,),
     [(3, 4)]),
    ("matmul_lhs", lambda x, w: x @ w.T, lambda x, w: x @ w.T, (0, None),
     [(2, 4), W34]),
    ("matmul_rhs", lambda w, x: w @ x, lambda w, x: w @ x, (None, 0),
     [W34, (4, 2)]),
    ("matmul_both_vector", lambda x, y: op.matmul(x, y, transpose_rhs=True),
     lambda x, y: x @ y.T, (0, 0), [(2, 4), (3, 4)]),
    ("matvec", lambda w, v: w @ v, lambda w, v: w @ v, (None, 0), [W34, (4,)]),
    ("batch_matmul", lambda a, b: op.batch_matmul(a, b),
     lambda a, b: jnp.matmul(a, b), (0, None),
     [(2, 3, 4), np.ones((2, 4, 5)) * 0.5]),
    ("dot_general_lhs",
     lambda a, b: op.dot_general(a, b, [0], [0], [2], [1]),
     lambda a, b: jnp.einsum("bik,bkj->bij", a, b), (0, None),
     [(2, 3, 4), np.arange(40.0).reshape(2, 4, 5) / 40]),
    ("dot_general_rhs",
     lambda a, b: op.dot_general(a, b, [0], [0], [2], [1]),
     lambda a, b: jnp.einsum("bik,bkj->bij", a, b), (None, 0),
     [np.arange(24.0).reshape(2, 3, 4) / 24, (2, 4, 5)]),
    ("dot_general_both",
     lambda a, b: op.dot_general(a, b, [], [], [1], [0]),
     lambda a, b: jnp.einsum("ik,kj->ij", a, b), (0, 0), [(3, 4), (4, 5)]),
    ("cast_and_dim_size",
     lambda x: op.cast(x, ts.f32).astype(ts.f64) / op.dim_size(x, 1, "f64"),
     lambda x: x.astype(jnp.float32).astype(jnp.float64) / x.shape[1], (0,),
     [(3, 4)]),
    ("stop_gradient", lambda x: ts.stop_gradient(x) * x,
     lambda x: jax.lax.stop_gradient(x) * x, (0,), [(3, 4)]),
    ("attention_shared_value",
     lambda q, k, v: op.attention(q, k, v, causal=True),
     lambda q, k, v: _jax_attention(q, k, v, True), (0, 0, None),
     [(2, 3, 4), (2, 3, 4), np.linspace(-1, 1, 24).reshape(2, 3, 4)]),
    ("conv2d",
     lambda x, w: op.conv2d(x, w, strides=(2, 1), padding=(1, 0, 1, 1)),
     lambda x, w: jax.lax.conv_general_dilated(x, w, (2, 1),
                                               ((1, 0), (1, 1))),
     (0, None), [(2, 3, 6, 5), np.linspace(-1, 1, 108).reshape(4, 3, 3, 3)]),
    ("gather_batched_x", lambda x, i: op.gather(x, i, 1),
     lambda x, i: jnp.take(x, i, axis=1), (0, None),
     [(3, 4), np.array([2, 0, 3, 3])]),
    ("gather_batched_indices", lambda x, i: op.gather(x, i, 1),
     lambda x, i: jnp.take(x, i, axis=1), (None, 0), [W34, "idx2"]),
    ("scatter_add",
     lambda x, u: op.scatter_add(x, np.array([1, 0, 1]), u, 0),
     lambda x, u: x.at[np.array([1, 0, 1])].add(u), (0, 0),
     [(3, 4), (3, 4)]),
    ("dynamic_slice",
     lambda x, i: op.dynamic_slice(x, [i, op.constant(np.int64(1))], [2, 3]),
     lambda x, i: jax.lax.dynamic_slice(x, (i, 1), (2, 3)), (0, None),
     [(4, 5), np.int64(1)]),
]


def _jax_attention(q, k, v, causal):
    s = q @ jnp.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = jnp.where(jnp.tril(jnp.ones((n, n), bool)), s, -jnp.inf)
    return jax.nn.softmax(s, -1) @ v


def _args(shapes, rng, batch=5):
    return [rng.integers(0, 4, (batch, 2)) if isinstance(s, str)
            else np.asarray(s) if isinstance(s, (np.ndarray, np.generic))
            else rng.standard_normal((batch,) + s) for s in shapes]


@pytest.mark.parametrize("name,f,jf,axes,shapes", RULES,
                         ids=[r[0] for r in RULES])
def test_vmap_rules_vectorize_and_match_jax(name, f, jf, axes, shapes, rng):
    args = _args(shapes, rng)
    vf = ts.vmap(f, in_axes=axes)
    close(vf(*args), jax.vmap(jf, in_axes=axes)(*args), rtol=1e-6)
    ir = _entry(_ir(vf, *args))
    assert "tgraph.scan" not in ir and "tgraph.call" not in ir, ir


def test_vmap_embedding_one_hot_argmax(rng):
    table = rng.standard_normal((10, 3))
    ids = rng.integers(0, 10, (5, 4))
    f = lambda i, t: (op.embedding(t, i),
                      op.one_hot(i, 10, ts.f64),
                      op.argmax(op.embedding(t, i), 0))
    jf = lambda i, t: (jnp.asarray(t)[i],
                       jax.nn.one_hot(i, 10, dtype=jnp.float64),
                       jnp.argmax(jnp.asarray(t)[i], 0))
    vf = ts.vmap(f, in_axes=(0, None))
    for got, want in zip(vf(ids, table), jax.vmap(jf, in_axes=(0, None))(
            ids, table)):
        close(got, want)
    assert "tgraph.scan" not in _entry(_ir(vf, ids, table))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_vmap_cross_entropy(reduction, rng):
    logits = rng.standard_normal((5, 3, 4))
    labels = rng.integers(0, 4, (5, 3))
    f = lambda z, y: op.cross_entropy(z, y, reduction=reduction)

    def jf(z, y):
        per = -jnp.take_along_axis(jax.nn.log_softmax(z, -1), y[:, None],
                                   1)[:, 0]
        return {"mean": per.mean(), "sum": per.sum(), "none": per}[reduction]
    # Labels mapped, and labels shared by every element.
    close(ts.vmap(f)(logits, labels), jax.vmap(jf)(logits, labels))
    close(ts.vmap(f, (0, None))(logits, labels[0]),
          jax.vmap(jf, (0, None))(logits, labels[0]))
    assert "tgraph.scan" not in _entry(_ir(ts.vmap(f), logits, labels))


def test_vmap_nested_axes_and_pytrees(rng):
    x = rng.standard_normal((3, 4, 5))
    params = {"w": rng.standard_normal((5, 2)), "b": rng.standard_normal(2)}
    f = lambda p, r: op.tanh(r @ p["w"] + p["b"])
    jf = lambda p, r: jnp.tanh(r @ p["w"] + p["b"])
    # Inner map over rows, outer map over axis 1 of x, results on axis 2.
    vf = ts.vmap(ts.vmap(f, in_axes=(None, 0)), in_axes=(None, 1),
                 out_axes=2)
    jvf = jax.vmap(jax.vmap(jf, in_axes=(None, 0)), in_axes=(None, 1),
                   out_axes=2)
    close(vf(params, x), jvf(params, x))
    assert "tgraph.scan" not in _entry(_ir(vf, params, x))


def test_vmap_of_grad_gives_per_example_gradients(rng):
    w = rng.standard_normal((4, 3)) * 0.5
    xs = rng.standard_normal((6, 4))
    ys = rng.standard_normal((6, 3))

    def loss(w, x, y):
        return op.reduce_sum(op.square(op.tanh(x @ w) - y))

    def jloss(w, x, y):
        return jnp.sum(jnp.square(jnp.tanh(x @ w) - y))

    g = ts.vmap(ts.grad(loss), in_axes=(None, 0, 0))
    close(g(w, xs, ys), jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0))(
        w, xs, ys), rtol=1e-9)
    assert "tgraph.scan" not in _entry(_ir(g, w, xs, ys))
    # And the gradient of a vectorized map.
    total = lambda w: op.reduce_sum(ts.vmap(loss, (None, 0, 0))(w, xs, ys))
    close(ts.grad(total)(w),
          jax.grad(lambda w: jnp.sum(jax.vmap(jloss, (None, 0, 0))(
              w, xs, ys)))(w), rtol=1e-9)


def test_vmap_reads_enclosing_values_and_symbolic_batch(rng):
    w = rng.standard_normal((3, 2))

    @ts.jit
    def g(x: ts.Tensor["N", 3, ts.f64], w: ts.Tensor[3, 2, ts.f64]):
        scale = op.reduce_sum(w)           # computed once, read by the map
        return ts.vmap(lambda r: op.softmax(r @ w, -1) * scale)(x)

    for n in (1, 6):
        x = rng.standard_normal((n, 3))
        close(g(x, w), jax.nn.softmax(x @ w, -1) * w.sum())
    assert len(g._cache) == 1


def test_vmap_of_per_element_control_flow(rng):
    x = rng.standard_normal((6, 3))
    # A branch chosen per element: both branches, then a select.
    f = lambda r: op.cond(op.reduce_sum(r) > 0, lambda r: r * 2.0,
                          lambda r: -r, r)
    jf = lambda r: jax.lax.cond(jnp.sum(r) > 0, lambda r: r * 2.0,
                                lambda r: -r, r)
    close(ts.vmap(f)(x), jax.vmap(jf)(x))
    assert "tgraph.scan" not in _entry(_ir(ts.vmap(f), x))
    # A branch on a shared value stays a branch, over the batch.
    h = lambda r, c: op.cond(c > 0, lambda r: r * 2.0, lambda r: -r, r)
    ir = _entry(_ir(ts.vmap(h, (0, None)), x, np.float64(1.0)))
    assert "tgraph.cond" in ir and "tgraph.scan" not in ir
    # A while loop whose trip count differs per element: it runs while any
    # element's condition holds, finished elements keep their values.
    start = np.array([0.5, 3.0, 20.0, -0.25, 7.5])

    def w(v):
        return op.while_loop(lambda c: c[0] < 10.0,
                             lambda c: (c[0] * 2.0 + 1.0, c[1] + 1.0),
                             (v, op.constant(np.float64(0.0))))

    def jw(v):
        return jax.lax.while_loop(lambda c: c[0] < 10.0,
                                  lambda c: (c[0] * 2.0 + 1.0, c[1] + 1.0),
                                  (v, 0.0))

    for got, want in zip(ts.vmap(w)(start), jax.vmap(jw)(start)):
        close(got, want)
    ir = _entry(_ir(ts.vmap(w), start))
    assert "tgraph.while" in ir and "tgraph.scan" not in ir


def test_vmap_without_a_rule_runs_a_loop(rng):
    # Random numbers from a key derived per element: no batching rule for
    # a batched key, so the map is a tgraph.scan with the same values.
    key = ts.random.key(3)
    f = lambda i, k: ts.random.uniform(ts.random.fold_in(k, i), (2,))
    idx = np.arange(4)
    got = ts.vmap(f, (0, None))(idx, key)
    for i in range(4):
        close(got[i], ts.random.uniform(ts.random.fold_in(key, int(i)), (2,)))
    ir = _entry(_ir(ts.vmap(f, (0, None)), idx, key))
    assert "tgraph.scan" in ir
    assert "vmap_loop = \"no batching rule for 'tgraph.rng" in ir, ir


def test_vmap_errors(rng):
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    with pytest.raises(ts.TesseraError, match="different sizes along the "
                                              "mapped axis: 5 and 4"):
        ts.vmap(lambda x, y: x + y)(a, b)
    with pytest.raises(ts.TesseraError, match="needs an axis to map over"):
        ts.vmap(lambda x, y: x * y)(np.float64(2.0), a)


def test_vmap_of_scan_batches_the_loop_body(rng):
    # One loop over time for the whole batch, not a loop over the batch.
    w, u = rng.standard_normal((4, 4)) * 0.5, rng.standard_normal(4)
    xs = rng.standard_normal((3, 6, 4))  # batch 3, 6 steps
    h0 = np.zeros(4)
    f = lambda xs: ts.scan(rnn(w, u), h0, xs)
    jf = lambda xs: jax.lax.scan(jax_rnn(w, u), h0, xs)
    for got, want in zip(ts.vmap(f)(xs), jax.vmap(jf)(xs)):
        close(got, want)
    ir = _entry(_ir(ts.vmap(f), xs))
    assert ir.count("tgraph.scan") == 1 and "vmap_loop" not in ir, ir
    # Mapped initial carries and reversed scans too, and their gradient.
    g = lambda h, xs: ts.scan(rnn(w, u), h, xs, reverse=True)[1]
    jg = lambda h, xs: jax.lax.scan(jax_rnn(w, u), h, xs, reverse=True)[1]
    hs = rng.standard_normal((3, 4))
    close(ts.vmap(g)(hs, xs), jax.vmap(jg)(hs, xs))
    close(ts.grad(lambda hs: op.reduce_sum(ts.vmap(g)(hs, xs)))(hs),
          jax.grad(lambda hs: jnp.sum(jax.vmap(jg)(hs, xs)))(hs), rtol=1e-9)
