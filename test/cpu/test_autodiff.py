"""Differentiation rules against float64 central differences.

For every differentiable op, a function @f applying it is differentiated
with tgraph.adjoint (reverse mode, a random cotangent seed w) and tgraph.jvp
(forward mode, random directions v), compiled and run. Checks, in float64:
  - the JVP J v against (f(x + h v) - f(x - h v)) / 2h;
  - the VJP through <w, J v> = sum_i <g_i, v_i>.
"""

import numpy as np
import pytest

from harness import run, tensor_type

H = 1e-6
# Central differences in float64 with h = 1e-6: truncation ~h^2, rounding
# ~1e-16 / h; both well below this.
RTOL = 1e-6


def relative_error(actual, expected):
    scale = max(np.linalg.norm(expected), 1e-3)
    return np.linalg.norm(np.asarray(actual) - np.asarray(expected)) / scale


def check_gradients(body, args, result, wrt=None, seed=0, symbols=None, prelude=""):
    """`args`: [(name, array)], `result`: the result's shape; `body` defines
    %r from the arguments, with {name} replaced by each argument's type and
    {r} by the result's. `symbols` maps argument names to dim symbols."""
    rng = np.random.default_rng(seed)
    wrt = wrt or [n for n, a in args if a.dtype.kind == "f"]
    symbols = symbols or {}
    types = {n: tensor_type(a.shape, a.dtype, symbols.get(n)) for n, a in args}
    types["r"] = tensor_type(result, np.float64, symbols.get("r"))
    sig = ", ".join(f'%{n}: {types[n]} {{tgraph.name = "{n}"}}' for n, _ in args)
    names = ", ".join(f"%{n}" for n in wrt)
    ir = (prelude +
          f"func.func @f({sig}) -> {types['r']} {{\n"
          f"  {body.format(**types)}\n"
          f"  return %r : {types['r']}\n}}\n"
          f"tgraph.adjoint @f wrt({names}) -> @f_vjp\n"
          f"tgraph.jvp @f wrt({names}) -> @f_jvp\n")
    xs = [a for _, a in args]
    (y,) = run(ir, xs, fn="f")
    assert y.shape == tuple(result)
    # A scalar result is differentiated with seed 1 (no seed argument).
    w = rng.standard_normal(y.shape) if y.ndim else np.float64(1.0)
    vs = {n: rng.standard_normal(a.shape) for n, a in args if n in wrt}
    grads = run(ir, xs + ([w] if y.ndim else []), fn="f_vjp")
    y_jvp, jv = run(ir, xs + [vs[n] for n in wrt], fn="f_jvp")
    np.testing.assert_array_equal(y_jvp, y)

    def shifted(sign):
        return [a + sign * H * vs[n] if n in vs else a for n, a in args]

    (plus,) = run(ir, shifted(1), fn="f")
    (minus,) = run(ir, shifted(-1), fn="f")
    fd = (plus - minus) / (2 * H)
    assert relative_error(jv, fd) < RTOL, (relative_error(jv, fd), jv, fd)
    lhs = float(np.sum(w * fd))
    rhs = float(sum(np.sum(g * vs[n]) for g, n in zip(grads, wrt)))
    assert abs(lhs - rhs) <= RTOL * max(1.0, abs(lhs)), (lhs, rhs)
    for g, n in zip(grads, wrt):
        assert g.shape == dict(args)[n].shape


def uniform(rng, shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape)


rng = np.random.default_rng(42)

# name -> (sample range)
UNARY = {
    "neg": (-2, 2), "abs": (-2, 2), "exp": (-2, 2), "log": (0.3, 3),
    "log1p": (-0.5, 2), "sin": (-3, 3), "cos": (-3, 3), "tanh": (-2, 2),
    "erf": (-2, 2), "sigmoid": (-3, 3), "relu": (-2, 2), "silu": (-3, 3),
    "sqrt": (0.3, 3), "rsqrt": (0.3, 3), "reciprocal": (0.5, 3),
    "square": (-2, 2),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    lo, hi = UNARY[op]
    x = uniform(rng, (3, 5), lo, hi)
    check_gradients(f"%r = tgraph.{op} %x : {{x}}", [("x", x)], (3, 5))


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu(approximate):
    x = uniform(rng, (4, 6), -3, 3)
    attr = " {{approximate}}" if approximate else ""
    check_gradients(f"%r = tgraph.gelu %x{attr} : {{x}}", [("x", x)], (4, 6))


BINARY = {"add": (-2, 2), "sub": (-2, 2), "mul": (-2, 2), "div": (0.5, 2),
          "pow": (0.5, 2), "max": (-2, 2), "min": (-2, 2)}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)),
                                    ((), (2, 3))])
def test_binary_broadcasting(op, shapes):
    lo, hi = BINARY[op]
    a = uniform(rng, shapes[0], lo, hi)
    b = uniform(rng, shapes[1], lo, hi)
    result = np.broadcast_shapes(shapes[0], shapes[1])
    check_gradients(f"%r = tgraph.{op} %a, %b : ({{a}}, {{b}}) -> {{r}}",
                    [("a", a), ("b", b)], result)


def test_symbolic_dims():
    # Dims named by symbols: the rules build shapes from the symbols.
    a = uniform(rng, (5, 3))
    b = uniform(rng, (3,))
    check_gradients("%m = tgraph.mul %a, %b : ({a}, {b}) -> {r}\n"
                    "  %r = tgraph.tanh %m : {r}",
                    [("a", a), ("b", b)], (5, 3),
                    symbols={"a": ["B", None], "r": ["B", None]})


def test_select_and_compare():
    a, b = uniform(rng, (3, 4)), uniform(rng, (3, 4))
    check_gradients("%c = tgraph.compare gt, %a, %b : ({a}, {b}) -> tensor<3x4xi1>\n"
                    "  %r = tgraph.select %c, %a, %b : (tensor<3x4xi1>, {a}, {b}) -> {r}",
                    [("a", a), ("b", b)], (3, 4))


