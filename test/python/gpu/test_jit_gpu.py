"""ts.jit(device="cuda") on the GPU against PyTorch float64 on the CPU.

The programs come from jit_programs.py: traced here when the compiler is
installed, or loaded from TESSERA_GPU_PROGRAMS (saved by
`jit_programs.py --precompile`) on a machine with only the runtime.
"""

import os

import numpy as np
import pytest

import tessera as ts
from tessera._gpu_graph import GpuProgram

torch = pytest.importorskip("torch")
if not ts.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

F64 = torch.float64


def _program(name):
    saved = os.environ.get("TESSERA_GPU_PROGRAMS")
    if saved:
        prog = GpuProgram.load(os.path.join(saved, f"{name}.json"))
        data = np.load(os.path.join(saved, f"{name}.npz"))
        arrays = [data[f"arr_{i}"] for i in range(len(data.files))]
        return prog, arrays
    import jit_programs
    fn, args = jit_programs.cases()[name]
    return fn.gpu_program(*args), jit_programs.flat_arrays(args)


def _t(a):
    return torch.tensor(np.asarray(a, np.float64), dtype=F64,
                        requires_grad=True)


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


def test_transformer_block_value_and_grad():
    prog, arrays = _program("block_grad")
    outs = [o.numpy() for o in prog(*arrays)]
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
    _close(outs[0], loss, 1e-5, "loss")
    for got, t, i in zip(outs[1:], ts_[:-1], range(12)):
        _close(got, t.grad, 2e-4, f"grad {i}")


def test_bf16_mlp_forward():
    prog, arrays = _program("bf16_mlp")
    import ml_dtypes
    arrays = [a.view(ml_dtypes.bfloat16) if a.dtype == np.uint16 else a
              for a in arrays]
    out = prog(*arrays)[0]
    got = out.numpy().astype(np.float64)
    x, w1, w2 = (torch.tensor(a.astype(np.float64)) for a in arrays)
    want = torch.relu(x @ w1) @ w2
    err = np.max(np.abs(got - want.numpy())) / np.max(np.abs(want.numpy()))
    assert err < 2e-2, err


def test_row_and_column_broadcasts():
    prog, (x, b) = _program("broadcasts")
    rows, cols = (o.numpy() for o in prog(x, b))
    x64, b64 = x.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(rows, np.broadcast_to(x64, (48, 36)) * 2.0,
                               rtol=1e-6)
    np.testing.assert_allclose(cols, np.broadcast_to(b64, (48, 36)) * 3.0,
                               rtol=1e-6)
