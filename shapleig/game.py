"""Games and the budget-charging evaluator every estimator spends through.

A game is any object with ``n_players: int`` and ``__call__(bool[m, n_players]) -> float[m]``.
:class:`BudgetedGame` is the single place where budget accounting happens: it charges each
distinct coalition once, serves repeats from its cache, refuses to go past the budget before
evaluating anything, and rejects wrong shapes and non-finite values naming the coalition. With an
evaluation store it reuses values logged by earlier (possibly killed) runs and logs every new one
as it arrives; with an executor-backed evaluator it evaluates a batch concurrently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

import numpy as np

from .coalitions import as_coalition_matrix, coalition_keys, format_coalition
from .errors import BudgetError, BudgetExhaustedError, EvaluationFailedError, GameError

if TYPE_CHECKING:  # imported lazily at run time: evaluate.py imports this module
    from .evaluate import EvaluationRecord


@runtime_checkable
class Game(Protocol):
    """A cooperative game: ``game(Z)`` maps ``bool[m, n_players]`` to ``float[m]``."""

    n_players: int

    def __call__(self, coalitions: np.ndarray) -> np.ndarray: ...


class FunctionGame:
    """Wrap ``fn: bool[m, p] -> float[m]`` as a :class:`Game` with ``n_players = p``.

    game_id: optional label of what ``fn`` computes, part of the game's identity in evaluation
             stores. The identity is built from ``fn``'s content (code, defaults, closure, the
             module globals it reads); give a ``game_id`` when the values also depend on something
             the identity cannot see (a file ``fn`` reads, a remote service).
    """

    def __init__(self, fn: Callable[[np.ndarray], Any], n_players: int, name: str | None = None,
                 game_id: str | None = None):
        if not callable(fn):
            raise GameError(f"fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.n_players = check_n_players(n_players)
        self.name = name or getattr(fn, "__name__", "function")
        self.game_id = None if game_id is None else str(game_id)

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        raw = np.asarray(self.fn(coalitions))
        # real numbers as float64; anything else (complex, text) is passed on unconverted, so the
        # evaluator refuses it naming what came back instead of numpy silently coercing it
        return raw.astype(np.float64) if raw.dtype.kind in "biuf" else raw

    def identity(self) -> dict[str, str]:
        """Identity components for evaluation stores (:mod:`shapleig.identity`): the function's
        content and the ``game_id``; the display name does not count."""
        from .identity import function_identity

        out = function_identity(self.fn)
        if self.game_id is not None:
            out["game_id"] = self.game_id
        return out

    def __repr__(self) -> str:
        extra = f", game_id={self.game_id!r}" if self.game_id is not None else ""
        return f"FunctionGame({self.name}, n_players={self.n_players}{extra})"


def check_n_players(n_players: Any, minimum: int = 2) -> int:
    """Return ``n_players`` as an int, or raise :class:`GameError` if it is not an int >= minimum."""
    if isinstance(n_players, (bool, np.bool_)) or not isinstance(n_players, (int, np.integer)):
        raise GameError(f"n_players must be an integer, got {n_players!r}")
    if n_players < minimum:
        raise GameError(f"a game needs at least {minimum} players, got n_players = {n_players}")
    return int(n_players)


def check_game(game: Any, minimum_players: int = 2) -> int:
    """Validate that ``game`` looks like a :class:`Game`; return its number of players."""
    if not callable(game) or not hasattr(game, "n_players"):
        raise GameError(
            f"a game needs an integer attribute n_players and __call__(bool[m, p]) -> float[m]; "
            f"got {type(game).__name__}"
        )
    return check_n_players(game.n_players, minimum_players)


def real_values(values: Any) -> np.ndarray:
    """A game's raw output as a float64 array; :class:`GameError` unless every entry is a real
    number (bool, int or float). Complex numbers (numpy would drop their imaginary part with only
    a warning) and strings (numpy would parse ``"1.5"``) are refused, naming what came back."""
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise GameError(f"game returned values that are not numbers: {exc}") from exc
    kind = raw.dtype.kind
    if kind == "O":
        bad = [x for x in raw.ravel().tolist() if isinstance(x, (str, bytes, complex)) or not isinstance(
            x, (int, float, np.integer, np.floating, np.bool_))]
        if bad:
            raise GameError(f"game returned values that are not numbers: {bad[0]!r} "
                            f"({type(bad[0]).__name__}); return floats")
    elif kind == "c":
        raise GameError(f"game returned complex values ({raw.dtype}); return real numbers "
                        f"(e.g. the real part or the modulus, whichever the game means)")
    elif kind not in "biuf":
        raise GameError(f"game returned values that are not numbers (dtype {raw.dtype}, e.g. "
                        f"{raw.ravel()[:1].tolist()}); return floats")
    try:
        return raw.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise GameError(f"game returned values that are not numbers: {exc}") from exc


def as_value_vector(values: Any, n_coalitions: int) -> np.ndarray:
    """A game's raw output as ``float64[n_coalitions]``; :class:`GameError` on a wrong shape or on
    entries that are not real numbers (:func:`real_values`).

    Accepts ``(m,)`` and ``(m, 1)``. Finiteness is not checked here (see :func:`check_game_values`).
    """
    v = real_values(values)
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.shape != (n_coalitions,):
        raise GameError(
            f"game returned shape {v.shape} for {n_coalitions} coalitions; expected ({n_coalitions},)"
        )
    return v


def check_game_values(values: Any, coalitions: np.ndarray) -> np.ndarray:
    """Validate a game's output for ``coalitions`` (``bool[m, p]``): ``float64[m]``, all finite."""
    v = as_value_vector(values, coalitions.shape[0])
    bad = np.flatnonzero(~np.isfinite(v))
    if bad.size:
        r = int(bad[0])
        raise GameError(
            f"game returned {v[r]} for coalition {format_coalition(coalitions[r])}"
            + (f" (and {bad.size - 1} more non-finite values)" if bad.size > 1 else "")
        )
    return v