def test_cast_through_f32():
    # Through f32 and back: the derivative is cos(x) in f32 precision.
    x = uniform(rng, (6,))
    w = rng.standard_normal(6)
    (g,) = run("""func.func @f(%x: tensor<6xf64> {tgraph.name = "x"}) -> tensor<6xf64> {
      %h = tgraph.cast %x : tensor<6xf64> -> tensor<6xf32>
      %s = tgraph.sin %h : tensor<6xf32>
      %r = tgraph.cast %s : tensor<6xf32> -> tensor<6xf64>
      return %r : tensor<6xf64>
    }
    tgraph.adjoint @f wrt(%x) -> @g""", [x, w], fn="g")
    np.testing.assert_allclose(g, w * np.cos(x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("transpose", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes(transpose):
    ta, tb = transpose
    a = uniform(rng, (4, 3) if ta else (3, 4))
    b = uniform(rng, (5, 4) if tb else (4, 5))
    attrs = ", ".join(n for n, t in (("transpose_lhs", ta), ("transpose_rhs", tb)) if t)
    attrs = f" {{{{{attrs}}}}}" if attrs else ""
    check_gradients(f"%r = tgraph.matmul %a, %b{attrs} : ({{a}}, {{b}}) -> {{r}}",
                    [("a", a), ("b", b)], (3, 5))


def test_matmul_broadcast_batch_and_batch_matmul():
    a = uniform(rng, (2, 3, 4))
    w = uniform(rng, (4, 5))
    check_gradients("%r = tgraph.matmul %a, %w : ({a}, {w}) -> {r}",
                    [("a", a), ("w", w)], (2, 3, 5))
    b = uniform(rng, (2, 4, 5))
    check_gradients("%r = tgraph.batch_matmul %a, %b : ({a}, {b}) -> {r}",
                    [("a", a), ("b", b)], (2, 3, 5))


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean", "reduce_prod", "reduce_max",
                                "reduce_min"])
@pytest.mark.parametrize("dims", [(0,), (1,), (2,), (0, 2), (0, 1, 2)])
@pytest.mark.parametrize("keep", [False, True])
def test_reductions_over_each_axis(op, dims, keep):
    x = uniform(rng, (2, 3, 4), 0.5, 1.5) if op == "reduce_prod" else uniform(rng, (2, 3, 4))
    shape = [1 if d in dims else n for d, n in enumerate(x.shape)] if keep else \
        [n for d, n in enumerate(x.shape) if d not in dims]
    kd = ", keepdims" if keep else ""
    dl = ", ".join(map(str, dims))
    check_gradients(f"%r = tgraph.{op} %x {{{{dims = array<i64: {dl}>{kd}}}}} : ({{x}}) -> {{r}}",
                    [("x", x)], tuple(shape))


def test_reduce_prod_with_zeros():
    # Exact products of the other elements, not prod / x: a column with
    # one zero and a column with two.
    x = uniform(rng, (3, 3), 0.5, 1.5)
    x[1, 0] = 0.0
    x[0, 1] = x[2, 1] = 0.0
    (g,) = run("""func.func @f(%x: tensor<3x3xf64> {tgraph.name = "x"}) -> tensor<3xf64> {
      %r = tgraph.reduce_prod %x {dims = array<i64: 0>} : tensor<3x3xf64> -> tensor<3xf64>
      return %r : tensor<3xf64>
    }
    tgraph.adjoint @f wrt(%x) -> @g""", [x, np.ones(3)], fn="g")
    expected = np.empty_like(x)
    for i in range(3):
        for j in range(3):
            expected[i, j] = np.prod(np.delete(x[:, j], i))
    np.testing.assert_allclose(g, expected, rtol=1e-14)


def test_max_shares_ties():
    x = np.array([[1.0, 3.0, 3.0, 2.0]])
    (g,) = run("""func.func @f(%x: tensor<1x4xf64> {tgraph.name = "x"}) -> tensor<1xf64> {
      %r = tgraph.reduce_max %x {dims = array<i64: 1>} : tensor<1x4xf64> -> tensor<1xf64>
      return %r : tensor<1xf64>
    }
    tgraph.adjoint @f wrt(%x) -> @g""", [x, np.ones(1)], fn="g")
    np.testing.assert_array_equal(g, [[0.0, 0.5, 0.5, 0.0]])


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmax_safe"])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_family(op, dim):
    x = uniform(rng, (3, 5), -3, 3)
    check_gradients(f"%r = tgraph.{op} %x {{{{dim = {dim} : i64}}}} : {{x}}", [("x", x)], (3, 5))


@pytest.mark.parametrize("op", ["logsumexp", "logsumexp_safe"])
@pytest.mark.parametrize("keep", [False, True])
def test_logsumexp(op, keep):
    x = uniform(rng, (3, 5), -3, 3)
    kd = ", keepdims" if keep else ""
    check_gradients(f"%r = tgraph.{op} %x {{{{dim = 1 : i64{kd}}}}} : ({{x}}) -> {{r}}",
                    [("x", x)], (3, 1) if keep else (3,))


def test_softmax_gradient_is_stable_for_large_inputs():
    # Logits around 1000: exp overflows, the stable adjoint does not.
    x = uniform(rng, (2, 6), 995, 1005)
    w = rng.standard_normal((2, 6))
    (g,) = run("""func.func @f(%x: tensor<2x6xf64> {tgraph.name = "x"}) -> tensor<2x6xf64> {
      %r = tgraph.softmax %x {dim = 1 : i64} : tensor<2x6xf64>
      return %r : tensor<2x6xf64>
    }
    tgraph.adjoint @f wrt(%x) -> @g""", [x, w], fn="g")
    p = np.exp(x - x.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    expected = p * (w - (w * p).sum(1, keepdims=True))
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
def test_norms_through_their_decomposition(op):
    x = uniform(rng, (3, 6))
    g = uniform(rng, (6,), 0.5, 1.5)
    if op == "layernorm":
        b = uniform(rng, (6,))
        check_gradients("%r = tgraph.layernorm %x scale %g bias %b {{axis = 1 : i64}} "
                        ": ({x}, {g}, {b}) -> {r}", [("x", x), ("g", g), ("b", b)], (3, 6))
    else:
        check_gradients("%r = tgraph.rmsnorm %x scale %g {{axis = 1 : i64}} : ({x}, {g}) -> {r}",
                        [("x", x), ("g", g)], (3, 6))


def test_layout_ops():
    x = uniform(rng, (2, 3, 4))
    check_gradients("%r = tgraph.transpose %x {{permutation = array<i64: 2, 0, 1>}} "
                    ": ({x}) -> {r}", [("x", x)], (4, 2, 3))
    check_gradients("%r = tgraph.reshape %x : ({x}) -> {r}", [("x", x)], (6, 4))
    v = uniform(rng, (3,))
    check_gradients("%r = tgraph.broadcast_in_dim %v {{broadcast_dimensions = array<i64: 1>}} "
                    ": ({v}) -> {r}", [("v", v)], (2, 3, 4))
    m = uniform(rng, (3, 1))
    check_gradients("%r = tgraph.broadcast_in_dim %m {{broadcast_dimensions = array<i64: 2, 0>}} "
                    ": ({m}) -> {r}", [("m", m)], (4, 5, 3))
    check_gradients("%r = tgraph.slice %x {{start = #tgraph.dims<[0, 1, 0]>, "
                    "limit = #tgraph.dims<[2, 3, 4]>, stride = array<i64: 1, 1, 2>}} "
                    ": ({x}) -> {r}", [("x", x)], (2, 2, 2))
    y = uniform(rng, (2, 2, 4))
    check_gradients("%r = tgraph.concat %x, %y {{dim = 1 : i64}} : ({x}, {y}) -> {r}",
                    [("x", x), ("y", y)], (2, 5, 4))
    check_gradients("%r = tgraph.pad %x {{low = array<i64: 0, 1, -1>, high = array<i64: 1, 0, 2>, "
                    "interior = array<i64: 0, 0, 0>, value = 0.5 : f64}} : ({x}) -> {r}",
                    [("x", x)], (3, 4, 5))
    check_gradients("%r = tgraph.pad %x {{low = array<i64: 1, 0, 0>, high = array<i64: 0, 2, 1>, "
                    "interior = array<i64: 1, 0, 2>, value = 0.0 : f64}} : ({x}) -> {r}",
                    [("x", x)], (4, 5, 11))


def test_gather_and_scatter_add():
    x = uniform(rng, (5, 3))
    idx = np.array([4, 0, 4, 2], dtype=np.int64)
    check_gradients("%r = tgraph.gather %x, %i {{dim = 0 : i64}} : ({x}, {i}) -> {r}",
                    [("x", x), ("i", idx)], (4, 3))
    u = uniform(rng, (4, 3))
    check_gradients("%r = tgraph.scatter_add %x, %i, %u {{dim = 0 : i64}} "
                    ": ({x}, {i}, {u}) -> {r}", [("x", x), ("i", idx), ("u", u)], (5, 3))


# Third derivatives by composition, against closed forms: reverse over
# reverse over reverse, forward over reverse over reverse, forward thrice.
THIRD = {
    "sin": ("%r = tgraph.sin %x : tensor<f64>", lambda x: -np.cos(x)),
    "exp2x": ("%t = tgraph.add %x, %x : (tensor<f64>, tensor<f64>) -> tensor<f64>\n"
              "  %r = tgraph.exp %t : tensor<f64>", lambda x: 8 * np.exp(2 * x)),
    "tanh": ("%r = tgraph.tanh %x : tensor<f64>",
             lambda x: -2 * (1 - np.tanh(x) ** 2) * (1 - 3 * np.tanh(x) ** 2)),
    "x_log_x": ("%l = tgraph.log %x : tensor<f64>\n"
                "  %r = tgraph.mul %x, %l : (tensor<f64>, tensor<f64>) -> tensor<f64>",
                lambda x: -1 / x ** 2),
}


@pytest.mark.parametrize("name", sorted(THIRD))
def test_third_derivatives(name):
    body, closed = THIRD[name]
    head = f"""func.func @f(%x: tensor<f64> {{tgraph.name = "x"}}) -> tensor<f64> {{
      {body}
      return %r : tensor<f64>
    }}
    """
    x = np.float64(0.7)
    modes = {
        "rrr": """tgraph.adjoint @f wrt(%x) -> @d1
                  tgraph.adjoint @d1 wrt(%x) -> @d2
                  tgraph.adjoint @d2 wrt(%x) -> @d3""",
        "frr": """tgraph.adjoint @f wrt(%x) -> @d1
                  tgraph.adjoint @d1 wrt(%x) -> @d2
                  tgraph.jvp @d2 wrt(%x) -> @d3""",
        "fff": """tgraph.jvp @f wrt(%x) -> @j1
                  tgraph.jvp @j1 wrt(%x, %dx) -> @j2
                  tgraph.jvp @j2 wrt(%x, %dx, %dx_2, %ddx) -> @d3""",
    }
    for mode, decls in modes.items():
        ir = head + decls
        if mode == "rrr":
            (d3,) = run(ir, [x], fn="d3")
        elif mode == "frr":
            d3 = run(ir, [x, np.float64(1.0)], fn="d3")[1]
        else:
            # Tangents 1 for x in every level, 0 for the tangents' tangents:
            # the last output is d3f/dx3.
            one, zero = np.float64(1.0), np.float64(0.0)
            outs = run(ir, [x, one, one, zero, one, zero, zero, zero], fn="d3")
            d3 = outs[-1]
        np.testing.assert_allclose(d3, closed(x), rtol=1e-12, err_msg=mode)


def test_hvp_of_an_mlp_loss():
    # Loss of a 2-layer tanh MLP on fixed data; the HVP with respect to both
    # weight matrices against central differences of the gradient.
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 4))
    y = rng.standard_normal((5, 3))
    w1 = rng.standard_normal((4, 6)) / 2
    w2 = rng.standard_normal((6, 3)) / 2
    ir = """func.func @loss(%x: tensor<5x4xf64>, %y: tensor<5x3xf64>,
                     %w1: tensor<4x6xf64> {tgraph.name = "w1"},
                     %w2: tensor<6x3xf64> {tgraph.name = "w2"}) -> tensor<f64> {
      %h = tgraph.matmul %x, %w1 : (tensor<5x4xf64>, tensor<4x6xf64>) -> tensor<5x6xf64>
      %a = tgraph.tanh %h : tensor<5x6xf64>
      %o = tgraph.matmul %a, %w2 : (tensor<5x6xf64>, tensor<6x3xf64>) -> tensor<5x3xf64>
      %d = tgraph.sub %o, %y : (tensor<5x3xf64>, tensor<5x3xf64>) -> tensor<5x3xf64>
      %s = tgraph.square %d : tensor<5x3xf64>
      %l = tgraph.reduce_mean %s {dims = array<i64: 0, 1>} : tensor<5x3xf64> -> tensor<f64>
      return %l : tensor<f64>
    }
    tgraph.adjoint @loss wrt(%w1, %w2) -> @grad
    tgraph.hvp @loss wrt(%w1, %w2) dir(%v1, %v2) -> @hvp
    """
    v1 = rng.standard_normal(w1.shape)
    v2 = rng.standard_normal(w2.shape)
    h1, h2 = run(ir, [x, y, w1, w2, v1, v2], fn="hvp")
    g_plus = run(ir, [x, y, w1 + H * v1, w2 + H * v2], fn="grad")
    g_minus = run(ir, [x, y, w1 - H * v1, w2 - H * v2], fn="grad")
    for h, gp, gm in zip((h1, h2), g_plus, g_minus):
        fd = (gp - gm) / (2 * H)
        assert relative_error(h, fd) < RTOL, relative_error(h, fd)


