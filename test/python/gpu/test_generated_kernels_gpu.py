"""The generated row and GEMM kernels on the GPU against the CPU: each
kernel that `generated_kernels.py --precompile` wrote (set TESSERA_GENERATED_KERNELS
to its folder) runs on its random inputs, viewed as the kernel reads them,
and its outputs are compared with what the CPU computed for the group."""

import json
import os

import numpy as np
import pytest

import tessera as ts
from generated_kernels import pack_memrefs as _pack

DIR = os.environ.get("TESSERA_GENERATED_KERNELS")

pytestmark = pytest.mark.skipif(
    DIR is None or not ts.cuda.is_available(),
    reason="needs a GPU and TESSERA_GENERATED_KERNELS")


def _cases():
    if DIR is None:
        return []
    with open(os.path.join(DIR, "cases.json")) as f:
        return json.load(f)


def _from_npy(a, dtype):
    import ml_dtypes
    if dtype == "bf16":
        return a.view(ml_dtypes.bfloat16)
    if dtype == "f16":
        return a.view(np.float16)
    return a


@pytest.mark.parametrize("case", _cases())
def test_generated_kernel(case):
    from tessera import _cuda
    d = os.path.join(DIR, case)
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    with open(os.path.join(DIR, meta["ptx"])) as f:
        ptx = f.read()
    n_in = len(meta["inputs"])
    views = meta["views"]
    args = []
    for i, dtype in enumerate(meta["inputs"]):
        a = _from_npy(np.load(os.path.join(d, f"in{i}.npy")), dtype)
        if dtype == "i1":
            a = a.astype(np.int8)
        args.append(ts.to_device(np.ascontiguousarray(a).reshape(views[i])))
    outs = []
    for j, dtype in enumerate(meta["outputs"]):
        store = "i8" if dtype == "i1" else dtype
        outs.append(ts.cuda.empty(tuple(views[n_in + j]), store))
    module = _cuda.Module.load_ptx(ptx, 0)
    kernel = module.kernel(meta["kernel"])
    packed, offsets = _pack(args + outs)
    kernel.launch((meta["grid"], 1, 1), (32 * meta["warps"], 1, 1), 0,
                  packed, offsets)
    ts.cuda.synchronize()
    for j, dtype in enumerate(meta["outputs"]):
        want = _from_npy(np.load(os.path.join(d, f"want{j}.npy")), dtype)
        got = outs[j].numpy().reshape(want.shape)
        if dtype == "i1":
            np.testing.assert_array_equal(got != 0, want, err_msg=case)
            continue
        if dtype in ("i32", "i64"):
            np.testing.assert_array_equal(got, want, err_msg=case)
            continue
        want64 = want.astype(np.float64)
        got64 = got.astype(np.float64)
        finite = np.isfinite(want64)
        np.testing.assert_array_equal(np.isnan(got64), np.isnan(want64),
                                      err_msg=f"{case}: NaNs differ")
        np.testing.assert_array_equal(got64[~finite & ~np.isnan(want64)],
                                      want64[~finite & ~np.isnan(want64)],
                                      err_msg=f"{case}: infinities differ")
        scale = np.abs(want64[finite]).max() if finite.any() else 1.0
        tol = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}[dtype]
        err = np.abs(got64[finite] - want64[finite]).max() if finite.any() \
            else 0.0
        # Sums: a few f32 roundings of the magnitudes they add, beside the
        # tolerance of the result's own size.
        allowed = tol * max(scale, 1.0) + 4 * 2.0**-23 * meta.get(
            "abs_sum", 0.0)
        assert err <= allowed, (case, err, scale)
