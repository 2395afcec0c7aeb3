"""``ExactShapley``: every coalition evaluated, the exact Shapley values with zero uncertainty.

Spends its budget through the :class:`~shapleig.runs.budget.BudgetedGame` like every estimator, so
values come from (and go to) the store and the evaluator; needs budget >= 2^p and p <= 20.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.coalitions import all_coalitions
from shapleig.games.exact import MAX_ENUMERATION_PLAYERS, shapley_from_table
from shapleig.runs.budget import BudgetedGame

# coalitions per game call while enumerating (bounds the memory of one batch)
ENUMERATION_CHUNK = 1 << 14


class ExactShapley(BaseEstimator):
    """Exact Shapley values by enumerating all ``2^p`` coalitions (p <= 20).

    >>> from shapleig import FunctionGame
    >>> game = FunctionGame(lambda Z: Z[:, 0] * 2.0 + Z[:, 1], n_players=3)
    >>> ExactShapley().estimate(game, 8).values.tolist()
    [2.0, 1.0, 0.0]
    """

    name: ClassVar[str] = "exact"

    def __init__(self) -> None:
        pass

    def min_budget(self, n_players: int) -> int:
        return 1 << n_players if n_players <= MAX_ENUMERATION_PLAYERS else 1 << 62

    def min_budget_reason(self, n_players: int) -> str:
        if n_players > MAX_ENUMERATION_PLAYERS:
            return f"it enumerates 2^p coalitions and p = {n_players} > {MAX_ENUMERATION_PLAYERS}"
        return f"it evaluates all 2^{n_players} coalitions"

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        return enumerate_game(game, method=self.name)


def enumerate_game(game: BudgetedGame, method: str) -> ShapleyEstimate:
    """Evaluate every coalition of ``game`` (through its budget, store and evaluator); exact values.

    Returns values float64[p] with std and covariance exactly 0 and ``info["exact"] = True``.
    """
    p = game.n_players
    coalitions = all_coalitions(p)
    values = np.concatenate([np.asarray(game(coalitions[i:i + ENUMERATION_CHUNK]), dtype=np.float64)
                             for i in range(0, coalitions.shape[0], ENUMERATION_CHUNK)])
    phi = shapley_from_table(coalitions, values)
    return ShapleyEstimate(values=phi, std=np.zeros(p), covariance=np.zeros((p, p)),
                           trace=[(coalitions.shape[0], phi)], trace_std=[(coalitions.shape[0], np.zeros(p))],
                           baseline=float(values[0]), method=method, info={"exact": True})
