"""Results do not depend on the run or on the thread count: reductions are
never split across threads and every loop runs in a fixed order, so the
bits are the same on 1 and 2 threads and from one run to the next."""

import numpy as np

from harness import run, tensor_type

rng = np.random.default_rng(99)


def test_bitwise_identical_across_runs_and_thread_counts():
    r, c = 67, 1029  # neither a multiple of any vector width
    t = tensor_type((r, c), np.float32, ["R", "C"])
    tv = tensor_type((r,), np.float32, ["R"])
    tw = tensor_type((c, 45), np.float32, ["C", None])
    tm = tensor_type((r, 45), np.float32, ["R", None])
    ir = f"""func.func @f(%x: {t}, %w: {tw}) -> ({t}, {tv}, {tv}, {tm}, tensor<f32>) {{
      %s = tgraph.softmax %x {{dim = 1 : i64}} : {t}
      %n = tgraph.reduce_sum %x {{dims = array<i64: 1>}} : {t} -> {tv}
      %k = tgraph.reduce_sum %x {{dims = array<i64: 1>, stable}} : {t} -> {tv}
      %m = tgraph.matmul %x, %w : ({t}, {tw}) -> {tm}
      %a = tgraph.reduce_sum %x {{dims = array<i64: 0, 1>}} : {t} -> tensor<f32>
      return %s, %n, %k, %m, %a : {t}, {tv}, {tv}, {tm}, tensor<f32>
    }}"""
    x = (rng.standard_normal((r, c)) * 100).astype(np.float32)
    w = rng.standard_normal((c, 45)).astype(np.float32)
    reference = run(ir, [x, w], threads=1)
    for threads in (1, 2, 2):
        outs = run(ir, [x, w], threads=threads)
        for got, want in zip(outs, reference):
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
