"""Picklable test games for the store / evaluator / resume tests (importable by worker processes).

Every game here can log each evaluation as one line (the coalition as a '0'/'1' string) appended
to ``log_path``: an O_APPEND write of one short line is atomic, so the log is a call counter that
works across processes. ``log_path`` is deliberately left out of ``params()``: where the calls are
logged does not change the values, so it must not change the game fingerprint.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np


def read_log(log_path: str | os.PathLike[str]) -> list[str]:
    """Coalitions logged so far, one '0'/'1' string per game evaluation, in call order."""
    try:
        with open(log_path, encoding="ascii") as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def _code(row: np.ndarray) -> str:
    return "".join("1" if b else "0" for b in row)


class QuadraticGame:
    """v(S) = sum_{j in S} w_j + sum_{j<k in S} c_jk, seeded weights; Shapley: w_j + sum_k c_jk / 2.

    sleep:    seconds to sleep per coalition (an "expensive" game).
    log_path: optional call log (see module docstring).
    stop_after: with ``stop_file``, once the log holds this many lines the next call writes
              ``stop_file`` and blocks, so a test can SIGKILL the process at a known point.
    """

    def __init__(
        self,
        n_players: int,
        seed: int = 0,
        sleep: float = 0.0,
        log_path: str | None = None,
        stop_after: int | None = None,
        stop_file: str | None = None,
    ):
        self.n_players = n_players
        self.seed = seed
        rng = np.random.default_rng(seed)
        self.w = rng.normal(size=n_players)
        c = np.triu(rng.normal(scale=0.5, size=(n_players, n_players)), 1)
        self.c = c + c.T
        self.sleep = sleep
        self.log_path = log_path
        self.stop_after = stop_after
        self.stop_file = stop_file

    def params(self) -> dict[str, Any]:
        return {"n_players": self.n_players, "seed": self.seed}

    def shapley_values(self) -> np.ndarray:
        return self.w + self.c.sum(axis=1) / 2

    def values(self, coalitions: np.ndarray) -> np.ndarray:
        z = np.asarray(coalitions, dtype=np.float64)
        return z @ self.w + 0.5 * np.einsum("mi,ij,mj->m", z, self.c, z)

    def _maybe_block(self) -> None:
        if self.stop_after is not None and self.log_path and len(read_log(self.log_path)) >= self.stop_after:
            with open(self.stop_file, "w") as f:  # tell the test we are at the kill point
                f.write(str(os.getpid()))
            while True:  # wait to be killed; never evaluate past the kill point
                time.sleep(0.05)

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        z = np.asarray(coalitions, dtype=bool)
        out = np.empty(z.shape[0])
        for r, row in enumerate(z):  # one coalition at a time, as an expensive game would
            self._maybe_block()
            if self.sleep:
                time.sleep(self.sleep)
            out[r] = self.values(row[None, :])[0]
            if self.log_path:
                with open(self.log_path, "a", encoding="ascii") as f:
                    f.write(_code(row) + "\n")
        return out


class FailingGame(QuadraticGame):
    """A QuadraticGame that misbehaves on the coalitions listed in ``bad`` ('0'/'1' strings).

    mode:     ``"raise"`` raises RuntimeError, ``"nan"`` returns NaN, ``"inf"`` returns +inf.
    failures: how many times each bad coalition misbehaves before it behaves (None: always).
              Counted from the call log, so it works across processes (needs ``log_path``).
    Failed calls are logged too (prefixed with ``!``) so tests can count attempts.
    """

    def __init__(self, n_players: int, bad: list[str], mode: str = "raise", failures: int | None = None,
                 seed: int = 0, sleep: float = 0.0, log_path: str | None = None):
        super().__init__(n_players, seed=seed, sleep=sleep, log_path=log_path)
        self.bad = set(bad)
        self.mode = mode
        self.failures = failures

    def params(self) -> dict[str, Any]:
        return {**super().params(), "bad": sorted(self.bad), "mode": self.mode, "failures": self.failures}

    def _misbehaves(self, code: str) -> bool:
        if code not in self.bad:
            return False
        if self.failures is None:
            return True
        if not self.log_path:
            raise ValueError("counting failures needs log_path")
        return read_log(self.log_path).count("!" + code) < self.failures

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        z = np.asarray(coalitions, dtype=bool)
        out = np.empty(z.shape[0])
        for r, row in enumerate(z):
            code = _code(row)
            if self.sleep:
                time.sleep(self.sleep)
            if self._misbehaves(code):
                if self.log_path:
                    with open(self.log_path, "a", encoding="ascii") as f:
                        f.write("!" + code + "\n")
                if self.mode == "raise":
                    raise RuntimeError(f"simulated failure on {code}")
                out[r] = np.nan if self.mode == "nan" else np.inf
                continue
            out[r] = self.values(row[None, :])[0]
            if self.log_path:
                with open(self.log_path, "a", encoding="ascii") as f:
                    f.write(code + "\n")
        return out



class HangingGame(QuadraticGame):
    """A QuadraticGame that hangs forever on the coalitions in ``hang`` ('0'/'1' strings) in a
    process whose environment has ``SHAPLEIG_TEST_HANG=1``, after writing its pid to
    ``started_file``; elsewhere it behaves. Its values (and identity) are QuadraticGame's, so a
    hanging process and a healthy one share a store."""

    def __init__(self, n_players: int, hang: list[str], started_file: str, seed: int = 0):
        super().__init__(n_players, seed=seed)
        self.hang = sorted(hang)
        self.started_file = started_file

    def params(self) -> dict[str, Any]:
        return super().params()

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        z = np.asarray(coalitions, dtype=bool)
        for row in z:
            if os.environ.get("SHAPLEIG_TEST_HANG") == "1" and _code(row) in self.hang:
                with open(self.started_file, "w") as f:
                    f.write(str(os.getpid()))
                while True:
                    time.sleep(0.05)
        return self.values(z)


class WorkerKillingGame(QuadraticGame):
    """A QuadraticGame whose worker process dies (``os._exit``) the first time it evaluates a
    coalition of ``kill_size`` players; ``marker`` (a file) records that it happened, so the
    evaluation succeeds when the task is run again on another worker. ``marker`` is left out of
    ``params()``: it does not change the values."""

    def __init__(self, n_players: int, kill_size: int, marker: str, seed: int = 0, log_path: str | None = None):
        super().__init__(n_players, seed=seed, log_path=log_path)
        self.kill_size = kill_size
        self.marker = marker

    def params(self) -> dict[str, Any]:
        return {**super().params(), "kill_size": self.kill_size}

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        z = np.asarray(coalitions, dtype=bool)
        if (z.sum(axis=1) == self.kill_size).any() and not os.path.exists(self.marker):
            with open(self.marker, "w") as f:
                f.write(str(os.getpid()))
            os._exit(1)  # the worker dies mid-evaluation
        return super().__call__(z)


class GatedGame(QuadraticGame):
    """A QuadraticGame that pauses at gates: once the log holds k lines (k in ``gates``), the next call
    writes ``<gate_dir>/at-k`` and waits until ``<gate_dir>/go-k`` exists, so a test can look at a run
    (its store, a page showing it) at known points and then let it go on. Needs ``log_path``."""

    def __init__(self, n_players: int, seed: int = 0, *, log_path: str, gate_dir: str, gates: tuple[int, ...] = ()):
        super().__init__(n_players, seed=seed, log_path=log_path)
        self.gate_dir = gate_dir
        self.gates = tuple(gates)

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        z = np.asarray(coalitions, dtype=bool)
        out = np.empty(z.shape[0])
        for r, row in enumerate(z):
            done = len(read_log(self.log_path))
            if done in self.gates:
                with open(os.path.join(self.gate_dir, f"at-{done}"), "w") as f:
                    f.write(str(os.getpid()))
                while not os.path.exists(os.path.join(self.gate_dir, f"go-{done}")):
                    time.sleep(0.02)
            out[r] = super().__call__(row[None, :])[0]
        return out
