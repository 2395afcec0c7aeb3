"""Evaluations in flight: single coalitions evaluated concurrently, consumed one at a time in a replayable order.

:class:`InFlight` is the evaluation side of the asynchronous design loop
(:class:`~shapleig.design.async_loop.AsyncDesignLoop`). Each :meth:`InFlight.submit` starts the
evaluation of one coalition of a :class:`~shapleig.runs.budget.BudgetedGame` on a driver thread that
calls the game's evaluator on that coalition alone (an ``ExecutorEvaluator`` hands it to its
executor: a process pool, or a Dask cluster through ``client.get_executor()``), so as many
evaluations run as coalitions were submitted. :meth:`InFlight.next` blocks until one has arrived and
returns it; the driver is free in between (a refit does not stop the running evaluations).

The store keeps the guarantees of a synchronous run: a coalition is claimed before it is evaluated
(another process evaluating it is waited for, not duplicated), every attempt is appended and
committed as it arrives, from the driver thread that saw it, and a claim is released when its
evaluation fails for good. Values are charged to the ``BudgetedGame`` (its archive, cache and
accounting) only when :meth:`InFlight.next` hands them to the caller.

**Replayable order.** The caller sees arrivals in one order only: values that were already in the
store when the run started come first, in the order the store recorded them, then values as they
arrived (the order in which this run appended them to the store). A loop that consumes one arrival
per decision therefore makes the same decisions when it is resumed on the store of a killed run: up
to the kill, the stored values come back in the order the killed run consumed them. Only the
evaluations that were running at the kill are evaluated again.
"""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from shapleig.errors import BudgetExhaustedError
from shapleig.games.coalitions import coalition_keys, format_coalition
from shapleig.runs.budget import BudgetedGame
from shapleig.runs.evaluators import EvaluationRecord


def is_concurrent(evaluator: Any) -> bool:
    """Whether ``evaluator`` runs evaluations concurrently.

    Read from its ``concurrent`` attribute (true for
    :class:`~shapleig.runs.evaluators.ExecutorEvaluator`); the asynchronous loop is the default then.

    Args:
        evaluator: any evaluator.

    Returns:
        True when it runs evaluations concurrently.
    """
    return bool(getattr(evaluator, "concurrent", False))


@dataclass(frozen=True)
class Arrival:
    """One evaluated coalition handed to the caller.

    Attributes:
        row: the coalition, ``bool[p]``.
        value: its value.
        source: ``"game"`` (evaluated by this run) or ``"store"`` (found in the evaluation store).
    """

    row: np.ndarray
    value: float
    source: str


@dataclass
class _Ready:
    rank: tuple  # consumption order: (0, store position) for stored values, (1, arrival) for new ones
    value: float | None
    source: str
    waited: bool = False
    error: BaseException | None = None


