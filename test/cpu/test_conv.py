"""conv2d compiled for the CPU against a float64 NumPy reference built from
strided views (NCHW/OIHW and NHWC/HWIO, padding, strides, dilation,
groups, accumulation policies)."""

import numpy as np
import pytest

from harness import assert_close, run, tensor_type

rng = np.random.default_rng(5)


def conv_ref(x, w, stride, pad, dil, groups, layout):
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    if layout == "nhwc":
        x = x.transpose(0, 3, 1, 2)
        w = w.transpose(3, 2, 0, 1)
    x = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[1]), (pad[2], pad[3])))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // stride[1] + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                r0, c0 = i * dil[0], j * dil[1]
                patch = xs[:, :, r0:r0 + stride[0] * (oh - 1) + 1:stride[0],
                           c0:c0 + stride[1] * (ow - 1) + 1:stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    if layout == "nhwc":
        out = out.transpose(0, 2, 3, 1)
    return out


CASES = [
    # (batch, cin, h, w, cout, k, stride, pad, dil, groups)
    (1, 1, 5, 5, 1, 3, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (2, 3, 9, 8, 4, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
    (3, 4, 11, 7, 6, 3, (1, 2), (2, 0, 1, 3), (2, 1), 2),
    (2, 6, 8, 8, 6, 3, (1, 1), (1, 1, 1, 1), (1, 1), 6),  # depthwise
    (1, 8, 6, 10, 4, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),  # 1x1
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d(case, layout, dtype):
    n, cin, h, w, cout, k, stride, pad, dil, groups = case
    oh = (h + pad[0] + pad[1] - dil[0] * (k - 1) - 1) // stride[0] + 1
    ow = (w + pad[2] + pad[3] - dil[1] * (k - 1) - 1) // stride[1] + 1
    if layout == "nchw":
        xs, ws, os_ = (n, cin, h, w), (cout, cin // groups, k, k), (n, cout, oh, ow)
    else:
        xs, ws, os_ = (n, h, w, cin), (k, k, cin // groups, cout), (n, oh, ow, cout)
    x = rng.uniform(-1, 1, xs).astype(dtype)
    wt = rng.uniform(-1, 1, ws).astype(dtype)
    tx = tensor_type(xs, dtype, ["N", None, None, None])
    tw = tensor_type(ws, dtype)
    to = tensor_type(os_, dtype, ["N", None, None, None])
    ir = f"""func.func @f(%x: {tx}, %w: {tw}) -> {to} {{
      %y = tgraph.conv2d %x, %w {{strides = array<i64: {stride[0]}, {stride[1]}>,
          padding = array<i64: {pad[0]}, {pad[1]}, {pad[2]}, {pad[3]}>,
          dilation = array<i64: {dil[0]}, {dil[1]}>, groups = {groups} : i64,
          layout = #tgraph<conv_layout {layout}>}} : ({tx}, {tw}) -> {to}
      return %y : {to}
    }}"""
    (y,) = run(ir, [x, wt])
    assert_close(y, conv_ref(x, wt, stride, pad, dil, groups, layout), dtype,
                 scale=cin // groups * k * k)


def test_conv2d_int8_accumulates_in_i32():
    x = rng.integers(-128, 128, (2, 4, 6, 6)).astype(np.int8)
    w = rng.integers(-128, 128, (5, 4, 3, 3)).astype(np.int8)
    ir = """func.func @f(%x: tensor<2x4x6x6xi8>, %w: tensor<5x4x3x3xi8>) -> tensor<2x5x4x4xi32> {
      %y = tgraph.conv2d %x, %w : (tensor<2x4x6x6xi8>, tensor<5x4x3x3xi8>) -> tensor<2x5x4x4xi32>
      return %y : tensor<2x5x4x4xi32>
    }"""
    (y,) = run(ir, [x, w])
    ref = conv_ref(x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1, "nchw")
    np.testing.assert_array_equal(y, ref.astype(np.int64))
