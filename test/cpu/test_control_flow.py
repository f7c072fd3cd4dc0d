"""Structured control flow, calls and single-device collectives, compiled and
run on the CPU, against float64 NumPy loops written independently."""

import numpy as np
import pytest

from harness import RunError, assert_close, run, tensor_type

rng = np.random.default_rng(7)


@pytest.mark.parametrize("pred", [True, False])
@pytest.mark.parametrize("n", [1, 6])
def test_cond_runs_one_branch(pred, n):
    t = tensor_type((n,), np.float32, ["N"])
    ir = f"""func.func @f(%p: tensor<i1>, %a: {t}) -> {t} {{
      %r = tgraph.cond %p -> {t} {{
        %e = tgraph.exp %a : {t}
        tgraph.yield %e : {t}
      }} else {{
        %s = tgraph.mul %a, %a : {t}
        %n = tgraph.neg %s : {t}
        tgraph.yield %n : {t}
      }}
      return %r : {t}
    }}"""
    a = rng.uniform(-2, 2, n).astype(np.float32)
    (r,) = run(ir, [np.array(pred), a])
    a64 = a.astype(np.float64)
    assert_close(r, np.exp(a64) if pred else -a64 * a64, np.float32)


def test_cond_branches_of_different_sizes():
    # One branch keeps the input, the other drops its first element: the
    # result dim is '?' and its size depends on the branch taken.
    ir = """func.func @f(%p: tensor<i1>, %a: tensor<5xf32>) -> tensor<?xf32> {
      %r = tgraph.cond %p -> tensor<?xf32> {
        tgraph.yield %a : tensor<5xf32>
      } else {
        %s = tgraph.slice %a {start = #tgraph.dims<[1]>, limit = #tgraph.dims<[5]>,
            stride = array<i64: 1>} : tensor<5xf32> -> tensor<4xf32>
        tgraph.yield %s : tensor<4xf32>
      }
      return %r : tensor<?xf32>
    }"""
    a = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(run(ir, [np.array(True), a])[0], a)
    np.testing.assert_array_equal(run(ir, [np.array(False), a])[0], a[1:])


WHILE = """func.func @f(%x: {t}, %limit: tensor<f64>) -> (tensor<i64>, {t}) {{
  %zero = tgraph.constant dense<0> : tensor<i64>
  %one = tgraph.constant dense<1> : tensor<i64>
  %r:2 = tgraph.while (%zero, %x) : tensor<i64>, {t} -> tensor<i64>, {t} cond {{
  ^bb0(%it: tensor<i64>, %v: {t}):
    %m = tgraph.reduce_max %v {{dims = array<i64: 0>}} : {t} -> tensor<f64>
    %c = tgraph.compare lt, %m, %limit : (tensor<f64>, tensor<f64>) -> tensor<i1>
    tgraph.yield %c : tensor<i1>
  }} do {{
  ^bb0(%it: tensor<i64>, %v: {t}):
    %n = tgraph.add %it, %one : tensor<i64>
    %d = tgraph.mul %v, %v : {t}
    %w = tgraph.add %d, %v : {t}
    tgraph.yield %n, %w : tensor<i64>, {t}
  }}
  return %r#0, %r#1 : tensor<i64>, {t}
}}"""


@pytest.mark.parametrize("n", [1, 5, 19])
@pytest.mark.parametrize("limit", [0.5, 50.0, 1e6])
def test_while_data_dependent_trip_count(n, limit):
    t = tensor_type((n,), np.float64, ["N"])
    x = rng.uniform(0.1, 1.0, n)
    count, v = run(WHILE.format(t=t), [x, np.array(limit)])
    steps, ref = 0, x.copy()
    while ref.max() < limit:
        ref = ref * ref + ref
        steps += 1
    assert count == steps
    assert_close(v, ref, np.float64)


