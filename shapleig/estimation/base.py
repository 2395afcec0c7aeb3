"""The ``Estimator`` protocol and ``BaseEstimator``, the shared front of every method."""

from __future__ import annotations

import abc
import inspect
import time
import warnings
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from shapleig.errors import BudgetError, GameError
from shapleig.estimation.enumeration import (
    BudgetCoversGameWarning,
    covers_game,
    enumerate_game,
    enumeration_message,
)
from shapleig.estimation.result import ShapleyEstimate
from shapleig.estimation.trace_record import start_trace
from shapleig.games.game import Game, check_budget, check_game
from shapleig.games.numeric import check_value_range
from shapleig.runs.budget import BudgetedGame
from shapleig.runs.evaluators import with_timeout
from shapleig.runs.timeout import check_timeout
from shapleig.seeding import UNSET, SeedLike, resolve_seed

# a progress bar appears only once a run has lasted this long (short runs stay quiet)
PROGRESS_DELAY_S = 2.0


def evaluation_progress_bar(budgeted: BudgetedGame, n_players: int, budget: int, desc: str) -> Any:
    """A tqdm bar over the evaluations a run can make (never more than the 2^p coalitions).

    The bar is attached to ``budgeted`` (which advances it per evaluation); it appears once the run
    has lasted ``PROGRESS_DELAY_S`` seconds. The caller detaches (``budgeted.progress_bar = None``)
    and closes it.

    Args:
        budgeted: the run's budgeted game; it advances the bar once per new evaluation.
        n_players: the number of players p (the bar's total is at most 2^p).
        budget: the run's budget.
        desc: the bar's label (the method's name).

    Returns:
        the ``tqdm`` bar, already attached to ``budgeted``.
    """
    from tqdm.auto import tqdm

    total = min(budget, 1 << n_players) if n_players < 63 else budget
    bar = tqdm(total=total, desc=desc, unit="eval", delay=PROGRESS_DELAY_S, leave=False)
    budgeted.progress_bar = bar
    return bar


@runtime_checkable
class Estimator(Protocol):
    """``estimate(game, budget, *, seed=0) -> ShapleyEstimate``; budget = distinct coalitions."""

    def estimate(self, game: Game, budget: int, *, seed: SeedLike = 0, **kwargs: Any) -> ShapleyEstimate:
        """Estimate the values of ``game`` with at most ``budget`` distinct coalition evaluations.

        Args:
            game: the game (a :class:`~shapleig.games.game.Game`).
            budget: the number of distinct coalitions the method may evaluate.
            seed: the run's seed (a non-negative int, None or a numpy Generator).
            **kwargs: method-specific run options (store, evaluator, progress, ...).

        Returns:
            the estimate, with the evaluations spent and the seed used in ``info["seed"]``.
        """
        ...


