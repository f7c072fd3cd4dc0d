"""The tile kernel DSL without a GPU: tracing into Tile IR, compilation to
PTX for sm_80 and sm_90a (checked by ptxas), the kernel cache, schedules
and the errors users see. The kernels run on the GPU in gpu/."""

import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tessera as ts
from tessera import KTile, tile
from tessera import _kernel as kernel_mod

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "gpu"))
import kernels as K  # noqa: E402

PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if os.path.exists(
    "/usr/local/cuda/bin/ptxas") else None)
HERE = os.path.abspath(__file__)


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_KERNEL_CACHE", str(tmp_path / "kernels"))
    return tmp_path / "kernels"


def ptxas(ptx, chip, tmp_path, flags=()):
    if PTXAS is None:
        pytest.skip("ptxas (CUDA toolkit) not installed")
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    out = subprocess.run([PTXAS, f"-arch={chip}", *flags, str(src), "-o",
                          str(tmp_path / "k.cubin")], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    return out.stderr


SM80_FLASH = K.flash_attention.with_schedule(
    ts.Schedule(block=(32, 64), warps=4, stages=2, d=64))


@pytest.mark.parametrize("chip", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name,dtypes,consts", [
    ("softmax", (), {}), ("rmsnorm", (ts.bf16, ts.bf16), {}),
    ("rmsnorm", (ts.f32, ts.f16), {}), ("matmul", (), {}),
    ("flash_attention", (), {"causal": True}),
    ("flash_attention", (), {"causal": False}),
    ("round_trip", (ts.f8e4m3,), {"saturate": True}),
    ("round_trip", (ts.f8e5m2,), {"saturate": False}),
    ("round_trip", (ts.f16,), {"saturate": True}),
    ("convert", (ts.f8e4m3, ts.f32), {}), ("matmul_tf32", (), {}),
    ("convert", (ts.f16, ts.bf16), {}),
    ("stochastic", (ts.f32, ts.f8e4m3), {"saturate": True}),
    ("stochastic", (ts.bf16, ts.f8e5m2), {"saturate": False})])
def test_kernels_compile_to_ptx_that_ptxas_accepts(chip, name, dtypes, consts,
                                                    tmp_path):
    kern = getattr(K, name)
    if name == "flash_attention" and chip == "sm_80":
        kern = SM80_FLASH
    c = kern.compile(*dtypes, chip=chip, **consts)
    assert f".entry {name}(" in c.ptx
    assert f".target {chip}" in c.ptx
    if name == "matmul_tf32":
        # N-contiguous B: mma.sync's tf32 form on every chip.
        assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in c.ptx
        assert "cvt.rna.tf32.f32" in c.ptx and "wgmma" not in c.ptx
    if name == "stochastic":
        # Philox's 32 x 32 -> 64-bit products.
        assert c.ptx.count("mul.wide.u32") >= 20
    if name in ("matmul", "flash_attention"):
        # Tensor cores: warpgroup MMAs on Hopper, mma.sync before.
        if chip == "sm_90a":
            assert "wgmma.mma_async" in c.ptx
            assert c.shared_bytes > 0
        else:
            assert "mma.sync.aligned.m16n8k16" in c.ptx
            assert "wgmma" not in c.ptx
    ptxas(c.ptx, chip, tmp_path)


def test_loop_carries_reassigned_values_only():
    text = K.flash_attention.lower(causal=True)
    # acc, m and l are carried; Qb, scale and the memrefs are not.
    loop = re.search(r"ttile\.range (%\w+) = .* stages 2 iter_args\((.*?)\) ->",
                     text)
    assert loop is not None, text
    assert loop.group(2).count("=") == 3
    # Locations point at the kernel's lines.
    src = open(K.__file__).read().splitlines()
    (dot_line,) = [i + 1 for i, l in enumerate(src) if "tile.dot(Qb" in l]
    assert re.search(rf'ttile\.dot .*loc\(".*kernels\.py":{dot_line}:', text)
    # The causal variant masks in place, the other selects.
    assert "ttile.mask_causal" in text
    assert "ttile.mask_causal" not in K.flash_attention.lower(causal=False)


