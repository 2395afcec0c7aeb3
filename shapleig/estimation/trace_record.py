"""Writing a run's anytime trace to its evaluation store, so a reader can watch the run.

:meth:`~shapleig.estimation.base.BaseEstimator.estimate` starts a :class:`TraceRecorder` when the
run's store can hold a trace (an :class:`~shapleig.runs.store.EvaluationStore`; a store of your
own without ``start_trace_run`` and ``record_trace`` simply gets none) and attaches it to the
budgeted game (``BudgetedGame.trace_recorder``). The design loop records each step through it as
the step ends; when the method returns, every entry of ``est.trace`` the store does not hold as it
is gets written, then the run's end (all of them for methods that compute their anytime estimate at the end, the final
read-out for the loop), so the store's trace is the run's ``est.trace``
(:mod:`shapleig.runs.trace_table`). A run resumed with the same method, options, seed and budget
has the same run id and continues the rows the killed run wrote.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from typing import Any, Sequence

import numpy as np

from shapleig.games.indices import index_terms
from shapleig.runs.store_protocol import TRACE_METHODS
from shapleig.runs.trace_table import TraceRun


def _plain(value: Any) -> Any:
    """A JSON stand-in for an option value: its text, without the memory address of an object's default repr."""
    text = repr(value)
    if " at 0x" in text:  # a function or an object without a repr of its own: its type, the same in every process
        kind = getattr(value, "__qualname__", None) or type(value).__qualname__
        return f"<{getattr(value, '__module__', type(value).__module__)}.{kind}>"
    return text


