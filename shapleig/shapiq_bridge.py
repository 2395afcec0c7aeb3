"""The bridge to shapiq (optional extra ``shapleig[shapiq]``; shapiq needs Python >= 3.12).

- :func:`to_interaction_values` (also ``ShapleyEstimate.to_interaction_values()``): a result as
  shapiq ``InteractionValues`` (its index and order, the empty interaction = v(empty)), so
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

from .estimate import ShapleyEstimate
from .game import FunctionGame, check_game


def to_interaction_values(estimate: ShapleyEstimate) -> InteractionValues:
    """``estimate`` as shapiq ``InteractionValues``: the estimate's index ("SV" by default) and
    orders 0..max_order (1, or 2 for pairwise interactions), n_players = p, one entry per term.

    Entry ``()`` and ``baseline_value`` hold v(empty) when the run evaluated it (shapiq's
    convention, so values sum to v(N)); without it both are 0 and only the order-1 entries count.
    ``estimation_budget`` is the number of distinct evaluations spent.
    """
    p = estimate.n_players
    index = getattr(estimate, "index", "SV") or "SV"
    terms = estimate.terms if estimate.terms is not None else [(i,) for i in range(p)]
    baseline = 0.0 if estimate.baseline is None else float(estimate.baseline)
    values = np.concatenate([[baseline], np.asarray(estimate.values, dtype=np.float64)])
    lookup = {(): 0, **{tuple(T): k + 1 for k, T in enumerate(terms)}}
    return InteractionValues(
        values=values,
        index=index,
        max_order=max((len(T) for T in terms), default=1),
        min_order=0,
        n_players=p,
        interaction_lookup=lookup,
        estimated=True,
        estimation_budget=int(estimate.evaluations),
        baseline_value=baseline,
        target_index=index,
    )


def from_interaction_values(iv: InteractionValues, method: str = "") -> ShapleyEstimate:
    """The order-1 (and, at max_order 2, order-2) entries of shapiq ``InteractionValues`` as a
    :class:`ShapleyEstimate` with ``terms`` and ``index`` set.

    ``values[k] = iv[terms[k]]``, ``baseline = iv.baseline_value``, ``evaluations`` from
    ``iv.estimation_budget`` (0 when shapiq did not record it).
    """
    from itertools import combinations

    p = int(iv.n_players)
    terms: list[tuple[int, ...]] = [(i,) for i in range(p)]
    if int(iv.max_order) >= 2:
        terms += list(combinations(range(p), 2))
    values = np.array([float(iv[T]) for T in terms], dtype=np.float64)
    return ShapleyEstimate(
        index=str(iv.index),
        terms=terms,
        values=values,
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

    ``approximate(budget, game)`` spends at most ``budget`` distinct evaluations, returns
    ``InteractionValues`` and keeps the full result (std, covariance, trace) in ``last_estimate``.
    """

    valid_indices = ("SV", "BV", "k-SII", "SII", "STII", "FSII")

    def __init__(self, estimator: Any, n: int, *, random_state: int | None = None) -> None:
        if not callable(getattr(estimator, "estimate", None)):
            raise TypeError(f"estimator needs an estimate(game, budget, seed=...) method; got {estimator!r}")
        # the estimator's index (ShaplEIG(index="k-SII")) is the approximator's; others estimate the SV
        index = getattr(estimator, "index", "SV")
        max_order = 1 if index in ("SV", "BV") else 2
        super().__init__(n=int(n), max_order=max_order, index=index, min_order=0, random_state=random_state)
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
