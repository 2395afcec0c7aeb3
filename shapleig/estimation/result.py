"""``ShapleyEstimate``: the result every method returns (values, uncertainty, trace, accounting)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class ShapleyEstimate:
    """Estimated Shapley values (or another index) of a ``p``-player game.

    Attributes:
        values: float64[d], the estimate (posterior mean for ShaplEIG), in the game's units, aligned
            with ``terms`` (d = p for the Shapley and Banzhaf values).
        evaluations: distinct coalitions evaluated (empty and grand included), <= budget.
        budget: the budget the method was given.
        std: float64[d] posterior standard deviations, or None for methods without one.
        covariance: float64[d, d] posterior covariance, or None.
        trace: ``[(evaluations, values float64[d]), ...]`` after every step: an anytime curve.
        trace_std: ``[(evaluations, std float64[d]), ...]`` alongside ``trace`` (methods with a posterior).
        baseline: v(empty) when it was evaluated, else None (also ``baseline_value``, shapiq's name).
        method: registry name of the method.
        info: method-specific diagnostics (accounting, draws, timings, the options) and ``seed``, the
            integer seed the run used (pass it back as ``seed`` to repeat it).
        index: the index estimated: "SV" (default), "BV", "k-SII", "SII", "STII" or "FSII".
        terms: the player tuples ``values``, ``std``, ``covariance`` and ``interval()`` refer to: the
            p singletons, then (order-2 indices) the pairs in lexicographic order.

    Examples:
        >>> import numpy as np
        >>> est = ShapleyEstimate(values=np.array([1.0, 2.0]), std=np.array([0.1, 0.2]))
        >>> est.n_players, est.terms
        (2, [(0,), (1,)])
        >>> [np.round(bound, 3).tolist() for bound in est.interval(0.95)]
        [[0.804, 1.608], [1.196, 2.392]]
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
        from shapleig.estimation.shapiq_values import to_interaction_values

        return to_interaction_values(self)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per term (per player for the Shapley and Banzhaf values):
        ``player`` (the feature names of :func:`shapleig.explain`, else 0..p-1; for a pair, the two
        joined by " x "), ``value``, ``std`` (NaN without a posterior)."""
        import pandas as pd

        names = self.info.get("feature_names")
        label = list(names) if names is not None and len(names) == self.n_players else list(range(self.n_players))
        terms = self.terms or [(i,) for i in range(self.n_players)]
        players = [label[t[0]] if len(t) == 1 else " x ".join(str(label[i]) for i in t) for t in terms]
        values = np.asarray(self.values, dtype=np.float64)
        std = np.full(values.shape[0], np.nan) if self.std is None else np.asarray(self.std, dtype=np.float64)
        return pd.DataFrame({"player": players, "value": values, "std": std})

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