class BaseEstimator(abc.ABC):
    """Shared front of every estimator: validation, the budgeted game, result bookkeeping.

    Subclasses set ``name``, may override :meth:`min_budget`, ``min_players`` and ``max_players``
    (None: no limit; a game with more players is refused before anything is evaluated), and implement
    :meth:`_estimate`, which spends budget only through the :class:`BudgetedGame` it receives.
    Constructor arguments are options stored under their own names, so :meth:`get_params` /
    :meth:`set_params` (and ``sklearn.base.clone``) work; the number of players is never one of
    them (it comes from the game).
    """

    name: ClassVar[str] = "estimator"
    min_players: ClassVar[int] = 2
    max_players: ClassVar[int | None] = None

    def __new__(cls, *args: Any, **kwargs: Any) -> "BaseEstimator":
        """A new estimator; an integer first argument (shapiq's number of players) raises ``TypeError``."""
        # shapiq's approximators take the number of players first (KernelSHAP(n=8)); here it comes
        # from the game, so an integer first argument is that habit, not an option value.
        if args and isinstance(args[0], (int, np.integer)) and not isinstance(args[0], (bool, np.bool_)):
            raise TypeError(
                f"{cls.__name__}({args[0]!r}, ...): the number of players is not a constructor "
                f"argument here (shapiq's approximators take n first); it is read from the game at "
                f"estimate(game, budget). Pass options by keyword, e.g. {cls.__name__}(); inside "
                f"shapiq use shapleig.interop.shapiq_bridge.ShapiqApproximator({cls.__name__}(), n={args[0]!r})"
            )
        cls._check_keywords(kwargs)
        return super().__new__(cls)

    @classmethod
    def _check_keywords(cls, keywords: dict[str, Any]) -> None:
        """Raise a clearer error than Python's for a keyword the constructor does not take (a hook; none here).

        Args:
            keywords: the keyword arguments of the constructor call.
        """

    @classmethod
    def _param_names(cls) -> list[str]:
        """The constructor's keyword names, in order (the estimator's parameters)."""
        skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        params = inspect.signature(cls.__init__).parameters.values()
        return [p.name for p in params if p.name != "self" and p.kind not in skip]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor options, as scikit-learn's ``get_params`` (``deep`` has no effect).

        Args:
            deep: accepted for scikit-learn's API; there are no nested estimators.

        Returns:
            ``{name: value}`` of every constructor option.
        """
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> "BaseEstimator":
        """Change options (validated as in the constructor); unknown names raise ``ValueError``.

        Returns:
            the estimator itself (``set_params`` chains, as in scikit-learn).
        """
        names = self._param_names()
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no parameter(s) {unknown}; its parameters: {names}")
        self.__init__(**{**self.get_params(deep=False), **params})
        return self

    def min_budget(self, n_players: int) -> int:
        """Smallest budget the method accepts for ``n_players`` (its fixed phase).

        Args:
            n_players: the number of players of the game.

        Returns:
            the smallest budget, 2 here (the empty and grand coalitions); subclasses with a fixed phase say more.
        """
        return 2

    def require_budget(self, n_players: int, budget: int) -> None:
        """Refuse a budget below :meth:`min_budget` (a budget covering all 2^p coalitions always does).

        Args:
            n_players: p.
            budget: the requested number of distinct coalitions.

        Raises:
            BudgetError: naming the method, its minimum for p and why.
        """
        minimum = self.min_budget(n_players)
        if budget < minimum and not covers_game(n_players, budget):
            raise BudgetError(
                f"{self.name} needs budget >= {minimum} for p = {n_players} "
                f"({self.min_budget_reason(n_players)}); got budget {budget}"
            )

    def min_budget_reason(self, n_players: int) -> str:
        """Why :meth:`min_budget` is what it is (one phrase, for the error message).

        Args:
            n_players: the number of players of the game.

        Returns:
            a short phrase such as "its fixed phase", quoted in the error message.
        """
        return "its fixed phase"

    def max_players_reason(self, n_players: int) -> str:
        """Why games above ``max_players`` are refused (one phrase, for the error message).

        Args:
            n_players: the number of players of the game.

        Returns:
            the phrase (by default :meth:`min_budget_reason`'s: the phase that grows with p).
        """
        return self.min_budget_reason(n_players)

    # complexity, argument count over budget: the shared public estimate() signature; one argument check per branch
    def estimate(  # noqa: C901, PLR0913
        self,
        game: Game,
        budget: int,
        *,
        seed: SeedLike = UNSET,
        store: Any = None,
        evaluator: Any = None,
        max_retries: int = 1,
        timeout: float | None = None,
        random_state: SeedLike = UNSET,
        progress: bool = False,
    ) -> ShapleyEstimate:
        """Estimate the Shapley values of ``game`` with at most ``budget`` distinct evaluations.

        ``seed`` (default 0): a non-negative int, None (fresh entropy) or a numpy Generator;
        ``random_state`` is its scikit-learn/shapiq alias (see :func:`shapleig.seeding.resolve_seed`).
        The integer seed used is recorded in ``info["seed"]``, so any run can be repeated.
        ``store`` (an ``EvaluationStore``) reuses and records values so a killed run resumes;
        ``evaluator`` runs new coalitions (e.g. on an executor); a coalition whose evaluation raises
        or returns NaN/inf is retried ``max_retries`` times before the run stops naming it.
        ``timeout`` (seconds per game call): a call that takes longer is abandoned (its worker
        process killed, :mod:`shapleig.runs.timeout`) and counts as a failed attempt.
        ``progress=True`` shows a tqdm bar of the distinct evaluations (up to ``min(budget, 2^p)``)
        once the run has lasted ``PROGRESS_DELAY_S`` seconds.

        When the budget covers the game (``budget >= 2^p``, p <= 20) every method evaluates all
        coalitions instead (through the same budget, store and evaluator) and returns the exact
        values with std and covariance 0: ``info["exact"] = True`` and ``info["message"]`` says so;
        a budget above ``2^p`` also raises a :class:`BudgetCoversGameWarning` (nothing is changed
        silently: ``result.budget`` stays the budget asked for).

        Args:
            game: the game: a :class:`~shapleig.games.game.Game`, or a :class:`BudgetedGame` whose remaining evaluations
                cover ``budget``.
            budget: the number of distinct coalitions the run may evaluate (a positive int).
            seed: a non-negative int, None (fresh entropy) or a numpy Generator.
            store: an :class:`~shapleig.runs.store.EvaluationStore` (or a path) that reuses and records values; None: no
                store.
            evaluator: what evaluates new coalitions (e.g. :class:`~shapleig.runs.evaluators.ExecutorEvaluator`); None:
                in process.
            max_retries: how many times a failing coalition (an exception, NaN or inf) is retried before the run stops.
            timeout: seconds allowed per game call; None: no limit.
            random_state: scikit-learn's and shapiq's alias of ``seed``.
            progress: show a tqdm bar of the distinct evaluations.

        Returns:
            the :class:`ShapleyEstimate`, with ``info["seed"]`` the integer seed used and ``evaluations`` the distinct
            coalitions spent.
        """
        p = check_game(game, self.min_players)
        if self.max_players is not None and p > self.max_players:
            raise GameError(f"{self.name} handles at most {self.max_players} players "
                            f"({self.max_players_reason(p)}); the game has p = {p}")
        budget = check_budget(budget, minimum=None)  # the method's own minimum is stated below
        seed = resolve_seed(seed, random_state)
        exact = covers_game(p, budget)
        self.require_budget(p, budget)
        owned = None
        if isinstance(game, BudgetedGame):
            if check_timeout(timeout) is not None:
                raise ValueError("timeout applies to a game estimate() wraps itself; for a BudgetedGame "
                                 "give its evaluator the timeout (SerialEvaluator(timeout=...))")
            budgeted = game
            if budgeted.remaining < budget:
                raise BudgetError(
                    f"the BudgetedGame passed in has {budgeted.remaining} evaluations left, "
                    f"fewer than budget {budget}"
                )
        else:
            configured = with_timeout(evaluator, timeout, store is not None)
            # an evaluator configured here for the timeout is this run's: its worker process ends with it
            owned = configured if configured is not evaluator else None
            budgeted = BudgetedGame(game, budget, store=store, evaluator=configured, max_retries=max_retries)
        message = enumeration_message(p, budget) if exact else ""
        if exact and budget > (1 << p):
            warnings.warn(message, BudgetCoversGameWarning, stacklevel=2)
        # the anytime trace goes to the store as the run goes (shapleig.estimation.trace_record); started
        # before anything of the caller's BudgetedGame is changed, so a store that cannot record leaves it as it was
        method, params = self.trace_identity()
        try:
            recorder = start_trace(budgeted, method=method, seed=seed, budget=budget, params=params,
                                   index=getattr(self, "index", "SV"), max_order=getattr(self, "max_order", None))
        except BaseException:
            if owned is not None and callable(getattr(owned, "close", None)):
                owned.close()
            raise
        start = time.perf_counter()
        # cap a caller's BudgetedGame at this call's budget for the duration of the run
        own_cap = budgeted.budget
        budgeted.budget = budgeted.evaluations + budget
        bar = self._progress_bar(budgeted, p, budget) if progress else None
        budgeted.trace_recorder = recorder
        try:
            result = (enumerate_game(budgeted, method=self.name, index=getattr(self, "index", "SV"),
                                     max_order=getattr(self, "max_order", None))
                      if exact else self._estimate(budgeted, seed))
        finally:
            budgeted.budget = own_cap
            if owned is not None and callable(getattr(owned, "close", None)):
                owned.close()
            if bar is not None:
                budgeted.progress_bar = None
                bar.close()
            budgeted.trace_recorder = None
        if recorder is not None:  # what the method did not record as it went (all of it, for most baselines)
            recorder.sync(result.trace, result.trace_std)
            recorder.end(budgeted.evaluations)
            result.info["trace_run"] = recorder.run_id
        if exact:
            result.info["message"] = message
        check_value_range(budgeted.history()[1], self.name)  # rounding noise is an error, not a result
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

    def trace_identity(self) -> tuple[str, dict[str, Any]]:
        """The method's name and the options that, with the seed and budget, identify a run in a store's trace.

        A run resumed with the same identity continues the trace the killed run wrote
        (:mod:`shapleig.estimation.trace_record`).

        Returns:
            ``(name, options)``: :attr:`name` and :meth:`get_params` here.
        """
        return self.name, self.get_params()

    def _progress_bar(self, budgeted: BudgetedGame, p: int, budget: int) -> Any:
        """A tqdm bar over the evaluations this run can make (:func:`evaluation_progress_bar`)."""
        return evaluation_progress_bar(budgeted, p, budget, self.name)

    @abc.abstractmethod
    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        """Run the method on ``game`` (already budgeted); return values and optional extras."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"