def check_budget(budget: Any, minimum: int | None = 1, method: str | None = None) -> int:
    """Return ``budget`` as an int, or raise :class:`BudgetError` if it is not an int >= minimum.

    ``minimum=None`` checks the type only (callers that state a method's own minimum next).
    """
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, (int, np.integer)):
        raise BudgetError(f"budget must be an integer number of evaluations, got {budget!r}")
    if minimum is not None and budget < minimum:
        who = f"{method} needs" if method else "needs"
        raise BudgetError(f"budget {budget} is too small: {who} at least {minimum} evaluations")
    return int(budget)


def describe_game(game: Any) -> str:
    """Short readable name of a game for messages: ``module.Class(n_players=p)``."""
    cls = type(game)
    return f"{cls.__module__}.{cls.__qualname__}(n_players={getattr(game, 'n_players', '?')})"


def game_fingerprint(game: Any, game_id: str | None = None) -> str:
    """A stable hex digest (32 chars) identifying ``game`` across processes and runs.

    The digest of :func:`shapleig.identity.game_identity`: the game's content (its ``identity()``,
    ``fingerprint()``, ``params()`` or, failing those, its attributes, digested in full), followed
    by ``game_id`` when given. Evaluation stores use it to refuse values logged for another game.
    """
    from .identity import game_identity, identity_digest

    return identity_digest(game_identity(game, game_id))


