#!/bin/bash
# `pip install .` of the repository into a virtual environment under the
# build directory $1, then a smoke test of the installed package from
# outside the source tree (compile, run, differentiate, the runtime library
# it ships). The environment is kept, so later runs rebuild incrementally.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
work="$build/pip-check"
mkdir -p "$work"
if [ ! -x "$work/venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$work/venv"
fi
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check \
  "$root"
cd "$work"
XDG_CACHE_HOME="$work/cache" "$work/venv/bin/python" "$root/test/pip/smoke.py"
