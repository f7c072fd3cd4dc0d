"""Every public function and class of the package is exercised by a test;
the ones not reached by the other files are tested here."""

import pathlib
import re
import types

import jax
import jax.numpy as jnp
import numpy as np

import tessera as ts
from tessera import (datasets, graph, io, nn, op, optim, random, state,
                     training, tree)

jax.config.update("jax_enable_x64", True)


def _public(mod):
    names = getattr(mod, "__all__", None) or [
        n for n in vars(mod) if not n.startswith("_")]
    for n in names:
        v = getattr(mod, n)
        if isinstance(v, types.ModuleType) or not callable(v):
            continue  # submodules and dtype objects (tested with the ops)
        where = getattr(v, "__module__", "") or ""
        if not where.startswith("tessera"):
            continue  # imported helpers (numpy, math)
        if mod is not ts and where != mod.__name__:
            continue  # re-exports, counted where they are defined
        yield n


def test_every_public_function_and_class_is_tested():
    text = "".join(p.read_text() for p in
                   pathlib.Path(__file__).parent.glob("test_*.py")
                   if p.name != "test_coverage.py")
    text += pathlib.Path(__file__).read_text().split("# -- direct tests")[-1]
    untested = {mod.__name__: missing for mod in
                [ts, nn, optim, random, graph, training, io, datasets, tree,
                 state, op]
                if (missing := [n for n in _public(mod)
                                if not re.search(rf"\b{re.escape(n)}\b",
                                                 text)])}
    assert not untested, f"public names without a test: {untested}"


# -- direct tests ---------------------------------------------------------------

def test_types_of_the_surface():
    assert ts.as_dtype("bfloat16") is ts.bf16 and isinstance(ts.f32, ts.DType)
    pd = ts.bf16 @ ts.accum(ts.f32)
    assert isinstance(pd.policy, ts.Policy) and pd.policy.accum is ts.f32
    assert isinstance(ts.Tensor["B", 3, ts.f64], ts.TensorType)
    seen = []

    def f(x):
        seen.append(isinstance(x, ts.Tracer))
        return x * 2.0
    lowered = ts.jit(f).lower(np.ones(3))
    assert isinstance(lowered, ts.Lowered) and seen == [True]
    _, treedef = tree.flatten({"a": 1.0, "b": [2.0]})
    assert isinstance(treedef, tree.TreeDef)
    p = op.tensor((2,), name="w", dtype="f64")
    assert isinstance(p, graph.Parameter)


def test_remat_is_checkpoint(rng):
    w = rng.standard_normal((3, 3))
    x = rng.standard_normal(3)
    f = lambda w: op.reduce_sum(op.tanh(w @ op.tanh(w @ x)))
    jf = lambda w: jnp.sum(jnp.tanh(w @ jnp.tanh(w @ x)))
    np.testing.assert_allclose(ts.grad(ts.remat(f))(w), jax.grad(jf)(w),
                               rtol=1e-12)


def test_initializers_and_sgd():
    rng = nn.rng(0)
    w = nn.he_normal(rng, (400, 300), "f64")
    assert abs(w.std() - np.sqrt(2 / 400)) < 0.02 * np.sqrt(2 / 400)
    a = nn.attention_init(rng, 8, 2, "f64")
    assert sorted(a) == ["wk", "wo", "wq", "wv"] and a["wq"].shape == (8, 8)
    ln = nn.layernorm_init(4, "f64")
    np.testing.assert_array_equal(ln["scale"], np.ones(4))
    opt = optim.SGD(lr=0.5, momentum=0.9)
    assert isinstance(opt, optim.SGD)
    params = {"w": np.array([1.0, -2.0])}
    st = opt.init(params)
    g = {"w": np.array([0.5, 0.5])}
    params, st = ts.jit(lambda p, s, g: opt.update(g, s, p))(params, st, g)
    np.testing.assert_allclose(params["w"], [0.75, -2.25])
    np.testing.assert_allclose(
        ts.jit(optim.global_norm)({"a": np.array([3.0]),
                                   "b": np.array([4.0])}), 5.0)


def test_multi_head_attention_against_numpy():
    rng = nn.rng(2)
    d, heads, s = 8, 2, 5
    p = nn.attention_init(rng, d, heads, "f64")
    x = rng.standard_normal((1, s, d))
    got = ts.jit(lambda p, x: nn.multi_head_attention(
        p, x, heads, causal=True, use_rope=False))(p, x)
    split = lambda t: t.reshape(1, s, heads, d // heads).transpose(0, 2, 1, 3)
    q, k, v = (split(x @ p[n]) for n in ("wq", "wk", "wv"))
    sc = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // heads)
    sc = np.where(np.tril(np.ones((s, s), bool)), sc, -np.inf)
    pr = np.exp(sc - sc.max(-1, keepdims=True))
    pr /= pr.sum(-1, keepdims=True)
    y = (pr @ v).transpose(0, 2, 1, 3).reshape(1, s, d) @ p["wo"]
    np.testing.assert_allclose(got, y, rtol=1e-12, atol=1e-12)
