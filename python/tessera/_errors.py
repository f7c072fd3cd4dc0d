"""The one exception type of Tessera's compiler and runtime."""


class TesseraError(ValueError):
    """An error reported by the Tessera compiler or runtime: a shape or
    dtype mismatch (at the line of the op that made it, naming the
    operands, dims and symbols), a run-time check that failed, bad input.
    A subclass of ValueError.

    >>> try:
    ...     ts.jit(lambda a, b: a @ b)(np.ones((2, 3)), np.ones((4, 2)))
    ... except ts.TesseraError as e:
    ...     print(str(e).split("error: ")[1])
    'tgraph.matmul' op contracting dimension mismatch: lhs (operand 0) dim 1 is 3 but rhs (operand 1) dim 0 is 4
    """


TesseraError.__module__ = "tessera"
