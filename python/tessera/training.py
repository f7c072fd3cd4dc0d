"""A training loop with a progress bar (tqdm, when installed) and metric
logging: :func:`fit` runs a step function over batches for some epochs and
records the mean of each metric per epoch in a :class:`History`."""

from __future__ import annotations

import json
import math
import time

import numpy as np


class History:
    """Per-epoch metrics: ``history["test_accuracy"]`` is the list of the
    values of that metric, one per epoch, as Python floats.

    :func:`fit` returns one; the dict of all lists is ``metrics``. Indexing
    a metric that was never added raises KeyError.

    >>> from tessera.training import History
    >>> h = History()
    >>> h.add(loss=1.5, accuracy=0.5)
    >>> h.add(loss=np.float32(0.5), accuracy=0.75)
    >>> h["loss"]
    [1.5, 0.5]
    >>> h.metrics
    {'loss': [1.5, 0.5], 'accuracy': [0.5, 0.75]}
    """

    def __init__(self):
        self.metrics = {}

    def add(self, **values):
        """Appends each keyword's value (converted with ``float``) to the list
        of the metric of that name, creating the list on first use.

        >>> from tessera.training import History
        >>> h = History()
        >>> h.add(loss=np.array(2.0))
        >>> h.add(loss=1, seconds=3.5)
        >>> h.metrics
        {'loss': [2.0, 1.0], 'seconds': [3.5]}
        """
        for k, v in values.items():
            self.metrics.setdefault(k, []).append(float(v))

    def __getitem__(self, key):
        return self.metrics[key]

    def last(self):
        """The last value of each metric, as a dict (the latest epoch's
        values when filled by :func:`fit`).

        >>> from tessera.training import History
        >>> h = History()
        >>> h.add(loss=1.5)
        >>> h.add(loss=0.5, accuracy=0.9)
        >>> h.last()
        {'loss': 0.5, 'accuracy': 0.9}
        """
        return {k: v[-1] for k, v in self.metrics.items()}

    def save(self, path):
        """Writes the metrics to ``path`` as JSON: an object mapping each
        metric name to its list of values (the file is overwritten).

        >>> import json
        >>> from tessera.training import History
        >>> h = History()
        >>> h.add(loss=1.5)
        >>> h.add(loss=0.5)
        >>> h.save("history.json")
        >>> with open("history.json") as f:
        ...     json.load(f)
        {'loss': [1.5, 0.5]}
        """
        with open(path, "w") as f:
            json.dump(self.metrics, f, indent=1)


def fit(step, carry, batches, *, epochs, evaluate=None, progress=True,
        log=print, steps_per_epoch=None):
    """Trains for ``epochs`` epochs; returns ``(carry, history)``.

    Each epoch iterates over ``batches(epoch)`` (an iterable of tuples) and
    calls ``carry, metrics = step(carry, *batch, step_index)``: ``carry`` is
    the training state (parameters, optimizer state, ...), ``metrics`` a
    dict of scalars, and ``step_index`` counts steps from 0 across epochs
    (e.g. for a learning-rate schedule). After each epoch, ``evaluate(carry)``
    (when given) returns a dict of more metrics, and the :class:`History`
    gets the mean of each step metric as ``train_<name>``, the evaluated
    metrics and ``seconds`` (the epoch's wall time).

    ``progress`` shows a tqdm progress bar (with the running means every 20
    steps) when tqdm is installed; ``steps_per_epoch`` is its total.
    ``log`` is called with one line of metrics per epoch (``print`` by
    default; None logs nothing).

    A jit-compiled function treats Python numbers as static arguments (one
    compilation per value): pass it values derived from ``step_index``,
    such as a scheduled learning rate, as arrays (``np.float32(lr)``).

    Example: one epoch of linear regression with a compiled step.

    >>> from tessera import training
    >>> @ts.jit
    ... def train_step(w, x, y):
    ...     loss_fn = lambda w: op.reduce_mean((x @ w - y) ** 2)
    ...     loss, g = ts.value_and_grad(loss_fn)(w)
    ...     return w - 0.1 * g, loss
    >>> def step(w, x, y, index):
    ...     w, loss = train_step(w, x, y)
    ...     return w, {"loss": loss}
    >>> x = np.array([[1.0], [2.0]], np.float32)
    >>> y = 2.0 * x
    >>> w, history = training.fit(step, np.zeros((1, 1), np.float32),
    ...                           lambda epoch: [(x, y)], epochs=1,
    ...                           progress=False)
    epoch 1/1: train_loss 10.0000, seconds ...
    >>> w, history["train_loss"]
    (array([[1.]], dtype=float32), [10.0])
    """
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is optional for library use
        tqdm = None
    history = History()
    index = 0
    for epoch in range(epochs):
        start = time.perf_counter()
        sums, count = {}, 0
        it = batches(epoch)
        if progress and tqdm is not None:
            it = tqdm(it, total=steps_per_epoch, desc=f"epoch {epoch + 1}/"
                      f"{epochs}", leave=False, unit="step")
        for batch in it:
            carry, metrics = step(carry, *batch, index)
            index += 1
            count += 1
            for k, v in metrics.items():
                sums[k] = sums.get(k, 0.0) + float(v)
            if progress and tqdm is not None and count % 20 == 0:
                it.set_postfix({k: f"{s / count:.4f}" for k, s in
                                sums.items()})
        values = {f"train_{k}": s / max(count, 1) for k, s in sums.items()}
        if evaluate is not None:
            values.update(evaluate(carry))
        values["seconds"] = time.perf_counter() - start
        history.add(**values)
        if log:
            log(f"epoch {epoch + 1}/{epochs}: " + ", ".join(
                f"{k} {v:.4f}" if not math.isnan(v) else f"{k} nan"
                for k, v in values.items()))
    return carry, history


def accuracy(predictions, labels) -> float:
    """The fraction of ``predictions`` equal to ``labels`` (array-likes of
    the same shape, e.g. predicted and true class ids), as a Python float.

    >>> from tessera import training
    >>> training.accuracy(np.array([1, 2, 3, 0]), [1, 0, 3, 0])
    0.75
    """
    return float(np.mean(np.asarray(predictions) == np.asarray(labels)))
