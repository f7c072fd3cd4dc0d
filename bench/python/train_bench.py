"""One training step through ts.jit beside jax.jit (and PyTorch eager where
installed) on the same CPU, in the same run.

    PYTHONPATH=build/python build/venv/bin/python bench/python/train_bench.py

Models (f32, AdamW step included in every framework's step):
  mlp          3-layer MLP 1024-1024-1024-10, batch 256, cross-entropy
  transformer  2 pre-norm blocks, d=256, 4 heads, ffn 1024, seq 128,
               batch 8, vocab 512, causal attention with RoPE, next-token
               cross-entropy
Also the cache-hit call overhead of ts.jit on a small function.
Timings: medians over rounds of back-to-back calls, frameworks interleaved
round by round (the host is shared; ratios are medians of per-round ratios).
"""

import argparse
import math
import os
import platform
import statistics
import time

import numpy as np

import tessera as ts
from tessera import nn, op, optim


def times_ms(fn, calls):
    out = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return out


# -- Tessera ------------------------------------------------------------------

def tessera_mlp(params, x, y, lr):
    opt = optim.adamw(1e-3, weight_decay=1e-4)

    @ts.jit
    def step(params, state, x, y, lr):
        loss, g = ts.value_and_grad(
            lambda p: op.cross_entropy(nn.mlp(p, x), y))(params)
        params, state = opt.update(g, state, params, lr=lr)
        return params, state, loss

    state = opt.init(params)
    carry = [params, state]

    def run():
        carry[0], carry[1], loss = step(carry[0], carry[1], x, y, lr)
        return loss
    return run


def lm_loss(params, tokens, heads, block):
    x = nn.embedding(params["embed"], tokens[:, :-1])
    for p in params["blocks"]:
        x = block(p, x, heads)
    logits = op.matmul(nn.layernorm(params["ln"], x), params["out"])
    return op.cross_entropy(logits, tokens[:, 1:])


def tessera_transformer(params, tokens, lr, heads):
    opt = optim.adamw(1e-3, weight_decay=1e-4)

    @ts.jit
    def step(params, state, tokens, lr):
        loss, g = ts.value_and_grad(
            lambda p: lm_loss(p, tokens, heads, nn.transformer_block))(params)
        params, state = opt.update(g, state, params, lr=lr)
        return params, state, loss

    state = opt.init(params)
    carry = [params, state]

    def run():
        carry[0], carry[1], loss = step(carry[0], carry[1], tokens, lr)
        return loss
    return run


# -- JAX --------------------------------------------------------------------------

def jax_setup():
    import jax
    import jax.numpy as jnp

    def adamw(g, s, p, lr, b1=0.9, b2=0.999, eps=1e-8, wd=1e-4):
        t = s["t"] + 1.0
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, s["m"], g)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g,
                                   s["v"], g)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        p = jax.tree_util.tree_map(
            lambda p, m, v: p - lr * ((m / c1) / (jnp.sqrt(v / c2) + eps)
                                      + wd * p), p, m, v)
        return p, {"m": m, "v": v, "t": t}

    def init(p):
        z = jax.tree_util.tree_map(jnp.zeros_like, p)
        return {"m": z, "v": jax.tree_util.tree_map(jnp.zeros_like, p),
                "t": jnp.zeros((), jnp.float32)}

    def xent(logits, y):
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, y[..., None], -1))

    return jax, jnp, adamw, init, xent


def jax_mlp(params, x, y, lr):
    jax, jnp, adamw, init, xent = jax_setup()

    def forward(p, x):
        for i, l in enumerate(p):
            x = x @ l["w"] + l["b"]
            if i + 1 < len(p):
                x = jax.nn.relu(x)
        return x

    @jax.jit
    def step(p, s, x, y, lr):
        loss, g = jax.value_and_grad(lambda p: xent(forward(p, x), y))(p)
        p, s = adamw(g, s, p, lr)
        return p, s, loss

    p = jax.tree_util.tree_map(jnp.asarray, params)
    carry = [p, init(p)]
    x, y = jnp.asarray(x), jnp.asarray(y)

    def run():
        carry[0], carry[1], loss = step(carry[0], carry[1], x, y, lr)
        return loss.block_until_ready()
    return run


