"""The pip-installed package works on its own (run by test/pip/run.sh)."""

import os

import numpy as np

import tessera as ts
from tessera import op

# The installed package, with the runtime library it ships.
here = os.path.dirname(ts.__file__)
assert "site-packages" in here, here
assert any(f.startswith("libTesseraRuntime") for f in os.listdir(here)), \
    os.listdir(here)

rng = np.random.default_rng(0)
x = rng.standard_normal((5, 3))
w = rng.standard_normal((3, 2))
loss = lambda w: op.reduce_sum(op.tanh(x @ w))
np.testing.assert_allclose(ts.jit(loss)(w), np.tanh(x @ w).sum(), rtol=1e-12)
np.testing.assert_allclose(ts.grad(loss)(w),
                           x.T @ (1 - np.tanh(x @ w) ** 2), rtol=1e-12)
per_row = ts.vmap(lambda r: op.softmax(r @ w, -1))(x)
e = np.exp(x @ w - (x @ w).max(1, keepdims=True))
np.testing.assert_allclose(per_row, e / e.sum(1, keepdims=True), rtol=1e-12)
print(f"pip-installed tessera {ts.__version__} from {here}: ok")
