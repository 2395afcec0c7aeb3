"""Evaluation timeouts: a game call that hangs is abandoned, not waited for forever.

A Python call cannot be interrupted from outside, so an evaluation with a ``timeout`` runs in a
worker process that can be killed. :class:`WorkerProcess` is that process: it receives coalition
matrices over a pipe, calls the game and sends back ``(values, seconds, error)``. When a call
takes longer than the timeout, the worker is killed (SIGKILL) and the next call starts a fresh
one; the attempt is reported as failed (``"timed out after 2 s"``), so the evaluators' retry
policy applies to it: retried up to ``max_retries`` times, then
:class:`~shapleig.errors.EvaluationFailedError` naming the coalition. Its store claim is released
by :class:`~shapleig.runs.budget.BudgetedGame` as for any failure, so another process sharing the store
can take the coalition over.

On Linux the worker is forked, so it inherits the game (lambdas and closures work), and it is
killed by the kernel if its parent dies; elsewhere it is spawned and the game must be picklable.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
from typing import Any

import numpy as np


def check_timeout(timeout: Any, what: str = "timeout") -> float | None:
    """``timeout`` as a positive float of seconds, or None; ``ValueError`` naming it otherwise."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer, np.floating)):
        raise ValueError(f"{what} must be a number of seconds > 0 or None, got {timeout!r}")
    t = float(timeout)
    if not (t > 0 and np.isfinite(t)):
        raise ValueError(f"{what} must be a finite number of seconds > 0, got {timeout!r}")
    return t


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this worker when its parent dies (Linux ``PR_SET_PDEATHSIG``): a
    worker hung inside the game would otherwise outlive a parent killed with SIGKILL."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # no prctl: the parent's exit still closes the pipe
            pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(0)


def _serve(game: Any, conn: Any, parent: int) -> None:
    """Worker loop: evaluate each coalition matrix received until the pipe closes."""
    _die_with_parent(parent)
    while True:
        try:
            coalitions = conn.recv()
        except (EOFError, OSError):
            return
        start = time.perf_counter()
        try:
            out = (np.asarray(game(coalitions)), time.perf_counter() - start, None)
        except Exception as exc:  # noqa: BLE001 - reported as a failed attempt, like in-process
            out = (None, time.perf_counter() - start, f"{type(exc).__name__}: {exc}")
        try:
            conn.send(out)
        except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable value
            conn.send((None, time.perf_counter() - start, f"{type(exc).__name__}: {exc}"))


class WorkerProcess:
    """One killable process evaluating ``game``; :meth:`call` returns ``(output, seconds, error)``
    and kills the process when the call exceeds ``timeout`` seconds (``error`` then says so)."""

    def __init__(self, game: Any, start_method: str | None = None):
        method = start_method or ("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        ctx = mp.get_context(method)
        self.game = game
        self._conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(game, child, os.getpid()), daemon=True,
                                   name="shapleig-evaluation-worker")
        self.process.start()
        child.close()

    def call(self, coalitions: np.ndarray, timeout: float) -> tuple[Any, float, str | None]:
        start = time.perf_counter()
        try:
            self._conn.send(coalitions)
            ready = self._conn.poll(timeout)
        except (OSError, EOFError) as exc:
            self.kill()
            return None, time.perf_counter() - start, f"the evaluation worker process failed: {exc}"
        if not ready:
            self.kill()
            return None, time.perf_counter() - start, (
                f"TimeoutError: timed out after {timeout:g} s (the evaluation was abandoned and its worker "
                f"process {self.process.pid} killed)")
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            self.process.join(1.0)
            code = self.process.exitcode
            self.kill()
            return None, time.perf_counter() - start, (
                f"the evaluation worker process died (exit code {code}) while evaluating")

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        """Kill the process (SIGKILL: a hung game cannot refuse) and reap it."""
        if self.process.is_alive():
            try:
                os.kill(self.process.pid, 9)
            except ProcessLookupError:
                pass
        self.process.join(5.0)
        self._conn.close()

    def close(self) -> None:
        """End the process: close its pipe (it exits) and kill it if it does not."""
        try:
            self._conn.close()
        finally:
            self.process.join(2.0)
            if self.process.is_alive():
                self.kill()
