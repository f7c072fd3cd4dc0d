"""A training loop with a progress bar (tqdm) and metric logging."""

from __future__ import annotations

import json
import math
import time

import numpy as np


class History:
    """Per-epoch metrics: ``history["test_accuracy"]`` is a list."""

    def __init__(self):
        self.metrics = {}

    def add(self, **values):
        for k, v in values.items():
            self.metrics.setdefault(k, []).append(float(v))

    def __getitem__(self, key):
        return self.metrics[key]

    def last(self):
        return {k: v[-1] for k, v in self.metrics.items()}

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self.metrics, f, indent=1)


def fit(step, carry, batches, *, epochs, evaluate=None, progress=True,
        log=print, steps_per_epoch=None):
    """Runs ``carry, metrics = step(carry, *batch, step_index)`` over
    ``batches(epoch)`` for ``epochs`` epochs; ``evaluate(carry)`` returns a
    dict of metrics after each epoch. Returns (carry, History)."""
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
    return float(np.mean(np.asarray(predictions) == np.asarray(labels)))
