#!/usr/bin/env bash
# Runs tessera-fuzz for N seconds, seeded from the lit tests and examples.
# Usage: run.sh <fuzz-build-dir> <seconds>
set -euo pipefail
build=$1
seconds=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
fuzzer=$build/bin/tessera-fuzz
seeds=$build/fuzz-seeds
corpus=$build/fuzz-corpus
artifacts=$build/artifacts
mkdir -p "$seeds" "$corpus" "$artifacts"

# Each `// -----` section of a lit test is one seed input.
python3 "$root/tools/tessera-fuzz/split_seeds.py" "$seeds" \
  "$root"/test/Dialect/TGraph/*.mlir "$root"/test/Dialect/TGraph/*/*.mlir \
  "$root"/examples/*.mlir "$root"/test/Fuzz/*.mlir

# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons slabs from inline
# code in our (instrumented) objects, while the prebuilt libMLIR.so allocates
# from the same slabs without unpoisoning; honouring that poisoning reports
# false use-after-poison errors inside MLIR. Heap, stack and leak checks stay.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
echo "tessera-fuzz: ${seconds}s over $(ls "$seeds" | wc -l) seeds"
"$fuzzer" "$corpus" "$seeds" \
  -dict="$root/tools/tessera-fuzz/tgraph.dict" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
  -max_len=4096 -artifact_prefix="$artifacts/" -print_final_stats=1 \
  > "$build/fuzz.log" 2>&1 || { tail -n 80 "$build/fuzz.log"; exit 1; }
tail -n 8 "$build/fuzz.log"
