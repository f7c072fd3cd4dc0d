"""gather, embedding, one_hot, dynamic_slice and scatter_add compiled for the
CPU, against NumPy indexing (np.take, np.add.at) with the ops' documented
out-of-range rules."""

import numpy as np
import pytest

from harness import RunError, run, tensor_type

rng = np.random.default_rng(11)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("idx_shape", [(), (5,), (2, 3)])
@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
def test_gather_matches_take_with_clamping(dim, idx_shape, idx_dtype):
    x_shape = (4, 6, 3)
    x = rng.uniform(-1, 1, x_shape).astype(np.float32)
    # Includes out-of-range indices on both sides: they clamp.
    idx = rng.integers(-3, x_shape[dim] + 3, idx_shape).astype(idx_dtype)
    out_shape = x_shape[:dim] + idx_shape + x_shape[dim + 1:]
    tx = tensor_type(x_shape, np.float32, ["A", None, None])
    ti = tensor_type(idx_shape, idx_dtype, ["N"] + [None] * (len(idx_shape) - 1) if idx_shape else None)
    syms = [None] * len(out_shape)
    if dim != 0:
        syms[0] = "A"
    elif idx_shape:
        syms[0] = "N"
    to = tensor_type(out_shape, np.float32, syms)
    ir = f"""func.func @f(%x: {tx}, %i: {ti}) -> {to} {{
      %g = tgraph.gather %x, %i {{dim = {dim} : i64}} : ({tx}, {ti}) -> {to}
      return %g : {to}
    }}"""
    (g,) = run(ir, [x, idx])
    ref = np.take(x, np.clip(idx, 0, x_shape[dim] - 1), axis=dim)
    np.testing.assert_array_equal(g, ref)


@pytest.mark.parametrize("b,s", [(1, 1), (2, 7)])
def test_embedding_looks_up_rows(b, s):
    table = rng.normal(size=(50, 8)).astype(np.float32)
    ids = rng.integers(-2, 53, (b, s)).astype(np.int32)
    ti = tensor_type((b, s), np.int32, ["B", "S"])
    to = tensor_type((b, s, 8), np.float32, ["B", "S", None])
    ir = f"""func.func @f(%t: tensor<50x8xf32>, %i: {ti}) -> {to} {{
      %e = tgraph.embedding %t, %i : (tensor<50x8xf32>, {ti}) -> {to}
      return %e : {to}
    }}"""
    (e,) = run(ir, [table, ids])
    np.testing.assert_array_equal(e, table[np.clip(ids, 0, 49)])


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_one_hot_gives_zeros_out_of_range(dtype):
    ids = np.array([[0, 3, 9], [10, -1, 4]], np.int64)
    ti = tensor_type(ids.shape, np.int64, ["B", None])
    to = tensor_type((2, 3, 10), dtype, ["B", None, None])
    ir = f"""func.func @f(%i: {ti}) -> {to} {{
      %o = tgraph.one_hot %i {{num_classes = 10 : i64}} : {ti} -> {to}
      return %o : {to}
    }}"""
    (o,) = run(ir, [ids])
    ref = (ids[..., None] == np.arange(10)).astype(dtype)
    np.testing.assert_array_equal(o, ref)
    assert o[1, 0].sum() == 0 and o[1, 1].sum() == 0


@pytest.mark.parametrize("starts", [(0, 0), (2, 3), (-4, 1), (9, 100)])
def test_dynamic_slice_clamps_starts(starts):
    x = rng.normal(size=(6, 9))
    tx = tensor_type((6, 9), np.float64, ["N", "D"])
    to = tensor_type((2, 9), np.float64, [None, "D"])
    ir = f"""func.func @f(%x: {tx}, %i: tensor<i64>, %j: tensor<i32>) -> {to} {{
      %s = tgraph.dynamic_slice %x[%i, %j] {{sizes = #tgraph.dims<[2, D]>}}
          : ({tx}, tensor<i64>, tensor<i32>) -> {to}
      return %s : {to}
    }}"""
    (s,) = run(ir, [x, np.array(starts[0], np.int64), np.array(starts[1], np.int32)])
    i = min(max(starts[0], 0), 6 - 2)
    np.testing.assert_array_equal(s, x[i:i + 2, :])