def test_python_loops_unroll_and_nested_tile_loops_carry():
    @ts.kernel.schedule(ts.Schedule(block=(16, 16), warps=4))
    def k(X: KTile["M", "N", ts.f32], Y: KTile["M", "N", ts.f32]):
        T = tile.context()
        acc = tile.zeros((T.m, T.n))
        for i in range(3):  # Python: unrolled
            acc = acc + float(i)
        for a in tile.range(0, X.shape[0], T.m):
            inner = tile.zeros((T.m, T.n))
            for b in tile.range(0, X.shape[1], T.n):
                inner = inner + tile.load(X, at=(a, b), shape=(T.m, T.n))
            acc = acc + inner
        tile.store(Y, acc, at=(0, 0))

    text = k.lower()
    assert text.count("ttile.range") == 2
    assert text.count("iter_args") == 2
    assert text.count("arith.addf") == 3 + 2


def test_fma_broadcasts_and_checks_types():
    @ts.kernel.schedule(ts.Schedule(block=(16, 16), warps=4))
    def k(X: KTile["M", "N", ts.f32], R: KTile["M", ts.f32],
          Y: KTile["M", "N", ts.f32], c: float):
        T = tile.context()
        x = tile.load(X, at=(0, 0), shape=(T.m, T.n))
        r = tile.load(R, at=(0,), shape=(T.m,))
        tile.store(Y, tile.fma(x, c * 2.0, r[:, None]), at=(0, 0))

    text = k.lower()
    assert re.search(r"math\.fma %\S+, %\S+, %\S+ : tensor<16x16xf32>",
                     text), text
    # The row operand is broadcast, the scalar splat, before the fma.
    assert "ttile.broadcast" in text and "tensor.splat" in text

    @ts.kernel.schedule(ts.Schedule(block=(16, 16), warps=4))
    def ints(X: KTile["M", "N", ts.i32], Y: KTile["M", "N", ts.i32]):
        x = tile.load(X, at=(0, 0), shape=(16, 16))
        tile.store(Y, tile.fma(x, 2, 1), at=(0, 0))

    with pytest.raises(TypeError, match="tile.fma takes floats"):
        ints.lower()

    @ts.kernel.schedule(ts.Schedule(block=(16, 16), warps=4))
    def scalars(Y: KTile["M", ts.f32], c: float):
        tile.store(Y, tile.full((16,), tile.fma(c, c, c)), at=(0,))

    with pytest.raises(TypeError, match="at least one tile"):
        scalars.lower()


def test_load_scalar_bounds_checks_and_errors():
    @ts.kernel.schedule(ts.Schedule(block=(16,), warps=1))
    def k(X: KTile["M", "N", ts.bf16], I: KTile["M", ts.i32],
          Y: KTile["K", ts.f32]):
        i = tile.load_scalar(I, at=(3,), padding=-1)
        v = tile.load_scalar(X, at=(2, i), padding=0.5)
        tile.store(Y, tile.full((16,), tile.cast(v, ts.f32)), at=(0,))

    text = k.lower()
    # Each index is compared (unsigned) with its dim; the read happens
    # only in bounds, the padding otherwise.
    assert len(re.findall(r"arith\.cmpi ult", text)) == 3, text
    assert re.search(r"scf\.if %\S+ -> \(bf16\) \{\s+%\S+ = memref\.load "
                     r"%arg0\[%\S+, %\S+\] : memref<\?x\?xbf16>", text), text
    assert "arith.constant 0x3F00 : bf16" in text  # 0.5

    @ts.kernel.schedule(ts.Schedule(block=(16,), warps=1))
    def rank(X: KTile["M", "N", ts.f32], Y: KTile["K", ts.f32]):
        tile.store(Y, tile.full((16,), tile.load_scalar(X, at=(0,))),
                   at=(0,))

    with pytest.raises(TypeError, match="X has 2 dims; at= gives 1"):
        rank.lower()

    @ts.kernel.schedule(ts.Schedule(block=(16,), warps=1))
    def pad(X: KTile["M", ts.f32], Y: KTile["K", ts.f32]):
        tile.store(Y, tile.full((16,), tile.load_scalar(X, at=(0,),
                                                        padding="x")),
                   at=(0,))

    with pytest.raises(TypeError, match="padding is a number"):
        pad.lower()