def jax_transformer(params, tokens, lr, heads):
    jax, jnp, adamw, init, xent = jax_setup()

    def ln(p, x):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * p["scale"] + p["bias"]

    def rope(x):
        s, dh = x.shape[-2:]
        half = dh // 2
        pos = jnp.arange(s, dtype=x.dtype)[:, None]
        freq = jnp.exp(jnp.arange(half, dtype=x.dtype) * (-2 * math.log(1e4) / dh))
        a = pos * freq
        x1, x2 = x[..., :half], x[..., half:]
        return jnp.concatenate([x1 * jnp.cos(a) - x2 * jnp.sin(a),
                                x1 * jnp.sin(a) + x2 * jnp.cos(a)], -1)

    def attn(p, x):
        b, s, d = x.shape
        split = lambda t: t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)
        q, k, v = split(x @ p["wq"]), split(x @ p["wk"]), split(x @ p["wv"])
        q, k = rope(q), rope(k)
        sc = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads)
        sc = jnp.where(jnp.tril(jnp.ones((s, s), bool)), sc, -jnp.inf)
        y = jax.nn.softmax(sc) @ v
        return y.transpose(0, 2, 1, 3).reshape(b, s, d) @ p["wo"]

    def block(p, x):
        x = x + attn(p["attn"], ln(p["ln1"], x))
        h = jax.nn.gelu(ln(p["ln2"], x) @ p["up"]["w"] + p["up"]["b"],
                        approximate=True)
        return x + h @ p["down"]["w"] + p["down"]["b"]

    def loss_fn(p, tokens):
        x = p["embed"]["table"][tokens[:, :-1]]
        for bp in p["blocks"]:
            x = block(bp, x)
        return xent(ln(p["ln"], x) @ p["out"], tokens[:, 1:])

    @jax.jit
    def step(p, s, tokens, lr):
        loss, g = jax.value_and_grad(loss_fn)(p, tokens)
        p, s = adamw(g, s, p, lr)
        return p, s, loss

    p = jax.tree_util.tree_map(jnp.asarray, params)
    carry = [p, init(p)]
    tokens = jnp.asarray(tokens)

    def run():
        carry[0], carry[1], loss = step(carry[0], carry[1], tokens, lr)
        return loss.block_until_ready()
    return run


def torch_mlp(params, x, y, lr):
    import torch
    ps = [{k: torch.tensor(v, requires_grad=True) for k, v in l.items()}
          for l in params]
    flat = [t for l in ps for t in l.values()]
    opt = torch.optim.AdamW(flat, lr=float(lr), weight_decay=1e-4)
    x, y = torch.tensor(x), torch.tensor(y).long()

    def run():
        h = x
        for i, l in enumerate(ps):
            h = h @ l["w"] + l["b"]
            if i + 1 < len(ps):
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()
    return run