def transformer_block_with_gradients(dtype):
    import pathlib
    import sys
    root = pathlib.Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "examples"))
    import transformer_block
    text = (root / "examples" / "transformer_block.mlir").read_text()
    if dtype == np.float64:
        text = text.replace("f32", "f64")
    wrt = ", ".join(f"%arg{i}" for i in range(9))
    text += (f"tgraph.adjoint @block wrt({wrt}) -> @block_vjp\n"
             f"tgraph.jvp @block wrt({wrt}) -> @block_jvp\n")
    return text, transformer_block.random_weights


def test_transformer_block_gradients_against_differences():
    # examples/transformer_block.mlir in float64 (rmsnorm, projections,
    # causal attention, gelu MLP): the VJP and JVP with respect to the
    # input and all eight weights against central differences.
    ir, random_weights = transformer_block_with_gradients(np.float64)
    rng = np.random.default_rng(11)
    args = [rng.standard_normal((1, 5, 512))] + random_weights(rng, np.float64)
    (y,) = run(ir, args, fn="block")
    w = rng.standard_normal(y.shape)
    vs = [rng.standard_normal(a.shape) for a in args]
    grads = run(ir, args + [w], fn="block_vjp")
    _, jv = run(ir, args + vs, fn="block_jvp")
    (plus,) = run(ir, [a + H * v for a, v in zip(args, vs)], fn="block")
    (minus,) = run(ir, [a - H * v for a, v in zip(args, vs)], fn="block")
    fd = (plus - minus) / (2 * H)
    assert relative_error(jv, fd) < RTOL, relative_error(jv, fd)
    lhs = float(np.sum(w * fd))
    rhs = float(sum(np.sum(g * v) for g, v in zip(grads, vs)))
    assert abs(lhs - rhs) <= RTOL * abs(lhs), (lhs, rhs)