def test_errors_point_at_the_kernel_line():
    @ts.kernel
    def bad_dot(A: KTile["M", "K", ts.f32], C: KTile["M", "K", ts.f32]):
        a = tile.load(A, at=(0, 0), shape=(16, 8))
        c = tile.dot(a, a)  # inner dims differ
        tile.store(C, c, at=(0, 0))

    with pytest.raises(TypeError, match=r"test_kernel_dsl\.py:\d+: "
                                         r"tile\.dot of \[16, 8\] and \[16, 8\]"):
        bad_dot.lower()

    @ts.kernel
    def data_if(A: KTile["M", ts.f32]):
        x = tile.load(A, at=(0,), shape=(16,))
        if tile.program_id(0) > 0:
            tile.store(A, x, at=(0,))

    with pytest.raises(TypeError, match="no truth value.*tile.where"):
        data_if.lower()

    @ts.kernel
    def leak(A: KTile["M", ts.f32]):
        for i in tile.range(0, 64, 16):
            x = tile.load(A, at=(i,), shape=(16,))
        tile.store(A, x, at=(0,))

    with pytest.raises(TypeError, match="'x' is set only inside a tile.range"):
        leak.lower()

    @ts.kernel
    def retype(A: KTile["M", ts.f32]):
        x = tile.zeros((16,))
        for i in tile.range(0, 64, 16):
            x = tile.cast(tile.load(A, at=(i,), shape=(16,)), ts.bf16)
        tile.store(A, tile.cast(x, ts.f32), at=(0,))

    with pytest.raises(TypeError, match="'x' is a f32 tile .* and a bf16 tile"):
        retype.lower()


def test_compiler_errors_carry_the_kernel_source_location():
    # Four stages of 256 x 64 and 64 x 256 bf16 tiles need more shared
    # memory than a block has: the lowering's error names the kernel's
    # definition.
    too_big = K.matmul.with_schedule(
        ts.Schedule(block=(256, 256), k=64, warps=8, stages=4))
    with pytest.raises(ts.TesseraError) as e:
        too_big.compile(chip="sm_90a")
    msg = str(e.value)
    line = K.matmul.fn.__code__.co_firstlineno
    assert f"{K.__file__}:{line}:1: error: kernel 'matmul' needs" in msg
    assert "bytes of shared memory" in msg
    assert "see current operation" not in msg


def fresh_softmax():
    """K.softmax without the compilations it keeps in memory."""
    return ts.kernel.schedule(K.softmax.default_schedule)(K.softmax.fn)


def test_kernel_cache_reuses_and_survives_corruption(kernel_cache,
                                                     monkeypatch):
    first = fresh_softmax().compile(chip="sm_90a")
    entries = sorted(os.listdir(kernel_cache))
    assert len(entries) == 2 and entries[0].endswith(".json")
    # A fresh kernel object (empty memory cache) with no compiler finds it.
    fresh = fresh_softmax()
    monkeypatch.setattr(kernel_mod, "_compiler",
                        lambda: (None, "no tessera._core"))
    again = fresh.compile(chip="sm_90a")
    assert again.ptx == first.ptx
    # Corrupt the PTX: the entry no longer matches its checksum.
    ptx_file = kernel_cache / entries[1]
    ptx_file.write_text(first.ptx.replace("ex2", "ex3"))
    other = fresh_softmax()
    with pytest.raises(ts.TesseraError,
                       match="not in the kernel cache .* no compiler"):
        other.compile(chip="sm_90a")
    monkeypatch.undo()
    monkeypatch.setenv("TESSERA_KERNEL_CACHE", str(kernel_cache))
    assert other.compile(chip="sm_90a").ptx == first.ptx  # recompiled


def test_kernel_cache_export_import(tmp_path, kernel_cache):
    fresh_softmax().compile(chip="sm_80")
    assert ts.kernel_cache.export(str(tmp_path / "bundle")) == 1
    target = kernel_mod.KernelCache(str(tmp_path / "elsewhere"))
    assert target.import_(str(tmp_path / "bundle")) == 1
    assert len(os.listdir(tmp_path / "elsewhere")) == 2


def test_schedules():
    base = ts.Schedule(block=(128, 128), warps=8, stages=3, d=64)
    small = base.with_block(64, 64)
    assert (small.m, small.n, small.warps, small.stages, small.d) == (
        64, 64, 8, 3, 64)
    assert base.with_warps(4).warps == 4 and base.warps == 8
    assert small != base and base.with_block(128, 128) == base
    with pytest.raises(ValueError, match="warps is a power of two"):
        ts.Schedule(warps=3)
    with pytest.raises(AttributeError, match="no 'e'.*parameters: d"):
        base.e
    # Autotune space keys map onto the schedule.
    s = kernel_mod._schedule_from(base, dict(BM=64, BN=32, warps=4, BD=32))
    assert (s.m, s.n, s.warps, s.BD) == (64, 32, 4, 32)
    # The schedule reaches the kernel through tile.context().
    text = K.matmul.with_schedule(base.with_block(64, 32)).lower()
    assert "tensor<64x32xf32>" in text and "ttile.num_warps = 8" in text