SCAN = """func.func @f(%h0: tensor<4xf64>, %xs: {tx}, %w: tensor<4x4xf64>)
    -> (tensor<4xf64>, {ty}, {tz}) {{
  %h, %ys, %zs = tgraph.scan init(%h0 : tensor<4xf64>) over(%xs : {tx})
      -> (tensor<4xf64>, {ty}, {tz}) {reverse} {{
  ^bb0(%c: tensor<4xf64>, %x: tensor<3x4xf64>):
    %wc = tgraph.dot_general %c, %w {{lhs_batching_dims = array<i64>,
        rhs_batching_dims = array<i64>, lhs_contracting_dims = array<i64: 0>,
        rhs_contracting_dims = array<i64: 0>}} : (tensor<4xf64>, tensor<4x4xf64>) -> tensor<4xf64>
    %row = tgraph.reduce_sum %x {{dims = array<i64: 0>}} : tensor<3x4xf64> -> tensor<4xf64>
    %s = tgraph.add %wc, %row : tensor<4xf64>
    %n = tgraph.tanh %s : tensor<4xf64>
    %sq = tgraph.mul %n, %n : tensor<4xf64>
    %z = tgraph.reduce_sum %sq {{dims = array<i64: 0>}} : tensor<4xf64> -> tensor<f64>
    tgraph.yield %n, %s, %z : tensor<4xf64>, tensor<4xf64>, tensor<f64>
  }}
  return %h, %ys, %zs : tensor<4xf64>, {ty}, {tz}
}}"""


@pytest.mark.parametrize("steps", [1, 2, 9])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_rnn_with_stacked_outputs(steps, reverse):
    tx = tensor_type((steps, 3, 4), np.float64, ["T", None, None])
    ty = tensor_type((steps, 4), np.float64, ["T", None])
    tz = tensor_type((steps,), np.float64, ["T"])
    ir = SCAN.format(tx=tx, ty=ty, tz=tz, reverse="attributes {reverse}" if reverse else "")
    h0 = rng.uniform(-1, 1, 4)
    xs = rng.uniform(-1, 1, (steps, 3, 4))
    w = rng.uniform(-1, 1, (4, 4))
    h, ys, zs = run(ir, [h0, xs, w])
    c = h0.copy()
    ref_y = np.zeros((steps, 4))
    ref_z = np.zeros(steps)
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    for i in order:
        s = c @ w + xs[i].sum(axis=0)
        c = np.tanh(s)
        ref_y[i] = s
        ref_z[i] = (c * c).sum()
    assert_close(h, c, np.float64, scale=10)
    assert_close(ys, ref_y, np.float64, scale=10)
    assert_close(zs, ref_z, np.float64, scale=10)


def test_scan_without_inputs_counts_with_length():
    ir = """func.func @f(%a: tensor<f32>) -> (tensor<f32>, tensor<5xf32>) {
      %s, %ys = tgraph.scan init(%a : tensor<f32>) over() -> (tensor<f32>, tensor<5xf32>)
          attributes {length = 5 : i64} {
      ^bb0(%c: tensor<f32>):
        %n = tgraph.mul %c, %c : tensor<f32>
        tgraph.yield %n, %c : tensor<f32>, tensor<f32>
      }
      return %s, %ys : tensor<f32>, tensor<5xf32>
    }"""
    a = np.array(1.01, np.float32)
    s, ys = run(ir, [a])
    ref = [1.01 ** (2**i) for i in range(6)]
    assert_close(ys, ref[:5], np.float32, scale=10)
    assert_close(s, ref[5], np.float32, scale=10)


FIXED_POINT = """func.func @f(%x0: tensor<?xf64, #tgraph.dims<[N]>>,
                 %w: tensor<?x?xf64, #tgraph.dims<[N, N]>>,
                 %t: tensor<?xf64, #tgraph.dims<[N]>>) -> tensor<?xf64, #tgraph.dims<[N]>> {{
  %x = tgraph.fixed_point %x0 params(%w, %t : tensor<?x?xf64, #tgraph.dims<[N, N]>>,
      tensor<?xf64, #tgraph.dims<[N]>>) {{tol = {tol} : f64, max_iter = {max_iter} : i64}}
      : tensor<?xf64, #tgraph.dims<[N]>> -> tensor<?xf64, #tgraph.dims<[N]>> {{
  ^bb0(%x: tensor<?xf64, #tgraph.dims<[N]>>, %W: tensor<?x?xf64, #tgraph.dims<[N, N]>>,
       %th: tensor<?xf64, #tgraph.dims<[N]>>):
    %wx = tgraph.dot_general %W, %x {{lhs_batching_dims = array<i64>,
        rhs_batching_dims = array<i64>, lhs_contracting_dims = array<i64: 1>,
        rhs_contracting_dims = array<i64: 0>}} : (tensor<?x?xf64, #tgraph.dims<[N, N]>>,
        tensor<?xf64, #tgraph.dims<[N]>>) -> tensor<?xf64, #tgraph.dims<[N]>>
    %s = tgraph.add %wx, %th : tensor<?xf64, #tgraph.dims<[N]>>
    %n = tgraph.tanh %s : tensor<?xf64, #tgraph.dims<[N]>>
    tgraph.yield %n : tensor<?xf64, #tgraph.dims<[N]>>
  }}
  return %x : tensor<?xf64, #tgraph.dims<[N]>>
}}"""


