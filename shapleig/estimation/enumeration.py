"""Enumeration: every coalition evaluated through the budgeted game, the exact Shapley values.

:class:`~shapleig.estimation.base.BaseEstimator` switches every method to :func:`enumerate_game`
when the budget covers the game (``budget >= 2^p``, ``p <= 20``): then all coalitions fit in the
budget, so the exact values cost no more evaluations than any estimate would (and selection
costs nothing). A budget above ``2^p`` is reported (``info["message"]`` and a
:class:`BudgetCoversGameWarning`), never silently changed.
"""

from __future__ import annotations

import numpy as np

from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.coalitions import all_coalitions
from shapleig.games.exact import MAX_ENUMERATION_PLAYERS, shapley_from_table
from shapleig.games.indices import exact_index_values, index_terms
from shapleig.runs.budget import BudgetedGame

# coalitions per game call while enumerating (bounds the memory of one batch)
ENUMERATION_CHUNK = 1 << 14


class BudgetCoversGameWarning(UserWarning):
    """The budget exceeds the ``2^p`` coalitions of the game: all were evaluated, values exact."""


def covers_game(n_players: int, budget: int) -> bool:
    """True when ``budget >= 2^p`` and ``p <= 20`` (enumeration is affordable and within budget).

    Args:
        n_players: the number of players p.
        budget: the run's budget (distinct coalitions).

    Returns:
        whether the run enumerates the game instead of estimating.
    """
    return n_players <= MAX_ENUMERATION_PLAYERS and budget >= (1 << n_players)


def enumeration_message(n_players: int, budget: int) -> str:
    """The one line that reports an enumerated run, e.g. ``budget 5000 > 2^10 = 1024 coalitions: ...``.

    Args:
        n_players: the number of players p.
        budget: the run's budget.

    Returns:
        the message, stored in ``info["message"]`` and used as the warning's text.
    """
    full = 1 << n_players
    relation = ">" if budget > full else "="
    return f"budget {budget} {relation} 2^{n_players} = {full} coalitions: all evaluated, exact values"


def enumerate_game(game: BudgetedGame, method: str, index: str = "SV", max_order: int | None = None,
                   ) -> ShapleyEstimate:
    """Evaluate every coalition of ``game``; the exact values of ``index``.

    Evaluations go through the game's budget, store and evaluator; ``index`` is the Shapley value by
    default (docs/math.md §14 for the others).

    Returns values float64[d] (aligned with the index's terms) with std and covariance exactly 0 and
    ``info["exact"] = True``.

    Args:
        game: the run's budgeted game; every coalition is evaluated through it.
        method: the registry name recorded in the result's ``method``.
        index: the index: "SV" (default), "BV", "k-SII", "SII", "STII" or "FSII".
        max_order: the highest interaction order for the order-k indices; None: the index's default.

    Returns:
        the exact values as a :class:`ShapleyEstimate` with zero std and covariance.
    """
    p = game.n_players
    coalitions = all_coalitions(p)
    values = np.concatenate([np.asarray(game(coalitions[i:i + ENUMERATION_CHUNK]), dtype=np.float64)
                             for i in range(0, coalitions.shape[0], ENUMERATION_CHUNK)])
    if index == "SV":
        phi, terms = shapley_from_table(coalitions, values), None
    else:  # coalitions are in bit order, as exact_index_values reads them
        phi, terms = exact_index_values(values, index, max_order), index_terms(p, index, max_order)
    d = phi.shape[0]
    return ShapleyEstimate(values=phi, std=np.zeros(d), covariance=np.zeros((d, d)),
                           trace=[(coalitions.shape[0], phi)], trace_std=[(coalitions.shape[0], np.zeros(d))],
                           baseline=float(values[0]), method=method, info={"exact": True, "index": index},
                           index=index, terms=terms)


__all__ = ["BudgetCoversGameWarning", "ENUMERATION_CHUNK", "covers_game", "enumerate_game", "enumeration_message"]
