"""ts.jit(device="cuda") on the GPU against PyTorch float64 on the CPU.

The programs come from jit_programs.py: compiled here by the C++ GPU
pipeline when the compiler is installed, or loaded from
TESSERA_GPU_PROGRAMS (GPU program files saved by `jit_programs.py
--precompile`) on a machine with only the runtime.
"""

import os

import numpy as np
import pytest

import tessera as ts

torch = pytest.importorskip("torch")
if not ts.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

F64 = torch.float64


def _program(name):
    saved = os.environ.get("TESSERA_GPU_PROGRAMS")
    if saved:
        prog = ts.GpuProgram.load(os.path.join(saved, f"{name}.tgpu"))
        data = np.load(os.path.join(saved, f"{name}.npz"))
        arrays = [data[f"arr_{i}"] for i in range(len(data.files))]
        return prog, arrays
    import jit_programs
    fn, args = jit_programs.cases()[name]
    return fn.gpu_program(*args), jit_programs.flat_arrays(args)


def _t(a):
    return torch.tensor(np.asarray(a, np.float64), dtype=F64,
                        requires_grad=True)


def _bf16_arrays(arrays):
    """Saved bf16 inputs (stored as uint16) as ml_dtypes.bfloat16."""
    import ml_dtypes
    return [a.view(ml_dtypes.bfloat16) if a.dtype == np.uint16 else a
            for a in arrays]


def _close(got, want, tol, what):
    got = np.asarray(got, np.float64)
    want = want.detach().numpy()
    assert np.all(np.isfinite(got)), what
    err = np.max(np.abs(got - want)) / max(1e-30, np.max(np.abs(want)))
    assert err < tol, f"{what}: relative error {err:.3g} >= {tol}"


def test_mlp_value_and_grad():
    prog, arrays = _program("mlp_grad")
    outs = [o.numpy() for o in prog(*arrays)]
    w1, b1, w2, x, y = (_t(a) for a in arrays)
    h = torch.nn.functional.gelu(x @ w1 + b1, approximate="tanh")
    z = torch.nn.functional.layer_norm(h @ w2, (w2.shape[1],), eps=1e-5)
    p = torch.softmax(z, -1)
    loss = torch.mean((p - y) ** 2)
    loss.backward()
    _close(outs[0], loss, 1e-5, "loss")
    for got, t, name in zip(outs[1:], (w1, b1, w2), ("w1", "b1", "w2")):
        _close(got, t.grad, 1e-4, f"d{name}")


def _rope(x):
    s, dh = x.shape[-2], x.shape[-1]
    half = dh // 2
    pos = torch.arange(s, dtype=F64)[:, None]
    freq = torch.exp(torch.arange(half, dtype=F64)[None, :] *
                     (-2.0 * np.log(10000.0) / dh))
    cos, sin = torch.cos(pos * freq), torch.sin(pos * freq)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def _block_reference(arrays):
    """The loss and the parameters' gradients of block_loss in float64."""
    # Leaves in tree order: attn.{wk, wo, wq, wv}, down.{b, w},
    # ln1.{bias, scale}, ln2.{bias, scale}, up.{b, w}, x.
    ts_ = [_t(a) for a in arrays]
    wk, wo, wq, wv, db, dw, l1b, l1s, l2b, l2s, ub, uw, x = ts_
    b, s, d = x.shape
    heads = 4

    def split(t):
        return t.reshape(b, s, heads, d // heads).transpose(1, 2)

    def ln(t, scale, bias):
        return torch.nn.functional.layer_norm(t, (d,), scale, bias, 1e-5)

    h = ln(x, l1s, l1b)
    q, k, v = _rope(split(h @ wq)), _rope(split(h @ wk)), split(h @ wv)
    att = torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                           is_causal=True)
    x1 = x + att.transpose(1, 2).reshape(b, s, d) @ wo
    m = torch.nn.functional.gelu(ln(x1, l2s, l2b) @ uw + ub,
                                 approximate="tanh")
    y = x1 + m @ dw + db
    loss = torch.mean(y * y)
    loss.backward()
    return loss, [t.grad for t in ts_[:-1]]


