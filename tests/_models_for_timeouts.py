"""Picklable models and games for the timeout tests (importable by worker processes)."""

from __future__ import annotations

import os
import threading
import time

import numpy as np


class HangsInWorkers:
    """A linear regression model whose ``predict`` hangs in any process but the one that built it:
    the explained row is probed in the parent (fine), every coalition evaluated in a worker hangs."""

    def __init__(self, weights) -> None:
        self.w = np.asarray(weights, dtype=float)
        self.home = os.getpid()

    def predict(self, X) -> np.ndarray:
        if os.getpid() != self.home:
            while True:
                time.sleep(0.05)
        return np.asarray(X, dtype=float) @ self.w


class PidGame:
    """v(S) = |S|; writes the evaluating process's pid (one line per call) to ``log``."""

    def __init__(self, n_players: int, log: str) -> None:
        self.n_players = n_players
        self.log = log

    def __call__(self, Z) -> np.ndarray:
        with open(self.log, "a") as f:
            f.write(f"{os.getpid()}\n")
        return np.asarray(Z, dtype=float).sum(axis=1)


class HangsOnceGame:
    """v(S) = |S|; the first call in a process where ``marker`` does not exist creates it and
    hangs: a worker killed for the timeout is replaced, and the replacement's retry succeeds."""

    def __init__(self, n_players: int, marker: str) -> None:
        self.n_players = n_players
        self.marker = marker

    def __call__(self, Z) -> np.ndarray:
        if not os.path.exists(self.marker):
            with open(self.marker, "w") as f:
                f.write(str(os.getpid()))
            while True:
                time.sleep(0.05)
        return np.asarray(Z, dtype=float).sum(axis=1)


class LockedGame:
    """v(S) = |S|, holding a lock (which cannot be pickled): a worker process cannot get a copy."""

    def __init__(self, n_players: int) -> None:
        self.n_players = n_players
        self.lock = threading.Lock()

    def __call__(self, Z) -> np.ndarray:
        with self.lock:
            return np.asarray(Z, dtype=float).sum(axis=1)
