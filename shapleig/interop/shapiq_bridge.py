"""The bridge to shapiq (optional extra ``shapleig[shapiq]``; shapiq needs Python >= 3.12).

- :func:`to_interaction_values` (also ``ShapleyEstimate.to_interaction_values()``): a result as
  shapiq ``InteractionValues`` (index "SV", order 1, the empty interaction = v(empty)), so
  shapiq's force, waterfall and bar plots draw it; :func:`from_interaction_values` goes back.
  Uncertainty: shapiq's ``InteractionValues`` has no field for it, so the posterior std and
  covariance ride along as the attributes ``shapleig_std`` (float64[p] or None) and
  ``shapleig_covariance`` (float64[p, p] or None) of the returned object; ``copy.copy`` /
  ``deepcopy`` keep them, shapiq's arithmetic (``+``, ``*``, ``get_n_order``) makes new objects
  without them. :func:`std_interaction_values` gives the std as a second ``InteractionValues``
  (entry ``()`` = 0) for shapiq's own plots and tools. :func:`from_interaction_values` restores
  std and covariance from the attributes (or from ``std=``).
- :class:`ShapiqApproximator`: any estimator of this project as a shapiq ``Approximator``, e.g.
  ``shapiq.TabularExplainer(model, X, approximator=ShapiqApproximator(ShaplEIG(), n=X.shape[1]))``.
- The other direction, shapiq's approximators as methods here (``shapiq:PolySHAP``), is
  :class:`shapleig_baselines.shapiq_methods.ShapiqMethod`.

shapiq games need no adapter: they have ``n_players`` and map ``bool[m, p]`` coalition matrices to
values, so every estimator accepts them as games as they are.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Callable

import numpy as np

# isort: off
# first the guard: without shapiq >= 1.8 it raises the ImportError that names the extra
from shapleig.estimation.shapiq_values import (
    COVARIANCE_ATTRIBUTE,
    MISSING_EXTRA,
    SHAPIQ_VERSION,
    STD_ATTRIBUTE,
    InteractionValues,
    std_interaction_values,
    to_interaction_values,
)
from shapiq.approximator.base import Approximator
# isort: on

from shapleig.estimation.efficiency import condition_on_total
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.game import FunctionGame, check_game
from shapleig.games.indices import INDICES, ORDER_ONE
from shapleig.runs.budget import BudgetedGame

# the indices estimated with their pairs (order 2); the others are read as singletons
PAIR_INDICES = tuple(i for i in INDICES if i not in ORDER_ONE)


def from_interaction_values(iv: InteractionValues, method: str = "", *, std: Any = None) -> ShapleyEstimate:
    """The order-1 (and, at max_order 2, order-2) entries of shapiq ``InteractionValues`` as a
    :class:`ShapleyEstimate` with ``terms`` and ``index`` set.

    ``values[k] = iv[terms[k]]``, ``baseline = iv.baseline_value``, ``evaluations`` from
    ``iv.estimation_budget`` (0 when shapiq did not record it). ``std`` / ``covariance`` come from
    ``std=`` (float[p] or an ``InteractionValues`` of stds) or else from the ``shapleig_std`` /
    ``shapleig_covariance`` attributes :func:`to_interaction_values` sets (None without them).
    """
    p = int(iv.n_players)
    terms: list[tuple[int, ...]] = [(i,) for i in range(p)]
    # pairs only for the interaction indices: a Shapley-value approximator may return order-2 entries
    # of its own surrogate (kADD-SHAP), which are not part of the estimate
    if int(iv.max_order) >= 2 and str(iv.index) in PAIR_INDICES:
        terms += list(combinations(range(p), 2))
    values = np.array([float(iv[T]) for T in terms], dtype=np.float64)
    covariance = getattr(iv, COVARIANCE_ATTRIBUTE, None)
    if std is None:
        std = getattr(iv, STD_ATTRIBUTE, None)
    elif isinstance(std, InteractionValues):
        std = [float(std[T]) for T in terms]
    if std is not None:
        std = np.array(std, dtype=np.float64)
        if std.shape != values.shape:
            raise ValueError(f"std has shape {std.shape}; the values have {values.shape[0]} terms")
    return ShapleyEstimate(
        index=str(iv.index),
        terms=terms,
        values=values,
        std=std,
        covariance=None if covariance is None else np.array(covariance, dtype=np.float64),
        evaluations=int(iv.estimation_budget or 0),
        baseline=float(iv.baseline_value),
        method=method,
        info={"shapiq_index": str(iv.index), "shapiq_max_order": int(iv.max_order)},
    )


class ShapiqApproximator(Approximator):
    """One of this project's estimators as a shapiq ``Approximator`` (its index: "SV", order 1, by
    default; ``ShaplEIG(index="k-SII")`` gives a k-SII approximator of order 2).

    estimator:    e.g. ``ShaplEIG()`` or ``baselines.get("permutation")``.
    n:            number of players (shapiq builds approximators before it sees the game).
    random_state: passed to ``estimator.estimate`` as its seed (None: fresh entropy, recorded in
                  ``last_estimate.info["seed"]``); shapiq's explainers reset it with
                  ``set_random_state``.
    store:        an ``EvaluationStore`` or a path: every evaluated coalition is recorded there and
                  reused by a rerun on the same game (a killed run resumes).
    efficient:    make the values sum exactly to v(N) - v(empty) (default True), as
                  :func:`shapleig.explain` does: the posterior is conditioned on that total
                  (:func:`~shapleig.estimation.efficiency.condition_on_total`; the std shrinks), or,
                  without a covariance, the gap is split equally. Needs v(empty) and v(N) among
                  the evaluated coalitions (every method here evaluates them); the gap before the
                  correction is in ``last_estimate.info["efficiency_gap"]``.

    ``approximate(budget, game)`` spends at most ``budget`` distinct evaluations, returns
    ``InteractionValues`` (std and covariance as attributes, see :func:`to_interaction_values`)
    and keeps the full result (std, covariance, trace) in ``last_estimate``. ``get_params`` /
    ``set_params`` make it work with ``sklearn.base.clone``.
    """

    valid_indices = ("SV", "BV", "k-SII", "SII", "STII", "FSII")

    def __init__(self, estimator: Any, n: int, *, random_state: int | None = None, store: Any = None,
                 efficient: bool = True) -> None:
        if not callable(getattr(estimator, "estimate", None)):
            raise TypeError(f"estimator needs an estimate(game, budget, seed=...) method; got {estimator!r}")
        # the estimator's index (ShaplEIG(index="k-SII")) is the approximator's; others estimate the SV
        index = getattr(estimator, "index", "SV")
        max_order = 1 if index in ("SV", "BV") else 2
        super().__init__(n=int(n), max_order=max_order, index=index, min_order=0, random_state=random_state)
        self.estimator = estimator
        self.store = store
        self.efficient = bool(efficient)
        self.last_estimate: ShapleyEstimate | None = None

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters (scikit-learn convention; ``deep`` adds ``estimator__<name>``)."""
        params = {"estimator": self.estimator, "n": self.n, "random_state": self._random_state,
                  "store": self.store, "efficient": self.efficient}
        if deep and hasattr(self.estimator, "get_params"):
            params.update({f"estimator__{k}": v for k, v in self.estimator.get_params(deep=True).items()})
        return params

    def set_params(self, **params: Any) -> ShapiqApproximator:
        """Set parameters by name (``estimator__<name>`` reaches the wrapped estimator); returns self."""
        nested = {k.split("__", 1)[1]: v for k, v in params.items() if k.startswith("estimator__")}
        for key, value in params.items():
            if key.startswith("estimator__"):
                continue
            if key == "random_state":
                self.set_random_state(value)
            elif key in ("estimator", "store", "efficient"):
                setattr(self, key, value)
            else:
                raise ValueError(f"ShapiqApproximator has no settable parameter {key!r} "
                                 f"(n is fixed: build a new approximator for another player count)")
        if nested:
            self.estimator.set_params(**nested)
        return self

    def approximate(self, budget: int, game: Any, **kwargs: Any) -> InteractionValues:
        """Run the estimator on ``game`` (a shapiq game or ``bool[m, n] -> float[m]`` callable)."""
        game = as_game(game, self.n)
        budgeted = BudgetedGame(game, int(budget), store=self.store)
        est = self.estimator.estimate(budgeted, int(budget), seed=self._random_state)
        if self.efficient and est.index == "SV":  # efficiency is the Shapley value's axiom
            ends = np.zeros((2, self.n), dtype=bool)
            ends[1] = True
            if budgeted.is_cached(ends).all():  # read from the cache: no evaluation is charged
                empty, grand = (float(v) for v in budgeted(ends))
                est.baseline = empty
                est.info["efficiency_gap"] = condition_on_total(est, grand - empty)
        self.last_estimate = est
        return to_interaction_values(est)

    def __repr__(self) -> str:
        return (f"ShapiqApproximator({self.estimator!r}, n={self.n}, random_state={self._random_state}, "
                f"store={self.store!r}, efficient={self.efficient})")


def as_game(game: Any, n_players: int) -> Any:
    """A shapiq game as it is (it has ``n_players``); a bare callable wrapped as a FunctionGame.

    Raises ``ValueError`` when the game's player count differs from ``n_players``.
    """
    if hasattr(game, "n_players"):
        p = check_game(game)
        if p != n_players:
            raise ValueError(f"the game has {p} players but the approximator was built for n = {n_players}")
        return game
    fn: Callable[[np.ndarray], Any] = game
    return FunctionGame(fn, n_players, name=getattr(fn, "__name__", "shapiq-callable"))


__all__ = [
    "MISSING_EXTRA",
    "SHAPIQ_VERSION",
    "ShapiqApproximator",
    "as_game",
    "from_interaction_values",
    "std_interaction_values",
    "to_interaction_values",
]
