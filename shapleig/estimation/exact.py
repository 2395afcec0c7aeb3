"""``ExactShapley``: every coalition evaluated, the exact index values with zero uncertainty.

Spends its budget through the :class:`~shapleig.runs.budget.BudgetedGame` like every estimator, so
values come from (and go to) the store and the evaluator; needs budget >= 2^p and p <= 20.
"""

from __future__ import annotations

from typing import ClassVar

from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.enumeration import ENUMERATION_CHUNK, enumerate_game
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.exact import MAX_ENUMERATION_PLAYERS
from shapleig.games.indices import check_index
from shapleig.runs.budget import BudgetedGame


class ExactShapley(BaseEstimator):
    """Exact Shapley values (or another index, docs/math.md §14) by enumerating all ``2^p`` coalitions.

    Needs p <= 20 and a budget of ``2^p``.

    Args:
        index: "SV" (default), "BV", "k-SII", "SII", "STII" or "FSII".
        max_order: the highest interaction order for the order-k indices; None: the index's default.

    Examples:
        >>> from shapleig import FunctionGame
        >>> game = FunctionGame(lambda Z: Z[:, 0] * 2.0 + Z[:, 1], n_players=3)
        >>> ExactShapley().estimate(game, 8).values.tolist()
        [2.0, 1.0, 0.0]
    """

    name: ClassVar[str] = "exact"
    max_players: ClassVar[int | None] = MAX_ENUMERATION_PLAYERS  # 2^20 coalitions at most

    def __init__(self, index: str = "SV", max_order: int | None = None) -> None:
        self.index, self.max_order = check_index(index, max_order)

    def min_budget(self, n_players: int) -> int:
        """All ``2^p`` coalitions (games beyond ``max_players`` are refused before this matters).

        Args:
            n_players: the number of players p.

        Returns:
            ``2^p``, every coalition.
        """
        return 1 << n_players

    def min_budget_reason(self, n_players: int) -> str:
        """Why the budget must cover every coalition (one phrase, for the error message).

        Args:
            n_players: the number of players p.

        Returns:
            the phrase, naming the 2^p coalitions and the enumeration limit when p exceeds it.
        """
        if n_players > MAX_ENUMERATION_PLAYERS:
            return (f"it evaluates all 2^{n_players} coalitions; enumeration is limited to "
                    f"p <= {MAX_ENUMERATION_PLAYERS}")
        return f"it evaluates all 2^{n_players} coalitions"

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        return enumerate_game(game, method=self.name, index=self.index, max_order=self.max_order)


__all__ = ["ENUMERATION_CHUNK", "ExactShapley", "enumerate_game"]
