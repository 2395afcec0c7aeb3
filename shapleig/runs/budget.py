"""``BudgetedGame``: the only place budget is charged (distinct coalitions once, repeats from the cache)."""

from __future__ import annotations

from typing import Any

import numpy as np

from shapleig.errors import BudgetExhaustedError, EvaluationFailedError
from shapleig.games.coalitions import as_coalition_matrix, coalition_keys
from shapleig.games.game import Game, as_value_vector, check_budget, check_game
from shapleig.runs.evaluators import EvaluationRecord, SerialEvaluator


def game_fingerprint(game: Any, game_id: str | None = None) -> str:
    """A stable hex digest (32 chars) identifying ``game`` across processes and runs.

    The digest of :func:`shapleig.games.identity.game_identity`: the game's content (its ``identity()``,
    ``fingerprint()``, ``params()`` or, failing those, its attributes, digested in full), followed
    by ``game_id`` when given. Evaluation stores use it to refuse values logged for another game.

    Args:
        game: any game.
        game_id: a label added to the game's identity.

    Returns:
        32 hex digits.
    """
    from shapleig.games.identity import game_identity, identity_digest

    return identity_digest(game_identity(game, game_id))


class BudgetedGame:
    """A game seen through a budget: distinct coalitions are charged once, repeats are free.

    ``budget`` counts distinct coalitions, the empty and grand coalitions included. A call that
    needs more uncached coalitions than remain raises :class:`BudgetExhaustedError` before
    evaluating any of them. Values are validated (shape, finiteness) and cached; the archive of
    evaluated coalitions is kept in request order (``history()``), whatever order concurrent
    results arrive in, so a run is reproducible.

    Args:
        game: the game to spend the budget on.
        budget: distinct coalitions that may be charged (a positive int).
        store: optional store: any object implementing ``shapleig.runs.store_protocol.Store`` (the SQLite
            ``EvaluationStore`` of ``shapleig.runs.store``, or your own), or a path to open an
            ``EvaluationStore`` at; only the protocol's methods are used. Uncached coalitions are first
            looked up there: stored values are reused without calling the game but still charged to the
            budget. Every new evaluation (and every failed attempt) is appended and committed as it arrives,
            before the call returns. A store written for a different game is refused
            (``StoreMismatchError``, naming what differs). A coalition another process is evaluating on the
            same store is waited for, not evaluated again (it counts as a store hit; ``n_waited`` in the
            accounting).
        evaluator: how uncached, unstored coalitions are evaluated (``shapleig.runs.evaluators``). Default:
            ``SerialEvaluator()`` in-process; with a store, ``SerialEvaluator(chunk_size=1)`` so that each
            value is committed as soon as it is computed. ``ExecutorEvaluator(executor)`` evaluates
            concurrently.
        max_retries: a coalition whose evaluation raises or returns NaN/inf is retried up to this many
            times; then the call raises ``EvaluationFailedError`` naming it (``NonFiniteValueError``, also a
            ``GameError``, for non-finite values). Values that did arrive are kept (charged, cached,
            stored). An evaluator built with its own ``max_retries`` overrides this one (that is how
            ``DesignLoop`` and ``estimate``, which take an ``evaluator=``, configure retries).
    """

    def __init__(
        self,
        game: Game,
        budget: int,
        *,
        store: Any = None,
        evaluator: Any = None,
        max_retries: int = 1,
    ):
        self.game = game
        self.n_players = check_game(game)
        self.budget = check_budget(budget)
        is_bool = isinstance(max_retries, (bool, np.bool_))
        if is_bool or not isinstance(max_retries, (int, np.integer)) or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        self.max_retries = int(max_retries)
        if store is not None:
            from shapleig.runs.store import (
                open_store,  # lazy: store.py imports this module
            )

            store = open_store(store)
        self.store = store
        if evaluator is None:
            evaluator = SerialEvaluator(chunk_size=1 if store is not None else None)
        self.evaluator = evaluator
        # a store's verification re-evaluates through the evaluator when it has a timeout
        self.fingerprint: str | None = store.bind(game, evaluate=self._verification_values) if store is not None \
            else None
        self._cache: dict[bytes, float] = {}
        self._rows: list[np.ndarray] = []
        self._values: list[float] = []
        self.n_requests = 0  # coalitions asked for, repeats included
        self.n_cache_hits = 0
        self.n_store_hits = 0  # charged coalitions whose value came from the store
        self.n_waited = 0  # of those, coalitions this run waited for while another process evaluated them
        self.n_game_evaluations = 0  # charged coalitions whose value came from the game
        self.n_failed_attempts = 0  # attempts that raised or returned NaN/inf
        # an object with update(n) (a tqdm bar), advanced by one per charged coalition
        self.progress_bar: Any = None
        # the run's trace recorder (shapleig.estimation.trace_record), set by estimate() while it runs
        self.trace_recorder: Any = None

    # -- accounting -------------------------------------------------------------------------
    @property
    def evaluations(self) -> int:
        """Distinct coalitions charged so far."""
        return len(self._values)

    @property
    def remaining(self) -> int:
        """Evaluations left in the budget."""
        return self.budget - self.evaluations

    def n_uncached(self, coalitions: np.ndarray) -> int:
        """How many distinct coalitions of ``coalitions`` would be charged by a call.

        Args:
            coalitions: ``bool[m, p]``.

        Returns:
            the number of distinct uncached coalitions.
        """
        z = as_coalition_matrix(coalitions, self.n_players)
        return len({k for k in coalition_keys(z) if k not in self._cache})

    def can_afford(self, coalitions: np.ndarray) -> bool:
        """Whether a call on ``coalitions`` fits in the remaining budget.

        Args:
            coalitions: ``bool[m, p]``.

        Returns:
            True when the distinct uncached coalitions do not exceed :attr:`remaining`.
        """
        return self.n_uncached(coalitions) <= self.remaining

    def is_cached(self, coalitions: np.ndarray) -> np.ndarray:
        """``bool[m]``: which rows are already evaluated.

        Args:
            coalitions: ``bool[m, p]``.

        Returns:
            ``bool[m]``.
        """
        z = as_coalition_matrix(coalitions, self.n_players)
        return np.array([k in self._cache for k in coalition_keys(z)], dtype=bool)

    # -- evaluation -------------------------------------------------------------------------
    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        """Values ``float64[m]`` of ``coalitions`` (``bool[m, p]``), charging new ones once."""
        z = as_coalition_matrix(coalitions, self.n_players)
        keys = coalition_keys(z)
        self.n_requests += len(keys)
        new_rows: dict[bytes, int] = {}
        for r, k in enumerate(keys):
            if k not in self._cache and k not in new_rows:
                new_rows[k] = r
        if len(new_rows) > self.remaining:
            raise BudgetExhaustedError(
                f"evaluating {len(new_rows)} new coalitions would exceed the budget "
                f"({self.evaluations} of {self.budget} used); nothing was evaluated"
            )
        self.n_cache_hits += len(keys) - len(new_rows)
        if new_rows:
            idx = np.fromiter(new_rows.values(), dtype=np.int64, count=len(new_rows))
            self._charge(list(new_rows.keys()), z[idx])
        return np.array([self._cache[k] for k in keys], dtype=np.float64)

    def _charge(self, keys: list[bytes], fresh: np.ndarray) -> None:
        """Obtain values for the uncached ``fresh`` (``bool[k, p]``) and record them in order.

        With a store: stored values are reused; the rest are claimed in the store and evaluated
        here, except coalitions another live process is evaluating, whose values are waited for.
        """
        k = fresh.shape[0]
        values = np.full(k, np.nan)
        known = np.zeros(k, dtype=bool)
        from_store = 0
        waited: set[int] = set()  # coalitions another process was evaluating when we asked
        try:
            if self.store is None:
                self._evaluate_into(fresh, np.arange(k), values, known)
                return
            step, hold = self._claim_plan()
            if step is not None:  # stored values first, in one read; then claim chunk by chunk
                found, stored = self.store.lookup(fresh)
                values[found], known[found] = stored[found], True
                from_store += int(found.sum())
            todo = np.flatnonzero(~known)
            for first in range(0, todo.size, step or max(todo.size, 1)):  # claim only what starts now
                pending = todo[first : first + (step or todo.size)]
                while pending.size:
                    found, stored, mine, busy = self.store.claim(fresh[pending], hold_for=hold)
                    values[pending[found]] = stored[found]
                    known[pending[found]] = True
                    from_store += int(found.sum())
                    if mine.any():
                        self._evaluate_into(fresh, pending[mine], values, known)
                    pending = pending[busy]
                    waited |= set(pending.tolist())
                    if pending.size:
                        self.store.wait_for_others(fresh[pending])
        finally:
            if self.store is not None and not known.all():
                self.store.release(fresh[~known])  # others may evaluate what we could not
            # Keep whatever arrived, in request order, even when an evaluation failed for good:
            # it was paid for, and a resumed run will find it in the store anyway.
            for i in np.flatnonzero(known):
                self._record(keys[i], fresh[i], float(values[i]))
            self.n_store_hits += from_store
            self.n_waited += len(waited)
            self.n_game_evaluations += int(known.sum()) - from_store

    def _claim_plan(self) -> tuple[int | None, float | None]:
        """How many coalitions to claim at a time, and for how long the heartbeat may hold each claim.

        The count: None for all; a serial evaluator starts one chunk at a time, so only that chunk
        is claimed. The hold: None while this process lives; with an evaluation timeout, the longest
        the chunk's attempts can take, so a claim never outlives its abandoned evaluation.
        """
        step = self.evaluator.chunk_size if isinstance(self.evaluator, SerialEvaluator) else None
        timeout = getattr(self.evaluator, "timeout", None)
        if timeout is None:
            return step, None
        own = getattr(self.evaluator, "max_retries", None)
        attempts = (self.max_retries if own is None else own) + 1
        calls = 1 + (step or 1) * attempts  # a failed chunk call is split into single calls
        return step, float(timeout) * calls + 1.0

    def claim_hold_seconds(self) -> float | None:
        """How long the store's heartbeat may hold a claim (see :meth:`_claim_plan`).

        Returns:
            seconds, or None: held while the process lives.
        """
        return self._claim_plan()[1]

    def charge_arrival(self, row: np.ndarray, value: float, *, from_store: bool, waited: bool = False) -> None:
        """Charge one coalition evaluated outside :meth:`__call__`, as a call would.

        The asynchronous loop's :class:`~shapleig.runs.in_flight.InFlight` evaluates coalitions
        itself; this does the archive, cache and accounting for each.

        Args:
            row: the coalition, ``bool[p]``, not yet evaluated in this game.
            value: its (finite) value.
            from_store: whether the value came from the store rather than the game.
            waited: whether another process was evaluating it when it was asked for.
        """
        z = as_coalition_matrix(np.asarray(row)[None], self.n_players)
        key = coalition_keys(z)[0]
        if key in self._cache:
            raise ValueError("coalition already charged")
        if self.remaining < 1:
            raise BudgetExhaustedError(f"budget {self.budget} is spent")
        if not np.isfinite(value):
            raise ValueError(f"value must be finite, got {value!r}")
        self.n_requests += 1
        self.n_store_hits += int(from_store)
        self.n_waited += int(waited)
        self.n_game_evaluations += int(not from_store)
        self._record(key, z[0], float(value))

    def _verification_values(self, coalitions: np.ndarray) -> np.ndarray:
        """Values of stored coalitions re-evaluated for ``EvaluationStore(verify=True)``.

        Neither recorded in the store nor charged to the budget: with an evaluation timeout through
        the evaluator (a game that now hangs is abandoned), else in one call of the game.
        """
        if getattr(self.evaluator, "timeout", None) is None:
            return self.game(coalitions)
        return self.evaluator.evaluate(self.game, coalitions, max_retries=self.max_retries)

    def _evaluate_into(
        self, fresh: np.ndarray, todo: np.ndarray, values: np.ndarray, known: np.ndarray
    ) -> None:
        """Evaluate ``fresh[todo]`` with the evaluator, logging each attempt as it arrives."""

        def on_result(record: EvaluationRecord) -> None:
            i = int(todo[record.index])
            if self.store is not None:
                self.store.append(
                    fresh[i],
                    record.value,
                    seconds=record.seconds,
                    status=record.status,
                    attempt=record.attempt,
                    error=record.error,
                )
            if record.status == "ok":
                values[i] = record.value
                known[i] = True
            else:
                self.n_failed_attempts += 1

        result = self.evaluator.evaluate(
            self.game, fresh[todo].copy(), max_retries=self.max_retries, on_result=on_result
        )
        result = as_value_vector(result, todo.size)
        if not known[todo].all():  # an evaluator must report every value it returns
            raise EvaluationFailedError(
                f"evaluator {self.evaluator!r} returned without reporting "
                f"{int((~known[todo]).sum())} of {todo.size} values"
            )

    def _record(self, key: bytes, row: np.ndarray, value: float) -> None:
        self._cache[key] = value
        self._rows.append(row.copy())
        self._values.append(value)
        if self.progress_bar is not None:
            self.progress_bar.update(1)

    # -- archive ----------------------------------------------------------------------------
    def history(self) -> tuple[np.ndarray, np.ndarray]:
        """Evaluated coalitions ``bool[t, p]`` and values ``float64[t]`` in evaluation order.

        Returns:
            ``(coalitions, values)``: ``bool[t, p]`` and ``float64[t]``, in request order.
        """
        if not self._rows:
            return np.zeros((0, self.n_players), dtype=bool), np.zeros(0)
        return np.stack(self._rows), np.array(self._values, dtype=np.float64)

    def accounting(self) -> dict[str, Any]:
        """Budget report: mode, budget, distinct evaluations, requests, cache and store hits.

        Returns:
            ``{name: count}``: the budget, evaluations, requests, cache and store hits, waits, game
            evaluations and failed attempts.
        """
        return {
            "accounting": "distinct",
            "budget": self.budget,
            "n_evaluations": self.evaluations,
            "n_requests": self.n_requests,
            "n_cache_hits": self.n_cache_hits,
            "n_store_hits": self.n_store_hits,
            "n_waited": self.n_waited,
            "n_game_evaluations": self.n_game_evaluations,
            "n_failed_attempts": self.n_failed_attempts,
        }

    def __repr__(self) -> str:
        return f"BudgetedGame({self.game!r}, {self.evaluations}/{self.budget} used)"
