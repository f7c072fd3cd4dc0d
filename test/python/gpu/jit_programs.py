"""Functions the GPU tests run through ts.jit(device="cuda").

`python jit_programs.py --precompile CHIP DIR` compiles each one through
the C++ GPU pipeline and saves its GPU program (DIR/<name>.tgpu) and its
inputs (DIR/<name>.npz), for GPU machines without the compiler:
test_jit_gpu.py loads them there.
"""

import sys

import numpy as np

import tessera as ts
from tessera import nn, op


def mlp_loss(w1, b1, w2, x, y):
    """gelu MLP, layernorm, softmax, mean squared error."""
    h = op.gelu(op.matmul(x, w1) + b1, approximate=True)
    z = op.layernorm(op.matmul(h, w2))
    p = op.softmax(z)
    return op.reduce_mean((p - y) * (p - y))


def block_loss(p, x):
    """mean(y^2) of nn.transformer_block (layernorm, rope, causal
    attention, gelu MLP, residuals)."""
    y = nn.transformer_block(p, x, 4)
    return op.reduce_mean(y * y)


def bf16_mlp(x, w1, w2):
    return op.matmul(op.relu(op.matmul(x, w1)), w2)


def bf16_batched(x, y, w, v):
    """Batched bf16 products: scores of heads (right operand transposed;
    M = 256, one GEMM of the [Z * M, N] view), a shared left operand (M =
    72, a program per tile and batch), and a shared right operand (folded
    into M). Odd sizes and a K that is no multiple of the tiles' K."""
    s = op.matmul(x, y, transpose_rhs=True)
    return s, op.matmul(w, v), op.matmul(s, v[0])


def attention_loss(q, k, v, w):
    """sum(w * causal attention): bf16 q, k, v of head dim 64, which the GPU
    runs (with its gradient) on the flash-attention kernels."""
    o = op.attention(q, k, v, causal=True)
    return op.reduce_sum(op.cast(o, "f32") * w)


