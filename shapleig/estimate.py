"""The result type every method returns and the ``Estimator`` protocol every method implements."""

from __future__ import annotations

import abc
import inspect
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from .errors import BudgetError
from .game import BudgetedGame, Game, check_budget, check_game
from .seeding import UNSET, SeedLike, resolve_seed


@dataclass
class ShapleyEstimate:
    """Estimated Shapley values (or another index) of a ``p``-player game.

    values:      float64[d], the estimate (posterior mean for ShaplEIG), in the game's units, aligned
                 with ``terms`` (d = p for the Shapley and Banzhaf values).
    evaluations: distinct coalitions evaluated (empty and grand included), <= budget.
    budget:      the budget the method was given.
    std:         float64[p] posterior standard deviations, or None for methods without one.
    covariance:  float64[p, p] posterior covariance, or None.
    trace:       [(evaluations, values float64[p]), ...] after every step: an anytime curve.
    trace_std:   [(evaluations, std float64[p]), ...] alongside ``trace`` (methods with a posterior).
    baseline:    v(empty) when it was evaluated, else None (also ``baseline_value``, shapiq's name).
    method:      registry name of the method.
    info:        method-specific diagnostics (accounting mode, draws, cache hits, timings) and
                 ``seed``, the integer seed the run used (pass it back as ``seed`` to repeat it).
    index:       the index estimated: "SV" (default), "BV", "k-SII", "SII", "STII" or "FSII".
    terms:       the player tuples ``values``, ``std``, ``covariance`` and ``interval()`` refer to:
                 the p singletons, then (order-2 indices) the pairs in lexicographic order.
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
    index: str = "SV"
    terms: list[tuple[int, ...]] | None = None

    def __post_init__(self) -> None:
        if self.terms is None and self.values is not None:
            self.terms = [(i,) for i in range(int(np.asarray(self.values).shape[0]))]

    @property
    def n_players(self) -> int:
        if self.terms is not None:
            return sum(len(t) == 1 for t in self.terms)
        return int(self.values.shape[0])

    @property
    def max_order(self) -> int:
        """The largest term size (1 for the Shapley and Banzhaf values, 2 for pairwise interactions)."""
        return max((len(t) for t in self.terms), default=1) if self.terms else 1

    @property
    def baseline_value(self) -> float | None:
        """v(empty), the value the Shapley values are added to (shapiq's name for ``baseline``)."""
        return self.baseline

    def to_interaction_values(self) -> Any:
        """This estimate as a shapiq ``InteractionValues`` (its ``index``; max_order 1, or 2 for interactions).

        The empty interaction holds ``baseline_value`` (v(empty)) as in shapiq's own approximators,
        so shapiq's force, waterfall and bar plots work. Needs the ``shapleig[shapiq]`` extra.
        """
        from .shapiq_bridge import to_interaction_values

        return to_interaction_values(self)

    def values_at(self, evaluations: int) -> np.ndarray | None:
        """The latest trace entry with at most ``evaluations`` evaluations (None if none)."""
        return _latest(self.trace, evaluations)

    def std_at(self, evaluations: int) -> np.ndarray | None:
        """The posterior std of the latest step with at most ``evaluations`` evaluations (or None)."""
        return _latest(self.trace_std, evaluations)

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed credible interval per term: ``values -/+ z * std``, two float64[d].

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

    def estimate(self, game: Game, budget: int, *, seed: SeedLike = 0, **kwargs: Any) -> ShapleyEstimate: ...


class BaseEstimator(abc.ABC):
    """Shared front of every estimator: validation, the budgeted game, result bookkeeping.

    Subclasses set ``name``, may override :meth:`min_budget` and ``min_players``, and implement
    :meth:`_estimate`, which spends budget only through the :class:`BudgetedGame` it receives.
    Constructor arguments are options stored under their own names, so :meth:`get_params` /
    :meth:`set_params` (and ``sklearn.base.clone``) work; the number of players is never one of
    them (it comes from the game).
    """

    name: ClassVar[str] = "estimator"
    min_players: ClassVar[int] = 2

    def __new__(cls, *args: Any, **kwargs: Any) -> "BaseEstimator":
        # shapiq's approximators take the number of players first (KernelSHAP(n=8)); here it comes
        # from the game, so an integer first argument is that habit, not an option value.
        if args and isinstance(args[0], (int, np.integer)) and not isinstance(args[0], (bool, np.bool_)):
            raise TypeError(
                f"{cls.__name__}({args[0]!r}, ...): the number of players is not a constructor "
                f"argument here (shapiq's approximators take n first); it is read from the game at "
                f"estimate(game, budget). Pass options by keyword, e.g. {cls.__name__}(); inside "
                f"shapiq use shapleig.shapiq_bridge.ShapiqApproximator({cls.__name__}(), n={args[0]!r})"
            )
        return super().__new__(cls)

    @classmethod
    def _param_names(cls) -> list[str]:
        """The constructor's keyword names, in order (the estimator's parameters)."""
        skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        params = inspect.signature(cls.__init__).parameters.values()
        return [p.name for p in params if p.name != "self" and p.kind not in skip]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor options, as scikit-learn's ``get_params`` (``deep`` has no effect)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> "BaseEstimator":
        """Change options (validated as in the constructor); unknown names raise ``ValueError``."""
        names = self._param_names()
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no parameter(s) {unknown}; its parameters: {names}")
        self.__init__(**{**self.get_params(), **params})
        return self

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
        seed: SeedLike = UNSET,
        store: Any = None,
        evaluator: Any = None,
        max_retries: int = 1,
        random_state: SeedLike = UNSET,
    ) -> ShapleyEstimate:
        """Estimate the Shapley values of ``game`` with at most ``budget`` distinct evaluations.

        ``seed`` (default 0): a non-negative int, None (fresh entropy) or a numpy Generator;
        ``random_state`` is its scikit-learn/shapiq alias (see :func:`shapleig.seeding.resolve_seed`).
        The integer seed used is recorded in ``info["seed"]``, so any run can be repeated.
        ``store`` (an ``EvaluationStore``) reuses and records values so a killed run resumes;
        ``evaluator`` runs new coalitions (e.g. on an executor); a coalition whose evaluation raises
        or returns NaN/inf is retried ``max_retries`` times before the run stops naming it.
        """
        p = check_game(game, self.min_players)
        budget = check_budget(budget, minimum=None)  # the method's own minimum is stated below
        seed = resolve_seed(seed, random_state)
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
            result = self._estimate(budgeted, seed)
        finally:
            budgeted.budget = own_cap
        result.evaluations = budgeted.evaluations
        result.budget = budget
        result.method = result.method or self.name
        for key, value in budgeted.accounting().items():
            # a method may report its own rule (e.g. the LSS paper's "draws" accounting)
            result.info.setdefault(key, value)
        result.info.setdefault("wall_s", time.perf_counter() - start)
        result.info.setdefault("seed", seed)
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
