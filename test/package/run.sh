#!/bin/bash
# Installs the build at $1 into a scratch prefix, builds this directory's
# application against it with find_package(Tessera), and runs it.
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work="$build/package-test"
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" --component tessera > /dev/null
cmake -S "$here" -B "$work/app" -G Ninja -DCMAKE_CXX_COMPILER=clang++-22 \
  -DCMAKE_PREFIX_PATH="$work/prefix" > /dev/null
ninja -C "$work/app" > /dev/null
# The installed libraries, not the build tree's, must be the ones loaded.
if ldd "$work/app/app" | grep -q "$build/lib/"; then
  echo "error: the application loads libraries from the build tree" >&2
  exit 1
fi
XDG_CACHE_HOME="$work/cache" "$work/app/app"
