"""Autodiff against JAX on random programs.

Each seed builds a random DAG of 5-30 ops (matmul, reductions, softmax,
layernorm, broadcasting arithmetic, reshape/transpose, slicing, ...) on
float64 inputs, written both as Graph IR and as a JAX function, ending in a
scalar loss. Tessera's gradient (tgraph.adjoint), JVP (tgraph.jvp) and HVP
(tgraph.hvp) must agree with jax.grad, jax.jvp and jax.jvp(jax.grad) on
random points and directions. A failing program is shrunk (the shortest
prefix that still fails, then ops removed one at a time) and printed.

CI runs TESSERA_AD_PROGRAMS (default 40) seeds; the full sweep is
TESSERA_AD_PROGRAMS=300.
"""

import os

import numpy as np
import pytest

from harness import run

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

PROGRAMS = int(os.environ.get("TESSERA_AD_PROGRAMS", "40"))
BATCH = 10  # programs per compiled module
RTOL = 1e-9


def ttype(shape):
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f64>"


class Program:
    """A random DAG: `steps` are (name, shape, ir-format, jax-lambda, inputs)."""

    def __init__(self, rng, n_ops):
        self.rng = rng
        self.inputs = []  # (name, shape)
        self.steps = []   # (name, shape, ir, fn, operand names)
        self.shapes = {}
        self.counter = 0
        for _ in range(rng.integers(1, 3)):
            self.new_input(self.random_shape())
        while len(self.steps) < n_ops:
            self.add_random_op()

    def random_shape(self):
        rank = self.rng.integers(1, 4)
        return tuple(int(d) for d in self.rng.integers(2, 5, rank))

    def fresh(self):
        self.counter += 1
        return f"v{self.counter}"

    def new_input(self, shape):
        name = f"in{len(self.inputs)}"
        self.inputs.append((name, shape))
        self.shapes[name] = shape
        return name

    def values(self):
        return [n for n, _ in self.inputs] + [s[0] for s in self.steps]

    def pick(self, pred=lambda s: True):
        names = [n for n in self.values() if pred(self.shapes[n])]
        return None if not names else names[self.rng.integers(len(names))]

    def emit(self, shape, ir, fn, operands):
        name = self.fresh()
        self.shapes[name] = shape
        self.steps.append((name, shape, ir, fn, operands))
        return name

    def add_random_op(self):
        kind = self.rng.choice(["unary", "binary", "binary", "matmul", "reduce", "softmax",
                                "layernorm", "layout", "slice", "concat"])
        getattr(self, "op_" + str(kind))()

    def op_unary(self):
        x = self.pick()
        op = self.rng.choice(["tanh", "sin", "cos", "sigmoid", "square", "softexp", "neg"])
        s = self.shapes[x]
        t = ttype(s)
        if op == "softexp":
            # exp of something bounded, so values stay moderate.
            self.emit(s, f"%{{o}}_t = tgraph.tanh %{x} : {t}\n"
                         f"    %{{o}} = tgraph.exp %{{o}}_t : {t}",
                      lambda e: jnp.exp(jnp.tanh(e[x])), [x])
        elif op == "square":
            self.emit(s, f"%{{o}} = tgraph.square %{x} : {t}", lambda e: e[x] ** 2, [x])
        else:
            fn = {"tanh": jnp.tanh, "sin": jnp.sin, "cos": jnp.cos,
                  "sigmoid": jax.nn.sigmoid, "neg": jnp.negative}[op]
            self.emit(s, f"%{{o}} = tgraph.{op} %{x} : {t}", lambda e: fn(e[x]), [x])

    def op_binary(self):
        a = self.pick()
        sa = self.shapes[a]
        # b: the same shape, a suffix (broadcast), a scalar, or a new input.
        choice = self.rng.integers(4)
        if choice == 0:
            b = self.pick(lambda s: s == sa) or self.new_input(sa)
        elif choice == 1:
            suffix = sa[self.rng.integers(0, len(sa)):] if sa else ()
            b = self.pick(lambda s: s == suffix and s != sa) or self.new_input(suffix)
        elif choice == 2:
            b = self.pick(lambda s: s == ()) or self.new_input(())
        else:
            b = self.new_input(sa)
        op = self.rng.choice(["add", "sub", "mul"])
        if self.rng.integers(2):
            a, b = b, a
        shape = tuple(np.broadcast_shapes(self.shapes[a], self.shapes[b]))
        fn = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply}[op]
        self.emit(shape, f"%{{o}} = tgraph.{op} %{a}, %{b} : ({ttype(self.shapes[a])}, "
                         f"{ttype(self.shapes[b])}) -> {ttype(shape)}",
                  lambda e: fn(e[a], e[b]), [a, b])

    def op_matmul(self):
        a = self.pick(lambda s: len(s) >= 2)
        if a is None:
            return self.op_unary()
        sa = self.shapes[a]
        n = int(self.rng.integers(2, 5))
        b = self.pick(lambda s: s == (sa[-1], n)) or self.new_input((sa[-1], n))
        shape = sa[:-1] + (self.shapes[b][1],)
        self.emit(shape, f"%{{o}} = tgraph.matmul %{a}, %{b} : ({ttype(sa)}, "
                         f"{ttype(self.shapes[b])}) -> {ttype(shape)}",
                  lambda e: jnp.matmul(e[a], e[b]), [a, b])

    def op_reduce(self):
        x = self.pick(lambda s: len(s) >= 1)
        s = self.shapes[x]
        axis = int(self.rng.integers(len(s)))
        keep = bool(self.rng.integers(2))
        op = self.rng.choice(["reduce_sum", "reduce_mean", "reduce_max"])
        shape = tuple(1 if i == axis else d for i, d in enumerate(s)) if keep else \
            tuple(d for i, d in enumerate(s) if i != axis)
        fn = {"reduce_sum": jnp.sum, "reduce_mean": jnp.mean, "reduce_max": jnp.max}[op]
        kd = ", keepdims" if keep else ""
        self.emit(shape, f"%{{o}} = tgraph.{op} %{x} {{{{dims = array<i64: {axis}>{kd}}}}} : "
                         f"({ttype(s)}) -> {ttype(shape)}",
                  lambda e: fn(e[x], axis=axis, keepdims=keep), [x])

    def op_softmax(self):
        x = self.pick(lambda s: len(s) >= 1)
        s = self.shapes[x]
        d = len(s) - 1
        op = self.rng.choice(["softmax", "log_softmax", "logsumexp"])
        if op == "logsumexp":
            shape = s[:-1]
            self.emit(shape, f"%{{o}} = tgraph.logsumexp %{x} {{{{dim = {d} : i64}}}} : "
                             f"({ttype(s)}) -> {ttype(shape)}",
                      lambda e: jax.nn.logsumexp(e[x], axis=d), [x])
            return
        fn = jax.nn.softmax if op == "softmax" else jax.nn.log_softmax
        self.emit(s, f"%{{o}} = tgraph.{op} %{x} {{{{dim = {d} : i64}}}} : {ttype(s)}",
                  lambda e: fn(e[x], axis=d), [x])

    def op_layernorm(self):
        x = self.pick(lambda s: len(s) >= 2)
        if x is None:
            return self.op_softmax()
        s = self.shapes[x]
        g = self.new_input(s[-1:])
        b = self.new_input(s[-1:])

        def ln(e):
            v = e[x]
            m = jnp.mean(v, axis=-1, keepdims=True)
            var = jnp.mean((v - m) ** 2, axis=-1, keepdims=True)
            return (v - m) / jnp.sqrt(var + 1e-5) * e[g] + e[b]
        self.emit(s, f"%{{o}} = tgraph.layernorm %{x} scale %{g} bias %{b} "
                     f"{{{{axis = {len(s) - 1} : i64}}}} : ({ttype(s)}, {ttype(s[-1:])}, "
                     f"{ttype(s[-1:])}) -> {ttype(s)}", ln, [x, g, b])

    def op_layout(self):
        x = self.pick(lambda s: len(s) >= 2)
        if x is None:
            return self.op_unary()
        s = self.shapes[x]
        if self.rng.integers(2):
            perm = list(range(len(s)))
            perm[-1], perm[-2] = perm[-2], perm[-1]
            shape = tuple(s[p] for p in perm)
            self.emit(shape, f"%{{o}} = tgraph.transpose %{x} {{{{permutation = array<i64: "
                             f"{', '.join(map(str, perm))}>}}}} : ({ttype(s)}) -> {ttype(shape)}",
                      lambda e: jnp.transpose(e[x], perm), [x])
        else:
            shape = s[:-2] + (s[-2] * s[-1],)
            self.emit(shape, f"%{{o}} = tgraph.reshape %{x} : ({ttype(s)}) -> {ttype(shape)}",
                      lambda e: jnp.reshape(e[x], shape), [x])

    def op_slice(self):
        x = self.pick(lambda s: len(s) >= 1 and max(s) >= 3)
        if x is None:
            return self.op_unary()
        s = self.shapes[x]
        axis = int(np.argmax(s))
        start = [0] * len(s)
        limit = list(s)
        start[axis] = 1
        shape = tuple(lim - st for st, lim in zip(start, limit))
        idx = tuple(slice(st, lim) for st, lim in zip(start, limit))
        self.emit(shape, f"%{{o}} = tgraph.slice %{x} {{{{start = #tgraph.dims<[{', '.join(map(str, start))}]>, "
                         f"limit = #tgraph.dims<[{', '.join(map(str, limit))}]>, "
                         f"stride = array<i64: {', '.join('1' for _ in s)}>}}}} : "
                         f"({ttype(s)}) -> {ttype(shape)}",
                  lambda e: e[x][idx], [x])

    def op_concat(self):
        a = self.pick(lambda s: len(s) >= 1)
        s = self.shapes[a]
        b = self.pick(lambda t: t == s and t != ()) or self.new_input(s)
        axis = int(self.rng.integers(len(s)))
        shape = tuple(d * 2 if i == axis else d for i, d in enumerate(s))
        self.emit(shape, f"%{{o}} = tgraph.concat %{a}, %{b} {{{{dim = {axis} : i64}}}} : "
                         f"({ttype(s)}, {ttype(s)}) -> {ttype(shape)}",
                  lambda e: jnp.concatenate([e[a], e[b]], axis=axis), [a, b])

    # -- output ---------------------------------------------------------------

    @staticmethod
    def needed(steps):
        """The steps the last value depends on, in order."""
        used = {steps[-1][0]}
        for name, _, _, _, operands in reversed(steps):
            if name in used:
                used.update(operands)
        return [s for s in steps if s[0] in used]

    def live(self, steps):
        """The inputs the needed steps use."""
        used = set()
        for _, _, _, _, operands in self.needed(steps):
            used.update(operands)
        return [(n, s) for n, s in self.inputs if n in used]

    def ir(self, fn, steps):
        inputs = self.live(steps)
        last, shape = steps[-1][0], steps[-1][1]
        sig = ", ".join(f'%{n}: {ttype(s)} {{tgraph.name = "{n}"}}' for n, s in inputs)
        body = []
        for name, _, ir, _, _ in self.needed(steps):
            body.append("    " + ir.format(o=name))
        dims = "".join(f"{', ' if i else ': '}{i}" for i in range(len(shape)))
        # loss = sum(tanh(last))
        body.append(f"    %t = tgraph.tanh %{last} : {ttype(shape)}")
        body.append(f"    %loss = tgraph.reduce_sum %t {{dims = array<i64{dims}>}} : "
                    f"({ttype(shape)}) -> tensor<f64>")
        wrt = ", ".join(f"%{n}" for n, _ in inputs)
        dirs = ", ".join(f"%dir_{n}" for n, _ in inputs)
        return (f"func.func @{fn}({sig}) -> tensor<f64> {{\n" + "\n".join(body) +
                f"\n    return %loss : tensor<f64>\n}}\n"
                f"tgraph.adjoint @{fn} wrt({wrt}) -> @{fn}_grad\n"
                f"tgraph.jvp @{fn} wrt({wrt}) -> @{fn}_jvp\n"
                f"tgraph.hvp @{fn} wrt({wrt}) dir({dirs}) -> @{fn}_hvp\n")

    def jax_fn(self, steps):
        inputs = self.live(steps)

        def f(*args):
            env = {n: a for (n, _), a in zip(inputs, args)}
            for name, _, _, fn, _ in self.needed(steps):
                env[name] = fn(env)
            return jnp.sum(jnp.tanh(env[steps[-1][0]]))
        return f

    def source(self, steps):
        return self.ir("loss", steps)