def test_pingpong_schedules():
    """pingpong=True marks the kernel (ttile.pingpong) for two warpgroups
    or more; the compiled forward takes turns through named barriers."""
    with pytest.raises(ValueError, match=r"pingpong=True alternates two "
                       r"warpgroups or more \(warps >= 8\), got warps=4"):
        ts.Schedule(warps=4, pingpong=True)
    with pytest.raises(ValueError, match="pingpong is True or False, got 1"):
        ts.Schedule(warps=8, pingpong=1)
    from tessera.stdlib import _kernels as SK
    base = ts.Schedule(block=(128, 128), warps=8, stages=2, d=128)
    plain = SK.flash_attention_fwd.lower(*("bf16",) * 4, schedule=base,
                                         causal=True)
    marked = SK.flash_attention_fwd.lower(
        *("bf16",) * 4, schedule=base.with_params(pingpong=True), causal=True)
    assert "ttile.pingpong" not in plain
    assert "ttile.num_warps = 8 : i32, ttile.pingpong}" in marked
    ptx = SK.flash_attention_fwd.with_schedule(
        base.with_params(pingpong=True)).compile(
            *("bf16",) * 4, chip="sm_90a", causal=True).ptx
    # The hand-off at the start, a turn around the one run of products
    # (a block's scores, the previous block's output product) in the loop,
    # the first warpgroup's take-back at the end.
    assert ptx.count("bar.arrive") == 1 + 1
    # The scores are waited for with the output's product still running.
    assert ptx.count("wgmma.wait_group.sync.aligned 1;") == 1
    assert "bar.sync \t2, 256;" in ptx
    assert re.search(r"bar\.sync\s+%r\d+, 256;", ptx)


def test_attention_forward_masks_in_one_loop():
    """The stdlib forward runs one loop over key blocks (one past the last
    for the last product) and masks with mask_causal or mask_keys, whose
    element comparisons sit behind a branch on program scalars."""
    from tessera.stdlib import _kernels as SK
    s = ts.Schedule(block=(128, 128), warps=8, stages=2, d=128)
    for causal, mask in ((True, "ttile.mask_causal"),
                         (False, "ttile.mask_keys")):
        text = SK.flash_attention_fwd.lower(*("bf16",) * 4, schedule=s,
                                            causal=causal)
        assert text.count("ttile.range ") == 1, text
        assert text.count(mask) == 1
        assert "ttile.mask_keys" in text or causal
        ptx = SK.flash_attention_fwd.with_schedule(s).compile(
            *("bf16",) * 4, chip="sm_90a", causal=causal).ptx
        # 64 scores a thread, selected only on the masked path.
        assert ptx.count("selp.f32") >= 64


def test_launch_plan_keys():
    """Repeated launches reuse a plan keyed by what the checked path
    depends on; kernels whose positional arguments are not exactly their
    runtime parameters always take the checked path."""
    from tessera._dtypes import as_dtype
    from tessera.cuda import DeviceTensor

    def dev(shape, dtype="f32", strides=None, device=0):
        return DeviceTensor(dtype=as_dtype(dtype), pointer=0, shape=shape,
                            strides=strides or ts.cuda._row_major(shape),
                            device_index=device)

    @ts.kernel
    def k(X: KTile["N", ts.f32], Y: KTile["N", ts.f32], eps: float, *,
          flag: bool):
        pass

    key = k._plan_key((dev((8,)), dev((8,)), 1.0), {"flag": True})
    assert key == k._plan_key((dev((8,)), dev((8,)), 2.0), {"flag": True})
    for args, kw in [((dev((9,)), dev((8,)), 1.0), {"flag": True}),
                     ((dev((8,), "bf16"), dev((8,)), 1.0), {"flag": True}),
                     ((dev((8,)), dev((8,), device=1), 1.0), {"flag": True}),
                     ((dev((8,)), dev((8,), strides=(2,)), 1.0),
                      {"flag": True}),
                     ((dev((8,)), dev((8,)), 1), {"flag": True}),
                     ((dev((8,)), dev((8,)), 1.0), {"flag": 1})]:
        assert k._plan_key(args, kw) not in (None, key)
    # Runtime values by keyword, other argument types: the checked path.
    assert k._plan_key((dev((8,)), dev((8,))), {"eps": 1.0,
                                                "flag": True}) is None
    assert k._plan_key((dev((8,)), np.zeros(8), 1.0), {"flag": True}) is None

    @ts.kernel
    def c(X: KTile["N", ts.f32], n: tile.constexpr, eps: float = 1e-5):
        pass

    assert c._plan_key((dev((8,)), 64), {}) is None


