"""The result type every method returns and the ``Estimator`` protocol every method implements."""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from .errors import BudgetError
from .game import BudgetedGame, Game, check_budget, check_game


@dataclass
class ShapleyEstimate:
    """Estimated Shapley values of a ``p``-player game.

    values:      float64[p], the estimate (posterior mean for ShaplEIG), in the game's units.
    evaluations: distinct coalitions evaluated (empty and grand included), <= budget.
    budget:      the budget the method was given.
    std:         float64[p] posterior standard deviations, or None for methods without one.
    covariance:  float64[p, p] posterior covariance, or None.
    trace:       [(evaluations, values float64[p]), ...] after every step: an anytime curve.
    trace_std:   [(evaluations, std float64[p]), ...] alongside ``trace`` (methods with a posterior).
    baseline:    v(empty) when it was evaluated, else None.
    method:      registry name of the method.
    info:        method-specific diagnostics (accounting mode, draws, cache hits, timings).
    """

    values: np.ndarray
    evaluations: int = 0
    budget: int = 0
    std: np.ndarray | None = None
    covariance: np.ndarray | None = None
    trace: list[tuple[int, np.ndarray]] = field(default_factory=list)
    trace_std: list[tuple[int, np.ndarray]] = field(default_factory=list)
    baseline: float | None = None
    method: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_players(self) -> int:
        return int(self.values.shape[0])

    def values_at(self, evaluations: int) -> np.ndarray | None:
        """The latest trace entry with at most ``evaluations`` evaluations (None if none)."""
        return _latest(self.trace, evaluations)

    def std_at(self, evaluations: int) -> np.ndarray | None:
        """The posterior std of the latest step with at most ``evaluations`` evaluations (or None)."""
        return _latest(self.trace_std, evaluations)

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed credible interval per player: ``values -/+ z * std``, two float64[p].

        ``z`` is the standard normal quantile of ``(1 + level) / 2``. Raises ``ValueError`` for
        methods without a posterior std, or a level outside (0, 1).
        """
        if self.std is None:
            raise ValueError(f"method {self.method or '?'} reports no posterior std, so it has no interval")
        if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not 0 < level < 1:
            raise ValueError(f"level must be a probability in (0, 1), got {level!r}")
        from scipy.stats import norm

        half = float(norm.ppf(0.5 + 0.5 * float(level))) * np.asarray(self.std, dtype=np.float64)
        return self.values - half, self.values + half


def _latest(trace: list[tuple[int, np.ndarray]], evaluations: int) -> np.ndarray | None:
    best = None
    for n, vals in trace:
        if n <= evaluations:
            best = vals
    return best


@runtime_checkable
class Estimator(Protocol):
    """``estimate(game, budget, *, seed=0) -> ShapleyEstimate``; budget = distinct coalitions."""

    def estimate(self, game: Game, budget: int, *, seed: int = 0, **kwargs: Any) -> ShapleyEstimate: ...


class BaseEstimator(abc.ABC):
    """Shared front of every estimator: validation, the budgeted game, result bookkeeping.

    Subclasses set ``name``, may override :meth:`min_budget` and ``min_players``, and implement
    :meth:`_estimate`, which spends budget only through the :class:`BudgetedGame` it receives.
    """

    name: ClassVar[str] = "estimator"
    min_players: ClassVar[int] = 2

    def min_budget(self, n_players: int) -> int:
        """Smallest budget the method accepts for ``n_players`` (its fixed phase)."""
        return 2

    def min_budget_reason(self, n_players: int) -> str:
        """Why :meth:`min_budget` is what it is (one phrase, for the error message)."""
        return "its fixed phase"

    def estimate(
        self,
        game: Game,
        budget: int,
        *,
        seed: int = 0,
        store: Any = None,
        evaluator: Any = None,
        max_retries: int = 1,
    ) -> ShapleyEstimate:
        """Estimate the Shapley values of ``game`` with at most ``budget`` distinct evaluations.

        ``store`` (an ``EvaluationStore``) reuses and records values so a killed run resumes;
        ``evaluator`` runs new coalitions (e.g. on an executor); a coalition whose evaluation raises
        or returns NaN/inf is retried ``max_retries`` times before the run stops naming it.
        """
        p = check_game(game, self.min_players)
        budget = check_budget(budget, minimum=None)  # the method's own minimum is stated below
        minimum = self.min_budget(p)
        if budget < minimum:
            raise BudgetError(
                f"{self.name} needs budget >= {minimum} for p = {p} "
                f"({self.min_budget_reason(p)}); got budget {budget}"
            )
        if isinstance(game, BudgetedGame):
            budgeted = game
            if budgeted.remaining < budget:
                raise BudgetError(
                    f"the BudgetedGame passed in has {budgeted.remaining} evaluations left, "
                    f"fewer than budget {budget}"
                )
        else:
            budgeted = BudgetedGame(game, budget, store=store, evaluator=evaluator, max_retries=max_retries)
        start = time.perf_counter()
        # cap a caller's BudgetedGame at this call's budget for the duration of the run
        own_cap = budgeted.budget
        budgeted.budget = budgeted.evaluations + budget
        try:
            result = self._estimate(budgeted, int(seed))
        finally:
            budgeted.budget = own_cap
        result.evaluations = budgeted.evaluations
        result.budget = budget
        result.method = result.method or self.name
        for key, value in budgeted.accounting().items():
            # a method may report its own rule (e.g. the LSS paper's "draws" accounting)
            result.info.setdefault(key, value)
        result.info.setdefault("wall_s", time.perf_counter() - start)
        if result.baseline is None:
            empty = np.zeros((1, p), dtype=bool)
            if budgeted.is_cached(empty)[0]:
                result.baseline = float(budgeted(empty)[0])
        return result

    @abc.abstractmethod
    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        """Run the method on ``game`` (already budgeted); return values and optional extras."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"