def references(program, steps, args, tangents):
    f = program.jax_fn(steps)
    grads = jax.grad(f, argnums=tuple(range(len(args))))(*args)
    _, jv = jax.jvp(f, tuple(args), tuple(tangents))
    hv = jax.jvp(jax.grad(f, argnums=tuple(range(len(args)))), tuple(args),
                 tuple(tangents))[1]
    return [np.asarray(g) for g in grads], float(jv), [np.asarray(h) for h in hv]


def close(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=RTOL, atol=RTOL)


def check(program, steps, fn, module, rng_seed):
    """None if Tessera agrees with JAX, else a description."""
    rng = np.random.default_rng(rng_seed)
    inputs = program.live(steps)
    args = [rng.standard_normal(s) for _, s in inputs]
    tangents = [rng.standard_normal(s) for _, s in inputs]
    grads, jv, hv = references(program, steps, args, tangents)
    ours = run(module, args, fn=f"{fn}_grad")
    if not all(close(o, g) for o, g in zip(ours, grads)):
        return "gradient", ours, grads
    _, ours_jv = run(module, args + tangents, fn=f"{fn}_jvp")
    if not close(ours_jv, jv):
        return "jvp", ours_jv, jv
    ours_hv = run(module, args + tangents, fn=f"{fn}_hvp")
    if not all(close(o, h) for o, h in zip(ours_hv, hv)):
        return "hvp", ours_hv, hv
    return None


