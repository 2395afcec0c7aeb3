"""``imputer=`` of :func:`shapleig.explain` and :func:`shapleig.explain_X`: which game explains a row.

- ``"interventional"`` (default): absent features from every background row
  (:class:`~shapleig.explanation.imputer.ImputerGame`);
- ``"baseline"``: absent features from one reference row, by default the background's column means
  (:class:`~shapleig.explanation.baseline_imputer.BaselineImputerGame`; option ``reference``);
- ``"conditional"``: absent features from the background rows nearest to ``x`` on the present ones
  (:class:`~shapleig.explanation.conditional_imputer.ConditionalImputerGame`; option ``k``).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from shapleig.errors import GameError
from shapleig.explanation.baseline_imputer import BaselineImputerGame, reference_row
from shapleig.explanation.conditional_imputer import ConditionalImputerGame
from shapleig.explanation.imputer import ImputerGame

IMPUTERS = ("interventional", "baseline", "conditional")
# the options each imputer takes (imputer_options=)
IMPUTER_OPTIONS = {"interventional": (), "baseline": ("reference",), "conditional": ("k",)}


def imputer_game(predict: Callable, background: Any, x: Any, *, imputer: str = "interventional",
                 imputer_options: Mapping[str, Any] | None = None, **kwargs: Any) -> ImputerGame:
    """The game of ``imputer`` for the row ``x``.

    Args:
        predict: the model's prediction, ``float[n, d] -> float[n]`` (or ``[n, k]`` with ``output``).
        background: the background data (array or DataFrame).
        x: the explained row.
        imputer: "interventional" (default), "baseline" or "conditional" (see ``IMPUTERS``).
        imputer_options: the imputer's own options (baseline: ``reference``; conditional: ``k``).
        **kwargs: the games' common keywords (``output``, ``max_rows``, ``feature_names``, ``game_id``).

    Returns:
        the imputer's :class:`ImputerGame`.

    Raises:
        GameError: an unknown imputer or an option it does not take.

    Examples:
        >>> import numpy as np
        >>> game = imputer_game(lambda X: X.sum(axis=1), np.zeros((3, 2)), np.ones(2), imputer="baseline")
        >>> type(game).__name__, game(np.array([[True, False]])).tolist()
        ('BaselineImputerGame', [1.0])
    """
    if imputer not in IMPUTERS:
        raise GameError(f"unknown imputer {imputer!r}; choose one of {IMPUTERS}")
    options = dict(imputer_options or {})
    unknown = sorted(set(options) - set(IMPUTER_OPTIONS[imputer]))
    if unknown:
        raise GameError(f"imputer {imputer!r} takes no option(s) {unknown}; its options: "
                        f"{list(IMPUTER_OPTIONS[imputer]) or 'none'}")
    if imputer == "baseline":
        return BaselineImputerGame(predict, reference_row(background, options.get("reference")), x, **kwargs)
    if imputer == "conditional":
        return ConditionalImputerGame(predict, background, x, **options, **kwargs)
    return ImputerGame(predict, background, x, **kwargs)


__all__ = ["IMPUTERS", "IMPUTER_OPTIONS", "imputer_game"]
