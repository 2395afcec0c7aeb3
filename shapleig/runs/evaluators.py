"""Evaluators: how a :class:`~shapleig.runs.budget.BudgetedGame` gets the values of new coalitions.

An evaluator has one method, ``evaluate(game, coalitions, *, max_retries, on_result)``, which
returns ``float64[m]`` for ``bool[m, p]`` and reports every attempt through ``on_result`` as it
arrives (``BudgetedGame`` logs each one to the evaluation store from there). Both evaluators here
share the same failure policy:

- a call that raises is retried; a multi-coalition call that raises is first split into
  single-coalition calls, so the failure is attributed to one coalition;
- a NaN or inf value is retried the same way (its coalition alone);
- after ``max_retries`` retries of one coalition, evaluation stops and
  :class:`~shapleig.errors.EvaluationFailedError` (``NonFiniteValueError`` for NaN/inf) names it
  in its message and holds it as ``error.coalition`` (``bool[p]``); values that arrived before
  are still reported;
- a wrong number of values is a programming error: :class:`~shapleig.errors.GameError` at once.

:class:`SerialEvaluator` calls the game in this process. :class:`ExecutorEvaluator` submits one
task per coalition (or per ``chunk_size`` coalitions) to any ``concurrent.futures.Executor``: a
``ProcessPoolExecutor`` locally, or a Dask client's ``client.get_executor()``. Games sent to other
processes must be picklable (define them at module level).
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
import weakref
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from shapleig.errors import EvaluationFailedError, NonFiniteValueError
from shapleig.games.coalitions import format_coalition
from shapleig.games.game import Game, as_value_vector
from shapleig.runs.timeout import WorkerProcess, check_start_method, check_timeout


@dataclass(frozen=True)
class EvaluationRecord:
    """One attempt at evaluating one coalition, reported as soon as it is known.

    Attributes:
        index: row of the coalition in the matrix given to ``evaluate``.
        value: the value when ``status == "ok"``, else None.
        seconds: wall-clock seconds of the game call, shared equally among the coalitions of a
            multi-coalition call.
        status: ``"ok"``, ``"error"`` (the call raised) or ``"nonfinite"`` (NaN or inf).
        attempt: 1 for the first try of this coalition, 2 for its first retry, ...
        error: what went wrong (exception type and message, or the non-finite value), else None.
    """

    index: int
    value: float | None
    seconds: float
    status: str
    attempt: int
    error: str | None = None


OnResult = Callable[[EvaluationRecord], None]


@runtime_checkable
class Evaluator(Protocol):
    """Evaluates ``bool[m, p]`` coalitions of a game into ``float64[m]`` (see module docstring)."""

    def evaluate(
        self,
        game: Game,
        coalitions: np.ndarray,
        *,
        max_retries: int = 1,
        on_result: OnResult | None = None,
    ) -> np.ndarray:
        """Values ``float64[m]`` of ``coalitions``, each retried up to ``max_retries`` times on failure.

        Args:
            game: the game to evaluate.
            coalitions: ``bool[m, p]``.
            max_retries: retries of a failing coalition (an evaluator's own setting overrides it).
            on_result: called with an :class:`EvaluationRecord` as soon as each attempt is known.

        Returns:
            ``float64[m]``; a final failure raises ``EvaluationFailedError`` naming the coalition.
        """
        ...


def _chunks(m: int, chunk_size: int | None) -> list[np.ndarray]:
    """Row-index groups of at most ``chunk_size`` (all rows in one group when None)."""
    step = m if chunk_size is None else chunk_size
    return [np.arange(s, min(s + step, m)) for s in range(0, m, max(step, 1))]


def _check_retries(max_retries: int | None) -> int | None:
    if max_retries is None:
        return None
    if isinstance(max_retries, bool) or not isinstance(max_retries, (int, np.integer)) or max_retries < 0:
        raise ValueError(f"max_retries must be an integer >= 0 or None, got {max_retries!r}")
    return int(max_retries)


def _check_chunk_size(chunk_size: int | None, allow_none: bool) -> int | None:
    if chunk_size is None and allow_none:
        return None
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        allowed = "a positive integer or None" if allow_none else "a positive integer"
        raise ValueError(f"chunk_size must be {allowed}, got {chunk_size!r}")
    return int(chunk_size)


class _Attempts:
    """Retry bookkeeping shared by the evaluators: values, attempts, the first final failure."""

    def __init__(self, coalitions: np.ndarray, max_retries: int, on_result: OnResult | None):
        self.coalitions = coalitions
        self.max_retries = int(max_retries)
        self.on_result = on_result
        self.values = np.full(coalitions.shape[0], np.nan)
        self.failure: EvaluationFailedError | None = None
        self.draining = False  # after a final failure: record arrivals, schedule nothing more

    def _report(self, record: EvaluationRecord) -> None:
        if self.on_result is not None:
            self.on_result(record)

    def outcome(
        self, rows: np.ndarray, attempt: int, output: Any, seconds: float, error: str | None,
        exc: BaseException | None = None,
    ) -> list[tuple[np.ndarray, int]]:
        """Digest one game call on ``rows``; return the ``(rows, attempt)`` calls to make next."""
        retries: list[tuple[np.ndarray, int]] = []
        if error is not None:
            if rows.size > 1:  # cannot tell which coalition broke the call: try each alone
                return [] if self.draining else [(rows[i : i + 1], attempt) for i in range(rows.size)]
            self._report(EvaluationRecord(int(rows[0]), None, seconds, "error", attempt, error))
            if attempt <= self.max_retries:
                return [] if self.draining else [(rows, attempt + 1)]
            self._fail(int(rows[0]), attempt, error, exc, nonfinite=False)
            return []
        values = as_value_vector(output, rows.size)  # wrong count: GameError, not retried
        share = seconds / rows.size
        for r, v in zip(rows, values):
            if np.isfinite(v):
                self.values[r] = v
                self._report(EvaluationRecord(int(r), float(v), share, "ok", attempt))
                continue
            msg = f"game returned {v}"
            self._report(EvaluationRecord(int(r), None, share, "nonfinite", attempt, msg))
            if attempt <= self.max_retries:
                retries.append((np.array([r]), attempt + 1))
            else:
                self._fail(int(r), attempt, msg, None, nonfinite=True)
        return [] if self.draining or self.failure is not None else retries

    def _fail(
        self, row: int, attempts: int, error: str, exc: BaseException | None, nonfinite: bool
    ) -> None:
        if self.failure is not None:
            return
        coalition = format_coalition(self.coalitions[row])
        tried = f"{attempts} attempt{'s' if attempts > 1 else ''} (max_retries = {self.max_retries})"
        if nonfinite:
            err: EvaluationFailedError = NonFiniteValueError(
                f"{error} for coalition {coalition} in {tried}"
            )
        else:
            hint = ""
            if "pickl" in error.lower():
                hint = "; games evaluated in other processes must be picklable (module-level classes)"
            err = EvaluationFailedError(
                f"evaluating coalition {coalition} failed in {tried}; last error: {error}{hint}"
            )
        err.coalition = self.coalitions[row].copy()  # type: ignore[attr-defined]
        err.__cause__ = exc
        self.failure = err
        self.draining = True

    def finish(self) -> np.ndarray:
        if self.failure is not None:
            raise self.failure
        return self.values


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _RetryingEvaluator:
    """Shared by the evaluators: an own ``max_retries``, when set, overrides the caller's."""

    max_retries: int | None

    def _attempts(self, coalitions: np.ndarray, max_retries: int, on_result: OnResult | None) -> _Attempts:
        retries = max_retries if self.max_retries is None else self.max_retries
        return _Attempts(coalitions, retries, on_result)


class SerialEvaluator(_RetryingEvaluator):
    """Evaluate in this process, one game call per ``chunk_size`` coalitions (None: one call).

    ``chunk_size=None`` keeps vectorised games fast; ``chunk_size=1`` suits expensive games,
    because each value is reported (and stored) before the next coalition is evaluated.
    ``max_retries``, when set, overrides the one passed to :meth:`evaluate` (the
    ``BudgetedGame``'s), so retries can be configured wherever an evaluator is accepted.
    ``timeout`` (seconds per game call): each call runs in a worker process
    (:mod:`shapleig.runs.timeout`) that is killed when the call takes longer; the attempt then counts
    as failed ("timed out") and is retried like any other failure. The worker is started at the
    first timed evaluation of a game and kept for the next ones (a copy of the game taken then:
    changes made to the game object afterwards are not seen by it); another game, :meth:`close`,
    or the evaluator's collection ends it. ``start_method`` chooses how the worker starts
    (:func:`~shapleig.runs.timeout.check_start_method`; default a fresh interpreter).

    Args:
        chunk_size: coalitions per game call; None: all in one call.
        max_retries: retries of a failing coalition; None: the ``max_retries`` passed to :meth:`evaluate`.
        timeout: seconds per game call, run in a worker process that is killed when exceeded; None: in
            process, no limit.
        start_method: how the worker process starts (``"subprocess"``, ``"spawn"``, ``"fork"``); None: the
            platform's default.
    """

    concurrent = False  # one evaluation at a time: batches stay synchronous

    def __init__(self, chunk_size: int | None = None, max_retries: int | None = None,
                 timeout: float | None = None, start_method: str | None = None):
        self.chunk_size = _check_chunk_size(chunk_size, allow_none=True)
        self.max_retries = _check_retries(max_retries)
        self.timeout = check_timeout(timeout)
        self.start_method = check_start_method(start_method)
        self._start_worker_slot()

    def _start_worker_slot(self) -> None:
        # the worker lives in a holder shared with a finalizer: collecting the evaluator (or the
        # interpreter's exit) ends the worker without the finalizer keeping the evaluator alive
        # (the lock: threads sharing this evaluator take turns on its one worker's pipe)
        self._slot: dict[str, Any] = {"worker": None, "lock": threading.Lock()}
        weakref.finalize(self, _close_slot, self._slot)

    def __getstate__(self) -> dict[str, Any]:
        # a copy (``copy.copy``, pickling) gets a worker slot of its own, never the original's worker
        state = dict(self.__dict__)
        state.pop("_slot", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._start_worker_slot()

    def _worker_for(self, game: Game) -> WorkerProcess:
        """The live worker holding ``game`` (started, or restarted after a kill, on demand)."""
        worker = self._slot["worker"]
        if worker is not None and worker.game is game and worker.alive:
            return worker
        payload = worker.payload if worker is not None and worker.game is game else None  # a replacement
        if worker is not None:
            worker.close()
        self._slot["worker"] = None
        self._slot["worker"] = WorkerProcess(game, self.start_method, payload=payload)
        return self._slot["worker"]

    def close(self) -> None:
        """End the worker process, if one runs (a later timed evaluation starts a new one)."""
        with self._slot["lock"]:
            _close_slot(self._slot)

    def evaluate(
        self,
        game: Game,
        coalitions: np.ndarray,
        *,
        max_retries: int = 1,
        on_result: OnResult | None = None,
    ) -> np.ndarray:
        """Values ``float64[m]`` of ``coalitions`` (``bool[m, p]``).

        Args:
            game: the game to evaluate.
            coalitions: ``bool[m, p]``.
            max_retries: retries of a failing coalition (this evaluator's own ``max_retries`` overrides it).
            on_result: called with an :class:`EvaluationRecord` as soon as each attempt is known.

        Returns:
            ``float64[m]``; a final failure raises ``EvaluationFailedError`` naming the coalition.
        """
        state = self._attempts(coalitions, max_retries, on_result)
        queue = deque((rows, 1) for rows in _chunks(coalitions.shape[0], self.chunk_size))
        while queue and state.failure is None:
            rows, attempt = queue.popleft()
            start = time.perf_counter()
            output, error, exc = None, None, None
            if self.timeout is not None:  # in a worker process that is killed if it hangs
                with self._slot["lock"]:
                    output, seconds, error = self._worker_for(game).call(coalitions[rows].copy(), self.timeout)
            else:
                try:
                    output = game(coalitions[rows].copy())
                except Exception as e:  # any failure of the game is retried; interrupts are not
                    error, exc = _describe(e), e
                seconds = time.perf_counter() - start
            # retries go first, so a coalition's attempts are consecutive
            queue.extendleft(reversed(state.outcome(rows, attempt, output, seconds, error, exc)))
        return state.finish()

    def __repr__(self) -> str:
        extra = f", timeout={self.timeout}" if self.timeout is not None else ""
        return f"SerialEvaluator(chunk_size={self.chunk_size}, max_retries={self.max_retries}{extra})"


def _close_slot(slot: dict[str, Any]) -> None:
    worker, slot["worker"] = slot.get("worker"), None
    if worker is not None:
        worker.close()


def _evaluate_chunk(game: Game, coalitions: np.ndarray, token: str) -> tuple[Any, float, str | None]:
    """Worker side: ``(values, seconds, None)``, or ``(None, seconds, error)`` if the game raised.

    ``token`` makes every submission distinct, so that executors that cache by arguments (Dask's
    ``pure=True`` default) run a retry again instead of returning the failed result.
    """
    start = time.perf_counter()
    try:
        return np.asarray(game(coalitions)), time.perf_counter() - start, None
    except Exception as exc:
        # A message always pickles back; the exception object itself might not.
        return None, time.perf_counter() - start, _describe(exc)


class ExecutorEvaluator(_RetryingEvaluator):
    """Evaluate concurrently through ``executor`` (any ``concurrent.futures.Executor``).

    One task per ``chunk_size`` coalitions (default 1, i.e. full concurrency); ``max_retries`` as
    in :class:`SerialEvaluator`. Results are
    reported as they complete, so an evaluation store records each value as soon as it arrives.
    After a final failure, tasks not yet started are cancelled and running ones are awaited and
    reported before the error is raised (a Dask executor cannot tell started from queued tasks,
    so there all unfinished tasks are cancelled). The executor is not shut down: its owner does
    that. Dask: ``ExecutorEvaluator(client.get_executor())``; every submission carries a unique
    token, so a retry is really recomputed rather than served from Dask's cache of pure tasks.
    ``timeout`` (seconds per task, counted from when the executor reports it running): a task
    still running then is abandoned and its attempt counts as failed and is retried; an executor
    cannot kill a running task, so its worker stays busy until the game call returns (use
    ``SerialEvaluator(timeout=...)`` to have hung calls killed).

    Args:
        executor: any ``concurrent.futures.Executor`` (a Dask client's ``get_executor()`` too).
        chunk_size: coalitions per task.
        max_retries: retries of a failing coalition; None: the ``max_retries`` passed to :meth:`evaluate`.
        timeout: seconds per task once it runs; a slower task is abandoned and retried; None: no limit.
    """

    concurrent = True  # evaluations run side by side: the design loop keeps batch_size of them in flight

    def __init__(self, executor: Executor, chunk_size: int = 1, max_retries: int | None = None,
                 timeout: float | None = None):
        if not callable(getattr(executor, "submit", None)):
            raise TypeError(
                f"executor must have a submit(fn, *args) method like concurrent.futures.Executor, "
                f"got {type(executor).__name__}"
            )
        self.executor = executor
        self.chunk_size = _check_chunk_size(chunk_size, allow_none=False)
        self.max_retries = _check_retries(max_retries)
        self.timeout = check_timeout(timeout)

    # complexity over budget: retries, timeouts, failures and the store's claims in one loop
    def evaluate(  # noqa: C901
        self,
        game: Game,
        coalitions: np.ndarray,
        *,
        max_retries: int = 1,
        on_result: OnResult | None = None,
    ) -> np.ndarray:
        """Values ``float64[m]`` of ``coalitions`` (``bool[m, p]``).

        Args:
            game: the game to evaluate.
            coalitions: ``bool[m, p]``.
            max_retries: retries of a failing coalition (this evaluator's own ``max_retries`` overrides it).
            on_result: called with an :class:`EvaluationRecord` as soon as each attempt is known.

        Returns:
            ``float64[m]``; a final failure raises ``EvaluationFailedError`` naming the coalition.
        """
        state = self._attempts(coalitions, max_retries, on_result)
        pending: dict[Future, tuple[np.ndarray, int]] = {}

        def submit(rows: np.ndarray, attempt: int) -> None:
            try:
                chunk = coalitions[rows].copy()
                future = self.executor.submit(_evaluate_chunk, game, chunk, uuid.uuid4().hex)
            except Exception as exc:  # shut down or broken pool: retrying cannot help
                raise EvaluationFailedError(
                    f"could not submit coalition {format_coalition(coalitions[rows[0]])} to "
                    f"{type(self.executor).__name__}: {_describe(exc)}"
                ) from exc
            pending[future] = (rows, attempt)
            started[future] = time.perf_counter()

        started: dict[Future, float] = {}  # when each task was submitted, then seen running
        seen_running: set[Future] = set()  # tasks whose clock restarted when they were seen running

        def timed_out() -> list[Future]:
            """Tasks running longer than the timeout: abandoned (reported failed, retried)."""
            now, late = time.perf_counter(), []
            for future in list(pending):
                if future.running() and future not in seen_running:
                    seen_running.add(future)
                    started[future] = now  # the clock starts when it runs, not while it queues
                elif now - started[future] > self.timeout and not future.done():
                    late.append(future)
            return late

        try:
            for rows in _chunks(coalitions.shape[0], self.chunk_size):
                submit(rows, 1)
            while pending:
                poll = None if self.timeout is None else min(self.timeout / 4, 0.25)
                done, _ = wait(list(pending), timeout=poll, return_when=FIRST_COMPLETED)
                for future in [] if self.timeout is None else timed_out():
                    rows, attempt = pending.pop(future)
                    future.cancel()  # a running task cannot be stopped: its worker stays busy
                    error = (f"TimeoutError: timed out after {self.timeout:g} s (abandoned; the executor's "
                             f"worker may stay busy until the game call returns)")
                    for again in state.outcome(rows, attempt, None, self.timeout, error):
                        submit(*again)
                for future in done:
                    if future not in pending:
                        continue
                    rows, attempt = pending.pop(future)
                    if future.cancelled():
                        continue
                    try:
                        output, seconds, error = future.result()
                    except Exception as exc:  # lost worker, unpicklable game or value, ...
                        output, seconds, error = None, 0.0, _describe(exc)
                    for again in state.outcome(rows, attempt, output, seconds, error):
                        submit(*again)
                if state.failure is not None:
                    for future in pending:
                        future.cancel()  # only tasks not yet started; running ones are awaited
        finally:
            for future in pending:
                future.cancel()
        return state.finish()

    def __repr__(self) -> str:
        extra = f", timeout={self.timeout}" if self.timeout is not None else ""
        return (f"ExecutorEvaluator({type(self.executor).__name__}, chunk_size={self.chunk_size}, "
                f"max_retries={self.max_retries}{extra})")


def with_timeout(evaluator: Any, timeout: Any, stored: bool = False) -> Any:
    """The evaluator to use for ``estimate(..., evaluator=, timeout=)``.

    ``evaluator`` itself when ``timeout`` is None; else a ``SerialEvaluator(timeout=...)`` (one coalition per call
    with a store, so each value is committed as it comes), or ``evaluator`` with that timeout
    when it is one of the project's evaluators without one of its own.

    Args:
        evaluator: the evaluator given (or None).
        timeout: seconds per game call, or None.
        stored: whether the run has an evaluation store (then one coalition per call).

    Returns:
        the evaluator to use.
    """
    timeout = check_timeout(timeout)
    if timeout is None:
        return evaluator
    if evaluator is None:
        return SerialEvaluator(chunk_size=1 if stored else None, timeout=timeout)
    if not hasattr(evaluator, "timeout"):
        raise ValueError(f"timeout={timeout:g} cannot be applied to evaluator {evaluator!r}; give it a timeout "
                         f"of its own")
    if evaluator.timeout is not None and evaluator.timeout != timeout:
        raise ValueError(f"timeout={timeout:g} conflicts with the evaluator's own timeout {evaluator.timeout:g}")
    configured = copy.copy(evaluator)  # the caller's evaluator stays as it was
    configured.timeout = timeout
    return configured
