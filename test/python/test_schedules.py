"""Schedules in spec 002's chained form, tile.load's prefetch, and the
autotune key of kernels that call helpers (no GPU needed)."""

import importlib.util
import os
import sys
import textwrap

import pytest

import tessera as ts
from tessera import KTile, tile
from tessera import _autotune
from tessera import _kernel as kernel_mod

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "gpu"))
import kernels as K  # noqa: E402


def test_chained_schedule_is_the_same_schedule():
    chained = (ts.block(128, 128).k(64).warps(8).stages(3).vector(8)
               .swizzle("xor").params(d=64))
    assert isinstance(chained, ts.ScheduleBuilder) and not chained.is_space()
    assert chained.schedule() == ts.Schedule(
        block=(128, 128), k=64, warps=8, stages=3, vector=8, swizzle="xor",
        d=64)
    # Taken as it is wherever a schedule goes.
    text = K.matmul.with_schedule(ts.block(64, 32).k(32).warps(8)).lower()
    assert "tensor<64x32xf32>" in text and "ttile.num_warps = 8" in text

    @ts.kernel.schedule(ts.block(32).warps(2))
    def fill(X: KTile["N", ts.f32]):
        T = tile.context()
        tile.store(X, tile.full((T.m,), 1.0), at=(0,))

    assert fill.default_schedule == ts.Schedule(block=(32,), warps=2)
    assert "ttile.num_warps = 2" in fill.lower()
    # Each link returns a new builder.
    base = ts.block(64, 64)
    assert base.warps(8).schedule().warps == 8
    assert base.schedule().warps == 4
    # Checked as a Schedule is.
    with pytest.raises(ValueError, match="warps is a power of two"):
        ts.block(64, 64).warps(3).schedule()
    with pytest.raises(ValueError, match="swizzle is 'xor'"):
        ts.block(64, 64).swizzle("none").schedule()
    with pytest.raises(ValueError, match="swizzle is 'xor'"):
        ts.Schedule(swizzle="diagonal")
    with pytest.raises(ValueError, match="warps is a schedule field"):
        ts.block(64, 64).params(warps=4)
    with pytest.raises(TypeError, match="with_schedule takes a Schedule"):
        K.matmul.with_schedule({"block": (64, 64)})


def test_chained_space_autotunes():
    space = (ts.block(m=[64, 128], n=[64, 128], k=[64]).warps([4, 8])
             .stages([2, 3]).vector([4, 8]))
    assert space.is_space()
    assert space.space() == dict(BM=[64, 128], BN=[64, 128], BK=[64],
                                 warps=[4, 8], stages=[2, 3], vector=[4, 8])
    with pytest.raises(TypeError, match=r"search space \(lists for k, m, n, "
                       r"stages, vector, warps\)"):
        space.schedule()
    tuned = ts.kernel.autotune(space=space, budget_ms=10)(K.matmul)
    configs = list(tuned._autotune.configs())
    assert len(configs) == 2 * 2 * 1 * 2 * 2 * 2
    s = kernel_mod._schedule_from(tuned.default_schedule, configs[-1])
    assert (s.m, s.n, s.k, s.warps, s.stages, s.vector) == (
        128, 128, 64, 8, 3, 8)
    # A space's values of one field may be a scalar.
    assert ts.block(64, 64).warps([4, 8]).space()["BM"] == [64]


def _stages_of(text):
    import re
    return [int(m) for m in re.findall(r"ttile\.range .* stages (\d+)", text)]


def test_load_prefetch_sets_its_loop_stages():
    @ts.kernel.schedule(ts.Schedule(block=(16,), stages=1))
    def rows(X: KTile["N", "M", ts.f32], Y: KTile["N", "M", ts.f32], *,
             depth: int, inner: int):
        T = tile.context()
        first = tile.load(X, at=(0, 0), shape=(T.m, 16), prefetch=4)
        acc = tile.zeros((T.m, 16))
        for i in tile.range(0, X.shape[0], T.m):
            acc = acc + tile.load(X, at=(i, 0), shape=(T.m, 16),
                                  prefetch=depth)
            for j in tile.range(0, X.shape[1], 16):
                acc = acc + tile.load(Y, at=(i, j), shape=(T.m, 16),
                                      prefetch=inner)
        tile.store(Y, acc + first, at=(0, 0))

    # Outer loop first in the text: each loop takes its own loads' depth.
    assert _stages_of(rows.lower(depth=3, inner=2)) == [3, 2]
    assert _stages_of(rows.lower(depth=1, inner=1)) == []
    # A loop's own stages stay when its loads ask for fewer.
    assert _stages_of(rows.with_schedule(ts.block(16).stages(4)).lower(
        depth=2, inner=1)) == [4, 4]
    with pytest.raises(Exception, match="prefetch is a positive integer"):
        rows.lower(depth=0, inner=1)


