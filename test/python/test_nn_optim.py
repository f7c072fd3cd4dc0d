"""Building blocks against JAX/NumPy, optimizers against their published
update rules written out in NumPy, checkpoints, datasets and pytrees."""

import dataclasses
import gzip
import math
import struct
from collections import namedtuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tessera as ts
from tessera import datasets, io, nn, op, optim, training

jax.config.update("jax_enable_x64", True)


def close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol,
                               atol=atol)


def jax_block(p, x, heads):
    def ln(q, x):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * q["scale"] + q["bias"]

    def rope(x):
        s, dh = x.shape[-2:]
        half = dh // 2
        a = (jnp.arange(s)[:, None] *
             jnp.exp(jnp.arange(half) * (-2 * math.log(1e4) / dh)))
        x1, x2 = x[..., :half], x[..., half:]
        return jnp.concatenate([x1 * jnp.cos(a) - x2 * jnp.sin(a),
                                x1 * jnp.sin(a) + x2 * jnp.cos(a)], -1)

    b, s, d = x.shape
    a = p["attn"]
    split = lambda t: t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)
    h = ln(p["ln1"], x)
    q, k, v = split(h @ a["wq"]), split(h @ a["wk"]), split(h @ a["wv"])
    q, k = rope(q), rope(k)
    sc = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads)
    sc = jnp.where(jnp.tril(jnp.ones((s, s), bool)), sc, -jnp.inf)
    y = (jax.nn.softmax(sc) @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    x = x + y @ a["wo"]
    u = jax.nn.gelu(ln(p["ln2"], x) @ p["up"]["w"] + p["up"]["b"],
                    approximate=True)
    return x + u @ p["down"]["w"] + p["down"]["b"]


def test_transformer_block_and_its_gradient_match_jax():
    rng = nn.rng(3)
    p = nn.transformer_block_init(rng, 16, 2, 32, dtype="f64")
    x = rng.standard_normal((2, 5, 16))
    close(ts.jit(lambda p, x: nn.transformer_block(p, x, 2))(p, x),
          jax_block(p, x, 2), rtol=1e-10)
    g = ts.grad(lambda p, x: op.reduce_sum(nn.transformer_block(p, x, 2)))(p, x)
    jg = jax.grad(lambda p, x: jnp.sum(jax_block(p, x, 2)))(p, x)
    for a, b in zip(ts.tree.leaves(g), jax.tree_util.tree_leaves(jg)):
        close(a, b, rtol=1e-9, atol=1e-11)


def test_rope_with_a_symbolic_sequence_dim():

    @ts.jit
    def g(x: ts.Tensor["B", "S", 8, ts.f64]):
        return nn.rope(x)

    for s in (3, 6):
        x = np.random.default_rng(s).standard_normal((2, s, 8))
        half = 4
        a = np.arange(s)[:, None] * np.exp(np.arange(half) *
                                           (-2 * math.log(1e4) / 8))
        want = np.concatenate([x[..., :4] * np.cos(a) - x[..., 4:] * np.sin(a),
                               x[..., :4] * np.sin(a) + x[..., 4:] * np.cos(a)],
                              -1)
        close(g(x), want, rtol=1e-12)
    assert len(g._cache) == 1


def test_rope_of_bf16_keeps_positions_exact():
    # bf16 positions stop being integers past 256 (2047 rounds to 2048):
    # the angles are computed in f32, only cos/sin rounded to bf16.
    import ml_dtypes
    s, dh = 2048, 16
    x = np.random.default_rng(7).standard_normal((1, s, dh)).astype(
        ml_dtypes.bfloat16)
    got = np.asarray(ts.jit(nn.rope)(x)).astype(np.float64)
    xf = x.astype(np.float64)
    half = dh // 2
    a = np.arange(s)[:, None] * np.exp(np.arange(half) *
                                       (-2 * math.log(1e4) / dh))
    want = np.concatenate([xf[..., :half] * np.cos(a) - xf[..., half:] *
                           np.sin(a), xf[..., :half] * np.sin(a) +
                           xf[..., half:] * np.cos(a)], -1)
    # bf16 cos/sin and a bf16 result: a few 2^-8 of |x|.
    np.testing.assert_allclose(got, want, rtol=0, atol=0.05)


def test_layers_against_numpy():
    rng = nn.rng(1)
    lin = nn.linear_init(rng, 4, 3, dtype="f64")
    x = rng.standard_normal((5, 4))
    close(ts.jit(nn.linear)(lin, x), x @ lin["w"] + lin["b"])
    layers = nn.mlp_init(rng, [4, 6, 2], dtype="f64")
    want = np.maximum(x @ layers[0]["w"] + layers[0]["b"], 0) @ \
        layers[1]["w"] + layers[1]["b"]
    close(ts.jit(nn.mlp)(layers, x), want)
    emb = nn.embedding_init(rng, 7, 3, dtype="f64")
    ids = np.array([[0, 6], [3, 3]], np.int32)
    close(ts.jit(nn.embedding)(emb, ids), emb["table"][ids])
    rms = nn.rmsnorm_init(4, "f64")
    close(ts.jit(nn.rmsnorm)(rms, x),
          x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6))
    conv = nn.conv2d_init(rng, 2, 3, 3, dtype="f64")
    img = rng.standard_normal((1, 5, 5, 2))
    got = ts.jit(nn.conv2d)(conv, img)
    want = np.zeros((1, 3, 3, 3))
    for i in range(3):
        for j in range(3):
            want[0, i, j] = np.einsum("hwc,hwco->o", img[0, i:i + 3, j:j + 3],
                                      conv["w"]) + conv["b"]
    close(got, want, rtol=1e-11)
    assert nn.glorot_uniform(rng, (10, 20)).std() < math.sqrt(6 / 30)