def _check_block(outs, arrays):
    loss, grads = _block_reference(arrays)
    _close(outs[0], loss, 1e-5, "loss")
    for got, g, i in zip(outs[1:], grads, range(12)):
        _close(got, g, 2e-4, f"grad {i}")


def test_transformer_block_value_and_grad():
    prog, arrays = _program("block_grad")
    _check_block([o.numpy() for o in prog(*arrays)], arrays)


def test_compiled_programs_replay_as_a_cuda_graph():
    """From the second call on, the C++ pipeline's program runs as one CUDA
    graph; calls on other buffers (device tensors, PyTorch tensors through
    DLPack, other values) rewrite its nodes' addresses, and earlier
    results stay as they were."""
    prog, arrays = _program("block_grad")
    first = prog(*arrays)
    assert prog.graph_runs == 0
    second = prog(*arrays)
    assert prog.graph_failure is None, prog.graph_failure
    assert prog.graph_runs == 1
    other = [a * 0.5 for a in arrays]
    third = prog(*[ts.cuda.to_device(a) for a in other])
    _check_block([o.numpy() for o in third], other)
    fourth = prog(*[torch.tensor(a, device="cuda") for a in arrays])
    _check_block([o.numpy() for o in fourth], arrays)
    _check_block([o.numpy() for o in second], arrays)
    assert prog.graph_runs == 3
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, b in zip(first, fourth):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_graph_is_kept_for_each_set_of_buffers():
    """Calls alternating between two sets of argument buffers (and the
    result buffers the allocator hands back) launch a graph kept for each,
    without rewriting nodes; past the graphs kept, the least recently used
    one is rewritten; every call's results are its own inputs'."""
    prog, arrays = _program("block_grad")
    sets = [[ts.cuda.to_device(a * s) for a in arrays]
            for s in (1.0, 0.5, 0.25, 2.0, 1.5, 0.75)]
    scaled = [[a * s for a in arrays]
              for s in (1.0, 0.5, 0.25, 2.0, 1.5, 0.75)]
    prog(*sets[0])
    for _ in range(3):
        for k in (0, 1):
            outs = prog(*sets[k])
            _check_block([o.numpy() for o in outs], scaled[k])
            del outs
    assert prog.graph_failure is None, prog.graph_failure
    built = prog.graphs_built
    assert 2 <= built <= 4, built
    assert prog.graph_rewrites == 0
    # More sets than graphs kept: rewrites, then the first set again.
    for k in range(6):
        outs = prog(*sets[k])
        _check_block([o.numpy() for o in outs], scaled[k])
    assert prog.graphs_built == 4
    assert prog.graph_rewrites >= 1
    outs = prog(*sets[0])
    _check_block([o.numpy() for o in outs], scaled[0])


def test_bf16_attention_gradients_on_flash_attention():
    prog, arrays = _program("attention_grad")
    assert any(k.startswith("flash_attention_fwd") for k in prog.kernels)
    assert any(k.startswith("flash_attention_bwd") for k in prog.kernels)
    arrays = _bf16_arrays(arrays)
    outs = [o.numpy().astype(np.float64) for o in prog(*arrays)]
    q, k, v = (_t(a.astype(np.float64)) for a in arrays[:3])
    w = torch.tensor(arrays[3].astype(np.float64))
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                         is_causal=True)
    loss = torch.sum(o * w)
    loss.backward()
    _close(outs[0], loss, 2e-2, "loss")
    for got, t, name in zip(outs[1:], (q, k, v), "qkv"):
        _close(got, t.grad, 2e-2, f"d{name}")