def test_mask_keys():
    @ts.kernel.schedule(ts.Schedule(block=(16, 32), warps=4))
    def masked(X: KTile["M", "N", ts.f32], Y: KTile["M", "N", ts.f32]):
        T = tile.context()
        x = tile.load(X, at=(0, tile.program_id(0) * T.n), shape=(T.m, T.n))
        tile.mask_keys(x, tile.program_id(0) * T.n, X.shape[1])
        tile.store(Y, x, at=(0, tile.program_id(0) * T.n))

    text = masked.lower()
    assert re.search(r"ttile\.mask_keys %\w+, %\w+, %\w+ : "
                     r"tensor<16x32xf32>", text), text

    @ts.kernel.schedule(ts.Schedule(block=(16, 32), warps=4))
    def bad(X: KTile["N", ts.f32], Y: KTile["N", ts.f32]):
        T = tile.context()
        x = tile.load(X, at=(0,), shape=(T.n,))
        tile.mask_keys(x, 0, X.shape[0])

    with pytest.raises(Exception, match="tile.mask_keys takes a rank-2 "
                       "float tile"):
        bad.lower()


def test_kernel_parameters_need_annotations():
    with pytest.raises(TypeError, match="parameter 'x' needs an annotation"):
        @ts.kernel
        def k(x):
            pass
    with pytest.raises(TypeError, match="launch a kernel with a grid"):
        K.softmax(1, 2)
    with pytest.raises(TypeError, match="constexpr 'causal' has no value"):
        K.flash_attention.lower()


def test_launch_without_gpu_explains(monkeypatch):
    from tessera import _cuda
    if _cuda.available():
        pytest.skip("a GPU is present; gpu/ runs the kernels")
    with pytest.raises(ts.TesseraError, match="no CUDA device"):
        ts.device("cuda")
    with pytest.raises(ts.TesseraError, match="host memory.*ts.to_device"):
        K.softmax[1](np.zeros((4, 8), np.float32), np.zeros((4, 8),
                                                             np.float32))
    with pytest.raises(ts.TesseraError, match="'cpu', 'cuda' or 'cuda:N'"):
        ts.device("gpu")


def test_constants_are_exact():
    from tessera._tile_ir import float_literal
    assert float_literal(-math.inf, "f32") == "0xFF800000"
    assert float_literal(1.0, "bf16") == "0x3F80"
    # Round to nearest even at bf16's last bit.
    assert float_literal(1.0 + 2**-8, "bf16") == "0x3F80"
    assert float_literal(1.0 + 3 * 2**-9, "bf16") == "0x3F81"
    assert float_literal(0.1, "f16") == "0x%04X" % np.array(
        0.1, np.float16).view(np.uint16)


def test_launch_arguments_are_checked_before_anything_runs():
    """Argument checks need no GPU: device tensor views of made-up memory."""
    def view(shape, dtype, strides=None, dev=0):
        strides = strides or tuple(int(np.prod(shape[i + 1:]))
                                   for i in range(len(shape)))
        return ts.DeviceTensor(dtype=dtype, pointer=0x1000, shape=shape,
                               strides=strides, device_index=dev)

    params = [p for p in K.matmul._params]
    check = ts.cuda._kernel_arguments
    a, b, c = view((8, 4), ts.bf16), view((4, 6), ts.bf16), view((8, 6),
                                                                  ts.bf16)
    tensors, dev = check("matmul", params, [a, b, c])
    assert tensors == [a, b, c] and dev == 0
    with pytest.raises(ts.TesseraError, match="'B' of kernel matmul must be "
                                              "bf16, got f32"):
        check("matmul", params, [a, view((4, 6), ts.f32), c])
    with pytest.raises(ts.TesseraError, match=r"dim 1 \(N\) is 7, but N is 6 "
                                              r"in argument 'B'"):
        check("matmul", params, [a, b, view((8, 7), ts.bf16)])
    with pytest.raises(ts.TesseraError, match="must have 2 dims"):
        check("matmul", params, [a, b, view((8, 6, 1), ts.bf16)])
    with pytest.raises(ts.TesseraError, match="must be contiguous"):
        check("matmul", params, [view((8, 4), ts.bf16, strides=(1, 8)), b, c])
    with pytest.raises(ts.TesseraError, match="is on cuda:1, other arguments "
                                              "on cuda:0"):
        check("matmul", params, [a, b, view((8, 6), ts.bf16, dev=1)])
    # Grids: Python integers, or a function of the schedule.
    assert ts.cdiv(10, 4) == 3
    grid = kernel_mod._grid_of(lambda T: (ts.cdiv(1000, T.m), 2),
                               K.matmul.default_schedule)
    assert grid == (8, 2, 1)
    with pytest.raises(ts.TesseraError, match="exceeds the card's limits"):
        kernel_mod._grid_of((1, 70000), K.matmul.default_schedule)
    if not ts.cuda.is_available():
        with pytest.raises(ts.TesseraError, match="no CUDA device"):
            ts.synchronize()


