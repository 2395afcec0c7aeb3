"""The conditional imputer game.

Absent features drawn from the background rows nearest to ``x`` on the present ones (an empirical,
nearest-neighbour conditional expectation).

For a coalition S, the background rows are ranked by the standardised Euclidean distance to ``x``
over the features in S,

    d_S(b)^2 = sum_{j in S} ((b_j - x_j) / s_j)^2      (s_j: the background's std of feature j),

and ``v(S)`` is the mean prediction ``f(x_S, b_{not S})`` over the ``k`` nearest rows, ties at the
k-th distance included (so the empty coalition, where every distance is 0, averages over the whole
background: ``v(empty)`` is the mean prediction on the background, as for the interventional
imputer; ``v(N) = f(x)``). Unlike the interventional imputer, the absent features then follow the
data's dependence on the present ones (Aas, Jullum & Loland 2021, with a k-nearest-neighbour kernel).
It is a subclass of :class:`~shapleig.explanation.imputer.ImputerGame`: the same model adapter and
store identity (the same model-identity helper), plus the imputer and ``k``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from shapleig.errors import GameError
from shapleig.explanation.imputer import DEFAULT_MAX_ROWS, ImputerGame

DEFAULT_NEIGHBOURS = 20


class ConditionalImputerGame(ImputerGame):
    """``v(S)`` = mean of ``f(x_S, b_{not S})`` over the ``k`` background rows nearest to ``x`` on S.

    Args:
        predict: ``float[n, d] -> float[n]`` (or ``[n, k]`` with ``output``).
        background: ``[n_bg, d]`` numeric rows (array or DataFrame).
        x: the explained row.
        k: neighbours per coalition (default 20, at most ``n_bg``); ties at the k-th distance are all kept.
        output: column of a multi-output prediction (as for :class:`~shapleig.explanation.imputer.ImputerGame`).
        max_rows: imputed rows per model call.
        feature_names: names of the d features.
        game_id: a name for the model's version, part of the store identity (see :class:`~shapleig.explanation.imputer.ImputerGame`).

    Examples:
        >>> import numpy as np
        >>> bg = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
        >>> game = ConditionalImputerGame(lambda X: X[:, 1], bg, np.array([2.0, 5.0]), k=1)
        >>> game(np.array([[False, False], [True, False], [True, True]])).tolist()   # v(S) of feature 2
        [1.0, 2.0, 5.0]
    """

    imputer = "conditional"

    def __init__(self, predict: Callable, background: Any, x: Any, *, k: int = DEFAULT_NEIGHBOURS,
                 output: int | None = None, max_rows: int = DEFAULT_MAX_ROWS,
                 feature_names: list[str] | None = None, game_id: str | None = None) -> None:
        super().__init__(predict, background, x, output=output, max_rows=max_rows, feature_names=feature_names,
                         game_id=game_id)
        if self.background.dtype == object or self.x.dtype == object:
            raise GameError("the conditional imputer needs numeric features (its distances standardise each column)")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise GameError(f"k must be a positive integer, got {k!r}")
        self.k = min(int(k), self.background.shape[0])
        scale = self.background.std(axis=0)
        scale[~(scale > 0)] = 1.0  # a constant feature adds no distance
        # [d, n_bg]: the squared standardised difference of each background row from x, per feature
        self._sq = (((self.background - self.x[None, :]) / scale[None, :]) ** 2).T

    def neighbours(self, coalitions: np.ndarray) -> np.ndarray:
        """bool[m, n_bg]: the rows each coalition averages over (the k nearest, ties included).

        Args:
            coalitions: ``bool[m, d]`` coalitions.

        Returns:
            ``bool[m, n_bg]``, the background rows each coalition averages over.
        """
        Z = np.asarray(coalitions, dtype=bool)
        dist = Z.astype(np.float64) @ self._sq
        kth = np.partition(dist, self.k - 1, axis=1)[:, self.k - 1]
        # a relative tolerance: the same distance computed through other roundings still ties
        return dist <= kth[:, None] * (1.0 + 1e-12) + 1e-300

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        """``v(S)`` of ``bool[m, d]`` coalitions: ``float64[m]``."""
        Z = np.asarray(coalitions, dtype=bool)
        if Z.ndim != 2 or Z.shape[1] != self.n_players:
            raise GameError(f"coalitions must be bool[m, {self.n_players}], got shape {Z.shape}")
        near = self.neighbours(Z)
        out = np.empty(Z.shape[0])
        start = 0
        while start < Z.shape[0]:
            # as many coalitions as fit in max_rows imputed rows (at least one)
            counts = near[start:].sum(axis=1)
            stop = start + max(1, int(np.searchsorted(np.cumsum(counts), self.max_rows, side="right")))
            rows, owner = [], []
            for i in range(start, stop):
                chosen = self.background[near[i]]
                rows.append(np.where(Z[i][None, :], self.x[None, :], chosen))
                owner.append(np.full(chosen.shape[0], i - start))
            pred = self.predict_rows(np.vstack(rows))
            owners = np.concatenate(owner)
            out[start:stop] = np.bincount(owners, weights=pred, minlength=stop - start) / np.bincount(owners)
            start = stop
        return out

    def identity(self) -> dict[str, str]:
        """The interventional imputer's identity (model, output, background, x) plus the imputer and k.

        Returns:
            ``{component: text}`` for evaluation stores.
        """
        return {**super().identity(), "imputer": self.imputer, "neighbours": str(self.k)}

    def __repr__(self) -> str:
        return f"ConditionalImputerGame(n_players={self.n_players}, n_background={self.background.shape[0]}, k={self.k})"