def test_transformer_block_gradients_are_deterministic():
    # f32 gradients: bitwise identical over 20 runs and on 1 and 2 threads.
    ir, random_weights = transformer_block_with_gradients(np.float32)
    rng = np.random.default_rng(5)
    args = [rng.standard_normal((2, 9, 512)).astype(np.float32)] + \
        random_weights(rng, np.float32)
    seed = rng.standard_normal((2, 9, 512)).astype(np.float32)
    first = run(ir, args + [seed], fn="block_vjp", threads=2)
    assert all(np.isfinite(g).all() for g in first)
    for i in range(20):
        again = run(ir, args + [seed], fn="block_vjp", threads=1 if i % 2 else 2)
        for a, b in zip(first, again):
            assert a.tobytes() == b.tobytes(), i


def test_calls_are_inlined_with_their_symbols_bound():
    # A layer called twice (its B binds to 3 at both calls) and a call
    # inside the callee.
    prelude = """
    !h = tensor<?x4xf64, #tgraph.dims<[B, 4]>>
    func.func private @act(%h: !h) -> !h {
      %t = tgraph.tanh %h : !h
      return %t : !h
    }
    func.func private @layer(%h: !h, %w: tensor<4x4xf64>) -> !h {
      %m = tgraph.matmul %h, %w : (!h, tensor<4x4xf64>) -> !h
      %a = tgraph.call @act(%m) : (!h) -> !h
      return %a : !h
    }
    """
    x, w = uniform(rng, (3, 4)), uniform(rng, (4, 4), -1, 1)
    check_gradients("%a = tgraph.call @layer(%x, %w) : ({x}, {w}) -> {x}\n"
                    "  %r = tgraph.call @layer(%a, %w) : ({x}, {w}) -> {r}",
                    [("x", x), ("w", w)], (3, 4), prelude=prelude)


def test_cond_both_branches():
    # Each branch uses outer values differently; both predicates.
    a, b = uniform(rng, (4,)), uniform(rng, (4,))
    for p in (True, False):
        check_gradients(
            "%r = tgraph.cond %p -> {r} {{\n"
            "    %m = tgraph.mul %a, %b : ({a}, {b}) -> {r}\n"
            "    %s = tgraph.sin %m : {r}\n"
            "    tgraph.yield %s : {r}\n"
            "  }} else {{\n"
            "    %e = tgraph.exp %a : {a}\n"
            "    tgraph.yield %e : {a}\n"
            "  }}",
            [("p", np.array(p)), ("a", a), ("b", b)], (4,), wrt=["a", "b"])


def test_fixed_point_implicit_gradients():
    # x* = tanh(W x* + theta), a contraction (|W| small): derivatives with
    # respect to theta and W through the adjoint equation, against
    # central differences of the solved fixed point.
    w = uniform(rng, (6, 6), -0.3, 0.3)
    theta = uniform(rng, (6,))
    x0 = np.zeros(6)
    check_gradients(
        "%r = tgraph.fixed_point %x0 params(%W, %t : {W}, {t}) {{tol = 1.0e-14 : f64, "
        "max_iter = 500 : i64}} : {x0} -> {r} {{\n"
        "  ^bb0(%x: {x0}, %w: {W}, %th: {t}):\n"
        "    %wx = tgraph.matmul %w, %xc : ({W}, tensor<6x1xf64>) -> tensor<6x1xf64>\n"
        "    %v = tgraph.reshape %wx : (tensor<6x1xf64>) -> {x0}\n"
        "    %s = tgraph.add %v, %th : ({x0}, {t}) -> {x0}\n"
        "    %n = tgraph.tanh %s : {x0}\n"
        "    tgraph.yield %n : {x0}\n"
        "  }}".replace("%xc : ", "%xm : ").replace(
            "    %wx", "    %xm = tgraph.reshape %x : ({x0}) -> tensor<6x1xf64>\n    %wx"),
        [("x0", x0), ("W", w), ("t", theta)], (6,), wrt=["W", "t"])


