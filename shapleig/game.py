"""Games and the budget-charging evaluator every estimator spends through.

A game is any object with ``n_players: int`` and ``__call__(bool[m, n_players]) -> float[m]``.
:class:`BudgetedGame` is the single place where budget accounting happens: it charges each
distinct coalition once, serves repeats from its cache, refuses to go past the budget before
evaluating anything, and rejects wrong shapes and non-finite values naming the coalition.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from .coalitions import as_coalition_matrix, coalition_keys, format_coalition
from .errors import BudgetError, BudgetExhaustedError, GameError


@runtime_checkable
class Game(Protocol):
    """A cooperative game: ``game(Z)`` maps ``bool[m, n_players]`` to ``float[m]``."""

    n_players: int

    def __call__(self, coalitions: np.ndarray) -> np.ndarray: ...


class FunctionGame:
    """Wrap ``fn: bool[m, p] -> float[m]`` as a :class:`Game` with ``n_players = p``."""

    def __init__(self, fn: Callable[[np.ndarray], Any], n_players: int, name: str | None = None):
        if not callable(fn):
            raise GameError(f"fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.n_players = check_n_players(n_players)
        self.name = name or getattr(fn, "__name__", "function")

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        return np.asarray(self.fn(coalitions), dtype=np.float64)

    def __repr__(self) -> str:
        return f"FunctionGame({self.name}, n_players={self.n_players})"


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


def check_game_values(values: Any, coalitions: np.ndarray) -> np.ndarray:
    """Validate a game's output for ``coalitions`` (``bool[m, p]``): ``float64[m]``, all finite."""
    m = coalitions.shape[0]
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise GameError(f"game returned values that are not numbers: {exc}") from exc
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.shape != (m,):
        raise GameError(f"game returned shape {v.shape} for {m} coalitions; expected ({m},)")
    bad = np.flatnonzero(~np.isfinite(v))
    if bad.size:
        r = int(bad[0])
        raise GameError(
            f"game returned {v[r]} for coalition {format_coalition(coalitions[r])}"
            + (f" (and {bad.size - 1} more non-finite values)" if bad.size > 1 else "")
        )
    return v


def check_budget(budget: Any, minimum: int = 1, method: str | None = None) -> int:
    """Return ``budget`` as an int, or raise :class:`BudgetError` if it is not an int >= minimum."""
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, (int, np.integer)):
        raise BudgetError(f"budget must be an integer number of evaluations, got {budget!r}")
    if budget < minimum:
        who = f"{method} needs" if method else "needs"
        raise BudgetError(f"budget {budget} is too small: {who} at least {minimum} evaluations")
    return int(budget)


class BudgetedGame:
    """A game seen through a budget: distinct coalitions are charged once, repeats are free.

    ``budget`` counts distinct coalitions, the empty and grand coalitions included. A call that
    needs more uncached coalitions than remain raises :class:`BudgetExhaustedError` before
    evaluating any of them. Values are validated (shape, finiteness) and cached; the archive of
    evaluated coalitions is kept in evaluation order (``history()``).

    ``store`` (an ``EvaluationStore``) and ``evaluator`` (see ``shapleig.evaluate``) are optional:
    stored values are reused without calling the game but still charged to the budget.
    """

    def __init__(self, game: Game, budget: int, *, store: Any = None, evaluator: Any = None):
        self.game = game
        self.n_players = check_game(game)
        self.budget = check_budget(budget)
        self.store = store
        self.evaluator = evaluator
        self._cache: dict[bytes, float] = {}
        self._rows: list[np.ndarray] = []
        self._values: list[float] = []
        self.n_requests = 0  # coalitions asked for, repeats included
        self.n_cache_hits = 0

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
            fresh = z[idx]
            values = self._evaluate_new(fresh)
            for k, row, val in zip(new_rows.keys(), fresh, values):
                self._record(k, row, float(val))
        return np.array([self._cache[k] for k in keys], dtype=np.float64)

    def _evaluate_new(self, coalitions: np.ndarray) -> np.ndarray:
        """Evaluate coalitions not in the cache (``bool[k, p]``) and validate the values."""
        return check_game_values(self.game(coalitions.copy()), coalitions)

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
        """Budget report: mode, budget, distinct evaluations, requests and cache hits."""
        return {
            "accounting": "distinct",
            "budget": self.budget,
            "n_evaluations": self.evaluations,
            "n_requests": self.n_requests,
            "n_cache_hits": self.n_cache_hits,
        }

    def __repr__(self) -> str:
        return f"BudgetedGame({self.game!r}, {self.evaluations}/{self.budget} used)"