def contraction(n, norm):
    w = rng.normal(size=(n, n))
    return w * (norm / np.linalg.norm(w, 2))


@pytest.mark.parametrize("n", [1, 8, 31])
def test_fixed_point_solves_deq_layer(n):
    w = contraction(n, 0.6)
    theta = rng.normal(size=n)
    x0 = np.zeros(n)
    (x,) = run(FIXED_POINT.format(tol="1.0e-12", max_iter=200), [x0, w, theta])
    # The result is a fixed point of the map (to within tol / (1 - 0.6)) ...
    np.testing.assert_allclose(x, np.tanh(w @ x + theta), rtol=0, atol=5e-12)
    # ... and matches NumPy's own iteration to the same tolerance.
    ref = x0
    for _ in range(200):
        nxt = np.tanh(w @ ref + theta)
        if np.abs(nxt - ref).max() <= 1e-12:
            ref = nxt
            break
        ref = nxt
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-11)


def test_fixed_point_that_does_not_converge_is_an_error():
    n = 6
    w = contraction(n, 0.99)
    theta = rng.normal(size=n)
    with pytest.raises(RunError) as err:
        run(FIXED_POINT.format(tol="1.0e-14", max_iter=3), [np.zeros(n), w, theta])
    assert err.value.returncode == 2
    assert "'tgraph.fixed_point' op at" in err.value.stderr
    assert "did not converge to tol = 1e-14 within max_iter = 3 iterations" in err.value.stderr
    assert "after 3 iterations the largest change was" in err.value.stderr


SOLVE_SQRT = """func.func @f(%x0: {t}, %a: {t}) -> {t} {{
  %x = tgraph.solve %x0 params(%a : {t}) {{tol = {tol} : f64}} : {t} -> {t} {{
  ^bb0(%x: {t}, %p: {t}):
    %sq = tgraph.mul %x, %x : {t}
    %r = tgraph.sub %sq, %p : {t}
    tgraph.yield %r : {t}
  }}
  return %x : {t}
}}"""


@pytest.mark.parametrize("n", [1, 7, 33])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_solve_finds_square_roots(n, dtype, tol):
    # The spec's example, x^2 = a elementwise, from x0 = 1.
    a = rng.uniform(0.1, 50, n).astype(dtype)
    t = tensor_type((n,), dtype, ["N"])
    (x,) = run(SOLVE_SQRT.format(t=t, tol=f"{tol:e}"), [np.ones(n, dtype), a])
    assert x.dtype == dtype
    # |x^2 - a| <= tol at the root, so |x - sqrt(a)| <= tol / (2 sqrt(a)).
    root = np.sqrt(a.astype(np.float64))
    np.testing.assert_array_less(np.abs(x - root), tol / (2 * root) + 4 * np.finfo(dtype).eps * root)


