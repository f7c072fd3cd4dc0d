"""The compile-time fuzzer's short run (compile_fuzz.py says what it does),
and every program it kept for running over the time limit."""

import glob
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compile_fuzz  # noqa: E402

LIMIT = 20.0
CORPUS = sorted(glob.glob(os.path.join(HERE, "compile_fuzz_corpus", "*.py")))


def test_generated_programs_differ_and_are_valid_python():
    sources = [compile_fuzz.generate(seed, 40) for seed in range(20)]
    assert len(set(sources)) == 20
    modes = set()
    for source in sources:
        ns = {}
        exec(compile(source, "<fuzz program>", "exec"), ns)
        modes.add(ns["MODE"])
        assert callable(ns["f"]) and callable(ns["f_np"])
    assert len(modes) >= 3


def test_short_run(tmp_path):
    # A minute of programs of up to 60 ops; any over the limit, any crash
    # and any wrong value fails (the corpus is a scratch directory here).
    summary = compile_fuzz.fuzz(60, LIMIT, 60, 0, str(tmp_path))
    compile_fuzz.report(summary)
    assert summary["programs"] >= 5
    assert not summary["slow"], summary["slow"]
    assert not summary["failures"], summary["failures"]


@pytest.mark.parametrize("path", CORPUS,
                         ids=[os.path.basename(p) for p in CORPUS])
def test_kept_program_compiles_in_time(path):
    # Each kept program runs alone, in its own process, under the limit.
    code = ("import sys; sys.path.insert(0, %r); import compile_fuzz; "
            "src = open(%r).read(); "
            "s, e = compile_fuzz.run_program(src); "
            "print(s); sys.exit(1 if e else 0)") % (HERE, path)
    done = subprocess.run([sys.executable, "-c", code], timeout=LIMIT + 30,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert float(done.stdout.split()[-1]) < LIMIT