def test_solve_implicit_gradients():
    # x^3 + x = p elementwise (one real root): dx/dp = 1 / (3 x^2 + 1).
    p = uniform(rng, (5,), 0.5, 3)
    x0 = np.ones(5)
    body = ("%r = tgraph.solve %x0 params(%p : {p}) {{tol = 1.0e-13 : f64}} : {x0} -> {r} {{\n"
            "  ^bb0(%x: {x0}, %q: {p}):\n"
            "    %x2 = tgraph.mul %x, %x : ({x0}, {x0}) -> {x0}\n"
            "    %x3 = tgraph.mul %x2, %x : ({x0}, {x0}) -> {x0}\n"
            "    %s = tgraph.add %x3, %x : ({x0}, {x0}) -> {x0}\n"
            "    %f = tgraph.sub %s, %q : ({x0}, {p}) -> {x0}\n"
            "    tgraph.yield %f : {x0}\n"
            "  }}")
    check_gradients(body, [("x0", x0), ("p", p)], (5,), wrt=["p"])


CUSTOM = """
func.func private @round(%x: tensor<5xf64>) -> tensor<5xf64> {
  %f = tgraph.floor %x : tensor<5xf64>
  return %f : tensor<5xf64>
}
// Straight-through rules: the derivative of rounding taken as 2 (to tell
// them from the automatic rule, which gives 0).
func.func private @round_fwd(%x: tensor<5xf64>) -> (tensor<5xf64>, tensor<5xf64>) {
  %f = tgraph.floor %x : tensor<5xf64>
  return %f, %x : tensor<5xf64>, tensor<5xf64>
}
func.func private @round_bwd(%res: tensor<5xf64>, %ct: tensor<5xf64>) -> tensor<5xf64> {
  %two = tgraph.constant dense<2.0> : tensor<f64>
  %g = tgraph.mul %ct, %two : (tensor<5xf64>, tensor<f64>) -> tensor<5xf64>
  return %g : tensor<5xf64>
}
func.func private @round_jvp(%x: tensor<5xf64>, %t: tensor<5xf64>) -> (tensor<5xf64>, tensor<5xf64>) {
  %f = tgraph.floor %x : tensor<5xf64>
  %two = tgraph.constant dense<2.0> : tensor<f64>
  %g = tgraph.mul %t, %two : (tensor<5xf64>, tensor<f64>) -> tensor<5xf64>
  return %f, %g : tensor<5xf64>, tensor<5xf64>
}
func.func @f(%x: tensor<5xf64> {tgraph.name = "x"}) -> tensor<5xf64> {
  %s = tgraph.sin %x : tensor<5xf64>
  %r = tgraph.custom_vjp @round(%s) fwd @round_fwd bwd @round_bwd : (tensor<5xf64>) -> tensor<5xf64>
  %q = tgraph.custom_jvp @round(%r) jvp @round_jvp : (tensor<5xf64>) -> tensor<5xf64>
  %y = tgraph.mul %q, %x : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>
  return %y : tensor<5xf64>
}
tgraph.adjoint @f wrt(%x) -> @f_vjp
tgraph.jvp @f wrt(%x) -> @f_jvp
"""


def test_custom_rules():
    # y = round(round(sin x)) * x. Reverse mode uses custom_vjp's rule (2)
    # and differentiates custom_jvp's callee (floor: 0); forward mode uses
    # custom_jvp's rule (2) and differentiates custom_vjp's callee (0).
    x = uniform(rng, (5,), 0.2, 2.5)
    w = rng.standard_normal(5)
    v = rng.standard_normal(5)
    q = np.floor(np.floor(np.sin(x)))
    (g,) = run(CUSTOM, [x, w], fn="f_vjp")
    np.testing.assert_allclose(g, w * q, rtol=1e-15)  # the floor of round
    y, t = run(CUSTOM, [x, v], fn="f_jvp")
    np.testing.assert_allclose(y, q * x, rtol=1e-15)
    np.testing.assert_allclose(t, v * q, rtol=1e-15)


def test_custom_rules_reach_the_inputs():
    # Without the outer floor: the custom VJP's factor 2 reaches x.
    ir = CUSTOM.replace(
        "%q = tgraph.custom_jvp @round(%r) jvp @round_jvp : (tensor<5xf64>) -> tensor<5xf64>",
        "%q = tgraph.add %r, %r : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>")
    x = uniform(rng, (5,), 0.2, 2.5)
    w = rng.standard_normal(5)
    (g,) = run(ir, [x, w], fn="f_vjp")
    q = 2 * np.floor(np.sin(x))
    np.testing.assert_allclose(g, w * q + w * x * 2 * 2 * np.cos(x), rtol=1e-14)


def mlp_with_checkpoints(layers, checkpoint, rows=64):
    lines = [f'func.func @loss(%x: tensor<{rows}x256xf64>, %w: tensor<256x256xf64> {{tgraph.name = "w"}}) '
             '-> tensor<f64> {']
    h = "%x"
    t = f"tensor<{rows}x256xf64>"
    for i in range(layers):
        if checkpoint:
            lines.append(f"  %h{i} = tgraph.checkpoint ({h}, %w : {t}, tensor<256x256xf64>) -> {t} {{")
            lines.append(f"  ^bb0(%a: {t}, %v: tensor<256x256xf64>):")
            src, wv = "%a", "%v"
        else:
            src, wv = h, "%w"
        lines.append(f"    %m{i} = tgraph.matmul {src}, {wv} : ({t}, tensor<256x256xf64>) -> {t}")
        lines.append(f"    %s{i} = tgraph.tanh %m{i} : {t}")
        lines.append(f"    %e{i} = tgraph.mul %s{i}, %s{i} : ({t}, {t}) -> {t}")
        lines.append(f"    %o{i} = tgraph.add %e{i}, {src} : ({t}, {t}) -> {t}")
        if checkpoint:
            lines.append(f"    tgraph.yield %o{i} : {t}")
            lines.append("  }")
            h = f"%h{i}"
        else:
            h = f"%o{i}"
    lines.append(f"  %l = tgraph.reduce_sum {h} {{dims = array<i64: 0, 1>}} : ({t}) -> tensor<f64>")
    lines.append("  return %l : tensor<f64>\n}")
    lines.append("tgraph.adjoint @loss wrt(%w) -> @grad")
    return "\n".join(lines)