class InFlight:
    """Coalitions of ``game`` being evaluated concurrently, at most ``slots`` at a time.

    Args:
        game: the :class:`BudgetedGame` whose store, evaluator and budget are used; coalitions are
            charged to it as they are consumed with :meth:`next`.
        slots: the most coalitions in flight at once (driver threads waiting on the evaluator).

    Example:
        >>> from concurrent.futures import ThreadPoolExecutor
        >>> from shapleig import ExecutorEvaluator, FunctionGame
        >>> game = FunctionGame(lambda Z: Z.sum(axis=1).astype(float), n_players=3)
        >>> with ThreadPoolExecutor(2) as pool:
        ...     budgeted = BudgetedGame(game, 4, evaluator=ExecutorEvaluator(pool))
        ...     with InFlight(budgeted, 2) as flight:
        ...         flight.submit(np.array([True, False, True]))
        ...         flight.next().value
        2.0
    """

    def __init__(self, game: BudgetedGame, slots: int):
        if isinstance(slots, bool) or not isinstance(slots, (int, np.integer)) or slots < 1:
            raise ValueError(f"slots must be a positive integer, got {slots!r}")
        self.game = game
        self.slots = int(slots)
        self._threads = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="shapleig-in-flight")
        self._cond = threading.Condition()
        self._pending: dict[bytes, np.ndarray] = {}  # submitted, not yet consumed
        self._ready: dict[bytes, _Ready] = {}
        self._arrivals = itertools.count()
        self._arrived_keys: set[bytes] = set()  # every coalition whose outcome is known
        self._store_rank = self._stored_order(game.store, game.fingerprint)

    # -- accounting -------------------------------------------------------------------------
    @property
    def n_pending(self) -> int:
        """Coalitions submitted and not yet consumed (running, or arrived and waiting)."""
        return len(self._pending)

    def pending_rows(self) -> np.ndarray:
        """The pending coalitions, in submission order.

        Returns:
            ``bool[n_pending, p]``.
        """
        rows = list(self._pending.values())
        return np.stack(rows) if rows else np.zeros((0, self.game.n_players), dtype=bool)

    @staticmethod
    def _stored_order(store: Any, fingerprint: str | None) -> dict[bytes, int]:
        """Position of each coalition among the store's successful records when the run starts.

        A store without ``records()`` gives an empty mapping: stored values then keep their lookup order.
        """
        if store is None or not callable(getattr(store, "records", None)):
            return {}
        rows = [r.coalition for r in store.records()
                if r.status == "ok" and (fingerprint is None or r.fingerprint == fingerprint)]
        order: dict[bytes, int] = {}
        for i, key in enumerate(coalition_keys(np.stack(rows)) if rows else []):
            order.setdefault(key, i)
        return order

    # -- submitting ---------------------------------------------------------------------------
    def submit(self, row: np.ndarray) -> None:
        """Start evaluating one coalition; its value is already known if stored.

        Args:
            row: the coalition, ``bool[p]``.

        Raises:
            ValueError: the coalition is pending or already evaluated in this game.
            BudgetExhaustedError: the game's budget cannot pay for it and everything pending.
            RuntimeError: more than ``slots`` coalitions would be in flight.
        """
        row = np.asarray(row, dtype=bool).reshape(-1).copy()
        if row.shape[0] != self.game.n_players:
            raise ValueError(f"coalition has {row.shape[0]} players, the game {self.game.n_players}")
        key = coalition_keys(row[None])[0]
        with self._cond:
            if key in self._pending or self.game.is_cached(row[None])[0]:
                raise ValueError(f"coalition {format_coalition(row)} is already pending or evaluated")
            if len(self._pending) >= self.slots:
                raise RuntimeError(f"{self.slots} coalitions are already in flight")
            if self.game.evaluations + len(self._pending) + 1 > self.game.budget:
                raise BudgetExhaustedError(
                    f"coalition {format_coalition(row)} would exceed the budget ({self.game.evaluations} used, "
                    f"{len(self._pending)} in flight, budget {self.game.budget})")
            self._pending[key] = row
        store = self.game.store
        if store is not None:  # stored values are known at once: no thread, and first in the order
            found, values = store.lookup(row[None])
            if found[0]:
                with self._cond:
                    rank = (0, self._store_rank.get(key, len(self._store_rank)), next(self._arrivals))
                    self._arrived_keys.add(key)
                    self._ready[key] = _Ready(rank, float(values[0]), "store")
                    self._cond.notify_all()
                return
        self._threads.submit(self._obtain, key, row)

    # -- driver threads -----------------------------------------------------------------------
    def _arrived(self, key: bytes, value: float | None, source: str, waited: bool = False,
                 error: BaseException | None = None) -> None:
        """Mark ``key`` ready (the caller holds the lock); its rank is the order of arrival.

        Only the first outcome of a coalition counts (it may already have been consumed).
        """
        if key not in self._arrived_keys:
            self._arrived_keys.add(key)
            self._ready[key] = _Ready((1, next(self._arrivals)), value, source, waited, error)
            self._cond.notify_all()

    def _obtain(self, key: bytes, row: np.ndarray) -> None:
        """Driver thread: the value of ``row``, from the store or the evaluator (or its failure)."""
        try:
            self._claim_and_evaluate(key, row)
        except BaseException as exc:  # handed to the consumer, raised there
            with self._cond:
                self._arrived(key, None, "game", error=exc)

    def _claim_and_evaluate(self, key: bytes, row: np.ndarray) -> None:
        store = self.game.store
        if store is None:
            self._evaluate(key, row)
            return
        hold = self.game.claim_hold_seconds()
        waited = False
        while True:
            found, stored, mine, _busy = store.claim(row[None], hold_for=hold)
            if found[0]:  # another process stored it meanwhile
                with self._cond:
                    self._arrived(key, float(stored[0]), "store", waited)
                return
            if mine[0]:
                done = False
                try:
                    self._evaluate(key, row)
                    done = True
                finally:
                    if not done:
                        store.release(row[None])  # others may evaluate what we could not
                return
            waited = True  # another live process evaluates it: wait, then look again
            store.wait_for_others(row[None])

    def _evaluate(self, key: bytes, row: np.ndarray) -> None:
        game, store = self.game, self.game.store

        def on_result(record: EvaluationRecord) -> None:
            with self._cond:  # one lock: the store's order of appends is the order of arrival
                if store is not None:
                    store.append(row, record.value, seconds=record.seconds, status=record.status,
                                 attempt=record.attempt, error=record.error)
                if record.status == "ok":
                    self._arrived(key, float(record.value), "game")
                else:
                    game.n_failed_attempts += 1

        game.evaluator.evaluate(game.game, row[None].copy(), max_retries=game.max_retries, on_result=on_result)
        with self._cond:
            if key not in self._arrived_keys:
                raise RuntimeError(f"evaluator {game.evaluator!r} returned without reporting a value")

    # -- consuming ------------------------------------------------------------------------------
    def next(self) -> Arrival:
        """Block until a pending coalition has arrived; charge it to the game and return it.

        Arrivals are consumed in the order described in the module docstring. When an evaluation
        failed for good, the others in flight are awaited and charged (they were paid for) and the
        failure (an ``EvaluationFailedError`` naming the coalition) is raised.

        Returns:
            the arrival: its coalition, value and source.
        """
        with self._cond:
            if not self._pending:
                raise RuntimeError("no coalition in flight")
            while not self._ready:
                self._cond.wait()
            key = min(self._ready, key=lambda k: self._ready[k].rank)
            ready = self._ready.pop(key)
            row = self._pending.pop(key)
        if ready.error is not None:
            self._drain()
            raise ready.error
        self.game.charge_arrival(row, ready.value, from_store=ready.source == "store", waited=ready.waited)
        return Arrival(row, float(ready.value), ready.source)

    def _drain(self) -> None:
        """After a final failure: wait for everything in flight, charge what arrived."""
        while True:
            with self._cond:
                if not self._pending:
                    return
                while not self._ready:
                    self._cond.wait()
                key = min(self._ready, key=lambda k: self._ready[k].rank)
                ready = self._ready.pop(key)
                row = self._pending.pop(key)
            if ready.error is None:
                self.game.charge_arrival(row, ready.value, from_store=ready.source == "store", waited=ready.waited)

    def close(self) -> None:
        """Stop the driver threads (evaluations still running finish in the background)."""
        self._threads.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> "InFlight":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"InFlight({self.n_pending}/{self.slots} in flight, {self.game!r})"