def shrink(program, steps, rng_seed):
    """The shortest prefix that still fails, then single ops removed where
    the rest stays valid and failing."""
    def fails(candidate):
        try:
            return check(program, candidate, "loss", program.source(candidate),
                         rng_seed) is not None
        except Exception:  # noqa: BLE001 - an error is a failure too
            return True

    for k in range(1, len(steps) + 1):
        if fails(steps[:k]):
            steps = steps[:k]
            break
    i = 0
    while i < len(steps) - 1:
        name = steps[i][0]
        rest = steps[:i] + steps[i + 1:]
        if not any(name in s[4] for s in rest) and fails(rest):
            steps = rest
        else:
            i += 1
    return steps


@pytest.mark.parametrize("batch", range((PROGRAMS + BATCH - 1) // BATCH))
def test_random_programs_against_jax(batch):
    programs = []
    for seed in range(batch * BATCH, min((batch + 1) * BATCH, PROGRAMS)):
        rng = np.random.default_rng(1000 + seed)
        programs.append((seed, Program(rng, int(rng.integers(5, 31)))))
    module = "".join(p.ir(f"p{seed}", p.steps) for seed, p in programs)
    for seed, program in programs:
        try:
            failure = check(program, program.steps, f"p{seed}", module, seed)
        except Exception as error:  # noqa: BLE001
            failure = ("error", str(error)[:2000], None)
        if failure is not None:
            steps = shrink(program, program.steps, seed)
            pytest.fail(f"seed {seed}: {failure[0]} disagrees with JAX\n"
                        f"Tessera: {failure[1]}\nJAX: {failure[2]}\n"
                        f"shrunk program ({len(steps)} of {len(program.steps)} ops):\n"
                        f"{program.source(steps)}")


def test_mlp_hvp_matches_jax():
    # The HVP of a 2-layer tanh MLP loss with respect to both weight
    # matrices, against jax.jvp(jax.grad(loss)).
    rng = np.random.default_rng(21)
    x, y = rng.standard_normal((6, 4)), rng.standard_normal((6, 3))
    w1, w2 = rng.standard_normal((4, 5)) / 2, rng.standard_normal((5, 3)) / 2
    v1, v2 = rng.standard_normal(w1.shape), rng.standard_normal(w2.shape)
    ir = """func.func @loss(%x: tensor<6x4xf64>, %y: tensor<6x3xf64>,
                     %w1: tensor<4x5xf64> {tgraph.name = "w1"},
                     %w2: tensor<5x3xf64> {tgraph.name = "w2"}) -> tensor<f64> {
      %h = tgraph.matmul %x, %w1 : (tensor<6x4xf64>, tensor<4x5xf64>) -> tensor<6x5xf64>
      %a = tgraph.tanh %h : tensor<6x5xf64>
      %o = tgraph.matmul %a, %w2 : (tensor<6x5xf64>, tensor<5x3xf64>) -> tensor<6x3xf64>
      %l = tgraph.cross_entropy %o, %y
          : (tensor<6x3xf64>, tensor<6x3xf64>) -> tensor<f64>
      return %l : tensor<f64>
    }
    tgraph.hvp @loss wrt(%w1, %w2) dir(%v1, %v2) -> @hvp
    """
    h1, h2 = run(ir, [x, y, w1, w2, v1, v2], fn="hvp")

    def loss(w1, w2):
        logits = jnp.tanh(x @ w1) @ w2
        return jnp.mean(-jnp.sum(y * jax.nn.log_softmax(logits, axis=1), axis=1))
    _, (r1, r2) = jax.jvp(jax.grad(loss, argnums=(0, 1)), (w1, w2), (v1, v2))
    np.testing.assert_allclose(h1, r1, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h2, r2, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("causal,scale", [(False, None), (True, 0.3)])
def test_attention_rules_match_jax(causal, scale):
    # tgraph.attention's own rules: the VJP (through tgraph.attention_grad,
    # expanded here), the JVP, and the HVP (forward mode over the VJP) of
    # a loss with 5 queries attending to 7 keys, against JAX.
    rng = np.random.default_rng(31 + causal)
    q = rng.standard_normal((2, 3, 5, 4))
    k = rng.standard_normal((2, 3, 7, 4))
    v = rng.standard_normal((2, 3, 7, 6))
    w = rng.standard_normal((2, 3, 5, 6))
    dirs = [rng.standard_normal(a.shape) for a in (q, k, v)]
    tq, tk, tv, to = (ttype(a.shape) for a in (q, k, v, w))
    attrs = []
    if causal:
        attrs.append("causal")
    if scale is not None:
        attrs.append(f"scale = {scale} : f64")
    flags = "{" + ", ".join(attrs) + "}" if attrs else ""
    ir = f"""func.func @loss(%q: {tq} {{tgraph.name = "q"}},
                     %k: {tk} {{tgraph.name = "k"}},
                     %v: {tv} {{tgraph.name = "v"}}, %w: {to}) -> tensor<f64> {{
      %o = tgraph.attention %q, %k, %v {flags} : ({tq}, {tk}, {tv}) -> {to}
      %t = tgraph.tanh %o : {to}
      %p = tgraph.mul %t, %w : {to}
      %l = tgraph.reduce_sum %p {{dims = array<i64: 0, 1, 2, 3>}}
          : ({to}) -> tensor<f64>
      return %l : tensor<f64>
    }}
    tgraph.adjoint @loss wrt(%q, %k, %v) -> @grad
    tgraph.jvp @loss wrt(%q, %k, %v) -> @jvp
    tgraph.hvp @loss wrt(%q, %k, %v) dir(%dq, %dk, %dv) -> @hvp
    """
    grads = run(ir, [q, k, v, w], fn="grad")
    _, jv = run(ir, [q, k, v, w] + dirs, fn="jvp")
    hv = run(ir, [q, k, v, w] + dirs, fn="hvp")

    def loss(q, k, v):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) * (
            scale if scale is not None else 1 / np.sqrt(4))
        if causal:
            i, j = np.arange(5)[:, None], np.arange(7)[None, :]
            s = jnp.where(j <= i + 2, s, -jnp.inf)
        o = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)
        return jnp.sum(jnp.tanh(o) * w)
    want = jax.grad(loss, argnums=(0, 1, 2))(q, k, v)
    _, want_jv = jax.jvp(loss, (q, k, v), tuple(dirs))
    _, want_hv = jax.jvp(jax.grad(loss, argnums=(0, 1, 2)), (q, k, v),
                         tuple(dirs))
    for got, ref in zip(grads, want):
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jv, want_jv, rtol=1e-10, atol=1e-12)
    for got, ref in zip(hv, want_hv):
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-11)


