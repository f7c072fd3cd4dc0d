"""The API reference: every public function and class of the package has a
docstring with an example, every example runs (doctest), and the Sphinx
reference (docs/api, `make docs`) builds without a warning and lists every
public name."""

import doctest
import inspect
import pathlib
import zlib

import numpy as np
import pytest

import public_api
import tessera as ts
from tessera import graph, nn, op, optim, random, tile, tree

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODULES = public_api.MODULES
_public = public_api.callables


def _globs():
    return {"np": np, "ts": ts, "op": op, "nn": nn, "optim": optim,
            "random": random, "tree": tree, "graph": graph, "tile": tile}


def test_every_public_name_has_a_docstring_with_an_example():
    missing = [f"{mod.__name__}.{name}" for mod, name, obj in _public()
               if ">>>" not in (inspect.getdoc(obj) or "")]
    assert not missing, f"no docstring example: {missing}"


_DOCTESTS = {}


def _doctests(module):
    """The doctests of `module`'s public names (found once)."""
    if not _DOCTESTS:
        finder = doctest.DocTestFinder(exclude_empty=True, recurse=False)
        for mod in MODULES:  # the modules' own docstrings
            _DOCTESTS.setdefault(mod.__name__, []).extend(
                t for t in finder.find(mod, globs=_globs()) if t.examples)
        for mod, name, obj in _public():
            found = finder.find(obj, name=f"{mod.__name__}.{name}",
                                globs=_globs())
            _DOCTESTS.setdefault(mod.__name__, []).extend(
                t for t in found if t.examples)
    return _DOCTESTS.get(module, [])


@pytest.mark.parametrize("module", [m.__name__ for m in MODULES])
def test_docstring_examples_run(module, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write here
    # Examples that compile kernels fill a cache of their own.
    monkeypatch.setenv("TESSERA_KERNEL_CACHE", str(tmp_path / "kernels"))
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for t in _doctests(module):
        runner.run(t)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, f"{failed} of {attempted} examples failed"


def _inventory(path):
    """The object names a Sphinx objects.inv lists."""
    data = path.read_bytes()
    body = zlib.decompress(data.split(b"\n", 4)[4]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines() if line}


def test_reference_builds_without_warnings_and_lists_every_name(tmp_path):
    from sphinx.cmd.build import build_main
    out = tmp_path / "html"
    status = build_main(["-W", "--keep-going", "-q", "-b", "html",
                         str(ROOT / "docs" / "api"), str(out)])
    assert status == 0, "sphinx-build reported warnings (see above)"
    names = _inventory(out / "objects.inv")
    missing = []
    for mod, name, obj in _public():
        full = f"{mod.__name__}.{name}"
        if full not in names:
            missing.append(full)
    assert not missing, f"not in the reference: {missing}"