def test_autotune_choices_export_and_import(tmp_path):
    space = dict(BM=[64, 128], warps=[4, 8])
    a = ts.kernel.autotune(space=space, cache=str(tmp_path / "a.json"))(
        K.matmul)._autotune
    a._store("key1", {"BM": 128, "warps": 8}, 0.5)
    a._store("key2", {"BM": 64, "warps": 4}, 0.7)
    assert a.export(str(tmp_path / "out.json")) == 2
    # A damaged cache file is read as empty, not an error.
    (tmp_path / "b.json").write_text("{not json")
    b = ts.kernel.autotune(space=space, cache=str(tmp_path / "b.json"))(
        K.matmul)._autotune
    assert b._load() == {}
    assert b.import_(str(tmp_path / "out.json")) == 2
    assert b._load()["key1"]["config"] == {"BM": 128, "warps": 8}
    # Entries for another space's keys are skipped.
    (tmp_path / "other.json").write_text(
        '{"k": {"config": {"BN": 32}}, "j": 3}')
    assert b.import_(str(tmp_path / "other.json")) == 0
    with pytest.raises(ts.TesseraError, match="cannot read autotune"):
        b.import_(str(tmp_path / "missing.json"))


def test_review_regressions():
    # Constexpr values Python calls equal compile separately.
    @ts.kernel
    def fill(X: KTile["N", ts.f32], *, c):
        tile.store(X, tile.full((16,), float(c)), at=(0,))

    pos, neg = fill.lower(c=0.0), fill.lower(c=-0.0)
    assert "0x80000000" in neg and "0x80000000" not in pos
    assert kernel_mod._value_key({"c": 0.0}) != kernel_mod._value_key(
        {"c": -0.0})
    assert kernel_mod._value_key({"c": 1}) != kernel_mod._value_key(
        {"c": True})

    # Defaults that name variables of an enclosing function; loop-local
    # Python values; the loop target after a Python loop.
    def make(block):
        @ts.kernel
        def k(X: KTile["N", ts.f32], *, B=block):
            acc = tile.zeros((B,))
            for i in tile.range(0, X.shape[0], B):
                width = B  # a Python value set in the body
                acc = acc + tile.load(X, at=(i,), shape=(width,))
            for j in range(2):
                pass
            tile.store(X, acc * float(j), at=(0,))
        return k

    text = make(16).lower()
    assert "tensor<16xf32>" in text and text.count("ttile.range") == 1

    # Bitwise not of integer tiles, and Python's floor remainder.
    @ts.kernel
    def ints(X: KTile["N", ts.i32], n: int):
        x = tile.load(X, at=(0,), shape=(16,))
        tile.store(X, ~x + x % 3, at=(0,))

    text = ints.lower()
    assert "dense<-1>" in text and "arith.floordivsi" in text
    assert "arith.remsi" not in text

    # Calls bind as Python binds them.
    @ts.kernel
    def scaled(X: KTile["N", ts.f32], eps: float = 0.5, *, c=1):
        tile.store(X, tile.load(X, at=(0,), shape=(16,)) * eps, at=(0,))

    values, consts = scaled._split(("x",), {})
    assert values == ["x", 0.5] and consts == {"c": 1}
    with pytest.raises(TypeError, match="too many positional"):
        scaled._split(("x", 0.1, 7), {})
    # Arguments that do not fit their types are errors, NumPy scalars are
    # numbers.
    params = [p for p in scaled._params if p.kind != "constexpr"]
    view = ts.DeviceTensor(dtype=ts.f32, pointer=4096, shape=(4,),
                           strides=(1,), device_index=0)
    kernel_mod._pack(params, [view, np.float32(0.25)], [view, None])
    with pytest.raises(ts.TesseraError, match="do not fit their types"):
        kernel_mod._pack(params, [view, 1e300], [view, None])


