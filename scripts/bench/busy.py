"""Shared by the asynchronous-batch benchmarks: a game that sleeps lognormal times, and an
``ExecutorEvaluator`` that adds up the seconds its workers spent in game calls.

Workers' utilisation = busy seconds / (workers x wall seconds of the run).
"""

from __future__ import annotations

import threading
import time

import numpy as np

from shapleig import ExecutorEvaluator


class LognormalSleepGame:
    """``inner`` whose every coalition sleeps a lognormal time (``median`` seconds, ``sigma`` the sd
    of its log) before returning; the time is a function of the coalition and ``seed``, so every
    run sees the same times. Module-level: picklable for process workers."""

    def __init__(self, inner, median: float, sigma: float, seed: int = 0):
        self.inner = inner
        self.median, self.sigma, self.seed = float(median), float(sigma), int(seed)
        self.n_players = inner.n_players

    def seconds(self, row: np.ndarray) -> float:
        code = int.from_bytes(np.packbits(np.asarray(row, dtype=bool)).tobytes(), "little")
        rng = np.random.default_rng([self.seed, code % (2**63)])
        return float(self.median * np.exp(self.sigma * rng.standard_normal()))

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        time.sleep(sum(self.seconds(row) for row in coalitions))
        return self.inner(coalitions)


class BusyEvaluator(ExecutorEvaluator):
    """``ExecutorEvaluator`` adding up the game seconds of every attempt (``busy``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.busy = 0.0
        self._lock = threading.Lock()

    def evaluate(self, game, coalitions, *, max_retries=1, on_result=None):
        def counted(record):
            with self._lock:
                self.busy += record.seconds
            if on_result is not None:
                on_result(record)

        return super().evaluate(game, coalitions, max_retries=max_retries, on_result=counted)