def _heads(x, h):
    b, s, c = x.shape
    return x.view(b, s, h, c // h).transpose(1, 2)


@pytest.mark.parametrize("name", ["head_attention_grad",
                                  "mixed_head_attention_grad"])
def test_attention_reads_and_writes_heads_in_place(name):
    prog, arrays = _program(name)
    # The heads are split and merged by the attention kernels themselves:
    # no copy kernels around them.
    assert not any("_layout" in k for k in prog.kernels), sorted(prog.kernels)
    arrays = _bf16_arrays(arrays)
    outs = [o.numpy().astype(np.float64) for o in prog(*arrays)]
    q, k, v = (_t(a.astype(np.float64)) for a in arrays[:3])
    w = torch.tensor(arrays[3].astype(np.float64))
    if name == "head_attention_grad":
        o = torch.nn.functional.scaled_dot_product_attention(
            _heads(q, 3), _heads(k, 3), _heads(v, 3), is_causal=True)
        y = o.transpose(1, 2).reshape(q.shape)
    else:
        y = torch.nn.functional.scaled_dot_product_attention(
            _heads(q, 2), k, v)
    loss = torch.sum(y * w)
    loss.backward()
    _close(outs[0], loss, 2e-2, "loss")
    for got, t, n in zip(outs[1:], (q, k, v), "qkv"):
        assert got.shape == tuple(t.shape), (n, got.shape)
        _close(got, t.grad, 2e-2, f"d{n}")


def test_layout_copies_match_numpy():
    prog, (x, y) = _program("layouts")
    t, half, padded, wide = (o.numpy() for o in prog(x, y))
    np.testing.assert_array_equal(t, np.transpose(x, (1, 0, 2)))
    np.testing.assert_array_equal(
        half, np.concatenate([x[:, :, 10:], x[:, :, :10]], axis=2))
    np.testing.assert_array_equal(padded,
                                  np.pad(x, [(2, 1), (0, 0), (0, 0)]))
    np.testing.assert_array_equal(wide, np.broadcast_to(y, x.shape) * 2.0)


def _windows_torch(x, c, s, w):
    a, b = x[:, :, 0:13], x[:, :, 13:26]
    r = torch.cat([a * c - b * s, a * s + b * c], dim=2)
    h = x.transpose(0, 1)
    ha, hb = h[:, :, 0:13], h[:, :, 13:26]
    c3, s3 = c.reshape(-1, 1, 13), s.reshape(-1, 1, 13)
    rt = torch.cat([ha * c3 - hb * s3, ha * s3 + hb * c3],
                   dim=2).transpose(0, 1)
    return r, x[:, :, 3:19] @ w, rt


def test_column_windows_match_torch():
    prog, (x, c, s, w) = _program("column_windows")
    r, m, rt = (o.numpy() for o in prog(x, c, s, w))
    want_r, want_m, want_rt = _windows_torch(*map(_t, (x, c, s, w)))
    _close(r, want_r, 1e-6, "rotated halves")
    _close(rt, want_rt, 1e-6, "rotated halves of transposed rows")
    # (An f32 product may run on TF32 tensor cores.)
    _close(m, want_m, 3e-3, "product of a window")


def test_column_windows_gradient_matches_torch():
    prog, (x, c, s, w) = _program("column_windows_grad")
    loss, dx = (o.numpy() for o in prog(x, c, s, w))
    tx, tc, ts_, tw = map(_t, (x, c, s, w))
    r, m, rt = _windows_torch(tx, tc, ts_, tw)
    want = (r * r).sum() * 0.5 + torch.tanh(m).sum() + (rt ** 3).sum()
    want.backward()
    _close(loss, want, 3e-3, "loss")
    _close(dx, tx.grad, 3e-3, "dx")
    # The last three columns are in no window: their gradient is zero.
    assert np.all(np.asarray(dx)[:, :, 26:] == 0)


def test_reductions_of_a_whole_tensor():
    prog, (x,) = _program("whole_reductions")
    # Each long row is cut into segments: partials, then their sum.
    assert sum("reduce" in k for k in prog.kernels) >= 4, prog.kernels
    mean, top = (float(o.numpy()) for o in prog(x))
    x64 = x.astype(np.float64)
    assert abs(mean - np.mean(x64 * x64)) < 1e-5 * np.mean(x64 * x64)
    assert top == np.max(x)


def test_bf16_mlp_forward():
    prog, arrays = _program("bf16_mlp")
    arrays = _bf16_arrays(arrays)
    out = prog(*arrays)[0]
    got = out.numpy().astype(np.float64)
    x, w1, w2 = (torch.tensor(a.astype(np.float64)) for a in arrays)
    want = torch.relu(x @ w1) @ w2
    err = np.max(np.abs(got - want.numpy())) / np.max(np.abs(want.numpy()))
    assert err < 2e-2, err


def test_bf16_batched_products():
    """Each product against float64 (the stdlib's batched GEMM, autotuned
    on the first call; test_stdlib_gpu checks each of its schedules)."""
    prog, arrays = _program("bf16_batched")
    arrays = _bf16_arrays(arrays)
    x, y, w, v = (a.astype(np.float64) for a in arrays)
    s = x @ np.swapaxes(y, -1, -2)
    want = [s, w @ v, s @ v[0]]
    for got, ref, what in zip(prog(*arrays), want, ("x @ y^T", "w @ v",
                                                    "s @ v[0]")):
        got = got.numpy().astype(np.float64)
        assert got.shape == ref.shape, what
        err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
        assert err < 1e-2, f"{what}: relative error {err:.3g}"


def test_split_k_products():
    """Products whose K is split in chunks (f32 partials, then their sum
    and the epilogue) against float64, and the same bits at a second
    run: the chunks are added in a fixed order."""
    prog, arrays = _program("split_k")
    arrays = _bf16_arrays(arrays)
    x, w, b, y, z = (a.astype(np.float64) for a in arrays)
    u = x @ w + b
    gelu = 0.5 * u * (1 + np.tanh(0.7978845608028654 *
                                  (u + 0.044715 * u ** 3)))
    want = [gelu, y.T @ y, 0.5 * (z.T @ z)]
    first = [o.numpy() for o in prog(*arrays)]
    tols = (2e-2, 1e-2, 1e-5)
    for got, ref, tol, what in zip(first, want, tols,
                                   ("gelu(x @ w + b)", "y^T y", "z^T z")):
        got = np.asarray(got).astype(np.float64)
        assert got.shape == ref.shape, what
        err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
        assert err < tol, f"{what}: relative error {err:.3g}"
    again = [o.numpy() for o in prog(*arrays)]
    for a, b2 in zip(first, again):
        assert np.asarray(a).tobytes() == np.asarray(b2).tobytes()


def test_row_and_column_broadcasts():
    prog, (x, b) = _program("broadcasts")
    rows, cols = (o.numpy() for o in prog(x, b))
    x64, b64 = x.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(rows, np.broadcast_to(x64, (48, 36)) * 2.0,
                               rtol=1e-6)
    np.testing.assert_allclose(cols, np.broadcast_to(b64, (48, 36)) * 3.0,
                               rtol=1e-6)


def test_programs_on_empty_tensors():
    """NumPy's results for tensors with no elements: sums of nothing are 0,
    means NaN, logsumexp -inf, and ops on empty tensors give empty ones."""
    prog, arrays = _program("empty_dims")
    outs = [np.asarray(o.numpy()) for o in prog(*arrays)]
    shapes = [o.shape for o in outs]
    assert shapes == [(32,), (0, 32), (0, 32), (), (8, 16), (8,), (4, 32)], \
        shapes
    np.testing.assert_array_equal(outs[0], np.zeros(32, np.float32))
    assert np.isnan(outs[3])
    np.testing.assert_array_equal(outs[4], np.zeros((8, 16), np.float32))
    np.testing.assert_array_equal(outs[5], np.full(8, -np.inf, np.float32))
    np.testing.assert_allclose(outs[6], arrays[4] * 2.0 + 1.0, rtol=1e-6)
