"""The bridge to shapiq (optional extra ``shapleig[shapiq]``; shapiq needs Python >= 3.12).

- :func:`to_interaction_values` (also ``ShapleyEstimate.to_interaction_values()``): a result as
  shapiq ``InteractionValues`` (index "SV", order 1, the empty interaction = v(empty)), so
  shapiq's force, waterfall and bar plots draw it; :func:`from_interaction_values` goes back.
- :class:`ShapiqApproximator`: any estimator of this project as a shapiq ``Approximator``, e.g.
  ``shapiq.TabularExplainer(model, X, approximator=ShapiqApproximator(ShaplEIG(), n=X.shape[1]))``.
- The other direction, shapiq's approximators as methods here (``shapiq:PolySHAP``), is
  :class:`baselines.shapiq_methods.ShapiqMethod`.

shapiq games need no adapter: they have ``n_players`` and map ``bool[m, p]`` coalition matrices to
values, so every estimator accepts them as games as they are.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any, Callable

import numpy as np

MISSING_EXTRA = (
    "the shapiq bridge needs shapiq >= 1.8, the optional extra shapleig[shapiq]: "
    "pip install 'shapleig[shapiq]' (shapiq needs Python >= 3.12)"
)
MIN_SHAPIQ = (1, 8)

try:
    from shapiq.approximator.base import Approximator
    from shapiq.interaction_values import InteractionValues
except ImportError as exc:  # the optional extra is missing: name it
    raise ImportError(f"shapiq is not installed; {MISSING_EXTRA}") from exc
SHAPIQ_VERSION = importlib.metadata.version("shapiq")
if tuple(int(part) for part in SHAPIQ_VERSION.split(".")[:2]) < MIN_SHAPIQ:
    raise ImportError(f"shapiq {SHAPIQ_VERSION} is installed; {MISSING_EXTRA}")

from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.game import FunctionGame, check_game


def to_interaction_values(estimate: ShapleyEstimate) -> InteractionValues:
    """``estimate`` as shapiq ``InteractionValues``: index "SV", orders 0..1, n_players = p.

    Entry ``()`` and ``baseline_value`` hold v(empty) when the run evaluated it (shapiq's
    convention, so values sum to v(N)); without it both are 0 and only the order-1 entries count.
    ``estimation_budget`` is the number of distinct evaluations spent.
    """
    p = estimate.n_players
    baseline = 0.0 if estimate.baseline is None else float(estimate.baseline)
    values = np.concatenate([[baseline], np.asarray(estimate.values, dtype=np.float64)])
    lookup = {(): 0, **{(i,): i + 1 for i in range(p)}}
    return InteractionValues(
        values=values,
        index="SV",
        max_order=1,
        min_order=0,
        n_players=p,
        interaction_lookup=lookup,
        estimated=not estimate.info.get("exact", False),  # a budget covering the game: enumerated
        estimation_budget=int(estimate.evaluations),
        baseline_value=baseline,
        target_index="SV",
    )


def from_interaction_values(iv: InteractionValues, method: str = "") -> ShapleyEstimate:
    """The order-1 entries of shapiq ``InteractionValues`` as a :class:`ShapleyEstimate`.

    ``values[i] = iv[(i,)]``, ``baseline = iv.baseline_value``, ``evaluations`` from
    ``iv.estimation_budget`` (0 when shapiq did not record it).
    """
    p = int(iv.n_players)
    values = np.array([float(iv[(i,)]) for i in range(p)], dtype=np.float64)
    return ShapleyEstimate(
        values=values,
        evaluations=int(iv.estimation_budget or 0),
        baseline=float(iv.baseline_value),
        method=method,
        info={"shapiq_index": str(iv.index), "shapiq_max_order": int(iv.max_order)},
    )


class ShapiqApproximator(Approximator):
    """One of this project's estimators as a shapiq ``Approximator`` (index "SV", order 1).

    estimator:    e.g. ``ShaplEIG()`` or ``baselines.get("permutation")``.
    n:            number of players (shapiq builds approximators before it sees the game).
    random_state: passed to ``estimator.estimate`` as its seed (None: fresh entropy, recorded in
                  ``last_estimate.info["seed"]``); shapiq's explainers reset it with
                  ``set_random_state``.

    ``approximate(budget, game)`` spends at most ``budget`` distinct evaluations, returns
    ``InteractionValues`` and keeps the full result (std, covariance, trace) in ``last_estimate``.
    """

    valid_indices = ("SV",)

    def __init__(self, estimator: Any, n: int, *, random_state: int | None = None) -> None:
        if not callable(getattr(estimator, "estimate", None)):
            raise TypeError(f"estimator needs an estimate(game, budget, seed=...) method; got {estimator!r}")
        super().__init__(n=int(n), max_order=1, index="SV", min_order=0, random_state=random_state)
        self.estimator = estimator
        self.last_estimate: ShapleyEstimate | None = None

    def approximate(self, budget: int, game: Any, **kwargs: Any) -> InteractionValues:
        """Run the estimator on ``game`` (a shapiq game or ``bool[m, n] -> float[m]`` callable)."""
        game = as_game(game, self.n)
        est = self.estimator.estimate(game, int(budget), seed=self._random_state)
        self.last_estimate = est
        return to_interaction_values(est)

    def __repr__(self) -> str:
        return f"ShapiqApproximator({self.estimator!r}, n={self.n}, random_state={self._random_state})"


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
    "ShapiqApproximator",
    "as_game",
    "from_interaction_values",
    "to_interaction_values",
]