def numpy_adamw(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    mhat, vhat = m / (1 - b1 ** t), v / (1 - b2 ** t)
    return p - lr * (mhat / (np.sqrt(vhat) + eps) + wd * p), m, v


@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_adam_and_adamw_follow_the_published_rule(wd):
    rng = np.random.default_rng(0)
    p = {"a": rng.standard_normal((3, 2)), "b": rng.standard_normal(4)}
    opt = optim.Adam(0.05, weight_decay=wd)
    state = opt.init(p)
    step = ts.jit(lambda g, s, p: opt.update(g, s, p))
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(x) for k, x in p.items()}
    ref = dict(p)
    for t in range(1, 4):
        g = {k: rng.standard_normal(x.shape) for k, x in p.items()}
        p, state = step(g, state, p)
        for k in ref:
            ref[k], m[k], v[k] = numpy_adamw(ref[k], g[k], m[k], v[k], t,
                                             0.05, wd=wd)
        for k in ref:
            close(p[k], ref[k], rtol=1e-12)


def test_sgd_momentum_clip_and_ema():
    p = {"w": np.ones(3)}
    g = {"w": np.array([3.0, 4.0, 0.0])}
    opt = optim.sgd(0.1, momentum=0.9)
    s = opt.init(p)
    upd = ts.jit(lambda g, s, p: opt.update(g, s, p))
    p1, s1 = upd(g, s, p)
    close(p1["w"], 1 - 0.1 * g["w"])
    p2, _ = upd(g, s1, p1)
    close(p2["w"], p1["w"] - 0.1 * (0.9 * g["w"] + g["w"]))
    clipped, norm = ts.jit(lambda g: optim.clip_by_global_norm(g, 1.0))(g)
    close(norm, 5.0)
    close(clipped["w"], g["w"] / 5.0)
    same, _ = ts.jit(lambda g: optim.clip_by_global_norm(g, 10.0))(g)
    close(same["w"], g["w"])
    close(optim.ema({"w": np.zeros(3)}, p, 0.9)["w"], 0.1 * np.ones(3))
    sched = optim.cosine_schedule(1.0, 100, warmup_steps=10)
    assert sched(0) == pytest.approx(0.1) and sched(10) == pytest.approx(1.0)
    assert sched(100) == pytest.approx(0.0)
    assert optim.step_schedule(1.0, [5])(6) == pytest.approx(0.1)