def test_loop_target_bound_before_the_loop_is_not_carried():
    @ts.kernel
    def k(X: KTile["N", ts.f32]):
        i = 3
        acc = tile.zeros((16,))
        for i in tile.range(0, X.shape[0], 16):
            acc = acc + tile.load(X, at=(i,), shape=(16,))
        tile.store(X, acc, at=(0,))

    text = k.lower()
    loop = re.search(r"iter_args\((.*?)\) ->", text)
    assert loop is not None and loop.group(1).count("=") == 1


def test_clusters_share_multicast_tiles(tmp_path):
    """cluster=2 runs programs in pairs; a load marked multicast is copied
    once for the pair on Hopper (each producer issues half of its boxes to
    both programs, and each consumer warp gives a slot back in both), and
    is a plain load elsewhere. Misuse is reported at trace time."""
    from tessera.stdlib import _kernels as SK
    with pytest.raises(ValueError, match="cluster .* is 1, 2, 4 or 8, got 3"):
        ts.Schedule(block=(64, 64), cluster=3)

    @ts.kernel
    def lonely(X: KTile["M", "N"], Y: KTile["M", "N"]):
        t = tile.load(X, at=(0, 0), shape=(16, 16), multicast=True)
        tile.store(Y, t, at=(0, 0))

    with pytest.raises(TypeError, match=r"needs cluster >= 2, got cluster=1"):
        lonely.lower("f32", "f32")

    s = ts.Schedule(block=(128, 256), k=64, warps=8, stages=4, group=8,
                    cluster=2)
    text = SK.gemm.lower(*("bf16",) * 3, schedule=s)
    assert "ttile.cluster = 2 : i32" in text
    assert text.count("{multicast}") == 1
    ptx = SK.gemm.with_schedule(s).compile(*("bf16",) * 3,
                                           chip="sm_90a").ptx
    # B's 64 x 256 tile is four boxes: each program issues two, under a
    # test of its rank.
    assert ptx.count("complete_tx::bytes.multicast::cluster") == 4
    assert "%cluster_ctarank" in ptx
    assert ptx.count("mapa.shared::cluster") >= 2
    assert ptx.count("mbarrier.arrive.release.cluster.shared::cluster") >= 2
    assert ptx.count("barrier.cluster.wait;") == 2
    ptxas(ptx, "sm_90a", tmp_path)
    # Launch record: version 3, 256 threads of warps and 128 of the
    # producer, 21 parameter slots, clusters of 2, a tensor-map table of
    # two maps; the PTX carries the same words for the runtime.
    compiled = SK.gemm.with_schedule(s).compile(*("bf16",) * 3,
                                                chip="sm_90a")
    launch = compiled.launch
    assert launch[:3] == (3, 256, 128) and launch[4:8] == (21, 2, 1, 2)
    assert launch[3] == compiled.shared_bytes > 0
    record = re.search(r"tessera_launch_gemm\[(\d+)\] = \{([^}]*)\}", ptx)
    # (PTX leaves out the initializer's trailing zero bytes.)
    raw = bytes(int(v) for v in record.group(2).split(",")).ljust(
        int(record.group(1)), b"\0")
    assert tuple(int.from_bytes(raw[i:i + 4], "little", signed=True)
                 for i in range(0, len(raw), 4)) == launch
    # Without a producer (before Hopper) the tile is loaded as any other.
    old = SK.gemm.with_schedule(s.with_params(cluster=2)).compile(
        *("bf16",) * 3, chip="sm_80").ptx
    assert "multicast" not in old and "cluster" not in old.split(
        ".entry")[1]
    ptxas(old, "sm_80", tmp_path)