def test_implicit_fixed_point_matches_jax():
    # x* = tanh(W x* + theta): Tessera's gradients (through the adjoint
    # equation) against JAX differentiating the same fixed point with the
    # implicit function theorem written out (custom_root style: solve
    # (I - J_x)^T lambda = g with jnp.linalg.solve).
    rng = np.random.default_rng(5)
    w = rng.uniform(-0.3, 0.3, (5, 5))
    theta = rng.uniform(-1, 1, 5)
    c = rng.standard_normal(5)
    ir = """func.func @f(%x0: tensor<5xf64>, %W: tensor<5x5xf64> {tgraph.name = "W"},
                  %t: tensor<5xf64> {tgraph.name = "t"}, %c: tensor<5xf64>) -> tensor<f64> {
      %x = tgraph.fixed_point %x0 params(%W, %t : tensor<5x5xf64>, tensor<5xf64>)
          {tol = 1.0e-14 : f64, max_iter = 500 : i64} : tensor<5xf64> -> tensor<5xf64> {
      ^bb0(%x: tensor<5xf64>, %w: tensor<5x5xf64>, %th: tensor<5xf64>):
        %xm = tgraph.reshape %x : (tensor<5xf64>) -> tensor<5x1xf64>
        %wx = tgraph.matmul %w, %xm : (tensor<5x5xf64>, tensor<5x1xf64>) -> tensor<5x1xf64>
        %v = tgraph.reshape %wx : (tensor<5x1xf64>) -> tensor<5xf64>
        %s = tgraph.add %v, %th : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>
        %n = tgraph.tanh %s : tensor<5xf64>
        tgraph.yield %n : tensor<5xf64>
      }
      %p = tgraph.mul %x, %c : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>
      %l = tgraph.reduce_sum %p {dims = array<i64: 0>} : (tensor<5xf64>) -> tensor<f64>
      return %l : tensor<f64>
    }
    tgraph.adjoint @f wrt(%W, %t) -> @grad
    """
    gw, gt = run(ir, [np.zeros(5), w, theta, c], fn="grad")

    def solve_fixed_point(w, t):
        x = jnp.zeros(5)
        for _ in range(200):
            x = jnp.tanh(w @ x + t)
        return x

    @jax.custom_vjp
    def fixed_point(w, t):
        return solve_fixed_point(w, t)

    def fwd(w, t):
        x = solve_fixed_point(w, t)
        return x, (w, t, x)

    def bwd(res, g):
        w, t, x = res
        f = lambda x_, w_, t_: jnp.tanh(w_ @ x_ + t_)  # noqa: E731
        jx = jax.jacobian(f, argnums=0)(x, w, t)
        lam = jnp.linalg.solve((jnp.eye(5) - jx).T, g)
        _, pull = jax.vjp(lambda w_, t_: f(x, w_, t_), w, t)
        return pull(lam)

    fixed_point.defvjp(fwd, bwd)
    rw, rt = jax.grad(lambda w, t: jnp.sum(fixed_point(w, t) * c), argnums=(0, 1))(w, theta)
    np.testing.assert_allclose(gw, rw, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gt, rt, rtol=1e-9, atol=1e-12)