def test_checkpoint_round_trip_and_errors(tmp_path):
    params = [{"w": np.arange(6.0).reshape(2, 3), "b": np.zeros(3, np.float32)}]
    path = str(tmp_path / "ckpt.npz")
    io.save(path, params)
    back = io.load(path, params)
    close(back[0]["w"], params[0]["w"], rtol=0, atol=0)
    assert back[0]["b"].dtype == np.float32
    with pytest.raises(ValueError, match="missing"):
        io.load(path, params + [{"w": np.zeros(1)}])
    with pytest.raises(ValueError, match="expected float64"):
        io.load(path, [{"w": np.zeros((2, 3), np.float64),
                                "b": np.zeros(3, np.float64)}])
    (tmp_path / "bad.npz").write_bytes(b"not a zip file")
    with pytest.raises(Exception):
        io.load(str(tmp_path / "bad.npz"), params)


def write_idx(path, array):
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(
        f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def test_idx_reader_and_fashion_mnist_layout(tmp_path):
    imgs = np.arange(2 * 28 * 28).reshape(2, 28, 28) % 256
    labels = np.array([3, 9])
    for split in ("train", "t10k"):
        write_idx(str(tmp_path / f"{split}-images-idx3-ubyte.gz"), imgs)
        write_idx(str(tmp_path / f"{split}-labels-idx1-ubyte.gz"), labels)
    x, y = datasets.fashion_mnist("test", root=str(tmp_path))
    np.testing.assert_array_equal(x, imgs)
    np.testing.assert_array_equal(y, labels)
    assert y.dtype == np.int32
    with pytest.raises(ValueError, match="split must be"):
        datasets.fashion_mnist("valid", root=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
        datasets.fashion_mnist("train", root=str(tmp_path / "nowhere"))
    bad = tmp_path / "bad.gz"
    with gzip.open(bad, "wb") as f:
        f.write(b"\x00\x00\x08\x01\x00\x00\x00\x05ab")
    with pytest.raises(ValueError, match="needs 5 bytes"):
        datasets.read_idx(str(bad))
    batches = list(datasets.batches((np.arange(5), np.arange(5) * 2), 2))
    assert [len(b[0]) for b in batches] == [2, 2, 1]


def test_fit_reports_metrics():
    def step(carry, x, index):
        return carry + 1, {"loss": float(x)}

    carry, history = training.fit(step, 0, lambda e: iter([(1.0,), (3.0,)]),
                                  epochs=2, progress=False, log=None,
                                  evaluate=lambda c: {"seen": c})
    assert carry == 4
    assert history["train_loss"] == [2.0, 2.0]
    assert history["seen"] == [2.0, 4.0]
    assert training.accuracy([1, 2, 3], [1, 0, 3]) == pytest.approx(2 / 3)


Point = namedtuple("Point", "x y")


@dataclasses.dataclass
class Params:
    w: object
    b: object


def test_pytrees_round_trip_and_jit():
    t = {"b": [1, (2, 3)], "a": Point(4, None), "c": Params(5, 6)}
    leaves, td = ts.tree.flatten(t)
    assert leaves == [4, 1, 2, 3, 5, 6]
    assert ts.tree.unflatten(td, leaves) == t
    out = ts.jit(lambda p: Params(p.w * 2.0, p.b + 1.0))(
        Params(np.ones(2), np.zeros(2)))
    assert isinstance(out, Params)
    close(out.w, [2.0, 2.0])
    with pytest.raises(ValueError, match="different structure"):
        ts.tree.map(lambda a, b: a, {"a": 1}, {"b": 1})


def test_optimizer_constructors_and_history(tmp_path):
    p = {"w": np.ones(2)}
    g = {"w": np.array([1.0, -1.0])}
    for opt in (optim.adam(0.1), optim.adamw(0.1, weight_decay=0.5)):
        new, state = ts.jit(lambda g, s, p: opt.update(g, s, p))(
            g, opt.init(p), p)
        # First Adam step: m/c1 = g, v/c2 = g^2, so the update is ~sign(g).
        wd = opt.weight_decay
        close(new["w"], 1 - 0.1 * (np.sign(g["w"]) * (1 / (1 + 1e-8)) + wd),
              rtol=1e-6)
        close(state["t"], 1.0)
    assert optim.constant_schedule(0.3)(1000) == 0.3
    h = training.History()
    h.add(loss=1.5)
    h.add(loss=0.5)
    h.save(str(tmp_path / "h.json"))
    import json
    assert json.loads((tmp_path / "h.json").read_text()) == {"loss": [1.5, 0.5]}
    assert h.last() == {"loss": 0.5}
