"""Regression MSR (Witter, Liu & Musco, 2025): tree surrogate + maximum-sample-reuse residual.

``phi(v) = phi(f) + phi(v - f)`` (docs/baselines.md §9). Steps, all on ONE sample:

1. Evaluate ``v(0)``, ``v(N)`` and ``budget - 2`` distinct proper coalitions from the paired
   uniform-size sampler (:func:`shapleig.games.coalitions.sample_paired_uniform_size`); when the budget
   covers all ``2^p`` coalitions they are all enumerated instead.
2. Fit a LightGBM regressor ``f`` on the 0/1 coalition matrix (the reference uses XGBoost with its
   defaults; LightGBM is the allowed substitute, with leaves of a couple of samples so that tiny
   samples still split).
3. ``phi(f)``: the exact Shapley values of ``S -> f(1_S)`` from the trees in closed form
   (:func:`shapleig_baselines.treeshap.lightgbm_shapley_values`); no enumeration, no path-dependent TreeSHAP.
4. Residual ``r(T) = (v(T) - v(0)) - (f(T) - f(0))`` and its MSR estimate on the same sample,
   ``phi_r_i = r(N)/n + sum_T r(T) (1[i in T] omega(|T|-1) - 1[i not in T] omega(|T|)) / pi(T)``.

Inclusion weights. The paired uniform-size sampler has no simple closed-form inclusion
probability, but its law is invariant under permutations of the players, and those act
transitively on each size layer while leaving the per-size counts ``m_s`` unchanged. Hence,
conditionally on the counts, every coalition of size ``s`` is in the sample with probability
``pi = m_s / C(n, s)``: the Horvitz-Thompson weight used here (the post-stratified estimator,
conditionally unbiased for a fixed residual function). Since ``omega(s-1) C(n, s) = 1/s`` and
``omega(s) C(n, s) = 1/(n-s)``, the terms reduce to ``r(T)/m_s * (1[i in T]/s - 1[i not in T]/(n-s))``,
which sum to zero over the players: the result is exactly efficient for any sample. With all
coalitions, ``m_s = C(n, s)``, every weight is 1 and both parts are exact, so the estimate is exact.
Sizes the sample misses contribute nothing (a bias that only exists when the budget is below
about ``p + 1``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from shapleig.estimation.base import BaseEstimator
from shapleig.estimation.result import ShapleyEstimate
from shapleig.games.coalitions import (
    all_coalitions,
    coalition_keys,
    sample_paired_uniform_size,
)
from shapleig.games.numeric import power_of_two_scale
from shapleig.runs.budget import BudgetedGame
from shapleig.seeding import spawn_generators, spawn_seeds

from .treeshap import lightgbm_shapley_values

# LightGBM settings close to XGBoost's defaults in spirit (100 trees, small leaves allowed), made
# deterministic and single-threaded; any key can be overridden with ``lgbm_params``.
DEFAULT_LGBM_PARAMS: dict[str, Any] = {
    "n_estimators": 100,
    "learning_rate": 0.1,
    "num_leaves": 31,
    "min_child_samples": 2,
    "min_data_in_bin": 1,
}


def msr_residual_shapley(
    coalitions: np.ndarray, residuals: np.ndarray, grand_residual: float
) -> np.ndarray:
    """MSR estimate ``float64[p]`` of the Shapley values of a residual game from one sample.

    ``coalitions``: ``bool[m, p]`` distinct proper coalitions sampled with per-size uniform
    inclusion; ``residuals``: ``float64[m]`` the residual game at them (already zero at the empty
    coalition); ``grand_residual``: its value at ``N``. Each size ``s`` is weighted by
    ``C(p, s) / m_s`` (``m_s`` = sampled coalitions of that size). Exactly efficient.
    """
    z = np.asarray(coalitions, dtype=bool)
    r = np.asarray(residuals, dtype=np.float64)
    n = z.shape[1]
    phi = np.full(n, grand_residual / n)
    if z.shape[0] == 0:
        return phi
    s = z.sum(axis=1)
    if s.min() < 1 or s.max() > n - 1:
        raise ValueError("the MSR sample must contain proper coalitions only (0 < |T| < p)")
    per_size = np.bincount(s, minlength=n + 1)
    coef = r / per_size[s]
    zf = z.astype(np.float64)
    phi += zf.T @ (coef / s) - (1.0 - zf).T @ (coef / (n - s))
    return phi


class RegressionMSR(BaseEstimator):
    """Regression MSR with a LightGBM surrogate on paired uniform-size samples without replacement.

    ``lgbm_params`` override :data:`DEFAULT_LGBM_PARAMS`; determinism settings are always applied
    (``deterministic=True, force_row_wise=True, n_jobs=1``, ``random_state`` from the seed).
    Exactly efficient; exact once the budget covers all ``2^p`` coalitions.
    """

    name: ClassVar[str] = "regression-msr"

    def __init__(self, *, lgbm_params: dict[str, Any] | None = None):
        if lgbm_params is not None and not isinstance(lgbm_params, dict):
            raise TypeError(f"lgbm_params must be a dict or None, got {type(lgbm_params).__name__}")
        self.lgbm_params = lgbm_params  # kept as given (get_params / clone); copied at use

    def min_budget(self, n_players: int) -> int:
        """Empty, grand and one complementary pair."""
        return 4

    def min_budget_reason(self, n_players: int) -> str:
        return "the empty and grand coalitions plus one complementary pair"

    def _surrogate(self, seed: int):
        from lightgbm import (
            LGBMRegressor,  # imported here: only this estimator needs LightGBM
        )

        params = {**DEFAULT_LGBM_PARAMS, **(self.lgbm_params or {})}
        params.update(deterministic=True, force_row_wise=True, n_jobs=1, random_state=seed, verbose=-1)
        return LGBMRegressor(**params)

    def _estimate(self, game: BudgetedGame, seed: int) -> ShapleyEstimate:
        n = game.n_players
        rng = spawn_generators(seed, 1)[0]
        lgbm_seed = spawn_seeds(seed, 2)[1]
        ends = np.zeros((2, n), dtype=bool)
        ends[1] = True
        room = game.remaining - game.n_uncached(ends)
        if n <= 24 and room >= (1 << n) - 2:
            z_all = all_coalitions(n)
            s_all = z_all.sum(axis=1)
            sample = z_all[(s_all > 0) & (s_all < n)]
        else:
            sample = sample_paired_uniform_size(rng, n, room, exclude=coalition_keys(ends))
        z = np.concatenate([ends, sample])
        values = game(z)
        # LightGBM fits in float32 with absolute thresholds: targets near 1e-50 make no split and
        # near 1e50 overflow. Fit on the centred values divided by a power of two (exact) bringing
        # them into [-1, 1), and scale the trees' values back: the estimate is then the same at
        # every scale (bit for bit under powers of two).
        scale = power_of_two_scale(values - values[0])
        centred = values / scale - values[0] / scale

        model = self._surrogate(lgbm_seed)
        x = z.astype(np.float64)
        model.fit(x, centred)
        prediction = model.predict(x)
        fitted = prediction - prediction[0]  # f(T) - f(0)
        phi_model = lightgbm_shapley_values(model, n)
        residual = centred - fitted
        phi_residual = msr_residual_shapley(sample, residual[2:], float(residual[1]))
        phi = scale * (phi_model + phi_residual)
        info = {
            "n_sampled": int(sample.shape[0]),
            "surrogate": "lightgbm",
            "n_trees": int(model.booster_.num_trees()),
            "residual_weights": "post-stratified C(p,s)/m_s",
            "surrogate_r2": _r_squared(centred, prediction),
        }
        return ShapleyEstimate(
            values=phi, trace=[(game.evaluations, phi.copy())], baseline=float(values[0]), info=info
        )


def _r_squared(y: np.ndarray, fitted: np.ndarray) -> float:
    """In-sample R^2 of the surrogate (a diagnostic; NaN for a constant target)."""
    ss = float(np.sum((y - y.mean()) ** 2))
    return float("nan") if ss == 0.0 else 1.0 - float(np.sum((y - fitted) ** 2)) / ss


__all__ = ["DEFAULT_LGBM_PARAMS", "RegressionMSR", "msr_residual_shapley"]