def test_solve_coupled_system_of_any_shape():
    # F(x) = x^3 + x + sum(x) - b over x of shape [B, 3]: every residual
    # depends on every element (a dense Jacobian, 3 x_i^2 + 1 + 1 on the
    # diagonal, 1 elsewhere).
    ir = """func.func @f(%x0: tensor<?x3xf64, #tgraph.dims<[B, 3]>>, %b: tensor<?x3xf64, #tgraph.dims<[B, 3]>>)
        -> tensor<?x3xf64, #tgraph.dims<[B, 3]>> {
      %x = tgraph.solve %x0 params(%b : tensor<?x3xf64, #tgraph.dims<[B, 3]>>) {tol = 1.0e-12 : f64}
          : tensor<?x3xf64, #tgraph.dims<[B, 3]>> -> tensor<?x3xf64, #tgraph.dims<[B, 3]>> {
      ^bb0(%x: tensor<?x3xf64, #tgraph.dims<[B, 3]>>, %c: tensor<?x3xf64, #tgraph.dims<[B, 3]>>):
        %sq = tgraph.mul %x, %x : tensor<?x3xf64, #tgraph.dims<[B, 3]>>
        %cube = tgraph.mul %sq, %x : tensor<?x3xf64, #tgraph.dims<[B, 3]>>
        %s = tgraph.reduce_sum %x {dims = array<i64: 0, 1>} : tensor<?x3xf64, #tgraph.dims<[B, 3]>> -> tensor<f64>
        %u = tgraph.add %cube, %x : tensor<?x3xf64, #tgraph.dims<[B, 3]>>
        %v = tgraph.add %u, %s : (tensor<?x3xf64, #tgraph.dims<[B, 3]>>, tensor<f64>) -> tensor<?x3xf64, #tgraph.dims<[B, 3]>>
        %r = tgraph.sub %v, %c : tensor<?x3xf64, #tgraph.dims<[B, 3]>>
        tgraph.yield %r : tensor<?x3xf64, #tgraph.dims<[B, 3]>>
      }
      return %x : tensor<?x3xf64, #tgraph.dims<[B, 3]>>
    }"""
    for rows in (1, 4):
        b = rng.uniform(-5, 5, (rows, 3))
        (x,) = run(ir, [np.zeros((rows, 3)), b])
        assert x.shape == (rows, 3)
        residual = x**3 + x + x.sum() - b
        assert np.abs(residual).max() <= 1e-12
        # The same root from NumPy's Newton iteration with the exact Jacobian.
        ref = np.zeros(rows * 3)
        for _ in range(100):
            f = ref**3 + ref + ref.sum() - b.ravel()
            jac = np.diag(3 * ref**2 + 1) + 1
            ref = ref - np.linalg.solve(jac, f)
        np.testing.assert_allclose(x.ravel(), ref, rtol=0, atol=1e-11)


def test_solve_scalar_equation():
    # cos(x) = x, a rank-0 unknown.
    ir = """func.func @f(%x0: tensor<f64>) -> tensor<f64> {
      %x = tgraph.solve %x0 {tol = 1.0e-14 : f64} : tensor<f64> -> tensor<f64> {
      ^bb0(%x: tensor<f64>):
        %c = tgraph.cos %x : tensor<f64>
        %r = tgraph.sub %c, %x : tensor<f64>
        tgraph.yield %r : tensor<f64>
      }
      return %x : tensor<f64>
    }"""
    (x,) = run(ir, [np.array(0.0)])
    assert x.shape == ()
    assert abs(float(x) - 0.7390851332151607) < 1e-14


def test_solve_without_a_root_is_an_error():
    # x^2 = -1 has no real root: Newton wanders until max_iter.
    t = tensor_type((2,), np.float64, ["N"])
    with pytest.raises(RunError) as err:
        run(SOLVE_SQRT.format(t=t, tol="1.0e-10"), [np.ones(2), np.array([-1.0, 4.0])])
    assert err.value.returncode == 2
    assert "'tgraph.solve' op at" in err.value.stderr
    assert "did not converge to |F(x)| <= 1e-10 within 100 Newton steps" in err.value.stderr


def test_call_binds_symbols_and_checkpoint_runs_its_body():
    ir = """func.func private @layer(%x: tensor<?x4xf32, #tgraph.dims<[B, 4]>>,
                                   %w: tensor<4x4xf32>) -> tensor<?x4xf32, #tgraph.dims<[B, 4]>> {
      %y = tgraph.matmul %x, %w : (tensor<?x4xf32, #tgraph.dims<[B, 4]>>, tensor<4x4xf32>)
          -> tensor<?x4xf32, #tgraph.dims<[B, 4]>>
      %t = tgraph.tanh %y : tensor<?x4xf32, #tgraph.dims<[B, 4]>>
      return %t : tensor<?x4xf32, #tgraph.dims<[B, 4]>>
    }
    func.func @f(%x: tensor<3x4xf32>, %w: tensor<4x4xf32>) -> tensor<3x4xf32> {
      %y = tgraph.call @layer(%x, %w) : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
      %z = tgraph.checkpoint (%y, %w : tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32> {
      ^bb0(%a: tensor<3x4xf32>, %b: tensor<4x4xf32>):
        %c = tgraph.call @layer(%a, %b) : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
        tgraph.yield %c : tensor<3x4xf32>
      }
      return %z : tensor<3x4xf32>
    }"""
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 4)).astype(np.float32)
    (z,) = run(ir, [x, w])
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    assert_close(z, np.tanh(np.tanh(x64 @ w64) @ w64), np.float32, scale=4)