def test_dynamic_slice_larger_than_its_dim_is_an_error():
    tx = tensor_type((3, 4), np.float64, ["N", None])
    ir = f"""func.func @f(%x: {tx}, %i: tensor<i64>) -> tensor<5x4xf64> {{
      %z = tgraph.constant dense<0> : tensor<i64>
      %s = tgraph.dynamic_slice %x[%i, %z] {{sizes = #tgraph.dims<[5, 4]>}}
          : ({tx}, tensor<i64>, tensor<i64>) -> tensor<5x4xf64>
      return %s : tensor<5x4xf64>
    }}"""
    with pytest.raises(RunError) as err:
        run(ir, [np.zeros((3, 4)), np.array(0, np.int64)])
    assert err.value.returncode == 2
    assert "slice size of dim 0 must not exceed the operand's dim (found 5 and 3)" in err.value.stderr


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("idx_shape", [(), (7,), (3, 4)])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_scatter_add_accumulates_repeats_and_drops_out_of_range(dim, idx_shape, dtype):
    x_shape = (5, 4)
    x = (rng.normal(size=x_shape) * 4).astype(dtype)
    idx = rng.integers(-2, x_shape[dim] + 2, idx_shape).astype(np.int32)
    upd_shape = x_shape[:dim] + idx_shape + x_shape[dim + 1:]
    upd = (rng.normal(size=upd_shape) * 4).astype(dtype)
    tx = tensor_type(x_shape, dtype)
    ti = tensor_type(idx_shape, np.int32)
    tu = tensor_type(upd_shape, dtype)
    ir = f"""func.func @f(%x: {tx}, %i: {ti}, %u: {tu}) -> {tx} {{
      %s = tgraph.scatter_add %x, %i, %u {{dim = {dim} : i64}} : ({tx}, {ti}, {tu}) -> {tx}
      return %s : {tx}
    }}"""
    (s,) = run(ir, [x, idx, upd])
    ref = x.astype(np.float64)
    flat = idx.reshape(-1)
    u = upd.astype(np.float64).reshape(x_shape[:dim] + (flat.size,) + x_shape[dim + 1:])
    for p, k in enumerate(flat):  # in order: the op's accumulation order
        if 0 <= k < x_shape[dim]:
            if dim == 0:
                ref[k] += u[p]
            else:
                ref[:, k] += u[:, p]
    if dtype == np.int32:
        np.testing.assert_array_equal(s, ref.astype(np.int32))
    else:
        np.testing.assert_allclose(s, ref, rtol=1e-14, atol=1e-14)


def test_scatter_add_with_symbolic_sizes_is_gathers_adjoint():
    # <gather(x, i), u> == <x, scatter_add(0, i, u)> for in-range indices.
    n, v, d = 9, 6, 3
    x = rng.normal(size=(v, d))
    idx = rng.integers(0, v, n).astype(np.int64)
    u = rng.normal(size=(n, d))
    tx = tensor_type((v, d), np.float64, ["V", None])
    ti = tensor_type((n,), np.int64, ["N"])
    tu = tensor_type((n, d), np.float64, ["N", None])
    ir = f"""func.func @f(%x: {tx}, %i: {ti}, %u: {tu}) -> ({tu}, {tx}) {{
      %g = tgraph.gather %x, %i {{dim = 0 : i64}} : ({tx}, {ti}) -> {tu}
      %z = tgraph.zeros_like %x : {tx}
      %s = tgraph.scatter_add %z, %i, %u {{dim = 0 : i64}} : ({tx}, {ti}, {tu}) -> {tx}
      return %g, %s : {tu}, {tx}
    }}"""
    g, s = run(ir, [x, idx, u])
    np.testing.assert_allclose((g * u).sum(), (x * s).sum(), rtol=1e-12)
    ref = np.zeros((v, d))
    np.add.at(ref, idx, u)
    np.testing.assert_allclose(s, ref, rtol=1e-14, atol=1e-14)


def pad_ref(x, low, high, interior, value):
    """XLA/StableHLO pad semantics, written with plain index arithmetic."""
    out_shape = [lo + hi + n + max(n - 1, 0) * i
                 for n, lo, hi, i in zip(x.shape, low, high, interior)]
    out = np.full(out_shape, value, dtype=np.float64)
    for src in np.ndindex(*x.shape):
        dst = tuple(lo + s * (i + 1) for s, lo, i in zip(src, low, interior))
        if all(0 <= p < n for p, n in zip(dst, out_shape)):
            out[dst] = x[src]
    return out


@pytest.mark.parametrize("low,high,interior", [
    ((0, 2), (1, 0), (1, 0)),
    ((2, 1), (0, 3), (2, 1)),
    ((-1, 0), (0, -2), (0, 0)),
    ((-2, 1), (1, -1), (1, 2)),
    ((0, 0), (0, 0), (3, 3)),
])
@pytest.mark.parametrize("rows", [1, 4])
def test_pad_interior_and_negative_edges(low, high, interior, rows):
    x = rng.normal(size=(rows, 5))
    ref = pad_ref(x, low, high, interior, -1.5)
    tx = tensor_type(x.shape, np.float64, ["R", None])
    ir = f"""func.func @f(%x: {tx}) -> tensor<?x{ref.shape[1]}xf64> {{
      %p = tgraph.pad %x {{low = array<i64: {low[0]}, {low[1]}>, high = array<i64: {high[0]}, {high[1]}>,
          interior = array<i64: {interior[0]}, {interior[1]}>, value = -1.5 : f64}}
          : {tx} -> tensor<?x{ref.shape[1]}xf64>
      return %p : tensor<?x{ref.shape[1]}xf64>
    }}"""
    (p,) = run(ir, [x])
    np.testing.assert_array_equal(p, ref)