def torch_transformer(params, tokens, lr, heads):
    import torch
    import torch.nn.functional as F
    t = lambda a: torch.tensor(np.asarray(a), requires_grad=True)
    p = {"embed": t(params["embed"]["table"]), "out": t(params["out"]),
         "ln": {k: t(v) for k, v in params["ln"].items()},
         "blocks": [{"ln1": {k: t(v) for k, v in b["ln1"].items()},
                     "ln2": {k: t(v) for k, v in b["ln2"].items()},
                     "attn": {k: t(v) for k, v in b["attn"].items()},
                     "up": {k: t(v) for k, v in b["up"].items()},
                     "down": {k: t(v) for k, v in b["down"].items()}}
                    for b in params["blocks"]]}
    flat = [p["embed"], p["out"], *p["ln"].values()]
    for b in p["blocks"]:
        for part in b.values():
            flat += list(part.values())
    opt = torch.optim.AdamW(flat, lr=float(lr), weight_decay=1e-4)
    tok = torch.tensor(tokens).long()

    def rope(x):
        s, dh = x.shape[-2:]
        half = dh // 2
        a = (torch.arange(s, dtype=x.dtype)[:, None] *
             torch.exp(torch.arange(half, dtype=x.dtype) *
                       (-2 * math.log(1e4) / dh)))
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * a.cos() - x2 * a.sin(),
                          x1 * a.sin() + x2 * a.cos()], -1)

    def block(b, x):
        B, S, D = x.shape
        h = F.layer_norm(x, (D,), b["ln1"]["scale"], b["ln1"]["bias"])
        split = lambda z: z.view(B, S, heads, D // heads).transpose(1, 2)
        a = b["attn"]
        q, k, v = split(h @ a["wq"]), split(h @ a["wk"]), split(h @ a["wv"])
        y = F.scaled_dot_product_attention(rope(q), rope(k), v,
                                           is_causal=True)
        x = x + y.transpose(1, 2).reshape(B, S, D) @ a["wo"]
        h = F.layer_norm(x, (D,), b["ln2"]["scale"], b["ln2"]["bias"])
        u = F.gelu(h @ b["up"]["w"] + b["up"]["b"], approximate="tanh")
        return x + u @ b["down"]["w"] + b["down"]["b"]

    def run():
        x = p["embed"][tok[:, :-1]]
        for b in p["blocks"]:
            x = block(b, x)
        d = x.shape[-1]
        logits = F.layer_norm(x, (d,), p["ln"]["scale"], p["ln"]["bias"]) \
            @ p["out"]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               tok[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()
    return run


# -- driver -----------------------------------------------------------------------

def compare(name, makers, calls, rounds):
    runs = {k: m() for k, m in makers.items()}
    # The first step's loss (same parameters and data everywhere) shows the
    # frameworks compute the same thing; then warm up.
    first = {k: float(np.asarray(r())) for k, r in runs.items()}
    for r in runs.values():
        r()
    print(f"{name:12s} first-step loss: " + ", ".join(
        f"{k} {v:.6f}" for k, v in first.items()))
    per_round = {k: [] for k in runs}
    for _ in range(rounds):
        for k, r in runs.items():
            per_round[k].append(statistics.median(times_ms(r, calls)))
    base = per_round["tessera"]
    line = [f"{name:12s} tessera {statistics.median(base):8.2f} ms"]
    for k in runs:
        if k == "tessera":
            continue
        ratio = statistics.median(o / t for o, t in zip(per_round[k], base))
        line.append(f"{k} {statistics.median(per_round[k]):8.2f} ms "
                    f"({k}/tessera {ratio:.2f})")
    print("  ".join(line))


def call_overhead():
    f = ts.jit(lambda x: x * 2.0 + 1.0)
    x = np.ones(16, np.float32)
    f(x)
    n = 20000
    best = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            f(x)
        best.append((time.perf_counter() - t) / n * 1e6)
    print(f"ts.jit cache-hit call of x*2+1 on f32[16]: {min(best):.2f} us "
          f"(best of 5 x {n}), median {statistics.median(best):.2f} us")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import jax
    versions = f"jax {jax.__version__}"
    try:
        import torch
        versions += f", torch {torch.__version__} ({torch.get_num_threads()} threads)"
        have_torch = True
    except ImportError:
        have_torch = False
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} "
          f"cpus, {ts.num_threads()} Tessera threads; numpy "
          f"{np.__version__}, {versions}")
    call_overhead()

    rng = nn.rng(0)
    params = nn.mlp_init(rng, [1024, 1024, 1024, 10])
    x = rng.standard_normal((256, 1024)).astype(np.float32)
    y = rng.integers(0, 10, 256).astype(np.int32)
    lr = np.float32(1e-3)
    makers = {"tessera": lambda: tessera_mlp(params, x, y, lr),
              "jax": lambda: jax_mlp(params, x, y, lr)}
    if have_torch:
        makers["torch_eager"] = lambda: torch_mlp(params, x, y, lr)
    compare("mlp", makers, args.calls, args.rounds)

    d, heads, ffn, vocab, seq, batch = 256, 4, 1024, 512, 128, 8
    tparams = {"embed": nn.embedding_init(rng, vocab, d),
               "blocks": [nn.transformer_block_init(rng, d, heads, ffn)
                          for _ in range(2)],
               "ln": nn.layernorm_init(d),
               "out": nn.glorot_uniform(rng, (d, vocab))}
    tokens = rng.integers(0, vocab, (batch, seq + 1)).astype(np.int32)
    makers = {"tessera": lambda: tessera_transformer(tparams, tokens, lr, heads),
              "jax": lambda: jax_transformer(tparams, tokens, lr, heads)}
    if have_torch:
        makers["torch_eager"] = lambda: torch_transformer(tparams, tokens, lr,
                                                          heads)
    compare("transformer", makers, args.calls, args.rounds)


if __name__ == "__main__":
    main()