def test_custom_vjp_and_jvp_evaluate_the_callee():
    ir = """func.func private @softplus(%x: tensor<5xf64>) -> tensor<5xf64> {
      %e = tgraph.exp %x : tensor<5xf64>
      %l = tgraph.log1p %e : tensor<5xf64>
      return %l : tensor<5xf64>
    }
    func.func private @softplus_fwd(%x: tensor<5xf64>) -> (tensor<5xf64>, tensor<5xf64>) {
      %y = func.call @softplus(%x) : (tensor<5xf64>) -> tensor<5xf64>
      return %y, %x : tensor<5xf64>, tensor<5xf64>
    }
    func.func private @softplus_bwd(%x: tensor<5xf64>, %g: tensor<5xf64>) -> tensor<5xf64> {
      %s = tgraph.sigmoid %x : tensor<5xf64>
      %r = tgraph.mul %s, %g : tensor<5xf64>
      return %r : tensor<5xf64>
    }
    func.func private @softplus_jvp(%x: tensor<5xf64>, %t: tensor<5xf64>)
        -> (tensor<5xf64>, tensor<5xf64>) {
      %y = func.call @softplus(%x) : (tensor<5xf64>) -> tensor<5xf64>
      %s = tgraph.sigmoid %x : tensor<5xf64>
      %r = tgraph.mul %s, %t : tensor<5xf64>
      return %y, %r : tensor<5xf64>, tensor<5xf64>
    }
    func.func @f(%x: tensor<5xf64>) -> (tensor<5xf64>, tensor<5xf64>) {
      %a = tgraph.custom_vjp @softplus(%x) fwd @softplus_fwd bwd @softplus_bwd
          : (tensor<5xf64>) -> tensor<5xf64>
      %b = tgraph.custom_jvp @softplus(%x) jvp @softplus_jvp : (tensor<5xf64>) -> tensor<5xf64>
      return %a, %b : tensor<5xf64>, tensor<5xf64>
    }"""
    x = rng.uniform(-3, 3, 5)
    a, b = run(ir, [x])
    assert_close(a, np.log1p(np.exp(x)), np.float64)
    assert_close(b, np.log1p(np.exp(x)), np.float64)


def test_single_device_collectives_are_the_identity():
    t = "tensor<4x6xf32>"
    ir = f"""func.func @f(%x: {t}) -> ({t}, {t}, {t}, {t}, {t}, {t}) {{
      %a = tgraph.all_reduce %x {{reduction = #tgraph<reduction sum>, axis_name = "data",
          group_size = 1 : i64}} : {t}
      %b = tgraph.all_gather %x {{dim = 0 : i64, axis_name = "model", group_size = 1 : i64}}
          : {t} -> {t}
      %c = tgraph.reduce_scatter %x {{reduction = #tgraph<reduction max>, dim = 1 : i64,
          axis_name = "data", group_size = 1 : i64}} : {t} -> {t}
      %d = tgraph.all_to_all %x {{split_dim = 0 : i64, concat_dim = 1 : i64,
          axis_name = "expert", group_size = 1 : i64}} : {t} -> {t}
      %e = tgraph.permute %x {{pairs = [array<i64: 0, 0>], axis_name = "pipe"}} : {t}
      %f = tgraph.permute %x {{pairs = [], axis_name = "pipe"}} : {t}
      return %a, %b, %c, %d, %e, %f : {t}, {t}, {t}, {t}, {t}, {t}
    }}"""
    x = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    outs = run(ir, [x])
    for o in outs[:5]:
        np.testing.assert_array_equal(o, x)
    np.testing.assert_array_equal(outs[5], np.zeros_like(x))


def test_collective_over_several_devices_is_a_compile_error():
    ir = """func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
      %a = tgraph.all_reduce %x {reduction = #tgraph<reduction sum>, axis_name = "data",
          group_size = 4 : i64} : tensor<8xf32>
      return %a : tensor<8xf32>
    }"""
    with pytest.raises(RunError) as err:
        run(ir, [np.zeros(8, np.float32)])
    assert "runs over 4 devices, but a CPU executable runs on one" in err.value.stderr
