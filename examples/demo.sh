#!/usr/bin/env bash
# `make demo`: the Graph IR compiler at work on the examples in this folder,
# then the main job: training a Fashion-MNIST classifier from Python.
set -uo pipefail
opt=${1:-build/bin/tessera-opt}
run=${2:-$(dirname "$opt")/tessera-run}
build=$(cd "$(dirname "$opt")/.." && pwd)
py=${3:-$build/venv/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
rule() { printf '\n\033[1m== %s ==\033[0m\n' "$*"; }

rule "1. Shape inference names every dim of a transformer block (B, S symbolic)"
echo "\$ tessera-opt --tessera-tgraph-infer-shapes examples/transformer_block.mlir"
"$opt" --tessera-tgraph-infer-shapes "$here/transformer_block.mlir" || exit 1

rule "2. A shape mistake is a compile-time error at the user's line"
echo "\$ tessera-opt examples/shape_error.mlir"
if "$opt" "$here/shape_error.mlir" 2>&1; then
  echo "expected a shape error" >&2
  exit 1
fi

rule "3. Dims that depend on run-time values get a run-time check"
echo "\$ tessera-opt --tessera-tgraph-infer-shapes examples/runtime_check.mlir"
"$opt" --tessera-tgraph-infer-shapes "$here/runtime_check.mlir" || exit 1

rule "4. Composite ops decompose into primitives when a back end asks"
echo "\$ tessera-opt --tessera-tgraph-decompose=ops=softmax,gelu --canonicalize --cse"
"$opt" --tessera-tgraph-decompose=ops=softmax,gelu --canonicalize --cse <<'MLIR' || exit 1
func.func @f(%x: tensor<?x128xf32, #tgraph.dims<[B, 128]>>) -> tensor<?x128xf32, #tgraph.dims<[B, 128]>> {
  %p = tgraph.softmax %x {dim = 1 : i64} : tensor<?x128xf32, #tgraph.dims<[B, 128]>>
  %g = tgraph.gelu %p : tensor<?x128xf32, #tgraph.dims<[B, 128]>>
  return %g : tensor<?x128xf32, #tgraph.dims<[B, 128]>>
}
MLIR

rule "5. The transformer block compiles to native code and runs on the CPU"
echo "\$ tessera-run examples/transformer_block.mlir --dims B=2,S=32 --seed 7 --bench 3"
"$run" "$here/transformer_block.mlir" --dims B=2,S=32 --seed 7 --bench 3 || exit 1
echo "\$ tessera-run examples/runtime_check.mlir --dims B=4,S=8,T=9   # S != T"
if "$run" "$here/runtime_check.mlir" --dims B=4,S=8,T=9 2>&1; then
  echo "expected the run-time shape check to fail" >&2
  exit 1
fi

rule "6. A KV cache persists from call to call (five decode steps)"
echo "\$ tessera-run examples/kv_decode.mlir --dims B=2 --calls 5 --out-dir \$tmp"
tmp=$(mktemp -d)
"$run" "$here/kv_decode.mlir" --dims B=2 --calls 5 --out-dir "$tmp" || exit 1
python=/usr/bin/python3  # Debian python3-numpy (make deps)
"$python" -c "import sys, numpy; print('cache [length, window] after 5 calls:', numpy.load(sys.argv[1]).tolist())" "$tmp/arg2.npy" \
  || exit 1
rm -rf "$tmp"

rule "7. Autodiff: gradients as generated functions, checked against finite differences"
echo "\$ tessera-run examples/mlp_grad.mlir --fn loss_grad --dims B=8   # tgraph.adjoint"
"$run" "$here/mlp_grad.mlir" --fn loss_grad --dims B=8 || exit 1
echo "\$ tessera-run examples/mlp_grad.mlir --fn loss --check-grads --check-order 2 --dims B=8"
check=$("$run" "$here/mlp_grad.mlir" --fn loss --check-grads --check-order 2 --dims B=8) \
  || { echo "$check"; exit 1; }
echo "$check" | tail -4

rule "8. Python: train a Fashion-MNIST classifier (ts.jit, ts.value_and_grad, AdamW)"
echo "\$ python examples/fashion_mnist.py --out build/demo"
PYTHONPATH="$build/python" "$py" "$here/fashion_mnist.py" --out "$build/demo" \
  || exit 1