def test_example_mlp_grad_matches_jax():
    # examples/mlp_grad.mlir (the demo's autodiff step): gradient, JVP and
    # HVP against JAX.
    import pathlib
    ir = (pathlib.Path(__file__).resolve().parents[2] / "examples" / "mlp_grad.mlir").read_text()
    rng = np.random.default_rng(8)
    x = rng.standard_normal((8, 16))
    labels = jax.nn.softmax(rng.standard_normal((8, 10)), axis=1)
    labels = np.asarray(labels)
    w1, b1, w2 = rng.standard_normal((16, 32)) / 4, rng.standard_normal(32) / 4, \
        rng.standard_normal((32, 10)) / 4
    v1, vb, v2 = rng.standard_normal(w1.shape), rng.standard_normal(b1.shape), \
        rng.standard_normal(w2.shape)

    def loss(w1, b1, w2):
        g = jax.nn.gelu(x @ w1 + b1, approximate=False)
        return jnp.mean(-jnp.sum(labels * jax.nn.log_softmax(g @ w2, axis=1), axis=1))
    grads = run(ir, [x, labels, w1, b1, w2], fn="loss_grad")
    for ours, ref in zip(grads, jax.grad(loss, argnums=(0, 1, 2))(w1, b1, w2)):
        np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-13)
    _, tangent = run(ir, [x, labels, w1, b1, w2, v1], fn="loss_jvp")
    _, ref = jax.jvp(lambda w: loss(w, b1, w2), (w1,), (v1,))
    np.testing.assert_allclose(tangent, ref, rtol=1e-10, atol=1e-13)
    hv = run(ir, [x, labels, w1, b1, w2, v1, vb, v2], fn="loss_hvp")
    _, ref = jax.jvp(jax.grad(loss, argnums=(0, 1, 2)), (w1, b1, w2), (v1, vb, v2))
    for ours, r in zip(hv, ref):
        np.testing.assert_allclose(ours, r, rtol=1e-9, atol=1e-12)