class BudgetedGame:
    """A game seen through a budget: distinct coalitions are charged once, repeats are free.

    ``budget`` counts distinct coalitions, the empty and grand coalitions included. A call that
    needs more uncached coalitions than remain raises :class:`BudgetExhaustedError` before
    evaluating any of them. Values are validated (shape, finiteness) and cached; the archive of
    evaluated coalitions is kept in request order (``history()``), whatever order concurrent
    results arrive in, so a run is reproducible.

    store:       optional ``EvaluationStore`` (``shapleig.store``), or a path to open one at. Uncached coalitions are first
                 looked up there: stored values are reused without calling the game but still
                 charged to the budget. Every new evaluation (and every failed attempt) is
                 appended and committed as it arrives, before the call returns. A store written
                 for a different game is refused (``StoreMismatchError``, naming what differs).
                 A coalition another process is evaluating on the same store is waited for, not
                 evaluated again (it counts as a store hit; ``n_waited`` in the accounting).
    evaluator:   how uncached, unstored coalitions are evaluated (``shapleig.evaluate``). Default:
                 ``SerialEvaluator()`` in-process; with a store, ``SerialEvaluator(chunk_size=1)``
                 so that each value is committed as soon as it is computed.
                 ``ExecutorEvaluator(executor)`` evaluates concurrently.
    max_retries: a coalition whose evaluation raises or returns NaN/inf is retried up to this many
                 times; then the call raises ``EvaluationFailedError`` naming it
                 (``NonFiniteValueError``, also a ``GameError``, for non-finite values). Values
                 that did arrive are kept (charged, cached, stored). An evaluator built with its
                 own ``max_retries`` overrides this one (that is how ``DesignLoop`` and
                 ``estimate``, which take an ``evaluator=``, configure retries).
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
            from .store import open_store  # lazy: store.py imports this module

            store = open_store(store)
        self.store = store
        self.fingerprint: str | None = store.bind(game) if store is not None else None
        if evaluator is None:
            from .evaluate import SerialEvaluator  # lazy: evaluate.py imports this module

            evaluator = SerialEvaluator(chunk_size=1 if store is not None else None)
        self.evaluator = evaluator
        self._cache: dict[bytes, float] = {}
        self._rows: list[np.ndarray] = []
        self._values: list[float] = []
        self.n_requests = 0  # coalitions asked for, repeats included
        self.n_cache_hits = 0
        self.n_store_hits = 0  # charged coalitions whose value came from the store
        self.n_waited = 0  # of those, coalitions this run waited for while another process evaluated them
        self.n_game_evaluations = 0  # charged coalitions whose value came from the game
        self.n_failed_attempts = 0  # attempts that raised or returned NaN/inf

    # -- accounting -------------------------------------------------------------------------
    @property
    def evaluations(self) -> int:
        """Distinct coalitions charged so far."""
        return len(self._values)

    @property
    def remaining(self) -> int:
        return self.budget - self.evaluations

    def n_uncached(self, coalitions: np.ndarray) -> int:
        """How many distinct coalitions of ``coalitions`` would be charged by a call."""
        z = as_coalition_matrix(coalitions, self.n_players)
        return len({k for k in coalition_keys(z) if k not in self._cache})

    def can_afford(self, coalitions: np.ndarray) -> bool:
        return self.n_uncached(coalitions) <= self.remaining

    def is_cached(self, coalitions: np.ndarray) -> np.ndarray:
        """``bool[m]``: which rows are already evaluated."""
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
        """How many coalitions to claim at a time (None: all; a serial evaluator starts one chunk
        at a time, so only that chunk is claimed) and for how long the heartbeat may hold each
        claim (None: while this process lives; with an evaluation timeout, the longest the
        chunk's attempts can take, so a claim never outlives its abandoned evaluation)."""
        from .evaluate import SerialEvaluator  # lazy: evaluate.py imports this module

        step = self.evaluator.chunk_size if isinstance(self.evaluator, SerialEvaluator) else None
        timeout = getattr(self.evaluator, "timeout", None)
        if timeout is None:
            return step, None
        own = getattr(self.evaluator, "max_retries", None)
        attempts = (self.max_retries if own is None else own) + 1
        calls = 1 + (step or 1) * attempts  # a failed chunk call is split into single calls
        return step, float(timeout) * calls + 1.0

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

    # -- archive ----------------------------------------------------------------------------
    def history(self) -> tuple[np.ndarray, np.ndarray]:
        """Evaluated coalitions ``bool[t, p]`` and values ``float64[t]`` in evaluation order."""
        if not self._rows:
            return np.zeros((0, self.n_players), dtype=bool), np.zeros(0)
        return np.stack(self._rows), np.array(self._values, dtype=np.float64)

    def accounting(self) -> dict[str, Any]:
        """Budget report: mode, budget, distinct evaluations, requests, cache and store hits."""
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
