"""The shared front of the with-replacement least-squares estimators (LSS family, KernelSHAP family).

``DrawEstimator`` holds the budget-accounting modes (``"distinct"``, the project rule, or
``"draws"``, the LSS paper's; see :mod:`shapleig_baselines.lss`), evaluates the empty and grand coalitions
first and assembles the result; ``linear_estimate`` turns per-draw linear contributions into an
estimate with an anytime trace.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar

import numpy as np

from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.numeric import power_of_two_scale
from shapleig.runs.budget import BudgetedGame

from .sampling import Draws, draw_within_budget

ACCOUNTING_MODES = ("distinct", "draws")
TRACE_POINTS = 24  # anytime checkpoints recorded by the single-distribution estimators


class DrawEstimator(BaseEstimator):
    """Shared front of the with-replacement least-squares estimators (accounting modes, endpoints).

    ``accounting``: ``"distinct"`` or ``"draws"`` (see the module docstring).
    ``draws``: in ``"draws"`` mode the paper's T; in ``"distinct"`` mode an optional cap on the
    number of draws (None: draw until the budget or the support is exhausted).
    """

    name: ClassVar[str] = "draw-estimator"

    def __init__(self, *, accounting: str = "distinct", draws: int | None = None):
        if accounting not in ACCOUNTING_MODES:
            raise ValueError(f"unknown accounting {accounting!r}; choose one of {ACCOUNTING_MODES}")
        integer = isinstance(draws, (int, np.integer)) and not isinstance(draws, bool)
        if draws is not None and (not integer or draws < 0):
            raise ValueError(f"draws must be a non-negative integer or None, got {draws!r}")
        self.accounting = accounting
        self.draws = None if draws is None else int(draws)

    # -- helpers for subclasses ---------------------------------------------------------------
    @staticmethod
    def endpoints(game: BudgetedGame) -> tuple[float, float]:
        """Evaluate (or read from the cache) ``v(empty)`` and ``v(N)`` in one call."""
        p = game.n_players
        z = np.zeros((2, p), dtype=bool)
        z[1] = True
        v = game(z)
        return float(v[0]), float(v[1])

    def planned_draws(self, game: BudgetedGame) -> int | None:
        """The paper's T in ``"draws"`` mode (default: what remains after the endpoints)."""
        if self.accounting == "draws":
            return self.draws if self.draws is not None else max(game.remaining, 0)
        return None

    def support_size(self, n_players: int) -> int | None:
        """Proper coalitions ``2^p - 2``: drawing stops once all are evaluated (distinct mode only)."""
        return (1 << n_players) - 2 if self.accounting == "distinct" else None

    def linear_sampling_estimate(
        self,
        game: BudgetedGame,
        sample: Callable[[int], np.ndarray],
        coefficients: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    ) -> ShapleyEstimate:
        """Shared run of the per-sample linear estimators (LSS, UKS).

        ``sample(m)`` draws ``bool[m, p]`` coalitions; ``coefficients(Z, v - v(empty))`` returns
        the per-draw weights that :func:`linear_estimate` turns into values and a trace.
        """
        p = game.n_players
        v0, vn = self.endpoints(game)
        before = game.evaluations
        target = self.planned_draws(game) if self.accounting == "draws" else self.draws
        d = draw_within_budget(
            game,
            lambda start, m: sample(m),
            max_draws=target,
            support_size=self.support_size(p),
        )
        # on v / 2^k (exact): sums of values near 1e308 would overflow, near 1e-308 underflow
        scale = power_of_two_scale(v0, vn, d.values)
        coef_in, coef_const = coefficients(d.coalitions, d.values / scale - v0 / scale)
        values, trace = linear_estimate(
            d.coalitions, coef_in, coef_const, (vn / scale - v0 / scale) / p, evaluations_after_each_draw(before, d)
        )
        trace = [(e, scale * phi) for e, phi in trace]
        return self.result(scale * values, game, v0, d, trace=trace or None, extra={"draws_target": target})

    def result(
        self,
        values: np.ndarray,
        game: BudgetedGame,
        v_empty: float,
        draws: Draws | None,
        *,
        trace: list | None = None,
        extra: dict[str, Any] | None = None,
    ) -> ShapleyEstimate:
        n_draws = 0 if draws is None else draws.n_draws
        info: dict[str, Any] = {
            "accounting": self.accounting,
            "n_draws": n_draws,
            "draws_target": self.draws,
            "stopped": None if draws is None else draws.stopped,
            "truncated": self.accounting == "draws" and draws is not None and draws.stopped == "budget",
        }
        info.update(extra or {})
        trace = trace if trace is not None else [(game.evaluations, values.copy())]
        return ShapleyEstimate(values=values, trace=trace, baseline=v_empty, info=info)


def linear_estimate(
    z: np.ndarray,
    coef_in: np.ndarray,
    coef_const: np.ndarray,
    base: float,
    evals: np.ndarray,
    n_points: int = TRACE_POINTS,
) -> tuple[np.ndarray, list[tuple[int, np.ndarray]]]:
    """Mean of per-draw linear contributions, with an anytime trace.

    Draw ``k`` contributes ``z_k * coef_in[k] - coef_const[k]`` to every player (``z`` is
    ``bool[tau, p]``), so the estimate after ``t`` draws is
    ``base + (Z_{<=t}^T coef_in_{<=t} - sum coef_const_{<=t}) / t``. Returns the final
    ``float64[p]`` and ``[(evals[t-1], estimate after t draws)]`` at about ``n_points``
    geometrically spaced ``t`` (``evals``: ``int[tau]`` distinct evaluations after each draw).
    """
    tau, p = z.shape
    if tau == 0:
        return np.full(p, base), []
    ends = np.unique(np.geomspace(1, tau, num=min(n_points, tau)).round().astype(np.int64))
    ends = np.union1d(ends, [tau])
    acc = np.zeros(p)
    const = 0.0
    trace: list[tuple[int, np.ndarray]] = []
    start = 0
    for end in ends:
        # one matrix-vector product per segment keeps this O(tau p) in total
        acc += z[start:end].T.astype(np.float64) @ coef_in[start:end]
        const += float(coef_const[start:end].sum())
        trace.append((int(evals[end - 1]), base + (acc - const) / end))
        start = end
    return trace[-1][1].copy(), trace


def evaluations_after_each_draw(game_evals_before: int, draws: Draws) -> np.ndarray:
    """Distinct evaluations charged after each draw, ``int64[tau]``."""
    return game_evals_before + np.cumsum(draws.new, dtype=np.int64)