def gradient_and_peak(ir, seed):
    """The gradient of `ir`'s @grad at a random 256 x 256 input and weight,
    and the peak bytes of live allocations the runtime measured."""
    import subprocess
    from harness import TESSERA_RUN, run_env, source_file
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((256, 256)) / 4
    w = rng.standard_normal((256, 256)) / 64
    (g,) = run(ir, [x, w], fn="grad")
    out = subprocess.run([TESSERA_RUN, str(source_file(ir)), "--fn", "grad", "--quiet",
                          "--memory-stats", "--num-threads", "1"],
                         capture_output=True, text=True, env=run_env())
    assert out.returncode == 0, out.stderr
    return g, int(out.stdout.split("peak memory: ")[1].split()[0])


def test_checkpoint_lowers_peak_memory_and_keeps_gradients():
    # A 16-layer residual MLP: with each layer in a checkpoint, the
    # backward pass recomputes a layer's activations when it reaches it
    # instead of keeping all of them from the forward pass. The runtime's
    # allocator measures the peak; the gradients stay bitwise the same.
    plain, plain_peak = gradient_and_peak(mlp_with_checkpoints(16, False, rows=256), 3)
    ckpt, ckpt_peak = gradient_and_peak(mlp_with_checkpoints(16, True, rows=256), 3)
    assert plain.tobytes() == ckpt.tobytes()
    # Buffers are freed after their last use either way; the checkpoints
    # keep one activation (512 KiB) per layer instead of about four
    # (measured: 35.1 MB -> 15.5 MB).
    assert ckpt_peak < 0.6 * plain_peak, (plain_peak, ckpt_peak)


def test_remat_budget_lowers_peak_memory_and_keeps_gradients():
    # The same MLP without checkpoints, its adjoint given a memory budget:
    # -tessera-tgraph-remat recomputes activations in the backward pass
    # until its Graph IR estimate fits (8 MB here); the measured peak drops
    # (35.1 MB -> 16.8 MB when this was written) and the gradient keeps
    # every bit.
    ir = mlp_with_checkpoints(16, False, rows=256)
    plain, plain_peak = gradient_and_peak(ir, 4)
    remat, remat_peak = gradient_and_peak(
        ir.replace("-> @grad", "-> @grad {remat_budget = 8000000}"), 4)
    assert plain.tobytes() == remat.tobytes()
    assert remat_peak < 0.6 * plain_peak, (plain_peak, remat_peak)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("output", ["final", "stacked"])
def test_scan_rnn(reverse, output):
    # h_{t+1} = tanh(W h_t + x_t) over 5 steps, with W from outside the
    # body: derivatives with respect to h0, the xs and W.
    h0 = uniform(rng, (3,))
    xs = uniform(rng, (5, 3))
    w = uniform(rng, (3, 3), -0.8, 0.8)
    rev = " attributes {{reverse}}" if reverse else ""
    ret = "%hf" if output == "final" else "%ys"
    body = ("%hf, %ys = tgraph.scan init(%h0 : {h0}) over(%xs : {xs}) -> ({h0}, {xs})" + rev +
            " {{\n"
            "  ^bb0(%h: {h0}, %x: {h0}):\n"
            "    %hm = tgraph.reshape %h : ({h0}) -> tensor<3x1xf64>\n"
            "    %wh = tgraph.matmul %w, %hm : ({w}, tensor<3x1xf64>) -> tensor<3x1xf64>\n"
            "    %v = tgraph.reshape %wh : (tensor<3x1xf64>) -> {h0}\n"
            "    %s = tgraph.add %v, %x : ({h0}, {h0}) -> {h0}\n"
            "    %n = tgraph.tanh %s : {h0}\n"
            "    tgraph.yield %n, %n : {h0}, {h0}\n"
            "  }}\n"
            f"  %r = tgraph.sin {ret} : {{r}}")
    check_gradients(body, [("h0", h0), ("xs", xs), ("w", w)],
                    (3,) if output == "final" else (5, 3))


def test_hvp_through_scan_and_cond():
    # Forward over reverse through the backward scan and cond of the
    # gradient: against differences of the gradient.
    rng = np.random.default_rng(9)
    ir = """func.func @loss(%h0: tensor<3xf64>, %xs: tensor<4x3xf64>,
                     %w: tensor<3x3xf64> {tgraph.name = "w"}, %p: tensor<i1>) -> tensor<f64> {
      %hf, %ys = tgraph.scan init(%h0 : tensor<3xf64>) over(%xs : tensor<4x3xf64>)
          -> (tensor<3xf64>, tensor<4x3xf64>) {
      ^bb0(%h: tensor<3xf64>, %x: tensor<3xf64>):
        %hm = tgraph.reshape %h : (tensor<3xf64>) -> tensor<3x1xf64>
        %wh = tgraph.matmul %w, %hm : (tensor<3x3xf64>, tensor<3x1xf64>) -> tensor<3x1xf64>
        %v = tgraph.reshape %wh : (tensor<3x1xf64>) -> tensor<3xf64>
        %s = tgraph.add %v, %x : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
        %n = tgraph.tanh %s : tensor<3xf64>
        tgraph.yield %n, %n : tensor<3xf64>, tensor<3xf64>
      }
      %c = tgraph.cond %p -> tensor<3xf64> {
        %e = tgraph.exp %hf : tensor<3xf64>
        tgraph.yield %e : tensor<3xf64>
      } else {
        %q = tgraph.square %hf : tensor<3xf64>
        tgraph.yield %q : tensor<3xf64>
      }
      %l = tgraph.reduce_sum %c {dims = array<i64: 0>} : (tensor<3xf64>) -> tensor<f64>
      return %l : tensor<f64>
    }
    tgraph.adjoint @loss wrt(%w) -> @grad
    tgraph.hvp @loss wrt(%w) dir(%v) -> @hvp
    """
    h0 = rng.uniform(-1, 1, 3)
    xs = rng.uniform(-1, 1, (4, 3))
    w = rng.uniform(-0.8, 0.8, (3, 3))
    v = rng.standard_normal((3, 3))
    for p in (True, False):
        (hv,) = run(ir, [h0, xs, w, np.array(p), v], fn="hvp")
        (gp,) = run(ir, [h0, xs, w + H * v, np.array(p)], fn="grad")
        (gm,) = run(ir, [h0, xs, w - H * v, np.array(p)], fn="grad")
        assert relative_error(hv, (gp - gm) / (2 * H)) < RTOL


@pytest.mark.parametrize("steps, trip_count", [(0, None), (1, None), (5, None), (5, 5),
                                               (2, 5), (5, 3)])
