"""Tessera's standard library of GPU kernels, written in the tile DSL
(``tessera.stdlib._kernels``)::

    from tessera.stdlib import (gemm, flash_attention_2, efficient_layernorm,
                                rmsnorm, stable_softmax, cross_entropy,
                                fused_adam, rotary_embedding)

    o, lse = flash_attention_2(q, k, v, causal=True)
    my_attention = flash_attention_2.with_schedule(
        ts.Schedule(block=(128, 64), warps=8, stages=2))

Arguments are device tensors (``ts.device("cuda")``) or CUDA tensors of
other frameworks (PyTorch, through DLPack); results are new device tensors
(``torch.from_dlpack`` views them) unless ``out=`` names where to write.
Each op picks its schedule from the shapes; ``with_schedule`` overrides it
(and a bad schedule fails to compile with the compiler's message).

The ops run on a CUDA device. Without one, ``tessera._kernel.compile_only``
runs everything an op does but the launches: it checks the arguments,
compiles the kernels into the kernel cache and returns results without
memory (the examples below do this).
"""


from __future__ import annotations

# The ops live in modules by kind; this package is their public home.
from . import _kernels  # noqa: F401 (the kernels, for tests and benches)
from ._attention import flash_attention_2, flash_attention_2_backward
from ._common import StdlibOp
# Internals the GPU tests and benches reach through here.
from ._common import _multiprocessors, _tuned  # noqa: F401
from ._gemm import _BATCHED_BASE, _BATCHED_SPACE, _gemm_kernel  # noqa: F401
from ._gemm import gemm
from ._rows import (cross_entropy, cross_entropy_backward,
                    efficient_layernorm, fused_adam, layernorm,
                    layernorm_backward, rmsnorm, rmsnorm_backward,
                    rotary_embedding, stable_softmax)

__all__ = ["StdlibOp", "cross_entropy", "cross_entropy_backward",
           "efficient_layernorm", "flash_attention_2",
           "flash_attention_2_backward", "fused_adam", "gemm",
           "layernorm", "layernorm_backward", "rmsnorm", "rmsnorm_backward",
           "rotary_embedding", "stable_softmax"]