def _split(x, heads):
    b, s, c = x.shape                       # [B, S, H*D] -> [B, H, S, D]
    return op.transpose(op.reshape(x, [b, s, heads, c // heads]),
                        [0, 2, 1, 3])


def _merge(x):
    b, h, s, d = x.shape                    # [B, H, S, D] -> [B, S, H*D]
    return op.reshape(op.transpose(x, [0, 2, 1, 3]), [b, s, h * d])


def head_attention_loss(q, k, v, w):
    """sum(w * heads merged back) of causal attention over 3 heads of 64
    split off [B, S, H*D] bf16 q, k, v (S = 200: a partial block; B = 3:
    9 heads, a full group of causal programs and a partial one). The
    attention kernels read the heads and write the output and all three
    gradients in place: no head transposes are copied."""
    o = op.attention(_split(q, 3), _split(k, 3), _split(v, 3), causal=True)
    return op.reduce_sum(op.cast(_merge(o), "f32") * w)


def mixed_head_attention_loss(q, k, v, w):
    """Attention without a mask over 2 heads of 128: q split off [B, S, H*D],
    k and v given as [B, H, S, D]; the output stays [B, H, S, D]."""
    o = op.attention(_split(q, 2), k, v)
    return op.reduce_sum(op.cast(o, "f32") * w)


def layouts(x, y):
    """Row copies of odd sizes: a head split, a slice and concat of the
    last dim (as rope does), a pad, a broadcast along a middle dim."""
    t = op.transpose(x, (1, 0, 2))
    half = op.concat([op.slice(x, (0, 0, 10), (37, 5, 24)),
                      op.slice(x, (0, 0, 0), (37, 5, 10))], axis=2)
    padded = op.pad(x, (2, 0, 0), (1, 0, 0))
    wide = op.broadcast_to(y, (37, 5, 24))
    return t, half, padded, wide * 2.0


def column_windows(x, c, s, w):
    """Windows of the last dim's columns that row kernels read in place: a
    rotary embedding of half width 13 over the first 26 of 29 columns,
    written as one concat, and a window that a product reads (written out
    first)."""
    n, t, _ = x.shape
    a = op.slice(x, (0, 0, 0), (n, t, 13))
    b = op.slice(x, (0, 0, 13), (n, t, 26))
    r = op.concat([a * c - b * s, a * s + b * c], axis=2)
    m = op.matmul(op.slice(x, (0, 0, 3), (n, t, 19)), w)
    # The same on the rows in another order (a transpose of leading dims
    # read in place, the result transposed back as it is written).
    h = op.transpose(x, (1, 0, 2))
    ha = op.slice(h, (0, 0, 0), (t, n, 13))
    hb = op.slice(h, (0, 0, 13), (t, n, 26))
    c3 = op.reshape(c, (t, 1, 13))
    s3 = op.reshape(s, (t, 1, 13))
    rt = op.transpose(op.concat([ha * c3 - hb * s3, ha * s3 + hb * c3],
                                axis=2), (1, 0, 2))
    return r, m, rt


def column_windows_loss(x, c, s, w):
    """Through the gradient: the windows' gradients are zero pads side by
    side, summed (a concat on the GPU)."""
    r, m, rt = column_windows(x, c, s, w)
    return (op.reduce_sum(r * r) * 0.5 + op.reduce_sum(op.tanh(m)) +
            op.reduce_sum(rt * rt * rt))


def whole_reductions(x):
    """Reductions of a whole tensor: one long row, cut into segments."""
    return op.reduce_mean(x * x), op.reduce_max(x)


def broadcasts(x, b):
    """Groups whose operands are all rows or all columns of the result."""
    return (op.broadcast_to(x, (48, 36)) * 2.0,
            op.broadcast_to(b, (48, 36)) * 3.0)


def empty_dims(x, w, a, b, c):
    """Tensors with no elements: an empty batch x [0, 64] through a layer,
    an empty contraction a [8, 0] @ b [0, 16], and the empty rows joined to
    c [4, 32] (computed on the card)."""
    h = op.gelu(op.matmul(x, w), approximate=True)
    return (op.reduce_sum(h, axis=0), op.softmax(h), op.layernorm(h),
            op.reduce_mean(h), op.matmul(a, b), op.logsumexp(a, axis=1),
            op.concat([c, h], axis=0) * 2.0 + 1.0)


def split_k(x, w, b, y, z):
    """Products of few output tiles over a long K (6144), which split K
    into chunks summed by a second kernel: one with a bias and GELU
    epilogue (odd M and N), a transposed left operand (a weight gradient's
    form), and f32 operands."""
    h = op.gelu(op.matmul(x, w) + b, approximate=True)
    g = op.matmul(y, y, transpose_lhs=True)
    return h, g, op.matmul(z, z, transpose_lhs=True) * 0.5


def cases():
    """name -> (jit function, arguments as the function takes them)."""
    rng = np.random.default_rng(0)

    def r(*s, scale=1.0, dtype=np.float32):
        return (rng.standard_normal(s) * scale).astype(dtype)

    block = nn.transformer_block_init(nn.rng(1), 64, 4, 128)
    for k in ("ln1", "ln2"):
        block[k]["scale"] = (1 + 0.1 * rng.standard_normal(64)).astype(
            np.float32)
        block[k]["bias"] = r(64, scale=0.1)
    block["up"]["b"] = r(128, scale=0.1)
    block["down"]["b"] = r(64, scale=0.1)
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    return {
        "mlp_grad": (ts.jit(ts.value_and_grad(mlp_loss, argnums=(0, 1, 2)),
                            device="cuda"),
                     (r(64, 100, scale=0.1), r(100, scale=0.1),
                      r(100, 36, scale=0.1), r(48, 64), r(48, 36))),
        "block_grad": (ts.jit(ts.value_and_grad(block_loss), device="cuda"),
                       (block, r(2, 16, 64))),
        "attention_grad": (
            ts.jit(ts.value_and_grad(attention_loss, argnums=(0, 1, 2)),
                   device="cuda"),
            tuple(r(2, 4, 192, 64, dtype=bf) for _ in range(3)) +
            (r(2, 4, 192, 64, scale=0.1),)),
        "head_attention_grad": (
            ts.jit(ts.value_and_grad(head_attention_loss,
                                     argnums=(0, 1, 2)), device="cuda"),
            tuple(r(3, 200, 192, dtype=bf) for _ in range(3)) +
            (r(3, 200, 192, scale=0.1),)),
        "mixed_head_attention_grad": (
            ts.jit(ts.value_and_grad(mixed_head_attention_loss,
                                     argnums=(0, 1, 2)), device="cuda"),
            (r(1, 136, 256, dtype=bf), r(1, 2, 136, 128, dtype=bf),
             r(1, 2, 136, 128, dtype=bf), r(1, 2, 136, 128, scale=0.1))),
        "layouts": (ts.jit(layouts, device="cuda"),
                    (r(37, 5, 24), r(37, 1, 24))),
        "column_windows": (ts.jit(column_windows, device="cuda"),
                           (r(3, 16, 29), r(16, 13), r(16, 13), r(16, 5))),
        "column_windows_grad": (
            ts.jit(ts.value_and_grad(column_windows_loss), device="cuda"),
            (r(3, 16, 29), r(16, 13), r(16, 13), r(16, 5))),
        "whole_reductions": (ts.jit(whole_reductions, device="cuda"),
                             (r(300, 1001),)),
        "broadcasts": (ts.jit(broadcasts, device="cuda"),
                       (r(48, 1), r(36))),
        "bf16_batched": (ts.jit(bf16_batched, device="cuda"),
                         (r(2, 3, 256, 96, dtype=bf), r(2, 3, 136, 96,
                                                        dtype=bf),
                          r(72, 136, dtype=bf), r(6, 136, 40, dtype=bf))),
        "empty_dims": (ts.jit(empty_dims, device="cuda"),
                       (r(0, 64), r(64, 32), r(8, 0), r(0, 16), r(4, 32))),
        "split_k": (ts.jit(split_k, device="cuda"),
                    (r(200, 6144, dtype=bf), r(6144, 328, scale=0.05,
                                               dtype=bf),
                     r(328, scale=0.1, dtype=bf), r(6144, 200, dtype=bf),
                     r(8192, 96, scale=0.1))),
        "bf16_mlp": (ts.jit(bf16_mlp, device="cuda"),
                     (r(256, 512, dtype=bf), r(512, 1024, scale=0.05,
                                               dtype=bf),
                      r(1024, 256, scale=0.05, dtype=bf))),
    }


def flat_arrays(args):
    from tessera import tree
    leaves, _ = tree.flatten(list(args))
    return [np.asarray(a) for a in leaves]


def precompile(chip, out_dir):
    import os
    os.makedirs(out_dir, exist_ok=True)
    for name, (fn, args) in cases().items():
        flat = flat_arrays(args)
        np.savez(os.path.join(out_dir, f"{name}.npz"),
                 *[a.view(np.uint16) if a.dtype.name == "bfloat16" else a
                   for a in flat])
        data = fn.lower(*args).compile_gpu(chip)
        with open(os.path.join(out_dir, f"{name}.tgpu"), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--precompile":
        precompile(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: jit_programs.py --precompile CHIP DIR")