def test_while_loop(steps, trip_count):
    # Without trip_count the backward pass recomputes carries; with one it
    # stores them (a scan of trip_count guarded steps, then the loop for
    # any steps left: 5 steps with trip_count 3).
    # x <- sin(w * x) + a, five times (a counter in the carry decides), with
    # w and a from outside the loop: both modes against differences.
    x0 = uniform(rng, (4,))
    w = uniform(rng, (4,), 0.5, 1.5)
    a = uniform(rng, (), -0.5, 0.5)
    body = ("%zero = tgraph.constant dense<0> : tensor<i64>\n"
            f"  %limit = tgraph.constant dense<{steps}> : tensor<i64>\n"
            "  %one = tgraph.constant dense<1> : tensor<i64>\n"
            "  %r, %n = tgraph.while (%x0, %zero) : {x0}, tensor<i64> -> {x0}, tensor<i64>"
            + (f" attributes {{{{trip_count = {trip_count} : i64}}}}" if trip_count else "") +
            " cond {{\n"
            "  ^bb0(%x: {x0}, %i: tensor<i64>):\n"
            "    %c = tgraph.compare lt, %i, %limit : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
            "    tgraph.yield %c : tensor<i1>\n"
            "  }} do {{\n"
            "  ^bb0(%x: {x0}, %i: tensor<i64>):\n"
            "    %m = tgraph.mul %w, %x : ({w}, {x0}) -> {x0}\n"
            "    %s = tgraph.sin %m : {x0}\n"
            "    %y = tgraph.add %s, %a : ({x0}, {a}) -> {x0}\n"
            "    %j = tgraph.add %i, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>\n"
            "    tgraph.yield %y, %j : {x0}, tensor<i64>\n"
            "  }}")
    check_gradients(body, [("x0", x0), ("w", w), ("a", a)], (4,))


def test_unnamed_dims(tmp_path):
    # '?' dims without names: derivative code broadcasts values back to
    # shapes whose sizes only the operands know at run time (a row scale
    # [?, 1] against [?, 4], layernorm's statistics, a column sum).
    import subprocess
    from harness import TESSERA_RUN, run_env
    src = tmp_path / "unnamed.mlir"
    src.write_text("""func.func @f(%x: tensor<?x4xf64>, %y: tensor<?x1xf64>, %g: tensor<4xf64>) -> tensor<f64> {
      %a = tgraph.mul %x, %y : (tensor<?x4xf64>, tensor<?x1xf64>) -> tensor<?x4xf64>
      %n = tgraph.layernorm %a scale %g bias %g {axis = 1 : i64} : (tensor<?x4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<?x4xf64>
      %c = tgraph.reduce_sum %n {dims = array<i64: 0>, keepdims} : (tensor<?x4xf64>) -> tensor<1x4xf64>
      %d = tgraph.mul %n, %c : (tensor<?x4xf64>, tensor<1x4xf64>) -> tensor<?x4xf64>
      %r = tgraph.reduce_sum %d {dims = array<i64: 0, 1>} : (tensor<?x4xf64>) -> tensor<f64>
      return %r : tensor<f64>
    }""")
    r = np.random.default_rng(11)
    inputs = []
    for name, a in (("x", r.standard_normal((5, 4))), ("y", r.standard_normal((5, 1))),
                    ("g", r.standard_normal(4))):
        np.save(tmp_path / f"{name}.npy", a)
        inputs += ["--input", str(tmp_path / f"{name}.npy")]
    out = subprocess.run([TESSERA_RUN, str(src), "--check-grads", *inputs],
                         capture_output=True, text=True, env=run_env())
    assert out.returncode == 0, out.stdout + out.stderr
    assert "passed" in out.stdout


def test_check_grads_command_line(tmp_path):
    # tessera-run --check-grads: random float64 inputs (from --dims), JVP
    # and VJP (and with --check-order 2 the JVP of the VJP) against
    # differences; a wrong custom rule fails with exit status 1.
    import subprocess
    from harness import TESSERA_RUN, run_env
    good = tmp_path / "good.mlir"
    good.write_text("""func.func @f(%x: tensor<?x3xf64, #tgraph.dims<[B, 3]>>) -> tensor<f64> {
      %s = tgraph.softmax %x {dim = 1 : i64} : tensor<?x3xf64, #tgraph.dims<[B, 3]>>
      %l = tgraph.log %s : tensor<?x3xf64, #tgraph.dims<[B, 3]>>
      %r = tgraph.reduce_sum %l {dims = array<i64: 0, 1>} : (tensor<?x3xf64, #tgraph.dims<[B, 3]>>) -> tensor<f64>
      return %r : tensor<f64>
    }""")
    out = subprocess.run([TESSERA_RUN, str(good), "--check-grads", "--check-order", "2",
                          "--dims", "B=4"], capture_output=True, text=True, env=run_env())
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("JVP of VJP direction") == 3 and "passed" in out.stdout
    bad = tmp_path / "bad.mlir"
    # d(x^2) = 2 x, but the custom rule says x.
    bad.write_text("""
    func.func private @sq(%x: tensor<4xf64>) -> tensor<4xf64> {
      %y = tgraph.square %x : tensor<4xf64>
      return %y : tensor<4xf64>
    }
    func.func private @sq_fwd(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
      %y = tgraph.square %x : tensor<4xf64>
      return %y, %x : tensor<4xf64>, tensor<4xf64>
    }
    func.func private @sq_bwd(%x: tensor<4xf64>, %ct: tensor<4xf64>) -> tensor<4xf64> {
      %g = tgraph.mul %x, %ct : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
      return %g : tensor<4xf64>
    }
    func.func @f(%x: tensor<4xf64>) -> tensor<4xf64> {
      %y = tgraph.custom_vjp @sq(%x) fwd @sq_fwd bwd @sq_bwd : (tensor<4xf64>) -> tensor<4xf64>
      return %y : tensor<4xf64>
    }""")
    out = subprocess.run([TESSERA_RUN, str(bad), "--fn", "f", "--check-grads"],
                         capture_output=True, text=True, env=run_env())
    assert out.returncode == 1, out.stdout + out.stderr
    assert "VJP direction 0: relative error" in out.stdout and "(FAILED)" in out.stdout
    assert "JVP direction 0: relative error" in out.stdout