def test_output_tiles_in_loops_go_out_through_tma(tmp_path):
    """A persistent GEMM's output tile (a store inside its loop over
    tiles) is written to a shared buffer and copied out by TMA where the
    buffer fits beside the rings (3 stages of 128x256x64), each thread
    writing 16-byte runs after a shuffle exchange within its quad; with 4
    stages it does not fit and the consumers store 16-byte runs directly."""
    from tessera.stdlib import _kernels as SK
    base = ts.Schedule(block=(128, 256), k=64, warps=8, stages=3, group=8)
    ptx = SK.gemm.with_schedule(base).compile(*("bf16",) * 3,
                                              chip="sm_90a").ptx
    # Four boxes of 64 columns, one commit, the buffer's reuse waiting
    # for TMA's read, the last copies waited for before the end.
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.tile."
                     "bulk_group") == 4
    assert ptx.count("cp.async.bulk.commit_group") == 1
    assert re.search(r"cp\.async\.bulk\.wait_group\.read\s+0;", ptx)
    assert re.search(r"cp\.async\.bulk\.wait_group\s+0;", ptx)
    assert ptx.count("shfl.sync.bfly.b32") >= 2 * 32
    ptxas(ptx, "sm_90a", tmp_path)
    ptx4 = SK.gemm.with_schedule(base.with_stages(4)).compile(
        *("bf16",) * 3, chip="sm_90a").ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta" not in ptx4
    # The direct stores: 16 bytes each on the uniform in-bounds path.
    assert "st.global.v4.b32" in ptx4
    ptxas(ptx4, "sm_90a", tmp_path)


def test_producer_registers(tmp_path):
    """producer_registers=N sets what a Hopper kernel's producer warpgroup
    keeps (setmaxnreg.dec N); the consumers take the rest of the block's
    registers (setmaxnreg.inc)."""
    from tessera.stdlib import _kernels as SK
    with pytest.raises(ValueError, match="multiple of 8 from 24 to 256"):
        ts.Schedule(block=(64, 64), producer_registers=30)
    base = ts.Schedule(block=(128, 256), k=64, warps=8, stages=4, group=8)
    for s, dec, inc in ((base, 96, 200),
                        (base.with_params(producer_registers=40), 40, 232)):
        ptx = SK.gemm.with_schedule(s).compile(*("bf16",) * 3,
                                               chip="sm_90a").ptx
        assert re.search(rf"setmaxnreg\.dec\.sync\.aligned\.u32\s+{dec};", ptx)
        assert re.search(rf"setmaxnreg\.inc\.sync\.aligned\.u32\s+{inc};", ptx)
        ptxas(ptx, "sm_90a", tmp_path)


def test_programs_per_sm_bounds_registers(tmp_path):
    """programs_per_sm=N makes ptxas keep each thread's registers within
    what N programs an SM leave it (.minnctapersm N): the LayerNorm forward
    on 8 warps (16 elements of a row a thread, the weight and bias held
    in f32) takes more than 85 registers a thread on its own, and at most
    85 (65536 / (3 x 256)) with three programs an SM."""
    from tessera.stdlib import _kernels as SK
    with pytest.raises(ValueError, match="from 1 to 4 with 16 warps"):
        ts.Schedule(block=(1, 4096), warps=16, programs_per_sm=5)
    with pytest.raises(ValueError, match="programs_per_sm"):
        ts.Schedule(block=(1, 4096), warps=16, programs_per_sm=0)
    base = ts.Schedule(block=(1, 4096), warps=8, stages=2)

    def registers(s):
        ptx = SK.layernorm_fwd.with_schedule(s).compile(
            "bf16", "f32", "f32", "bf16", chip="sm_90a").ptx
        report = ptxas(ptx, "sm_90a", tmp_path, flags=("-v",))
        return ptx, int(re.search(r"Used (\d+) registers", report)[1])

    ptx, free = registers(base)
    assert ".minnctapersm" not in ptx
    assert free > 85
    ptx, bound = registers(base.with_params(programs_per_sm=3))
    assert ".minnctapersm 3" in ptx
    assert bound <= 85


def test_clear_errors_for_numbers_schedules_and_host_arrays():
    @ts.kernel
    def k(X: KTile["N", ts.f32]):
        tile.where(tile.program_id(0) > 0, 1, 2)
    with pytest.raises(TypeError, match=r"two Python numbers \(1 and 2\) "
                                        r"have no type in a kernel"):
        k.lower()
    with pytest.raises(AttributeError,
                       match=r"block \(256,\) has one dim \(no T.n\)"):
        ts.Schedule(block=256).n
    with pytest.raises(ts.TesseraError,
                       match=r"from_dlpack takes a CUDA tensor \(DLPack "
                             r"device type 2\), got a tensor on DLPack "
                             r"device \(1, 0\)"):
        ts.from_dlpack(np.ones(3))