def test_spec_attention_states_vector_and_prefetch():
    """kernels.flash_attention loads as spec 002 writes it (vector=T.vector,
    prefetch=2); T.vector is checked against the 16-byte access."""
    text = K.flash_attention.lower(causal=False)
    assert _stages_of(text) == [2]
    wide = K.flash_attention.with_schedule(
        K.flash_attention.default_schedule.with_vector(8))
    assert "ttile.range" in wide.lower(causal=False)
    with pytest.raises(Exception, match=r"vector=16 of bf16 is 32 bytes"):
        K.flash_attention.with_schedule(
            K.flash_attention.default_schedule.with_vector(16)).lower(
                causal=False)


KERNEL = '''
import tess_helpers
import tessera as ts
from tessera import KTile, tile


def local_scale(t):
    return t * {local}


@ts.kernel
def scaled(X: KTile["N", ts.f32]):
    x = tile.load(X, at=(0,), shape=(16,))
    tile.store(X, tess_helpers.shift(local_scale(x)), at=(0,))
'''

HELPERS = '''
def shift(t):
    return t + {shift}
'''


def _load(tmp_path, tag, local, shift):
    d = tmp_path / tag
    d.mkdir()
    (d / "tess_helpers.py").write_text(HELPERS.format(shift=shift))
    (d / "tess_kernel.py").write_text(KERNEL.format(local=local))
    mods = []
    for name in ("tess_helpers", "tess_kernel"):
        spec = importlib.util.spec_from_file_location(name, d / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        mods.append(mod)
    return mods[1].scaled


def test_autotune_key_covers_the_helpers_a_kernel_calls(tmp_path,
                                                        monkeypatch):
    monkeypatch.delitem(sys.modules, "tess_helpers", raising=False)
    monkeypatch.delitem(sys.modules, "tess_kernel", raising=False)
    tuner = _autotune.Autotuner(dict(warps=[1, 2]))
    base = _load(tmp_path, "a", "2.0", "1.0")
    same = _load(tmp_path, "b", "2.0", "1.0")
    local = _load(tmp_path, "c", "3.0", "1.0")
    module = _load(tmp_path, "d", "2.0", "5.0")
    names = [n for n, _ in _autotune._source_closure(base.fn)]
    assert names == ["tess_helpers.shift", "tess_kernel.local_scale",
                     "tess_kernel.scaled"]
    keys = [tuner._kernel_hash(k) for k in (base, same, local, module)]
    assert keys[0] == keys[1]
    assert len(set(keys)) == 3
    # Tessera's own functions and installed packages are not followed.
    from tessera.stdlib import _kernels as SK
    assert [n for n, _ in _autotune._source_closure(SK.softmax_rows.fn)] == [
        "tessera.stdlib._kernels.softmax_rows"]


def test_autotune_takes_a_list_of_configurations(tmp_path):
    configs = [dict(BM=128, BN=256, warps=8), dict(BM=64, BN=128, warps=4)]
    tuned = ts.kernel.autotune(space=configs,
                               cache=str(tmp_path / "c.json"))(K.matmul)
    tuner = tuned._autotune
    assert list(tuner.configs()) == configs
    s = kernel_mod._schedule_from(tuned.default_schedule, configs[1])
    assert (s.m, s.n, s.warps) == (64, 128, 4)
    # Stored choices of its keys import; others are skipped.
    (tmp_path / "in.json").write_text(
        '{"a": {"config": {"BM": 64, "warps": 4}}, '
        '"b": {"config": {"stages": 3}}}')
    assert tuner.import_(str(tmp_path / "in.json")) == 1
    for bad in ([], [{}], [dict(BM=64), 3], "BM"):
        with pytest.raises(ValueError, match="list of configurations"):
            ts.kernel.autotune(space=bad)(K.matmul)