@pytest.mark.parametrize("case", [
    # lhs shape, rhs shape, lb, rb, lc, rc, result
    ((2, 3, 4), (2, 4, 5), [0], [0], [2], [1], (2, 3, 5)),
    ((4, 2, 3), (3, 5, 4), [], [], [0, 2], [2, 0], (2, 5)),
    ((3, 2, 4), (4, 5, 2), [1], [2], [2], [0], (2, 3, 5)),
    ((2, 3), (4, 5), [], [], [], [], (2, 3, 4, 5)),
])
def test_dot_general(case):
    ls, rs, lb, rb, lc, rc, result = case
    a, b = uniform(rng, ls), uniform(rng, rs)

    def arr(v):
        return f"array<i64{': ' + ', '.join(map(str, v)) if v else ''}>"
    check_gradients("%r = tgraph.dot_general %a, %b {{lhs_batching_dims = " + arr(lb) +
                    ", rhs_batching_dims = " + arr(rb) + ", lhs_contracting_dims = " + arr(lc) +
                    ", rhs_contracting_dims = " + arr(rc) + "}} : ({a}, {b}) -> {r}",
                    [("a", a), ("b", b)], result)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("strides, padding, dilation", [
    ((1, 1), (0, 0, 0, 0), (1, 1)),
    ((2, 1), (1, 0, 2, 1), (1, 1)),
    ((1, 2), (1, 1, 1, 1), (2, 1)),
])
def test_conv2d_through_im2col(layout, strides, padding, dilation):
    n, c, h, w, o, kh, kw = 2, 3, 7, 6, 4, 3, 2
    oh = (h + padding[0] + padding[1] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w + padding[2] + padding[3] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    if layout == "nchw":
        x, f, out = uniform(rng, (n, c, h, w)), uniform(rng, (o, c, kh, kw)), (n, o, oh, ow)
    else:
        x, f, out = uniform(rng, (n, h, w, c)), uniform(rng, (kh, kw, c, o)), (n, oh, ow, o)

    def arr(v):
        return "array<i64: " + ", ".join(map(str, v)) + ">"
    check_gradients("%r = tgraph.conv2d %x, %f {{strides = " + arr(strides) + ", padding = " +
                    arr(padding) + ", dilation = " + arr(dilation) +
                    f", layout = #tgraph<conv_layout {layout}>" + "}} : ({x}, {f}) -> {r}",
                    [("x", x), ("f", f)], out)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("c, o, groups", [(4, 6, 2), (3, 6, 3)])
def test_grouped_conv2d(layout, c, o, groups):
    # Two groups, and a depthwise convolution with channel multiplier 2.
    n, h, w, kh, kw = 2, 6, 5, 3, 2
    strides, padding = (2, 1), (1, 1, 0, 1)
    oh = (h + 2 - kh) // 2 + 1
    ow = (w + 1 - kw) + 1
    if layout == "nchw":
        x, f, out = uniform(rng, (n, c, h, w)), uniform(rng, (o, c // groups, kh, kw)), (n, o, oh, ow)
    else:
        x, f, out = uniform(rng, (n, h, w, c)), uniform(rng, (kh, kw, c // groups, o)), (n, oh, ow, o)

    def arr(v):
        return "array<i64: " + ", ".join(map(str, v)) + ">"
    check_gradients("%r = tgraph.conv2d %x, %f {{strides = " + arr(strides) + ", padding = " +
                    arr(padding) + f", groups = {groups} : i64" +
                    f", layout = #tgraph<conv_layout {layout}>" + "}} : ({x}, {f}) -> {r}",
                    [("x", x), ("f", f)], out)


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min", "prod"])
def test_collectives_on_one_device(kind):
    # A single process runs groups of one device, where every collective is
    # the identity (a permute to itself too): the derivative code of each
    # rule (weights for max/min/prod included, a zero among the values for
    # prod) compiles and gives the identity's derivative. The rules' data
    # movement for larger groups is in the autodiff lit test.
    x = uniform(rng, (4, 6))
    x[1, 2] = 0.0
    body = (
        f"%a = tgraph.all_reduce %x {{{{reduction = #tgraph<reduction {kind}>, axis_name = \"d\", group_size = 1 : i64}}}} : {{x}}\n"
        f"  %b = tgraph.reduce_scatter %a {{{{reduction = #tgraph<reduction {kind}>, dim = 1 : i64, axis_name = \"d\", group_size = 1 : i64}}}} : {{x}} -> {{x}}\n"
        "  %c = tgraph.all_gather %b {{dim = 0 : i64, axis_name = \"d\", group_size = 1 : i64}} : {x} -> {x}\n"
        "  %d = tgraph.all_to_all %c {{split_dim = 0 : i64, concat_dim = 1 : i64, axis_name = \"d\", group_size = 1 : i64}} : {x} -> {x}\n"
        "  %e = tgraph.permute %d {{pairs = [array<i64: 0, 0>], axis_name = \"d\"}} : {x}\n"
        "  %r = tgraph.mul %e, %e : {x}")
    check_gradients(body, [("x", x)], (4, 6))


@pytest.mark.parametrize("starts", [(1, 2), (4, -3), (0, 0)])
def test_dynamic_slice(starts):
    # Starts in range and clamped ones (past the end, negative).
    x = uniform(rng, (5, 6))
    i, j = (np.array(s, dtype=np.int64) for s in starts)
    check_gradients("%r = tgraph.dynamic_slice %x[%i, %j] {{sizes = #tgraph.dims<[2, 3]>}} "
                    ": ({x}, {i}, {j}) -> {r}",
                    [("x", x), ("i", i), ("j", j)], (2, 3), wrt=["x"])


def test_loss_scale_scales_the_gradient_only():
    # A mean loss with loss_scale = 1024: the same value, gradients 1024
    # times larger (exactly: a power of two), also through cross_entropy
    # (its decomposition moves the policy to the final reduction).
    x = uniform(rng, (4, 5))
    labels = np.array([0, 3, 1, 4], dtype=np.int64)
    outs = {}
    for scale in ("", " {policy = #tgraph.policy<loss_scale = 1024.0>}"):
        ir = f"""func.func @f(%x: tensor<4x5xf64> {{tgraph.name = "x"}}, %y: tensor<4xi64>) -> tensor<f64> {{
          %l = tgraph.cross_entropy %x, %y{scale} : (tensor<4x5xf64>, tensor<4xi64>) -> tensor<f64>
          return %l : tensor<f64>
        }}
        tgraph.adjoint @f wrt(%x) -> @g"""
        (value,) = run(ir, [x, labels], fn="f")
        (grad,) = run(ir, [x, labels], fn="g")
        outs[bool(scale)] = (value, grad)
    assert outs[True][0] == outs[False][0]
    np.testing.assert_array_equal(outs[True][1], 1024 * outs[False][1])