def run_id(method: str, seed: Any, budget: int, params: dict[str, Any], index: str) -> str:
    """The id of a run on a store: the same for a run and its resumption, different for other settings.

    Args:
        method: the method's registry name.
        seed: the run's seed.
        budget: the run's budget.
        params: the method's options (``get_params()`` or the loop's options).
        index: the index estimated.

    Returns:
        16 hex digits.
    """
    text = json.dumps({"method": method, "seed": str(seed), "budget": int(budget), "index": index,
                       "params": {k: _plain(v) for k, v in sorted(params.items())}}, sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def player_labels(game: Any, n_players: int) -> list[str] | None:
    """The players' names when the game has them (``feature_names``, ``names`` or ``players``), else None.

    Args:
        game: the game (unwrapped as far as ``.game`` attributes go).
        n_players: p.

    Returns:
        p names, or None.
    """
    seen = 0
    while game is not None and seen < 8:
        for attr in ("feature_names", "names", "players"):
            names = getattr(game, attr, None)
            if isinstance(names, (list, tuple)) and len(names) == n_players:
                return [str(n) for n in names]
        game, seen = getattr(game, "game", None), seen + 1
    return None


def supports_trace(store: Any) -> bool:
    """Whether ``store`` can hold a trace (has the optional methods :data:`~shapleig.runs.store_protocol.TRACE_METHODS`).

    Args:
        store: a store object or None.

    Returns:
        True for an :class:`~shapleig.runs.store.EvaluationStore`.
    """
    return store is not None and all(callable(getattr(store, m, None)) for m in TRACE_METHODS)


class TraceRecorder:
    """Writes the entries of one run's trace to its store.

    Args:
        store: the store (it supports a trace: :func:`supports_trace`).
        run: the run as recorded in ``trace_runs``.

    Attributes:
        run: the :class:`~shapleig.runs.trace_table.TraceRun`.
        worker: ``host:pid`` of this process, written with each entry.
    """

    def __init__(self, store: Any, run: TraceRun):
        self.store = store
        self.run = run
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self._game_s = 0.0  # the loop's game seconds at the previous entry
        self._recorded: dict[int, int] = {}  # step -> how many times this process recorded it as it went

    @property
    def run_id(self) -> str:
        """The run's id (``est.info["trace_run"]``)."""
        return self.run.run

    def entry(self, step: int, evaluations: int, values: Any, std: Any = None, *, eval_seconds: float | None = None,
              pending: int = 0, diagnostics: dict[str, Any] | None = None) -> dict[str, Any]:
        """One entry as :meth:`~shapleig.runs.store.EvaluationStore.record_trace` takes it.

        Args:
            step: its position in ``est.trace``.
            evaluations: evaluations spent.
            values: the estimate, float64[d].
            std: its std, float64[d] or None.
            eval_seconds: wall seconds spent evaluating since the previous entry (None: not measured).
            pending: evaluations in flight.
            diagnostics: the read-out's diagnostics, or None.

        Returns:
            the entry.
        """
        return {"run": self.run.run, "step": int(step), "evaluations": int(evaluations), "time": time.time(),
                "eval_seconds": eval_seconds, "worker": self.worker, "pending": int(pending),
                "values": np.asarray(values, dtype=np.float64), "std": None if std is None else np.asarray(std),
                "diagnostics": diagnostics}

    def record(self, step: int, evaluations: int, values: Any, std: Any = None, **extra: Any) -> bool:
        """Write one entry now (unless the store holds it as it is: a resumed run's replayed step).

        Args:
            step: its position in ``est.trace``.
            evaluations: evaluations spent.
            values: the estimate, float64[d].
            std: its std, float64[d] or None.
            **extra: ``eval_seconds``, ``pending``, ``diagnostics`` (:meth:`entry`).

        Returns:
            True when a row was written.
        """
        return self.store.record_trace([self.entry(step, evaluations, values, std, **extra)]) > 0

    def record_loop_step(self, step: int, evaluations: int, values: Any, std: Any, *, game_seconds: float,
                         pending: int, diagnostics: dict[str, Any] | None) -> bool:
        """Write a design loop's step, with the seconds its game took since the previous step.

        Args:
            step: its position in the loop's trace.
            evaluations: evaluations spent.
            values: the estimate.
            std: its std.
            game_seconds: the loop's total seconds in the game so far.
            pending: evaluations in flight.
            diagnostics: the read-out's diagnostics.

        Returns:
            True when a row was written.
        """
        seconds, self._game_s = max(game_seconds - self._game_s, 0.0), game_seconds
        entry = self.entry(step, evaluations, values, std, eval_seconds=seconds, pending=pending,
                           diagnostics=diagnostics)
        # compared with the same occurrence of the step in the store: a resumed run's replay writes nothing
        entry["occurrence"] = self._recorded.get(int(step), 0)
        self._recorded[int(step)] = entry["occurrence"] + 1
        return self.store.record_trace([entry]) > 0

    def sync(self, trace: Sequence[tuple[int, Any]], trace_std: Sequence[tuple[int, Any]] = (), *,
             last_diagnostics: dict[str, Any] | None = None) -> int:
        """Write every entry of ``trace`` the store does not hold as it is, in one transaction.

        Args:
            trace: ``est.trace``, ``[(evaluations, values), ...]``.
            trace_std: ``est.trace_std`` (aligned with ``trace`` when given; else no std is written).
            last_diagnostics: the diagnostics of the last entry, if it is written (a final read-out's).

        Returns:
            how many rows were written.
        """
        stds = [s for _, s in trace_std] if len(trace_std) == len(trace) else [None] * len(trace)
        last = len(trace) - 1
        entries = [self.entry(k, n, values, stds[k], diagnostics=last_diagnostics if k == last else None)
                   for k, (n, values) in enumerate(trace)]
        return self.store.record_trace(entries) if entries else 0


    def end(self, evaluations: int) -> bool:
        """Record that the run returned its estimate after ``evaluations`` (once per evaluation count).

        Args:
            evaluations: the evaluations the run spent.

        Returns:
            True when a row was written.
        """
        return bool(self.store.end_trace_run(self.run.run, int(evaluations)))


def start_trace(budgeted: Any, *, method: str, seed: Any, budget: int, params: dict[str, Any], index: str = "SV",
                max_order: int | None = None) -> TraceRecorder | None:
    """Record a run on the store of ``budgeted`` and return its recorder (None when there is no such store).

    Args:
        budgeted: the run's :class:`~shapleig.runs.budget.BudgetedGame`.
        method: the method's registry name.
        seed: the run's seed.
        budget: its budget.
        params: the method's options.
        index: the index estimated.
        max_order: the largest order of the index's terms (None: the index's own).

    Returns:
        the :class:`TraceRecorder`, or None.
    """
    store = getattr(budgeted, "store", None)
    if not supports_trace(store):
        return None
    p = int(budgeted.n_players)
    try:
        terms = [list(t) for t in index_terms(p, index, max_order)]
    except (ValueError, KeyError):  # an index the registry does not know: one term per player
        terms = [[j] for j in range(p)]
    info = {"index": index, "terms": terms, "labels": player_labels(budgeted.game, p), "n_players": p,
            "units": getattr(budgeted.game, "units", None), "params": {k: _plain(v) for k, v in params.items()}}
    run = TraceRun(run_id(method, seed, budget, params, index), time.time(), method, str(seed), int(budget), info)
    store.start_trace_run(run)
    return TraceRecorder(store, run)


__all__ = ["TraceRecorder", "player_labels", "run_id", "start_trace", "supports_trace"]
