"""Build step: traces the stdlib kernels of the tile-DSL sources to the C++
table the compiler reads (``python/tessera/stdlib/_library.py``).

    python trace-stdlib-kernels.py SOURCE_PYTHON_DIR OUT.inc

The source tree is put first on ``sys.path`` while the caller's own path is
kept: ``pip install .`` builds in an isolated environment whose NumPy is
reachable only through the ``PYTHONPATH`` pip sets.
"""

import sys


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: trace-stdlib-kernels.py SOURCE_PYTHON_DIR OUT.inc")
    sys.dont_write_bytecode = True
    sys.path.insert(0, argv[1])
    try:
        import numpy  # noqa: F401
    except ImportError:
        sys.exit(f"error: tracing the stdlib kernels needs NumPy, which the "
                 f"interpreter {sys.executable} cannot import; install it "
                 f"(python -m pip install numpy) or point CMake at another "
                 f"interpreter with -DPython3_EXECUTABLE=...")
    from tessera.stdlib import _library
    _library.write_table(argv[2])


if __name__ == "__main__":
    main(sys.argv)
