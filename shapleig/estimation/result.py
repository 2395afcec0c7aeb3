"""``ShapleyEstimate``: the result every method returns (values, uncertainty, trace, accounting)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

# error bars wherever an estimate is drawn or printed: +- 1.96 std, the central 95% of a normal posterior
ERROR_BAR_Z = 1.96


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
        player_count: the number of players when ``terms`` do not list every singleton (a
            selection by :meth:`get_n_order` or :meth:`get_top_k`); None: counted from ``terms``.

    ``est[i]`` and ``est[(i, j)]`` read the value of one term (``est[()]`` is ``baseline``, as in
    shapiq); :meth:`std_of` its std; :meth:`get_n_order` and :meth:`get_top_k` select terms. Its
    ``repr`` is one short line (the first values, the counts of trace entries and info keys), and
    :meth:`summary` a table of the largest terms with their ± 1.96 std.

    Examples:
        >>> import numpy as np
        >>> est = ShapleyEstimate(values=np.array([1.0, 2.0]), std=np.array([0.1, 0.2]))
        >>> est.n_players, est.terms
        (2, [(0,), (1,)])
        >>> [np.round(bound, 3).tolist() for bound in est.interval(0.95)]
        [[0.804, 1.608], [1.196, 2.392]]
        >>> est[1], est[(0,)], est.get_top_k(1).terms
        (2.0, 1.0, [(1,)])
        >>> est
        ShapleyEstimate(SV, 2 terms, evaluations 0/0, values [1, 2], std [0.1, 0.2], trace 0 steps, info 0 keys)
        >>> print(est.summary())
        SV estimate, 2 players, 0 of budget 0 evaluations
        term     value  ± 1.96 std  95% interval
        1            2       0.392  [1.608, 2.392]
        0            1       0.196  [0.804, 1.196]
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
    player_count: int | None = None

    def __post_init__(self) -> None:
        if self.terms is None and self.values is not None:
            self.terms = [(i,) for i in range(int(np.asarray(self.values).shape[0]))]

    def __repr__(self) -> str:
        """One line: the index, counts, the first values and std (4 significant digits), not the trace or info."""
        def short(vec: Any, k: int = 6) -> str:
            v = np.asarray(vec, dtype=np.float64).ravel()
            text = ", ".join(f"{x:.4g}" for x in v[:k])
            return f"[{text}{f', ... {v.size - k} more' if v.size > k else ''}]"

        method = f"{self.method}, " if self.method else ""
        std = "" if self.std is None else f", std {short(self.std)}"
        return (f"ShapleyEstimate({self.index}, {method}{len(self.terms or [])} terms, evaluations "
                f"{self.evaluations}/{self.budget}, values {short(self.values)}{std}, trace {len(self.trace)} steps, "
                f"info {len(self.info)} keys)")

    def _term_labels(self) -> list[str]:
        """One label per term: the feature names of an explanation, else the player numbers; a pair ``"a x b"``."""
        names = self.info.get("feature_names")
        names = list(names) if names is not None and len(names) == self.n_players else None
        return [" x ".join(str(names[i]) if names else str(i) for i in t) for t in (self.terms or [])]

    def summary(self, max_terms: int = 20) -> str:
        """A table of the ``max_terms`` largest terms (by |value|) with their ± 1.96 std and 95% interval.

        Args:
            max_terms: how many terms to list (the rest are counted).

        Returns:
            the text: a header line (index, players, evaluations, method), then one line per term.
        """
        values = np.asarray(self.values, dtype=np.float64)
        labels = self._term_labels()
        order = np.argsort(-np.abs(values), kind="stable")[: max(int(max_terms), 0)]
        by = f" by {self.method}" if self.method else ""
        lines = [f"{self.index} estimate{by}, {self.n_players} players, {self.evaluations} of budget {self.budget} "
                 f"evaluations"]
        width = max([len("term"), *(len(labels[k]) for k in order)])
        lines.append(f"{'term':<{width}}  {'value':>8}  {f'± {ERROR_BAR_Z:g} std':>10}  95% interval")
        for k in order:
            if self.std is None:
                lines.append(f"{labels[k]:<{width}}  {values[k]:>8.4g}  {'-':>10}  -")
                continue
            half = ERROR_BAR_Z * float(np.asarray(self.std)[k])
            lines.append(f"{labels[k]:<{width}}  {values[k]:>8.4g}  {half:>10.4g}  "
                         f"[{values[k] - half:.4g}, {values[k] + half:.4g}]")
        if len(values) > len(order):
            lines.append(f"... {len(values) - len(order)} smaller terms")
        return "\n".join(lines)

    @property
    def n_players(self) -> int:
        """The number of players (the singletons among ``terms``, or ``player_count`` when set)."""
        if self.player_count is not None:
            return int(self.player_count)
        if self.terms is not None:
            return sum(len(t) == 1 for t in self.terms)
        return int(self.values.shape[0])

    # -- terms ---------------------------------------------------------------------------------
    def _position(self, term: Any) -> int:
        """The position of ``term`` (an int player or a tuple of players) in ``terms``."""
        key = (int(term),) if isinstance(term, (int, np.integer)) and not isinstance(term, bool) else None
        if key is None:
            try:
                key = tuple(sorted(int(i) for i in term))
            except TypeError:
                raise KeyError(f"a term is a player (int) or a tuple of players, got {term!r}") from None
        try:
            return (self.terms or []).index(key)
        except ValueError:
            raise KeyError(f"{key} is not a term of this {self.index} estimate (its terms: "
                           f"{len(self.terms or [])}, orders {sorted({len(t) for t in self.terms or []})})") from None

    def __getitem__(self, term: Any) -> float:
        """The value of one term: ``est[i]`` (player i), ``est[(i, j)]`` (a pair), ``est[()]`` the baseline."""
        if isinstance(term, tuple) and len(term) == 0:
            if self.baseline is None:
                raise KeyError("this estimate has no baseline (v(empty) was not evaluated)")
            return float(self.baseline)
        return float(np.asarray(self.values)[self._position(term)])

    def std_of(self, term: Any) -> float:
        """The posterior std of one term (``ValueError`` for methods without one).

        Args:
            term: a player (int) or a tuple of players, as for ``est[term]``.

        Returns:
            the term's posterior standard deviation.
        """
        if self.std is None:
            raise ValueError(f"method {self.method or '?'} reports no posterior std")
        return float(np.asarray(self.std)[self._position(term)])

    def _select(self, positions: list[int], how: str) -> ShapleyEstimate:
        """A copy holding the terms at ``positions`` (values, std, covariance block, trace)."""
        idx = np.asarray(positions, dtype=np.int64)

        def pick(vec: np.ndarray | None) -> np.ndarray | None:
            return None if vec is None else np.asarray(vec, dtype=np.float64)[idx]

        cov = None if self.covariance is None else np.asarray(self.covariance, dtype=np.float64)[np.ix_(idx, idx)]
        return ShapleyEstimate(
            values=pick(self.values), evaluations=self.evaluations, budget=self.budget, std=pick(self.std),
            covariance=cov, trace=[(n, pick(v)) for n, v in self.trace],
            trace_std=[(n, pick(v)) for n, v in self.trace_std], baseline=self.baseline, method=self.method,
            info={**self.info, "selection": how}, index=self.index, terms=[(self.terms or [])[k] for k in positions],
            player_count=self.n_players,
        )

    def get_n_order(self, order: int | None = None, min_order: int | None = None,
                    max_order: int | None = None) -> ShapleyEstimate:
        """The terms of one order (``order=2``: the pairs) or of a range, as shapiq's ``get_n_order``.

        Args:
            order: the one order to keep (1: the players, 2: the pairs).
            min_order: the smallest order kept (default ``order``, else 1).
            max_order: the largest order kept (default ``order``, else the estimate's largest).

        Returns:
            a new estimate holding the selected terms (values, std, covariance block, trace).
        """
        if order is None and min_order is None and max_order is None:
            raise ValueError("give order, min_order or max_order")
        lo = min_order if min_order is not None else (order if order is not None else 1)
        hi = max_order if max_order is not None else (order if order is not None else self.max_order)
        keep = [k for k, t in enumerate(self.terms or []) if lo <= len(t) <= hi]
        return self._select(keep, f"orders {lo}..{hi}")

    def get_top_k(self, k: int) -> ShapleyEstimate:
        """The ``k`` terms of largest absolute value, largest first (ties in term order).

        Args:
            k: how many terms to keep (a non-negative int).

        Returns:
            a new estimate holding those ``k`` terms, largest absolute value first.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"k must be a non-negative integer, got {k!r}")
        order = np.argsort(-np.abs(np.asarray(self.values, dtype=np.float64)), kind="stable")[: int(k)]
        return self._select([int(j) for j in order], f"top {int(k)} by |value|")

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

        Returns:
            a ``shapiq.InteractionValues`` with the values, the index and the baseline.
        """
        from shapleig.estimation.shapiq_values import to_interaction_values

        return to_interaction_values(self)

    def to_shap(self, data: Any = None) -> Any:
        """This estimate (SV or BV) as a ``shap.Explanation`` of one row, for SHAP's plots.

        Waterfall, bar and force plots work; the std is SHAP's ``error_std`` field
        (:mod:`shapleig.estimation.shap_values`). Needs the ``shapleig[shap]`` extra.

        Args:
            data: the explained row (float[p]); None: ``info["x"]``.

        Returns:
            a one-row ``shap.Explanation``.
        """
        from shapleig.estimation.shap_values import to_shap

        return to_shap(self, data)

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per term (per player for the Shapley and Banzhaf values).

        Columns: ``player`` (the feature names of :func:`shapleig.explain`, else 0..p-1; for a pair,
        the two joined by " x "), ``value``, ``std`` (NaN without a posterior).

        Returns:
            a ``pandas.DataFrame`` with columns ``player``, ``value`` and ``std``.
        """
        import pandas as pd

        names = self.info.get("feature_names")
        label = list(names) if names is not None and len(names) == self.n_players else list(range(self.n_players))
        terms = self.terms or [(i,) for i in range(self.n_players)]
        players = [label[t[0]] if len(t) == 1 else " x ".join(str(label[i]) for i in t) for t in terms]
        values = np.asarray(self.values, dtype=np.float64)
        std = np.full(values.shape[0], np.nan) if self.std is None else np.asarray(self.std, dtype=np.float64)
        return pd.DataFrame({"player": players, "value": values, "std": std})

    def values_at(self, evaluations: int) -> np.ndarray | None:
        """The latest trace entry with at most ``evaluations`` evaluations (None if none).

        Args:
            evaluations: an evaluation count along the run.

        Returns:
            the values float64[d] at that point of the anytime curve, or None before the first step.
        """
        return _latest(self.trace, evaluations)

    def std_at(self, evaluations: int) -> np.ndarray | None:
        """The posterior std of the latest step with at most ``evaluations`` evaluations (or None).

        Args:
            evaluations: an evaluation count along the run.

        Returns:
            the std float64[d] at that point, or None before the first step (or without a posterior).
        """
        return _latest(self.trace_std, evaluations)

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed credible interval per term: ``values -/+ z * std``, two float64[d].

        ``z`` is the standard normal quantile of ``(1 + level) / 2``. Raises ``ValueError`` for
        methods without a posterior std, or a level outside (0, 1).

        Args:
            level: the credible level in (0, 1).

        Returns:
            ``(lower, upper)``, two float64[d].
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




